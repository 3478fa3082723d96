/*
 * Confinement backends, the common part: creation and the Backend=auto
 * choice, crash recovery from the state file, dispatch of place/release to
 * the cpuset or affinity mechanism, and the /proc helpers they share.
 * Contract: np-backend.h; internals: np-backend-private.h.
 */
#include "np-backend.h"

#include <dirent.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "np-backend-private.h"
#include "np-log.h"
#include "np-state.h"

/* ---- /proc helpers ---- */

int np_proc_starttime(pid_t pid, uint64_t *starttime) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
        g_autofree char *buf = NULL;
        g_auto(GStrv) fields = NULL;
        const char *rp;

        if (pid <= 0)
                return -ESRCH;
        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return -ESRCH;
        /* comm may hold spaces and parentheses: fields resume after the last ')'. */
        rp = strrchr(buf, ')');
        if (!rp || rp[1] != ' ')
                return -ESRCH;
        fields = g_strsplit(rp + 2, " ", 0);
        /* fields[0] is field 3 (state), so field 22 is fields[19]. */
        if (g_strv_length(fields) < 20)
                return -ESRCH;
        if (fields[0][0] == 'Z' || fields[0][0] == 'X') {
                /* A zombie leader whose other threads still run is alive. */
                g_autoptr(GArray) tids = NULL;
                if (fields[0][0] == 'X' || np_proc_tids(pid, &tids) < 0 || tids->len < 2)
                        return -ESRCH;
        }
        *starttime = g_ascii_strtoull(fields[19], NULL, 10);
        return 0;
}

bool np_proc_alive(pid_t pid, uint64_t starttime) {
        uint64_t st;

        return np_proc_starttime(pid, &st) == 0 && st == starttime;
}

static gint pid_cmp(gconstpointer a, gconstpointer b) {
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

        return (x > y) - (x < y);
}

int np_proc_tids(pid_t pid, GArray **out) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task", (int)pid);
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(pid_t));
        struct dirent *de;
        DIR *d;

        d = opendir(path);
        if (!d)
                return -ESRCH;
        while ((de = readdir(d))) {
                char *end;
                long v = strtol(de->d_name, &end, 10);
                if (*end || v <= 0)
                        continue;
                pid_t tid = (pid_t)v;
                g_array_append_val(a, tid);
        }
        closedir(d);
        if (a->len == 0)
                return -ESRCH;
        g_array_sort(a, pid_cmp);
        *out = g_steal_pointer(&a);
        return 0;
}

char *np_proc_comm(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/comm", (int)pid);
        char *buf = NULL;

        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return g_strdup("?");
        g_strchomp(buf);
        return buf;
}

int np_thread_get_affinity(pid_t tid, NpMask **out) {
        /* Grow the set until the kernel's cpumask fits (EINVAL = too small). */
        for (size_t ncpus = 1024; ncpus <= NP_MASK_MAX_ID; ncpus *= 2) {
                size_t size = CPU_ALLOC_SIZE(ncpus);
                cpu_set_t *set = CPU_ALLOC(ncpus);
                NpMask *m;

                if (!set)
                        return -ENOMEM;
                if (sched_getaffinity(tid, size, set) < 0) {
                        int r = -errno;
                        CPU_FREE(set);
                        if (r == -EINVAL)
                                continue;
                        return r;
                }
                m = np_mask_new();
                for (size_t c = 0; c < ncpus; c++)
                        if (CPU_ISSET_S(c, size, set))
                                np_mask_set(m, (unsigned)c);
                CPU_FREE(set);
                *out = m;
                return 0;
        }
        return -EINVAL;
}

int np_thread_set_affinity(pid_t tid, const NpMask *cpus) {
        unsigned long nbits = 0;
        g_autofree unsigned long *bits = np_mask_to_ulongs(cpus, 64, &nbits);

        /* A cpu_set_t is an array of unsigned long in the same bit order. */
        if (sched_setaffinity(tid, nbits / 8, (cpu_set_t *)bits) < 0)
                return -errno;
        return 0;
}

/* ---- state ---- */

int np_backend_save_state(NpBackend *b, GError **error) {
        g_autoptr(GError) e = NULL;
        int r;

        if (b->mode != NP_CGROUP_NONE && b->kind == NP_BACKEND_CPUSET)
                np_state_set_hierarchy(b->state, b->hierarchy, b->mode == NP_CGROUP_V2 ? "v2" : "v1");
        r = np_state_save(b->state, &e);
        if (r < 0) {
                log_error("Cannot write state file %s: %s", b->state_file, e->message);
                if (error)
                        g_propagate_error(error, g_steal_pointer(&e));
        }
        return r;
}

