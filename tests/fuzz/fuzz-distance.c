/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_distance_line(): nodeN/distance against an online node set.
 * Input: the online node list, a newline, then the distance line. */
#include <errno.h>

#include "fuzz.h"
#include "np-topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autofree char *buf = NULL;
        g_autoptr(NpMask) online = NULL;
        g_autoptr(GArray) out = g_array_new(FALSE, TRUE, sizeof(NpDistance));
        char *nl;

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        nl = strchr(buf, '\n');
        if (!nl)
                return 0;
        *nl = '\0';
        if (np_mask_parse(buf, &online) < 0 || np_mask_weight(online) > 4096)
                return 0;
        if (np_parse_distance_line(nl + 1, online, out) == 0) {
                int node = np_mask_first(online);
                FUZZ_ASSERT(out->len == np_mask_weight(online));
                for (guint i = 0; i < out->len; i++, node = np_mask_next(online, node))
                        FUZZ_ASSERT(g_array_index(out, NpDistance, i).node == (unsigned) node);
        } else
                FUZZ_ASSERT(out->len == 0);
        return 0;
}
