/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Deciding: the policy run over its snapshot, its decisions carried out. See np-decide.h. */
#include "np-decide.h"

#include <math.h>

#include "np-classify.h"
#include "np-log.h"
#include "np-placement.h"
#include "np-scan.h"
#include "np-snapshot.h"
#include "np-thread-homes.h"

/* ---- carrying out ------------------------------------------------------- */

static void set_state(NpManager *m, NpProcess *p, NpProcState state, const NpMask *target) {
        np_manager_set_state(m, p, state, target, p->last_placed_usec);
}

static void log_decision(const NpProcess *p, int level, const char *what, const char *why) {
        g_autofree char *f_pid = g_strdup_printf("PID=%d", p->pid);
        g_autofree char *f_comm = g_strdup_printf("COMM=%s", p->comm);
        const char *fields[] = { f_pid, f_comm, NULL };
        np_log_fields(level, NULL, fields, "%s %d (%s): %s", what, p->pid, p->comm, why);
}

static void placed_done(NpManager *m, int pid, uint64_t moved_bytes, const GError *error, void *userdata) {
        if (error) {
                log_warning("The policy's placement of %d did not complete: %s", pid, error->message);
                NpProcess *p = np_manager_process(m, pid);
                if (p)
                        g_clear_pointer(&p->homes_pending, g_array_unref);
        }
        /* the homes its group's move planned (np-thread-homes.h) */
        np_thread_homes_after_moves(m);
}

/* d's reason worded: why */
static void carry_out(NpManager *m, NpProcess *p, const NpDecision *d, const char *why) {
        bool advise = m->config->mode == NP_MODE_ADVISE;
        bool changed = g_strcmp0(p->decision, why) != 0;

        np_process_set_decision(p, why);
        switch (d->kind) {
        case NP_DECISION_MOVE:
                if (advise) {
                        if (p->state != NP_PROC_ADVISED || !p->target || !np_mask_equal(p->target, d->nodes))
                                log_decision(p, LOG_INFO, "Advice for", why);
                        if (!np_process_held(p))
                                set_state(m, p, NP_PROC_ADVISED, d->nodes);
                        break;
                }
                {
                        g_autoptr(GError) e = NULL;
                        NpPlaceReason reason = p->state == NP_PROC_PLACED ? NP_PLACE_REBALANCE : NP_PLACE_POLICY;
                        log_decision(p, LOG_INFO, "Placing", why);
                        int r = d->memory_only
                                ? np_placement_submit_memory(m, p->pid, d->nodes, d->runs_on, reason, placed_done, NULL,
                                                             &e)
                                : np_placement_submit(m, p->pid, d->nodes, reason, placed_done, NULL, &e);
                        if (r < 0) {
                                log_warning("Cannot place %d (%s): %s", p->pid, p->comm, e->message);
                                g_clear_pointer(&p->homes_pending, g_array_unref);
                        }
                }
                break;
        case NP_DECISION_NOFIT:
                /* once when it starts not fitting, not at every wording */
                if (p->state != NP_PROC_NOFIT)
                        log_decision(p, LOG_NOTICE, "Not placing", why);
                if (!np_process_held(p) && p->state != NP_PROC_EXCLUDED)
                        set_state(m, p, NP_PROC_NOFIT, NULL);
                break;
        case NP_DECISION_KEEP:
                if (changed)
                        log_decision(p, LOG_DEBUG, "Leaving", why);
                break;
        }
}

/* p's group as the policy decided it: its name, and the shared objects of
 * it that no process outside the group maps, which p's moves carry
 * (np-placement.c). */
static void note_group(NpProcess *p, const NpGroup *g) {
        if (!g || g->key.kind == NP_GROUP_PROCESS) {
                np_process_set_group(p, NULL, NULL);
                return;
        }
        g_autofree char *name = np_group_key_name(&g->key);
        g_autoptr(GArray) objects = g_array_new(FALSE, FALSE, sizeof(NpSharedId));
        for (guint i = 0; i < g->objects->len; i++) {
                const NpGroupObject *o = &g_array_index(g->objects, NpGroupObject, i);
                if (!o->outside && np_snapshot_maps_object(p, &o->id))
                        g_array_append_val(objects, o->id);
        }
        np_process_set_group(p, name, objects);
}

