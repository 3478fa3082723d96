/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The placement groups as the bus shows them (org.numaplaced1.Group): one
 * entry per group of the last decision round, each with an id that stays
 * the group's while a round finds its name again (the object path
 * /org/numaplaced1/group/<id>), and the bits of what changed since the bus
 * last published it. Plain data: the decide step fills it (np-decide.c),
 * the bus reads it (np-bus.c); it reads nothing and calls neither.
 *
 * A round: np_group_table_begin(), np_group_table_take() for every group
 * decided, its values through the setters, np_group_table_end(). A group
 * not taken in a round is removed at its end.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "np-group.h"
#include "np-nodemask.h"

typedef enum {
        NP_GROUP_VIEW_MEMBERS = 1u << 0,
        NP_GROUP_VIEW_MEMORY = 1u << 1, /* MemoryBytes and MemoryPerNode */
        NP_GROUP_VIEW_LOCALITY = 1u << 2,
        NP_GROUP_VIEW_TARGET = 1u << 3,
        NP_GROUP_VIEW_STATE = 1u << 4,
        NP_GROUP_VIEW_DECISION = 1u << 5,
} NpGroupViewProp;

typedef struct {
        unsigned id; /* > 0 */
        char *name; /* np_group_key_name(), "pid:<n>" for a process of its own */
        NpGroupKind kind;
        GArray *members; /* guint32 pids, sorted */
        uint64_t mem;
        GArray *per_node; /* NpNodeBytes sorted by node, 0 omitted */
        double locality; /* share of its pages on the nodes its members run on, 0..1 */
        NpMask *target; /* never NULL: empty while it has no nodes of the daemon's */
        char *state; /* np_proc_state_to_string() of its first member */
        char *decision;
        uint32_t changed; /* NpGroupViewProp bits since the bus last took them */
        bool added; /* new since the bus last published */
        uint64_t round; /* the last round that took it (bookkeeping) */
} NpGroupView;

typedef struct NpGroupTable NpGroupTable;

NpGroupTable *np_group_table_new(void);
void np_group_table_free(NpGroupTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpGroupTable, np_group_table_free)

/* Start a round. */
void np_group_table_begin(NpGroupTable *t);
/* The entry named `name` (of kind `kind`), taken in this round: the one of
 * the rounds before when there is one (a change of kind replaces it), else
 * a new one with the next free id (added set). */
NpGroupView *np_group_table_take(NpGroupTable *t, const char *name, NpGroupKind kind);
/* End the round: entries not taken in it are removed, their ids appended to
 * the table's removed list (np_group_table_steal_removed()). */
void np_group_table_end(NpGroupTable *t);

/* Setters: each raises its bit in v->changed when the value differs. */
void np_group_view_set_members(NpGroupView *v, const GArray *pids);
void np_group_view_set_memory(NpGroupView *v, uint64_t mem, const GArray *per_node);
void np_group_view_set_locality(NpGroupView *v, double locality);
void np_group_view_set_target(NpGroupView *v, const NpMask *target);
void np_group_view_set_state(NpGroupView *v, const char *state);
void np_group_view_set_decision(NpGroupView *v, const char *decision);

/* The entry of `id`, or NULL. */
NpGroupView *np_group_table_get(const NpGroupTable *t, unsigned id);
/* The entry named `name`, or NULL. */
NpGroupView *np_group_table_find(const NpGroupTable *t, const char *name);
/* Every entry's id, ascending, into `ids` (guint32). */
void np_group_table_ids(const NpGroupTable *t, GArray *ids);
/* The ids removed since the last call (guint32); caller frees. */
GArray *np_group_table_steal_removed(NpGroupTable *t);
guint np_group_table_size(const NpGroupTable *t);
