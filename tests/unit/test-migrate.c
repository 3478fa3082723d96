/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration executor on this machine. It may have a single NUMA node, so
 * the real calls here are node X -> X, a node without memory, and processes
 * that are gone; multi-node moves are checked in the VM harness (tests/vm).
 * The accounting and the pacing computation are pure and tested fully.
 * No test asserts a duration.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "np-migrate.h"
#include "np-nodemask.h"

/* ---- helpers ------------------------------------------------------------ */

static NpMask *memory_nodes(void) {
        g_autofree char *buf = NULL;
        NpMask *m = NULL;
        if (!g_file_get_contents("/sys/devices/system/node/has_memory", &buf, NULL, NULL) ||
            np_mask_parse(buf, &m) < 0 || np_mask_empty(m)) {
                np_mask_free(m);
                return NULL;
        }
        return m;
}

/* A child that touches 8 MiB and waits to be killed. */
static pid_t spawn_child(void) {
        int p[2];
        g_assert_cmpint(pipe(p), ==, 0);

        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(p[0]);
                size_t len = 8u << 20;
                char *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (mem == MAP_FAILED)
                        _exit(1);
                memset(mem, 0x5a, len);
                if (write(p[1], "r", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }

        close(p[1]);
        char c = 0;
        g_assert_cmpint(read(p[0], &c, 1), ==, 1);
        close(p[0]);
        return pid;
}

static void reap_child(pid_t pid) {
        kill(pid, SIGKILL);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
}

/* A pid that existed and is now reaped. */
static pid_t exited_pid(void) {
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0)
                _exit(0);
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        return pid;
}

static GArray *plan_of(unsigned src, unsigned dst) {
        GArray *plan = g_array_new(FALSE, FALSE, sizeof(NpMovePair));
        NpMovePair p = { .src = src, .dst = dst };
        g_array_append_val(plan, p);
        return plan;
}

/* ---- the raw call --------------------------------------------------------- */

static void test_pair_same_node(void) {
        g_autoptr(NpMask) mem = memory_nodes();
        if (!mem) {
                g_test_skip("no /sys/devices/system/node/has_memory");
                return;
        }
        unsigned node = (unsigned) np_mask_first(mem);

        pid_t child = spawn_child();
        long r = np_migrate_pair(child, node, node);
        reap_child(child);
        if (r == -ENOSYS) {
                g_test_skip("kernel without migrate_pages");
                return;
        }
        g_assert_cmpint(r, ==, 0);

        /* and on ourselves (pid 0 is the caller) */
        g_assert_cmpint(np_migrate_pair(0, node, node), ==, 0);
}

static void test_pair_no_such_node(void) {
        g_autoptr(NpMask) mem = memory_nodes();
        if (!mem) {
                g_test_skip("no /sys/devices/system/node/has_memory");
                return;
        }
        unsigned node = (unsigned) np_mask_first(mem);
        unsigned none = (unsigned) np_mask_last(mem) + 1; /* a node id without memory */

        pid_t child = spawn_child();
        /* to a node without memory; to ids across word boundaries and
         * beyond any kernel limit: the kernel refuses, nothing crashes */
        long a = np_migrate_pair(child, node, none);
        long b = np_migrate_pair(child, node, 64);
        long c = np_migrate_pair(child, node, 1023);
        long d = np_migrate_pair(child, node, 70000);
        /* from a node without memory: nothing to move */
        long e = np_migrate_pair(child, none, node);
        reap_child(child);

        if (a == -ENOSYS) {
                g_test_skip("kernel without migrate_pages");
                return;
        }
        /* root (CAP_SYS_NICE) is told the node has no memory; others may
         * be refused first because the node is outside the task's cpuset */
        bool root = geteuid() == 0;
        g_assert_true(a == -EINVAL || (!root && a == -EPERM));
        if (!np_mask_test(mem, 64))
                g_assert_true(b == -EINVAL || (!root && b == -EPERM));
        if (!np_mask_test(mem, 1023))
                g_assert_true(c == -EINVAL || (!root && c == -EPERM));
        /* beyond what the kernel reads at all */
        g_assert_cmpint(d, ==, -EINVAL);
        g_assert_cmpint(e, ==, 0);
}

