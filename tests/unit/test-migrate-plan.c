/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration planner against the orders printed in seed 003 and against
 * an independent model of the kernel loop, exhaustively on 6 nodes.
 */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "np-migrate-plan.h"
#include "np-test-api.h"

static NpMask *mask(const char *list) {
        NpMask *m = NULL;
        g_assert_cmpint(np_mask_parse(list, &m), ==, 0);
        return m;
}

/* Plan from/to given as kernel lists, formatted as "7 -> 4\n...". */
static char *plan_text(const char *from, const char *to, bool skip) {
        g_autoptr(NpMask) f = mask(from);
        g_autoptr(NpMask) t = mask(to);
        g_autoptr(GArray) plan = np_plan_migration(f, t, skip);
        return np_plan_format(plan);
}

static void check(const char *from, const char *to, bool skip, const char *expected) {
        g_autofree char *got = plan_text(from, to, skip);
        if (g_strcmp0(got, expected) != 0)
                g_test_message("%s -> %s (skip=%d):\n got:\n%s expected:\n%s", from, to, skip, got, expected);
        g_assert_cmpstr(got, ==, expected);
}

/* ---- seed 003, before the patch (rule off) ---------------------------- */

static void test_seed_before_patch(void) {
        /* "Migrating 7 to 4 ..." */
        check("0-7", "3,4", false, "7 -> 4\n6 -> 3\n5 -> 4\n4 -> 3\n1 -> 4\n3 -> 4\n0 -> 3\n2 -> 3\n");
        /* numad trace, nodes (0-7) to (1,3) */
        check("0-7", "1,3", false, "7 -> 3\n6 -> 1\n5 -> 3\n4 -> 1\n2 -> 1\n1 -> 3\n0 -> 1\n");
        /* (0-7) to (1,4-5) */
        check("0-7", "1,4-5", false, "7 -> 4\n6 -> 1\n3 -> 1\n2 -> 5\n1 -> 4\n0 -> 1\n");
        /* (0-7) to (1-3,5) */
        check("0-7", "1-3,5", false, "7 -> 5\n6 -> 3\n5 -> 2\n3 -> 5\n2 -> 3\n1 -> 2\n0 -> 1\n4 -> 1\n");
}

/* ---- seed 003, after the patch (rule on) ------------------------------ */

static void test_seed_after_patch(void) {
        check("0-7", "3,4", true, "7 -> 4\n6 -> 3\n5 -> 4\n2 -> 3\n1 -> 4\n0 -> 3\n");
        check("0-7", "5,7", true, "6 -> 5\n4 -> 5\n3 -> 7\n2 -> 5\n1 -> 7\n0 -> 5\n");
        check("0-7", "1,3,5", true, "7 -> 3\n6 -> 1\n4 -> 3\n2 -> 5\n0 -> 1\n");
        check("0-7", "1,3,5,7", true, "6 -> 5\n4 -> 1\n2 -> 5\n0 -> 1\n");
}

static void test_seed_equal_weight(void) {
        /* |from| == |to|: the layout is preserved either way */
        check("2-4", "3-5", false, "4 -> 5\n3 -> 4\n2 -> 3\n");
        check("2-4", "3-5", true, "4 -> 5\n3 -> 4\n2 -> 3\n");
}

/* ---- edge cases ------------------------------------------------------- */

static void test_trivial(void) {
        check("", "0-3", true, "");
        check("", "0-3", false, "");
        check("0-3", "", true, "");
        check("0-3", "", false, "");
        check("0-3", "0-3", false, "");
        check("0-3", "0-3", true, "");
        check("1", "1", true, "");
        check("1", "2", true, "1 -> 2\n");
        /* rule on, everything already allowed: nothing moves */
        check("3,4", "0-7", true, "");
        /* rule off: a layout-preserving shuffle inside the target */
        check("3,4", "0-7", false, "3 -> 0\n4 -> 1\n");
}

static void test_remap(void) {
        g_autoptr(NpMask) from = mask("0-7");
        g_autoptr(NpMask) to = mask("1,4,5");
        g_autoptr(NpMask) empty = np_mask_new();

        static const unsigned expect[8] = { 1, 4, 5, 1, 4, 5, 1, 4 };
        for (unsigned s = 0; s < 8; s++)
                g_assert_cmpuint(np_node_remap(s, from, to), ==, expect[s]);

        /* not in from, or empty to: the node itself */
        g_assert_cmpuint(np_node_remap(9, from, to), ==, 9);
        g_assert_cmpuint(np_node_remap(3, from, empty), ==, 3);
        g_assert_cmpuint(np_node_remap(3, empty, to), ==, 3);
}

