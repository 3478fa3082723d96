/* SPDX-License-Identifier: GPL-2.0-or-later */
/* D-Bus glue: see np-bus.h. */
#include "np-bus.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "np-advice.h"
#include "np-authz.h"
#include "np-build-config.h"
#include "np-bus-objects.h"
#include "np-cleanup.h"
#include "np-log.h"
#include "np-manager-actions.h"
#include "np-migrate-plan.h"
#include "np-placement.h"
#include "np-decide.h"
#include "np-thread.h"

struct NpBus {
        sd_bus *bus;
        NpManager *m;
        sd_event_source *post;
        GHashTable *published; /* pid -> starttime of the Process objects announced */
        NpMask *nodes; /* Node objects announced */
        NpAuthz *authz; /* who may call the changing methods */
};

#define MGR(userdata) (((NpBus *) (userdata))->m)

/* ---- helpers ------------------------------------------------------------ */

static int read_mask(sd_bus_message *msg, NpMask **out) {
        const guint32 *ids;
        size_t size;
        int r = sd_bus_message_read_array(msg, 'u', (const void **) &ids, &size);
        if (r < 0)
                return r;
        NpMask *mask = np_mask_new();
        for (size_t i = 0; i < size / sizeof(guint32); i++) {
                if (ids[i] > NP_NODE_MAX_ID) {
                        np_mask_free(mask);
                        return -ERANGE;
                }
                np_mask_set(mask, ids[i]);
        }
        *out = mask;
        return 0;
}

/* The InvalidArgs reply for a node list read_mask() refused. */
static int bad_node_list(sd_bus_error *ret, int r, const char *expected) {
        if (r == -ERANGE)
                return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS,
                                         "Node ids above %u do not exist on any Linux kernel", NP_NODE_MAX_ID);
        return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS, "Expected %s: %s", expected, strerror(-r));
}

int np_bus_error_from_gerror(sd_bus_error *ret, const GError *e) {
        int code = e && e->domain == NP_ERROR ? e->code : NP_ERROR_FAILED;
        sd_bus_error_set(ret, np_error_dbus_name(code), e ? e->message : "Failed");
        return -np_error_errno(code);
}

/* Methods that change state: root, or whom polkit allows (np-authz.h).
 * Returns > 0 to run the method; 0 when the verdict is pending (the handler
 * returns 1 and is called again with the same message once polkit
 * answered); < 0 refused, with ret set. Call it before reading arguments. */
static int authorize(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        return np_authz_check(((NpBus *) userdata)->authz, msg, ret);
}

/* ---- Manager properties ------------------------------------------------- */

#define GETTER(fn) \
        static int fn(sd_bus *bus, const char *path, const char *iface, const char *prop, sd_bus_message *reply, \
                      void *userdata, sd_bus_error *ret)

#define U64_GETTER(fn, field) \
        GETTER(fn) { \
                return sd_bus_message_append(reply, "t", MGR(userdata)->field); \
        }

