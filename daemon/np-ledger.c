/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The placement policy's ledger, pure: see np-ledger.h. */
#include "np-ledger.h"

#include "np-numa-maps.h"
#include "np-sample.h"
#include "np-topology.h"

/* ---- the ledger --------------------------------------------------------- */

NpLedgerSlot *np_ledger_slot(const NpLedger *l, unsigned id) {
        for (guint i = 0; i < l->n; i++)
                if (l->s[i].id == id)
                        return &l->s[i];
        return NULL;
}

unsigned np_ledger_distance(const NpLedger *l, unsigned a, unsigned b) {
        if (a == b)
                return 10;
        const NpLedgerSlot *s = np_ledger_slot(l, a);
        for (guint i = 0; s && s->dist && i < s->dist->len; i++) {
                const NpDistance *d = &g_array_index(s->dist, NpDistance, i);
                if (d->node == b)
                        return d->distance;
        }
        return 20; /* unknown: remote */
}

uint64_t np_ledger_bytes_on(const NpPolicyProcess *p, unsigned node) {
        for (guint i = 0; p->per_node && i < p->per_node->len; i++) {
                const NpNodeBytes *nb = &g_array_index(p->per_node, NpNodeBytes, i);
                if (nb->node == node)
                        return nb->bytes;
        }
        return 0;
}

uint64_t np_ledger_bytes_on_set(const NpPolicyProcess *p, const NpMask *set) {
        uint64_t sum = 0;
        NP_MASK_FOREACH (n, set)
                sum += np_ledger_bytes_on(p, (unsigned) n);
        return sum;
}

/* ---- hugetlb pages: counted against the pools, not memory --------------- */

/* p's hugetlb bytes on node (page size 0: of any size). */
static uint64_t huge_on(const NpPolicyProcess *p, unsigned node, uint64_t page) {
        uint64_t sum = 0;
        for (guint i = 0; p->huge_per_node && i < p->huge_per_node->len; i++) {
                const NpHugeBytes *h = &g_array_index(p->huge_per_node, NpHugeBytes, i);
                if (h->node == node && (!page || h->page_bytes == page))
                        sum += h->bytes;
        }
        return sum;
}

/* p's hugetlb bytes of one page size (0: of any size) on the nodes of set (NULL: anywhere). */
uint64_t np_ledger_huge_in(const NpPolicyProcess *p, const NpMask *set, uint64_t page) {
        uint64_t sum = 0;
        for (guint i = 0; p->huge_per_node && i < p->huge_per_node->len; i++) {
                const NpHugeBytes *h = &g_array_index(p->huge_per_node, NpHugeBytes, i);
                if ((!page || h->page_bytes == page) && (!set || np_mask_test(set, h->node)))
                        sum += h->bytes;
        }
        return sum;
}

/* Its memory that is not in hugetlb pages: what counts against memory. */
uint64_t np_ledger_regular_mem(const NpPolicyProcess *p) {
        return p->mem - MIN(p->mem, np_ledger_huge_in(p, NULL, 0));
}

static uint64_t reg_on(const NpPolicyProcess *p, unsigned node) {
        uint64_t b = np_ledger_bytes_on(p, node);
        return b - MIN(b, huge_on(p, node, 0));
}

static uint64_t reg_on_set(const NpPolicyProcess *p, const NpMask *set) {
        uint64_t sum = 0;
        NP_MASK_FOREACH (n, set)
                sum += reg_on(p, (unsigned) n);
        return sum;
}

/* The free bytes of a slot's pool of one page size, NULL when it has none. */
static double *pool_of(NpLedgerSlot *s, uint64_t page) {
        for (unsigned k = 0; s && k < s->n_huge; k++)
                if (s->huge_size[k] == page)
                        return &s->huge_free[k];
        return NULL;
}

