/* SPDX-License-Identifier: GPL-2.0-or-later */
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
 * child per node set, "numaplaced/nodes-3-4" ("numaplaced/mem-3-4" for
 * processes whose memory only is held there, "numaplaced/mem-3-on-1-3" when
 * their threads run on nodes 1-3), with cpuset.cpus = the CPUs,
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
#include "np-cleanup.h"
#include "np-log.h"

typedef enum {
        NP_CGROUP_NONE,
        NP_CGROUP_V1, /* a cgroup v1 hierarchy with the cpuset controller */
        NP_CGROUP_V2, /* a cgroup2 mount offering the cpuset controller */
} NpCgroupMode;

/* The mechanism's own data (NpMechanism.data). */
typedef struct {
        NpCgroupMode mode;
        char *mount; /* mount point of the cpuset hierarchy */
        char *cgroup_name; /* "numaplaced" */
        char *hierarchy; /* <mount>/<cgroup_name> */
        bool libcgroup_ready; /* cgroup_init() succeeded (v1) */
} NpCpuset;

/* libcgroup's struct cgroup, freed with g_autoptr(NpCgroup). */
typedef struct cgroup NpCgroup;
static void np_cgroup_free(NpCgroup *cg) {
        cgroup_free(&cg);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpCgroup, np_cgroup_free)

static int cs_remove_if_empty(NpCpuset *cs, const char *cgroup);

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
        return (size_t) n == len ? 0 : -EIO;
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
static char *abs_path(const NpCpuset *cs, const char *rel) {
        return g_build_filename(cs->mount, rel, NULL);
}

static const char *tasks_file(const NpCpuset *cs) {
        return cs->mode == NP_CGROUP_V2 ? "cgroup.procs" : "tasks";
}

/* Ids listed in <dir>/tasks (v1) or cgroup.procs (v2). */
static GArray *read_ids(const NpCpuset *cs, const char *dir) {
        g_autofree char *path = g_build_filename(dir, tasks_file(cs), NULL);
        g_autofree char *buf = NULL;
        GArray *a = g_array_new(FALSE, FALSE, sizeof(pid_t));
        g_auto(GStrv) lines = NULL;

        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return a;
        lines = g_strsplit(buf, "\n", 0);
        for (char **l = lines; *l; l++) {
                pid_t id = (pid_t) atoi(*l);
                if (id > 0)
                        g_array_append_val(a, id);
        }
        return a;
}

/* A libcgroup cgroup with the cpuset controller for a relative path. */
static struct cgroup *v1_cgroup(const char *rel, struct cgroup_controller **ctl) {
        const char *name = rel;
        g_autoptr(NpCgroup) cg = NULL;
        struct cgroup_controller *c;

        while (*name == '/')
                name++;
        cg = cgroup_new_cgroup(*name ? name : "/");
        if (!cg)
                return NULL;
        c = cgroup_add_controller(cg, "cpuset");
        if (!c)
                return NULL;
        if (ctl)
                *ctl = c;
        return g_steal_pointer(&cg);
}

static bool in_hierarchy(const NpCpuset *cs, const char *rel) {
        size_t n = strlen(cs->cgroup_name);

        return rel[0] == '/' && strncmp(rel + 1, cs->cgroup_name, n) == 0 && (rel[1 + n] == '\0' || rel[1 + n] == '/');
}

/* ---- detection ---- */

