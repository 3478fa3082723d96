/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Confinement backends, the dispatcher: the table of mechanisms, the
 * Backend= choice (auto: the first usable mechanism of the table), crash
 * recovery from the state file, and place / release through the chosen
 * mechanism's operations. It never names a mechanism: adding one is a file
 * np-backend-<name>.c with a const NpBackendOps and an entry in mechanisms[]
 * (the last entry is the fallback, which must hold any process).
 * Contract: np-backend.h; internals: np-backend-private.h.
 */
#include "np-backend.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "np-backend-private.h"
#include "np-log.h"
#include "np-state.h"
#include "np-test-api.h"

/* In order of preference for Backend=auto; the last one holds any process
 * and places those another mechanism cannot hold (its record() says
 * -EXDEV). */
static const NpBackendOps *const mechanisms[] = {
        &np_backend_systemd_ops,
        &np_backend_cpuset_ops,
        &np_backend_affinity_ops,
};

static NpMechanism *mechanism_of(const NpBackend *b, NpBackendKind kind) {
        for (guint i = 0; i < b->n_mechs; i++)
                if (b->mechs[i].ops->kind == kind)
                        return &b->mechs[i];
        return NULL;
}

/* ---- creation ---- */

void np_backend_free(NpBackend *b) {
        if (!b)
                return;
        for (guint i = 0; i < b->n_mechs; i++) {
                if (b->mechs[i].ops->free_data)
                        b->mechs[i].ops->free_data(b->mechs[i].data);
                g_free(b->mechs[i].why);
        }
        g_free(b->mechs);
        g_free(b->runtime_dir);
        g_free(b->state_file);
        np_state_free(b->state);
        g_free(b->cgroup_name);
        g_array_unref(b->short_restores);
        g_free(b);
}

static void log_released(const NpStateProcess *p, bool alive, int r, const char *why) {
        g_autofree char *nodes = np_mask_format(p->nodes);
        g_autofree char *comm = alive ? np_proc_comm(p->pid) : g_strdup("gone");
        g_autofree char *f_pid = g_strdup_printf("PID=%d", (int) p->pid);
        g_autofree char *f_comm = g_strdup_printf("COMM=%s", comm);
        g_autofree char *f_nodes = g_strdup_printf("FROM=%s", nodes);
        const char *const fields[] = { f_pid, f_comm, f_nodes, NULL };

        if (!alive)
                np_log_fields(LOG_INFO, NP_MESSAGE_RELEASED, fields, "Forgot pid %d (%s): the process is gone (%s)",
                              (int) p->pid, comm, why);
        else if (r < 0)
                np_log_fields(LOG_WARNING, NP_MESSAGE_RELEASED, fields,
                              "Released pid %d (%s) from nodes %s incompletely (%s): %s", (int) p->pid, comm, nodes,
                              why, g_strerror(-r));
        else
                np_log_fields(LOG_INFO, NP_MESSAGE_RELEASED, fields,
                              "Released pid %d (%s) from nodes %s (%s): back where it was%s%s", (int) p->pid, comm,
                              nodes, why, p->orig_cgroup ? " in " : "", p->orig_cgroup ? p->orig_cgroup : "");
}

#define PINS_KEY "ThreadHomes"
#define PINS_ONLY_KEY "ThreadHomesOnly" /* the record is for the pins alone */

/* The TIDs of p's ThreadHomes= ("TID:NODE;..."), in a new GArray of pid_t;
 * NULL when it has none. Malformed items are left out. */
static GArray *pinned_tids(const NpStateProcess *p) {
        const char *pins = p && p->extra ? g_hash_table_lookup(p->extra, PINS_KEY) : NULL;
        if (!pins)
                return NULL;
        g_auto(GStrv) items = g_strsplit(pins, ";", -1);
        GArray *tids = g_array_new(FALSE, FALSE, sizeof(pid_t));
        for (guint i = 0; items[i]; i++) {
                char *end = NULL;
                long tid = strtol(items[i], &end, 10);
                if (end != items[i] && tid > 0 && tid <= INT_MAX) {
                        pid_t t = (pid_t) tid;
                        g_array_append_val(tids, t);
                }
        }
        return tids;
}

/* The threads np_backend_pin_threads() kept on their own nodes get their
 * recorded affinity back (a mechanism's restore may not touch affinities:
 * systemd's puts the unit's values back). 0 or the first error. */
