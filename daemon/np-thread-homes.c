/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-thread-homes.h"

#include <errno.h>

#include "np-log.h"
#include "np-placement.h"
#include "np-policy-threads.h"
#include "np-sample.h"

/* The node p's thread tid is kept on, -1 = none. */
static int home_of(const NpProcess *p, pid_t tid) {
        for (guint i = 0; p->thread_homes && i < p->thread_homes->len; i++)
                if (g_array_index(p->thread_homes, NpThreadHome, i).tid == tid)
                        return (int) g_array_index(p->thread_homes, NpThreadHome, i).node;
        return -1;
}

/* Do the homes give every thread p keeps now the same node, and no more? */
static bool same_homes(const NpProcess *p, const GArray *homes) {
        if (!p->thread_homes || p->thread_homes->len != homes->len)
                return false;
        for (guint i = 0; i < homes->len; i++) {
                const NpThreadHome *h = &g_array_index(homes, NpThreadHome, i);
                if (home_of(p, h->tid) != (int) h->node)
                        return false;
        }
        return true;
}

/* p's busy threads as the pure rule takes them; their faults stay in
 * *faults (the caller's). */
static NpPolicyThread *busy_threads(const NpProcess *p, GArray **faults, guint *n) {
        *n = 0;
        if (np_process_read_thread_faults(p, NP_BUSY_THREAD_CPU, faults) < 0)
                return NULL;
        NpPolicyThread *threads = g_new0(NpPolicyThread, (*faults)->len ? (*faults)->len : 1);
        for (guint i = 0; i < (*faults)->len; i++) {
                const NpThreadFaults *f = &g_array_index(*faults, NpThreadFaults, i);
                threads[i] = (NpPolicyThread){ .tid = f->tid,
                                               .cpu = f->cpu,
                                               .faults = f->faults,
                                               .home = home_of(p, f->tid) };
        }
        *n = (*faults)->len;
        return threads;
}

/* At LogLevel=debug: what the rule was given for the busy threads of p (of
 * its group: `group`) and what it gave: the load of others on the nodes
 * (`own` taken out), the nodes it was held to (`prefer`, `confined`) or
 * preferred (`prefer`, NULL: none). */
static void log_homes(const NpProcess *p, bool group, const NpPolicyThread *threads, guint n, const NpPolicyNode *nodes,
                      guint n_nodes, const GArray *own, bool confined, const NpMask *prefer, const GArray *homes,
                      NpHomesWhy why) {
        if (!np_log_enabled(LOG_DEBUG))
                return;
        g_autofree char *in = np_policy_threads_describe(threads, n);
        g_autofree char *load = np_policy_threads_load_describe(nodes, n_nodes, own);
        g_autofree char *set = prefer ? np_mask_format(prefer) : NULL;
        g_autofree char *among = !prefer ? g_strdup("any nodes")
                : confined               ? g_strdup_printf("nodes %s only", set)
                                         : g_strdup_printf("nodes %s preferred", set);
        g_autofree char *out = homes ? np_policy_homes_list(homes) : g_strdup(np_homes_why_to_string(why));
        log_debug("Thread homes for %s%d (%s) among %s (others' load: %s): busy threads %s: %s",
                  group ? "the group of " : "", p->pid, p->comm, among, load, in, out);
}

static void forget_homes(NpProcess *p) {
        g_clear_pointer(&p->thread_homes, g_array_unref);
        p->threads_only = false;
        p->homes_usec = 0;
}

/* End p's homes: each thread put back (a process placed by them alone is
 * released and observed again). */
static void end_homes(NpManager *m, NpProcess *p, const char *why) {
        int r = np_backend_unpin_threads(m->backend, p->pid);
        if (r < 0 && r != -ENOENT && r != -ESRCH)
                log_warning("Cannot put every thread of %d (%s) back on its CPUs: %s", p->pid, p->comm, g_strerror(-r));
        log_info("No longer keeping the threads of %d (%s) on their own nodes: %s", p->pid, p->comm, why);
        if (p->threads_only && p->state == NP_PROC_PLACED)
                np_manager_set_state(m, p, NP_PROC_OBSERVED, NULL, p->last_placed_usec);
        forget_homes(p);
}

