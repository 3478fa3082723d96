/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Deciding: the policy's snapshot in, its decisions carried out. See np-decide.h. */
#include "np-decide.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "np-classify.h"
#include "np-log.h"
#include "np-numastat.h"
#include "np-placement.h"
#include "np-policy.h"
#include "np-reserve.h"
#include "np-scan.h"
#include "np-thread-homes.h"

/* ---- the snapshot ------------------------------------------------------- */

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

static NpPolicyHold hold_of(NpManager *m, const NpProcess *p) {
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

/* Candidates: the significant processes, in pid order (deterministic). */
static GPtrArray *candidates(NpManager *m) {
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
static bool advised_there(NpManager *m, const NpProcess *p) {
        return m->config->mode == NP_MODE_ADVISE && p->state == NP_PROC_ADVISED && p->target;
}

/* The candidates' placement groups (np-group.h), formed anew every scan:
 * the Groups= cgroups, the services and scopes (np_classify_group_of()), the shared
 * memory objects. Each candidate's shared lines, their objects known from
 * its maps, are listed apart from its own pages, so a group counts each
 * object once. What the members point to is kept in `keep`. */
typedef struct {
        GPtrArray *groups; /* NpGroup* */
        GHashTable *of_pid; /* pid -> NpGroup* */
        GHashTable *stat_pages; /* NpGroup* -> GArray of NpNodeBytes: the pages of the groups
                                 * whose cgroup's memory.numa_stat was read (numa_stat_pages()) */
        GArray *none; /* NpNodeBytes, empty: what the other members of those carry */
        GPtrArray *keep; /* strings and arrays the members point to */
} Groups;

static void groups_clear(Groups *g) {
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

static void form_groups(NpManager *m, GPtrArray *cands, GPtrArray *names, Groups *out) {
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
static const NpNumaMapsShm *maps_object(const NpProcess *p, const NpSharedId *id) {
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
                const NpNumaMapsShm *mine = maps_object(p, &o->id);
                if (!mine)
                        continue;
                /* the first member by pid that maps it carries it */
                int carrier = 0;
                for (guint k = 0; k < g->members->len && !carrier; k++) {
                        int pid = g_array_index(g->members, NpGroupJoin, k).pid;
                        const NpProcess *q = np_manager_process(m, pid);
                        if (q && maps_object(q, &o->id))
                                carrier = pid;
                }
                /* its own view of the object out; the group's in, at the carrier */
                np_node_bytes_subtract(pages, mine->per_node);
                if (carrier == p->pid)
                        np_node_bytes_add(pages, o->per_node);
        }
        uint64_t sum = 0;
        for (guint j = 0; j < pages->len; j++)
                sum += g_array_index(pages, NpNodeBytes, j).bytes;
        *mem = sum;
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
static void read_stat_pages(NpManager *m, Groups *out) {
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

static uint64_t node_bytes_sum(const GArray *a) {
        uint64_t sum = 0;
        for (guint j = 0; a && j < a->len; j++)
                sum += g_array_index(a, NpNodeBytes, j).bytes;
        return sum;
}

/* The pages of p as the policy counts them in group g: the group's
 * memory.numa_stat at its first member by pid (the carrier, as for a
 * shared object in group_pages()) and none at the others, so the group's
 * sum is the cgroup's; else group_pages(). *mem: their sum. */
static const GArray *member_pages(NpManager *m, const NpProcess *p, const NpGroup *g, Groups *groups, uint64_t *mem) {
        const GArray *stat = g ? g_hash_table_lookup(groups->stat_pages, g) : NULL;
        if (!stat)
                return group_pages(m, p, g, groups->keep, mem);
        const GArray *pages = g_array_index(g->members, NpGroupJoin, 0).pid == p->pid ? stat : groups->none;
        *mem = node_bytes_sum(pages);
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
                        Groups *groups) {
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
                NpPolicyHold hold = hold_of(m, p);
                bool advised = hold == NP_HOLD_NONE && advised_there(m, p);
                if (advised)
                        hold = NP_HOLD_PLACED;
                /* its busy threads' faults: thread homes (np-thread-homes.h),
                 * a group's all together */
                NpHomesWhy workers = hold == NP_HOLD_NONE ? np_thread_homes_workers(m, p) : NP_HOMES_FEW_THREADS;
                bool faults_pending = (workers == NP_HOMES_FEW_FAULTS || workers == NP_HOMES_UNMEASURED) &&
                        np_process_age_usec(p) < NP_HOMES_WAIT_USEC;
                if (group && g->members->len >= 2) {
                        gpointer v;
                        if (!g_hash_table_lookup_extended(pending, g, NULL, &v)) {
                                v = GINT_TO_POINTER(np_thread_homes_group_pending(
                                        m, g, (const NpPolicyNode *) (void *) node_arr->data, node_arr->len));
                                g_hash_table_insert(pending, (gpointer) g, v);
                        }
                        faults_pending = hold == NP_HOLD_NONE && GPOINTER_TO_INT(v);
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
                         * a start (touching its memory at full speed) or a
                         * burst does not buy it more nodes */
                        .cpu = p->cpu_measured >= 2 ? MIN(p->cpu_usage, p->cpu_prev) : p->cpu_usage,
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

/* ---- carrying out ------------------------------------------------------- */

static void set_state(NpManager *m, NpProcess *p, NpProcState state, const NpMask *target) {
        np_manager_set_state(m, p, state, target, p->last_placed_usec);
}

static void log_decision(const NpProcess *p, int level, const char *what, const char *why) {
        g_autofree char *f_pid = g_strdup_printf("PID=%d", p->pid);
        g_autofree char *f_comm = g_strdup_printf("COMM=%s", p->comm);
        const char *fields[] = { f_pid, f_comm, NULL };
        np_log_fields(level, NULL, fields, "%s %d (%s): %s", what, p->pid, p->comm, why);
}

static void placed_done(NpManager *m, int pid, uint64_t moved_bytes, const GError *error, void *userdata) {
        if (error) {
                log_warning("The policy's placement of %d did not complete: %s", pid, error->message);
                NpProcess *p = np_manager_process(m, pid);
                if (p)
                        g_clear_pointer(&p->homes_pending, g_array_unref);
        }
        /* the homes its group's move planned (np-thread-homes.h) */
        np_thread_homes_after_moves(m);
}

/* d's reason worded: why */
static void carry_out(NpManager *m, NpProcess *p, const NpDecision *d, const char *why) {
        bool advise = m->config->mode == NP_MODE_ADVISE;
        bool changed = g_strcmp0(p->decision, why) != 0;

        np_process_set_decision(p, why);
        switch (d->kind) {
        case NP_DECISION_MOVE:
                if (advise) {
                        if (p->state != NP_PROC_ADVISED || !p->target || !np_mask_equal(p->target, d->nodes))
                                log_decision(p, LOG_INFO, "Advice for", why);
                        if (!np_process_held(p))
                                set_state(m, p, NP_PROC_ADVISED, d->nodes);
                        break;
                }
                {
                        g_autoptr(GError) e = NULL;
                        NpPlaceReason reason = p->state == NP_PROC_PLACED ? NP_PLACE_REBALANCE : NP_PLACE_POLICY;
                        log_decision(p, LOG_INFO, "Placing", why);
                        int r = d->memory_only
                                ? np_placement_submit_memory(m, p->pid, d->nodes, d->runs_on, reason, placed_done, NULL,
                                                             &e)
                                : np_placement_submit(m, p->pid, d->nodes, reason, placed_done, NULL, &e);
                        if (r < 0) {
                                log_warning("Cannot place %d (%s): %s", p->pid, p->comm, e->message);
                                g_clear_pointer(&p->homes_pending, g_array_unref);
                        }
                }
                break;
        case NP_DECISION_NOFIT:
                /* once when it starts not fitting, not at every wording */
                if (p->state != NP_PROC_NOFIT)
                        log_decision(p, LOG_NOTICE, "Not placing", why);
                if (!np_process_held(p) && p->state != NP_PROC_EXCLUDED)
                        set_state(m, p, NP_PROC_NOFIT, NULL);
                break;
        case NP_DECISION_KEEP:
                if (changed)
                        log_decision(p, LOG_DEBUG, "Leaving", why);
                break;
        }
}

/* p's group as the policy decided it: its name, and the shared objects of
 * it that no process outside the group maps, which p's moves carry
 * (np-placement.c). */
static void note_group(NpProcess *p, const NpGroup *g) {
        if (!g || g->key.kind == NP_GROUP_PROCESS) {
                np_process_set_group(p, NULL, NULL);
                return;
        }
        g_autofree char *name = np_group_key_name(&g->key);
        g_autoptr(GArray) objects = g_array_new(FALSE, FALSE, sizeof(NpSharedId));
        for (guint i = 0; i < g->objects->len; i++) {
                const NpGroupObject *o = &g_array_index(g->objects, NpGroupObject, i);
                if (!o->outside && maps_object(p, &o->id))
                        g_array_append_val(objects, o->id);
        }
        np_process_set_group(p, name, objects);
}

/* p's pages came from its group's memory.numa_stat this scan (its
 * numa_maps is not read by age), or no longer do: then its numa_maps is
 * read at the next scan. */
static void note_pages_source(NpProcess *p, bool from_stat) {
        if (p->pages_from_group && !from_stat)
                np_maps_age_invalidate(&p->maps_age);
        p->pages_from_group = from_stat;
}

/* States that only say what the policy saw last time. */
static void settle_state(NpManager *m, NpProcess *p, NpPolicyHold hold, const NpDecision *d, const char *why) {
        if (np_process_held(p) || p->state == NP_PROC_EXCLUDED)
                return;
        if (hold == NP_HOLD_FOREIGN) {
                if (p->state != NP_PROC_FOREIGN)
                        log_decision(p, LOG_INFO, "Leaving", why);
                set_state(m, p, NP_PROC_FOREIGN, NULL);
        } else if (d->kind == NP_DECISION_KEEP && p->state != NP_PROC_OBSERVED &&
                   !(hold == NP_HOLD_PLACED && advised_there(m, p))) {
                set_state(m, p, NP_PROC_OBSERVED, NULL);
        }
}

/* What the policy decides from: the candidates (sorted by PID), the nodes,
 * the processes in the candidates' order, and the parameters. */
typedef struct {
        GPtrArray *cands;
        GArray *node_arr, *proc_arr;
        GPtrArray *names; /* what proc_arr's group names point to */
        Groups groups; /* the candidates' placement groups, which proc_arr points into */
        const NpPolicyNode *nodes;
        const NpPolicyProcess *procs;
        guint n_nodes, n_procs;
        NpPolicyParams params;
} Snapshot;

static void snapshot(NpManager *m, Snapshot *s) {
        s->cands = candidates(m);
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

static void snapshot_clear(Snapshot *s) {
        g_clear_pointer(&s->cands, g_ptr_array_unref);
        g_clear_pointer(&s->node_arr, g_array_unref);
        g_clear_pointer(&s->proc_arr, g_array_unref);
        g_clear_pointer(&s->names, g_ptr_array_unref);
        groups_clear(&s->groups);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Snapshot, snapshot_clear)

/* One node of memory: nothing to decide, every process is local there.
 * Those narrowed by someone else are still shown foreign, with who narrowed
 * them; one no longer narrowed is observed again. */
static void settle_foreign(NpManager *m) {
        g_autoptr(GPtrArray) cands = candidates(m);
        for (guint i = 0; i < cands->len; i++) {
                NpProcess *p = cands->pdata[i];
                NpPolicyHold hold = hold_of(m, p);
                if (hold == NP_HOLD_FOREIGN) {
                        NpReason r = { .code = NP_REASON_FOREIGN, .cgroup = p->cgroup };
                        g_autofree char *why = np_reason_render(&r);
                        if (p->state != NP_PROC_FOREIGN) {
                                log_decision(p, LOG_INFO, "Leaving", why);
                                set_state(m, p, NP_PROC_FOREIGN, NULL);
                        }
                        np_process_set_decision(p, why);
                } else if (hold == NP_HOLD_NONE && p->state == NP_PROC_FOREIGN) {
                        set_state(m, p, NP_PROC_OBSERVED, NULL);
                        np_process_set_decision(p, "");
                }
        }
}

/* The groups of this round into the manager's table (the Group objects):
 * members, pages (as the policy counted them), locality over the nodes its
 * members run on, and its first member's target, state and decision
 * without the "with the N processes of its group" prefix. */
static void record_groups(NpManager *m, const Snapshot *s, const GPtrArray *decisions) {
        g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
        for (guint i = 0; i < s->cands->len; i++)
                g_hash_table_insert(index, GINT_TO_POINTER(((NpProcess *) s->cands->pdata[i])->pid),
                                    GUINT_TO_POINTER(i + 1));
        np_group_table_begin(m->groups);
        for (guint i = 0; s->groups.groups && i < s->groups.groups->len; i++) {
                const NpGroup *g = s->groups.groups->pdata[i];
                if (!g->members->len)
                        continue;
                g_autofree char *name = np_group_key_name(&g->key);
                NpGroupView *v = np_group_table_take(m->groups, name, g->key.kind);
                g_autoptr(GArray) pids = g_array_new(FALSE, FALSE, sizeof(guint32));
                g_autoptr(NpMask) running = np_mask_new();
                NpProcess *first = NULL;
                guint first_at = 0;
                for (guint k = 0; k < g->members->len; k++) {
                        int pid = g_array_index(g->members, NpGroupJoin, k).pid;
                        guint at = GPOINTER_TO_UINT(g_hash_table_lookup(index, GINT_TO_POINTER(pid)));
                        if (!at)
                                continue;
                        NpProcess *p = s->cands->pdata[at - 1];
                        guint32 u = (guint32) pid;
                        g_array_append_val(pids, u);
                        if (p->running_nodes)
                                np_mask_or(running, p->running_nodes);
                        if (!first) {
                                first = p;
                                first_at = at - 1;
                        }
                        np_process_set_group_id(p, v->id);
                }
                if (!first)
                        continue;
                /* its pages as the policy counted them: memory.numa_stat's
                 * for a cgroup group that has it, else the members' */
                const GArray *stat = g_hash_table_lookup(s->groups.stat_pages, g);
                const GArray *per_node = stat ? stat : g->per_node;
                uint64_t mem = stat ? node_bytes_sum(stat) : g->mem, local = 0;
                for (guint j = 0; per_node && j < per_node->len; j++) {
                        const NpNodeBytes *nb = &g_array_index(per_node, NpNodeBytes, j);
                        if (np_mask_test(running, nb->node))
                                local += nb->bytes;
                }
                np_group_view_set_members(v, pids);
                np_group_view_set_memory(v, mem, per_node);
                np_group_view_set_locality(v, mem ? (double) local / (double) mem : 1.0);
                np_group_view_set_target(v, first->target);
                np_group_view_set_state(v, np_proc_state_to_string(first->state));
                NpReason r = ((const NpDecision *) decisions->pdata[first_at])->reason;
                r.group_members = 0; /* a shallow copy: rendered only */
                g_autofree char *why = np_reason_render(&r);
                np_group_view_set_decision(v, why);
        }
        np_group_table_end(m->groups);
}

/* Candidates by their decision's order (stable: the rest keep theirs). */
static gint by_order(gconstpointer a, gconstpointer b, gpointer data) {
        const GPtrArray *decisions = data;
        const NpDecision *x = decisions->pdata[*(const guint *) a], *y = decisions->pdata[*(const guint *) b];
        return (x->order > y->order) - (x->order < y->order);
}

/* What the processes starting beside the candidates use: not candidates
 * (yet), from half of MinProcessMemory= up, and still touching their memory
 * or not yet measured. The ledger counts their CPU as the machine's
 * background, spread over every node, and their pages as other load where
 * they are, until they are measured candidates, whose CPU counts on their
 * own nodes and whose pages may be about to leave. `bytes` leaves out those
 * of MinProcessMemory= and more, which their follow-up scans count
 * (m->awaiting_bytes) while they wait. */
typedef struct {
        bool summed; /* filled (summed only when a decision lacks something) */
        double cpu;
        uint64_t bytes;
} Starting;

static void sum_starting(const NpManager *m, Starting *out) {
        *out = (Starting){ .summed = true };
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const NpProcess *p = v;
                uint64_t mem = np_process_scan_memory(p);
                if (p->significant || p->state == NP_PROC_EXCLUDED || p->state == NP_PROC_FOREIGN ||
                    np_process_held(p) || mem < m->config->min_process_memory / 2)
                        continue;
                if (!p->grew && np_process_cpu_settled(p))
                        continue;
                out->cpu += p->cpu_usage;
                if (mem < m->config->min_process_memory)
                        out->bytes += mem;
        }
}

/* The candidate a decision would spread over several nodes for want of
 * memory on the node with most of its pages, a want that the newcomers
 * (*newcomer_bytes: processes waiting for their follow-up, whose pages may
 * be about to leave; this round's own are added to it) and the memory of
 * the processes starting beside it could make up, or for want of CPUs
 * there, a want that the CPU use of the processes starting beside it could
 * make up (*starting: sum_starting(), summed only when a decision lacks
 * something): its index, or -1 when there is none. Only the first
 * s->cands->len decisions are the candidates' (the reservations of Advise()
 * follow them). */
static int squeezed_by_newcomers(const NpManager *m, const Snapshot *s, const GPtrArray *decisions,
                                 uint64_t *newcomer_bytes, Starting *starting) {
        /* the candidates the kernel's balancing has begun to move, which the
         * scan left out as decided at first sight, but which this round
         * keeps where they are for their follow-up (no single node holds
         * them yet, or they still touch their memory) */
        for (guint i = 0; i < s->cands->len; i++) {
                const NpDecision *d = decisions->pdata[i];
                if (d->kind == NP_DECISION_KEEP && np_classify_kernel_began(m, s->cands->pdata[i]))
                        *newcomer_bytes += s->procs[i].mem;
        }
        for (guint i = 0; i < s->cands->len; i++) {
                const NpDecision *d = decisions->pdata[i];
                const NpShortage *a = &d->reason.alone;
                if (d->kind != NP_DECISION_MOVE)
                        continue;
                if (a->kind != NP_SHORT_MEMORY && a->kind != NP_SHORT_CPU)
                        continue;
                double want = a->others + a->its - a->capacity;
                if (a->kind == NP_SHORT_MEMORY && *newcomer_bytes && want <= (double) *newcomer_bytes)
                        return (int) i;
                if (!starting->summed)
                        sum_starting(m, starting);
                if (a->kind == NP_SHORT_MEMORY && *newcomer_bytes + starting->bytes > 0 &&
                    want <= (double) (*newcomer_bytes + starting->bytes))
                        return (int) i;
                if (a->kind == NP_SHORT_CPU && starting->cpu > 0 && want <= starting->cpu)
                        return (int) i;
        }
        return -1;
}

void np_decide_run(NpManager *m) {
        /* Nothing to decide while paused, or on a machine with one node of
         * memory (every process is local there). */
        if (m->paused)
                return;
        if (np_mask_weight(m->topology->with_memory) < 2) {
                settle_foreign(m);
                /* no groups are decided there */
                np_group_table_begin(m->groups);
                np_group_table_end(m->groups);
                return;
        }
        g_auto(Snapshot) s = { 0 };
        snapshot(m, &s);
        g_autoptr(GPtrArray) decisions = np_policy_decide(s.nodes, s.n_nodes, s.procs, s.n_procs, &s.params);
        /* the next round counts the lower of its background and this one */
        m->background_cpu = np_policy_background_cpu(s.nodes, s.n_nodes, s.procs, s.n_procs, &s.params);
        m->background_measured = m->node_cpu_measured;
        uint64_t newcomers = m->awaiting_bytes;
        Starting starting = { 0 };
        int squeezed = m->rounds_deferred < NP_DECIDE_WAIT_ROUNDS
                ? squeezed_by_newcomers(m, &s, decisions, &newcomers, &starting)
                : -1;
        if (squeezed >= 0) {
                const NpProcess *p = s.cands->pdata[squeezed];
                bool cpu = ((const NpDecision *) decisions->pdata[squeezed])->reason.alone.kind == NP_SHORT_CPU;
                m->rounds_deferred++;
                /* the next scan is a follow-up, also when the processes
                 * starting are not yet of a size that brings one */
                np_manager_set_scan_interval(m, MIN(NP_FOLLOWUP_USEC, m->config->scan_interval_usec));
                m->followup_scan = true;
                if (cpu)
                        log_info("Not deciding in scan %" G_GUINT64_FORMAT ": %d (%s) would be spread over several "
                                 "nodes for want of CPUs, and processes starting beside it (%.2f CPUs, counted on "
                                 "every node until measured) are measured at the follow-up scan",
                                 m->scans, p->pid, p->comm, starting.cpu);
                else
                        log_info("Not deciding in scan %" G_GUINT64_FORMAT ": %d (%s) would be spread over several "
                                 "nodes for want of memory, and processes starting beside it (%.0f MiB) are "
                                 "measured at the follow-up scan",
                                 m->scans, p->pid, p->comm, (double) (newcomers + starting.bytes) / (1 << 20));
                return;
        }
        m->rounds_deferred = 0;
        /* moves are queued in the order the policy planned them: each
         * counts on the room the ones before it leave on their nodes */
        g_autoptr(GArray) seq = g_array_sized_new(FALSE, FALSE, sizeof(guint), s.cands->len);
        for (guint i = 0; i < s.cands->len; i++)
                g_array_append_val(seq, i);
        g_array_sort_with_data(seq, by_order, decisions);
        /* the groups' homes, worked out at each group's first member */
        g_autoptr(NpGroupHomes) group_homes = np_group_homes_new();
        for (guint k = 0; k < seq->len; k++) {
                guint i = g_array_index(seq, guint, k);
                NpProcess *p = s.cands->pdata[i];
                const NpDecision *d = decisions->pdata[i];
                NpPolicyHold hold = s.procs[i].hold;
                g_autofree char *why = np_reason_render(&d->reason);
                const NpGroup *g = g_hash_table_lookup(s.groups.of_pid, GINT_TO_POINTER(p->pid));
                note_group(p, g);
                note_pages_source(p, g && g_hash_table_contains(s.groups.stat_pages, g));
                settle_state(m, p, hold, d, why);
                /* left to the kernel's balancing on every node, or placed
                 * whole on several nodes: how much of it the kernel keeps
                 * moving is watched (kernel churn), and its busy threads
                 * may get nodes of their own (np-thread-homes.h) */
                bool every_node = hold == NP_HOLD_NONE && d->kind == NP_DECISION_KEEP &&
                        (d->reason.kernel == NP_KERNEL_EVERY_NODE || d->reason.code == NP_REASON_CPU_EVERY_NODE ||
                         d->reason.code == NP_REASON_EVERY_NODE || d->reason.code == NP_REASON_THREAD_WORKERS);
                const NpMask *on = hold == NP_HOLD_MOVING                      ? p->moving_to
                        : hold == NP_HOLD_PLACED && p->state == NP_PROC_PLACED ? p->target
                                                                               : NULL;
                bool placed_spread = on && np_mask_weight(on) > 1 && !p->memory_only && d->kind == NP_DECISION_KEEP;
                /* (one its homes alone hold stays homed while the policy
                 * keeps it where it is, local or not; the members of a
                 * group of several processes are homed together while the
                 * group is placed on several nodes, or kept where it runs
                 * for being local there or spread over every node; a group
                 * of one process gets none) */
                bool grouped = g && g->key.kind != NP_GROUP_PROCESS;
                bool kept = hold == NP_HOLD_NONE && d->kind == NP_DECISION_KEEP;
                bool homes_ok = s.params.kernel_balancing && m->config->mode == NP_MODE_ENFORCE &&
                        (grouped ? g->members->len >= 2 &&
                                         ((placed_spread && hold == NP_HOLD_PLACED) ||
                                          (kept && (d->reason.code == NP_REASON_LOCAL || every_node)))
                                 : every_node || (placed_spread && hold == NP_HOLD_PLACED) ||
                                         (p->threads_only && kept));
                g_autofree char *homes = grouped
                        ? np_thread_homes_settle_member(m, group_homes, g, p, s.nodes, s.n_nodes,
                                                        hold == NP_HOLD_PLACED, homes_ok)
                        : np_thread_homes_settle(m, p, s.nodes, s.n_nodes, every_node ? NULL : p->target, homes_ok);
                /* a group moved whole to several nodes: its homes as soon
                 * as it is there */
                if (grouped && g->members->len >= 2 && d->kind == NP_DECISION_MOVE && !d->memory_only &&
                    np_mask_weight(d->nodes) > 1 && s.params.kernel_balancing && m->config->mode == NP_MODE_ENFORCE) {
                        g_free(homes);
                        homes = np_thread_homes_plan_member(m, group_homes, g, p, s.nodes, s.n_nodes, d->nodes);
                }
                if (homes) {
                        char *both = g_strconcat(why, homes, NULL);
                        g_free(why);
                        why = both;
                }
                carry_out(m, p, d, why);
                p->kernel_watch =
                        s.params.kernel_balancing && s.params.confines_memory && (every_node || placed_spread);
        }
        record_groups(m, &s, decisions);
}

NpMask *np_decide_advise(NpManager *m, double cpus, uint64_t bytes, NpAdviceFit *fit, GError **error) {
        if (!isfinite(cpus) || cpus < 0 || cpus > 1e6) {
                g_set_error(error, NP_ERROR, NP_ERROR_INVALID_ARGS, "Invalid CPU count %g (expected 0 to 1000000)",
                            cpus);
                return NULL;
        }
        g_auto(Snapshot) s = { 0 };
        snapshot(m, &s);
        NpMask *set = np_policy_advise(s.nodes, s.n_nodes, s.procs, s.n_procs, &s.params, cpus, bytes, fit);
        if (!set)
                g_set_error(error, NP_ERROR, NP_ERROR_NOT_SUPPORTED, "No NUMA node has memory");
        return set;
}