/* The free bytes of a memory node's pool of one page size (0: none). */
double np_ledger_pool_free(const NpLedgerSlot *s, uint64_t page) {
        for (unsigned k = 0; s && s->has_mem && k < s->n_huge; k++)
                if (s->huge_size[k] == page)
                        return MAX(0.0, s->huge_free[k]);
        return 0.0;
}

static double pool_free_in(const NpLedger *l, const NpMask *set, uint64_t page) {
        double sum = 0;
        NP_MASK_FOREACH (n, set)
                sum += np_ledger_pool_free(np_ledger_slot(l, (unsigned) n), page);
        return sum;
}

/* Take (sign +1) or give back (-1) p's hugetlb pages where they are now. */
static void pools_take(NpLedger *l, const NpPolicyProcess *p, double sign) {
        for (guint i = 0; p->huge_per_node && i < p->huge_per_node->len; i++) {
                const NpHugeBytes *h = &g_array_index(p->huge_per_node, NpHugeBytes, i);
                double *f = pool_of(np_ledger_slot(l, h->node), h->page_bytes);
                if (f)
                        *f -= sign * (double) h->bytes;
        }
}

/* The first page size of p whose pages the pools of set (p not in the
 * ledger) cannot all take, 0 when they can. */
uint64_t np_ledger_pools_short(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set) {
        for (guint i = 0; p->huge_per_node && i < p->huge_per_node->len; i++) {
                uint64_t page = g_array_index(p->huge_per_node, NpHugeBytes, i).page_bytes;
                if ((double) np_ledger_huge_in(p, NULL, page) > pool_free_in(l, set, page) + 0.5)
                        return page;
        }
        return 0;
}

/* p's hugetlb pages on set: those already there stay, the rest go to the
 * set's pools of their size, spread by what is free in them. */
static void pools_commit(NpLedger *l, const NpPolicyProcess *p, const NpMask *set) {
        for (guint i = 0; p->huge_per_node && i < p->huge_per_node->len; i++) {
                uint64_t page = g_array_index(p->huge_per_node, NpHugeBytes, i).page_bytes;
                if (i > 0 && g_array_index(p->huge_per_node, NpHugeBytes, i - 1).page_bytes == page)
                        continue; /* sorted by page size: once per size */
                double rest = (double) (np_ledger_huge_in(p, NULL, page) - np_ledger_huge_in(p, set, page));
                double free = pool_free_in(l, set, page);
                NP_MASK_FOREACH (n, set) {
                        NpLedgerSlot *s = np_ledger_slot(l, (unsigned) n);
                        double *f = s && s->has_mem ? pool_of(s, page) : NULL;
                        if (!f)
                                continue;
                        double share = free > 0 ? rest * MAX(0.0, *f) / free : 0.0;
                        *f -= (double) huge_on(p, (unsigned) n, page) + share;
                }
        }
}

/* The CPUs p needs: what it uses, but never more than it has threads (a
 * sample can overshoot by a tick). */
double np_ledger_cpu_demand(const NpPolicyProcess *p) {
        return p->threads ? MIN(p->cpu, (double) p->threads) : p->cpu;
}

/* The nodes whose CPUs its threads use now: where they ran, else where it
 * is confined. */
static const NpMask *cpu_nodes(const NpPolicyProcess *p) {
        if (p->running && !np_mask_empty(p->running))
                return p->running;
        return p->current;
}

/* Add (sign +1) or remove (-1) the process's CPU use where it runs now. */
static void footprint_cpu(NpLedger *l, const NpPolicyProcess *p, double sign) {
        const NpMask *cn = p->cpu_per_node && p->cpu_per_node->len ? NULL : cpu_nodes(p);
        guint k = 0;
        for (guint i = 0; p->cpu_per_node && i < p->cpu_per_node->len; i++) {
                const NpNodeCpu *c = &g_array_index(p->cpu_per_node, NpNodeCpu, i);
                NpLedgerSlot *s = np_ledger_slot(l, c->node);
                if (s && s->has_cpu)
                        s->used_cpu = MAX(0.0, s->used_cpu + sign * c->cpu);
        }
        if (cn)
                NP_MASK_FOREACH (n, cn)
                        k += np_ledger_slot(l, (unsigned) n) && np_ledger_slot(l, (unsigned) n)->has_cpu;
        if (cn && k)
                NP_MASK_FOREACH (n, cn) {
                        NpLedgerSlot *s = np_ledger_slot(l, (unsigned) n);
                        if (s && s->has_cpu)
                                s->used_cpu = MAX(0.0, s->used_cpu + sign * p->cpu / k);
                }
}