GETTER(get_version) {
        return sd_bus_message_append(reply, "s", NP_VERSION);
}
GETTER(get_mode) {
        return sd_bus_message_append(reply, "s", np_mode_to_string(MGR(userdata)->config->mode));
}
GETTER(get_backend) {
        return sd_bus_message_append(reply, "s", MGR(userdata)->backend_name);
}
GETTER(get_paused) {
        return sd_bus_message_append(reply, "b", (int) MGR(userdata)->paused);
}
GETTER(get_daemon_cpu) {
        return sd_bus_message_append(reply, "t", np_cpu_usec(RUSAGE_SELF));
}
GETTER(get_node_ids) {
        return np_bus_append_mask(reply, MGR(userdata)->topology->online);
}
GETTER(get_managed) {
        g_autoptr(GArray) a = np_manager_managed_pids(MGR(userdata));
        return np_bus_append_u32s(reply, a);
}
GETTER(get_numa_balancing) {
        return sd_bus_message_append(reply, "u", MGR(userdata)->kernel_numa_balancing);
}
GETTER(get_config_files) {
        return sd_bus_message_append_strv(reply, MGR(userdata)->config->files);
}
GETTER(get_config_error) {
        return sd_bus_message_append(reply, "s", MGR(userdata)->config_error);
}
/* a(auttt): nodes, milli-CPUs, bytes, expiry (CLOCK_MONOTONIC µs), in the order made */
GETTER(get_reservations) {
        const NpReservations *rs = MGR(userdata)->reservations;
        int r = sd_bus_message_open_container(reply, 'a', "(auttt)");
        for (guint i = 0; r >= 0 && i < np_reservations_count(rs); i++) {
                const NpReservation *res = np_reservations_get(rs, i);
                r = sd_bus_message_open_container(reply, 'r', "auttt");
                if (r >= 0)
                        r = np_bus_append_mask(reply, res->nodes);
                if (r >= 0)
                        r = sd_bus_message_append(reply, "ttt", (uint64_t) (res->cpus * 1000.0 + 0.5), res->bytes,
                                                  res->expires_usec);
                if (r >= 0)
                        r = sd_bus_message_close_container(reply);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
}
U64_GETTER(get_scan_interval, scan_interval_usec)
U64_GETTER(get_scans, scans)
U64_GETTER(get_last_scan, last_scan_usec)
U64_GETTER(get_last_scan_duration, last_scan_duration_usec)
U64_GETTER(get_migrated_bytes, migrated_bytes)
U64_GETTER(get_migration_calls, migration_calls)
U64_GETTER(get_migration_failed_pages, migration_failed_pages)

/* ---- Manager methods ---------------------------------------------------- */

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        int r = authorize(msg, userdata, ret);
        if (r <= 0)
                return r < 0 ? r : 1;
        g_autoptr(GError) e = NULL;
        if (np_manager_reload(MGR(userdata), &e) < 0)
                return np_bus_error_from_gerror(ret, e);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_pause(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        int r = authorize(msg, userdata, ret);
        if (r <= 0)
                return r < 0 ? r : 1;
        np_manager_pause(MGR(userdata), true);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_resume(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        int r = authorize(msg, userdata, ret);
        if (r <= 0)
                return r < 0 ? r : 1;
        np_manager_pause(MGR(userdata), false);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_dump(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        g_autofree char *s = np_manager_dump(MGR(userdata));
        return sd_bus_reply_method_return(msg, "s", s);
}

static int method_plan(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        NpManager *m = MGR(userdata);
        g_autoptr(NpMask) from = NULL;
        g_autoptr(NpMask) to = NULL;
        int r = read_mask(msg, &from);
        if (r >= 0)
                r = read_mask(msg, &to);
        if (r < 0)
                return bad_node_list(ret, r, "two node lists (au, au)");
        if (np_mask_empty(to))
                return sd_bus_error_set(ret, SD_BUS_ERROR_INVALID_ARGS, "The target node list is empty");
        g_autoptr(GArray) plan = np_plan_migration(from, to, m->config->skip_overlapping_nodes);
        g_autoptr(sd_bus_message) reply = NULL;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(uu)");
        for (guint i = 0; r >= 0 && i < plan->len; i++) {
                NpMovePair *p = &g_array_index(plan, NpMovePair, i);
                r = sd_bus_message_append(reply, "(uu)", p->src, p->dst);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

/* Advise(d cpus, t bytes) -> au nodes: open to everyone, like Dump();
 * the answer is held as a reservation (np-advice.h). */
static int method_advise(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        double cpus;
        uint64_t bytes;
        int r = sd_bus_message_read(msg, "dt", &cpus, &bytes);
        if (r < 0)
                return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS, "Expected CPUs and bytes (d, t): %s",
                                         strerror(-r));
        /* who asks: root's answers are held in full, the others' within
         * the unprivileged bounds (np-reserve.h) */
        g_autoptr(sd_bus_creds) creds = NULL;
        uid_t euid = (uid_t) -1;
        if (sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds) < 0 || sd_bus_creds_get_euid(creds, &euid) < 0)
                euid = (uid_t) -1; /* unknown: unprivileged */
        g_autoptr(GError) e = NULL;
        g_autoptr(NpMask) nodes = np_advice_give(MGR(userdata), cpus, bytes, (uint32_t) euid, &e);
        if (!nodes)
                return np_bus_error_from_gerror(ret, e);
        g_autoptr(sd_bus_message) reply = NULL;
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = np_bus_append_mask(reply, nodes);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        return r;
}

/* Place() replies when its move has ended: this is the placement's done
 * callback, with the method call kept referenced until then. */
static void place_done(NpManager *m, int pid, uint64_t moved_bytes, const GError *error, void *userdata) {
        g_autoptr(sd_bus_message) msg = userdata;
        int r;

        if (error) {
                sd_bus_error err = SD_BUS_ERROR_NULL;
                np_bus_error_from_gerror(&err, error);
                r = sd_bus_reply_method_error(msg, &err);
                sd_bus_error_free(&err);
        } else {
                r = sd_bus_reply_method_return(msg, "t", moved_bytes);
        }
        if (r < 0)
                log_debug("Cannot reply to Place(%d) (the caller may have gone): %s", pid, strerror(-r));
}

static int method_place(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        NpManager *m = MGR(userdata);
        int r = authorize(msg, userdata, ret);
        if (r <= 0)
                return r < 0 ? r : 1;
        uint32_t pid;
        g_autoptr(NpMask) nodes = NULL;
        r = sd_bus_message_read(msg, "u", &pid);
        if (r >= 0)
                r = read_mask(msg, &nodes);
        if (r < 0)
                return bad_node_list(ret, r, "a PID and a node list (u, au)");
        if (pid == 0 || pid > INT32_MAX)
                return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS, "Invalid PID %u", pid);
        g_autoptr(GError) e = NULL;
        sd_bus_message_ref(msg);
        if (np_placement_submit(m, (int) pid, nodes, NP_PLACE_MANUAL, place_done, msg, &e) < 0) {
                sd_bus_message_unref(msg);
                return np_bus_error_from_gerror(ret, e);
        }
        return 1; /* the reply comes from place_done() */
}

typedef int (*PidAction)(NpManager *m, int pid, GError **error);

static int pid_method(sd_bus_message *msg, void *userdata, sd_bus_error *ret, PidAction action) {
        NpManager *m = MGR(userdata);
        int r = authorize(msg, userdata, ret);
        if (r <= 0)
                return r < 0 ? r : 1;
        uint32_t pid;
        r = sd_bus_message_read(msg, "u", &pid);
        if (r < 0)
                return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS, "Expected a PID (u): %s", strerror(-r));
        if (pid == 0 || pid > INT32_MAX)
                return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS, "Invalid PID %u", pid);
        g_autoptr(GError) e = NULL;
        if (action(m, (int) pid, &e) < 0)
                return np_bus_error_from_gerror(ret, e);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_include(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        return pid_method(msg, userdata, ret, np_manager_include);
}
static int method_exclude(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        return pid_method(msg, userdata, ret, np_manager_exclude);
}
static int method_forget(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        return pid_method(msg, userdata, ret, np_manager_forget);
}

#define EMITS SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Mode", "s", get_mode, 0, EMITS),
        SD_BUS_PROPERTY("Backend", "s", get_backend, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Paused", "b", get_paused, 0, EMITS),
        SD_BUS_PROPERTY("ScanIntervalUSec", "t", get_scan_interval, 0, EMITS),
        SD_BUS_PROPERTY("Scans", "t", get_scans, 0, EMITS),
        SD_BUS_PROPERTY("LastScanTimestamp", "t", get_last_scan, 0, EMITS),
        SD_BUS_PROPERTY("LastScanDurationUSec", "t", get_last_scan_duration, 0, EMITS),
        SD_BUS_PROPERTY("DaemonCPUUSec", "t", get_daemon_cpu, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("NodeIds", "au", get_node_ids, 0, EMITS),
        SD_BUS_PROPERTY("ManagedProcesses", "au", get_managed, 0, EMITS),
        SD_BUS_PROPERTY("MigratedBytes", "t", get_migrated_bytes, 0, EMITS),
        SD_BUS_PROPERTY("MigrationCalls", "t", get_migration_calls, 0, EMITS),
        SD_BUS_PROPERTY("MigrationFailedPages", "t", get_migration_failed_pages, 0, EMITS),
        SD_BUS_PROPERTY("KernelNumaBalancing", "u", get_numa_balancing, 0, EMITS),
        SD_BUS_PROPERTY("ConfigFiles", "as", get_config_files, 0, EMITS),
        SD_BUS_PROPERTY("ConfigError", "s", get_config_error, 0, EMITS),
        SD_BUS_PROPERTY("Reservations", "a(auttt)", get_reservations, 0, EMITS),
        SD_BUS_METHOD("Reload", "", "", method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Pause", "", "", method_pause, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Resume", "", "", method_resume, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Dump", "", "", "s", SD_BUS_PARAM(state), method_dump, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("PlanMigration", "auau", SD_BUS_PARAM(from) SD_BUS_PARAM(to), "a(uu)",
                                 SD_BUS_PARAM(pairs), method_plan, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Advise", "dt", SD_BUS_PARAM(cpus) SD_BUS_PARAM(bytes), "au", SD_BUS_PARAM(nodes),
                                 method_advise, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Place", "uau", SD_BUS_PARAM(pid) SD_BUS_PARAM(nodes), "t", SD_BUS_PARAM(moved_bytes),
                                 method_place, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Include", "u", SD_BUS_PARAM(pid), "", "", method_include, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Exclude", "u", SD_BUS_PARAM(pid), "", "", method_exclude, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Forget", "u", SD_BUS_PARAM(pid), "", "", method_forget, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_NAMES("ProcessPlaced", "usauautt",
                                 SD_BUS_PARAM(pid) SD_BUS_PARAM(comm) SD_BUS_PARAM(from) SD_BUS_PARAM(to)
                                         SD_BUS_PARAM(moved_bytes) SD_BUS_PARAM(usec),
                                 0),
        SD_BUS_VTABLE_END,
};

/* ---- publishing what changed -------------------------------------------- */

/* Property names for the bits of a mask, NULL-terminated in names[]. */
typedef struct {
        uint32_t bit;
        const char *name;
} PropName;

static const PropName manager_props[] = {
        { NP_MANAGER_MODE, "Mode" },
        { NP_MANAGER_PAUSED, "Paused" },
        { NP_MANAGER_SCAN_INTERVAL, "ScanIntervalUSec" },
        { NP_MANAGER_SCANS, "Scans" },
        { NP_MANAGER_LAST_SCAN, "LastScanTimestamp" },
        { NP_MANAGER_LAST_SCAN, "LastScanDurationUSec" },
        { NP_MANAGER_DAEMON_CPU, "DaemonCPUUSec" },
        { NP_MANAGER_NODE_IDS, "NodeIds" },
        { NP_MANAGER_MANAGED, "ManagedProcesses" },
        { NP_MANAGER_MIGRATION, "MigratedBytes" },
        { NP_MANAGER_MIGRATION, "MigrationCalls" },
        { NP_MANAGER_MIGRATION, "MigrationFailedPages" },
        { NP_MANAGER_NUMA_BALANCING, "KernelNumaBalancing" },
        { NP_MANAGER_CONFIG, "ConfigFiles" },
        { NP_MANAGER_CONFIG_ERROR, "ConfigError" },
        { NP_MANAGER_RESERVATIONS, "Reservations" },
};

static const PropName node_props[] = {
        { NP_NODE_MEMORY_FREE, "MemoryFreeBytes" },
        { NP_NODE_CPU_BUSY, "CPUBusy" },
        { NP_NODE_MANAGED, "ManagedProcesses" },
        { NP_NODE_CPUS, "CPUs" },
        { NP_NODE_CPUS, "CPUCapacity" },
        { NP_NODE_MEMORY_TOTAL, "MemoryTotalBytes" },
        { NP_NODE_DISTANCES, "Distances" },
};

static const PropName process_props[] = {
        { NP_PROCESS_COMM, "Comm" },
        { NP_PROCESS_CPU_USAGE, "CPUUsage" },
        { NP_PROCESS_MEMORY_BYTES, "MemoryBytes" },
        { NP_PROCESS_MEMORY_PER_NODE, "MemoryPerNode" },
        { NP_PROCESS_LOCALITY, "Locality" },
        { NP_PROCESS_TARGET_NODES, "TargetNodes" },
        { NP_PROCESS_STATE, "State" },
        { NP_PROCESS_LAST_PLACED, "LastPlacedTimestamp" },
        { NP_PROCESS_CGROUP, "Cgroup" },
        { NP_PROCESS_UNIT, "Unit" },
        { NP_PROCESS_GROUP, "Group" },
        { NP_PROCESS_DECISION, "Decision" },
};

static void emit_changed(NpBus *b, const char *path, const char *iface, const PropName *table, size_t n,
                         uint32_t mask) {
        const char *names[32];
        size_t k = 0;
        for (size_t i = 0; i < n && k < G_N_ELEMENTS(names) - 1; i++)
                if (mask & table[i].bit)
                        names[k++] = table[i].name;
        names[k] = NULL;
        if (!k)
                return;
        int r = sd_bus_emit_properties_changed_strv(b->bus, path, iface, (char **) names);
        if (r < 0)
                log_debug("Cannot emit PropertiesChanged on %s: %s", path, strerror(-r));
}

static void publish_nodes(NpBus *b) {
        NpManager *m = b->m;
        const NpMask *online = m->topology->online;
        char path[96];

        NP_MASK_FOREACH (id, b->nodes)
                if (!np_mask_test(online, (unsigned) id)) {
                        g_snprintf(path, sizeof path, NP_BUS_NODE_PREFIX "/%d", id);
                        sd_bus_emit_interfaces_removed(b->bus, path, NP_BUS_NODE_IFACE, NULL);
                        g_hash_table_remove(m->changes.nodes, GINT_TO_POINTER(id));
                }
        NP_MASK_FOREACH (id, online)
                if (!np_mask_test(b->nodes, (unsigned) id)) {
                        g_snprintf(path, sizeof path, NP_BUS_NODE_PREFIX "/%d", id);
                        sd_bus_emit_interfaces_added(b->bus, path, NP_BUS_NODE_IFACE, NULL);
                        g_hash_table_remove(m->changes.nodes, GINT_TO_POINTER(id));
                }
        np_mask_assign(b->nodes, online);

        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, m->changes.nodes);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                g_snprintf(path, sizeof path, NP_BUS_NODE_PREFIX "/%u", GPOINTER_TO_UINT(k));
                if (np_mask_test(online, GPOINTER_TO_UINT(k)))
                        emit_changed(b, path, NP_BUS_NODE_IFACE, node_props, G_N_ELEMENTS(node_props),
                                     GPOINTER_TO_UINT(v));
        }
        g_hash_table_remove_all(m->changes.nodes);
}

