/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Metrics for Prometheus, through node_exporter's textfile collector
 * (MetricsFile=): after each scan the daemon takes a snapshot of its
 * counters, nodes and processes (np_metrics_collect), renders it in the
 * text exposition format (np_metrics_format, pure) and replaces the file
 * atomically (np_metrics_write: a temporary file in the same directory,
 * then rename(2), so a scrape never reads half a file).
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "np-manager.h"
#include "np-process.h"

typedef struct {
        unsigned id;
        double cpu_busy; /* CPUs busy over the last interval */
        double cpu_capacity; /* CPUs of the node */
        uint64_t mem_total_bytes;
        uint64_t mem_free_bytes;
} NpMetricsNode;

typedef struct {
        int pid;
        char *comm; /* as the kernel has it: any bytes */
        char *nodes; /* target node list, "" when none */
        char *group; /* its placement group (the Process's Group), "" when none */
        uint64_t memory_bytes; /* resident */
        double locality; /* 0..1 */
} NpMetricsProcess;

/* A placement group of more than a process alone (an org.numaplaced1.Group). */
typedef struct {
        char *name; /* the Group's Name */
        const char *kind; /* static: "cgroup", "unit", "shared" */
        char *nodes; /* its target node list, "" when none */
        unsigned members;
        uint64_t memory_bytes; /* as the policy counts it: shared objects once */
        double locality; /* 0..1 */
} NpMetricsGroup;

#define NP_METRICS_STATES (NP_PROC_NOFIT + 1)

typedef struct {
        const char *version;
        const char *backend;
        const char *mode;
        uint64_t scans;
        double last_scan_duration_seconds;
        double last_scan_timestamp_seconds; /* CLOCK_REALTIME */
        double cpu_seconds; /* the daemon's own user + system CPU time */
        GArray *nodes; /* NpMetricsNode */
        GArray *processes; /* NpMetricsProcess, at most max_processes, by pid */
        unsigned processes_left_out; /* beyond MetricsMaxProcesses (the smallest) */
        GArray *groups; /* NpMetricsGroup, by name */
        uint64_t processes_by_state[NP_METRICS_STATES]; /* significant or held processes */
        uint64_t migrated_bytes;
        uint64_t migration_calls;
        uint64_t migration_failed_pages;
        uint64_t numa_stat_reads; /* cgroup groups' memory.numa_stat read for the policy */
        uint64_t placements[_NP_PLACE_REASON_MAX];
        uint64_t config_reload_errors;
        uint64_t reservations; /* held by answers of Advise() now */
        uint64_t reserved_bytes; /* the memory they hold */
} NpMetrics;

NpMetrics *np_metrics_new(void);
void np_metrics_free(NpMetrics *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpMetrics, np_metrics_free)

/* Add a process (copies comm, nodes and group; NULL is ""). */
void np_metrics_add_process(NpMetrics *s, int pid, const char *comm, const char *nodes, const char *group,
                            uint64_t memory_bytes, double locality);

/* The snapshot of the manager now: every significant or held process
 * counted by state; per-process series for at most max_processes of them,
 * the biggest by resident memory. */
NpMetrics *np_metrics_collect(NpManager *m, unsigned max_processes);

/* Add a group to a snapshot (np_metrics_collect() does; tests too). kind
 * must be a static string. */
void np_metrics_add_group(NpMetrics *s, const char *name, const char *kind, const char *nodes, unsigned members,
                          uint64_t memory_bytes, double locality);

/* The text exposition format (version 0.0.4): "# HELP" and "# TYPE" for
 * every family, label values escaped (backslash, double quote, newline;
 * bytes that are not UTF-8 replaced), one trailing newline. Pure. */
char *np_metrics_format(const NpMetrics *s);

/* A label value as the format requires it (without the quotes). */
char *np_metrics_escape_label(const char *value);

/* Replace `path` with `text` atomically: write ".<name>.XXXXXX" in the same
 * directory (a name node_exporter does not read: it ends not in ".prom"),
 * mode 0644, then rename(2). 0, or a negative errno with *error set (the
 * file named); the temporary file never stays behind. */
int np_metrics_write(const char *path, const char *text, GError **error);