static void widened(NpManager *m, int pid, uint64_t moved_bytes, const GError *error, void *userdata) {
        if (error)
                log_warning("Widening the placement of %d did not complete: %s", pid, error->message);
}

/* The nodes of `homes`. */
static NpMask *nodes_of(const GArray *homes) {
        NpMask *all = np_mask_new();
        for (guint i = 0; i < homes->len; i++)
                np_mask_set(all, g_array_index(homes, NpThreadHome, i).node);
        return all;
}

/* The clause p's Decision adds for `homes` (its own, or its group's). */
static char *homes_clause(const GArray *homes, bool group) {
        return group ? np_policy_group_homes_clause(homes) : np_policy_homes_clause(homes);
}

/* Carry out the homes the rule gave p's busy threads (`homes`, taken),
 * NULL with `why` when it gave none. `group`: they are its group's (all
 * within the group's nodes; p's placement is never widened for them);
 * `shown`: what its Decision lists then. */
static char *settle_homes(NpManager *m, NpProcess *p, GArray *homes_in, NpHomesWhy why, bool group,
                          const GArray *shown) {
        g_autoptr(GArray) homes = homes_in;
        if (!homes) {
                /* a pinned thread that idles for a while keeps its home */
                if (p->thread_homes && why != NP_HOMES_FEW_THREADS && why != NP_HOMES_FEW_FAULTS)
                        end_homes(m, p, np_homes_why_to_string(why));
                return p->thread_homes ? homes_clause(p->thread_homes, group) : NULL;
        }
        /* a homed thread that idles keeps its home while it lives */
        for (guint i = 0; p->thread_homes && i < p->thread_homes->len; i++) {
                const NpThreadHome *old = &g_array_index(p->thread_homes, NpThreadHome, i);
                bool listed = false;
                for (guint k = 0; k < homes->len && !listed; k++)
                        listed = g_array_index(homes, NpThreadHome, k).tid == old->tid;
                if (!listed && np_process_has_thread(p, old->tid))
                        g_array_append_val(homes, *old);
        }
        if (homes->len == 0)
                return group && shown ? homes_clause(shown, true) : NULL;
        if (same_homes(p, homes))
                return homes_clause(group && shown ? shown : homes, group);

        bool was_placed = np_process_held(p);
        g_autoptr(NpMask) all = nodes_of(homes);
        if (!group && was_placed && !p->threads_only && p->target && !np_mask_subset(all, p->target)) {
                /* placed whole on too few nodes for its threads: its
                 * placement grows by the nodes they need (no page moves,
                 * they are all on its nodes), their homes follow */
                g_autoptr(NpMask) wider = np_mask_copy(p->target);
                np_mask_or(wider, all);
                g_autofree char *from = np_mask_format(p->target), *to = np_mask_format(wider);
                g_autofree char *list = np_policy_homes_list(homes);
                g_autoptr(GError) e = NULL;
                log_info("Widening the placement of %d (%s) from nodes %s to %s: its %u busy threads work on their own "
                         "pages and need a node each (%s)",
                         p->pid, p->comm, from, to, homes->len, list);
                if (np_placement_submit(m, p->pid, wider, NP_PLACE_REBALANCE, widened, NULL, &e) < 0) {
                        log_warning("Cannot widen the placement of %d (%s): %s", p->pid, p->comm, e->message);
                        return NULL;
                }
                return g_strdup_printf("; its %u busy threads work on their own pages and need a node each: placing "
                                       "it on %s",
                                       homes->len, to);
        }
        g_autoptr(GArray) pins = g_array_new(FALSE, FALSE, sizeof(NpThreadPin));
        g_autoptr(GPtrArray) cpus = g_ptr_array_new_with_free_func((GDestroyNotify) np_mask_free);
        for (guint i = 0; i < homes->len; i++) {
                const NpThreadHome *h = &g_array_index(homes, NpThreadHome, i);
                g_autoptr(NpMask) one = np_mask_new();
                np_mask_set(one, h->node);
                NpMask *c = np_placement_cpus_for(m, one);
                g_ptr_array_add(cpus, c);
                NpThreadPin x = { h->tid, h->node, c };
                g_array_append_val(pins, x);
        }
        g_autoptr(GError) e = NULL;
        int r = np_backend_pin_threads(m->backend, p->pid, p->starttime, all, pins, &e);
        if (r == -ESRCH)
                return NULL;
        g_autofree char *list = np_policy_homes_list(homes);
        if (r < 0) {
                log_warning("Cannot keep the threads of %d (%s) on their own nodes (%s): %s", p->pid, p->comm, list,
                            e ? e->message : g_strerror(-r));
                if (!np_backend_pins_threads(m->backend, p->pid))
                        return NULL;
        }
        if (group)
                log_info("Keeping the busy threads of %d (%s) on nodes of their own, as the other busy threads of "
                         "its group: %s; the kernel's NUMA balancing moves the pages each works on there",
                         p->pid, p->comm, list);
        else
                log_info("Keeping the busy threads of %d (%s) each on its own node: %s; the kernel's NUMA balancing "
                         "moves the pages each works on there",
                         p->pid, p->comm, list);
        if (p->thread_homes)
                g_array_unref(p->thread_homes);
        p->thread_homes = g_steal_pointer(&homes);
        p->homes_usec = np_now_usec(CLOCK_MONOTONIC);
        p->homes_migrated = p->kernel_migrated_bytes;
        if (!was_placed || p->threads_only) {
                p->threads_only = true;
                /* (a member's nodes are its group's, as for a group placed) */
                g_autoptr(NpMask) target = group && shown ? nodes_of(shown) : np_mask_copy(all);
                np_manager_set_state(m, p, NP_PROC_PLACED, target, np_now_usec(CLOCK_REALTIME));
        }
        return homes_clause(group && shown ? shown : p->thread_homes, group);
}

