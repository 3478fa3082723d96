/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Inside the backends: the operations table every mechanism provides, the
 * backend object the dispatcher (np-backend.c) owns, and the helpers every
 * mechanism uses (np-backend-util.c). Not for other modules.
 *
 * Layers: np-backend.c (dispatcher) -> np-backend-<mechanism>.c -> np-backend-util.c
 * -> np-state.c. A mechanism never calls the dispatcher, and the dispatcher
 * knows the mechanisms only through the table in np-backend.c, never by name.
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
#include "np-thread.h"

/* How many times the thread list is re-read while threads keep appearing. */
#define NP_MOVE_MAX_PASSES 32

typedef struct NpMechanism NpMechanism;

/*
 * One mechanism: a const table of operations. Every function gets the
 * backend (for the state file and the helpers below) and its own mechanism
 * slot (m->data is what probe() set up). Processes are NpStateProcess records
 * of the backend's state: the dispatcher creates the record (pid, starttime,
 * kind, nodes, cpus, the leader's original affinity) and saves it before
 * calling confine(); a mechanism adds what it needs (container, original
 * container, per-thread originals, or its own keys in p->extra) and saves
 * the state again before it changes anything.
 */
typedef struct {
        NpBackendKind kind;
        const char *name; /* "systemd", "cpuset", "affinity": the Backend= value */
        bool holds_memory; /* it holds memory to nodes too (cpuset mems, AllowedMemoryNodes=) */

        /* Find out whether the mechanism can place processes here and set up
         * m->data. Called once for every mechanism when the backend is
         * created (recovery needs every mechanism that can put a record
         * back). 0 when it can place; a negative errno and *why (allocated,
         * in words for the log) when it cannot. m->data may be set either
         * way (a mechanism that cannot place may still clean up). */
        int (*probe)(NpBackend *b, NpMechanism *m, char **why);
        /* Free m->data (may be NULL). */
        void (*free_data)(void *data);
        /* The daemon's event loop: calls that may wait for the kernel are
         * sent on it from now on without waiting for their answer. 0 or a
         * negative errno. May be NULL (every call is synchronous). */
        int (*attach_event)(NpMechanism *m, sd_event *event);

        /* Where the mechanism's containers live, for the log and the state
         * file's Hierarchy= (NULL when it has none), and a variant for its
         * CgroupMode= ("v1", "v2" or NULL). */
        const char *(*root)(const NpMechanism *m);
        const char *(*variant)(const NpMechanism *m);

        /* What the mechanism does to the processes of `unit` (a systemd unit
         * name, not empty; `self_unit` is the daemon's own, may be NULL):
         * confines them together, must not change them, or holds each on
         * its own. May be NULL (each on its own). */
        NpUnitRole (*unit_role)(const NpMechanism *m, const char *unit, const char *self_unit);

        /* The daemon container for a node set (stored in p->cgroup), or NULL
         * when the mechanism has none; memory_only: for processes whose
         * memory only it holds there (their CPUs are those of the nodes
         * runs_on, of every node when NULL). Caller frees. */
        char *(*container_for)(const NpMechanism *m, const NpMask *nodes, bool memory_only, const NpMask *runs_on);

        /* Record the leader's original container in p (new record). 0,
         * -ESRCH when the process is gone, -EXDEV (after logging why) when
         * this mechanism must not hold the process but the fallback (the
         * last of the dispatcher's table) may place it instead, or another
         * negative errno. May be NULL. */
        int (*record)(NpBackend *b, NpMechanism *m, NpStateProcess *p);

        /* Confine every thread of p to p->cpus (and, where the mechanism can
         * do so without the kernel moving pages, to p->nodes). The memory is
         * migrated after this returns 0, then finish() is called. 0, -ESRCH
         * when the process went away, or another negative errno with *error
         * set. On failure the dispatcher calls restore() and forgets p. */
        int (*confine)(NpBackend *b, NpMechanism *m, NpStateProcess *p, GError **error);
        /* After the migration: complete the confinement (e.g. narrow the
         * memory nodes, which on cgroup v2 makes the kernel move what the
         * plan left outside them). May be NULL. Same returns as confine(). */
        int (*finish)(NpBackend *b, NpMechanism *m, NpStateProcess *p, GError **error);
        /* Put every live thread of p back as recorded. The identity was
         * checked by the caller. 0 or the first error (logged). */
        int (*restore)(NpBackend *b, NpMechanism *m, const NpStateProcess *p);
        /* restore() is called for a record whose process is gone too: what
         * the mechanism changed outlives the process (a unit's properties,
         * which a restarted service would inherit). */
        bool restore_when_gone;
        /* A record that held `container` was forgotten: remove the container
         * when nothing is left in it. May be NULL. */
        void (*cleanup)(NpBackend *b, NpMechanism *m, const char *container);
        /* Remove everything of the daemon's that is left (after release-all
         * and after recovery). 0 or a negative errno (logged). May be NULL. */
        int (*remove_all)(NpBackend *b, NpMechanism *m);
} NpBackendOps;

