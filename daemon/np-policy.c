/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The placement policy, pure: see np-policy.h. */
#include "np-policy.h"

#include "np-ledger.h"
#include "np-policy-choose.h"
#include "np-policy-group.h"
#include "np-sample.h"
#include "np-topology.h"

void np_decision_free(NpDecision *d) {
        if (!d)
                return;
        np_mask_free(d->nodes);
        np_mask_free(d->runs_on);
        np_reason_clear(&d->reason);
        g_free(d);
}

/* ---- deciding ----------------------------------------------------------- */

/* A decision with reason r (whose contents it takes over). */
static NpDecision *decision(int pid, NpDecisionKind kind, NpMask *nodes, NpReason *r) {
        NpDecision *d = g_new0(NpDecision, 1);
        d->pid = pid;
        d->kind = kind;
        d->nodes = nodes;
        d->reason = *r;
        *r = (NpReason){ 0 };
        return d;
}

static NpMask *copy_mask(const NpMask *m) {
        return m ? np_mask_copy(m) : NULL;
}

static double locality(const NpPolicyProcess *p) {
        const NpMask *on = p->running;
        if (!p->mem || !on || np_mask_empty(on))
                return 0.0;
        return (double) np_ledger_bytes_on_set(p, on) / (double) p->mem;
}

/* The pages a placed p's last move left outside its nodes that are still
 * there: p->stuck, but at most what is outside now. */
static uint64_t stuck_now(const NpPolicyProcess *p) {
        return MIN(p->stuck, p->mem - MIN(p->mem, np_ledger_bytes_on_set(p, p->current)));
}

/* The share of a placed p's memory on its nodes, leaving out stuck_now():
 * moving "the rest" again would not move those. */
static double locality_placed(const NpPolicyProcess *p) {
        uint64_t counted = p->mem - stuck_now(p);
        return counted ? (double) MIN(p->mem, np_ledger_bytes_on_set(p, p->current)) / (double) counted : 1.0;
}

/* A placed process has less of its memory on its nodes than
 * MemoryLocalityTarget= (beyond what its last move left on purpose). */
static bool rest_wanted(const NpLedger *l, const NpPolicyProcess *p) {
        return locality_placed(p) * 100.0 < (double) l->params->memory_locality_target;
}

/* The nodes with memory and CPUs: a set holding all of them confines
 * nothing. */
static bool covers_every_cpu_node(const NpLedger *l, const NpMask *set) {
        guint cpu_nodes = 0;
        for (guint i = 0; i < l->n; i++) {
                if (!l->s[i].has_mem || !l->s[i].has_cpu)
                        continue;
                cpu_nodes++;
                if (!np_mask_test(set, l->s[i].id))
                        return false;
        }
        return cpu_nodes > 1;
}

/* Would p's CPU use need every node even on an idle machine (more than all
 * nodes but the biggest hold at TargetUtilization)? Then confining it can
 * only take CPUs from it. */
static bool needs_every_node(const NpLedger *l, const NpPolicyProcess *p) {
        double all = 0, biggest = 0;
        guint n = 0;
        for (guint i = 0; i < l->n; i++)
                if (l->s[i].has_cpu && l->s[i].has_mem) {
                        all += l->s[i].cap_cpu;
                        biggest = MAX(biggest, l->s[i].cap_cpu);
                        n++;
                }
        return n > 1 && np_ledger_cpu_demand(p) > all - biggest;
}

/* Does p run on more nodes than its demand needs, so that all of its memory
 * on the nodes it runs on does not make it local? NP_CONTEXT_SCATTERED: it
 * runs on every node although one holds its demand (its threads scattered
 * by the scheduler, not spread by their own load: its memory is local
 * nowhere). NP_CONTEXT_APART: its busy threads (a group's: of all its
 * processes) run on more nodes than its demand needs, while the nodes that
 * hold its demand already hold MemoryLocalityTarget= of its memory: a
 * thread on the other nodes reaches it remotely (autonuma-benchmark's
 * numa01: two processes on one node's shared memory, the scheduler's
 * choice of node for one of them; or two threads of one process), and
 * placing it moves threads and little memory; threads or processes that
 * each keep their own memory on their own nodes (numa02) fail the memory
 * test and stay. Else NP_CONTEXT_NONE. Either way the policy places it by
 * its demand. */
