#include "np-manager.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include "np-build-config.h"
#include "np-bus.h"
#include "np-log.h"
#include "np-sysroot.h"

G_DEFINE_QUARK(np-error-quark, np_error)

uint64_t np_now_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * G_USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

const char *np_proc_state_to_string(NpProcState s) {
        switch (s) {
        case NP_PROC_OBSERVED: return "observed";
        case NP_PROC_PINNED: return "pinned";
        case NP_PROC_PLACED: return "placed";
        case NP_PROC_EXCLUDED: return "excluded";
        }
        return "unknown";
}

static void process_free(NpProcess *p) {
        if (!p)
                return;
        np_mask_free(p->cpus_allowed);
        np_mask_free(p->mems_allowed);
        np_mask_free(p->running_nodes);
        np_mask_free(p->target);
        np_numa_maps_clear(&p->maps);
        g_free(p->cgroup);
        g_free(p->unit);
        g_free(p);
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

NpManager *np_manager_new(const char *config_file, NpConfig *config, GError **error) {
        g_autoptr(NpManager) m = g_new0(NpManager, 1);
        m->config_file = g_strdup(config_file);
        m->config = config;
        m->config_error = g_strdup("");
        m->runtime_dir = g_strdup(runtime_dir_default());
        m->self_pid = (int) getpid();
        m->node_samples = g_array_new(FALSE, TRUE, sizeof(NpNodeSample));
        m->cpu_ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        m->processes = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) process_free);
        m->included = g_hash_table_new(g_direct_hash, g_direct_equal);
        m->excluded = g_hash_table_new(g_direct_hash, g_direct_equal);
        m->scan_interval_usec = config->scan_interval_usec;
        m->backend_name = g_strdup("none");

        if (np_topology_load(&m->topology, error) < 0)
                return NULL;
        return g_steal_pointer(&m);
}

void np_manager_free(NpManager *m) {
        if (!m)
                return;
        sd_event_source_unref(m->scan_timer);
        if (m->bus) {
                sd_bus_flush(m->bus);
                sd_bus_close_unref(m->bus);
        }
        sd_event_unref(m->event);
        np_backend_free(m->backend);
        g_hash_table_destroy(m->processes);
        g_hash_table_destroy(m->included);
        g_hash_table_destroy(m->excluded);
        g_array_free(m->node_samples, TRUE);
        g_array_free(m->cpu_ticks, TRUE);
        np_topology_free(m->topology);
        np_config_free(m->config);
        g_free(m->config_file);
        g_free(m->config_error);
        g_free(m->runtime_dir);
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

static gint cmp_int(gconstpointer a, gconstpointer b) {
        int x = *(const int *) a, y = *(const int *) b;
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
        g_array_sort(a, cmp_int);
        return a;
}

GArray *np_manager_managed_pids(NpManager *m) {
        return np_manager_managed_pids_on(m, UINT32_MAX);
}

/* ---- process sampling --------------------------------------------------- */

static bool pid_in(GHashTable *t, const NpProcess *p) {
        gpointer v;
        if (!g_hash_table_lookup_extended(t, GINT_TO_POINTER(p->pid), NULL, &v))
                return false;
        return GPOINTER_TO_SIZE(v) == (gsize) p->starttime;
}

static char *cgroup_path_of(int pid, char **unit) {
        g_autofree char *buf = NULL;
        *unit = NULL;
        if (np_read_filef(&buf, NULL, "/proc/%d/cgroup", pid) < 0)
                return g_strdup("");
        const char *cpuset = NULL, *unified = NULL, *named = NULL;
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
                char *c1 = strchr(line, ':');
                char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                *c2 = '\0';
                const char *ctrl = c1 + 1, *path = c2 + 1;
                if (g_str_equal(ctrl, ""))
                        unified = path;
                else if (g_str_equal(ctrl, "name=systemd"))
                        named = path;
                else {
                        g_auto(GStrv) parts = g_strsplit(ctrl, ",", -1);
                        if (g_strv_contains((const char *const *) parts, "cpuset"))
                                cpuset = path;
                }
        }
        const char *sysd = unified ? unified : named;
        if (sysd) {
                g_auto(GStrv) comps = g_strsplit(sysd, "/", -1);
                for (int i = (int) g_strv_length(comps) - 1; i >= 0; i--)
                        if (g_str_has_suffix(comps[i], ".service") || g_str_has_suffix(comps[i], ".scope")) {
                                *unit = g_strdup(comps[i]);
                                break;
                        }
        }
        if (!*unit)
                *unit = g_strdup("");
        return g_strdup(cpuset ? cpuset : sysd ? sysd : "");
}