/* Add (sign +1) or remove (-1) the process's present footprint. */
void np_ledger_footprint(NpLedger *l, const NpPolicyProcess *p, double sign) {
        footprint_cpu(l, p, sign);
        for (guint i = 0; p->per_node && i < p->per_node->len; i++) {
                const NpNodeBytes *nb = &g_array_index(p->per_node, NpNodeBytes, i);
                NpLedgerSlot *s = np_ledger_slot(l, nb->node);
                if (s)
                        s->used_mem = MAX(0.0, s->used_mem + sign * (double) reg_on(p, nb->node));
        }
        pools_take(l, p, sign);
}

/* The candidates' CPU use in the nodes' busy figures: each at least its
 * cpu (the lower of its last two measurements), as much as it used over
 * the last interval. */
static double candidates_cpu(const NpPolicyProcess *procs, guint n_procs) {
        double sum = 0;
        for (guint i = 0; i < n_procs; i++)
                if (procs[i].hold != NP_HOLD_RESERVED) /* not in the samples */
                        sum += MAX(procs[i].cpu, procs[i].cpu_interval);
        return sum;
}

double np_ledger_background(const NpLedger *l, const NpPolicyProcess *procs, guint n_procs) {
        double busy = 0;
        for (guint i = 0; i < l->n; i++)
                busy += l->s[i].used_cpu;
        return MAX(0.0, busy - candidates_cpu(procs, n_procs) - MAX(0.0, l->params->own_cpu));
}

/*
 * Take the candidates out of the ledger: their pages from the nodes
 * numa_maps shows them on (exact), and their CPU use from the machine's
 * total. The CPU use left (the background: everything that is not a
 * candidate, the lower of this round's and the one before) is spread over
 * the nodes by their CPUs: the scheduler moves unconfined threads between
 * nodes, so the per-node busy figures say where threads happened to run,
 * not where they belong, and would show load where there is none.
 */
void np_ledger_remove_candidates(NpLedger *l, const NpPolicyProcess *procs, guint n_procs) {
        double raw = 0;
        double background = np_ledger_background(l, procs, n_procs);
        if (l->params->background_measured)
                background = MIN(background, MAX(0.0, l->params->background_before));
        for (guint i = 0; i < l->n; i++)
                raw += l->s[i].has_cpu ? l->s[i].raw_cpu : 0.0;
        for (guint i = 0; i < n_procs; i++) {
                const NpPolicyProcess *p = &procs[i];
                if (p->hold == NP_HOLD_RESERVED)
                        continue; /* not in the samples */
                for (guint k = 0; p->per_node && k < p->per_node->len; k++) {
                        const NpNodeBytes *nb = &g_array_index(p->per_node, NpNodeBytes, k);
                        NpLedgerSlot *s = np_ledger_slot(l, nb->node);
                        if (s)
                                s->used_mem = MAX(0.0, s->used_mem - (double) reg_on(p, nb->node));
                }
                /* a moving process's huge pages stay charged where its last
                 * read put them: the nodes' samples may already show them
                 * gone from there (its move runs), and a pool is exact; its
                 * target's pools are charged when it is counted there
                 * (np-policy.c), so a move in flight counts twice, never
                 * not at all */
                if (p->hold != NP_HOLD_MOVING)
                        pools_take(l, p, -1);
        }
        for (guint i = 0; i < l->n; i++) {
                NpLedgerSlot *s = &l->s[i];
                s->used_cpu = s->bg_cpu = s->has_cpu && raw > 0 ? background * s->raw_cpu / raw : 0.0;
        }
}