static NpReasonContext spread_beyond_demand(const NpLedger *l, const NpPolicyProcess *p) {
        if (!p->running)
                return NP_CONTEXT_NONE;
        bool every = covers_every_cpu_node(l, p->running);
        bool several = p->mem && np_mask_weight(p->running) >= 2;
        if (!every && !several)
                return NP_CONTEXT_NONE;
        g_autoptr(NpMask) ideal = np_choose_set(l, p, NULL, p->left, false);
        if (!ideal)
                return NP_CONTEXT_NONE;
        if (every && np_mask_weight(ideal) == 1)
                return NP_CONTEXT_SCATTERED;
        if (several && np_mask_weight(ideal) < np_mask_weight(p->running) &&
            (double) np_ledger_bytes_on_set(p, ideal) * 100.0 >=
                    (double) l->params->memory_locality_target * (double) p->mem)
                return NP_CONTEXT_APART;
        return NP_CONTEXT_NONE;
}

static bool scattered(const NpLedger *l, const NpPolicyProcess *p) {
        return spread_beyond_demand(l, p) == NP_CONTEXT_SCATTERED;
}

uint64_t np_policy_move_wait_usec(uint64_t min_usec, unsigned failed_moves) {
        unsigned k = MIN(failed_moves, NP_POLICY_MAX_BACKOFF);
        return min_usec > UINT64_MAX >> k ? UINT64_MAX : min_usec << k;
}

/* Has the kernel's NUMA balancing (on) begun moving a candidate seen for
 * the first time (NP_POLICY_KERNEL_BEGAN)? */
static bool kernel_began(const NpLedger *l, const NpPolicyProcess *p) {
        return l->params->kernel_balancing && p->cpu_estimated && p->per_node && p->mem && p->balanced * 2 >= p->mem &&
                (double) p->kernel_migrated >= NP_POLICY_KERNEL_BEGAN * (double) p->mem;
}

/* Pass 1: what stays whatever the load, into *r. False when p is a
 * candidate. A foreign process's Decision names its cgroup (libvirt's
 * machine/qemu-1-NAME.libvirt-qemu/emulator, a container's), where its
 * cpuset is set. */
static bool held(const NpLedger *l, const NpPolicyProcess *p, NpReason *r) {
        *r = (NpReason){ .nodes = copy_mask(p->current) };
        switch (p->hold) {
        case NP_HOLD_PINNED:
                r->code = NP_REASON_PINNED;
                return true;
        case NP_HOLD_EXCLUDED:
                r->code = NP_REASON_EXCLUDED;
                return true;
        case NP_HOLD_FOREIGN:
                r->code = NP_REASON_FOREIGN;
                r->cgroup = g_strdup(p->cgroup);
                return true;
        case NP_HOLD_MOVING:
                r->code = NP_REASON_MOVING;
                return true;
        case NP_HOLD_RESERVED:
                r->code = NP_REASON_RESERVED;
                return true;
        case NP_HOLD_PLACED:
        case NP_HOLD_NONE:
                break;
        }
        r->cpu = p->cpu;
        uint64_t wait = np_policy_move_wait_usec(l->params->min_usec_between_moves, p->failed_moves);
        if (!p->per_node)
                r->code = NP_REASON_MAPS_UNKNOWN;
        else if (!p->mem)
                r->code = NP_REASON_NO_MEMORY;
        else if (l->params->keep_interleaved && p->mem && p->interleaved * 2 >= p->mem)
                r->code = NP_REASON_INTERLEAVED;
        else if (p->cpu_estimated && p->growing)
                /* touching its memory at full speed: a start or a burst,
                 * not what to size its node set by */
                r->code = NP_REASON_GROWING;
        else if (p->cpu_estimated && !kernel_began(l, p))
                /* a new process's life so far includes its start: enough
                 * to find it significant at once, not to size it by */
                r->code = NP_REASON_CPU_UNMEASURED;
        else if (p->since_move_usec < wait && p->failed_moves) {
                r->code = NP_REASON_BACKOFF;
                r->bytes = p->failed;
                r->full = p->failed_full;
                r->wait_usec = wait;
                r->doublings = MIN(p->failed_moves, NP_POLICY_MAX_BACKOFF);
        } else if (p->since_move_usec < wait)
                r->code = NP_REASON_RECENTLY_MOVED;
        r->since_usec = p->since_move_usec;
        r->min_wait_usec = l->params->min_usec_between_moves;
        if (r->code == NP_REASON_NONE)
                np_reason_clear(r);
        return r->code != NP_REASON_NONE;
}