static int restore_pins(NpBackend *b, const NpStateProcess *p) {
        g_autoptr(GArray) tids = pinned_tids(p);
        int ret = 0;
        for (guint i = 0; tids && i < tids->len; i++) {
                pid_t tid = g_array_index(tids, pid_t, i);
                const NpStateThread *t = np_state_process_thread(p, tid);
                const NpMask *aff = t && t->affinity ? t->affinity : p->orig_affinity;
                if (!aff || np_mask_empty(aff) || !np_proc_alive(p->pid, p->starttime))
                        continue;
                g_autofree char *task = g_strdup_printf("/proc/%d/task/%d", (int) p->pid, (int) tid);
                if (!g_file_test(task, G_FILE_TEST_EXISTS))
                        continue;
                int r = np_thread_set_affinity(tid, aff);
                if (r < 0 && r != -ESRCH) {
                        g_autofree char *s = np_mask_format(aff);
                        log_warning("Cannot give thread %d of pid %d its affinity %s back: %s", (int) tid, (int) p->pid,
                                    s, g_strerror(-r));
                        if (ret == 0)
                                ret = r;
                }
        }
        return ret;
}

/* Put back a recorded process whose identity still matches, with the
 * mechanism that recorded it; otherwise only forget it, unless what the
 * mechanism changed outlives the process (restore_when_gone: a unit's
 * properties), which is put back all the same. */
static int restore_process(NpBackend *b, const NpStateProcess *p, bool *was_alive) {
        NpMechanism *m;

        *was_alive = np_proc_alive(p->pid, p->starttime);
        m = mechanism_of(b, p->backend);
        if (!*was_alive && !(m && m->usable && m->ops->restore_when_gone))
                return 0;
        if (!m || !m->usable) {
                log_warning("Cannot put pid %d back: its record names the %s mechanism, which %s", (int) p->pid,
                            np_state_backend_to_string(p->backend),
                            m ? (m->why ? m->why : "cannot work here") : "this daemon does not have");
                return -EOPNOTSUPP;
        }
        int r = m->ops->restore(b, m, p);
        int r2 = restore_pins(b, p);
        return r < 0 ? r : r2;
}

static void recover(NpBackend *b) {
        g_autoptr(NpState) old = NULL;
        g_autoptr(GError) e = NULL;
        NpStateReport rep;
        int r;

        r = np_state_check_writable(b->state_file);
        if (r < 0)
                log_error("Cannot write the state file %s (%s): every placement is refused until it can be "
                          "written, since nothing may be changed that a restart could not put back",
                          b->state_file, g_strerror(-r));
        r = np_state_remove_stale_temporaries(b->state_file);
        if (r > 0)
                log_warning("Removed %d temporary state file(s) next to %s left by an interrupted write", r,
                            b->state_file);
        r = np_state_load(b->state_file, &old, &rep, &e);
        if (r == -ENOENT) {
                log_debug("No state file %s: nothing to recover", b->state_file);
        } else if (r < 0) {
                log_warning("%s; removing it and starting clean", e->message);
        } else {
                g_autoptr(GArray) pids = np_state_pids(old);
                const char *root = b->active->ops->root ? b->active->ops->root(b->active) : NULL;

                if (np_state_report_damaged(&rep)) {
                        g_autofree char *why = np_state_report_describe(&rep);
                        log_warning("State file %s is damaged (%s): releasing the %u process(es) its readable part "
                                    "names",
                                    b->state_file, why, pids->len);
                }
                log_info("Found state file %s from an earlier run with %u process(es): putting them back",
                         b->state_file, pids->len);
                if (old->hierarchy && root && strcmp(old->hierarchy, root) != 0)
                        log_warning("State file names the hierarchy %s, this run uses %s; only the latter is removed",
                                    old->hierarchy, root);
                guint back = 0, gone = 0, failed = 0;
                for (guint i = 0; i < pids->len; i++) {
                        const NpStateProcess *p = np_state_lookup(old, g_array_index(pids, pid_t, i));
                        bool alive;

                        r = restore_process(b, p, &alive);
                        log_released(p, alive, r, "recovering after an unclean stop");
                        back += alive && r >= 0;
                        gone += !alive;
                        failed += alive && r < 0;
                }
                g_autofree char *f_file = g_strdup_printf("STATE_FILE=%s", b->state_file);
                g_autofree char *f_n = g_strdup_printf("PROCESSES=%u", pids->len);
                const char *const fields[] = { f_file, f_n, NULL };
                np_log_fields(failed ? LOG_WARNING : LOG_NOTICE, NP_MESSAGE_RECOVERED, fields,
                              "Recovered after an unclean stop: %u process(es) put back, %u gone, %u could not be "
                              "put back completely",
                              back, gone, failed);
        }

        for (guint i = 0; i < b->n_mechs; i++) {
                NpMechanism *m = &b->mechs[i];
                if (m->usable && m->ops->remove_all)
                        (void) m->ops->remove_all(b, m);
        }
        r = np_state_unlink(b->state);
        if (r < 0)
                log_warning("Cannot remove state file %s: %s", b->state_file, g_strerror(-r));
}

