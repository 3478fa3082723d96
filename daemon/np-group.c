/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Placement groups from a snapshot of processes (pure): see np-group.h. */
#include "np-group.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <string.h>

const char *const np_group_default_globs[] = { NP_GROUP_DEFAULT_GLOBS, NULL };

const char *np_group_kind_to_string(NpGroupKind k) {
        switch (k) {
        case NP_GROUP_CGROUP:
                return "cgroup";
        case NP_GROUP_UNIT:
                return "unit";
        case NP_GROUP_SHARED:
                return "shared";
        case NP_GROUP_PROCESS:
        default:
                return "process";
        }
}

bool np_group_unit_is_workload(const char *unit) {
        if (!unit || g_str_equal(unit, "init.scope"))
                return false;
        if (g_str_has_suffix(unit, ".scope"))
                return !g_str_has_prefix(unit, "session-");
        if (g_str_has_suffix(unit, ".service"))
                return !g_str_has_prefix(unit, "user@");
        return false;
}

/* ---- the rules ---------------------------------------------------------- */

/* One relation of a process: processes with the same id are grouped. */
typedef struct {
        NpGroupKind kind;
        char *id; /* unique over kinds; within a kind it orders the keys */
        const char *name; /* what the Decision names (points into the member or the id) */
        NpSharedId shared; /* NP_GROUP_SHARED */
} Rel;

static void rel_clear(gpointer p) {
        g_free(((Rel *) p)->id);
}

static void add_rel(GArray *rels, NpGroupKind kind, char *id, const char *name, NpSharedId shared) {
        Rel r = { .kind = kind, .id = id, .name = name ? name : id + 2, .shared = shared };
        g_array_append_val(rels, r);
}

static bool glob_matches(const char *glob, const char *path) {
        if (glob[0] == '/')
                return fnmatch(glob, path, FNM_PATHNAME) == 0;
        for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/'))
                if (fnmatch(glob, s + 1, FNM_PATHNAME) == 0)
                        return true;
        return false;
}

char *np_group_cgroup_match(const char *cgroup, const char *const *globs) {
        if (!cgroup || cgroup[0] != '/' || !globs)
                return NULL;
        g_autofree char *path = g_strdup(cgroup);
        size_t len = strlen(path);
        while (len > 1 && path[len - 1] == '/')
                path[--len] = '\0';
        for (size_t end = 1; end <= len; end++) {
                if (end < len && path[end] != '/')
                        continue;
                char saved = path[end];
                path[end] = '\0';
                for (const char *const *g = globs; *g; g++)
                        if ((*g)[0] && glob_matches(*g, path))
                                return g_strdup(path);
                path[end] = saved;
        }
        return NULL;
}

static void relate_cgroup(const NpGroupMember *m, const NpGroupParams *p, GArray *rels) {
        g_autofree char *match = np_group_cgroup_match(m->cgroup, p->globs);
        if (match)
                add_rel(rels, NP_GROUP_CGROUP, g_strconcat("c:", match, NULL), NULL, (NpSharedId){ 0 });
}

static void relate_unit(const NpGroupMember *m, const NpGroupParams *p, GArray *rels) {
        if (!p->units || !m->unit || g_str_equal(m->unit, "init.scope"))
                return;
        if (g_str_has_suffix(m->unit, ".service") || g_str_has_suffix(m->unit, ".scope"))
                add_rel(rels, NP_GROUP_UNIT, g_strconcat("u:", m->unit, NULL), NULL, (NpSharedId){ 0 });
}

static char *shared_id(NpSharedId id) {
        return g_strdup_printf("s:%016" PRIx64 ":%016" PRIx64, id.dev, id.inode);
}

static uint64_t bytes_sum(const GArray *per_node) {
        uint64_t sum = 0;
        for (guint k = 0; per_node && k < per_node->len; k++)
                sum += g_array_index(per_node, NpNodeBytes, k).bytes;
        return sum;
}

