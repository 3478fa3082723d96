/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Choosing node sets for the placement policy (pure, used by np-policy.c
 * only): which nodes hold a process's demand in the ledger (np-ledger.h),
 * compared by the order np-policy.h gives (fewest nodes, most of its pages
 * already there, nearest, most room, where its threads run), and what a
 * Decision says of the set (its distances, why one node is not enough).
 * Every returned NpMask is the caller's.
 */
#include <stdbool.h>

#include "np-ledger.h"
#include "np-nodemask.h"
#include "np-policy.h"
#include "np-reason.h"

/* The best set for p (not in the ledger), or NULL when none has room.
 * `prefer` (may be NULL): try supersets of it first. With `now`, only sets
 * its pages can move to now (np_ledger_movable()). */
NpMask *np_choose_set(const NpLedger *l, const NpPolicyProcess *p, const NpMask *prefer, const NpMask *avoid, bool now);

/* For a set of more than one node chosen for p (not in the ledger): why
 * not one, told for the set's node that holds most of p's pages ("2 alone
 * is too small"), into r->alone_node and r->alone; nothing when that node
 * would hold p by itself (the set grew from nodes p's group already uses). */
void np_choose_why_not_one(const NpLedger *l, const NpPolicyProcess *p, const NpMask *set, NpReason *r);

/* The least and greatest distance within a set (0 for one node). */
void np_choose_distances(const NpLedger *l, const NpMask *set, unsigned *lo_out, unsigned *hi_out);

/* The nodes to hold p's memory on (not in the ledger), its threads left
 * where they run: the node with the most of its pages among those with
 * room for all of it, else the fewest nodes grown from the one with the most
 * of its pages by nearness; only nodes its pages can move to now. NULL when
 * none. */
NpMask *np_choose_memory_home(const NpLedger *l, const NpPolicyProcess *p);

/* The nodes that come closest to holding job when nothing has room: as
 * many as it needs on the idle machine (every node with memory when even
 * that is too small), grown from the node with the most memory room by
 * nearness, then room now. NULL when no node has memory. */
NpMask *np_choose_closest(const NpLedger *l, const NpPolicyProcess *job);

/* Would job fit on every node with memory of the idle machine? */
bool np_choose_within_machine(const NpLedger *l, const NpPolicyProcess *job);
