/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one placement path: see np-placement.h. */
#include "np-placement.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "np-classify.h"
#include "np-log.h"
#include "np-migrate-plan.h"
#include "np-policy.h"
#include "np-numa-maps.h"
#include "np-sample.h"
#include "np-scan.h"

typedef struct {
        NpManager *m;
        int pid;
        uint64_t starttime;
        char comm[NP_COMM_MAX];
        NpPlaceReason reason;
        NpMask *nodes;
        NpMask *from; /* set by prepare */
        GError *error; /* prepare's */
        uint64_t t0; /* CLOCK_MONOTONIC at prepare */
        NpPlaceDoneFn done;
        void *userdata;
        bool early; /* confined when queued (np_placement_submit()); prepare confines again */
        bool memory_only; /* its memory only (np_placement_submit_memory()) */
        NpMask *runs_on; /* memory_only: where its threads may run, NULL = every CPU */
} PlaceReq;

static void req_free(PlaceReq *q) {
        if (!q)
                return;
        np_mask_free(q->nodes);
        np_mask_free(q->from);
        np_mask_free(q->runs_on);
        g_clear_error(&q->error);
        g_free(q);
}

static int check_nodes(NpManager *m, const NpMask *nodes, GError **error) {
        if (np_mask_empty(nodes)) {
                g_set_error(error, NP_ERROR, NP_ERROR_INVALID_ARGS, "The node list is empty");
                return -EINVAL;
        }
        NP_MASK_FOREACH (n, nodes) {
                if (!np_mask_test(m->topology->online, (unsigned) n)) {
                        g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_NODE, "Node %d is not an online NUMA node", n);
                        return -ENOENT;
                }
                if (!np_mask_test(m->topology->with_memory, (unsigned) n)) {
                        g_set_error(error, NP_ERROR, NP_ERROR_INVALID_ARGS,
                                    "Node %d has no memory: a process cannot be placed on it", n);
                        return -EINVAL;
                }
        }
        return 0;
}

/* cpus less ReservedCPUs=, unless that leaves none: then false, cpus as
 * they were. */
static bool drop_reserved(NpManager *m, NpMask *cpus) {
        if (!m->config->reserved_cpus || np_mask_empty(cpus))
                return true;
        g_autoptr(NpMask) c2 = np_mask_copy(cpus);
        np_mask_andnot(c2, m->config->reserved_cpus);
        if (np_mask_empty(c2))
                return false;
        np_mask_assign(cpus, c2);
        return true;
}

NpMask *np_placement_cpus_for(NpManager *m, const NpMask *nodes) {
        NpMask *cpus = np_topology_cpus_of(m->topology, nodes);
        if (!drop_reserved(m, cpus))
                log_warning("ReservedCPUs= covers every CPU of the target nodes; using them anyway");
        if (np_mask_empty(cpus)) /* memory-only target: let it run anywhere it may now */
                np_mask_assign(cpus, m->topology->all_cpus);
        return cpus;
}

/* The address ranges of p's mappings of its group's own shared memory
 * (p->group_objects, np-decide.c): NpMigrateRange, or NULL when none. */
static GArray *group_ranges(const NpProcess *p) {
        GArray *out = NULL;
        for (guint i = 0; p->group_objects && p->maps.shm && i < p->maps.shm->len; i++) {
                const NpNumaMapsShm *sh = &g_array_index(p->maps.shm, NpNumaMapsShm, i);
                const NpShmap *map = np_process_shmap_of(p, sh);
                if (!map)
                        continue;
                for (guint k = 0; k < p->group_objects->len; k++) {
                        const NpSharedId *id = &g_array_index(p->group_objects, NpSharedId, k);
                        NpSharedId mid = np_shared_id(map->dev_major, map->dev_minor, map->inode);
                        if (!np_shared_id_equal(id, &mid))
                                continue;
                        if (!out)
                                out = g_array_new(FALSE, FALSE, sizeof(NpMigrateRange));
                        NpMigrateRange rg = { .start = map->start, .end = map->end, .page_bytes = sh->page_bytes };
                        g_array_append_val(out, rg);
                        break;
                }
        }
        return out;
}

