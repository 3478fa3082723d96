/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The scan: nodes, processes, peeks and follow-ups. See np-scan.h. */
#include "np-scan.h"

#include <errno.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "np-classify.h"
#include "np-log.h"
#include "np-policy.h"
#include "np-sysroot.h"
#include "np-thread.h"

static bool is_kernel_thread(int pid, const NpPidStat *st) {
        return (st->flags & NP_PF_KTHREAD) || st->ppid == 2 || pid == 2;
}

static uint64_t rss_bytes_of(const NpPidStat *st) {
        static long page_size;
        if (!page_size)
                page_size = sysconf(_SC_PAGESIZE);
        return st->rss_pages > 0 ? (uint64_t) st->rss_pages * (uint64_t) page_size : 0;
}

NpProcess *np_scan_pid(NpManager *m, int pid, GError **error) {
        NpPidStat st;
        int r = pid > 0 ? np_read_pid_stat(pid, &st) : -ESRCH;
        if (r < 0) {
                if (r == -ESRCH || r == -EINVAL)
                        g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "No process with PID %d", pid);
                else /* e.g. EMFILE: the process may well exist */
                        g_set_error(error, NP_ERROR, NP_ERROR_FAILED, "Cannot read /proc/%d/stat: %s", pid,
                                    g_strerror(-r));
                return NULL;
        }
        if (is_kernel_thread(pid, &st)) {
                g_set_error(error, NP_ERROR, NP_ERROR_INVALID_ARGS, "PID %d (%s) is a kernel thread", pid, st.comm);
                return NULL;
        }
        if (pid == m->self_pid) {
                g_set_error(error, NP_ERROR, NP_ERROR_INVALID_ARGS, "PID %d is numaplaced itself", pid);
                return NULL;
        }
        NpProcess *p = np_manager_process(m, pid);
        if (p && p->starttime == st.starttime)
                return p;
        if (p) {
                /* A reused pid: the old process is gone. Its records go
                 * with the next scan's; here only the entry is replaced. */
                g_hash_table_remove(m->processes, GINT_TO_POINTER(pid));
        }
        /* Not seen by a scan yet: sample this process only. Its CPU use is
         * known from the next scan on. */
        p = np_manager_add_process(m, pid, st.starttime);
        p->cpu_ticks = st.utime + st.stime;
        p->sampled_usec = np_now_usec(CLOCK_MONOTONIC);
        np_process_set_sample(p, st.comm, 0.0, rss_bytes_of(&st), 0,
                              st.num_threads > 0 ? (unsigned) st.num_threads : 0);
        if (np_classify_update(m, p) < 0) {
                g_hash_table_remove(m->processes, GINT_TO_POINTER(pid));
                g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "No process with PID %d", pid);
                return NULL;
        }
        return p;
}

/* A process that exited (or whose pid was reused): forget what pointed at
 * it. The NpProcess itself is freed by the caller. */
static void process_gone(NpManager *m, NpProcess *p) {
        if (np_classify_listed(m->included, p))
                g_hash_table_remove(m->included, GINT_TO_POINTER(p->pid));
        if (np_classify_listed(m->excluded, p))
                g_hash_table_remove(m->excluded, GINT_TO_POINTER(p->pid));
        if (p->state == NP_PROC_PINNED || p->state == NP_PROC_PLACED) {
                np_manager_changed(m, NP_MANAGER_MANAGED);
                if (p->target)
                        NP_MASK_FOREACH (n, p->target)
                                np_manager_node_changed(m, (unsigned) n, NP_NODE_MANAGED);
        }
        /* A move in flight is settled by its own completion (np-placement.c). */
        if (m->mover && np_mover_find(m->mover, p->pid))
                return;
        if (m->backend && np_backend_holds(m->backend, p->pid)) {
                /* it exited while held: drop the record and any empty cpuset */
                np_backend_release(m->backend, p->pid);
                log_info("Process %d (%s) exited; released its placement record", p->pid, p->comm);
        }
}

/* Seconds since boot (/proc/uptime), 0 when unknown (fixture trees). */
static double read_uptime(void) {
        g_autofree char *buf = NULL;
        if (np_read_file("/proc/uptime", &buf, NULL) < 0)
                return 0.0;
        return g_ascii_strtod(buf, NULL);
}

/* The CPU use of a process seen for the first time: its CPU time over its
 * life when it started within the last two scan intervals (then that is
 * its recent use, and a busy new process is significant at first sight);
 * otherwise unknown until the next scan measures an interval (0). */
