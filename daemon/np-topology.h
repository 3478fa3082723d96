/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * NUMA topology read from <root>/sys/devices/system/node: online nodes (any
 * ids, sparse, above 64), each node's CPUs, memory total and distances.
 * Nodes with memory but no CPUs and nodes with CPUs but no memory are valid.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include "np-nodemask.h"

typedef struct {
        unsigned node; /* the other node's id */
        unsigned distance; /* SLIT distance, 10 = local */
} NpDistance;

typedef struct {
        unsigned id;
        NpMask *cpus; /* from nodeN/cpulist; may be empty */
        uint64_t mem_total_bytes; /* from nodeN/meminfo MemTotal; 0 = memory-less */
        GArray *distances; /* NpDistance, one per online node, in id order */
} NpNode;

/* Huge page sizes the kernel offers beyond this many are not read. */
#define NP_HUGE_SIZES_MAX 4

typedef struct {
        GPtrArray *nodes; /* NpNode*, sorted by id, owned */
        NpMask *online; /* ids of all online nodes */
        NpMask *with_memory; /* nodes with memory (has_memory, or MemTotal > 0) */
        NpMask *with_cpus; /* nodes with at least one CPU */
        NpMask *all_cpus; /* union of the nodes' CPUs */
        NpMask *cpus_online; /* /sys/devices/system/cpu/online as read; NULL when absent */
        unsigned max_cpu; /* highest CPU id + 1 (size for per-CPU arrays) */
        bool synthetic; /* no /sys/devices/system/node (non-NUMA kernel): one
                         * node 0, memory from /proc/meminfo */
        uint64_t huge_sizes[NP_HUGE_SIZES_MAX]; /* hugetlb page sizes in bytes, ascending
                                                 * (/sys/kernel/mm/hugepages/hugepages-<kB>kB) */
        unsigned n_huge_sizes;
} NpTopology;

/*
 * Load from the sysroot. Returns 0 and a new topology in *out, or a negative
 * errno with a message in *error (e.g. missing node directory, or a nodeN
 * without cpulist, meminfo with MemTotal, or a distance line matching the
 * online nodes). Node CPUs are cpulist restricted to
 * /sys/devices/system/cpu/online when that file exists. A machine
 * without /sys/devices/system/node (non-NUMA kernel) is loaded as one node 0
 * holding every CPU in /sys/devices/system/cpu/online and MemTotal from
 * /proc/meminfo. The hugetlb page sizes are listed from
 * /sys/kernel/mm/hugepages (none when it is absent).
 */
int np_topology_load(NpTopology **out, GError **error);

/* The hugetlb page size of a /sys/kernel/mm/hugepages entry name
 * ("hugepages-2048kB"), in bytes; 0 for any other name. */
uint64_t np_parse_hugepages_dir(const char *name);

/* Parse one nodeN/meminfo or /proc/meminfo buffer: value of `key` (e.g.
 * "MemTotal", "MemFree", "Inactive(file)") in bytes. Lines may carry a
 * "Node <id> " prefix; a "kB" value is multiplied by 1024, a value without a
 * unit (HugePages_Total) is returned as is. 0, -ENOENT when the key is
 * absent, -EINVAL when its line is malformed. */
int np_parse_meminfo_value(const char *buf, const char *key, uint64_t *bytes);

/* Parse a nodeN/distance line ("10 20 20 30"; the kernel prints one distance
 * per online node in id order) against the online node set. On success the
 * contents of out (NpDistance) are replaced and 0 is returned; -EINVAL (out
 * untouched) when the count mismatches or a value is not a decimal number. */
int np_parse_distance_line(const char *buf, const NpMask *online, GArray *out);

/* The node with this id, or NULL. */
NpNode *np_topology_node(const NpTopology *t, unsigned id);
/* The union of the CPUs of the given nodes. Caller frees. */
NpMask *np_topology_cpus_of(const NpTopology *t, const NpMask *nodes);
/* The node holding this CPU, or -1. */
int np_topology_node_of_cpu(const NpTopology *t, unsigned cpu);

void np_topology_free(NpTopology *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpTopology, np_topology_free)

/*
 * The per-scan check for CPU and node hotplug: true when the online nodes
 * (/sys/devices/system/node/online) or the online CPUs
 * (/sys/devices/system/cpu/online) differ from what t was loaded with.
 * Reads the two files through kept descriptors; a file that cannot be read
 * or parsed counts as unchanged. Memory hot-add changes neither: compare
 * the nodes' MemTotal (np_topology_memory_differs()).
 */
bool np_topology_outdated(const NpTopology *t);

/* A node's MemTotal as sampled. */
typedef struct {
        unsigned id;
        uint64_t bytes;
} NpNodeTotal;

/* Does some node's MemTotal in `totals` (n entries) differ from t's? A node
 * t does not have is ignored. */
bool np_topology_memory_differs(const NpTopology *t, const NpNodeTotal *totals, size_t n);

/* What differs between two loads of the topology. */
typedef struct {
        NpMask *added; /* node ids online now, not before */
        NpMask *removed; /* node ids online before, not now */
        NpMask *cpus_changed; /* nodes in both whose CPU list differs */
        NpMask *memory_changed; /* nodes in both whose MemTotal (or memory at all) differs */
} NpTopologyDiff;

/* Compare `before` with `after` into *out (masks allocated, free with
 * np_topology_diff_clear()). Returns whether anything differs. Pure. */
bool np_topology_diff(const NpTopology *before, const NpTopology *after, NpTopologyDiff *out);
void np_topology_diff_clear(NpTopologyDiff *d);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(NpTopologyDiff, np_topology_diff_clear)
/* The difference for the log, one clause per node in id order, e.g.
 * "node 2: CPUs 2-3 -> none; node 3: memory 256 MiB -> 512 MiB; node 4:
 * added (CPUs 8-9, memory 512 MiB)". "" when nothing differs. Caller
 * frees. */
char *np_topology_diff_describe(const NpTopology *before, const NpTopology *after, const NpTopologyDiff *d);
