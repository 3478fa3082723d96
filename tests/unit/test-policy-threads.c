/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Thread homes (np-policy-threads.c) on snapshot literals: which busy
 * threads of a process spread over several nodes get a node of their own,
 * and which node. The machine is the VM tests' four one-CPU nodes unless a
 * test says otherwise; the threads are numa02's workers (0.6 CPUs each).
 */
#include <glib.h>
#include <string.h>

#include "np-numa-maps.h"
#include "np-policy-threads.h"
#include "np-sample.h"

#define MiB (1024ull * 1024ull)

typedef struct {
        NpPolicyNode nodes[8];
        guint n;
        NpPolicyThread threads[8];
        GArray *faults[8];
        guint n_threads;
} Case;

static void case_init(Case *c, guint n_nodes, double cpus) {
        memset(c, 0, sizeof *c);
        c->n = n_nodes;
        for (guint i = 0; i < n_nodes; i++)
                c->nodes[i] =
                        (NpPolicyNode){ .id = i, .cpu_capacity = cpus, .mem_total = 512 * MiB, .mem_free = 256 * MiB };
}

/* A thread of `cpu` CPUs kept on `home` (-1: none) with `private` faults
 * on each node of `on` (a string of node digits, "0" or "0123") and
 * `shared` on the first. */
static void add_thread(Case *c, double cpu, int home, const char *on, uint64_t private, uint64_t shared) {
        guint i = c->n_threads++;
        c->faults[i] = g_array_new(FALSE, FALSE, sizeof(NpNodeFaults));
        for (const char *s = on; *s; s++) {
                NpNodeFaults f = { (unsigned) (*s - '0'), private, s == on ? shared : 0 };
                g_array_append_val(c->faults[i], f);
        }
        c->threads[i] = (NpPolicyThread){ .tid = (pid_t) (100 + i), .cpu = cpu, .faults = c->faults[i], .home = home };
}

static void case_clear(Case *c) {
        for (guint i = 0; i < c->n_threads; i++)
                g_array_unref(c->faults[i]);
}

/* The homes as a string of node digits in the threads' order ("0123"), or
 * NULL, with *why; `confined` to `on`. */
static char *homes_in(Case *c, const NpMask *on, bool confined, const GArray *own, NpHomesWhy *why) {
        g_autoptr(GArray) h =
                np_policy_thread_homes(c->nodes, c->n, on, confined, own, c->threads, c->n_threads, 85, why);
        if (!h)
                return NULL;
        g_assert_cmpuint(h->len, ==, c->n_threads);
        GString *s = g_string_new(NULL);
        for (guint i = 0; i < h->len; i++) {
                const NpThreadHome *x = &g_array_index(h, NpThreadHome, i);
                g_assert_cmpint(x->tid, ==, c->threads[i].tid);
                g_string_append_printf(s, "%u", x->node);
        }
        return g_string_free(s, FALSE);
}

/* The same, `on` preferred. */
static char *homes(Case *c, const NpMask *on, const GArray *own, NpHomesWhy *why) {
        return homes_in(c, on, false, own, why);
}

/* numa02 as it starts: every slice first touched on node 0, so every
 * thread's faults are there. One thread stays on node 0 (its pages need
 * not move), the others get a node each. */
static void test_first_touch_on_one_node(void) {
        Case c;
        case_init(&c, 4, 1.0);
        for (int i = 0; i < 4; i++)
                add_thread(&c, 0.6, -1, "0", 5000, 0);
        NpHomesWhy why;
        g_autofree char *h = homes(&c, NULL, NULL, &why);
        g_assert_cmpint(why, ==, NP_HOMES_GIVEN);
        g_assert_cmpstr(h, ==, "0123");
        case_clear(&c);
}

/* The kernel had moved each slice to another node: every thread goes
 * where its pages are, whatever the order of the threads. */
static void test_follows_the_pages(void) {
        Case c;
        case_init(&c, 4, 1.0);
        add_thread(&c, 0.6, -1, "2", 40000, 1);
        add_thread(&c, 0.6, -1, "0", 28000, 0);
        add_thread(&c, 0.6, -1, "3", 52000, 0);
        add_thread(&c, 0.6, -1, "1", 31000, 0);
        g_autofree char *h = homes(&c, NULL, NULL, NULL);
        g_assert_cmpstr(h, ==, "2031");
        case_clear(&c);
}

