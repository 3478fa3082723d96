/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-topology: every fixture tree (see tests/fixtures/README.md),
 * meminfo and distance parsing including malformed input. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "np-sample.h"
#include "np-sysroot.h"
#include "np-test-api.h"
#include "np-topology.h"
#include "np-test-util.h"

#define GIB (UINT64_C(1) << 30)
#define KIB UINT64_C(1024)

static NpTopology *load_tree(const char *tree) {
        const char *f = g_getenv("NP_FIXTURES");
        g_assert_nonnull(f);
        g_autofree char *root = g_build_filename(f, tree, NULL);
        np_sysroot_set(root);
        g_autoptr(GError) error = NULL;
        NpTopology *t = NULL;
        int r = np_topology_load(&t, &error);
        g_assert_no_error(error);
        g_assert_cmpint(r, ==, 0);
        g_assert_nonnull(t);
        np_sysroot_set(NULL);
        return t;
}

static void assert_mask(const NpMask *m, const char *expect) {
        g_autofree char *s = np_mask_format(m);
        g_assert_cmpstr(s, ==, expect);
}

static void assert_node(const NpTopology *t, unsigned id, const char *cpus, uint64_t mem) {
        NpNode *n = np_topology_node(t, id);
        g_assert_nonnull(n);
        g_assert_cmpuint(n->id, ==, id);
        assert_mask(n->cpus, cpus);
        g_assert_cmpuint(n->mem_total_bytes, ==, mem);
        g_assert_cmpuint(n->distances->len, ==, t->nodes->len);
}

/* rows of the distance matrix in online-node order */
static void assert_distances(const NpTopology *t, const unsigned *ids, const unsigned *matrix) {
        unsigned n = t->nodes->len;
        for (unsigned i = 0; i < n; i++) {
                NpNode *node = g_ptr_array_index(t->nodes, i);
                g_assert_cmpuint(node->id, ==, ids[i]);
                for (unsigned j = 0; j < n; j++) {
                        NpDistance *d = &g_array_index(node->distances, NpDistance, j);
                        g_assert_cmpuint(d->node, ==, ids[j]);
                        g_assert_cmpuint(d->distance, ==, matrix[i * n + j]);
                        g_assert_cmpuint(np_topology_distance(t, ids[i], ids[j]), ==, matrix[i * n + j]);
                }
        }
}

static void test_2node(void) {
        g_autoptr(NpTopology) t = load_tree("2node");
        g_assert_false(t->synthetic);
        g_assert_cmpuint(t->nodes->len, ==, 2);
        assert_mask(t->online, "0-1");
        assert_mask(t->with_memory, "0-1");
        assert_mask(t->with_cpus, "0-1");
        assert_mask(t->all_cpus, "0-7");
        g_assert_cmpuint(t->max_cpu, ==, 8);
        assert_node(t, 0, "0-3", 16 * GIB);
        assert_node(t, 1, "4-7", 16 * GIB);
        const unsigned ids[] = { 0, 1 };
        const unsigned d[] = { 10, 21, 21, 10 };
        assert_distances(t, ids, d);
        g_assert_cmpint(np_topology_node_of_cpu(t, 5), ==, 1);
        g_assert_cmpint(np_topology_node_of_cpu(t, 8), ==, -1);
        g_assert_null(np_topology_node(t, 2));
        g_assert_cmpuint(np_topology_distance(t, 0, 2), ==, 0);
}

static void test_4node(void) {
        g_autoptr(NpTopology) t = load_tree("4node");
        g_assert_cmpuint(t->nodes->len, ==, 4);
        assert_mask(t->online, "0-3");
        assert_mask(t->all_cpus, "0-15");
        g_assert_cmpuint(t->max_cpu, ==, 16);
        for (unsigned i = 0; i < 4; i++) {
                g_autofree char *cpus = g_strdup_printf("%u-%u", 4 * i, 4 * i + 3);
                assert_node(t, i, cpus, 8 * GIB);
        }
        const unsigned ids[] = { 0, 1, 2, 3 };
        const unsigned d[] = {
                10, 20, 30, 30, 20, 10, 30, 30, 30, 30, 10, 20, 30, 30, 20, 10,
        };
        assert_distances(t, ids, d);

        g_autoptr(NpMask) nodes = NULL;
        g_assert_cmpint(np_mask_parse("1,3", &nodes), ==, 0);
        g_autoptr(NpMask) cpus = np_topology_cpus_of(t, nodes);
        assert_mask(cpus, "4-7,12-15");
        g_autoptr(NpMask) none = np_mask_new();
        g_autoptr(NpMask) nocpus = np_topology_cpus_of(t, none);
        assert_mask(nocpus, "");
}

