/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * np-hotplug: held placements checked against a topology that changed. The
 * manager reads a fixture tree of two nodes whose CPUs are this machine's
 * CPUs 0 and 1 (node 0: CPU 0, node 1: CPU 1), so the affinity backend
 * confines a real child process to them; the tree then loses and regains
 * node 1's CPU as a CPU hotplug would show it.
 */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "np-hotplug.h"
#include "np-manager.h"
#include "np-sample.h"
#include "np-scan.h"
#include "np-sysroot.h"
#include "np-test-api.h"
#include "np-test-util.h"

typedef struct {
        char *root;
        char *runtime_dir;
        NpManager *m;
        pid_t child;
} Fixture;

static void write_file(const char *root, const char *rel, const char *content) {
        g_autofree char *p = g_build_filename(root, rel, NULL);
        g_autofree char *dir = g_path_get_dirname(p);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        g_assert_true(g_file_set_contents(p, content, -1, NULL));
}

static void set_cpu1(Fixture *f, bool online) {
        write_file(f->root, "sys/devices/system/cpu/online", online ? "0-1\n" : "0\n");
        write_file(f->root, "sys/devices/system/node/node1/cpulist", online ? "1\n" : "\n");
}

static bool machine_has_cpus_0_1(void) {
        cpu_set_t set;
        return sched_getaffinity(0, sizeof set, &set) == 0 && CPU_ISSET(0, &set) && CPU_ISSET(1, &set);
}

static void setup(Fixture *f, gconstpointer data) {
        g_autoptr(GError) e = NULL;
        NpConfig *c = NULL;

        f->root = g_dir_make_tmp("np-test-hotplug-XXXXXX", NULL);
        g_assert_nonnull(f->root);
        f->runtime_dir = g_build_filename(f->root, "run", NULL);
        g_assert_cmpint(g_mkdir_with_parents(f->runtime_dir, 0755), ==, 0);
        write_file(f->root, "sys/devices/system/node/online", "0-1\n");
        write_file(f->root, "sys/devices/system/node/has_memory", "0-1\n");
        write_file(f->root, "sys/devices/system/node/node0/cpulist", "0\n");
        for (int n = 0; n < 2; n++) {
                g_autofree char *mi = g_strdup_printf("sys/devices/system/node/node%d/meminfo", n);
                g_autofree char *mv =
                        g_strdup_printf("Node %d MemTotal: 1048576 kB\nNode %d MemFree: 524288 kB\n", n, n);
                g_autofree char *di = g_strdup_printf("sys/devices/system/node/node%d/distance", n);
                write_file(f->root, mi, mv);
                write_file(f->root, di, n == 0 ? "10 20\n" : "20 10\n");
        }
        set_cpu1(f, true);
        write_file(f->root, "proc/stat", "cpu  1 0 1 10 0 0 0 0\ncpu0 1 0 1 5 0 0 0 0\ncpu1 0 0 0 5 0 0 0 0\n");
        write_file(f->root, "proc/meminfo", "MemTotal: 2097152 kB\nMemFree: 1048576 kB\n");
        np_sysroot_set(f->root);
        g_assert_cmpint(np_config_load_data("test.conf", "[Daemon]\nBackend=affinity\n", &c, &e), ==, 0);
        g_assert_no_error(e);
        f->m = np_manager_new("/nonexistent/numaplaced.conf", c, &e);
        g_assert_no_error(e);
        g_assert_nonnull(f->m);
        f->m->backend = np_backend_new_full(NP_BACKEND_AFFINITY, f->runtime_dir, "numaplaced-test-hotplug", &e);
        g_assert_no_error(e);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);

        f->child = fork();
        g_assert_cmpint(f->child, >=, 0);
        if (f->child == 0) {
                for (;;)
                        pause();
        }
}

