/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Advice that reserves room: see np-advice.h. */
#include "np-advice.h"

#include <inttypes.h>
#include <math.h>

#include "np-log.h"
#include "np-decide.h"
#include "np-reserve.h"

#define MIB (1024.0 * 1024.0)

static void arm_timer(NpManager *m);

static void expire(NpManager *m) {
        guint n = np_reservations_expire(m->reservations, np_now_usec(CLOCK_MONOTONIC));
        if (n)
                log_debug("%u reservation%s of advice expired (AdviceHoldSec=%.0f)", n, n > 1 ? "s" : "",
                          (double) m->config->advice_hold_usec / 1e6);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        NpManager *m = userdata;
        expire(m);
        arm_timer(m);
        return 0;
}

/* The timer fires at the next expiry; off when there is none. */
static void arm_timer(NpManager *m) {
        uint64_t next = np_reservations_next_expiry(m->reservations);
        int r = 0;
        if (!m->event)
                return; /* --once, --advise: no loop */
        if (next == UINT64_MAX) {
                if (m->reservation_timer)
                        (void) sd_event_source_set_enabled(m->reservation_timer, SD_EVENT_OFF);
                return;
        }
        if (!m->reservation_timer) {
                r = sd_event_add_time(m->event, &m->reservation_timer, CLOCK_MONOTONIC, next, 1000, on_timer, m);
                if (r >= 0)
                        (void) sd_event_source_set_description(m->reservation_timer, "reservation-expiry");
        } else {
                r = sd_event_source_set_time(m->reservation_timer, next);
        }
        if (r >= 0)
                r = sd_event_source_set_enabled(m->reservation_timer, SD_EVENT_ONESHOT);
        if (r < 0)
                log_warning("Cannot arm the reservations' expiry timer: %s (they expire at the next scan)",
                            g_strerror(-r));
}

/* The CPUs (ReservedCPUs= out) and the memory of the nodes of `set` that
 * have memory; of every such node when set is NULL. */
static void size_of(NpManager *m, const NpMask *set, double *cpus, uint64_t *bytes) {
        *cpus = 0;
        *bytes = 0;
        for (guint i = 0; i < m->topology->nodes->len; i++) {
                const NpNode *n = m->topology->nodes->pdata[i];
                if (set && !np_mask_test(set, n->id))
                        continue;
                g_autoptr(NpMask) c = np_mask_copy(n->cpus);
                if (m->config->reserved_cpus)
                        np_mask_andnot(c, m->config->reserved_cpus);
                *cpus += np_mask_weight(c);
                if (np_mask_test(m->topology->with_memory, n->id))
                        *bytes += n->mem_total_bytes;
        }
}

/* Notices about the answers to callers other than root: at most one in
 * this long, so that anyone calling Advise() cannot flood the journal. */
#define NOTICE_INTERVAL_USEC (10 * G_USEC_PER_SEC)

/* May a notice about an answer to uid be logged now? Root's always are. */
static bool notice_allowed(NpManager *m, uint32_t uid) {
        if (uid == 0)
                return true;
        uint64_t now = np_now_usec(CLOCK_MONOTONIC);
        if (m->advice_notice_usec && now - m->advice_notice_usec < NOTICE_INTERVAL_USEC) {
                m->advice_notices_dropped++;
                return false;
        }
        if (m->advice_notices_dropped)
                log_notice("%u notice%s about Advise() from callers other than root left out (at most one in %.0f s)",
                           m->advice_notices_dropped, m->advice_notices_dropped > 1 ? "s" : "",
                           (double) NOTICE_INTERVAL_USEC / 1e6);
        m->advice_notice_usec = now;
        m->advice_notices_dropped = 0;
        return true;
}

static void log_fit(NpManager *m, const NpMask *nodes, double cpus, uint64_t bytes, const NpAdviceFit *fit) {
        g_autofree char *s = np_mask_format(nodes);
        unsigned t = m->config->target_utilization;
        if (fit->beyond_machine) {
                double mc;
                uint64_t mb;
                size_of(m, NULL, &mc, &mb);
                log_notice("Advise(%.2f CPUs, %.0f MiB) asks more than the whole machine has at TargetUtilization=%u%% "
                           "(%.2f CPUs, %.0f MiB): answered %s, which come closest; the job will crowd them "
                           "(make it smaller or raise TargetUtilization=)",
                           cpus, (double) bytes / MIB, t, mc * t / 100.0, (double) mb * t / 100.0 / MIB, s);
                return;
        }
        log_notice("Advise(%.2f CPUs, %.0f MiB): no set of nodes has room for it now at TargetUtilization=%u%%: "
                   "answered %s, which come closest (%.0f MiB and %.2f CPUs short there; see Dump() for what "
                   "runs and what reservations hold)",
                   cpus, (double) bytes / MIB, t, s, fit->short_bytes / MIB, fit->short_cpus);
}

