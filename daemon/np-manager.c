/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The manager: state, its lifetime, change records, reload and pause. See np-manager.h. */
#include "np-manager.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "np-build-config.h"
#include "np-classify.h"
#include "np-log.h"

uint64_t np_now_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * G_USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

const char *np_place_reason_to_string(NpPlaceReason r) {
        switch (r) {
        case NP_PLACE_MANUAL:
                return "manual";
        case NP_PLACE_POLICY:
                return "policy";
        case NP_PLACE_REBALANCE:
                return "rebalance";
        case _NP_PLACE_REASON_MAX:
                break;
        }
        return "unknown";
}

void np_placed_event_free(NpPlacedEvent *e) {
        if (!e)
                return;
        np_mask_free(e->from);
        np_mask_free(e->to);
        g_free(e);
}

static const char *runtime_dir_default(void) {
        const char *e = getenv("RUNTIME_DIRECTORY");
        if (e && *e) {
                /* systemd may pass several, colon-separated: take the first */
                static char first[4096];
                g_strlcpy(first, e, sizeof first);
                char *c = strchr(first, ':');
                if (c)
                        *c = '\0';
                return first;
        }
        return NP_RUNTIME_DIR;
}

/* A record that goes (exited, a reused pid, the manager freed) changes the
 * set of published processes. */
static void process_drop(NpProcess *p) {
        if (p->owner_changed)
                *p->owner_changed = true;
        np_process_free(p);
}

NpManager *np_manager_new(const char *config_file, NpConfig *config, GError **error) {
        g_autoptr(NpManager) m = g_new0(NpManager, 1);
        m->config_file = g_strdup(config_file);
        m->config = config;
        m->config_error = g_strdup("");
        m->runtime_dir = g_strdup(runtime_dir_default());
        m->self_pid = (int) getpid();
        m->node_samples = g_array_new(FALSE, TRUE, sizeof(NpNodeSample));
        m->cpu_ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        m->peek_ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        m->processes = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) process_drop);
        m->included = g_hash_table_new(g_direct_hash, g_direct_equal);
        m->excluded = g_hash_table_new(g_direct_hash, g_direct_equal);
        m->numa_stat_failed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        uint64_t nofile = 0;
        unsigned kept_fds = np_proc_fd_budget(&nofile);
        m->proc_table = np_proc_table_new(kept_fds);
        log_debug("RLIMIT_NOFILE %" PRIu64 ": keeping up to %u /proc descriptors open", nofile, kept_fds);
        m->scan_interval_usec = config->scan_interval_usec;
        m->backend_name = g_strdup("none");
        m->changes.nodes = g_hash_table_new(g_direct_hash, g_direct_equal);
        g_queue_init(&m->changes.placed);
        m->cpus_changed = np_mask_new();
        m->reservations = np_reservations_new();
        np_reservations_record_changes(m->reservations, &m->changes.manager, NP_MANAGER_RESERVATIONS);
        m->groups = np_group_table_new();

        if (np_topology_load(&m->topology, error) < 0)
                return NULL;
        return g_steal_pointer(&m);
}

void np_manager_free(NpManager *m) {
        if (!m)
                return;
        np_mover_free(m->mover);
        np_backend_free(m->backend);
        sd_event_source_disable_unref(m->reservation_timer);
        np_reservations_free(m->reservations);
        np_group_table_free(m->groups);
        g_hash_table_destroy(m->processes);
        np_proc_table_free(m->proc_table);
        g_hash_table_destroy(m->included);
        g_hash_table_destroy(m->excluded);
        g_hash_table_destroy(m->numa_stat_failed);
        g_array_free(m->node_samples, TRUE);
        g_array_free(m->cpu_ticks, TRUE);
        g_array_free(m->peek_ticks, TRUE);
        np_topology_free(m->topology);
        np_mask_free(m->cpus_changed);
        np_config_free(m->config);
        g_hash_table_destroy(m->changes.nodes);
        g_queue_clear_full(&m->changes.placed, (GDestroyNotify) np_placed_event_free);
        g_free(m->config_file);
        g_free(m->config_error);
        g_free(m->runtime_dir);
        g_free(m->self_unit);
        g_free(m->backend_name);
        g_free(m);
}