static void teardown(Fixture *f, gconstpointer data) {
        if (f->m->backend)
                (void) np_backend_release_all(f->m->backend);
        kill(f->child, SIGKILL);
        waitpid(f->child, NULL, 0);
        np_manager_free(f->m);
        np_sysroot_set(NULL);
        np_test_rm_rf(f->root);
        g_free(f->root);
        g_free(f->runtime_dir);
}

static uint64_t starttime_of(pid_t pid) {
        NpPidStat st;
        np_sysroot_set(NULL);
        g_assert_cmpint(np_read_pid_stat(pid, &st), ==, 0);
        return st.starttime;
}

static char *affinity_of(pid_t pid) {
        cpu_set_t set;
        g_assert_cmpint(sched_getaffinity(pid, sizeof set, &set), ==, 0);
        g_autoptr(NpMask) m = np_mask_new();
        for (unsigned i = 0; i < CPU_SETSIZE; i++)
                if (CPU_ISSET(i, &set))
                        np_mask_set(m, i);
        return np_mask_format(m);
}

/* The child, held on node 1 as the policy (or Place()) would leave it: the
 * backend confined it, and the manager knows it as placed there. */
static NpProcess *hold_child_on(Fixture *f, NpProcState state, unsigned cpu) {
        uint64_t st = starttime_of(f->child);
        g_autoptr(NpMask) nodes = np_mask_new();
        g_autoptr(NpMask) cpus = np_mask_new();
        g_autoptr(GError) e = NULL;
        np_mask_set(nodes, 1);
        np_mask_set(cpus, cpu);
        g_assert_cmpint(np_backend_place(f->m->backend, f->child, st, nodes, cpus, NULL, NULL, &e), ==, 0);
        g_assert_no_error(e);
        np_sysroot_set(f->root);
        NpProcess *p = np_manager_add_process(f->m, f->child, st);
        g_strlcpy(p->comm, "child", sizeof p->comm);
        np_manager_set_state(f->m, p, state, nodes, 1);
        np_process_set_decision(p, "placed on 1, which has room");
        np_process_set_significant(p, true);
        g_autofree char *aff = affinity_of(f->child);
        g_autofree char *want = g_strdup_printf("%u", cpu);
        g_assert_cmpstr(aff, ==, want);
        return p;
}

static NpProcess *hold_child(Fixture *f, NpProcState state) {
        return hold_child_on(f, state, 1);
}

/* A scan on the changed tree, then the check, as the daemon's timer runs
 * them. The scan drops the child (the fixture's /proc does not list it),
 * so it is put back in between, as the real /proc would keep it. */
static unsigned scan_and_recheck(Fixture *f, NpProcess **p) {
        g_hash_table_steal(f->m->processes, GINT_TO_POINTER(f->child));
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_hash_table_insert(f->m->processes, GINT_TO_POINTER(f->child), *p);
        return np_hotplug_recheck(f->m);
}

static void test_placed_loses_cpus(Fixture *f, gconstpointer data) {
        if (!machine_has_cpus_0_1()) {
                g_test_skip("this machine has no CPUs 0 and 1 to confine to");
                return;
        }
        NpProcess *p = hold_child(f, NP_PROC_PLACED);

        /* nothing changed: nothing to do */
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 0);
        g_assert_cmpint(p->state, ==, NP_PROC_PLACED);
        g_assert_true(np_backend_holds(f->m->backend, f->child));

        /* node 1's CPU goes offline: the Node changes, the process is
         * released (its original affinity back) with a note that says why */
        set_cpu1(f, false);
        g_hash_table_remove_all(f->m->changes.nodes);
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 1);
        uint32_t props = GPOINTER_TO_UINT(g_hash_table_lookup(f->m->changes.nodes, GUINT_TO_POINTER(1)));
        g_assert_true(props & NP_NODE_CPUS);
        g_autofree char *cpus1 = np_mask_format(np_topology_node(f->m->topology, 1)->cpus);
        g_assert_cmpstr(cpus1, ==, "");
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_null(p->target);
        g_assert_false(np_backend_holds(f->m->backend, f->child));
        g_autofree char *aff = affinity_of(f->child);
        g_assert_cmpstr(aff, ==, "0-1");
        g_autofree char *text = np_process_decision_text(p);
        g_assert_true(g_str_has_prefix(text, "its nodes 1 have no online CPU left (CPUs 1 went offline): released"));
        g_assert_true(g_str_has_suffix(text, "; placed on 1, which has room"));
        g_assert_true(p->changed & NP_PROCESS_DECISION);
        g_assert_true(p->changed & NP_PROCESS_STATE);
        g_assert_cmpuint(np_mask_weight(f->m->cpus_changed), ==, 0);

        /* a later placement clears the note */
        g_autoptr(NpMask) n0 = np_mask_new();
        np_mask_set(n0, 0);
        np_process_set_state(p, NP_PROC_PLACED, n0, 2);
        g_autofree char *text2 = np_process_decision_text(p);
        g_assert_cmpstr(text2, ==, "placed on 1, which has room");
        np_process_set_state(p, NP_PROC_OBSERVED, NULL, 2);
}

