/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Actions on one process: Forget, Include, Exclude. None runs a scan: only
 * the process concerned is read. (Place is np-placement.c.) */
#include "np-manager-actions.h"

#include <errno.h>
#include <string.h>

#include "np-classify.h"
#include "np-log.h"
#include "np-scan.h"

int np_manager_forget(NpManager *m, int pid, GError **error) {
        bool known = g_hash_table_remove(m->included, GINT_TO_POINTER(pid));
        known |= g_hash_table_remove(m->excluded, GINT_TO_POINTER(pid));
        NpProcess *p = np_manager_process(m, pid);

        if (m->mover && np_mover_find(m->mover, pid)) {
                /* A queued move ends now, a running one between two
                 * migrate_pages() calls; either way the process is put back
                 * when it ends (np-placement.c). */
                log_info("Forget(%d): cancelling its move", pid);
                np_mover_cancel(m->mover, pid);
                known = true;
        }
        if (m->backend && np_backend_holds(m->backend, pid) && !(m->mover && np_mover_find(m->mover, pid))) {
                int r = np_backend_release(m->backend, pid);
                if (r < 0 && r != -ESRCH && r != -ENOENT) {
                        g_set_error(error, NP_ERROR, NP_ERROR_FAILED, "Releasing %d failed: %s", pid, g_strerror(-r));
                        return r;
                }
                known = true;
        }
        if (p) {
                known |= p->state != NP_PROC_OBSERVED;
                np_manager_set_state(m, p, NP_PROC_OBSERVED, NULL, p->last_placed_usec);
                if (np_classify_update(m, p) < 0) {
                        /* gone: the next scan drops it */
                }
        }
        if (!known && !p) {
                g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "PID %d is neither known nor managed", pid);
                return -ESRCH;
        }
        log_info("Forgot PID %d: released and removed from Include/Exclude", pid);
        return 0;
}

static int mark(NpManager *m, GHashTable *add, GHashTable *drop, int pid, GError **error) {
        NpProcess *p = np_scan_pid(m, pid, error);
        if (!p)
                return -ESRCH;
        g_hash_table_remove(drop, GINT_TO_POINTER(pid));
        g_hash_table_insert(add, GINT_TO_POINTER(pid), GSIZE_TO_POINTER((gsize) p->starttime));
        if (np_classify_update(m, p) < 0) {
                g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "Process %d exited", pid);
                return -ESRCH;
        }
        return 0;
}

int np_manager_include(NpManager *m, int pid, GError **error) {
        int r = mark(m, m->included, m->excluded, pid, error);
        if (r == 0)
                log_info("PID %d included: it is a candidate whatever its size", pid);
        return r;
}

int np_manager_exclude(NpManager *m, int pid, GError **error) {
        int r = mark(m, m->excluded, m->included, pid, error);
        if (r == 0)
                log_info("PID %d excluded: it will not be placed", pid);
        return r;
}
