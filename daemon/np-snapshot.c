/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The policy's snapshot of the manager's last scan. See np-snapshot.h. */
#include "np-snapshot.h"

#include <errno.h>

#include "np-classify.h"
#include "np-log.h"
#include "np-mover.h"
#include "np-numastat.h"
#include "np-reserve.h"
#include "np-thread-homes.h"

static void build_nodes(NpManager *m, GArray *out) {
        for (guint i = 0; i < m->topology->nodes->len; i++) {
                const NpNode *n = m->topology->nodes->pdata[i];
                const NpNodeSample *s = np_manager_node_sample(m, n->id);
                g_autoptr(NpMask) cpus = np_mask_copy(n->cpus);
                if (m->config->reserved_cpus)
                        np_mask_andnot(cpus, m->config->reserved_cpus);
                NpPolicyNode pn = {
                        .id = n->id,
                        .cpu_capacity = (double) np_mask_weight(cpus),
                        .cpu_busy = s ? s->cpu_busy : 0.0,
                        .mem_total = np_mask_test(m->topology->with_memory, n->id) ? n->mem_total_bytes : 0,
                        .mem_free = s ? s->mem_free_bytes : n->mem_total_bytes,
                        .mem_free_now = s ? s->mem_free_strict_bytes : 0,
                        .distances = n->distances,
                };
                for (unsigned k = 0; s && k < s->n_huge; k++)
                        pn.huge[pn.n_huge++] = s->huge[k];
                g_array_append_val(out, pn);
        }
}

NpPolicyHold np_snapshot_hold_of(NpManager *m, const NpProcess *p) {
        if (p->moving_to || (m->mover && np_mover_find(m->mover, p->pid)))
                return NP_HOLD_MOVING;
        switch (p->state) {
        case NP_PROC_PINNED:
                return NP_HOLD_PINNED;
        case NP_PROC_PLACED:
                /* placed by its thread homes alone: judged as if not placed */
                return p->threads_only ? NP_HOLD_NONE : NP_HOLD_PLACED;
        case NP_PROC_EXCLUDED:
                return NP_HOLD_EXCLUDED;
        default:
                break;
        }
        return np_classify_foreign(m, p) ? NP_HOLD_FOREIGN : NP_HOLD_NONE;
}

/* Candidates: the significant processes (np_snapshot_take() sorts them by pid). */
GPtrArray *np_snapshot_candidates(NpManager *m) {
        GPtrArray *a = g_ptr_array_new();
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (((NpProcess *) v)->significant)
                        g_ptr_array_add(a, v);
        return a;
}

