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

static bool record_thread(NpBackend *b, NpStateProcess *p, pid_t tid) {
        g_autoptr(NpMask) aff = NULL;

        if (np_state_process_thread(p, tid))
                return false;
        if (np_thread_get_affinity(tid, &aff) < 0)
                return false; /* gone */
        np_state_process_add_thread(p, tid, NULL, aff);
        return true;
}

/* A new thread that already has the target affinity inherited it from a
 * moved thread: nothing to do, its original is the leader's. */
static bool thread_placed(NpBackend *b, const NpStateProcess *p, pid_t tid) {
        g_autoptr(NpMask) cur = NULL;
        return np_thread_get_affinity(tid, &cur) < 0 || np_mask_equal(cur, p->cpus);
}

static int thread_move(NpBackend *b, NpStateProcess *p, pid_t tid, GError **error) {
        int r = np_thread_set_affinity(tid, p->cpus);
        if (r < 0 && r != -ESRCH) {
                g_autofree char *cpus = np_mask_format(p->cpus);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "cannot set the affinity of thread %d to CPUs %s: %s", (int)tid, cpus, g_strerror(-r));
        }
        return r;
}

static const NpThreadMover affinity_mover = { thread_placed, record_thread, thread_move };

int np_affinity_place(NpBackend *b, NpStateProcess *p, NpMigrateFn migrate, void *userdata,
                      GError **error) {
        int r = np_backend_move_threads(b, p, &affinity_mover, error);
        if (r < 0)
                return r;

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
