/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Confinement backends on the real machine: a helper child process with
 * several threads is placed, released, recovered after a "crash". Needs root
 * and a writable cgroup v1 cpuset hierarchy (the cpuset tests) and at least
 * two CPUs (the affinity test); otherwise the tests are skipped with the
 * reason.
 *
 * Every test uses the cgroup directory "numaplaced-test-<our pid>" (through
 * np_backend_new_full()), never "numaplaced", so a daemon or another test
 * binary on the same machine is not disturbed. The directory is removed at
 * exit and on an assertion failure (best effort).
 */
#include <errno.h>
#include <pthread.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "np-backend-private.h"
#include "np-backend.h"
#include "np-state.h"
#include "np-test-api.h"
#include "np-test-util.h"

static char *cg_name;
static char *cleanup_dir;
static GArray *helpers; /* pid_t of live helper processes */

/* ---- helper process: main thread + 3 threads, thread 0 pinned to CPU 0 ---- */

static gint helper_ready;
static bool helper_churn; /* thread 2 keeps creating short-lived threads */

static gpointer short_thread(gpointer data) {
        return NULL;
}

static gpointer helper_thread(gpointer data) {
        if (GPOINTER_TO_INT(data) == 0 && sysconf(_SC_NPROCESSORS_ONLN) > 1) {
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(0, &set);
                (void) sched_setaffinity(0, sizeof(set), &set);
        }
        g_atomic_int_inc(&helper_ready);
        if (helper_churn && GPOINTER_TO_INT(data) == 2)
                for (;;)
                        g_thread_join(g_thread_new("short", short_thread, NULL));
        for (;;)
                pause();
        return NULL;
}

/* A child with `threads` helper threads, once they are all up; with
 * leader_exits its main thread then exits (pthread_exit) while they run. */
static pid_t spawn_helper_full(int threads, bool leader_exits) {
        int pfd[2];
        char c;
        pid_t pid;

        g_assert_cmpint(pipe(pfd), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(pfd[0]);
                for (int i = 0; i < threads; i++)
                        g_thread_unref(g_thread_new("helper", helper_thread, GINT_TO_POINTER(i)));
                while (g_atomic_int_get(&helper_ready) < threads)
                        g_usleep(1000);
                if (write(pfd[1], "x", 1) != 1)
                        _exit(1);
                if (leader_exits)
                        pthread_exit(NULL);
                for (;;)
                        pause();
        }
        close(pfd[1]);
        g_assert_cmpint(read(pfd[0], &c, 1), ==, 1);
        close(pfd[0]);
        g_array_append_val(helpers, pid);
        return pid;
}

static pid_t spawn_helper(void) {
        return spawn_helper_full(3, false);
}

static void kill_helper(pid_t pid) {
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        for (guint i = 0; i < helpers->len; i++)
                if (g_array_index(helpers, pid_t, i) == pid) {
                        g_array_remove_index(helpers, i);
                        break;
                }
}

/* ---- reading /proc ---- */

static uint64_t starttime_of(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) pid);
        g_autofree char *buf = NULL;
        g_auto(GStrv) f = NULL;

        g_assert_true(g_file_get_contents(path, &buf, NULL, NULL));
        f = g_strsplit(strrchr(buf, ')') + 2, " ", 0);
        return g_ascii_strtoull(f[19], NULL, 10);
}

static GArray *tids_of(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task", (int) pid);
        GArray *a = g_array_new(FALSE, FALSE, sizeof(pid_t));
        g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
        const char *name;

        g_assert_nonnull(d);
        while ((name = g_dir_read_name(d))) {
                pid_t tid = atoi(name);
                g_array_append_val(a, tid);
        }
        return a;
}

static char *status_field(pid_t pid, pid_t tid, const char *field) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task/%d/status", (int) pid, (int) tid);
        g_autofree char *buf = NULL;
        g_auto(GStrv) lines = NULL;
        size_t n = strlen(field);

        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return NULL;
        lines = g_strsplit(buf, "\n", 0);
        for (char **l = lines; *l; l++)
                if (strncmp(*l, field, n) == 0 && (*l)[n] == ':')
                        return g_strstrip(g_strdup(*l + n + 1));
        return NULL;
}

/* The v1 cpuset of one thread, from /proc/PID/task/TID/cgroup. */
static char *cpuset_of(pid_t pid, pid_t tid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task/%d/cgroup", (int) pid, (int) tid);
        g_autofree char *buf = NULL;
        g_auto(GStrv) lines = NULL;

        if (!g_file_get_contents(path, &buf, NULL, NULL))
                return NULL;
        lines = g_strsplit(buf, "\n", 0);
        for (char **l = lines; *l; l++) {
                char *c = strstr(*l, ":cpuset:");
                if (c)
                        return g_strdup(c + strlen(":cpuset:"));
        }
        return NULL;
}

/* The thread leaves /proc/PID/task within 5 s. */
static bool thread_gone_soon(pid_t pid, pid_t tid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/task/%d", (int) pid, (int) tid);

        for (int i = 0; i < 500; i++) {
                if (!g_file_test(path, G_FILE_TEST_EXISTS))
                        return true;
                g_usleep(10000);
        }
        return false;
}

/* tid -> value of some per-thread property, to compare before and after. */
static GHashTable *snapshot(pid_t pid, bool cpusets) {
        g_autoptr(GArray) tids = tids_of(pid);
        GHashTable *h = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);

        for (guint i = 0; i < tids->len; i++) {
                pid_t tid = g_array_index(tids, pid_t, i);
                g_hash_table_insert(h, GINT_TO_POINTER(tid),
                                    cpusets ? cpuset_of(pid, tid) : status_field(pid, tid, "Cpus_allowed_list"));
        }
        return h;
}

static void assert_snapshot_equal(GHashTable *before, GHashTable *after) {
        GHashTableIter it;
        gpointer k, v;

        g_assert_cmpuint(g_hash_table_size(before), ==, g_hash_table_size(after));
        g_hash_table_iter_init(&it, before);
        while (g_hash_table_iter_next(&it, &k, &v))
                g_assert_cmpstr(g_hash_table_lookup(after, k), ==, v);
}

