/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_mask_parse(): node and CPU lists ("0-3,7") from sysfs, status,
 * the configuration (ReservedCPUs=) and the state file. A parsed list
 * formats back to a list that parses to the same mask. */
#include <errno.h>

#include "fuzz.h"
#include "np-nodemask.h"

/* The ids strictly increasing and exactly the bits of words[]: a check
 * per id, left out of the coverage the fuzzer steers by (masks reach 2^20
 * ids, and the loop is the harness's, not the parser's). */
FUZZ_NO_COVERAGE static bool ids_match(const GArray *ids, const unsigned long *words, unsigned long nbits) {
        const unsigned lbits = 8 * sizeof(unsigned long);
        g_autofree unsigned long *again = g_new0(unsigned long, nbits / lbits);

        for (guint n = 0; n < ids->len; n++) {
                guint32 b = g_array_index(ids, guint32, n);
                if (b >= nbits || (n > 0 && b <= g_array_index(ids, guint32, n - 1)))
                        return false;
                again[b / lbits] |= 1UL << (b % lbits);
        }
        return memcmp(again, words, nbits / 8) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autofree char *buf = NULL;
        g_autoptr(NpMask) m = NULL;
        int r;

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        r = np_mask_parse(buf, &m);
        FUZZ_ASSERT(r == 0 || r == -EINVAL || r == -ERANGE);
        if (r == 0) {
                g_autofree char *text = np_mask_format(m);
                g_autoptr(NpMask) again = NULL;
                g_autoptr(GArray) ids = np_mask_to_u32_array(m);
                unsigned long nbits = 0;
                g_autofree unsigned long *words = np_mask_to_ulongs(m, 1, &nbits);
                unsigned w = np_mask_weight(m), n = 0;

                FUZZ_ASSERT(np_mask_parse(text, &again) == 0);
                FUZZ_ASSERT(np_mask_equal(m, again));
                FUZZ_ASSERT(ids->len == w);
                FUZZ_ASSERT(np_mask_empty(m) == (w == 0));
                FUZZ_ASSERT(ids_match(ids, words, nbits));
                for (n = 0; n < ids->len && n < 64; n++) { /* nth and ord: the first few */
                        unsigned b = g_array_index(ids, guint32, n);
                        FUZZ_ASSERT(b <= NP_MASK_MAX_ID && np_mask_test(m, b));
                        FUZZ_ASSERT(np_mask_nth(m, n) == (int) b);
                        FUZZ_ASSERT(np_mask_ord(m, b) == (int) n);
                }
                if (w > 0) /* np_mask_first/next/last against the ids */
                        FUZZ_ASSERT(np_mask_first(m) == (int) g_array_index(ids, guint32, 0) &&
                                    np_mask_next(m, np_mask_last(m)) == -1);
                FUZZ_ASSERT(w == 0 || np_mask_last(m) == np_mask_nth(m, w - 1));
        }
        return 0;
}