static NpMask *running_nodes_of(NpManager *m, int pid) {
        NpMask *nodes = np_mask_new();
        g_autofree char *dir = np_path("/proc/%d/task", pid);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
                g_autofree char *buf = NULL;
                NpPidStat st;
                if (np_read_filef(&buf, NULL, "/proc/%d/task/%s/stat", pid, name) < 0)
                        continue;
                if (np_parse_pid_stat(buf, &st) < 0)
                        continue;
                int n = np_topology_node_of_cpu(m->topology, (unsigned) st.processor);
                if (n >= 0)
                        np_mask_set(nodes, (unsigned) n);
        }
        if (np_mask_empty(nodes)) {
                /* no task directory readable: the process's own last CPU */
                NpPidStat st;
                if (np_read_pid_stat(pid, &st) == 0) {
                        int n = np_topology_node_of_cpu(m->topology, (unsigned) st.processor);
                        if (n >= 0)
                                np_mask_set(nodes, (unsigned) n);
                }
        }
        return nodes;
}

/* Read the expensive details of a significant process. -ESRCH when gone. */
static int refresh_details(NpManager *m, NpProcess *p) {
        NpPidStatus status = { 0 };
        int r = np_read_pid_status(p->pid, &status);
        if (r < 0)
                return r;
        np_mask_free(p->cpus_allowed);
        np_mask_free(p->mems_allowed);
        p->cpus_allowed = g_steal_pointer(&status.cpus_allowed);
        p->mems_allowed = g_steal_pointer(&status.mems_allowed);
        p->threads = status.threads;
        np_pid_status_clear(&status);

        NpNumaMaps maps = { 0 };
        r = np_read_numa_maps(p->pid, &maps);
        if (r < 0)
                return r;
        np_numa_maps_clear(&p->maps);
        p->maps = maps;

        np_mask_free(p->running_nodes);
        p->running_nodes = running_nodes_of(m, p->pid);
        uint64_t local = 0;
        NP_MASK_FOREACH(n, p->running_nodes)
                local += np_numa_maps_node_bytes(&p->maps, (unsigned) n);
        p->locality = p->maps.total_bytes ? (double) local / (double) p->maps.total_bytes : 1.0;

        g_free(p->cgroup);
        g_free(p->unit);
        p->cgroup = cgroup_path_of(p->pid, &p->unit);
        return 0;
}

static bool is_significant(NpManager *m, NpProcess *p) {
        const NpConfig *c = m->config;
        if (p->state == NP_PROC_PINNED || p->state == NP_PROC_PLACED)
                return true;
        if (pid_in(m->included, p) || np_config_list_match(c->include, (unsigned) p->pid, p->comm))
                return true;
        return p->rss_bytes >= c->min_process_memory && p->cpu_usage >= c->min_process_cpu;
}

