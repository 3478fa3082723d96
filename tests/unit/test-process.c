/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-process's details of a real process: where its threads
 * ran and how much CPU they used. A process with one thread takes them from
 * its stat, read through the process table's kept descriptor (its task
 * directory is not read); one with more threads from task/<tid>/stat,
 * unless the daemon confined it to one node.
 *
 * The process is a busy child of this test. The daemon sees it through a
 * temporary root whose proc/<pid>/ holds symlinks to the real files of
 * /proc/<pid> (with or without task/), so a read of the task directory can
 * be told from the table's stat; the topology is the 8-node fixture, where
 * CPUs 0 and 1 are node 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "np-proc-table.h"
#include "np-process.h"
#include "np-sysroot.h"
#include "np-test-api.h"
#include "np-topology.h"

static char *self_exe;

static gpointer spin(gpointer data) {
        (void) data;
        for (volatile unsigned long i = 0;; i++)
                ;
        return NULL;
}

static gpointer spin_then_exit(gpointer data) {
        (void) data;
        gint64 end = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;
        while (g_get_monotonic_time() < end)
                ;
        return NULL;
}

/* --spin N: N busy threads (this one and N - 1 more); --spin-exit: two, of
 * which the second ends after 2 s. */
static int spin_main(unsigned n, bool exit_one) {
        for (unsigned i = 1; i < n; i++)
                g_thread_unref(g_thread_new("spin", exit_one ? spin_then_exit : spin, NULL));
        spin(NULL);
        return 0;
}

/* A child of `threads` busy threads on CPU 0 (with exit_one, the second
 * ends after 2 s); it dies with the test. */
static pid_t spawn_spinner(unsigned threads, bool exit_one) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                cpu_set_t set;
                CPU_ZERO(&set);
                CPU_SET(0, &set);
                sched_setaffinity(0, sizeof set, &set);
                char n[16];
                snprintf(n, sizeof n, "%u", threads);
                execl(self_exe, "test-process", exit_one ? "--spin-exit" : "--spin", n, (char *) NULL);
                _exit(127);
        }
        /* until it runs the spinner with all its threads */
        g_autofree char *path = g_strdup_printf("/proc/%d/status", pid);
        g_autofree char *want = g_strdup_printf("Threads:\t%u\n", threads);
        for (int i = 0; i < 500; i++) {
                g_autofree char *s = NULL;
                if (g_file_get_contents(path, &s, NULL, NULL) && strstr(s, want) && strstr(s, "Name:\ttest-process"))
                        return pid;
                g_usleep(10000);
        }
        g_assert_not_reached();
}

static void kill_spinner(pid_t pid) {
        g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
        g_assert_cmpint(waitpid(pid, NULL, 0), ==, pid);
}

/* root/proc/<pid>/ with symlinks to the real files; task/ only if asked. */
static char *make_root(pid_t pid, bool with_task) {
        char *root = g_dir_make_tmp("np-test-process-XXXXXX", NULL);
        g_assert_nonnull(root);
        g_autofree char *dir = g_strdup_printf("%s/proc/%d", root, pid);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        const char *files[] = { "stat", "statm", "status", "cgroup", "numa_maps", "maps", "task" };
        for (unsigned i = 0; i < G_N_ELEMENTS(files); i++) {
                if (!with_task && g_str_equal(files[i], "task"))
                        continue;
                g_autofree char *target = g_strdup_printf("/proc/%d/%s", pid, files[i]);
                g_autofree char *link = g_strdup_printf("%s/%s", dir, files[i]);
                g_assert_cmpint(symlink(target, link), ==, 0);
        }
        return root;
}

static void remove_root(char *root, pid_t pid) {
        g_autofree char *dir = g_strdup_printf("%s/proc/%d", root, pid);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
                g_autofree char *p = g_build_filename(dir, name, NULL);
                g_unlink(p);
        }
        g_rmdir(dir);
        g_autofree char *proc = g_build_filename(root, "proc", NULL);
        g_rmdir(proc);
        g_rmdir(root);
        g_free(root);
}