static void relate_shared(const NpGroupMember *m, const NpGroupParams *p, GArray *rels) {
        for (guint i = 0; i < m->n_shared; i++) {
                const NpGroupShared *s = &m->shared[i];
                if (bytes_sum(s->per_node) >= p->min_shared_bytes)
                        add_rel(rels, NP_GROUP_SHARED, shared_id(s->id), s->name, s->id);
        }
}

/* The rules, in order: each appends the member's relations of its kind. A
 * new way to group is one function and one line here. */
static const struct {
        void (*relate)(const NpGroupMember *m, const NpGroupParams *p, GArray *rels);
} rules[] = {
        { relate_cgroup },
        { relate_unit },
        { relate_shared },
};

/* ---- forming ------------------------------------------------------------ */

typedef struct {
        const NpGroupMember *procs;
        guint n;
        GArray **rels; /* per member: Rel */
        guint *parent; /* union-find */
        GHashTable *holders; /* rel id -> number of members with it */
} Forming;

static guint find(guint *parent, guint i) {
        while (parent[i] != i) {
                parent[i] = parent[parent[i]];
                i = parent[i];
        }
        return i;
}

/* A relation that links: a shared object only when another member maps
 * enough of it too. */
static bool rel_links(const Forming *f, const Rel *r) {
        return r->kind != NP_GROUP_SHARED || GPOINTER_TO_UINT(g_hash_table_lookup(f->holders, r->id)) >= 2;
}

static int rel_cmp(const Rel *a, const Rel *b) {
        if (a->kind != b->kind)
                return a->kind < b->kind ? -1 : 1;
        return strcmp(a->id, b->id);
}

static void add_bytes(GArray *acc, const GArray *per_node, bool take_max) {
        for (guint k = 0; per_node && k < per_node->len; k++) {
                const NpNodeBytes *b = &g_array_index(per_node, NpNodeBytes, k);
                guint j = 0;
                while (j < acc->len && g_array_index(acc, NpNodeBytes, j).node < b->node)
                        j++;
                if (j < acc->len && g_array_index(acc, NpNodeBytes, j).node == b->node) {
                        NpNodeBytes *a = &g_array_index(acc, NpNodeBytes, j);
                        a->bytes = take_max ? MAX(a->bytes, b->bytes) : a->bytes + b->bytes;
                } else if (b->bytes) {
                        g_array_insert_val(acc, j, *b);
                }
        }
}

static void object_clear(gpointer p) {
        NpGroupObject *o = p;
        g_free(o->name);
        if (o->per_node)
                g_array_unref(o->per_node);
}

static void join_clear(gpointer p) {
        g_free(((NpGroupJoin *) p)->what);
}

void np_group_free(NpGroup *g) {
        if (!g)
                return;
        g_free(g->key.name);
        g_array_unref(g->members);
        g_array_unref(g->per_node);
        g_array_unref(g->objects);
        g_free(g);
}

static gint cmp_index_pid(gconstpointer a, gconstpointer b, gpointer data) {
        const NpGroupMember *procs = data;
        int x = procs[*(const guint *) a].pid, y = procs[*(const guint *) b].pid;
        return (x > y) - (x < y);
}

static gint cmp_object(gconstpointer a, gconstpointer b) {
        const NpGroupObject *x = a, *y = b;
        if (x->id.dev != y->id.dev)
                return x->id.dev < y->id.dev ? -1 : 1;
        return (x->id.inode > y->id.inode) - (x->id.inode < y->id.inode);
}

/* The key: the smallest linking relation of the first kind among the
 * members' (NULL: a process of its own). */
static const Rel *key_rel(const Forming *f, const GArray *idx) {
        const Rel *best = NULL;
        for (guint k = 0; k < idx->len; k++) {
                const GArray *rels = f->rels[g_array_index(idx, guint, k)];
                for (guint r = 0; r < rels->len; r++) {
                        const Rel *rel = &g_array_index(rels, Rel, r);
                        if (rel_links(f, rel) && (!best || rel_cmp(rel, best) < 0))
                                best = rel;
                }
        }
        return best;
}

