/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Why the policy decided what it did, as codes and the numbers they need
 * (pure). np_reason_render() is the one place that writes the Decision's
 * English; everything else carries and compares codes and numbers.
 */
#include <stdbool.h>
#include <stdint.h>

#include "np-nodemask.h"

/* What is short on a set of nodes that does not hold a process. */
typedef enum {
        NP_SHORT_NONE,
        NP_SHORT_MEMORY, /* others, its, capacity: bytes */
        NP_SHORT_CPU, /* others, its, capacity: CPUs */
        NP_SHORT_HUGE, /* its: hugetlb bytes in page_bytes pages; capacity: bytes of them free there */
} NpShortageKind;

typedef struct {
        NpShortageKind kind;
        double others; /* what the others use there */
        double background; /* CPU: of others, the background's share (np_policy_background_cpu()), */
        double background_elsewhere; /* of which the other nodes have room for this much */
        double its; /* what it needs */
        double capacity; /* what the set has at TargetUtilization (HUGE: free) */
        uint64_t page_bytes; /* HUGE: the page size */
        unsigned target_utilization; /* MEMORY, CPU: percent */
} NpShortage;

/* What the kernel's NUMA balancing does about it. */
typedef enum {
        NP_KERNEL_NONE, /* off, or nothing to say */
        /* leading a placement's context (NP_CONTEXT_SHARE; the first two
         * also NP_CONTEXT_APART and NP_CONTEXT_SCATTERED) */
        NP_KERNEL_INTERLEAVED, /* it does not move interleaved memory */
        NP_KERNEL_CANNOT_MOVE, /* it cannot move most of its memory (a policy, huge pages, shmem) */
        NP_KERNEL_BEGAN, /* it has begun moving it (kernel_moved bytes): decided at first sight */
        NP_KERNEL_MOVING, /* it is moving the memory to the threads: kernel_before */
        NP_KERNEL_NOT_LOCAL, /* it has not made it local */
        /* ending NP_REASON_LOCAL */
        NP_KERNEL_KEEPS_LOCAL, /* it keeps it local */
        NP_KERNEL_EVERY_NODE, /* it runs on every node: the kernel places its pages among them */
} NpReasonKernel;

/* What a placement outcome (NP_REASON_CROWDED_LOCAL .. NP_REASON_PLACE)
 * follows from. */
typedef enum {
        NP_CONTEXT_NONE,
        NP_CONTEXT_SHARE, /* share of its memory on `on`, where it runs (kernel leads it) */
        NP_CONTEXT_CROWDED, /* placed on `on`, which is now crowded: `crowded` */
        NP_CONTEXT_SCATTERED, /* it runs on every node (`on`), one holds its demand (`cpu`) */
        NP_CONTEXT_APART, /* its threads (a group's: its processes) run on more nodes (`on`)
                           * than its demand (`cpu`) needs, its memory already on the nodes
                           * that hold it */
        NP_CONTEXT_CROWDED_MEMORY, /* its memory held on `on`, which is now crowded: `crowded` */
} NpReasonContext;