/* `local_on` (may be NULL): nodes p runs on and already has its memory on
 * (at MemoryLocalityTarget=), which are crowded: a set within them would
 * take nodes from it without moving it anywhere better, so it is not
 * chosen (do no harm: a process spread over every node by its own busy
 * threads is not squeezed onto fewer when the machine gets busy). `r`
 * holds the context; its code and numbers are added here and the decision
 * takes it over. */
static NpDecision *place_or_nofit(NpLedger *l, const NpPolicyProcess *p, const NpMask *prefer, const NpMask *local_on,
                                  NpReason *r) {
        /* how many nodes it needs comes from the ledger; among sets of
         * that size, one its pages can move to now */
        g_autoptr(NpMask) ideal = np_choose_set(l, p, prefer, p->left, false);
        g_autoptr(NpMask) set = ideal ? np_choose_set(l, p, prefer, p->left, true) : NULL;
        if (set && np_mask_weight(set) != np_mask_weight(ideal))
                g_clear_pointer(&set, np_mask_free);
        r->cpu = p->cpu;
        r->bytes = p->mem;
        if (local_on && ideal && np_mask_subset(set ? set : ideal, local_on)) {
                np_ledger_footprint(l, p, +1);
                r->code = NP_REASON_CROWDED_LOCAL;
                r->nodes = np_mask_copy(set ? set : ideal);
                return decision(p->pid, NP_DECISION_KEEP, NULL, r);
        }
        if (!ideal && needs_every_node(l, p)) {
                np_ledger_footprint(l, p, +1);
                r->code = NP_REASON_CPU_EVERY_NODE;
                return decision(p->pid, NP_DECISION_KEEP, NULL, r);
        }
        if (!ideal) {
                np_ledger_footprint(l, p, +1); /* it stays where it is */
                r->code = NP_REASON_NOFIT;
                r->huge_bytes = np_ledger_huge_in(p, NULL, 0);
                r->target_utilization = l->params->target_utilization;
                return decision(p->pid, NP_DECISION_NOFIT, NULL, r);
        }
        if (!set && !covers_every_cpu_node(l, ideal)) {
                /* it goes there as soon as the memory is free: its
                 * capacity is taken there already, so no one else is put
                 * there meanwhile */
                np_ledger_commit(l, p, ideal);
                r->code = NP_REASON_WAIT_FREE;
                r->nodes = np_mask_copy(ideal);
                return decision(p->pid, NP_DECISION_KEEP, NULL, r);
        }
        if (!set)
                set = g_steal_pointer(&ideal);
        if (covers_every_cpu_node(l, set)) {
                np_ledger_footprint(l, p, +1);
                r->code = NP_REASON_EVERY_NODE;
                return decision(p->pid, NP_DECISION_KEEP, NULL, r);
        }
        if (p->thread_workers && l->params->kernel_balancing && np_mask_weight(set) > 1 && !p->current) {
                /* each busy thread gets a node of its own instead, where
                 * the kernel moves its pages (np-thread-homes.h) */
                np_ledger_footprint(l, p, +1);
                r->code = NP_REASON_THREAD_WORKERS;
                r->nodes = g_steal_pointer(&set);
                return decision(p->pid, NP_DECISION_KEEP, NULL, r);
        }
        if (p->thread_faults_pending && l->params->kernel_balancing && np_mask_weight(set) > 1 && !p->current) {
                /* the next scans tell whether its threads get homes */
                np_ledger_footprint(l, p, +1);
                r->code = NP_REASON_THREAD_FAULTS_PENDING;
                r->nodes = g_steal_pointer(&set);
                return decision(p->pid, NP_DECISION_KEEP, NULL, r);
        }
        r->nodes = np_mask_copy(set);
        if (p->current && np_mask_equal(set, p->current)) {
                np_ledger_footprint(l, p, +1);
                r->code = NP_REASON_STILL_BEST;
                return decision(p->pid, NP_DECISION_KEEP, NULL, r);
        }
        r->code = NP_REASON_PLACE;
        np_choose_why_not_one(l, p, set, r);
        np_ledger_commit(l, p, set);
        np_ledger_move_pages(l, p, set);
        np_choose_distances(l, set, &r->dist_lo, &r->dist_hi);
        r->bytes = p->mem - MIN(p->mem, np_ledger_bytes_on_set(p, set));
        NpDecision *d = decision(p->pid, NP_DECISION_MOVE, g_steal_pointer(&set), r);
        d->order = l->moves;
        return d;
}