NpBackend *np_backend_new_full(NpBackendKind kind, const char *runtime_dir, const char *cgroup_name, GError **error) {
        g_autoptr(NpBackend) b = NULL;

        g_return_val_if_fail(runtime_dir, NULL);

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
        b->short_restores = g_array_new(FALSE, FALSE, sizeof(NpShortRestore));
        g_array_set_clear_func(b->short_restores, (GDestroyNotify) np_short_restore_clear);
        b->runtime_dir = g_strdup(runtime_dir);
        b->state_file = g_build_filename(runtime_dir, "state", NULL);
        b->state = np_state_new(b->state_file);
        b->cgroup_name = g_strdup(cgroup_name ? cgroup_name : NP_CGROUP_NAME_DEFAULT);
        b->n_mechs = G_N_ELEMENTS(mechanisms);
        b->mechs = g_new0(NpMechanism, b->n_mechs);

        for (guint i = 0; i < b->n_mechs; i++) {
                NpMechanism *m = &b->mechs[i];
                m->ops = mechanisms[i];
                m->usable = m->ops->probe(b, m, &m->why) == 0;
                if (!m->usable && !m->why)
                        m->why = g_strdup("unknown reason");
                if (kind == NP_BACKEND_AUTO && !b->active && m->usable)
                        b->active = m;
                else if (kind == NP_BACKEND_AUTO && !b->active)
                        log_info("Backend=auto: not %s (%s)", m->ops->name, m->why);
        }

        if (kind != NP_BACKEND_AUTO) {
                NpMechanism *m = mechanism_of(b, kind);
                if (!m) {
                        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOSYS,
                                    "Backend=%s is not implemented by this version of numaplaced",
                                    np_backend_kind_to_string(kind));
                        return NULL;
                }
                if (!m->usable) {
                        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "Backend=%s cannot work here: %s",
                                    m->ops->name, m->why);
                        return NULL;
                }
                b->active = m;
        }
        if (!b->active) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "no placement mechanism works here");
                return NULL;
        }

        recover(b);

        {
                const char *root = b->active->ops->root ? b->active->ops->root(b->active) : NULL;
                const char *variant = b->active->ops->variant ? b->active->ops->variant(b->active) : NULL;
                log_info("Backend: %s%s%s%s%s", b->active->ops->name, variant ? ", cgroup " : "",
                         variant ? variant : "", root ? ", hierarchy " : "", root ? root : "");
        }
        return g_steal_pointer(&b);
}

NpBackend *np_backend_new(NpBackendKind kind, const char *runtime_dir, GError **error) {
        return np_backend_new_full(kind, runtime_dir, NULL, error);
}

const char *np_backend_name(const NpBackend *b) {
        return b->active->ops->name;
}

