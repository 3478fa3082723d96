/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The manager owns the daemon's state: configuration, topology, the last
 * node and process samples, counters, the backend and the mover, and its
 * lifetime, reload and pause. The scan (np-scan.h) refreshes the samples,
 * classification (np-classify.h) says what each process is, the placement
 * path (np-placement.h) and the actions (Forget, Include, Exclude) change
 * processes. The manager knows nothing of D-Bus: everything that changes a
 * published value is recorded in m->changes (and in each NpProcess's
 * `changed` mask), and the bus layer (np-bus.c) publishes it once per event
 * loop iteration.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "np-backend.h"
#include "np-config.h"
#include "np-error.h"
#include "np-group-table.h"
#include "np-mover.h"
#include "np-nodemask.h"
#include "np-proc-table.h"
#include "np-process.h"
#include "np-reserve.h"
#include "np-sample.h"
#include "np-topology.h"

/* Published properties of org.numaplaced1.Manager that change (bits of
 * NpChanges.manager). */
typedef enum {
        NP_MANAGER_MODE = 1u << 0,
        NP_MANAGER_PAUSED = 1u << 1,
        NP_MANAGER_SCAN_INTERVAL = 1u << 2,
        NP_MANAGER_SCANS = 1u << 3,
        NP_MANAGER_LAST_SCAN = 1u << 4, /* LastScanTimestamp, LastScanDurationUSec */
        NP_MANAGER_DAEMON_CPU = 1u << 5,
        NP_MANAGER_NODE_IDS = 1u << 6,
        NP_MANAGER_MANAGED = 1u << 7,
        NP_MANAGER_MIGRATION = 1u << 8, /* MigratedBytes, MigrationCalls, MigrationFailedPages */
        NP_MANAGER_NUMA_BALANCING = 1u << 9,
        NP_MANAGER_CONFIG = 1u << 10, /* ConfigFiles */
        NP_MANAGER_CONFIG_ERROR = 1u << 11,
        NP_MANAGER_RESERVATIONS = 1u << 12,
} NpManagerProp;

/* Published properties of org.numaplaced1.Node that change. */
typedef enum {
        NP_NODE_MEMORY_FREE = 1u << 0,
        NP_NODE_CPU_BUSY = 1u << 1,
        NP_NODE_MANAGED = 1u << 2,
        NP_NODE_CPUS = 1u << 3, /* CPUs, CPUCapacity */
        NP_NODE_MEMORY_TOTAL = 1u << 4,
        NP_NODE_DISTANCES = 1u << 5,
} NpNodeProp;

/* Why a placement is made (np-placement.h). */
typedef enum {
        NP_PLACE_MANUAL, /* Place(): the process is pinned there until Forget() */
        NP_PLACE_POLICY, /* the daemon's policy: State "placed" */
        NP_PLACE_REBALANCE, /* the policy again, for a placed process whose nodes became crowded */
        _NP_PLACE_REASON_MAX,
} NpPlaceReason;

/* "manual", "policy", "rebalance". */
const char *np_place_reason_to_string(NpPlaceReason r);

/* A placement that was carried out, for the ProcessPlaced signal. */
typedef struct {
        int pid;
        char comm[NP_COMM_MAX];
        NpMask *from;
        NpMask *to;
        uint64_t moved_bytes;
        uint64_t usec;
} NpPlacedEvent;

void np_placed_event_free(NpPlacedEvent *e);

/* What changed since the bus layer last published (it clears what it took). */
typedef struct {
        uint32_t manager; /* NpManagerProp bits */
        GHashTable *nodes; /* node id -> NpNodeProp bits */
        bool processes; /* some NpProcess has changed bits, or the set of
                         * significant processes may have changed (raised by the
                         * process's setters and by a record's removal) */
        GQueue placed; /* NpPlacedEvent*, in order */
} NpChanges;