static bool dir_exists(const char *path) {
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- fixtures ---- */

typedef struct {
        char *runtime_dir;
        pid_t migrate_pid;
        int migrate_calls;
        char *cpus_at_migrate;
        char *mems_at_migrate;
        bool state_listed_at_migrate;
        char *state_file;
        bool kill_in_migrate;
} Fixture;

static void fixture_setup(Fixture *f, gconstpointer data) {
        GError *e = NULL;

        f->runtime_dir = g_dir_make_tmp("np-test-backend-XXXXXX", &e);
        g_assert_no_error(e);
        f->state_file = g_build_filename(f->runtime_dir, "state", NULL);
}

static void fixture_teardown(Fixture *f, gconstpointer data) {
        while (helpers->len > 0)
                kill_helper(g_array_index(helpers, pid_t, 0));
        np_test_rm_rf(f->runtime_dir);
        g_free(f->runtime_dir);
        g_free(f->state_file);
        g_free(f->cpus_at_migrate);
        g_free(f->mems_at_migrate);
}

static int migrate_cb(pid_t pid, void *userdata) {
        Fixture *f = userdata;
        g_autoptr(NpState) s = NULL;

        f->migrate_calls++;
        f->migrate_pid = pid;
        g_free(f->cpus_at_migrate);
        g_free(f->mems_at_migrate);
        f->cpus_at_migrate = status_field(pid, pid, "Cpus_allowed_list");
        f->mems_at_migrate = status_field(pid, pid, "Mems_allowed_list");
        f->state_listed_at_migrate = np_state_load(f->state_file, &s, NULL, NULL) == 0 && np_state_lookup(s, pid);
        if (f->kill_in_migrate) {
                kill_helper(pid);
                return -ESRCH;
        }
        return 0;
}

/* A cpuset backend, or NULL after g_test_skip() with the reason. */
static NpBackend *cpuset_backend_or_skip(Fixture *f) {
        g_autoptr(GError) e = NULL;
        NpBackend *b;

        if (geteuid() != 0) {
                g_test_skip("needs root to write cgroups");
                return NULL;
        }
        b = np_backend_new_full(NP_BACKEND_CPUSET, f->runtime_dir, cg_name, &e);
        if (!b) {
                g_autofree char *msg = g_strdup_printf("no usable cpuset hierarchy: %s", e->message);
                g_test_skip(msg);
                return NULL;
        }
        {
                g_autofree char *v1 = cpuset_of(getpid(), getpid());
                if (v1)
                        return b;
        }
        {
                np_backend_free(b);
                g_test_skip("the cpuset hierarchy is not a cgroup v1 cpuset mount (these tests read v1 paths)");
                return NULL;
        }
        return b;
}

static NpMask *mask(const char *s) {
        NpMask *m = NULL;
        g_assert_cmpint(np_mask_parse(s, &m), ==, 0);
        return m;
}

static void assert_all_threads(pid_t pid, const char *cgroup, const char *cpus, const char *mems) {
        g_autoptr(GArray) tids = tids_of(pid);

        g_assert_cmpuint(tids->len, >=, 4);
        for (guint i = 0; i < tids->len; i++) {
                pid_t tid = g_array_index(tids, pid_t, i);
                g_autofree char *cg = cpuset_of(pid, tid);
                g_autofree char *c = status_field(pid, tid, "Cpus_allowed_list");
                g_autofree char *m = status_field(pid, tid, "Mems_allowed_list");

                if (cgroup)
                        g_assert_cmpstr(cg, ==, cgroup);
                if (cpus)
                        g_assert_cmpstr(c, ==, cpus);
                if (mems)
                        g_assert_cmpstr(m, ==, mems);
        }
}

/* ---- tests ---- */

static void test_cpuset_place_release(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GHashTable) orig_cg = NULL, orig_aff = NULL, after_cg = NULL, after_aff = NULL;
        g_autoptr(GError) e = NULL;
        g_autoptr(NpState) s = NULL;
        g_autofree char *cgroup = NULL, *child_dir = NULL;
        NpStateProcess *rec;
        pid_t pid;
        int r;

        if (!b)
                return;
        g_assert_cmpstr(np_backend_name(b), ==, "cpuset");
        g_assert_cmpint(np_backend_kind(b), ==, NP_BACKEND_CPUSET);
        /* a cpuset child per node set: a unit's processes are held each on its own */
        g_assert_cmpint(np_backend_unit_role(b, "pair.service", NULL), ==, NP_UNIT_EACH);
        g_assert_cmpint(np_backend_unit_role(b, "init.scope", NULL), ==, NP_UNIT_EACH);
        pid = spawn_helper();
        orig_cg = snapshot(pid, true);
        orig_aff = snapshot(pid, false);
        nodes = mask("0");
        cpus = mask("0");

        r = np_backend_place(b, pid, starttime_of(pid), nodes, cpus, migrate_cb, f, &e);
        g_assert_no_error(e);
        g_assert_cmpint(r, ==, 0);
        g_assert_true(np_backend_holds(b, pid));

        /* Every thread is in the daemon's cpuset, confined to CPU 0 / node 0. */
        cgroup = g_strdup_printf("/%s/nodes-0", cg_name);
        child_dir = g_build_filename(np_backend_cgroup_hierarchy(b), "nodes-0", NULL);
        g_assert_true(dir_exists(child_dir));
        assert_all_threads(pid, cgroup, "0", "0");

        /* migrate was called once, after the confinement, with the record saved. */
        g_assert_cmpint(f->migrate_calls, ==, 1);
        g_assert_cmpint(f->migrate_pid, ==, pid);
        g_assert_cmpstr(f->cpus_at_migrate, ==, "0");
        g_assert_cmpstr(f->mems_at_migrate, ==, "0");
        g_assert_true(f->state_listed_at_migrate);

        /* The state file lists it with its identity and every thread. */
        g_assert_cmpint(np_state_load(np_backend_state_file(b), &s, NULL, &e), ==, 0);
        g_assert_no_error(e);
        rec = np_state_lookup(s, pid);
        g_assert_nonnull(rec);
        g_assert_cmpuint(rec->starttime, ==, starttime_of(pid));
        g_assert_cmpint(rec->backend, ==, NP_BACKEND_CPUSET);
        g_assert_cmpstr(rec->cgroup, ==, cgroup);
        g_assert_cmpstr(rec->orig_cgroup, ==, g_hash_table_lookup(orig_cg, GINT_TO_POINTER(pid)));
        g_assert_cmpuint(rec->threads->len, ==, g_hash_table_size(orig_cg));
        g_assert_true(np_mask_equal(rec->nodes, nodes));
        g_assert_true(np_mask_equal(rec->cpus, cpus));
        g_assert_nonnull(np_state_process_thread(rec, pid)->affinity);

        /* Placing again on the same nodes keeps it there. */
        r = np_backend_place(b, pid, starttime_of(pid), nodes, cpus, NULL, NULL, &e);
        g_assert_no_error(e);
        g_assert_cmpint(r, ==, 0);
        assert_all_threads(pid, cgroup, "0", "0");

        /* Release: every thread back in its cpuset with its affinity, the
         * child cgroup gone, the record gone. */
        g_assert_cmpint(np_backend_release(b, pid), ==, 0);
        g_assert_false(np_backend_holds(b, pid));
        g_assert_cmpint(np_backend_release(b, pid), ==, -ENOENT);
        after_cg = snapshot(pid, true);
        after_aff = snapshot(pid, false);
        assert_snapshot_equal(orig_cg, after_cg);
        assert_snapshot_equal(orig_aff, after_aff);
        g_assert_false(dir_exists(child_dir));
        g_assert_false(g_file_test(np_backend_state_file(b), G_FILE_TEST_EXISTS));

        /* release_all removes the daemon's hierarchy. */
        g_assert_true(dir_exists(np_backend_cgroup_hierarchy(b)));
        g_assert_cmpint(np_backend_release_all(b), ==, 0);
        g_assert_false(dir_exists(np_backend_cgroup_hierarchy(b)));
}

