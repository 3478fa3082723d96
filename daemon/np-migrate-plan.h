/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The migration planner: pure, no I/O. Given the node set a task's memory may
 * be on now (`from`) and the target (`to`), the ordered (source, destination)
 * pairs exactly as the kernel's do_migrate_pages() chooses them:
 *   - node_remap(s, from, to): the n-th set bit of `from` maps to the
 *     (n mod |to|)-th set bit of `to`;
 *   - with skip_overlap, a source in `to` is skipped when |from| != |to|;
 *   - a source that maps to itself moves nothing;
 *   - order: scan the pending sources upward, remember the last moving pair,
 *     stop early at a pair whose destination is not a pending source; emit
 *     the remembered pair, remove its source, repeat.
 * See shared/seeds/003_*.txt for the rule and its test vectors.
 */
#include <glib.h>
#include <stdbool.h>
#include "np-nodemask.h"

typedef struct {
        unsigned src;
        unsigned dst;
} NpMovePair;

/* The kernel-order plan. Returns a new GArray of NpMovePair (possibly empty). */
GArray *np_plan_migration(const NpMask *from, const NpMask *to, bool skip_overlap);

/*
 * The plan driven by where the pages really are: `present` is the set of
 * nodes holding pages of the process (from numa_maps). The kernel-order plan
 * is simulated: a pair whose source holds no pages at that point (none at
 * start and none moved there by an earlier pair) is dropped. Returns a new
 * GArray of NpMovePair.
 */
GArray *np_plan_migration_present(const NpMask *from, const NpMask *to, bool skip_overlap, const NpMask *present);

/* "7 -> 4\n6 -> 3\n..." (one pair a line, trailing newline). Caller frees. */
char *np_plan_format(const GArray *plan);
