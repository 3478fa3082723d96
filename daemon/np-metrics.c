/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "np-build-config.h"
#include "np-nodemask.h"
#include "np-thread.h"

NpMetrics *np_metrics_new(void) {
        NpMetrics *s = g_new0(NpMetrics, 1);
        s->nodes = g_array_new(FALSE, TRUE, sizeof(NpMetricsNode));
        s->processes = g_array_new(FALSE, TRUE, sizeof(NpMetricsProcess));
        s->groups = g_array_new(FALSE, TRUE, sizeof(NpMetricsGroup));
        s->version = NP_VERSION;
        s->backend = "none";
        s->mode = "enforce";
        return s;
}

void np_metrics_free(NpMetrics *s) {
        if (!s)
                return;
        for (guint i = 0; i < s->processes->len; i++) {
                NpMetricsProcess *p = &g_array_index(s->processes, NpMetricsProcess, i);
                g_free(p->comm);
                g_free(p->nodes);
                g_free(p->group);
        }
        g_array_unref(s->processes);
        for (guint i = 0; i < s->groups->len; i++) {
                NpMetricsGroup *g = &g_array_index(s->groups, NpMetricsGroup, i);
                g_free(g->name);
                g_free(g->nodes);
        }
        g_array_unref(s->groups);
        g_array_unref(s->nodes);
        g_free(s);
}

void np_metrics_add_process(NpMetrics *s, int pid, const char *comm, const char *nodes, const char *group,
                            uint64_t memory_bytes, double locality) {
        NpMetricsProcess p = {
                .pid = pid,
                .comm = g_strdup(comm ? comm : ""),
                .nodes = g_strdup(nodes ? nodes : ""),
                .group = g_strdup(group ? group : ""),
                .memory_bytes = memory_bytes,
                .locality = locality,
        };
        g_array_append_val(s->processes, p);
}

void np_metrics_add_group(NpMetrics *s, const char *name, const char *kind, const char *nodes, unsigned members,
                          uint64_t memory_bytes, double locality) {
        NpMetricsGroup g = {
                .name = g_strdup(name ? name : ""),
                .kind = kind ? kind : "",
                .nodes = g_strdup(nodes ? nodes : ""),
                .members = members,
                .memory_bytes = memory_bytes,
                .locality = locality,
        };
        g_array_append_val(s->groups, g);
}

/* ---- collecting (the manager's state now) ------------------------------- */

static gint by_memory_desc(gconstpointer a, gconstpointer b) {
        const NpProcess *x = *(NpProcess *const *) a, *y = *(NpProcess *const *) b;
        uint64_t mx = np_process_scan_memory(x), my = np_process_scan_memory(y);
        if (mx != my)
                return mx > my ? -1 : 1;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static gint by_pid(gconstpointer a, gconstpointer b) {
        const NpMetricsProcess *x = a, *y = b;
        return x->pid < y->pid ? -1 : x->pid > y->pid;
}

NpMetrics *np_metrics_collect(NpManager *m, unsigned max_processes) {
        NpMetrics *s = np_metrics_new();

        s->backend = m->backend_name ? m->backend_name : "none";
        s->mode = np_mode_to_string(m->config->mode);
        s->scans = m->scans;
        s->last_scan_duration_seconds = (double) m->last_scan_duration_usec / 1e6;
        s->last_scan_timestamp_seconds = (double) m->last_scan_usec / 1e6;
        s->cpu_seconds = (double) np_cpu_usec(RUSAGE_SELF) / 1e6;
        for (guint i = 0; m->node_samples && i < m->node_samples->len; i++) {
                const NpNodeSample *n = &g_array_index(m->node_samples, NpNodeSample, i);
                NpMetricsNode mn = {
                        .id = n->id,
                        .cpu_busy = n->cpu_busy,
                        .cpu_capacity = n->cpu_capacity,
                        .mem_total_bytes = n->mem_total_bytes,
                        .mem_free_bytes = n->mem_free_bytes,
                };
                g_array_append_val(s->nodes, mn);
        }

        g_autoptr(GPtrArray) shown = g_ptr_array_new();
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                if (!p->significant && !np_process_held(p))
                        continue;
                if ((unsigned) p->state < NP_METRICS_STATES)
                        s->processes_by_state[p->state]++;
                g_ptr_array_add(shown, p);
        }
        g_ptr_array_sort(shown, by_memory_desc);
        for (guint i = 0; i < shown->len; i++) {
                const NpProcess *p = g_ptr_array_index(shown, i);
                if (i >= max_processes) {
                        s->processes_left_out++;
                        continue;
                }
                g_autofree char *nodes = p->target ? np_mask_format(p->target) : g_strdup("");
                np_metrics_add_process(s, p->pid, p->comm, nodes, p->group, np_process_scan_memory(p), p->locality);
        }
        g_array_sort(s->processes, by_pid);

        /* the groups of more than a process alone (those are the
         * per-process series), in id order: a group's series stays put */
        g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint32));
        np_group_table_ids(m->groups, ids);
        for (guint i = 0; i < ids->len && s->groups->len < max_processes; i++) {
                const NpGroupView *g = np_group_table_get(m->groups, g_array_index(ids, guint32, i));
                if (g->kind == NP_GROUP_PROCESS)
                        continue;
                g_autofree char *nodes = np_mask_format(g->target);
                np_metrics_add_group(s, g->name, np_group_kind_to_string(g->kind), nodes, g->members->len, g->mem,
                                     g->locality);
        }

        s->migrated_bytes = m->migrated_bytes;
        s->migration_calls = m->migration_calls;
        s->migration_failed_pages = m->migration_failed_pages;
        s->numa_stat_reads = m->numa_stat_reads;
        for (int r = 0; r < _NP_PLACE_REASON_MAX; r++)
                s->placements[r] = m->placements[r];
        s->config_reload_errors = m->config_errors;
        s->reservations = np_reservations_count(m->reservations);
        s->reserved_bytes = np_reservations_bytes(m->reservations);
        return s;
}

