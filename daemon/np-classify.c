/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Classification: significant, included, excluded, foreign. See np-classify.h. */
#include "np-classify.h"

#include <errno.h>
#include <math.h>

bool np_classify_listed(GHashTable *t, const NpProcess *p) {
        gpointer v;
        if (g_hash_table_size(t) == 0 || !g_hash_table_lookup_extended(t, GINT_TO_POINTER(p->pid), NULL, &v))
                return false;
        return GPOINTER_TO_SIZE(v) == (gsize) p->starttime;
}

bool np_classify_included(NpManager *m, const NpProcess *p) {
        return np_classify_listed(m->included, p) ||
                np_config_list_match(m->config->include, (unsigned) p->pid, p->comm, p->cgroup);
}

/* The daemon's own unit ("" when it has none), read once. */
static const char *self_unit(NpManager *m) {
        if (!m->self_unit) {
                g_autoptr(NpProcess) self = np_process_new(m->self_pid, 0);
                np_process_read_cgroup(self, NULL);
                m->self_unit = g_strdup(self->unit ? self->unit : "");
        }
        return m->self_unit;
}

/* A process in a unit the mechanism must not change (init.scope, the
 * daemon's own unit) is left alone, as excluded. */
static bool in_untouchable_unit(NpManager *m, const NpProcess *p) {
        if (!m->backend || !p->unit || !p->unit[0])
                return false;
        return np_backend_unit_role(m->backend, p->unit, self_unit(m)) == NP_UNIT_UNTOUCHABLE;
}

bool np_classify_excluded(NpManager *m, const NpProcess *p) {
        return np_classify_listed(m->excluded, p) ||
                np_config_list_match(m->config->exclude, (unsigned) p->pid, p->comm, p->cgroup) ||
                in_untouchable_unit(m, p);
}

/* Hysteresis: a significant process stays so until its CPU use falls below
 * this share of MinProcessCPU= or its memory below this share of
 * MinProcessMemory=, so that one running right at a threshold (a duty
 * cycle of 50% against the default 0.5 CPU) does not come and go every
 * scan, and with it its bus object and its place in the policy's ledger. */
#define NP_SIGNIFICANT_KEEP_CPU 0.8
#define NP_SIGNIFICANT_KEEP_MEMORY 0.9
/* locality that moved less than this between two reads: the kernel is done */
#define NP_KERNEL_SETTLED_LOCALITY 0.01

const char *np_classify_unit_of(NpManager *m, const NpProcess *p) {
        if (!m->backend || !p->unit || !p->unit[0])
                return NULL;
        return np_backend_unit_role(m->backend, p->unit, NULL) == NP_UNIT_TOGETHER ? p->unit : NULL;
}

char *np_classify_group_of(NpManager *m, const NpProcess *p, NpGroupKind *kind) {
        const char *const *globs = (const char *const *) m->config->groups;
        char *g = globs && globs[0] ? np_group_cgroup_match(p->systemd_cgroup, globs) : NULL;
        if (!g && globs && globs[0] && g_strcmp0(p->cgroup, p->systemd_cgroup) != 0)
                g = np_group_cgroup_match(p->cgroup, globs);
        if (g) {
                *kind = NP_GROUP_CGROUP;
                return g;
        }
        /* the mechanism confines the unit as a whole: its processes must be
         * decided together; otherwise a service or a machine's scope is one
         * workload, a login session is not */
        const char *unit = np_classify_unit_of(m, p);
        if (!unit && np_group_unit_is_workload(p->unit) && !in_untouchable_unit(m, p))
                unit = p->unit;
        *kind = NP_GROUP_UNIT;
        return g_strdup(unit);
}

/* Another process of p's unit is placed or being placed by the systemd
 * mechanism: the unit carries the daemon's AllowedCPUs/AllowedMemoryNodes,
 * which narrow p too. */
static bool unit_carries_daemon_values(NpManager *m, const NpProcess *p) {
        if (!np_classify_unit_of(m, p))
                return false;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const NpProcess *o = v;
                if (o != p && (np_process_held(o) || o->moving_to) && g_strcmp0(o->unit, p->unit) == 0)
                        return true;
        }
        return false;
}

