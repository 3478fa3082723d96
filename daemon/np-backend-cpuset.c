/*
 * The cpuset backend: a daemon-owned cgroup hierarchy.
 *
 * Which cgroup version: /proc/self/mountinfo is read (libcgroup 2.0.2 has no
 * cgroup_setup_mode()). A "cgroup" (v1) mount whose super options name the
 * cpuset controller wins: then cpuset cannot be on the unified hierarchy
 * anyway. Otherwise a "cgroup2" mount whose cgroup.controllers offers cpuset
 * is used, but only when systemd is not the init system (sd_booted()): on a
 * systemd host systemd is the single writer of the v2 tree (use
 * Backend=systemd there).
 *
 * cgroup v1 (all through libcgroup): <cpuset mount>/numaplaced/ with cpus and
 * mems copied from the root (v1 needs them set before any child can be), one
 * child per node set, "numaplaced/nodes-3-4", with cpuset.cpus = the CPUs,
 * cpuset.mems = the nodes and cpuset.memory_migrate=0, so attaching moves no
 * page and the daemon's migration plan does the moving. v1 cpusets are per
 * thread: every thread is written to "tasks" (cgroup_attach_task_pid on each
 * tid), re-reading /proc/PID/task until no new thread appears (bounded).
 *
 * cgroup v2 (direct cgroupfs writes): libcgroup 2.0.2 does not handle v2's
 * cgroup.subtree_control delegation nor whole-process moves through
 * cgroup.procs cleanly, so these steps write the files themselves. On v2
 * attaching a process to a cpuset with other mems migrates its memory (v2's
 * memory_migrate is always on), so the order is:
 *   1. <mount>/numaplaced/staging-PID with cpuset.cpus = the CPUs and mems
 *      left as the parent's (all), process moved there (cgroup.procs moves
 *      every thread),
 *   2. migrate() - the daemon's plan moves the pages,
 *   3. the process moved into numaplaced/nodes-X (mems = the nodes): the
 *      kernel moves only what the plan left outside the nodes,
 *   4. staging-PID removed.
 * Not exercised on the development machine (v1 only); verified in the VMs.
 *
 * Cgroup paths are relative to the mount point, as /proc/PID/cgroup shows
 * them; a cgroup namespace or a mount of a non-root subtree is not handled.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <libcgroup.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "np-backend-private.h"
#include "np-log.h"

/* ---- small helpers ---- */

static int cg_errno(int r) {
        int e;

        if (r == 0)
                return 0;
        switch (r) {
        case ECGROUPNOTEXIST:
                return -ENOENT;
        case ECGROUPNOTOWNER:
        case ECGROUPNOTALLOWED:
                return -EPERM;
        case ECGNONEMPTY:
                return -EBUSY;
        case ECGROUPNOTMOUNTED:
        case ECGROUPSUBSYSNOTMOUNTED:
                return -ENODEV;
        default:
                e = cgroup_get_last_errno();
                return e > 0 ? -e : -EIO;
        }
}

