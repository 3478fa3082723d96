/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The policy's snapshot (np-policy.h) of the manager's last scan: the
 * nodes, the candidates (the significant processes, by PID) as the policy
 * sees them, their placement groups (np-group.h) and the parameters.
 *
 * A Groups= cgroup group's pages per node are its cgroup's memory.numa_stat
 * (cgroup v2: anon + shmem), read once per snapshot, when it tells them;
 * its members are marked (NpProcess.pages_from_group) so their numa_maps is
 * not read by age. Otherwise, and for every other group, the members'
 * numa_maps.
 *
 * A process is "foreign" (left alone) when the daemon does not hold it and
 * its Cpus_allowed_list is not every online CPU or its Mems_allowed_list is
 * not every node with memory: someone else (taskset, numactl
 * --cpunodebind/--membind with a cpuset, a container runtime) narrowed it.
 * Include= naming it (or Include()) overrides that. Its Decision names its
 * cgroup when that is not the root (NP_REASON_FOREIGN).
 */
#include <glib.h>
#include <stdbool.h>

#include "np-manager.h"
#include "np-numa-maps.h"
#include "np-policy.h"

/* The candidates' placement groups (np-group.h), formed anew every scan:
 * the Groups= cgroups, the services and scopes (np_classify_group_of()), the shared
 * memory objects. Each candidate's shared lines, their objects known from
 * its maps, are listed apart from its own pages, so a group counts each
 * object once. What the members point to is kept in `keep`. */
typedef struct {
        GPtrArray *groups; /* NpGroup* */
        GHashTable *of_pid; /* pid -> NpGroup* */
        GHashTable *stat_pages; /* NpGroup* -> GArray of NpNodeBytes: the pages of the groups
                                 * whose cgroup's memory.numa_stat was read (numa_stat_pages()) */
        GArray *none; /* NpNodeBytes, empty: what the other members of those carry */
        GPtrArray *keep; /* strings and arrays the members point to */
} NpSnapshotGroups;

/* What the policy decides from: the candidates (sorted by PID), the nodes,
 * the processes in the candidates' order, and the parameters. */
typedef struct {
        GPtrArray *cands;
        GArray *node_arr, *proc_arr;
        GPtrArray *names; /* what proc_arr's group names point to */
        NpSnapshotGroups groups; /* the candidates' placement groups, which proc_arr points into */
        const NpPolicyNode *nodes;
        const NpPolicyProcess *procs;
        guint n_nodes, n_procs;
        NpPolicyParams params;
} NpSnapshot;

/* Take the snapshot of m's last scan into s (zeroed). Its thread-homes
 * readings (np-thread-homes.h) are taken too: the busy threads' faults of
 * the processes and young groups that may get homes. */
void np_snapshot_take(NpManager *m, NpSnapshot *s);
void np_snapshot_clear(NpSnapshot *s);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(NpSnapshot, np_snapshot_clear)

/* The significant processes (not sorted). Caller frees the array. */
GPtrArray *np_snapshot_candidates(NpManager *m);

/* p's numa_maps line of the shared object `id`, NULL when p does not map
 * it (as its maps read it last). */
const NpNumaMapsShm *np_snapshot_maps_object(const NpProcess *p, const NpSharedId *id);

/* How the policy is to take p as it is now (moving, pinned, placed,
 * excluded, foreign, or free to place). */
NpPolicyHold np_snapshot_hold_of(NpManager *m, const NpProcess *p);

/* Mode=advise: does p keep its advice (as a placed process keeps its
 * nodes while they hold it), so that the advice does not follow its
 * threads from node to node? */
bool np_snapshot_advised_there(NpManager *m, const NpProcess *p);