static void scan_processes(NpManager *m, GPtrArray *added, GPtrArray *removed) {
        static long page_size;
        if (!page_size)
                page_size = sysconf(_SC_PAGESIZE);
        const double hz = (double) np_clock_ticks();
        uint64_t now = np_now_usec(CLOCK_MONOTONIC);

        g_autoptr(GArray) pids = np_list_pids();
        for (guint i = 0; i < pids->len; i++) {
                int pid = g_array_index(pids, int, i);
                if (pid == m->self_pid)
                        continue;
                NpPidStat st;
                if (np_read_pid_stat(pid, &st) < 0)
                        continue; /* vanished: skip quietly */
                if ((st.flags & NP_PF_KTHREAD) || st.ppid == 2 || pid == 2)
                        continue;

                NpProcess *p = np_manager_process(m, pid);
                if (p && p->starttime != st.starttime) {
                        /* pid reused: the old process is gone */
                        g_hash_table_steal(m->processes, GINT_TO_POINTER(pid));
                        g_ptr_array_add(removed, p);
                        p = NULL;
                }
                uint64_t ticks = st.utime + st.stime;
                if (!p) {
                        p = g_new0(NpProcess, 1);
                        p->pid = pid;
                        p->starttime = st.starttime;
                        p->state = NP_PROC_OBSERVED;
                        g_hash_table_insert(m->processes, GINT_TO_POINTER(pid), p);
                } else if (now > p->sampled_usec && ticks >= p->cpu_ticks) {
                        p->cpu_usage = ((double) (ticks - p->cpu_ticks) / hz) /
                                       ((double) (now - p->sampled_usec) / 1e6);
                }
                p->cpu_ticks = ticks;
                p->sampled_usec = now;
                p->rss_bytes = st.rss_pages > 0 ? (uint64_t) st.rss_pages * (uint64_t) page_size : 0;
                p->threads = st.num_threads > 0 ? (unsigned) st.num_threads : 0;
                memcpy(p->comm, st.comm, sizeof p->comm);
                p->seen = true;

                bool excluded = pid_in(m->excluded, p) || np_config_list_match(m->config->exclude, (unsigned) pid, p->comm);
                if (excluded && p->state == NP_PROC_OBSERVED)
                        p->state = NP_PROC_EXCLUDED;
                else if (!excluded && p->state == NP_PROC_EXCLUDED)
                        p->state = NP_PROC_OBSERVED;

                bool sig = is_significant(m, p);
                if (sig && refresh_details(m, p) < 0) {
                        /* vanished while reading: drop it now */
                        p->seen = false;
                        continue;
                }
                if (sig && !p->published)
                        g_ptr_array_add(added, GINT_TO_POINTER(pid));
                p->significant = sig;
        }

        /* everything not seen is gone (or stopped being a candidate) */
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                if (p->seen) {
                        p->seen = false;
                        continue;
                }
                g_hash_table_iter_steal(&it);
                g_ptr_array_add(removed, p);
        }
}

/* Node hotplug: when the set of online nodes changes, reload the topology
 * and let the bus announce the node objects that came or went. */
static void refresh_topology(NpManager *m) {
        g_autofree char *buf = NULL;
        g_autoptr(NpMask) online = NULL;
        if (m->topology->synthetic || np_read_file("/sys/devices/system/node/online", &buf, NULL) < 0 ||
            np_mask_parse(buf, &online) < 0 || np_mask_equal(online, m->topology->online))
                return;
        g_autoptr(GError) e = NULL;
        NpTopology *t = NULL;
        if (np_topology_load(&t, &e) < 0) {
                log_warning("Online NUMA nodes changed but the topology cannot be read: %s", e->message);
                return;
        }
        g_autofree char *before = np_mask_format(m->topology->online);
        g_autofree char *after = np_mask_format(t->online);
        log_notice("Online NUMA nodes changed from %s to %s", before, after);
        NpTopology *old = m->topology;
        m->topology = t;
        np_bus_nodes_changed(m, old->online, t->online);
        np_topology_free(old);
        g_array_set_size(m->cpu_ticks, 0);
}

