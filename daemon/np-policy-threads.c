/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-policy-threads.h"

#include "np-numa-maps.h"
#include "np-sample.h"

const char *np_homes_why_to_string(NpHomesWhy why) {
        switch (why) {
        case NP_HOMES_GIVEN:
                return "given";
        case NP_HOMES_FEW_THREADS:
                return "fewer than two busy threads";
        case NP_HOMES_FEW_FAULTS:
                return "the kernel has counted too few of its threads' NUMA faults";
        case NP_HOMES_SHARED:
                return "its threads share their pages";
        case NP_HOMES_ONE_NODE:
                return "its threads would all run on one node";
        case NP_HOMES_NO_NODES:
                return "fewer than two nodes with CPUs and memory";
        case NP_HOMES_UNMEASURED:
                return "its threads' CPU use is not measured yet";
        case NP_HOMES_OUTSIDE:
                return "its group's threads would need nodes outside the group's";
        }
        return "?";
}

/* What one thread's pages or faults say. */
typedef struct {
        guint index; /* in threads */
        double decided; /* decided(): the largest share of its pages or private faults on one node */
} Order;

/* What t has on node: its pages there when known, else its private faults
 * there. */
static uint64_t mine_on(const NpPolicyThread *t, unsigned node) {
        for (guint i = 0; t->pages && i < t->pages->len; i++)
                if (g_array_index(t->pages, NpNodeBytes, i).node == node)
                        return g_array_index(t->pages, NpNodeBytes, i).bytes;
        for (guint i = 0; !t->pages && t->faults && i < t->faults->len; i++) {
                const NpNodeFaults *f = &g_array_index(t->faults, NpNodeFaults, i);
                if (f->node == node)
                        return f->private_faults;
        }
        return 0;
}

/* The largest share of what t has (mine_on()) on one node. */
static double decided(const NpPolicyThread *t) {
        uint64_t sum = 0, most = 0;
        for (guint i = 0; t->pages && i < t->pages->len; i++) {
                uint64_t b = g_array_index(t->pages, NpNodeBytes, i).bytes;
                sum += b;
                most = MAX(most, b);
        }
        for (guint i = 0; !t->pages && t->faults && i < t->faults->len; i++) {
                const NpNodeFaults *f = &g_array_index(t->faults, NpNodeFaults, i);
                sum += f->private_faults;
                most = MAX(most, f->private_faults);
        }
        return sum ? (double) most / (double) sum : 0.0;
}

static gint by_order(gconstpointer a, gconstpointer b, gpointer data) {
        const Order *x = a, *y = b;
        const NpPolicyThread *threads = data;
        const NpPolicyThread *tx = &threads[x->index], *ty = &threads[y->index];
        if (x->decided != y->decided)
                return x->decided > y->decided ? -1 : 1;
        if (tx->cpu != ty->cpu)
                return tx->cpu > ty->cpu ? -1 : 1;
        return (tx->tid > ty->tid) - (tx->tid < ty->tid);
}

static double own_on(const GArray *own, unsigned node) {
        for (guint i = 0; own && i < own->len; i++)
                if (g_array_index(own, NpNodeCpu, i).node == node)
                        return g_array_index(own, NpNodeCpu, i).cpu;
        return 0.0;
}

/* Can node be a home at all (CPUs and memory)? */
static bool candidate(const NpPolicyNode *node) {
        return node->cpu_capacity > 0 && node->mem_total > 0;
}

/* The load of others on node: its cpu_busy without `own`. */
static double others_load(const NpPolicyNode *node, const GArray *own) {
        return MAX(0.0, node->cpu_busy - own_on(own, node->id));
}

/* Is node a (nodes[a]) a better home for t than node b (both candidates;
 * load[] after the homes given so far)? Between its home and another node,
 * both of `prefer` or neither: its home while it has room, or while the
 * other is not less loaded by NP_HOMES_LOAD_MARGIN. Otherwise, among nodes with room: one of `prefer`,
 * the most of its pages (mine_on()), the least load; when neither has room:
 * the less loaded first. */