static void test_cpuset_release_all(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GHashTable) orig1 = NULL, orig2 = NULL, after1 = NULL, after2 = NULL;
        g_autoptr(GError) e = NULL;
        pid_t p1, p2;

        if (!b)
                return;
        p1 = spawn_helper();
        p2 = spawn_helper();
        orig1 = snapshot(p1, true);
        orig2 = snapshot(p2, true);
        nodes = mask("0");
        cpus = mask("0");
        g_assert_cmpint(np_backend_place(b, p1, starttime_of(p1), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_cmpint(np_backend_place(b, p2, starttime_of(p2), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_no_error(e);

        g_assert_cmpint(np_backend_release_all(b), ==, 0);
        g_assert_false(np_backend_holds(b, p1));
        g_assert_false(np_backend_holds(b, p2));
        after1 = snapshot(p1, true);
        after2 = snapshot(p2, true);
        assert_snapshot_equal(orig1, after1);
        assert_snapshot_equal(orig2, after2);
        g_assert_false(dir_exists(np_backend_cgroup_hierarchy(b)));
        g_assert_false(g_file_test(np_backend_state_file(b), G_FILE_TEST_EXISTS));
}

/* A hold of a process's memory only lives in its own child, "mem-0" with
 * every CPU, beside "nodes-0" with node 0's, and a hold whose threads run on
 * given nodes in "mem-0-on-NODES" with the CPUs given: none changes the
 * others' CPUs; all are put back. The affinity mechanism cannot hold
 * memory. */
static void test_cpuset_memory_only(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(GError) e = NULL;

        if (!b)
                return;
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                g_test_skip("needs two CPUs");
                return;
        }
        g_assert_true(np_backend_holds_memory(b));
        pid_t p1 = spawn_helper(), p2 = spawn_helper(), p3 = spawn_helper();
        g_autoptr(GHashTable) orig1 = snapshot(p1, true), orig2 = snapshot(p2, true), orig3 = snapshot(p3, true);
        g_autoptr(NpMask) nodes = mask("0"), cpus = mask("0"), all = mask("0-1"), one = mask("1");
        g_assert_cmpint(np_backend_place(b, p1, starttime_of(p1), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_no_error(e);
        g_assert_cmpint(np_backend_confine_memory(b, p2, starttime_of(p2), nodes, NULL, all, &e), ==, 0);
        g_assert_cmpint(np_backend_finish(b, p2, starttime_of(p2), &e), ==, 0);
        g_assert_no_error(e);
        /* its threads on "node 0", here CPU 1 */
        g_assert_cmpint(np_backend_confine_memory(b, p3, starttime_of(p3), nodes, nodes, one, &e), ==, 0);
        g_assert_cmpint(np_backend_finish(b, p3, starttime_of(p3), &e), ==, 0);
        g_assert_no_error(e);
        g_autofree char *cg1 = cpuset_of(p1, p1), *cg2 = cpuset_of(p2, p2), *cg3 = cpuset_of(p3, p3);
        g_autofree char *want1 = g_strdup_printf("/%s/nodes-0", cg_name),
                        *want2 = g_strdup_printf("/%s/mem-0", cg_name),
                        *want3 = g_strdup_printf("/%s/mem-0-on-0", cg_name);
        g_assert_cmpstr(cg1, ==, want1);
        g_assert_cmpstr(cg2, ==, want2);
        g_assert_cmpstr(cg3, ==, want3);
        g_autofree char *allowed1 = status_field(p1, p1, "Cpus_allowed_list"),
                        *allowed2 = status_field(p2, p2, "Cpus_allowed_list"),
                        *allowed3 = status_field(p3, p3, "Cpus_allowed_list");
        g_autofree char *mems2 = status_field(p2, p2, "Mems_allowed_list"),
                        *mems3 = status_field(p3, p3, "Mems_allowed_list");
        g_assert_cmpstr(allowed1, ==, "0");
        g_assert_cmpstr(allowed2, ==, "0-1");
        g_assert_cmpstr(allowed3, ==, "1");
        g_assert_cmpstr(mems2, ==, "0");
        g_assert_cmpstr(mems3, ==, "0");
        g_assert_cmpint(np_backend_release_all(b), ==, 0);
        g_autoptr(GHashTable) after1 = snapshot(p1, true), after2 = snapshot(p2, true), after3 = snapshot(p3, true);
        assert_snapshot_equal(orig1, after1);
        assert_snapshot_equal(orig2, after2);
        assert_snapshot_equal(orig3, after3);

        g_autoptr(NpBackend) a = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        g_assert_false(np_backend_holds_memory(a));
        g_assert_cmpint(np_backend_confine_memory(a, p2, starttime_of(p2), nodes, NULL, all, &e), ==, -EOPNOTSUPP);
        g_assert_nonnull(e);
        g_assert_false(np_backend_holds(a, p2));
}

static void test_cpuset_crash_recovery(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(NpBackend) b2 = NULL;
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GHashTable) orig_cg = NULL, orig_aff = NULL, after_cg = NULL, after_aff = NULL;
        g_autoptr(GError) e = NULL;
        g_autofree char *hierarchy = NULL, *cgroup = NULL;
        pid_t pid, gone;
        uint64_t gone_st;

        if (!b)
                return;
        pid = spawn_helper();
        gone = spawn_helper();
        gone_st = starttime_of(gone);
        orig_cg = snapshot(pid, true);
        orig_aff = snapshot(pid, false);
        nodes = mask("0");
        cpus = mask("0");
        g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_cmpint(np_backend_place(b, gone, gone_st, nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_no_error(e);
        hierarchy = g_strdup(np_backend_cgroup_hierarchy(b));
        cgroup = g_strdup_printf("/%s/nodes-0", cg_name);

        /* "Crash": the daemon goes away without releasing. One of its
         * processes exits meanwhile. */
        g_clear_pointer(&b, np_backend_free);
        kill_helper(gone);
        assert_all_threads(pid, cgroup, "0", "0");
        g_assert_true(g_file_test(f->state_file, G_FILE_TEST_EXISTS));

        /* The next start puts it back and removes everything it created. */
        b2 = np_backend_new_full(NP_BACKEND_CPUSET, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        g_assert_nonnull(b2);
        g_assert_false(np_backend_holds(b2, pid));
        after_cg = snapshot(pid, true);
        after_aff = snapshot(pid, false);
        assert_snapshot_equal(orig_cg, after_cg);
        assert_snapshot_equal(orig_aff, after_aff);
        g_assert_false(dir_exists(hierarchy));
        g_assert_false(g_file_test(f->state_file, G_FILE_TEST_EXISTS));
}

static void test_cpuset_stray_task(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GError) e = NULL;
        g_autofree char *tasks = NULL, *pid_s = NULL, *cg = NULL;
        pid_t pid, stray;

        if (!b)
                return;
        pid = spawn_helper();
        stray = spawn_helper();
        nodes = mask("0");
        cpus = mask("0");
        g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_no_error(e);

        /* Someone else puts a task into the daemon's cgroup. */
        tasks = g_build_filename(np_backend_cgroup_hierarchy(b), "nodes-0", "cgroup.procs", NULL);
        pid_s = g_strdup_printf("%d", (int) stray);
        {
                FILE *fp = fopen(tasks, "w");
                g_assert_nonnull(fp);
                g_assert_cmpint(fputs(pid_s, fp), >=, 0);
                g_assert_cmpint(fclose(fp), ==, 0);
        }
        cg = cpuset_of(stray, stray);
        g_assert_true(g_str_has_suffix(cg, "/nodes-0"));
        g_clear_pointer(&cg, g_free);

        /* release_all still removes everything; the stray goes to the parent. */
        g_assert_cmpint(np_backend_release_all(b), ==, 0);
        g_assert_false(dir_exists(np_backend_cgroup_hierarchy(b)));
        cg = cpuset_of(stray, stray);
        g_assert_cmpstr(cg, ==, "/");
}

static char stat_state(pid_t tid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int) tid);
        g_autofree char *buf = NULL;
        const char *rp;
        if (!g_file_get_contents(path, &buf, NULL, NULL) || !(rp = strrchr(buf, ')')))
                return '?';
        return rp[2];
}

static void wait_zombie(pid_t pid) {
        for (int i = 0; i < 2000 && stat_state(pid) != 'Z'; i++)
                g_usleep(1000);
        g_assert_cmpint(stat_state(pid), ==, 'Z');
}

/* np_proc_exiting(): what remove_tree() logs at debug rather than warning
 * about (a task of a process killed as the daemon stops). */
static void test_proc_exiting(void) {
        g_autoptr(GArray) tids = NULL;
        int status;
        pid_t pid, other = 0;

        g_assert_false(np_proc_exiting(getpid()));
        g_assert_true(np_proc_exiting(0));

        /* a zombie */
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                _exit(0);
        wait_zombie(pid);
        g_assert_true(np_proc_exiting(pid));
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        /* gone */
        g_assert_true(np_proc_exiting(pid));

        /* a leader that has exited while its other thread runs: the leader
         * is exiting, the thread is not */
        pid = spawn_helper_full(1, true);
        wait_zombie(pid);
        g_assert_cmpint(np_proc_tids(pid, &tids), ==, 0);
        for (guint i = 0; i < tids->len; i++)
                if (g_array_index(tids, pid_t, i) != pid)
                        other = g_array_index(tids, pid_t, i);
        g_assert_cmpint(other, >, 0);
        g_assert_true(np_proc_exiting(pid));
        g_assert_false(np_proc_exiting(other));
        kill_helper(pid);
}

/* Threads appear during the move: it still settles and every thread ends
 * up in the cpuset. */
static void test_cpuset_thread_churn(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GError) e = NULL;
        g_autofree char *cgroup = NULL;
        pid_t pid;

        if (!b)
                return;
        helper_churn = true;
        pid = spawn_helper();
        helper_churn = false;
        nodes = mask("0");
        cpus = mask("0");
        g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_no_error(e);
        cgroup = g_strdup_printf("/%s/nodes-0", cg_name);
        for (int i = 0; i < 3; i++) {
                g_autoptr(GArray) tids = tids_of(pid);
                for (guint j = 0; j < tids->len; j++) {
                        pid_t tid = g_array_index(tids, pid_t, j);
                        g_autofree char *cg = cpuset_of(pid, tid);
                        if (!cg) /* that thread ended meanwhile */
                                continue;
                        if (strcmp(cg, "/") == 0) {
                                /* On v1 the kernel shows an exiting thread in
                                 * "/" whatever its cpuset (proc_cgroup_show,
                                 * PF_EXITING), and the short threads exit all
                                 * the time; one exiting during the move is not
                                 * moved either. Such a thread is gone within
                                 * moments; a live one left in "/" is not. */
                                g_assert_true(thread_gone_soon(pid, tid));
                                continue;
                        }
                        g_assert_cmpstr(cg, ==, cgroup);
                }
        }
        g_assert_cmpint(np_backend_release(b, pid), ==, 0);
        {
                g_autofree char *cg = cpuset_of(pid, pid);
                g_assert_cmpstr(cg, ==, "/");
        }
        kill_helper(pid);
        g_assert_cmpint(np_backend_release_all(b), ==, 0);
        g_assert_false(dir_exists(np_backend_cgroup_hierarchy(b)));
}

static void test_cpuset_gone(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autofree char *child_dir = NULL;
        uint64_t st;
        pid_t pid;
        int r;

        if (!b)
                return;
        nodes = mask("0");
        cpus = mask("0");
        child_dir = g_build_filename(np_backend_cgroup_hierarchy(b), "nodes-0", NULL);

        /* Exited and reaped before placement. */
        pid = spawn_helper();
        st = starttime_of(pid);
        kill_helper(pid);
        {
                g_autoptr(GError) e = NULL;
                r = np_backend_place(b, pid, st, nodes, cpus, migrate_cb, f, &e);
                g_assert_cmpint(r, ==, -ESRCH);
                g_assert_nonnull(e);
        }
        g_assert_false(np_backend_holds(b, pid));
        g_assert_false(dir_exists(child_dir));

        /* A zombie (exited, not reaped) is gone too. */
        pid = spawn_helper();
        st = starttime_of(pid);
        (void) kill(pid, SIGKILL);
        for (int i = 0; i < 1000; i++) {
                g_autofree char *state = status_field(pid, pid, "State");
                if (!state || state[0] == 'Z')
                        break;
                g_usleep(1000);
        }
        {
                g_autoptr(GError) e = NULL;
                r = np_backend_place(b, pid, st, nodes, cpus, migrate_cb, f, &e);
                g_assert_cmpint(r, ==, -ESRCH);
        }
        kill_helper(pid);
        g_assert_false(dir_exists(child_dir));

        /* A reused pid (other starttime) is never touched. */
        pid = spawn_helper();
        {
                g_autoptr(GError) e = NULL;
                g_autofree char *cg = NULL;
                r = np_backend_place(b, pid, starttime_of(pid) + 1, nodes, cpus, migrate_cb, f, &e);
                g_assert_cmpint(r, ==, -ESRCH);
                cg = cpuset_of(pid, pid);
                g_assert_false(g_str_has_prefix(cg + 1, cg_name));
        }

        /* Exits in the middle of the placement (in the migrate callback). */
        g_assert_cmpint(f->migrate_calls, ==, 0);
        f->kill_in_migrate = true;
        {
                g_autoptr(GError) e = NULL;
                r = np_backend_place(b, pid, starttime_of(pid), nodes, cpus, migrate_cb, f, &e);
                g_assert_cmpint(r, ==, -ESRCH);
        }
        g_assert_cmpint(f->migrate_calls, ==, 1);
        g_assert_false(np_backend_holds(b, pid));
        g_assert_false(dir_exists(child_dir));
        g_assert_false(g_file_test(f->state_file, G_FILE_TEST_EXISTS));
        g_assert_cmpint(np_backend_release_all(b), ==, 0);
        g_assert_false(dir_exists(np_backend_cgroup_hierarchy(b)));
}

static void test_cpuset_error(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GError) e = NULL;
        g_autoptr(GHashTable) orig = NULL, after = NULL;
        g_autofree char *child_dir = NULL, *pid_s = NULL;
        pid_t pid;
        int r;

        if (!b)
                return;
        pid = spawn_helper();
        orig = snapshot(pid, true);
        /* A node set the machine does not have: the kernel refuses the mems. */
        nodes = mask("63");
        cpus = mask("0");
        r = np_backend_place(b, pid, starttime_of(pid), nodes, cpus, migrate_cb, f, &e);
        g_assert_cmpint(r, <, 0);
        g_assert_cmpint(r, !=, -ESRCH);
        g_assert_nonnull(e);
        pid_s = g_strdup_printf("pid %d", (int) pid);
        g_assert_nonnull(strstr(e->message, pid_s));
        g_assert_nonnull(strstr(e->message, "nodes 63"));
        g_assert_cmpint(f->migrate_calls, ==, 0);
        g_assert_false(np_backend_holds(b, pid));
        after = snapshot(pid, true);
        assert_snapshot_equal(orig, after);
        child_dir = g_build_filename(np_backend_cgroup_hierarchy(b), "nodes-63", NULL);
        g_assert_false(dir_exists(child_dir));
        g_assert_false(g_file_test(f->state_file, G_FILE_TEST_EXISTS));

        /* Empty masks are refused before anything happens. */
        {
                g_autoptr(GError) e2 = NULL;
                g_autoptr(NpMask) empty = np_mask_new();
                r = np_backend_place(b, pid, starttime_of(pid), empty, cpus, NULL, NULL, &e2);
                g_assert_cmpint(r, ==, -EINVAL);
                g_assert_nonnull(e2);
        }
        g_assert_cmpint(np_backend_release_all(b), ==, 0);
}

static void test_auto(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = NULL;
        g_autoptr(GError) e = NULL;

        if (geteuid() != 0) {
                g_test_skip("needs root to probe the cpuset hierarchy");
                return;
        }
        b = np_backend_new_full(NP_BACKEND_AUTO, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        g_assert_nonnull(b);
        /* cpuset exactly when an explicit cpuset backend works here. */
        {
                g_autofree char *dir = g_build_filename(f->runtime_dir, "probe", NULL);
                g_autoptr(NpBackend) c = np_backend_new_full(NP_BACKEND_CPUSET, dir, cg_name, NULL);
                g_assert_cmpstr(np_backend_name(b), ==, c ? "cpuset" : "affinity");
                np_test_rm_rf(dir);
        }
        g_assert_cmpint(np_backend_release_all(b), ==, 0);
}

/* Without systemd as PID 1 (this test machine), Backend=systemd refuses with
 * the reason and Backend=auto does not pick it. Where systemd does run,
 * Backend=systemd either works or names one of the documented reasons. */
static void test_systemd_probe(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = NULL, a = NULL;
        g_autoptr(GError) e = NULL, ea = NULL;
        g_autofree char *dir = g_build_filename(f->runtime_dir, "auto", NULL);

        b = np_backend_new_full(NP_BACKEND_SYSTEMD, f->runtime_dir, cg_name, &e);
        if (!g_file_test("/run/systemd/system", G_FILE_TEST_EXISTS)) {
                g_assert_null(b);
                g_assert_error(e, G_FILE_ERROR, G_FILE_ERROR_FAILED);
                g_assert_cmpstr(e->message, ==,
                                "Backend=systemd cannot work here: systemd is not PID 1 (no /run/systemd/system)");
        } else if (!b) {
                g_assert_nonnull(e);
                g_assert_true(strstr(e->message, "cgroup hierarchy is not v2") || strstr(e->message, "no system bus"));
        } else {
                g_assert_cmpstr(np_backend_name(b), ==, "systemd");
        }
        a = np_backend_new_full(NP_BACKEND_AUTO, dir, cg_name, &ea);
        g_assert_no_error(ea);
        g_assert_nonnull(a);
        g_assert_cmpstr(np_backend_name(a), !=, b ? "cpuset" : "systemd");
        if (b)
                g_assert_cmpstr(np_backend_name(a), ==, "systemd");
        g_assert_cmpint(np_backend_release_all(a), ==, 0);
        np_test_rm_rf(dir);
}

static void test_affinity(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = NULL;
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GHashTable) orig = NULL, after = NULL;
        g_autoptr(GError) e = NULL;
        g_autoptr(NpState) s = NULL;
        g_autoptr(GArray) tids = NULL;
        GHashTableIter it;
        gpointer v;
        bool distinct = false;
        pid_t pid;

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                g_test_skip("needs two CPUs");
                return;
        }
        b = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        g_assert_cmpstr(np_backend_name(b), ==, "affinity");
        g_assert_null(np_backend_cgroup_hierarchy(b));

        pid = spawn_helper();
        orig = snapshot(pid, false);
        /* One thread has its own affinity (CPU 0), the others the default. */
        g_hash_table_iter_init(&it, orig);
        while (g_hash_table_iter_next(&it, NULL, &v))
                distinct |= g_strcmp0(v, g_hash_table_lookup(orig, GINT_TO_POINTER(pid))) != 0;
        g_assert_true(distinct);

        nodes = mask("0");
        cpus = mask("1");
        g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus, migrate_cb, f, &e), ==, 0);
        g_assert_no_error(e);
        g_assert_true(np_backend_holds(b, pid));
        assert_all_threads(pid, NULL, "1", NULL);
        g_assert_cmpint(f->migrate_calls, ==, 1);
        g_assert_cmpstr(f->cpus_at_migrate, ==, "1");
        g_assert_true(f->state_listed_at_migrate);

        g_assert_cmpint(np_state_load(f->state_file, &s, NULL, &e), ==, 0);
        g_assert_nonnull(np_state_lookup(s, pid));
        g_assert_cmpint(np_state_lookup(s, pid)->backend, ==, NP_BACKEND_AFFINITY);
        tids = tids_of(pid);
        for (guint i = 0; i < tids->len; i++) {
                pid_t tid = g_array_index(tids, pid_t, i);
                NpStateThread *t = np_state_process_thread(np_state_lookup(s, pid), tid);
                g_autofree char *want = NULL, *got = NULL;

                g_assert_nonnull(t);
                g_assert_nonnull(t->affinity);
                got = np_mask_format(t->affinity);
                want = g_strdup(g_hash_table_lookup(orig, GINT_TO_POINTER(tid)));
                g_assert_cmpstr(got, ==, want);
        }

        /* Release restores each thread's own original affinity. */
        g_assert_cmpint(np_backend_release(b, pid), ==, 0);
        after = snapshot(pid, false);
        assert_snapshot_equal(orig, after);
        g_assert_false(g_file_test(f->state_file, G_FILE_TEST_EXISTS));
}