void np_manager_setup_backend(NpManager *m) {
        g_autoptr(GError) e = NULL;
        if (g_mkdir_with_parents(m->runtime_dir, 0755) < 0)
                log_warning("Cannot create runtime directory %s: %s", m->runtime_dir, g_strerror(errno));
        m->backend = np_backend_new(m->config->backend, m->runtime_dir, &e);
        g_free(m->backend_name);
        if (!m->backend) {
                log_warning("No placement backend: %s. Running without one; Place() will fail.",
                            e ? e->message : "unknown error");
                m->backend_name = g_strdup("none");
                return;
        }
        m->backend_name = g_strdup(np_backend_name(m->backend));
        log_info("Placement backend: %s (state file %s)", m->backend_name, np_backend_state_file(m->backend));
}

/* ---- lookups ------------------------------------------------------------ */

NpProcess *np_manager_process(NpManager *m, int pid) {
        return g_hash_table_lookup(m->processes, GINT_TO_POINTER(pid));
}

const NpNodeSample *np_manager_node_sample(NpManager *m, unsigned node) {
        for (guint i = 0; i < m->node_samples->len; i++) {
                const NpNodeSample *s = &g_array_index(m->node_samples, NpNodeSample, i);
                if (s->id == node)
                        return s;
        }
        return NULL;
}

static gint cmp_u32(gconstpointer a, gconstpointer b) {
        guint32 x = *(const guint32 *) a, y = *(const guint32 *) b;
        return (x > y) - (x < y);
}

GArray *np_manager_managed_pids_on(NpManager *m, unsigned node) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(guint32));
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                if (p->state != NP_PROC_PINNED && p->state != NP_PROC_PLACED)
                        continue;
                if (node != UINT32_MAX && !np_mask_test(p->target, node))
                        continue;
                guint32 pid = (guint32) p->pid;
                g_array_append_val(a, pid);
        }
        g_array_sort(a, cmp_u32);
        return a;
}

GArray *np_manager_managed_pids(NpManager *m) {
        return np_manager_managed_pids_on(m, UINT32_MAX);
}

void np_manager_count(const NpManager *m, unsigned *significant, unsigned *held) {
        unsigned sig = 0, h = 0;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const NpProcess *p = v;
                sig += p->significant;
                h += p->state == NP_PROC_PINNED || p->state == NP_PROC_PLACED;
        }
        *significant = sig;
        *held = h;
}

/* ---- change records ----------------------------------------------------- */

void np_manager_changed(NpManager *m, uint32_t props) {
        m->changes.manager |= props;
}

void np_manager_node_changed(NpManager *m, unsigned node, uint32_t props) {
        gpointer key = GUINT_TO_POINTER(node);
        uint32_t old = GPOINTER_TO_UINT(g_hash_table_lookup(m->changes.nodes, key));
        g_hash_table_insert(m->changes.nodes, key, GUINT_TO_POINTER(old | props));
}

NpProcess *np_manager_add_process(NpManager *m, int pid, uint64_t starttime) {
        NpProcess *p = np_process_new(pid, starttime);
        p->owner_changed = &m->changes.processes;
        g_hash_table_insert(m->processes, GINT_TO_POINTER(pid), p);
        return p;
}