/* The bytes of p's pages (not hugetlb: those come from their pools) that a
 * move to `nodes` brings in, and what those nodes have free for them now:
 * MemFree less NP_POLICY_MEM_RESERVE of each. 0, or a negative errno from
 * reading a node's meminfo. */
static int room_now(NpManager *m, const NpProcess *p, const NpMask *nodes, uint64_t *incoming, uint64_t *free) {
        *incoming = *free = 0;
        const GArray *pn = p->maps.per_node;
        for (guint i = 0; pn && i < pn->len; i++) {
                const NpNodeBytes *nb = &g_array_index(pn, NpNodeBytes, i);
                if (!np_mask_test(nodes, nb->node))
                        *incoming += nb->bytes;
        }
        const GArray *hp = p->maps.huge_per_node;
        for (guint i = 0; hp && i < hp->len; i++) {
                const NpHugeBytes *hb = &g_array_index(hp, NpHugeBytes, i);
                if (!np_mask_test(nodes, hb->node))
                        *incoming -= MIN(*incoming, hb->bytes);
        }
        NP_MASK_FOREACH (n, nodes) {
                const NpNode *node = np_topology_node(m->topology, (unsigned) n);
                uint64_t f, total;
                int r = node ? np_sample_mem_free_now(m->topology, node, &f, &total) : -ENOENT;
                if (r < 0)
                        return r;
                uint64_t keep = (uint64_t) (NP_POLICY_MEM_RESERVE * (double) total);
                *free += f - MIN(f, keep);
        }
        return 0;
}

NpMask *np_placement_memory_cpus(NpManager *m, const NpMask *runs_on) {
        if (runs_on)
                return np_placement_cpus_for(m, runs_on);
        NpMask *cpus = np_mask_copy(m->topology->all_cpus);
        drop_reserved(m, cpus); /* (ReservedCPUs= covering every CPU: all of them) */
        return cpus;
}

/* The CPUs q's process is confined to: its nodes', or for a hold of its
 * memory only those it may run on. */
static NpMask *req_cpus(NpManager *m, const PlaceReq *q) {
        return q->memory_only ? np_placement_memory_cpus(m, q->runs_on) : np_placement_cpus_for(m, q->nodes);
}

/* Confine q's process as q says (its memory only, or whole). */
static int req_confine(NpManager *m, const PlaceReq *q, const NpMask *cpus, GError **error) {
        return q->memory_only
                ? np_backend_confine_memory(m->backend, q->pid, q->starttime, q->nodes, q->runs_on, cpus, error)
                : np_backend_confine(m->backend, q->pid, q->starttime, q->nodes, cpus, error);
}

/* ---- prepare: on the main loop, when the move reaches the worker -------- */

