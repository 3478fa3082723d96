/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration planner: a faithful model of the pair selection loop of the
 * kernel's do_migrate_pages() (mm/mempolicy.c), including the
 * skip-overlapping-nodes rule of seed 003. Pure: no I/O.
 */
#include "np-migrate-plan.h"

#include "np-test-api.h"

unsigned np_node_remap(unsigned node, const NpMask *from, const NpMask *to) {
        g_return_val_if_fail(from, node);
        g_return_val_if_fail(to, node);

        unsigned w = np_mask_weight(to);
        if (w == 0)
                return node;

        int n = np_mask_ord(from, node);
        if (n < 0)
                return node;

        int d = np_mask_nth(to, (unsigned) n % w);
        g_assert(d >= 0);
        return (unsigned) d;
}

static void plan_append(GArray *plan, unsigned src, unsigned dst) {
        NpMovePair p = { .src = src, .dst = dst };
        g_array_append_val(plan, p);
}

GArray *np_plan_migration(const NpMask *from, const NpMask *to, bool skip_overlap) {
        GArray *plan = g_array_new(FALSE, FALSE, sizeof(NpMovePair));

        g_return_val_if_fail(from, plan);
        g_return_val_if_fail(to, plan);

        /* The rule only applies when the relative layout cannot be kept. */
        bool skip = skip_overlap && np_mask_weight(from) != np_mask_weight(to);

        /* node_remap() does not change while the loop runs, so the sources
         * that would move are known up front, in ascending order. Sources
         * that are skipped or map to themselves never move but stay pending
         * for the whole loop, exactly as in the kernel. */
        g_autoptr(GArray) movers = g_array_new(FALSE, FALSE, sizeof(NpMovePair));
        g_autoptr(GArray) to_ids = np_mask_to_u32_array(to);
        unsigned ord = 0; /* s is the ord-th node of from: node_remap() in O(1) */
        NP_MASK_FOREACH (s, from) {
                unsigned n = ord++;
                if (skip && np_mask_test(to, (unsigned) s))
                        continue;
                unsigned d = to_ids->len ? g_array_index(to_ids, guint32, n % to_ids->len) : (unsigned) s;
                if (d != (unsigned) s)
                        plan_append(movers, (unsigned) s, d);
        }

        g_autoptr(NpMask) pending = np_mask_copy(from);
        g_autofree bool *done = g_new0(bool, movers->len + 1);

        for (;;) {
                int pick = -1;

                /* Scan the pending sources upward, remember the last moving
                 * pair, stop at one whose destination is not pending. */
                for (guint i = 0; i < movers->len; i++) {
                        if (done[i])
                                continue;
                        pick = (int) i;
                        if (!np_mask_test(pending, g_array_index(movers, NpMovePair, i).dst))
                                break;
                }
                if (pick < 0)
                        break;

                const NpMovePair *p = &g_array_index(movers, NpMovePair, pick);
                done[pick] = true;
                np_mask_clear(pending, p->src);
                g_array_append_val(plan, *p);
        }

        return plan;
}

GArray *np_plan_migration_present(const NpMask *from, const NpMask *to, bool skip_overlap, const NpMask *present) {
        GArray *plan = g_array_new(FALSE, FALSE, sizeof(NpMovePair));

        g_return_val_if_fail(from, plan);
        g_return_val_if_fail(to, plan);
        g_return_val_if_fail(present, plan);

        g_autoptr(GArray) full = np_plan_migration(from, to, skip_overlap);
        g_autoptr(NpMask) holding = np_mask_copy(present);

        /* A kept pair empties its source and fills its destination. */
        for (guint i = 0; i < full->len; i++) {
                const NpMovePair *p = &g_array_index(full, NpMovePair, i);
                if (!np_mask_test(holding, p->src))
                        continue;
                np_mask_clear(holding, p->src);
                np_mask_set(holding, p->dst);
                g_array_append_val(plan, *p);
        }

        return plan;
}

char *np_plan_format(const GArray *plan) {
        GString *s = g_string_new(NULL);

        if (plan)
                for (guint i = 0; i < plan->len; i++) {
                        const NpMovePair *p = &g_array_index(plan, NpMovePair, i);
                        g_string_append_printf(s, "%u -> %u\n", p->src, p->dst);
                }

        return g_string_free(s, FALSE);
}
