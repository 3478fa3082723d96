/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The migration executor: carries out a plan with migrate_pages(2), one
 * (source, destination) pair per call with single-node masks, so the kernel
 * does exactly the planned move. Accounting comes from numa_maps before and
 * after, not from assumptions.
 */
#include <glib.h>
#include <stdint.h>
#include <sys/types.h>
#include "np-migrate-plan.h"
#include "np-numa-maps.h"
#include "np-sample.h"

typedef struct {
        uint64_t moved_bytes; /* bytes the calls moved, see np_migrate_moved_bytes() */
        uint64_t calls; /* migrate_pages() calls made */
        uint64_t failed_bytes; /* not moved: the positive migrate_pages() returns
                                * (np_migrate_failed_bytes()), and what stayed on the source
                                * of a pair whose destination was full (ENOMEM) */
        NpMask *full; /* destinations that were full (a pair failed with ENOMEM); NULL when none */
        uint64_t usec; /* wall time of the whole execution, including pacing */
        uint64_t paced_usec; /* part of usec spent sleeping for MaxRate */
        int error; /* 0, or the first hard error (-EPERM, -EINVAL, ...); -ESRCH when the process went away */
        NpNumaMaps before; /* per-node pages before (empty if unreadable) */
        NpNumaMaps after; /* per-node pages after (empty if the process is gone) */
} NpMigrateResult;

/* Frees before/after and zeroes the result. Safe on a zeroed result. */
void np_migrate_result_clear(NpMigrateResult *r);

/*
 * Execute `plan` (GArray of NpMovePair) for pid: numa_maps before, one
 * np_migrate_pair() per pair in order, numa_maps after.
 *
 * Pacing: max_rate is bytes per second, 0 for unlimited. After each call
 * (the last one included) the executor sleeps so that the bytes moved so far
 * do not exceed max_rate * elapsed since the start of the execution. The
 * bytes of a call are estimated without re-reading numa_maps: what its source
 * held at that point of the plan, simulated from the `before` snapshot (a
 * pair moves all of its source's bytes onto its destination). The pacing is
 * therefore as fine as one pair, i.e. one node's worth of the process's
 * memory: a single call is never split, so one call may run at full speed
 * and the sleep that follows brings the average back to max_rate. A
 * one-pair plan is paced only by the sleep after it (which delays the end of
 * the move and so the daemon's next move). When numa_maps could not be read
 * before, the estimate is 0 and nothing is paced.
 *
 * Cancelling: `cancel` (may be NULL) is read atomically before every call
 * and between the 50 ms slices of every pacing sleep; when it is non-zero
 * the rest of the plan is skipped and -ECANCELED is returned. So a cancel
 * waits for at most one migrate_pages() call. The executor runs on the
 * mover's worker thread (np-mover.h), never on the daemon's main loop.
 *
 * A pair whose destination is full (ENOMEM: the kernel stops at the first
 * page it cannot allocate there, after moving what fitted) is no error: its
 * destination goes in r->full, the rest of the plan still runs (other
 * destinations may have room), and what stayed on its source is added to
 * failed_bytes (np_migrate_full_bytes()), logged once at notice level.
 *
 * Pages a call could not move (a positive return) although its destination
 * had room were busy: the kernel tries a page ten times in a row and gives
 * up, and a hugetlb page is busy while another thread holds its mapping's
 * lock. Each such pair whose source no other pair refills is called once
 * more NP_MIGRATE_RETRY_USEC after the plan (cancellable), and its failed
 * bytes lose what left its source meanwhile (numa_maps before and after the
 * retry, np_migrate_retry_failed_bytes()): a second call's return does not
 * count the pages it could not isolate, so it is not used.
 *
 * Returns 0 when the plan ran to the end (pages that could not be moved are
 * counted in failed_bytes, not an error); -ESRCH when the process exited
 * before, during or right after the plan (quietly, logged at debug level
 * only; an EINVAL from a zombie or exiting process counts as exited; result
 * holds what was done, moved_bytes is then the estimate described at
 * np_migrate_moved_bytes()); another negative errno (-EPERM, -EINVAL, ...)
 * for a hard failure: logged as a warning with NP_MESSAGE_MIGRATION_FAILED,
 * naming the pid, the pair and the error; the rest of the plan is skipped.
 * -ECANCELED when cancelled (see above). -EINVAL without a call
 * when pid <= 0 or plan is NULL.
 *
 * `r` is always filled; it is overwritten, not freed first: release it with
 * np_migrate_result_clear() before reusing it. before/after are then valid
 * (possibly empty) NpNumaMaps with a non-NULL per_node array.
 */
int np_migrate_execute(pid_t pid, const GArray *plan, uint64_t max_rate, const gint *cancel, NpMigrateResult *r);
#define NP_MIGRATE_RETRY_USEC (100 * 1000)

/* A range of a process's address space whose pages other processes map too
 * (its group's shared memory), moved whatever their map count. */
typedef struct {
        uint64_t start, end; /* end exclusive */
        uint64_t page_bytes; /* the mapping's page size (a hugetlb mapping's huge pages) */
} NpMigrateRange;

