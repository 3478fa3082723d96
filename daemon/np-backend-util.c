/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers every placement mechanism uses: /proc reads of the real machine
 * (threads, start time, comm), saving the state file,
 * and moving every thread of a process with a mechanism's per-thread
 * operations. Contract: np-backend-private.h.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "np-backend-private.h"
#include "np-cleanup.h"
#include "np-log.h"
#include "np-sample.h"

/* ---- /proc helpers ---- */

/* /proc/TID/stat of the real machine (not the sysroot: the backends act on
 * real tasks), parsed by np_parse_pid_stat(); -ESRCH when it cannot be read
 * or parsed. */
static int read_stat(pid_t tid, NpPidStat *st) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) tid);
        g_autofree char *buf = NULL;

        if (tid <= 0 || !g_file_get_contents(path, &buf, NULL, NULL) || np_parse_pid_stat(buf, st) < 0)
                return -ESRCH;
        return 0;
}

int np_proc_starttime(pid_t pid, uint64_t *starttime) {
        NpPidStat st;

        if (read_stat(pid, &st) < 0)
                return -ESRCH;
        if (st.state == 'Z' || st.state == 'X') {
                /* A zombie leader whose other threads still run is alive. */
                g_autoptr(GArray) tids = NULL;
                if (st.state == 'X' || np_proc_tids(pid, &tids) < 0 || tids->len < 2)
                        return -ESRCH;
        }
        *starttime = st.starttime;
        return 0;
}

bool np_proc_exiting(pid_t tid) {
        NpPidStat st;

        return read_stat(tid, &st) < 0 || strchr("ZXx", st.state) || (st.flags & NP_PF_EXITING);
}

bool np_proc_alive(pid_t pid, uint64_t starttime) {
        uint64_t st;

        return np_proc_starttime(pid, &st) == 0 && st == starttime;
}

static gint pid_cmp(gconstpointer a, gconstpointer b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

int np_proc_tids(pid_t pid, GArray **out) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task", (int) pid);
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(pid_t));
        struct dirent *de;
        g_autoptr(DIR) d = opendir(path);

        if (!d)
                return -ESRCH;
        while ((de = readdir(d))) {
                char *end;
                long v = strtol(de->d_name, &end, 10);
                if (*end || v <= 0)
                        continue;
                pid_t tid = (pid_t) v;
                g_array_append_val(a, tid);
        }
        if (a->len == 0)
                return -ESRCH;
        g_array_sort(a, pid_cmp);
        *out = g_steal_pointer(&a);
        return 0;
}

char *np_proc_comm(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/comm", (int) pid);
        char *buf = NULL;

        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return g_strdup("?");
        g_strchomp(buf);
        return buf;
}

/* ---- state ---- */

int np_backend_save_state(NpBackend *b, GError **error) {
        g_autoptr(GError) e = NULL;
        const NpMechanism *m = b->active;
        int r;

        np_state_set_hierarchy(b->state, m && m->ops->root ? m->ops->root(m) : NULL,
                               m && m->ops->variant ? m->ops->variant(m) : NULL);
        r = np_state_save(b->state, &e);
        if (r < 0) {
                log_error("Cannot write state file %s: %s", b->state_file, e->message);
                if (error)
                        g_propagate_error(error, g_steal_pointer(&e));
        }
        return r;
}

/* ---- threads ---- */

void np_short_restore_clear(NpShortRestore *r) {
        g_clear_pointer(&r->want, np_mask_free);
        g_clear_pointer(&r->got, np_mask_free);
}

/* Remember (or forget, when it got all of it) that tid got less than want. */
static void note_short(NpBackend *b, const NpStateProcess *p, pid_t tid, const NpMask *want) {
        g_autoptr(NpMask) got = NULL;
        for (guint i = 0; i < b->short_restores->len; i++)
                if (g_array_index(b->short_restores, NpShortRestore, i).tid == tid) {
                        g_array_remove_index_fast(b->short_restores, i);
                        break;
                }
        if (np_thread_get_affinity(tid, &got) < 0 || np_mask_equal(got, want) || !np_mask_subset(got, want))
                return;
        NpShortRestore r = { .pid = p->pid,
                             .starttime = p->starttime,
                             .tid = tid,
                             .want = np_mask_copy(want),
                             .got = g_steal_pointer(&got) };
        g_array_append_val(b->short_restores, r);
        g_autofree char *w = np_mask_format(r.want), *g = np_mask_format(r.got);
        log_info("Thread %d of pid %d got CPUs %s of its original %s back (the others are offline); the rest when "
                 "they come back",
                 (int) tid, (int) p->pid, g, w);
}