static void test_pair_gone(void) {
        pid_t gone = exited_pid();
        long r = np_migrate_pair(gone, 0, 0);
        if (r == -ENOSYS) {
                g_test_skip("kernel without migrate_pages");
                return;
        }
        /* the pid could in theory be reused already: then it is a live
         * process and the call succeeds */
        g_assert_true(r == -ESRCH || r == 0);

        /* beyond pid_max: never a process */
        g_assert_cmpint(np_migrate_pair(G_MAXINT32 - 1, 0, 0), ==, -ESRCH);
}

/* ---- execution ------------------------------------------------------------ */

static void test_execute_empty_plan(void) {
        pid_t child = spawn_child();
        g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(NpMovePair));
        NpMigrateResult r;

        int k = np_migrate_execute(child, plan, 0, NULL, &r);
        reap_child(child);

        g_assert_cmpint(k, ==, 0);
        g_assert_cmpint(r.error, ==, 0);
        g_assert_cmpuint(r.calls, ==, 0);
        g_assert_cmpuint(r.moved_bytes, ==, 0);
        g_assert_cmpuint(r.failed_bytes, ==, 0);
        g_assert_cmpuint(r.paced_usec, ==, 0);
        g_assert_nonnull(r.before.per_node);
        g_assert_nonnull(r.after.per_node);
        /* the child's 8 MiB are somewhere */
        g_assert_cmpuint(r.before.total_bytes, >=, 8u << 20);
        g_assert_cmpuint(r.after.total_bytes, >=, 8u << 20);

        np_migrate_result_clear(&r);
        g_assert_null(r.before.per_node);
        np_migrate_result_clear(&r); /* twice is fine */
}

static void test_execute_same_node(void) {
        g_autoptr(NpMask) mem = memory_nodes();
        if (!mem) {
                g_test_skip("no /sys/devices/system/node/has_memory");
                return;
        }
        unsigned node = (unsigned) np_mask_first(mem);

        pid_t child = spawn_child();
        g_autoptr(GArray) plan = plan_of(node, node);
        NpMigrateResult r;
        /* paced at 1 GiB/s: a few milliseconds for the child's memory */
        int k = np_migrate_execute(child, plan, 1u << 30, NULL, &r);
        reap_child(child);

        if (k == -ENOSYS) {
                np_migrate_result_clear(&r);
                g_test_skip("kernel without migrate_pages");
                return;
        }
        g_assert_cmpint(k, ==, 0);
        g_assert_cmpuint(r.calls, ==, 1);
        g_assert_cmpuint(r.failed_bytes, ==, 0);
        g_assert_cmpuint(r.moved_bytes, ==, 0); /* X -> X moves nothing */
        g_assert_cmpuint(r.paced_usec, <=, r.usec);
        g_assert_cmpuint(np_numa_maps_node_bytes(&r.before, node), >=, 8u << 20);
        np_migrate_result_clear(&r);
}

static void test_execute_no_such_node(void) {
        g_autoptr(NpMask) mem = memory_nodes();
        if (!mem) {
                g_test_skip("no /sys/devices/system/node/has_memory");
                return;
        }
        unsigned node = (unsigned) np_mask_first(mem);
        unsigned none = (unsigned) np_mask_last(mem) + 1;

        pid_t child = spawn_child();
        g_autoptr(GArray) plan = plan_of(node, none);
        NpMovePair more = { .src = none, .dst = node };
        g_array_append_val(plan, more);

        NpMigrateResult r;
        int k = np_migrate_execute(child, plan, 0, NULL, &r); /* logs a warning */
        reap_child(child);

        if (k == -ENOSYS) {
                np_migrate_result_clear(&r);
                g_test_skip("kernel without migrate_pages");
                return;
        }
        g_assert_true(k == -EINVAL || (geteuid() != 0 && k == -EPERM));
        g_assert_cmpint(r.error, ==, k);
        g_assert_cmpuint(r.calls, ==, 1); /* the plan ends at the failure */
        g_assert_cmpuint(r.moved_bytes, ==, 0);
        g_assert_cmpuint(r.after.total_bytes, >=, 8u << 20);
        np_migrate_result_clear(&r);
}

