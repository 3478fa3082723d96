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
#include "np-sample.h"

typedef struct {
        uint64_t moved_bytes;     /* bytes that left the plan's source nodes (numa_maps before vs after) */
        uint64_t calls;           /* migrate_pages() calls made */
        uint64_t failed_pages;    /* sum of positive migrate_pages() returns (pages not moved) */
        uint64_t usec;            /* wall time of the whole execution, including pacing */
        uint64_t paced_usec;      /* part of usec spent sleeping for MaxRate */
        int error;                /* 0, or the first hard error (-EPERM, -EINVAL, ...); -ESRCH when the process went away */
        NpNumaMaps before;        /* per-node pages before (empty if unreadable) */
        NpNumaMaps after;         /* per-node pages after (empty if the process is gone) */
} NpMigrateResult;

void np_migrate_result_clear(NpMigrateResult *r);

/*
 * Execute `plan` (GArray of NpMovePair) for pid. max_rate is bytes per second,
 * 0 for unlimited: after each call the executor sleeps so that the bytes moved
 * so far do not exceed max_rate * elapsed; the pacing granularity is one
 * pair's worth of the process's memory (a single call is never split).
 *
 * Returns 0 when the plan ran to the end (pages that could not be moved are
 * counted in failed_pages, not an error); -ESRCH when the process exited
 * (the plan ends quietly, result holds what was done); another negative errno
 * for a hard failure (logged with pid and nodes named). `r` is always filled.
 */
int np_migrate_execute(pid_t pid, const GArray *plan, uint64_t max_rate, NpMigrateResult *r);

/* The raw syscall for one pair, sized for any node id. Returns the number of
 * pages not moved (>= 0) or a negative errno. */
long np_migrate_pair(pid_t pid, unsigned src, unsigned dst);