static NpTopology *load_8node(void) {
        const char *f = g_getenv("NP_FIXTURES");
        g_assert_nonnull(f);
        g_autofree char *root = g_build_filename(f, "8node", NULL);
        np_sysroot_set(root);
        NpTopology *t = NULL;
        g_autoptr(GError) err = NULL;
        g_assert_cmpint(np_topology_load(&t, &err), ==, 0);
        return t;
}

static bool wants_all(void *userdata, const NpProcEntry *e) {
        (void) userdata;
        (void) e;
        return true;
}

static double cpu_on(const NpProcess *p, unsigned node) {
        for (guint i = 0; p->cpu_per_node && i < p->cpu_per_node->len; i++)
                if (g_array_index(p->cpu_per_node, NpNodeCpu, i).node == node)
                        return g_array_index(p->cpu_per_node, NpNodeCpu, i).cpu;
        return 0.0;
}

/* Two reads of the details, 500 ms apart, each after a scan: the second
 * read measures the CPU used between them. The scan before the first gives
 * it a kept stat descriptor (the second scan that reads it). */
static NpProcess *refresh_twice(const NpTopology *topo, NpProcTable *tab, pid_t pid) {
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        const NpProcEntry *e = np_proc_table_lookup(tab, pid);
        g_assert_cmpint(e->stat_fd, >=, 0);
        g_assert_nonnull(e);
        NpProcess *p = np_process_new(pid, e->starttime);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);
        g_usleep(500000);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);
        return p;
}

typedef struct {
        unsigned threads;
        bool with_task;
        bool measured; /* CPU by node is expected */
} Case;

static void test_threads(gconstpointer data) {
        const Case *c = data;
        g_autoptr(NpTopology) topo = load_8node();
        pid_t pid = spawn_spinner(c->threads, false);
        char *root = make_root(pid, c->with_task);
        np_sysroot_set(root);
        g_autoptr(NpProcTable) tab = np_proc_table_new(64);
        g_autoptr(NpProcess) p = refresh_twice(topo, tab, pid);

        g_assert_cmpuint(p->threads, ==, c->threads);
        g_autofree char *running = np_mask_format(p->running_nodes);
        g_assert_cmpstr(running, ==, "0"); /* CPU 0 is node 0 */
        if (c->measured) {
                g_assert_cmpuint(g_hash_table_size(p->thread_ticks), ==, c->threads);
                /* the threads share CPU 0: together at most one CPU, on node 0
                 * (less when other tests run there too) */
                g_assert_cmpfloat(cpu_on(p, 0), >, 0.0);
                g_assert_cmpfloat(cpu_on(p, 0), <=, 1.5);
                g_assert_cmpuint(p->cpu_per_node->len, ==, 1);
        } else {
                /* no task directory and more than one thread: only the
                 * process's own last CPU is known, no CPU by node */
                g_assert_cmpuint(g_hash_table_size(p->thread_ticks), ==, 0);
                g_assert_cmpuint(p->cpu_per_node->len, ==, 0);
        }
        /* status and cgroup came through descriptors the table keeps */
        const NpProcEntry *e = np_proc_table_lookup(tab, pid);
        g_assert_cmpint(e->detail_fd[NP_PROC_STATUS], >=, 0);
        g_assert_cmpint(e->detail_fd[NP_PROC_CGROUP], >=, 0);

        kill_spinner(pid);
        np_sysroot_set(NULL);
        remove_root(root, pid);
}

/* Its second thread ends between two reads: the first read took both
 * threads' stat, the second the process's (whose ticks count the thread
 * that ended). No CPU use is measured across the two kinds of read (it
 * would count the ended thread's whole life); the next read measures. */