/* A process placed by its thread homes alone (np-thread-homes.h): its
 * record holds every CPU and one thread on node 1. A scan with nothing
 * changed leaves it as it is (the homes' CPUs are not the record's); when
 * node 1's CPU goes offline, every thread is put back and it is observed
 * again, for the next round to give new homes. */
static void test_thread_homes_end(Fixture *f, gconstpointer data) {
        if (!machine_has_cpus_0_1()) {
                g_test_skip("this machine has no CPUs 0 and 1 to confine to");
                return;
        }
        uint64_t st = starttime_of(f->child);
        g_autoptr(NpMask) nodes = np_mask_new(), cpu1 = np_mask_new();
        g_autoptr(GError) e = NULL;
        np_mask_set(nodes, 1);
        np_mask_set(cpu1, 1);
        g_autoptr(GArray) pins = g_array_new(FALSE, FALSE, sizeof(NpThreadPin));
        NpThreadPin x = { f->child, 1, cpu1 };
        g_array_append_val(pins, x);
        g_assert_cmpint(np_backend_pin_threads(f->m->backend, f->child, st, nodes, pins, &e), ==, 0);
        g_assert_no_error(e);
        np_sysroot_set(f->root);
        NpProcess *p = np_manager_add_process(f->m, f->child, st);
        g_strlcpy(p->comm, "child", sizeof p->comm);
        np_manager_set_state(f->m, p, NP_PROC_PLACED, nodes, 1);
        p->threads_only = true;
        np_process_set_significant(p, true);

        /* (the scan counted no held process: the child is not in the
         * fixture's /proc; the daemon's would count it) */
        g_hash_table_steal(f->m->processes, GINT_TO_POINTER(f->child));
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_hash_table_insert(f->m->processes, GINT_TO_POINTER(f->child), p);
        f->m->held_last = 1;
        g_assert_cmpuint(np_hotplug_recheck(f->m), ==, 0);
        g_assert_cmpint(p->state, ==, NP_PROC_PLACED);
        g_assert_true(np_backend_pins_threads(f->m->backend, f->child));
        g_autofree char *kept = affinity_of(f->child);
        g_assert_cmpstr(kept, ==, "1");

        set_cpu1(f, false);
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 1);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_false(np_backend_holds(f->m->backend, f->child));
        g_autofree char *back = affinity_of(f->child);
        g_assert_cmpstr(back, ==, "0-1");
}