static void test_8node(void) {
        g_autoptr(NpTopology) t = load_tree("8node");
        g_assert_cmpuint(t->nodes->len, ==, 8);
        assert_mask(t->online, "0-7");
        assert_mask(t->with_memory, "0-7");
        assert_mask(t->with_cpus, "0-7");
        for (unsigned i = 0; i < 8; i++) {
                g_autofree char *cpus = g_strdup_printf("%u-%u", 2 * i, 2 * i + 1);
                assert_node(t, i, cpus, 4 * GIB);
                g_assert_cmpint(np_topology_node_of_cpu(t, 2 * i + 1), ==, (int) i);
                for (unsigned j = 0; j < 8; j++) {
                        unsigned want = i == j ? 10 : (i / 2 == j / 2 ? 16 : 32);
                        g_assert_cmpuint(np_topology_distance(t, i, j), ==, want);
                }
        }
}

static void test_sparse(void) {
        g_autoptr(NpTopology) t = load_tree("sparse");
        g_assert_cmpuint(t->nodes->len, ==, 5);
        assert_mask(t->online, "0,2,5,9,70");
        assert_mask(t->with_memory, "0,2,5,9,70");
        assert_mask(t->with_cpus, "0,2,5,9,70");
        assert_mask(t->all_cpus, "0-9");
        g_assert_cmpuint(t->max_cpu, ==, 10);
        assert_node(t, 0, "0-1", 4 * GIB);
        assert_node(t, 2, "2-3", 4 * GIB);
        assert_node(t, 5, "4-5", 4 * GIB);
        assert_node(t, 9, "6-7", 4 * GIB);
        assert_node(t, 70, "8-9", 2 * GIB);
        g_assert_null(np_topology_node(t, 1));
        g_assert_null(np_topology_node(t, 64));
        g_assert_cmpint(np_topology_node_of_cpu(t, 9), ==, 70);
        const unsigned ids[] = { 0, 2, 5, 9, 70 };
        const unsigned d[] = {
                10, 16, 32, 32, 40, 16, 10, 32, 32, 40, 32, 32, 10, 16, 40, 32, 32, 16, 10, 40, 40, 40, 40, 40, 10,
        };
        assert_distances(t, ids, d);

        g_autoptr(NpMask) nodes = NULL;
        g_assert_cmpint(np_mask_parse("5,70", &nodes), ==, 0);
        g_autoptr(NpMask) cpus = np_topology_cpus_of(t, nodes);
        assert_mask(cpus, "4-5,8-9");
}

/* Large machines: 16 nodes / 512 CPUs, and 32 sparse nodes / 1024 CPUs. */
static void use_tree(const char *tree) {
        g_autofree char *root = g_build_filename(g_getenv("NP_FIXTURES"), tree, NULL);
        np_sysroot_set(root);
}

static void test_16node(void) {
        g_autoptr(NpTopology) t = load_tree("16node");
        g_assert_cmpuint(t->nodes->len, ==, 16);
        assert_mask(t->online, "0-15");
        assert_mask(t->with_memory, "0-15");
        assert_mask(t->all_cpus, "0-511");
        g_assert_cmpuint(t->max_cpu, ==, 512);
        assert_node(t, 0, "0-31", 16 * GIB);
        assert_node(t, 7, "224-255", 16 * GIB);
        assert_node(t, 15, "480-511", 16 * GIB);
        g_assert_cmpint(np_topology_node_of_cpu(t, 511), ==, 15);
        g_assert_cmpint(np_topology_node_of_cpu(t, 256), ==, 8);
        g_assert_cmpint(np_topology_node_of_cpu(t, 512), ==, -1);
        /* sockets of four nodes */
        for (unsigned a = 0; a < 16; a++)
                for (unsigned b = 0; b < 16; b++)
                        g_assert_cmpuint(np_topology_distance(t, a, b), ==, a == b ? 10 : a / 4 == b / 4 ? 12 : 32);

        g_autoptr(GArray) ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        g_autoptr(GArray) s = g_array_new(FALSE, TRUE, sizeof(NpNodeSample));
        use_tree("16node");
        g_assert_cmpint(np_sample_nodes(t, true, NULL, ticks, s, NULL), ==, 0);
        np_sysroot_set(NULL);
        g_assert_cmpuint(ticks->len, ==, 512);
        g_assert_cmpuint(s->len, ==, 16);
        const NpNodeSample *n15 = &g_array_index(s, NpNodeSample, 15);
        g_assert_cmpuint(n15->id, ==, 15);
        g_assert_cmpfloat(n15->cpu_capacity, ==, 32.0);
        g_assert_cmpuint(n15->mem_free_strict_bytes, ==, (8388608 + 65536 * 15) * KIB);
        g_assert_cmpuint(n15->mem_free_bytes, ==, (8388608 + 65536 * 15 + 131072 * 16) * KIB);
}