int np_backend_restore_affinity(NpBackend *b, const NpStateProcess *p, bool warn) {
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
                if (r == 0)
                        note_short(b, p, tid, aff);
                if (r < 0 && r != -ESRCH) {
                        g_autofree char *s = np_mask_format(aff);
                        np_log(warn ? LOG_WARNING : LOG_DEBUG,
                               "Cannot give thread %d of pid %d its affinity %s back: %s", (int) tid, (int) p->pid, s,
                               g_strerror(-r));
                        if (ret == 0)
                                ret = r;
                }
        }
        return ret;
}

static void add_once(GArray *pids, pid_t pid) {
        for (guint i = 0; pids && i < pids->len; i++)
                if (g_array_index(pids, pid_t, i) == pid)
                        return;
        if (pids)
                g_array_append_val(pids, pid);
}

unsigned np_backend_complete_restores(NpBackend *b, GArray *pids) {
        unsigned grown = 0;
        for (guint i = b->short_restores->len; i-- > 0;) {
                NpShortRestore *r = &g_array_index(b->short_restores, NpShortRestore, i);
                g_autoptr(NpMask) now = NULL;
                bool done = true;
                /* gone, or someone else changed it since: not ours to widen */
                if (np_proc_alive(r->pid, r->starttime) && np_thread_get_affinity(r->tid, &now) == 0 &&
                    np_mask_equal(now, r->got) && np_thread_set_affinity(r->tid, r->want) == 0) {
                        g_autoptr(NpMask) after = NULL;
                        if (np_thread_get_affinity(r->tid, &after) == 0 && !np_mask_equal(after, r->got)) {
                                g_autofree char *s = np_mask_format(after);
                                log_info("Thread %d of pid %d has its original CPUs %s back", (int) r->tid,
                                         (int) r->pid, s);
                                grown++;
                                add_once(pids, r->pid);
                                np_mask_assign(r->got, after);
                        }
                        done = np_mask_equal(r->got, r->want);
                }
                if (done)
                        g_array_remove_index_fast(b->short_restores, i); /* clears it */
        }
        return grown;
}

unsigned np_backend_short_restores(const NpBackend *b) {
        return b->short_restores->len;
}

int np_backend_move_threads(NpBackend *b, void *data, NpStateProcess *p, const NpThreadMover *ops, GError **error) {
        g_autoptr(GHashTable) moved = g_hash_table_new(g_direct_hash, g_direct_equal);

        for (unsigned pass = 0; pass < NP_MOVE_MAX_PASSES; pass++) {
                g_autoptr(GArray) tids = NULL;
                g_autoptr(GArray) todo = g_array_new(FALSE, FALSE, sizeof(pid_t));
                bool dirty = false;
                int r;

                if (!np_proc_alive(p->pid, p->starttime) || np_proc_tids(p->pid, &tids) < 0)
                        return -ESRCH;
                for (guint i = 0; i < tids->len; i++) {
                        pid_t tid = g_array_index(tids, pid_t, i);

                        if (g_hash_table_contains(moved, GINT_TO_POINTER(tid)))
                                continue;
                        if (pass > 0 && ops->placed(data, p, tid)) {
                                g_hash_table_add(moved, GINT_TO_POINTER(tid));
                                continue;
                        }
                        g_array_append_val(todo, tid);
                }
                if (todo->len == 0)
                        return 0;
                for (guint i = 0; i < todo->len; i++)
                        dirty |= ops->record(data, p, g_array_index(todo, pid_t, i));
                if (dirty) {
                        r = np_backend_save_state(b, error);
                        if (r < 0)
                                return r;
                }
                for (guint i = 0; i < todo->len; i++) {
                        pid_t tid = g_array_index(todo, pid_t, i);
                        g_autoptr(GError) e = NULL;

                        r = ops->move(data, p, tid, &e);
                        if (r < 0 && r != -ESRCH) {
                                if (!np_proc_alive(p->pid, p->starttime))
                                        return -ESRCH;
                                g_propagate_error(error, g_steal_pointer(&e));
                                return r;
                        }
                        /* -ESRCH: that thread exited; the next pass tells
                         * whether the whole process did. */
                        g_hash_table_add(moved, GINT_TO_POINTER(tid));
                }
        }
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_AGAIN,
                    "threads kept appearing after %d passes over /proc/%d/task", NP_MOVE_MAX_PASSES, (int) p->pid);
        return -EAGAIN;
}

void np_backend_notify_moved(NpBackend *b, pid_t pid) {
        if (b->moved)
                b->moved(pid, b->moved_userdata);
}
