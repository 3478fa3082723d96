/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-numastat: cgroup v2 memory.numa_stat in the kernel's
 * format (4 nodes, sparse nodes, empty), each kind of malformed line, values
 * at the 64-bit limit, and the reader on a fixture root. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "np-numastat.h"
#include "np-sysroot.h"
#include "np-test-util.h"

/* Every item a 6.1 kernel prints, 4 nodes (bytes; workingset_* are counts). */
static const char four_nodes[] = "anon N0=104857600 N1=4096 N2=0 N3=8192\n"
                                 "file N0=52428800 N1=268435456 N2=12288 N3=0\n"
                                 "kernel_stack N0=16384 N1=0 N2=0 N3=0\n"
                                 "pagetables N0=233472 N1=4096 N2=0 N3=0\n"
                                 "sec_pagetables N0=0 N1=0 N2=0 N3=0\n"
                                 "shmem N0=0 N1=268435456 N2=4096 N3=0\n"
                                 "file_mapped N0=1048576 N1=268435456 N2=0 N3=0\n"
                                 "file_dirty N0=0 N1=0 N2=0 N3=0\n"
                                 "file_writeback N0=0 N1=0 N2=0 N3=0\n"
                                 "swapcached N0=0 N1=0 N2=0 N3=0\n"
                                 "anon_thp N0=0 N1=0 N2=0 N3=0\n"
                                 "file_thp N0=0 N1=0 N2=0 N3=0\n"
                                 "shmem_thp N0=0 N1=0 N2=0 N3=0\n"
                                 "inactive_anon N0=104857600 N1=268439552 N2=4096 N3=8192\n"
                                 "active_anon N0=0 N1=0 N2=0 N3=0\n"
                                 "inactive_file N0=40000000 N1=0 N2=8192 N3=0\n"
                                 "active_file N0=12428800 N1=0 N2=0 N3=0\n"
                                 "unevictable N0=0 N1=0 N2=0 N3=0\n"
                                 "slab_reclaimable N0=90112 N1=0 N2=0 N3=0\n"
                                 "slab_unreclaimable N0=123456 N1=0 N2=0 N3=0\n"
                                 "workingset_refault_anon N0=0 N1=0 N2=0 N3=0\n"
                                 "workingset_refault_file N0=17 N1=0 N2=0 N3=0\n"
                                 "workingset_activate_anon N0=0 N1=0 N2=0 N3=0\n"
                                 "workingset_activate_file N0=3 N1=0 N2=0 N3=0\n"
                                 "workingset_restore_anon N0=0 N1=0 N2=0 N3=0\n"
                                 "workingset_restore_file N0=0 N1=0 N2=0 N3=0\n"
                                 "workingset_nodereclaim N0=0 N1=0 N2=0 N3=0\n";

static void assert_node(const NpNumaStat *s, unsigned node, uint64_t anon, uint64_t file, uint64_t shmem) {
        const NpNumaStatNode *n = np_numa_stat_node(s, node);
        g_assert_nonnull(n);
        g_assert_cmpuint(n->node, ==, node);
        g_assert_cmpuint(n->anon, ==, anon);
        g_assert_cmpuint(n->file, ==, file);
        g_assert_cmpuint(n->shmem, ==, shmem);
}