static void publish_processes(NpBus *b) {
        NpManager *m = b->m;
        char path[96];
        GHashTableIter it;
        gpointer k, v;

        if (!m->changes.processes)
                return;
        m->changes.processes = false;

        /* Gone, no longer significant, or a reused pid: removed. */
        g_hash_table_iter_init(&it, b->published);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                NpProcess *p = np_manager_process(m, GPOINTER_TO_INT(k));
                if (p && p->significant && (gsize) p->starttime == GPOINTER_TO_SIZE(v))
                        continue;
                g_snprintf(path, sizeof path, NP_BUS_PROCESS_PREFIX "/%d", GPOINTER_TO_INT(k));
                sd_bus_emit_interfaces_removed(b->bus, path, NP_BUS_PROCESS_IFACE, NULL);
                g_hash_table_iter_remove(&it);
        }
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, &k, &v)) {
                NpProcess *p = v;
                uint32_t changed = p->changed;
                p->changed = 0;
                if (!p->significant)
                        continue;
                g_snprintf(path, sizeof path, NP_BUS_PROCESS_PREFIX "/%d", p->pid);
                if (!g_hash_table_contains(b->published, k)) {
                        sd_bus_emit_interfaces_added(b->bus, path, NP_BUS_PROCESS_IFACE, NULL);
                        g_hash_table_insert(b->published, k, GSIZE_TO_POINTER((gsize) p->starttime));
                } else if (changed) {
                        emit_changed(b, path, NP_BUS_PROCESS_IFACE, process_props, G_N_ELEMENTS(process_props),
                                     changed);
                }
        }
}