static double young_cpu(NpManager *m, const NpProcEntry *e, double uptime) {
        double hz = (double) np_clock_ticks();
        double age = uptime - (double) e->starttime / hz;
        if (!e->stat_read || uptime <= 0 || age < 0.5 || age > 2.0 * (double) m->scan_interval_usec / 1e6)
                return 0.0;
        return (double) e->ticks / hz / age;
}

/* The scan reads stat every scan from here up: what can be significant
 * alone, or join a group by the shared memory rule (np-group.h). */
static uint64_t stat_floor(const NpManager *m) {
        return MIN(m->config->min_process_memory, NP_GROUP_MIN_SHARED_BYTES);
}

/* Can p, below stat_floor(), count in a group? Only from the member floor
 * up, in a unit or a Groups= cgroup that groups (np_classify_group_of());
 * kept until its cgroup is read again or the configuration reloaded. */
static bool may_join_group(NpManager *m, NpProcess *p) {
        if (np_process_scan_memory(p) < np_classify_member_floor(m))
                return false;
        if (p->may_group < 0) {
                NpGroupKind kind;
                g_autofree char *g = np_classify_group_of(m, p, &kind);
                p->may_group = g != NULL;
        }
        return p->may_group > 0;
}

/* The cheap tier asks: must stat be read for this process below
 * stat_floor()? Yes when it can count in a group, is held, included, or
 * matches Include=. */
static bool wants_stat(void *userdata, const NpProcEntry *e) {
        NpManager *m = userdata;
        if (np_proc_entry_memory(e) >= np_classify_member_floor(m)) {
                NpProcess *p = np_manager_process(m, e->pid);
                if (!p || p->starttime != e->starttime || may_join_group(m, p))
                        return true; /* its record is made in this scan */
        }
        if (m->held_last == 0 && g_hash_table_size(m->included) == 0 && (!m->config->include || !m->config->include[0]))
                return false; /* the common case, without a lookup */
        NpProcess *p = np_manager_process(m, e->pid);
        if (!p || p->starttime != e->starttime)
                return false; /* new: the table has just read its stat */
        return p->state == NP_PROC_PINNED || p->state == NP_PROC_PLACED || np_classify_included(m, p);
}

/* Does a process the manager has no record of need one? Only a process
 * that can be significant, alone or with its group, does: at or above the
 * member floor (np_classify_member_floor()), included (by PID or an
 * Include= name), or any process when Include=/Exclude= name cgroups. Its
 * cgroup is read when the record is made. The others live in the cheap
 * tier only (np-proc-table.h), which keeps the daemon's memory small on a
 * machine of thousands of small processes; one that grows gets its record
 * in the scan that sees it above the floor. */
static bool needs_record(NpManager *m, const NpProcEntry *e, bool cgroup_rules) {
        if (cgroup_rules || np_proc_entry_memory(e) >= np_classify_member_floor(m))
                return true;
        if (g_hash_table_size(m->included) > 0 && g_hash_table_contains(m->included, GINT_TO_POINTER(e->pid)))
                return true;
        return m->config->include && m->config->include[0] &&
                np_config_list_match(m->config->include, (unsigned) e->pid, e->comm, NULL);
}

/* Is p waiting for a follow-up scan: at or above MinProcessMemory, the
 * policy's to decide, and its CPU use not measured while its memory held
 * still (np_process_cpu_settled()), with follow-ups left? */
static bool wants_followup(const NpManager *m, const NpProcess *p) {
        return np_process_scan_memory(p) >= m->config->min_process_memory && !np_process_held(p) && !p->moving_to &&
                p->state != NP_PROC_EXCLUDED && p->state != NP_PROC_FOREIGN && !np_process_cpu_settled(p) &&
                p->followups < NP_FOLLOWUP_MAX;
}

/* May p, waiting for its follow-up, hold the decision round back
 * (np-decide.h)? Not when it is a candidate the kernel's NUMA balancing has
 * begun to move: the policy may decide that one at first sight (np-decide.c
 * counts it when the round keeps it after all). */
static bool holds_round(const NpManager *m, const NpProcess *p) {
        return !np_classify_kernel_began(m, p);
}

/* Mark the processes that want a follow-up scan as having had one; how
 * many there are. m->awaiting_bytes sums the memory of those of them that
 * may hold the decision round back (holds_round()). */