static int write_file(const char *path, const char *value) {
        size_t len = strlen(value);
        ssize_t n;
        int fd;

        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = write(fd, value, len);
        if (n < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        close(fd);
        return (size_t)n == len ? 0 : -EIO;
}

static char *read_trimmed(const char *path) {
        char *buf = NULL;

        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return NULL;
        return g_strstrip(buf);
}

static bool dir_exists(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Absolute path of a cgroup given relative to the mount. */
static char *abs_path(const NpBackend *b, const char *rel) {
        return g_build_filename(b->mount, rel, NULL);
}

static const char *tasks_file(const NpBackend *b) {
        return b->mode == NP_CGROUP_V2 ? "cgroup.procs" : "tasks";
}

/* Ids listed in <dir>/tasks (v1) or cgroup.procs (v2). */
static GArray *read_ids(const NpBackend *b, const char *dir) {
        g_autofree char *path = g_build_filename(dir, tasks_file(b), NULL);
        g_autofree char *buf = NULL;
        GArray *a = g_array_new(FALSE, FALSE, sizeof(pid_t));
        g_auto(GStrv) lines = NULL;

        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return a;
        lines = g_strsplit(buf, "\n", 0);
        for (char **l = lines; *l; l++) {
                pid_t id = (pid_t)atoi(*l);
                if (id > 0)
                        g_array_append_val(a, id);
        }
        return a;
}

/* A libcgroup cgroup with the cpuset controller for a relative path. */
static struct cgroup *v1_cgroup(const char *rel, struct cgroup_controller **ctl) {
        const char *name = rel;
        struct cgroup *cg;
        struct cgroup_controller *c;

        while (*name == '/')
                name++;
        cg = cgroup_new_cgroup(*name ? name : "/");
        if (!cg)
                return NULL;
        c = cgroup_add_controller(cg, "cpuset");
        if (!c) {
                cgroup_free(&cg);
                return NULL;
        }
        if (ctl)
                *ctl = c;
        return cg;
}

static bool in_hierarchy(const NpBackend *b, const char *rel) {
        size_t n = strlen(b->cgroup_name);

        return rel[0] == '/' && strncmp(rel + 1, b->cgroup_name, n) == 0 &&
               (rel[1 + n] == '\0' || rel[1 + n] == '/');
}

/* ---- detection ---- */

int np_cpuset_detect(NpBackend *b, char **why) {
        g_autofree char *mountinfo = NULL;
        g_autofree char *v1 = NULL, *v2 = NULL, *v1_root = NULL;
        g_auto(GStrv) lines = NULL;

        if (!g_file_get_contents("/proc/self/mountinfo", &mountinfo, NULL, NULL)) {
                *why = g_strdup("cannot read /proc/self/mountinfo");
                return -ENOENT;
        }
        lines = g_strsplit(mountinfo, "\n", 0);
        for (char **l = lines; *l; l++) {
                /* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
                g_auto(GStrv) f = g_strsplit(*l, " ", 0);
                guint n = g_strv_length(f), dash;

                if (n < 10)
                        continue;
                for (dash = 6; dash < n && strcmp(f[dash], "-") != 0; dash++)
                        ;
                if (dash + 3 >= n)
                        continue;
                if (!v1 && strcmp(f[dash + 1], "cgroup") == 0) {
                        g_auto(GStrv) opts = g_strsplit(f[dash + 3], ",", 0);
                        if (g_strv_contains((const char *const *)opts, "cpuset")) {
                                v1 = g_strcompress(f[4]);
                                v1_root = g_strcompress(f[3]);
                        }
                } else if (!v2 && strcmp(f[dash + 1], "cgroup2") == 0) {
                        g_autofree char *mp = g_strcompress(f[4]);
                        g_autofree char *cpath = g_build_filename(mp, "cgroup.controllers", NULL);
                        g_autofree char *ctl = read_trimmed(cpath);
                        g_auto(GStrv) names = ctl ? g_strsplit(ctl, " ", 0) : NULL;

                        if (names && g_strv_contains((const char *const *)names, "cpuset"))
                                v2 = g_steal_pointer(&mp);
                }
        }

        g_free(b->mount);
        b->mount = NULL;
        if (v1) {
                char *mp = NULL;
                int r = cgroup_init();

                if (r != 0) {
                        *why = g_strdup_printf("libcgroup cannot initialise: %s", cgroup_strerror(r));
                        return -ENOENT;
                }
                b->libcgroup_ready = true;
                r = cgroup_get_subsys_mount_point("cpuset", &mp);
                if (r != 0 || !mp) {
                        *why = g_strdup_printf("libcgroup finds no cpuset mount: %s", cgroup_strerror(r));
                        return -ENOENT;
                }
                if (strcmp(mp, v1) != 0)
                        log_debug("cpuset is mounted at %s and %s; libcgroup uses %s", v1, mp, mp);
                if (g_strcmp0(v1_root, "/") != 0)
                        log_warning("The cpuset mount %s shows the subtree %s, not the root; cgroup paths "
                                    "may not match /proc/PID/cgroup",
                                    mp, v1_root);
                b->mount = g_strdup(mp);
                free(mp);
                b->mode = NP_CGROUP_V1;
        } else if (v2) {
                if (sd_booted() > 0) {
                        *why = g_strdup_printf("cgroup v2 (%s) is managed by systemd, which must be its only "
                                               "writer; use Backend=systemd or affinity",
                                               v2);
                        return -EBUSY;
                }
                b->mount = g_steal_pointer(&v2);
                b->mode = NP_CGROUP_V2;
        } else {
                *why = g_strdup("no cpuset cgroup hierarchy is mounted (neither a v1 cpuset mount nor a "
                                "cgroup2 mount offering cpuset)");
                return -ENOENT;
        }

        if (access(b->mount, W_OK) < 0) {
                int r = -errno;
                *why = g_strdup_printf("the cpuset hierarchy %s is not writable: %s", b->mount, g_strerror(-r));
                b->mode = NP_CGROUP_NONE;
                return r;
        }
        g_free(b->hierarchy);
        b->hierarchy = g_build_filename(b->mount, b->cgroup_name, NULL);
        return 0;
}

char *np_cpuset_cgroup_for(const NpBackend *b, const NpMask *nodes) {
        g_autofree char *list = np_mask_format(nodes);

        g_strdelimit(list, ",", '_');
        if (strlen(list) > 200)
                return g_strdup_printf("/%s/nodes-h%08x", b->cgroup_name, g_str_hash(list));
        return g_strdup_printf("/%s/nodes-%s", b->cgroup_name, list);
}

int np_cpuset_current(const NpBackend *b, pid_t tid, char **out) {
        g_autofree char *path = NULL, *buf = NULL;
        g_auto(GStrv) lines = NULL;

        if (b->mode == NP_CGROUP_V1) {
                char *cur = NULL;
                int r = cgroup_get_current_controller_path(tid, "cpuset", &cur);

                if (r != 0 || !cur) {
                        free(cur);
                        r = cg_errno(r);
                        /* /proc/TID/cgroup is gone with the thread. */
                        return r == -ENOENT || r == -EIO ? -ESRCH : r;
                }
                *out = g_strdup(cur);
                free(cur);
                return 0;
        }

        /* v2: the "0::/path" line. */
        path = g_strdup_printf("/proc/%d/cgroup", (int)tid);
        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return -ESRCH;
        lines = g_strsplit(buf, "\n", 0);
        for (char **l = lines; *l; l++)
                if (g_str_has_prefix(*l, "0::")) {
                        *out = g_strdup(*l + 3);
                        return 0;
                }
        return -ENOENT;
}

/* ---- creating the hierarchy ---- */

/* v1: create or update one cgroup with the given values (name=value pairs,
 * NULL-terminated). */
static int v1_apply(const NpBackend *b, const char *rel, const char *const *kv, GError **error) {
        g_autofree char *path = abs_path(b, rel);
        struct cgroup_controller *ctl = NULL;
        struct cgroup *cg = v1_cgroup(rel, &ctl);
        bool exists = dir_exists(path);
        int r = 0;

        if (!cg)
                return -ENOMEM;
        for (const char *const *p = kv; *p && p[1]; p += 2) {
                r = cgroup_add_value_string(ctl, p[0], p[1]);
                if (r != 0)
                        break;
        }
        if (r == 0)
                r = exists ? cgroup_modify_cgroup(cg) : cgroup_create_cgroup(cg, 1);
        r = cg_errno(r);
        cgroup_free(&cg);
        if (r == 0 && !dir_exists(path))
                r = -EIO;
        if (r < 0) {
                g_autofree char *values = g_strjoinv(" ", (char **)kv);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot %s cgroup %s (%s): %s",
                            exists ? "update" : "create", path, values, g_strerror(-r));
        }
        return r;
}

