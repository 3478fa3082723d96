/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Confinement backends: how a placement is enforced. Each mechanism is a
 * const table of operations (np-backend-private.h) in its own file; this
 * API dispatches to the one in force and never names one. Backend=auto
 * takes the first that works here, in this order:
 *   systemd  - on a cgroup v2 host whose cgroups systemd manages (PID 1):
 *              the process's unit gets AllowedCPUs= and AllowedMemoryNodes=
 *              as runtime properties (SetUnitProperties); a process in no
 *              .service or .scope the daemon may change goes to the
 *              fallback (affinity).
 *   cpuset   - libcgroup, a daemon-owned hierarchy: on cgroup v1
 *              <cpuset mount>/numaplaced/, on a cgroup v2 machine without
 *              systemd a subtree the daemon owns. One child per target node
 *              set (cpus = the nodes' CPUs minus ReservedCPUs, mems = the
 *              nodes); on v1 memory_migrate=0 so the daemon's plan does the
 *              moving; every thread is moved.
 *   affinity - sched_setaffinity() on every thread: the fallback, for
 *              processes the others cannot hold.
 * Every change is recorded (original cpuset and affinity per task) in a state
 * file under the runtime directory before it is made, so release and crash
 * recovery can put everything back.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include "np-config.h"
#include "np-nodemask.h"
#include "np-topology.h"

typedef struct NpBackend NpBackend;

/* Called by np_backend_place() at the moment the memory should be moved (on
 * v1/affinity after the CPUs and mems are confined; on v2 after the CPUs are
 * confined and before cpuset.mems is narrowed, so the daemon's plan, not the
 * kernel's cgroup migration, moves the pages). Returns 0 or negative errno;
 * -ESRCH aborts the placement quietly. */
typedef int (*NpMigrateFn)(pid_t pid, void *userdata);

/*
 * Create the backend of `kind` (NP_BACKEND_AUTO picks the first mechanism
 * that works here, in the order systemd (systemd is PID 1), cpuset (a
 * cpuset hierarchy is mounted and writable), affinity). `runtime_dir` holds
 * the state file. If a state file
 * from an earlier run exists it is recovered first: each record is put back
 * by the mechanism that wrote it (when that one works here) and every
 * mechanism removes what it left (the daemon's cpusets).
 * Returns NULL with *error set when the backend cannot work here.
 */
NpBackend *np_backend_new(NpBackendKind kind, const char *runtime_dir, GError **error);
/* The same with another name for the daemon's cgroup directory (NULL =
 * "numaplaced"); for tests, so they never touch a running daemon's cgroups.
 * A kind no mechanism implements gives NULL with G_FILE_ERROR_NOSYS. */
NpBackend *np_backend_new_full(NpBackendKind kind, const char *runtime_dir, const char *cgroup_name, GError **error);
/* Frees memory only: held processes stay where they are and the state file
 * stays, so the next np_backend_new() on the same runtime_dir recovers them
 * (this is what a crash looks like). Call np_backend_release_all() first
 * for a clean stop. */
void np_backend_free(NpBackend *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpBackend, np_backend_free)

/* Called on the event loop when the kernel has moved (or is moving) pages
 * of a held pid after np_backend_finish() returned: a finish sent without
 * waiting was answered. */
typedef void (*NpBackendMovedFn)(pid_t pid, void *userdata);

/* Run the mechanisms' calls that may wait for the kernel on `event`: the
 * systemd mechanism's AllowedMemoryNodes= (finish), which systemd answers
 * only once the kernel has moved the unit's memory, is then sent and
 * np_backend_finish() returns without its answer; when it comes, moved()
 * (may be NULL) is called for every held process of the unit, and an
 * error or a timeout is logged. Without it every call is synchronous
 * (tools, tests). 0, or the first negative errno. */
int np_backend_attach_event(NpBackend *b, sd_event *event, NpBackendMovedFn moved, void *userdata);

/* How the mechanism in force treats the processes of a systemd unit. */
typedef enum {
        NP_UNIT_EACH, /* each process is confined on its own */
        NP_UNIT_TOGETHER, /* the unit's values confine every process in it at once */
        NP_UNIT_UNTOUCHABLE, /* the unit must not be changed (init.scope, the daemon's own) */
} NpUnitRole;

/* The role of `unit` (NULL or "" = none: NP_UNIT_EACH) for the mechanism in
 * force; `self_unit` is the daemon's own unit (NULL or "" = unknown). */
NpUnitRole np_backend_unit_role(const NpBackend *b, const char *unit, const char *self_unit);

/* The name of the mechanism in force ("systemd", "cpuset", "affinity"; never
 * "auto"). */
const char *np_backend_name(const NpBackend *b);
NpBackendKind np_backend_kind(const NpBackend *b);

/*
 * Confine pid (all its threads) to `nodes` with the CPUs `cpus` (the caller
 * has removed ReservedCPUs), in two steps around the migration of its
 * memory, which the caller does in between (see np-mover.h):
 *
 *   np_backend_confine()  records the original placement (state file saved
 *                         first), then confines the CPUs (and, where that
 *                         moves no page, the memory nodes);
 *   ... the caller migrates the memory with its own plan ...
 *   np_backend_finish()   completes the confinement (cgroup v2: narrows the
 *                         memory nodes, and the kernel moves what the plan
 *                         left outside them) and removes a container the
 *                         process left;
 *   np_backend_abort()    instead of finish, when the move was abandoned:
 *                         puts the process back and forgets it.
 *
 * The process identity is (pid, starttime), so a reused pid is never
 * touched on release. confine and finish return 0, -ESRCH when the process
 * went away (nothing is left behind), or another negative errno with *error
 * set naming pid and nodes. On any failure every thread moved so far is put
 * back and the process is not held afterwards (also when it was held
 * before). Confining a held process again moves it to the new nodes and
 * keeps its original placement. The cpuset child is named after the node
 * set: "numaplaced/nodes-3-4", "numaplaced/nodes-1_3" (list commas become
 * '_').
 */
