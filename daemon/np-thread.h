/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * A thread's CPU affinity as an NpMask: sched_getaffinity(2) and
 * sched_setaffinity(2) for one thread id (0: the calling thread), with a
 * CPU set as large as the kernel's. The backends use it on the threads they
 * place; the mover's worker on itself (np-mover.h). And the CPU time of the
 * calling thread or of the whole daemon. And dropping a capability from
 * the calling thread's effective set.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "np-nodemask.h"

/* The CPUs thread `tid` may run on, in a new mask in *out: 0 or -errno. */
int np_thread_get_affinity(pid_t tid, NpMask **out);
/* Let thread `tid` run on `cpus` only: 0 or -errno (-EINVAL when none of
 * them is online and allowed by its cpuset). */
int np_thread_set_affinity(pid_t tid, const NpMask *cpus);

/* User+system CPU time in microseconds of RUSAGE_THREAD (the calling
 * thread) or RUSAGE_SELF (every thread of the daemon, exited ones too);
 * 0 when getrusage(2) fails. */
uint64_t np_cpu_usec(int who);

/* Clear capability `cap` (CAP_*) from the effective set of the calling
 * thread only: capset(2) on thread id 0 changes that thread's credentials,
 * the daemon's other threads keep theirs. It stays permitted, so the thread
 * could raise it again. 0 (also when it was not effective) or -errno. */
int np_thread_drop_effective_cap(int cap);
/* Raise (on) or clear `cap` in the calling thread's effective set, the
 * same way: 0 (also when it already was so), -EPERM when raising a
 * capability the thread is not permitted, or -errno. */
int np_thread_set_effective_cap(int cap, bool on);
/* Whether `cap` is in the calling thread's effective set: 1, 0 or -errno. */
int np_thread_has_effective_cap(int cap);