static int v1_ensure(NpBackend *b, const NpStateProcess *p, GError **error) {
        g_autofree char *root_cpus = NULL, *root_mems = NULL, *parent = NULL;
        g_autofree char *cpus = np_mask_format(p->cpus), *mems = np_mask_format(p->nodes);
        g_autofree char *f_cpus = g_build_filename(b->mount, "cpuset.cpus", NULL);
        g_autofree char *f_mems = g_build_filename(b->mount, "cpuset.mems", NULL);
        int r;

        /* Reading the root's values directly is simplest; every write goes
         * through libcgroup. */
        root_cpus = read_trimmed(f_cpus);
        root_mems = read_trimmed(f_mems);
        if (!root_cpus || !root_mems) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "cannot read %s or %s", f_cpus, f_mems);
                return -ENOENT;
        }
        parent = g_strdup_printf("/%s", b->cgroup_name);
        {
                const char *const kv[] = { "cpuset.cpus", root_cpus, "cpuset.mems", root_mems,
                                           "cpuset.memory_migrate", "0", NULL };
                r = v1_apply(b, parent, kv, error);
                if (r < 0)
                        return r;
        }
        {
                const char *const kv[] = { "cpuset.cpus", cpus, "cpuset.mems", mems,
                                           "cpuset.memory_migrate", "0", NULL };
                return v1_apply(b, p->cgroup, kv, error);
        }
}