static int prepare(NpMove *mv, void *userdata) {
        NpManager *m = userdata;
        PlaceReq *q = mv->data;
        g_autoptr(GError) e = NULL;

        q->t0 = np_now_usec(CLOCK_MONOTONIC);
        NpProcess *p = np_manager_process(m, q->pid);
        /* before a move, numa_maps now: the plan needs where its pages are;
         * its resident memory just before, to know whether it grew by the
         * time it is confined (below) */
        NpPidStat st0 = { 0 };
        if (!p || p->starttime != q->starttime || np_read_pid_stat(q->pid, &st0) < 0 || st0.starttime != q->starttime ||
            np_process_refresh(p, m->topology, m->proc_table, NP_MAPS_NOW) < 0) {
                g_set_error(&q->error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "Process %d exited before it was placed",
                            q->pid);
                return -ESRCH;
        }
        /* the policy decided on details that may be a few scans old (a
         * process that did not run is not re-read every scan): one narrowed
         * by someone else since is left alone */
        if (q->reason != NP_PLACE_MANUAL && !q->early && np_classify_foreign(m, p)) {
                g_set_error(&q->error, NP_ERROR, NP_ERROR_FAILED,
                            "Process %d (%s) was confined by someone else since the decision; left alone", q->pid,
                            p->comm);
                return -EPERM;
        }
        if (!m->backend) {
                g_set_error(&q->error, NP_ERROR, NP_ERROR_NOT_SUPPORTED, "No placement backend is available");
                return -EOPNOTSUPP;
        }
        /* The policy planned the move on the room its nodes had at the
         * scan; the moves queued before it, and everything else that runs,
         * may have taken that room since. Confined to nodes without it, the
         * process's next allocation would wake the kernel's cpuset OOM
         * killer, which takes whichever process has the most memory there:
         * such a move waits for the policy's next look instead. A Place()
         * call is the operator's: it goes ahead. */
        uint64_t incoming, free;
        if (q->reason != NP_PLACE_MANUAL && room_now(m, p, q->nodes, &incoming, &free) == 0 && incoming > free) {
                g_autofree char *to_s = np_mask_format(q->nodes);
                g_set_error(&q->error, NP_ERROR, NP_ERROR_FAILED,
                            "Not moving %d (%s) to nodes %s now: %.1f MiB of its pages would come in and %.1f MiB "
                            "are free there (less %.0f%% kept for the kernel); the policy decides it again at its "
                            "next scan",
                            q->pid, p->comm, to_s, (double) incoming / (1024.0 * 1024.0),
                            (double) free / (1024.0 * 1024.0), NP_POLICY_MEM_RESERVE * 100.0);
                return -ENOSPC;
        }

        /* from = where its memory may be now, plus wherever pages really are */
        g_autoptr(NpMask) present = np_numa_maps_nodes(&p->maps);
        q->from = p->mems_allowed ? np_mask_copy(p->mems_allowed) : np_mask_copy(m->topology->with_memory);
        np_mask_or(q->from, present);
        np_mask_and(q->from, m->topology->online);
        mv->plan = np_plan_migration_present(q->from, q->nodes, m->config->skip_overlapping_nodes, present);
        mv->max_rate = m->config->max_rate;
        mv->move_shared = m->config->move_shared_pages;
        if (!mv->move_shared)
                mv->shared = group_ranges(p);

        g_autoptr(NpMask) cpus = req_cpus(m, q);
        int r = req_confine(m, q, cpus, &e);
        if (r < 0) {
                g_autofree char *to_s = np_mask_format(q->nodes);
                if (r == -ESRCH)
                        g_set_error(&q->error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "Process %d exited during placement",
                                    q->pid);
                else
                        g_set_error(&q->error, NP_ERROR, NP_ERROR_FAILED, "Placing %d (%s) on nodes %s failed: %s",
                                    q->pid, q->comm, to_s, e ? e->message : g_strerror(-r));
                return r;
        }
        mv->cpus = g_steal_pointer(&cpus);

        /* The worker starts from this read rather than reading the same
         * numa_maps again (for a 320 MB process under TCG each read costs
         * about 0.1 s of the daemon's CPU), unless the process faulted pages
         * in since it was taken: those may sit outside the target, the plan
         * moves them, and MigratedBytes would miss them. Pages faulted after
         * the confinement land on the target's nodes, so the worker's own
         * read, after it, counts right. */
        NpPidStat st1 = { 0 };
        if (np_read_pid_stat(q->pid, &st1) == 0 && st1.starttime == q->starttime && st1.rss_pages == st0.rss_pages) {
                np_numa_maps_copy(&p->maps, &mv->before);
                mv->have_before = true;
        } else
                log_debug("pid %d: resident memory changed while it was confined; the mover reads numa_maps again",
                          q->pid);
        return 0;
}

/* ---- done: on the main loop, when the worker has finished --------------- */

