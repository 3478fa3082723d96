/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The bus's Node, Process and Group objects: see np-bus-objects.h. */
#include "np-bus-objects.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "np-group-table.h"
#include "np-thread.h"

#define GETTER(fn) \
        static int fn(sd_bus *bus, const char *path, const char *iface, const char *prop, sd_bus_message *reply, \
                      void *userdata, sd_bus_error *ret)
#define EMITS SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE

/* ---- encodings ---------------------------------------------------------- */

int np_bus_append_mask(sd_bus_message *reply, const NpMask *mask) {
        g_autoptr(GArray) a = np_mask_to_u32_array(mask);
        return sd_bus_message_append_array(reply, 'u', a->data, a->len * sizeof(guint32));
}

int np_bus_append_node_bytes(sd_bus_message *reply, const GArray *per_node) {
        int r = sd_bus_message_open_container(reply, 'a', "(ut)");
        for (guint i = 0; r >= 0 && per_node && i < per_node->len; i++) {
                const NpNodeBytes *nb = &g_array_index(per_node, NpNodeBytes, i);
                r = sd_bus_message_append(reply, "(ut)", nb->node, nb->bytes);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}

int np_bus_append_u32s(sd_bus_message *reply, const GArray *a) {
        return sd_bus_message_append_array(reply, 'u', a->data, a->len * sizeof(guint32));
}

const char *np_bus_utf8_or(const char *s, const char *fallback) {
        return g_utf8_validate(s, -1, NULL) ? s : fallback;
}

/* ---- objects by path ---------------------------------------------------- */

static int parse_id_suffix(const char *path, const char *prefix, unsigned *out) {
        size_t n = strlen(prefix);
        if (strncmp(path, prefix, n) != 0 || path[n] != '/' || !path[n + 1])
                return -ENOENT;
        const char *s = path + n + 1;
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || *end || !g_ascii_isdigit(*s) || v > UINT32_MAX)
                return -ENOENT;
        *out = (unsigned) v;
        return 0;
}

static NpNode *node_from_path(NpManager *m, const char *path) {
        unsigned id;
        if (parse_id_suffix(path, NP_BUS_NODE_PREFIX, &id) < 0)
                return NULL;
        return np_topology_node(m->topology, id);
}

static NpProcess *process_from_path(NpManager *m, const char *path) {
        unsigned pid;
        if (parse_id_suffix(path, NP_BUS_PROCESS_PREFIX, &pid) < 0 || pid > INT32_MAX)
                return NULL;
        NpProcess *p = np_manager_process(m, (int) pid);
        return p && p->significant ? p : NULL;
}

static NpGroupView *group_from_path(NpManager *m, const char *path) {
        unsigned id;
        if (parse_id_suffix(path, NP_BUS_GROUP_PREFIX, &id) < 0)
                return NULL;
        return np_group_table_get(m->groups, id);
}

/* ---- Node objects ------------------------------------------------------- */

GETTER(node_id) {
        NpNode *n = node_from_path(userdata, path);
        return n ? sd_bus_message_append(reply, "u", n->id) : -ENOENT;
}
GETTER(node_cpus) {
        NpNode *n = node_from_path(userdata, path);
        return n ? np_bus_append_mask(reply, n->cpus) : -ENOENT;
}
GETTER(node_distances) {
        NpNode *n = node_from_path(userdata, path);
        if (!n)
                return -ENOENT;
        int r = sd_bus_message_open_container(reply, 'a', "(uu)");
        for (guint i = 0; r >= 0 && i < n->distances->len; i++) {
                NpDistance *d = &g_array_index(n->distances, NpDistance, i);
                r = sd_bus_message_append(reply, "(uu)", d->node, d->distance);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}
GETTER(node_mem_total) {
        NpNode *n = node_from_path(userdata, path);
        return n ? sd_bus_message_append(reply, "t", n->mem_total_bytes) : -ENOENT;
}
GETTER(node_mem_free) {
        NpNode *n = node_from_path(userdata, path);
        const NpNodeSample *s = n ? np_manager_node_sample(((NpManager *) userdata), n->id) : NULL;
        return n ? sd_bus_message_append(reply, "t", s ? s->mem_free_bytes : (uint64_t) 0) : -ENOENT;
}
GETTER(node_capacity) {
        NpNode *n = node_from_path(userdata, path);
        return n ? sd_bus_message_append(reply, "d", (double) np_mask_weight(n->cpus)) : -ENOENT;
}
GETTER(node_busy) {
        NpNode *n = node_from_path(userdata, path);
        const NpNodeSample *s = n ? np_manager_node_sample(((NpManager *) userdata), n->id) : NULL;
        return n ? sd_bus_message_append(reply, "d", s ? s->cpu_busy : 0.0) : -ENOENT;
}
GETTER(node_managed) {
        NpNode *n = node_from_path(userdata, path);
        if (!n)
                return -ENOENT;
        g_autoptr(GArray) a = np_manager_managed_pids_on(((NpManager *) userdata), n->id);
        return np_bus_append_u32s(reply, a);
}

static const sd_bus_vtable node_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "u", node_id, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CPUs", "au", node_cpus, 0, EMITS),
        SD_BUS_PROPERTY("Distances", "a(uu)", node_distances, 0, EMITS),
        SD_BUS_PROPERTY("MemoryTotalBytes", "t", node_mem_total, 0, EMITS),
        SD_BUS_PROPERTY("MemoryFreeBytes", "t", node_mem_free, 0, EMITS),
        SD_BUS_PROPERTY("CPUCapacity", "d", node_capacity, 0, EMITS),
        SD_BUS_PROPERTY("CPUBusy", "d", node_busy, 0, EMITS),
        SD_BUS_PROPERTY("ManagedProcesses", "au", node_managed, 0, EMITS),
        SD_BUS_VTABLE_END,
};