static int v2_write(const NpBackend *b, const char *rel, const char *file, const char *value, GError **error) {
        g_autofree char *dir = abs_path(b, rel);
        g_autofree char *path = g_build_filename(dir, file, NULL);
        int r = write_file(path, value);

        if (r < 0)
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot write '%s' to %s: %s",
                            value, path, g_strerror(-r));
        return r;
}

static int v2_mkdir(const NpBackend *b, const char *rel, GError **error) {
        g_autofree char *path = abs_path(b, rel);

        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                int r = -errno;
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot create cgroup %s: %s",
                            path, g_strerror(-r));
                return r;
        }
        return 0;
}

/* v2: direct cgroupfs writes (see the top of the file). */
static int v2_ensure(NpBackend *b, const NpStateProcess *p, GError **error) {
        g_autofree char *parent = g_strdup_printf("/%s", b->cgroup_name);
        g_autofree char *cpus = np_mask_format(p->cpus), *mems = np_mask_format(p->nodes);
        int r;

        r = v2_write(b, "/", "cgroup.subtree_control", "+cpuset", error);
        if (r < 0)
                return r;
        r = v2_mkdir(b, parent, error);
        if (r < 0)
                return r;
        r = v2_write(b, parent, "cgroup.subtree_control", "+cpuset", error);
        if (r < 0)
                return r;
        r = v2_mkdir(b, p->cgroup, error);
        if (r < 0)
                return r;
        r = v2_write(b, p->cgroup, "cpuset.cpus", cpus, error);
        if (r < 0)
                return r;
        return v2_write(b, p->cgroup, "cpuset.mems", mems, error);
}

/* ---- moving ---- */

static int v1_attach(const char *rel, pid_t tid) {
        struct cgroup *cg = v1_cgroup(rel, NULL);
        int r;

        if (!cg)
                return -ENOMEM;
        r = cg_errno(cgroup_attach_task_pid(cg, tid));
        cgroup_free(&cg);
        return r;
}

/* Record the originals of tid unless already recorded. true when a new
 * record was added. A thread found inside a daemon cgroup was born there
 * (or is being re-placed): its originals are unknown and release falls back
 * to the leader's. */
