/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The state file (np-state): round trip, and what a damaged file gives:
 * truncated at every byte, garbage lines, a wrong Version, NUL bytes, an
 * unreadable [group] header. Whatever is readable must come back, nothing
 * may be mixed between records, and parsing never fails.
 */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "np-state.h"

static NpMask *mask(const char *s) {
        NpMask *m = NULL;
        g_assert_cmpint(np_mask_parse(s, &m), ==, 0);
        return m;
}

/* A state with three records of every kind, as the daemon writes it. */
static NpState *sample_state(const char *path) {
        NpState *s = np_state_new(path);
        g_autoptr(NpMask) aff = mask("0-3,7");
        NpStateProcess *p;

        np_state_set_hierarchy(s, "/sys/fs/cgroup/cpuset/numaplaced", "v1");
        p = np_state_add(s, 42, 123456789012ULL, NP_BACKEND_CPUSET);
        p->cgroup = g_strdup("/numaplaced/nodes-3-4");
        p->orig_cgroup = g_strdup("/some group/with space");
        p->orig_affinity = np_mask_copy(aff);
        np_mask_set(p->nodes, 3);
        np_mask_set(p->nodes, 4);
        np_mask_set(p->cpus, 100);
        np_state_process_add_thread(p, 42, "/", aff);
        np_state_process_add_thread(p, 43, NULL, NULL);
        g_assert_nonnull(np_state_process_add_thread(p, 42, "/other", NULL));
        p = np_state_add(s, 7, 1, NP_BACKEND_AFFINITY);
        np_mask_set(p->nodes, 0);
        p->orig_affinity = np_mask_copy(aff);
        np_state_process_add_thread(p, 7, NULL, aff);
        /* Every kind a record can have reads back, with a mechanism's own
         * keys; a mechanism's key never shadows a common one. */
        p = np_state_add(s, 9, 2, NP_BACKEND_SYSTEMD);
        g_hash_table_replace(p->extra, g_strdup("Unit"), g_strdup("work load.service"));
        g_hash_table_replace(p->extra, g_strdup("OriginalAllowedCPUs"), g_strdup(""));
        g_hash_table_replace(p->extra, g_strdup("Pid"), g_strdup("666"));
        return s;
}

static void assert_clean(const NpStateReport *r) {
        g_autofree char *why = np_state_report_describe(r);
        g_assert_cmpstr(why, ==, "");
        g_assert_false(np_state_report_damaged(r));
}

static void test_roundtrip(void) {
        g_autofree char *dir = g_dir_make_tmp("np-test-state-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "state", NULL);
        g_autoptr(NpState) s = np_state_new(path);
        g_autoptr(NpState) t = NULL;
        g_autoptr(NpMask) aff = mask("0-3,7");
        g_autoptr(GError) e = NULL;
        g_autoptr(GArray) pids = NULL;
        g_autofree char *str = NULL;
        NpStateReport rep;
        NpStateProcess *p;

        g_assert_cmpint(np_state_load(path, &t, &rep, &e), ==, -ENOENT);
        g_assert_no_error(e);
        /* Saving an empty state removes the file. */
        g_assert_cmpint(np_state_save(s, &e), ==, 0);
        g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));

        g_clear_pointer(&s, np_state_free);
        s = sample_state(path);
        g_assert_cmpint(np_state_save(s, &e), ==, 0);
        g_assert_no_error(e);

        g_assert_cmpint(np_state_load(path, &t, &rep, &e), ==, 0);
        assert_clean(&rep);
        g_assert_cmpint(rep.version, ==, NP_STATE_VERSION);
        g_assert_cmpstr(t->hierarchy, ==, "/sys/fs/cgroup/cpuset/numaplaced");
        g_assert_cmpstr(t->cgroup_mode, ==, "v1");
        pids = np_state_pids(t);
        g_assert_cmpuint(pids->len, ==, 3);
        p = np_state_lookup(t, 9);
        g_assert_cmpint(p->backend, ==, NP_BACKEND_SYSTEMD);
        g_assert_cmpuint(g_hash_table_size(p->extra), ==, 2);
        g_assert_cmpstr(g_hash_table_lookup(p->extra, "Unit"), ==, "work load.service");
        g_assert_cmpstr(g_hash_table_lookup(p->extra, "OriginalAllowedCPUs"), ==, "");
        g_assert_cmpuint(g_hash_table_size(np_state_lookup(t, 7)->extra), ==, 0);
        g_assert_cmpint(g_array_index(pids, pid_t, 0), ==, 7);
        p = np_state_lookup(t, 42);
        g_assert_cmpuint(p->starttime, ==, 123456789012ULL);
        g_assert_cmpint(p->backend, ==, NP_BACKEND_CPUSET);
        g_assert_cmpstr(p->cgroup, ==, "/numaplaced/nodes-3-4");
        g_assert_cmpstr(p->orig_cgroup, ==, "/some group/with space");
        g_assert_true(np_mask_equal(p->orig_affinity, aff));
        str = np_mask_format(p->nodes);
        g_assert_cmpstr(str, ==, "3-4");
        g_assert_true(np_mask_test(p->cpus, 100));
        g_assert_cmpuint(p->threads->len, ==, 2);
        g_assert_cmpstr(np_state_process_thread(p, 42)->cgroup, ==, "/");
        g_assert_true(np_mask_equal(np_state_process_thread(p, 42)->affinity, aff));
        g_assert_null(np_state_process_thread(p, 43)->cgroup);
        g_assert_null(np_state_process_thread(p, 43)->affinity);
        g_assert_cmpint(np_state_lookup(t, 7)->backend, ==, NP_BACKEND_AFFINITY);
        g_assert_null(np_state_lookup(t, 7)->cgroup);

        /* What is read back writes the same text. */
        {
                g_autofree char *a = np_state_to_data(s, NULL);
                g_autofree char *b = np_state_to_data(t, NULL);
                g_assert_cmpstr(a, ==, b);
        }

        g_assert_true(np_state_remove(t, 42));
        g_assert_false(np_state_remove(t, 42));
        g_assert_cmpint(np_state_unlink(t), ==, 0);
        g_assert_cmpint(np_state_unlink(t), ==, 0);
        g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/* The byte offset just past the line "key=value\n" of group `group`. */
