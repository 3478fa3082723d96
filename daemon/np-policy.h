/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The placement policy: a pure function, a snapshot of the machine and its
 * candidate processes in, one decision per process out. No I/O, no clock,
 * no daemon state: np-snapshot.c builds the snapshot, np-decide.c carries
 * out the decisions; the unit tests call it with struct literals.
 *
 * The ledger. Every node has a CPU and a memory capacity at
 * TargetUtilization: cpu_capacity x T% CPUs and mem_total x T% bytes. What
 * is used on a node is what the samples say (CPUs busy, memory not free)
 * minus what the candidates use there now (their CPU spread over the nodes
 * their threads ran on, their pages where numa_maps says), so every
 * candidate is counted once, where the decision puts it. Decisions are made
 * in this order, each committing its process to the ledger:
 *
 *   1. processes that stay where they are whatever the load, and the room
 *      reservations hold (np-reserve.h): pinned by Place(), excluded, narrowed by someone else (foreign), moving now,
 *      moved less than MinSecondsBetweenMoves ago, interleaved with
 *      KeepInterleaved=yes, or whose memory is unknown;
 *   2. processes the policy placed earlier stay while their nodes hold them
 *      (with a hysteresis margin, so noise does not move them); a placed
 *      process whose nodes became crowded or that grew past them is
 *      re-placed, preferring supersets of its nodes (adding a neighbour
 *      moves no page), never back to the nodes it just left unless those
 *      have the room by the same margin;
 *   3. the other candidates: first those already local (below), which
 *      keep their nodes before anyone else is placed; then the rest,
 *      biggest memory first: one whose memory is at
 *      least MemoryLocalityTarget % on the nodes its threads run on, on
 *      nodes with room, is left alone; the others get the smallest node set
 *      that holds their memory and CPU demand (nodes without memory are
 *      never a target, nodes without CPUs add memory but no CPUs), chosen
 *      by, in order: most of its pages already there (fewest bytes to
 *      move, within 2% of its memory), nearest nodes (sum of distances),
 *      most room left (every set chosen from holds it at
 *      TargetUtilization: more room decides only between sets as near),
 *      the nodes its threads run on (before room when the kernel's NUMA
 *      balancing is on: it moves pages to the threads); a process
 *      whose demand needs every node is left spread (do no harm), and so
 *      is one that needs several when the kernel's balancing is on and
 *      its busy threads work on their own pages (thread_workers: their
 *      homes, np-thread-homes.h, make each thread local); when nothing
 *      fits it is left where it is (NOFIT).
 *
 * Hugetlb pages come from the nodes' pools, not from their free memory: a
 * process's hugetlb bytes (huge_per_node) are counted against the free huge
 * pages of their size on the nodes of a set (its own pages already there
 * are its own), never against memory, and a set whose pools cannot take
 * them all does not hold it (grown to a bigger set that does, else NOFIT):
 * half a guest is never moved. Its other memory counts as above.
 *
 * So two big processes are never put on the same node when another fits,
 * and the daemon's own earlier decisions hold until the load really changes.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "np-nodemask.h"
#include "np-reason.h"
#include "np-numa-maps.h"
#include "np-sample.h"

typedef struct {
        unsigned id;
        double cpu_capacity; /* CPUs usable by placed processes (ReservedCPUs taken out) */
        double cpu_busy; /* CPUs busy over the last interval, every process */
        uint64_t mem_total; /* bytes; 0 = no memory (never a target) */
        uint64_t mem_free; /* bytes free (page cache that can be dropped counts as free) */
        uint64_t mem_free_now; /* bytes free right now (MemFree): what a move can fill; 0 = mem_free */
        const GArray *distances; /* NpDistance (np-topology.h) to every node, may be NULL */
        NpHugePool huge[NP_HUGE_SIZES_MAX]; /* its free hugetlb pages by page size; a size not
                                             * listed has none free */
        unsigned n_huge;
} NpPolicyNode;