NpMask *np_advice_give(NpManager *m, double cpus, uint64_t bytes, uint32_t uid, GError **error) {
        expire(m);
        NpAdviceFit fit;
        NpMask *nodes = np_decide_advise(m, cpus, bytes, &fit, error);
        if (!nodes)
                return NULL;
        if (!fit.fits && notice_allowed(m, uid))
                log_fit(m, nodes, cpus, bytes, &fit);

        double nc, mc;
        uint64_t nb, mb;
        size_of(m, nodes, &nc, &nb);
        size_of(m, NULL, &mc, &mb);
        NpReserveRequest q = {
                .made_usec = np_now_usec(CLOCK_BOOTTIME),
                .now_usec = np_now_usec(CLOCK_MONOTONIC),
                .hold_usec = m->config->advice_hold_usec,
                .uid = uid,
                .privileged = uid == 0,
                .machine_cpus = mc,
                .machine_bytes = mb,
        };
        uint64_t id = 0;
        g_autofree char *s = np_mask_format(nodes);
        NpReserveOutcome o = np_reservations_add(m->reservations, nodes, MIN(cpus, nc), MIN(bytes, nb), &q, &id);
        if (o == NP_RESERVE_HELD) {
                log_info("Advised %s for %.2f CPUs and %.0f MiB (uid %" PRIu32 "), held for %.0f s or until its "
                         "process shows up there (reservation %" PRIu64 ")",
                         s, cpus, (double) bytes / MIB, uid, (double) q.hold_usec / 1e6, id);
                arm_timer(m);
        } else if (o == NP_RESERVE_OFF || o == NP_RESERVE_EMPTY) {
                log_debug("Advised %s for %.2f CPUs and %.0f MiB (uid %" PRIu32 "), not held: %s", s, cpus,
                          (double) bytes / MIB, uid, np_reserve_outcome_to_string(o));
        } else if (notice_allowed(m, uid)) {
                log_notice("Advised %s for %.2f CPUs and %.0f MiB (uid %" PRIu32 "), not held: %s", s, cpus,
                           (double) bytes / MIB, uid, np_reserve_outcome_to_string(o));
        }
        return nodes;
}

void np_advice_settle(NpManager *m) {
        expire(m);
        if (!np_reservations_count(m->reservations))
                return;
        g_autoptr(GArray) users = g_array_new(FALSE, FALSE, sizeof(NpReserveUser));
        g_autoptr(GPtrArray) masks = g_ptr_array_new_with_free_func((GDestroyNotify) np_mask_free);
        double hz = (double) np_clock_ticks();
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const NpProcess *p = v;
                if (!p->significant || !p->cpus_allowed)
                        continue;
                NpMask *cpu_nodes = np_mask_new();
                NP_MASK_FOREACH (c, p->cpus_allowed) {
                        int node = np_topology_node_of_cpu(m->topology, (unsigned) c);
                        if (node >= 0)
                                np_mask_set(cpu_nodes, (unsigned) node);
                }
                g_ptr_array_add(masks, cpu_nodes);
                bool narrowed = p->mems_allowed && !np_mask_subset(m->topology->with_memory, p->mems_allowed);
                NpReserveUser u = {
                        .pid = p->pid,
                        .starttime = p->starttime,
                        .start_usec = (uint64_t) ((double) p->starttime / hz * 1e6),
                        .cpu_nodes = cpu_nodes,
                        .mem_nodes = narrowed ? p->mems_allowed : NULL,
                        .per_node = p->maps.per_node,
                        .cpu = p->cpu_usage,
                };
                g_array_append_val(users, u);
        }
        bool changed = false;
        guint dropped = np_reservations_settle(m->reservations, (const NpReserveUser *) (void *) users->data,
                                               users->len, &changed);
        if (dropped)
                log_debug("%u reservation%s of advice ended: %s process showed up or exited", dropped,
                          dropped > 1 ? "s" : "", dropped > 1 ? "each one's" : "its");
        if (changed)
                arm_timer(m);
}
