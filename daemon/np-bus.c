#include "np-bus.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "np-build-config.h"
#include "np-log.h"
#include "np-migrate-plan.h"

#define NP_BUS_ERROR_PREFIX "org.numaplaced1.Error."

/* ---- helpers ------------------------------------------------------------ */

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
        if (parse_id_suffix(path, NP_BUS_PROCESS_PREFIX, &pid) < 0)
                return NULL;
        NpProcess *p = np_manager_process(m, (int) pid);
        return p && p->significant ? p : NULL;
}

static int append_mask(sd_bus_message *reply, const NpMask *mask) {
        g_autoptr(GArray) a = np_mask_to_u32_array(mask);
        return sd_bus_message_append_array(reply, 'u', a->data, a->len * sizeof(guint32));
}

static int append_u32_garray(sd_bus_message *reply, GArray *a) {
        return sd_bus_message_append_array(reply, 'u', a->data, a->len * sizeof(guint32));
}

static int read_mask(sd_bus_message *msg, NpMask **out) {
        const guint32 *ids;
        size_t size;
        int r = sd_bus_message_read_array(msg, 'u', (const void **) &ids, &size);
        if (r < 0)
                return r;
        NpMask *mask = np_mask_new();
        for (size_t i = 0; i < size / sizeof(guint32); i++) {
                if (ids[i] > NP_MASK_MAX_ID) {
                        np_mask_free(mask);
                        return -ERANGE;
                }
                np_mask_set(mask, ids[i]);
        }
        *out = mask;
        return 0;
}

int np_bus_error_from_gerror(sd_bus_error *ret, const GError *e) {
        static const struct {
                int code;
                const char *name;
                int err;
        } map[] = {
                { NP_ERROR_INVALID_ARGS, SD_BUS_ERROR_INVALID_ARGS, EINVAL },
                { NP_ERROR_NO_SUCH_PROCESS, NP_BUS_ERROR_PREFIX "NoSuchProcess", ESRCH },
                { NP_ERROR_NO_SUCH_NODE, NP_BUS_ERROR_PREFIX "NoSuchNode", ENOENT },
                { NP_ERROR_CONFIG_INVALID, NP_BUS_ERROR_PREFIX "ConfigInvalid", EINVAL },
                { NP_ERROR_NOT_SUPPORTED, NP_BUS_ERROR_PREFIX "NotSupported", EOPNOTSUPP },
                { NP_ERROR_MIGRATION_FAILED, NP_BUS_ERROR_PREFIX "MigrationFailed", EIO },
        };
        const char *name = NP_BUS_ERROR_PREFIX "Failed";
        int err = EIO;
        for (size_t i = 0; e && e->domain == NP_ERROR && i < G_N_ELEMENTS(map); i++)
                if (map[i].code == e->code) {
                        name = map[i].name;
                        err = map[i].err;
                }
        sd_bus_error_set(ret, name, e ? e->message : "Failed");
        return -err;
}

/* Methods that change state are for root only (the policy file says so too). */
static int check_root(sd_bus_message *msg, sd_bus_error *ret) {
        sd_bus_creds *creds = NULL;
        uid_t euid;
        int r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &euid);
        sd_bus_creds_unref(creds);
        if (r < 0)
                return sd_bus_error_set_errnof(ret, r, "Cannot determine the caller's credentials: %s", strerror(-r));
        if (euid != 0) {
                log_notice("Refused %s() from uid %u: requires root", sd_bus_message_get_member(msg), (unsigned) euid);
                return sd_bus_error_setf(ret, SD_BUS_ERROR_ACCESS_DENIED, "%s() requires root privileges",
                                         sd_bus_message_get_member(msg));
        }
        return 0;
}

/* ---- Manager properties ------------------------------------------------- */

#define GETTER(fn) \
        static int fn(sd_bus *bus, const char *path, const char *iface, const char *prop, sd_bus_message *reply, \
                      void *userdata, sd_bus_error *ret)

