/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_numa_maps(): /proc/PID/numa_maps (file names in it are the
 * process owner's choice). Checks the totals add up. */
#include "fuzz.h"
#include "np-numa-maps.h"
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
                /* the file lines are balanced lines with pages */
                uint64_t files = 0;
                for (guint i = 0; m.files && i < m.files->len; i++) {
                        FUZZ_ASSERT(g_array_index(m.files, NpNumaMapsFile, i).bytes > 0);
                        files += g_array_index(m.files, NpNumaMapsFile, i).bytes;
                }
                FUZZ_ASSERT(files <= m.balanced_bytes);
                FUZZ_ASSERT(!m.files || m.files->len > 0);
                /* the hugetlb part by page size and node: sorted, within each node's bytes */
                uint64_t huge = 0;
                for (guint i = 0; m.huge_per_node && i < m.huge_per_node->len; i++) {
                        const NpHugeBytes *h = &g_array_index(m.huge_per_node, NpHugeBytes, i);
                        if (i > 0) {
                                const NpHugeBytes *p = &g_array_index(m.huge_per_node, NpHugeBytes, i - 1);
                                FUZZ_ASSERT(p->page_bytes < h->page_bytes ||
                                            (p->page_bytes == h->page_bytes && p->node < h->node));
                        }
                        FUZZ_ASSERT(h->bytes > 0 && h->bytes % h->page_bytes == 0);
                        FUZZ_ASSERT(h->bytes <= np_numa_maps_node_bytes(&m, h->node));
                        huge += h->bytes;
                }
                FUZZ_ASSERT(huge == m.huge_bytes);
                FUZZ_ASSERT(!m.huge_per_node || m.huge_per_node->len > 0);
                np_numa_maps_clear(&m);
                np_numa_maps_clear(&m);
        }
        return 0;
}