static void settle(NpGroupJoin *j, const Rel *r, int partner) {
        j->rule = r->kind;
        j->what = g_strdup(r->name);
        j->partner = r->kind == NP_GROUP_SHARED ? partner : 0;
}

/* Each member's reason: those with the key relation join by it; the others,
 * breadth first, by their first relation (in the rules' order) with a
 * member joined before them. joins[k] is for idx[k]. */
static void reasons(const Forming *f, const GArray *idx, const Rel *key, NpGroupJoin *joins) {
        g_autoptr(GHashTable) by_rel =
                g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify) g_array_unref);
        for (guint k = 0; k < idx->len; k++) {
                const GArray *rels = f->rels[g_array_index(idx, guint, k)];
                for (guint r = 0; r < rels->len; r++) {
                        const Rel *rel = &g_array_index(rels, Rel, r);
                        GArray *list = g_hash_table_lookup(by_rel, rel->id);
                        if (!list) {
                                list = g_array_new(FALSE, FALSE, sizeof(guint));
                                g_hash_table_insert(by_rel, rel->id, list);
                        }
                        g_array_append_val(list, k);
                }
        }
        g_autoptr(GHashTable) visited = g_hash_table_new(g_str_hash, g_str_equal);
        g_autofree guint *queue = g_new(guint, idx->len);
        g_autofree bool *done = g_new0(bool, idx->len);
        guint head = 0, tail = 0;
        const GArray *first = g_hash_table_lookup(by_rel, key->id);
        g_hash_table_add(visited, key->id);
        for (guint i = 0; i < first->len; i++) {
                guint k = g_array_index(first, guint, i);
                /* a shared key links two members at least: the partner is
                 * the lowest other one */
                guint other = first->len > 1 ? g_array_index(first, guint, i == 0 ? 1 : 0) : k;
                settle(&joins[k], key, joins[other].pid);
                done[k] = true;
                queue[tail++] = k;
        }
        while (head < tail) {
                guint u = queue[head++];
                const GArray *rels = f->rels[g_array_index(idx, guint, u)];
                for (guint r = 0; r < rels->len; r++) {
                        const Rel *rel = &g_array_index(rels, Rel, r);
                        if (!rel_links(f, rel) || g_hash_table_contains(visited, rel->id))
                                continue;
                        g_hash_table_add(visited, rel->id);
                        const GArray *list = g_hash_table_lookup(by_rel, rel->id);
                        for (guint i = 0; i < list->len; i++) {
                                guint v = g_array_index(list, guint, i);
                                if (done[v])
                                        continue;
                                settle(&joins[v], rel, joins[u].pid);
                                done[v] = true;
                                queue[tail++] = v;
                        }
                }
        }
}

/* The objects the members map, each once (per node the most any member has
 * there); outside says which objects other groups map too (id -> true). */
static GArray *objects_of(const Forming *f, const GArray *idx, GHashTable *outside) {
        g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        GArray *objs = g_array_new(FALSE, TRUE, sizeof(NpGroupObject));
        g_array_set_clear_func(objs, object_clear);
        for (guint k = 0; k < idx->len; k++) {
                const NpGroupMember *m = &f->procs[g_array_index(idx, guint, k)];
                for (guint s = 0; s < m->n_shared; s++) {
                        const NpGroupShared *sh = &m->shared[s];
                        char *id = shared_id(sh->id);
                        gpointer at;
                        NpGroupObject *o;
                        if (g_hash_table_lookup_extended(seen, id, NULL, &at)) {
                                o = &g_array_index(objs, NpGroupObject, GPOINTER_TO_UINT(at));
                                g_free(id);
                        } else {
                                NpGroupObject add = { .id = sh->id,
                                                      .name = g_strdup(sh->name),
                                                      .per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes)),
                                                      .outside = g_hash_table_contains(outside, id) };
                                g_hash_table_insert(seen, id, GUINT_TO_POINTER(objs->len));
                                g_array_append_val(objs, add);
                                o = &g_array_index(objs, NpGroupObject, objs->len - 1);
                        }
                        add_bytes(o->per_node, sh->per_node, true);
                }
        }
        for (guint i = 0; i < objs->len; i++) {
                NpGroupObject *o = &g_array_index(objs, NpGroupObject, i);
                o->bytes = bytes_sum(o->per_node);
        }
        g_array_sort(objs, cmp_object);
        return objs;
}