static unsigned mark_followups(NpManager *m) {
        unsigned n = 0;
        m->awaiting_bytes = 0;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                if (wants_followup(m, p)) {
                        p->followups++;
                        n++;
                        if (holds_round(m, p))
                                m->awaiting_bytes += np_process_scan_memory(p);
                }
        }
        return n;
}

/* Returns whether the set of candidates changed. */
static bool scan_processes(NpManager *m) {
        uint64_t now = np_now_usec(CLOCK_MONOTONIC);
        bool changed = false;
        bool cgroup_rules = np_config_has_cgroup_entries(m->config);
        double uptime = -1.0; /* read when a new process needs it */

        /* every PID, the cheap way (np-proc-table.h); details for the significant */
        np_proc_table_watch_hugetlb(m->proc_table, m->huge.in_use, m->huge_changed, m->config->min_process_memory);
        int r = np_proc_table_scan(m->proc_table, stat_floor(m), wants_stat, m);
        if (r < 0)
                log_warning("Cannot list processes: %s", g_strerror(-r));
        const GPtrArray *entries = np_proc_table_entries(m->proc_table);
        unsigned held = 0;
        g_autoptr(GPtrArray) seen = g_ptr_array_new();
        for (guint i = 0; i < entries->len; i++) {
                const NpProcEntry *e = entries->pdata[i];
                int pid = e->pid;
                if (pid == m->self_pid)
                        continue;
                if (e->new_this_scan)
                        m->processes_seen++;
                /* a zombie is gone for placement: its memory and threads
                 * are, and what held it is put back (the sweep below) */
                if (e->stat_read && e->exited)
                        continue;

                NpProcess *p = np_manager_process(m, pid);
                if (p && p->starttime != e->starttime) {
                        /* pid reused: the old process is gone */
                        changed |= p->significant;
                        process_gone(m, p);
                        g_hash_table_remove(m->processes, GINT_TO_POINTER(pid));
                        p = NULL;
                }
                if (!p) {
                        if (!needs_record(m, e, cgroup_rules))
                                continue;
                        p = np_manager_add_process(m, pid, e->starttime);
                        np_process_read_cgroup(p, m->proc_table);
                }
                /* CPU use comes from the last two stat reads, which the table
                 * makes only for what can be significant (or when asked) */
                p->cpu_ticks = e->ticks;
                p->sampled_usec = now;
                double cpu = e->cpu_usage, before = p->cpu_usage;
                p->cpu_estimated = false;
                if (e->new_this_scan && cpu == 0.0) {
                        if (uptime < 0.0)
                                uptime = read_uptime();
                        cpu = young_cpu(m, e, uptime);
                        p->cpu_estimated = cpu > 0.0;
                }
                if (p->cpu_estimated || e->new_this_scan) {
                        /* no interval measured yet: its life so far, or nothing */
                        p->cpu_measured = 0;
                        p->grew = false;
                } else if (e->stat_read) {
                        if (p->cpu_measured) {
                                p->cpu_prev = before;
                                p->cpu_prev_grew = p->grew; /* (still the interval before's) */
                        }
                        p->cpu_measured = MIN(p->cpu_measured + 1, 2u);
                        p->grew = (double) np_proc_entry_memory(e) >
                                (double) np_process_scan_memory(p) * (1.0 + NP_GROWING_SHARE);
                }
                /* hugetlb pages: the table's look; without one, what status
                 * said while its resident memory alone reaches the threshold
                 * and a pool is in use (np_process_refresh() reads it), else
                 * none (no pool in use, or too little mapped to matter) */
                uint64_t huge = e->hugetlb_gen                                            ? e->hugetlb_bytes
                        : e->rss_bytes >= m->config->min_process_memory && m->huge.in_use ? p->hugetlb_bytes
                                                                                          : 0;
                np_process_set_sample(p, e->comm, cpu, e->rss_bytes, huge, e->threads);
                p->rss_shared_bytes = e->shared_bytes;
                p->seen = true;
                g_ptr_array_add(seen, p);
        }

        /* significant alone, or with its group */
        np_classify_groups(m, seen);
        for (guint i = 0; i < seen->len; i++) {
                NpProcess *p = seen->pdata[i];
                bool was = p->significant;
                if (np_classify_update(m, p) < 0) {
                        /* vanished while reading: gone with the sweep below */
                        p->seen = false;
                        continue;
                }
                changed |= was != p->significant;
                held += p->state == NP_PROC_PINNED || p->state == NP_PROC_PLACED;
        }
        m->held_last = held;

        /* everything not seen is gone */
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                if (p->seen) {
                        p->seen = false;
                        continue;
                }
                changed |= p->significant;
                process_gone(m, p);
                g_hash_table_iter_remove(&it);
        }
        return changed;
}

