/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The mover: one queue of memory moves and worker threads that carry out
 * moves with np_migrate_execute() (the migrate_pages(2) calls and the
 * MaxRate pacing), so the daemon's main loop never waits for a move: it
 * keeps answering the bus, scanning and feeding the watchdog.
 *
 * Moves start in the order they were submitted. The one at the head of the
 * queue starts when none runs, or beside those running when it moves to
 * nodes (mv->nodes, set by the owner) that none of them moves to and the
 * owner's may_start() agrees; otherwise it waits for them to end. When
 * only may_start() kept it back, the mover asks again every
 * NP_MOVER_RETRY_USEC while those run (the room it waits for comes as
 * their pages leave). A move without nodes, or a mover without
 * may_start(), runs alone.
 *
 * A move's life, all callbacks on the main loop (the sd-event loop the mover
 * was created with):
 *
 *   np_mover_submit()  queues it (FIFO);
 *   may_start(mv)      (only while other moves run) may it start beside
 *                      them now? (asked again later when not)
 *   prepare(mv)        when it starts: the owner confines the process and
 *                      fills mv->plan (and may change max_rate); a negative
 *                      return skips the worker and goes straight to done()
 *                      with mv->r set to it;
 *   ... a worker thread of its own executes mv->plan for mv->pid ...
 *   done(mv)           with mv->r and mv->result filled; the owner
 *                      finishes or undoes the confinement, accounts, and
 *                      frees mv with np_move_free().
 *
 * Where the worker runs: on the CPUs of mv->cpus that the daemon itself may
 * use (its affinity at start, which each worker thread inherits), so that
 * the pages are copied on the process's own CPUs, near its new nodes,
 * rather than on a CPU that then has to shoot down the TLB of the CPU the
 * process runs on for every page and wait for it (tests/bench/README.md,
 * move-cpu). The process shares its CPU with the move while it lasts; it would wait on the pages being
 * moved anyway. When no CPU is in both, the worker runs where it may.
 *
 * Which pages: migrate_pages(2) moves every page of the process, shared or
 * not (MPOL_MF_MOVE_ALL), when the caller has CAP_SYS_NICE, and otherwise
 * only the pages that process alone maps (MPOL_MF_MOVE). Unless
 * mv->move_shared (MoveSharedPages=, no by default), the worker drops
 * CAP_SYS_NICE from its own effective set before the plan (capset(2) of the
 * calling thread only; the worker thread ends with the move), so shared
 * libraries, memory shared with a parent after fork(2) and shared memory
 * segments stay where they are. Moving those
 * for one process takes them away from the others that map them, and each
 * such page costs a TLB shootdown on every CPU where one of those runs. The
 * kernel lets a caller
 * without CAP_SYS_NICE move pages only to nodes the target's cpuset allows;
 * the daemon confines first, so the plan's nodes are allowed. The ranges of
 * mv->shared, a placement group's own shared memory, are the exception:
 * after the plan they move with move_pages(2) and MPOL_MF_MOVE_ALL, with
 * CAP_SYS_NICE raised for those calls (np_migrate_execute_from()), since
 * every process that maps them goes to the same nodes.
 *
 * A worker touches nothing but the NpMove it was given (handed over at
 * start, handed back at done) and its own cancel and finished flags. Every
 * move submitted gets exactly one done() call, also when cancelled, when
 * the mover is freed, or when prepare() fails.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "np-migrate.h"

/* How often the head of the queue is offered to may_start() again while
 * the owner says not yet (above). */
#define NP_MOVER_RETRY_USEC (500 * 1000)

typedef struct NpMove {
        pid_t pid;
        uint64_t starttime;
        GArray *plan; /* NpMovePair; set by prepare(), owned */
        uint64_t max_rate; /* bytes per second, 0 = unlimited */
        /* MoveSharedPages=: also move pages other processes map too (set by
         * prepare(); false: the worker drops CAP_SYS_NICE first, below) */
        bool move_shared;
        /* NpMigrateRange: its group's shared memory that only the group
         * maps, moved once with the process whatever move_shared says (set
         * by prepare(); NULL = none; owned) */
        GArray *shared;
        /* numa_maps as prepare() read it, when it did (the worker then does
         * not read it again before the plan); owned */
        NpNumaMaps before;
        bool have_before;
        /* the CPUs the process was confined to, set by prepare() (NULL:
         * anywhere); the worker runs the move on those of them it may use
         * (above); owned */
        NpMask *cpus;
        /* the nodes it moves to, set by the owner before np_mover_submit()
         * (NULL: it runs alone); owned */
        NpMask *nodes;
        int r; /* np_migrate_execute()'s return, prepare()'s error, or
                * -ECANCELED when cancelled before it started */
        bool started; /* the worker ran it (result is meaningful) */
        NpMigrateResult result;
        uint64_t queued_usec; /* CLOCK_MONOTONIC when submitted */
        uint64_t started_usec; /* CLOCK_MONOTONIC when the worker got it */
        uint64_t cpu_usec; /* CPU time of the worker thread on it (mostly the
                            * kernel's page copies), when started */
        void *data; /* the owner's */
        GDestroyNotify data_free;
} NpMove;

/* A new move (plan NULL, r 0). data is owned by the move when data_free is
 * set. */
NpMove *np_move_new(pid_t pid, uint64_t starttime, uint64_t max_rate, void *data, GDestroyNotify data_free);
void np_move_free(NpMove *mv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpMove, np_move_free)

typedef int (*NpMovePrepareFn)(NpMove *mv, void *userdata);
typedef bool (*NpMoveMayStartFn)(const NpMove *mv, void *userdata);
typedef void (*NpMoveDoneFn)(NpMove *mv, void *userdata);

typedef struct NpMover NpMover;

/* A mover on `event` (its workers' completion is an eventfd source there);
 * may_start may be NULL (moves run one at a time). Returns NULL with *error
 * set when the eventfd or source cannot be made. */
NpMover *np_mover_new(sd_event *event, NpMovePrepareFn prepare, NpMoveMayStartFn may_start, NpMoveDoneFn done,
                      void *userdata, GError **error);
/* Cancels everything (each move gets its done() call with -ECANCELED,
 * running ones after their workers stopped between two calls), then frees. */
void np_mover_free(NpMover *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpMover, np_mover_free)

/* Queue mv (ownership passes) and start it at once when it may (above).
 * -EBUSY (mv not taken) when a move of the same pid is queued or running. */
int np_mover_submit(NpMover *m, NpMove *mv);

/* The move of pid that is queued or running, or NULL. */
const NpMove *np_mover_find(const NpMover *m, pid_t pid);
/* Is that move running (on its worker) rather than queued? */
bool np_mover_running(const NpMover *m, pid_t pid);
/* The moves running, and the i-th of them in the order they started (NULL
 * past the last). */
guint np_mover_running_count(const NpMover *m);
const NpMove *np_mover_running_nth(const NpMover *m, guint i);
/* Moves queued (not counting the running ones). */
guint np_mover_queued(const NpMover *m);
/* Is a move queued or running? */
bool np_mover_busy(const NpMover *m);

/* Cancel the move of pid: a queued one gets done() with -ECANCELED now; a
 * running one stops between two migrate_pages() calls and gets done()
 * with what it moved. 0, or -ENOENT when pid has no move. */
int np_mover_cancel(NpMover *m, pid_t pid);

/* Stop: cancel every move, wait for the workers (each stops between two
 * calls, within one call's time), and deliver every done() now. The mover
 * stays usable. */
void np_mover_stop(NpMover *m);
