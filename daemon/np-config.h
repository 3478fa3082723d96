/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Configuration: /etc/numaplaced.conf, then <main file>.d/ (*.conf) in name
 * order (so /etc/numaplaced.conf.d/), GKeyFile syntax, parsed into a typed
 * struct through one table of keys. A later file overrides single keys of an
 * earlier one. "Missing" is not "invalid": an absent file or key keeps the
 * default. Any unknown group or key, malformed line, or bad value is an error
 * naming the file and line, the value and why; nothing partial is returned.
 *
 * Syntax decisions (documented in numaplaced.conf(5)):
 *  - only '#' starts a comment, as in GKeyFile (a ';' line is an unknown key);
 *  - an empty value ("Key=") means the key's default (the empty list for
 *    ReservedCPUs=, Include=, Exclude=; the default globs for Groups=, whose
 *    empty list is "none"), so a drop-in can undo a setting;
 *  - a key repeated in one file: the last wins (as GKeyFile), but every
 *    assignment is validated; list keys are replaced, not merged;
 *  - drop-ins: regular files named *.conf, not starting with '.', in strcmp()
 *    order; MaxScanIntervalSec < ScanIntervalSec is refused, naming the line
 *    of whichever of the two was set last.
 * Errors are G_KEY_FILE_ERROR (content) or G_FILE_ERROR (I/O) GErrors.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include "np-nodemask.h"

/* The longest name the kernel keeps for a user task (TASK_COMM_LEN - 1): an
 * Include=/Exclude= name longer than this can never match and is refused.
 * (Kernel threads can show longer names in /proc/PID/stat, which is why
 * np-sample.h's NP_COMM_MAX buffer is larger; they are never candidates.) */
#define NP_TASK_COMM_LEN 15

typedef enum { NP_MODE_ENFORCE, NP_MODE_ADVISE } NpMode;
typedef enum {
        NP_BACKEND_AUTO,
        NP_BACKEND_CPUSET,
        NP_BACKEND_SYSTEMD,
        NP_BACKEND_AFFINITY,
} NpBackendKind;

typedef struct {
        /* [Daemon] */
        NpMode mode; /* Mode=enforce|advise (enforce) */
        NpBackendKind backend; /* Backend=auto|cpuset|systemd|affinity (auto) */
        uint64_t scan_interval_usec; /* ScanIntervalSec= (5 s), 0.1..3600, fractions allowed */
        uint64_t max_scan_interval_usec; /* MaxScanIntervalSec= (15 s), >= ScanIntervalSec */
        int log_level; /* LogLevel= (info), LOG_* */
        bool release_on_stop; /* ReleaseOnStop= (yes) */
        char *metrics_file; /* MetricsFile= ("" = no metrics file), absolute */
        unsigned metrics_max_processes; /* MetricsMaxProcesses= (100), 0..100000 */

        /* [Placement] */
        unsigned target_utilization; /* TargetUtilization= percent (85), 1..100 */
        unsigned memory_locality_target; /* MemoryLocalityTarget= percent (90), 1..100 */
        uint64_t min_process_memory; /* MinProcessMemory= bytes (300M), K/M/G/T suffixes */
        double min_process_cpu; /* MinProcessCPU= CPUs (0.5), 0..4096 */
        uint64_t min_usec_between_moves; /* MinSecondsBetweenMoves= (30 s), 0..86400 */
        unsigned locality_refresh_scans; /* LocalityRefreshScans= (12), 1..10000: numa_maps at least this often */
        NpMask *reserved_cpus; /* ReservedCPUs= CPU list (empty) */
        bool keep_interleaved; /* KeepInterleaved= (no) */
        uint64_t advice_hold_usec; /* AdviceHoldSec= (60 s), 0..3600, 0 = answers hold nothing */
        char **include; /* Include= comm glob patterns or PIDs (empty) */
        char **exclude; /* Exclude= comm glob patterns or PIDs (empty) */
        char **groups; /* Groups= cgroup path globs (NP_GROUP_DEFAULT_GLOBS; "none": empty) */

        /* [Migration] */
        bool skip_overlapping_nodes; /* SkipOverlappingNodes= (yes) */
        bool move_shared_pages; /* MoveSharedPages= (no) */
        uint64_t max_rate; /* MaxRate= bytes per second, K/M/G suffixes (0 = unlimited) */

        /* Where it came from: the files actually read, in order. */
        char **files;
} NpConfig;

/* A config with every default. */
NpConfig *np_config_new_default(void);
void np_config_free(NpConfig *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpConfig, np_config_free)

/*
 * Load main_file (absent is fine: defaults) and then main_file + ".d/ (*.conf)"
 * in name order. Returns 0 and a new config in *out, or a negative errno and
 * *error set to "FILE:LINE: [Group] Key: 'value': why" (or "FILE:LINE: why"
 * for a malformed line). On error *out is untouched. -EINVAL/-ERANGE for bad
 * content; -EACCES, -EISDIR, -EIO... when an existing file or the drop-in
 * directory cannot be read (only ENOENT counts as absent).
 * cfg->files lists the files read, in order (empty when none was found).
 */
int np_config_load(const char *main_file, NpConfig **out, GError **error);

/* Parsers behind the table (exposed for tests). Each returns 0 or -EINVAL/-ERANGE. */
int np_parse_size(const char *s, uint64_t *bytes); /* "300M", "1G", "4096", "1.5G" */
int np_parse_seconds(const char *s, uint64_t *usec); /* "5", "0.5", "2s", "500ms" */
int np_parse_bool(const char *s, bool *b); /* yes/no/true/false/on/off/1/0 */

const char *np_mode_to_string(NpMode m);
const char *np_backend_kind_to_string(NpBackendKind k);

/*
 * Include=/Exclude= matching: true when an entry of `list` (NULL-terminated,
 * NULL = empty) is the decimal `pid`, an fnmatch(3) glob matching `comm`
 * (comm may be NULL: not compared), or, when it starts with '/', a cgroup
 * path that `cgroup` is or is below ("/system.slice/db.service" matches
 * that service's cgroup and its children; cgroup may be NULL or "": not
 * compared).
 */
bool np_config_list_match(char *const *list, unsigned pid, const char *comm, const char *cgroup);

/* Does Include= or Exclude= name a cgroup path (an entry starting with '/')?
 * Then the daemon reads the cgroup of every new process. */
bool np_config_has_cgroup_entries(const NpConfig *c);

/* Render the effective configuration as INI text (Dump() shows it). Caller frees. */
char *np_config_to_string(const NpConfig *c);
