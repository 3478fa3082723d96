/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The placement policy, pure: see np-policy.h. */
#include "np-policy.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "np-ledger.h"
#include "np-policy-group.h"
#include "np-sample.h"
#include "np-topology.h"

#define MIB (1024.0 * 1024.0)

void np_decision_free(NpDecision *d) {
        if (!d)
                return;
        np_mask_free(d->nodes);
        g_free(d->why);
        g_free(d);
}

/* ---- choosing a node set ------------------------------------------------ */

typedef struct {
        NpMask *set;
        uint64_t present; /* bytes of p already there */
        double room; /* memory room left after it (bytes) */
        unsigned dist; /* sum of pairwise distances */
        bool runs_there; /* its threads run on a node of the set now */
} Choice;

static unsigned set_distance(const NpLedger *l, const NpMask *set) {
        unsigned sum = 0;
        NP_MASK_FOREACH (a, set)
                NP_MASK_FOREACH (b, set)
                        if (a < b)
                                sum += np_ledger_distance(l, (unsigned) a, (unsigned) b);
        return sum;
}

static int cmp_present(const NpPolicyProcess *p, uint64_t a, uint64_t b);

/* Is a better than b? Both hold p at TargetUtilization (grow()), and a set
 * that holds it is as good as one with more room: fewer nodes, then more
 * pages already there (within cmp_present()'s tolerance), then nearer, and
 * only between sets as near, more room, then where its threads run now
 * (before room when the kernel's balancing is on), then lower ids. */
static bool better(const NpLedger *l, const NpPolicyProcess *p, const Choice *a, const Choice *b) {
        unsigned wa = np_mask_weight(a->set), wb = np_mask_weight(b->set);
        if (wa != wb)
                return wa < wb;
        int cp = cmp_present(p, a->present, b->present);
        if (cp)
                return cp > 0;
        if (a->dist != b->dist)
                return a->dist < b->dist;
        /* with the kernel's balancing on, where its threads run is where
         * the kernel moves its pages to: go with it */
        if (l->params->kernel_balancing && a->runs_there != b->runs_there)
                return a->runs_there;
        if (fabs(a->room - b->room) > 1.0)
                return a->room > b->room;
        if (a->runs_there != b->runs_there)
                return a->runs_there;
        return np_mask_first(a->set) < np_mask_first(b->set);
}

/* Bytes of p count as "the same" within 2% of its memory, so noise in
 * numa_maps does not beat nearness. */
static int cmp_present(const NpPolicyProcess *p, uint64_t a, uint64_t b) {
        uint64_t tol = p->mem / 50;
        if (a > b + tol)
                return 1;
        if (b > a + tol)
                return -1;
        return 0;
}

/* Grow `set` (not empty) until p fits, adding each time the memory node
 * that holds the most of p's pages, then the nearest, then the one with the
 * most room; false when even every node does not hold it. */
static bool grow(const NpLedger *l, NpMask *set, const NpPolicyProcess *p, double margin) {
        while (!np_ledger_fits_process(l, set, p, margin)) {
                /* short of huge pages: only a node with free ones of
                 * that size helps */
                uint64_t short_page = np_ledger_pools_short(l, p, set);
                int best = -1;
                unsigned best_d = UINT32_MAX;
                uint64_t best_present = 0;
                double best_room = 0;
                for (guint i = 0; i < l->n; i++) {
                        const NpLedgerSlot *s = &l->s[i];
                        if (!s->has_mem || np_mask_test(set, s->id))
                                continue;
                        if (short_page && np_ledger_pool_free(s, short_page) <= 0)
                                continue;
                        unsigned d = 0;
                        NP_MASK_FOREACH (y, set)
                                d += np_ledger_distance(l, s->id, (unsigned) y);
                        uint64_t present = np_ledger_bytes_on(p, s->id);
                        double r = s->cap_mem - s->used_mem;
                        int cp = best < 0 ? 1 : cmp_present(p, present, best_present);
                        if (cp > 0 || (cp == 0 && d < best_d) || (cp == 0 && d == best_d && r > best_room)) {
                                best = (int) s->id;
                                best_d = d;
                                best_present = present;
                                best_room = r;
                        }
                }
                if (best < 0)
                        return false;
                np_mask_set(set, (unsigned) best);
        }
        return true;
}