static void test_thread_ended(void) {
        g_autoptr(NpTopology) topo = load_8node();
        pid_t pid = spawn_spinner(2, true);
        char *root = make_root(pid, true);
        np_sysroot_set(root);
        g_autoptr(NpProcTable) tab = np_proc_table_new(64);
        g_autoptr(NpProcess) p = refresh_twice(topo, tab, pid);
        g_assert_cmpuint(p->threads, ==, 2);
        g_assert_false(p->threads_from_stat);
        g_assert_cmpfloat(cpu_on(p, 0), >, 0.0);

        g_autofree char *path = g_strdup_printf("/proc/%d/status", pid);
        for (int i = 0; i < 500; i++) {
                g_autofree char *st = NULL;
                if (g_file_get_contents(path, &st, NULL, NULL) && strstr(st, "Threads:\t1\n"))
                        break;
                g_usleep(10000);
        }
        g_usleep(100000);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);
        g_assert_cmpuint(p->threads, ==, 1);
        g_assert_true(p->threads_from_stat);
        g_assert_cmpuint(p->cpu_per_node->len, ==, 0);
        g_autofree char *running = np_mask_format(p->running_nodes);
        g_assert_cmpstr(running, ==, "0");

        g_usleep(500000);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);
        g_assert_cmpfloat(cpu_on(p, 0), >, 0.0);
        g_assert_cmpfloat(cpu_on(p, 0), <=, 1.5);
        /* its one thread, the leader, measured from the process's stat */
        g_assert_nonnull(p->thread_cpu);
        g_assert_cmpuint(p->thread_cpu->len, ==, 1);
        g_assert_cmpint(g_array_index(p->thread_cpu, NpThreadCpu, 0).tid, ==, pid);
        g_assert_cmpfloat(g_array_index(p->thread_cpu, NpThreadCpu, 0).cpu, >, 0.0);
        g_assert_true(np_process_has_thread(p, pid));

        kill_spinner(pid);
        np_sysroot_set(NULL);
        remove_root(root, pid);
}

/* Each busy thread's NUMA hinting faults, from its task/<tid>/sched: the
 * root's task/ holds a directory per thread with its real stat and a
 * sched file of this test's. The busiest thread first; a thread below
 * the CPU asked for is left out; a gone process is -ESRCH. */
static void test_thread_faults(void) {
        g_autoptr(NpTopology) topo = load_8node();
        pid_t pid = spawn_spinner(2, false);
        char *root = make_root(pid, false);
        g_autofree char *task = g_strdup_printf("%s/proc/%d/task", root, pid);
        g_assert_cmpint(g_mkdir(task, 0755), ==, 0);
        g_autofree char *real = g_strdup_printf("/proc/%d/task", pid);
        g_autoptr(GDir) d = g_dir_open(real, 0, NULL);
        g_assert_nonnull(d);
        const char *name;
        unsigned n = 0;
        while ((name = g_dir_read_name(d))) {
                g_autofree char *dir = g_build_filename(task, name, NULL);
                g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
                g_autofree char *stat = g_build_filename(dir, "stat", NULL);
                g_autofree char *target = g_strdup_printf("/proc/%d/task/%s/stat", pid, name);
                g_assert_cmpint(symlink(target, stat), ==, 0);
                g_autofree char *sched = g_build_filename(dir, "sched", NULL);
                g_autofree char *text = g_strdup_printf(
                        "numa_faults node=0 task_private=%u task_shared=3 group_private=0 group_shared=0\n"
                        "numa_faults node=1 task_private=%s task_shared=0 group_private=0 group_shared=0\n",
                        100 * (n + 1), name);
                g_assert_true(g_file_set_contents(sched, text, -1, NULL));
                n++;
        }
        g_assert_cmpuint(n, ==, 2);
        np_sysroot_set(root);
        g_autoptr(NpProcTable) tab = np_proc_table_new(64);
        g_autoptr(NpProcess) p = refresh_twice(topo, tab, pid);
        g_assert_false(p->threads_from_stat);
        g_assert_nonnull(p->thread_cpu);
        g_assert_cmpuint(p->thread_cpu->len, ==, 2);

        g_autoptr(GArray) f = NULL;
        g_assert_cmpint(np_process_read_thread_faults(p, 0.0, &f), ==, 0);
        g_assert_cmpuint(f->len, ==, 2);
        const NpThreadFaults *a = &g_array_index(f, NpThreadFaults, 0), *b = &g_array_index(f, NpThreadFaults, 1);
        g_assert_cmpfloat(a->cpu, >=, b->cpu);
        g_assert_cmpint(a->node, ==, 0); /* CPU 0 is node 0 in the fixture */
        for (guint i = 0; i < f->len; i++) {
                const NpThreadFaults *x = &g_array_index(f, NpThreadFaults, i);
                g_assert_cmpuint(x->faults->len, ==, 2);
                /* node 1's count is the thread's id: the file read was its own */
                g_assert_cmpuint(g_array_index(x->faults, NpNodeFaults, 1).private_faults, ==, (guint64) x->tid);
                g_assert_cmpuint(g_array_index(x->faults, NpNodeFaults, 0).shared_faults, ==, 3);
                g_assert_true(np_process_has_thread(p, x->tid));
        }
        g_assert_false(np_process_has_thread(p, 0));
        g_assert_false(np_process_has_thread(p, G_MAXINT));
        g_autoptr(GArray) none = NULL;
        g_assert_cmpint(np_process_read_thread_faults(p, 1000.0, &none), ==, 0);
        g_assert_cmpuint(none->len, ==, 0);

        kill_spinner(pid);
        GArray *gone = NULL;
        g_assert_cmpint(np_process_read_thread_faults(p, 1000.0, &gone), ==, -ESRCH);
        g_assert_null(gone);
        np_sysroot_set(NULL);
        /* the per-thread directories first */
        g_autoptr(GDir) d2 = g_dir_open(task, 0, NULL);
        while (d2 && (name = g_dir_read_name(d2))) {
                g_autofree char *dir = g_build_filename(task, name, NULL);
                g_autofree char *s1 = g_build_filename(dir, "stat", NULL), *s2 = g_build_filename(dir, "sched", NULL);
                g_unlink(s1);
                g_unlink(s2);
                g_rmdir(dir);
        }
        g_rmdir(task);
        remove_root(root, pid);
}