/* ---- creation ---- */

static void backend_free_members(NpBackend *b) {
        g_free(b->runtime_dir);
        g_free(b->state_file);
        np_state_free(b->state);
        g_free(b->mount);
        g_free(b->cgroup_name);
        g_free(b->hierarchy);
}

void np_backend_free(NpBackend *b) {
        if (!b)
                return;
        backend_free_members(b);
        g_free(b);
}

/* Put back a recorded process whose identity still matches; otherwise only
 * forget it. Used by release and by crash recovery. */
static int restore_process(NpBackend *b, const NpStateProcess *p, bool *was_alive) {
        *was_alive = np_proc_alive(p->pid, p->starttime);
        if (!*was_alive)
                return 0;
        if (p->backend == NP_BACKEND_CPUSET) {
                if (b->mode == NP_CGROUP_NONE) {
                        log_warning("Cannot put pid %d back in cgroup %s: no cpuset hierarchy found",
                                    (int)p->pid, p->orig_cgroup ? p->orig_cgroup : "?");
                        return -ENOENT;
                }
                return np_cpuset_restore(b, p);
        }
        return np_affinity_restore(b, p);
}

static void log_released(const NpStateProcess *p, bool alive, int r, const char *why) {
        g_autofree char *nodes = np_mask_format(p->nodes);
        g_autofree char *comm = alive ? np_proc_comm(p->pid) : g_strdup("gone");
        g_autofree char *f_pid = g_strdup_printf("NP_PID=%d", (int)p->pid);
        g_autofree char *f_nodes = g_strdup_printf("NP_NODES=%s", nodes);
        const char *const fields[] = { f_pid, f_nodes, NULL };

        if (!alive)
                np_log_fields(LOG_INFO, NP_MESSAGE_RELEASED, fields,
                              "Forgot pid %d (%s): the process is gone (%s)", (int)p->pid, comm, why);
        else if (r < 0)
                np_log_fields(LOG_WARNING, NP_MESSAGE_RELEASED, fields,
                              "Released pid %d (%s) from nodes %s incompletely (%s): %s", (int)p->pid,
                              comm, nodes, why, g_strerror(-r));
        else
                np_log_fields(LOG_INFO, NP_MESSAGE_RELEASED, fields,
                              "Released pid %d (%s) from nodes %s (%s): back in %s%s", (int)p->pid, comm,
                              nodes, why,
                              p->backend == NP_BACKEND_CPUSET ? "its original cgroup " : "its original affinity",
                              p->backend == NP_BACKEND_CPUSET && p->orig_cgroup ? p->orig_cgroup : "");
}

static void recover(NpBackend *b) {
        g_autoptr(NpState) old = NULL;
        g_autoptr(GError) e = NULL;
        int r;

        r = np_state_load(b->state_file, &old, &e);
        if (r == -ENOENT) {
                log_debug("No state file %s: nothing to recover", b->state_file);
        } else if (r < 0) {
                log_warning("%s; removing it and starting clean", e->message);
        } else {
                g_autoptr(GArray) pids = np_state_pids(old);

                log_info("Found state file %s from an earlier run with %u process(es): putting them back",
                         b->state_file, pids->len);
                if (old->hierarchy && b->hierarchy && strcmp(old->hierarchy, b->hierarchy) != 0)
                        log_warning("State file names cgroup hierarchy %s, this run uses %s; only the latter "
                                    "is removed", old->hierarchy, b->hierarchy);
                for (guint i = 0; i < pids->len; i++) {
                        const NpStateProcess *p = np_state_lookup(old, g_array_index(pids, pid_t, i));
                        bool alive;

                        r = restore_process(b, p, &alive);
                        log_released(p, alive, r, "recovering after an unclean stop");
                }
        }

        if (b->mode != NP_CGROUP_NONE) {
                r = np_cpuset_remove_all(b);
                if (r < 0)
                        log_warning("Cannot remove leftover cgroups under %s: %s", b->hierarchy,
                                    g_strerror(-r));
        }
        r = np_state_unlink(b->state);
        if (r < 0)
                log_warning("Cannot remove state file %s: %s", b->state_file, g_strerror(-r));
}

/*
 * Like np_backend_new(), with another name for the daemon's cgroup directory
 * (NULL = "numaplaced"). For tests, so that they never touch the cgroups of
 * a daemon running on the same machine.
 */