/* Forget p's homes when its record no longer keeps them (released,
 * confined anew or forgotten since), and end them when it is not
 * eligible. False when there is nothing more to settle. */
static bool homes_eligible(NpManager *m, NpProcess *p, bool eligible) {
        if (!m->backend)
                return false;
        if (p->thread_homes && !np_backend_pins_threads(m->backend, p->pid))
                forget_homes(p);
        if (!eligible) {
                if (p->thread_homes)
                        end_homes(m, p, "the policy no longer keeps it spread over several nodes");
                return false;
        }
        return true;
}

char *np_thread_homes_settle(NpManager *m, NpProcess *p, const NpPolicyNode *nodes, guint n_nodes, const NpMask *prefer,
                             bool eligible) {
        if (!homes_eligible(m, p, eligible))
                return NULL;
        g_autoptr(GArray) faults = NULL;
        guint n;
        g_autofree NpPolicyThread *threads = busy_threads(p, &faults, &n);
        if (!threads)
                return NULL; /* gone: the scan forgets it */
        NpHomesWhy why;
        GArray *homes = np_policy_thread_homes(nodes, n_nodes, prefer, false, p->cpu_per_node, threads, n,
                                               m->config->target_utilization, &why);
        log_homes(p, false, threads, n, nodes, n_nodes, p->cpu_per_node, false, prefer, homes, why);
        return settle_homes(m, p, homes, why, false, NULL);
}

/* p's own pages by node (NpNodeBytes), as numa_maps read them last: all
 * but its shared memory and the page cache it maps (its program and
 * libraries, which every process mapping them shares). NULL when they were
 * not read. */
static GArray *private_pages(const NpProcess *p) {
        if (p->maps_error != 0 || !p->maps.per_node)
                return NULL;
        GArray *pages = g_array_copy(p->maps.per_node);
        for (guint i = 0; p->maps.shm && i < p->maps.shm->len; i++)
                np_node_bytes_subtract(pages, g_array_index(p->maps.shm, NpNumaMapsShm, i).per_node);
        np_node_bytes_subtract(pages, p->maps.file_per_node);
        return pages;
}