struct NpMechanism {
        const NpBackendOps *ops;
        void *data; /* the mechanism's own, from probe() */
        bool usable; /* probe() returned 0 */
        char *why; /* why not, when !usable */
};

struct NpBackend {
        NpMechanism *mechs; /* one per entry of the dispatcher's table */
        guint n_mechs;
        NpMechanism *active; /* the one that places (Backend= or auto) */
        char *runtime_dir;
        char *state_file;
        NpState *state;
        char *cgroup_name; /* directory name for daemon cgroups ("numaplaced") */
        GArray *short_restores; /* NpShortRestore: threads put back with less than their
                                 * original affinity, CPUs of it being offline */
        NpBackendMovedFn moved; /* np_backend_attach_event(), may be NULL */
        void *moved_userdata;
};

/* A thread given back only part of its original affinity, because the
 * kernel keeps offline CPUs out of a mask that is set
 * (np_backend_complete_restores()). */
typedef struct {
        pid_t pid;
        uint64_t starttime;
        pid_t tid;
        NpMask *want; /* the original */
        NpMask *got; /* what the kernel kept */
} NpShortRestore;

#define NP_CGROUP_NAME_DEFAULT "numaplaced"

/* ---- helpers every mechanism may use (np-backend-util.c) ---- */

/* Tell the daemon that the kernel moved pages of held pid after the
 * mechanism's finish() returned (the NpBackendMovedFn given to
 * np_backend_attach_event(), if any). */
void np_backend_notify_moved(NpBackend *b, pid_t pid);

/* starttime (field 22 of /proc/PID/stat) of a live process; -ESRCH when it
 * does not exist or is a zombie whose threads are all gone. */
int np_proc_starttime(pid_t pid, uint64_t *starttime);
/* Is task tid on its way out: gone, a zombie, or inside exit (PF_EXITING
 * in the flags of /proc/TID/stat)? The kernel no longer moves such a task
 * between cgroups, and it leaves its cgroup by itself. */
bool np_proc_exiting(pid_t tid);
/* Is (pid, starttime) still the same live process? */
bool np_proc_alive(pid_t pid, uint64_t starttime);
/* Thread ids of pid, ascending (GArray of pid_t). 0 or -ESRCH. */
int np_proc_tids(pid_t pid, GArray **out);
/* comm of pid, or "?" (never NULL). Caller frees. */
char *np_proc_comm(pid_t pid);

/* Save the state file (with the active mechanism's root and variant in its
 * header); on failure *error names the file. 0 or -errno. */
int np_backend_save_state(NpBackend *b, GError **error);

/* How one mechanism moves one thread, for np_backend_move_threads(). `data`
 * is the mechanism's m->data. */
typedef struct {
        /* After the first pass: is tid already where it should be (born from
         * a moved thread)? A thread that cannot be read counts as placed. */
        bool (*placed)(void *data, const NpStateProcess *p, pid_t tid);
        /* Record tid's original placement in p; true when something new was
         * recorded (the state file is then saved before any move). */
        bool (*record)(void *data, NpStateProcess *p, pid_t tid);
        /* Move tid: 0, -ESRCH when the thread exited, or another negative
         * errno with *error set naming the thread and the target. */
        int (*move)(void *data, NpStateProcess *p, pid_t tid, GError **error);
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
int np_backend_move_threads(NpBackend *b, void *data, NpStateProcess *p, const NpThreadMover *ops, GError **error);

/* Give every live thread of p its recorded affinity back (threads not
 * recorded get the leader's original). Errors other than a vanished thread
 * are logged; with `warn` false they are logged at debug level only (a
 * cpuset restore resets affinities anyway). A thread that got less than
 * its original (CPUs of it offline) is remembered in b->short_restores.
 * 0 or the first error. */
int np_backend_restore_affinity(NpBackend *b, const NpStateProcess *p, bool warn);
void np_short_restore_clear(NpShortRestore *r);

/* ---- the mechanisms (one table each, listed in np-backend.c) ---- */

extern const NpBackendOps np_backend_systemd_ops;
extern const NpBackendOps np_backend_cpuset_ops;
extern const NpBackendOps np_backend_affinity_ops;