static const PropName group_props[] = {
        { NP_GROUP_VIEW_MEMBERS, "Members" },      { NP_GROUP_VIEW_MEMORY, "MemoryBytes" },
        { NP_GROUP_VIEW_MEMORY, "MemoryPerNode" }, { NP_GROUP_VIEW_LOCALITY, "Locality" },
        { NP_GROUP_VIEW_TARGET, "TargetNodes" },   { NP_GROUP_VIEW_STATE, "State" },
        { NP_GROUP_VIEW_DECISION, "Decision" },
};

static void publish_groups(NpBus *b) {
        NpGroupTable *t = b->m->groups;
        char path[96];
        g_autoptr(GArray) removed = np_group_table_steal_removed(t);
        for (guint i = 0; i < removed->len; i++) {
                g_snprintf(path, sizeof path, NP_BUS_GROUP_PREFIX "/%u", g_array_index(removed, guint32, i));
                sd_bus_emit_interfaces_removed(b->bus, path, NP_BUS_GROUP_IFACE, NULL);
        }
        g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint32));
        np_group_table_ids(t, ids);
        for (guint i = 0; i < ids->len; i++) {
                NpGroupView *v = np_group_table_get(t, g_array_index(ids, guint32, i));
                g_snprintf(path, sizeof path, NP_BUS_GROUP_PREFIX "/%u", v->id);
                if (v->added)
                        sd_bus_emit_interfaces_added(b->bus, path, NP_BUS_GROUP_IFACE, NULL);
                else if (v->changed)
                        emit_changed(b, path, NP_BUS_GROUP_IFACE, group_props, G_N_ELEMENTS(group_props), v->changed);
                v->added = false;
                v->changed = 0;
        }
}