static void test_four_nodes(void) {
        g_autoptr(GError) error = NULL;
        NpNumaStat s = { 0 };
        g_assert_cmpint(np_parse_numa_stat(four_nodes, &s, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(s.per_node->len, ==, 4);
        for (unsigned i = 0; i < 4; i++)
                g_assert_cmpuint(g_array_index(s.per_node, NpNumaStatNode, i).node, ==, i);
        assert_node(&s, 0, 104857600, 52428800, 0);
        assert_node(&s, 1, 4096, 268435456, 268435456);
        assert_node(&s, 2, 0, 12288, 4096);
        assert_node(&s, 3, 8192, 0, 0); /* zeros kept: the node is named */
        g_assert_null(np_numa_stat_node(&s, 4));
        np_numa_stat_clear(&s);
        g_assert_null(s.per_node);
        np_numa_stat_clear(&s);
        np_numa_stat_clear(NULL);
}

static void test_sparse(void) {
        g_autoptr(GError) error = NULL;
        NpNumaStat s = { 0 };
        /* nodes 0 and 2 only (the kernel lists the nodes with memory); no
         * trailing newline; a line naming a node the others do not */
        const char *buf = "anon N0=4096 N2=1073741824\n"
                          "file N0=8192 N2=0\n"
                          "kernel_stack N0=0 N2=0\n"
                          "shmem N0=8192 N2=0\n"
                          "active_file N0=0 N2=0 N7=5";
        g_assert_cmpint(np_parse_numa_stat(buf, &s, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(s.per_node->len, ==, 3);
        assert_node(&s, 0, 4096, 8192, 8192);
        assert_node(&s, 2, 1073741824, 0, 0);
        assert_node(&s, 7, 0, 0, 0);
        g_assert_null(np_numa_stat_node(&s, 1));
        np_numa_stat_clear(&s);

        /* the highest node id any kernel has, tabs as blanks, blank lines */
        g_assert_cmpint(np_parse_numa_stat("\nanon\tN1023=1\n\nfile N1023=2 \n", &s, &error), ==, 0);
        g_assert_cmpuint(s.per_node->len, ==, 1);
        assert_node(&s, 1023, 1, 2, 0);
        np_numa_stat_clear(&s);
}

static void test_empty(void) {
        g_autoptr(GError) error = NULL;
        NpNumaStat s = { 0 };
        g_assert_cmpint(np_parse_numa_stat("", &s, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_nonnull(s.per_node);
        g_assert_cmpuint(s.per_node->len, ==, 0);
        np_numa_stat_clear(&s);
        g_assert_cmpint(np_parse_numa_stat("\n", &s, &error), ==, 0);
        g_assert_cmpuint(s.per_node->len, ==, 0);
        np_numa_stat_clear(&s);
        /* an item without nodes names none */
        g_assert_cmpint(np_parse_numa_stat("anon\nfile \n", &s, &error), ==, 0);
        g_assert_cmpuint(s.per_node->len, ==, 0);
        np_numa_stat_clear(&s);
}

static void test_huge_numbers(void) {
        g_autoptr(GError) error = NULL;
        NpNumaStat s = { 0 };
        g_assert_cmpint(np_parse_numa_stat("anon N0=18446744073709551615 N1=0\n"
                                           "file N0=18446744073709551615\nshmem N1=18446744073709551614\n",
                                           &s, &error),
                        ==, 0);
        g_assert_no_error(error);
        assert_node(&s, 0, UINT64_MAX, UINT64_MAX, 0);
        assert_node(&s, 1, 0, 0, UINT64_MAX - 1);
        np_numa_stat_clear(&s);
}

static void test_malformed(void) {
        static const struct {
                const char *buf;
                const char *msg; /* part of the error message */
        } bad[] = {
                { "anon N0=1 N1\n", "line 1: 'N1' has no '='" },
                { "file N0=1\nanon N0 =1\n", "line 2: 'N0' has no '='" },
                { "anon N0=x\n", "line 1: 'N0=x' is not a number" },
                { "anon N0=\n", "'N0=' is not a number" },
                { "anon N0=-1\n", "'N0=-1' is not a number" },
                { "anon N0=12kB\n", "'N0=12kB' is not a number" },
                { "anon N0=0x10\n", "'N0=0x10' is not a number" },
                { "anon X0=1\n", "'X0=1' does not name a node" },
                { "anon N=1\n", "'N=1' does not name a node" },
                { "anon N-1=1\n", "'N-1=1' does not name a node" },
                { "anon Nx=1\n", "does not name a node" },
                { "anon N1024=1\n", "node 1024 is above 1023" },
                { "anon N99999999999999999999999=1\n", "does not name a node" },
                { "anon N0=18446744073709551616\n", "'N0=18446744073709551616' does not fit 64 bits" },
                { "shmem N0=99999999999999999999999999\n", "does not fit 64 bits" },
                { "anon N0=1 N1=2 N0=3\n", "line 1: node 0 a second time" },
                /* a duplicate node in a line the parser does not keep is as wrong */
                { "anon N0=1\nslab_reclaimable N2=1 N2=1\n", "line 2: node 2 a second time" },
                { "anon N0=1\nanon N0=1\n", "line 2: item anon a second time" },
                /* cgroup v1's memory.numa_stat is another format */
                { "total=10 N0=5 N1=5\nfile=4 N0=4 N1=0\n", "line 1: 'total=10' is not an item name" },
                { " anon N0=1\n", "line 1: '' is not an item name" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autoptr(GError) error = NULL;
                NpNumaStat s = { .per_node = NULL };
                g_test_message("%s", bad[i].buf);
                g_assert_cmpint(np_parse_numa_stat(bad[i].buf, &s, &error), ==, -EINVAL);
                g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
                g_assert_true(g_str_has_prefix(error->message, "memory.numa_stat line "));
                if (!strstr(error->message, bad[i].msg))
                        g_error("'%s': message '%s' lacks '%s'", bad[i].buf, error->message, bad[i].msg);
                g_assert_null(s.per_node); /* untouched */
        }
}

static void test_read_fixture(void) {
        g_autoptr(GError) error = NULL;
        g_autofree char *root = g_dir_make_tmp("np-numastat-XXXXXX", &error);
        g_assert_no_error(error);
        /* a scope name with a space and parentheses, as systemd escapes nothing of those */
        g_autofree char *cg = g_build_filename(root, "sys/fs/cgroup/machine.slice/libpod-a b (c).scope", NULL);
        g_assert_cmpint(g_mkdir_with_parents(cg, 0755), ==, 0);
        g_autofree char *file = g_build_filename(cg, "memory.numa_stat", NULL);
        g_assert_true(g_file_set_contents(file, four_nodes, -1, NULL));
        g_autofree char *bad_cg = g_build_filename(root, "sys/fs/cgroup/bad.service", NULL);
        g_assert_cmpint(g_mkdir_with_parents(bad_cg, 0755), ==, 0);
        g_autofree char *bad_file = g_build_filename(bad_cg, "memory.numa_stat", NULL);
        g_assert_true(g_file_set_contents(bad_file, "anon N0=1\nfile N0=1 N0=2\n", -1, NULL));
        np_sysroot_set(root);

        NpNumaStat s = { 0 };
        g_assert_cmpint(np_read_numa_stat("/sys/fs/cgroup", "/machine.slice/libpod-a b (c).scope", &s, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(s.per_node->len, ==, 4);
        assert_node(&s, 1, 4096, 268435456, 268435456);
        np_numa_stat_clear(&s);

        /* gone, or no memory controller: ENOENT */
        g_assert_cmpint(np_read_numa_stat("/sys/fs/cgroup", "/gone.service", &s, &error), ==, -ENOENT);
        g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
        g_assert_nonnull(strstr(error->message, "/sys/fs/cgroup/gone.service/memory.numa_stat"));
        g_clear_error(&error);

        /* malformed: the path and the line */
        g_assert_cmpint(np_read_numa_stat("/sys/fs/cgroup", "/bad.service", &s, &error), ==, -EINVAL);
        g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
        g_assert_cmpstr(error->message, ==,
                        "/sys/fs/cgroup/bad.service/memory.numa_stat: memory.numa_stat line 2: node 0 a second time");
        g_clear_error(&error);
        g_assert_null(s.per_node);

        /* paths that are not a cgroup's */
        static const char *bad_paths[] = { "machine.slice", "/..", "/a/../../etc", "/../x", "" };
        for (size_t i = 0; i < G_N_ELEMENTS(bad_paths); i++) {
                g_assert_cmpint(np_read_numa_stat("/sys/fs/cgroup", bad_paths[i], &s, &error), ==, -EINVAL);
                g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
                g_clear_error(&error);
        }
        g_assert_cmpint(np_read_numa_stat("/sys/fs/cgroup", NULL, &s, &error), ==, -EINVAL);
        g_clear_error(&error);
        /* the root cgroup, and a trailing slash */
        g_assert_cmpint(np_read_numa_stat("/sys/fs/cgroup", "/", &s, &error), ==, -ENOENT);
        g_assert_nonnull(strstr(error->message, "read /sys/fs/cgroup/memory.numa_stat:"));
        g_clear_error(&error);
        g_assert_cmpint(np_read_numa_stat("/sys/fs/cgroup", "/bad.service/", &s, &error), ==, -EINVAL);
        g_assert_true(g_str_has_prefix(error->message, "/sys/fs/cgroup/bad.service/memory.numa_stat: "));
        g_clear_error(&error);
        /* ".." inside a name is a name */
        g_assert_cmpint(np_read_numa_stat("/sys/fs/cgroup", "/a..b", &s, &error), ==, -ENOENT);
        g_clear_error(&error);

        np_sysroot_set(NULL);
        np_test_rm_rf(root);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/numastat/four-nodes", test_four_nodes);
        g_test_add_func("/numastat/sparse", test_sparse);
        g_test_add_func("/numastat/empty", test_empty);
        g_test_add_func("/numastat/huge-numbers", test_huge_numbers);
        g_test_add_func("/numastat/malformed", test_malformed);
        g_test_add_func("/numastat/read-fixture", test_read_fixture);
        return g_test_run();
}
