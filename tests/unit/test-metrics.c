/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The metrics file: the text exposition format (families, escaping, the
 * per-process cap) and the atomic writer. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "np-metrics.h"

static NpMetrics *sample_metrics(void) {
        NpMetrics *s = np_metrics_new();
        s->backend = "cpuset";
        s->scans = 42;
        s->last_scan_duration_seconds = 0.0125;
        s->last_scan_timestamp_seconds = 1700000000.5;
        s->cpu_seconds = 1.5;
        NpMetricsNode n0 = { 0, 1.25, 4, 8ull << 30, 3ull << 30 }, n3 = { 3, 0, 2, 4ull << 30, 1ull << 30 };
        g_array_append_val(s->nodes, n0);
        g_array_append_val(s->nodes, n3);
        np_metrics_add_process(s, 4242, "a) (b \"c\\", "0-1", "/machine.slice/libpod-1.scope", 320ull << 20, 0.5);
        np_metrics_add_process(s, 7, "new\nline", "", NULL, 1000, 1);
        np_metrics_add_group(s, "/machine.slice/libpod-1.scope", "cgroup", "0-1", 2, 352ull << 20, 0.75);
        s->processes_by_state[NP_PROC_PLACED] = 1;
        s->processes_by_state[NP_PROC_OBSERVED] = 1;
        s->migrated_bytes = 123456789;
        s->migration_calls = 3;
        s->migration_failed_pages = 2;
        s->numa_stat_reads = 17;
        s->placements[NP_PLACE_POLICY] = 5;
        s->placements[NP_PLACE_MANUAL] = 1;
        s->config_reload_errors = 1;
        s->reservations = 2;
        s->reserved_bytes = 629145600;
        return s;
}

/* Every sample's family has "# HELP" and "# TYPE" before it, once; names
 * use base units; the file ends with a newline. */
static void test_families(void) {
        g_autoptr(NpMetrics) s = sample_metrics();
        g_autofree char *text = np_metrics_format(s);
        g_assert_true(g_str_has_suffix(text, "\n"));
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        g_autoptr(GHashTable) help = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) type = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        unsigned samples = 0;
        for (char **l = lines; *l; l++) {
                if (!**l)
                        continue;
                if (g_str_has_prefix(*l, "# HELP ")) {
                        g_auto(GStrv) w = g_strsplit(*l + 7, " ", 2);
                        g_assert_false(g_hash_table_contains(help, w[0]));
                        g_hash_table_add(help, g_strdup(w[0]));
                        continue;
                }
                if (g_str_has_prefix(*l, "# TYPE ")) {
                        g_auto(GStrv) w = g_strsplit(*l + 7, " ", 2);
                        g_assert_true(g_hash_table_contains(help, w[0]));
                        g_assert_true(g_str_equal(w[1], "gauge") || g_str_equal(w[1], "counter"));
                        if (g_str_equal(w[1], "counter"))
                                g_assert_true(g_str_has_suffix(w[0], "_total"));
                        g_hash_table_insert(type, g_strdup(w[0]), g_strdup(w[1]));
                        continue;
                }
                g_assert_false(g_str_has_prefix(*l, "#"));
                size_t n = strcspn(*l, "{ ");
                g_autofree char *name = g_strndup(*l, n);
                g_assert_true(g_hash_table_contains(type, name));
                samples++;
        }
        static const char *const expected[] = {
                "numaplaced_info",
                "numaplaced_scans_total",
                "numaplaced_last_scan_duration_seconds",
                "numaplaced_cpu_seconds_total",
                "numaplaced_node_cpus_busy",
                "numaplaced_node_cpus",
                "numaplaced_node_memory_total_bytes",
                "numaplaced_node_memory_free_bytes",
                "numaplaced_migrated_bytes_total",
                "numaplaced_migration_calls_total",
                "numaplaced_migration_failed_pages_total",
                "numaplaced_numa_stat_reads_total",
                "numaplaced_processes",
                "numaplaced_process_memory_bytes",
                "numaplaced_process_locality_ratio",
                "numaplaced_group_members",
                "numaplaced_group_memory_bytes",
                "numaplaced_group_locality_ratio",
                "numaplaced_placements_total",
                "numaplaced_config_reload_errors_total",
                "numaplaced_reservations",
                "numaplaced_reserved_bytes",
        };
        for (unsigned i = 0; i < G_N_ELEMENTS(expected); i++)
                g_assert_true(g_hash_table_contains(type, expected[i]));
        g_assert_cmpuint(samples, >, 20);

        g_assert_nonnull(strstr(text, "\nnumaplaced_scans_total 42\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_node_memory_total_bytes{node=\"3\"} 4294967296\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_node_cpus_busy{node=\"0\"} 1.25\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_migrated_bytes_total 123456789\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_numa_stat_reads_total 17\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_placements_total{reason=\"policy\"} 5\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_placements_total{reason=\"rebalance\"} 0\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_processes{state=\"placed\"} 1\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_processes{state=\"nofit\"} 0\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_last_scan_duration_seconds 0.0125\n"));
        g_assert_nonnull(strstr(text, "backend=\"cpuset\""));
        g_assert_nonnull(strstr(text, "\nnumaplaced_reservations 2\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_reserved_bytes 629145600\n"));
        g_assert_nonnull(strstr(text,
                                "\nnumaplaced_group_members{group=\"/machine.slice/libpod-1.scope\",kind=\"cgroup\","
                                "nodes=\"0-1\"} 2\n"));
        g_assert_nonnull(strstr(text,
                                "\nnumaplaced_group_memory_bytes{group=\"/machine.slice/libpod-1.scope\","
                                "kind=\"cgroup\",nodes=\"0-1\"} 369098752\n"));
        g_assert_nonnull(strstr(text,
                                "\nnumaplaced_group_locality_ratio{group=\"/machine.slice/libpod-1.scope\","
                                "kind=\"cgroup\",nodes=\"0-1\"} 0.75\n"));
        g_assert_nonnull(strstr(text, "\nnumaplaced_last_scan_timestamp_seconds 1700000000.500\n"));
}