/* Room in a set: memory on every node with memory, CPUs on every node with
 * CPUs (negative when over capacity). */
void np_ledger_room(const NpLedger *l, const NpMask *set, double *mem, double *cpu, double *cap_mem, double *cap_cpu) {
        *mem = *cpu = 0;
        if (cap_mem)
                *cap_mem = 0;
        if (cap_cpu)
                *cap_cpu = 0;
        NP_MASK_FOREACH (n, set) {
                const NpLedgerSlot *s = np_ledger_slot(l, (unsigned) n);
                if (!s)
                        continue;
                if (s->has_mem) {
                        *mem += s->cap_mem - s->used_mem;
                        if (cap_mem)
                                *cap_mem += s->cap_mem;
                }
                if (s->has_cpu) {
                        *cpu += s->cap_cpu - s->used_cpu;
                        if (cap_cpu)
                                *cap_cpu += s->cap_cpu;
                }
        }
}

/* How far above the CPUs it can use a CPU-bound process may measure (CPU
 * time is sampled at ticks): a thread busy all the time measured 0.98 to
 * 1.005 CPUs in the 4-node VM. */
#define NP_CPU_MEASURE_SLACK 0.02

/* The background on set, and the room for CPUs the CPU nodes outside set
 * have at TargetUtilization (none counted below zero). */
static double background_on(const NpLedger *l, const NpMask *set, double *room_elsewhere) {
        double bg = 0;
        *room_elsewhere = 0;
        for (guint i = 0; i < l->n; i++) {
                const NpLedgerSlot *s = &l->s[i];
                if (!s->has_cpu)
                        continue;
                if (np_mask_test(set, s->id))
                        bg += s->bg_cpu;
                else
                        *room_elsewhere += MAX(0.0, s->cap_cpu - s->used_cpu);
        }
        return bg;
}

/* Would p (not in the ledger) fit on set, with `margin` of the set's
 * capacity kept free (negative: allowed over)?
 *
 * Memory: the set's room at TargetUtilization. CPUs: the same, except that
 * a set may take a process that fills up to all of its CPUs when the load
 * confined there (the candidates counted on it) is within the headroom
 * TargetUtilization leaves (the rest of 100%), and so is what of its share
 * of the background the rest of the machine has no room for: a thread is
 * not divisible, so one busy thread must be able to have a one-CPU node to
 * itself, spreading it over two nodes would only cost locality, and the
 * scheduler moves unconfined threads off its CPU to where there is room.
 * Two busy processes still never share a node when another has room. */
bool np_ledger_fits(const NpLedger *l, const NpMask *set, double mem, double cpu, double margin) {
        double rm, rc, cm, cc;
        np_ledger_room(l, set, &rm, &rc, &cm, &cc);
        if (cm <= 0)
                return false; /* no memory there */
        if (rm - mem < margin * cm)
                return false;
        if (cpu <= 0)
                return true;
        if (cc <= 0)
                return false; /* no CPU there */
        if (rc - cpu >= margin * cc)
                return true;
        double raw = 0, used = 0, elsewhere;
        NP_MASK_FOREACH (n, set) {
                const NpLedgerSlot *s = np_ledger_slot(l, (unsigned) n);
                if (s && s->has_cpu) {
                        raw += s->raw_cpu;
                        used += s->used_cpu;
                }
        }
        double bg = background_on(l, set, &elsewhere);
        double stays = (used - bg) + MAX(0.0, bg - elsewhere);
        /* a thread that is busy all the time measures up to a few percent
         * more than one CPU (CPU time is sampled at ticks): it still fits
         * an idle CPU */
        return stays <= raw - cc - margin * raw && cpu - NP_CPU_MEASURE_SLACK <= raw * (1.0 - margin);
}

