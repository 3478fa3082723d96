/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The placement groups as the bus shows them. See np-group-table.h. */
#include "np-group-table.h"

#include <string.h>

struct NpGroupTable {
        GHashTable *by_id; /* id -> NpGroupView* (owned) */
        GHashTable *by_name; /* name -> NpGroupView* (the view's name) */
        GArray *removed; /* guint32 */
        uint64_t round;
        unsigned next_id;
};

static void view_free(NpGroupView *v) {
        if (!v)
                return;
        g_free(v->name);
        g_array_unref(v->members);
        g_array_unref(v->per_node);
        np_mask_free(v->target);
        g_free(v->state);
        g_free(v->decision);
        g_free(v);
}

NpGroupTable *np_group_table_new(void) {
        NpGroupTable *t = g_new0(NpGroupTable, 1);
        t->by_id = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) view_free);
        t->by_name = g_hash_table_new(g_str_hash, g_str_equal);
        t->removed = g_array_new(FALSE, FALSE, sizeof(guint32));
        t->next_id = 1;
        return t;
}

void np_group_table_free(NpGroupTable *t) {
        if (!t)
                return;
        g_hash_table_unref(t->by_name);
        g_hash_table_unref(t->by_id);
        g_array_unref(t->removed);
        g_free(t);
}

void np_group_table_begin(NpGroupTable *t) {
        t->round++;
}

static void remove_view(NpGroupTable *t, NpGroupView *v) {
        guint32 id = v->id;
        g_hash_table_remove(t->by_name, v->name);
        /* an entry added and removed before the bus saw it was never shown */
        if (!v->added)
                g_array_append_val(t->removed, id);
        g_hash_table_remove(t->by_id, GUINT_TO_POINTER(id));
}

/* The lowest id above the last one given that no entry has (ids wrap
 * after 2^32 - 1 groups, skipping those in use). */
static unsigned free_id(NpGroupTable *t) {
        while (t->next_id == 0 || g_hash_table_contains(t->by_id, GUINT_TO_POINTER(t->next_id)))
                t->next_id++;
        return t->next_id++;
}

NpGroupView *np_group_table_take(NpGroupTable *t, const char *name, NpGroupKind kind) {
        NpGroupView *v = g_hash_table_lookup(t->by_name, name);
        if (v && v->kind != kind) {
                remove_view(t, v);
                v = NULL;
        }
        if (!v) {
                v = g_new0(NpGroupView, 1);
                v->id = free_id(t);
                v->name = g_strdup(name);
                v->kind = kind;
                v->members = g_array_new(FALSE, FALSE, sizeof(guint32));
                v->per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
                v->target = np_mask_new();
                v->state = g_strdup("");
                v->decision = g_strdup("");
                v->added = true;
                g_hash_table_insert(t->by_id, GUINT_TO_POINTER(v->id), v);
                g_hash_table_insert(t->by_name, v->name, v);
        }
        v->round = t->round;
        return v;
}

void np_group_table_end(NpGroupTable *t) {
        g_autoptr(GPtrArray) stale = g_ptr_array_new();
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, t->by_id);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (((NpGroupView *) v)->round != t->round)
                        g_ptr_array_add(stale, v);
        for (guint i = 0; i < stale->len; i++)
                remove_view(t, stale->pdata[i]);
}

static bool u32_equal(const GArray *a, const GArray *b) {
        guint na = a ? a->len : 0, nb = b ? b->len : 0;
        return na == nb && (na == 0 || memcmp(a->data, b->data, na * sizeof(guint32)) == 0);
}

void np_group_view_set_members(NpGroupView *v, const GArray *pids) {
        if (u32_equal(v->members, pids))
                return;
        g_array_set_size(v->members, 0);
        if (pids && pids->len)
                g_array_append_vals(v->members, pids->data, pids->len);
        v->changed |= NP_GROUP_VIEW_MEMBERS;
}

void np_group_view_set_memory(NpGroupView *v, uint64_t mem, const GArray *per_node) {
        if (v->mem == mem && np_node_bytes_equal(v->per_node, per_node))
                return;
        v->mem = mem;
        g_array_set_size(v->per_node, 0);
        if (per_node && per_node->len)
                g_array_append_vals(v->per_node, per_node->data, per_node->len);
        v->changed |= NP_GROUP_VIEW_MEMORY;
}

void np_group_view_set_locality(NpGroupView *v, double locality) {
        if (v->locality == locality)
                return;
        v->locality = locality;
        v->changed |= NP_GROUP_VIEW_LOCALITY;
}

void np_group_view_set_target(NpGroupView *v, const NpMask *target) {
        g_autoptr(NpMask) empty = np_mask_new();
        if (!target)
                target = empty;
        if (np_mask_equal(v->target, target))
                return;
        np_mask_assign(v->target, target);
        v->changed |= NP_GROUP_VIEW_TARGET;
}

static void set_string(char **field, const char *value, uint32_t *changed, uint32_t bit) {
        if (!value)
                value = "";
        if (strcmp(*field, value) == 0)
                return;
        g_free(*field);
        *field = g_strdup(value);
        *changed |= bit;
}

void np_group_view_set_state(NpGroupView *v, const char *state) {
        set_string(&v->state, state, &v->changed, NP_GROUP_VIEW_STATE);
}

void np_group_view_set_decision(NpGroupView *v, const char *decision) {
        set_string(&v->decision, decision, &v->changed, NP_GROUP_VIEW_DECISION);
}

NpGroupView *np_group_table_get(const NpGroupTable *t, unsigned id) {
        return g_hash_table_lookup(t->by_id, GUINT_TO_POINTER(id));
}

NpGroupView *np_group_table_find(const NpGroupTable *t, const char *name) {
        return name ? g_hash_table_lookup(t->by_name, name) : NULL;
}

static gint cmp_u32(gconstpointer a, gconstpointer b) {
        guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
        return (x > y) - (x < y);
}

void np_group_table_ids(const NpGroupTable *t, GArray *ids) {
        GHashTableIter it;
        gpointer k;
        g_hash_table_iter_init(&it, t->by_id);
        while (g_hash_table_iter_next(&it, &k, NULL)) {
                guint32 id = GPOINTER_TO_UINT(k);
                g_array_append_val(ids, id);
        }
        g_array_sort(ids, cmp_u32);
}

GArray *np_group_table_steal_removed(NpGroupTable *t) {
        GArray *out = t->removed;
        t->removed = g_array_new(FALSE, FALSE, sizeof(guint32));
        return out;
}

guint np_group_table_size(const NpGroupTable *t) {
        return g_hash_table_size(t->by_id);
}