/* Bytes that left non-target nodes after the daemon's own plan ended were
 * moved by the kernel while confining (cgroup v2 migrates memory when
 * cpuset.mems narrows; on v1 with memory_migrate=0 this is 0). The read
 * this takes then replaces the mover's "after": it is where the pages are
 * now, and what the policy must see (with the mover's, pages the kernel
 * had just moved onto the target counted as someone else's there, and the
 * node looked crowded by them). */
static uint64_t kernel_moved_bytes(NpMove *mv, const NpMask *nodes) {
        NpNumaMaps final = { 0 };
        uint64_t moved = 0;
        const GArray *after = mv->result.after.per_node;

        if (!after)
                return 0;
        /* nothing was left outside the target after the daemon's own plan:
         * the kernel had nothing to move, and numa_maps need not be read */
        bool outside = false;
        for (guint i = 0; i < after->len && !outside; i++) {
                const NpNodeBytes *nb = &g_array_index(after, NpNodeBytes, i);
                outside = !np_mask_test(nodes, nb->node) && nb->bytes > 0;
        }
        if (!outside)
                return 0;
        if (np_read_numa_maps(mv->pid, &final) < 0) {
                np_numa_maps_clear(&final);
                return 0;
        }
        for (guint i = 0; i < after->len; i++) {
                const NpNodeBytes *nb = &g_array_index(after, NpNodeBytes, i);
                uint64_t now = np_numa_maps_node_bytes(&final, nb->node);
                if (!np_mask_test(nodes, nb->node) && nb->bytes > now)
                        moved += nb->bytes - now;
        }
        np_numa_maps_clear(&mv->result.after);
        mv->result.after = final;
        return moved;
}

static void account(NpManager *m, const NpMove *mv, uint64_t moved) {
        np_manager_add_migration(m, moved, mv->result.calls,
                                 mv->result.failed_bytes / (uint64_t) sysconf(_SC_PAGESIZE));
}

/* The process is put back (or gone): it is no longer held. */
static void mark_released(NpManager *m, PlaceReq *q) {
        NpProcess *p = np_manager_process(m, q->pid);
        if (!p || p->starttime != q->starttime)
                return;
        np_manager_set_state(m, p, np_classify_excluded(m, p) ? NP_PROC_EXCLUDED : NP_PROC_OBSERVED, NULL,
                             p->last_placed_usec);
}

/* Bytes the move left outside `nodes` without failing on them: with
 * MoveSharedPages=no, the pages other processes map too, which
 * migrate_pages(2) passes over. The pages it failed on (no room, busy) are
 * not counted: a later move may take them. */
static uint64_t stuck_bytes(const NpMove *mv, const NpMask *nodes) {
        const NpNumaMaps *after = &mv->result.after;
        uint64_t on = 0;

        if (!after->per_node)
                return 0;
        NP_MASK_FOREACH (n, nodes)
                on += np_numa_maps_node_bytes(after, (unsigned) n);
        uint64_t outside = after->total_bytes - MIN(on, after->total_bytes);
        uint64_t failed = mv->result.failed_bytes;
        return outside - MIN(failed, outside);
}

