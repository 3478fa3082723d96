/* Manual actions of the Manager: Place, Forget, Include, Exclude. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "np-bus.h"
#include "np-log.h"
#include "np-manager.h"
#include "np-migrate-plan.h"

/* Look the process up, sampling it now if the scan has not seen it yet. */
static NpProcess *lookup_live(NpManager *m, int pid, GError **error) {
        NpPidStat st;
        if (pid <= 0 || np_read_pid_stat(pid, &st) < 0) {
                g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "No process with PID %d", pid);
                return NULL;
        }
        if ((st.flags & NP_PF_KTHREAD) || st.ppid == 2 || pid == 2) {
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
        /* not sampled yet (or a reused pid): run a scan so it is */
        np_manager_scan(m);
        p = np_manager_process(m, pid);
        if (!p || p->starttime != st.starttime) {
                g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "No process with PID %d", pid);
                return NULL;
        }
        return p;
}

static int check_nodes(NpManager *m, const NpMask *nodes, GError **error) {
        if (np_mask_empty(nodes)) {
                g_set_error(error, NP_ERROR, NP_ERROR_INVALID_ARGS, "The node list is empty");
                return -EINVAL;
        }
        NP_MASK_FOREACH(n, nodes) {
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

typedef struct {
        NpManager *m;
        const GArray *plan;
        NpMigrateResult result;
        int r;
        bool ran;
} PlaceCtx;

static int place_migrate(pid_t pid, void *userdata) {
        PlaceCtx *ctx = userdata;
        ctx->ran = true;
        ctx->r = np_migrate_execute(pid, ctx->plan, ctx->m->config->max_rate, &ctx->result);
        return ctx->r == -ESRCH ? -ESRCH : 0;
}

int np_manager_place(NpManager *m, int pid, const NpMask *nodes, uint64_t *moved_bytes, GError **error) {
        int r = check_nodes(m, nodes, error);
        if (r < 0)
                return r;
        NpProcess *p = lookup_live(m, pid, error);
        if (!p)
                return -ESRCH;
        if (!m->backend) {
                g_set_error(error, NP_ERROR, NP_ERROR_NOT_SUPPORTED,
                            "No placement backend is available on this machine (see the daemon's log)");
                return -EOPNOTSUPP;
        }
        if (!p->mems_allowed || !p->maps.per_node) {
                /* not significant: read its details now */
                NpPidStatus st = { 0 };
                if (np_read_pid_status(pid, &st) < 0 || np_read_numa_maps(pid, &p->maps) < 0) {
                        np_pid_status_clear(&st);
                        g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "Process %d exited", pid);
                        return -ESRCH;
                }
                np_mask_free(p->mems_allowed);
                p->mems_allowed = g_steal_pointer(&st.mems_allowed);
                np_pid_status_clear(&st);
        }

        /* from = where its memory may be now, plus wherever pages really are */
        g_autoptr(NpMask) present = np_numa_maps_nodes(&p->maps);
        g_autoptr(NpMask) from = np_mask_copy(p->mems_allowed);
        np_mask_or(from, present);
        np_mask_and(from, m->topology->online);
        g_autoptr(GArray) plan = np_plan_migration_present(from, nodes, m->config->skip_overlapping_nodes, present);

        g_autoptr(NpMask) cpus = np_topology_cpus_of(m->topology, nodes);
        if (m->config->reserved_cpus) {
                g_autoptr(NpMask) c2 = np_mask_copy(cpus);
                np_mask_andnot(c2, m->config->reserved_cpus);
                if (!np_mask_empty(c2))
                        np_mask_assign(cpus, c2);
                else
                        log_warning("ReservedCPUs= covers every CPU of the target nodes; using them anyway");
        }
        if (np_mask_empty(cpus)) /* memory-only target: let it run anywhere it may now */
                np_mask_assign(cpus, m->topology->all_cpus);

        g_autofree char *from_s = np_mask_format(from);
        g_autofree char *to_s = np_mask_format(nodes);
        PlaceCtx ctx = { .m = m, .plan = plan };
        g_autoptr(GError) e = NULL;
        uint64_t t0 = np_now_usec(CLOCK_MONOTONIC);
        r = np_backend_place(m->backend, pid, p->starttime, nodes, cpus, place_migrate, &ctx, &e);
        uint64_t usec = np_now_usec(CLOCK_MONOTONIC) - t0;

        /* Whatever left a non-target node after the daemon's own plan ended
         * was moved by the kernel while confining (cgroup v2 migrates memory
         * when cpuset.mems narrows; on v1 with memory_migrate=0 this is 0). */
        uint64_t kernel_moved = 0;
        if (ctx.ran && r == 0 && ctx.result.error == 0) {
                NpNumaMaps final = { 0 };
                if (np_read_numa_maps(pid, &final) == 0) {
                        for (guint i = 0; ctx.result.after.per_node && i < ctx.result.after.per_node->len; i++) {
                                NpNodeBytes *nb = &g_array_index(ctx.result.after.per_node, NpNodeBytes, i);
                                uint64_t now = np_numa_maps_node_bytes(&final, nb->node);
                                if (!np_mask_test(nodes, nb->node) && nb->bytes > now)
                                        kernel_moved += nb->bytes - now;
                        }
                        np_numa_maps_clear(&final);
                }
                if (kernel_moved)
                        log_info("Confining %d (%s) made the kernel move %" G_GUINT64_FORMAT
                                 " more bytes off nodes outside %s", pid, p->comm, kernel_moved, to_s);
                ctx.result.moved_bytes += kernel_moved;
        }
        if (ctx.ran) {
                m->migrated_bytes += ctx.result.moved_bytes;
                m->migration_calls += ctx.result.calls;
                m->migration_failed_pages += ctx.result.failed_pages;
                np_bus_manager_changed(m, "MigratedBytes", "MigrationCalls", "MigrationFailedPages", NULL);
        }
        uint64_t moved = ctx.result.moved_bytes;
        np_migrate_result_clear(&ctx.result);

        if (r == -ESRCH || ctx.r == -ESRCH) {
                g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "Process %d exited during placement", pid);
                return -ESRCH;
        }
        if (r < 0) {
                g_set_error(error, NP_ERROR, NP_ERROR_FAILED, "Placing %d (%s) on nodes %s failed: %s", pid,
                            p->comm, to_s, e ? e->message : g_strerror(-r));
                return r;
        }

        p->state = NP_PROC_PINNED;
        np_mask_free(p->target);
        p->target = np_mask_copy(nodes);
        p->last_placed_usec = np_now_usec(CLOCK_REALTIME);
        g_autofree char *f_pid = g_strdup_printf("NP_PID=%d", pid);
        g_autofree char *f_comm = g_strdup_printf("NP_COMM=%s", p->comm);
        g_autofree char *f_from = g_strdup_printf("NP_FROM=%s", from_s);
        g_autofree char *f_to = g_strdup_printf("NP_TO=%s", to_s);
        g_autofree char *f_moved = g_strdup_printf("NP_MOVED_BYTES=%" G_GUINT64_FORMAT, moved);
        const char *fields[] = { f_pid, f_comm, f_from, f_to, f_moved, NULL };
        np_log_fields(LOG_INFO, NP_MESSAGE_PLACED, fields,
                      "Placed %d (%s) on nodes %s (memory from %s): %" G_GUINT64_FORMAT " bytes moved in %.3f s%s",
                      pid, p->comm, to_s, from_s, moved, (double) usec / 1e6,
                      ctx.r < 0 ? " (migration incomplete)" : "");
        np_bus_emit_placed(m, p, from, nodes, moved, usec);
        np_manager_scan(m); /* refresh what the bus shows */
        if (ctx.r < 0) {
                g_set_error(error, NP_ERROR, NP_ERROR_MIGRATION_FAILED,
                            "Process %d is confined to nodes %s but its migration failed: %s", pid, to_s,
                            g_strerror(-ctx.r));
                return ctx.r;
        }
        *moved_bytes = moved;
        return 0;
}