/* Load the topology again and take it when it loads: what differs is
 * logged and recorded for the bus (the Node objects) and for the check of
 * the held placements (m->cpus_changed, np-hotplug.h). */
static void reload_topology(NpManager *m) {
        g_autoptr(GError) e = NULL;
        NpTopology *t = NULL;
        if (np_topology_load(&t, &e) < 0) {
                log_warning("The CPUs or memory of the NUMA nodes changed but the topology cannot be read: %s",
                            e->message);
                return;
        }
        g_auto(NpTopologyDiff) d = { 0 };
        if (np_topology_diff(m->topology, t, &d)) {
                g_autofree char *what = np_topology_diff_describe(m->topology, t, &d);
                log_notice("NUMA topology changed: %s", what);
        }
        if (!np_mask_empty(d.added) || !np_mask_empty(d.removed)) {
                np_manager_changed(m, NP_MANAGER_NODE_IDS);
                NP_MASK_FOREACH (n, t->online)
                        np_manager_node_changed(m, (unsigned) n, NP_NODE_DISTANCES);
        }
        NP_MASK_FOREACH (n, d.cpus_changed)
                np_manager_node_changed(m, (unsigned) n, NP_NODE_CPUS);
        NP_MASK_FOREACH (n, d.memory_changed)
                np_manager_node_changed(m, (unsigned) n, NP_NODE_MEMORY_TOTAL);
        np_mask_or(m->cpus_changed, d.cpus_changed);
        np_mask_or(m->cpus_changed, d.removed);
        /* per-CPU ticks are indexed by CPU id: start over */
        if (!np_mask_equal(m->topology->all_cpus, t->all_cpus) || !np_mask_empty(d.added) || !np_mask_empty(d.removed))
                g_array_set_size(m->cpu_ticks, 0);
        np_topology_free(m->topology);
        m->topology = t;
}

/* Memory hot-add (or removal) shows in the nodes' MemTotal, which the node
 * sample reads anyway. */
static bool memory_changed(NpManager *m, const GArray *samples) {
        g_autoptr(GArray) totals = g_array_sized_new(FALSE, FALSE, sizeof(NpNodeTotal), samples->len);
        for (guint i = 0; i < samples->len; i++) {
                const NpNodeSample *s = &g_array_index(samples, NpNodeSample, i);
                NpNodeTotal nt = { .id = s->id, .bytes = s->mem_total_bytes };
                g_array_append_val(totals, nt);
        }
        return np_topology_memory_differs(m->topology, (const NpNodeTotal *) (void *) totals->data, totals->len);
}

static void note_node_changes(NpManager *m, const GArray *before, const GArray *after) {
        for (guint i = 0; i < after->len; i++) {
                const NpNodeSample *n = &g_array_index(after, NpNodeSample, i);
                const NpNodeSample *o = NULL;
                for (guint k = 0; k < before->len && !o; k++)
                        if (g_array_index(before, NpNodeSample, k).id == n->id)
                                o = &g_array_index(before, NpNodeSample, k);
                uint32_t props = 0;
                if (!o || o->mem_free_bytes != n->mem_free_bytes)
                        props |= NP_NODE_MEMORY_FREE;
                if (!o || o->cpu_busy != n->cpu_busy)
                        props |= NP_NODE_CPU_BUSY;
                if (props)
                        np_manager_node_changed(m, n->id, props);
        }
}

/* The daemon's own CPU use over the same interval as the nodes' (the
 * policy does not count it as load: most of it is its moves). */
static void sample_self_cpu(NpManager *m) {
        uint64_t cpu = np_cpu_usec(RUSAGE_SELF);
        uint64_t now = np_now_usec(CLOCK_MONOTONIC);
        if (m->self_cpu_at && now > m->self_cpu_at && cpu >= m->self_cpu_usec)
                m->self_cpu = (double) (cpu - m->self_cpu_usec) / (double) (now - m->self_cpu_at);
        m->self_cpu_usec = cpu;
        m->self_cpu_at = now;
}