static int cs_detect(NpCpuset *cs, char **why) {
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
                        if (g_strv_contains((const char *const *) opts, "cpuset")) {
                                v1 = g_strcompress(f[4]);
                                v1_root = g_strcompress(f[3]);
                        }
                } else if (!v2 && strcmp(f[dash + 1], "cgroup2") == 0) {
                        g_autofree char *mp = g_strcompress(f[4]);
                        g_autofree char *cpath = g_build_filename(mp, "cgroup.controllers", NULL);
                        g_autofree char *ctl = read_trimmed(cpath);
                        g_auto(GStrv) names = ctl ? g_strsplit(ctl, " ", 0) : NULL;

                        if (names && g_strv_contains((const char *const *) names, "cpuset"))
                                v2 = g_steal_pointer(&mp);
                }
        }

        g_free(cs->mount);
        cs->mount = NULL;
        if (v1) {
                char *mp = NULL;
                int r = cgroup_init();

                if (r != 0) {
                        *why = g_strdup_printf("libcgroup cannot initialise: %s", cgroup_strerror(r));
                        return -ENOENT;
                }
                cs->libcgroup_ready = true;
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
                cs->mount = g_strdup(mp);
                free(mp);
                cs->mode = NP_CGROUP_V1;
        } else if (v2) {
                if (sd_booted() > 0) {
                        *why = g_strdup_printf("cgroup v2 (%s) is managed by systemd, which must be its only "
                                               "writer; use Backend=systemd or affinity",
                                               v2);
                        return -EBUSY;
                }
                cs->mount = g_steal_pointer(&v2);
                cs->mode = NP_CGROUP_V2;
        } else {
                *why = g_strdup("no cpuset cgroup hierarchy is mounted (neither a v1 cpuset mount nor a "
                                "cgroup2 mount offering cpuset)");
                return -ENOENT;
        }

        if (access(cs->mount, W_OK) < 0) {
                int r = -errno;
                *why = g_strdup_printf("the cpuset hierarchy %s is not writable: %s", cs->mount, g_strerror(-r));
                cs->mode = NP_CGROUP_NONE;
                return r;
        }
        g_free(cs->hierarchy);
        cs->hierarchy = g_build_filename(cs->mount, cs->cgroup_name, NULL);
        return 0;
}

static char *cs_cgroup_for(const NpCpuset *cs, const NpMask *nodes, bool memory_only, const NpMask *runs_on) {
        g_autofree char *list = np_mask_format(nodes);
        const char *kind = memory_only ? "mem" : "nodes";

        if (memory_only && runs_on) {
                g_autofree char *on = np_mask_format(runs_on);
                g_autofree char *both = g_strdup_printf("%s-on-%s", list, on);
                g_free(list);
                list = g_steal_pointer(&both);
        }
        g_strdelimit(list, ",", '_');
        if (strlen(list) > 200)
                return g_strdup_printf("/%s/%s-h%08x", cs->cgroup_name, kind, g_str_hash(list));
        return g_strdup_printf("/%s/%s-%s", cs->cgroup_name, kind, list);
}

static int cs_current(const NpCpuset *cs, pid_t tid, char **out) {
        g_autofree char *path = NULL, *buf = NULL;
        g_auto(GStrv) lines = NULL;

        if (cs->mode == NP_CGROUP_V1) {
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
        path = g_strdup_printf("/proc/%d/cgroup", (int) tid);
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
static int v1_apply(const NpCpuset *cs, const char *rel, const char *const *kv, GError **error) {
        g_autofree char *path = abs_path(cs, rel);
        struct cgroup_controller *ctl = NULL;
        g_autoptr(NpCgroup) cg = v1_cgroup(rel, &ctl);
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
        if (r == 0 && !dir_exists(path))
                r = -EIO;
        if (r < 0) {
                g_autofree char *values = g_strjoinv(" ", (char **) kv);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot %s cgroup %s (%s): %s",
                            exists ? "update" : "create", path, values, g_strerror(-r));
        }
        return r;
}

static int v1_ensure(NpCpuset *cs, const NpStateProcess *p, GError **error) {
        g_autofree char *root_cpus = NULL, *root_mems = NULL, *parent = NULL;
        g_autofree char *cpus = np_mask_format(p->cpus), *mems = np_mask_format(p->nodes);
        g_autofree char *f_cpus = g_build_filename(cs->mount, "cpuset.cpus", NULL);
        g_autofree char *f_mems = g_build_filename(cs->mount, "cpuset.mems", NULL);
        int r;

        /* Reading the root's values directly is simplest; every write goes
         * through libcgroup. */
        root_cpus = read_trimmed(f_cpus);
        root_mems = read_trimmed(f_mems);
        if (!root_cpus || !root_mems) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "cannot read %s or %s", f_cpus, f_mems);
                return -ENOENT;
        }
        parent = g_strdup_printf("/%s", cs->cgroup_name);
        {
                const char *const kv[] = { "cpuset.cpus",           root_cpus, "cpuset.mems", root_mems,
                                           "cpuset.memory_migrate", "0",       NULL };
                r = v1_apply(cs, parent, kv, error);
                if (r < 0)
                        return r;
        }
        {
                const char *const kv[] = {
                        "cpuset.cpus", cpus, "cpuset.mems", mems, "cpuset.memory_migrate", "0", NULL
                };
                return v1_apply(cs, p->cgroup, kv, error);
        }
}