/* Why p (not in the ledger) does not fit on set with `margin` kept free:
 * what is short there, memory or CPUs, in numbers an operator can check
 * against the nodes' properties. */
static void shortage(const NpLedger *l, const NpMask *set, double mem, double cpu, double margin, NpShortage *out) {
        double rm, rc, cm, cc;
        np_ledger_room(l, set, &rm, &rc, &cm, &cc);
        if (rm - mem < margin * cm)
                *out = (NpShortage){ .kind = NP_SHORT_MEMORY, .others = cm - rm, .its = mem, .capacity = cm };
        else {
                double elsewhere;
                double bg = background_on(l, set, &elsewhere);
                *out = (NpShortage){ .kind = NP_SHORT_CPU,
                                     .others = cc - rc,
                                     .its = cpu,
                                     .capacity = cc,
                                     .background = bg,
                                     .background_elsewhere = MIN(bg, elsewhere) };
        }
        out->target_utilization = l->params->target_utilization;
}

/* Would p (not in the ledger) fit on set: its memory and CPUs by np_ledger_fits(),
 * its hugetlb pages in the set's pools? */
bool np_ledger_fits_process(const NpLedger *l, const NpMask *set, const NpPolicyProcess *p, double margin) {
        return np_ledger_fits(l, set, (double) np_ledger_regular_mem(p), np_ledger_cpu_demand(p), margin) &&
                !np_ledger_pools_short(l, p, set);
}

/* Why p does not fit on set (np_ledger_fits_process() said no). */
void np_ledger_shortage_process(const NpLedger *l, const NpMask *set, const NpPolicyProcess *p, double margin,
                                NpShortage *out) {
        uint64_t page = np_ledger_pools_short(l, p, set);
        if (page) {
                *out = (NpShortage){ .kind = NP_SHORT_HUGE,
                                     .its = (double) np_ledger_huge_in(p, NULL, page),
                                     .page_bytes = page,
                                     .capacity = pool_free_in(l, set, page) };
                return;
        }
        shortage(l, set, (double) np_ledger_regular_mem(p), np_ledger_cpu_demand(p), margin, out);
}

/* A set now loaded past its CPUs at TargetUtilization: the background
 * there goes where the CPU nodes outside it have room (np_ledger_fits()
 * counted on that), as far as they have it, by their room. */
static void push_background(NpLedger *l, const NpMask *set) {
        double rm, rc, elsewhere;
        np_ledger_room(l, set, &rm, &rc, NULL, NULL);
        double bg = background_on(l, set, &elsewhere);
        double go = MIN(MIN(-rc, bg), elsewhere);
        if (go <= 0)
                return;
        for (guint i = 0; i < l->n; i++) {
                NpLedgerSlot *s = &l->s[i];
                if (!s->has_cpu)
                        continue;
                if (np_mask_test(set, s->id)) {
                        double d = go * s->bg_cpu / bg;
                        s->bg_cpu -= d;
                        s->used_cpu -= d;
                } else if (s->cap_cpu > s->used_cpu) {
                        double d = go * (s->cap_cpu - s->used_cpu) / elsewhere;
                        s->bg_cpu += d;
                        s->used_cpu += d;
                }
        }
}

/* Commit p on set: its pages already there stay, the rest spread by
 * capacity (hugetlb pages in the pools of their size); its CPU spread over
 * the CPU nodes by capacity. */
static void commit(NpLedger *l, const NpPolicyProcess *p, const NpMask *set, bool cpu) {
        double rm, rc, cm, cc;
        np_ledger_room(l, set, &rm, &rc, &cm, &cc);
        uint64_t present = reg_on_set(p, set), mem = np_ledger_regular_mem(p);
        double rest = mem > present ? (double) (mem - present) : 0.0;
        pools_commit(l, p, set);
        NP_MASK_FOREACH (n, set) {
                NpLedgerSlot *s = np_ledger_slot(l, (unsigned) n);
                if (!s)
                        continue;
                if (s->has_mem && cm > 0)
                        s->used_mem += (double) reg_on(p, s->id) + rest * s->cap_mem / cm;
                if (cpu && s->has_cpu && cc > 0)
                        s->used_cpu += np_ledger_cpu_demand(p) * s->cap_cpu / cc;
        }
        if (cpu)
                push_background(l, set);
        else
                footprint_cpu(l, p, +1);
}