/* The same, with the process's numa_maps as read just before by the caller
 * (copied into r->before) instead of reading it again; NULL reads it. A
 * process that is gone is then found by the first migrate_pages() call.
 *
 * `shared` (NpMigrateRange, may be NULL): after the pairs, the pages of
 * these ranges that lie on a pair's source go where the plan takes that
 * node (its chain of pairs followed), with move_pages(2) and
 * MPOL_MF_MOVE_ALL, so pages other processes map too move as well: in
 * batches of NP_MIGRATE_RANGE_BATCH pages, each looked up first so that a
 * page already on its node is not touched; paced with the pairs (max_rate).
 * CAP_SYS_NICE is raised in the calling thread's effective set for those
 * calls and its former state put back. Their pages that did not move count
 * in failed_bytes; pages not present are skipped; each move_pages(2) call
 * that moves counts in calls. A range whose call fails (EPERM without
 * CAP_SYS_NICE, EACCES for a node the process may not use) is logged as a
 * warning and skipped. Cancelling is checked between batches. */
int np_migrate_execute_from(pid_t pid, const GArray *plan, const GArray *shared, const NpNumaMaps *before,
                            uint64_t max_rate, const gint *cancel, NpMigrateResult *r);
#define NP_MIGRATE_RANGE_BATCH 4096u

/* Where the plan takes a page on `node` (pure): its pairs followed in order
 * from that node; -1 when no pair moves it. */
int np_migrate_plan_dest(const GArray *plan, unsigned node);

/*
 * moved_bytes, from numa_maps truth, chain-aware (pure). The first n_done
 * pairs of `plan` were carried out (calls that returned >= 0, and a last
 * call that failed with a hard error, which may have moved part of its
 * source first: np_migrate_execute() counts it).
 *
 * Walks the pairs over a per-node state initialised from `before`: a pair
 * moves what its source holds at that point, minus what stayed there, onto
 * its destination; the moved amounts are summed. "What stayed" is
 * after[src] (capped at what the source held) when no later pair refills that
 * source; when a later pair refills it (a chain, e.g. {2,3,4} -> {3,4,5}:
 * 4->5, 3->4, 2->3, or without the rule 0-7 -> {3,4}: 4->3 ... 3->4) the
 * after value mixes both, so everything is assumed to have left.
 *
 * Hence: without chains (always the case with the skip rule when |from| !=
 * |to|) the result is exactly the sum over the source nodes of
 * max(0, before - after), the bytes that left them. With chains, pages that
 * are physically copied twice count twice, as in the kernel's
 * pgmigrate_success; net "before - after" would report 0 for 4->3 then 3->4
 * and hide the cost the rule exists to avoid. Pages that failed to move on a
 * refilled source are over-counted (they are in failed_bytes). after == NULL
 * (process gone) gives the estimate that every pair moved all its source held.
 */
uint64_t np_migrate_moved_bytes(const GArray *plan, guint n_done, const NpNumaMaps *before, const NpNumaMaps *after);

/*
 * Bytes left by the pairs whose destination was full (pure): for each pair i
 * with full[i], what `after` shows on its source, unless the source is the
 * destination of another pair of the plan (then it is a target node and its
 * pages are not left outside). A source counts once.
 */
uint64_t np_migrate_full_bytes(const GArray *plan, const bool *full, const NpNumaMaps *after);

/*
 * The bytes behind `pages`, a positive migrate_pages(2) return for a pair
 * off node `src` (pure): the kernel counts a huge page it could not move as
 * one page, so the hugetlb pages `after` still shows on src are taken first
 * (largest size first), the rest as base pages of `base_page` bytes; never
 * more than after shows on src (after == NULL: pages * base_page).
 */
uint64_t np_migrate_failed_bytes(uint64_t pages, unsigned src, const NpNumaMaps *after, uint64_t base_page);

/*
 * What a retried pair still left behind (pure): failed_bytes, what it left
 * after the first call, less what left its source `src` between `mid`
 * (numa_maps before the retry) and `after`; never below 0.
 */
uint64_t np_migrate_retry_failed_bytes(uint64_t failed_bytes, unsigned src, const NpNumaMaps *mid,
                                       const NpNumaMaps *after);

/*
 * The pacing computation (pure): microseconds to sleep so that done_bytes <=
 * max_rate * (elapsed_usec + sleep) / 1e6, i.e. max(0, ceil(done_bytes * 1e6
 * / max_rate) - elapsed_usec), without overflow (saturates at UINT64_MAX).
 * 0 when max_rate is 0 (unlimited).
 */
uint64_t np_migrate_pace_usec(uint64_t done_bytes, uint64_t max_rate, uint64_t elapsed_usec);

/* The raw syscall for one pair: migrate_pages(pid, maxnode, {src}, {dst}),
 * both masks sized for the higher id (maxnode = array bits + 1, since the
 * kernel reads maxnode - 1 bits). Returns the number of pages not moved
 * (>= 0) or a negative errno (-ESRCH no such process, -EINVAL a node without
 * memory or an id beyond the kernel's limit, or a process without memory,
 * -EPERM not allowed). Logs nothing. */
long np_migrate_pair(pid_t pid, unsigned src, unsigned dst);