/* Threads kept on a node stay there, also when their faults (decaying)
 * still count more on the node their pages came from. */
static void test_homes_hold(void) {
        Case c;
        case_init(&c, 4, 1.0);
        add_thread(&c, 0.6, 3, "0", 5000, 0);
        add_thread(&c, 0.6, 2, "0", 5000, 0);
        add_thread(&c, 0.6, 1, "0", 5000, 0);
        add_thread(&c, 0.6, 0, "0", 5000, 0);
        g_autofree char *h = homes(&c, NULL, NULL, NULL);
        g_assert_cmpstr(h, ==, "3210");
        case_clear(&c);
}

/* No node has room (a busy machine): the least loaded nodes, but a thread
 * keeps its home unless another node is clearly less loaded, so noise in
 * the load of others does not move threads (and their pages) around. */
static void test_no_room(void) {
        Case c;
        case_init(&c, 4, 1.0);
        for (guint i = 0; i < 4; i++)
                c.nodes[i].cpu_busy = 0.4 + 0.05 * i;
        add_thread(&c, 0.6, -1, "0", 5000, 0);
        add_thread(&c, 0.6, -1, "0", 5000, 0);
        g_autofree char *h = homes(&c, NULL, NULL, NULL);
        g_assert_cmpstr(h, ==, "01");
        /* kept on 3 and 2, less loaded by 0.1 and 0.15 elsewhere: kept */
        c.threads[0].home = 3;
        c.threads[1].home = 2;
        g_autofree char *h2 = homes(&c, NULL, NULL, NULL);
        g_assert_cmpstr(h2, ==, "32");
        /* node 0 empties: the thread on the busiest node goes there */
        c.nodes[0].cpu_busy = 0.0;
        g_autofree char *h3 = homes(&c, NULL, NULL, NULL);
        g_assert_cmpstr(h3, ==, "02");
        case_clear(&c);
}

/* Room that comes and goes with the noise of the load: each thread has
 * its pages on its home, and node 0's other load reads 0.28 CPUs, so a
 * 0.6-CPU thread no longer fits there at 85% while the other nodes (0.1)
 * have room. Every thread keeps its home: moving the first to node 1 moved
 * the three others on in turn, and the kernel their pages after them. A
 * home clearly overloaded (0.9 of another process's) is left. */
static void test_homes_noisy_room(void) {
        Case c;
        case_init(&c, 4, 1.0);
        for (guint i = 0; i < 4; i++) {
                char on[2] = { (char) ('0' + i), 0 };
                c.nodes[i].cpu_busy = i == 0 ? 0.28 : 0.1;
                add_thread(&c, 0.6, (int) i, on, 5000, 0);
        }
        g_autofree char *h = homes(&c, NULL, NULL, NULL);
        g_assert_cmpstr(h, ==, "0123");
        /* its own use reads high for one interval: kept too */
        c.threads[1].cpu = 0.8;
        g_autofree char *h2 = homes(&c, NULL, NULL, NULL);
        g_assert_cmpstr(h2, ==, "0123");
        c.nodes[0].cpu_busy = 0.9;
        g_autofree char *h3 = homes(&c, NULL, NULL, NULL);
        g_assert_cmpint(h3[0], !=, '0');
        case_clear(&c);
}

/* No homes: one busy thread; faults the kernel has not counted yet;
 * threads that share their pages (numa01's shape); threads that all fit
 * on the node of their pages (the policy places the process whole). */
static void test_no_homes(void) {
        Case c;
        NpHomesWhy why;
        case_init(&c, 4, 1.0);
        add_thread(&c, 0.6, -1, "0", 5000, 0);
        g_assert_null(homes(&c, NULL, NULL, &why));
        g_assert_cmpint(why, ==, NP_HOMES_FEW_THREADS);
        add_thread(&c, 0.6, -1, "0", 100, 0);
        c.faults[0]->len = 0;
        g_assert_null(homes(&c, NULL, NULL, &why));
        g_assert_cmpint(why, ==, NP_HOMES_FEW_FAULTS);
        case_clear(&c);

        case_init(&c, 4, 1.0);
        add_thread(&c, 0.6, -1, "0", 1000, 5000);
        add_thread(&c, 0.6, -1, "0", 1000, 5000);
        g_assert_null(homes(&c, NULL, NULL, &why));
        g_assert_cmpint(why, ==, NP_HOMES_SHARED);
        case_clear(&c);

        case_init(&c, 4, 4.0);
        add_thread(&c, 0.6, -1, "0", 5000, 0);
        add_thread(&c, 0.6, -1, "0", 5000, 0);
        g_assert_null(homes(&c, NULL, NULL, &why));
        g_assert_cmpint(why, ==, NP_HOMES_ONE_NODE);
        g_assert_cmpstr(np_homes_why_to_string(why), ==, "its threads would all run on one node");
        case_clear(&c);
}

