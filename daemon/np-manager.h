#pragma once
/*
 * The manager owns the daemon's state: configuration, topology, the last
 * node and process samples, counters and the backend. It runs scan -> decide
 * -> act on sd-event timers. The bus glue (np-bus.c) only maps D-Bus calls
 * and properties onto the functions and fields here.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "np-backend.h"
#include "np-config.h"
#include "np-migrate.h"
#include "np-nodemask.h"
#include "np-sample.h"
#include "np-topology.h"

typedef enum {
        NP_PROC_OBSERVED, /* significant, sampled, not touched */
        NP_PROC_PINNED,   /* placed by Place(); held until Forget() */
        NP_PROC_PLACED,   /* placed by the daemon's policy */
        NP_PROC_EXCLUDED, /* Exclude= or Exclude(): never touched */
} NpProcState;

const char *np_proc_state_to_string(NpProcState s);

typedef struct {
        int pid;
        uint64_t starttime;        /* clock ticks after boot: identity with pid */
        char comm[NP_COMM_MAX];
        uint64_t cpu_ticks;        /* utime+stime at the last scan */
        uint64_t sampled_usec;     /* CLOCK_MONOTONIC of that sample */
        double cpu_usage;          /* CPUs, over the last interval */
        uint64_t rss_bytes;
        unsigned threads;
        bool significant;          /* published and sampled in detail */
        bool seen;                 /* seen in the current scan */
        NpMask *cpus_allowed;      /* significant only */
        NpMask *mems_allowed;      /* significant only */
        NpMask *running_nodes;     /* nodes of the threads' last CPUs (significant only) */
        NpNumaMaps maps;           /* significant only */
        double locality;           /* share of memory on running_nodes, 0..1 */
        NpProcState state;
        NpMask *target;            /* nodes it was placed on, or NULL */
        uint64_t last_placed_usec; /* CLOCK_REALTIME, 0 = never */
        char *cgroup;              /* cpuset (v1) or unified (v2) path */
        char *unit;                /* systemd unit from the cgroup path, or "" */
        bool published;            /* has a bus object (InterfacesAdded sent) */
} NpProcess;

typedef struct NpManager {
        sd_event *event;
        sd_bus *bus;
        sd_event_source *scan_timer;

        char *config_file;         /* main file (--config or the default) */
        NpConfig *config;
        char *config_error;        /* "" or the last rejected reload's message */
        char *runtime_dir;

        NpTopology *topology;
        GArray *node_samples;      /* NpNodeSample, one per topology node */
        GArray *cpu_ticks;         /* NpCpuTicks from the last scan */
        GHashTable *processes;     /* pid -> NpProcess* */
        GHashTable *included;      /* pid -> starttime (Include()) */
        GHashTable *excluded;      /* pid -> starttime (Exclude()) */

        NpBackend *backend;        /* NULL when none could be set up (advise only) */
        char *backend_name;

        bool paused;
        uint64_t scan_interval_usec; /* in force now (adaptive) */
        uint64_t scans;
        uint64_t last_scan_usec;     /* CLOCK_REALTIME */
        uint64_t last_scan_duration_usec;
        unsigned significant_count_last;

        uint64_t migrated_bytes;
        uint64_t migration_calls;
        uint64_t migration_failed_pages;

        bool ready_sent;
        bool quitting;
        int self_pid;
        unsigned kernel_numa_balancing; /* /proc/sys/kernel/numa_balancing at the last scan */
} NpManager;

/* Create a manager with a loaded config (the caller loaded and validated it;
 * ownership passes). Topology is loaded here. Returns NULL with *error set. */
NpManager *np_manager_new(const char *config_file, NpConfig *config, GError **error);
void np_manager_free(NpManager *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpManager, np_manager_free)

/* Set up the confinement backend (enforce mode). Never fatal: on failure the
 * daemon logs why and runs with Backend "none" (Place() then fails). */
void np_manager_setup_backend(NpManager *m);

/* One scan: sample nodes and processes, refresh significant processes'
 * details, update bus objects. Returns 0 or negative errno (topology gone). */
int np_manager_scan(NpManager *m);

/* Reload the configuration. 0 on success; on error the old configuration
 * stays, m->config_error is set, the error is logged and returned in *error. */
int np_manager_reload(NpManager *m, GError **error);

void np_manager_pause(NpManager *m, bool paused);

/* Human-readable state (Dump(), --once). Caller frees. */
char *np_manager_dump(NpManager *m);

/* Run the event loop until SIGTERM/SIGINT. Connects to the system bus and
 * requests org.numaplaced1. Returns 0 or negative errno. */
int np_manager_run(NpManager *m);

/* Manual placement (Place()): confine pid to nodes and migrate its memory.
 * Returns 0 with *moved_bytes, or negative errno with *error set (D-Bus
 * names in np-bus.h map from the GError codes below). */
int np_manager_place(NpManager *m, int pid, const NpMask *nodes, uint64_t *moved_bytes, GError **error);
/* Forget(): drop Include/Exclude/pin for pid and release it if held. */
int np_manager_forget(NpManager *m, int pid, GError **error);
int np_manager_include(NpManager *m, int pid, GError **error);
int np_manager_exclude(NpManager *m, int pid, GError **error);

/* Held pids (pinned or placed), sorted. */
GArray *np_manager_managed_pids(NpManager *m);
/* Held pids whose target includes node. */
GArray *np_manager_managed_pids_on(NpManager *m, unsigned node);

NpProcess *np_manager_process(NpManager *m, int pid);
const NpNodeSample *np_manager_node_sample(NpManager *m, unsigned node);

/* Error domain for manager operations, mapped to D-Bus errors by np-bus. */
#define NP_ERROR (np_error_quark())
GQuark np_error_quark(void);
typedef enum {
        NP_ERROR_FAILED,
        NP_ERROR_INVALID_ARGS,
        NP_ERROR_NO_SUCH_PROCESS,
        NP_ERROR_NO_SUCH_NODE,
        NP_ERROR_CONFIG_INVALID,
        NP_ERROR_NOT_SUPPORTED,
        NP_ERROR_MIGRATION_FAILED,
} NpErrorCode;

/* monotonic/realtime clock in microseconds */
uint64_t np_now_usec(clockid_t clock);
