/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Choosing node sets for the placement policy (pure): see np-policy-choose.h. */
#include "np-policy-choose.h"

#include <math.h>

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

/* The distances from node id to each node of set, added up. */
static unsigned distance_to(const NpLedger *l, const NpMask *set, unsigned id) {
        unsigned sum = 0;
        NP_MASK_FOREACH (y, set)
                sum += np_ledger_distance(l, id, (unsigned) y);
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
                        unsigned d = distance_to(l, set, s->id);
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

NpMask *np_choose_set(const NpLedger *l, const NpPolicyProcess *p, const NpMask *prefer, const NpMask *avoid,
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

void np_choose_why_not_one(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set, NpReason *r) {
        if (np_mask_weight(set) < 2)
                return;
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
                return;
        g_autoptr(NpMask) one = np_mask_new();
        np_mask_set(one, (unsigned) best);
        if (np_ledger_fits_process(l, one, p, 0.0))
                return;
        r->alone_node = (unsigned) best;
        np_ledger_shortage_process(l, one, p, 0.0, &r->alone);
}

void np_choose_distances(const NpLedger *l, const NpMask *set, unsigned *lo_out, unsigned *hi_out) {
        unsigned lo = UINT32_MAX, hi = 0;
        NP_MASK_FOREACH (a, set)
                NP_MASK_FOREACH (b, set)
                        if (a < b) {
                                unsigned d = np_ledger_distance(l, (unsigned) a, (unsigned) b);
                                lo = MIN(lo, d);
                                hi = MAX(hi, d);
                        }
        *lo_out = hi ? lo : 0;
        *hi_out = hi;
}

NpMask *np_choose_memory_home(const NpLedger *l, const NpPolicyProcess *p) {
        double mem = (double) np_ledger_regular_mem(p);
        int one = -1, seed = -1;
        uint64_t one_present = 0, seed_present = 0;
        for (guint i = 0; i < l->n; i++) {
                const NpLedgerSlot *s = &l->s[i];
                if (!s->has_mem)
                        continue;
                uint64_t present = np_ledger_bytes_on(p, s->id);
                if (seed < 0 || present > seed_present) {
                        seed = (int) s->id;
                        seed_present = present;
                }
                g_autoptr(NpMask) alone = np_mask_new();
                np_mask_set(alone, s->id);
                if (np_ledger_fits(l, alone, mem, 0.0, 0.0) && !np_ledger_pools_short(l, p, alone) &&
                    (one < 0 || present > one_present)) {
                        one = (int) s->id;
                        one_present = present;
                }
        }
        if (seed < 0)
                return NULL;
        NpMask *set = np_mask_new();
        np_mask_set(set, (unsigned) (one >= 0 ? one : seed));
        while (!np_ledger_fits(l, set, mem, 0.0, 0.0)) {
                int best = -1;
                unsigned best_d = UINT32_MAX;
                uint64_t best_present = 0;
                for (guint i = 0; i < l->n; i++) {
                        const NpLedgerSlot *s = &l->s[i];
                        if (!s->has_mem || np_mask_test(set, s->id))
                                continue;
                        unsigned d = distance_to(l, set, s->id);
                        uint64_t present = np_ledger_bytes_on(p, s->id);
                        if (d < best_d || (d == best_d && present > best_present)) {
                                best = (int) s->id;
                                best_d = d;
                                best_present = present;
                        }
                }
                if (best < 0) {
                        np_mask_free(set);
                        return NULL;
                }
                np_mask_set(set, (unsigned) best);
        }
        if (!np_ledger_movable(l, p, set)) {
                np_mask_free(set);
                return NULL;
        }
        return set;
}

NpMask *np_choose_closest(const NpLedger *l, const NpPolicyProcess *job) {
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
                        unsigned d = distance_to(l, set, s->id);
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

bool np_choose_within_machine(const NpLedger *l, const NpPolicyProcess *job) {
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
