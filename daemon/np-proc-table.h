/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The cheap tier of process sampling: what every scan reads of every PID.
 *
 * The table remembers every process it has seen. Each scan it lists <root>/proc
 * once (readdir) and compares the listing with the known set, so a new
 * process is read in full once (its stat, through a directory descriptor so
 * that stat and the kept descriptor belong to the same process) and an old
 * one is not re-read from scratch. For every known user process it then
 * reads only `statm` (resident memory), with pread() on a descriptor kept
 * open between scans. `stat` (CPU ticks, comm, threads) is read only for a
 * process whose resident memory (plus hugetlb pages, see
 * np_proc_table_watch_hugetlb()) is at least the caller's threshold, whose
 * text size changed (an exec: comm may have changed), or that the caller
 * asks for (included, placed or pinned). Kernel threads are recognised once
 * and never read again.
 *
 * Descriptors: at most `max_kept` descriptors are kept (each costs the
 * kernel about 4 kB once read: the seq_file buffer). A process beyond the cap
 * is read with open+read+close of `stat` every scan instead, and gets a kept
 * descriptor when one frees up. A process whose stat is read every scan
 * (above the threshold, or asked for) also gets a kept stat descriptor while
 * there is room under the same cap, closed when that ends or it exits; and
 * beside it, at their first read, descriptors of its status and cgroup
 * (np_proc_table_read_detail()), closed with it.
 *
 * Identity: a kept descriptor is bound to the process it was opened for
 * (procfs pins the struct pid, not the number): once that process is reaped,
 * pread() fails with ESRCH even if the PID has been given to a new process,
 * so a descriptor never yields another process's data. A zombie reads as
 * zero resident memory. A process without a descriptor (a kernel thread, or
 * one beyond the cap) is identified by its start time, read from stat; for a
 * kernel thread stat is read again only when the inode number readdir reports
 * for /proc/<pid> changes (procfs gives the directory of a new process a new
 * inode).
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include "np-sample.h"

/* Default cap on kept descriptors (see np_proc_fd_budget()). */
#define NP_PROC_KEPT_FDS_MAX 8192u
/* Descriptors left for everything else the daemon opens. */
#define NP_PROC_FDS_RESERVED 512u

/* NpProcEntry.text_pages before the first statm read. */
#define NP_TEXT_UNKNOWN UINT32_MAX
/* NpProcEntry.text_pages after a read of text 0: no code mapped, which is
 * an exec under way (the new mm is in place, the new program's code not
 * yet; its comm may or may not be set) or a process with no mm left. Any
 * later text counts as an exec, so that stat (comm) is read once the exec
 * is over, and only then. */
#define NP_TEXT_EXECING (UINT32_MAX - 1)

/* The fields every scan touches for every process come first (one cache
 * line), those of a stat read after them. */
typedef struct {
        int pid;
        int fd; /* kept statm descriptor, or -1 (bookkeeping, read-only for callers) */
        int stat_fd; /* kept stat descriptor of a process whose stat is read every scan, or -1 */
        int detail_fd[2]; /* kept status and cgroup descriptors (np_proc_table_read_detail()), or -1 */
        uint32_t ino; /* d_ino of /proc/<pid> in the last listing (procfs inode numbers are 32-bit) */
        uint32_t text_pages; /* statm text at the last read: changes on exec; NP_TEXT_UNKNOWN
                              * before the first, NP_TEXT_EXECING after a read of 0 */
        uint32_t seen_gen; /* scan generation of the last listing that held it */
        bool stat_read; /* stat was read this scan: ticks, cpu_usage, threads are fresh */
        bool exited; /* at the last stat read: a zombie (or dead) with no thread left running */
        bool new_this_scan; /* first seen in this scan */
        bool kthread; /* never reported, never read again (bookkeeping) */
        bool no_statm; /* the tree has no statm (a fixture): stat is read every scan (bookkeeping) */
        uint64_t rss_bytes; /* resident memory, this scan (statm, or stat beyond the cap) */
        uint64_t size_bytes; /* mapped, this scan (statm size, or stat vsize): hugetlb mappings too */
        uint64_t shared_bytes; /* of rss_bytes, the file and shmem pages (statm shared); 0
                                * when only stat was read */
        uint64_t hugetlb_bytes; /* hugetlb pages (status HugetlbPages) at the last look, 0 when
                                 * not looked at (np_proc_table_watch_hugetlb()) */
        uint64_t hugetlb_size; /* size_bytes at that look */
        uint32_t hugetlb_gen; /* scan generation of that look, 0 = never */
        uint64_t starttime; /* clock ticks after boot: identity with pid */

        uint64_t ticks; /* utime+stime at the last stat read */
        uint64_t ticks_usec; /* CLOCK_MONOTONIC of that read */
        double cpu_usage; /* CPUs between the last two stat reads; 0 until there are two */
        unsigned threads; /* at the last stat read */
        char comm[16]; /* from stat (TASK_COMM_LEN): when new, after an exec, at every stat read */
} NpProcEntry;

