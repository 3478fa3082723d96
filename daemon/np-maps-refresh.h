/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * When to read a significant process's /proc/<pid>/numa_maps, and its other
 * details (pure logic).
 *
 * Reading numa_maps walks the target's page tables under its mmap lock: for a
 * 1 GB process with 4 kB pages about 3 ms of the daemon's CPU, during which
 * the target's own mmap/munmap calls wait. So the manager reads it only when
 * it can have changed in a way that matters:
 *  - when the process becomes significant (or has never been read), and
 *    once more at the scan that first measures its CPU use, when it was
 *    read before (while it started: allocating its memory, setting its
 *    policy; the policy decides it at that scan, np-classify.c);
 *  - when its resident memory changed by more than NP_MAPS_RSS_CHANGE_PERCENT
 *    since the last read (either way);
 *  - otherwise when the last read is max_scans scans old (LocalityRefreshScans=)
 *    and the process ran since (its CPU ticks moved); so a process that ran
 *    again after a long sleep is read at once. One that did not run since the
 *    last read is not read again by age: the pages of a process that does not
 *    run stay where they are (NUMA balancing moves pages on the task's own
 *    accesses; mbind and the daemon's moves are covered above), and what
 *    another process may do to them meanwhile (a migratepages(8) by hand,
 *    demotion to a slower tier) matters to no one until it runs, when it is
 *    read; every move is planned from a fresh read (np-placement.c), and reclaim
 *    shows in the resident memory.
 *    The age rule is skipped for a process whose memory is settled: its
 *    cpuset allows one memory node and every page of the last read was on
 *    it (a process the daemon placed on one node, as a rule). New pages can
 *    only come from that node, and neither migrate_pages(2) nor mbind(2)
 *    can move its pages elsewhere (both keep to the target's cpuset), so
 *    only the resident memory can tell of a change, and it is watched.
 *    It is skipped too for a member of a cgroup group whose pages the
 *    policy takes from the cgroup's memory.numa_stat (np-snapshot.c): the
 *    group's pages per node are read there every scan without walking
 *    any page table;
 *  - and around a move: before planning it the manager reads it, after it the
 *    mover's own "after" read is taken as the fresh value
 *    (np_maps_age_read() with no read of the manager's own), or the read
 *    that counted what the kernel moved when the memory nodes narrowed
 *    (np-placement.c); a process of a unit whose memory nodes were set after
 *    its own move is read again at the next scan (np_maps_age_invalidate()).
 */
#include <stdbool.h>
#include <stdint.h>

#define NP_MAPS_RSS_CHANGE_PERCENT 5u

typedef struct {
        bool valid; /* read since the process (last) became significant */
        uint64_t rss_bytes; /* resident memory when it was read */
        uint64_t cpu_ticks; /* its utime+stime when it was read */
        unsigned scans; /* scans since it was read */
        uint64_t read_usec; /* CLOCK_REALTIME of the read (LocalityTimestamp), 0 = never */
        bool starting; /* read before its CPU use was measured (set by the caller after
                        * np_maps_age_read(), which clears it) */
} NpMapsAge;

typedef enum {
        NP_MAPS_KEEP = 0, /* not due: keep the last read */
        NP_MAPS_DUE_NEW, /* never read, or significant again */
        NP_MAPS_DUE_RSS, /* resident memory changed by more than the percentage */
        NP_MAPS_DUE_AGE, /* max_scans scans old */
} NpMapsDue;

/* Whether numa_maps must be read this scan for a significant process whose
 * resident memory is now rss_bytes and CPU time cpu_ticks (utime+stime).
 * max_scans 0 is taken as 1 (every scan). settled: its memory can only be
 * where it was read (above), or where it is is known otherwise (its group's
 * memory.numa_stat), so it is never due by age. Pure: does not change *a. */
NpMapsDue np_maps_refresh_due(const NpMapsAge *a, uint64_t rss_bytes, uint64_t cpu_ticks, unsigned max_scans,
                              bool settled);

/* numa_maps was read now (by the manager, or by the mover around a move):
 * valid, scans 0, rss_bytes, cpu_ticks and read_usec recorded, starting
 * cleared. */
void np_maps_age_read(NpMapsAge *a, uint64_t rss_bytes, uint64_t cpu_ticks, uint64_t realtime_usec);

/* A scan passed without reading it. */
void np_maps_age_scan(NpMapsAge *a);

/* The last read no longer holds: the process stopped being significant
 * (the next time it is, read it), or the kernel moved its pages (read it at
 * the next scan). read_usec is kept (it still says how old the published
 * values are). */
void np_maps_age_invalidate(NpMapsAge *a);

/* Text for logs: "new", "rss", "age" or "keep". */
const char *np_maps_due_to_string(NpMapsDue d);

/*
 * The other details of a significant process: /proc/<pid>/status (allowed
 * CPUs and nodes), task/<tid>/stat of every thread (where they run, CPU by
 * node) and its cgroup; about 25 us of the daemon's CPU per process. They
 * change when the process runs (its threads move, it creates threads, it
 * calls sched_setaffinity or set_mempolicy), so they are read when:
 *  - they were never read, or the process is significant again;
 *  - its CPU ticks moved or its thread count changed since the last read;
 *  - otherwise every max_scans scans (LocalityRefreshScans=): what another
 *    process does to it while it sleeps (taskset -p, a cgroup move by a
 *    container runtime) is seen within that bound;
 *  - and before every move (np-placement.c reads them then, whatever this says).
 */
typedef struct {
        bool valid;
        uint64_t cpu_ticks; /* utime+stime at the last read */
        unsigned threads; /* its thread count then */
        unsigned scans; /* scans since */
} NpDetailsAge;

/* Whether the details are due for a process with cpu_ticks and threads now.
 * max_scans 0 is taken as 1. Pure. */
bool np_details_due(const NpDetailsAge *a, uint64_t cpu_ticks, unsigned threads, unsigned max_scans);

/* They were read now. */
void np_details_age_read(NpDetailsAge *a, uint64_t cpu_ticks, unsigned threads);

/* A scan passed without reading them. */
void np_details_age_scan(NpDetailsAge *a);

/* Not significant any more: read them the next time it is. */
void np_details_age_invalidate(NpDetailsAge *a);