/* The load of others counts (the process's own CPU on a node is not
 * load): node 1 is busy with another process, so node 0's second thread
 * goes to node 2 although its pages are on node 1. Nodes outside `on`,
 * without CPUs or without memory are never a home. */
static void test_room_and_nodes(void) {
        Case c;
        case_init(&c, 4, 1.0);
        c.nodes[0].cpu_busy = 0.6; /* this process's */
        c.nodes[1].cpu_busy = 0.9;
        add_thread(&c, 0.6, -1, "0", 5000, 0);
        add_thread(&c, 0.6, -1, "1", 5000, 0);
        g_autoptr(GArray) own = g_array_new(FALSE, FALSE, sizeof(NpNodeCpu));
        NpNodeCpu o = { 0, 0.6 };
        g_array_append_val(own, o);
        g_autofree char *h = homes(&c, NULL, own, NULL);
        g_assert_cmpstr(h, ==, "02");

        /* placed on nodes 0 and 1: the second thread fits on neither and
         * goes outside them, to the first node with room */
        g_autoptr(NpMask) on = NULL;
        g_assert_cmpint(np_mask_parse("0-1", &on), ==, 0);
        g_autofree char *h2 = homes(&c, on, own, NULL);
        g_assert_cmpstr(h2, ==, "02");
        /* with node 1 less busy, each keeps its pages' node */
        c.nodes[1].cpu_busy = 0.2;
        g_autofree char *h3 = homes(&c, on, own, NULL);
        g_assert_cmpstr(h3, ==, "01");
        /* with every other node full, the less loaded of 0 and 1: both on
         * node 0, one node, no homes */
        c.nodes[1].cpu_busy = 0.9;
        c.nodes[2].cpu_busy = c.nodes[3].cpu_busy = 1.0;
        NpHomesWhy why;
        g_assert_null(homes(&c, on, own, &why));
        g_assert_cmpint(why, ==, NP_HOMES_ONE_NODE);
        case_clear(&c);

        /* node 2 has no memory, node 3 no CPUs: 0 and 1 share */
        case_init(&c, 4, 1.0);
        c.nodes[2].mem_total = 0;
        c.nodes[3].cpu_capacity = 0;
        for (int i = 0; i < 3; i++)
                add_thread(&c, 0.6, -1, "0", 5000, 0);
        g_autofree char *h4 = homes(&c, NULL, NULL, NULL);
        g_assert_cmpstr(h4, ==, "010");
        /* only one node with both: none */
        c.nodes[1].mem_total = 0;
        g_assert_null(homes(&c, NULL, NULL, &why));
        g_assert_cmpint(why, ==, NP_HOMES_NO_NODES);
        case_clear(&c);
}

/* numa01's pair as a round moves it to nodes 0 and 1 (the group's
 * cpusets): the first's thread has its pages on node 1, the child's has no
 * faults counted, and node 0 reads 0.3 CPUs of others' for an interval, so
 * the child's thread no longer fits there at 85%. Preferring 0 and 1, the
 * rule sends it to node 2, which its cpuset does not allow; confined to 0
 * and 1, it gets node 0, the less loaded of the two. Nodes of neither are
 * never chosen, and one such node alone leaves no homes. */