/* The homes of the busy threads of `members` (n), the processes of a group,
 * among `among` (NULL: any), none when a thread would need a node outside
 * them; when `confined` (its cpusets hold its threads there), by room among
 * them alone: np_thread_homes_settle_member(). NULL with *why when none.
 * Caller frees. */
static GArray *group_homes(NpManager *m, NpProcess *const *members, guint n, const NpPolicyNode *nodes, guint n_nodes,
                           const NpMask *among, bool confined, NpHomesWhy *why) {
        g_autoptr(GArray) threads = g_array_new(FALSE, FALSE, sizeof(NpPolicyThread));
        g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
        g_autoptr(GArray) own = g_array_new(FALSE, FALSE, sizeof(NpNodeCpu));
        for (guint i = 0; i < n; i++) {
                const NpProcess *p = members[i];
                GArray *faults = NULL;
                if (np_process_read_thread_faults(p, NP_BUSY_THREAD_CPU, &faults) < 0)
                        continue; /* gone: the scan forgets it */
                g_ptr_array_add(keep, faults);
                guint first = threads->len;
                for (guint k = 0; k < faults->len; k++) {
                        const NpThreadFaults *f = &g_array_index(faults, NpThreadFaults, k);
                        NpPolicyThread t = { .tid = f->tid,
                                             .cpu = f->cpu,
                                             .faults = f->faults,
                                             .home = home_of(p, f->tid) };
                        g_array_append_val(threads, t);
                }
                /* busy threads with no faults counted: all they touch is
                 * memory the kernel does not scan (np-policy-threads.h) */
                for (guint k = 0; p->thread_cpu && k < p->thread_cpu->len; k++) {
                        const NpThreadCpu *tc = &g_array_index(p->thread_cpu, NpThreadCpu, k);
                        bool listed = false;
                        for (guint j = 0; j < faults->len && !listed; j++)
                                listed = g_array_index(faults, NpThreadFaults, j).tid == tc->tid;
                        g_autofree char *task = g_strdup_printf("/proc/%d/task/%d", p->pid, (int) tc->tid);
                        if (listed || tc->cpu < NP_BUSY_THREAD_CPU || !g_file_test(task, G_FILE_TEST_EXISTS))
                                continue;
                        NpPolicyThread t = { .tid = tc->tid, .cpu = tc->cpu, .home = home_of(p, tc->tid) };
                        g_array_append_val(threads, t);
                }
                /* its only busy thread, its faults counted: the pages it
                 * works on alone are the process's own (private_pages()),
                 * where numa_maps has them now (its faults were counted
                 * where the pages were then, before the kernel moved them) */
                NpPolicyThread *only =
                        threads->len == first + 1 ? &g_array_index(threads, NpPolicyThread, first) : NULL;
                GArray *pages = only && only->faults ? private_pages(p) : NULL;
                if (pages) {
                        g_ptr_array_add(keep, pages);
                        only->pages = pages;
                }
                np_node_cpu_add(own, p->cpu_per_node);
        }
        GArray *homes =
                np_policy_thread_homes(nodes, n_nodes, among, confined, own, (const NpPolicyThread *) threads->data,
                                       threads->len, m->config->target_utilization, why);
        for (guint i = 0; homes && among && i < homes->len; i++)
                if (!np_mask_test(among, g_array_index(homes, NpThreadHome, i).node)) {
                        g_clear_pointer(&homes, g_array_unref);
                        *why = NP_HOMES_OUTSIDE;
                }
        if (n > 0)
                log_homes(members[0], true, (const NpPolicyThread *) threads->data, threads->len, nodes, n_nodes, own,
                          confined, among, homes, *why);
        return homes;
}

/* A group's homes as worked out this round. */
typedef struct {
        GArray *homes; /* NpThreadHome, NULL = none */
        NpHomesWhy why;
} Worked;

static void worked_free(gpointer data) {
        Worked *w = data;
        if (w->homes)
                g_array_unref(w->homes);
        g_free(w);
}

struct NpGroupHomes {
        GHashTable *of_group; /* const NpGroup * -> Worked * */
};