static void test_sparse_and_high_ids(void) {
        /* ordinals, not ids, matter: 0,65,130 -> 200. 200 is never a
         * pending source, so every scan stops at the first one. */
        check("0,65,130", "200", true, "0 -> 200\n65 -> 200\n130 -> 200\n");
        check("0,65,130", "200", false, "0 -> 200\n65 -> 200\n130 -> 200\n");
        /* equal weights across word boundaries: a chain */
        check("63,64,127", "64,127,128", false, "127 -> 128\n64 -> 127\n63 -> 64\n");
        check("63,64,127", "64,127,128", true, "127 -> 128\n64 -> 127\n63 -> 64\n");
        /* the seed's 0-7 -> {3,4} relabelled to sparse ids above 64 */
        check("10,70,100,129,300,513,700,1023", "129,300", true,
              "1023 -> 300\n700 -> 129\n513 -> 300\n100 -> 129\n70 -> 300\n10 -> 129\n");
        check("10,70,100,129,300,513,700,1023", "129,300", false,
              "1023 -> 300\n700 -> 129\n513 -> 300\n300 -> 129\n70 -> 300\n129 -> 300\n"
              "10 -> 129\n100 -> 129\n");
}

/* ---- the present-driven variant --------------------------------------- */

static char *present_text(const char *from, const char *to, bool skip, const char *present) {
        g_autoptr(NpMask) f = mask(from);
        g_autoptr(NpMask) t = mask(to);
        g_autoptr(NpMask) p = mask(present);
        g_autoptr(GArray) plan = np_plan_migration_present(f, t, skip, p);
        return np_plan_format(plan);
}

static void test_present(void) {
        g_autofree char *a = present_text("0-7", "3,4", true, "0,5");
        g_assert_cmpstr(a, ==, "5 -> 4\n0 -> 3\n");

        /* pages everywhere: the full plan */
        g_autofree char *b = present_text("0-7", "3,4", false, "0-7");
        g_autofree char *full = plan_text("0-7", "3,4", false);
        g_assert_cmpstr(b, ==, full);

        /* nowhere (or only on nodes that do not move): nothing */
        g_autofree char *c = present_text("0-7", "3,4", true, "");
        g_assert_cmpstr(c, ==, "");
        g_autofree char *d = present_text("0-7", "3,4", true, "3,4");
        g_assert_cmpstr(d, ==, "");

        /* a chain: 4 -> 5, 3 -> 4, 2 -> 3 with pages only on 3: node 4 is
         * empty when 4 -> 5 runs, and 2 never held anything */
        g_autofree char *e = present_text("2-4", "3-5", true, "3");
        g_assert_cmpstr(e, ==, "3 -> 4\n");

        /* a source that receives pages from an earlier pair is kept: without
         * the rule, 0-7 -> {3,4} with pages only on 7 moves 7 -> 4, then
         * 4 -> 3 (4 now holds them), then 3 -> 4 (3 now holds them) */
        g_autofree char *f = present_text("0-7", "3,4", false, "7");
        g_assert_cmpstr(f, ==, "7 -> 4\n4 -> 3\n3 -> 4\n");

        /* the same idea across sparse ids */
        g_autofree char *g = present_text("63,64,127", "64,127,128", false, "63");
        g_assert_cmpstr(g, ==, "63 -> 64\n");
        g_autofree char *h = present_text("63,64,127", "64,127,128", false, "127,300");
        g_assert_cmpstr(h, ==, "127 -> 128\n");
}

static void test_format(void) {
        g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(NpMovePair));
        g_autofree char *empty = np_plan_format(plan);
        g_assert_cmpstr(empty, ==, "");

        NpMovePair p = { .src = 7, .dst = 4 };
        g_array_append_val(plan, p);
        p = (NpMovePair){ .src = 1000, .dst = 0 };
        g_array_append_val(plan, p);
        g_autofree char *s = np_plan_format(plan);
        g_assert_cmpstr(s, ==, "7 -> 4\n1000 -> 0\n");
}

/* ---- exhaustive cross-check against an independent model ------------- */

/*
 * A second, deliberately plain rendering of do_migrate_pages()'s loop on
 * 32-bit masks, written from the kernel source rather than from the module
 * above: remap by counting bits, iterate with a while over bit positions.
 * Writes pairs as src * 100 + dst into out, returns how many.
 */
static unsigned model_remap(unsigned s, uint32_t from, uint32_t to) {
        if (!(from & (1u << s)) || to == 0)
                return s;
        unsigned n = (unsigned) __builtin_popcount(from & ((1u << s) - 1));
        n %= (unsigned) __builtin_popcount(to);
        unsigned bit = 0;
        for (;;) {
                if (to & (1u << bit)) {
                        if (n == 0)
                                return bit;
                        n--;
                }
                bit++;
        }
}

