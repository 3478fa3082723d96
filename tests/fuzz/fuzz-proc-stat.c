/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_proc_stat(): /proc/stat's per-CPU tick lines. */
#include "fuzz.h"
#include "np-sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autofree char *buf = NULL;
        g_autoptr(GArray) ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        if (np_parse_proc_stat(buf, ticks) == 0) {
                FUZZ_ASSERT(ticks->len > 0);
                for (guint i = 0; i < ticks->len; i++) {
                        const NpCpuTicks *t = &g_array_index(ticks, NpCpuTicks, i);
                        FUZZ_ASSERT(t->busy <= t->total); /* no wrap-around */
                }
        } else
                FUZZ_ASSERT(ticks->len == 0);
        return 0;
}