/* Pins for two threads: thread i of tids (the helper's, ascending, the
 * leader first) on CPU cpu_i; the masks are kept in `keep`. */
static GArray *two_pins(pid_t pid, GPtrArray *keep, const char *cpu1, const char *cpu2) {
        g_autoptr(GArray) tids = tids_of(pid);
        GArray *pins = g_array_new(FALSE, FALSE, sizeof(NpThreadPin));
        g_assert_cmpuint(tids->len, >=, 3);
        const char *cpus[] = { cpu1, cpu2 };
        for (guint i = 0; i < 2; i++) {
                NpMask *m = mask(cpus[i]);
                g_ptr_array_add(keep, m);
                NpThreadPin x = { g_array_index(tids, pid_t, i + 1), (unsigned) i, m };
                g_array_append_val(pins, x);
        }
        return pins;
}

static char *affinity_of(pid_t pid, pid_t tid) {
        return status_field(pid, tid, "Cpus_allowed_list");
}

/* Threads of a process the backend does not hold, each kept on its own
 * CPU: it gets a record of its own (ThreadHomes= names the pins, every
 * thread's original affinity), the others are untouched, and release
 * (or the next start after a crash) gives every thread its own back. */
static void test_pin_threads(Fixture *f, gconstpointer data) {
        g_autoptr(GError) e = NULL;
        g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify) np_mask_free);
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                g_test_skip("needs two CPUs");
                return;
        }
        g_autoptr(NpBackend) b = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        pid_t pid = spawn_helper();
        g_autoptr(GHashTable) orig = snapshot(pid, false);
        g_autoptr(GArray) pins = two_pins(pid, keep, "1", "0");
        g_autoptr(NpMask) nodes = mask("0");
        pid_t t1 = g_array_index(pins, NpThreadPin, 0).tid, t2 = g_array_index(pins, NpThreadPin, 1).tid;

        g_assert_false(np_backend_pins_threads(b, pid));
        g_assert_cmpint(np_backend_pin_threads(b, pid, starttime_of(pid), nodes, pins, &e), ==, 0);
        g_assert_no_error(e);
        g_assert_true(np_backend_holds(b, pid));
        g_assert_true(np_backend_pins_threads(b, pid));
        g_autofree char *a1 = affinity_of(pid, t1), *a2 = affinity_of(pid, t2), *lead = affinity_of(pid, pid);
        g_assert_cmpstr(a1, ==, "1");
        g_assert_cmpstr(a2, ==, "0");
        g_assert_cmpstr(lead, ==, g_hash_table_lookup(orig, GINT_TO_POINTER(pid)));

        g_autoptr(NpState) s = NULL;
        g_assert_cmpint(np_state_load(f->state_file, &s, NULL, &e), ==, 0);
        const NpStateProcess *rec = np_state_lookup(s, pid);
        g_assert_nonnull(rec);
        g_assert_cmpint(rec->backend, ==, NP_BACKEND_AFFINITY);
        g_autofree char *want = g_strdup_printf("%d:0;%d:1", (int) t1, (int) t2);
        g_assert_cmpstr(g_hash_table_lookup(rec->extra, "ThreadHomes"), ==, want);
        g_autoptr(GArray) tids = tids_of(pid);
        for (guint i = 0; i < tids->len; i++) {
                NpStateThread *th = np_state_process_thread(rec, g_array_index(tids, pid_t, i));
                g_assert_nonnull(th);
                g_autofree char *got = np_mask_format(th->affinity);
                g_assert_cmpstr(got, ==, g_hash_table_lookup(orig, GINT_TO_POINTER(th->tid)));
        }

        /* pinned again (homes swapped): the originals stay the first ones */
        g_autoptr(GArray) again = two_pins(pid, keep, "0", "1");
        g_assert_cmpint(np_backend_pin_threads(b, pid, starttime_of(pid), nodes, again, &e), ==, 0);
        g_autofree char *b1 = affinity_of(pid, t1);
        g_assert_cmpstr(b1, ==, "0");

        g_assert_cmpint(np_backend_release(b, pid), ==, 0);
        g_autoptr(GHashTable) after = snapshot(pid, false);
        assert_snapshot_equal(orig, after);
        g_assert_false(np_backend_pins_threads(b, pid));
        g_assert_false(g_file_test(f->state_file, G_FILE_TEST_EXISTS));

        /* unpinned: a record for the pins alone is released */
        g_assert_cmpint(np_backend_unpin_threads(b, pid), ==, -ENOENT);
        g_assert_cmpint(np_backend_pin_threads(b, pid, starttime_of(pid), nodes, pins, &e), ==, 0);
        g_assert_cmpint(np_backend_unpin_threads(b, pid), ==, 0);
        g_assert_false(np_backend_holds(b, pid));
        g_autoptr(GHashTable) unpinned = snapshot(pid, false);
        assert_snapshot_equal(orig, unpinned);

        /* a crash with threads pinned: the next start puts them back */
        g_assert_cmpint(np_backend_pin_threads(b, pid, starttime_of(pid), nodes, pins, &e), ==, 0);
        g_clear_pointer(&b, np_backend_free);
        g_autoptr(NpBackend) b2 = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        g_autoptr(GHashTable) recovered = snapshot(pid, false);
        assert_snapshot_equal(orig, recovered);

        /* a gone process */
        kill_helper(pid);
        g_assert_cmpint(np_backend_pin_threads(b2, pid, 1, nodes, pins, &e), ==, -ESRCH);
        g_assert_error(e, G_FILE_ERROR, G_FILE_ERROR_NOENT);
}

