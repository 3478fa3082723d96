/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The held placements against a changed topology. See np-hotplug.h. */
#include "np-hotplug.h"

#include <errno.h>

#include "np-classify.h"
#include "np-log.h"
#include "np-place.h"

static bool moving(NpManager *m, const NpProcess *p) {
        return p->moving_to || (m->mover && np_mover_find(m->mover, p->pid));
}

static void log_event(const NpProcess *p, int level, const char *what) {
        g_autofree char *f_pid = g_strdup_printf("PID=%d", p->pid);
        g_autofree char *f_comm = g_strdup_printf("COMM=%s", p->comm);
        const char *fields[] = { f_pid, f_comm, NULL };
        np_log_fields(level, NULL, fields, "Process %d (%s): %s", p->pid, p->comm, what);
}

/* It is no longer held: State observed (or excluded), no target. */
static void mark_released(NpManager *m, NpProcess *p) {
        np_manager_set_state(m, p, np_classify_excluded(m, p) ? NP_PROC_EXCLUDED : NP_PROC_OBSERVED, NULL,
                             p->last_placed_usec);
        /* its allowed CPUs and nodes as they are now, before the policy
         * looks at it (else it takes the release for someone else's doing) */
        (void) np_classify_update(m, p); /* a vanished one goes with the next scan */
}

static void release(NpManager *m, NpProcess *p, const NpMask *held) {
        g_autofree char *nodes_s = np_mask_format(p->target);
        g_autofree char *held_s = np_mask_format(held);
        int r = np_backend_release(m->backend, p->pid);
        g_autofree char *note = NULL;
        if (r < 0 && r != -ESRCH && r != -ENOENT)
                note = g_strdup_printf("its nodes %s have no online CPU left (CPUs %s went offline): released from "
                                       "%s, not everything could be put back (%s)",
                                       nodes_s, held_s, nodes_s, g_strerror(-r));
        else
                note = g_strdup_printf("its nodes %s have no online CPU left (CPUs %s went offline): released from "
                                       "%s, the policy places it again from where its memory is",
                                       nodes_s, held_s, nodes_s);
        mark_released(m, p);
        np_process_set_note(p, note);
        log_event(p, LOG_NOTICE, note);
}

static void confine_again(NpManager *m, NpProcess *p, const NpMask *held, const NpMask *cpus) {
        g_autofree char *nodes_s = np_mask_format(p->target);
        g_autofree char *held_s = np_mask_format(held);
        g_autofree char *cpus_s = np_mask_format(cpus);
        g_autoptr(NpMask) node_cpus = np_topology_cpus_of(m->topology, p->target);
        g_autoptr(GError) e = NULL;
        g_autofree char *note = NULL;

        int r = np_backend_place(m->backend, p->pid, p->starttime, p->target, cpus, NULL, NULL, &e);
        if (r == -ESRCH) {
                mark_released(m, p); /* gone: the next scan drops it */
                return;
        }
        if (r < 0) {
                /* the backend put it back and forgot it */
                note = g_strdup_printf("the CPUs of its nodes %s changed (%s -> %s): confining it again failed, "
                                       "released (%s)",
                                       nodes_s, held_s, cpus_s, e ? e->message : g_strerror(-r));
                mark_released(m, p);
                np_process_set_note(p, note);
                log_event(p, LOG_WARNING, note);
                return;
        }
        if (np_mask_empty(node_cpus))
                note = g_strdup_printf("its nodes %s have no online CPU: it runs on CPUs %s, its memory stays on %s",
                                       nodes_s, cpus_s, nodes_s);
        else if (np_mask_equal(held, cpus))
                note = g_strdup_printf("the CPUs of its nodes %s changed: confined to CPUs %s again", nodes_s, cpus_s);
        else
                note = g_strdup_printf("the CPUs of its nodes %s changed (%s -> %s): confined to CPUs %s", nodes_s,
                                       held_s, cpus_s, cpus_s);
        np_process_set_note(p, note);
        log_event(p, LOG_NOTICE, note);
}

/* CPUs came back: threads put back without them get them now, and their
 * allowed CPUs are read again before the policy looks (else it would take
 * them for narrowed by someone else). */
static void complete_restores(NpManager *m) {
        g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
        (void) np_backend_complete_restores(m->backend, pids);
        for (guint i = 0; i < pids->len; i++) {
                NpProcess *p = np_manager_process(m, (int) g_array_index(pids, pid_t, i));
                if (!p)
                        continue;
                np_details_age_invalidate(&p->details_age);
                (void) np_classify_update(m, p); /* a vanished one goes with the next scan */
        }
}

unsigned np_hotplug_recheck(NpManager *m) {
        unsigned acted = 0;
        bool keep = false;
        /* the common scan: nothing held, no CPU changed */
        if (!m->backend || (m->held_last == 0 && np_mask_empty(m->cpus_changed)))
                return 0;
        if (!np_mask_empty(m->cpus_changed) && np_backend_short_restores(m->backend))
                complete_restores(m);
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                if (!np_process_held(p) || !p->target)
                        continue;
                bool affected = np_mask_intersects(p->target, m->cpus_changed);
                if (moving(m, p)) {
                        keep |= affected;
                        continue;
                }
                const NpMask *held = np_backend_held_cpus(m->backend, p->pid);
                if (!held)
                        continue;
                g_autoptr(NpMask) held_copy = np_mask_copy(held);
                g_autoptr(NpMask) node_cpus = np_topology_cpus_of(m->topology, p->target);
                /* only when they lost them now: the policy may place a process
                 * that hardly uses a CPU on a memory-only node on purpose */
                if (p->state == NP_PROC_PLACED && np_mask_empty(node_cpus) && affected) {
                        release(m, p, held_copy);
                        acted++;
                        continue;
                }
                g_autoptr(NpMask) cpus = np_place_cpus_for(m, p->target);
                if (!affected && np_mask_equal(held_copy, cpus))
                        continue;
                confine_again(m, p, held_copy, cpus);
                acted++;
        }
        if (!keep)
                np_mask_zero(m->cpus_changed);
        return acted;
}