bool np_classify_foreign(NpManager *m, const NpProcess *p) {
        if (np_process_held(p) || np_classify_included(m, p))
                return false;
        if (unit_carries_daemon_values(m, p))
                return false;
        if (p->cpus_allowed && !np_mask_subset(m->topology->all_cpus, p->cpus_allowed))
                return true;
        if (p->mems_allowed && !np_mask_subset(m->topology->with_memory, p->mems_allowed))
                return true;
        return false;
}

/* A candidate of the policy whose memory the kernel's NUMA balancing can
 * move and which is not local yet, or whose locality still changed between
 * its last two reads (the kernel may be moving it, or its threads moved):
 * the policy must not decide on where its pages were a scan ago. */
static bool kernel_moving(const NpManager *m, const NpProcess *p) {
        /* (one its thread homes alone hold is judged as not placed: the
         * kernel moves its pages to its threads' nodes) */
        bool unplaced = p->state == NP_PROC_OBSERVED || (p->state == NP_PROC_PLACED && p->threads_only);
        if (!np_manager_kernel_balancing(m) || !p->significant || !unplaced || !p->maps.per_node ||
            p->maps.balanced_bytes * 2 < p->maps.total_bytes)
                return false;
        return p->locality * 100.0 < (double) m->config->memory_locality_target || p->locality_prev < 0 ||
                fabs(p->locality - p->locality_prev) >= NP_KERNEL_SETTLED_LOCALITY;
}

bool np_classify_kernel_began(const NpManager *m, const NpProcess *p) {
        return p->significant && np_manager_kernel_balancing(m) && !np_process_cpu_settled(p) &&
                (double) p->kernel_migrated_bytes >= NP_POLICY_KERNEL_BEGAN * (double) np_process_scan_memory(p);
}

uint64_t np_classify_member_floor(const NpManager *m) {
        return m->config->min_process_memory / NP_GROUP_MEMBER_SHARE;
}

typedef struct {
        uint64_t private_bytes; /* the members' resident memory less what they may share */
        uint64_t shared_max; /* the largest shared resident set among them */
        double cpu;
        unsigned n;
        bool was; /* a member was significant by the group at the scan before */
} GroupDemand;

static bool counts_in_group(NpManager *m, const NpProcess *p) {
        return np_process_scan_memory(p) >= np_classify_member_floor(m) && p->cpu_measured > 0 &&
                p->state != NP_PROC_EXCLUDED;
}

void np_classify_groups(NpManager *m, GPtrArray *procs) {
        const NpConfig *c = m->config;
        g_autoptr(GHashTable) demand = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autofree GroupDemand **of = g_new0(GroupDemand *, procs->len + 1);
        for (guint i = 0; i < procs->len; i++) {
                NpProcess *p = procs->pdata[i];
                np_classify_exclusion(m, p);
                if (!counts_in_group(m, p))
                        continue;
                NpGroupKind kind = NP_GROUP_PROCESS;
                g_autofree char *g = np_classify_group_of(m, p, &kind);
                if (!g)
                        continue;
                char *key = g_strdup_printf("%s:%s", np_group_kind_to_string(kind), g);
                GroupDemand *d = g_hash_table_lookup(demand, key);
                if (d)
                        g_free(key);
                else {
                        d = g_new0(GroupDemand, 1);
                        g_hash_table_insert(demand, key, d);
                }
                uint64_t mem = np_process_scan_memory(p), shared = MIN(p->rss_shared_bytes, mem);
                d->private_bytes += mem - shared;
                d->shared_max = MAX(d->shared_max, shared);
                d->cpu += p->cpu_usage;
                d->n++;
                d->was |= p->group_significant;
                of[i] = d;
        }
        for (guint i = 0; i < procs->len; i++) {
                NpProcess *p = procs->pdata[i];
                const GroupDemand *d = of[i];
                bool pass = false;
                if (d && d->n >= 2) {
                        double keep_mem = d->was ? NP_SIGNIFICANT_KEEP_MEMORY : 1.0;
                        double keep_cpu = d->was ? NP_SIGNIFICANT_KEEP_CPU : 1.0;
                        pass = (double) (d->private_bytes + d->shared_max) >=
                                        keep_mem * (double) c->min_process_memory &&
                                d->cpu >= keep_cpu * c->min_process_cpu;
                }
                p->group_significant = pass;
        }
}

