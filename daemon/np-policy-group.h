/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Groups for the placement policy (pure, used by np-policy.c only): the
 * processes of one systemd unit are decided as one candidate, whose demand
 * is their sum. np_policy_decide() merges them here, decides the merged
 * entries and gives every member its group's decision (np-policy.h).
 */
#include <glib.h>

#include "np-policy.h"

typedef struct {
        GArray *merged; /* NpPolicyProcess, one per group or lone process */
        guint *slot_of; /* procs[i] -> index into merged */
        guint *size; /* members per merged entry */
        GPtrArray *masks, *arrays; /* what the merged entries point to */
} NpPolicyGroups;

/* Merge the members of each group (same non-zero `group`) into one entry:
 * summed CPU, memory, pages per node and recorded stuck bytes; the union of
 * the nodes they run on and are confined to; the shortest time since a
 * move; the firmest hold (moving, pinned, excluded, placed, foreign). Memory
 * unknown for one member is unknown for all. A process without a group is
 * an entry of its own. The entries point into procs and into *g: keep both
 * until np_policy_groups_clear(). */
void np_policy_groups_build(NpPolicyGroups *g, const NpPolicyProcess *procs, guint n_procs);

void np_policy_groups_clear(NpPolicyGroups *g);