int np_backend_attach_event(NpBackend *b, sd_event *event, NpBackendMovedFn moved, void *userdata) {
        g_return_val_if_fail(b && event, -EINVAL);
        b->moved = moved;
        b->moved_userdata = userdata;
        int ret = 0;
        for (guint i = 0; i < b->n_mechs; i++) {
                NpMechanism *m = &b->mechs[i];
                if (!m->usable || !m->ops->attach_event)
                        continue;
                int r = m->ops->attach_event(m, event);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

NpUnitRole np_backend_unit_role(const NpBackend *b, const char *unit, const char *self_unit) {
        if (!b || !unit || !unit[0] || !b->active->ops->unit_role)
                return NP_UNIT_EACH;
        return b->active->ops->unit_role(b->active, unit, self_unit);
}

NpBackendKind np_backend_kind(const NpBackend *b) {
        return b->active->ops->kind;
}

const char *np_backend_state_file(const NpBackend *b) {
        return b->state_file;
}

const char *np_backend_cgroup_hierarchy(const NpBackend *b) {
        return b->active->ops->root ? b->active->ops->root(b->active) : NULL;
}

bool np_backend_holds(const NpBackend *b, pid_t pid) {
        return np_state_lookup(b->state, pid) != NULL;
}

const NpMask *np_backend_held_cpus(const NpBackend *b, pid_t pid) {
        const NpStateProcess *p = np_state_lookup(b->state, pid);
        return p ? p->cpus : NULL;
}

/* ---- place / release ---- */

/* Forget pid (already put back or gone): drop the record, save, let its
 * mechanism remove the container if it became empty. */
static void forget(NpBackend *b, pid_t pid) {
        NpStateProcess *p = np_state_lookup(b->state, pid);
        g_autofree char *container = NULL;
        NpMechanism *m;

        if (!p)
                return;
        m = mechanism_of(b, p->backend);
        container = g_strdup(p->cgroup);
        np_state_remove(b->state, pid);
        (void) np_backend_save_state(b, NULL);
        if (container && m && m->usable && m->ops->cleanup)
                m->ops->cleanup(b, m, container);
}

static void set_not_found(GError **error, pid_t pid, const char *nodes_s, const char *what) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "Cannot place pid %d on nodes %s: %s", (int) pid, nodes_s,
                    what);
}

/* Undo a placement that failed in confine() or finish() (or whose process
 * went away during the migration): put back what was moved, forget the
 * record, remove the containers that became empty. Returns r, or -ESRCH when
 * the process is gone, with *error set accordingly. */
static int undo(NpBackend *b, NpStateProcess *p, const char *old_container, int r, GError *e, GError **error) {
        NpMechanism *m = b->active;
        pid_t pid = p->pid;
        g_autofree char *comm = np_proc_comm(pid);
        g_autofree char *nodes_s = np_mask_format(p->nodes);
        g_autofree char *cpus_s = np_mask_format(p->cpus);
        bool alive;
        int q;

        q = restore_process(b, p, &alive);
        if (!alive)
                r = -ESRCH;
        if (q < 0 && alive)
                log_warning("Pid %d (%s): could not undo a failed placement completely: %s", (int) pid, comm,
                            g_strerror(-q));
        forget(b, pid);
        if (old_container && m->ops->cleanup)
                m->ops->cleanup(b, m, old_container);
        if (r == -ESRCH) {
                log_debug("Pid %d went away while being placed on nodes %s", (int) pid, nodes_s);
                set_not_found(error, pid, nodes_s, "the process went away");
        } else {
                g_autofree char *f_pid = g_strdup_printf("PID=%d", (int) pid);
                g_autofree char *f_comm = g_strdup_printf("COMM=%s", comm);
                g_autofree char *f_nodes = g_strdup_printf("TO=%s", nodes_s);
                const char *const fields[] = { f_pid, f_comm, f_nodes, NULL };

                np_log_fields(LOG_WARNING, NP_MESSAGE_PLACE_FAILED, fields,
                              "Cannot place pid %d (%s) on nodes %s (CPUs %s) with the %s backend: %s", (int) pid, comm,
                              nodes_s, cpus_s, m->ops->name, e ? e->message : g_strerror(-r));
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "Cannot place pid %d (%s) on nodes %s: %s", (int) pid, comm, nodes_s,
                            e ? e->message : g_strerror(-r));
        }
        return r;
}