static void consider(const NpLedger *l, const NpPolicyProcess *p, NpMask *set, const NpMask *avoid, Choice *best) {
        if (avoid && np_mask_equal(set, avoid) && !np_ledger_fits_process(l, set, p, NP_POLICY_HYSTERESIS)) {
                np_mask_free(set); /* just left, and no clear room there: no ping-pong */
                return;
        }
        Choice c = { .set = set,
                     .present = np_ledger_bytes_on_set(p, set),
                     .dist = set_distance(l, set),
                     .runs_there = p->running && np_mask_intersects(set, p->running) };
        double rc;
        np_ledger_room(l, set, &c.room, &rc, NULL, NULL);
        c.room -= (double) np_ledger_regular_mem(p);
        if (!best->set || better(l, p, &c, best)) {
                np_mask_free(best->set);
                *best = c;
        } else {
                np_mask_free(set);
        }
}

/* The best set for p (not in the ledger), or NULL when none has room.
 * `prefer` (may be NULL): try supersets of it first. With `now`, only sets
 * its pages can move to now (np_ledger_movable()). */
static NpMask *choose(const NpLedger *l, const NpPolicyProcess *p, const NpMask *prefer, const NpMask *avoid,
                      bool now) {
        Choice best = { 0 };

        if (prefer && !np_mask_empty(prefer)) {
                NpMask *set = np_mask_new();
                NP_MASK_FOREACH (n, prefer) {
                        const NpLedgerSlot *s = np_ledger_slot(l, (unsigned) n);
                        if (s && s->has_mem)
                                np_mask_set(set, (unsigned) n);
                }
                if (!np_mask_empty(set) && grow(l, set, p, 0.0) && (!now || np_ledger_movable(l, p, set)))
                        return set;
                np_mask_free(set);
        }
        for (guint i = 0; i < l->n; i++) {
                if (!l->s[i].has_mem)
                        continue;
                NpMask *set = np_mask_new();
                np_mask_set(set, l->s[i].id);
                if (grow(l, set, p, 0.0) && (!now || np_ledger_movable(l, p, set)))
                        consider(l, p, set, avoid, &best);
                else
                        np_mask_free(set);
        }
        return best.set;
}

/* " (N MiB of it in hugetlb pages, which need free huge pages of their
 * size)" for a Decision, "" when it has none. */
static char *huge_note(const NpPolicyProcess *p) {
        uint64_t h = np_ledger_huge_in(p, NULL, 0);
        if (!h)
                return g_strdup("");
        return g_strdup_printf(" (%.0f MiB of it in hugetlb pages, which need free huge pages of their size)",
                               (double) h / MIB);
}

/* ---- deciding ----------------------------------------------------------- */

static NpDecision *decision(int pid, NpDecisionKind kind, NpMask *nodes, char *why) {
        NpDecision *d = g_new0(NpDecision, 1);
        d->pid = pid;
        d->kind = kind;
        d->nodes = nodes;
        d->why = why;
        return d;
}

