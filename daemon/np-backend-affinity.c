/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The affinity mechanism: sched_setaffinity() on every thread, then the
 * daemon's migration plan (what numad does). For processes no cpuset can
 * hold, or machines without a writable cpuset hierarchy. Memory is not
 * confined (no mems): the plan moves it once, new allocations follow the
 * CPUs through the kernel's local-node default policy. Works everywhere.
 */
#include <errno.h>

#include "np-backend-private.h"
#include "np-log.h"

static bool record_thread(void *data, NpStateProcess *p, pid_t tid) {
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
static bool thread_placed(void *data, const NpStateProcess *p, pid_t tid) {
        g_autoptr(NpMask) cur = NULL;
        return np_thread_get_affinity(tid, &cur) < 0 || np_mask_equal(cur, p->cpus);
}

static int thread_move(void *data, NpStateProcess *p, pid_t tid, GError **error) {
        int r = np_thread_set_affinity(tid, p->cpus);
        if (r < 0 && r != -ESRCH) {
                g_autofree char *cpus = np_mask_format(p->cpus);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "cannot set the affinity of thread %d to CPUs %s: %s", (int) tid, cpus, g_strerror(-r));
        }
        return r;
}

static const NpThreadMover affinity_mover = { thread_placed, record_thread, thread_move };

static int op_probe(NpBackend *b, NpMechanism *m, char **why) {
        return 0;
}

static int op_confine(NpBackend *b, NpMechanism *m, NpStateProcess *p, GError **error) {
        return np_backend_move_threads(b, NULL, p, &affinity_mover, error);
}

static int op_restore(NpBackend *b, NpMechanism *m, const NpStateProcess *p) {
        return np_backend_restore_affinity(b, p, true);
}

const NpBackendOps np_backend_affinity_ops = {
        .kind = NP_BACKEND_AFFINITY,
        .name = "affinity",
        .probe = op_probe,
        .confine = op_confine,
        .restore = op_restore,
};
