/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The held placements against a changed topology. See np-hotplug.h. */
#include "np-hotplug.h"

#include <errno.h>

#include "np-classify.h"
#include "np-log.h"
#include "np-placement.h"
#include "np-reason.h"

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

/* The note on p's nodes whose CPUs changed from held to cpus (may be NULL). Caller frees. */
static char *note_of(NpReasonCode code, const NpProcess *p, const NpMask *held, const NpMask *cpus, const char *error) {
        NpReason r = { .code = code,
                       .nodes = np_mask_copy(p->target),
                       .cpus_before = held ? np_mask_copy(held) : NULL,
                       .cpus = cpus ? np_mask_copy(cpus) : NULL,
                       .error = g_strdup(error) };
        char *note = np_reason_render(&r);
        np_reason_clear(&r);
        return note;
}

static void release(NpManager *m, NpProcess *p, const NpMask *held) {
        int r = np_backend_release(m->backend, p->pid);
        g_autofree char *note = r < 0 && r != -ESRCH && r != -ENOENT
                ? note_of(NP_REASON_HOTPLUG_RELEASE_FAILED, p, held, NULL, g_strerror(-r))
                : note_of(NP_REASON_HOTPLUG_RELEASED, p, held, NULL, NULL);
        mark_released(m, p);
        np_process_set_note(p, note);
        log_event(p, LOG_NOTICE, note);
}

static void confine_again(NpManager *m, NpProcess *p, const NpMask *held, const NpMask *cpus) {
        g_autoptr(NpMask) node_cpus = np_topology_cpus_of(m->topology, p->target);
        g_autoptr(GError) e = NULL;
        g_autofree char *note = NULL;

        int r = p->memory_only
                ? np_backend_confine_memory(m->backend, p->pid, p->starttime, p->target, p->runs_on, cpus, &e)
                : np_backend_place(m->backend, p->pid, p->starttime, p->target, cpus, NULL, NULL, &e);
        if (r == 0 && p->memory_only)
                r = np_backend_finish(m->backend, p->pid, p->starttime, &e);
        if (r == -ESRCH) {
                mark_released(m, p); /* gone: the next scan drops it */
                return;
        }
        if (r < 0) {
                /* the backend put it back and forgot it */
                note = note_of(NP_REASON_HOTPLUG_CONFINE_FAILED, p, held, cpus, e ? e->message : g_strerror(-r));
                mark_released(m, p);
                np_process_set_note(p, note);
                log_event(p, LOG_WARNING, note);
                return;
        }
        note = note_of(!p->memory_only && np_mask_empty(node_cpus) ? NP_REASON_HOTPLUG_NO_CPU
                                                                   : NP_REASON_HOTPLUG_CONFINED,
                       p, held, cpus, NULL);
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
        /* the common scan: nothing held, no CPU changed, no thread waiting
         * for CPUs */
        if (!m->backend ||
            (m->held_last == 0 && np_mask_empty(m->cpus_changed) && !np_backend_short_restores(m->backend)))
                return 0;
        /* at every scan while threads wait: the kernel's hotplug work may give
         * the cpuset (cgroup v2's root too) the CPUs that came back only after
         * the scan that saw them online */
        if (np_backend_short_restores(m->backend))
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
                if (p->threads_only) {
                        /* kept by its thread homes alone (np-thread-homes.h):
                         * when a node of them changed its CPUs, every thread
                         * is put back, and the next round gives new homes */
                        if (affected) {
                                int r = np_backend_release(m->backend, p->pid);
                                g_autofree char *nodes = np_mask_format(p->target);
                                log_info("CPUs of nodes %s changed: the threads of %d (%s) are no longer kept on "
                                         "their own nodes%s%s; the next round gives them new ones",
                                         nodes, p->pid, p->comm, r < 0 && r != -ESRCH && r != -ENOENT ? ": " : "",
                                         r < 0 && r != -ESRCH && r != -ENOENT ? g_strerror(-r) : "");
                                mark_released(m, p);
                                acted++;
                        }
                        continue;
                }
                g_autoptr(NpMask) node_cpus = np_topology_cpus_of(m->topology, p->target);
                /* only when they lost them now: the policy may place a process
                 * that hardly uses a CPU on a memory-only node on purpose */
                if (p->state == NP_PROC_PLACED && !p->memory_only && np_mask_empty(node_cpus) && affected) {
                        release(m, p, held_copy);
                        acted++;
                        continue;
                }
                /* its memory only held: it may run on the CPUs online of
                 * the nodes it may run on (every CPU online when none) */
                g_autoptr(NpMask) cpus =
                        p->memory_only ? np_placement_memory_cpus(m, p->runs_on) : np_placement_cpus_for(m, p->target);
                if (p->memory_only)
                        affected = !np_mask_equal(held_copy, cpus);
                if (!affected && np_mask_equal(held_copy, cpus))
                        continue;
                confine_again(m, p, held_copy, cpus);
                acted++;
        }
        if (!keep)
                np_mask_zero(m->cpus_changed);
        return acted;
}