static NpGroup *group_of(const Forming *f, GArray *idx, GHashTable *outside) {
        g_array_sort_with_data(idx, cmp_index_pid, (gpointer) f->procs);
        NpGroup *g = g_new0(NpGroup, 1);
        g->members = g_array_sized_new(FALSE, TRUE, sizeof(NpGroupJoin), idx->len);
        g_array_set_clear_func(g->members, join_clear);
        g_array_set_size(g->members, idx->len);
        NpGroupJoin *joins = (NpGroupJoin *) (void *) g->members->data;
        g->per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        for (guint k = 0; k < idx->len; k++) {
                const NpGroupMember *m = &f->procs[g_array_index(idx, guint, k)];
                joins[k] = (NpGroupJoin){ .pid = m->pid, .rule = NP_GROUP_PROCESS };
                g->cpu += m->cpu;
                add_bytes(g->per_node, m->per_node, false);
        }
        const Rel *key = key_rel(f, idx);
        if (key) {
                g->key = (NpGroupKey){ .kind = key->kind, .name = g_strdup(key->name), .shared = key->shared };
                reasons(f, idx, key, joins);
        } else {
                g->key = (NpGroupKey){ .kind = NP_GROUP_PROCESS, .pid = joins[0].pid };
        }
        g->objects = objects_of(f, idx, outside);
        for (guint i = 0; i < g->objects->len; i++)
                add_bytes(g->per_node, g_array_index(g->objects, NpGroupObject, i).per_node, false);
        g->mem = bytes_sum(g->per_node);
        return g;
}

static gint cmp_group(gconstpointer a, gconstpointer b) {
        const NpGroup *x = *(NpGroup *const *) a, *y = *(NpGroup *const *) b;
        if (x->key.kind != y->key.kind)
                return x->key.kind < y->key.kind ? -1 : 1;
        switch (x->key.kind) {
        case NP_GROUP_SHARED:
                if (x->key.shared.dev != y->key.shared.dev)
                        return x->key.shared.dev < y->key.shared.dev ? -1 : 1;
                return (x->key.shared.inode > y->key.shared.inode) - (x->key.shared.inode < y->key.shared.inode);
        case NP_GROUP_PROCESS:
                return (x->key.pid > y->key.pid) - (x->key.pid < y->key.pid);
        default:
                return strcmp(x->key.name, y->key.name);
        }
}

/* Objects mapped (any amount) by members of two groups or more. */
static GHashTable *objects_outside(const Forming *f) {
        g_autoptr(GHashTable) root_of = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        GHashTable *several = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        for (guint i = 0; i < f->n; i++) {
                guint root = find(f->parent, i);
                for (guint s = 0; s < f->procs[i].n_shared; s++) {
                        char *id = shared_id(f->procs[i].shared[s].id);
                        gpointer at;
                        if (!g_hash_table_lookup_extended(root_of, id, NULL, &at))
                                g_hash_table_insert(root_of, id, GUINT_TO_POINTER(root));
                        else if (GPOINTER_TO_UINT(at) != root)
                                g_hash_table_add(several, id);
                        else
                                g_free(id);
                }
        }
        return several;
}

static bool pids_valid(const NpGroupMember *procs, guint n) {
        g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
        for (guint i = 0; i < n; i++) {
                if (procs[i].pid <= 0 || g_hash_table_contains(seen, GINT_TO_POINTER(procs[i].pid)))
                        return false;
                g_hash_table_add(seen, GINT_TO_POINTER(procs[i].pid));
        }
        return true;
}