static void test_pinned_follows_cpus(Fixture *f, gconstpointer data) {
        if (!machine_has_cpus_0_1()) {
                g_test_skip("this machine has no CPUs 0 and 1 to confine to");
                return;
        }
        NpProcess *p = hold_child(f, NP_PROC_PINNED);

        /* pinned by Place(): it stays held, runs on the CPUs there are,
         * its memory stays pinned to node 1 */
        set_cpu1(f, false);
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 1);
        g_assert_cmpint(p->state, ==, NP_PROC_PINNED);
        g_assert_true(np_backend_holds(f->m->backend, f->child));
        g_autofree char *held = np_mask_format(np_backend_held_cpus(f->m->backend, f->child));
        g_assert_cmpstr(held, ==, "0");
        g_autofree char *aff = affinity_of(f->child);
        g_assert_cmpstr(aff, ==, "0");
        g_autofree char *text = np_process_decision_text(p);
        g_assert_true(
                g_str_has_prefix(text, "its nodes 1 have no online CPU: it runs on CPUs 0, its memory stays on 1"));

        /* the CPU comes back: confined to it again */
        set_cpu1(f, true);
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 1);
        g_autofree char *held2 = np_mask_format(np_backend_held_cpus(f->m->backend, f->child));
        g_assert_cmpstr(held2, ==, "1");
        g_autofree char *aff2 = affinity_of(f->child);
        g_assert_cmpstr(aff2, ==, "1");
        g_autofree char *text2 = np_process_decision_text(p);
        g_assert_true(g_str_has_prefix(text2, "the CPUs of its nodes 1 changed (0 -> 1): confined to CPUs 1"));

        /* steady: nothing more */
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 0);
}

/* The policy placed it on node 1 while node 1 had no CPU (a process that
 * hardly uses one, on a memory-only node: it runs on every CPU): not
 * released for that, or the policy and the check would take turns. */
static void test_placed_on_cpuless_node_stays(Fixture *f, gconstpointer data) {
        if (!machine_has_cpus_0_1()) {
                g_test_skip("this machine has no CPUs 0 and 1 to confine to");
                return;
        }
        set_cpu1(f, false);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(np_hotplug_recheck(f->m), ==, 0);
        NpProcess *p = hold_child_on(f, NP_PROC_PLACED, 0);
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 0);
        g_assert_cmpint(p->state, ==, NP_PROC_PLACED);
        g_assert_true(np_backend_holds(f->m->backend, f->child));
        /* node 1's CPU comes back: confined to it */
        set_cpu1(f, true);
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 1);
        g_assert_cmpint(p->state, ==, NP_PROC_PLACED);
        g_autofree char *aff = affinity_of(f->child);
        g_assert_cmpstr(aff, ==, "1");
}

/* A move in flight is checked after it: the changed nodes are kept. */
static void test_moving_waits(Fixture *f, gconstpointer data) {
        if (!machine_has_cpus_0_1()) {
                g_test_skip("this machine has no CPUs 0 and 1 to confine to");
                return;
        }
        NpProcess *p = hold_child(f, NP_PROC_PLACED);
        p->moving_to = np_mask_copy(p->target);
        set_cpu1(f, false);
        g_assert_cmpuint(scan_and_recheck(f, &p), ==, 0);
        g_assert_true(np_mask_test(f->m->cpus_changed, 1));
        g_assert_true(np_backend_holds(f->m->backend, f->child));
        g_clear_pointer(&p->moving_to, np_mask_free);
        g_assert_cmpuint(np_hotplug_recheck(f->m), ==, 1);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_cmpuint(np_mask_weight(f->m->cpus_changed), ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add("/hotplug/placed-loses-cpus", Fixture, NULL, setup, test_placed_loses_cpus, teardown);
        g_test_add("/hotplug/pinned-follows-cpus", Fixture, NULL, setup, test_pinned_follows_cpus, teardown);
        g_test_add("/hotplug/thread-homes-end", Fixture, NULL, setup, test_thread_homes_end, teardown);
        g_test_add("/hotplug/moving-waits", Fixture, NULL, setup, test_moving_waits, teardown);
        g_test_add("/hotplug/placed-on-cpuless-node-stays", Fixture, NULL, setup, test_placed_on_cpuless_node_stays,
                   teardown);
        return g_test_run();
}