typedef enum {
        NP_HOLD_NONE, /* a candidate the policy may place */
        NP_HOLD_PLACED, /* placed by the policy earlier (current = its target) */
        NP_HOLD_PINNED, /* Place(): never touched */
        NP_HOLD_EXCLUDED, /* Exclude= / Exclude() */
        NP_HOLD_FOREIGN, /* CPUs or nodes narrowed by someone else */
        NP_HOLD_MOVING, /* a move of it is queued or running */
        NP_HOLD_RESERVED, /* not a process: room an answer of Advise() holds on current
                           * (cpu, mem), counted there like a process moving there */
} NpPolicyHold;

typedef struct {
        int pid;
        double cpu; /* CPUs it uses */
        double cpu_interval; /* CPUs it used over the last interval, which the nodes' cpu_busy
                              * include (cpu may be less: the lower of two measurements);
                              * counted as at least cpu */
        bool cpu_estimated; /* cpu is not settled yet: its CPU time over its life so far (a
                             * process seen for the first time) or one measurement while its
                             * memory grew (np_process_cpu_settled()) */
        bool growing; /* its resident memory grew since the measurement before: a start */
        unsigned threads; /* its threads (0 = unknown): it never needs more CPUs than that */
        uint64_t mem; /* bytes (numa_maps total, else RSS) */
        uint64_t interleaved; /* bytes in VMAs with an interleave policy */
        uint64_t balanced; /* bytes the kernel's NUMA balancing can move (default policy, not hugetlb) */
        double locality_before; /* its locality at the numa_maps read before the last, < 0 = none */
        uint64_t kernel_migrated; /* bytes of it the kernel's NUMA balancing moved so far (known
                                   * while cpu_estimated, else 0) */
        uint64_t kernel_churn; /* bytes of it the kernel's NUMA balancing moved over the last
                                * NP_POLICY_CHURN_WINDOW_USEC, or over less (since its start,
                                * or its first reading) */
        uint64_t kernel_churn_usec; /* the time kernel_churn covers */
        bool thread_workers; /* its busy threads work on their own pages (np-policy-threads.h):
                              * with the kernel's NUMA balancing on, each gets a node of its own
                              * (np-thread-homes.h) instead of the process a set of nodes */
        bool thread_faults_pending; /* the kernel's NUMA balancing (on) has not counted enough of
                                     * its busy threads' faults yet to tell whether they work on
                                     * their own pages, or its threads are not measured yet (a
                                     * young process): it is not placed on several nodes before
                                     * they are */
        bool memory_only; /* PLACED: only its memory is held on current, its threads run
                           * on runs_on (NP_REASON_KERNEL_CHURN) */
        const NpMask *runs_on; /* memory_only: the nodes whose CPUs its threads may use; NULL =
                                * every CPU */
        const GArray *per_node; /* NpNodeBytes where its pages are; NULL = unknown */
        const GArray *huge_per_node; /* NpHugeBytes: the part of per_node in hugetlb pages, by
                                      * page size; NULL = none */
        const NpMask *running; /* nodes its busy threads last ran on (may be NULL) */
        const GArray *cpu_per_node; /* NpNodeCpu: where its CPU use is; NULL = spread over running */
        const NpMask *current; /* nodes it is confined to (placed, pinned, moving), else NULL */
        const NpMask *left; /* the nodes it left at its last move, or NULL */
        uint64_t stuck; /* bytes outside current that its last move there left where they
                         * were (pages other processes map too, with MoveSharedPages=no):
                         * not counted against its locality there */
        uint64_t since_move_usec; /* time since its last move; UINT64_MAX = never moved */
        uint64_t failed; /* bytes its last move could not move, 0 = none */
        bool failed_full; /* because its target was full (else: pages in use) */
        unsigned failed_moves; /* its last moves in a row that failed on pages: the next one
                                * waits np_policy_move_wait_usec() */
        NpPolicyHold hold;
        const char *cgroup; /* its cgroup (cpuset v1 or unified v2 path); NULL or "" = unknown:
                             * a foreign Decision names it when it is not the root */
        unsigned group; /* 0, or the same number for processes placed as one (a
                         * Groups= cgroup, a systemd unit): see np_policy_decide() */
        const char *group_name; /* with group: its name in the Decision (a Groups= cgroup, a unit,
                                 * shm:...) */
        bool group_unit; /* with group: it is a systemd unit */
} NpPolicyProcess;