static void test_32node_sparse(void) {
        g_autoptr(NpTopology) t = load_tree("32node");
        g_assert_cmpuint(t->nodes->len, ==, 32);
        assert_mask(t->online, "0-3,10-13,20-23,30-33,40-43,50-53,60-63,70-73");
        assert_mask(t->with_cpus, "0-3,10-13,20-23,30-33,40-43,50-53,60-63,70-73");
        assert_mask(t->all_cpus, "0-1023");
        g_assert_cmpuint(t->max_cpu, ==, 1024);
        assert_node(t, 0, "0-31", 8 * GIB);
        assert_node(t, 10, "128-159", 8 * GIB);
        assert_node(t, 73, "992-1023", 8 * GIB);
        g_assert_null(np_topology_node(t, 4));
        g_assert_null(np_topology_node(t, 64));
        g_assert_cmpint(np_topology_node_of_cpu(t, 1023), ==, 73);
        g_assert_cmpint(np_topology_node_of_cpu(t, 160), ==, 11);
        g_assert_cmpuint(np_topology_distance(t, 10, 13), ==, 12);
        g_assert_cmpuint(np_topology_distance(t, 13, 20), ==, 32);
        g_assert_cmpuint(np_topology_distance(t, 73, 73), ==, 10);
        g_assert_cmpuint(np_topology_distance(t, 0, 73), ==, 32);
        g_assert_cmpuint(np_topology_distance(t, 0, 4), ==, 0); /* not a node */

        g_autoptr(NpMask) nodes = NULL;
        g_assert_cmpint(np_mask_parse("3,70", &nodes), ==, 0);
        g_autoptr(NpMask) cpus = np_topology_cpus_of(t, nodes);
        assert_mask(cpus, "96-127,896-927");

        g_autoptr(GArray) ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        g_autoptr(GArray) s = g_array_new(FALSE, TRUE, sizeof(NpNodeSample));
        use_tree("32node");
        g_assert_cmpint(np_sample_nodes(t, false, NULL, ticks, s, NULL), ==, 0);
        g_assert_cmpuint(ticks->len, ==, 1024);
        g_assert_cmpuint(s->len, ==, 32);
        const NpNodeSample *last = &g_array_index(s, NpNodeSample, 31);
        g_assert_cmpuint(last->id, ==, 73);
        g_assert_cmpuint(last->mem_total_bytes, ==, 8 * GIB);
        g_assert_cmpuint(last->mem_free_bytes, ==, (4194304 + 32768 * 31) * KIB);
        /* second sample against the first: static ticks, so nothing busy */
        g_autoptr(GArray) ticks2 = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
        g_assert_cmpint(np_sample_nodes(t, false, ticks, ticks2, s, NULL), ==, 0);
        np_sysroot_set(NULL);
        for (guint i = 0; i < s->len; i++)
                g_assert_cmpfloat(g_array_index(s, NpNodeSample, i).cpu_busy, ==, 0.0);
}

static void test_memonly(void) {
        g_autoptr(NpTopology) t = load_tree("memonly");
        g_assert_cmpuint(t->nodes->len, ==, 3);
        assert_mask(t->online, "0-2");
        assert_mask(t->with_memory, "0-2");
        assert_mask(t->with_cpus, "0-1");
        assert_mask(t->all_cpus, "0-7");
        g_assert_cmpuint(t->max_cpu, ==, 8);
        assert_node(t, 0, "0-3", 8 * GIB);
        assert_node(t, 1, "4-7", 8 * GIB);
        assert_node(t, 2, "", 16 * GIB);
        g_assert_true(np_mask_empty(np_topology_node(t, 2)->cpus));
        const unsigned ids[] = { 0, 1, 2 };
        const unsigned d[] = { 10, 21, 17, 21, 10, 28, 17, 28, 10 };
        assert_distances(t, ids, d);
}

