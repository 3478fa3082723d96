/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Functions of the daemon's modules that only the tests (unit, fuzz) call:
 * probes of internal state and entry points that take their input from
 * memory. Only the files that define them and the tests include it.
 */
#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "np-authz.h"
#include "np-backend.h"
#include "np-config.h"
#include "np-migrate-plan.h"
#include "np-mover.h"
#include "np-nodemask.h"
#include "np-proc-table.h"
#include "np-topology.h"

/* np-authz: questions pending with polkit. */
unsigned np_authz_pending(const NpAuthz *a);

/* np-backend: where the mechanism in force keeps its containers, e.g. the
 * daemon's cgroup directory "/sys/fs/cgroup/cpuset/numaplaced"; NULL when
 * it has none (affinity). */
const char *np_backend_cgroup_hierarchy(const NpBackend *b);

/* np-config: np_config_load() on an in-memory buffer (no drop-ins); `name`
 * is used in messages and is the one entry of cfg->files. */
int np_config_load_data(const char *name, const char *data, NpConfig **out, GError **error);

/* np-migrate-plan: node_remap() as in the kernel: the new node for `node`;
 * when `node` is not in `from` or `to` is empty, `node` itself. */
unsigned np_node_remap(unsigned node, const NpMask *from, const NpMask *to);

/* np-nodemask: a new mask holding the given ids. */
NpMask *np_mask_from_array(const unsigned *ids, size_t n);

/* np-proc-table: the entry of pid (a user process or a kernel thread), or
 * NULL; and the table's counters. */
const NpProcEntry *np_proc_table_lookup(const NpProcTable *t, int pid);
typedef struct {
        unsigned max_kept; /* the cap */
        unsigned kept; /* descriptors kept now */
        unsigned beyond_cap; /* user processes read with open+read+close (no descriptor) */
        unsigned kthreads; /* kernel threads known (never read) */
        uint64_t statm_reads, stat_reads, discovered, dropped; /* totals since the table was made */
        uint64_t hugetlb_looks; /* status reads for HugetlbPages, since the table was made */
} NpProcTableStats;
void np_proc_table_stats(const NpProcTable *t, NpProcTableStats *out);

/* np-sample: the numeric entries of <root>/proc, sorted: a new GArray of
 * int (empty when <root>/proc cannot be read). */
GArray *np_list_pids(void);

/* np-sysroot: read a file that holds a single unsigned decimal integer: 0
 * or -errno (-EINVAL for anything else, including a sign); how many files
 * are kept open now. */
int np_read_u64(const char *path, guint64 *out);
unsigned np_kept_files_count(void);

/* np-topology: the distance between two nodes, or 0 when unknown. */
unsigned np_topology_distance(const NpTopology *t, unsigned a, unsigned b);