NpBackend *np_backend_new_full(NpBackendKind kind, const char *runtime_dir, const char *cgroup_name,
                               GError **error) {
        g_autofree char *why = NULL;
        NpBackend *b;
        int r;

        g_return_val_if_fail(runtime_dir, NULL);

        if (kind == NP_BACKEND_SYSTEMD) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOSYS,
                            "Backend=systemd is not implemented by this backend module");
                return NULL;
        }
        if (cgroup_name && (!*cgroup_name || strchr(cgroup_name, '/') || cgroup_name[0] == '.')) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "Invalid cgroup name '%s'", cgroup_name);
                return NULL;
        }
        if (g_mkdir_with_parents(runtime_dir, 0755) < 0) {
                int errsv = errno;
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errsv),
                            "Cannot create runtime directory %s: %s", runtime_dir, g_strerror(errsv));
                return NULL;
        }

        b = g_new0(NpBackend, 1);
        b->runtime_dir = g_strdup(runtime_dir);
        b->state_file = g_build_filename(runtime_dir, "state", NULL);
        b->state = np_state_new(b->state_file);
        b->cgroup_name = g_strdup(cgroup_name ? cgroup_name : NP_CGROUP_NAME_DEFAULT);

        r = np_cpuset_detect(b, &why);
        if (r < 0)
                b->mode = NP_CGROUP_NONE;

        if (kind == NP_BACKEND_CPUSET && r < 0) {
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "Backend=cpuset cannot work here: %s",
                            why);
                np_backend_free(b);
                return NULL;
        }
        if (kind == NP_BACKEND_AUTO) {
                kind = r >= 0 ? NP_BACKEND_CPUSET : NP_BACKEND_AFFINITY;
                if (r < 0)
                        log_info("Backend=auto: using affinity (%s)", why);
        }
        b->kind = kind;

        recover(b);

        if (b->kind == NP_BACKEND_CPUSET)
                log_info("Backend: cpuset, cgroup %s hierarchy %s", b->mode == NP_CGROUP_V2 ? "v2" : "v1",
                         b->hierarchy);
        else
                log_info("Backend: affinity");
        return b;
}

NpBackend *np_backend_new(NpBackendKind kind, const char *runtime_dir, GError **error) {
        return np_backend_new_full(kind, runtime_dir, NULL, error);
}

const char *np_backend_name(const NpBackend *b) {
        return b->kind == NP_BACKEND_CPUSET ? "cpuset" : "affinity";
}

NpBackendKind np_backend_kind(const NpBackend *b) {
        return b->kind;
}

const char *np_backend_state_file(const NpBackend *b) {
        return b->state_file;
}

const char *np_backend_cgroup_hierarchy(const NpBackend *b) {
        return b->kind == NP_BACKEND_CPUSET ? b->hierarchy : NULL;
}

bool np_backend_holds(const NpBackend *b, pid_t pid) {
        return np_state_lookup(b->state, pid) != NULL;
}

/* ---- place / release ---- */

/* Forget p (already put back or gone): drop the record, save, remove its
 * cgroup if it became empty. */
static void forget(NpBackend *b, pid_t pid) {
        NpStateProcess *p = np_state_lookup(b->state, pid);
        g_autofree char *cgroup = NULL;

        if (!p)
                return;
        cgroup = g_strdup(p->cgroup);
        np_state_remove(b->state, pid);
        (void)np_backend_save_state(b, NULL);
        if (cgroup && b->mode != NP_CGROUP_NONE) {
                int r = np_cpuset_remove_if_empty(b, cgroup);
                if (r < 0 && r != -EBUSY)
                        log_warning("Cannot remove cgroup %s: %s", cgroup, g_strerror(-r));
        }
}

