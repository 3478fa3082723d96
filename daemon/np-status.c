/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-status.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "np-cleanup.h"
#include "np-nodemask.h"

#define BUS_NAME "org.numaplaced1"
#define BUS_PATH "/org/numaplaced1"
#define MIB (1024.0 * 1024.0)

typedef struct {
        guint32 id;
        GArray *cpus; /* guint32 */
        uint64_t mem_total, mem_free;
        double cpu_capacity, cpu_busy;
        GArray *managed; /* guint32 */
} Node;

typedef struct {
        guint32 pid;
        char *comm;
        double cpu_usage;
        uint64_t memory_bytes;
        GArray *per_node; /* PerNode */
        double locality;
        GArray *target; /* guint32 */
        char *state;
        char *group;
        char *decision;
} Proc;

typedef struct {
        guint32 node;
        uint64_t bytes;
} PerNode;

typedef struct {
        GArray *nodes; /* guint32 */
        uint64_t milli_cpus, bytes, expires_usec; /* expiry: CLOCK_MONOTONIC */
} Reservation;

typedef struct {
        char *version, *mode, *backend;
        uint64_t scans, migrated_bytes;
        bool paused;
        GArray *nodes; /* Node */
        GArray *procs; /* Proc */
        GArray *reservations; /* Reservation */
        GArray *groups; /* Grp: the groups of more than a process, by object path */
} Status;

typedef struct {
        char *path, *name, *kind, *state;
        GArray *members, *target; /* guint32 */
        uint64_t memory_bytes;
        double locality;
} Grp;

static void grp_clear(Grp *g) {
        g_free(g->path);
        g_free(g->name);
        g_free(g->kind);
        g_free(g->state);
        g_array_unref(g->members);
        g_array_unref(g->target);
}

static void status_clear(Status *s) {
        g_free(s->version);
        g_free(s->mode);
        g_free(s->backend);
        for (guint i = 0; s->nodes && i < s->nodes->len; i++) {
                Node *n = &g_array_index(s->nodes, Node, i);
                g_array_unref(n->cpus);
                g_array_unref(n->managed);
        }
        for (guint i = 0; s->procs && i < s->procs->len; i++) {
                Proc *p = &g_array_index(s->procs, Proc, i);
                g_free(p->comm);
                g_free(p->state);
                g_free(p->group);
                g_free(p->decision);
                g_array_unref(p->per_node);
                g_array_unref(p->target);
        }
        for (guint i = 0; s->reservations && i < s->reservations->len; i++)
                g_array_unref(g_array_index(s->reservations, Reservation, i).nodes);
        if (s->reservations)
                g_array_unref(s->reservations);
        for (guint i = 0; s->groups && i < s->groups->len; i++)
                grp_clear(&g_array_index(s->groups, Grp, i));
        if (s->groups)
                g_array_unref(s->groups);
        if (s->nodes)
                g_array_unref(s->nodes);
        if (s->procs)
                g_array_unref(s->procs);
}

static int read_u32_array(sd_bus_message *m, GArray *out) {
        const void *p;
        size_t size;
        int r = sd_bus_message_read_array(m, 'u', &p, &size);
        if (r < 0)
                return r;
        g_array_append_vals(out, p, (guint) (size / sizeof(guint32)));
        return 1;
}

static int read_string(sd_bus_message *m, char **out) {
        const char *s;
        int r = sd_bus_message_read_basic(m, 's', &s);
        if (r >= 0) {
                g_free(*out);
                *out = g_strdup(s);
        }
        return r;
}

/* Reservations a(auttt) into s->reservations. */
static int read_reservations(sd_bus_message *m, Status *s) {
        int r = sd_bus_message_enter_container(m, 'a', "(auttt)");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "auttt")) > 0) {
                Reservation res = { .nodes = g_array_new(FALSE, FALSE, sizeof(guint32)) };
                g_array_append_val(s->reservations, res);
                Reservation *x = &g_array_index(s->reservations, Reservation, s->reservations->len - 1);
                r = read_u32_array(m, x->nodes);
                if (r >= 0)
                        r = sd_bus_message_read(m, "ttt", &x->milli_cpus, &x->bytes, &x->expires_usec);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 1;
}

/* One property's variant, by name: 1 when read, 0 when this view does not
 * use it (the caller skips it), or a negative errno. */
