/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Sampling of per-node and per-process usage. Pure parsers take a buffer;
 * thin readers read through np-sysroot. Nothing here keeps state between
 * scans: the manager keeps the previous samples and takes deltas.
 */
#include <errno.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "np-lex.h"
#include "np-nodemask.h"
#include "np-topology.h"

/* ---- /proc/stat ------------------------------------------------------- */

typedef struct {
        uint64_t busy; /* user+nice+system+irq+softirq+steal, in clock ticks */
        uint64_t total; /* busy + idle + iowait */
} NpCpuTicks;

/* Parse /proc/stat: replaces the contents of `per_cpu` (GArray of NpCpuTicks
 * indexed by CPU id, sized to the highest "cpuN" line + 1, CPUs absent from
 * the file left zero). 0, or -EINVAL (per_cpu emptied) when there is no cpuN
 * line, a cpuN line has fewer than 4 numbers, anything not a number, or
 * counters whose busy or total sum overflows 64 bits. */
int np_parse_proc_stat(const char *buf, GArray *per_cpu);

/* ---- per node --------------------------------------------------------- */

/* A node's pool of hugetlb pages of one size. */
typedef struct {
        uint64_t page_bytes; /* the page size */
        uint64_t free_pages; /* nodeN/hugepages/hugepages-<kB>kB/free_hugepages */
} NpHugePool;

typedef struct {
        unsigned id;
        uint64_t mem_total_bytes;
        uint64_t mem_free_bytes; /* MemFree (+ Inactive(file) when counted as free) */
        uint64_t mem_free_strict_bytes; /* MemFree only */
        double cpu_capacity; /* number of CPUs of the node */
        double cpu_busy; /* CPUs busy over the last interval (0..capacity) */
        NpHugePool huge[NP_HUGE_SIZES_MAX]; /* the pools of the sizes the machine has pages
                                             * of, in the order of the topology's sizes */
        unsigned n_huge;
} NpNodeSample;

/* What np_sample_nodes() saw of the hugetlb pools machine-wide. */
typedef struct {
        bool in_use; /* some pool has pages in use (nr_hugepages > free_hugepages) */
        uint64_t used_pages; /* huge pages in use, every size: when it grows, some process
                              * got huge pages */
} NpHugeSample;

/*
 * Read every node's meminfo and /proc/stat. `prev_ticks` (may be NULL on the
 * first scan) is the previous per-CPU tick array; `ticks_out` receives this
 * scan's (the caller keeps it for next time; may be NULL). The contents of
 * `out` are replaced by one NpNodeSample per topology node in order.
 * cpu_busy is the sum over the node's CPUs of busy delta / total delta, each
 * clamped to 0..1 (0 for a CPU absent from prev_ticks or whose counters did
 * not advance). A synthetic topology reads /proc/meminfo instead of nodeN's.
 * Hugetlb pools: for each of the topology's page sizes, the machine's
 * nr_hugepages and free_hugepages (/sys/kernel/mm/hugepages); a size with
 * pages gets a pool on every node (its nodeN free_hugepages; 0 when that
 * cannot be read), a size without none (two reads per size and scan on a
 * machine without pools). *huge (may be NULL) gets the machine-wide view.
 * 0, a negative errno from reading, or -EINVAL for malformed contents.
 */
int np_sample_nodes(const NpTopology *t, bool inactive_file_is_free, const GArray *prev_ticks, GArray *ticks_out,
                    GArray *out, NpHugeSample *huge);

/* Node n's MemFree and MemTotal now, in bytes (as np_sample_nodes() reads
 * them: the machine's for a synthetic topology; MemTotal falls back to
 * n->mem_total_bytes). 0, a negative errno from reading, or -EINVAL. */
int np_sample_mem_free_now(const NpTopology *t, const NpNode *n, uint64_t *free_bytes, uint64_t *total_bytes);

/*
 * Did the machine gain, from `before` to `now` (node samples of the same
 * nodes, each cpu_busy over its own interval), what one more significant
 * process brings: at least `mem` bytes more in use over all nodes
 * (mem_total - mem_free, less the free huge pages of their pools, which
 * meminfo counts as used), or at least `cpu` more CPUs busy over all nodes
 * once `own_cpu` (CPUs the daemon itself used more than before, its moves)
 * is taken out (`cpu` 0: CPU is no sign)? Pure. False when either is NULL.
 */
bool np_sample_gained(const GArray *before, const GArray *now, uint64_t mem, double cpu, double own_cpu);

/* ---- per process ------------------------------------------------------ */

/* Buffer size for a comm from /proc/PID/stat. A user task's comm is at most
 * NP_TASK_COMM_LEN (15) bytes, but the kernel shows longer names for kernel
 * threads (e.g. "kworker/u8:2-events_unbound"), kept up to 63 bytes here. */
#define NP_COMM_MAX 64