static bool better(const NpPolicyNode *nodes, const double *load, double cap_share, const NpMask *prefer,
                   const NpPolicyThread *t, guint a, guint b) {
        /* the load, as a share of the node's CPUs */
        double la = load[a] / nodes[a].cpu_capacity, lb = load[b] / nodes[b].cpu_capacity;
        bool home_a = t->home == (int) nodes[a].id, home_b = t->home == (int) nodes[b].id;
        bool in_a = !prefer || np_mask_test(prefer, nodes[a].id), in_b = !prefer || np_mask_test(prefer, nodes[b].id);
        bool fits_a = load[a] + t->cpu <= nodes[a].cpu_capacity * cap_share;
        bool fits_b = load[b] + t->cpu <= nodes[b].cpu_capacity * cap_share;
        if (home_a != home_b && in_a == in_b) {
                /* the load of others and the thread's own use are measured
                 * over an interval, and noisy: a home whose room comes and
                 * goes with them is kept, as a new one moves its pages again */
                double home = home_a ? la : lb, other = home_a ? lb : la;
                bool keep = (home_a ? fits_a : fits_b) || home <= other + NP_HOMES_LOAD_MARGIN;
                return home_a == keep;
        }
        if (fits_a != fits_b)
                return fits_a;
        if (!fits_a && la != lb)
                return la < lb;
        if (in_a != in_b)
                return in_a;
        uint64_t pa = mine_on(t, nodes[a].id), pb = mine_on(t, nodes[b].id);
        if (pa != pb)
                return pa > pb;
        if (la != lb)
                return la < lb;
        return nodes[a].id < nodes[b].id;
}

bool np_policy_threads_ran_there(double busy_cpu, guint cpus_there) {
        return busy_cpu <= (double) cpus_there * (1.0 + NP_HOMES_CROWD_MARGIN);
}

NpHomesWhy np_policy_threads_private(const NpPolicyThread *threads, guint n) {
        if (n < 2)
                return NP_HOMES_FEW_THREADS;
        uint64_t priv = 0, all = 0;
        for (guint i = 0; i < n; i++)
                for (guint k = 0; threads[i].faults && k < threads[i].faults->len; k++) {
                        const NpNodeFaults *f = &g_array_index(threads[i].faults, NpNodeFaults, k);
                        priv += f->private_faults;
                        all += f->private_faults + f->shared_faults;
                }
        if (all < (uint64_t) NP_HOMES_MIN_FAULTS * n)
                return NP_HOMES_FEW_FAULTS;
        if ((double) priv < NP_HOMES_PRIVATE_SHARE * (double) all)
                return NP_HOMES_SHARED;
        return NP_HOMES_GIVEN;
}

GArray *np_policy_thread_homes(const NpPolicyNode *nodes, guint n_nodes, const NpMask *prefer, bool confined,
                               const GArray *own, const NpPolicyThread *threads, guint n, unsigned target_utilization,
                               NpHomesWhy *why) {
        NpHomesWhy dummy;
        if (!why)
                why = &dummy;
        *why = np_policy_threads_private(threads, n);
        if (*why != NP_HOMES_GIVEN)
                return NULL;

        g_autofree guint *cand = g_new0(guint, n_nodes ? n_nodes : 1);
        g_autofree double *load = g_new0(double, n_nodes ? n_nodes : 1);
        guint n_cand = 0;
        for (guint i = 0; i < n_nodes; i++) {
                if (!candidate(&nodes[i]) || (confined && prefer && !np_mask_test(prefer, nodes[i].id)))
                        continue;
                load[i] = others_load(&nodes[i], own);
                cand[n_cand++] = i;
        }
        if (n_cand < 2) {
                *why = NP_HOMES_NO_NODES;
                return NULL;
        }

        g_autoptr(GArray) order = g_array_sized_new(FALSE, FALSE, sizeof(Order), n);
        for (guint i = 0; i < n; i++) {
                Order o = { i, decided(&threads[i]) };
                g_array_append_val(order, o);
        }
        g_array_sort_with_data(order, by_order, (gpointer) threads);

        double cap_share = (double) target_utilization / 100.0;
        g_autofree int *home = g_new(int, n);
        for (guint k = 0; k < n; k++) {
                const NpPolicyThread *t = &threads[g_array_index(order, Order, k).index];
                guint best = cand[0];
                for (guint c = 1; c < n_cand; c++)
                        if (better(nodes, load, cap_share, prefer, t, cand[c], best))
                                best = cand[c];
                load[best] += t->cpu;
                home[g_array_index(order, Order, k).index] = (int) best;
        }

        bool spread = false;
        for (guint i = 1; i < n; i++)
                spread |= home[i] != home[0];
        if (!spread) {
                *why = NP_HOMES_ONE_NODE;
                return NULL;
        }
        GArray *out = g_array_sized_new(FALSE, FALSE, sizeof(NpThreadHome), n);
        for (guint i = 0; i < n; i++) {
                NpThreadHome h = { threads[i].tid, nodes[home[i]].id };
                g_array_append_val(out, h);
        }
        *why = NP_HOMES_GIVEN;
        return out;
}