static int node_find(sd_bus *bus, const char *path, const char *iface, void *userdata, void **found,
                     sd_bus_error *ret) {
        if (!node_from_path(userdata, path))
                return 0;
        *found = userdata;
        return 1;
}

/* The object paths "<prefix>/<id>" for ids, as the malloc'd NULL-terminated
 * list sd-bus frees with free(). */
static int paths_from_ids(const char *prefix, const GArray *ids, char ***out) {
        char **paths = calloc(ids->len + 1, sizeof(char *));
        if (!paths)
                return -ENOMEM;
        for (guint i = 0; i < ids->len; i++)
                if (asprintf(&paths[i], "%s/%u", prefix, g_array_index(ids, guint32, i)) < 0) {
                        for (guint k = 0; k < i; k++)
                                free(paths[k]);
                        free(paths);
                        return -ENOMEM;
                }
        *out = paths;
        return 0;
}

static int node_enumerate(sd_bus *bus, const char *prefix, void *userdata, char ***nodes, sd_bus_error *ret) {
        g_autoptr(GArray) ids = np_mask_to_u32_array(((NpManager *) userdata)->topology->online);
        return paths_from_ids(NP_BUS_NODE_PREFIX, ids, nodes);
}

/* ---- Process objects ---------------------------------------------------- */

#define PROC_GETTER(fn, body) \
        GETTER(fn) { \
                NpProcess *p = process_from_path(userdata, path); \
                if (!p) \
                        return -ENOENT; \
                body \
        }

PROC_GETTER(proc_pid, return sd_bus_message_append(reply, "u", (uint32_t) p->pid);)
PROC_GETTER(proc_comm, return sd_bus_message_append(reply, "s", np_bus_utf8_or(p->comm, "?"));)
PROC_GETTER(proc_start,
            return sd_bus_message_append(reply, "t", p->starttime *G_USEC_PER_SEC / (uint64_t) np_clock_ticks());)
PROC_GETTER(proc_cpu, return sd_bus_message_append(reply, "d", p->cpu_usage);)
PROC_GETTER(proc_mem, return sd_bus_message_append(reply, "t", np_process_memory_bytes(p));)
PROC_GETTER(proc_locality, return sd_bus_message_append(reply, "d", p->locality);)
PROC_GETTER(proc_locality_ts, return sd_bus_message_append(reply, "t", p->maps_age.read_usec);)
PROC_GETTER(proc_state, return sd_bus_message_append(reply, "s", np_proc_state_to_string(p->state));)
PROC_GETTER(proc_placed, return sd_bus_message_append(reply, "t", p->last_placed_usec);)
PROC_GETTER(proc_cgroup, return sd_bus_message_append(reply, "s", np_bus_utf8_or(p->cgroup ? p->cgroup : "", ""));)
PROC_GETTER(proc_decision, g_autofree char *text = np_process_decision_text(p);
            return sd_bus_message_append(reply, "s", np_bus_utf8_or(text, ""));)
PROC_GETTER(proc_unit, return sd_bus_message_append(reply, "s", np_bus_utf8_or(p->unit ? p->unit : "", ""));)
PROC_GETTER(proc_group, {
        char group[96] = "/";
        if (p->group_id && np_group_table_get(((NpManager *) userdata)->groups, p->group_id))
                g_snprintf(group, sizeof group, NP_BUS_GROUP_PREFIX "/%u", p->group_id);
        return sd_bus_message_append(reply, "o", group);
})
PROC_GETTER(proc_target, {
        g_autoptr(NpMask) empty = np_mask_new();
        return np_bus_append_mask(reply, p->target ? p->target : empty);
})
PROC_GETTER(proc_per_node, return np_bus_append_node_bytes(reply, p->maps.per_node);)