typedef struct {
        int pid;
        char comm[NP_COMM_MAX]; /* as in /proc/pid/stat, between the first '(' and the LAST ')' */
        char state;
        int ppid;
        unsigned long flags; /* PF_* */
        uint64_t utime, stime; /* clock ticks */
        long num_threads;
        uint64_t starttime; /* clock ticks after boot */
        uint64_t vsize; /* bytes mapped (hugetlb mappings too) */
        int64_t rss_pages; /* resident pages (hugetlb pages are not) */
        int processor; /* last CPU */
} NpPidStat;

#define NP_PF_KTHREAD 0x00200000UL
/* PF_EXITING (include/linux/sched.h): set when a task enters do_exit(). */
#define NP_PF_EXITING 0x00000004UL

/* Parse /proc/<pid>/stat (a NUL-terminated buffer; no allocation). Survives
 * any comm, e.g. "a) (b c" or "" (a longer comm is truncated to
 * NP_COMM_MAX - 1 bytes). Every field up to processor (39) must be present
 * and numeric. 0, or -EINVAL (out untouched) for a truncated or malformed
 * buffer. */
int np_parse_pid_stat(const char *buf, NpPidStat *out);

typedef struct {
        uint64_t vm_rss_bytes;
        uint64_t hugetlb_bytes; /* HugetlbPages: hugetlb pages mapped, not in VmRSS */
        unsigned threads;
        unsigned uid; /* real uid */
        NpMask *cpus_allowed; /* Cpus_allowed_list; owned, may be NULL if absent */
        NpMask *mems_allowed; /* Mems_allowed_list; owned, may be NULL if absent */
} NpPidStatus;

/* Parse /proc/<pid>/status into *out (overwritten; VmRSS or HugetlbPages
 * absent, as for kernel threads or an older kernel, gives 0). 0, or -EINVAL (nothing allocated) when Uid or
 * Threads is missing or a known key's value is malformed. Free the masks
 * with np_pid_status_clear(). */
int np_parse_pid_status(const char *buf, NpPidStatus *out);
void np_pid_status_clear(NpPidStatus *s);

/* Only the HugetlbPages line of a /proc/<pid>/status buffer, in bytes (the
 * per-scan look at processes that may hold hugetlb pages: no allocation).
 * 0 with *bytes set (0 when the line is absent), or -EINVAL for a malformed
 * value. */
int np_parse_status_hugetlb(const char *buf, uint64_t *bytes);

/* The numa_pages_migrated line of a /proc/<pid>/task/<tid>/sched buffer:
 * pages of that thread's process the kernel's NUMA balancing moved on the
 * thread's faults. 0 with *pages set, -ENOENT when the line is absent (a
 * kernel without CONFIG_NUMA_BALANCING or CONFIG_SCHED_DEBUG), -EINVAL for
 * a malformed value. */
int np_parse_sched_numa_migrated(const char *buf, uint64_t *pages);

/* One thread's NUMA hinting faults on pages of one node, from its sched
 * file: counts the kernel's NUMA balancing keeps and decays (halved at
 * each of its scan periods), on private pages (only this thread touched
 * them of late) and shared ones. */
typedef struct {
        unsigned node;
        uint64_t private_faults;
        uint64_t shared_faults;
} NpNodeFaults;

/* The "numa_faults node=N task_private=P task_shared=S ..." lines of a
 * /proc/<pid>/task/<tid>/sched buffer (6.1 and later print one per online
 * node once the thread has faulted; group_private and group_shared, the
 * faults of its NUMA group, are not taken), in a new GArray of NpNodeFaults
 * in *out, in the order of the lines. 0; -ENOENT when there is no such line
 * (no faults yet, or a kernel without CONFIG_NUMA_BALANCING or
 * CONFIG_SCHED_DEBUG: *out is not set); -EINVAL for a malformed line. */
int np_parse_sched_numa_faults(const char *buf, GArray **out);

/* CPU use on one node (a process's, by where its threads ran). */
typedef struct {
        unsigned node;
        double cpu; /* CPUs */
} NpNodeCpu;

/* Add the NpNodeCpu of `add` (may be NULL) to `acc`, node by node (a node
 * not in acc is appended). */
void np_node_cpu_add(GArray *acc, const GArray *add);

/*
 * Readers. Each returns 0, or -ESRCH when the process is gone (any ENOENT or
 * ESRCH while reading, or an empty stat), -EINVAL for pid <= 0 or
 * malformed contents, or another negative errno (e.g. -EACCES for another
 * user's files). A vanished process is an ordinary outcome that callers
 * skip silently. np_read_pid_stat() reads into a stack buffer and does not
 * allocate: it is the per-process, per-scan hot path. status is read with
 * np_proc_table_read_detail() (np-proc-table.h), then np_parse_pid_status().
 */
int np_read_pid_stat(int pid, NpPidStat *out);

/* Clock ticks per second (sysconf(_SC_CLK_TCK)). */
long np_clock_ticks(void);