/* p's pages came from its group's memory.numa_stat this scan (its
 * numa_maps is not read by age), or no longer do: then its numa_maps is
 * read at the next scan. */
static void note_pages_source(NpProcess *p, bool from_stat) {
        if (p->pages_from_group && !from_stat)
                np_maps_age_invalidate(&p->maps_age);
        p->pages_from_group = from_stat;
}

/* States that only say what the policy saw last time. */
static void settle_state(NpManager *m, NpProcess *p, NpPolicyHold hold, const NpDecision *d, const char *why) {
        if (np_process_held(p) || p->state == NP_PROC_EXCLUDED)
                return;
        if (hold == NP_HOLD_FOREIGN) {
                if (p->state != NP_PROC_FOREIGN)
                        log_decision(p, LOG_INFO, "Leaving", why);
                set_state(m, p, NP_PROC_FOREIGN, NULL);
        } else if (d->kind == NP_DECISION_KEEP && p->state != NP_PROC_OBSERVED &&
                   !(hold == NP_HOLD_PLACED && np_snapshot_advised_there(m, p))) {
                set_state(m, p, NP_PROC_OBSERVED, NULL);
        }
}

/* One node of memory: nothing to decide, every process is local there.
 * Those narrowed by someone else are still shown foreign, with who narrowed
 * them; one no longer narrowed is observed again. */
static void settle_foreign(NpManager *m) {
        g_autoptr(GPtrArray) cands = np_snapshot_candidates(m);
        for (guint i = 0; i < cands->len; i++) {
                NpProcess *p = cands->pdata[i];
                NpPolicyHold hold = np_snapshot_hold_of(m, p);
                if (hold == NP_HOLD_FOREIGN) {
                        NpReason r = { .code = NP_REASON_FOREIGN, .cgroup = p->cgroup };
                        g_autofree char *why = np_reason_render(&r);
                        if (p->state != NP_PROC_FOREIGN) {
                                log_decision(p, LOG_INFO, "Leaving", why);
                                set_state(m, p, NP_PROC_FOREIGN, NULL);
                        }
                        np_process_set_decision(p, why);
                } else if (hold == NP_HOLD_NONE && p->state == NP_PROC_FOREIGN) {
                        set_state(m, p, NP_PROC_OBSERVED, NULL);
                        np_process_set_decision(p, "");
                }
        }
}

/* The groups of this round into the manager's table (the Group objects):
 * members, pages (as the policy counted them), locality over the nodes its
 * members run on, and its first member's target, state and decision
 * without the "with the N processes of its group" prefix. */
static void record_groups(NpManager *m, const NpSnapshot *s, const GPtrArray *decisions) {
        g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
        for (guint i = 0; i < s->cands->len; i++)
                g_hash_table_insert(index, GINT_TO_POINTER(((NpProcess *) s->cands->pdata[i])->pid),
                                    GUINT_TO_POINTER(i + 1));
        np_group_table_begin(m->groups);
        for (guint i = 0; s->groups.groups && i < s->groups.groups->len; i++) {
                const NpGroup *g = s->groups.groups->pdata[i];
                if (!g->members->len)
                        continue;
                g_autofree char *name = np_group_key_name(&g->key);
                NpGroupView *v = np_group_table_take(m->groups, name, g->key.kind);
                g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(guint32));
                g_autoptr(NpMask) running = np_mask_new();
                NpProcess *first = NULL;
                guint first_at = 0;
                for (guint k = 0; k < g->members->len; k++) {
                        int pid = g_array_index(g->members, NpGroupJoin, k).pid;
                        guint at = GPOINTER_TO_UINT(g_hash_table_lookup(index, GINT_TO_POINTER(pid)));
                        if (!at)
                                continue;
                        NpProcess *p = s->cands->pdata[at - 1];
                        guint32 u = (guint32) pid;
                        g_array_append_val(pids, u);
                        if (p->running_nodes)
                                np_mask_or(running, p->running_nodes);
                        if (!first) {
                                first = p;
                                first_at = at - 1;
                        }
                        np_process_set_group_id(p, v->id);
                }
                if (!first)
                        continue;
                /* its pages as the policy counted them: memory.numa_stat's
                 * for a cgroup group that has it, else the members' */
                const GArray *stat = g_hash_table_lookup(s->groups.stat_pages, g);
                const GArray *per_node = stat ? stat : g->per_node;
                uint64_t mem = stat ? np_node_bytes_sum(stat) : g->mem, local = 0;
                for (guint j = 0; per_node && j < per_node->len; j++) {
                        const NpNodeBytes *nb = &g_array_index(per_node, NpNodeBytes, j);
                        if (np_mask_test(running, nb->node))
                                local += nb->bytes;
                }
                np_group_view_set_members(v, pids);
                np_group_view_set_memory(v, mem, per_node);
                np_group_view_set_locality(v, mem ? (double) local / (double) mem : 1.0);
                np_group_view_set_target(v, first->target);
                np_group_view_set_state(v, np_proc_state_to_string(first->state));
                NpReason r = ((const NpDecision *) decisions->pdata[first_at])->reason;
                r.group_members = 0; /* a shallow copy: rendered only */
                g_autofree char *why = np_reason_render(&r);
                np_group_view_set_decision(v, why);
        }
        np_group_table_end(m->groups);
}