int np_manager_scan(NpManager *m) {
        uint64_t start = np_now_usec(CLOCK_MONOTONIC);

        refresh_topology(m);

        g_autoptr(GArray) ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        g_autoptr(GArray) samples = g_array_new(FALSE, TRUE, sizeof(NpNodeSample));
        int r = np_sample_nodes(m->topology, true, m->scans ? m->cpu_ticks : NULL, ticks, samples);
        if (r < 0) {
                log_warning("Sampling nodes failed: %s", g_strerror(-r));
        } else {
                g_array_free(m->cpu_ticks, TRUE);
                m->cpu_ticks = g_steal_pointer(&ticks);
                g_array_free(m->node_samples, TRUE);
                m->node_samples = g_steal_pointer(&samples);
        }

        g_autoptr(GPtrArray) added = g_ptr_array_new();
        g_autoptr(GPtrArray) removed = g_ptr_array_new_with_free_func((GDestroyNotify) process_free);
        scan_processes(m, added, removed);

        bool candidates_changed = added->len > 0;
        for (guint i = 0; i < removed->len; i++) {
                NpProcess *p = removed->pdata[i];
                candidates_changed |= p->significant;
                if (pid_in(m->included, p))
                        g_hash_table_remove(m->included, GINT_TO_POINTER(p->pid));
                if (pid_in(m->excluded, p))
                        g_hash_table_remove(m->excluded, GINT_TO_POINTER(p->pid));
                if (m->backend && np_backend_holds(m->backend, p->pid)) {
                        /* it exited while held: drop the record and any empty cpuset */
                        np_backend_release(m->backend, p->pid);
                        log_info("Process %d (%s) exited; released its placement record", p->pid, p->comm);
                }
        }

        guint64 nb = 0;
        if (np_read_u64("/proc/sys/kernel/numa_balancing", &nb) == 0)
                m->kernel_numa_balancing = (unsigned) nb;

        m->scans++;
        m->last_scan_usec = np_now_usec(CLOCK_REALTIME);
        m->last_scan_duration_usec = np_now_usec(CLOCK_MONOTONIC) - start;

        /* Adaptive interval: quiet scans stretch it towards MaxScanIntervalSec,
         * any change in the set of candidates resets it. */
        unsigned sig = 0;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v))
                sig += ((NpProcess *) v)->significant;
        uint64_t old_interval = m->scan_interval_usec;
        if (candidates_changed || sig != m->significant_count_last)
                m->scan_interval_usec = m->config->scan_interval_usec;
        else
                m->scan_interval_usec = MIN(m->scan_interval_usec + m->config->scan_interval_usec,
                                            m->config->max_scan_interval_usec);
        m->significant_count_last = sig;

        np_bus_scan_done(m, added, removed);
        if (old_interval != m->scan_interval_usec)
                np_bus_manager_changed(m, "ScanIntervalUSec", NULL);
        return 0;
}

/* ---- configuration ------------------------------------------------------ */

static void apply_config(NpManager *m, NpConfig *old) {
        np_log_set_level(m->config->log_level);
        m->scan_interval_usec = m->config->scan_interval_usec;
        if (old && old->backend != m->config->backend)
                log_notice("Backend= changed from %s to %s: this takes effect at the next start",
                           np_backend_kind_to_string(old->backend), np_backend_kind_to_string(m->config->backend));
        if (m->scan_timer)
                sd_event_source_set_time_relative(m->scan_timer, m->scan_interval_usec);
}

int np_manager_reload(NpManager *m, GError **error) {
        g_autoptr(GError) e = NULL;
        NpConfig *c = NULL;
        sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64 "\nSTATUS=Reloading configuration",
                   np_now_usec(CLOCK_MONOTONIC));
        int r = np_config_load(m->config_file, &c, &e);
        if (r < 0) {
                const char *fields[] = { "NP_CONFIG_FILE=", NULL };
                g_autofree char *f = g_strdup_printf("NP_CONFIG_FILE=%s", m->config_file);
                fields[0] = f;
                np_log_fields(LOG_ERR, NP_MESSAGE_CONFIG_REJECTED, fields,
                              "Configuration rejected, keeping the previous one: %s", e->message);
                g_free(m->config_error);
                m->config_error = g_strdup(e->message);
                np_bus_manager_changed(m, "ConfigError", NULL);
                sd_notify(false, "READY=1\nSTATUS=Configuration rejected, previous one in force");
                g_set_error(error, NP_ERROR, NP_ERROR_CONFIG_INVALID,
                            "Configuration rejected, the previous one stays in force: %s", e->message);
                return r;
        }
        g_autoptr(NpConfig) old = m->config;
        m->config = c;
        apply_config(m, old);
        g_free(m->config_error);
        m->config_error = g_strdup("");
        log_info("Configuration reloaded from %s", m->config_file);
        np_bus_manager_changed(m, "ConfigError", "ConfigFiles", "Mode", "ScanIntervalUSec", NULL);
        sd_notify(false, "READY=1\nSTATUS=Configuration reloaded");
        return 0;
}