/* Threads of a process held in a cpuset: each pinned thread gets its CPUs
 * within the cpuset's; confining it again ends the pins; release puts
 * back every thread's original cpuset and affinity. */
static void test_cpuset_pin_threads(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = cpuset_backend_or_skip(f);
        g_autoptr(GError) e = NULL;
        g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func((GDestroyNotify) np_mask_free);
        if (!b)
                return;
        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                g_test_skip("needs two CPUs");
                return;
        }
        pid_t pid = spawn_helper();
        g_autoptr(GHashTable) orig_cg = snapshot(pid, true), orig_aff = snapshot(pid, false);
        g_autoptr(NpMask) nodes = mask("0"), cpus = mask("0-1");
        g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_no_error(e);
        /* CPU 5 is not the cpuset's: that thread gets the held CPUs */
        g_autoptr(GArray) pins = two_pins(pid, keep, "1", "5");
        pid_t t1 = g_array_index(pins, NpThreadPin, 0).tid, t2 = g_array_index(pins, NpThreadPin, 1).tid;
        g_assert_cmpint(np_backend_pin_threads(b, pid, starttime_of(pid), nodes, pins, &e), ==, 0);
        g_assert_no_error(e);
        g_assert_true(np_backend_pins_threads(b, pid));
        g_autofree char *a1 = affinity_of(pid, t1), *a2 = affinity_of(pid, t2);
        g_assert_cmpstr(a1, ==, "1");
        g_assert_cmpstr(a2, ==, "0-1");

        /* unpinned: the threads get the held CPUs, the process stays held */
        g_assert_cmpint(np_backend_unpin_threads(b, pid), ==, 0);
        g_assert_true(np_backend_holds(b, pid));
        g_assert_false(np_backend_pins_threads(b, pid));
        assert_all_threads(pid, NULL, "0-1", NULL);
        g_assert_cmpint(np_backend_pin_threads(b, pid, starttime_of(pid), nodes, pins, &e), ==, 0);

        /* confined again: every thread on the new CPUs, no pins */
        g_autoptr(NpMask) cpus0 = mask("0");
        g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus0, NULL, NULL, &e), ==, 0);
        g_assert_false(np_backend_pins_threads(b, pid));
        g_autofree char *cg = g_strdup_printf("/%s/nodes-0", cg_name);
        assert_all_threads(pid, cg, "0", NULL);

        g_assert_cmpint(np_backend_pin_threads(b, pid, starttime_of(pid), nodes, pins, &e), ==, 0);
        g_assert_cmpint(np_backend_release(b, pid), ==, 0);
        g_autoptr(GHashTable) after_cg = snapshot(pid, true), after_aff = snapshot(pid, false);
        assert_snapshot_equal(orig_cg, after_cg);
        assert_snapshot_equal(orig_aff, after_aff);
}

