/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-nodemask: parse/format round trips, set algebra, ids
 * above 64, bad input. */
#include <errno.h>
#include <glib.h>
#include <string.h>

#include "np-nodemask.h"
#include "np-test-api.h"

static void assert_roundtrip(const char *in, const char *expect) {
        g_autoptr(NpMask) m = NULL;
        g_assert_cmpint(np_mask_parse(in, &m), ==, 0);
        g_autofree char *s = np_mask_format(m);
        g_assert_cmpstr(s, ==, expect);
        /* formatting is canonical: parsing it again gives the same mask */
        g_autoptr(NpMask) m2 = NULL;
        g_assert_cmpint(np_mask_parse(s, &m2), ==, 0);
        g_assert_true(np_mask_equal(m, m2));
}

static void test_roundtrip(void) {
        assert_roundtrip("0-3,7", "0-3,7");
        assert_roundtrip("0-3,7\n", "0-3,7");
        assert_roundtrip("", "");
        assert_roundtrip("\n", "");
        assert_roundtrip("5", "5");
        assert_roundtrip("0,1,2,3", "0-3");
        assert_roundtrip("3,1,2", "1-3");
        assert_roundtrip("0-3,2-5", "0-5");
        assert_roundtrip(" 0 - 3 , 7 ", "0-3,7");
        assert_roundtrip("0,2,5,9", "0,2,5,9");
        assert_roundtrip("0,2,5,9,70", "0,2,5,9,70");
        assert_roundtrip("63-64", "63-64");
        assert_roundtrip("60-130", "60-130");
        assert_roundtrip("1023", "1023");
        assert_roundtrip("0-1,4-5,1000-1001", "0-1,4-5,1000-1001");
        /* runs through whole words, ending at and just past their edges */
        assert_roundtrip("0-127", "0-127");
        assert_roundtrip("0-128", "0-128");
        assert_roundtrip("64-191,193", "64-191,193");
        assert_roundtrip("1-63,64-200,255-256", "1-200,255-256");
}

/* nth, to_u32_array and to_ulongs across several words agree with the bits */
static void test_words(void) {
        g_autoptr(NpMask) m = NULL;
        g_assert_cmpint(np_mask_parse("3,64-130,1000", &m), ==, 0);
        g_autoptr(GArray) ids = np_mask_to_u32_array(m);
        g_assert_cmpuint(ids->len, ==, 69);
        g_assert_cmpuint(g_array_index(ids, guint32, 0), ==, 3);
        g_assert_cmpuint(g_array_index(ids, guint32, 1), ==, 64);
        g_assert_cmpuint(g_array_index(ids, guint32, 67), ==, 130);
        g_assert_cmpuint(g_array_index(ids, guint32, 68), ==, 1000);
        for (guint i = 0; i < ids->len; i++)
                g_assert_cmpint(np_mask_nth(m, i), ==, (int) g_array_index(ids, guint32, i));
        g_assert_cmpint(np_mask_nth(m, 69), ==, -1);
        unsigned long nbits = 0;
        g_autofree unsigned long *v = np_mask_to_ulongs(m, 8, &nbits);
        const unsigned lbits = 8 * sizeof(unsigned long);
        g_assert_cmpuint(nbits, ==, (1000 / lbits + 1) * lbits);
        for (unsigned b = 0; b < nbits; b++)
                g_assert_cmpint(!!(v[b / lbits] & (1UL << (b % lbits))), ==, np_mask_test(m, b));
}

static void assert_bad(const char *in, int err) {
        NpMask *sentinel = (NpMask *) 0x1;
        NpMask *m = sentinel;
        g_assert_cmpint(np_mask_parse(in, &m), ==, err);
        g_assert_true(m == sentinel); /* untouched on error */
}

static void test_bad_input(void) {
        assert_bad("3-1", -EINVAL);
        assert_bad("a", -EINVAL);
        assert_bad("1,,2", -EINVAL);
        assert_bad("1-", -EINVAL);
        assert_bad(",", -EINVAL);
        assert_bad("1,", -EINVAL);
        assert_bad(",1", -EINVAL);
        assert_bad("-1", -EINVAL);
        assert_bad("1-2-3", -EINVAL);
        assert_bad("1 2", -EINVAL);
        assert_bad("0x3", -EINVAL);
        assert_bad("+1", -EINVAL);
        assert_bad("1;2", -EINVAL);
        assert_bad("99999999999999999999999", -ERANGE);
        assert_bad("1048577", -ERANGE);
        g_assert_cmpint(np_mask_parse(NULL, &(NpMask *){ NULL }), ==, -EINVAL);
}

