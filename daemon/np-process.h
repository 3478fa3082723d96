/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * What the daemon knows of one process: what every scan reads (CPU use,
 * resident memory, comm), the details read for significant processes
 * (allowed CPUs and nodes, where its pages are, where its threads ran, its
 * cgroup and unit), and what the daemon did with it (state, target). Plus a
 * mask of the published properties that changed, for the bus layer: the
 * setters and readers here set it (and raise the owner's record); nothing
 * else writes it but the bus, which clears it.
 *
 * Reads go through np-sysroot (fixture trees in tests). No bus, no policy.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "np-maps-refresh.h"
#include "np-group.h"
#include "np-nodemask.h"
#include "np-policy-threads.h"
#include "np-proc-table.h"
#include "np-numa-maps.h"
#include "np-sample.h"
#include "np-shmaps.h"
#include "np-topology.h"

typedef enum {
        NP_PROC_OBSERVED, /* significant, sampled, left where it is */
        NP_PROC_PINNED, /* placed by Place(); held until Forget() */
        NP_PROC_PLACED, /* placed by the daemon's policy */
        NP_PROC_EXCLUDED, /* Exclude= or Exclude(): never touched */
        NP_PROC_FOREIGN, /* CPUs or memory nodes narrowed by someone else: left alone */
        NP_PROC_ADVISED, /* Mode=advise: the policy would place it on target */
        NP_PROC_NOFIT, /* should move, but no node set has room: left where it is */
} NpProcState;

/* "observed", "pinned", "placed", "excluded", "foreign", "advised", "nofit". */
const char *np_proc_state_to_string(NpProcState s);

/* The published properties of org.numaplaced1.Process that can change
 * (bits of NpProcess.changed). */
typedef enum {
        NP_PROCESS_COMM = 1u << 0,
        NP_PROCESS_CPU_USAGE = 1u << 1,
        NP_PROCESS_MEMORY_BYTES = 1u << 2,
        NP_PROCESS_MEMORY_PER_NODE = 1u << 3,
        NP_PROCESS_LOCALITY = 1u << 4,
        NP_PROCESS_TARGET_NODES = 1u << 5,
        NP_PROCESS_STATE = 1u << 6,
        NP_PROCESS_LAST_PLACED = 1u << 7,
        NP_PROCESS_CGROUP = 1u << 8,
        NP_PROCESS_UNIT = 1u << 9,
        NP_PROCESS_DECISION = 1u << 10,
        NP_PROCESS_GROUP = 1u << 11,
} NpProcessProp;

/* A shmem line of numa_maps this large has the process's maps read, to
 * know which object it is: its group then counts the object once (and
 * moves it once), also when it is too small to make a group
 * (NP_GROUP_MIN_SHARED_BYTES); smaller ones (IPC buffers) stay the
 * process's own pages. */
#define NP_SHM_MAPS_MIN_BYTES (1ull << 20)

/* Resident memory that grew by more than this share between two stat
 * reads: the process is still touching its memory (a start). */
#define NP_GROWING_SHARE 0.05

/* A thread counts as busy (for running_nodes) from this many CPUs. */
#define NP_BUSY_THREAD_CPU 0.1

/* One thread's CPU use over the interval before the last read of its
 * process's threads, and the node of the CPU it last ran on. */
typedef struct {
        pid_t tid;
        int node; /* -1 = unknown */
        double cpu; /* CPUs */
} NpThreadCpu;

/* One busy thread's NUMA hinting faults (np_process_read_thread_faults()). */
typedef struct {
        pid_t tid;
        int node; /* where it last ran, -1 = unknown */
        double cpu; /* CPUs, as in NpThreadCpu */
        GArray *faults; /* NpNodeFaults (np-sample.h), owned */
} NpThreadFaults;

void np_thread_faults_clear(NpThreadFaults *t);

typedef struct {
        int pid;
        uint64_t starttime; /* clock ticks after boot: identity with pid */
        char comm[NP_COMM_MAX];

        /* every scan */
        uint64_t cpu_ticks; /* utime+stime at the last scan */
        uint64_t sampled_usec; /* CLOCK_MONOTONIC of that sample */
        double cpu_usage; /* CPUs, over the last interval */
        bool cpu_estimated; /* cpu_usage is its CPU time over its life (first sight), not a measurement */
        unsigned cpu_measured; /* scans in a row with a measured CPU use, up to 2 */
        double cpu_prev; /* the measurement of the scan before (cpu_measured == 2) */
        bool cpu_prev_grew; /* cpu_prev was measured while it grew (grew then): its start */
        bool grew; /* its resident memory grew by more than NP_GROWING_SHARE since the
                    * stat read before: still starting (touching its memory) */
        unsigned followups; /* follow-up scans made for it (np-scan.h, NP_FOLLOWUP_USEC) */
        uint64_t rss_bytes;
        uint64_t hugetlb_bytes; /* hugetlb pages (HugetlbPages), not in rss_bytes: from the
                                 * table's look (np_proc_table_watch_hugetlb()) or status */
        uint64_t rss_shared_bytes; /* of rss_bytes, the file and shmem pages (statm's shared):
                                    * what it may share with others; 0 when unknown */
        unsigned threads;
        bool significant; /* published and sampled in detail */
        signed char may_group; /* it can count in a unit's or Groups= cgroup's group (np-scan.c):
                                * 1 yes, 0 no, -1 not known since its cgroup was read */
        bool group_significant; /* its group's summed demand passes the thresholds, and it
                                 * counts in it (np_classify_groups()) */
        bool seen; /* seen in the current scan */

        /* details (significant processes, or refreshed for an action) */
        NpMask *cpus_allowed; /* NULL until read */
        NpMask *mems_allowed; /* NULL until read */
        NpMask *running_nodes; /* nodes its busy threads last ran on (every thread's
                                * node when none is busy) */
        GArray *cpu_per_node; /* NpNodeCpu: its CPU use by node, from its threads'
                               * CPU time since the last read and their last CPU */
        GHashTable *thread_ticks; /* tid -> utime+stime at the last read */
        GArray *thread_cpu; /* NpThreadCpu: the CPU use of each thread measured at that read
                             * (its own stat; a process of one thread: the process's, which is
                             * its leader's); NULL = none, or a stat read of a process confined
                             * to one node (all its threads at once) */
        uint64_t threads_usec; /* CLOCK_MONOTONIC of that read, 0 = never */
        bool threads_from_stat; /* that read took the process's stat (one thread, or confined to one node): its
                                 * ticks include the threads that exited, a thread's do not */
        NpNumaMaps maps; /* where its pages are; empty until read */
        GArray *shmaps; /* NpShmap (np-shmaps.h): its shmem mappings from /proc/PID/maps, which
                         * say what object each of maps.shm is; read when maps.shm has a line
                         * of NP_SHM_MAPS_MIN_BYTES or more it does not list; NULL = none */
        GArray *file_maps; /* NpFileMap (np-shmaps.h): its file mappings by address, from the
                            * same read (also made when maps.files has such a line it does not
                            * list): those that may not be written leave maps.balanced_bytes;
                            * NULL = none */
        int maps_error; /* 0, or why numa_maps could not be read (-EACCES...) */
        NpMapsAge maps_age; /* when numa_maps was read (LocalityTimestamp), np-maps-refresh.h */
        uint64_t maps_reads; /* numa_maps reads by np_process_refresh() */
        bool pages_from_group; /* its group's pages come from its cgroup's memory.numa_stat
                                * (set by np-decide.c each scan): numa_maps is not read by
                                * age (np_process_refresh()) */
        NpDetailsAge details_age; /* when status, threads and cgroup were read, np-maps-refresh.h */
        double locality; /* share of memory on running_nodes, 0..1 */
        double locality_prev; /* locality at the numa_maps read before the last, -1 = none */
        uint64_t kernel_migrated_bytes; /* of its memory, what the kernel's NUMA balancing moved
                                         * (its threads' numa_pages_migrated), read while its CPU
                                         * use is not settled; 0 = none or unknown */
        char *cgroup; /* cpuset (v1) or unified (v2) path */
        char *systemd_cgroup; /* unified (v2) path, or name=systemd's on a v1 host; "" = none */
        char *unit; /* systemd unit from the cgroup path, or "" */

        /* what the daemon did */
        NpProcState state;
        NpMask *target; /* nodes it was placed on, or NULL */
        uint64_t last_placed_usec; /* CLOCK_REALTIME, 0 = never */
        uint64_t moved_usec; /* CLOCK_MONOTONIC of the last move, 0 = never */
        NpMask *left; /* the nodes it left at its last move, or NULL */
        uint64_t stuck_bytes; /* bytes its last move left outside target without failing on
                               * them (MoveSharedPages=no: pages other processes map too) */
        uint64_t failed_bytes; /* bytes its last move failed on */
        bool failed_full; /* ... because its target was full (ENOMEM), not busy pages */
        unsigned failed_moves; /* its last moves in a row that failed on pages (the policy's back-off) */
        NpMask *moving_to; /* a move of it is queued or running to these nodes */
        bool memory_only; /* placed: only its memory is held on target, its threads run on
                           * runs_on (NP_REASON_KERNEL_CHURN) */
        NpMask *runs_on; /* memory_only: the nodes whose CPUs its threads may use; NULL =
                          * every CPU */
        GArray *thread_homes; /* NpThreadHome (np-policy-threads.h): its busy threads the daemon
                               * keeps each on one node (np-thread-homes.h); NULL = none */
        bool threads_only; /* placed by its thread homes alone (no cpuset, no move of its
                            * memory): the policy judges it as if it were not placed */
        uint64_t homes_usec; /* CLOCK_MONOTONIC when its homes were last changed, 0 = none */
        uint64_t homes_migrated; /* kernel_migrated_bytes then */
        GArray *homes_pending; /* NpThreadHome: the homes its group's move gives its busy threads,
                                * carried out once that move ends (np-thread-homes.h); NULL = none */
        bool kernel_watch; /* the policy left it to the kernel's NUMA balancing on every node,
                            * or placed it whole on several: kernel_seen is kept each scan */
        GArray *kernel_seen; /* NpKernelSeen while kernel_watch, oldest first; NULL = none */
        bool finish_deferred; /* placed, but its confinement is completed after the moves of the
                               * other members of its group (np-placement.c) */
        char *group; /* the placement group the policy last decided it in (np_group_key_name()),
                      * NULL = none (a process of its own) */
        unsigned group_id; /* its group's entry in the manager's group table (the Group
                            * object), 0 = none yet */
        GArray *group_objects; /* NpSharedId: the shared memory of its group that only the group
                                * maps, which its moves carry whatever MoveSharedPages= says;
                                * NULL = none */
        char *decision; /* the policy's last word on it ("" = none yet) */
        char *note; /* what the daemon did to it outside the policy (its CPUs went offline),
                     * leading the Decision until its next placement; "" = none */

        uint32_t changed; /* NpProcessProp bits not yet published */
        bool *owner_changed; /* raised with every changed bit and change of `significant`:
                              * the owner's record that something is to publish (or NULL) */
} NpProcess;

/* Its CPU use is measured (not its life so far) over two scans, or over
 * one in which its resident memory did not grow (not a start): the policy
 * sizes it by that. */
bool np_process_cpu_settled(const NpProcess *p);

NpProcess *np_process_new(int pid, uint64_t starttime);
void np_process_free(NpProcess *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpProcess, np_process_free)

/*
 * Read the details of p: /proc/PID/status (allowed CPUs and nodes, threads),
 * task/<tid>/stat (the nodes its threads last ran on, mapped through t) and
 * cgroup, each only when due (np_details_due(): it ran, its thread count
 * changed, or maps_max_scans scans passed; always with NP_MAPS_NOW); a
 * process that did not run keeps them and its CPU by node is zero.
 * numa_maps only when due too (maps_max_scans below; never by age while
 * pages_from_group). Then Locality. Only a
 * vanished process is an error:
 * returns -ESRCH when the process is gone (or its pid now belongs to another
 * process: the start time is checked again), 0 otherwise. Any other failure
 * keeps the process with what could be read: a status that cannot be read
 * keeps the previous masks; a numa_maps that cannot be read (-EACCES for
 * another user's process without CAP_SYS_PTRACE, a kernel without NUMA
 * support where the file does not exist) leaves MemoryPerNode empty,
 * sets maps_error and Locality 1 (nothing is known to be remote), and is
 * logged once at debug level. Sets the NpProcessProp bits of what changed.
 * tab (may be NULL): the scan's process table, whose kept descriptors serve
 * status and cgroup (np_proc_table_read_detail()) and, for a process with
 * one thread, the stat that stands for its task/<pid>/stat.
 */
int np_process_refresh(NpProcess *p, const NpTopology *t, NpProcTable *tab, unsigned maps_max_scans);

/*
 * The NUMA hinting faults of p's threads that used at least `min_cpu` CPUs
 * at the last read of its threads (thread_cpu), from their
 * /proc/PID/task/TID/sched, in a new GArray of NpThreadFaults (cleared on
 * free) in *out, busiest first. A thread that exited since, or whose sched
 * file has no fault lines (no faults yet, a kernel without NUMA balancing
 * or SCHED_DEBUG), or cannot be parsed, is left out. 0, or -ESRCH when the
 * process is gone (no thread could be read and its stat neither).
 */
int np_process_read_thread_faults(const NpProcess *p, double min_cpu, GArray **out);

/* Was tid one of p's threads at the last read of its threads? Always false
 * when that read listed no thread (thread_cpu NULL: a stat read of a
 * process confined to one node). */
bool np_process_has_thread(const NpProcess *p, pid_t tid);

/* maps_max_scans for np_process_refresh(): read numa_maps and the other
 * details now whatever the rules say (before a move). Otherwise numa_maps is read by the rule of
 * np-maps-refresh.h with LocalityRefreshScans= as max_scans. */
#define NP_MAPS_NOW 0u

/* After a move: take the mover's own numa_maps read as the fresh one (moved
 * out of *maps, which is left empty). */
void np_process_take_maps(NpProcess *p, NpNumaMaps *maps);

/* The shmem mapping of p's maps.shm entry `s` (by its start address), or
 * NULL when maps did not list it (not shared, or not read yet). */
const NpShmap *np_process_shmap_of(const NpProcess *p, const NpNumaMapsShm *s);

/* Read only /proc/PID/cgroup (Cgroup and Unit), with the changed bits;
 * through tab's kept descriptor when it has one (tab may be NULL). */
void np_process_read_cgroup(NpProcess *p, NpProcTable *tab);

/* Reads kernel_migrated_bytes from its threads' sched files (one read per
 * thread; 0 when the kernel does not show it). */
void np_process_read_kernel_migrated(NpProcess *p);

/* kernel_migrated_bytes as read at a time (CLOCK_MONOTONIC). */
typedef struct {
        uint64_t usec;
        uint64_t bytes;
} NpKernelSeen;

/* How long ago p started (CLOCK_BOOTTIME against its starttime), 0 when
 * unknown. */
uint64_t np_process_age_usec(const NpProcess *p);

/* Read kernel_migrated_bytes now and add it to kernel_seen, which keeps
 * what is younger than window_usec and the newest reading before that. At
 * the first reading (kernel_seen empty) of a process younger than
 * window_usec (age_usec, 0 = unknown), a reading of 0 at its start comes
 * first: its threads' counts began then. */
void np_process_note_kernel_migrated(NpProcess *p, uint64_t now_usec, uint64_t window_usec, uint64_t age_usec);
/* What the kernel's balancing moved of it over the window of the last
 * np_process_note_kernel_migrated() (or a little more: since the newest
 * reading at least that old), or over less when kernel_seen begins later
 * (its start, or the first reading); *span_usec (may be NULL) is the time
 * it covers. A thread that exited takes its count with it: never below 0. */
uint64_t np_process_kernel_churn(const NpProcess *p, uint64_t *span_usec);

/* Significant (published and sampled in detail) or not; raises the owner's
 * record when it changes (the set of published processes changes). */
void np_process_set_significant(NpProcess *p, bool significant);

/* Set the daemon's view (state, target, last placed) and the changed bits.
 * target may be NULL (none); it is copied. A new target clears stuck_bytes. */
void np_process_set_state(NpProcess *p, NpProcState state, const NpMask *target, uint64_t last_placed_usec);

/* Set the values every scan reads and the changed bits. */
void np_process_set_sample(NpProcess *p, const char *comm, double cpu_usage, uint64_t rss_bytes, uint64_t hugetlb_bytes,
                           unsigned threads);

/* Set the placement group it was last decided in (NULL or "": a process of
 * its own) and the shared objects its moves carry (NpSharedId, copied; NULL
 * = none), with the changed bit of Group. */
void np_process_set_group(NpProcess *p, const char *group, const GArray *objects);
/* Set the id of its group's entry in the manager's group table (the Group
 * object it points to; 0 = none). */
void np_process_set_group_id(NpProcess *p, unsigned id);

/* Set the policy's decision text and the changed bit. */
void np_process_set_decision(NpProcess *p, const char *why);
/* Set (or clear, with "" or NULL) the note that leads the Decision, with the
 * changed bit. A placement on another target (np_process_set_state())
 * clears it. */
void np_process_set_note(NpProcess *p, const char *note);
/* The Decision as published: "<note>; <decision>", or either alone when
 * the other is empty. Caller frees. */
char *np_process_decision_text(const NpProcess *p);

/* Is the process held by the daemon (pinned or placed)? */
bool np_process_held(const NpProcess *p);

/* MemoryBytes as published: numa_maps total when known (hugetlb pages
 * included), else RSS plus hugetlb pages. */
uint64_t np_process_memory_bytes(const NpProcess *p);
/* Its memory as the scans see it: resident plus hugetlb pages (what
 * MinProcessMemory= is compared with). */
static inline uint64_t np_process_scan_memory(const NpProcess *p) {
        return p->rss_bytes + p->hugetlb_bytes;
}