typedef struct NpProcTable NpProcTable;

/* Whether stat must be read this scan for an entry below the memory
 * threshold (e.g. included, pinned or placed). `e` has fresh rss_bytes. */
typedef bool (*NpProcWantsStat)(void *userdata, const NpProcEntry *e);

/*
 * Raise RLIMIT_NOFILE's soft limit to the hard limit and return how many
 * descriptors the table may keep: min(NP_PROC_KEPT_FDS_MAX, soft limit -
 * NP_PROC_FDS_RESERVED), 0 when the limit is below the reserve. Never fails:
 * when the limit cannot be raised, the cap follows the soft limit in force.
 * *soft_out (may be NULL) gets the soft limit in force afterwards.
 */
unsigned np_proc_fd_budget(uint64_t *soft_out);

/* A new, empty table keeping at most max_kept descriptors. */
NpProcTable *np_proc_table_new(unsigned max_kept);
/* Closes every kept descriptor. NULL is fine. */
void np_proc_table_free(NpProcTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpProcTable, np_proc_table_free)

/*
 * One scan (see the top of this file). min_rss_bytes: entries whose
 * np_proc_entry_memory() is at or above it get their stat read; wants (may be NULL) is asked for the others. Returns
 * the number of user processes listed (>= 0), or a negative errno when
 * <root>/proc cannot be listed (the table is then unchanged). Processes that
 * vanish while being read are dropped quietly; malformed contents of one
 * process are skipped like a vanished process.
 */
int np_proc_table_scan(NpProcTable *t, uint64_t min_rss_bytes, NpProcWantsStat wants, void *userdata);

/*
 * Hugetlb pages are not resident memory (statm, stat rss): a process whose
 * memory is in huge pages would never reach the threshold. Tell the table
 * before a scan whether some hugetlb pool has pages in use (in_use) and
 * whether more pages are in use than at the scan before (changed: some
 * process got huge pages): while in use, the scan looks at the HugetlbPages
 * line of status for a process whose resident memory is below the threshold
 * (the scan's, or min_bytes when higher) but whose mapped size is not (only a mapping can hold huge pages), when
 * its mapped size changed since its last look, more pages are in use, it held hugetlb pages
 * at its last look, or NP_HUGETLB_RECHECK_SCANS scans passed (a page of a
 * shared hugetlbfs file it maps is faulted in by another process); and
 * counts them with its resident memory against the threshold. While no
 * pool is in use, nothing is read.
 */
void np_proc_table_watch_hugetlb(NpProcTable *t, bool in_use, bool changed, uint64_t min_bytes);
#define NP_HUGETLB_RECHECK_SCANS 12u

/* Resident memory plus hugetlb pages: what the threshold is compared to. */
static inline uint64_t np_proc_entry_memory(const NpProcEntry *e) {
        return e->rss_bytes + e->hugetlb_bytes;
}

/* The user processes of the last scan, sorted by pid: a GPtrArray of
 * NpProcEntry* owned by the table, valid until the next scan or free. */
const GPtrArray *np_proc_table_entries(const NpProcTable *t);

/* stat of pid, read now through its kept stat descriptor (the kernel formats
 * it for this read), without touching the entry. 0, -ENOENT when the table
 * keeps no stat descriptor for pid (read it by path), -ESRCH when the
 * process it was opened for is gone, -EINVAL for malformed contents. */
int np_proc_table_read_stat(NpProcTable *t, int pid, NpPidStat *st);

/* The files of a process read beside stat when its details are (np-process.h). */
typedef enum {
        NP_PROC_STATUS = 0, /* /proc/<pid>/status */
        NP_PROC_CGROUP = 1, /* /proc/<pid>/cgroup */
} NpProcDetail;

/*
 * Read a details file of pid whole, into *contents (NUL-terminated, caller
 * g_free()s). For a process whose stat descriptor is kept (it is read every
 * scan, below the cap, on a real procfs), the file's descriptor is kept
 * beside it under the same cap and each read is one pread() from offset 0
 * (instead of open, read, read and close); it is closed with the stat
 * descriptor. Identity: the descriptor is opened by path, then the stat
 * descriptor (bound to the process the table knows) is read once more; if
 * that still succeeds, the process had not been reaped at the open, so the
 * pid was still its own. Any other pid (unknown to the table, a kernel
 * thread, beyond the cap, a fixture tree; t NULL) is read by path. 0, -ESRCH
 * when the process is gone (or the file is empty), -EINVAL for pid <= 0, or
 * another negative errno.
 */
int np_proc_table_read_detail(NpProcTable *t, int pid, NpProcDetail which, char **contents);

/* Parse a statm line ("size resident shared text lib data dt", in pages).
 * 0 with *resident, *text, *size and *shared (the last two may be NULL)
 * set, or -EINVAL for anything else. */
int np_parse_statm(const char *buf, uint64_t *resident, uint64_t *text, uint64_t *size, uint64_t *shared);