static void record_placed(NpManager *m, PlaceReq *q, uint64_t moved, uint64_t usec, uint64_t cpu_usec, bool incomplete,
                          uint64_t stuck, uint64_t failed, bool full, NpNumaMaps *after) {
        NpProcess *p = np_manager_process(m, q->pid);
        g_autofree char *from_s = np_mask_format(q->from);
        g_autofree char *to_s = np_mask_format(q->nodes);

        if (p && p->starttime == q->starttime) {
                /* what it left: its nodes if it was held, else where it ran */
                np_mask_free(p->left);
                p->left = np_process_held(p) && p->target ? np_mask_copy(p->target)
                        : p->running_nodes                ? np_mask_copy(p->running_nodes)
                                                          : NULL;
                p->moved_usec = np_now_usec(CLOCK_MONOTONIC);
                np_manager_set_state(m, p, q->reason == NP_PLACE_MANUAL ? NP_PROC_PINNED : NP_PROC_PLACED, q->nodes,
                                     np_now_usec(CLOCK_REALTIME));
                p->memory_only = q->memory_only;
                /* confining every thread ended any thread homes */
                g_clear_pointer(&p->thread_homes, g_array_unref);
                p->threads_only = false;
                np_mask_free(p->runs_on);
                p->runs_on = q->memory_only && q->runs_on ? np_mask_copy(q->runs_on) : NULL;
                p->stuck_bytes = stuck;
                p->failed_bytes = failed;
                p->failed_full = full;
                p->failed_moves = failed ? p->failed_moves + 1 : 0;
                /* where its pages are now: the mover's own read after the move
                 * (np-maps-refresh.h), then the rest of its details */
                np_process_take_maps(p, after);
                (void) np_process_refresh(p, m->topology, m->proc_table, m->config->locality_refresh_scans);
                m->held_last++; /* the cheap tier reads its stat from now on */
                np_process_set_significant(p, true);
                g_strlcpy(q->comm, p->comm, sizeof q->comm);
        }
        m->placements[q->reason]++;

        g_autofree char *f_pid = g_strdup_printf("PID=%d", q->pid);
        g_autofree char *f_comm = g_strdup_printf("COMM=%s", q->comm);
        g_autofree char *f_from = g_strdup_printf("FROM=%s", from_s);
        g_autofree char *f_to = g_strdup_printf("TO=%s", to_s);
        g_autofree char *f_moved = g_strdup_printf("BYTES=%" G_GUINT64_FORMAT, moved);
        g_autofree char *f_usec = g_strdup_printf("USEC=%" G_GUINT64_FORMAT, usec);
        g_autofree char *f_cpu = g_strdup_printf("CPU_USEC=%" G_GUINT64_FORMAT, cpu_usec);
        g_autofree char *f_reason = g_strdup_printf("REASON=%s", np_place_reason_to_string(q->reason));
        const char *fields[] = { f_pid, f_comm, f_from, f_to, f_moved, f_usec, f_cpu, f_reason, NULL };
        g_autofree char *tail = incomplete ? g_strdup(" (migration incomplete)")
                : failed ? g_strdup_printf("; %.1f MiB could not move (%s)", (double) failed / (1 << 20),
                                           full ? "no free memory there" : "pages in use")
                         : g_strdup("");
        np_log_fields(LOG_INFO, NP_MESSAGE_PLACED, fields,
                      "Placed %d (%s) on nodes %s (memory from %s, %s): %" G_GUINT64_FORMAT
                      " bytes moved in %.3f s (%.3f s of the daemon's CPU)%s",
                      q->pid, q->comm, to_s, from_s, np_place_reason_to_string(q->reason), moved, (double) usec / 1e6,
                      (double) cpu_usec / 1e6, tail);

        NpPlacedEvent *ev = g_new0(NpPlacedEvent, 1);
        ev->pid = q->pid;
        g_strlcpy(ev->comm, q->comm, sizeof ev->comm);
        ev->from = np_mask_copy(q->from);
        ev->to = np_mask_copy(q->nodes);
        ev->moved_bytes = moved;
        ev->usec = usec;
        g_queue_push_tail(&m->changes.placed, ev);
}

static void clear_moving(NpManager *m, PlaceReq *q) {
        NpProcess *p = np_manager_process(m, q->pid);
        if (p && p->starttime == q->starttime)
                g_clear_pointer(&p->moving_to, np_mask_free);
}

/* ---- groups of several processes ---------------------------------------
 * finish() completes a member's confinement, and may make the kernel move
 * pages: on cgroup v2 narrowing cpuset.mems (cpuset) or setting a unit's
 * AllowedMemoryNodes (systemd, for every process of the unit at once) moves
 * the memory of the processes concerned, in the kernel's order. While
 * another member of the group waits for its move, the daemon's own plan is
 * to move that one too: the members' confinements are completed after the
 * last of their moves, not after each. */

