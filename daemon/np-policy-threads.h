/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Thread homes: a pure function, like np-policy.h, that the manager applies
 * after the policy's round (np-decide.c). No I/O.
 *
 * A process whose CPU demand needs several nodes is spread over them, and
 * as a whole it is local nowhere. When its busy threads each work on pages
 * of their own (the shape of numa02 of the AutoNUMA benchmarks: a parallel
 * job whose threads sweep their own slices), each thread can be local: kept
 * on one node, the kernel's NUMA balancing moves the pages it alone touches
 * there, once. Left to the scheduler, which moves the threads between
 * nodes, the kernel moves the same pages after them again and again.
 *
 * What tells such threads: the kernel's NUMA hinting faults of each thread,
 * by the node the faulting page was on, private (the thread was the last
 * to touch the page) or shared (/proc/PID/task/TID/sched). Homes are given
 * when at least two threads are busy, they faulted at least
 * NP_HOMES_MIN_FAULTS times each on average (the kernel has looked), and
 * at least NP_HOMES_PRIVATE_SHARE of their faults were private.
 *
 * The same rule serves the busy threads of a group's processes on several
 * nodes (numa01's shape: a process and its child on shared memory, each
 * with a node's CPU). A thread the kernel counted no
 * faults for (faults NULL: all it touches is memory the kernel does not
 * scan, such as shared memory without a policy of its own) counts among
 * the threads for the average, and is homed after the others.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "np-nodemask.h"
#include "np-policy.h"

/* The share of the busy threads' hinting faults that must be private. */
#define NP_HOMES_PRIVATE_SHARE 0.8
/* The faults a busy thread needs on average before its homes are judged
 * (the kernel decays the counts, halving them at each of its scan
 * periods: a steady sweeper keeps thousands). */
#define NP_HOMES_MIN_FAULTS 200
/* When its home has no room for a thread, it stays unless another node is
 * less loaded by this share of its CPUs (the load of others is measured,
 * and noisy). */
#define NP_HOMES_LOAD_MARGIN 0.25

typedef struct {
        pid_t tid;
        double cpu; /* CPUs it used over the last interval */
        const GArray *faults; /* NpNodeFaults (np-sample.h); NULL = none */
        int home; /* the node it is kept on now, -1 = none */
        const GArray *pages; /* NpNodeBytes (np-numa-maps.h): where the pages it alone works on
                              * are now, when that is known (the only busy thread of a process
                              * in a group: the process's pages outside shared memory and the
                              * files it maps); NULL =
                              * its private faults tell, as they were when the kernel counted them */
} NpPolicyThread;

typedef struct {
        pid_t tid;
        unsigned node;
} NpThreadHome;

typedef enum {
        NP_HOMES_GIVEN, /* every busy thread has a home */
        NP_HOMES_FEW_THREADS, /* fewer than two busy threads */
        NP_HOMES_FEW_FAULTS, /* the kernel has not counted enough of their faults yet */
        NP_HOMES_SHARED, /* too many of their faults were on shared pages */
        NP_HOMES_ONE_NODE, /* they would all go to one node: the policy places it whole */
        NP_HOMES_NO_NODES, /* fewer than two nodes with CPUs and memory */
        NP_HOMES_UNMEASURED, /* its threads' CPU use is not measured yet (one reading) */
        NP_HOMES_OUTSIDE, /* a group's thread would need a node outside the group's nodes */
} NpHomesWhy;

/* Do a process's busy threads, which last ran on nodes with `cpus_there`
 * CPUs all told, run on those nodes alone? Where each thread last ran is
 * a moment; their CPU use `busy_cpu` is over the last interval. A use
 * larger than those CPUs (by more than NP_HOMES_CROWD_MARGIN of them) was
 * spent on other nodes too: the scheduler had just brought them
 * together. Pure. */
bool np_policy_threads_ran_there(double busy_cpu, guint cpus_there);
/* The share of the CPUs by which a use must exceed them (measurements
 * over an interval overshoot a little). */
#define NP_HOMES_CROWD_MARGIN 0.1

/* Do the busy threads `threads` (n) work on their own pages, by the rule
 * above? NP_HOMES_GIVEN when they do, else why not (FEW_THREADS,
 * FEW_FAULTS, SHARED). */
NpHomesWhy np_policy_threads_private(const NpPolicyThread *threads, guint n);

/*
 * Homes for the busy threads `threads` (n of them, each at least
 * NP_BUSY_THREAD_CPU) of one process, among `nodes` (n_nodes). `own`
 * (NpNodeCpu, may be NULL) is the process's CPU use by node, which is
 * taken out of each node's cpu_busy: the rest is the load of others. Nodes
 * without CPUs or memory are never a home. `prefer` (NULL: none) are the
 * nodes the process is placed on: a thread goes outside them only where
 * none of them has room for it; never when `confined` (its cpusets hold its
 * threads there), the homes then by room among them alone.
 *
 * Threads are taken most decided first (the largest share of their
 * pages, or of their private faults, on one node), then the busiest, then
 * by tid. A thread
 * kept on a node (its home) stays there, against any node as much of
 * `prefer` as it, while the node has room for it, and when it has none, unless another node is
 * less loaded by NP_HOMES_LOAD_MARGIN: the load and the thread's own use
 * are measured over an interval and noisy, and a new home moves its pages
 * again. Otherwise each goes to the node that, in order: has room for it
 * at target_utilization (percent) after the homes given before; is one of
 * `prefer`; has the most of its pages (its `pages` when known, else its
 * private faults: nothing to move there); has the least load; has the
 * lowest id. When no node
 * has room, the least loaded (as a share of its CPUs), then by the same
 * order.
 *
 * Returns a new GArray of NpThreadHome in the order of `threads`, and
 * *why NP_HOMES_GIVEN; NULL with *why saying why not (the reasons of
 * np_policy_threads_private(), ONE_NODE, NO_NODES). Deterministic.
 */
GArray *np_policy_thread_homes(const NpPolicyNode *nodes, guint n_nodes, const NpMask *prefer, bool confined,
                               const GArray *own, const NpPolicyThread *threads, guint n, unsigned target_utilization,
                               NpHomesWhy *why);

/* The homes (NpThreadHome) by thread id, "171 on 0, 172 on 1". Caller
 * frees. */
char *np_policy_homes_list(const GArray *homes);

/* What a Decision adds for them: "; its 2 busy threads work on their own
 * pages: each is kept on its own node (171 on 0, 172 on 1), where the
 * kernel's NUMA balancing moves them"; "on one node" instead of "on its
 * own node" when two of them share one. Caller frees. */
char *np_policy_homes_clause(const GArray *homes);

/* The same for the busy threads of a group's processes: "; the 2 busy
 * threads of its group work on their own pages: each is kept on its own
 * node (171 on 0, 205 on 1), where the kernel's NUMA balancing moves
 * them". Caller frees. */
char *np_policy_group_homes_clause(const GArray *homes);

/* What the rule is given for the busy threads `threads` (n), for the log:
 * "171 (0.60 CPUs, 5000 of 5000 faults private, most on 0; 16.0 MiB of
 * its own, most on 0; kept on 0), 205 (0.58 CPUs, no faults counted)";
 * "none" when n is 0. Caller frees. */
char *np_policy_threads_describe(const NpPolicyThread *threads, guint n);

/* The load of others the rule sees on each node of `nodes` (n_nodes) that
 * can be a home, `own` taken out (as np_policy_thread_homes()), for the
 * log: "0 0.31 of 1.00 CPUs, 1 0.02 of 1.00 CPUs". Caller frees. */
char *np_policy_threads_load_describe(const NpPolicyNode *nodes, guint n_nodes, const GArray *own);

/* "fewer than two busy threads", ...: why for the log. */
const char *np_homes_why_to_string(NpHomesWhy why);