void np_manager_set_state(NpManager *m, NpProcess *p, NpProcState state, const NpMask *target,
                          uint64_t last_placed_usec) {
        /* ManagedProcesses lists the held processes (placed, pinned), of
         * the Manager and of each node of their targets */
        bool was_held = np_process_held(p);
        g_autoptr(NpMask) old = was_held && p->target ? np_mask_copy(p->target) : np_mask_new();
        np_process_set_state(p, state, target, last_placed_usec);
        bool held = np_process_held(p);
        g_autoptr(NpMask) now = held && p->target ? np_mask_copy(p->target) : np_mask_new();
        if (was_held != held)
                np_manager_changed(m, NP_MANAGER_MANAGED);
        NP_MASK_FOREACH (n, old)
                if (!np_mask_test(now, (unsigned) n))
                        np_manager_node_changed(m, (unsigned) n, NP_NODE_MANAGED);
        NP_MASK_FOREACH (n, now)
                if (!np_mask_test(old, (unsigned) n))
                        np_manager_node_changed(m, (unsigned) n, NP_NODE_MANAGED);
}

void np_manager_set_scan_interval(NpManager *m, uint64_t usec) {
        if (m->scan_interval_usec != usec)
                np_manager_changed(m, NP_MANAGER_SCAN_INTERVAL);
        m->scan_interval_usec = usec;
}

void np_manager_add_migration(NpManager *m, uint64_t bytes, uint64_t calls, uint64_t failed_pages) {
        m->migrated_bytes += bytes;
        m->migration_calls += calls;
        m->migration_failed_pages += failed_pages;
        np_manager_changed(m, NP_MANAGER_MIGRATION);
}

/* ---- configuration ------------------------------------------------------ */

static void apply_config(NpManager *m, NpConfig *old) {
        np_log_set_level(m->config->log_level);
        np_manager_set_scan_interval(m, m->config->scan_interval_usec);
        if (old && old->backend != m->config->backend)
                log_notice("Backend= changed from %s to %s: this takes effect at the next start",
                           np_backend_kind_to_string(old->backend), np_backend_kind_to_string(m->config->backend));
        if (old && old->mode != m->config->mode)
                np_manager_changed(m, NP_MANAGER_MODE);
        np_manager_changed(m, NP_MANAGER_CONFIG);
        /* Include=/Exclude= may have changed: re-evaluate every process. */
        bool cgroup_rules = np_config_has_cgroup_entries(m->config);
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                p->may_group = -1; /* Groups= may have changed */
                if (cgroup_rules && !p->significant)
                        np_process_read_cgroup(p, m->proc_table);
                np_classify_exclusion(m, p);
        }
}

int np_manager_reload(NpManager *m, GError **error) {
        g_autoptr(GError) e = NULL;
        NpConfig *c = NULL;
        sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading configuration",
                   np_now_usec(CLOCK_MONOTONIC));
        m->status_sent = true;
        int r = np_config_load(m->config_file, &c, &e);
        if (r < 0) {
                g_autofree char *f = g_strdup_printf("CONFIG_FILE=%s", m->config_file);
                const char *fields[] = { f, NULL };
                np_log_fields(LOG_ERR, NP_MESSAGE_CONFIG_REJECTED, fields,
                              "Configuration rejected, keeping the previous one: %s", e->message);
                g_free(m->config_error);
                m->config_error = g_strdup(e->message);
                m->config_errors++;
                np_manager_changed(m, NP_MANAGER_CONFIG_ERROR);
                sd_notify(false, "READY=1\nSTATUS=Configuration rejected, previous one in force");
                g_set_error(error, NP_ERROR, NP_ERROR_CONFIG_INVALID,
                            "Configuration rejected, the previous one stays in force: %s", e->message);
                return r;
        }
        g_autoptr(NpConfig) old = m->config;
        m->config = c;
        apply_config(m, old);
        if (*m->config_error)
                np_manager_changed(m, NP_MANAGER_CONFIG_ERROR);
        g_free(m->config_error);
        m->config_error = g_strdup("");
        log_info("Configuration reloaded from %s", m->config_file);
        sd_notify(false, "READY=1\nSTATUS=Configuration reloaded");
        return 0;
}

void np_manager_pause(NpManager *m, bool paused) {
        if (m->paused == paused)
                return;
        m->paused = paused;
        log_info("%s", paused ? "Paused: scans continue, no placement is made" : "Resumed");
        np_manager_changed(m, NP_MANAGER_PAUSED);
}
