/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_numa_maps(): /proc/PID/numa_maps (file names in it are the
 * process owner's choice). Checks the totals add up. */
#include "fuzz.h"
#include "np-sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autofree char *buf = NULL;
        NpNumaMaps m;

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        if (np_parse_numa_maps(buf, &m) == 0) {
                uint64_t sum = 0;
                int prev = -1;
                g_autoptr(NpMask) nodes = np_numa_maps_nodes(&m);

                for (guint i = 0; i < m.per_node->len; i++) {
                        const NpNodeBytes *nb = &g_array_index(m.per_node, NpNodeBytes, i);
                        FUZZ_ASSERT((int) nb->node > prev); /* sorted, no duplicates */
                        FUZZ_ASSERT(nb->bytes > 0);
                        FUZZ_ASSERT(np_numa_maps_node_bytes(&m, nb->node) == nb->bytes);
                        FUZZ_ASSERT(np_mask_test(nodes, nb->node));
                        prev = (int) nb->node;
                        sum += nb->bytes;
                }
                FUZZ_ASSERT(sum == m.total_bytes);
                FUZZ_ASSERT(np_mask_weight(nodes) == m.per_node->len);
                FUZZ_ASSERT(m.huge_bytes <= m.total_bytes);
                FUZZ_ASSERT(m.interleaved_bytes <= m.total_bytes);
                /* balanced lines are neither huge nor interleaved */
                FUZZ_ASSERT(m.balanced_bytes + m.interleaved_bytes <= m.total_bytes);
                FUZZ_ASSERT(m.balanced_bytes + m.huge_bytes <= m.total_bytes);
                np_numa_maps_clear(&m);
                np_numa_maps_clear(&m);
        }
        return 0;
}