static void test_affinity_identity(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = NULL, b2 = NULL;
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GHashTable) orig = NULL, after = NULL;
        g_autoptr(GError) e = NULL;
        g_autoptr(NpState) s = NULL;
        pid_t pid;

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                g_test_skip("needs two CPUs");
                return;
        }
        b = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        pid = spawn_helper();
        orig = snapshot(pid, false);
        nodes = mask("0");
        cpus = mask("1");
        g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_clear_pointer(&b, np_backend_free);

        /* The state file now claims another process had this pid: recovery
         * must not touch the live one. */
        g_assert_cmpint(np_state_load(f->state_file, &s, NULL, &e), ==, 0);
        np_state_lookup(s, pid)->starttime += 1;
        g_assert_cmpint(np_state_save(s, &e), ==, 0);
        b2 = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        assert_all_threads(pid, NULL, "1", NULL);
        g_assert_false(g_file_test(f->state_file, G_FILE_TEST_EXISTS));

        /* With the right identity, recovery restores it. */
        g_clear_pointer(&b2, np_backend_free);
        pid = spawn_helper();
        orig = (g_hash_table_unref(orig), snapshot(pid, false));
        b = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
        g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_no_error(e);
        assert_all_threads(pid, NULL, "1", NULL);
        g_clear_pointer(&b, np_backend_free);
        b2 = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
        g_assert_no_error(e);
        after = snapshot(pid, false);
        assert_snapshot_equal(orig, after);
        g_assert_false(g_file_test(f->state_file, G_FILE_TEST_EXISTS));
}