static void emit_placed(NpBus *b, const NpPlacedEvent *e) {
        g_autoptr(sd_bus_message) sig = NULL;
        int r = sd_bus_message_new_signal(b->bus, &sig, NP_BUS_PATH, NP_BUS_MANAGER_IFACE, "ProcessPlaced");
        if (r >= 0)
                r = sd_bus_message_append(sig, "us", (uint32_t) e->pid, np_bus_utf8_or(e->comm, "?"));
        if (r >= 0)
                r = np_bus_append_mask(sig, e->from);
        if (r >= 0)
                r = np_bus_append_mask(sig, e->to);
        if (r >= 0)
                r = sd_bus_message_append(sig, "tt", e->moved_bytes, e->usec);
        if (r >= 0)
                r = sd_bus_send(b->bus, sig, NULL);
        if (r < 0)
                log_warning("Cannot emit ProcessPlaced: %s", strerror(-r));
}

void np_bus_publish(NpBus *b) {
        NpManager *m = b->m;
        NpPlacedEvent *e;

        publish_nodes(b);
        publish_groups(b);
        publish_processes(b);
        emit_changed(b, NP_BUS_PATH, NP_BUS_MANAGER_IFACE, manager_props, G_N_ELEMENTS(manager_props),
                     m->changes.manager);
        m->changes.manager = 0;
        while ((e = g_queue_pop_head(&m->changes.placed))) {
                emit_placed(b, e);
                np_placed_event_free(e);
        }
}