NpGroupHomes *np_group_homes_new(void) {
        NpGroupHomes *gh = g_new0(NpGroupHomes, 1);
        gh->of_group = g_hash_table_new_full(NULL, NULL, NULL, worked_free);
        return gh;
}

void np_group_homes_free(NpGroupHomes *gh) {
        if (!gh)
                return;
        g_hash_table_unref(gh->of_group);
        g_free(gh);
}

/* g's homes, worked out at its first member asked for them this round:
 * among the nodes it is placed on (`placed_on`), else (NULL) the nodes its
 * members run on. */
static const Worked *worked_for(NpManager *m, NpGroupHomes *gh, const NpGroup *g, const NpPolicyNode *nodes,
                                guint n_nodes, const NpMask *placed_on) {
        Worked *w = g_hash_table_lookup(gh->of_group, g);
        if (w)
                return w;
        g_autoptr(GPtrArray) members = g_ptr_array_new();
        g_autoptr(NpMask) running = np_mask_new();
        for (guint k = 0; k < g->members->len; k++) {
                NpProcess *q = np_manager_process(m, g_array_index(g->members, NpGroupJoin, k).pid);
                if (!q)
                        continue;
                g_ptr_array_add(members, q);
                if (q->running_nodes)
                        np_mask_or(running, q->running_nodes);
        }
        /* (placed: its cpusets' nodes are all its threads may be homed
         * on, and the policy found room there for the group) */
        const NpMask *among = placed_on ? placed_on : np_mask_empty(running) ? NULL : running;
        w = g_new0(Worked, 1);
        w->homes = group_homes(m, (NpProcess *const *) members->pdata, members->len, nodes, n_nodes, among,
                               placed_on != NULL, &w->why);
        g_hash_table_insert(gh->of_group, (gpointer) g, w);
        return w;
}

/* p's part of g's homes (those of its threads), NULL when g has none.
 * Caller frees. */
static GArray *part_of(const Worked *w, const NpProcess *p) {
        if (!w->homes)
                return NULL;
        GArray *mine = g_array_new(FALSE, FALSE, sizeof(NpThreadHome));
        for (guint i = 0; i < w->homes->len; i++) {
                const NpThreadHome *h = &g_array_index(w->homes, NpThreadHome, i);
                if (np_process_has_thread(p, h->tid))
                        g_array_append_val(mine, *h);
        }
        return mine;
}

char *np_thread_homes_settle_member(NpManager *m, NpGroupHomes *gh, const NpGroup *g, NpProcess *p,
                                    const NpPolicyNode *nodes, guint n_nodes, bool placed, bool eligible) {
        if (!homes_eligible(m, p, eligible))
                return NULL;
        const Worked *w = worked_for(m, gh, g, nodes, n_nodes, placed ? p->target : NULL);
        return settle_homes(m, p, part_of(w, p), w->why, true, w->homes);
}

char *np_thread_homes_plan_member(NpManager *m, NpGroupHomes *gh, const NpGroup *g, NpProcess *p,
                                  const NpPolicyNode *nodes, guint n_nodes, const NpMask *target) {
        g_clear_pointer(&p->homes_pending, g_array_unref);
        if (!m->backend)
                return NULL;
        const Worked *w = worked_for(m, gh, g, nodes, n_nodes, target);
        if (!w->homes)
                return NULL; /* a later round gives them, once placed */
        p->homes_pending = part_of(w, p);
        return homes_clause(w->homes, true);
}

void np_thread_homes_after_moves(NpManager *m) {
        GHashTableIter it;
        gpointer v;
        g_autoptr(GPtrArray) ready = g_ptr_array_new();
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcess *p = v;
                if (p->homes_pending && !p->moving_to && !p->finish_deferred)
                        g_ptr_array_add(ready, p);
        }
        for (guint i = 0; i < ready->len; i++) {
                NpProcess *p = ready->pdata[i];
                g_autoptr(GArray) homes = g_steal_pointer(&p->homes_pending);
                /* (one whose move failed is not where they are) */
                if (p->state != NP_PROC_PLACED || !np_process_held(p) || p->threads_only)
                        continue;
                g_free(settle_homes(m, p, g_steal_pointer(&homes), NP_HOMES_GIVEN, true, NULL));
        }
}