static int v2_write(const NpCpuset *cs, const char *rel, const char *file, const char *value, GError **error) {
        g_autofree char *dir = abs_path(cs, rel);
        g_autofree char *path = g_build_filename(dir, file, NULL);
        int r = write_file(path, value);

        if (r < 0)
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot write '%s' to %s: %s", value,
                            path, g_strerror(-r));
        return r;
}

static int v2_mkdir(const NpCpuset *cs, const char *rel, GError **error) {
        g_autofree char *path = abs_path(cs, rel);

        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                int r = -errno;
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot create cgroup %s: %s", path,
                            g_strerror(-r));
                return r;
        }
        return 0;
}

/* v2: direct cgroupfs writes (see the top of the file). */
static int v2_ensure(NpCpuset *cs, const NpStateProcess *p, GError **error) {
        g_autofree char *parent = g_strdup_printf("/%s", cs->cgroup_name);
        g_autofree char *cpus = np_mask_format(p->cpus), *mems = np_mask_format(p->nodes);
        int r;

        r = v2_write(cs, "/", "cgroup.subtree_control", "+cpuset", error);
        if (r < 0)
                return r;
        r = v2_mkdir(cs, parent, error);
        if (r < 0)
                return r;
        r = v2_write(cs, parent, "cgroup.subtree_control", "+cpuset", error);
        if (r < 0)
                return r;
        r = v2_mkdir(cs, p->cgroup, error);
        if (r < 0)
                return r;
        r = v2_write(cs, p->cgroup, "cpuset.cpus", cpus, error);
        if (r < 0)
                return r;
        return v2_write(cs, p->cgroup, "cpuset.mems", mems, error);
}

/* ---- moving ---- */

static int v1_attach(const char *rel, pid_t tid) {
        g_autoptr(NpCgroup) cg = v1_cgroup(rel, NULL);

        if (!cg)
                return -ENOMEM;
        return cg_errno(cgroup_attach_task_pid(cg, tid));
}

/* Record the originals of tid unless already recorded. true when a new
 * record was added. A thread found inside a daemon cgroup was born there
 * (or is being re-placed): its originals are unknown and release falls back
 * to the leader's. */
static bool record_thread(NpCpuset *cs, NpStateProcess *p, pid_t tid) {
        g_autofree char *cur = NULL;
        g_autoptr(NpMask) aff = NULL;

        if (np_state_process_thread(p, tid))
                return false;
        if (cs_current(cs, tid, &cur) < 0)
                return false; /* gone */
        if (in_hierarchy(cs, cur)) {
                np_state_process_add_thread(p, tid, NULL, NULL);
                return true;
        }
        (void) np_thread_get_affinity(tid, &aff);
        np_state_process_add_thread(p, tid, cur, aff);
        return true;
}

/* A new thread already in the target was born there (a moved thread
 * created it): nothing to do, and its originals are the leader's. */
static bool v1_thread_placed(NpCpuset *cs, const NpStateProcess *p, pid_t tid) {
        g_autofree char *cur = NULL;
        return cs_current(cs, tid, &cur) < 0 || g_strcmp0(cur, p->cgroup) == 0;
}

static int v1_thread_move(NpCpuset *cs, NpStateProcess *p, pid_t tid, GError **error) {
        int r = v1_attach(p->cgroup, tid);
        if (r < 0 && r != -ESRCH)
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "cannot move thread %d into cgroup %s%s: %s", (int) tid, cs->mount, p->cgroup,
                            g_strerror(-r));
        return r;
}

static bool v1_placed_cb(void *data, const NpStateProcess *p, pid_t tid) {
        return v1_thread_placed(data, p, tid);
}
static bool record_cb(void *data, NpStateProcess *p, pid_t tid) {
        return record_thread(data, p, tid);
}
static int v1_move_cb(void *data, NpStateProcess *p, pid_t tid, GError **error) {
        return v1_thread_move(data, p, tid, error);
}