void np_ledger_commit(NpLedger *l, const NpPolicyProcess *p, const NpMask *set) {
        commit(l, p, set, true);
}

void np_ledger_commit_memory(NpLedger *l, const NpPolicyProcess *p, const NpMask *set) {
        commit(l, p, set, false);
}

void np_ledger_init(NpLedger *l, const NpPolicyNode *nodes, guint n_nodes, const NpPolicyParams *params) {
        double t = (double) CLAMP(params->target_utilization, 1u, 100u) / 100.0;
        l->n = n_nodes;
        l->params = params;
        l->moves = 0;
        l->s = g_new0(NpLedgerSlot, n_nodes);
        for (guint i = 0; i < n_nodes; i++) {
                const NpPolicyNode *nd = &nodes[i];
                NpLedgerSlot *s = &l->s[i];
                s->id = nd->id;
                s->has_mem = nd->mem_total > 0;
                s->has_cpu = nd->cpu_capacity > 0;
                s->cap_cpu = nd->cpu_capacity * t;
                s->raw_cpu = nd->cpu_capacity;
                /* a move needs the pages free on its target when it runs;
                 * keep the kernel's reserves out of reach */
                s->phys_free = MAX(0.0,
                                   (double) (nd->mem_free_now ? nd->mem_free_now : nd->mem_free) -
                                           NP_POLICY_MEM_RESERVE * (double) nd->mem_total);
                s->used_cpu = nd->cpu_busy;
                s->cap_mem = (double) nd->mem_total * t;
                s->used_mem = nd->mem_total > nd->mem_free ? (double) (nd->mem_total - nd->mem_free) : 0.0;
                s->dist = nd->distances;
                s->n_huge = MIN(nd->n_huge, (unsigned) NP_HUGE_SIZES_MAX);
                for (unsigned k = 0; k < s->n_huge; k++) {
                        s->huge_size[k] = nd->huge[k].page_bytes;
                        s->huge_free[k] = (double) nd->huge[k].free_pages * (double) nd->huge[k].page_bytes;
                }
        }
}

/* p's memory (not hugetlb) that is not on set yet, and what its nodes have
 * free now for pages moved in. */
static double incoming_and_free(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set, double *free) {
        *free = 0;
        NP_MASK_FOREACH (n, set) {
                const NpLedgerSlot *s = np_ledger_slot(l, (unsigned) n);
                if (s && s->has_mem)
                        *free += s->phys_free;
        }
        uint64_t mem = np_ledger_regular_mem(p);
        return (double) (mem - MIN(mem, reg_on_set(p, set)));
}

/* Can p's pages that are not on set move there now: is that much memory
 * free on its nodes (after the moves decided before it)? */
bool np_ledger_movable(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set) {
        double free;
        return incoming_and_free(l, p, set, &free) <= free;
}

/* The moves decided run one after the other: after p's, its pages are on
 * set and gone from its other nodes. */
void np_ledger_move_pages(NpLedger *l, const NpPolicyProcess *p, const NpMask *set) {
        double free;
        double incoming = incoming_and_free(l, p, set, &free);
        l->moves++;
        for (guint i = 0; i < l->n; i++) {
                NpLedgerSlot *s = &l->s[i];
                if (!s->has_mem)
                        continue;
                if (np_mask_test(set, s->id))
                        s->phys_free = free > 0 ? MAX(0.0, s->phys_free - incoming * s->phys_free / free) : 0.0;
                else
                        s->phys_free += (double) reg_on(p, s->id);
        }
}