static void test_ops(void) {
        g_autoptr(NpMask) a = NULL, b = NULL;
        g_assert_cmpint(np_mask_parse("0-3,70", &a), ==, 0);
        g_assert_cmpint(np_mask_parse("2-5", &b), ==, 0);

        g_assert_cmpuint(np_mask_weight(a), ==, 5);
        g_assert_true(np_mask_test(a, 70));
        g_assert_false(np_mask_test(a, 69));
        g_assert_false(np_mask_test(a, 100000));
        g_assert_cmpint(np_mask_first(a), ==, 0);
        g_assert_cmpint(np_mask_last(a), ==, 70);
        g_assert_cmpint(np_mask_next(a, 3), ==, 70);
        g_assert_cmpint(np_mask_next(a, 70), ==, -1);
        g_assert_cmpint(np_mask_nth(a, 4), ==, 70);
        g_assert_cmpint(np_mask_nth(a, 5), ==, -1);
        g_assert_cmpint(np_mask_ord(a, 70), ==, 4);
        g_assert_cmpint(np_mask_ord(a, 5), ==, -1);
        g_assert_true(np_mask_intersects(a, b));

        g_autoptr(NpMask) u = np_mask_copy(a);
        np_mask_or(u, b);
        g_autofree char *su = np_mask_format(u);
        g_assert_cmpstr(su, ==, "0-5,70");

        g_autoptr(NpMask) i = np_mask_copy(a);
        np_mask_and(i, b);
        g_autofree char *si = np_mask_format(i);
        g_assert_cmpstr(si, ==, "2-3");

        g_autoptr(NpMask) d = np_mask_copy(a);
        np_mask_andnot(d, b);
        g_autofree char *sd = np_mask_format(d);
        g_assert_cmpstr(sd, ==, "0-1,70");

        g_assert_true(np_mask_subset(i, a));
        g_assert_false(np_mask_subset(a, b));

        /* equality ignores the allocated size */
        g_autoptr(NpMask) big = np_mask_new();
        np_mask_set(big, 200);
        np_mask_clear(big, 200);
        g_autoptr(NpMask) empty = np_mask_new();
        g_assert_true(np_mask_equal(big, empty));
        g_assert_true(np_mask_empty(big));
        g_assert_cmpint(np_mask_first(big), ==, -1);
        g_assert_cmpint(np_mask_last(empty), ==, -1);
        g_autofree char *se = np_mask_format(empty);
        g_assert_cmpstr(se, ==, "");

        np_mask_assign(big, b);
        g_assert_true(np_mask_equal(big, b));

        unsigned ids[] = { 9, 0, 5, 2, 70 };
        g_autoptr(NpMask) f = np_mask_from_array(ids, G_N_ELEMENTS(ids));
        g_autofree char *sf = np_mask_format(f);
        g_assert_cmpstr(sf, ==, "0,2,5,9,70");

        unsigned long nbits = 0;
        g_autofree unsigned long *v = np_mask_to_ulongs(f, 8, &nbits);
        g_assert_cmpuint(nbits % (sizeof(unsigned long) * 8), ==, 0);
        g_assert_cmpuint(nbits, >=, 71);
        g_assert_cmpuint(v[0] & 0xffff, ==, (1u << 0) | (1u << 2) | (1u << 5) | (1u << 9));
        g_assert_true((v[70 / (sizeof(unsigned long) * 8)] >> (70 % (sizeof(unsigned long) * 8))) & 1);

        g_autoptr(GArray) arr = np_mask_to_u32_array(f);
        g_assert_cmpuint(arr->len, ==, 5);
        g_assert_cmpuint(g_array_index(arr, guint32, 4), ==, 70);

        unsigned long nb0 = 0;
        g_autofree unsigned long *v0 = np_mask_to_ulongs(empty, 0, &nb0);
        g_assert_cmpuint(nb0, ==, sizeof(unsigned long) * 8);
        g_assert_cmpuint(v0[0], ==, 0);
}