static void test_cpuonly(void) {
        g_autoptr(NpTopology) t = load_tree("cpuonly");
        g_assert_cmpuint(t->nodes->len, ==, 2);
        assert_mask(t->online, "0-1");
        assert_mask(t->with_memory, "0");
        assert_mask(t->with_cpus, "0-1");
        assert_node(t, 0, "0-3", 16 * GIB);
        assert_node(t, 1, "4-7", 0);
        const unsigned ids[] = { 0, 1 };
        const unsigned d[] = { 10, 20, 20, 10 };
        assert_distances(t, ids, d);
}

static void test_nonuma(void) {
        g_autoptr(NpTopology) t = load_tree("nonuma");
        g_assert_true(t->synthetic);
        g_assert_cmpuint(t->nodes->len, ==, 1);
        assert_mask(t->online, "0");
        assert_mask(t->with_memory, "0");
        assert_mask(t->with_cpus, "0");
        assert_mask(t->all_cpus, "0-3");
        g_assert_cmpuint(t->max_cpu, ==, 4);
        assert_node(t, 0, "0-3", 8159924 * KIB);
        g_assert_cmpuint(np_topology_distance(t, 0, 0), ==, 10);
}

static void test_missing_root(void) {
        np_sysroot_set("/nonexistent-np-root");
        g_autoptr(GError) error = NULL;
        NpTopology *t = NULL;
        int r = np_topology_load(&t, &error);
        g_assert_cmpint(r, <, 0);
        g_assert_null(t);
        g_assert_nonnull(error);
        g_assert_nonnull(strstr(error->message, "/nonexistent-np-root"));
        np_sysroot_set(NULL);
}

/* A copy of a tree with one file replaced must fail to load with a message. */
static void write_file(const char *root, const char *rel, const char *content) {
        g_autofree char *p = g_build_filename(root, rel, NULL);
        g_autofree char *dir = g_path_get_dirname(p);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        g_assert_true(g_file_set_contents(p, content, -1, NULL));
}

static void make_two_nodes(const char *root) {
        write_file(root, "sys/devices/system/cpu/online", "0-3\n");
        write_file(root, "sys/devices/system/node/online", "0-1\n");
        write_file(root, "sys/devices/system/node/node0/cpulist", "0-1\n");
        write_file(root, "sys/devices/system/node/node1/cpulist", "2-3\n");
        write_file(root, "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:  1024 kB\n");
        write_file(root, "sys/devices/system/node/node1/meminfo", "Node 1 MemTotal:  2048 kB\n");
        write_file(root, "sys/devices/system/node/node0/distance", "10 20\n");
        write_file(root, "sys/devices/system/node/node1/distance", "20 10\n");
}

static int load_root(const char *root, NpTopology **t, GError **error) {
        np_sysroot_set(root);
        int r = np_topology_load(t, error);
        np_sysroot_set(NULL);
        return r;
}