/* Place p (as the policy does) on `node`. */
static void set_placed(NpProcess *p, unsigned node) {
        p->state = NP_PROC_PLACED;
        np_mask_free(p->target);
        p->target = np_mask_new();
        np_mask_set(p->target, node);
}

/* Two busy threads on CPU 0 (node 0), their task directory readable. While
 * the daemon has not placed it, the threads are read one by one. Placed on
 * node 0, whose CPUs its own include all, its threads all run there: the
 * process's stat stands for them (no task directory needed), its CPU is
 * measured on node 0 from the read after the one that changed the kind of
 * read. Placed on node 1 while it runs on node 0's CPU, nothing is
 * assumed. */
static void test_confined(void) {
        g_autoptr(NpTopology) topo = load_8node();
        pid_t pid = spawn_spinner(2, false);
        char *root = make_root(pid, true);
        np_sysroot_set(root);
        g_autoptr(NpProcTable) tab = np_proc_table_new(64);
        g_autoptr(NpProcess) p = refresh_twice(topo, tab, pid);
        g_assert_false(p->threads_from_stat);
        g_assert_cmpuint(g_hash_table_size(p->thread_ticks), ==, 2);

        /* placed on node 0: the kind of read changes, nothing is measured */
        set_placed(p, 0);
        g_usleep(200000);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);
        g_assert_true(p->threads_from_stat);
        g_assert_cmpuint(g_hash_table_size(p->thread_ticks), ==, 1);
        g_assert_cmpuint(p->cpu_per_node->len, ==, 0);

        /* without the task directory, the next read measures both threads */
        g_autofree char *task = g_strdup_printf("%s/proc/%d/task", root, pid);
        g_assert_cmpint(g_unlink(task), ==, 0);
        g_usleep(500000);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);
        g_assert_true(p->threads_from_stat);
        g_assert_cmpfloat(cpu_on(p, 0), >, 0.0);
        g_assert_cmpfloat(cpu_on(p, 0), <=, 1.5);
        g_assert_cmpuint(p->cpu_per_node->len, ==, 1);
        /* (the stat of a confined process is all its threads: none listed) */
        g_assert_null(p->thread_cpu);
        g_assert_false(np_process_has_thread(p, pid));
        g_autofree char *running = np_mask_format(p->running_nodes);
        g_assert_cmpstr(running, ==, "0");

        /* placed on node 1 but running on node 0's CPU: no shortcut, and
         * without the task directory no CPU by node */
        set_placed(p, 1);
        g_usleep(200000);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);
        g_assert_false(p->threads_from_stat);
        g_assert_cmpuint(p->cpu_per_node->len, ==, 0);

        kill_spinner(pid);
        np_sysroot_set(NULL);
        remove_root(root, pid);
}