static bool is_significant(NpManager *m, NpProcess *p) {
        const NpConfig *c = m->config;
        /* held, or a move of it is queued or running: the policy's ledger
         * must count where it is going */
        if (np_process_held(p) || p->moving_to)
                return true;
        if (np_classify_included(m, p) || p->group_significant)
                return true;
        if (p->significant)
                return (double) np_process_scan_memory(p) >=
                        NP_SIGNIFICANT_KEEP_MEMORY * (double) c->min_process_memory &&
                        p->cpu_usage >= NP_SIGNIFICANT_KEEP_CPU * c->min_process_cpu;
        return np_process_scan_memory(p) >= c->min_process_memory && p->cpu_usage >= c->min_process_cpu;
}

void np_classify_exclusion(NpManager *m, NpProcess *p) {
        bool excluded = np_classify_excluded(m, p);

        if (excluded && !np_process_held(p) && p->state != NP_PROC_EXCLUDED)
                np_process_set_state(p, NP_PROC_EXCLUDED, NULL, p->last_placed_usec);
        else if (!excluded && p->state == NP_PROC_EXCLUDED)
                np_process_set_state(p, NP_PROC_OBSERVED, NULL, p->last_placed_usec);
}

int np_classify_update(NpManager *m, NpProcess *p) {
        np_classify_exclusion(m, p);

        bool sig = is_significant(m, p);
        if (!sig) { /* read again when significant again */
                np_maps_age_invalidate(&p->maps_age);
                np_details_age_invalidate(&p->details_age);
                p->pages_from_group = false;
        }
        /* one whose pages the kernel's balancing may be moving: its
         * numa_maps read every scan it ran, so the policy decides on where
         * they are now (the kernel moves pages only on its accesses);
         * not one whose group's memory.numa_stat says that every scan */
        if (sig && !p->pages_from_group && kernel_moving(m, p) && p->cpu_ticks != p->maps_age.cpu_ticks)
                np_maps_age_invalidate(&p->maps_age);
        /* one read while it started (allocating its memory, then perhaps
         * setting its policy back to the default), before its CPU use was
         * measured: read again at the scan that measures it, which decides
         * it, so that the policy sees its pages and their policy as they are
         * once it runs */
        if (sig && !p->pages_from_group && p->maps_age.valid && p->maps_age.starting && np_process_cpu_settled(p))
                np_maps_age_invalidate(&p->maps_age);
        if (sig && np_process_refresh(p, m->topology, m->proc_table, m->config->locality_refresh_scans) < 0)
                return -ESRCH;
        /* a candidate not measured yet whose pages the kernel's balancing
         * has begun to move is decided at once (np-policy.h) */
        if (sig && np_manager_kernel_balancing(m) && p->state == NP_PROC_OBSERVED && !np_process_cpu_settled(p) &&
            p->maps.per_node && p->maps.balanced_bytes * 2 >= p->maps.total_bytes)
                np_process_read_kernel_migrated(p);
        /* one the policy left to the kernel's balancing on every node, or
         * placed whole on several: how much of it the kernel keeps moving
         * (np-policy.h, kernel churn; GLib's monotonic time is
         * CLOCK_MONOTONIC, as np-decide.c's) */
        if (sig && p->kernel_watch && np_manager_kernel_balancing(m))
                np_process_note_kernel_migrated(p, (uint64_t) g_get_monotonic_time(), NP_POLICY_CHURN_WINDOW_USEC,
                                                np_process_age_usec(p));
        else if (p->kernel_seen && !p->moving_to) /* kept across its move */
                g_array_set_size(p->kernel_seen, 0);
        np_process_set_significant(p, sig);
        return 0;
}