static bool same_group(const NpProcess *p, const NpProcess *o) {
        return o != p && p->group && p->group[0] && g_strcmp0(o->group, p->group) == 0;
}

static bool group_member_moving(NpManager *m, const NpProcess *p) {
        if (!p || !p->group || !p->group[0])
                return false;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v))
                if (same_group(p, v) && ((NpProcess *) v)->moving_to)
                        return true;
        return false;
}

/* After a move ended (however): finish each placed process that waited
 * for the other members of its group, once none of them is moving (its
 * group as last decided: one that changed group is not left waiting). */
static void finish_waiting(NpManager *m) {
        g_autoptr(GArray) ready = g_array_new(FALSE, FALSE, sizeof(int));
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const NpProcess *o = v;
                if (o->finish_deferred && !o->moving_to && !group_member_moving(m, o))
                        g_array_append_val(ready, o->pid);
        }
        for (guint i = 0; i < ready->len; i++) {
                NpProcess *o = np_manager_process(m, g_array_index(ready, int, i));
                if (!o)
                        continue;
                o->finish_deferred = false;
                if (!np_process_held(o))
                        continue;
                g_autoptr(GError) e = NULL;
                if (np_backend_finish(m->backend, o->pid, o->starttime, &e) < 0 && e)
                        log_warning("Finishing the placement of %d (%s), which waited for the other processes "
                                    "of its group %s: %s",
                                    o->pid, o->comm, o->group ? o->group : "", e->message);
                /* on cgroup v2 the kernel may have moved its pages just now:
                 * the mover's read is no longer where they are */
                np_maps_age_invalidate(&o->maps_age);
        }
}