/* Can the kernel's NUMA balancing (on) move most of p's memory? */
static bool kernel_moves(const NpLedger *l, const NpPolicyProcess *p) {
        return l->params->kernel_balancing && p->per_node && p->mem && p->balanced * 2 >= p->mem;
}

/* ---- the kernel moving pages back and forth -------------------------------- */

/* Does the kernel's balancing move the pages of p back and forth
 * (NP_POLICY_CHURN_SHARE) among several nodes, where the mechanism can hold
 * its memory: p runs on every node and needs more than one (one that needs
 * one is placed whole: scattered()), or the policy placed it whole on more
 * than one? */
static bool kernel_churns(const NpLedger *l, const NpPolicyProcess *p) {
        bool spread;
        if (p->hold == NP_HOLD_PLACED)
                spread = !p->memory_only && p->current && np_mask_weight(p->current) > 1;
        else
                spread = p->running && covers_every_cpu_node(l, p->running) && !scattered(l, p);
        return l->params->confines_memory && kernel_moves(l, p) && spread &&
                (double) p->kernel_churn >= NP_POLICY_CHURN_SHARE * (double) p->mem;
}

/* The nodes whose CPUs p's threads may use once its memory is held on set:
 * those it is confined to (placed whole on several, or held before) and set;
 * NULL (every CPU) when it ran where it would, or when they are every node
 * with CPUs. */
static NpMask *held_runs_on(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set) {
        const NpMask *on = p->memory_only ? p->runs_on : p->hold == NP_HOLD_PLACED ? p->current : NULL;
        if (!on)
                return NULL;
        NpMask *m = np_mask_copy(on);
        np_mask_or(m, set);
        if (covers_every_cpu_node(l, m))
                g_clear_pointer(&m, np_mask_free);
        return m;
}

/* p's memory (not in the ledger) goes to set, its threads run on
 * held_runs_on(); r holds the context (its code and numbers are set by the
 * caller). */
static NpDecision *place_memory(NpLedger *l, const NpPolicyProcess *p, NpMask *set, NpReason *r) {
        NpMask *runs_on = held_runs_on(l, p, set);
        r->nodes = np_mask_copy(set);
        r->runs_on = runs_on ? np_mask_copy(runs_on) : NULL;
        r->bytes = p->mem - MIN(p->mem, np_ledger_bytes_on_set(p, set));
        np_choose_distances(l, set, &r->dist_lo, &r->dist_hi);
        np_ledger_commit_memory(l, p, set);
        np_ledger_move_pages(l, p, set);
        NpDecision *d = decision(p->pid, NP_DECISION_MOVE, set, r);
        d->order = l->moves;
        d->memory_only = true;
        d->runs_on = runs_on;
        return d;
}

/* When the kernel's balancing moves p's pages back and forth
 * (kernel_churns()) and a home for its memory has room: the move of its
 * memory there. NULL otherwise. */
static NpDecision *hold_churned(NpLedger *l, const NpPolicyProcess *p) {
        if (!kernel_churns(l, p))
                return NULL;
        NpMask *set = np_choose_memory_home(l, p);
        if (!set)
                return NULL;
        NpReason r = { .code = NP_REASON_KERNEL_CHURN,
                       .kernel_moved = p->kernel_churn,
                       .mem = p->mem,
                       .window_usec = p->kernel_churn_usec,
                       .cpu = p->cpu };
        return place_memory(l, p, set, &r);
}

/* A process whose memory the policy holds (memory_only): it stays while
 * its nodes have room for its memory; else its memory goes where there is
 * room. */