/* The caller's numa_maps read is used as `before` (a copy), not read again;
 * a process gone by then is found by the first migrate_pages() call. */
static void test_execute_from(void) {
        pid_t child = spawn_child();
        NpNumaMaps b = { 0 };
        g_assert_cmpint(np_read_numa_maps((int) child, &b), ==, 0);
        b.total_bytes += 4096; /* marks the copy as the caller's */
        g_autoptr(GArray) empty = g_array_new(FALSE, FALSE, sizeof(NpMovePair));
        NpMigrateResult r;
        int k = np_migrate_execute_from(child, empty, NULL, &b, 0, NULL, &r);
        reap_child(child);
        g_assert_cmpint(k, ==, 0);
        g_assert_cmpuint(r.before.total_bytes, ==, b.total_bytes);
        g_assert_nonnull(r.before.per_node);
        g_assert_true(r.before.per_node != b.per_node);
        g_assert_cmpuint(r.before.per_node->len, ==, b.per_node ? b.per_node->len : 0);
        np_migrate_result_clear(&r);

        g_autoptr(GArray) plan = plan_of(0, 0);
        k = np_migrate_execute_from(G_MAXINT32 - 1, plan, NULL, &b, 0, NULL, &r);
        g_assert_true(k == -ESRCH || k == -ENOSYS); /* ENOSYS: under valgrind */
        if (k == -ESRCH)
                g_assert_cmpuint(r.moved_bytes, ==, 0);
        g_assert_cmpuint(r.before.total_bytes, ==, b.total_bytes);
        np_migrate_result_clear(&r);
        np_numa_maps_clear(&b);
}

static void test_execute_gone(void) {
        g_autoptr(GArray) plan = plan_of(0, 0);
        NpMigrateResult r;

        /* reaped: quietly -ESRCH before any call */
        pid_t gone = exited_pid();
        int k = np_migrate_execute(gone, plan, 0, NULL, &r);
        if (k != -ESRCH) {
                /* the pid was reused in between: nothing to check */
                np_migrate_result_clear(&r);
        } else {
                g_assert_cmpint(r.error, ==, -ESRCH);
                g_assert_cmpuint(r.calls, ==, 0);
                g_assert_cmpuint(r.moved_bytes, ==, 0);
                g_assert_nonnull(r.before.per_node);
                g_assert_nonnull(r.after.per_node);
                g_assert_cmpuint(r.after.per_node->len, ==, 0);
                np_migrate_result_clear(&r);
        }

        /* never existed */
        k = np_migrate_execute(G_MAXINT32 - 1, plan, 0, NULL, &r);
        g_assert_cmpint(k, ==, -ESRCH);
        g_assert_cmpuint(r.calls, ==, 0);
        np_migrate_result_clear(&r);

        /* a zombie: migrate_pages() says EINVAL (no mm), reported as gone */
        pid_t zombie = fork();
        g_assert_cmpint(zombie, >=, 0);
        if (zombie == 0)
                _exit(0);
        siginfo_t si;
        memset(&si, 0, sizeof(si));
        g_assert_cmpint(waitid(P_PID, (id_t) zombie, &si, WEXITED | WNOWAIT), ==, 0);
        k = np_migrate_execute(zombie, plan, 0, NULL, &r);
        if (k != -ENOSYS) { /* e.g. under valgrind */
                g_assert_cmpint(k, ==, -ESRCH);
                g_assert_cmpint(r.error, ==, -ESRCH);
                g_assert_cmpuint(r.moved_bytes, ==, 0);
        }
        np_migrate_result_clear(&r);
        int status;
        g_assert_cmpint(waitpid(zombie, &status, 0), ==, zombie);
}