/* A damaged state file at start (truncated, garbage, another Version, a
 * temporary file of an interrupted write next to it): recovery still puts
 * back every process the readable part names, removes the file and the
 * temporary file, and never fails. */
static void test_damaged_state(Fixture *f, gconstpointer data) {
        g_autoptr(NpBackend) b = NULL;
        g_autoptr(NpMask) nodes = NULL, cpus = NULL;
        g_autoptr(GHashTable) orig = NULL, after = NULL;
        g_autoptr(GError) e = NULL;
        g_autofree char *text = NULL, *damaged = NULL, *tmp = NULL;
        pid_t pid;

        if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
                g_test_skip("needs two CPUs");
                return;
        }
        for (int variant = 0; variant < 3; variant++) {
                b = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
                g_assert_no_error(e);
                pid = spawn_helper();
                orig = snapshot(pid, false);
                nodes = mask("0");
                cpus = mask("1");
                g_assert_cmpint(np_backend_place(b, pid, starttime_of(pid), nodes, cpus, NULL, NULL, &e), ==, 0);
                g_assert_no_error(e);
                assert_all_threads(pid, NULL, "1", NULL);
                g_clear_pointer(&b, np_backend_free); /* a crash: nothing released */

                g_assert_true(g_file_get_contents(f->state_file, &text, NULL, NULL));
                switch (variant) {
                case 0: /* garbage first, another version, a cut record last */
                        damaged = g_strdup_printf("\x7f\x45LF garbage\n%s[process 99999]\nPid=99999\nStartT", text);
                        break;
                case 1: { /* another Version, garbage inside the record */
                        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
                        g_autofree char *joined = NULL;
                        for (char **l = lines; *l; l++)
                                if (g_str_has_prefix(*l, "Version="))
                                        g_free(*l), *l = g_strdup("Version=42\n%%% not a line %%%");
                        joined = g_strjoinv("\n", lines);
                        damaged = g_steal_pointer(&joined);
                        break;
                }
                default: /* a NUL byte in the middle of a line after the identity */
                        damaged = g_strdup(text);
                        *strstr(damaged, "Threads=") = '\0';
                        break;
                }
                g_assert_true(
                        g_file_set_contents(f->state_file, damaged, variant == 2 ? (gssize) strlen(text) : -1, NULL));
                tmp = g_strconcat(f->state_file, ".Ab12Cd", NULL);
                g_assert_true(g_file_set_contents(tmp, "[numaplaced]\nVer", -1, NULL));

                b = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, cg_name, &e);
                g_assert_no_error(e);
                g_assert_nonnull(b);
                after = snapshot(pid, false);
                assert_snapshot_equal(orig, after);
                g_assert_false(g_file_test(f->state_file, G_FILE_TEST_EXISTS));
                g_assert_false(g_file_test(tmp, G_FILE_TEST_EXISTS));
                g_assert_false(np_backend_holds(b, pid));

                kill_helper(pid);
                g_clear_pointer(&b, np_backend_free);
                g_clear_pointer(&orig, g_hash_table_unref);
                g_clear_pointer(&after, g_hash_table_unref);
                g_clear_pointer(&nodes, np_mask_free);
                g_clear_pointer(&cpus, np_mask_free);
                g_clear_pointer(&text, g_free);
                g_clear_pointer(&damaged, g_free);
                g_clear_pointer(&tmp, g_free);
        }
}