/* The pages the kernel's balancing moved of a process: the sum of its
 * threads' numa_pages_migrated, a thread without the line (or whose file
 * went away) counting nothing. */
static void test_kernel_migrated(void) {
        g_autofree char *root = g_dir_make_tmp("np-sched-XXXXXX", NULL);
        g_assert_nonnull(root);
        static const struct {
                const char *tid, *text;
        } files[] = {
                { "777",
                  "w (777, #threads: 3)\nnuma_pages_migrated                          :                 1000\n" },
                { "778", "numa_scan_seq : 2\nnuma_pages_migrated : 24\n" },
                { "779", "se.exec_start : 1.0\n" }, /* no such line */
        };
        for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
                g_autofree char *dir = g_build_filename(root, "proc", "777", "task", files[i].tid, NULL);
                g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
                g_autofree char *f = g_build_filename(dir, "sched", NULL);
                g_assert_true(g_file_set_contents(f, files[i].text, -1, NULL));
        }
        np_sysroot_set(root);
        g_autoptr(NpProcess) p = np_process_new(777, 1);
        np_process_read_kernel_migrated(p);
        g_assert_cmpuint(p->kernel_migrated_bytes, ==, 1024 * (uint64_t) sysconf(_SC_PAGESIZE));
        g_autoptr(NpProcess) gone = np_process_new(778, 1); /* no such directory */
        np_process_read_kernel_migrated(gone);
        g_assert_cmpuint(gone->kernel_migrated_bytes, ==, 0);
        np_sysroot_set(NULL);
        g_autofree char *rm = g_strdup_printf("rm -rf '%s'", root);
        g_assert_cmpint(system(rm), ==, 0);
}

/* What the kernel moved of a process over the last window: nothing until
 * it was watched that long, then the growth of its threads' sum since the
 * newest reading at least a window old; a thread that exits takes its
 * count along, which never makes it negative. */
static void test_kernel_churn(void) {
        g_autofree char *root = g_dir_make_tmp("np-sched-XXXXXX", NULL);
        g_assert_nonnull(root);
        g_autofree char *dir = g_build_filename(root, "proc", "777", "task", "777", NULL);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        g_autofree char *f = g_build_filename(dir, "sched", NULL);
        np_sysroot_set(root);
        g_autoptr(NpProcess) p = np_process_new(777, 1);
        const uint64_t s = G_USEC_PER_SEC, w = 60 * s, page = (uint64_t) sysconf(_SC_PAGESIZE);
        static const struct {
                uint64_t at_s, pages, churn_pages;
        } steps[] = {
                { 100, 1000, 0 }, /* first sight */
                { 130, 50000, 49000 }, /* watched for less than a window: since 100 */
                { 161, 90000, 89000 }, /* since 100 */
                { 175, 95000, 94000 }, /* 100 is still the newest reading at least 60 s old */
                { 200, 99000, 49000 }, /* since 130 */
                { 260, 500, 0 }, /* threads exited: below the reading at 200 */
        };
        for (guint i = 0; i < G_N_ELEMENTS(steps); i++) {
                g_autofree char *text =
                        g_strdup_printf("numa_pages_migrated : %" G_GUINT64_FORMAT "\n", steps[i].pages);
                g_assert_true(g_file_set_contents(f, text, -1, NULL));
                np_process_note_kernel_migrated(p, steps[i].at_s * s, w, 0);
                g_assert_cmpuint(np_process_kernel_churn(p, NULL), ==, steps[i].churn_pages * page);
        }
        g_assert_cmpuint(p->kernel_seen->len, <=, 3);

        /* first read 20 s after its start: what its threads moved since */
        g_autoptr(NpProcess) y = np_process_new(777, 1);
        g_assert_true(g_file_set_contents(f, "numa_pages_migrated : 30000\n", -1, NULL));
        np_process_note_kernel_migrated(y, 100 * s, w, 20 * s);
        uint64_t span = 0;
        g_assert_cmpuint(np_process_kernel_churn(y, &span), ==, 30000 * page);
        g_assert_cmpuint(span, ==, 20 * s);
        /* watched again after a lapse (its readings dropped), still young */
        g_array_set_size(y->kernel_seen, 0);
        g_assert_true(g_file_set_contents(f, "numa_pages_migrated : 50000\n", -1, NULL));
        np_process_note_kernel_migrated(y, 130 * s, w, 50 * s);
        g_assert_cmpuint(np_process_kernel_churn(y, &span), ==, 50000 * page);
        g_assert_cmpuint(span, ==, 50 * s);
        /* one older than the window: from its first reading on */
        g_autoptr(NpProcess) o = np_process_new(777, 1);
        np_process_note_kernel_migrated(o, 100 * s, w, 90 * s);
        g_assert_cmpuint(np_process_kernel_churn(o, &span), ==, 0);
        g_assert_cmpuint(span, ==, 0);
        np_sysroot_set(NULL);
        g_autofree char *rm = g_strdup_printf("rm -rf '%s'", root);
        g_assert_cmpint(system(rm), ==, 0);
}