static void test_execute_bad_args(void) {
        NpMigrateResult r;
        g_assert_cmpint(np_migrate_execute(0, NULL, 0, NULL, &r), ==, -EINVAL);
        g_assert_cmpuint(r.calls, ==, 0);
        np_migrate_result_clear(&r);
        g_autoptr(GArray) plan = plan_of(0, 0);
        g_assert_cmpint(np_migrate_execute(-5, plan, 0, NULL, &r), ==, -EINVAL);
        np_migrate_result_clear(&r);
}

/* ---- accounting (pure) ------------------------------------------------------ */

static void maps_fill(NpNumaMaps *m, const uint64_t *bytes, unsigned n) {
        memset(m, 0, sizeof(*m));
        m->per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        for (unsigned node = 0; node < n; node++)
                if (bytes[node]) {
                        NpNodeBytes nb = { .node = node, .bytes = bytes[node] };
                        g_array_append_val(m->per_node, nb);
                        m->total_bytes += bytes[node];
                }
}

static GArray *plan_from(const unsigned (*pairs)[2], unsigned n) {
        GArray *plan = g_array_new(FALSE, FALSE, sizeof(NpMovePair));
        for (unsigned i = 0; i < n; i++) {
                NpMovePair p = { .src = pairs[i][0], .dst = pairs[i][1] };
                g_array_append_val(plan, p);
        }
        return plan;
}

static void test_moved_bytes_no_chain(void) {
        /* rule on, 0-7 -> {3,4}, 10 bytes per node, 3 bytes stuck on 5 */
        static const unsigned pairs[][2] = { { 7, 4 }, { 6, 3 }, { 5, 4 }, { 2, 3 }, { 1, 4 }, { 0, 3 } };
        static const uint64_t before_b[8] = { 10, 10, 10, 10, 10, 10, 10, 10 };
        static const uint64_t after_b[8] = { 0, 0, 0, 40, 37, 3, 0, 0 };
        g_autoptr(GArray) plan = plan_from(pairs, G_N_ELEMENTS(pairs));
        NpNumaMaps before, after;
        maps_fill(&before, before_b, 8);
        maps_fill(&after, after_b, 8);

        /* exactly the bytes that left the sources */
        g_assert_cmpuint(np_migrate_moved_bytes(plan, plan->len, &before, &after), ==, 57);
        /* only the first two pairs ran */
        g_assert_cmpuint(np_migrate_moved_bytes(plan, 2, &before, &after), ==, 20);
        g_assert_cmpuint(np_migrate_moved_bytes(plan, 0, &before, &after), ==, 0);
        /* n_done beyond the plan is capped */
        g_assert_cmpuint(np_migrate_moved_bytes(plan, 100, &before, &after), ==, 57);
        /* the process is gone: every pair is assumed to have moved all */
        g_assert_cmpuint(np_migrate_moved_bytes(plan, plan->len, &before, NULL), ==, 60);

        np_numa_maps_clear(&before);
        np_numa_maps_clear(&after);
}

static void test_moved_bytes_grown_source(void) {
        /* the source grew while moving (new allocations): nothing negative */
        static const unsigned pairs[][2] = { { 0, 1 } };
        static const uint64_t before_b[2] = { 10, 0 };
        static const uint64_t after_b[2] = { 25, 10 };
        g_autoptr(GArray) plan = plan_from(pairs, 1);
        NpNumaMaps before, after;
        maps_fill(&before, before_b, 2);
        maps_fill(&after, after_b, 2);
        g_assert_cmpuint(np_migrate_moved_bytes(plan, 1, &before, &after), ==, 0);
        np_numa_maps_clear(&before);
        np_numa_maps_clear(&after);
}

