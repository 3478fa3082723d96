/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Where a process's pages are: the parser of /proc/PID/numa_maps (bytes by
 * node, hugetlb by page size, interleaved and balanced parts, the lines of
 * shared memory objects), its thin reader, and pure helpers on the
 * NpNodeBytes arrays the rest of the daemon adds and subtracts.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "np-nodemask.h"

typedef struct {
        unsigned node;
        uint64_t bytes;
} NpNodeBytes;

/* Hugetlb bytes of one page size on one node. */
typedef struct {
        unsigned node;
        uint64_t page_bytes;
        uint64_t bytes;
} NpHugeBytes;

/* One numa_maps line of memory that processes can share (file= a shmem
 * object: "/dev/zero (deleted)" for shared anonymous memory, "/SYSV...",
 * "/memfd:...", "/dev/shm/..."), as this process maps it. Which object it is
 * (device and inode) only /proc/PID/maps tells (np-shmaps.h). */
typedef struct {
        uint64_t start; /* the mapping's start address */
        uint64_t page_bytes; /* kernelpagesize_kB */
        uint64_t bytes; /* its pages resident in this mapping */
        unsigned mapmax; /* the most processes mapping one of its pages (1 when absent) */
        GArray *per_node; /* NpNodeBytes sorted by node, 0 omitted */
} NpNumaMapsShm;

/* One numa_maps line of a file mapping counted in balanced_bytes (file= not
 * a shmem object, the default policy, not huge, with pages). The kernel's
 * balancing scans it only when the mapping may be written; its permissions
 * only /proc/PID/maps tells (np-shmaps.h). */
typedef struct {
        uint64_t start; /* the mapping's start address */
        uint64_t bytes; /* its pages resident in this mapping */
} NpNumaMapsFile;

typedef struct {
        GArray *per_node; /* NpNodeBytes sorted by node, nodes with 0 omitted */
        GArray *huge_per_node; /* NpHugeBytes, the hugetlb part of per_node, sorted by page
                                * size then node, 0 omitted; NULL when there is none */
        uint64_t total_bytes;
        uint64_t huge_bytes; /* part of total in huge pages */
        uint64_t interleaved_bytes; /* part of total in VMAs with an interleave policy */
        uint64_t balanced_bytes; /* part of total the kernel's NUMA balancing can move: the
                                  * default policy, not in huge pages, not shmem (the
                                  * file lines mapped read-only np-process.c takes out) */
        GArray *shm; /* NpNumaMapsShm in file order, lines with pages only; NULL when none */
        GArray *files; /* NpNumaMapsFile in file order; NULL when none */
        GArray *file_per_node; /* NpNodeBytes sorted by node, 0 omitted, of the page cache it maps
                                * (file= lines neither of a shmem object nor huge: programs,
                                * libraries, files), part of per_node; NULL when none */
} NpNumaMaps;

/* Parse /proc/<pid>/numa_maps: N<node>=<pages> counts times kernelpagesize_kB
 * (4 when absent; huge pages counted at their size). huge_bytes counts lines
 * marked "huge" (hugetlb: MAP_HUGETLB, a file on hugetlbfs, a memfd with
 * MFD_HUGETLB), and huge_per_node the same by node and page size; interleaved_bytes lines whose policy starts with
 * "interleave" or "weighted interleave"; balanced_bytes lines with the
 * "default" policy that are neither "huge" nor of a shmem object (the
 * kernel's NUMA balancing does not scan a shmem mapping without a policy
 * of its own: vma_policy_mof() in mm/mempolicy.c, task_numa_work() in
 * kernel/sched/fair.c); files the file lines among them, which still count
 * (the kernel does not scan a file mapping that may not be written either,
 * but only /proc/PID/maps tells which those are); shm the lines of shmem objects
 * (NpNumaMapsShm; file= as numa_maps escapes it, a space as \040); file_per_node the
 * other file= lines that are not huge, whatever their policy. Lines without pages are fine, an
 * empty buffer gives an empty result. 0 and *out overwritten, or -EINVAL
 * (out untouched) for a malformed line. Free with np_numa_maps_clear()
 * (idempotent). */
int np_parse_numa_maps(const char *buf, NpNumaMaps *out);
void np_numa_maps_clear(NpNumaMaps *m);
/* A deep copy of src into dst (overwritten, not freed first); dst->per_node
 * is never NULL afterwards. */
void np_numa_maps_copy(const NpNumaMaps *src, NpNumaMaps *dst);
/* Bytes on one node (0 when absent). */
uint64_t np_numa_maps_node_bytes(const NpNumaMaps *m, unsigned node);
/* Nodes holding any page. Caller frees. */
NpMask *np_numa_maps_nodes(const NpNumaMaps *m);

/* Pure helpers on NpNodeBytes arrays sorted by node: acc += add, node by
 * node (a node acc lacks is inserted in order); acc -= sub, node by node,
 * never below 0 (a node acc lacks stays absent). add and sub may be NULL. */
void np_node_bytes_add(GArray *acc, const GArray *add);
void np_node_bytes_subtract(GArray *acc, const GArray *sub);
/* Two NpNodeBytes arrays hold the same entries in the same order (NULL is
 * empty). */
bool np_node_bytes_equal(const GArray *a, const GArray *b);
/* The bytes of an NpNodeBytes array, every node's together (NULL: 0). */
uint64_t np_node_bytes_sum(const GArray *a);

/* Read /proc/<pid>/numa_maps through np-sysroot and parse it: 0, or -ESRCH
 * when the process is gone (ENOENT or ESRCH while reading), -EINVAL for
 * pid <= 0 or malformed contents, or another negative errno (e.g. -EACCES
 * for another user's numa_maps). */
int np_read_numa_maps(int pid, NpNumaMaps *out);