bool np_thread_homes_group_pending(NpManager *m, const NpGroup *g, const NpPolicyNode *nodes, guint n_nodes) {
        if (!np_manager_kernel_balancing(m) || g->members->len < 2)
                return false;
        g_autoptr(GPtrArray) members = g_ptr_array_new();
        uint64_t age = 0;
        guint busy = 0, unmeasured = 0;
        for (guint k = 0; k < g->members->len; k++) {
                NpProcess *q = np_manager_process(m, g_array_index(g->members, NpGroupJoin, k).pid);
                if (!q)
                        continue;
                g_ptr_array_add(members, q);
                age = MAX(age, np_process_age_usec(q));
                guint listed = q->thread_cpu ? q->thread_cpu->len : 0;
                for (guint i = 0; i < listed; i++)
                        busy += g_array_index(q->thread_cpu, NpThreadCpu, i).cpu >= NP_BUSY_THREAD_CPU;
                /* (threads read once only have no use over an interval
                 * yet: they may be busy) */
                unmeasured += q->threads > listed ? q->threads - listed : 0;
        }
        if (age >= NP_HOMES_WAIT_USEC)
                return false;
        if (busy < 2)
                return busy + unmeasured >= 2;
        NpHomesWhy why = NP_HOMES_FEW_THREADS;
        g_autoptr(GArray) homes =
                group_homes(m, (NpProcess *const *) members->pdata, members->len, nodes, n_nodes, NULL, false, &why);
        return !homes && why == NP_HOMES_FEW_FAULTS;
}

NpHomesWhy np_thread_homes_workers(NpManager *m, const NpProcess *p) {
        if (!np_manager_kernel_balancing(m) || !p->thread_cpu || !p->running_nodes)
                return NP_HOMES_FEW_THREADS;
        guint busy = 0;
        double busy_cpu = 0.0;
        for (guint i = 0; i < p->thread_cpu->len; i++) {
                double c = g_array_index(p->thread_cpu, NpThreadCpu, i).cpu;
                if (c >= NP_BUSY_THREAD_CPU) {
                        busy++;
                        busy_cpu += c;
                }
        }
        if (busy < 2) {
                /* threads read once only (new since the reading before, as
                 * all of them are when it became significant in this scan)
                 * have no use over an interval yet: they may be busy */
                guint unmeasured = p->threads > p->thread_cpu->len ? p->threads - p->thread_cpu->len : 0;
                return busy + unmeasured >= 2 ? NP_HOMES_UNMEASURED : NP_HOMES_FEW_THREADS;
        }
        /* all on one node: placed whole, unless they used more CPU than
         * that node has (they were there together only for a moment) */
        if (np_mask_weight(p->running_nodes) < 2) {
                g_autoptr(NpMask) cpus = np_topology_cpus_of(m->topology, p->running_nodes);
                if (np_policy_threads_ran_there(busy_cpu, cpus ? np_mask_weight(cpus) : 0))
                        return NP_HOMES_FEW_THREADS;
        }
        g_autoptr(GArray) faults = NULL;
        guint n;
        g_autofree NpPolicyThread *threads = busy_threads(p, &faults, &n);
        if (!threads)
                return NP_HOMES_FEW_THREADS;
        /* (a busy thread without fault lines has none counted yet) */
        return n < busy ? NP_HOMES_FEW_FAULTS : np_policy_threads_private(threads, n);
}

uint64_t np_thread_homes_migrated(const NpProcess *p, uint64_t now_usec, uint64_t *span_usec) {
        if (!p->thread_homes || !p->homes_usec) {
                if (span_usec)
                        *span_usec = 0;
                return UINT64_MAX;
        }
        if (span_usec)
                *span_usec = now_usec > p->homes_usec ? now_usec - p->homes_usec : 0;
        return p->kernel_migrated_bytes - MIN(p->homes_migrated, p->kernel_migrated_bytes);
}