bool np_scan_peek(NpManager *m, bool with_cpu) {
        if (!m->scans)
                return true;
        g_autoptr(GArray) ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        g_autoptr(GArray) samples = g_array_new(FALSE, TRUE, sizeof(NpNodeSample));
        bool peeked = m->peek_at != 0;
        int r = np_sample_nodes(m->topology, true, peeked ? m->peek_ticks : m->cpu_ticks, ticks, samples, NULL);
        if (r < 0)
                return true;
        double own = 0.0;
        if (with_cpu) {
                /* the CPUs busy since the last peek that looked at them */
                uint64_t cpu = np_cpu_usec(RUSAGE_SELF), now = np_now_usec(CLOCK_MONOTONIC);
                uint64_t cpu0 = peeked ? m->peek_self_usec : m->self_cpu_usec;
                uint64_t at0 = peeked ? m->peek_at : m->self_cpu_at;
                own = now > at0 && cpu >= cpu0 ? (double) (cpu - cpu0) / (double) (now - at0) : 0.0;
                g_array_free(m->peek_ticks, TRUE);
                m->peek_ticks = g_steal_pointer(&ticks);
                m->peek_self_usec = cpu;
                m->peek_at = now;
        }
        bool gained = np_sample_gained(m->node_samples, samples, m->config->min_process_memory / 10 * 9,
                                       with_cpu ? 0.8 * m->config->min_process_cpu : 0.0, own - m->self_cpu);
        m->brought_forward = gained;
        if (gained)
                log_debug("The nodes gained a significant process's memory or CPU since scan %" G_GUINT64_FORMAT
                          ": scanning now",
                          m->scans);
        return gained;
}

int np_scan_run(NpManager *m) {
        uint64_t start = np_now_usec(CLOCK_MONOTONIC);
        m->peek_at = 0;

        if (np_topology_outdated(m->topology))
                reload_topology(m);

        g_autoptr(GArray) ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        g_autoptr(GArray) samples = g_array_new(FALSE, TRUE, sizeof(NpNodeSample));
        NpHugeSample huge = { 0 };
        const GArray *prev_ticks = m->scans ? m->cpu_ticks : NULL;
        bool cpu_measured = prev_ticks && prev_ticks->len > 0;
        int ret = np_sample_nodes(m->topology, true, prev_ticks, ticks, samples, &huge);
        sample_self_cpu(m);
        m->huge_changed = ret == 0 && huge.used_pages > m->huge.used_pages;
        if (ret == 0)
                m->huge = huge;
        if (ret < 0) {
                log_warning("Sampling the NUMA nodes failed: %s", g_strerror(-ret));
        } else {
                if (memory_changed(m, samples))
                        reload_topology(m);
                note_node_changes(m, m->node_samples, samples);
                g_array_free(m->cpu_ticks, TRUE);
                m->cpu_ticks = g_steal_pointer(&ticks);
                m->node_cpu_measured = cpu_measured;
                g_array_free(m->node_samples, TRUE);
                m->node_samples = g_steal_pointer(&samples);
        }

        guint64 nb = 0;
        if (np_read_u64_kept("/proc/sys/kernel/numa_balancing", &nb) == 0 &&
            (unsigned) nb != m->kernel_numa_balancing) {
                m->kernel_numa_balancing = (unsigned) nb;
                np_manager_changed(m, NP_MANAGER_NUMA_BALANCING);
        }

        bool candidates_changed = scan_processes(m);

        m->scans++;
        m->last_scan_usec = np_now_usec(CLOCK_REALTIME);
        m->last_scan_duration_usec = np_now_usec(CLOCK_MONOTONIC) - start;
        np_manager_changed(m, NP_MANAGER_SCANS | NP_MANAGER_LAST_SCAN | NP_MANAGER_DAEMON_CPU);

        /* Adaptive interval: a process waiting for its measurement, or a
         * scan a peek brought forward, brings a follow-up scan; quiet scans
         * stretch it towards MaxScanIntervalSec; any change in the set of
         * candidates (or a follow-up) resets it. */
        unsigned sig, held;
        np_manager_count(m, &sig, &held);
        m->held_last = held;
        bool followup = mark_followups(m) > 0;
        if (followup || m->brought_forward)
                np_manager_set_scan_interval(m, MIN(NP_FOLLOWUP_USEC, m->config->scan_interval_usec));
        else if (candidates_changed || sig != m->significant_count_last || m->followup_scan)
                np_manager_set_scan_interval(m, m->config->scan_interval_usec);
        else
                np_manager_set_scan_interval(
                        m,
                        MIN(m->scan_interval_usec + m->config->scan_interval_usec, m->config->max_scan_interval_usec));
        m->significant_count_last = sig;
        m->followup_scan = followup || m->brought_forward;
        m->brought_forward = false;
        return ret;
}