static void done(NpMove *mv, void *userdata) {
        NpManager *m = userdata;
        PlaceReq *q = mv->data;
        g_autoptr(GError) e = NULL;
        g_autoptr(GError) fe = NULL;
        uint64_t moved = 0, usec;
        int r;

        if (!mv->started) {
                /* prepare failed (and undid its part), or cancelled while
                 * queued: a confinement made when it was queued goes too */
                if (q->early && m->backend && np_backend_holds(m->backend, q->pid))
                        (void) np_backend_release(m->backend, q->pid);
                if (q->error)
                        e = g_steal_pointer(&q->error);
                else if (mv->r == -ECANCELED)
                        g_set_error(&e, NP_ERROR, NP_ERROR_CANCELLED, "The placement of %d was cancelled", q->pid);
                else
                        g_set_error(&e, NP_ERROR, NP_ERROR_FAILED, "The placement of %d failed: %s", q->pid,
                                    g_strerror(-mv->r));
                goto out;
        }

        moved = mv->result.moved_bytes;
        usec = np_now_usec(CLOCK_MONOTONIC) - q->t0;
        if (mv->r == -ESRCH || mv->r == -ECANCELED) {
                (void) np_backend_abort(m->backend, q->pid, q->starttime);
                account(m, mv, moved);
                mark_released(m, q);
                if (mv->r == -ESRCH) {
                        g_autofree char *to_s = np_mask_format(q->nodes);
                        log_info("Process %d (%s) ended during its move to %s (exited, or killed), after "
                                 "%" G_GUINT64_FORMAT " bytes had moved; what held it is put back",
                                 q->pid, q->comm, to_s, moved);
                        g_set_error(&e, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "Process %d exited during placement",
                                    q->pid);
                } else
                        g_set_error(&e, NP_ERROR, NP_ERROR_CANCELLED,
                                    "The placement of %d was cancelled after %" G_GUINT64_FORMAT
                                    " bytes had moved; it is released (pages already moved stay where they are)",
                                    q->pid, moved);
                goto out;
        }

        NpProcess *self = np_manager_process(m, q->pid);
        if (self && self->starttime != q->starttime)
                self = NULL;
        bool defer = group_member_moving(m, self);
        r = defer ? 0 : np_backend_finish(m->backend, q->pid, q->starttime, &fe);
        if (defer)
                log_debug("pid %d: another process of its group %s is still to be moved: its confinement is "
                          "completed after that one's move",
                          q->pid, self->group);
        if (r == 0 && !defer) {
                uint64_t k = kernel_moved_bytes(mv, q->nodes);
                if (k) {
                        g_autofree char *to_s = np_mask_format(q->nodes);
                        log_info("Confining %d (%s) made the kernel move %" G_GUINT64_FORMAT
                                 " more bytes off nodes outside %s",
                                 q->pid, q->comm, k, to_s);
                }
                moved += k;
                /* what the kernel moved then is not left behind: the pages
                 * a full node refused may be among them (cgroup v2) */
                mv->result.failed_bytes -= MIN(k, mv->result.failed_bytes);
        }
        account(m, mv, moved);
        if (r < 0) {
                mark_released(m, q);
                if (r == -ESRCH)
                        g_set_error(&e, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "Process %d exited during placement",
                                    q->pid);
                else
                        g_set_error(&e, NP_ERROR, NP_ERROR_FAILED, "Placing %d (%s) failed: %s", q->pid, q->comm,
                                    fe ? fe->message : g_strerror(-r));
                goto out;
        }
        /* a migration that stopped early left the rest of its plan undone, not
         * passed over: nothing is stuck, the policy moves the rest */
        record_placed(m, q, moved, usec, mv->cpu_usec, mv->r < 0, mv->r < 0 ? 0 : stuck_bytes(mv, q->nodes),
                      mv->result.failed_bytes, mv->result.full != NULL, &mv->result.after);
        if (self)
                self->finish_deferred = defer;
        if (mv->r < 0) {
                g_autofree char *to_s = np_mask_format(q->nodes);
                g_set_error(&e, NP_ERROR, NP_ERROR_MIGRATION_FAILED,
                            "Process %d is confined to nodes %s but its migration failed: %s", q->pid, to_s,
                            g_strerror(-mv->r));
        }
out:
        clear_moving(m, q);
        finish_waiting(m);
        if (q->done)
                q->done(m, q->pid, e ? 0 : moved, e, q->userdata);
        np_move_free(mv);
}

/* May q's move start beside the moves running now (to other nodes: the
 * mover sees to that)? Not under MaxRate=, which is the daemon's whole
 * rate; and only when its nodes have the room for its pages now: the
 * policy may have planned it on the room the moves before it leave there,
 * and those may still be running. Otherwise it waits for them to end. */
static bool may_start(const NpMove *mv, void *userdata) {
        NpManager *m = userdata;
        const PlaceReq *q = mv->data;
        if (m->config->max_rate)
                return false;
        NpProcess *p = np_manager_process(m, q->pid);
        if (!p || p->starttime != q->starttime)
                return true; /* gone: prepare() says so at once */
        uint64_t incoming, free;
        return room_now(m, p, q->nodes, &incoming, &free) == 0 && incoming <= free;
}

/* ---- the API ------------------------------------------------------------ */

int np_placement_setup(NpManager *m, GError **error) {
        g_return_val_if_fail(m->event, -EINVAL);
        if (m->mover)
                return 0;
        m->mover = np_mover_new(m->event, prepare, may_start, done, m, error);
        return m->mover ? 0 : -EIO;
}

void np_placement_kernel_moved(pid_t pid, void *userdata) {
        NpProcess *p = np_manager_process(userdata, (int) pid);
        if (p)
                np_maps_age_invalidate(&p->maps_age);
}

void np_placement_shutdown(NpManager *m) {
        if (m->mover)
                np_mover_stop(m->mover);
}