static NpDecision *keep_memory(NpLedger *l, const NpPolicyProcess *p) {
        double mem = (double) np_ledger_regular_mem(p);
        if (np_ledger_fits(l, p->current, mem, 0.0, -NP_POLICY_HYSTERESIS)) {
                NpReason r = { .code = NP_REASON_PLACED_MEMORY,
                               .nodes = np_mask_copy(p->current),
                               .runs_on = p->runs_on ? np_mask_copy(p->runs_on) : NULL };
                np_ledger_commit_memory(l, p, p->current);
                return decision(p->pid, NP_DECISION_KEEP, NULL, &r);
        }
        double rm, rc, cm;
        np_ledger_room(l, p->current, &rm, &rc, &cm, NULL);
        NpReason r = { .context = NP_CONTEXT_CROWDED_MEMORY,
                       .on = np_mask_copy(p->current),
                       .code = NP_REASON_PLACE_MEMORY,
                       .crowded = { .kind = NP_SHORT_MEMORY,
                                    .others = cm - rm,
                                    .its = mem,
                                    .capacity = cm,
                                    .target_utilization = l->params->target_utilization } };
        NpMask *set = np_choose_memory_home(l, p);
        if (!set || np_mask_equal(set, p->current)) {
                np_mask_free(set);
                np_reason_clear(&r);
                r = (NpReason){ .code = NP_REASON_PLACED_MEMORY,
                                .nodes = np_mask_copy(p->current),
                                .runs_on = p->runs_on ? np_mask_copy(p->runs_on) : NULL };
                np_ledger_commit_memory(l, p, p->current);
                return decision(p->pid, NP_DECISION_KEEP, NULL, &r);
        }
        return place_memory(l, p, set, &r);
}

/* Why the kernel's balancing (on) cannot move most of p's memory
 * (NP_KERNEL_INTERLEAVED or NP_KERNEL_CANNOT_MOVE); NP_KERNEL_NONE when it
 * can, or is off. */
static NpReasonKernel kernel_cannot(const NpLedger *l, const NpPolicyProcess *p) {
        if (!l->params->kernel_balancing || kernel_moves(l, p))
                return NP_KERNEL_NONE;
        return p->interleaved * 2 >= p->mem ? NP_KERNEL_INTERLEAVED : NP_KERNEL_CANNOT_MOVE;
}

/* What the kernel's balancing does about p, which the policy is about to
 * place (the start of its Decision), into r. */
static void kernel_context(const NpLedger *l, const NpPolicyProcess *p, NpReason *r) {
        if (!kernel_moves(l, p))
                r->kernel = kernel_cannot(l, p);
        else if (kernel_began(l, p)) {
                r->kernel = NP_KERNEL_BEGAN;
                r->kernel_moved = p->kernel_migrated;
        } else if (p->locality_before >= 0 && locality(p) - p->locality_before >= NP_POLICY_KERNEL_RISING) {
                r->kernel = NP_KERNEL_MOVING;
                r->kernel_before = p->locality_before;
        } else
                r->kernel = NP_KERNEL_NOT_LOCAL;
}

/* The kernel's balancing is moving p's memory to the nodes it runs on
 * (kernel_context() said so into r). p is left to it, its decision KEEP and
 * its memory counted on those nodes (the kernel fills them), when the
 * kernel moved more of it since the read before than is left to move (at
 * that pace it is done before the next scan, sooner than a move of
 * numaplaced's, which would cross pages the kernel moves meanwhile), or
 * when the set the policy would choose has none of those nodes (no undoing
 * within seconds what the kernel just did: those pages would cross the
 * machine twice). NULL otherwise: numaplaced finishes it in one move. */
static NpDecision *left_to_kernel(NpLedger *l, const NpPolicyProcess *p, NpReason *r) {
        if ((r->kernel != NP_KERNEL_MOVING && r->kernel != NP_KERNEL_BEGAN) || !p->running)
                return NULL;
        double loc = locality(p);
        if (r->kernel == NP_KERNEL_MOVING && 1.0 - loc <= loc - p->locality_before)
                r->code = NP_REASON_KERNEL_FINISHING;
        else {
                g_autoptr(NpMask) set = np_choose_set(l, p, NULL, p->left, false);
                if (!set || np_mask_intersects(set, p->running))
                        return NULL;
                r->code = NP_REASON_LEFT_TO_KERNEL;
                r->nodes = g_steal_pointer(&set);
                r->target_utilization = l->params->target_utilization;
        }
        np_ledger_commit(l, p, p->running);
        r->cpu = p->cpu;
        r->bytes = p->mem;
        return decision(p->pid, NP_DECISION_KEEP, NULL, r);
}

