/*
 * The affinity backend: sched_setaffinity() on every thread, then the
 * daemon's migration plan (what numad does). For processes no cpuset can
 * hold, or machines without a writable cpuset hierarchy. Memory is not
 * confined (no mems): the plan moves it once, new allocations follow the
 * CPUs through the kernel's local-node default policy.
 */
#include <errno.h>

#include "np-backend-private.h"
#include "np-log.h"

static bool record_thread(NpStateProcess *p, pid_t tid) {
        g_autoptr(NpMask) aff = NULL;

        if (np_state_process_thread(p, tid))
                return false;
        if (np_thread_get_affinity(tid, &aff) < 0)
                return false; /* gone */
        np_state_process_add_thread(p, tid, NULL, aff);
        return true;
}

int np_affinity_place(NpBackend *b, NpStateProcess *p, NpMigrateFn migrate, void *userdata,
                      GError **error) {
        g_autoptr(GHashTable) moved = g_hash_table_new(g_direct_hash, g_direct_equal);
        bool stable = false;
        int r;

        /* Threads created by an already moved thread inherit its affinity;
         * those created by one not yet moved show up on the next pass. */
        for (unsigned pass = 0; pass < NP_MOVE_MAX_PASSES && !stable; pass++) {
                g_autoptr(GArray) tids = NULL;
                g_autoptr(GArray) todo = g_array_new(FALSE, FALSE, sizeof(pid_t));
                bool dirty = false;

                if (!np_proc_alive(p->pid, p->starttime) || np_proc_tids(p->pid, &tids) < 0)
                        return -ESRCH;
                for (guint i = 0; i < tids->len; i++) {
                        pid_t tid = g_array_index(tids, pid_t, i);
                        g_autoptr(NpMask) cur = NULL;

                        if (g_hash_table_contains(moved, GINT_TO_POINTER(tid)))
                                continue;
                        /* After the first pass, a new thread that already has
                         * the target affinity inherited it from a moved
                         * thread: nothing to do, its original is the
                         * leader's. So a process that keeps creating threads
                         * settles. */
                        if (pass > 0 && (np_thread_get_affinity(tid, &cur) < 0 || np_mask_equal(cur, p->cpus))) {
                                g_hash_table_add(moved, GINT_TO_POINTER(tid));
                                continue;
                        }
                        g_array_append_val(todo, tid);
                }
                if (todo->len == 0) {
                        stable = true;
                        break;
                }
                for (guint i = 0; i < todo->len; i++)
                        dirty |= record_thread(p, g_array_index(todo, pid_t, i));
                if (dirty) {
                        r = np_backend_save_state(b, error);
                        if (r < 0)
                                return r;
                }
                for (guint i = 0; i < todo->len; i++) {
                        pid_t tid = g_array_index(todo, pid_t, i);

                        r = np_thread_set_affinity(tid, p->cpus);
                        if (r < 0 && r != -ESRCH) {
                                g_autofree char *cpus = np_mask_format(p->cpus);

                                if (!np_proc_alive(p->pid, p->starttime))
                                        return -ESRCH;
                                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                                            "cannot set the affinity of thread %d to CPUs %s: %s", (int)tid,
                                            cpus, g_strerror(-r));
                                return r;
                        }
                        g_hash_table_add(moved, GINT_TO_POINTER(tid));
                }
        }
        if (!stable) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                            "threads kept appearing after %d passes over /proc/%d/task", NP_MOVE_MAX_PASSES,
                            (int)p->pid);
                return -EAGAIN;
        }

        if (migrate) {
                r = migrate(p->pid, userdata);
                if (r == -ESRCH)
                        return r;
                if (r < 0) {
                        g_autofree char *nodes = np_mask_format(p->nodes);
                        log_warning("Pid %d: moving its memory to nodes %s failed (%s); its CPUs stay confined",
                                    (int)p->pid, nodes, g_strerror(-r));
                }
        }
        return 0;
}

int np_affinity_restore(NpBackend *b, const NpStateProcess *p) {
        g_autoptr(GArray) tids = NULL;
        int ret = 0;

        if (np_proc_tids(p->pid, &tids) < 0)
                return 0; /* gone */
        for (guint i = 0; i < tids->len; i++) {
                pid_t tid = g_array_index(tids, pid_t, i);
                const NpStateThread *t = np_state_process_thread(p, tid);
                const NpMask *aff = t && t->affinity ? t->affinity : p->orig_affinity;
                int r;

                if (!aff || np_mask_empty(aff))
                        continue;
                r = np_thread_set_affinity(tid, aff);
                if (r < 0 && r != -ESRCH) {
                        g_autofree char *s = np_mask_format(aff);
                        log_warning("Cannot give thread %d of pid %d its affinity %s back: %s", (int)tid,
                                    (int)p->pid, s, g_strerror(-r));
                        if (ret == 0)
                                ret = r;
                }
        }
        return ret;
}