static int submit(NpManager *m, int pid, const NpMask *nodes, bool memory_only, const NpMask *runs_on,
                  NpPlaceReason reason, NpPlaceDoneFn done_fn, void *userdata, GError **error) {
        int r = check_nodes(m, nodes, error);
        if (r < 0)
                return r;
        NpProcess *p = np_scan_pid(m, pid, error);
        if (!p)
                return -ESRCH;
        if (!m->backend || !m->mover) {
                g_set_error(error, NP_ERROR, NP_ERROR_NOT_SUPPORTED,
                            "No placement backend is available on this machine (see the daemon's log)");
                return -EOPNOTSUPP;
        }
        if (memory_only && !np_backend_holds_memory(m->backend)) {
                g_set_error(error, NP_ERROR, NP_ERROR_NOT_SUPPORTED,
                            "The %s backend cannot hold a process's memory to nodes", np_backend_name(m->backend));
                return -EOPNOTSUPP;
        }
        if (np_mover_find(m->mover, pid)) {
                g_set_error(error, NP_ERROR, NP_ERROR_MOVE_IN_PROGRESS,
                            "A move of process %d (%s) is already %s; wait for it to end", pid, p->comm,
                            np_mover_running(m->mover, pid) ? "running" : "queued");
                return -EBUSY;
        }

        PlaceReq *q = g_new0(PlaceReq, 1);
        q->m = m;
        q->pid = pid;
        q->starttime = p->starttime;
        g_strlcpy(q->comm, p->comm, sizeof q->comm);
        q->reason = reason;
        q->nodes = np_mask_copy(nodes);
        q->memory_only = memory_only;
        q->runs_on = memory_only && runs_on ? np_mask_copy(runs_on) : NULL;
        q->done = done_fn;
        q->userdata = userdata;
        np_mask_free(p->moving_to);
        p->moving_to = np_mask_copy(nodes);
        uint64_t starttime = p->starttime;
        NpMove *mv = np_move_new(pid, starttime, m->config->max_rate, q, (GDestroyNotify) req_free);
        mv->nodes = np_mask_copy(nodes);
        r = np_mover_submit(m->mover, mv);
        g_assert(r == 0); /* no move of pid was in flight: checked above */

        /* (a move that ended at once, prepare() failing, took q with it) */
        const NpMove *queued = np_mover_find(m->mover, pid);
        p = np_manager_process(m, pid);
        uint64_t incoming, free;
        if (queued && !np_mover_running(m->mover, pid) && p && p->starttime == starttime &&
            np_manager_kernel_balancing(m) && room_now(m, p, nodes, &incoming, &free) == 0 && incoming <= free) {
                /* queued behind other moves: confined now, so that its
                 * threads stay on its nodes meanwhile and the kernel's
                 * balancing moves its pages there, not after threads the
                 * scheduler takes elsewhere; its pages move when its turn
                 * comes. Not when its nodes have the room for it only
                 * after the moves before it (its allocations there would
                 * find none). */
                q = queued->data;
                g_autoptr(NpMask) cpus = req_cpus(m, q);
                g_autoptr(GError) ce = NULL;
                if (req_confine(m, q, cpus, &ce) == 0) {
                        q->early = true;
                        log_debug("pid %d: confined while its move waits behind others", pid);
                } else
                        log_debug("pid %d: not confined while its move waits: %s", pid,
                                  ce ? ce->message : "unknown error");
        }
        return 0;
}

int np_placement_submit(NpManager *m, int pid, const NpMask *nodes, NpPlaceReason reason, NpPlaceDoneFn done_fn,
                        void *userdata, GError **error) {
        return submit(m, pid, nodes, false, NULL, reason, done_fn, userdata, error);
}

int np_placement_submit_memory(NpManager *m, int pid, const NpMask *nodes, const NpMask *runs_on, NpPlaceReason reason,
                               NpPlaceDoneFn done_fn, void *userdata, GError **error) {
        return submit(m, pid, nodes, true, runs_on, reason, done_fn, userdata, error);
}
