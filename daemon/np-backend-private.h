#pragma once
/*
 * Shared between np-backend.c (common part: creation, auto choice, state
 * file, dispatch) and the two mechanisms np-backend-cpuset.c and
 * np-backend-affinity.c. Not for other modules.
 *
 * The backend acts on the real machine: it reads the real /proc (plain
 * paths, never the np-sysroot prefix, which is for reading fixture trees)
 * because the pids it moves are real processes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "np-backend.h"
#include "np-state.h"

#define NP_CGROUP_NAME_DEFAULT "numaplaced"
/* How many times the thread list is re-read while threads keep appearing. */
#define NP_MOVE_MAX_PASSES 32

typedef enum {
        NP_CGROUP_NONE,
        NP_CGROUP_V1,  /* a cgroup v1 hierarchy with the cpuset controller */
        NP_CGROUP_V2,  /* a cgroup2 mount offering the cpuset controller */
} NpCgroupMode;

struct NpBackend {
        NpBackendKind kind;         /* CPUSET or AFFINITY, never AUTO */
        char *runtime_dir;
        char *state_file;
        NpState *state;

        /* cpuset: filled by np_cpuset_detect() whenever a usable cpuset
         * hierarchy exists (also for the affinity backend, so recovery can
         * remove cgroups a previous cpuset run left). */
        NpCgroupMode mode;
        char *mount;                /* mount point of the cpuset hierarchy */
        char *cgroup_name;          /* "numaplaced" */
        char *hierarchy;            /* <mount>/<cgroup_name> */
        bool libcgroup_ready;       /* cgroup_init() succeeded (v1) */
};

/* ---- /proc helpers (np-backend.c) ---- */

/* starttime (field 22 of /proc/PID/stat) of a live process; -ESRCH when it
 * does not exist or is a zombie. */
int np_proc_starttime(pid_t pid, uint64_t *starttime);
/* Is (pid, starttime) still the same live process? */
bool np_proc_alive(pid_t pid, uint64_t starttime);
/* Thread ids of pid, ascending (GArray of pid_t). 0 or -ESRCH. */
int np_proc_tids(pid_t pid, GArray **out);
/* comm of pid, or "?" (never NULL). Caller frees. */
char *np_proc_comm(pid_t pid);

/* sched_getaffinity / sched_setaffinity for one thread: 0 or -errno. */
int np_thread_get_affinity(pid_t tid, NpMask **out);
int np_thread_set_affinity(pid_t tid, const NpMask *cpus);

/* Save the state file; on failure *error names the file. 0 or -errno. */
int np_backend_save_state(NpBackend *b, GError **error);

/* How one backend moves one thread, for np_backend_move_threads(). */
typedef struct {
        /* After the first pass: is tid already where it should be (born from
         * a moved thread)? A thread that cannot be read counts as placed. */
        bool (*placed)(NpBackend *b, const NpStateProcess *p, pid_t tid);
        /* Record tid's original placement in p; true when something new was
         * recorded (the state file is then saved before any move). */
        bool (*record)(NpBackend *b, NpStateProcess *p, pid_t tid);
        /* Move tid: 0, -ESRCH when the thread exited, or another negative
         * errno with *error set naming the thread and the target. */
        int (*move)(NpBackend *b, NpStateProcess *p, pid_t tid, GError **error);
} NpThreadMover;

/*
 * Move every thread of p with `ops`, in passes over /proc/PID/task until a
 * pass finds nothing left to move (threads created meanwhile show up in the
 * next pass; those born from moved threads already are placed, so a process
 * that keeps creating threads settles). Originals are recorded and saved
 * before each pass's moves. Returns 0; -ESRCH when the process went away;
 * -EAGAIN (with *error) when threads kept appearing for NP_MOVE_MAX_PASSES
 * passes; or a move's error.
 */
int np_backend_move_threads(NpBackend *b, NpStateProcess *p, const NpThreadMover *ops, GError **error);

/* ---- cpuset (np-backend-cpuset.c) ---- */

/* Find a cpuset hierarchy (see np-backend-cpuset.c for the rules) and
 * fill b->mode/mount/hierarchy. 0, or -ENOENT when there is none,
 * -EROFS/-EACCES when it is not writable, -EBUSY on a cgroup v2 host
 * managed by systemd (single-writer rule); *why says so in words. */
int np_cpuset_detect(NpBackend *b, char **why);
/* Daemon cgroup for the node set, relative to the mount ("/numaplaced/nodes-0"). */
char *np_cpuset_cgroup_for(const NpBackend *b, const NpMask *nodes);
/* The cgroup of a thread in this hierarchy (relative path). 0 or -ESRCH. */
int np_cpuset_current(const NpBackend *b, pid_t tid, char **out);
/* Confine the recorded process p (p->nodes, p->cpus, p->cgroup set and
 * saved) and call migrate. Records every thread's originals before moving
 * it. 0 or negative errno with *error set. */
int np_cpuset_place(NpBackend *b, NpStateProcess *p, NpMigrateFn migrate, void *userdata,
                    GError **error);
/* Put every live thread of p back in its original cgroup and affinity.
 * The caller has checked the identity. 0 or the first error. */
int np_cpuset_restore(NpBackend *b, const NpStateProcess *p);
/* Remove a daemon cgroup (relative path) when it holds no task. 0,
 * -EBUSY when tasks remain, or another -errno. Absent is 0. */
int np_cpuset_remove_if_empty(NpBackend *b, const char *cgroup);
/* Remove the whole daemon hierarchy; tasks still inside (not placed by
 * the daemon or not released) go to the hierarchy's parent. 0 or -errno. */
int np_cpuset_remove_all(NpBackend *b);

/* ---- affinity (np-backend-affinity.c) ---- */

int np_affinity_place(NpBackend *b, NpStateProcess *p, NpMigrateFn migrate, void *userdata,
                      GError **error);
/* Give every live thread of p its original affinity back (threads not
 * recorded get the leader's original). 0 or the first error. */
int np_affinity_restore(NpBackend *b, const NpStateProcess *p);
