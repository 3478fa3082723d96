/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The human-readable state: Dump() on the bus and --once on the command line. */
#include <inttypes.h>
#include <sys/resource.h>
#include <time.h>

#include "np-build-config.h"
#include "np-manager.h"

static char *mib(uint64_t bytes) {
        return g_strdup_printf("%.1f", (double) bytes / (1024.0 * 1024.0));
}

static gint cmp_proc(gconstpointer a, gconstpointer b) {
        const NpProcess *x = *(NpProcess *const *) a, *y = *(NpProcess *const *) b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The nodes' hugetlb pools (free pages by page size), when the machine has
 * pages of some size. */
static void dump_pools(GString *s, NpManager *m) {
        const NpNodeSample *first =
                m->node_samples && m->node_samples->len ? &g_array_index(m->node_samples, NpNodeSample, 0) : NULL;
        if (!first || !first->n_huge)
                return;
        g_string_append(s, "\nHugetlb pools (free pages):\n  NODE");
        for (unsigned k = 0; k < first->n_huge; k++)
                g_string_append_printf(s, "  %8" PRIu64 "kB", first->huge[k].page_bytes / 1024);
        g_string_append_c(s, '\n');
        for (guint i = 0; i < m->node_samples->len; i++) {
                const NpNodeSample *ns = &g_array_index(m->node_samples, NpNodeSample, i);
                g_string_append_printf(s, "  %-4u", ns->id);
                for (unsigned k = 0; k < ns->n_huge; k++)
                        g_string_append_printf(s, "  %10" PRIu64, ns->huge[k].free_pages);
                g_string_append_c(s, '\n');
        }
}

char *np_manager_dump(NpManager *m) {
        GString *s = g_string_new(NULL);
        const NpConfig *c = m->config;

        g_string_append_printf(s, "numaplaced %s\n", NP_VERSION);
        g_string_append_printf(s, "Mode: %s  Backend: %s  Paused: %s\n", np_mode_to_string(c->mode), m->backend_name,
                               m->paused ? "yes" : "no");
        g_string_append_printf(s, "Scans: %" PRIu64 "  Interval: %.1f s  Last scan took: %" PRIu64 " us\n", m->scans,
                               (double) m->scan_interval_usec / 1e6, m->last_scan_duration_usec);
        g_string_append_printf(s, "Processes seen: %" PRIu64 " (by the scans since the start)\n", m->processes_seen);
        g_string_append_printf(s, "Kernel NUMA balancing: %u\n", m->kernel_numa_balancing);
        g_autofree char *files = c->files && c->files[0] ? g_strjoinv(", ", c->files) : g_strdup("(defaults)");
        g_string_append_printf(s, "Configuration: %s\n", files);
        if (m->config_error && *m->config_error)
                g_string_append_printf(s, "Configuration error (previous one in force): %s\n", m->config_error);
        g_string_append_printf(s, "Migrated: %" PRIu64 " bytes in %" PRIu64 " calls, %" PRIu64 " pages failed\n",
                               m->migrated_bytes, m->migration_calls, m->migration_failed_pages);
        g_string_append_printf(s, "Cgroup groups' memory.numa_stat read: %" PRIu64 " times\n", m->numa_stat_reads);

        g_string_append(s, "\nNodes:\n");
        g_string_append(s, "  NODE  CPUS            MEM_TOTAL_MIB  MEM_FREE_MIB  CPU_BUSY/CAPACITY  DISTANCES\n");
        for (guint i = 0; i < m->topology->nodes->len; i++) {
                NpNode *n = m->topology->nodes->pdata[i];
                const NpNodeSample *ns = np_manager_node_sample(m, n->id);
                g_autofree char *cpus = np_mask_format(n->cpus);
                g_autofree char *tot = mib(n->mem_total_bytes);
                g_autofree char *fr = mib(ns ? ns->mem_free_bytes : 0);
                GString *d = g_string_new(NULL);
                for (guint k = 0; k < n->distances->len; k++)
                        g_string_append_printf(d, "%s%u", k ? " " : "",
                                               g_array_index(n->distances, NpDistance, k).distance);
                g_autofree char *busy = g_strdup_printf("%.2f/%.0f", ns ? ns->cpu_busy : 0.0,
                                                        ns ? ns->cpu_capacity : (double) np_mask_weight(n->cpus));
                g_string_append_printf(s, "  %-4u  %-14s  %13s  %12s  %17s  %s\n", n->id, *cpus ? cpus : "-", tot, fr,
                                       busy, d->str);
                g_string_free(d, TRUE);
        }

        dump_pools(s, m);

        g_autoptr(GPtrArray) procs = g_ptr_array_new();
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (((NpProcess *) v)->significant)
                        g_ptr_array_add(procs, v);
        g_ptr_array_sort(procs, cmp_proc);

        g_string_append_printf(s, "\nSignificant processes: %u\n", procs->len);
        if (procs->len)
                g_string_append(s,
                                "  PID      COMM             CPU    MEM_MIB  LOCALITY  STATE     TARGET  MAPS_READS  "
                                "PAGES_FROM  "
                                "MIB_PER_NODE\n");
        for (guint i = 0; i < procs->len; i++) {
                NpProcess *p = procs->pdata[i];
                g_autofree char *rss = mib(np_process_scan_memory(p));
                g_autofree char *target = p->target ? np_mask_format(p->target) : g_strdup("-");
                GString *per = g_string_new(NULL);
                for (guint k = 0; p->maps.per_node && k < p->maps.per_node->len; k++) {
                        NpNodeBytes *nbp = &g_array_index(p->maps.per_node, NpNodeBytes, k);
                        g_autofree char *x = mib(nbp->bytes);
                        g_string_append_printf(per, "%sN%u=%s", k ? " " : "", nbp->node, x);
                }
                g_string_append_printf(s, "  %-7d  %-15s  %5.2f  %7s  %7.1f%%  %-8s  %-6s  %10" PRIu64 "  %-10s  %s\n",
                                       p->pid, p->comm, p->cpu_usage, rss, p->locality * 100.0,
                                       np_proc_state_to_string(p->state), target, p->maps_reads,
                                       p->pages_from_group ? "numa_stat" : "numa_maps", per->str);
                g_string_free(per, TRUE);
        }
        const NpReservations *rs = m->reservations;
        uint64_t now = np_now_usec(CLOCK_MONOTONIC);
        g_string_append_printf(s, "\nReservations: %u (AdviceHoldSec=%.0f)\n", np_reservations_count(rs),
                               (double) c->advice_hold_usec / 1e6);
        if (np_reservations_count(rs))
                g_string_append(s, "  ID    NODES      CPUS     MIB  EXPIRES_IN  UID         TAKEN_UP_BY\n");
        for (guint i = 0; i < np_reservations_count(rs); i++) {
                const NpReservation *res = np_reservations_get(rs, i);
                g_autofree char *nodes = np_mask_format(res->nodes);
                g_autofree char *mb = mib(res->bytes);
                g_autofree char *by = res->pid ? g_strdup_printf("%d", res->pid) : g_strdup("-");
                double left = res->expires_usec > now ? (double) (res->expires_usec - now) / 1e6 : 0.0;
                g_string_append_printf(s, "  %-4" PRIu64 "  %-9s  %5.2f  %6s  %8.1f s  %-10u  %s\n", res->id, nodes,
                                       res->cpus, mb, left, res->uid, by);
        }
        if (m->mover) {
                guint n = np_mover_running_count(m->mover);
                if (n == 0)
                        g_string_append(s, "\nMoves: none\n");
                else {
                        g_string_append(s, "\nMoves:");
                        for (guint i = 0; i < n; i++) {
                                const NpMove *mv = np_mover_running_nth(m->mover, i);
                                g_string_append_printf(s, "%s pid %d moving for %.1f s", i ? "," : "", (int) mv->pid,
                                                       (double) (np_now_usec(CLOCK_MONOTONIC) - mv->started_usec) /
                                                               1e6);
                        }
                        g_string_append_printf(s, ", %u queued\n", np_mover_queued(m->mover));
                }
        }
        g_autofree char *conf = np_config_to_string(c);
        g_string_append_printf(s, "\nEffective configuration:\n%s", conf);
        return g_string_free(s, FALSE);
}