static char *fmt_mask(const NpMask *m) {
        return m && !np_mask_empty(m) ? np_mask_format(m) : g_strdup("-");
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

/* Why its last move failed on pages, for a Decision. */
static const char *failed_why(const NpPolicyProcess *p) {
        return p->failed_full ? "no free memory there" : "pages in use";
}

uint64_t np_policy_move_wait_usec(uint64_t min_usec, unsigned failed_moves) {
        unsigned k = MIN(failed_moves, NP_POLICY_MAX_BACKOFF);
        return min_usec > UINT64_MAX >> k ? UINT64_MAX : min_usec << k;
}

/* Who narrowed it, where that can be seen: in a cgroup other than the
 * root, the cgroup is named (libvirt's machine/qemu-1-NAME.libvirt-qemu/
 * emulator, a container's), where its cpuset is set. In the root cgroup,
 * whose cpuset holds every CPU and node, only its own affinity narrows. */
char *np_policy_foreign_why(const char *cgroup) {
        if (cgroup && *cgroup && !g_str_equal(cgroup, "/"))
                return g_strdup_printf("its CPUs or memory nodes were narrowed by someone else (cgroup %s): left "
                                       "alone",
                                       cgroup);
        return g_strdup("its CPUs or memory nodes were narrowed by someone else: left alone");
}

/* Has the kernel's NUMA balancing (on) begun moving a candidate seen for
 * the first time (NP_POLICY_KERNEL_BEGAN)? */
static bool kernel_began(const NpLedger *l, const NpPolicyProcess *p) {
        return l->params->kernel_balancing && p->cpu_estimated && p->per_node && p->mem && p->balanced * 2 >= p->mem &&
                (double) p->kernel_migrated >= NP_POLICY_KERNEL_BEGAN * (double) p->mem;
}

/* Pass 1: what stays whatever the load. NULL when p is a candidate. */
static char *held(const NpLedger *l, const NpPolicyProcess *p) {
        g_autofree char *cur = fmt_mask(p->current);
        switch (p->hold) {
        case NP_HOLD_PINNED:
                return g_strdup_printf("pinned on %s by Place()", cur);
        case NP_HOLD_EXCLUDED:
                return g_strdup("excluded");
        case NP_HOLD_FOREIGN:
                return np_policy_foreign_why(p->cgroup);
        case NP_HOLD_MOVING:
                return g_strdup_printf("moving to %s", cur);
        case NP_HOLD_RESERVED:
                return g_strdup_printf("room on %s held by an answer of Advise()", cur);
        case NP_HOLD_PLACED:
        case NP_HOLD_NONE:
                break;
        }
        if (!p->per_node)
                return g_strdup("where its memory is is unknown (numa_maps unreadable)");
        if (!p->mem)
                return g_strdup("it has no memory to place");
        if (l->params->keep_interleaved && p->mem && p->interleaved * 2 >= p->mem)
                return g_strdup("its memory is interleaved and KeepInterleaved=yes");
        if (p->cpu_estimated && p->growing)
                /* touching its memory at full speed: a start or a burst,
                 * not what to size its node set by */
                return g_strdup_printf("its memory is still growing (%.1f CPUs while it grew): decided once it "
                                       "holds still",
                                       p->cpu);
        if (p->cpu_estimated && !kernel_began(l, p))
                /* a new process's life so far includes its start: enough
                 * to find it significant at once, not to size it by */
                return g_strdup_printf("its CPU use is not measured yet (%.1f CPUs so far): decided at the "
                                       "follow-up scan",
                                       p->cpu);
        uint64_t wait = np_policy_move_wait_usec(l->params->min_usec_between_moves, p->failed_moves);
        if (p->since_move_usec < wait && p->failed_moves)
                return g_strdup_printf("its last move could not move %.1f MiB (%s): moved %.0f s "
                                       "ago, waits %.0f s (MinSecondsBetweenMoves=%.0f, doubled %u time%s: one for "
                                       "each move in a row that failed on pages)",
                                       (double) p->failed / (1 << 20), failed_why(p), (double) p->since_move_usec / 1e6,
                                       (double) wait / 1e6, (double) l->params->min_usec_between_moves / 1e6,
                                       MIN(p->failed_moves, NP_POLICY_MAX_BACKOFF), p->failed_moves > 1 ? "s" : "");
        if (p->since_move_usec < wait)
                return g_strdup_printf("moved %.0f s ago (MinSecondsBetweenMoves=%.0f)",
                                       (double) p->since_move_usec / 1e6,
                                       (double) l->params->min_usec_between_moves / 1e6);
        return NULL;
}

/* For a set of more than one node chosen for p (not in the ledger): why
 * not one, told for the set's node that holds most of p's pages, e.g.
 * "; 2 alone is too small (CPUs: ...)". NULL when that node would hold p
 * by itself (the set grew from nodes p's group already uses). */
static char *why_not_one(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set) {
        if (np_mask_weight(set) < 2)
                return NULL;
        int best = -1;
        uint64_t best_bytes = 0;
        NP_MASK_FOREACH (n, set) {
                const NpLedgerSlot *s = np_ledger_slot(l, (unsigned) n);
                if (!s || !s->has_mem)
                        continue;
                uint64_t b = np_ledger_bytes_on(p, (unsigned) n);
                if (best < 0 || b > best_bytes) {
                        best = n;
                        best_bytes = b;
                }
        }
        if (best < 0)
                return NULL;
        g_autoptr(NpMask) one = np_mask_new();
        np_mask_set(one, (unsigned) best);
        if (np_ledger_fits_process(l, one, p, 0.0))
                return NULL;
        g_autofree char *why = np_ledger_shortage_process(l, one, p, 0.0);
        return g_strdup_printf("; %d alone is too small (%s)", best, why);
}

/* The distances within a set of more than one node, for a Decision:
 * "distance 20, " or "distances 20 to 30, "; "" for one node. */
static char *fmt_distances(const NpLedger *l, const NpMask *set) {
        unsigned lo = UINT32_MAX, hi = 0;
        NP_MASK_FOREACH (a, set)
                NP_MASK_FOREACH (b, set)
                        if (a < b) {
                                unsigned d = np_ledger_distance(l, (unsigned) a, (unsigned) b);
                                lo = MIN(lo, d);
                                hi = MAX(hi, d);
                        }
        if (hi == 0)
                return g_strdup("");
        return lo == hi ? g_strdup_printf("distance %u, ", lo) : g_strdup_printf("distances %u to %u, ", lo, hi);
}

/* `local_on` (may be NULL): nodes p runs on and already has its memory on
 * (at MemoryLocalityTarget=), which are crowded: a set within them would
 * take nodes from it without moving it anywhere better, so it is not
 * chosen (do no harm: a process spread over every node by its own busy
 * threads is not squeezed onto fewer when the machine gets busy). */
static NpDecision *place_or_nofit(NpLedger *l, const NpPolicyProcess *p, const NpMask *prefer, const NpMask *local_on,
                                  const char *context) {
        /* how many nodes it needs comes from the ledger; among sets of
         * that size, one its pages can move to now */
        g_autoptr(NpMask) ideal = choose(l, p, prefer, p->left, false);
        g_autoptr(NpMask) set = ideal ? choose(l, p, prefer, p->left, true) : NULL;
        if (set && np_mask_weight(set) != np_mask_weight(ideal))
                g_clear_pointer(&set, np_mask_free);
        if (local_on && ideal && np_mask_subset(set ? set : ideal, local_on)) {
                np_ledger_footprint(l, p, +1);
                g_autofree char *s = fmt_mask(set ? set : ideal);
                return decision(p->pid, NP_DECISION_KEEP, NULL,
                                g_strdup_printf("%s, which are crowded; %s would only take nodes from it: left where "
                                                "it is",
                                                context, s));
        }
        if (!ideal && needs_every_node(l, p)) {
                np_ledger_footprint(l, p, +1);
                return decision(p->pid, NP_DECISION_KEEP, NULL,
                                g_strdup_printf("%s, but %.1f CPUs need every node: left spread", context, p->cpu));
        }
        if (!ideal) {
                np_ledger_footprint(l, p, +1); /* it stays where it is */
                g_autofree char *huge = huge_note(p);
                return decision(p->pid, NP_DECISION_NOFIT, NULL,
                                g_strdup_printf("%s, but no set of nodes has room for %.1f CPUs and %.0f MiB%s at "
                                                "TargetUtilization=%u%%: left where it is",
                                                context, p->cpu, (double) p->mem / MIB, huge,
                                                l->params->target_utilization));
        }
        if (!set && !covers_every_cpu_node(l, ideal)) {
                /* it goes there as soon as the memory is free: its
                 * capacity is taken there already, so no one else is put
                 * there meanwhile */
                np_ledger_commit(l, p, ideal);
                g_autofree char *s = fmt_mask(ideal);
                return decision(p->pid, NP_DECISION_KEEP, NULL,
                                g_strdup_printf("%s; %s would hold it but has not the free memory for its pages yet: "
                                                "left where it is for now",
                                                context, s));
        }
        if (!set)
                set = g_steal_pointer(&ideal);
        if (covers_every_cpu_node(l, set)) {
                np_ledger_footprint(l, p, +1);
                return decision(p->pid, NP_DECISION_KEEP, NULL,
                                g_strdup_printf("%s, but %.1f CPUs and %.0f MiB need every node: left spread", context,
                                                p->cpu, (double) p->mem / MIB));
        }
        if (p->current && np_mask_equal(set, p->current)) {
                np_ledger_footprint(l, p, +1);
                g_autofree char *s = fmt_mask(set);
                return decision(p->pid, NP_DECISION_KEEP, NULL,
                                g_strdup_printf("%s; its nodes %s are still the best", context, s));
        }
        g_autofree char *why_more = why_not_one(l, p, set);
        np_ledger_commit(l, p, set);
        np_ledger_move_pages(l, p, set);
        g_autofree char *s = fmt_mask(set);
        g_autofree char *dist = fmt_distances(l, set);
        uint64_t move = p->mem - MIN(p->mem, np_ledger_bytes_on_set(p, set));
        return decision(p->pid, NP_DECISION_MOVE, g_steal_pointer(&set),
                        g_strdup_printf("%s: place on %s (%s%.0f MiB to move)%s", context, s, dist, (double) move / MIB,
                                        why_more ? why_more : ""));
}

/* Can the kernel's NUMA balancing (on) move most of p's memory? */
static bool kernel_moves(const NpLedger *l, const NpPolicyProcess *p) {
        return l->params->kernel_balancing && p->per_node && p->mem && p->balanced * 2 >= p->mem;
}

/* What the kernel's balancing (on) does about p, which the policy is about
 * to place, as the start of its Decision; NULL when it is off. */
static char *kernel_context(const NpLedger *l, const NpPolicyProcess *p) {
        if (!l->params->kernel_balancing)
                return NULL;
        if (!kernel_moves(l, p))
                return g_strdup(p->interleaved * 2 >= p->mem ? "the kernel's NUMA balancing does not move "
                                                               "interleaved memory; "
                                                             : "the kernel's NUMA balancing cannot move most of "
                                                               "its memory (a memory policy or huge pages); ");
        double loc = locality(p);
        if (kernel_began(l, p))
                return g_strdup_printf("the kernel's NUMA balancing has begun moving its memory (%.0f MiB so "
                                       "far), numaplaced decides at first sight; ",
                                       (double) p->kernel_migrated / (1 << 20));
        if (p->locality_before >= 0 && loc - p->locality_before >= NP_POLICY_KERNEL_RISING)
                return g_strdup_printf("the kernel's NUMA balancing is moving its memory to its threads (up from "
                                       "%.0f%%), numaplaced finishes it in one move; ",
                                       p->locality_before * 100.0);
        return g_strdup("the kernel's NUMA balancing has not made it local; ");
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
                char *why = held(&l, &procs[i]);
                if (!why)
                        continue;
                if (goes_to_current(&procs[i]))
                        np_ledger_commit(&l, &procs[i], procs[i].current);
                else
                        np_ledger_footprint(&l, &procs[i], +1);
                out[i] = decision(procs[i].pid, NP_DECISION_KEEP, NULL, why);
        }

        /* 2: placed by the policy: stay while the nodes hold them */
        for (guint i = 0; i < n_procs; i++) {
                const NpPolicyProcess *p = &procs[i];
                if (out[i] || p->hold != NP_HOLD_PLACED || !p->current)
                        continue;
                g_autofree char *cur = fmt_mask(p->current);
                if (np_ledger_fits_process(&l, p->current, p, -NP_POLICY_HYSTERESIS)) {
                        double there = locality_placed(p);
                        bool rest = rest_wanted(&l, p) && np_ledger_movable(&l, p, p->current);
                        np_ledger_commit(&l, p, p->current);
                        if (rest) {
                                /* pages left behind (a move that ran out of
                                 * room, allocations elsewhere): move the rest */
                                np_ledger_move_pages(&l, p, p->current);
                                out[i] = decision(p->pid, NP_DECISION_MOVE, np_mask_copy(p->current),
                                                  g_strdup_printf("placed on %s, but only %.0f%% of its memory is "
                                                                  "there: moving the rest",
                                                                  cur, there * 100.0));
                                continue;
                        }
                        char *why = stuck_now(p) ? g_strdup_printf("placed on %s, which has room (its last move "
                                                                   "left %.1f MiB elsewhere that it could not move)",
                                                                   cur, (double) stuck_now(p) / (1 << 20))
                                : p->failed && rest_wanted(&l, p)
                                ? g_strdup_printf("placed on %s; its last move could not move %.1f MiB (%s): the "
                                                  "rest follows when %s has room for it",
                                                  cur, (double) p->failed / (1 << 20), failed_why(p), cur)
                                : g_strdup_printf("placed on %s, which has room", cur);
                        out[i] = decision(p->pid, NP_DECISION_KEEP, NULL, why);
                        continue;
                }
                g_autofree char *why = np_ledger_shortage_process(&l, p->current, p, -NP_POLICY_HYSTERESIS);
                g_autofree char *ctx = g_strdup_printf("placed on %s, which is now crowded (%s)", cur, why);
                out[i] = place_or_nofit(&l, p, p->current, NULL, ctx);
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
                    !np_ledger_fits_process(&l, p->running, p, -NP_POLICY_HYSTERESIS))
                        continue;
                g_autofree char *on = fmt_mask(p->running);
                np_ledger_footprint(&l, p, +1);
                out[i] = decision(p->pid, NP_DECISION_KEEP, NULL,
                                  g_strdup_printf("%.0f%% of its memory is on the nodes it runs on (%s)%s", loc * 100.0,
                                                  on,
                                                  kernel_moves(&l, p) ? "; the kernel's NUMA balancing keeps it "
                                                                        "local"
                                                                      : ""));
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
                        g_autoptr(NpMask) one = choose(&l, p, NULL, p->left, false);
                        if (!one || np_mask_weight(one) > 1) {
                                np_ledger_footprint(&l, p, +1);
                                out[i] = decision(p->pid, NP_DECISION_KEEP, NULL,
                                                  g_strdup_printf("its CPU use is not measured yet (%.1f CPUs so "
                                                                  "far) and no single node holds it now: decided "
                                                                  "at the follow-up scan",
                                                                  p->cpu));
                                continue;
                        }
                }
                double loc = locality(p);
                g_autofree char *on = fmt_mask(p->running);
                g_autofree char *kernel = kernel_context(&l, p);
                g_autofree char *ctx = g_strdup_printf("%s%.0f%% of its memory is on the nodes it runs on (%s)",
                                                       kernel ? kernel : "", loc * 100.0, on);
                bool local = loc * 100.0 >= (double) params->memory_locality_target && p->running;
                out[i] = place_or_nofit(&l, p, NULL, local ? p->running : NULL, ctx);
        }

        for (guint i = 0; i < n_procs; i++)
                g_ptr_array_add(res, out[i]);
        g_free(out);
        g_free(l.s);
        return res;
}