int np_manager_forget(NpManager *m, int pid, GError **error) {
        bool known = g_hash_table_remove(m->included, GINT_TO_POINTER(pid));
        known |= g_hash_table_remove(m->excluded, GINT_TO_POINTER(pid));
        NpProcess *p = np_manager_process(m, pid);
        if (m->backend && np_backend_holds(m->backend, pid)) {
                int r = np_backend_release(m->backend, pid);
                if (r < 0 && r != -ESRCH && r != -ENOENT) {
                        g_set_error(error, NP_ERROR, NP_ERROR_FAILED, "Releasing %d failed: %s", pid, g_strerror(-r));
                        return r;
                }
                known = true;
        }
        if (p && p->state != NP_PROC_OBSERVED) {
                p->state = NP_PROC_OBSERVED;
                g_clear_pointer(&p->target, np_mask_free);
                known = true;
        }
        if (!known && !p) {
                g_set_error(error, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS, "PID %d is neither known nor managed", pid);
                return -ESRCH;
        }
        log_info("Forgot PID %d: released and removed from Include/Exclude", pid);
        np_manager_scan(m);
        return 0;
}

static int mark(NpManager *m, GHashTable *add, GHashTable *drop, int pid, GError **error) {
        NpProcess *p = lookup_live(m, pid, error);
        if (!p)
                return -ESRCH;
        g_hash_table_remove(drop, GINT_TO_POINTER(pid));
        g_hash_table_insert(add, GINT_TO_POINTER(pid), GSIZE_TO_POINTER((gsize) p->starttime));
        np_manager_scan(m);
        return 0;
}

int np_manager_include(NpManager *m, int pid, GError **error) {
        int r = mark(m, m->included, m->excluded, pid, error);
        if (r == 0)
                log_info("PID %d included: it is a candidate whatever its size", pid);
        return r;
}

int np_manager_exclude(NpManager *m, int pid, GError **error) {
        int r = mark(m, m->excluded, m->included, pid, error);
        if (r == 0)
                log_info("PID %d excluded: it will not be placed", pid);
        return r;
}