static void test_confined(void) {
        Case c;
        case_init(&c, 4, 1.0);
        c.nodes[0].cpu_busy = 0.3;
        add_thread(&c, 0.59, -1, "1", 4100, 0);
        add_thread(&c, 0.59, -1, "", 0, 0);
        g_autoptr(NpMask) on = NULL;
        g_assert_cmpint(np_mask_parse("0-1", &on), ==, 0);
        g_autofree char *h = homes_in(&c, on, false, NULL, NULL);
        g_assert_cmpstr(h, ==, "12");
        g_autofree char *h2 = homes_in(&c, on, true, NULL, NULL);
        g_assert_cmpstr(h2, ==, "10");
        /* node 0 loaded for good (more than node 1 with the first's
         * thread): both would share node 1, no homes, never node 2 or 3 */
        c.nodes[0].cpu_busy = 0.9;
        NpHomesWhy why;
        g_assert_null(homes_in(&c, on, true, NULL, &why));
        g_assert_cmpint(why, ==, NP_HOMES_ONE_NODE);
        /* confined to one node with CPUs and memory: none */
        c.nodes[0].cpu_busy = 0.0;
        c.nodes[1].cpu_capacity = 0;
        g_assert_null(homes_in(&c, on, true, NULL, &why));
        g_assert_cmpint(why, ==, NP_HOMES_NO_NODES);
        case_clear(&c);
}

/* Busy threads that last ran on one node ran there alone only when their
 * CPU use fits its CPUs: numa02's four threads (0.6 CPUs each) read on one
 * node of one CPU, or of two, had been on others too. */
static void test_ran_there(void) {
        g_assert_true(np_policy_threads_ran_there(0.9, 1));
        g_assert_true(np_policy_threads_ran_there(1.05, 1)); /* an interval's overshoot */
        g_assert_false(np_policy_threads_ran_there(2.4, 1));
        g_assert_false(np_policy_threads_ran_there(2.4, 2));
        g_assert_true(np_policy_threads_ran_there(1.2, 2));
        g_assert_true(np_policy_threads_ran_there(2.4, 4));
        g_assert_false(np_policy_threads_ran_there(0.2, 0));
}

/* The Decision's words for the homes: by thread id; "its own node" when
 * every thread has a node to itself, "one node" when two share one. */
static void test_clause(void) {
        g_autoptr(GArray) h = g_array_new(FALSE, FALSE, sizeof(NpThreadHome));
        NpThreadHome a = { 172, 1 }, b = { 171, 0 };
        g_array_append_val(h, a);
        g_array_append_val(h, b);
        g_autofree char *list = np_policy_homes_list(h);
        g_assert_cmpstr(list, ==, "171 on 0, 172 on 1");
        g_autofree char *own = np_policy_homes_clause(h);
        g_assert_cmpstr(own, ==,
                        "; its 2 busy threads work on their own pages: each is kept on its own node (171 on 0, 172 "
                        "on 1), where the kernel's NUMA balancing moves them");
        NpThreadHome c = { 173, 0 };
        g_array_append_val(h, c);
        g_autofree char *one = np_policy_homes_clause(h);
        g_assert_cmpstr(one, ==,
                        "; its 3 busy threads work on their own pages: each is kept on one node (171 on 0, 172 on 1, "
                        "173 on 0), where the kernel's NUMA balancing moves them");
}

/* numa01's pair as one group on one-CPU nodes, placed on nodes 0 and 3:
 * the first's busy thread with `faults` private faults on node `node` (its
 * private pages), the child's with none counted (the kernel does not scan
 * their shared memory). Their homes as in homes(). */
static char *pair_homes(char node, uint64_t faults, const GArray *pages, NpHomesWhy *why) {
        Case c;
        g_autoptr(NpMask) on = NULL;
        g_assert_cmpint(np_mask_parse("0,3", &on), ==, 0);
        case_init(&c, 4, 1.0);
        char where[2] = { node, 0 };
        add_thread(&c, 0.6, -1, where, faults, 0);
        add_thread(&c, 0.6, -1, "", 0, 0);
        c.threads[1].faults = NULL;
        c.threads[0].pages = pages;
        char *h = homes(&c, on, NULL, why);
        case_clear(&c);
        return h;
}

/* The first keeps the node of its pages, the child gets the group's other
 * node; with its pages moved to node 3, the first goes there. Too few
 * faults counted between them (the child's thread counts for the
 * average): none. */