typedef struct {
        unsigned target_utilization; /* percent, 1..100 */
        unsigned memory_locality_target; /* percent, 1..100 */
        uint64_t min_usec_between_moves;
        bool keep_interleaved;
        double own_cpu; /* CPUs the daemon itself used over the last interval (its moves run
                         * migrate_pages(2) on its worker thread): not load to place around */
        bool background_measured; /* background_before holds a measurement */
        double background_before; /* np_policy_background_cpu() of the round before: the
                                   * policy counts the lower of it and this round's, as it
                                   * sizes a process by the lower of its last two */
        bool kernel_balancing; /* the kernel's automatic NUMA balancing is on */
        bool confines_memory; /* the placement mechanism holds memory to nodes (not affinity) */
} NpPolicyParams;

typedef enum {
        NP_DECISION_KEEP, /* leave it where it is (reason says why) */
        NP_DECISION_MOVE, /* place it on `nodes` */
        NP_DECISION_NOFIT, /* it should move but nothing has room: left where it is */
} NpDecisionKind;

typedef struct {
        int pid;
        NpDecisionKind kind;
        NpMask *nodes; /* MOVE: the target; NOFIT: the nodes that would be needed (may be NULL); KEEP: NULL */
        /* MOVE: its place among the round's moves (1 = first). Each move
         * counts on the room the moves before it leave on their nodes, so
         * they must be carried out in this order; a member joining its
         * group's nodes comes after all of them. 0 for KEEP and NOFIT. */
        unsigned order;
        bool memory_only; /* MOVE: its memory only; its threads run on runs_on */
        NpMask *runs_on; /* memory_only: the nodes whose CPUs its threads may use (the nodes it
                          * was placed on, and `nodes`); NULL = every CPU */
        NpReason reason; /* why: np_reason_render() words it for the log and the Decision property */
} NpDecision;

void np_decision_free(NpDecision *d);

/* How long after its last move a process may move again: min_usec (MinSecondsBetweenMoves=),
 * doubled for each of its last moves in a row that failed on pages (its
 * target had no room), at most NP_POLICY_MAX_BACKOFF doublings. */
#define NP_POLICY_MAX_BACKOFF 4
uint64_t np_policy_move_wait_usec(uint64_t min_usec, unsigned failed_moves);

/* Locality that rose by at least this much from one numa_maps read to the
 * next: the kernel's NUMA balancing is moving the process's pages (said in
 * its Decision). */
#define NP_POLICY_KERNEL_RISING 0.02

/* A candidate whose CPU use is not measured yet (its first sight) is
 * decided at once, not at its follow-up scan, when the kernel's NUMA
 * balancing (on) can move most of its memory and has already moved at
 * least this share of it: the kernel moves it anyway, and every second of
 * waiting lets the scheduler take its threads (and the pages following
 * them) to nodes the policy will not keep. */
#define NP_POLICY_KERNEL_BEGAN 0.01

/* A process that runs on every node and needs more than one (or that the
 * policy placed whole on several), whose pages the kernel's NUMA balancing
 * moved, over the last NP_POLICY_CHURN_WINDOW_USEC (since its start when it
 * is younger), more than NP_POLICY_CHURN_SHARE times its memory is moved
 * back and forth after threads the scheduler keeps moving, not made local:
 * the policy holds its memory on the nodes that fit it (the kernel then
 * moves none of it) and leaves its threads where they run. A process the
 * kernel makes local moves each page once, at most its memory, however
 * short the time. */