static const NpThreadMover v1_mover = { v1_placed_cb, record_cb, v1_move_cb };

static char *staging_of(const NpCpuset *cs, pid_t pid) {
        return g_strdup_printf("/%s/staging-%d", cs->cgroup_name, (int) pid);
}

/* v1: the target cgroup has the CPUs and the mems (memory_migrate=0, so
 * attaching moves no page); every thread is attached. */
/* v1: a CPU that just came online reaches the root cpuset a moment later
 * (the kernel's hotplug work), and a child may only have its parent's
 * CPUs. Confine to those of p->cpus the root has now, or, when it has none
 * of them yet, to all of the root's (as a placement on nodes without CPUs
 * is); recorded, so the next check against the nodes' CPUs confines it
 * again once the root has them. */
static int v1_usable_cpus(NpBackend *b, NpCpuset *cs, NpStateProcess *p) {
        g_autofree char *f_cpus = g_build_filename(cs->mount, "cpuset.cpus", NULL);
        g_autofree char *root_s = read_trimmed(f_cpus);
        g_autoptr(NpMask) root = NULL;
        if (!root_s || np_mask_parse(root_s, &root) < 0 || np_mask_empty(root) || np_mask_subset(p->cpus, root))
                return 0;
        g_autoptr(NpMask) usable = np_mask_copy(p->cpus);
        np_mask_and(usable, root);
        if (np_mask_empty(usable))
                np_mask_assign(usable, root);
        g_autofree char *want = np_mask_format(p->cpus), *got = np_mask_format(usable);
        log_info("Pid %d: CPUs %s are not all in the root cpuset yet (%s): confined to %s for now", (int) p->pid, want,
                 root_s, got);
        np_mask_assign(p->cpus, usable);
        return np_backend_save_state(b, NULL);
}

static int v1_confine(NpBackend *b, NpCpuset *cs, NpStateProcess *p, GError **error) {
        int r = v1_usable_cpus(b, cs, p);
        if (r < 0)
                return r;
        r = v1_ensure(cs, p, error);
        if (r < 0)
                return r;
        r = np_backend_move_threads(b, cs, p, &v1_mover, error);
        if (r < 0)
                return r;
        /* A listing of /proc/PID/task ends early when the thread it stands
         * on exits, so a thread born meanwhile can be missed by every pass.
         * Writing the process to cgroup.procs moves all of its threads at
         * once (under the kernel's threadgroup lock, against clone): none
         * stays behind. Those the passes did not see have no record and go
         * back with the leader's originals. */
        g_autofree char *dir = abs_path(cs, p->cgroup);
        g_autofree char *procs = g_build_filename(dir, "cgroup.procs", NULL);
        g_autofree char *pid_s = g_strdup_printf("%d", (int) p->pid);
        r = write_file(procs, pid_s);
        if (r < 0 && r != -ESRCH) {
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot move pid %d into %s: %s",
                            (int) p->pid, procs, g_strerror(-r));
                return r;
        }
        return 0;
}

/* v2: see the top of the file. Steps 1 (here) and 3 (finish). */
static int v2_confine(NpBackend *b, NpCpuset *cs, NpStateProcess *p, GError **error) {
        g_autofree char *staging = staging_of(cs, p->pid);
        g_autofree char *cpus = np_mask_format(p->cpus);
        g_autofree char *pid_s = g_strdup_printf("%d", (int) p->pid);
        g_autofree char *cur = NULL;
        g_autoptr(GArray) tids = NULL;
        bool dirty = false;
        int r;

        r = v2_ensure(cs, p, error);
        if (r < 0)
                return r;
        if (np_proc_tids(p->pid, &tids) < 0)
                return -ESRCH;
        for (guint i = 0; i < tids->len; i++)
                dirty |= record_thread(cs, p, g_array_index(tids, pid_t, i));
        if (dirty) {
                r = np_backend_save_state(b, error);
                if (r < 0)
                        return r;
        }
        if (cs_current(cs, p->pid, &cur) < 0)
                return -ESRCH;
        if (g_strcmp0(cur, p->cgroup) == 0)
                return 0; /* re-placed on the same nodes: nothing to stage */
        /* 1. CPUs only: the staging cgroup keeps the parent's mems. */
        r = v2_mkdir(cs, staging, error);
        if (r >= 0)
                r = v2_write(cs, staging, "cpuset.cpus", cpus, error);
        if (r >= 0)
                r = v2_write(cs, staging, "cgroup.procs", pid_s, error);
        if (r < 0 && !np_proc_alive(p->pid, p->starttime))
                r = -ESRCH;
        return r;
}