static size_t end_of_line(const char *text, const char *group, const char *line) {
        g_autofree char *hdr = g_strdup_printf("[%s]\n", group);
        const char *g = strstr(text, hdr);
        const char *l;

        g_assert_nonnull(g);
        l = strstr(g, line);
        g_assert_nonnull(l);
        return (size_t) (l - text) + strlen(line);
}

/* Truncated at every byte: the records whose identity (Pid, StartTime,
 * Backend: written first) lies before the cut come back with that identity,
 * records after it never appear, and a cut without a final newline is
 * reported. */
static void test_truncated_everywhere(void) {
        g_autoptr(NpState) s = sample_state("/nonexistent/state");
        size_t len = 0;
        g_autofree char *text = np_state_to_data(s, &len);
        const pid_t pids[] = { 7, 9, 42 };
        const char *backends[] = { "affinity", "systemd", "cpuset" };
        size_t ident_end[3], starts[3];

        for (guint i = 0; i < G_N_ELEMENTS(pids); i++) {
                g_autofree char *group = g_strdup_printf("process %d", (int) pids[i]);
                g_autofree char *hdr = g_strdup_printf("[%s]", group);
                g_autofree char *line = g_strdup_printf("Backend=%s\n", backends[i]);

                ident_end[i] = end_of_line(text, group, line);
                starts[i] = (size_t) (strstr(text, hdr) - text);
        }
        for (size_t cut = 0; cut <= len; cut++) {
                NpStateReport rep;
                g_autoptr(NpState) t = np_state_parse("/nonexistent/state", text, cut, &rep);

                g_assert_nonnull(t);
                g_assert_cmpint(rep.truncated, ==, cut > 0 && text[cut - 1] != '\n');
                if (cut < len)
                        g_assert_true(np_state_report_damaged(&rep) || cut == 0 || text[cut - 1] == '\n');
                for (guint i = 0; i < G_N_ELEMENTS(pids); i++) {
                        NpStateProcess *p = np_state_lookup(t, pids[i]);
                        const NpStateProcess *want = np_state_lookup(s, pids[i]);

                        if (cut >= ident_end[i]) {
                                g_assert_nonnull(p);
                                g_assert_cmpuint(p->starttime, ==, want->starttime);
                                g_assert_cmpint(p->backend, ==, want->backend);
                        } else if (cut <= starts[i])
                                g_assert_null(p);
                        else
                                g_assert_null(p); /* identity incomplete: skipped */
                }
        }
}