/* ---- cleanup, also when an assertion aborts ---- */

static void cleanup_cgroups(void) {
        NpBackend *b;

        while (helpers && helpers->len > 0)
                kill_helper(g_array_index(helpers, pid_t, 0));
        if (geteuid() != 0 || !cleanup_dir)
                return;
        /* Creating a backend removes leftovers of this name. */
        b = np_backend_new_full(NP_BACKEND_CPUSET, cleanup_dir, cg_name, NULL);
        if (b) {
                (void) np_backend_release_all(b);
                np_backend_free(b);
        }
        np_test_rm_rf(cleanup_dir);
}

static void on_abort(int sig) {
        signal(SIGABRT, SIG_DFL);
        cleanup_cgroups();
        raise(sig);
}

int main(int argc, char **argv) {
        int r;

        g_test_init(&argc, &argv, NULL);
        cg_name = g_strdup_printf("numaplaced-test-%d", (int) getpid());
        cleanup_dir = g_dir_make_tmp("np-test-backend-cleanup-XXXXXX", NULL);
        helpers = g_array_new(FALSE, FALSE, sizeof(pid_t));
        signal(SIGABRT, on_abort);

#define ADD(path, fn) g_test_add(path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        g_test_add_func("/backend/proc-exiting", test_proc_exiting);
        ADD("/backend/cpuset/place-release", test_cpuset_place_release);
        ADD("/backend/cpuset/release-all", test_cpuset_release_all);
        ADD("/backend/cpuset/memory-only", test_cpuset_memory_only);
        ADD("/backend/cpuset/crash-recovery", test_cpuset_crash_recovery);
        ADD("/backend/cpuset/stray-task", test_cpuset_stray_task);
        ADD("/backend/cpuset/thread-churn", test_cpuset_thread_churn);
        ADD("/backend/cpuset/gone", test_cpuset_gone);
        ADD("/backend/cpuset/error", test_cpuset_error);
        ADD("/backend/auto", test_auto);
        ADD("/backend/systemd/probe", test_systemd_probe);
        ADD("/backend/affinity/place-release", test_affinity);
        ADD("/backend/affinity/identity", test_affinity_identity);
        ADD("/backend/affinity/damaged-state", test_damaged_state);
        ADD("/backend/affinity/pin-threads", test_pin_threads);
        ADD("/backend/cpuset/pin-threads", test_cpuset_pin_threads);
#undef ADD

        r = g_test_run();
        cleanup_cgroups();
        return r;
}