/* ---- the text format ---------------------------------------------------- */

char *np_metrics_escape_label(const char *value) {
        g_autofree char *valid = g_utf8_make_valid(value, -1);
        GString *out = g_string_new(NULL);
        for (const char *c = valid; *c; c++) {
                if (*c == '\\')
                        g_string_append(out, "\\\\");
                else if (*c == '"')
                        g_string_append(out, "\\\"");
                else if (*c == '\n')
                        g_string_append(out, "\\n");
                else
                        g_string_append_c(out, *c);
        }
        return g_string_free(out, FALSE);
}

static void family(GString *o, const char *name, const char *type, const char *help) {
        g_string_append_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void value_double(GString *o, double v) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        g_string_append(o, g_ascii_formatd(buf, sizeof buf, "%.9g", v));
        g_string_append_c(o, '\n');
}

static void sample_u64(GString *o, const char *name, const char *labels, uint64_t v) {
        g_string_append_printf(o, "%s%s %" PRIu64 "\n", name, labels ? labels : "", v);
}

static void sample_double(GString *o, const char *name, const char *labels, double v) {
        g_string_append_printf(o, "%s%s ", name, labels ? labels : "");
        value_double(o, v);
}

char *np_metrics_format(const NpMetrics *s) {
        GString *o = g_string_new(NULL);
        g_autofree char *version = np_metrics_escape_label(s->version ? s->version : "");
        g_autofree char *backend = np_metrics_escape_label(s->backend ? s->backend : "");
        g_autofree char *mode = np_metrics_escape_label(s->mode ? s->mode : "");

        family(o, "numaplaced_info", "gauge", "The running numaplaced: version, backend and mode (always 1).");
        g_string_append_printf(o, "numaplaced_info{version=\"%s\",backend=\"%s\",mode=\"%s\"} 1\n", version, backend,
                               mode);
        family(o, "numaplaced_scans_total", "counter", "Scans of the machine since the daemon started.");
        sample_u64(o, "numaplaced_scans_total", NULL, s->scans);
        family(o, "numaplaced_last_scan_duration_seconds", "gauge", "How long the last scan took.");
        sample_double(o, "numaplaced_last_scan_duration_seconds", NULL, s->last_scan_duration_seconds);
        family(o, "numaplaced_last_scan_timestamp_seconds", "gauge",
               "When the last scan ended, in seconds since the epoch.");
        {
                /* %.9g would round a time of day to tens of seconds */
                char buf[G_ASCII_DTOSTR_BUF_SIZE];
                g_string_append_printf(o, "numaplaced_last_scan_timestamp_seconds %s\n",
                                       g_ascii_formatd(buf, sizeof buf, "%.3f", s->last_scan_timestamp_seconds));
        }
        family(o, "numaplaced_cpu_seconds_total", "counter", "CPU time the daemon used (user and system).");
        sample_double(o, "numaplaced_cpu_seconds_total", NULL, s->cpu_seconds);

        static const struct {
                const char *name, *type, *help;
        } node_families[] = {
                { "numaplaced_node_cpus_busy", "gauge", "CPUs of the node busy over the last scan interval." },
                { "numaplaced_node_cpus", "gauge", "CPUs of the node (its capacity)." },
                { "numaplaced_node_memory_total_bytes", "gauge", "Memory of the node." },
                { "numaplaced_node_memory_free_bytes", "gauge",
                  "Free memory of the node, as the placement policy counts it." },
        };
        for (unsigned f = 0; f < G_N_ELEMENTS(node_families); f++) {
                family(o, node_families[f].name, node_families[f].type, node_families[f].help);
                for (guint i = 0; i < s->nodes->len; i++) {
                        const NpMetricsNode *n = &g_array_index(s->nodes, NpMetricsNode, i);
                        g_autofree char *l = g_strdup_printf("{node=\"%u\"}", n->id);
                        switch (f) {
                        case 0:
                                sample_double(o, node_families[f].name, l, n->cpu_busy);
                                break;
                        case 1:
                                sample_double(o, node_families[f].name, l, n->cpu_capacity);
                                break;
                        case 2:
                                sample_u64(o, node_families[f].name, l, n->mem_total_bytes);
                                break;
                        default:
                                sample_u64(o, node_families[f].name, l, n->mem_free_bytes);
                                break;
                        }
                }
        }

        family(o, "numaplaced_migrated_bytes_total", "counter", "Bytes of memory moved by migrate_pages(2).");
        sample_u64(o, "numaplaced_migrated_bytes_total", NULL, s->migrated_bytes);
        family(o, "numaplaced_migration_calls_total", "counter", "migrate_pages(2) calls made.");
        sample_u64(o, "numaplaced_migration_calls_total", NULL, s->migration_calls);
        family(o, "numaplaced_migration_failed_pages_total", "counter", "Pages that migrate_pages(2) could not move.");
        sample_u64(o, "numaplaced_migration_failed_pages_total", NULL, s->migration_failed_pages);
        family(o, "numaplaced_numa_stat_reads_total", "counter",
               "memory.numa_stat files of cgroup groups read for the policy instead of their processes' numa_maps.");
        sample_u64(o, "numaplaced_numa_stat_reads_total", NULL, s->numa_stat_reads);

        family(o, "numaplaced_placements_total", "counter", "Placements carried out, by reason.");
        for (int r = 0; r < _NP_PLACE_REASON_MAX; r++) {
                g_autofree char *l = g_strdup_printf("{reason=\"%s\"}", np_place_reason_to_string((NpPlaceReason) r));
                sample_u64(o, "numaplaced_placements_total", l, s->placements[r]);
        }

        family(o, "numaplaced_processes", "gauge", "Significant or managed processes, by state.");
        for (int st = 0; st < NP_METRICS_STATES; st++) {
                g_autofree char *l = g_strdup_printf("{state=\"%s\"}", np_proc_state_to_string((NpProcState) st));
                sample_u64(o, "numaplaced_processes", l, s->processes_by_state[st]);
        }
        family(o, "numaplaced_process_series_left_out", "gauge",
               "Significant or managed processes without per-process series (MetricsMaxProcesses=).");
        sample_u64(o, "numaplaced_process_series_left_out", NULL, s->processes_left_out);

        /* labels of each process, once for both families */
        g_autoptr(GPtrArray) labels = g_ptr_array_new_with_free_func(g_free);
        for (guint i = 0; i < s->processes->len; i++) {
                const NpMetricsProcess *p = &g_array_index(s->processes, NpMetricsProcess, i);
                g_autofree char *comm = np_metrics_escape_label(p->comm);
                g_autofree char *nodes = np_metrics_escape_label(p->nodes);
                g_autofree char *group = np_metrics_escape_label(p->group);
                g_ptr_array_add(labels,
                                g_strdup_printf("{pid=\"%d\",comm=\"%s\",nodes=\"%s\",group=\"%s\"}", p->pid, comm,
                                                nodes, group));
        }
        family(o, "numaplaced_process_memory_bytes", "gauge",
               "Resident memory plus hugetlb pages of a significant or managed process (nodes: where it is "
               "placed; group: its placement group).");
        for (guint i = 0; i < s->processes->len; i++)
                sample_u64(o, "numaplaced_process_memory_bytes", labels->pdata[i],
                           g_array_index(s->processes, NpMetricsProcess, i).memory_bytes);
        family(o, "numaplaced_process_locality_ratio", "gauge",
               "Share of a process's memory on the nodes its threads run on (0 to 1).");
        for (guint i = 0; i < s->processes->len; i++)
                sample_double(o, "numaplaced_process_locality_ratio", labels->pdata[i],
                              g_array_index(s->processes, NpMetricsProcess, i).locality);

        g_autoptr(GPtrArray) glabels = g_ptr_array_new_with_free_func(g_free);
        for (guint i = 0; i < s->groups->len; i++) {
                const NpMetricsGroup *g = &g_array_index(s->groups, NpMetricsGroup, i);
                g_autofree char *name = np_metrics_escape_label(g->name);
                g_autofree char *nodes = np_metrics_escape_label(g->nodes);
                g_ptr_array_add(glabels,
                                g_strdup_printf("{group=\"%s\",kind=\"%s\",nodes=\"%s\"}", name, g->kind, nodes));
        }
        family(o, "numaplaced_group_members", "gauge",
               "Significant processes of a placement group of more than one process (group: its name; kind: "
               "cgroup, unit or shared; nodes: where it is placed).");
        for (guint i = 0; i < s->groups->len; i++)
                sample_u64(o, "numaplaced_group_members", glabels->pdata[i],
                           g_array_index(s->groups, NpMetricsGroup, i).members);
        family(o, "numaplaced_group_memory_bytes", "gauge",
               "Memory of a placement group as the policy counts it (its shared objects once).");
        for (guint i = 0; i < s->groups->len; i++)
                sample_u64(o, "numaplaced_group_memory_bytes", glabels->pdata[i],
                           g_array_index(s->groups, NpMetricsGroup, i).memory_bytes);
        family(o, "numaplaced_group_locality_ratio", "gauge",
               "Share of a placement group's memory on the nodes its processes run on (0 to 1).");
        for (guint i = 0; i < s->groups->len; i++)
                sample_double(o, "numaplaced_group_locality_ratio", glabels->pdata[i],
                              g_array_index(s->groups, NpMetricsGroup, i).locality);

        family(o, "numaplaced_reservations", "gauge",
               "Reservations the answers of Advise() (numad -w) hold now (AdviceHoldSec=).");
        sample_u64(o, "numaplaced_reservations", NULL, s->reservations);
        family(o, "numaplaced_reserved_bytes", "gauge", "Memory the reservations hold now.");
        sample_u64(o, "numaplaced_reserved_bytes", NULL, s->reserved_bytes);

        family(o, "numaplaced_config_reload_errors_total", "counter",
               "Configuration reloads rejected (the previous configuration stayed).");
        sample_u64(o, "numaplaced_config_reload_errors_total", NULL, s->config_reload_errors);
        return g_string_free(o, FALSE);
}

/* ---- writing ------------------------------------------------------------ */

int np_metrics_write(const char *path, const char *text, GError **error) {
        g_autofree char *dir = g_path_get_dirname(path);
        g_autofree char *base = g_path_get_basename(path);
        g_autofree char *tmp = g_strdup_printf("%s/.%s.XXXXXX", dir, base);
        size_t len = strlen(text), done = 0;
        int r = 0;

        int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0) {
                r = -errno;
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "cannot write %s: cannot create a temporary file in %s: %s", path, dir, g_strerror(-r));
                return r;
        }
        /* mkstemp's mode is 0600 whatever is asked: node_exporter may run
         * as another user */
        if (fchmod(fd, 0644) < 0)
                r = -errno;
        while (r == 0 && done < len) {
                ssize_t n = write(fd, text + done, len - done);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        r = -errno;
                else
                        done += (size_t) n;
        }
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlink(tmp);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot write %s: %s", path,
                            g_strerror(-r));
        }
        return r;
}