static void test_garbage(void) {
        NpStateReport rep;
        g_autoptr(NpState) t = NULL;

        /* Nothing readable at all. */
        t = np_state_parse("x", "garbage\n\x01\x02\xff\n", 12, &rep);
        g_assert_cmpuint(np_state_count(t), ==, 0);
        g_assert_cmpuint(rep.dropped_lines, ==, 2);
        g_assert_cmpint(rep.version, ==, -1);
        g_assert_true(np_state_report_damaged(&rep));
        g_clear_pointer(&t, np_state_free);

        /* Empty. */
        t = np_state_parse("x", "", 0, &rep);
        g_assert_cmpuint(np_state_count(t), ==, 0);
        g_assert_true(np_state_report_damaged(&rep));
        g_clear_pointer(&t, np_state_free);

        /* A record without StartTime is skipped, not guessed. */
        {
                const char *text = "[numaplaced]\nVersion=1\n[process 5]\nPid=5\nBackend=cpuset\n";
                t = np_state_parse("x", text, strlen(text), &rep);
                g_assert_cmpuint(np_state_count(t), ==, 0);
                g_assert_cmpuint(rep.skipped_records, ==, 1);
                g_clear_pointer(&t, np_state_free);
        }

        /* Garbage between records, a NUL byte, a broken optional value: the
         * records around them are read, the broken values left out. */
        {
                static const char text[] = "[numaplaced]\nVersion=1\n"
                                           "[process 5]\nPid=5\nStartTime=50\nBackend=cpuset\n"
                                           "this is not a key file line\n"
                                           "OriginalCgroup=/orig\n"
                                           "Nodes=0-\n"
                                           "Threads=5;x;6;\n"
                                           "bin\0ary=1\n"
                                           "[process 6]\nPid=6\nStartTime=60\nBackend=affinity\n"
                                           "OriginalAffinity=0-1\n";
                t = np_state_parse("x", text, sizeof(text) - 1, &rep);
                g_assert_cmpuint(np_state_count(t), ==, 2);
                g_assert_cmpstr(np_state_lookup(t, 5)->orig_cgroup, ==, "/orig");
                g_assert_true(np_mask_empty(np_state_lookup(t, 5)->nodes));
                g_assert_cmpuint(np_state_lookup(t, 5)->threads->len, ==, 0);
                g_assert_cmpuint(np_state_lookup(t, 6)->starttime, ==, 60);
                g_assert_cmpuint(rep.dropped_lines, ==, 2);
                g_assert_cmpuint(rep.damaged_fields, ==, 2);
                g_assert_cmpint(rep.version, ==, 1);
                g_assert_false(rep.truncated);
                g_clear_pointer(&t, np_state_free);
        }

        /* An unreadable [group] header: its keys must not land in the
         * record before it (Pid=8 would replace Pid=5). */
        {
                static const char text[] = "[numaplaced]\nVersion=1\n"
                                           "[process 5]\nPid=5\nStartTime=50\nBackend=cpuset\n"
                                           "[process\x01 8]\nPid=8\nStartTime=80\nBackend=affinity\n";
                t = np_state_parse("x", text, sizeof(text) - 1, &rep);
                g_assert_cmpuint(np_state_count(t), ==, 1);
                g_assert_cmpuint(np_state_lookup(t, 5)->starttime, ==, 50);
                g_assert_cmpint(np_state_lookup(t, 5)->backend, ==, NP_BACKEND_CPUSET);
                g_assert_null(np_state_lookup(t, 8));
                g_assert_cmpuint(rep.dropped_lines, ==, 4);
                g_clear_pointer(&t, np_state_free);
        }
}

static void test_version(void) {
        static const char text[] = "[numaplaced]\nVersion=7\nFutureKey=x\n"
                                   "[process 5]\nPid=5\nStartTime=50\nBackend=cpuset\nOriginalCgroup=/a\n";
        NpStateReport rep;
        g_autoptr(NpState) t = np_state_parse("x", text, sizeof(text) - 1, &rep);
        g_autofree char *why = np_state_report_describe(&rep);

        /* Another version is read as this one: releasing what it names is
         * better than leaving the processes confined. */
        g_assert_cmpint(rep.version, ==, 7);
        g_assert_true(np_state_report_damaged(&rep));
        g_assert_nonnull(strstr(why, "Version=7"));
        g_assert_cmpuint(np_state_count(t), ==, 1);
        g_assert_cmpstr(np_state_lookup(t, 5)->orig_cgroup, ==, "/a");
        g_clear_pointer(&t, np_state_free);

        t = np_state_parse("x", "[numaplaced]\nVersion=one\n", 25, &rep);
        g_assert_cmpint(rep.version, ==, -1);
}

static void test_stale_temporaries(void) {
        g_autofree char *dir = g_dir_make_tmp("np-test-state-XXXXXX", NULL);
        g_autofree char *path = g_build_filename(dir, "state", NULL);
        const char *keep[] = { "state", "state.toolong1", "other.abcdef", "state.abc" };
        const char *stale[] = { "state.abcdef", "state.X1y2Z3" };

        for (guint i = 0; i < G_N_ELEMENTS(keep); i++) {
                g_autofree char *f = g_build_filename(dir, keep[i], NULL);
                g_assert_true(g_file_set_contents(f, "x", -1, NULL));
        }
        for (guint i = 0; i < G_N_ELEMENTS(stale); i++) {
                g_autofree char *f = g_build_filename(dir, stale[i], NULL);
                g_assert_true(g_file_set_contents(f, "[numaplaced]\nVer", -1, NULL));
        }
        g_assert_cmpint(np_state_remove_stale_temporaries(path), ==, 2);
        for (guint i = 0; i < G_N_ELEMENTS(keep); i++) {
                g_autofree char *f = g_build_filename(dir, keep[i], NULL);
                g_assert_true(g_file_test(f, G_FILE_TEST_EXISTS));
                g_assert_cmpint(g_unlink(f), ==, 0);
        }
        g_assert_cmpint(np_state_remove_stale_temporaries(path), ==, 0);
        g_assert_cmpint(g_rmdir(dir), ==, 0);
        g_assert_cmpint(np_state_remove_stale_temporaries(path), ==, 0); /* no directory */
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/state/roundtrip", test_roundtrip);
        g_test_add_func("/state/truncated-everywhere", test_truncated_everywhere);
        g_test_add_func("/state/garbage", test_garbage);
        g_test_add_func("/state/version", test_version);
        g_test_add_func("/state/stale-temporaries", test_stale_temporaries);
        return g_test_run();
}