static void test_moved_bytes_chain(void) {
        /* {2,3,4} -> {3,4,5}: 4->5, 3->4, 2->3 physically copies all three
         * nodes (net before-after would say only node 2's 100 left) */
        static const unsigned pairs[][2] = { { 4, 5 }, { 3, 4 }, { 2, 3 } };
        static const uint64_t before_b[6] = { 0, 0, 100, 100, 100, 0 };
        static const uint64_t after_b[6] = { 0, 0, 0, 100, 100, 100 };
        g_autoptr(GArray) plan = plan_from(pairs, G_N_ELEMENTS(pairs));
        NpNumaMaps before, after;
        maps_fill(&before, before_b, 6);
        maps_fill(&after, after_b, 6);
        g_assert_cmpuint(np_migrate_moved_bytes(plan, plan->len, &before, &after), ==, 300);
        np_numa_maps_clear(&before);
        np_numa_maps_clear(&after);
}

/* Pairs whose destination was full (ENOMEM): what stayed on their sources
 * is counted as failed, once per source, and never a target node's pages. */
static void test_full_bytes(void) {
        const uint64_t pg = (uint64_t) sysconf(_SC_PAGESIZE);
        /* {0,1,2} -> {3}: 0->3 moved all, 1->3 hit a full node 3 after part
         * of node 1, 2->3 too (nothing of node 2 fitted) */
        static const unsigned pairs[][2] = { { 0, 3 }, { 1, 3 }, { 2, 3 } };
        const uint64_t after_b[4] = { 0, 30 * pg, 100 * pg, 170 * pg };
        g_autoptr(GArray) plan = plan_from(pairs, G_N_ELEMENTS(pairs));
        NpNumaMaps after;
        maps_fill(&after, after_b, 4);
        bool none[3] = { false, false, false }, two[3] = { false, true, true }, last[3] = { false, false, true };
        g_assert_cmpuint(np_migrate_full_bytes(plan, none, &after), ==, 0);
        g_assert_cmpuint(np_migrate_full_bytes(plan, two, &after), ==, 130 * pg);
        g_assert_cmpuint(np_migrate_full_bytes(plan, last, &after), ==, 100 * pg);
        np_numa_maps_clear(&after);

        /* a chain {2,3,4} -> {3,4,5}: 4->5 full; 4 is a destination (of
         * 3->4), a target node: its pages are not left outside */
        static const unsigned chain[][2] = { { 4, 5 }, { 3, 4 }, { 2, 3 } };
        const uint64_t after_c[6] = { 0, 0, 0, 100 * pg, 150 * pg, 50 * pg };
        g_autoptr(GArray) plan2 = plan_from(chain, G_N_ELEMENTS(chain));
        maps_fill(&after, after_c, 6);
        bool first[3] = { true, false, false };
        g_assert_cmpuint(np_migrate_full_bytes(plan2, first, &after), ==, 0);
        np_numa_maps_clear(&after);

        /* without the rule, 0-7 -> {3,4}: sources repeat; 5 counts once */
        static const unsigned twice[][2] = { { 5, 3 }, { 5, 4 } };
        const uint64_t after_t[6] = { 0, 0, 0, 0, 0, 7 * pg };
        g_autoptr(GArray) plan3 = plan_from(twice, G_N_ELEMENTS(twice));
        maps_fill(&after, after_t, 6);
        bool both[2] = { true, true };
        g_assert_cmpuint(np_migrate_full_bytes(plan3, both, &after), ==, 7 * pg);
        np_numa_maps_clear(&after);
}

/* A positive migrate_pages(2) return counts a huge page as one page: the
 * hugetlb pages still on the source are taken first, largest first, then
 * base pages; never more than the source holds after. */
