/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The one placement path: every placement (Place() on the bus, and the
 * daemon's own policy) goes through here.
 *
 *   np_placement_submit()   validates the request (nodes, process, backend, no
 *                       move of that pid in flight) and queues it on the
 *                       mover; a validation error is returned at once;
 *   may_start (main loop) while other moves run: it starts beside them
 *                       (to other nodes) only without MaxRate= and with
 *                       the room for its pages on its nodes already;
 *   prepare (main loop) when its turn comes: refreshes only that process
 *                       (status, numa_maps), plans the migration (skip-
 *                       overlapping-node rule, from where its pages are) and
 *                       confines it through the backend;
 *   (worker thread)     migrate_pages(2) per planned pair, MaxRate pacing;
 *   done (main loop)    finishes the confinement (or puts the process back
 *                       when it exited or the move was cancelled), accounts
 *                       the bytes moved (also those the kernel moved while
 *                       confining), records the process's new state and
 *                       target, logs one line with structured fields, records
 *                       a ProcessPlaced event, and calls the requester's
 *                       callback exactly once.
 *
 * Nothing here blocks the main loop for longer than reading one process's
 * numa_maps and moving its threads.
 */
#include <glib.h>
#include <stdint.h>

#include "np-manager.h"

/* Called once when a submitted placement ended: error NULL and the bytes
 * moved, or an NP_ERROR (NO_SUCH_PROCESS when it exited, CANCELLED when the
 * move was cancelled by Forget() or a stop, MIGRATION_FAILED when the
 * process is confined but its memory could not be moved, FAILED otherwise).
 * The process may be gone: only its pid is passed. */
typedef void (*NpPlaceDoneFn)(NpManager *m, int pid, uint64_t moved_bytes, const GError *error, void *userdata);

/* Create the mover on m->event (m->mover). 0, or a negative errno with
 * *error set. */
int np_placement_setup(NpManager *m, GError **error);

/* Cancel every move (queued ones and the running ones, which stop between
 * two migrate_pages() calls), settle each (the process is put back; the
 * requester's callback gets CANCELLED) and return. For the daemon's stop. */
/* The kernel moved pages of pid after its placement ended (the backend's
 * NpBackendMovedFn, with m as userdata): the mover's read of where they are
 * is stale, so the next scan reads them again. */
void np_placement_kernel_moved(pid_t pid, void *userdata);
void np_placement_shutdown(NpManager *m);

/*
 * Queue the placement of pid on `nodes`. Returns 0 when queued (done is
 * called later, exactly once; it may be NULL), or a negative errno with
 * *error set and done never called: NP_ERROR_INVALID_ARGS (empty node list,
 * a node without memory, a kernel thread, the daemon itself),
 * NP_ERROR_NO_SUCH_NODE, NP_ERROR_NO_SUCH_PROCESS, NP_ERROR_NOT_SUPPORTED (no
 * backend), NP_ERROR_MOVE_IN_PROGRESS (a move of this pid is queued or
 * running).
 */
/* The CPUs a process whose memory only is held may run on: those of the
 * nodes runs_on (np_placement_cpus_for()), or with runs_on NULL every CPU
 * but ReservedCPUs= (all of them when that would leave none). Caller
 * frees. */
NpMask *np_placement_memory_cpus(NpManager *m, const NpMask *runs_on);

int np_placement_submit(NpManager *m, int pid, const NpMask *nodes, NpPlaceReason reason, NpPlaceDoneFn done,
                        void *userdata, GError **error);
/* np_placement_submit() of its memory only: its pages move to `nodes` and
 * are held there, its threads may run on np_placement_memory_cpus(runs_on)
 * (np_backend_confine_memory()). Also NP_ERROR_NOT_SUPPORTED where the
 * backend cannot hold memory. */
int np_placement_submit_memory(NpManager *m, int pid, const NpMask *nodes, const NpMask *runs_on, NpPlaceReason reason,
                               NpPlaceDoneFn done_fn, void *userdata, GError **error);

/* The CPUs a process placed on `nodes` runs on: the nodes' online CPUs minus
 * ReservedCPUs (unless that leaves none, which is logged); every online CPU
 * when the nodes have none (memory-only nodes). Caller frees. */
NpMask *np_placement_cpus_for(NpManager *m, const NpMask *nodes);