static void test_broken_trees(void) {
        g_autofree char *root = g_dir_make_tmp("np-topo-XXXXXX", NULL);
        g_assert_nonnull(root);

        /* the minimal tree loads; no has_memory: MemTotal > 0 decides */
        make_two_nodes(root);
        {
                g_autoptr(NpTopology) t = NULL;
                g_autoptr(GError) error = NULL;
                g_assert_cmpint(load_root(root, &t, &error), ==, 0);
                assert_mask(t->with_memory, "0-1");
                g_assert_cmpuint(np_topology_node(t, 1)->mem_total_bytes, ==, 2048 * KIB);
        }

        /* offline CPUs are dropped from the node lists */
        write_file(root, "sys/devices/system/cpu/online", "0-2\n");
        {
                g_autoptr(NpTopology) t = NULL;
                g_autoptr(GError) error = NULL;
                g_assert_cmpint(load_root(root, &t, &error), ==, 0);
                assert_mask(np_topology_node(t, 1)->cpus, "2");
                assert_mask(t->all_cpus, "0-2");
        }
        write_file(root, "sys/devices/system/cpu/online", "0-3\n");

        static const struct {
                const char *file, *content;
        } bad[] = {
                { "sys/devices/system/node/node1/distance", "20\n" },
                { "sys/devices/system/node/node1/distance", "20 10 10\n" },
                { "sys/devices/system/node/node1/distance", "20 ten\n" },
                { "sys/devices/system/node/node1/distance", "" },
                { "sys/devices/system/node/node1/meminfo", "Node 1 MemFree: 5 kB\n" },
                { "sys/devices/system/node/node1/meminfo", "Node 1 MemTotal: lots\n" },
                { "sys/devices/system/node/node1/cpulist", "3-2\n" },
                { "sys/devices/system/node/online", "\n" },
                { "sys/devices/system/node/online", "0-1,\n" },
                { "sys/devices/system/node/online", "0-2\n" }, /* node2 missing */
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                make_two_nodes(root);
                write_file(root, bad[i].file, bad[i].content);
                g_autoptr(NpTopology) t = NULL;
                g_autoptr(GError) error = NULL;
                int r = load_root(root, &t, &error);
                g_test_message("%s = '%s': %d %s", bad[i].file, bad[i].content, r,
                               error ? error->message : "(no error)");
                g_assert_cmpint(r, <, 0);
                g_assert_null(t);
                g_assert_nonnull(error);
        }
        np_test_rm_rf(root);
}

/* CPU and memory hotplug on a tree changed between two loads: the per-scan
 * check notices, the diff names what changed, the log text says it. */
static bool outdated_in(const char *root, const NpTopology *t) {
        np_sysroot_set(root);
        bool r = np_topology_outdated(t);
        np_sysroot_set(NULL);
        return r;
}

static NpTopology *load_ok(const char *root) {
        g_autoptr(GError) e = NULL;
        NpTopology *t = NULL;
        g_assert_cmpint(load_root(root, &t, &e), ==, 0);
        g_assert_no_error(e);
        return t;
}

static void assert_diff(const NpTopologyDiff *d, const char *added, const char *removed, const char *cpus,
                        const char *memory) {
        assert_mask(d->added, added);
        assert_mask(d->removed, removed);
        assert_mask(d->cpus_changed, cpus);
        assert_mask(d->memory_changed, memory);
}

/* before -> after differs as said (masks of added, removed, CPUs changed,
 * memory changed) and the log text is `text`. */
static void expect_diff(const NpTopology *before, const NpTopology *after, const char *added, const char *removed,
                        const char *cpus, const char *memory, const char *text) {
        g_auto(NpTopologyDiff) d = { 0 };
        g_assert_cmpint(np_topology_diff(before, after, &d), ==, *text != '\0');
        assert_diff(&d, added, removed, cpus, memory);
        g_autofree char *got = np_topology_diff_describe(before, after, &d);
        g_assert_cmpstr(got, ==, text);
}