static void test_group_faultless(void) {
        NpHomesWhy why;
        g_autofree char *first = pair_homes('0', 3000, NULL, &why);
        g_assert_cmpint(why, ==, NP_HOMES_GIVEN);
        g_assert_cmpstr(first, ==, "03");
        g_autofree char *moved = pair_homes('3', 3000, NULL, &why);
        g_assert_cmpstr(moved, ==, "30");
        g_assert_null(pair_homes('0', 300, NULL, &why));
        g_assert_cmpint(why, ==, NP_HOMES_FEW_FAULTS);
        /* its faults counted on node 0, but the kernel has moved its pages
         * to node 3 since (its pages, when known, tell) */
        g_autoptr(GArray) pages = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        NpNodeBytes on0 = { 0, 64 * 1024 }, on3 = { 3, 16 * MiB };
        g_array_append_val(pages, on0);
        g_array_append_val(pages, on3);
        g_autofree char *now = pair_homes('0', 3000, pages, &why);
        g_assert_cmpstr(now, ==, "30");

        g_autoptr(GArray) h = g_array_new(FALSE, FALSE, sizeof(NpThreadHome));
        NpThreadHome a = { 205, 3 }, b = { 171, 0 };
        g_array_append_val(h, a);
        g_array_append_val(h, b);
        g_autofree char *clause = np_policy_group_homes_clause(h);
        g_assert_cmpstr(clause, ==,
                        "; the 2 busy threads of its group work on their own pages: each is kept on its own node "
                        "(171 on 0, 205 on 3), where the kernel's NUMA balancing moves them");
        g_assert_cmpstr(np_homes_why_to_string(NP_HOMES_OUTSIDE), ==,
                        "its group's threads would need nodes outside the group's");
}

/* What the log says the rule was given: faults, pages, homes. */
static void test_describe(void) {
        Case c;
        case_init(&c, 4, 1.0);
        add_thread(&c, 0.6, 0, "01", 2500, 10);
        add_thread(&c, 0.58, -1, "", 0, 0);
        add_thread(&c, 0.4, -1, "2", 0, 40);
        g_autoptr(GArray) pages = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        NpNodeBytes on1 = { 1, 1 * MiB }, on3 = { 3, 15 * MiB };
        g_array_append_val(pages, on1);
        g_array_append_val(pages, on3);
        c.threads[1].pages = pages;
        g_autofree char *d = np_policy_threads_describe(c.threads, c.n_threads);
        g_assert_cmpstr(d, ==,
                        "100 (0.60 CPUs, 5000 of 5010 faults private, most on 0; kept on 0), "
                        "101 (0.58 CPUs, no faults counted; 16.0 MiB of its own, most on 3), "
                        "102 (0.40 CPUs, 40 faults, none private)");
        g_autofree char *none = np_policy_threads_describe(c.threads, 0);
        g_assert_cmpstr(none, ==, "none");
        /* the load of others on each node that can be a home, the
         * process's own use taken out */
        c.nodes[0].cpu_busy = 0.8;
        c.nodes[1].cpu_busy = 0.25;
        c.nodes[2].mem_total = 0;
        g_autoptr(GArray) own = g_array_new(FALSE, FALSE, sizeof(NpNodeCpu));
        NpNodeCpu o0 = { 0, 0.6 }, o1 = { 1, 0.5 };
        g_array_append_val(own, o0);
        g_array_append_val(own, o1);
        g_autofree char *load = np_policy_threads_load_describe(c.nodes, c.n, own);
        g_assert_cmpstr(load, ==, "0 0.20 of 1.00 CPUs, 1 0.00 of 1.00 CPUs, 3 0.00 of 1.00 CPUs");
        g_autofree char *nowhere = np_policy_threads_load_describe(c.nodes, 0, NULL);
        g_assert_cmpstr(nowhere, ==, "no node with CPUs and memory");
        case_clear(&c);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/homes/first-touch-on-one-node", test_first_touch_on_one_node);
        g_test_add_func("/homes/follows-the-pages", test_follows_the_pages);
        g_test_add_func("/homes/hold", test_homes_hold);
        g_test_add_func("/homes/noisy-room", test_homes_noisy_room);
        g_test_add_func("/homes/none", test_no_homes);
        g_test_add_func("/homes/no-room", test_no_room);
        g_test_add_func("/homes/room-and-nodes", test_room_and_nodes);
        g_test_add_func("/homes/confined", test_confined);
        g_test_add_func("/homes/clause", test_clause);
        g_test_add_func("/homes/ran-there", test_ran_there);
        g_test_add_func("/homes/group-faultless", test_group_faultless);
        g_test_add_func("/homes/describe", test_describe);
        return g_test_run();
}