static void test_failed_bytes(void) {
        const uint64_t pg = 4096, MiB = 1024 * 1024;
        const uint64_t after_b[2] = { 80 * MiB + 10 * pg, 0 };
        NpNumaMaps after;
        maps_fill(&after, after_b, 2);
        /* no huge pages: base pages */
        g_assert_cmpuint(np_migrate_failed_bytes(5, 0, &after, pg), ==, 5 * pg);
        /* 38 huge pages of 2 MiB stayed on node 0 (76 MiB) */
        after.huge_per_node = g_array_new(FALSE, FALSE, sizeof(NpHugeBytes));
        NpHugeBytes h2 = { .node = 0, .page_bytes = 2 * MiB, .bytes = 76 * MiB };
        NpHugeBytes h2other = { .node = 1, .page_bytes = 2 * MiB, .bytes = 10 * MiB };
        g_array_append_val(after.huge_per_node, h2);
        g_array_append_val(after.huge_per_node, h2other);
        after.huge_bytes = 86 * MiB;
        /* 38 failed: the 38 huge pages on node 0 */
        g_assert_cmpuint(np_migrate_failed_bytes(38, 0, &after, pg), ==, 76 * MiB);
        /* 40 failed: 38 huge and 2 base pages */
        g_assert_cmpuint(np_migrate_failed_bytes(40, 0, &after, pg), ==, 76 * MiB + 2 * pg);
        /* capped at what node 0 holds */
        g_assert_cmpuint(np_migrate_failed_bytes(100000, 0, &after, pg), ==, 80 * MiB + 10 * pg);
        /* node 1's huge pages are not node 0's; nothing on node 2 */
        g_assert_cmpuint(np_migrate_failed_bytes(3, 2, &after, pg), ==, 0);
        /* the process gone: base pages */
        g_assert_cmpuint(np_migrate_failed_bytes(3, 0, NULL, pg), ==, 3 * pg);
        np_numa_maps_clear(&after);
}

static void test_retry_failed_bytes(void) {
        const uint64_t MiB = 1024 * 1024;
        /* 76 MiB of node 0 did not move; the retry took 60 MiB off it */
        const uint64_t mid_b[2] = { 80 * MiB, 300 * MiB }, after_b[2] = { 20 * MiB, 360 * MiB };
        NpNumaMaps mid, after;
        maps_fill(&mid, mid_b, 2);
        maps_fill(&after, after_b, 2);
        g_assert_cmpuint(np_migrate_retry_failed_bytes(76 * MiB, 0, &mid, &after), ==, 16 * MiB);
        /* all of it left (and more, freed by the process): 0, not below */
        g_assert_cmpuint(np_migrate_retry_failed_bytes(50 * MiB, 0, &mid, &after), ==, 0);
        /* the source grew meanwhile: nothing left it, the count stays */
        g_assert_cmpuint(np_migrate_retry_failed_bytes(76 * MiB, 1, &mid, &after), ==, 76 * MiB);
        /* a node neither names */
        g_assert_cmpuint(np_migrate_retry_failed_bytes(5 * MiB, 3, &mid, &after), ==, 5 * MiB);
        np_numa_maps_clear(&mid);
        np_numa_maps_clear(&after);
}

static void test_moved_bytes_rule_off(void) {
        /* without the rule, 0-7 -> {3,4}: 4 -> 3 moves 4's own pages and
         * those of 7 and 5; 3 -> 4 moves 3's, 6's, and again 4's, 7's, 5's */
        static const unsigned pairs[][2] = { { 7, 4 }, { 6, 3 }, { 5, 4 }, { 4, 3 },
                                             { 1, 4 }, { 3, 4 }, { 0, 3 }, { 2, 3 } };
        static const uint64_t before_b[8] = { 10, 10, 10, 10, 10, 10, 10, 10 };
        static const uint64_t after_b[8] = { 0, 0, 0, 20, 60, 0, 0, 0 };
        g_autoptr(GArray) plan = plan_from(pairs, G_N_ELEMENTS(pairs));
        NpNumaMaps before, after;
        maps_fill(&before, before_b, 8);
        maps_fill(&after, after_b, 8);
        /* 7,6,5: 30; 4->3: 30; 1: 10; 3->4: 50; 0, 2: 20 */
        g_assert_cmpuint(np_migrate_moved_bytes(plan, plan->len, &before, &after), ==, 140);
        np_numa_maps_clear(&before);
        np_numa_maps_clear(&after);
}