char *np_policy_threads_describe(const NpPolicyThread *threads, guint n) {
        if (n == 0)
                return g_strdup("none");
        GString *s = g_string_new(NULL);
        for (guint i = 0; i < n; i++) {
                const NpPolicyThread *t = &threads[i];
                uint64_t priv = 0, all = 0, most = 0;
                int most_on = -1;
                for (guint k = 0; t->faults && k < t->faults->len; k++) {
                        const NpNodeFaults *f = &g_array_index(t->faults, NpNodeFaults, k);
                        priv += f->private_faults;
                        all += f->private_faults + f->shared_faults;
                        if (f->private_faults > most) {
                                most = f->private_faults;
                                most_on = (int) f->node;
                        }
                }
                g_string_append_printf(s, "%s%d (%.2f CPUs, ", i ? ", " : "", (int) t->tid, t->cpu);
                if (all == 0)
                        g_string_append(s, "no faults counted");
                else if (most_on < 0)
                        g_string_append_printf(s, "%" G_GUINT64_FORMAT " faults, none private", all);
                else
                        g_string_append_printf(
                                s, "%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " faults private, most on %d", priv,
                                all, most_on);
                if (t->pages) {
                        uint64_t bytes = 0, top = 0;
                        int top_on = -1;
                        for (guint k = 0; k < t->pages->len; k++) {
                                const NpNodeBytes *b = &g_array_index(t->pages, NpNodeBytes, k);
                                bytes += b->bytes;
                                if (b->bytes > top) {
                                        top = b->bytes;
                                        top_on = (int) b->node;
                                }
                        }
                        g_string_append_printf(s, "; %.1f MiB of its own", (double) bytes / (1 << 20));
                        if (top_on >= 0)
                                g_string_append_printf(s, ", most on %d", top_on);
                }
                if (t->home >= 0)
                        g_string_append_printf(s, "; kept on %d", t->home);
                g_string_append_c(s, ')');
        }
        return g_string_free(s, FALSE);
}

char *np_policy_threads_load_describe(const NpPolicyNode *nodes, guint n_nodes, const GArray *own) {
        GString *s = g_string_new(NULL);
        for (guint i = 0; i < n_nodes; i++)
                if (candidate(&nodes[i]))
                        g_string_append_printf(s, "%s%u %.2f of %.2f CPUs", s->len ? ", " : "", nodes[i].id,
                                               others_load(&nodes[i], own), nodes[i].cpu_capacity);
        if (s->len == 0)
                g_string_append(s, "no node with CPUs and memory");
        return g_string_free(s, FALSE);
}

static gint by_tid(gconstpointer a, gconstpointer b) {
        const NpThreadHome *x = a, *y = b;
        return (x->tid > y->tid) - (x->tid < y->tid);
}

char *np_policy_homes_list(const GArray *homes) {
        g_autoptr(GArray) sorted = g_array_copy((GArray *) homes);
        g_array_sort(sorted, by_tid);
        GString *s = g_string_new(NULL);
        for (guint i = 0; i < sorted->len; i++) {
                const NpThreadHome *h = &g_array_index(sorted, NpThreadHome, i);
                g_string_append_printf(s, "%s%d on %u", i ? ", " : "", (int) h->tid, h->node);
        }
        return g_string_free(s, FALSE);
}

static char *clause(const GArray *homes, const char *whose) {
        bool shared = false;
        for (guint i = 0; i < homes->len && !shared; i++)
                for (guint k = 0; k < i && !shared; k++)
                        shared = g_array_index(homes, NpThreadHome, i).node ==
                                g_array_index(homes, NpThreadHome, k).node;
        g_autofree char *list = np_policy_homes_list(homes);
        return g_strdup_printf("; %s work on their own pages: each is kept on %s (%s), "
                               "where the kernel's NUMA balancing moves them",
                               whose, shared ? "one node" : "its own node", list);
}

char *np_policy_homes_clause(const GArray *homes) {
        g_autofree char *whose = g_strdup_printf("its %u busy threads", homes->len);
        return clause(homes, whose);
}

char *np_policy_group_homes_clause(const GArray *homes) {
        g_autofree char *whose = g_strdup_printf("the %u busy threads of its group", homes->len);
        return clause(homes, whose);
}