static int v2_finish(NpCpuset *cs, NpStateProcess *p, GError **error) {
        g_autofree char *staging = staging_of(cs, p->pid);
        g_autofree char *pid_s = g_strdup_printf("%d", (int) p->pid);
        g_autofree char *cur = NULL;
        int r = 0;

        if (cs_current(cs, p->pid, &cur) < 0)
                return -ESRCH;
        /* 3. Narrow the mems: the kernel moves what the plan left. */
        if (g_strcmp0(cur, p->cgroup) != 0)
                r = v2_write(cs, p->cgroup, "cgroup.procs", pid_s, error);
        if (r < 0 && !np_proc_alive(p->pid, p->starttime))
                r = -ESRCH;
        if (r == 0)
                (void) cs_remove_if_empty(cs, staging);
        return r;
}

/* ---- putting back ---- */

/* The hierarchy's parent: where strays and orphans go. */
static const char *fallback_cgroup(void) {
        return "/";
}

/* v1: one thread back to the cgroup it came from (or the leader's, or the
 * root's when that fails). */
static int v1_restore_thread(NpCpuset *cs, const NpStateProcess *p, pid_t tid, const char *orig_proc) {
        const NpStateThread *t = np_state_process_thread(p, tid);
        const char *target = t && t->cgroup ? t->cgroup : orig_proc;

        if (in_hierarchy(cs, target))
                target = fallback_cgroup();
        int r = v1_attach(target, tid);
        if (r < 0 && r != -ESRCH && strcmp(target, fallback_cgroup()) != 0) {
                log_warning("Cannot put thread %d of pid %d back in cgroup %s (%s); moving it to %s", (int) tid,
                            (int) p->pid, target, g_strerror(-r), fallback_cgroup());
                r = v1_attach(fallback_cgroup(), tid);
        }
        if (r < 0 && r != -ESRCH) {
                log_warning("Cannot move thread %d of pid %d out of %s: %s", (int) tid, (int) p->pid, p->cgroup,
                            g_strerror(-r));
                return r;
        }
        return 0;
}

static int cs_restore(NpBackend *b, NpCpuset *cs, const NpStateProcess *p) {
        g_autoptr(GArray) tids = NULL;
        const char *orig_proc = p->orig_cgroup ? p->orig_cgroup : fallback_cgroup();
        int ret = 0, r;

        if (np_proc_tids(p->pid, &tids) < 0)
                return 0; /* gone: nothing to put back */

        if (cs->mode == NP_CGROUP_V2) {
                g_autofree char *staging = g_strdup_printf("/%s/staging-%d", cs->cgroup_name, (int) p->pid);

                g_autofree char *pid_s = g_strdup_printf("%d", (int) p->pid);
                g_autofree char *dir = abs_path(cs, orig_proc);
                g_autofree char *path = g_build_filename(dir, "cgroup.procs", NULL);

                r = write_file(path, pid_s);
                if (r < 0 && r != -ESRCH) {
                        g_autofree char *root = g_build_filename(cs->mount, "cgroup.procs", NULL);
                        log_warning("Cannot put pid %d back in cgroup %s (%s); moving it to the root cgroup",
                                    (int) p->pid, orig_proc, g_strerror(-r));
                        ret = r;
                        r = write_file(root, pid_s);
                        if (r == 0)
                                ret = 0;
                }
                /* A placement that failed half-way leaves it (now empty). */
                (void) cs_remove_if_empty(cs, staging);
        } else {
                g_autoptr(GHashTable) tried = g_hash_table_new(g_direct_hash, g_direct_equal);
                for (unsigned pass = 0; pass < NP_MOVE_MAX_PASSES; pass++) {
                        /* Later passes find the threads an earlier listing
                         * missed (see v1_confine) still in the hierarchy. */
                        unsigned left = 0;
                        if (pass > 0) {
                                g_clear_pointer(&tids, g_array_unref);
                                if (np_proc_tids(p->pid, &tids) < 0)
                                        break;
                        }
                        for (guint i = 0; i < tids->len; i++) {
                                pid_t tid = g_array_index(tids, pid_t, i);
                                g_autofree char *cur = NULL;
                                if (g_hash_table_contains(tried, GINT_TO_POINTER(tid)) ||
                                    (pass > 0 && (cs_current(cs, tid, &cur) < 0 || !in_hierarchy(cs, cur))))
                                        continue;
                                g_hash_table_add(tried, GINT_TO_POINTER(tid));
                                left++;
                                r = v1_restore_thread(cs, p, tid, orig_proc);
                                if (r < 0 && ret == 0)
                                        ret = r;
                        }
                        if (left == 0)
                                break;
                }
        }

        /* Leaving a cpuset resets the CPU affinity to the new cpuset's CPUs:
         * give each thread the affinity it had (when it was narrower). */
        (void) np_backend_restore_affinity(b, p, false);
        return ret;
}