static void test_moved_bytes_sparse(void) {
        static const unsigned pairs[][2] = { { 0, 200 }, { 65, 200 }, { 130, 200 } };
        g_autoptr(GArray) plan = plan_from(pairs, G_N_ELEMENTS(pairs));
        NpNumaMaps before = { 0 }, after = { 0 };
        before.per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        after.per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        NpNodeBytes b[] = { { 0, 4096 }, { 65, 8192 }, { 130, 4096 } };
        g_array_append_vals(before.per_node, b, G_N_ELEMENTS(b));
        NpNodeBytes a[] = { { 65, 4096 }, { 200, 12288 } };
        g_array_append_vals(after.per_node, a, G_N_ELEMENTS(a));
        g_assert_cmpuint(np_migrate_moved_bytes(plan, plan->len, &before, &after), ==, 12288);
        np_numa_maps_clear(&before);
        np_numa_maps_clear(&after);
}

/* ---- pacing (pure) ------------------------------------------------------------ */

static void test_pace_math(void) {
        const uint64_t MiB = 1u << 20;

        /* unlimited, or nothing done */
        g_assert_cmpuint(np_migrate_pace_usec(123 * MiB, 0, 0), ==, 0);
        g_assert_cmpuint(np_migrate_pace_usec(0, MiB, 0), ==, 0);

        /* 1 MiB at 1 MiB/s takes one second */
        g_assert_cmpuint(np_migrate_pace_usec(MiB, MiB, 0), ==, 1000000);
        g_assert_cmpuint(np_migrate_pace_usec(MiB, MiB, 400000), ==, 600000);
        g_assert_cmpuint(np_migrate_pace_usec(MiB, MiB, 1000000), ==, 0);
        g_assert_cmpuint(np_migrate_pace_usec(MiB, MiB, 5000000), ==, 0);
        g_assert_cmpuint(np_migrate_pace_usec(10 * MiB, 4 * MiB, 0), ==, 2500000);

        /* rounds up: never a microsecond short */
        g_assert_cmpuint(np_migrate_pace_usec(1, 3, 0), ==, 333334);
        g_assert_cmpuint(np_migrate_pace_usec(2, 3, 0), ==, 666667);

        /* no overflow for huge amounts or rates */
        g_assert_cmpuint(np_migrate_pace_usec(UINT64_MAX, 1, 0), ==, UINT64_MAX);
        g_assert_cmpuint(np_migrate_pace_usec(UINT64_MAX, UINT64_MAX, 0), ==, 1000000);
        g_assert_cmpuint(np_migrate_pace_usec(UINT64_MAX - 1, UINT64_MAX, 0), ==, 1000000);
        g_assert_cmpuint(np_migrate_pace_usec(1ull << 50, 1ull << 40, 0), ==, 1024ull * 1000000);
        g_assert_cmpuint(np_migrate_pace_usec(1ull << 50, 1ull << 40, UINT64_MAX), ==, 0);
}

/* Replay the executor's loop on a fake clock: after every sleep the bytes
 * done never exceed rate * elapsed, and the sleeps are no longer than needed
 * (the last one ends exactly when the average reaches the rate). */