/* Candidates by their decision's order (stable: the rest keep theirs). */
static gint by_order(gconstpointer a, gconstpointer b, gpointer data) {
        const GPtrArray *decisions = data;
        const NpDecision *x = decisions->pdata[*(const guint *) a], *y = decisions->pdata[*(const guint *) b];
        return (x->order > y->order) - (x->order < y->order);
}

/* What the processes starting beside the candidates use: not candidates
 * (yet), from half of MinProcessMemory= up, and still touching their memory
 * or not yet measured. The ledger counts their CPU as the machine's
 * background, spread over every node, and their pages as other load where
 * they are, until they are measured candidates, whose CPU counts on their
 * own nodes and whose pages may be about to leave. `bytes` leaves out those
 * of MinProcessMemory= and more, which their follow-up scans count
 * (m->awaiting_bytes) while they wait. */
typedef struct {
        bool summed; /* filled (summed only when a decision lacks something) */
        double cpu;
        uint64_t bytes;
} Starting;

static void sum_starting(const NpManager *m, Starting *out) {
        *out = (Starting){ .summed = true };
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const NpProcess *p = v;
                uint64_t mem = np_process_scan_memory(p);
                if (p->significant || p->state == NP_PROC_EXCLUDED || p->state == NP_PROC_FOREIGN ||
                    np_process_held(p) || mem < m->config->min_process_memory / 2)
                        continue;
                if (!p->grew && np_process_cpu_settled(p))
                        continue;
                out->cpu += p->cpu_usage;
                if (mem < m->config->min_process_memory)
                        out->bytes += mem;
        }
}

/* The candidate a decision would spread over several nodes for want of
 * memory on the node with most of its pages, a want that the newcomers
 * (*newcomer_bytes: processes waiting for their follow-up, whose pages may
 * be about to leave; this round's own are added to it) and the memory of
 * the processes starting beside it could make up, or for want of CPUs
 * there, a want that the CPU use of the processes starting beside it could
 * make up (*starting: sum_starting(), summed only when a decision lacks
 * something): its index, or -1 when there is none. Only the first
 * s->cands->len decisions are the candidates' (the reservations of Advise()
 * follow them). */
static int squeezed_by_newcomers(const NpManager *m, const NpSnapshot *s, const GPtrArray *decisions,
                                 uint64_t *newcomer_bytes, Starting *starting) {
        /* the candidates the kernel's balancing has begun to move, which the
         * scan left out as decided at first sight, but which this round
         * keeps where they are for their follow-up (no single node holds
         * them yet, or they still touch their memory) */
        for (guint i = 0; i < s->cands->len; i++) {
                const NpDecision *d = decisions->pdata[i];
                if (d->kind == NP_DECISION_KEEP && np_classify_kernel_began(m, s->cands->pdata[i]))
                        *newcomer_bytes += s->procs[i].mem;
        }
        for (guint i = 0; i < s->cands->len; i++) {
                const NpDecision *d = decisions->pdata[i];
                const NpShortage *a = &d->reason.alone;
                if (d->kind != NP_DECISION_MOVE)
                        continue;
                if (a->kind != NP_SHORT_MEMORY && a->kind != NP_SHORT_CPU)
                        continue;
                double want = a->others + a->its - a->capacity;
                if (a->kind == NP_SHORT_MEMORY && *newcomer_bytes && want <= (double) *newcomer_bytes)
                        return (int) i;
                if (!starting->summed)
                        sum_starting(m, starting);
                if (a->kind == NP_SHORT_MEMORY && *newcomer_bytes + starting->bytes > 0 &&
                    want <= (double) (*newcomer_bytes + starting->bytes))
                        return (int) i;
                if (a->kind == NP_SHORT_CPU && starting->cpu > 0 && want <= starting->cpu)
                        return (int) i;
        }
        return -1;
}