typedef struct NpManager {
        sd_event *event; /* the main loop (NULL for --once) */

        char *config_file; /* main file (--config or the default) */
        NpConfig *config;
        char *config_error; /* "" or the last rejected reload's message */
        uint64_t config_errors; /* rejected reloads since start */
        char *runtime_dir;

        NpTopology *topology;
        NpMask *cpus_changed; /* nodes whose CPUs changed or that went away since the held
                               * placements were last checked against them (np-hotplug.h) */
        GArray *node_samples; /* NpNodeSample, one per topology node */
        GArray *cpu_ticks; /* NpCpuTicks from the last scan */
        bool node_cpu_measured; /* node_samples' cpu_busy cover an interval (not the first scan's) */
        NpHugeSample huge; /* the hugetlb pools at the last node sample */
        bool huge_changed; /* ... with more pages in use than at the sample before */
        GHashTable *processes; /* pid -> NpProcess* */
        NpProcTable *proc_table; /* the cheap per-PID tier, kept descriptors */
        GHashTable *included; /* pid -> starttime (Include()) */
        GHashTable *excluded; /* pid -> starttime (Exclude()) */

        NpBackend *backend; /* NULL when none could be set up */
        char *backend_name;
        NpMover *mover; /* NULL until np_placement_setup() */
        NpReservations *reservations; /* the room answers of Advise() hold (np-advice.h) */
        NpGroupTable *groups; /* the placement groups of the last decision round, for the bus */
        sd_event_source *reservation_timer; /* fires at the next reservation's expiry, or NULL */
        uint64_t advice_notice_usec; /* CLOCK_MONOTONIC of the last notice about an unprivileged Advise() */
        unsigned advice_notices_dropped; /* notices left out since (np-advice.c) */

        bool paused;
        bool status_sent; /* it sent a STATUS= of its own (reload): the next scan's is sent again */
        uint64_t scan_interval_usec; /* in force now (adaptive) */
        bool followup_scan; /* the next scan is a follow-up (NP_FOLLOWUP_USEC) */
        uint64_t awaiting_bytes; /* memory of the processes the last scan left waiting for their
                                  * follow-up, whose pages may be about to move (np-decide.h) */
        unsigned rounds_deferred; /* decision rounds in a row that waited for them */
        uint64_t scans; /* timer scans (never method calls) */
        uint64_t last_scan_usec; /* CLOCK_REALTIME */
        uint64_t last_scan_duration_usec;
        unsigned significant_count_last;
        unsigned held_last; /* pinned or placed processes at the last scan (or since a placement) */
        uint64_t processes_seen; /* distinct processes the scans have found (a reused pid counts again) */

        uint64_t migrated_bytes;
        uint64_t migration_calls;
        uint64_t migration_failed_pages;
        uint64_t placements[_NP_PLACE_REASON_MAX]; /* placements carried out, by reason */
        uint64_t numa_stat_reads; /* cgroup groups' memory.numa_stat read for the policy (np-snapshot.c) */
        GHashTable *numa_stat_failed; /* group cgroup -> errno of its last scan's failed
                                       * memory.numa_stat read (each failure is logged once) */

        int self_pid;
        char *self_unit; /* the daemon's own systemd unit ("" none), read when first needed */
        double self_cpu; /* CPUs the daemon used between the last two node samples */
        bool background_measured; /* background_cpu holds the last round's, from measured nodes */
        double background_cpu; /* np_policy_background_cpu() of the last decision round */
        uint64_t self_cpu_usec; /* its user+system time at the last node sample */
        uint64_t self_cpu_at; /* CLOCK_MONOTONIC of that sample */
        unsigned kernel_numa_balancing; /* /proc/sys/kernel/numa_balancing at the last scan */
        GArray *peek_ticks; /* NpCpuTicks of the last peek at the CPUs since the last scan (empty: none) */
        uint64_t peek_self_usec; /* the daemon's CPU time at that peek */
        uint64_t peek_at; /* CLOCK_MONOTONIC of that peek, 0 = none since the last scan */
        bool brought_forward; /* a peek found a gain: the next scan comes NP_FOLLOWUP_USEC after it */

        NpChanges changes;
} NpManager;

/* Create a manager with a loaded config (the caller loaded and validated it;
 * ownership passes). Topology is loaded here. Returns NULL with *error set. */
NpManager *np_manager_new(const char *config_file, NpConfig *config, GError **error);
/* Frees memory only (the backend's placements stay, see np_backend_free()).
 * Stop the mover first (np_placement_shutdown()). */
void np_manager_free(NpManager *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpManager, np_manager_free)

/* Set up the confinement backend (which also recovers what a crashed
 * instance left). Never fatal: on failure the daemon logs why and runs with
 * Backend "none" (Place() then fails with NotSupported). */
void np_manager_setup_backend(NpManager *m);

/* The kernel's automatic NUMA balancing is on (kernel.numa_balancing has
 * its bit 0 set at the last scan). */
static inline bool np_manager_kernel_balancing(const NpManager *m) {
        return (m->kernel_numa_balancing & 1u) != 0;
}

/* Reload the configuration. 0 on success; on error the old configuration
 * stays, m->config_error is set, the error is logged and returned in *error. */
int np_manager_reload(NpManager *m, GError **error);

void np_manager_pause(NpManager *m, bool paused);

/* Human-readable state (Dump(), --once). Caller frees. (np-dump.c) */
char *np_manager_dump(NpManager *m);

/* The process with this pid, or NULL. A lookup only: it reads, creates and
 * classifies nothing (np_scan_pid() makes a pid's record current). */
NpProcess *np_manager_process(NpManager *m, int pid);
/* How many known processes are significant and how many are held (pinned or
 * placed) right now. */
void np_manager_count(const NpManager *m, unsigned *significant, unsigned *held);
/* Held pids (pinned or placed), sorted. */
GArray *np_manager_managed_pids(NpManager *m);
/* Held pids whose target includes node. */
GArray *np_manager_managed_pids_on(NpManager *m, unsigned node);

const NpNodeSample *np_manager_node_sample(NpManager *m, unsigned node);

/* Record changes of values found by comparing (the topology and node
 * samples against the last ones, the reservations): NpManagerProp bits,
 * and NpNodeProp bits of a node. */
void np_manager_changed(NpManager *m, uint32_t manager_props);
void np_manager_node_changed(NpManager *m, unsigned node, uint32_t node_props);

/* The setters of what the manager publishes: each sets the value and
 * records what changed, so no caller marks a change by hand. */

/* A new record for (pid, starttime), owned by m->processes; its changes
 * are recorded in m->changes. Replaces a record of the same pid. A record
 * removed from m->processes records the change of the published set. */
NpProcess *np_manager_add_process(NpManager *m, int pid, uint64_t starttime);
/* np_process_set_state(), and when the state or target changed, the
 * ManagedProcesses of the Manager and of the nodes of the old and new
 * target. */
void np_manager_set_state(NpManager *m, NpProcess *p, NpProcState state, const NpMask *target,
                          uint64_t last_placed_usec);
/* The scan interval in force (ScanIntervalUSec). */
void np_manager_set_scan_interval(NpManager *m, uint64_t usec);
/* Add one move's bytes, migrate_pages(2) calls and failed pages to the
 * counters (MigratedBytes, MigrationCalls, MigrationFailedPages). */
void np_manager_add_migration(NpManager *m, uint64_t bytes, uint64_t calls, uint64_t failed_pages);

/* monotonic/realtime clock in microseconds */
uint64_t np_now_usec(clockid_t clock);