typedef enum {
        NP_REASON_NONE,
        /* held whatever the load (KEEP) */
        NP_REASON_PINNED, /* pinned on `nodes` by Place() */
        NP_REASON_EXCLUDED,
        NP_REASON_FOREIGN, /* narrowed by someone else, in `cgroup` */
        NP_REASON_MOVING, /* moving to `nodes` */
        NP_REASON_RESERVED, /* room on `nodes` held by an advice */
        NP_REASON_MAPS_UNKNOWN, /* numa_maps unreadable */
        NP_REASON_NO_MEMORY,
        NP_REASON_INTERLEAVED, /* KeepInterleaved=yes */
        NP_REASON_GROWING, /* still growing: cpu */
        NP_REASON_CPU_UNMEASURED, /* CPU use not measured yet: cpu */
        NP_REASON_CPU_UNMEASURED_SPREAD, /* the kernel moves it, but by its CPU so far (cpu) no
                                          * single node holds it: at the follow-up */
        NP_REASON_BACKOFF, /* its last moves failed: bytes, full, since, wait, min_wait, doublings */
        NP_REASON_RECENTLY_MOVED, /* since, min_wait */
        /* placed earlier on `nodes` */
        NP_REASON_PLACED_ROOM, /* which has room */
        NP_REASON_PLACED_STUCK, /* which has room; its last move left `bytes` elsewhere */
        NP_REASON_PLACED_FAILED, /* its last move could not move `bytes` (full) */
        NP_REASON_PLACED_REST, /* only `share` there: moving the rest (MOVE) */
        NP_REASON_PLACED_MEMORY, /* its memory held on `nodes`, its threads anywhere (KEEP) */
        /* already local: `share` on `on`, where it runs; kernel ends it */
        NP_REASON_LOCAL,
        /* placement outcomes, after a context */
        NP_REASON_CROWDED_LOCAL, /* `nodes` would only take nodes from it (KEEP) */
        NP_REASON_CPU_EVERY_NODE, /* cpu need every node: left spread (KEEP) */
        NP_REASON_NOFIT, /* no set has room for cpu, bytes (huge_bytes of it hugetlb) (NOFIT) */
        NP_REASON_WAIT_FREE, /* `nodes` would hold it, not free yet (KEEP) */
        NP_REASON_EVERY_NODE, /* cpu and bytes need every node: left spread (KEEP) */
        NP_REASON_THREAD_WORKERS, /* it needs `nodes` (a set of several) and its busy threads work
                                   * on their own pages: left spread (KEEP) */
        NP_REASON_THREAD_FAULTS_PENDING, /* it needs `nodes` (a set of several), its busy threads'
                                          * faults are not counted yet: left where it is (KEEP) */
        NP_REASON_STILL_BEST, /* its nodes `nodes` are still the best (KEEP) */
        NP_REASON_KERNEL_FINISHING, /* the kernel moved more of it since the read before than is
                                     * left to move (KEEP) */
        NP_REASON_LEFT_TO_KERNEL, /* the kernel is moving it to the nodes it runs on; `nodes`, the
                                   * set with room at target_utilization, are others (KEEP) */
        NP_REASON_PLACE, /* place on `nodes`: dist_lo, dist_hi, bytes to move; alone_node, alone (MOVE) */
        NP_REASON_PLACE_MEMORY, /* its memory goes to `nodes` (dist_lo, dist_hi, bytes to move), its
                                 * threads run where they may (MOVE) */
        /* the kernel moved kernel_moved bytes of its `mem` in the last window_usec: its
         * memory goes to `nodes` (bytes to move), its threads stay where they may run (MOVE) */
        NP_REASON_KERNEL_CHURN,
        /* its group's other processes are placed on (or moving to) `nodes`:
         * it joins them there, bytes to move (MOVE) */
        NP_REASON_JOIN_GROUP,
        /* notes leading the Decision after the CPUs of its nodes `nodes`
         * changed from cpus_before to cpus (np-hotplug.h) */
        NP_REASON_HOTPLUG_RELEASED, /* none left online: released */
        NP_REASON_HOTPLUG_RELEASE_FAILED, /* none left online: released, not all put back: error */
        NP_REASON_HOTPLUG_CONFINE_FAILED, /* confining it again failed: released: error */
        NP_REASON_HOTPLUG_NO_CPU, /* pinned on nodes without online CPUs: runs on cpus */
        NP_REASON_HOTPLUG_CONFINED, /* confined to cpus */
} NpReasonCode;

typedef struct {
        NpReasonCode code;
        NpReasonContext context;
        NpReasonKernel kernel;
        unsigned group_members; /* > 1: decided with the other processes of its group */
        char *group; /* with group_members: the group's name (a Groups= cgroup, a unit, shm:...),
                      * may be NULL */
        bool group_unit; /* the group is a systemd unit (named by `group`) */
        int member; /* FOREIGN in a group: the member someone else narrowed, 0 = itself */
        NpMask *nodes; /* the code's nodes (owned, may be NULL) */
        NpMask *on; /* LOCAL, SHARE: where it runs; CROWDED: where it is placed (owned) */
        NpMask *runs_on; /* KERNEL_CHURN, PLACE_MEMORY, PLACED_MEMORY: the nodes its threads
                          * may run on (owned); NULL = every CPU */
        double share; /* LOCAL, SHARE: its memory on `on`; PLACED_REST: on `nodes` (0..1) */
        double kernel_before; /* KERNEL_MOVING: that share at the numa_maps read before */
        uint64_t kernel_moved; /* KERNEL_BEGAN: bytes of it the kernel moved so far; KERNEL_CHURN:
                                * in the last window_usec */
        uint64_t mem; /* KERNEL_CHURN: its memory */
        uint64_t window_usec; /* KERNEL_CHURN */
        NpShortage crowded; /* CROWDED: what `on` lacks */
        double cpu; /* CPUs it uses */
        uint64_t bytes; /* see the codes */
        uint64_t huge_bytes; /* NOFIT: its memory in hugetlb pages */
        bool full; /* BACKOFF, PLACED_FAILED: its target was full (else: pages in use) */
        uint64_t since_usec; /* BACKOFF, RECENTLY_MOVED: since its last move */
        uint64_t wait_usec; /* BACKOFF: how long it waits */
        uint64_t min_wait_usec; /* BACKOFF, RECENTLY_MOVED: MinSecondsBetweenMoves= */
        unsigned doublings; /* BACKOFF: of min_wait_usec */
        unsigned target_utilization; /* NOFIT: percent */
        unsigned dist_lo, dist_hi; /* PLACE: distances within `nodes` (0: one node) */
        unsigned alone_node; /* PLACE, when alone.kind is not NONE: the node of `nodes` with most */
        NpShortage alone; /* of its pages, and why it alone is too small */
        char *cgroup; /* FOREIGN: its cgroup (owned; NULL, "" or "/": not named) */
        NpMask *cpus_before, *cpus; /* HOTPLUG_*: the CPUs it was held on, and now (owned) */
        char *error; /* HOTPLUG_*_FAILED: what failed (owned) */
} NpReason;

/* Free what r owns and zero it. */
void np_reason_clear(NpReason *r);
/* A deep copy of src into dst (uninitialised). */
void np_reason_copy(NpReason *dst, const NpReason *src);
/* The Decision text of r. Caller frees. */
char *np_reason_render(const NpReason *r);