static int model_plan(uint32_t from, uint32_t to, bool rule, int *out) {
        int count = 0;
        uint32_t tmp = from;
        bool differ = __builtin_popcount(from) != __builtin_popcount(to);

        while (tmp) {
                int source = -1, dest = 0;
                unsigned s = 0;
                while (s < 32) {
                        if (tmp & (1u << s)) {
                                if (rule && differ && (to & (1u << s))) {
                                        s++;
                                        continue;
                                }
                                unsigned d = model_remap(s, from, to);
                                if (d != s) {
                                        source = (int) s;
                                        dest = (int) d;
                                        if (!(tmp & (1u << d)))
                                                break;
                                }
                        }
                        s++;
                }
                if (source == -1)
                        break;
                tmp &= ~(1u << source);
                out[count++] = source * 100 + dest;
        }
        return count;
}

static NpMask *mask_from_bits(uint32_t bits, unsigned scale, unsigned offset) {
        NpMask *m = np_mask_new();
        for (unsigned b = 0; b < 32; b++)
                if (bits & (1u << b))
                        np_mask_set(m, b * scale + offset);
        return m;
}

static void cross_check(unsigned scale, unsigned offset) {
        unsigned cases = 0;

        for (uint32_t from = 1; from < 64; from++)
                for (uint32_t to = 1; to < 64; to++)
                        for (int rule = 0; rule <= 1; rule++) {
                                int want[64];
                                int n = model_plan(from, to, rule, want);

                                g_autoptr(NpMask) f = mask_from_bits(from, scale, offset);
                                g_autoptr(NpMask) t = mask_from_bits(to, scale, offset);
                                g_autoptr(GArray) plan = np_plan_migration(f, t, rule);

                                if ((int) plan->len != n)
                                        g_test_message("from %#x to %#x rule %d: %u pairs, model %d", from, to, rule,
                                                       plan->len, n);
                                g_assert_cmpint((int) plan->len, ==, n);
                                for (int i = 0; i < n; i++) {
                                        const NpMovePair *p = &g_array_index(plan, NpMovePair, i);
                                        unsigned ws = (unsigned) want[i] / 100, wd = (unsigned) want[i] % 100;
                                        g_assert_cmpuint(p->src, ==, ws * scale + offset);
                                        g_assert_cmpuint(p->dst, ==, wd * scale + offset);
                                }
                                cases++;
                        }
        g_assert_cmpuint(cases, ==, 63 * 63 * 2);
}

static void test_exhaustive_6_nodes(void) {
        cross_check(1, 0);
}

/* The same 7938 cases with node k renamed to 61 * k + 3: sparse ids that
 * straddle word boundaries (3, 64, 125, 186, 247, 308). */
static void test_exhaustive_sparse(void) {
        cross_check(61, 3);
}

/* The model itself reproduces the seed (so both were checked by hand). */
static void test_model_seed(void) {
        int out[32];
        int n = model_plan(0xff, (1u << 3) | (1u << 4), true, out);
        static const int want[] = { 704, 603, 504, 203, 104, 3 };
        g_assert_cmpint(n, ==, (int) G_N_ELEMENTS(want));
        for (int i = 0; i < n; i++)
                g_assert_cmpint(out[i], ==, want[i]);

        n = model_plan(0x1c, 0x38, true, out);
        static const int want2[] = { 405, 304, 203 };
        g_assert_cmpint(n, ==, (int) G_N_ELEMENTS(want2));
        for (int i = 0; i < n; i++)
                g_assert_cmpint(out[i], ==, want2[i]);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);

        g_test_add_func("/migrate-plan/seed/before-patch", test_seed_before_patch);
        g_test_add_func("/migrate-plan/seed/after-patch", test_seed_after_patch);
        g_test_add_func("/migrate-plan/seed/equal-weight", test_seed_equal_weight);
        g_test_add_func("/migrate-plan/trivial", test_trivial);
        g_test_add_func("/migrate-plan/remap", test_remap);
        g_test_add_func("/migrate-plan/sparse-and-high-ids", test_sparse_and_high_ids);
        g_test_add_func("/migrate-plan/present", test_present);
        g_test_add_func("/migrate-plan/format", test_format);
        g_test_add_func("/migrate-plan/model-seed", test_model_seed);
        g_test_add_func("/migrate-plan/exhaustive-6-nodes", test_exhaustive_6_nodes);
        g_test_add_func("/migrate-plan/exhaustive-sparse", test_exhaustive_sparse);

        return g_test_run();
}