void np_decide_run(NpManager *m) {
        /* Nothing to decide while paused, or on a machine with one node of
         * memory (every process is local there). */
        if (m->paused)
                return;
        if (np_mask_weight(m->topology->with_memory) < 2) {
                settle_foreign(m);
                /* no groups are decided there */
                np_group_table_begin(m->groups);
                np_group_table_end(m->groups);
                return;
        }
        g_auto(NpSnapshot) s = { 0 };
        np_snapshot_take(m, &s);
        g_autoptr(GPtrArray) decisions = np_policy_decide(s.nodes, s.n_nodes, s.procs, s.n_procs, &s.params);
        /* the next round counts the lower of its background and this one */
        m->background_cpu = np_policy_background_cpu(s.nodes, s.n_nodes, s.procs, s.n_procs, &s.params);
        m->background_measured = m->node_cpu_measured;
        uint64_t newcomers = m->awaiting_bytes;
        Starting starting = { 0 };
        int squeezed = m->rounds_deferred < NP_DECIDE_WAIT_ROUNDS
                ? squeezed_by_newcomers(m, &s, decisions, &newcomers, &starting)
                : -1;
        if (squeezed >= 0) {
                const NpProcess *p = s.cands->pdata[squeezed];
                bool cpu = ((const NpDecision *) decisions->pdata[squeezed])->reason.alone.kind == NP_SHORT_CPU;
                m->rounds_deferred++;
                /* the next scan is a follow-up, also when the processes
                 * starting are not yet of a size that brings one */
                np_manager_set_scan_interval(m, MIN(NP_FOLLOWUP_USEC, m->config->scan_interval_usec));
                m->followup_scan = true;
                if (cpu)
                        log_info("Not deciding in scan %" G_GUINT64_FORMAT ": %d (%s) would be spread over several "
                                 "nodes for want of CPUs, and processes starting beside it (%.2f CPUs, counted on "
                                 "every node until measured) are measured at the follow-up scan",
                                 m->scans, p->pid, p->comm, starting.cpu);
                else
                        log_info("Not deciding in scan %" G_GUINT64_FORMAT ": %d (%s) would be spread over several "
                                 "nodes for want of memory, and processes starting beside it (%.0f MiB) are "
                                 "measured at the follow-up scan",
                                 m->scans, p->pid, p->comm, (double) (newcomers + starting.bytes) / (1 << 20));
                return;
        }
        m->rounds_deferred = 0;
        /* moves are queued in the order the policy planned them: each
         * counts on the room the ones before it leave on their nodes */
        g_autoptr(GArray) seq = g_array_sized_new(FALSE, FALSE, sizeof(guint), s.cands->len);
        for (guint i = 0; i < s.cands->len; i++)
                g_array_append_val(seq, i);
        g_array_sort_with_data(seq, by_order, decisions);
        /* the groups' homes, worked out at each group's first member */
        g_autoptr(NpGroupHomes) group_homes = np_group_homes_new();
        bool faults_wait = false;
        for (guint k = 0; k < seq->len; k++) {
                guint i = g_array_index(seq, guint, k);
                NpProcess *p = s.cands->pdata[i];
                const NpDecision *d = decisions->pdata[i];
                NpPolicyHold hold = s.procs[i].hold;
                g_autofree char *why = np_reason_render(&d->reason);
                const NpGroup *g = g_hash_table_lookup(s.groups.of_pid, GINT_TO_POINTER(p->pid));
                note_group(p, g);
                note_pages_source(p, g && g_hash_table_contains(s.groups.stat_pages, g));
                settle_state(m, p, hold, d, why);
                /* left to the kernel's balancing on every node, or placed
                 * whole on several nodes: how much of it the kernel keeps
                 * moving is watched (kernel churn), and its busy threads
                 * may get nodes of their own (np-thread-homes.h) */
                bool every_node = hold == NP_HOLD_NONE && d->kind == NP_DECISION_KEEP &&
                        (d->reason.kernel == NP_KERNEL_EVERY_NODE || d->reason.code == NP_REASON_CPU_EVERY_NODE ||
                         d->reason.code == NP_REASON_EVERY_NODE || d->reason.code == NP_REASON_THREAD_WORKERS);
                const NpMask *on = hold == NP_HOLD_MOVING                      ? p->moving_to
                        : hold == NP_HOLD_PLACED && p->state == NP_PROC_PLACED ? p->target
                                                                               : NULL;
                bool placed_spread = on && np_mask_weight(on) > 1 && !p->memory_only && d->kind == NP_DECISION_KEEP;
                /* (one its homes alone hold stays homed while the policy
                 * keeps it where it is, local or not; the members of a
                 * group of several processes are homed together while the
                 * group is placed on several nodes, or kept where it runs
                 * for being local there or spread over every node; a group
                 * of one process gets none) */
                bool grouped = g && g->key.kind != NP_GROUP_PROCESS;
                bool kept = hold == NP_HOLD_NONE && d->kind == NP_DECISION_KEEP;
                bool homes_ok = s.params.kernel_balancing && m->config->mode == NP_MODE_ENFORCE &&
                        (grouped ? g->members->len >= 2 &&
                                         ((placed_spread && hold == NP_HOLD_PLACED) ||
                                          (kept && (d->reason.code == NP_REASON_LOCAL || every_node)))
                                 : every_node || (placed_spread && hold == NP_HOLD_PLACED) ||
                                         (p->threads_only && kept));
                g_autofree char *homes = grouped
                        ? np_thread_homes_settle_member(m, group_homes, g, p, s.nodes, s.n_nodes,
                                                        hold == NP_HOLD_PLACED, homes_ok)
                        : np_thread_homes_settle(m, p, s.nodes, s.n_nodes, every_node ? NULL : p->target, homes_ok);
                /* a group moved whole to several nodes: its homes as soon
                 * as it is there */
                if (grouped && g->members->len >= 2 && d->kind == NP_DECISION_MOVE && !d->memory_only &&
                    np_mask_weight(d->nodes) > 1 && s.params.kernel_balancing && m->config->mode == NP_MODE_ENFORCE) {
                        g_free(homes);
                        homes = np_thread_homes_plan_member(m, group_homes, g, p, s.nodes, s.n_nodes, d->nodes);
                }
                if (homes) {
                        char *both = g_strconcat(why, homes, NULL);
                        g_free(why);
                        why = both;
                }
                carry_out(m, p, d, why);
                p->kernel_watch =
                        s.params.kernel_balancing && s.params.confines_memory && (every_node || placed_spread);
                faults_wait |= kept && s.procs[i].thread_faults_pending;
        }
        if (faults_wait) {
                /* a young process or group kept where it is until the kernel
                 * has counted its busy threads' faults: looked at again at a
                 * follow-up scan, not after an interval that stretches */
                np_manager_set_scan_interval(m, MIN(NP_FOLLOWUP_USEC, m->config->scan_interval_usec));
                m->followup_scan = true;
        }
        record_groups(m, &s, decisions);
}

NpMask *np_decide_advise(NpManager *m, double cpus, uint64_t bytes, NpAdviceFit *fit, GError **error) {
        if (!isfinite(cpus) || cpus < 0 || cpus > 1e6) {
                g_set_error(error, NP_ERROR, NP_ERROR_INVALID_ARGS, "Invalid CPU count %g (expected 0 to 1000000)",
                            cpus);
                return NULL;
        }
        g_auto(NpSnapshot) s = { 0 };
        np_snapshot_take(m, &s);
        NpMask *set = np_policy_advise(s.nodes, s.n_nodes, s.procs, s.n_procs, &s.params, cpus, bytes, fit);
        if (!set)
                g_set_error(error, NP_ERROR, NP_ERROR_NOT_SUPPORTED, "No NUMA node has memory");
        return set;
}