static gint cmp_pid(gconstpointer a, gconstpointer b) {
        const NpProcess *x = *(NpProcess *const *) a, *y = *(NpProcess *const *) b;
        return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Mode=advise: a process keeps its advice as a placed process keeps its
 * nodes (while they hold it), so the advice does not follow its threads
 * from node to node. */
bool np_snapshot_advised_there(NpManager *m, const NpProcess *p) {
        return m->config->mode == NP_MODE_ADVISE && p->state == NP_PROC_ADVISED && p->target;
}

static void groups_clear(NpSnapshotGroups *g) {
        g_clear_pointer(&g->stat_pages, g_hash_table_unref);
        g_clear_pointer(&g->groups, g_ptr_array_unref);
        g_clear_pointer(&g->of_pid, g_hash_table_unref);
        g_clear_pointer(&g->none, g_array_unref);
        g_clear_pointer(&g->keep, g_ptr_array_unref);
}

static NpSharedId shared_id_of(const NpShmap *map) {
        return np_shared_id(map->dev_major, map->dev_minor, map->inode);
}

/* p's shared objects (those its maps names) into `shared` (NpGroupShared),
 * and its pages outside them, a new array kept in `keep`. */
static const GArray *split_shared(const NpProcess *p, GArray *shared, GPtrArray *keep, GPtrArray *names) {
        const GArray *all = p->maps_error == 0 ? p->maps.per_node : NULL;
        if (!all || !p->maps.shm)
                return all;
        GArray *own = g_array_copy((GArray *) all);
        g_ptr_array_add(keep, own);
        for (guint i = 0; i < p->maps.shm->len; i++) {
                const NpNumaMapsShm *sh = &g_array_index(p->maps.shm, NpNumaMapsShm, i);
                const NpShmap *map = np_process_shmap_of(p, sh);
                if (!map)
                        continue;
                char *name = g_strdup_printf("%s:%" G_GUINT64_FORMAT, np_shmap_kind_name(map->kind), map->inode);
                g_ptr_array_add(names, name);
                NpGroupShared gs = { .id = shared_id_of(map), .name = name, .per_node = sh->per_node };
                g_array_append_val(shared, gs);
                np_node_bytes_subtract(own, sh->per_node);
        }
        return own;
}

static void form_groups(NpManager *m, GPtrArray *cands, GPtrArray *names, NpSnapshotGroups *out) {
        out->keep = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
        g_autofree NpGroupMember *mem = g_new0(NpGroupMember, MAX(cands->len, 1));
        for (guint i = 0; i < cands->len; i++) {
                const NpProcess *p = cands->pdata[i];
                NpGroupKind kind = NP_GROUP_PROCESS;
                char *g = np_classify_group_of(m, p, &kind);
                if (g)
                        g_ptr_array_add(names, g);
                GArray *shared = g_array_new(FALSE, TRUE, sizeof(NpGroupShared));
                g_ptr_array_add(out->keep, shared);
                mem[i] = (NpGroupMember){
                        .pid = p->pid,
                        .cgroup = kind == NP_GROUP_CGROUP ? g : NULL,
                        .unit = kind == NP_GROUP_UNIT ? g : NULL,
                        .cpu = p->cpu_usage,
                        .per_node = split_shared(p, shared, out->keep, names),
                };
                mem[i].shared = (const NpGroupShared *) (void *) shared->data;
                mem[i].n_shared = shared->len;
        }
        NpGroupParams params = {
                .globs = (const char *const *) m->config->groups,
                .units = true,
                .min_shared_bytes = NP_GROUP_MIN_SHARED_BYTES,
        };
        out->of_pid = g_hash_table_new(g_direct_hash, g_direct_equal);
        if (np_groups_form(mem, cands->len, &params, &out->groups) < 0) {
                /* cannot happen: the candidates' pids are distinct and > 0 */
                out->groups = g_ptr_array_new_with_free_func((GDestroyNotify) np_group_free);
                return;
        }
        for (guint i = 0; i < out->groups->len; i++) {
                NpGroup *g = out->groups->pdata[i];
                for (guint k = 0; k < g->members->len; k++)
                        g_hash_table_insert(out->of_pid, GINT_TO_POINTER(g_array_index(g->members, NpGroupJoin, k).pid),
                                            g);
        }
}

/* Does p map object `id` (its maps names it)? */
const NpNumaMapsShm *np_snapshot_maps_object(const NpProcess *p, const NpSharedId *id) {
        for (guint i = 0; p->maps.shm && i < p->maps.shm->len; i++) {
                const NpNumaMapsShm *sh = &g_array_index(p->maps.shm, NpNumaMapsShm, i);
                const NpShmap *map = np_process_shmap_of(p, sh);
                NpSharedId mid = map ? shared_id_of(map) : (NpSharedId){ 0 };
                if (map && np_shared_id_equal(&mid, id))
                        return sh;
        }
        return NULL;
}

/* The pages of p as its group counts them: its own, plus each object of
 * the group it is the first member (by pid) to map, once; the objects it
 * maps that another member carries are left out. *mem: their sum (hugetlb
 * pages included, as in per_node). Without such objects, p's pages as they
 * are and *mem untouched. */
static const GArray *group_pages(NpManager *m, const NpProcess *p, const NpGroup *g, GPtrArray *keep, uint64_t *mem) {
        const GArray *all = p->maps_error == 0 ? p->maps.per_node : NULL;
        if (!all || !g || g->members->len < 2 || !g->objects->len)
                return all;
        GArray *pages = g_array_copy((GArray *) all);
        g_ptr_array_add(keep, pages);
        for (guint i = 0; i < g->objects->len; i++) {
                const NpGroupObject *o = &g_array_index(g->objects, NpGroupObject, i);
                const NpNumaMapsShm *mine = np_snapshot_maps_object(p, &o->id);
                if (!mine)
                        continue;
                /* the first member by pid that maps it carries it */
                int carrier = 0;
                for (guint k = 0; k < g->members->len && !carrier; k++) {
                        int pid = g_array_index(g->members, NpGroupJoin, k).pid;
                        const NpProcess *q = np_manager_process(m, pid);
                        if (q && np_snapshot_maps_object(q, &o->id))
                                carrier = pid;
                }
                /* its own view of the object out; the group's in, at the carrier */
                np_node_bytes_subtract(pages, mine->per_node);
                if (carrier == p->pid)
                        np_node_bytes_add(pages, o->per_node);
        }
        *mem = np_node_bytes_sum(pages);
        return pages;
}

/* ---- a cgroup group's pages from its memory.numa_stat ------------------ */

/* Where the unified hierarchy is mounted (below the sysroot, as every
 * reader's path: np_read_numa_stat() reads through np-sysroot). */
#define NP_CGROUP2_MOUNT "/sys/fs/cgroup"

/* Is cgroup `path` the cgroup `top` or below it? */
static bool cgroup_within(const char *path, const char *top) {
        size_t n = strlen(top);
        return path && strncmp(path, top, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Why the memory.numa_stat of g's cgroup does not tell g's pages, or NULL
 * when it does: every member lies in that cgroup of the unified hierarchy
 * (a member joined by shared memory from elsewhere is charged elsewhere),
 * and none has hugetlb pages (never charged to the memory controller). */
static const char *numa_stat_unfit(NpManager *m, const NpGroup *g) {
        for (guint k = 0; k < g->members->len; k++) {
                const NpProcess *q = np_manager_process(m, g_array_index(g->members, NpGroupJoin, k).pid);
                if (!q || !cgroup_within(q->systemd_cgroup, g->key.name))
                        return "not every member is in it in the unified hierarchy";
                if (q->maps_error == 0 && q->maps.huge_per_node && q->maps.huge_per_node->len)
                        return "a member has hugetlb pages, which it does not count";
        }
        return NULL;
}

/* A cgroup group whose memory.numa_stat cannot be used this scan: logged
 * when the reason is new (the failures of the scan before are in
 * m->numa_stat_failed), a malformed file as a warning. */
static void numa_stat_failed(NpManager *m, GHashTable *now, const char *cgroup, int r, const char *why) {
        const char *before = g_hash_table_lookup(m->numa_stat_failed, cgroup);
        if (g_strcmp0(before, why) != 0)
                np_log(r == -EINVAL ? LOG_WARNING : LOG_DEBUG,
                       "Memory per node of group %s from its processes' numa_maps: %s", cgroup, why);
        g_hash_table_insert(now, g_strdup(cgroup), g_strdup(why));
}

/* The pages of cgroup group g per node, from its cgroup's memory.numa_stat
 * (no page table walked, no mmap lock taken): anon + shmem, a new array;
 * NULL when it cannot tell (numa_stat_unfit(), or the read failed: the
 * cgroup is gone, it has no memory controller, a v1 host, a malformed
 * file), and then the members' numa_maps count as for any group. The rest
 * of `file` is page cache that is not shmem: read(2)/write(2) cache no
 * process maps, or files mapped by processes outside the group too
 * (libraries), neither of which migrate_pages(2) moves as a member's pages:
 * not the group's pages to move nor to place. */
static GArray *numa_stat_pages(NpManager *m, const NpGroup *g, GHashTable *failed_now) {
        const char *unfit = numa_stat_unfit(m, g);
        if (unfit) {
                numa_stat_failed(m, failed_now, g->key.name, 0, unfit);
                return NULL;
        }
        g_autoptr(GError) e = NULL;
        NpNumaStat st = { 0 };
        int r = np_read_numa_stat(NP_CGROUP2_MOUNT, g->key.name, &st, &e);
        if (r < 0) {
                numa_stat_failed(m, failed_now, g->key.name, r, e ? e->message : g_strerror(-r));
                return NULL;
        }
        m->numa_stat_reads++;
        GArray *pages = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        for (guint i = 0; i < st.per_node->len; i++) {
                const NpNumaStatNode *n = &g_array_index(st.per_node, NpNumaStatNode, i);
                NpNodeBytes nb = { .node = n->node, .bytes = n->anon + MIN(n->shmem, n->file) };
                if (nb.bytes)
                        g_array_append_val(pages, nb);
        }
        np_numa_stat_clear(&st);
        return pages;
}

/* The pages of the cgroup groups that memory.numa_stat tells, into
 * out->stat_pages; the failures of this scan replace m->numa_stat_failed. */
static void read_stat_pages(NpManager *m, NpSnapshotGroups *out) {
        out->stat_pages = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) g_array_unref);
        out->none = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        GHashTable *failed_now = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        for (guint i = 0; i < out->groups->len; i++) {
                const NpGroup *g = out->groups->pdata[i];
                GArray *pages = g->key.kind == NP_GROUP_CGROUP ? numa_stat_pages(m, g, failed_now) : NULL;
                if (pages)
                        g_hash_table_insert(out->stat_pages, (gpointer) g, pages);
        }
        g_hash_table_unref(m->numa_stat_failed);
        m->numa_stat_failed = failed_now;
}

/* The pages of p as the policy counts them in group g: the group's
 * memory.numa_stat at its first member by pid (the carrier, as for a
 * shared object in group_pages()) and none at the others, so the group's
 * sum is the cgroup's; else group_pages(). *mem: their sum. */
static const GArray *member_pages(NpManager *m, const NpProcess *p, const NpGroup *g, NpSnapshotGroups *groups,
                                  uint64_t *mem) {
        const GArray *stat = g ? g_hash_table_lookup(groups->stat_pages, g) : NULL;
        if (!stat)
                return group_pages(m, p, g, groups->keep, mem);
        const GArray *pages = g_array_index(g->members, NpGroupJoin, 0).pid == p->pid ? stat : groups->none;
        *mem = np_node_bytes_sum(pages);
        return pages;
}

/* What memory.numa_stat cannot tell of group g's pages, from its members'
 * numa_maps: the shares of them interleaved and that the kernel's NUMA
 * balancing can move, applied to `mem` (the numa_stat pages) at the
 * carrier, none at the others (as member_pages()). */
static void stat_shares(NpManager *m, const NpProcess *p, const NpGroup *g, uint64_t mem, uint64_t *interleaved,
                        uint64_t *balanced) {
        *interleaved = *balanced = 0;
        if (g_array_index(g->members, NpGroupJoin, 0).pid != p->pid)
                return;
        uint64_t total = 0, il = 0, bal = 0;
        for (guint k = 0; k < g->members->len; k++) {
                const NpProcess *q = np_manager_process(m, g_array_index(g->members, NpGroupJoin, k).pid);
                if (q && q->maps_error == 0) {
                        total += q->maps.total_bytes;
                        il += q->maps.interleaved_bytes;
                        bal += q->maps.balanced_bytes;
                }
        }
        if (total) {
                *interleaved = (uint64_t) ((double) mem * ((double) il / (double) total));
                *balanced = (uint64_t) ((double) mem * ((double) bal / (double) total));
        }
}

/* The candidates as the policy sees them, beside the round's nodes;
 * `names` keeps the strings they point to (the Groups= cgroups), `groups`
 * their groups. */
static void build_procs(NpManager *m, GPtrArray *cands, const GArray *node_arr, GArray *out, GPtrArray *names,
                        NpSnapshotGroups *groups) {
        uint64_t now = np_now_usec(CLOCK_MONOTONIC);
        form_groups(m, cands, names, groups);
        read_stat_pages(m, groups);
        /* each group of several processes: are its busy threads' faults
         * still to be counted (np_thread_homes_group_pending())? */
        g_autoptr(GHashTable) pending = g_hash_table_new(NULL, NULL);
        for (guint i = 0; i < cands->len; i++) {
                const NpProcess *p = cands->pdata[i];
                const NpGroup *g = g_hash_table_lookup(groups->of_pid, GINT_TO_POINTER(p->pid));
                unsigned group = 0;
                const char *group_name = NULL;
                if (g && g->key.kind != NP_GROUP_PROCESS) {
                        guint at = 0;
                        g_ptr_array_find(groups->groups, g, &at);
                        group = at + 1;
                        if (g->key.kind == NP_GROUP_CGROUP || g->key.kind == NP_GROUP_UNIT)
                                group_name = g->key.name;
                        else if (g->key.kind == NP_GROUP_SHARED) {
                                char *n = np_group_key_name(&g->key);
                                g_ptr_array_add(names, n);
                                group_name = n;
                        }
                }
                uint64_t mem = np_process_memory_bytes(p);
                const GArray *pages = member_pages(m, p, g, groups, &mem);
                bool from_stat = g && g_hash_table_contains(groups->stat_pages, g);
                uint64_t interleaved = p->maps.interleaved_bytes, balanced = p->maps.balanced_bytes;
                if (from_stat)
                        stat_shares(m, p, g, mem, &interleaved, &balanced);
                NpPolicyHold hold = np_snapshot_hold_of(m, p);
                bool advised = hold == NP_HOLD_NONE && np_snapshot_advised_there(m, p);
                if (advised)
                        hold = NP_HOLD_PLACED;
                /* its busy threads' faults: thread homes (np-thread-homes.h),
                 * a group's all together */
                NpHomesWhy workers = hold == NP_HOLD_NONE ? np_thread_homes_workers(m, p) : NP_HOMES_FEW_THREADS;
                bool faults_pending = (workers == NP_HOMES_FEW_FAULTS || workers == NP_HOMES_UNMEASURED) &&
                        np_process_age_usec(p) < NP_HOMES_WAIT_USEC;
                if (group && g->members->len >= 2) {
                        gpointer v = GINT_TO_POINTER(0);
                        if (hold == NP_HOLD_NONE && !g_hash_table_lookup_extended(pending, g, NULL, &v)) {
                                v = GINT_TO_POINTER(np_thread_homes_group_pending(
                                        m, g, (const NpPolicyNode *) (void *) node_arr->data, node_arr->len));
                                g_hash_table_insert(pending, (gpointer) g, v);
                        }
                        faults_pending = GPOINTER_TO_INT(v);
                }
                uint64_t churn_usec, homes_usec;
                uint64_t churn = np_process_kernel_churn(p, &churn_usec);
                /* its threads kept on their own nodes: what the kernel moved
                 * before is not what it moves now */
                uint64_t since_homes = np_thread_homes_migrated(p, np_now_usec(CLOCK_MONOTONIC), &homes_usec);
                if (since_homes != UINT64_MAX && homes_usec < churn_usec) {
                        churn = MIN(churn, since_homes);
                        churn_usec = homes_usec;
                }
                NpPolicyProcess pp = {
                        .pid = p->pid,
                        /* sized by the lower of its last two measurements:
                         * a burst does not buy it more nodes. Once its
                         * memory holds still, not by one taken while it
                         * grew (its start: one thread touching it, say,
                         * before its busy threads begin), which would
                         * confine it to fewer CPUs than it uses now; a
                         * start that ends idle is measured idle */
                        .cpu = p->cpu_measured >= 2 && !(p->cpu_prev_grew && !p->grew) ? MIN(p->cpu_usage, p->cpu_prev)
                                                                                       : p->cpu_usage,
                        .cpu_interval = p->cpu_usage,
                        .cpu_estimated = !np_process_cpu_settled(p),
                        .growing = p->grew,
                        .threads = p->threads,
                        .mem = mem,
                        .interleaved = interleaved,
                        .balanced = balanced,
                        /* numa_stat says nothing of the pages before */
                        .locality_before = from_stat ? -1.0 : p->locality_prev,
                        .kernel_migrated = np_process_cpu_settled(p) ? 0 : p->kernel_migrated_bytes,
                        .thread_workers = workers == NP_HOMES_GIVEN,
                        .thread_faults_pending = faults_pending,
                        .kernel_churn = churn,
                        .kernel_churn_usec = churn_usec,
                        .memory_only = hold == NP_HOLD_PLACED && !advised && p->memory_only,
                        .runs_on = hold == NP_HOLD_PLACED && !advised && p->memory_only ? p->runs_on : NULL,
                        .per_node = pages,
                        .huge_per_node = p->maps_error == 0 ? p->maps.huge_per_node : NULL,
                        .running = p->running_nodes,
                        .cpu_per_node = p->cpu_per_node,
                        .current = hold == NP_HOLD_MOVING && p->moving_to             ? p->moving_to
                                : (np_process_held(p) && !p->threads_only) || advised ? p->target
                                                                                      : NULL,
                        .left = p->left,
                        .stuck = hold == NP_HOLD_PLACED && !advised ? p->stuck_bytes : 0,
                        .since_move_usec = p->moved_usec ? now - p->moved_usec : UINT64_MAX,
                        .failed = p->failed_bytes,
                        .failed_full = p->failed_full,
                        .failed_moves = p->failed_moves,
                        .hold = hold,
                        .cgroup = p->cgroup,
                        .group = group,
                        .group_name = group_name,
                        .group_unit = g && g->key.kind == NP_GROUP_UNIT,
                };
                g_array_append_val(out, pp);
        }
}

static void params_of(NpManager *m, NpPolicyParams *out) {
        const NpConfig *c = m->config;
        *out = (NpPolicyParams){
                .target_utilization = c->target_utilization,
                .memory_locality_target = c->memory_locality_target,
                .min_usec_between_moves = c->min_usec_between_moves,
                .keep_interleaved = c->keep_interleaved,
                .own_cpu = m->self_cpu,
                .background_measured = m->background_measured,
                .background_before = m->background_cpu,
                .kernel_balancing = np_manager_kernel_balancing(m),
                .confines_memory = np_backend_holds_memory(m->backend),
        };
}

void np_snapshot_take(NpManager *m, NpSnapshot *s) {
        s->cands = np_snapshot_candidates(m);
        g_ptr_array_sort(s->cands, cmp_pid);
        s->node_arr = g_array_new(FALSE, FALSE, sizeof(NpPolicyNode));
        s->proc_arr = g_array_new(FALSE, FALSE, sizeof(NpPolicyProcess));
        build_nodes(m, s->node_arr);
        s->names = g_ptr_array_new_with_free_func(g_free);
        build_procs(m, s->cands, s->node_arr, s->proc_arr, s->names, &s->groups);
        /* the room answers of Advise() hold, after the candidates */
        np_reservations_to_procs(m->reservations, s->proc_arr);
        params_of(m, &s->params);
        s->nodes = (const NpPolicyNode *) (void *) s->node_arr->data;
        s->n_nodes = s->node_arr->len;
        s->procs = (const NpPolicyProcess *) (void *) s->proc_arr->data;
        s->n_procs = s->proc_arr->len;
}

void np_snapshot_clear(NpSnapshot *s) {
        g_clear_pointer(&s->cands, g_ptr_array_unref);
        g_clear_pointer(&s->node_arr, g_array_unref);
        g_clear_pointer(&s->proc_arr, g_array_unref);
        g_clear_pointer(&s->names, g_ptr_array_unref);
        groups_clear(&s->groups);
}
