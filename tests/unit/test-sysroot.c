/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-sysroot: root prefix handling and the file readers. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "np-sysroot.h"
#include "np-test-api.h"

static const char *fixtures(void) {
        const char *f = g_getenv("NP_FIXTURES");
        g_assert_nonnull(f);
        return f;
}

static void test_prefix(void) {
        np_sysroot_set(NULL);
        g_assert_cmpstr(np_sysroot_get(), ==, "");
        g_autofree char *p0 = np_path("/proc/%d/stat", 42);
        g_assert_cmpstr(p0, ==, "/proc/42/stat");

        np_sysroot_set("/");
        g_assert_cmpstr(np_sysroot_get(), ==, "");
        np_sysroot_set("");
        g_assert_cmpstr(np_sysroot_get(), ==, "");
        np_sysroot_set("//");
        g_assert_cmpstr(np_sysroot_get(), ==, "");

        np_sysroot_set("/tmp/root/");
        g_assert_cmpstr(np_sysroot_get(), ==, "/tmp/root");
        g_autofree char *p1 = np_path("/sys/devices/system/node/node%u/meminfo", 70u);
        g_assert_cmpstr(p1, ==, "/tmp/root/sys/devices/system/node/node70/meminfo");

        np_sysroot_set("rel//");
        g_assert_cmpstr(np_sysroot_get(), ==, "rel");
        np_sysroot_set(NULL);
        g_assert_cmpstr(np_sysroot_get(), ==, "");
}

static void test_read(void) {
        g_autofree char *root = g_build_filename(fixtures(), "4node", NULL);
        np_sysroot_set(root);

        g_autofree char *buf = NULL;
        size_t len = 0;
        g_assert_cmpint(np_read_file("/sys/devices/system/node/online", &buf, &len), ==, 0);
        g_assert_cmpstr(buf, ==, "0-3\n");
        g_assert_cmpuint(len, ==, 4);

        g_autofree char *buf2 = NULL;
        g_assert_cmpint(np_read_filef(&buf2, NULL, "/sys/devices/system/node/node%d/distance", 2), ==, 0);
        g_assert_cmpstr(buf2, ==, "30 30 10 20\n");

        /* a file larger than the initial 4 KiB buffer is read whole */
        g_autofree char *big = NULL;
        size_t biglen = 0;
        g_assert_cmpint(np_read_file("/proc/4242/status", &big, &biglen), ==, 0);
        g_assert_cmpuint(strlen(big), ==, biglen);
        g_assert_true(g_str_has_suffix(big, "nonvoluntary_ctxt_switches:\t42\n"));

        char *none = NULL;
        g_assert_cmpint(np_read_file("/proc/99999/stat", &none, NULL), ==, -ENOENT);
        g_assert_null(none);

        guint64 v = 0;
        g_assert_cmpint(np_read_u64("/proc/sys/kernel/numa_balancing", &v), ==, 0);
        g_assert_cmpuint(v, ==, 1);
        g_assert_cmpint(np_read_u64("/sys/devices/system/node/online", &v), ==, -EINVAL);
        g_assert_cmpint(np_read_u64("/nonexistent", &v), ==, -ENOENT);

        np_sysroot_set(NULL);
}