static void test_hotplug_diff(void) {
        g_autofree char *root = g_dir_make_tmp("np-topo-XXXXXX", NULL);
        g_assert_nonnull(root);
        make_two_nodes(root);
        g_autoptr(NpTopology) t0 = load_ok(root);
        assert_mask(t0->cpus_online, "0-3");
        g_assert_false(outdated_in(root, t0));

        /* the same tree again: no difference */
        g_autoptr(NpTopology) same = load_ok(root);
        expect_diff(t0, same, "", "", "", "", "");

        /* CPU 3 goes offline (the node's cpulist keeps it: the loader
         * takes the online ones), then CPU 2 too: node 1 has none left */
        write_file(root, "sys/devices/system/cpu/online", "0-2\n");
        g_assert_true(outdated_in(root, t0));
        g_autoptr(NpTopology) t1 = load_ok(root);
        expect_diff(t0, t1, "", "", "1", "", "node 1: CPUs 2-3 -> 2");
        assert_mask(t1->all_cpus, "0-2");
        assert_mask(t1->with_cpus, "0-1");
        write_file(root, "sys/devices/system/cpu/online", "0-1\n");
        write_file(root, "sys/devices/system/node/node1/cpulist", "\n");
        g_assert_true(outdated_in(root, t1));
        g_autoptr(NpTopology) t2 = load_ok(root);
        expect_diff(t1, t2, "", "", "1", "", "node 1: CPUs 2 -> none");
        assert_mask(t2->with_cpus, "0");
        assert_mask(t2->with_memory, "0-1");
        g_assert_false(outdated_in(root, t2));

        /* memory hot-added to node 0: the CPU and node files do not show
         * it, MemTotal does */
        write_file(root, "sys/devices/system/node/node0/meminfo", "Node 0 MemTotal:  3072 kB\n");
        g_assert_false(outdated_in(root, t2));
        NpNodeTotal totals[] = { { .id = 0, .bytes = 3072 * KIB }, { .id = 1, .bytes = 2048 * KIB } };
        g_assert_true(np_topology_memory_differs(t2, totals, G_N_ELEMENTS(totals)));
        totals[0].bytes = 1024 * KIB;
        g_assert_false(np_topology_memory_differs(t2, totals, G_N_ELEMENTS(totals)));
        NpNodeTotal unknown = { .id = 7, .bytes = 1 };
        g_assert_false(np_topology_memory_differs(t2, &unknown, 1));
        g_autoptr(NpTopology) t3 = load_ok(root);
        expect_diff(t2, t3, "", "", "", "0", "node 0: memory 1 MiB -> 3 MiB");

        /* the CPUs come back and a node with memory only comes online */
        write_file(root, "sys/devices/system/cpu/online", "0-3\n");
        write_file(root, "sys/devices/system/node/node1/cpulist", "2-3\n");
        write_file(root, "sys/devices/system/node/online", "0-2\n");
        write_file(root, "sys/devices/system/node/node2/cpulist", "\n");
        write_file(root, "sys/devices/system/node/node2/meminfo", "Node 2 MemTotal:  1048576 kB\n");
        write_file(root, "sys/devices/system/node/node0/distance", "10 20 30\n");
        write_file(root, "sys/devices/system/node/node1/distance", "20 10 30\n");
        write_file(root, "sys/devices/system/node/node2/distance", "30 30 10\n");
        g_assert_true(outdated_in(root, t3));
        g_autoptr(NpTopology) t4 = load_ok(root);
        expect_diff(t3, t4, "2", "", "1", "", "node 1: CPUs none -> 2-3; node 2: added (CPUs none, memory 1024 MiB)");

        /* and goes away again */
        expect_diff(t4, t3, "", "2", "1", "", "node 1: CPUs 2-3 -> none; node 2: removed");

        /* a file that cannot be read is no reason to reload */
        g_autofree char *online = g_build_filename(root, "sys/devices/system/cpu/online", NULL);
        g_assert_cmpint(g_unlink(online), ==, 0);
        g_assert_false(outdated_in(root, t4));
        np_test_rm_rf(root);
}

static void test_parse_meminfo(void) {
        const char *node = "Node 0 MemTotal:        5204172 kB\n"
                           "Node 0 MemFree:         4405996 kB\n"
                           "Node 0 Inactive(file):   285996 kB\n"
                           "Node 0 HugePages_Total:     7\n";
        uint64_t v = 0;
        g_assert_cmpint(np_parse_meminfo_value(node, "MemTotal", &v), ==, 0);
        g_assert_cmpuint(v, ==, 5204172 * KIB);
        g_assert_cmpint(np_parse_meminfo_value(node, "MemFree", &v), ==, 0);
        g_assert_cmpuint(v, ==, 4405996 * KIB);
        g_assert_cmpint(np_parse_meminfo_value(node, "Inactive(file)", &v), ==, 0);
        g_assert_cmpuint(v, ==, 285996 * KIB);
        g_assert_cmpint(np_parse_meminfo_value(node, "HugePages_Total", &v), ==, 0);
        g_assert_cmpuint(v, ==, 7);
        g_assert_cmpint(np_parse_meminfo_value(node, "Mem", &v), ==, -ENOENT);
        g_assert_cmpint(np_parse_meminfo_value(node, "Inactive", &v), ==, -ENOENT);
        g_assert_cmpint(np_parse_meminfo_value(node, "SwapCached", &v), ==, -ENOENT);

        const char *node70 = "Node 70 MemTotal:  1 kB\nNode 70 MemFree: 0 kB";
        g_assert_cmpint(np_parse_meminfo_value(node70, "MemFree", &v), ==, 0);
        g_assert_cmpuint(v, ==, 0);

        const char *proc = "MemTotal:       24684084 kB\nMemFree:        23885356 kB\n";
        g_assert_cmpint(np_parse_meminfo_value(proc, "MemTotal", &v), ==, 0);
        g_assert_cmpuint(v, ==, 24684084 * KIB);

        g_assert_cmpint(np_parse_meminfo_value("", "MemTotal", &v), ==, -ENOENT);
        g_assert_cmpint(np_parse_meminfo_value("MemTotal:\n", "MemTotal", &v), ==, -EINVAL);
        g_assert_cmpint(np_parse_meminfo_value("MemTotal: x kB\n", "MemTotal", &v), ==, -EINVAL);
        g_assert_cmpint(np_parse_meminfo_value("MemTotal: -5 kB\n", "MemTotal", &v), ==, -EINVAL);
        g_assert_cmpint(np_parse_meminfo_value("MemTotal: 5 MB\n", "MemTotal", &v), ==, -EINVAL);
        g_assert_cmpint(np_parse_meminfo_value("MemTotal: 5 kB junk\n", "MemTotal", &v), ==, -EINVAL);
        g_assert_cmpint(np_parse_meminfo_value("MemTotal: 99999999999999999999 kB\n", "MemTotal", &v), ==, -EINVAL);
        g_assert_cmpint(np_parse_meminfo_value("MemTotal: 18014398509481984 kB\n", "MemTotal", &v), ==,
                        -EINVAL); /* 2^54 kB overflows bytes */
        g_assert_cmpint(np_parse_meminfo_value("Node 0 MemTotal", "MemTotal", &v), ==, -ENOENT);
        g_assert_cmpint(np_parse_meminfo_value(NULL, "MemTotal", &v), ==, -EINVAL);
}

