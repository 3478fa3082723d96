/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The processes of one unit, merged into one candidate for the policy (pure):
 * see np-policy-group.h. */
#include "np-policy-group.h"

#include "np-numa-maps.h"
#include "np-sample.h"

/* Which hold a group takes from its members: the one that keeps it still
 * the most firmly. A member excluded or pinned keeps the whole unit where it
 * is (its values are the unit's); a member placed by the policy explains a
 * narrowed sibling (the unit carries the daemon's values), so placed ranks
 * above foreign. */
static int hold_rank(NpPolicyHold h) {
        switch (h) {
        case NP_HOLD_MOVING:
                return 5;
        case NP_HOLD_PINNED:
                return 4;
        case NP_HOLD_EXCLUDED:
                return 3;
        case NP_HOLD_PLACED:
                return 2;
        case NP_HOLD_FOREIGN:
                return 1;
        case NP_HOLD_NONE:
        default:
                return 0;
        }
}

static void add_huge(GArray *acc, const GArray *huge_per_node) {
        for (guint k = 0; huge_per_node && k < huge_per_node->len; k++) {
                const NpHugeBytes *h = &g_array_index(huge_per_node, NpHugeBytes, k);
                guint j = 0;
                while (j < acc->len &&
                       (g_array_index(acc, NpHugeBytes, j).page_bytes < h->page_bytes ||
                        (g_array_index(acc, NpHugeBytes, j).page_bytes == h->page_bytes &&
                         g_array_index(acc, NpHugeBytes, j).node < h->node)))
                        j++;
                NpHugeBytes *at = j < acc->len ? &g_array_index(acc, NpHugeBytes, j) : NULL;
                if (at && at->page_bytes == h->page_bytes && at->node == h->node)
                        at->bytes += h->bytes;
                else
                        g_array_insert_val(acc, j, *h);
        }
}

/* acc | add, as a mask of g's own (acc is one of g's or NULL). */
static const NpMask *mask_union(NpPolicyGroups *g, const NpMask *acc, const NpMask *add) {
        if (!add)
                return acc;
        if (!acc) {
                NpMask *c = np_mask_copy(add);
                g_ptr_array_add(g->masks, c);
                return c;
        }
        np_mask_or((NpMask *) acc, add);
        return acc;
}

static const GArray *own_array(NpPolicyGroups *g, const GArray *src, guint elt, void (*add)(GArray *, const GArray *)) {
        if (!src)
                return NULL;
        GArray *a = g_array_new(FALSE, FALSE, elt);
        add(a, src);
        g_ptr_array_add(g->arrays, a);
        return a;
}

void np_policy_groups_build(NpPolicyGroups *g, const NpPolicyProcess *procs, guint n_procs) {
        g->merged = g_array_sized_new(FALSE, FALSE, sizeof(NpPolicyProcess), n_procs);
        g->slot_of = g_new0(guint, n_procs);
        g->size = g_new0(guint, n_procs);
        g->masks = g_ptr_array_new_with_free_func((GDestroyNotify) np_mask_free);
        g->arrays = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
        g_autoptr(GHashTable) first = g_hash_table_new(g_direct_hash, g_direct_equal);

        for (guint i = 0; i < n_procs; i++) {
                const NpPolicyProcess *p = &procs[i];
                gpointer at;
                if (p->group == 0 || !g_hash_table_lookup_extended(first, GUINT_TO_POINTER(p->group), NULL, &at)) {
                        g->slot_of[i] = g->merged->len;
                        g->size[g->merged->len] = 1;
                        if (p->group)
                                g_hash_table_insert(first, GUINT_TO_POINTER(p->group),
                                                    GUINT_TO_POINTER(g->merged->len));
                        g_array_append_val(g->merged, *p);
                        continue;
                }
                guint j = GPOINTER_TO_UINT(at);
                NpPolicyProcess *u = &g_array_index(g->merged, NpPolicyProcess, j);
                g->slot_of[i] = j;
                if (g->size[j]++ == 1) {
                        /* first merge into it: copies the entry may change */
                        u->per_node = own_array(g, u->per_node, sizeof(NpNodeBytes), np_node_bytes_add);
                        u->huge_per_node = own_array(g, u->huge_per_node, sizeof(NpHugeBytes), add_huge);
                        u->cpu_per_node = own_array(g, u->cpu_per_node, sizeof(NpNodeCpu), np_node_cpu_add);
                        u->running = mask_union(g, NULL, u->running);
                        u->current = mask_union(g, NULL, u->current);
                        u->runs_on = mask_union(g, NULL, u->runs_on);
                        u->cpu_interval = MAX(u->cpu, u->cpu_interval);
                }
                if (!p->per_node)
                        u->per_node = NULL;
                else if (u->per_node)
                        np_node_bytes_add((GArray *) u->per_node, p->per_node);
                if (p->huge_per_node && p->huge_per_node->len) {
                        if (!u->huge_per_node)
                                u->huge_per_node = own_array(g, p->huge_per_node, sizeof(NpHugeBytes), add_huge);
                        else
                                add_huge((GArray *) u->huge_per_node, p->huge_per_node);
                }
                if (!p->cpu_per_node)
                        u->cpu_per_node = NULL; /* spread over running, as for a lone one */
                else if (u->cpu_per_node)
                        np_node_cpu_add((GArray *) u->cpu_per_node, p->cpu_per_node);
                u->cpu += p->cpu;
                u->cpu_interval += MAX(p->cpu, p->cpu_interval);
                u->cpu_estimated = u->cpu_estimated || p->cpu_estimated;
                u->threads = u->threads && p->threads ? u->threads + p->threads : 0;
                u->mem += p->mem;
                u->interleaved += p->interleaved;
                u->balanced += p->balanced;
                u->kernel_migrated += p->kernel_migrated;
                u->kernel_churn += p->kernel_churn;
                u->kernel_churn_usec = MAX(u->kernel_churn_usec, p->kernel_churn_usec);
                u->memory_only = u->memory_only && p->memory_only;
                /* every CPU for the group when one member may use every CPU */
                u->runs_on = u->runs_on && p->runs_on ? mask_union(g, u->runs_on, p->runs_on) : NULL;
                u->stuck += p->stuck;
                u->running = mask_union(g, u->running, p->running);
                u->current = mask_union(g, u->current, p->current);
                if (!u->left)
                        u->left = p->left;
                u->since_move_usec = MIN(u->since_move_usec, p->since_move_usec);
                u->failed += p->failed;
                u->failed_full |= p->failed_full;
                u->failed_moves = MAX(u->failed_moves, p->failed_moves);
                if (hold_rank(p->hold) > hold_rank(u->hold)) {
                        u->hold = p->hold;
                        u->cgroup = p->cgroup;
                }
        }
}

void np_policy_groups_clear(NpPolicyGroups *g) {
        g_array_unref(g->merged);
        g_free(g->slot_of);
        g_free(g->size);
        g_ptr_array_unref(g->masks);
        g_ptr_array_unref(g->arrays);
}