void np_manager_pause(NpManager *m, bool paused) {
        if (m->paused == paused)
                return;
        m->paused = paused;
        log_info("%s", paused ? "Paused: scans continue, no placement is made" : "Resumed");
        np_bus_manager_changed(m, "Paused", NULL);
}

/* ---- event loop --------------------------------------------------------- */

static void notify_status(NpManager *m) {
        unsigned sig = 0, held = 0;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                sig += p->significant;
                held += p->state == NP_PROC_PINNED || p->state == NP_PROC_PLACED;
        }
        sd_notifyf(false, "STATUS=%s%u nodes, %u significant processes, %u managed, %" PRIu64 " bytes migrated",
                   m->paused ? "Paused; " : "", m->topology->nodes->len, sig, held, m->migrated_bytes);
}

static int on_scan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        NpManager *m = userdata;
        np_manager_scan(m);
        notify_status(m);
        sd_event_source_set_time_relative(s, m->scan_interval_usec);
        sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        NpManager *m = userdata;
        log_info("Received %s, stopping", strsignal((int) si->ssi_signo));
        sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
        m->quitting = true;
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_hup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        NpManager *m = userdata;
        log_info("Received SIGHUP, reloading configuration");
        (void) np_manager_reload(m, NULL);
        return 0;
}

static int connect_bus(NpManager *m) {
        int r = sd_bus_open_system(&m->bus);
        if (r < 0) {
                log_error("Cannot connect to the system bus: %s", strerror(-r));
                return r;
        }
        r = np_bus_register(m);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        r = sd_bus_request_name(m->bus, NP_BUS_NAME, 0);
        if (r < 0) {
                log_error("Cannot own the bus name %s: %s (is another numaplaced running, or is "
                          "the D-Bus policy org.numaplaced1.conf not installed?)",
                          NP_BUS_NAME, strerror(-r));
                return r;
        }
        return 0;
}

int np_manager_run(NpManager *m) {
        int r = sd_event_default(&m->event);
        if (r < 0)
                return r;
        sigset_t ss;
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        sd_event_add_signal(m->event, NULL, SIGTERM, on_exit_signal, m);
        sd_event_add_signal(m->event, NULL, SIGINT, on_exit_signal, m);
        sd_event_add_signal(m->event, NULL, SIGHUP, on_hup, m);
        sd_event_set_watchdog(m->event, true);

        r = connect_bus(m);
        if (r < 0)
                return r;

        np_manager_scan(m);
        r = sd_event_add_time_relative(m->event, &m->scan_timer, CLOCK_MONOTONIC, m->scan_interval_usec, 0,
                                       on_scan_timer, m);
        if (r < 0)
                return r;
        sd_event_source_set_description(m->scan_timer, "scan-timer");
        sd_event_source_set_enabled(m->scan_timer, SD_EVENT_ONESHOT);

        log_info("numaplaced %s running: %u nodes, backend %s, mode %s, scanning every %.1f s", NP_VERSION,
                 m->topology->nodes->len, m->backend_name, np_mode_to_string(m->config->mode),
                 (double) m->config->scan_interval_usec / 1e6);
        sd_notify(false, "READY=1");
        m->ready_sent = true;
        notify_status(m);

        r = sd_event_loop(m->event);

        if (m->backend) {
                if (m->config->release_on_stop) {
                        np_backend_release_all(m->backend);
                        log_info("Released every managed process (ReleaseOnStop=yes)");
                } else
                        log_info("Leaving managed processes confined (ReleaseOnStop=no); the next start releases them");
        }
        return r;
}
