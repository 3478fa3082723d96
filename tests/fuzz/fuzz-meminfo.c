/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_meminfo_value(): /sys/devices/system/node/nodeN/meminfo and
 * /proc/meminfo, for every key the daemon reads. */
#include <errno.h>

#include "fuzz.h"
#include "np-topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const keys[] = { "MemTotal", "MemFree", "Inactive(file)", "HugePages_Total", "Node" };
        g_autofree char *buf = NULL;

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
                uint64_t v = 0;
                int r = np_parse_meminfo_value(buf, keys[i], &v);
                FUZZ_ASSERT(r == 0 || r == -ENOENT || r == -EINVAL);
        }
        return 0;
}