static int on_post(sd_event_source *s, void *userdata) {
        np_bus_publish(userdata);
        return 0;
}

/* ---- setup -------------------------------------------------------------- */

void np_bus_free(NpBus *b) {
        if (!b)
                return;
        sd_event_source_disable_unref(b->post);
        np_authz_free(b->authz); /* answers the calls still waiting for polkit */
        if (b->bus) {
                np_bus_publish(b);
                sd_bus_flush(b->bus);
                sd_bus_close_unref(b->bus);
        }
        g_hash_table_destroy(b->published);
        np_mask_free(b->nodes);
        g_free(b);
}

/* The system bus connection. Like sd_bus_open_system(), but without
 * descriptor passing (numaplaced never takes one: a caller cannot make it
 * receive descriptors, and run out of them) and ending the event loop with
 * EXIT_FAILURE when the connection is lost. */
static int open_system_bus(sd_bus **out) {
        const char *address = secure_getenv("DBUS_SYSTEM_BUS_ADDRESS");
        sd_bus *bus = NULL;
        int r = sd_bus_new(&bus);

        if (r >= 0)
                r = sd_bus_set_address(bus, address && *address ? address : "unix:path=/run/dbus/system_bus_socket");
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_set_trusted(bus, 0);
        if (r >= 0)
                r = sd_bus_negotiate_fds(bus, 0);
        if (r >= 0)
                r = sd_bus_negotiate_creds(bus, 1, SD_BUS_CREDS_UID | SD_BUS_CREDS_EUID | SD_BUS_CREDS_EFFECTIVE_CAPS);
        if (r >= 0)
                r = sd_bus_set_exit_on_disconnect(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *out = bus;
        return 0;
}

int np_bus_new(NpManager *m, sd_event *event, NpBus **out) {
        g_autoptr(NpBus) b = g_new0(NpBus, 1);
        b->m = m;
        b->published = g_hash_table_new(g_direct_hash, g_direct_equal);
        b->authz = np_authz_new();
        b->nodes = np_mask_copy(m->topology->online); /* announced by the enumerator from the start */

        int r = open_system_bus(&b->bus);
        if (r < 0) {
                log_error("Cannot connect to the system bus: %s", strerror(-r));
                return r;
        }
        r = sd_bus_add_object_vtable(b->bus, NULL, NP_BUS_PATH, NP_BUS_MANAGER_IFACE, manager_vtable, b);
        if (r >= 0)
                r = np_bus_objects_add(b->bus, m);
        if (r >= 0)
                r = sd_bus_add_object_manager(b->bus, NULL, NP_BUS_PATH);
        if (r < 0) {
                log_error("Cannot register D-Bus objects: %s", strerror(-r));
                return r;
        }
        r = sd_bus_attach_event(b->bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0) {
                log_error("Cannot attach the bus to the event loop: %s", strerror(-r));
                return r;
        }
        r = sd_event_add_post(event, &b->post, on_post, b);
        if (r < 0) {
                log_error("Cannot add the bus's post-iteration source: %s", strerror(-r));
                return r;
        }
        (void) sd_event_source_set_description(b->post, "bus-publish");
        r = sd_bus_request_name(b->bus, NP_BUS_NAME, 0);
        if (r < 0) {
                log_error("Cannot own the bus name %s: %s (is another numaplaced running, or is "
                          "the D-Bus policy org.numaplaced1.conf not installed?)",
                          NP_BUS_NAME, strerror(-r));
                return r;
        }
        *out = g_steal_pointer(&b);
        return 0;
}