static int read_manager_prop(sd_bus_message *m, const char *name, Status *s) {
        if (strcmp(name, "Version") == 0)
                return read_string(m, &s->version);
        if (strcmp(name, "Mode") == 0)
                return read_string(m, &s->mode);
        if (strcmp(name, "Backend") == 0)
                return read_string(m, &s->backend);
        if (strcmp(name, "Scans") == 0)
                return sd_bus_message_read_basic(m, 't', &s->scans);
        if (strcmp(name, "MigratedBytes") == 0)
                return sd_bus_message_read_basic(m, 't', &s->migrated_bytes);
        if (strcmp(name, "Reservations") == 0)
                return read_reservations(m, s);
        if (strcmp(name, "Paused") == 0) {
                int b = 0;
                int r = sd_bus_message_read_basic(m, 'b', &b);
                s->paused = b;
                return r < 0 ? r : 1;
        }
        return 0; /* not read: skipped by the caller */
}

static int read_node_prop(sd_bus_message *m, const char *name, Node *n) {
        if (strcmp(name, "Id") == 0)
                return sd_bus_message_read_basic(m, 'u', &n->id);
        if (strcmp(name, "CPUs") == 0)
                return read_u32_array(m, n->cpus);
        if (strcmp(name, "MemoryTotalBytes") == 0)
                return sd_bus_message_read_basic(m, 't', &n->mem_total);
        if (strcmp(name, "MemoryFreeBytes") == 0)
                return sd_bus_message_read_basic(m, 't', &n->mem_free);
        if (strcmp(name, "CPUCapacity") == 0)
                return sd_bus_message_read_basic(m, 'd', &n->cpu_capacity);
        if (strcmp(name, "CPUBusy") == 0)
                return sd_bus_message_read_basic(m, 'd', &n->cpu_busy);
        if (strcmp(name, "ManagedProcesses") == 0)
                return read_u32_array(m, n->managed);
        return 0;
}

static int read_proc_prop(sd_bus_message *m, const char *name, Proc *p) {
        if (strcmp(name, "Pid") == 0)
                return sd_bus_message_read_basic(m, 'u', &p->pid);
        if (strcmp(name, "Comm") == 0)
                return read_string(m, &p->comm);
        if (strcmp(name, "CPUUsage") == 0)
                return sd_bus_message_read_basic(m, 'd', &p->cpu_usage);
        if (strcmp(name, "MemoryBytes") == 0)
                return sd_bus_message_read_basic(m, 't', &p->memory_bytes);
        if (strcmp(name, "Locality") == 0)
                return sd_bus_message_read_basic(m, 'd', &p->locality);
        if (strcmp(name, "TargetNodes") == 0)
                return read_u32_array(m, p->target);
        if (strcmp(name, "State") == 0)
                return read_string(m, &p->state);
        if (strcmp(name, "Decision") == 0)
                return read_string(m, &p->decision);
        if (strcmp(name, "Group") == 0) { /* its object path; named after the read */
                const char *path;
                int r = sd_bus_message_read_basic(m, 'o', &path);
                if (r >= 0) {
                        g_free(p->group);
                        p->group = g_strdup(path);
                }
                return r;
        }
        if (strcmp(name, "MemoryPerNode") == 0) {
                int r = sd_bus_message_enter_container(m, 'a', "(ut)");
                if (r < 0)
                        return r;
                PerNode pn;
                while ((r = sd_bus_message_read(m, "(ut)", &pn.node, &pn.bytes)) > 0)
                        g_array_append_val(p->per_node, pn);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                return r < 0 ? r : 1;
        }
        return 0;
}

static int read_group_prop(sd_bus_message *m, const char *name, Grp *g) {
        if (strcmp(name, "Name") == 0)
                return read_string(m, &g->name);
        if (strcmp(name, "Kind") == 0)
                return read_string(m, &g->kind);
        if (strcmp(name, "State") == 0)
                return read_string(m, &g->state);
        if (strcmp(name, "Members") == 0)
                return read_u32_array(m, g->members);
        if (strcmp(name, "TargetNodes") == 0)
                return read_u32_array(m, g->target);
        if (strcmp(name, "MemoryBytes") == 0)
                return sd_bus_message_read_basic(m, 't', &g->memory_bytes);
        if (strcmp(name, "Locality") == 0)
                return sd_bus_message_read_basic(m, 'd', &g->locality);
        return 0;
}

typedef enum { OBJ_OTHER, OBJ_MANAGER, OBJ_NODE, OBJ_PROC, OBJ_GROUP } ObjKind;