static gint cmp_size(gconstpointer a, gconstpointer b, gpointer data) {
        const NpPolicyProcess *procs = data;
        const NpPolicyProcess *x = &procs[*(const guint *) a], *y = &procs[*(const guint *) b];
        if (x->mem != y->mem)
                return x->mem > y->mem ? -1 : 1;
        if (x->cpu != y->cpu)
                return x->cpu > y->cpu ? -1 : 1;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Counted on its nodes rather than where its pages are: a process moving
 * there, or the room a reservation holds. */
static bool goes_to_current(const NpPolicyProcess *p) {
        return (p->hold == NP_HOLD_MOVING || p->hold == NP_HOLD_RESERVED) && p->current;
}

static GPtrArray *decide_each(const NpPolicyNode *nodes, guint n_nodes, const NpPolicyProcess *procs, guint n_procs,
                              const NpPolicyParams *params) {
        NpLedger l;
        NpDecision **out = g_new0(NpDecision *, n_procs);
        GPtrArray *res = g_ptr_array_new_full(n_procs, (GDestroyNotify) np_decision_free);

        np_ledger_init(&l, nodes, n_nodes, params);
        np_ledger_remove_candidates(&l, procs, n_procs);

        /* 1: held whatever the load */
        for (guint i = 0; i < n_procs; i++) {
                NpReason r;
                if (!held(&l, &procs[i], &r))
                        continue;
                if (goes_to_current(&procs[i]))
                        np_ledger_commit(&l, &procs[i], procs[i].current);
                else
                        np_ledger_footprint(&l, &procs[i], +1);
                out[i] = decision(procs[i].pid, NP_DECISION_KEEP, NULL, &r);
        }

        /* 2: placed by the policy: stay while the nodes hold them */
        for (guint i = 0; i < n_procs; i++) {
                const NpPolicyProcess *p = &procs[i];
                if (out[i] || p->hold != NP_HOLD_PLACED || !p->current)
                        continue;
                if (p->memory_only) {
                        out[i] = keep_memory(&l, p);
                        continue;
                }
                /* placed whole on several nodes, the kernel moves its
                 * pages among them: its memory held on one */
                if ((out[i] = hold_churned(&l, p)))
                        continue;
                if (np_ledger_fits_process(&l, p->current, p, -NP_POLICY_HYSTERESIS)) {
                        NpReason r = { .nodes = np_mask_copy(p->current), .share = locality_placed(p) };
                        bool rest = rest_wanted(&l, p) && np_ledger_movable(&l, p, p->current);
                        np_ledger_commit(&l, p, p->current);
                        if (rest) {
                                /* pages left behind (a move that ran out of
                                 * room, allocations elsewhere): move the rest */
                                np_ledger_move_pages(&l, p, p->current);
                                r.code = NP_REASON_PLACED_REST;
                                out[i] = decision(p->pid, NP_DECISION_MOVE, np_mask_copy(p->current), &r);
                                out[i]->order = l.moves;
                                continue;
                        }
                        if (stuck_now(p)) {
                                r.code = NP_REASON_PLACED_STUCK;
                                r.bytes = stuck_now(p);
                        } else if (p->failed && rest_wanted(&l, p)) {
                                r.code = NP_REASON_PLACED_FAILED;
                                r.bytes = p->failed;
                                r.full = p->failed_full;
                        } else
                                r.code = NP_REASON_PLACED_ROOM;
                        out[i] = decision(p->pid, NP_DECISION_KEEP, NULL, &r);
                        continue;
                }
                NpReason r = { .context = NP_CONTEXT_CROWDED, .on = np_mask_copy(p->current) };
                np_ledger_shortage_process(&l, p->current, p, -NP_POLICY_HYSTERESIS, &r.crowded);
                out[i] = place_or_nofit(&l, p, p->current, NULL, &r);
        }

        /* 3: the candidates that run on every node whose pages the kernel
         * moves back and forth: their memory is held where it fits */
        for (guint i = 0; i < n_procs; i++) {
                const NpPolicyProcess *p = &procs[i];
                if (!out[i])
                        out[i] = hold_churned(&l, p);
        }

        /* 3a: the candidates already local, on nodes that hold them: they
         * keep their nodes before anyone else is placed (do no harm: the
         * kernel's balancing may have just made them so) */
        for (guint i = 0; i < n_procs; i++) {
                const NpPolicyProcess *p = &procs[i];
                if (out[i])
                        continue;
                double loc = locality(p);
                if (loc * 100.0 < (double) params->memory_locality_target || !p->running ||
                    !np_ledger_fits_process(&l, p->running, p, -NP_POLICY_HYSTERESIS) ||
                    spread_beyond_demand(&l, p) != NP_CONTEXT_NONE)
                        continue;
                np_ledger_footprint(&l, p, +1);
                NpReason r = { .code = NP_REASON_LOCAL, .on = np_mask_copy(p->running), .share = loc };
                /* one that runs on every node is local nowhere: the kernel
                 * balances it within them */
                if (kernel_moves(&l, p))
                        r.kernel = covers_every_cpu_node(&l, p->running) ? NP_KERNEL_EVERY_NODE : NP_KERNEL_KEEPS_LOCAL;
                out[i] = decision(p->pid, NP_DECISION_KEEP, NULL, &r);
        }

        /* 3b: the rest, biggest first */
        g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
        for (guint i = 0; i < n_procs; i++)
                if (!out[i])
                        g_array_append_val(order, i);
        g_array_sort_with_data(order, cmp_size, (gpointer) procs);
        for (guint k = 0; k < order->len; k++) {
                guint i = g_array_index(order, guint, k);
                const NpPolicyProcess *p = &procs[i];
                if (kernel_began(&l, p)) {
                        /* sized by its life so far: decided at once only
                         * where one node holds it, else once measured */
                        g_autoptr(NpMask) one = np_choose_set(&l, p, NULL, p->left, false);
                        if (!one || np_mask_weight(one) > 1) {
                                np_ledger_footprint(&l, p, +1);
                                NpReason r = { .code = NP_REASON_CPU_UNMEASURED_SPREAD, .cpu = p->cpu };
                                out[i] = decision(p->pid, NP_DECISION_KEEP, NULL, &r);
                                continue;
                        }
                }
                double loc = locality(p);
                NpReason r = { .context = NP_CONTEXT_SHARE, .on = copy_mask(p->running), .share = loc };
                r.context = spread_beyond_demand(&l, p);
                bool spread = r.context != NP_CONTEXT_NONE;
                if (!spread) {
                        r.context = NP_CONTEXT_SHARE;
                        kernel_context(&l, p, &r);
                } else {
                        /* run apart or scattered: the kernel's part is
                         * said when it cannot move the memory */
                        r.kernel = kernel_cannot(&l, p);
                }
                bool local = loc * 100.0 >= (double) params->memory_locality_target && p->running && !spread;
                if (!spread && (out[i] = left_to_kernel(&l, p, &r)))
                        continue;
                out[i] = place_or_nofit(&l, p, NULL, local ? p->running : NULL, &r);
        }

        for (guint i = 0; i < n_procs; i++)
                g_ptr_array_add(res, out[i]);
        g_free(out);
        g_free(l.s);
        return res;
}

/* ---- the entry points (groups: np-policy-group.c) ----------------------- */

/* A member p of group u that joins where the group is: the group stays
 * where another member placed it (or is moving it), and p is held by
 * nothing of its own; the unit's values confine it there already, and its
 * pages follow by the daemon's plan, not the kernel's when the unit's memory
 * nodes are set. */
static bool joins_unit(const NpPolicyProcess *p, const NpPolicyProcess *u, const NpDecision *d) {
        return p->hold == NP_HOLD_NONE && (u->hold == NP_HOLD_PLACED || u->hold == NP_HOLD_MOVING) &&
                d->kind == NP_DECISION_KEEP && u->current && !np_mask_empty(u->current) && p->per_node;
}

/* The first member of merged entry j held foreign (whose cgroup the entry's
 * reason names), or 0. */
static int foreign_member(const NpPolicyProcess *procs, guint n_procs, const guint *slot_of, guint j) {
        for (guint k = 0; k < n_procs; k++)
                if (slot_of[k] == j && procs[k].hold == NP_HOLD_FOREIGN)
                        return procs[k].pid;
        return 0;
}

GPtrArray *np_policy_decide(const NpPolicyNode *nodes, guint n_nodes, const NpPolicyProcess *procs, guint n_procs,
                            const NpPolicyParams *params) {
        bool any = false;
        for (guint i = 0; i < n_procs && !any; i++)
                any = procs[i].group != 0;
        if (!any)
                return decide_each(nodes, n_nodes, procs, n_procs, params);

        NpPolicyGroups g;
        np_policy_groups_build(&g, procs, n_procs);
        g_autoptr(GPtrArray) merged =
                decide_each(nodes, n_nodes, (const NpPolicyProcess *) (void *) g.merged->data, g.merged->len, params);
        GPtrArray *res = g_ptr_array_new_full(n_procs, (GDestroyNotify) np_decision_free);
        for (guint i = 0; i < n_procs; i++) {
                guint j = g.slot_of[i];
                const NpDecision *d = merged->pdata[j];
                const NpPolicyProcess *u = &g_array_index(g.merged, NpPolicyProcess, j);
                NpDecision *c;
                if (joins_unit(&procs[i], u, d)) {
                        NpReason r = { .code = NP_REASON_JOIN_GROUP,
                                       .nodes = np_mask_copy(u->current),
                                       .bytes = procs[i].mem -
                                               MIN(procs[i].mem, np_ledger_bytes_on_set(&procs[i], u->current)) };
                        c = decision(procs[i].pid, NP_DECISION_MOVE, np_mask_copy(u->current), &r);
                        c->order = G_MAXUINT; /* not in the ledger's plan: after its moves */
                } else {
                        c = g_new0(NpDecision, 1);
                        c->pid = procs[i].pid;
                        c->kind = d->kind;
                        c->order = d->order;
                        c->memory_only = d->memory_only;
                        c->runs_on = copy_mask(d->runs_on);
                        c->nodes = copy_mask(d->nodes);
                        np_reason_copy(&c->reason, &d->reason);
                }
                c->reason.group_members = g.size[j];
                if (g.size[j] > 1) {
                        c->reason.group = g_strdup(u->group_name);
                        c->reason.group_unit = u->group_unit;
                        if (c->reason.code == NP_REASON_FOREIGN && procs[i].hold != NP_HOLD_FOREIGN)
                                c->reason.member = foreign_member(procs, n_procs, g.slot_of, j);
                }
                g_ptr_array_add(res, c);
        }
        np_policy_groups_clear(&g);
        return res;
}

double np_policy_background_cpu(const NpPolicyNode *nodes, guint n_nodes, const NpPolicyProcess *procs, guint n_procs,
                                const NpPolicyParams *params) {
        NpLedger l;
        np_ledger_init(&l, nodes, n_nodes, params);
        double bg = np_ledger_background(&l, procs, n_procs);
        g_free(l.s);
        return bg;
}

NpMask *np_policy_advise(const NpPolicyNode *nodes, guint n_nodes, const NpPolicyProcess *procs, guint n_procs,
                         const NpPolicyParams *params, double cpus, uint64_t bytes, NpAdviceFit *fit) {
        NpLedger l;
        NpPolicyProcess job = { .pid = 0, .cpu = MAX(cpus, NP_POLICY_ADVISE_MIN_CPU), .mem = bytes };
        NpMask *set;

        np_ledger_init(&l, nodes, n_nodes, params);
        /* every process counts where it is now, a moving one where it goes */
        np_ledger_remove_candidates(&l, procs, n_procs);
        for (guint i = 0; i < n_procs; i++)
                if (goes_to_current(&procs[i]))
                        np_ledger_commit(&l, &procs[i], procs[i].current);
                else
                        np_ledger_footprint(&l, &procs[i], +1);

        set = np_choose_set(&l, &job, NULL, NULL, false);
        NpAdviceFit f = { .fits = set != NULL };
        if (!set) {
                set = np_choose_closest(&l, &job);
                f.beyond_machine = !np_choose_within_machine(&l, &job);
                if (set) {
                        double rm, rc;
                        np_ledger_room(&l, set, &rm, &rc, NULL, NULL);
                        f.short_bytes = MAX(0.0, (double) bytes - rm);
                        f.short_cpus = MAX(0.0, cpus - rc);
                }
        }
        if (fit)
                *fit = f;
        g_free(l.s);
        return set;
}