static void test_read_large_and_empty(void) {
        g_autofree char *dir = g_dir_make_tmp("np-sysroot-XXXXXX", NULL);
        g_assert_nonnull(dir);
        g_autofree char *procdir = g_build_filename(dir, "proc", NULL);
        g_assert_cmpint(g_mkdir(procdir, 0755), ==, 0);

        GString *s = g_string_new(NULL);
        for (int i = 0; i < 5000; i++)
                g_string_append_printf(s, "line %d\n", i);
        g_autofree char *f = g_build_filename(procdir, "big", NULL);
        g_assert_true(g_file_set_contents(f, s->str, (gssize) s->len, NULL));
        g_autofree char *e = g_build_filename(procdir, "empty", NULL);
        g_assert_true(g_file_set_contents(e, "", 0, NULL));
        g_autofree char *n = g_build_filename(procdir, "num", NULL);
        g_assert_true(g_file_set_contents(n, "  18446744073709551615 \n", -1, NULL));
        g_autofree char *neg = g_build_filename(procdir, "neg", NULL);
        g_assert_true(g_file_set_contents(neg, "-1\n", -1, NULL));

        np_sysroot_set(dir);
        g_autofree char *buf = NULL;
        size_t len = 0;
        g_assert_cmpint(np_read_file("/proc/big", &buf, &len), ==, 0);
        g_assert_cmpuint(len, ==, s->len);
        g_assert_cmpstr(buf, ==, s->str);

        g_autofree char *ebuf = NULL;
        g_assert_cmpint(np_read_file("/proc/empty", &ebuf, &len), ==, 0);
        g_assert_cmpuint(len, ==, 0);
        g_assert_cmpstr(ebuf, ==, "");

        guint64 v = 0;
        g_assert_cmpint(np_read_u64("/proc/num", &v), ==, 0);
        g_assert_cmpuint(v, ==, G_MAXUINT64);
        g_assert_cmpint(np_read_u64("/proc/empty", &v), ==, -EINVAL);
        g_assert_cmpint(np_read_u64("/proc/neg", &v), ==, -EINVAL);
        np_sysroot_set(NULL);

        g_unlink(f);
        g_unlink(e);
        g_unlink(n);
        g_unlink(neg);
        g_rmdir(procdir);
        g_rmdir(dir);
        g_string_free(s, TRUE);
}

/* Kept files: the real root keeps /proc/uptime open and reads it afresh each
 * time (no new descriptor); a kept file that can no longer be read is opened
 * again; a fixture root's regular files are not kept, and each read sees
 * a replaced file; below a root whose proc is the real one, files are kept. */
static unsigned open_fds(void) {
        g_autoptr(GDir) d = g_dir_open("/proc/self/fd", 0, NULL);
        g_assert_nonnull(d);
        unsigned n = 0;
        while (g_dir_read_name(d))
                n++;
        return n;
}