#define MAPPED (4u << 20)

/* --map-file PATH: PATH mapped twice and every page read, shared and
 * read-only, then private and writable; the two addresses written to
 * PATH.ready; then it waits to be killed. */
static int map_file_main(const char *path) {
        int fd = open(path, O_RDONLY);
        if (fd < 0)
                return 1;
        volatile const char *ro = mmap(NULL, MAPPED, PROT_READ, MAP_SHARED, fd, 0);
        volatile const char *rw = mmap(NULL, MAPPED, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (ro == MAP_FAILED || rw == MAP_FAILED)
                return 1;
        unsigned sum = 0;
        for (size_t i = 0; i < MAPPED; i += 4096)
                sum += (unsigned) ro[i] + (unsigned) rw[i];
        g_autofree char *ready = g_strdup_printf("%s.ready", path);
        g_autofree char *text = g_strdup_printf("%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " %u\n",
                                                (guint64) (uintptr_t) ro, (guint64) (uintptr_t) rw, sum);
        if (!g_file_set_contents(ready, text, -1, NULL))
                return 1;
        for (;;)
                pause();
}

static const NpNumaMapsFile *file_line(const NpNumaMaps *m, uint64_t start) {
        for (guint i = 0; m->files && i < m->files->len; i++)
                if (g_array_index(m->files, NpNumaMapsFile, i).start == start)
                        return &g_array_index(m->files, NpNumaMapsFile, i);
        return NULL;
}

static const NpFileMap *file_map(const NpProcess *p, uint64_t start) {
        for (guint i = 0; p->file_maps && i < p->file_maps->len; i++)
                if (g_array_index(p->file_maps, NpFileMap, i).start == start)
                        return &g_array_index(p->file_maps, NpFileMap, i);
        return NULL;
}

/* A file mapped read-only is not memory the kernel's balancing can move (it
 * does not scan such a mapping): after a numa_maps read, /proc/PID/maps is
 * read for its big file lines, and the read-only one leaves balanced_bytes;
 * the same file mapped writable stays in it. */
static void test_readonly_files(void) {
        g_autoptr(NpTopology) topo = load_8node();
        g_autofree char *dir = g_dir_make_tmp("np-test-files-XXXXXX", NULL);
        g_assert_nonnull(dir);
        g_autofree char *path = g_build_filename(dir, "data", NULL);
        g_autofree char *ready = g_strdup_printf("%s.ready", path);
        g_autofree char *data = g_malloc(MAPPED);
        memset(data, 'x', MAPPED);
        g_assert_true(g_file_set_contents(path, data, MAPPED, NULL));

        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                execl(self_exe, "test-process", "--map-file", path, (char *) NULL);
                _exit(127);
        }
        g_autofree char *text = NULL;
        for (int i = 0; i < 500 && !g_file_get_contents(ready, &text, NULL, NULL); i++)
                g_usleep(10000);
        g_assert_nonnull(text);
        guint64 ro = 0, rw = 0;
        g_assert_cmpint(sscanf(text, "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT, &ro, &rw), ==, 2);

        char *root = make_root(pid, false);
        np_sysroot_set(root);
        NpNumaMaps raw = { 0 };
        g_assert_cmpint(np_read_numa_maps(pid, &raw), ==, 0);
        g_autoptr(NpProcTable) tab = np_proc_table_new(64);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        const NpProcEntry *e = np_proc_table_lookup(tab, pid);
        g_assert_nonnull(e);
        g_autoptr(NpProcess) p = np_process_new(pid, e->starttime);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);

        /* both lines are file lines of the parse, with every page */
        const NpNumaMapsFile *lro = file_line(&p->maps, ro), *lrw = file_line(&p->maps, rw);
        g_assert_nonnull(lro);
        g_assert_nonnull(lrw);
        g_assert_cmpuint(lro->bytes, ==, MAPPED);
        g_assert_cmpuint(lrw->bytes, ==, MAPPED);
        /* maps was read: one may not be written, the other may */
        g_assert_nonnull(file_map(p, ro));
        g_assert_nonnull(file_map(p, rw));
        g_assert_true(file_map(p, ro)->readonly);
        g_assert_false(file_map(p, rw)->readonly);
        g_assert_cmpuint(file_map(p, ro)->end - ro, ==, MAPPED);
        /* the read-only one left balanced_bytes (so did the libraries'
         * text, read-only too), the writable one stays */
        g_assert_cmpuint(raw.balanced_bytes, >=, 2 * (uint64_t) MAPPED);
        g_assert_cmpuint(p->maps.balanced_bytes, <=, raw.balanced_bytes - MAPPED);
        g_assert_cmpuint(p->maps.balanced_bytes, >=, MAPPED);
        g_assert_cmpuint(p->maps.total_bytes, ==, raw.total_bytes);

        /* read again, its maps now unreadable: what the last maps read
         * said still holds for the lines it knows */
        uint64_t balanced = p->maps.balanced_bytes;
        g_autofree char *maps_link = g_strdup_printf("%s/proc/%d/maps", root, pid);
        g_assert_cmpint(g_unlink(maps_link), ==, 0);
        g_assert_cmpint(np_proc_table_scan(tab, 0, wants_all, NULL), ==, 1);
        g_assert_cmpint(np_process_refresh(p, topo, tab, NP_MAPS_NOW), ==, 0);
        g_assert_cmpuint(p->maps.balanced_bytes, ==, balanced);
        g_assert_true(file_map(p, ro) && file_map(p, ro)->readonly);

        np_numa_maps_clear(&raw);
        kill_spinner(pid);
        np_sysroot_set(NULL);
        remove_root(root, pid);
        g_unlink(ready);
        g_unlink(path);
        g_rmdir(dir);
}

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "--map-file") == 0)
                return map_file_main(argv[2]);
        if (argc == 3 && strcmp(argv[1], "--spin") == 0)
                return spin_main((unsigned) atoi(argv[2]), false);
        if (argc == 3 && strcmp(argv[1], "--spin-exit") == 0)
                return spin_main((unsigned) atoi(argv[2]), true);
        g_test_init(&argc, &argv, NULL);
        self_exe = g_file_read_link("/proc/self/exe", NULL);
        g_assert_nonnull(self_exe);
        static const Case one = { 1, false, true }, two = { 2, true, true }, two_no_task = { 2, false, false };
        g_test_add_data_func("/process/threads/one-from-kept-stat", &one, test_threads);
        g_test_add_data_func("/process/threads/two-from-task-dir", &two, test_threads);
        g_test_add_data_func("/process/threads/two-need-task-dir", &two_no_task, test_threads);
        g_test_add_func("/process/threads/one-after-two", test_thread_ended);
        g_test_add_func("/process/threads/confined-to-one-node", test_confined);
        g_test_add_func("/process/kernel-migrated", test_kernel_migrated);
        g_test_add_func("/process/thread-faults", test_thread_faults);
        g_test_add_func("/process/kernel-churn", test_kernel_churn);
        g_test_add_func("/process/readonly-files", test_readonly_files);
        return g_test_run();
}