static bool record_thread(NpBackend *b, NpStateProcess *p, pid_t tid) {
        g_autofree char *cur = NULL;
        g_autoptr(NpMask) aff = NULL;

        if (np_state_process_thread(p, tid))
                return false;
        if (np_cpuset_current(b, tid, &cur) < 0)
                return false; /* gone */
        if (in_hierarchy(b, cur)) {
                np_state_process_add_thread(p, tid, NULL, NULL);
                return true;
        }
        (void)np_thread_get_affinity(tid, &aff);
        np_state_process_add_thread(p, tid, cur, aff);
        return true;
}

static int call_migrate(NpStateProcess *p, NpMigrateFn migrate, void *userdata) {
        int r;

        if (!migrate)
                return 0;
        r = migrate(p->pid, userdata);
        if (r == -ESRCH)
                return r;
        if (r < 0) {
                g_autofree char *nodes = np_mask_format(p->nodes);
                log_warning("Pid %d: moving its memory to nodes %s failed (%s); it stays confined there",
                            (int)p->pid, nodes, g_strerror(-r));
        }
        return 0;
}

/* A new thread already in the target was born there (a moved thread
 * created it): nothing to do, and its originals are the leader's. */
static bool v1_thread_placed(NpBackend *b, const NpStateProcess *p, pid_t tid) {
        g_autofree char *cur = NULL;
        return np_cpuset_current(b, tid, &cur) < 0 || g_strcmp0(cur, p->cgroup) == 0;
}

static int v1_thread_move(NpBackend *b, NpStateProcess *p, pid_t tid, GError **error) {
        int r = v1_attach(p->cgroup, tid);
        if (r < 0 && r != -ESRCH)
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot move thread %d into cgroup %s%s: %s",
                            (int)tid, b->mount, p->cgroup, g_strerror(-r));
        return r;
}

static const NpThreadMover v1_mover = { v1_thread_placed, record_thread, v1_thread_move };

static int v1_place(NpBackend *b, NpStateProcess *p, NpMigrateFn migrate, void *userdata, GError **error) {
        int r = v1_ensure(b, p, error);
        if (r < 0)
                return r;
        r = np_backend_move_threads(b, p, &v1_mover, error);
        if (r < 0)
                return r;
        return call_migrate(p, migrate, userdata);
}

static int v2_place(NpBackend *b, NpStateProcess *p, NpMigrateFn migrate, void *userdata, GError **error) {
        g_autofree char *staging = g_strdup_printf("/%s/staging-%d", b->cgroup_name, (int)p->pid);
        g_autofree char *cpus = np_mask_format(p->cpus);
        g_autofree char *pid_s = g_strdup_printf("%d", (int)p->pid);
        g_autofree char *cur = NULL;
        g_autoptr(GArray) tids = NULL;
        bool dirty = false;
        int r;

        r = v2_ensure(b, p, error);
        if (r < 0)
                return r;
        if (np_proc_tids(p->pid, &tids) < 0)
                return -ESRCH;
        for (guint i = 0; i < tids->len; i++)
                dirty |= record_thread(b, p, g_array_index(tids, pid_t, i));
        if (dirty) {
                r = np_backend_save_state(b, error);
                if (r < 0)
                        return r;
        }

        if (np_cpuset_current(b, p->pid, &cur) < 0)
                return -ESRCH;
        if (g_strcmp0(cur, p->cgroup) != 0) {
                /* 1. CPUs only: the staging cgroup keeps the parent's mems. */
                r = v2_mkdir(b, staging, error);
                if (r < 0)
                        return r;
                r = v2_write(b, staging, "cpuset.cpus", cpus, error);
                if (r >= 0)
                        r = v2_write(b, staging, "cgroup.procs", pid_s, error);
                if (r < 0)
                        goto out;
                /* 2. The daemon's plan moves the pages. */
                r = call_migrate(p, migrate, userdata);
                if (r < 0)
                        goto out;
        } else {
                r = call_migrate(p, migrate, userdata);
                if (r < 0)
                        return r;
        }
        /* 3. Narrow the mems: the kernel moves what the plan left. */
        r = v2_write(b, p->cgroup, "cgroup.procs", pid_s, error);
out:
        if (r < 0 && !np_proc_alive(p->pid, p->starttime))
                r = -ESRCH;
        if (r == -ESRCH) {
                /* Gone: nobody will restore it, so its cgroups go now (the
                 * caller's restore returns early for a dead process). */
                (void)np_cpuset_remove_if_empty(b, staging);
                (void)np_cpuset_remove_if_empty(b, p->cgroup);
                return r;
        }
        if (r < 0) {
                /* The caller puts the process back; then staging is empty. */
                return r;
        }
        (void)np_cpuset_remove_if_empty(b, staging);
        return 0;
}