/* ---- the entry points (groups: np-policy-group.c) ----------------------- */

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
                NpDecision *c = g_new0(NpDecision, 1);
                c->pid = procs[i].pid;
                c->kind = d->kind;
                c->nodes = d->nodes ? np_mask_copy(d->nodes) : NULL;
                c->why = g.size[j] > 1 ? g_strdup_printf("with the %u processes of its unit: %s", g.size[j], d->why)
                                       : g_strdup(d->why);
                g_ptr_array_add(res, c);
        }
        np_policy_groups_clear(&g);
        return res;
}

/* The nodes that come closest to holding job when nothing has room: as
 * many as it needs on the idle machine (every node with memory when even
 * that is too small), grown from the node with the most memory room by
 * nearness, then room now. NULL when no node has memory. */
static NpMask *closest(const NpLedger *l, const NpPolicyProcess *job) {
        int seed = -1;
        double best = -INFINITY;
        for (guint i = 0; i < l->n; i++) {
                double r = l->s[i].cap_mem - l->s[i].used_mem;
                if (l->s[i].has_mem && r > best) {
                        best = r;
                        seed = (int) l->s[i].id;
                }
        }
        if (seed < 0)
                return NULL;
        NpLedger idle = *l;
        idle.s = g_memdup2(l->s, l->n * sizeof(NpLedgerSlot));
        for (guint i = 0; i < idle.n; i++)
                idle.s[i].used_mem = idle.s[i].used_cpu = 0;
        NpMask *set = np_mask_new();
        np_mask_set(set, (unsigned) seed);
        while (!np_ledger_fits(&idle, set, (double) job->mem, np_ledger_cpu_demand(job), 0.0)) {
                int pick = -1;
                unsigned pick_d = UINT32_MAX;
                double pick_room = -INFINITY;
                for (guint i = 0; i < l->n; i++) {
                        const NpLedgerSlot *s = &l->s[i];
                        if (!s->has_mem || np_mask_test(set, s->id))
                                continue;
                        unsigned d = 0;
                        NP_MASK_FOREACH (y, set)
                                d += np_ledger_distance(l, s->id, (unsigned) y);
                        /* room now: memory, and CPUs as a share of the job's */
                        double r = (s->cap_mem - s->used_mem) / MAX((double) job->mem, 1.0) +
                                (s->has_cpu ? (s->cap_cpu - s->used_cpu) / MAX(np_ledger_cpu_demand(job), 0.01) : 0.0);
                        if (d < pick_d || (d == pick_d && r > pick_room)) {
                                pick = (int) s->id;
                                pick_d = d;
                                pick_room = r;
                        }
                }
                if (pick < 0)
                        break; /* every node with memory */
                np_mask_set(set, (unsigned) pick);
        }
        g_free(idle.s);
        return set;
}

/* Would job fit on every node with memory of the idle machine? */
static bool within_machine(const NpLedger *l, const NpPolicyProcess *job) {
        g_autoptr(NpMask) all = np_mask_new();
        NpLedger idle = *l;
        idle.s = g_memdup2(l->s, l->n * sizeof(NpLedgerSlot));
        for (guint i = 0; i < idle.n; i++) {
                idle.s[i].used_mem = idle.s[i].used_cpu = 0;
                if (idle.s[i].has_mem)
                        np_mask_set(all, idle.s[i].id);
        }
        bool ok = np_ledger_fits(&idle, all, (double) job->mem, np_ledger_cpu_demand(job), 0.0);
        g_free(idle.s);
        return ok;
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

        set = choose(&l, &job, NULL, NULL, false);
        NpAdviceFit f = { .fits = set != NULL };
        if (!set) {
                set = closest(&l, &job);
                f.beyond_machine = !within_machine(&l, &job);
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