static void test_pace_replay(void) {
        static const uint64_t chunks[] = { 32u << 20, 0, 1, 32u << 20, 7u << 20, 96u << 20, 4096 };
        static const uint64_t rates[] = { 1, 4096, 1u << 20, 100u << 20, 3000000007ull };
        static const uint64_t call_usec[] = { 0, 15, 250000, 3 };

        for (unsigned ri = 0; ri < G_N_ELEMENTS(rates); ri++)
                for (unsigned ci = 0; ci < G_N_ELEMENTS(call_usec); ci++) {
                        uint64_t rate = rates[ri], now = 0, done = 0;
                        for (unsigned i = 0; i < G_N_ELEMENTS(chunks); i++) {
                                now += call_usec[ci]; /* the call itself */
                                done += chunks[i];
                                uint64_t wait = np_migrate_pace_usec(done, rate, now);
                                now += wait;
                                /* done <= rate * now / 1e6, in 128 bits */
                                g_assert_true((long double) done * 1e6L <= (long double) rate * (long double) now);
                                if (wait > 0)
                                        /* one microsecond less would be too early */
                                        g_assert_true((long double) done * 1e6L >
                                                      (long double) rate * (long double) (now - 1));
                        }
                }
}

/* Where a plan takes a page of a node: its chain of pairs followed. */
static void test_plan_dest(void) {
        g_autoptr(GArray) plan = g_array_new(FALSE, FALSE, sizeof(NpMovePair));
        NpMovePair pairs[] = { { .src = 0, .dst = 2 }, { .src = 1, .dst = 3 }, { .src = 2, .dst = 1 } };
        g_array_append_vals(plan, pairs, G_N_ELEMENTS(pairs));
        g_assert_cmpint(np_migrate_plan_dest(plan, 0), ==, 1); /* 0 -> 2 -> 1 */
        g_assert_cmpint(np_migrate_plan_dest(plan, 1), ==, 3);
        g_assert_cmpint(np_migrate_plan_dest(plan, 2), ==, 1);
        g_assert_cmpint(np_migrate_plan_dest(plan, 3), ==, -1); /* stays */
        g_assert_cmpint(np_migrate_plan_dest(NULL, 0), ==, -1);
        NpMovePair back = { .src = 1, .dst = 0 };
        g_array_append_val(plan, back);
        g_assert_cmpint(np_migrate_plan_dest(plan, 0), ==, -1); /* 0 -> 2 -> 1 -> 0: where it was */
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);

        g_test_add_func("/migrate/pair/same-node", test_pair_same_node);
        g_test_add_func("/migrate/plan-dest", test_plan_dest);
        g_test_add_func("/migrate/pair/no-such-node", test_pair_no_such_node);
        g_test_add_func("/migrate/pair/gone", test_pair_gone);
        g_test_add_func("/migrate/execute/empty-plan", test_execute_empty_plan);
        g_test_add_func("/migrate/execute/same-node", test_execute_same_node);
        g_test_add_func("/migrate/execute/no-such-node", test_execute_no_such_node);
        g_test_add_func("/migrate/execute/gone", test_execute_gone);
        g_test_add_func("/migrate/execute/from", test_execute_from);
        g_test_add_func("/migrate/execute/bad-args", test_execute_bad_args);
        g_test_add_func("/migrate/moved-bytes/no-chain", test_moved_bytes_no_chain);
        g_test_add_func("/migrate/moved-bytes/grown-source", test_moved_bytes_grown_source);
        g_test_add_func("/migrate/moved-bytes/chain", test_moved_bytes_chain);
        g_test_add_func("/migrate/moved-bytes/rule-off", test_moved_bytes_rule_off);
        g_test_add_func("/migrate/full-bytes", test_full_bytes);
        g_test_add_func("/migrate/failed-bytes", test_failed_bytes);
        g_test_add_func("/migrate/retry-failed-bytes", test_retry_failed_bytes);
        g_test_add_func("/migrate/moved-bytes/sparse", test_moved_bytes_sparse);
        g_test_add_func("/migrate/pace/math", test_pace_math);
        g_test_add_func("/migrate/pace/replay", test_pace_replay);

        return g_test_run();
}