int np_cpuset_place(NpBackend *b, NpStateProcess *p, NpMigrateFn migrate, void *userdata, GError **error) {
        g_return_val_if_fail(b->mode != NP_CGROUP_NONE && p->cgroup, -EINVAL);

        return b->mode == NP_CGROUP_V2 ? v2_place(b, p, migrate, userdata, error)
                                       : v1_place(b, p, migrate, userdata, error);
}

/* ---- putting back ---- */

/* The hierarchy's parent: where strays and orphans go. */
static const char *fallback_cgroup(void) {
        return "/";
}

int np_cpuset_restore(NpBackend *b, const NpStateProcess *p) {
        g_autoptr(GArray) tids = NULL;
        const char *orig_proc = p->orig_cgroup ? p->orig_cgroup : fallback_cgroup();
        int ret = 0, r;

        if (np_proc_tids(p->pid, &tids) < 0)
                return 0; /* gone: nothing to put back */

        if (b->mode == NP_CGROUP_V2) {
                g_autofree char *staging = g_strdup_printf("/%s/staging-%d", b->cgroup_name, (int)p->pid);

                g_autofree char *pid_s = g_strdup_printf("%d", (int)p->pid);
                g_autofree char *dir = abs_path(b, orig_proc);
                g_autofree char *path = g_build_filename(dir, "cgroup.procs", NULL);

                r = write_file(path, pid_s);
                if (r < 0 && r != -ESRCH) {
                        g_autofree char *root = g_build_filename(b->mount, "cgroup.procs", NULL);
                        log_warning("Cannot put pid %d back in cgroup %s (%s); moving it to the root cgroup",
                                    (int)p->pid, orig_proc, g_strerror(-r));
                        ret = r;
                        r = write_file(root, pid_s);
                        if (r == 0)
                                ret = 0;
                }
                /* A placement that failed half-way leaves it (now empty). */
                (void)np_cpuset_remove_if_empty(b, staging);
        } else {
                for (guint i = 0; i < tids->len; i++) {
                        pid_t tid = g_array_index(tids, pid_t, i);
                        const NpStateThread *t = np_state_process_thread(p, tid);
                        const char *target = t && t->cgroup ? t->cgroup : orig_proc;

                        if (in_hierarchy(b, target))
                                target = fallback_cgroup();
                        r = v1_attach(target, tid);
                        if (r < 0 && r != -ESRCH && strcmp(target, fallback_cgroup()) != 0) {
                                log_warning("Cannot put thread %d of pid %d back in cgroup %s (%s); moving it "
                                            "to %s",
                                            (int)tid, (int)p->pid, target, g_strerror(-r), fallback_cgroup());
                                r = v1_attach(fallback_cgroup(), tid);
                        }
                        if (r < 0 && r != -ESRCH) {
                                log_warning("Cannot move thread %d of pid %d out of %s: %s", (int)tid,
                                            (int)p->pid, p->cgroup, g_strerror(-r));
                                if (ret == 0)
                                        ret = r;
                        }
                }
        }

        /* Leaving a cpuset resets the CPU affinity to the new cpuset's CPUs:
         * give each thread the affinity it had (when it was narrower). */
        for (guint i = 0; i < tids->len; i++) {
                pid_t tid = g_array_index(tids, pid_t, i);
                const NpStateThread *t = np_state_process_thread(p, tid);
                const NpMask *aff = t && t->affinity ? t->affinity : p->orig_affinity;

                if (!aff || np_mask_empty(aff))
                        continue;
                r = np_thread_set_affinity(tid, aff);
                if (r < 0 && r != -ESRCH)
                        log_debug("Cannot restore the affinity of thread %d of pid %d: %s", (int)tid,
                                  (int)p->pid, g_strerror(-r));
        }
        return ret;
}