int np_groups_form(const NpGroupMember *procs, guint n, const NpGroupParams *params, GPtrArray **out) {
        if (!pids_valid(procs, n))
                return -EINVAL;
        Forming f = { .procs = procs, .n = n };
        f.rels = g_new0(GArray *, n);
        f.parent = g_new(guint, n);
        f.holders = g_hash_table_new(g_str_hash, g_str_equal);
        g_autoptr(GHashTable) first = g_hash_table_new(g_str_hash, g_str_equal);
        for (guint i = 0; i < n; i++) {
                f.parent[i] = i;
                f.rels[i] = g_array_new(FALSE, FALSE, sizeof(Rel));
                g_array_set_clear_func(f.rels[i], rel_clear);
                for (guint r = 0; r < G_N_ELEMENTS(rules); r++)
                        rules[r].relate(&procs[i], params, f.rels[i]);
                for (guint r = 0; r < f.rels[i]->len; r++) {
                        const Rel *rel = &g_array_index(f.rels[i], Rel, r);
                        guint held = GPOINTER_TO_UINT(g_hash_table_lookup(f.holders, rel->id));
                        g_hash_table_insert(f.holders, rel->id, GUINT_TO_POINTER(held + 1));
                        gpointer at;
                        if (!g_hash_table_lookup_extended(first, rel->id, NULL, &at))
                                g_hash_table_insert(first, rel->id, GUINT_TO_POINTER(i));
                        else
                                f.parent[find(f.parent, i)] = find(f.parent, GPOINTER_TO_UINT(at));
                }
        }
        g_autoptr(GHashTable) outside = objects_outside(&f);
        g_autoptr(GHashTable) by_root =
                g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_array_unref);
        GPtrArray *groups = g_ptr_array_new_with_free_func((GDestroyNotify) np_group_free);
        for (guint i = 0; i < n; i++) {
                guint root = find(f.parent, i);
                GArray *idx = g_hash_table_lookup(by_root, GUINT_TO_POINTER(root));
                if (!idx) {
                        idx = g_array_new(FALSE, FALSE, sizeof(guint));
                        g_hash_table_insert(by_root, GUINT_TO_POINTER(root), idx);
                }
                g_array_append_val(idx, i);
        }
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, by_root);
        while (g_hash_table_iter_next(&it, NULL, &v))
                g_ptr_array_add(groups, group_of(&f, v, outside));
        g_ptr_array_sort(groups, cmp_group);
        /* the hash tables borrow the relations' ids: free them last */
        g_hash_table_destroy(f.holders);
        g_clear_pointer(&first, g_hash_table_destroy);
        for (guint i = 0; i < n; i++)
                g_array_unref(f.rels[i]);
        g_free(f.rels);
        g_free(f.parent);
        *out = groups;
        return 0;
}

/* ---- questions about a group -------------------------------------------- */

bool np_group_has_member(const NpGroup *g, int pid) {
        guint lo = 0, hi = g->members->len;
        while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                int p = g_array_index(g->members, NpGroupJoin, mid).pid;
                if (p == pid)
                        return true;
                if (p < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return false;
}

int np_group_foreign_member(const NpGroup *g, bool (*is_foreign)(int pid, void *user), void *user) {
        for (guint i = 0; i < g->members->len; i++) {
                int pid = g_array_index(g->members, NpGroupJoin, i).pid;
                if (is_foreign(pid, user))
                        return pid;
        }
        return 0;
}

char *np_group_key_name(const NpGroupKey *k) {
        switch (k->kind) {
        case NP_GROUP_SHARED:
                return g_strdup_printf("shm:%" PRIu64, k->shared.inode);
        case NP_GROUP_PROCESS:
                return g_strdup_printf("pid:%d", k->pid);
        default:
                return g_strdup(k->name);
        }
}

char *np_group_join_format(const NpGroupJoin *j) {
        switch (j->rule) {
        case NP_GROUP_CGROUP:
                return g_strdup_printf("in cgroup %s (Groups=)", j->what);
        case NP_GROUP_UNIT:
                return g_strdup_printf("a process of %s", j->what);
        case NP_GROUP_SHARED:
                return g_strdup_printf("maps the same shared memory %s as %d", j->what, j->partner);
        case NP_GROUP_PROCESS:
        default:
                return g_strdup("a process of its own");
        }
}