/* ---- removing ---- */

static int remove_dir(NpCpuset *cs, const char *rel) {
        g_autofree char *path = abs_path(cs, rel);

        for (int attempt = 0; attempt < 20; attempt++) {
                if (!dir_exists(path))
                        return 0;
                if (cs->mode == NP_CGROUP_V1) {
                        g_autoptr(NpCgroup) cg = v1_cgroup(rel, NULL);
                        if (!cg)
                                return -ENOMEM;
                        /* libcgroup 2.0.2 reports success even when the
                         * directory stays: the check below decides. */
                        (void) cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_EMPTY_ONLY);
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

static int cs_remove_if_empty(NpCpuset *cs, const char *cgroup) {
        g_autofree char *path = NULL;
        g_autoptr(GArray) ids = NULL;

        if (cs->mode == NP_CGROUP_NONE || !cgroup || !in_hierarchy(cs, cgroup))
                return -EINVAL;
        path = abs_path(cs, cgroup);
        if (!dir_exists(path))
                return 0;
        ids = read_ids(cs, path);
        if (ids->len > 0)
                return -EBUSY;
        return remove_dir(cs, cgroup);
}

/* Post-order: children first, strays out, then the directory itself. */
static int remove_tree(NpCpuset *cs, const char *rel) {
        g_autofree char *path = abs_path(cs, rel);
        g_autoptr(GArray) ids = NULL;
        int ret = 0, r;
        g_autoptr(DIR) d = opendir(path);

        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                g_autofree char *child = NULL, *child_abs = NULL;

                if (de->d_name[0] == '.')
                        continue;
                child = g_strdup_printf("%s/%s", rel, de->d_name);
                child_abs = abs_path(cs, child);
                if (!dir_exists(child_abs))
                        continue;
                r = remove_tree(cs, child);
                if (r < 0 && ret == 0)
                        ret = r;
        }

        ids = read_ids(cs, path);
        for (guint i = 0; i < ids->len; i++) {
                pid_t id = g_array_index(ids, pid_t, i);
                g_autofree char *comm = np_proc_comm(id);

                /* a task of a process that was killed as the daemon stopped
                 * (its release could not move it) leaves by itself, and
                 * remove_dir() waits for that */
                bool exiting = np_proc_exiting(id);
                if (exiting)
                        log_debug("Task %d (%s) in the daemon's cgroup %s is exiting", (int) id, comm, rel);
                else
                        log_warning("Task %d (%s) is still in the daemon's cgroup %s; moving it to %s", (int) id, comm,
                                    rel, fallback_cgroup());
                if (cs->mode == NP_CGROUP_V2) {
                        g_autofree char *root = g_build_filename(cs->mount, "cgroup.procs", NULL);
                        g_autofree char *id_s = g_strdup_printf("%d", (int) id);
                        r = write_file(root, id_s);
                } else {
                        r = v1_attach(fallback_cgroup(), id);
                }
                if (r < 0 && r != -ESRCH && !exiting)
                        log_warning("Cannot move task %d out of %s: %s", (int) id, rel, g_strerror(-r));
        }

        r = remove_dir(cs, rel);
        if (r < 0) {
                log_warning("Cannot remove cgroup %s: %s", path, g_strerror(-r));
                if (ret == 0)
                        ret = r;
        }
        return ret;
}

static int cs_remove_all(NpCpuset *cs) {
        g_autofree char *rel = NULL;

        if (cs->mode == NP_CGROUP_NONE || !cs->hierarchy)
                return 0;
        if (!dir_exists(cs->hierarchy))
                return 0;
        rel = g_strdup_printf("/%s", cs->cgroup_name);
        return remove_tree(cs, rel);
}

/* ---- the operations table ---- */

static void cs_free(void *data) {
        NpCpuset *cs = data;

        if (!cs)
                return;
        g_free(cs->mount);
        g_free(cs->cgroup_name);
        g_free(cs->hierarchy);
        g_free(cs);
}

static int op_probe(NpBackend *b, NpMechanism *m, char **why) {
        NpCpuset *cs = g_new0(NpCpuset, 1);
        int r;

        cs->cgroup_name = g_strdup(b->cgroup_name);
        r = cs_detect(cs, why);
        if (r < 0) {
                cs_free(cs);
                return r;
        }
        m->data = cs;
        return 0;
}

static const char *op_root(const NpMechanism *m) {
        const NpCpuset *cs = m->data;
        return cs ? cs->hierarchy : NULL;
}

static const char *op_variant(const NpMechanism *m) {
        const NpCpuset *cs = m->data;
        return !cs ? NULL : cs->mode == NP_CGROUP_V2 ? "v2" : "v1";
}

static char *op_container_for(const NpMechanism *m, const NpMask *nodes, bool memory_only, const NpMask *runs_on) {
        return cs_cgroup_for(m->data, nodes, memory_only, runs_on);
}

static int op_record(NpBackend *b, NpMechanism *m, NpStateProcess *p) {
        return cs_current(m->data, p->pid, &p->orig_cgroup);
}

static int op_confine(NpBackend *b, NpMechanism *m, NpStateProcess *p, GError **error) {
        NpCpuset *cs = m->data;

        g_return_val_if_fail(cs && p->cgroup, -EINVAL);
        return cs->mode == NP_CGROUP_V2 ? v2_confine(b, cs, p, error) : v1_confine(b, cs, p, error);
}

static int op_finish(NpBackend *b, NpMechanism *m, NpStateProcess *p, GError **error) {
        NpCpuset *cs = m->data;
        return cs->mode == NP_CGROUP_V2 ? v2_finish(cs, p, error) : 0;
}

static int op_restore(NpBackend *b, NpMechanism *m, const NpStateProcess *p) {
        return cs_restore(b, m->data, p);
}

/* Remove the container and any staging cgroup a placement left empty (a
 * process that went away between the two steps on cgroup v2). */
static void op_cleanup(NpBackend *b, NpMechanism *m, const char *container) {
        NpCpuset *cs = m->data;
        g_autoptr(GDir) d = g_dir_open(cs->hierarchy, 0, NULL);
        const char *name;
        int r;

        r = cs_remove_if_empty(cs, container);
        if (r < 0 && r != -EBUSY && r != -EINVAL)
                log_warning("Cannot remove cgroup %s: %s", container, g_strerror(-r));
        while (d && (name = g_dir_read_name(d))) {
                if (g_str_has_prefix(name, "staging-")) {
                        g_autofree char *rel = g_strdup_printf("/%s/%s", cs->cgroup_name, name);
                        (void) cs_remove_if_empty(cs, rel);
                }
        }
}

static int op_remove_all(NpBackend *b, NpMechanism *m) {
        NpCpuset *cs = m->data;
        int r = cs_remove_all(cs);

        if (r < 0)
                log_warning("Cannot remove cgroup hierarchy %s: %s", cs->hierarchy, g_strerror(-r));
        return r;
}

const NpBackendOps np_backend_cpuset_ops = {
        .kind = NP_BACKEND_CPUSET,
        .name = "cpuset",
        .holds_memory = true,
        .probe = op_probe,
        .free_data = cs_free,
        .root = op_root,
        .variant = op_variant,
        .container_for = op_container_for,
        .record = op_record,
        .confine = op_confine,
        .finish = op_finish,
        .restore = op_restore,
        .cleanup = op_cleanup,
        .remove_all = op_remove_all,
};