/* ---- removing ---- */

static int remove_dir(NpBackend *b, const char *rel) {
        g_autofree char *path = abs_path(b, rel);

        for (int attempt = 0; attempt < 20; attempt++) {
                if (!dir_exists(path))
                        return 0;
                if (b->mode == NP_CGROUP_V1) {
                        struct cgroup *cg = v1_cgroup(rel, NULL);
                        if (!cg)
                                return -ENOMEM;
                        /* libcgroup 2.0.2 reports success even when the
                         * directory stays: the check above decides. */
                        (void)cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_EMPTY_ONLY);
                        cgroup_free(&cg);
                } else if (rmdir(path) < 0 && errno != EBUSY && errno != ENOENT) {
                        return -errno;
                }
                if (!dir_exists(path))
                        return 0;
                /* Exiting threads can keep a cgroup busy for a moment. */
                g_usleep(5000);
        }
        return -EBUSY;
}

int np_cpuset_remove_if_empty(NpBackend *b, const char *cgroup) {
        g_autofree char *path = NULL;
        g_autoptr(GArray) ids = NULL;

        if (b->mode == NP_CGROUP_NONE || !cgroup || !in_hierarchy(b, cgroup))
                return -EINVAL;
        path = abs_path(b, cgroup);
        if (!dir_exists(path))
                return 0;
        ids = read_ids(b, path);
        if (ids->len > 0)
                return -EBUSY;
        return remove_dir(b, cgroup);
}

/* Post-order: children first, strays out, then the directory itself. */
static int remove_tree(NpBackend *b, const char *rel) {
        g_autofree char *path = abs_path(b, rel);
        g_autoptr(GArray) ids = NULL;
        int ret = 0, r;
        DIR *d;

        d = opendir(path);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                g_autofree char *child = NULL, *child_abs = NULL;

                if (de->d_name[0] == '.')
                        continue;
                child = g_strdup_printf("%s/%s", rel, de->d_name);
                child_abs = abs_path(b, child);
                if (!dir_exists(child_abs))
                        continue;
                r = remove_tree(b, child);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        closedir(d);

        ids = read_ids(b, path);
        for (guint i = 0; i < ids->len; i++) {
                pid_t id = g_array_index(ids, pid_t, i);
                g_autofree char *comm = np_proc_comm(id);

                log_warning("Task %d (%s) is still in the daemon's cgroup %s; moving it to %s", (int)id, comm,
                            rel, fallback_cgroup());
                if (b->mode == NP_CGROUP_V2) {
                        g_autofree char *root = g_build_filename(b->mount, "cgroup.procs", NULL);
                        g_autofree char *id_s = g_strdup_printf("%d", (int)id);
                        r = write_file(root, id_s);
                } else {
                        r = v1_attach(fallback_cgroup(), id);
                }
                if (r < 0 && r != -ESRCH)
                        log_warning("Cannot move task %d out of %s: %s", (int)id, rel, g_strerror(-r));
        }

        r = remove_dir(b, rel);
        if (r < 0) {
                log_warning("Cannot remove cgroup %s: %s", path, g_strerror(-r));
                if (ret == 0)
                        ret = r;
        }
        return ret;
}

int np_cpuset_remove_all(NpBackend *b) {
        g_autofree char *rel = NULL;

        if (b->mode == NP_CGROUP_NONE || !b->hierarchy)
                return 0;
        if (!dir_exists(b->hierarchy))
                return 0;
        rel = g_strdup_printf("/%s", b->cgroup_name);
        return remove_tree(b, rel);
}