int np_backend_place(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes,
                     const NpMask *cpus, NpMigrateFn migrate, void *userdata, GError **error) {
        g_autofree char *nodes_s = NULL, *cpus_s = NULL, *comm = NULL, *old_cgroup = NULL;
        g_autoptr(GError) e = NULL;
        NpStateProcess *p;
        uint64_t st;
        int r;

        g_return_val_if_fail(b && nodes && cpus, -EINVAL);
        nodes_s = np_mask_format(nodes);
        cpus_s = np_mask_format(cpus);

        if (pid <= 0 || np_mask_empty(nodes) || np_mask_empty(cpus)) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                            "Cannot place pid %d on nodes '%s' CPUs '%s': invalid argument", (int)pid,
                            nodes_s, cpus_s);
                return -EINVAL;
        }
        if (pid == getpid()) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                            "Cannot place pid %d on nodes %s: that is the daemon itself", (int)pid, nodes_s);
                return -EINVAL;
        }

        if (np_proc_starttime(pid, &st) < 0 || st != starttime) {
                p = np_state_lookup(b->state, pid);
                if (p && p->starttime == starttime)
                        forget(b, pid);
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                            "Cannot place pid %d on nodes %s: no such process", (int)pid, nodes_s);
                return -ESRCH;
        }
        comm = np_proc_comm(pid);

        p = np_state_lookup(b->state, pid);
        if (p && p->starttime != starttime) {
                /* A record of an earlier process with this pid: it is gone,
                 * never touch the new one on its behalf. */
                forget(b, pid);
                p = NULL;
        }
        if (p && p->backend != b->kind) {
                bool alive;
                (void)restore_process(b, p, &alive);
                forget(b, pid);
                p = NULL;
        }

        if (p) {
                /* Already held: keep the originals, change the target. */
                old_cgroup = g_strdup(p->cgroup);
        } else {
                g_autoptr(NpMask) aff = NULL;

                p = np_state_add(b->state, pid, starttime, b->kind);
                if (np_thread_get_affinity(pid, &aff) == 0)
                        p->orig_affinity = g_steal_pointer(&aff);
                if (b->kind == NP_BACKEND_CPUSET) {
                        r = np_cpuset_current(b, pid, &p->orig_cgroup);
                        if (r < 0) {
                                np_state_remove(b->state, pid);
                                goto fail_nothing_done;
                        }
                }
        }
        np_mask_assign(p->nodes, nodes);
        np_mask_assign(p->cpus, cpus);
        g_free(p->cgroup);
        p->cgroup = b->kind == NP_BACKEND_CPUSET ? np_cpuset_cgroup_for(b, nodes) : NULL;

        /* Record before changing anything. */
        r = np_backend_save_state(b, &e);
        if (r < 0) {
                np_state_remove(b->state, pid);
                (void)np_backend_save_state(b, NULL);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "Cannot place pid %d (%s) on nodes %s: %s", (int)pid, comm, nodes_s, e->message);
                return r;
        }

        if (b->kind == NP_BACKEND_CPUSET)
                r = np_cpuset_place(b, p, migrate, userdata, &e);
        else
                r = np_affinity_place(b, p, migrate, userdata, &e);

        if (r < 0) {
                bool alive;
                int q;

                /* Undo: put back whatever was moved, forget, remove the
                 * cgroup if empty. A process gone in the middle is -ESRCH. */
                q = restore_process(b, p, &alive);
                if (!alive)
                        r = -ESRCH;
                if (q < 0 && alive)
                        log_warning("Pid %d (%s): could not undo a failed placement completely: %s", (int)pid,
                                    comm, g_strerror(-q));
                forget(b, pid);
                if (old_cgroup && b->mode != NP_CGROUP_NONE)
                        (void)np_cpuset_remove_if_empty(b, old_cgroup);
                if (r == -ESRCH) {
                        log_debug("Pid %d (%s) went away while being placed on nodes %s", (int)pid, comm,
                                  nodes_s);
                        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                                    "Cannot place pid %d on nodes %s: the process went away", (int)pid, nodes_s);
                } else {
                        g_autofree char *f_pid = g_strdup_printf("NP_PID=%d", (int)pid);
                        g_autofree char *f_nodes = g_strdup_printf("NP_NODES=%s", nodes_s);
                        const char *const fields[] = { f_pid, f_nodes, NULL };

                        np_log_fields(LOG_WARNING, NULL, fields,
                                      "Cannot place pid %d (%s) on nodes %s (CPUs %s) with the %s backend: %s",
                                      (int)pid, comm, nodes_s, cpus_s, np_backend_name(b),
                                      e ? e->message : g_strerror(-r));
                        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                                    "Cannot place pid %d (%s) on nodes %s: %s", (int)pid, comm, nodes_s,
                                    e ? e->message : g_strerror(-r));
                }
                return r;
        }

        if (old_cgroup && g_strcmp0(old_cgroup, p->cgroup) != 0 && b->mode != NP_CGROUP_NONE)
                (void)np_cpuset_remove_if_empty(b, old_cgroup);

        {
                g_autofree char *f_pid = g_strdup_printf("NP_PID=%d", (int)pid);
                g_autofree char *f_nodes = g_strdup_printf("NP_NODES=%s", nodes_s);
                const char *const fields[] = { f_pid, f_nodes, NULL };

                np_log_fields(LOG_INFO, NULL, fields, "Confined pid %d (%s) to nodes %s, CPUs %s (%s%s%s)",
                              (int)pid, comm, nodes_s, cpus_s, np_backend_name(b),
                              p->cgroup ? ", cgroup " : "", p->cgroup ? p->cgroup : "");
        }
        return 0;