static const sd_bus_vtable process_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Pid", "u", proc_pid, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Comm", "s", proc_comm, 0, EMITS),
        SD_BUS_PROPERTY("StartTime", "t", proc_start, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CPUUsage", "d", proc_cpu, 0, EMITS),
        SD_BUS_PROPERTY("MemoryBytes", "t", proc_mem, 0, EMITS),
        SD_BUS_PROPERTY("MemoryPerNode", "a(ut)", proc_per_node, 0, EMITS),
        SD_BUS_PROPERTY("Locality", "d", proc_locality, 0, EMITS),
        /* not signalled: it moves at every numa_maps read, read it with Locality */
        SD_BUS_PROPERTY("LocalityTimestamp", "t", proc_locality_ts, 0, 0),
        SD_BUS_PROPERTY("TargetNodes", "au", proc_target, 0, EMITS),
        SD_BUS_PROPERTY("State", "s", proc_state, 0, EMITS),
        SD_BUS_PROPERTY("LastPlacedTimestamp", "t", proc_placed, 0, EMITS),
        SD_BUS_PROPERTY("Cgroup", "s", proc_cgroup, 0, EMITS),
        SD_BUS_PROPERTY("Unit", "s", proc_unit, 0, EMITS),
        SD_BUS_PROPERTY("Group", "o", proc_group, 0, EMITS),
        SD_BUS_PROPERTY("Decision", "s", proc_decision, 0, EMITS),
        SD_BUS_VTABLE_END,
};

static int process_find(sd_bus *bus, const char *path, const char *iface, void *userdata, void **found,
                        sd_bus_error *ret) {
        if (!process_from_path(userdata, path))
                return 0;
        *found = userdata;
        return 1;
}

static int process_enumerate(sd_bus *bus, const char *prefix, void *userdata, char ***nodes, sd_bus_error *ret) {
        NpManager *m = ((NpManager *) userdata);
        g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(guint32));
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (((NpProcess *) v)->significant) {
                        guint32 pid = (guint32) ((NpProcess *) v)->pid;
                        g_array_append_val(pids, pid);
                }
        return paths_from_ids(NP_BUS_PROCESS_PREFIX, pids, nodes);
}

/* ---- Group objects ------------------------------------------------------ */

#define GROUP_GETTER(fn, body) \
        GETTER(fn) { \
                NpGroupView *g = group_from_path(userdata, path); \
                if (!g) \
                        return -ENOENT; \
                body \
        }

GROUP_GETTER(group_name, return sd_bus_message_append(reply, "s", np_bus_utf8_or(g->name, ""));)
GROUP_GETTER(group_kind, return sd_bus_message_append(reply, "s", np_group_kind_to_string(g->kind));)
GROUP_GETTER(group_members, return np_bus_append_u32s(reply, g->members);)
GROUP_GETTER(group_mem, return sd_bus_message_append(reply, "t", g->mem);)
GROUP_GETTER(group_per_node, return np_bus_append_node_bytes(reply, g->per_node);)
GROUP_GETTER(group_locality, return sd_bus_message_append(reply, "d", g->locality);)
GROUP_GETTER(group_target, return np_bus_append_mask(reply, g->target);)
GROUP_GETTER(group_state, return sd_bus_message_append(reply, "s", np_bus_utf8_or(g->state, ""));)
GROUP_GETTER(group_decision, return sd_bus_message_append(reply, "s", np_bus_utf8_or(g->decision, ""));)

static const sd_bus_vtable group_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", group_name, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Kind", "s", group_kind, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Members", "au", group_members, 0, EMITS),
        SD_BUS_PROPERTY("MemoryBytes", "t", group_mem, 0, EMITS),
        SD_BUS_PROPERTY("MemoryPerNode", "a(ut)", group_per_node, 0, EMITS),
        SD_BUS_PROPERTY("Locality", "d", group_locality, 0, EMITS),
        SD_BUS_PROPERTY("TargetNodes", "au", group_target, 0, EMITS),
        SD_BUS_PROPERTY("State", "s", group_state, 0, EMITS),
        SD_BUS_PROPERTY("Decision", "s", group_decision, 0, EMITS),
        SD_BUS_VTABLE_END,
};

static int group_find(sd_bus *bus, const char *path, const char *iface, void *userdata, void **found,
                      sd_bus_error *ret) {
        if (!group_from_path(userdata, path))
                return 0;
        *found = userdata;
        return 1;
}

static int group_enumerate(sd_bus *bus, const char *prefix, void *userdata, char ***nodes, sd_bus_error *ret) {
        g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint32));
        np_group_table_ids(((NpManager *) userdata)->groups, ids);
        return paths_from_ids(NP_BUS_GROUP_PREFIX, ids, nodes);
}

/* ---- registration ------------------------------------------------------- */

int np_bus_objects_add(sd_bus *bus, NpManager *m) {
        int r = sd_bus_add_fallback_vtable(bus, NULL, NP_BUS_NODE_PREFIX, NP_BUS_NODE_IFACE, node_vtable, node_find, m);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(bus, NULL, NP_BUS_NODE_PREFIX, node_enumerate, m);
        if (r >= 0)
                r = sd_bus_add_fallback_vtable(bus, NULL, NP_BUS_PROCESS_PREFIX, NP_BUS_PROCESS_IFACE, process_vtable,
                                               process_find, m);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(bus, NULL, NP_BUS_PROCESS_PREFIX, process_enumerate, m);
        if (r >= 0)
                r = sd_bus_add_fallback_vtable(bus, NULL, NP_BUS_GROUP_PREFIX, NP_BUS_GROUP_IFACE, group_vtable,
                                               group_find, m);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(bus, NULL, NP_BUS_GROUP_PREFIX, group_enumerate, m);
        return r < 0 ? r : 0;
}