static int confine(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const NpMask *cpus,
                   bool memory_only, const NpMask *runs_on, GError **error) {
        g_autofree char *nodes_s = NULL, *cpus_s = NULL, *comm = NULL;
        g_autoptr(GError) e = NULL;
        NpMechanism *m;
        NpStateProcess *p;
        uint64_t st;
        int r;

        g_return_val_if_fail(b && nodes && cpus, -EINVAL);
        m = b->active;
        nodes_s = np_mask_format(nodes);
        cpus_s = np_mask_format(cpus);

        if (pid <= 0 || np_mask_empty(nodes) || np_mask_empty(cpus)) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                            "Cannot place pid %d on nodes '%s' CPUs '%s': invalid argument", (int) pid, nodes_s,
                            cpus_s);
                return -EINVAL;
        }
        if (pid == getpid()) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                            "Cannot place pid %d on nodes %s: that is the daemon itself", (int) pid, nodes_s);
                return -EINVAL;
        }

        if (np_proc_starttime(pid, &st) < 0 || st != starttime) {
                p = np_state_lookup(b->state, pid);
                if (p && p->starttime == starttime)
                        forget(b, pid);
                set_not_found(error, pid, nodes_s, "no such process");
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
        if (p && p->backend != m->ops->kind) {
                bool alive;
                (void) restore_process(b, p, &alive);
                forget(b, pid);
                p = NULL;
        }

        if (p) {
                /* Already held: keep the originals, change the target; the
                 * old container goes when the move is finished. Confining
                 * every thread anew ends the threads' own homes. */
                g_free(p->old_cgroup);
                p->old_cgroup = g_steal_pointer(&p->cgroup);
                g_hash_table_remove(p->extra, PINS_KEY);
                g_hash_table_remove(p->extra, PINS_ONLY_KEY);
        } else {
                g_autoptr(NpMask) aff = NULL;

                p = np_state_add(b->state, pid, starttime, m->ops->kind);
                if (np_thread_get_affinity(pid, &aff) == 0)
                        p->orig_affinity = g_steal_pointer(&aff);
                if (m->ops->record) {
                        r = m->ops->record(b, m, p);
                        if (r == -EXDEV) {
                                /* The mechanism cannot hold this process
                                 * (it said why): the fallback (the table's
                                 * last) places it, under its own record kind. */
                                NpMechanism *fb = &b->mechs[b->n_mechs - 1];
                                np_state_remove(b->state, pid);
                                r = -EPERM;
                                if (fb && fb->usable && fb != m) {
                                        log_info("Placing pid %d (%s) with the %s mechanism instead", (int) pid, comm,
                                                 fb->ops->name);
                                        m = fb;
                                        p = np_state_add(b->state, pid, starttime, m->ops->kind);
                                        if (np_thread_get_affinity(pid, &aff) == 0)
                                                p->orig_affinity = g_steal_pointer(&aff);
                                        r = m->ops->record ? m->ops->record(b, m, p) : 0;
                                }
                        }
                        if (r < 0) {
                                np_state_remove(b->state, pid);
                                if (r == -ESRCH) {
                                        set_not_found(error, pid, nodes_s, "the process went away");
                                } else {
                                        log_warning("Cannot place pid %d (%s) on nodes %s: %s", (int) pid, comm,
                                                    nodes_s, g_strerror(-r));
                                        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                                                    "Cannot place pid %d (%s) on nodes %s: %s", (int) pid, comm,
                                                    nodes_s, g_strerror(-r));
                                }
                                return r;
                        }
                }
        }
        np_mask_assign(p->nodes, nodes);
        np_mask_assign(p->cpus, cpus);
        g_free(p->cgroup);
        p->cgroup = m->ops->container_for ? m->ops->container_for(m, nodes, memory_only, runs_on) : NULL;

        /* Record before changing anything. */
        r = np_backend_save_state(b, &e);
        if (r < 0) {
                np_state_remove(b->state, pid);
                (void) np_backend_save_state(b, NULL);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "Cannot place pid %d (%s) on nodes %s: %s", (int) pid, comm, nodes_s, e->message);
                return r;
        }

        r = m->ops->confine(b, m, p, &e);
        if (r < 0) {
                g_autofree char *old = g_steal_pointer(&p->old_cgroup);
                return undo(b, p, old, r, e, error);
        }
        return 0;
}

int np_backend_confine(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const NpMask *cpus,
                       GError **error) {
        return confine(b, pid, starttime, nodes, cpus, false, NULL, error);
}

int np_backend_confine_memory(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const NpMask *runs_on,
                              const NpMask *cpus, GError **error) {
        g_return_val_if_fail(b, -EINVAL);
        if (!b->active->ops->holds_memory) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOSYS,
                            "The %s mechanism cannot hold a process's memory to nodes", b->active->ops->name);
                return -EOPNOTSUPP;
        }
        return confine(b, pid, starttime, nodes, cpus, true, runs_on, error);
}

