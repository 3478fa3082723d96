/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The backend's state file, "<runtime_dir>/state": what the daemon changed,
 * so that release and crash recovery can put everything back. It is written
 * before each change is made (np_state_save(): a temporary file, fsync and
 * rename, so a reader never sees half a file) and exists only while the
 * daemon holds at least one process.
 *
 * Format (GKeyFile):
 *
 *   [numaplaced]
 *   Version=1
 *   Hierarchy=/sys/fs/cgroup/cpuset/numaplaced   absolute path of the daemon's
 *                                                cgroup directory (cpuset only)
 *   CgroupMode=v1                                v1 or v2 (cpuset only)
 *
 *   [process 1234]
 *   Pid=1234
 *   StartTime=123456                 /proc/PID/stat field 22: the identity
 *   Backend=cpuset                   cpuset | affinity | systemd
 *   Cgroup=/numaplaced/nodes-0       daemon cgroup it was put in (cpuset only)
 *   OriginalCgroup=/                 the leader's cgroup before (cpuset only)
 *   OriginalAffinity=0-1             the leader's affinity before
 *   Nodes=0
 *   CPUs=0
 *   Threads=1234;1235;
 *   Thread.1235.Cgroup=/             per-thread originals (Cgroup: cpuset only)
 *   Thread.1235.Affinity=0-1
 *   Unit=foo.service                 any other key: a mechanism's own (NpStateProcess.extra)
 *   ThreadHomes=1235:0;1236:1        threads kept each on one node (np_backend_pin_threads()),
 *                                    their originals in Thread.TID.Affinity
 *   ThreadHomesOnly=yes              the record is for those threads alone
 *
 * Cgroup paths are relative to the hierarchy's mount point, as in
 * /proc/PID/cgroup ("/" is the root).
 *
 * Pure data plus file I/O; no cgroup or process is touched here.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "np-config.h"
#include "np-nodemask.h"

typedef struct {
        pid_t tid;
        char *cgroup; /* original cgroup, NULL when not recorded */
        NpMask *affinity; /* original affinity, NULL when not recorded */
} NpStateThread;

typedef struct {
        pid_t pid;
        uint64_t starttime;
        NpBackendKind backend; /* the mechanism that recorded it (never NP_BACKEND_AUTO) */
        char *cgroup; /* daemon cgroup holding it (cpuset), else NULL */
        char *orig_cgroup; /* leader's original cgroup (cpuset), else NULL */
        NpMask *orig_affinity; /* leader's original affinity, NULL when unknown */
        NpMask *nodes; /* target nodes (never NULL) */
        NpMask *cpus; /* target CPUs (never NULL) */
        GPtrArray *threads; /* NpStateThread*, in the order recorded */
        GHashTable *extra; /* key -> value: a mechanism's own keys (any key not
                            * listed above), saved and read back as they are */
        char *old_cgroup; /* not saved: the container a re-placement leaves,
                           * removed when the move is finished */
} NpStateProcess;

typedef struct {
        char *path; /* the state file */
        char *hierarchy; /* absolute dir of the daemon's cgroups, or NULL */
        char *cgroup_mode; /* "v1", "v2" or NULL */
        GHashTable *procs; /* GINT_TO_POINTER(pid) -> NpStateProcess* (owned) */
} NpState;

/* An empty state that will be saved to `path`. */
NpState *np_state_new(const char *path);
void np_state_free(NpState *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpState, np_state_free)

/*
 * What np_state_parse() / np_state_load() could not read. A file this daemon
 * wrote is never damaged (it is replaced atomically), but a crash of the
 * machine, a full disk or a person can leave one that is: whatever is
 * readable is still returned, so that recovery releases every process the
 * readable part names.
 */
