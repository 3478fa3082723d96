/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_pid_stat(): /proc/PID/stat, whose comm holds any bytes a
 * user puts there (prctl(PR_SET_NAME), the executable's name). */
#include "fuzz.h"
#include "np-sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autofree char *buf = NULL;
        NpPidStat st;

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        memset(&st, 0x5a, sizeof(st));
        if (np_parse_pid_stat(buf, &st) == 0) {
                FUZZ_ASSERT(st.pid >= 0);
                FUZZ_ASSERT(memchr(st.comm, '\0', sizeof(st.comm)) != NULL);
                FUZZ_ASSERT(strlen(st.comm) < size);
        }
        return 0;
}