#define NP_POLICY_CHURN_WINDOW_USEC (60 * G_USEC_PER_SEC)
#define NP_POLICY_CHURN_SHARE 1.5

/* The margin of the ledger's hysteresis, as a share of a node's capacity. */
#define NP_POLICY_HYSTERESIS 0.10

/* The share of a node's memory that pages moved in never fill: the kernel's
 * own reserves (its watermarks) and room for what runs there to allocate.
 * A move is planned, and started, only when the pages that come in fit in
 * the node's MemFree less this. */
#define NP_POLICY_MEM_RESERVE 0.05

/*
 * Decide for every process of `procs` (n_procs of them) on `nodes`. Returns
 * a GPtrArray of NpDecision*, one per process, in the order of `procs`.
 * Deterministic: the same snapshot gives the same decisions.
 *
 * Processes with the same non-zero `group` are decided as one process whose
 * demand is their sum (CPU, memory, pages per node; the union of the nodes
 * they run on and are confined to; the shortest time since a move) and
 * every member gets the group's decision. The group is held by its firmest
 * member's hold: moving, then pinned, then excluded, then placed, then
 * foreign (a sibling narrowed by the daemon's own values on the unit is not
 * foreign to it; a foreign group's Decision names the member narrowed). A member held by nothing of its own, in a group
 * kept where another member is placed or moving, joins it: a MOVE to the group's nodes (NP_REASON_JOIN_GROUP).
 */
GPtrArray *np_policy_decide(const NpPolicyNode *nodes, guint n_nodes, const NpPolicyProcess *procs, guint n_procs,
                            const NpPolicyParams *params);

/*
 * The background: the CPUs busy on `nodes` over the last interval that
 * neither the candidates of `procs` (each at least its cpu, see
 * cpu_interval; reservations not at all) nor the daemon itself
 * (params->own_cpu) used. Nothing confines it, so the ledger spreads it
 * over the nodes by their CPUs, and a process that fills one node's CPUs
 * may go there when the rest of the machine has room for that node's share
 * (the scheduler moves it). Remember it for the next round's
 * background_before. Never negative.
 */
double np_policy_background_cpu(const NpPolicyNode *nodes, guint n_nodes, const NpPolicyProcess *procs, guint n_procs,
                                const NpPolicyParams *params);

/* What an advice's nodes offer (np_policy_advise()). */
typedef struct {
        bool fits; /* they have the room at TargetUtilization */
        bool beyond_machine; /* the job is bigger than every node together at TargetUtilization */
        double short_cpus; /* CPUs the nodes lack for it at TargetUtilization (0 when it fits) */
        double short_bytes; /* bytes they lack for it */
} NpAdviceFit;

/* The least CPU demand of an advised job: a job runs somewhere, so every
 * answer holds a node with CPUs (a memory-only node is never the answer
 * alone, a node without memory never in it). */
#define NP_POLICY_ADVISE_MIN_CPU 0.01

/*
 * Advice for a job not started yet (Advise(), numad -w): the smallest set
 * of nodes with room for `cpus` CPUs and `bytes` of memory at
 * TargetUtilization once every process of `procs` is counted where it is
 * now (reservations, NP_HOLD_RESERVED, where they hold room), preferring
 * nearness, then room. When nothing has room, the nodes that come closest:
 * as many as the job needs on the idle machine (every node with memory when
 * it is bigger than the machine), grown from the node with the most room
 * by nearness, then room. *fit (may be NULL) says which. NULL only when no
 * node has memory. Caller frees.
 */
NpMask *np_policy_advise(const NpPolicyNode *nodes, guint n_nodes, const NpPolicyProcess *procs, guint n_procs,
                         const NpPolicyParams *params, double cpus, uint64_t bytes, NpAdviceFit *fit);