typedef struct {
        int version; /* [numaplaced] Version=, -1 when absent or not a number */
        bool truncated; /* the last line had no newline: it was cut and dropped */
        unsigned dropped_lines; /* lines that were not key-file syntax (or followed
                                 * an unreadable [group] header), dropped */
        unsigned skipped_records; /* [process N] groups without a usable Pid,
                                   * StartTime or Backend, skipped */
        unsigned damaged_fields; /* other keys of kept records that did not parse
                                  * (OriginalAffinity, Nodes, CPUs, Threads...),
                                  * ignored */
} NpStateReport;

#define NP_STATE_VERSION 1

/* true when the report shows anything unexpected (damage or another version). */
bool np_state_report_damaged(const NpStateReport *r);
/* One line for the log: "truncated, 3 unreadable lines dropped, Version=7
 * (this numaplaced writes 1)". Caller frees; "" when nothing is wrong. */
char *np_state_report_describe(const NpStateReport *r);

/*
 * Parse the text of a state file (`len` bytes, NUL bytes allowed; `path` is
 * the state's path for a later save). Pure: no I/O. Never fails: returns a
 * new state holding every record that could be read (possibly none) and, when
 * `report` is not NULL, fills it. A record needs Pid (> 0), StartTime and
 * Backend; a malformed optional key is ignored rather than the record.
 */
NpState *np_state_parse(const char *path, const char *data, size_t len, NpStateReport *report);

/*
 * Read the state file at `path`. Returns 0 and a new state in *out (see
 * np_state_parse(): damage is reported in *report, not an error), -ENOENT
 * when there is no file (*out untouched, no error set), or a negative errno
 * with *error set when it cannot be read. `report` may be NULL.
 */
int np_state_load(const char *path, NpState **out, NpStateReport *report, GError **error);

/* The text np_state_save() writes (a key file ending in a newline). Caller
 * frees. */
char *np_state_to_data(const NpState *s, size_t *len);

/*
 * Write the state atomically (temporary file + rename, mode 0600). With no
 * process recorded the file is removed instead. 0 or negative errno with
 * *error set.
 */
int np_state_save(const NpState *s, GError **error);

/* Remove the temporary files an interrupted np_state_save() can leave next
 * to `path` ("<path>.XXXXXX", six characters). Returns how many were
 * removed, or a negative errno when the directory cannot be read. */
int np_state_remove_stale_temporaries(const char *path);

/* Can the state file be written (its directory writable, and the file
 * itself when it exists)? 0, or the negative errno access(2) gives, e.g.
 * -EROFS for a read-only file system (root included). */
int np_state_check_writable(const char *path);

/* Remove the file (absent is fine, also on a read-only file system). 0 or
 * negative errno. */
int np_state_unlink(const NpState *s);

/* Set Hierarchy / CgroupMode (NULL clears). */
void np_state_set_hierarchy(NpState *s, const char *hierarchy, const char *cgroup_mode);

guint np_state_count(const NpState *s);
NpStateProcess *np_state_lookup(const NpState *s, pid_t pid);
/* The recorded pids, ascending. Caller g_array_unref()s (element type pid_t). */
GArray *np_state_pids(const NpState *s);

/* A new record for pid (replacing any existing one), nodes and cpus empty.
 * Owned by the state. */
NpStateProcess *np_state_add(NpState *s, pid_t pid, uint64_t starttime, NpBackendKind backend);
/* Forget pid. true when it was recorded. */
bool np_state_remove(NpState *s, pid_t pid);

/* The thread record of tid, or NULL. */
NpStateThread *np_state_process_thread(const NpStateProcess *p, pid_t tid);
/* Record tid's originals. When tid is already recorded, the first record
 * wins (it is the original) and that one is returned. cgroup and affinity
 * may be NULL (unknown); they are copied. */
NpStateThread *np_state_process_add_thread(NpStateProcess *p, pid_t tid, const char *cgroup, const NpMask *affinity);

/* "cpuset" / "affinity" / "systemd" <-> kind; -EINVAL for anything else
 * ("auto" is not a kind a record can have). */
const char *np_state_backend_to_string(NpBackendKind k);
int np_state_backend_from_string(const char *s, NpBackendKind *out);