bool np_backend_holds_memory(const NpBackend *b) {
        return b && b->active && b->active->ops->holds_memory;
}

int np_backend_finish(NpBackend *b, pid_t pid, uint64_t starttime, GError **error) {
        g_autoptr(GError) e = NULL;
        g_autofree char *old = NULL;
        NpMechanism *m = b->active;
        NpStateProcess *p = np_state_lookup(b->state, pid);
        int r = 0;

        if (!p || p->starttime != starttime) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "pid %d is not being placed", (int) pid);
                return -ENOENT;
        }
        old = g_steal_pointer(&p->old_cgroup);
        if (!np_proc_alive(pid, starttime))
                r = -ESRCH;
        else if (m->ops->finish)
                r = m->ops->finish(b, m, p, &e);
        if (r < 0)
                return undo(b, p, old, r, e, error);
        (void) np_backend_save_state(b, NULL);
        if (old && g_strcmp0(old, p->cgroup) != 0 && m->ops->cleanup)
                m->ops->cleanup(b, m, old);
        {
                g_autofree char *comm = np_proc_comm(pid);
                g_autofree char *nodes_s = np_mask_format(p->nodes);
                g_autofree char *cpus_s = np_mask_format(p->cpus);
                g_autofree char *f_pid = g_strdup_printf("PID=%d", (int) pid);
                g_autofree char *f_comm = g_strdup_printf("COMM=%s", comm);
                g_autofree char *f_nodes = g_strdup_printf("TO=%s", nodes_s);
                const char *const fields[] = { f_pid, f_comm, f_nodes, NULL };

                np_log_fields(LOG_INFO, NULL, fields, "Confined pid %d (%s) to nodes %s, CPUs %s (%s%s%s)", (int) pid,
                              comm, nodes_s, cpus_s, m->ops->name, p->cgroup ? ", cgroup " : "",
                              p->cgroup ? p->cgroup : "");
        }
        return 0;
}

int np_backend_abort(NpBackend *b, pid_t pid, uint64_t starttime) {
        NpStateProcess *p = np_state_lookup(b->state, pid);
        g_autofree char *old = NULL;

        if (!p || p->starttime != starttime)
                return -ENOENT;
        old = g_steal_pointer(&p->old_cgroup);
        return undo(b, p, old, -ECANCELED, NULL, NULL);
}

int np_backend_place(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const NpMask *cpus,
                     NpMigrateFn migrate, void *userdata, GError **error) {
        int r = np_backend_confine(b, pid, starttime, nodes, cpus, error);
        if (r < 0)
                return r;
        if (migrate) {
                r = migrate(pid, userdata);
                if (r == -ESRCH) {
                        NpStateProcess *p = np_state_lookup(b->state, pid);
                        g_autofree char *old = p ? g_steal_pointer(&p->old_cgroup) : NULL;
                        return p ? undo(b, p, old, -ESRCH, NULL, error) : -ESRCH;
                }
                if (r < 0) {
                        g_autofree char *nodes_s = np_mask_format(nodes);
                        log_warning("Pid %d: moving its memory to nodes %s failed (%s); it stays confined there",
                                    (int) pid, nodes_s, g_strerror(-r));
                }
        }
        return np_backend_finish(b, pid, starttime, error);
}

bool np_backend_pins_threads(const NpBackend *b, pid_t pid) {
        const NpStateProcess *p = np_state_lookup(b->state, pid);
        return p && p->extra && g_hash_table_contains(p->extra, PINS_KEY);
}

/* Record tid's affinity now as its original, unless it is recorded. */
static void record_affinity(NpStateProcess *p, pid_t tid) {
        g_autoptr(NpMask) aff = NULL;
        NpStateThread *t = np_state_process_thread(p, tid);
        if ((t && t->affinity) || np_thread_get_affinity(tid, &aff) < 0)
                return;
        if (t)
                t->affinity = g_steal_pointer(&aff);
        else
                np_state_process_add_thread(p, tid, NULL, aff);
}

