/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A thread's CPU affinity as an NpMask, CPU time and effective capabilities.
 * See np-thread.h. */
#include "np-thread.h"

#include <errno.h>
#include <glib.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

int np_thread_get_affinity(pid_t tid, NpMask **out) {
        /* Grow the set until the kernel's cpumask fits (EINVAL = too small). */
        for (size_t ncpus = 1024; ncpus <= NP_MASK_MAX_ID; ncpus *= 2) {
                size_t size = CPU_ALLOC_SIZE(ncpus);
                cpu_set_t *set = CPU_ALLOC(ncpus);
                NpMask *m;

                if (!set)
                        return -ENOMEM;
                if (sched_getaffinity(tid, size, set) < 0) {
                        int r = -errno;
                        CPU_FREE(set);
                        if (r == -EINVAL)
                                continue;
                        return r;
                }
                m = np_mask_new();
                for (size_t c = 0; c < ncpus; c++)
                        if (CPU_ISSET_S(c, size, set))
                                np_mask_set(m, (unsigned) c);
                CPU_FREE(set);
                *out = m;
                return 0;
        }
        return -EINVAL;
}

int np_thread_set_affinity(pid_t tid, const NpMask *cpus) {
        unsigned long nbits = 0;
        g_autofree unsigned long *bits = np_mask_to_ulongs(cpus, 64, &nbits);

        /* A cpu_set_t is an array of unsigned long in the same bit order. */
        if (sched_setaffinity(tid, nbits / 8, (cpu_set_t *) bits) < 0)
                return -errno;
        return 0;
}

uint64_t np_cpu_usec(int who) {
        struct rusage ru;

        if (getrusage(who, &ru) < 0)
                return 0;
        return (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * G_USEC_PER_SEC +
                (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* The calling thread's capability sets (version 3: two 32-bit words) and
 * whether `cap` is effective in them: 1, 0 or -errno. */
static int caps_get(int cap, struct __user_cap_data_struct data[2]) {
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };

        if (cap < 0 || cap >= 64)
                return -EINVAL;
        if (syscall(SYS_capget, &hdr, data) < 0)
                return -errno;
        return !!(data[cap / 32].effective & (1u << (cap % 32)));
}

int np_thread_has_effective_cap(int cap) {
        struct __user_cap_data_struct data[2] = { 0 };
        return caps_get(cap, data);
}

int np_thread_drop_effective_cap(int cap) {
        return np_thread_set_effective_cap(cap, false);
}

int np_thread_set_effective_cap(int cap, bool on) {
        struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct data[2] = { 0 };
        int r = caps_get(cap, data);

        if (r < 0)
                return r;
        if (r == (int) on)
                return 0;
        if (on && !(data[cap / 32].permitted & (1u << (cap % 32))))
                return -EPERM;
        if (on)
                data[cap / 32].effective |= 1u << (cap % 32);
        else
                data[cap / 32].effective &= ~(1u << (cap % 32));
        /* the raw system call: glibc has no wrapper that would apply it to
         * every thread, and this must apply to the caller alone */
        if (syscall(SYS_capset, &hdr, data) < 0)
                return -errno;
        return 0;
}