GETTER(get_version) {
        return sd_bus_message_append(reply, "s", NP_VERSION);
}
GETTER(get_mode) {
        NpManager *m = userdata;
        return sd_bus_message_append(reply, "s", np_mode_to_string(m->config->mode));
}
GETTER(get_backend) {
        NpManager *m = userdata;
        return sd_bus_message_append(reply, "s", m->backend_name);
}
GETTER(get_paused) {
        NpManager *m = userdata;
        return sd_bus_message_append(reply, "b", (int) m->paused);
}
GETTER(get_daemon_cpu) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        uint64_t us = (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * G_USEC_PER_SEC +
                      (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
        return sd_bus_message_append(reply, "t", us);
}
GETTER(get_node_ids) {
        NpManager *m = userdata;
        return append_mask(reply, m->topology->online);
}
GETTER(get_managed) {
        NpManager *m = userdata;
        g_autoptr(GArray) a = np_manager_managed_pids(m);
        return append_u32_garray(reply, a);
}
GETTER(get_numa_balancing) {
        NpManager *m = userdata;
        return sd_bus_message_append(reply, "u", m->kernel_numa_balancing);
}
GETTER(get_config_files) {
        NpManager *m = userdata;
        return sd_bus_message_append_strv(reply, m->config->files);
}
GETTER(get_config_error) {
        NpManager *m = userdata;
        return sd_bus_message_append(reply, "s", m->config_error);
}

#define U64_PROP(name, field)                                                     \
        SD_BUS_PROPERTY(name, "t", NULL, offsetof(NpManager, field), SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)

/* ---- Manager methods ---------------------------------------------------- */

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        NpManager *m = userdata;
        int r = check_root(msg, ret);
        if (r < 0)
                return r;
        g_autoptr(GError) e = NULL;
        if (np_manager_reload(m, &e) < 0)
                return np_bus_error_from_gerror(ret, e);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_pause(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        int r = check_root(msg, ret);
        if (r < 0)
                return r;
        np_manager_pause(userdata, true);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_resume(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        int r = check_root(msg, ret);
        if (r < 0)
                return r;
        np_manager_pause(userdata, false);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_dump(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        g_autofree char *s = np_manager_dump(userdata);
        return sd_bus_reply_method_return(msg, "s", s);
}

static int method_plan(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        NpManager *m = userdata;
        g_autoptr(NpMask) from = NULL;
        g_autoptr(NpMask) to = NULL;
        int r = read_mask(msg, &from);
        if (r >= 0)
                r = read_mask(msg, &to);
        if (r < 0)
                return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS, "Expected two node lists (au, au): %s",
                                         strerror(-r));
        if (np_mask_empty(to))
                return sd_bus_error_set(ret, SD_BUS_ERROR_INVALID_ARGS, "The target node list is empty");
        g_autoptr(GArray) plan = np_plan_migration(from, to, m->config->skip_overlapping_nodes);
        sd_bus_message *reply = NULL;
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
        sd_bus_message_unref(reply);
        return r;
}

static int method_place(sd_bus_message *msg, void *userdata, sd_bus_error *ret) {
        NpManager *m = userdata;
        int r = check_root(msg, ret);
        if (r < 0)
                return r;
        uint32_t pid;
        g_autoptr(NpMask) nodes = NULL;
        r = sd_bus_message_read(msg, "u", &pid);
        if (r >= 0)
                r = read_mask(msg, &nodes);
        if (r < 0)
                return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS, "Expected a PID and a node list (u, au): %s",
                                         strerror(-r));
        if (pid == 0 || pid > INT32_MAX)
                return sd_bus_error_setf(ret, SD_BUS_ERROR_INVALID_ARGS, "Invalid PID %u", pid);
        g_autoptr(GError) e = NULL;
        uint64_t moved = 0;
        if (np_manager_place(m, (int) pid, nodes, &moved, &e) < 0)
                return np_bus_error_from_gerror(ret, e);
        return sd_bus_reply_method_return(msg, "t", moved);
}

typedef int (*PidAction)(NpManager *m, int pid, GError **error);

static int pid_method(sd_bus_message *msg, NpManager *m, sd_bus_error *ret, PidAction action) {
        int r = check_root(msg, ret);
        if (r < 0)
                return r;
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

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Mode", "s", get_mode, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Backend", "s", get_backend, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Paused", "b", get_paused, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        U64_PROP("ScanIntervalUSec", scan_interval_usec),
        U64_PROP("Scans", scans),
        U64_PROP("LastScanTimestamp", last_scan_usec),
        U64_PROP("LastScanDurationUSec", last_scan_duration_usec),
        SD_BUS_PROPERTY("DaemonCPUUSec", "t", get_daemon_cpu, 0, SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
        SD_BUS_PROPERTY("NodeIds", "au", get_node_ids, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ManagedProcesses", "au", get_managed, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        U64_PROP("MigratedBytes", migrated_bytes),
        U64_PROP("MigrationCalls", migration_calls),
        U64_PROP("MigrationFailedPages", migration_failed_pages),
        SD_BUS_PROPERTY("KernelNumaBalancing", "u", get_numa_balancing, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ConfigFiles", "as", get_config_files, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ConfigError", "s", get_config_error, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_METHOD("Reload", "", "", method_reload, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Pause", "", "", method_pause, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD("Resume", "", "", method_resume, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Dump", "", "", "s", SD_BUS_PARAM(state), method_dump,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("PlanMigration", "auau", SD_BUS_PARAM(from) SD_BUS_PARAM(to), "a(uu)",
                                 SD_BUS_PARAM(pairs), method_plan, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Place", "uau", SD_BUS_PARAM(pid) SD_BUS_PARAM(nodes), "t",
                                 SD_BUS_PARAM(moved_bytes), method_place, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Include", "u", SD_BUS_PARAM(pid), "", "", method_include,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Exclude", "u", SD_BUS_PARAM(pid), "", "", method_exclude,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_NAMES("Forget", "u", SD_BUS_PARAM(pid), "", "", method_forget,
                                 SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_NAMES("ProcessPlaced", "usauautt",
                                 SD_BUS_PARAM(pid) SD_BUS_PARAM(comm) SD_BUS_PARAM(from) SD_BUS_PARAM(to)
                                         SD_BUS_PARAM(moved_bytes) SD_BUS_PARAM(usec),
                                 0),
        SD_BUS_VTABLE_END,
};

/* ---- Node objects ------------------------------------------------------- */

GETTER(node_id) {
        NpNode *n = node_from_path(userdata, path);
        return n ? sd_bus_message_append(reply, "u", n->id) : -ENOENT;
}
GETTER(node_cpus) {
        NpNode *n = node_from_path(userdata, path);
        return n ? append_mask(reply, n->cpus) : -ENOENT;
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
        const NpNodeSample *s = n ? np_manager_node_sample(userdata, n->id) : NULL;
        return n ? sd_bus_message_append(reply, "t", s ? s->mem_free_bytes : (uint64_t) 0) : -ENOENT;
}
GETTER(node_capacity) {
        NpNode *n = node_from_path(userdata, path);
        return n ? sd_bus_message_append(reply, "d", (double) np_mask_weight(n->cpus)) : -ENOENT;
}
GETTER(node_busy) {
        NpNode *n = node_from_path(userdata, path);
        const NpNodeSample *s = n ? np_manager_node_sample(userdata, n->id) : NULL;
        return n ? sd_bus_message_append(reply, "d", s ? s->cpu_busy : 0.0) : -ENOENT;
}
GETTER(node_managed) {
        NpNode *n = node_from_path(userdata, path);
        if (!n)
                return -ENOENT;
        g_autoptr(GArray) a = np_manager_managed_pids_on(userdata, n->id);
        return append_u32_garray(reply, a);
}

static const sd_bus_vtable node_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "u", node_id, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CPUs", "au", node_cpus, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Distances", "a(uu)", node_distances, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MemoryTotalBytes", "t", node_mem_total, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MemoryFreeBytes", "t", node_mem_free, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("CPUCapacity", "d", node_capacity, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CPUBusy", "d", node_busy, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("ManagedProcesses", "au", node_managed, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
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
        NpManager *m = userdata;
        g_autoptr(GArray) ids = np_mask_to_u32_array(m->topology->online);
        return paths_from_ids(NP_BUS_NODE_PREFIX, ids, nodes);
}

/* ---- Process objects ---------------------------------------------------- */

#define PROC_GETTER(fn, body)                      \
        GETTER(fn) {                               \
                NpProcess *p = process_from_path(userdata, path); \
                if (!p)                            \
                        return -ENOENT;            \
                body                               \
        }

PROC_GETTER(proc_pid, return sd_bus_message_append(reply, "u", (uint32_t) p->pid);)
PROC_GETTER(proc_comm, return sd_bus_message_append(reply, "s", g_utf8_validate(p->comm, -1, NULL) ? p->comm : "?");)
PROC_GETTER(proc_start, return sd_bus_message_append(reply, "t",
                                                     p->starttime * G_USEC_PER_SEC / (uint64_t) np_clock_ticks());)
PROC_GETTER(proc_cpu, return sd_bus_message_append(reply, "d", p->cpu_usage);)
PROC_GETTER(proc_mem, return sd_bus_message_append(reply, "t", p->maps.total_bytes ? p->maps.total_bytes : p->rss_bytes);)
PROC_GETTER(proc_locality, return sd_bus_message_append(reply, "d", p->locality);)
PROC_GETTER(proc_state, return sd_bus_message_append(reply, "s", np_proc_state_to_string(p->state));)
PROC_GETTER(proc_placed, return sd_bus_message_append(reply, "t", p->last_placed_usec);)
PROC_GETTER(proc_cgroup, return sd_bus_message_append(reply, "s", p->cgroup ? p->cgroup : "");)
PROC_GETTER(proc_unit, return sd_bus_message_append(reply, "s", p->unit ? p->unit : "");)
PROC_GETTER(proc_target, {
        g_autoptr(NpMask) empty = np_mask_new();
        return append_mask(reply, p->target ? p->target : empty);
})
PROC_GETTER(proc_per_node, {
        int r = sd_bus_message_open_container(reply, 'a', "(ut)");
        for (guint i = 0; r >= 0 && p->maps.per_node && i < p->maps.per_node->len; i++) {
                NpNodeBytes *nb = &g_array_index(p->maps.per_node, NpNodeBytes, i);
                r = sd_bus_message_append(reply, "(ut)", nb->node, nb->bytes);
        }
        return r < 0 ? r : sd_bus_message_close_container(reply);
})

static const sd_bus_vtable process_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Pid", "u", proc_pid, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Comm", "s", proc_comm, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("StartTime", "t", proc_start, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CPUUsage", "d", proc_cpu, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MemoryBytes", "t", proc_mem, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("MemoryPerNode", "a(ut)", proc_per_node, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Locality", "d", proc_locality, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("TargetNodes", "au", proc_target, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("State", "s", proc_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("LastPlacedTimestamp", "t", proc_placed, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Cgroup", "s", proc_cgroup, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("Unit", "s", proc_unit, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
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
        NpManager *m = userdata;
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

/* ---- registration and change signals ------------------------------------ */

int np_bus_register(NpManager *m) {
        int r = sd_bus_add_object_vtable(m->bus, NULL, NP_BUS_PATH, NP_BUS_MANAGER_IFACE, manager_vtable, m);
        if (r >= 0)
                r = sd_bus_add_fallback_vtable(m->bus, NULL, NP_BUS_NODE_PREFIX, NP_BUS_NODE_IFACE, node_vtable,
                                               node_find, m);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(m->bus, NULL, NP_BUS_NODE_PREFIX, node_enumerate, m);
        if (r >= 0)
                r = sd_bus_add_fallback_vtable(m->bus, NULL, NP_BUS_PROCESS_PREFIX, NP_BUS_PROCESS_IFACE,
                                               process_vtable, process_find, m);
        if (r >= 0)
                r = sd_bus_add_node_enumerator(m->bus, NULL, NP_BUS_PROCESS_PREFIX, process_enumerate, m);
        if (r >= 0)
                r = sd_bus_add_object_manager(m->bus, NULL, NP_BUS_PATH);
        if (r < 0)
                log_error("Cannot register D-Bus objects: %s", strerror(-r));
        return r;
}

void np_bus_manager_changed(NpManager *m, ...) {
        if (!m->bus)
                return;
        va_list ap;
        va_start(ap, m);
        const char *names[16];
        size_t n = 0;
        const char *s;
        while ((s = va_arg(ap, const char *)) && n < G_N_ELEMENTS(names) - 1)
                names[n++] = s;
        va_end(ap);
        names[n] = NULL;
        if (n)
                sd_bus_emit_properties_changed_strv(m->bus, NP_BUS_PATH, NP_BUS_MANAGER_IFACE, (char **) names);
}

void np_bus_scan_done(NpManager *m, GPtrArray *added, GPtrArray *removed) {
        if (!m->bus) {
                /* not on a bus (--once): just keep the bookkeeping straight */
                GHashTableIter it;
                gpointer v;
                g_hash_table_iter_init(&it, m->processes);
                while (g_hash_table_iter_next(&it, NULL, &v))
                        ((NpProcess *) v)->published = ((NpProcess *) v)->significant;
                return;
        }
        char path[96];
        for (guint i = 0; i < removed->len; i++) {
                NpProcess *p = removed->pdata[i];
                if (!p->published)
                        continue;
                g_snprintf(path, sizeof path, NP_BUS_PROCESS_PREFIX "/%d", p->pid);
                sd_bus_emit_interfaces_removed(m->bus, path, NP_BUS_PROCESS_IFACE, NULL);
        }
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                g_snprintf(path, sizeof path, NP_BUS_PROCESS_PREFIX "/%d", p->pid);
                if (p->significant && !p->published) {
                        sd_bus_emit_interfaces_added(m->bus, path, NP_BUS_PROCESS_IFACE, NULL);
                        p->published = true;
                } else if (!p->significant && p->published) {
                        sd_bus_emit_interfaces_removed(m->bus, path, NP_BUS_PROCESS_IFACE, NULL);
                        p->published = false;
                } else if (p->significant) {
                        sd_bus_emit_properties_changed(m->bus, path, NP_BUS_PROCESS_IFACE, "Comm", "CPUUsage",
                                                       "MemoryBytes", "MemoryPerNode", "Locality", "State",
                                                       "TargetNodes", "LastPlacedTimestamp", "Cgroup", "Unit", NULL);
                }
        }
        NP_MASK_FOREACH(id, m->topology->online) {
                g_snprintf(path, sizeof path, NP_BUS_NODE_PREFIX "/%d", id);
                sd_bus_emit_properties_changed(m->bus, path, NP_BUS_NODE_IFACE, "MemoryFreeBytes", "CPUBusy",
                                               "ManagedProcesses", NULL);
        }
        np_bus_manager_changed(m, "Scans", "LastScanTimestamp", "LastScanDurationUSec", "DaemonCPUUSec",
                               "ManagedProcesses", "KernelNumaBalancing", NULL);
}

void np_bus_nodes_changed(NpManager *m, const NpMask *before, const NpMask *after) {
        if (!m->bus)
                return;
        char path[96];
        NP_MASK_FOREACH(id, before)
                if (!np_mask_test(after, (unsigned) id)) {
                        g_snprintf(path, sizeof path, NP_BUS_NODE_PREFIX "/%d", id);
                        sd_bus_emit_interfaces_removed(m->bus, path, NP_BUS_NODE_IFACE, NULL);
                }
        NP_MASK_FOREACH(id, after)
                if (!np_mask_test(before, (unsigned) id)) {
                        g_snprintf(path, sizeof path, NP_BUS_NODE_PREFIX "/%d", id);
                        sd_bus_emit_interfaces_added(m->bus, path, NP_BUS_NODE_IFACE, NULL);
                }
        np_bus_manager_changed(m, "NodeIds", NULL);
}

void np_bus_emit_placed(NpManager *m, const NpProcess *p, const NpMask *from, const NpMask *to, uint64_t moved_bytes,
                        uint64_t usec) {
        if (!m->bus)
                return;
        sd_bus_message *sig = NULL;
        int r = sd_bus_message_new_signal(m->bus, &sig, NP_BUS_PATH, NP_BUS_MANAGER_IFACE, "ProcessPlaced");
        if (r >= 0)
                r = sd_bus_message_append(sig, "us", (uint32_t) p->pid,
                                          g_utf8_validate(p->comm, -1, NULL) ? p->comm : "?");
        if (r >= 0)
                r = append_mask(sig, from);
        if (r >= 0)
                r = append_mask(sig, to);
        if (r >= 0)
                r = sd_bus_message_append(sig, "tt", moved_bytes, usec);
        if (r >= 0)
                r = sd_bus_send(m->bus, sig, NULL);
        if (r < 0)
                log_warning("Cannot emit ProcessPlaced: %s", strerror(-r));
        sd_bus_message_unref(sig);
}