int np_backend_confine(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const NpMask *cpus,
                       GError **error);
/* np_backend_confine() for a hold of its memory only: `cpus` are the CPUs
 * it may run on anyway, those of the nodes `runs_on` (NULL: of every node),
 * and the cpuset child is "numaplaced/mem-NODES", or
 * "numaplaced/mem-NODES-on-RUNS_ON" (a "nodes-" child holds the nodes'
 * CPUs). -EOPNOTSUPP where the mechanism cannot hold memory
 * (np_backend_holds_memory()). */
int np_backend_confine_memory(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const NpMask *runs_on,
                              const NpMask *cpus, GError **error);
/* Can the active mechanism hold a process's memory to nodes (cpuset,
 * systemd's AllowedMemoryNodes=), not only its threads (affinity)? */
bool np_backend_holds_memory(const NpBackend *b);
int np_backend_finish(NpBackend *b, pid_t pid, uint64_t starttime, GError **error);
/* 0, or -ENOENT when (pid, starttime) is not held. */
int np_backend_abort(NpBackend *b, pid_t pid, uint64_t starttime);

/*
 * The three steps in one call, with migrate(pid, userdata) between them
 * (may be NULL): for callers that migrate synchronously (tests, tools). A
 * migrate() failure other than -ESRCH does not undo the confinement: it is
 * logged and place goes on; -ESRCH undoes it and is returned.
 */
int np_backend_place(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const NpMask *cpus,
                     NpMigrateFn migrate, void *userdata, GError **error);

/* One thread to keep on one node (its home, np-policy-threads.h). */
typedef struct {
        pid_t tid;
        unsigned node;
        const NpMask *cpus; /* the CPUs it may run on: the node's (ReservedCPUs taken out) */
} NpThreadPin;

/*
 * Keep each thread of `pins` (an array of NpThreadPin) on its CPUs,
 * sched_setaffinity(2) on that thread only, on top of whatever holds pid
 * (cpuset, unit, affinity). Every change is recorded first, so release and
 * crash recovery put each thread back:
 *   - pid not held: it gets a record of its own (the affinity mechanism's,
 *     Nodes= `nodes`, every thread's original affinity): np_backend_release()
 *     gives every thread its own back;
 *   - pid held: each pinned thread's original affinity is recorded (the
 *     one it had before the daemon changed it), and it gets its pin's CPUs
 *     among the CPUs pid is held on (all of those, when they share none).
 * The record's ThreadHomes= key names the pins ("TID:NODE;..."); a pid
 * confined again or released has all of them put back with it. A thread
 * that exited meanwhile is skipped. 0; -ESRCH when (pid, starttime) is gone;
 * another negative errno with *error set (the record is kept: what was
 * changed is recorded).
 */
int np_backend_pin_threads(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const GArray *pins,
                           GError **error);
/* Does pid's record keep threads on their own nodes (np_backend_pin_threads())? */
bool np_backend_pins_threads(const NpBackend *b, pid_t pid);
/* End the pins of a held pid whose record is not only for them: each
 * pinned thread gets the CPUs pid is held on again (its original stays
 * recorded for release). A record np_backend_pin_threads() made for the
 * pins alone is released instead (every thread gets its own back). 0,
 * -ENOENT when pid has no pins, or the first error of a thread. */
int np_backend_unpin_threads(NpBackend *b, pid_t pid);

/* Put pid back where it was (original cpuset / affinity of each thread) and
 * forget it; remove cpusets that became empty. 0, or -ENOENT when not held. */
int np_backend_release(NpBackend *b, pid_t pid);

/* Release everything and remove the daemon's cgroups (ReleaseOnStop=yes). */
int np_backend_release_all(NpBackend *b);

/* Is pid currently held by the backend? */
bool np_backend_holds(const NpBackend *b, pid_t pid);
/* The CPUs pid is held on (as last confined), or NULL when it is not held.
 * Owned by the backend, valid until the next call that changes pid. */
const NpMask *np_backend_held_cpus(const NpBackend *b, pid_t pid);

/*
 * A thread put back while CPUs of its original affinity were offline gets
 * only the online ones (the kernel keeps offline CPUs out of a mask that is
 * set). The backend remembers such threads; call this when CPUs came
 * online: each one whose affinity nobody changed since gets its original
 * again. Returns how many threads got CPUs back, and appends their pids
 * (pid_t, once each) to `pids` (may be NULL). Forgets those that are whole
 * again, gone, or changed by someone else. Not kept across restarts.
 */
unsigned np_backend_complete_restores(NpBackend *b, GArray *pids);
/* How many threads are remembered as short of their original affinity. */
unsigned np_backend_short_restores(const NpBackend *b);

/* Path of the state file ("<runtime_dir>/state"). */
const char *np_backend_state_file(const NpBackend *b);
