/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_mask_parse(): node and CPU lists ("0-3,7") from sysfs, status,
 * the configuration (ReservedCPUs=) and the state file. A parsed list
 * formats back to a list that parses to the same mask. */
#include <errno.h>

#include "fuzz.h"
#include "np-nodemask.h"

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
                NP_MASK_FOREACH (b, m) {
                        FUZZ_ASSERT((unsigned) b <= NP_MASK_MAX_ID);
                        FUZZ_ASSERT(g_array_index(ids, guint32, n) == (guint32) b);
                        if (n < 64) { /* nth and ord are linear: the first few */
                                FUZZ_ASSERT(np_mask_nth(m, n) == b);
                                FUZZ_ASSERT(np_mask_ord(m, (unsigned) b) == (int) n);
                        }
                        FUZZ_ASSERT((unsigned long) b < nbits);
                        FUZZ_ASSERT(words[b / (8 * sizeof(unsigned long))] &
                                    (1UL << (b % (8 * sizeof(unsigned long)))));
                        n++;
                }
                FUZZ_ASSERT(n == w);
                FUZZ_ASSERT(w == 0 || np_mask_last(m) == np_mask_nth(m, w - 1));
        }
        return 0;
}