/* A hostile comm cannot break the file: backslash, double quote and
 * newline are escaped, bytes that are not UTF-8 replaced. */
static void test_escaping(void) {
        g_autoptr(NpMetrics) s = sample_metrics();
        g_autofree char *text = np_metrics_format(s);
        g_assert_nonnull(strstr(text,
                                "\nnumaplaced_process_memory_bytes{pid=\"4242\",comm=\"a) (b "
                                "\\\"c\\\\\",nodes=\"0-1\",group=\"/machine.slice/libpod-1.scope\"} 335544320\n"));
        g_assert_nonnull(strstr(
                text, "\nnumaplaced_process_locality_ratio{pid=\"7\",comm=\"new\\nline\",nodes=\"\",group=\"\"} 1\n"));

        g_autofree char *e = np_metrics_escape_label("x\xff\xfey");
        g_assert_true(g_utf8_validate(e, -1, NULL));
        g_assert_true(g_str_has_prefix(e, "x"));
        g_assert_true(g_str_has_suffix(e, "y"));
        g_autofree char *plain = np_metrics_escape_label("postgres: writer");
        g_assert_cmpstr(plain, ==, "postgres: writer");
}

/* The file is replaced whole, mode 0644, and no temporary file stays;
 * a directory that does not exist is an error naming the file. */
static void test_write(void) {
        g_autofree char *dir = g_dir_make_tmp("np-metrics-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "numaplaced.prom", NULL);
        g_autoptr(GError) e = NULL;

        g_assert_cmpint(np_metrics_write(path, "a 1\n", &e), ==, 0);
        g_assert_no_error(e);
        g_assert_cmpint(np_metrics_write(path, "b 2\n", &e), ==, 0);
        g_autofree char *got = NULL;
        g_assert_true(g_file_get_contents(path, &got, NULL, NULL));
        g_assert_cmpstr(got, ==, "b 2\n");
        struct stat st;
        g_assert_cmpint(stat(path, &st), ==, 0);
        g_assert_cmpint(st.st_mode & 07777, ==, 0644);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        unsigned n = 0;
        while (g_dir_read_name(d))
                n++;
        g_assert_cmpuint(n, ==, 1);
        g_assert_cmpint(g_unlink(path), ==, 0);
        g_assert_cmpint(g_rmdir(dir), ==, 0);

        g_autofree char *missing = g_build_filename(dir, "numaplaced.prom", NULL);
        g_assert_cmpint(np_metrics_write(missing, "a 1\n", &e), ==, -ENOENT);
        g_assert_error(e, G_FILE_ERROR, G_FILE_ERROR_NOENT);
        g_assert_nonnull(strstr(e->message, dir));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/metrics/families", test_families);
        g_test_add_func("/metrics/escaping", test_escaping);
        g_test_add_func("/metrics/write", test_write);
        return g_test_run();
}