static void test_parse_distance(void) {
        g_autoptr(NpMask) online = NULL;
        g_assert_cmpint(np_mask_parse("0,2,5,9,70", &online), ==, 0);
        g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(NpDistance));

        g_assert_cmpint(np_parse_distance_line("10 16 32 32 40\n", online, out), ==, 0);
        g_assert_cmpuint(out->len, ==, 5);
        g_assert_cmpuint(g_array_index(out, NpDistance, 4).node, ==, 70);
        g_assert_cmpuint(g_array_index(out, NpDistance, 4).distance, ==, 40);
        g_assert_cmpuint(g_array_index(out, NpDistance, 1).node, ==, 2);
        g_assert_cmpuint(g_array_index(out, NpDistance, 1).distance, ==, 16);

        /* a second parse replaces the contents */
        g_assert_cmpint(np_parse_distance_line("40 40 40 40 10", online, out), ==, 0);
        g_assert_cmpuint(out->len, ==, 5);
        g_assert_cmpuint(g_array_index(out, NpDistance, 0).distance, ==, 40);

        static const char *bad[] = {
                "10 16 32 32\n", /* too few */
                "10 16 32 32 40 50\n", /* too many */
                "10 16 x 32 40\n",
                "10 16 -32 32 40\n",
                "10 16 32 32 40x\n",
                "10,16,32,32,40\n",
                "10 16 32 32 40\n99\n",
                "99999999999 16 32 32 40\n",
                "",
                "\n",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_assert_cmpint(np_parse_distance_line(bad[i], online, out), ==, -EINVAL);
                /* untouched on error */
                g_assert_cmpuint(out->len, ==, 5);
                g_assert_cmpuint(g_array_index(out, NpDistance, 0).distance, ==, 40);
        }
        g_assert_cmpint(np_parse_distance_line(" 10\t16 32 32 40 \n\n", online, out), ==, 0);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/topology/2node", test_2node);
        g_test_add_func("/topology/4node", test_4node);
        g_test_add_func("/topology/8node", test_8node);
        g_test_add_func("/topology/sparse", test_sparse);
        g_test_add_func("/topology/16node", test_16node);
        g_test_add_func("/topology/32node-sparse", test_32node_sparse);
        g_test_add_func("/topology/memonly", test_memonly);
        g_test_add_func("/topology/cpuonly", test_cpuonly);
        g_test_add_func("/topology/nonuma", test_nonuma);
        g_test_add_func("/topology/missing-root", test_missing_root);
        g_test_add_func("/topology/broken-trees", test_broken_trees);
        g_test_add_func("/topology/hotplug-diff", test_hotplug_diff);
        g_test_add_func("/topology/parse-meminfo", test_parse_meminfo);
        g_test_add_func("/topology/parse-distance", test_parse_distance);
        return g_test_run();
}