fail_nothing_done:
        if (r == -ESRCH) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                            "Cannot place pid %d on nodes %s: the process went away", (int)pid, nodes_s);
        } else {
                log_warning("Cannot place pid %d (%s) on nodes %s: %s", (int)pid, comm, nodes_s, g_strerror(-r));
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "Cannot place pid %d (%s) on nodes %s: %s", (int)pid, comm, nodes_s, g_strerror(-r));
        }
        return r;
}

int np_backend_release(NpBackend *b, pid_t pid) {
        NpStateProcess *p;
        bool alive;
        int r;

        g_return_val_if_fail(b, -EINVAL);
        p = np_state_lookup(b->state, pid);
        if (!p)
                return -ENOENT;
        r = restore_process(b, p, &alive);
        log_released(p, alive, r, "released");
        forget(b, pid);
        return r;
}

int np_backend_release_all(NpBackend *b) {
        g_autoptr(GArray) pids = NULL;
        int ret = 0, r;

        g_return_val_if_fail(b, -EINVAL);
        pids = np_state_pids(b->state);
        for (guint i = 0; i < pids->len; i++) {
                r = np_backend_release(b, g_array_index(pids, pid_t, i));
                if (r < 0 && ret == 0)
                        ret = r;
        }
        if (b->mode != NP_CGROUP_NONE) {
                r = np_cpuset_remove_all(b);
                if (r < 0) {
                        log_warning("Cannot remove cgroup hierarchy %s: %s", b->hierarchy, g_strerror(-r));
                        if (ret == 0)
                                ret = r;
                }
        }
        r = np_state_unlink(b->state);
        if (r < 0 && ret == 0)
                ret = r;
        return ret;
}

int np_backend_move_threads(NpBackend *b, NpStateProcess *p, const NpThreadMover *ops, GError **error) {
        g_autoptr(GHashTable) moved = g_hash_table_new(g_direct_hash, g_direct_equal);

        for (unsigned pass = 0; pass < NP_MOVE_MAX_PASSES; pass++) {
                g_autoptr(GArray) tids = NULL;
                g_autoptr(GArray) todo = g_array_new(FALSE, FALSE, sizeof(pid_t));
                bool dirty = false;
                int r;

                if (!np_proc_alive(p->pid, p->starttime) || np_proc_tids(p->pid, &tids) < 0)
                        return -ESRCH;
                for (guint i = 0; i < tids->len; i++) {
                        pid_t tid = g_array_index(tids, pid_t, i);

                        if (g_hash_table_contains(moved, GINT_TO_POINTER(tid)))
                                continue;
                        if (pass > 0 && ops->placed(b, p, tid)) {
                                g_hash_table_add(moved, GINT_TO_POINTER(tid));
                                continue;
                        }
                        g_array_append_val(todo, tid);
                }
                if (todo->len == 0)
                        return 0;
                for (guint i = 0; i < todo->len; i++)
                        dirty |= ops->record(b, p, g_array_index(todo, pid_t, i));
                if (dirty) {
                        r = np_backend_save_state(b, error);
                        if (r < 0)
                                return r;
                }
                for (guint i = 0; i < todo->len; i++) {
                        pid_t tid = g_array_index(todo, pid_t, i);
                        g_autoptr(GError) e = NULL;

                        r = ops->move(b, p, tid, &e);
                        if (r < 0 && r != -ESRCH) {
                                if (!np_proc_alive(p->pid, p->starttime))
                                        return -ESRCH;
                                g_propagate_error(error, g_steal_pointer(&e));
                                return r;
                        }
                        /* -ESRCH: that thread exited; the next pass tells
                         * whether the whole process did. */
                        g_hash_table_add(moved, GINT_TO_POINTER(tid));
                }
        }
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_AGAIN, "threads kept appearing after %d passes over /proc/%d/task",
                    NP_MOVE_MAX_PASSES, (int)p->pid);
        return -EAGAIN;
}
