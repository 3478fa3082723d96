/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Classification: what a known process is to the daemon. Significant (a
 * candidate of the policy), included, excluded, foreign, the group it is
 * placed with. Rules over the manager's state and configuration. It reads
 * the details of a process it finds significant (np_process_refresh()) but
 * never scans, places or publishes, and calls nothing of np-manager.c or
 * np-scan.c (both call it).
 */
#include <stdbool.h>

#include "np-group.h"
#include "np-manager.h"
#include "np-process.h"

/* pid is in an Include()/Exclude() table with p's start time. */
bool np_classify_listed(GHashTable *table, const NpProcess *p);

/* Is the process included (Include= or Include()) / excluded (Exclude=,
 * Exclude(), or a unit the daemon must not change)? */
bool np_classify_included(NpManager *m, const NpProcess *p);
bool np_classify_excluded(NpManager *m, const NpProcess *p);

/* Its CPUs or memory nodes were narrowed by someone else (taskset, numactl,
 * a container's cpuset) and neither the daemon holds it nor Include= names
 * it: the policy leaves it alone (State "foreign"). */
bool np_classify_foreign(NpManager *m, const NpProcess *p);

/* The unit whose values placing p changes for all its processes (the
 * mechanism in force confines them together: np_backend_unit_role()), or
 * NULL. Its processes are decided as one (np-decide.c). */
const char *np_classify_unit_of(NpManager *m, const NpProcess *p);

/* The placement group p is decided in with other processes (np-group.h's
 * rules 1 and 2): the outermost cgroup of p's matching a Groups= glob
 * (*kind NP_GROUP_CGROUP; its systemd/unified path tried first, then its
 * cpuset one), else np_classify_unit_of() or, when the mechanism holds
 * each process on its own, p's unit if np_group_unit_is_workload()
 * (NP_GROUP_UNIT); NULL when p is a group of its own. Caller frees. */
char *np_classify_group_of(NpManager *m, const NpProcess *p, NpGroupKind *kind);

/* A process counts toward its group's demand (np_classify_groups()) from
 * this much resident memory: MinProcessMemory= / NP_GROUP_MEMBER_SHARE.
 * The scan keeps a record from it on, and reads stat every scan when the
 * process is in a group by unit or cgroup (np-scan.c). */
#define NP_GROUP_MEMBER_SHARE 16
uint64_t np_classify_member_floor(const NpManager *m);

/* Group significance. Of `procs` (NpProcess*, those seen this scan), the
 * ones at or above the member floor, with a measured CPU use, not
 * excluded, that np_classify_group_of() puts in one group count together:
 * when two or more do and their summed demand passes MinProcessMemory= and
 * MinProcessCPU= (memory: each one's private pages, plus the largest
 * shared resident set of any of them, once; with the hysteresis of a single
 * process while the group was significant), each of them is significant
 * (group_significant, read by np_classify_update()). The others' flag is
 * cleared. */
void np_classify_groups(NpManager *m, GPtrArray *procs);

/* State "excluded" when p is excluded and not held; "observed" again when
 * an excluded one no longer is. */
void np_classify_exclusion(NpManager *m, NpProcess *p);

/* Is p a significant process whose CPU use is not measured yet and whose
 * pages the kernel's NUMA balancing has begun to move (NP_POLICY_KERNEL_BEGAN
 * of its memory)? The policy may decide it at first sight (np-policy.h). */
bool np_classify_kernel_began(const NpManager *m, const NpProcess *p);

/* Classify p again (exclusion, then significance, with hysteresis) and
 * read its details (np_process_refresh()) when it is significant.
 * 0, or -ESRCH when it vanished while being read. */
int np_classify_update(NpManager *m, NpProcess *p);