int np_backend_pin_threads(NpBackend *b, pid_t pid, uint64_t starttime, const NpMask *nodes, const GArray *pins,
                           GError **error) {
        g_return_val_if_fail(b && nodes && pins, -EINVAL);
        uint64_t st;
        if (pid <= 0 || pid == getpid() || np_mask_empty(nodes)) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                            "Cannot keep the threads of pid %d: invalid argument", (int) pid);
                return -EINVAL;
        }
        NpStateProcess *p = np_state_lookup(b->state, pid);
        if (np_proc_starttime(pid, &st) < 0 || st != starttime) {
                if (p && p->starttime == starttime)
                        forget(b, pid);
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                            "Cannot keep the threads of pid %d: no such process", (int) pid);
                return -ESRCH;
        }
        if (p && p->starttime != starttime) {
                forget(b, pid);
                p = NULL;
        }
        bool own = !p;
        if (own) {
                g_autoptr(GArray) tids = NULL;
                g_autoptr(NpMask) aff = NULL;
                if (np_proc_tids(pid, &tids) < 0) {
                        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                                    "Cannot keep the threads of pid %d: no such process", (int) pid);
                        return -ESRCH;
                }
                p = np_state_add(b->state, pid, starttime, NP_BACKEND_AFFINITY);
                if (np_thread_get_affinity(pid, &aff) == 0) {
                        np_mask_assign(p->cpus, aff);
                        p->orig_affinity = g_steal_pointer(&aff);
                }
                np_mask_assign(p->nodes, nodes);
                for (guint i = 0; i < tids->len; i++)
                        record_affinity(p, g_array_index(tids, pid_t, i));
                g_hash_table_replace(p->extra, g_strdup(PINS_ONLY_KEY), g_strdup("yes"));
        }
        GString *keys = g_string_new(NULL);
        for (guint i = 0; i < pins->len; i++) {
                const NpThreadPin *x = &g_array_index(pins, NpThreadPin, i);
                record_affinity(p, x->tid);
                g_string_append_printf(keys, "%s%d:%u", i ? ";" : "", (int) x->tid, x->node);
        }
        g_hash_table_replace(p->extra, g_strdup(PINS_KEY), g_string_free(keys, FALSE));

        g_autoptr(GError) e = NULL;
        int r = np_backend_save_state(b, &e);
        if (r < 0) {
                if (own)
                        np_state_remove(b->state, pid);
                else
                        g_hash_table_remove(p->extra, PINS_KEY);
                (void) np_backend_save_state(b, NULL);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "Cannot keep the threads of pid %d: %s",
                            (int) pid, e->message);
                return r;
        }

        int ret = 0;
        for (guint i = 0; i < pins->len; i++) {
                const NpThreadPin *x = &g_array_index(pins, NpThreadPin, i);
                g_autoptr(NpMask) cpus = np_mask_copy(x->cpus);
                if (!own) {
                        np_mask_and(cpus, p->cpus);
                        if (np_mask_empty(cpus))
                                np_mask_assign(cpus, p->cpus);
                }
                r = np_thread_set_affinity(x->tid, cpus);
                if (r < 0 && r != -ESRCH && ret == 0) {
                        g_autofree char *s = np_mask_format(cpus);
                        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                                    "Cannot keep thread %d of pid %d on CPUs %s: %s", (int) x->tid, (int) pid, s,
                                    g_strerror(-r));
                        ret = r;
                }
        }
        return ret;
}

int np_backend_unpin_threads(NpBackend *b, pid_t pid) {
        NpStateProcess *p = np_state_lookup(b->state, pid);
        g_autoptr(GArray) tids = pinned_tids(p);
        if (!tids)
                return -ENOENT;
        if (g_hash_table_contains(p->extra, PINS_ONLY_KEY))
                return np_backend_release(b, pid);
        g_hash_table_remove(p->extra, PINS_KEY);
        (void) np_backend_save_state(b, NULL);
        int ret = 0;
        for (guint i = 0; i < tids->len; i++) {
                int r = np_thread_set_affinity(g_array_index(tids, pid_t, i), p->cpus);
                if (r < 0 && r != -ESRCH && ret == 0)
                        ret = r;
        }
        return ret;
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
        for (guint i = 0; i < b->n_mechs; i++) {
                NpMechanism *m = &b->mechs[i];
                if (!m->usable || !m->ops->remove_all)
                        continue;
                r = m->ops->remove_all(b, m);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        r = np_state_unlink(b->state);
        if (r < 0 && ret == 0)
                ret = r;
        return ret;
}