/* np_mask_set_range() against setting bit by bit, across word edges. */
static void test_set_range(void) {
        static const unsigned edges[] = { 0, 1, 62, 63, 64, 65, 127, 128, 129, 200, 1000 };

        for (guint i = 0; i < G_N_ELEMENTS(edges); i++)
                for (guint j = 0; j < G_N_ELEMENTS(edges); j++) {
                        g_autoptr(NpMask) a = np_mask_new();
                        g_autoptr(NpMask) b = np_mask_new();
                        unsigned lo = edges[i], hi = edges[j];

                        np_mask_set(a, 300);
                        np_mask_set(b, 300);
                        np_mask_set_range(a, lo, hi);
                        for (unsigned k = lo; k <= hi; k++)
                                np_mask_set(b, k);
                        g_assert_true(np_mask_equal(a, b));
                        g_assert_cmpuint(np_mask_weight(a), ==,
                                         (hi >= lo ? hi - lo + 1 : 0) + (300 < lo || 300 > hi || hi < lo));
                }
        {
                g_autoptr(NpMask) m = NULL;
                g_assert_cmpint(np_mask_parse("0-1048576", &m), ==, 0);
                g_assert_cmpuint(np_mask_weight(m), ==, 1048577);
        }
}

/* Encode the list `in` as systemd's "ay" and compare with the expected bytes;
 * decode it back and compare with the mask. */
static void assert_bytes(const char *in, const guint8 *expect, size_t n) {
        g_autoptr(NpMask) m = NULL;
        g_assert_cmpint(np_mask_parse(in, &m), ==, 0);
        g_autoptr(GByteArray) a = np_mask_to_bytes(m);
        g_assert_cmpmem(a->data, a->len, expect, n);
        g_autoptr(NpMask) back = NULL;
        g_assert_cmpint(np_mask_from_bytes(a->data, a->len, &back), ==, 0);
        g_assert_true(np_mask_equal(m, back));
}

static void test_bytes(void) {
        assert_bytes("", NULL, 0);
        assert_bytes("0", (const guint8[]){ 0x01 }, 1);
        assert_bytes("7", (const guint8[]){ 0x80 }, 1);
        assert_bytes("8", (const guint8[]){ 0x00, 0x01 }, 2);
        assert_bytes("0-3", (const guint8[]){ 0x0f }, 1);
        assert_bytes("1,9,63,64", (const guint8[]){ 0x02, 0x02, 0, 0, 0, 0, 0, 0x80, 0x01 }, 9);

        /* 1024 bits: 128 bytes of 0xff */
        guint8 full[128];
        memset(full, 0xff, sizeof full);
        assert_bytes("0-1023", full, sizeof full);

        /* trailing zero bytes are tolerated on decode */
        g_autoptr(NpMask) m = NULL;
        const guint8 padded[] = { 0x05, 0x00, 0x00, 0x00 };
        g_assert_cmpint(np_mask_from_bytes(padded, sizeof padded, &m), ==, 0);
        g_autofree char *s = np_mask_format(m);
        g_assert_cmpstr(s, ==, "0,2");

        /* all-zero array = empty mask */
        g_autoptr(NpMask) z = NULL;
        const guint8 zeros[] = { 0, 0 };
        g_assert_cmpint(np_mask_from_bytes(zeros, sizeof zeros, &z), ==, 0);
        g_assert_true(np_mask_empty(z));

        /* an id above NP_MASK_MAX_ID is refused, out untouched */
        size_t big = NP_MASK_MAX_ID / 8 + 2;
        g_autofree guint8 *huge = g_new0(guint8, big);
        huge[big - 1] = 0x01;
        NpMask *sentinel = (NpMask *) 0x1, *o = sentinel;
        g_assert_cmpint(np_mask_from_bytes(huge, big, &o), ==, -ERANGE);
        g_assert_true(o == sentinel);

        /* round trip of a sparse large mask */
        g_autoptr(NpMask) r = NULL;
        g_assert_cmpint(np_mask_parse("0,2,5,9,70,511-513,1000", &r), ==, 0);
        g_autoptr(GByteArray) ra = np_mask_to_bytes(r);
        g_assert_cmpuint(ra->len, ==, 1000 / 8 + 1);
        g_autoptr(NpMask) rb = NULL;
        g_assert_cmpint(np_mask_from_bytes(ra->data, ra->len, &rb), ==, 0);
        g_assert_true(np_mask_equal(r, rb));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/nodemask/roundtrip", test_roundtrip);
        g_test_add_func("/nodemask/words", test_words);
        g_test_add_func("/nodemask/bad-input", test_bad_input);
        g_test_add_func("/nodemask/ops", test_ops);
        g_test_add_func("/nodemask/set-range", test_set_range);
        g_test_add_func("/nodemask/systemd-bytes", test_bytes);
        return g_test_run();
}