static void test_kept(void) {
        np_sysroot_set(NULL);
        g_assert_cmpuint(np_kept_files_count(), ==, 0);
        g_autofree char *a = NULL, *b = NULL;
        g_assert_cmpint(np_read_file_kept("/proc/uptime", &a, NULL), ==, 0);
        g_assert_cmpuint(np_kept_files_count(), ==, 1);
        unsigned fds = open_fds();
        g_usleep(20000);
        g_assert_cmpint(np_read_file_kept("/proc/uptime", &b, NULL), ==, 0);
        g_assert_cmpuint(open_fds(), ==, fds);
        g_assert_cmpfloat(g_ascii_strtod(b, NULL), >, g_ascii_strtod(a, NULL)); /* generated again */
        guint64 v;
        g_assert_cmpint(np_read_u64_kept("/proc/sys/kernel/pid_max", &v), ==, 0);
        g_assert_cmpuint(v, >, 0);
        g_assert_cmpuint(np_kept_files_count(), ==, 2);
        g_assert_cmpint(np_read_file_kept("/nonexistent", &a, NULL), ==, -ENOENT);
        g_assert_cmpuint(np_kept_files_count(), ==, 2);

        /* a fixture root: nothing kept, np_sysroot_set() closed the others */
        g_autofree char *dir = g_dir_make_tmp("np-kept-XXXXXX", NULL);
        g_autofree char *procdir = g_build_filename(dir, "proc", NULL);
        g_assert_cmpint(g_mkdir(procdir, 0755), ==, 0);
        g_autofree char *f = g_build_filename(procdir, "uptime", NULL);
        g_assert_true(g_file_set_contents(f, "1.00 1.00\n", -1, NULL));
        np_sysroot_set(dir);
        g_assert_cmpuint(np_kept_files_count(), ==, 0);
        g_autofree char *c = NULL, *d = NULL;
        g_assert_cmpint(np_read_file_kept("/proc/uptime", &c, NULL), ==, 0);
        g_assert_cmpstr(c, ==, "1.00 1.00\n");
        g_assert_true(g_file_set_contents(f, "2.00 2.00\n", -1, NULL)); /* a new file (rename) */
        g_assert_cmpint(np_read_file_kept("/proc/uptime", &d, NULL), ==, 0);
        g_assert_cmpstr(d, ==, "2.00 2.00\n");
        g_assert_cmpuint(np_kept_files_count(), ==, 0);

        /* a root whose proc leads to the real procfs (the benchmark's view
         * of a PID namespace): kept, as on the real root */
        g_autofree char *view = g_dir_make_tmp("np-view-XXXXXX", NULL);
        g_autofree char *link = g_build_filename(view, "proc", NULL);
        g_assert_cmpint(symlink("/proc", link), ==, 0);
        np_sysroot_set(view);
        g_autofree char *e = NULL, *g = NULL;
        g_assert_cmpint(np_read_file_kept("/proc/uptime", &e, NULL), ==, 0);
        g_assert_cmpuint(np_kept_files_count(), ==, 1);
        fds = open_fds();
        g_usleep(20000);
        g_assert_cmpint(np_read_file_kept("/proc/uptime", &g, NULL), ==, 0);
        g_assert_cmpuint(open_fds(), ==, fds);
        g_assert_cmpfloat(g_ascii_strtod(g, NULL), >, g_ascii_strtod(e, NULL));

        np_sysroot_set(NULL);
        g_assert_cmpuint(np_kept_files_count(), ==, 0);
        g_unlink(link);
        g_rmdir(view);
        g_unlink(f);
        g_rmdir(procdir);
        g_rmdir(dir);
        np_kept_files_close();
        g_assert_cmpuint(np_kept_files_count(), ==, 0);
}

/* A kept file larger than the first buffer is read whole (a short read ends
 * it, a full one reads on), and again whole once the buffer has its size:
 * a /proc/<pid>/cmdline of 20000 bytes stands for a big /proc/stat. */
static void test_kept_large(void) {
        np_sysroot_set(NULL);
        GString *arg = g_string_new(NULL);
        for (unsigned i = 0; i < 20000; i++)
                g_string_append_c(arg, (char) ('a' + i % 26));
        const char *argv[] = { "/bin/sh", "-c", "read x; :", arg->str, NULL };
        GPid pid;
        int in;
        g_assert_true(g_spawn_async_with_pipes(NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid,
                                               &in, NULL, NULL, NULL));
        g_autofree char *path = g_strdup_printf("/proc/%d/cmdline", pid);
        size_t want = strlen("/bin/sh") + 1 + strlen("-c") + 1 + strlen("read x; :") + 1 + arg->len + 1;
        for (int round = 0; round < 3; round++) {
                g_autofree char *c = NULL;
                size_t len = 0;
                g_assert_cmpint(np_read_file_kept(path, &c, &len), ==, 0);
                g_assert_cmpuint(len, ==, want);
                g_assert_cmpstr(c + len - arg->len - 1, ==, arg->str);
        }
        g_assert_cmpuint(np_kept_files_count(), ==, 1);
        close(in); /* sh reads end of file and exits */
        waitpid(pid, NULL, 0);
        g_spawn_close_pid(pid);
        np_kept_files_close();
        g_string_free(arg, TRUE);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/sysroot/prefix", test_prefix);
        g_test_add_func("/sysroot/read", test_read);
        g_test_add_func("/sysroot/kept-large", test_kept_large);
        g_test_add_func("/sysroot/read-large-and-empty", test_read_large_and_empty);
        g_test_add_func("/sysroot/kept", test_kept);
        return g_test_run();
}
