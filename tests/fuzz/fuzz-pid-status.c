/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_pid_status(): /proc/PID/status (VmRSS, HugetlbPages, Threads,
 * Uid and the allowed CPU and memory lists), np_parse_status_hugetlb(), and
 * np_parse_sched_numa_migrated() (a thread's sched file: the same
 * "key: value" lines). */
#include <errno.h>

#include "fuzz.h"
#include "np-sample.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autofree char *buf = NULL;
        NpPidStatus st;

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        if (np_parse_pid_status(buf, &st) == 0) {
                if (st.cpus_allowed)
                        (void) np_mask_weight(st.cpus_allowed);
                if (st.mems_allowed)
                        (void) np_mask_weight(st.mems_allowed);
                FUZZ_ASSERT(st.vm_rss_bytes % 1024 == 0);
                FUZZ_ASSERT(st.hugetlb_bytes % 1024 == 0);
                np_pid_status_clear(&st);
                FUZZ_ASSERT(st.cpus_allowed == NULL && st.mems_allowed == NULL);
        }
        /* the per-scan look at HugetlbPages alone: never more than it
         * parses, kB in bytes */
        uint64_t huge;
        if (np_parse_status_hugetlb(buf, &huge) == 0)
                FUZZ_ASSERT(huge % 1024 == 0);
        uint64_t migrated = 7;
        int r = np_parse_sched_numa_migrated(buf, &migrated);
        FUZZ_ASSERT(r == 0 || r == -ENOENT || r == -EINVAL);
        FUZZ_ASSERT(r == 0 || migrated == 7);
        return 0;
}