/* a{sv} of one interface into the object it describes. */
static int read_props(sd_bus_message *m, ObjKind kind, Status *s, Node *n, Proc *p, Grp *g) {
        int r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name, *contents;
                r = sd_bus_message_read_basic(m, 's', &name);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(m, NULL, &contents);
                if (r < 0)
                        return r;
                r = sd_bus_message_enter_container(m, 'v', contents);
                if (r < 0)
                        return r;
                r = 0;
                if (kind == OBJ_MANAGER)
                        r = read_manager_prop(m, name, s);
                else if (kind == OBJ_NODE)
                        r = read_node_prop(m, name, n);
                else if (kind == OBJ_PROC)
                        r = read_proc_prop(m, name, p);
                else if (kind == OBJ_GROUP)
                        r = read_group_prop(m, name, g);
                if (r == 0) /* not used here */
                        r = sd_bus_message_skip(m, contents);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m); /* v */
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m); /* e */
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int read_objects(sd_bus_message *m, Status *s) {
        int r = sd_bus_message_enter_container(m, 'a', "{oa{sa{sv}}}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "oa{sa{sv}}")) > 0) {
                const char *path;
                r = sd_bus_message_read_basic(m, 'o', &path);
                if (r < 0)
                        return r;
                r = sd_bus_message_enter_container(m, 'a', "{sa{sv}}");
                if (r < 0)
                        return r;
                Node n = { .cpus = g_array_new(FALSE, FALSE, sizeof(guint32)),
                           .managed = g_array_new(FALSE, FALSE, sizeof(guint32)) };
                Proc p = { .per_node = g_array_new(FALSE, FALSE, sizeof(PerNode)),
                           .target = g_array_new(FALSE, FALSE, sizeof(guint32)) };
                Grp g = { .path = g_strdup(path),
                          .members = g_array_new(FALSE, FALSE, sizeof(guint32)),
                          .target = g_array_new(FALSE, FALSE, sizeof(guint32)) };
                bool is_node = false, is_proc = false;
                while ((r = sd_bus_message_enter_container(m, 'e', "sa{sv}")) > 0) {
                        const char *iface;
                        r = sd_bus_message_read_basic(m, 's', &iface);
                        if (r < 0)
                                break;
                        ObjKind kind = strcmp(iface, BUS_NAME ".Manager") == 0 ? OBJ_MANAGER
                                : strcmp(iface, BUS_NAME ".Node") == 0         ? OBJ_NODE
                                : strcmp(iface, BUS_NAME ".Process") == 0      ? OBJ_PROC
                                : strcmp(iface, BUS_NAME ".Group") == 0        ? OBJ_GROUP
                                                                               : OBJ_OTHER;
                        is_node |= kind == OBJ_NODE;
                        is_proc |= kind == OBJ_PROC;
                        r = read_props(m, kind, s, &n, &p, &g);
                        if (r < 0)
                                break;
                        r = sd_bus_message_exit_container(m);
                        if (r < 0)
                                break;
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(m); /* a{sa{sv}} */
                if (r >= 0)
                        r = sd_bus_message_exit_container(m); /* e */
                if (is_node && r >= 0)
                        g_array_append_val(s->nodes, n);
                else {
                        g_array_unref(n.cpus);
                        g_array_unref(n.managed);
                }
                if (r >= 0 && g.name && g.kind && strcmp(g.kind, "process") != 0)
                        g_array_append_val(s->groups, g);
                else
                        grp_clear(&g);
                if (is_proc && r >= 0)
                        g_array_append_val(s->procs, p);
                else {
                        g_free(p.comm);
                        g_free(p.state);
                        g_free(p.group);
                        g_free(p.decision);
                        g_array_unref(p.per_node);
                        g_array_unref(p.target);
                }
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static gint node_cmp(gconstpointer a, gconstpointer b) {
        const Node *x = a, *y = b;
        return x->id < y->id ? -1 : x->id > y->id;
}

static gint proc_cmp(gconstpointer a, gconstpointer b) {
        const Proc *x = a, *y = b;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Node or CPU ids as a list such as "0-2,5" (np_mask_format). */
static char *id_list(const GArray *ids) {
        g_autoptr(NpMask) m = np_mask_new();
        for (guint i = 0; i < ids->len; i++)
                if (g_array_index(ids, guint32, i) <= NP_MASK_MAX_ID)
                        np_mask_set(m, g_array_index(ids, guint32, i));
        return np_mask_format(m);
}

/* PIDs as they come ("12,345"): not a range list. */
static char *pid_list(const GArray *pids) {
        GString *o = g_string_new(NULL);
        for (guint i = 0; i < pids->len; i++)
                g_string_append_printf(o, "%s%u", i ? "," : "", g_array_index(pids, guint32, i));
        return g_string_free(o, FALSE);
}

static uint64_t bytes_on(const Proc *p, guint32 node) {
        for (guint i = 0; i < p->per_node->len; i++)
                if (g_array_index(p->per_node, PerNode, i).node == node)
                        return g_array_index(p->per_node, PerNode, i).bytes;
        return 0;
}

/* A comm as a table cell: printable, at most 16 columns. */
static char *cell(const char *comm) {
        g_autofree char *valid = g_utf8_make_valid(comm ? comm : "", -1);
        GString *o = g_string_new(NULL);
        for (const char *c = valid; *c; c++)
                g_string_append_c(o, (unsigned char) *c < 0x20 || *c == 0x7f ? '?' : *c);
        return g_string_free(o, FALSE);
}

static void print_table(const Status *s) {
        printf("numaplaced %s: mode %s%s, backend %s, %" PRIu64 " scans, %.1f MiB migrated\n\n",
               s->version ? s->version : "?", s->mode ? s->mode : "?", s->paused ? " (paused)" : "",
               s->backend ? s->backend : "?", s->scans, (double) s->migrated_bytes / MIB);

        printf("Per-process memory by node (MiB), significant and managed processes\n");
        printf("%-8s %-16s", "PID", "COMM");
        for (guint i = 0; i < s->nodes->len; i++) {
                g_autofree char *h = g_strdup_printf("Node %u", g_array_index(s->nodes, Node, i).id);
                printf(" %10s", h);
        }
        printf(" %10s %8s %-8s %-9s %s\n", "Total", "Local", "Target", "State", "Group");
        for (guint j = 0; j < s->procs->len; j++) {
                const Proc *p = &g_array_index(s->procs, Proc, j);
                g_autofree char *comm = cell(p->comm);
                g_autofree char *target = id_list(p->target);
                printf("%-8u %-16.16s", p->pid, comm);
                for (guint i = 0; i < s->nodes->len; i++)
                        printf(" %10.2f", (double) bytes_on(p, g_array_index(s->nodes, Node, i).id) / MIB);
                g_autofree char *group = cell(p->group && *p->group ? p->group : "-");
                printf(" %10.2f %7.0f%% %-8s %-9s %s\n", (double) p->memory_bytes / MIB, p->locality * 100.0,
                       *target ? target : "-", p->state ? p->state : "?", group);
        }
        if (s->procs->len == 0)
                printf("(none)\n");

        if (s->groups->len) {
                printf("\nPlacement groups of more than one process\n%-8s %-10s %10s %8s %-8s %-9s %s\n", "KIND",
                       "MEMBERS", "MEM(MiB)", "Local", "Target", "State", "Group");
                for (guint i = 0; i < s->groups->len; i++) {
                        const Grp *g = &g_array_index(s->groups, Grp, i);
                        g_autofree char *members = pid_list(g->members);
                        g_autofree char *target = id_list(g->target);
                        g_autofree char *name = cell(g->name);
                        printf("%-8s %-10s %10.2f %7.0f%% %-8s %-9s %s\n", g->kind, members,
                               (double) g->memory_bytes / MIB, g->locality * 100.0, *target ? target : "-",
                               g->state ? g->state : "?", name);
                }
        }

        if (s->reservations->len) {
                uint64_t now = (uint64_t) g_get_monotonic_time();
                printf("\nReservations held by answers of Advise() (AdviceHoldSec=)\n%-12s %8s %10s %10s\n", "NODES",
                       "CPUS", "MEM(MiB)", "EXPIRES_IN");
                for (guint i = 0; i < s->reservations->len; i++) {
                        const Reservation *x = &g_array_index(s->reservations, Reservation, i);
                        g_autofree char *nodes = id_list(x->nodes);
                        double left = x->expires_usec > now ? (double) (x->expires_usec - now) / 1e6 : 0.0;
                        printf("%-12s %8.2f %10.1f %8.1f s\n", nodes, (double) x->milli_cpus / 1000.0,
                               (double) x->bytes / MIB, left);
                }
        }

        printf("\nNodes\n%-6s %-12s %8s %8s %12s %12s %s\n", "NODE", "CPUS", "CAPACITY", "BUSY", "MEM(MiB)",
               "FREE(MiB)", "MANAGED");
        for (guint i = 0; i < s->nodes->len; i++) {
                const Node *n = &g_array_index(s->nodes, Node, i);
                g_autofree char *cpus = id_list(n->cpus);
                g_autofree char *managed = pid_list(n->managed);
                printf("%-6u %-12s %8.1f %8.2f %12.1f %12.1f %s\n", n->id, *cpus ? cpus : "-", n->cpu_capacity,
                       n->cpu_busy, (double) n->mem_total / MIB, (double) n->mem_free / MIB, *managed ? managed : "-");
        }
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_string(GString *o, const char *s) {
        g_autofree char *valid = g_utf8_make_valid(s ? s : "", -1);
        g_string_append_c(o, '"');
        for (const unsigned char *c = (const unsigned char *) valid; *c; c++) {
                if (*c == '"' || *c == '\\')
                        g_string_append_printf(o, "\\%c", *c);
                else if (*c < 0x20 || *c == 0x7f)
                        g_string_append_printf(o, "\\u%04x", *c);
                else
                        g_string_append_c(o, (char) *c);
        }
        g_string_append_c(o, '"');
}

static void json_double(GString *o, double v) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        g_string_append(o, g_ascii_formatd(buf, sizeof buf, "%.6g", v));
}

static void json_ids(GString *o, const GArray *ids) {
        g_string_append_c(o, '[');
        for (guint i = 0; i < ids->len; i++)
                g_string_append_printf(o, "%s%u", i ? "," : "", g_array_index(ids, guint32, i));
        g_string_append_c(o, ']');
}

static void print_json(const Status *s) {
        GString *o = g_string_new("{\"version\":");
        json_string(o, s->version);
        g_string_append(o, ",\"mode\":");
        json_string(o, s->mode);
        g_string_append(o, ",\"backend\":");
        json_string(o, s->backend);
        g_string_append_printf(o, ",\"paused\":%s,\"scans\":%" PRIu64 ",\"migrated_bytes\":%" PRIu64,
                               s->paused ? "true" : "false", s->scans, s->migrated_bytes);
        g_string_append(o, ",\"nodes\":[");
        for (guint i = 0; i < s->nodes->len; i++) {
                const Node *n = &g_array_index(s->nodes, Node, i);
                g_string_append_printf(o, "%s{\"id\":%u,\"cpus\":", i ? "," : "", n->id);
                json_ids(o, n->cpus);
                g_string_append(o, ",\"cpu_capacity\":");
                json_double(o, n->cpu_capacity);
                g_string_append(o, ",\"cpu_busy\":");
                json_double(o, n->cpu_busy);
                g_string_append_printf(o,
                                       ",\"memory_total_bytes\":%" PRIu64 ",\"memory_free_bytes\":%" PRIu64
                                       ",\"managed_processes\":",
                                       n->mem_total, n->mem_free);
                json_ids(o, n->managed);
                g_string_append_c(o, '}');
        }
        g_string_append(o, "],\"processes\":[");
        for (guint j = 0; j < s->procs->len; j++) {
                const Proc *p = &g_array_index(s->procs, Proc, j);
                g_string_append_printf(o, "%s{\"pid\":%u,\"comm\":", j ? "," : "", p->pid);
                json_string(o, p->comm);
                g_string_append(o, ",\"cpu_usage\":");
                json_double(o, p->cpu_usage);
                g_string_append_printf(o, ",\"memory_bytes\":%" PRIu64 ",\"memory_per_node\":{", p->memory_bytes);
                for (guint i = 0; i < p->per_node->len; i++) {
                        const PerNode *pn = &g_array_index(p->per_node, PerNode, i);
                        g_string_append_printf(o, "%s\"%u\":%" PRIu64, i ? "," : "", pn->node, pn->bytes);
                }
                g_string_append(o, "},\"locality\":");
                json_double(o, p->locality);
                g_string_append(o, ",\"target_nodes\":");
                json_ids(o, p->target);
                g_string_append(o, ",\"state\":");
                json_string(o, p->state);
                g_string_append(o, ",\"group\":");
                json_string(o, p->group ? p->group : "");
                g_string_append(o, ",\"decision\":");
                json_string(o, p->decision);
                g_string_append_c(o, '}');
        }
        g_string_append(o, "],\"groups\":[");
        for (guint i = 0; i < s->groups->len; i++) {
                const Grp *g = &g_array_index(s->groups, Grp, i);
                g_string_append(o, i ? ",{\"name\":" : "{\"name\":");
                json_string(o, g->name);
                g_string_append(o, ",\"kind\":");
                json_string(o, g->kind);
                g_string_append(o, ",\"members\":");
                json_ids(o, g->members);
                g_string_append_printf(o, ",\"memory_bytes\":%" PRIu64 ",\"locality\":", g->memory_bytes);
                json_double(o, g->locality);
                g_string_append(o, ",\"target_nodes\":");
                json_ids(o, g->target);
                g_string_append(o, ",\"state\":");
                json_string(o, g->state);
                g_string_append_c(o, '}');
        }
        g_string_append(o, "],\"reservations\":[");
        for (guint i = 0; i < s->reservations->len; i++) {
                const Reservation *x = &g_array_index(s->reservations, Reservation, i);
                g_string_append_printf(o, "%s{\"nodes\":", i ? "," : "");
                json_ids(o, x->nodes);
                g_string_append(o, ",\"cpus\":");
                json_double(o, (double) x->milli_cpus / 1000.0);
                g_string_append_printf(o, ",\"bytes\":%" PRIu64 ",\"expires_usec\":%" PRIu64 "}", x->bytes,
                                       x->expires_usec);
        }
        g_string_append(o, "]}\n");
        fputs(o->str, stdout);
        g_string_free(o, TRUE);
}

int np_status_main(bool json) {
        g_autoptr(sd_bus_message) reply = NULL;
        sd_bus_error err = SD_BUS_ERROR_NULL;
        sd_bus *bus = NULL;
        Status s = { 0 };
        int r;

        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "numaplaced: cannot connect to the system bus: %s (is numaplaced running?)\n",
                        strerror(-r));
                return 1;
        }
        r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", &err,
                               &reply, "");
        if (r < 0) {
                if (sd_bus_error_has_names(&err, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                        fprintf(stderr, "numaplaced: no daemon is running (%s is not on the system bus)\n", BUS_NAME);
                else
                        fprintf(stderr, "numaplaced: asking the daemon failed: %s\n",
                                err.message ? err.message : strerror(-r));
                sd_bus_error_free(&err);
                sd_bus_flush_close_unref(bus);
                return 1;
        }
        s.nodes = g_array_new(FALSE, TRUE, sizeof(Node));
        s.procs = g_array_new(FALSE, TRUE, sizeof(Proc));
        s.reservations = g_array_new(FALSE, TRUE, sizeof(Reservation));
        s.groups = g_array_new(FALSE, TRUE, sizeof(Grp));
        r = read_objects(reply, &s);
        /* each process's Group object path to that group's name (none for a
         * process of its own) */
        for (guint i = 0; r >= 0 && i < s.procs->len; i++) {
                Proc *p = &g_array_index(s.procs, Proc, i);
                const char *name = NULL;
                for (guint k = 0; p->group && !name && k < s.groups->len; k++)
                        if (strcmp(g_array_index(s.groups, Grp, k).path, p->group) == 0)
                                name = g_array_index(s.groups, Grp, k).name;
                g_free(p->group);
                p->group = g_strdup(name);
        }
        if (r >= 0) {
                /* the Manager is the object manager itself: not among the
                 * managed objects */
                g_autoptr(sd_bus_message) props = NULL;
                r = sd_bus_call_method(bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll", &err,
                                       &props, "s", BUS_NAME ".Manager");
                if (r < 0) {
                        fprintf(stderr, "numaplaced: asking the daemon failed: %s\n",
                                err.message ? err.message : strerror(-r));
                        sd_bus_error_free(&err);
                        sd_bus_flush_close_unref(bus);
                        status_clear(&s);
                        return 1;
                }
                r = read_props(props, OBJ_MANAGER, &s, NULL, NULL, NULL);
        }
        sd_bus_flush_close_unref(bus);
        if (r < 0) {
                fprintf(stderr, "numaplaced: unexpected reply from the daemon: %s\n", strerror(-r));
                status_clear(&s);
                return 1;
        }
        g_array_sort(s.nodes, node_cmp);
        g_array_sort(s.procs, proc_cmp);
        if (json)
                print_json(&s);
        else
                print_table(&s);
        status_clear(&s);
        return 0;
}
