/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The manager on fixture roots (copies in a temporary directory, so a test
 * can break them): scans and their errors, what makes a process vanish and
 * what does not, actions that read one process and never scan, and the
 * change records the bus layer publishes.
 */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "np-advice.h"
#include "np-classify.h"
#include "np-manager-actions.h"
#include "np-manager.h"
#include "np-decide.h"
#include "np-scan.h"
#include "np-sysroot.h"
#include "np-test-api.h"
#include "np-thread-homes.h"

typedef struct {
        char *root;
        NpManager *m;
} Fixture;

static void copy_tree(const char *from, const char *to) {
        g_autofree char *cmd = g_strdup_printf("cp -a '%s/.' '%s/'", from, to);
        g_assert_cmpint(system(cmd), ==, 0);
}

static void remove_tree(const char *dir) {
        g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", dir);
        g_assert_cmpint(system(cmd), ==, 0);
}

static char *fixture_path(Fixture *f, const char *rel) {
        return g_build_filename(f->root, rel, NULL);
}

/* A copy of the tree named by data, and a manager on it with every process
 * above 100 MB significant (the fixtures' CPU use is always 0). */
static void setup(Fixture *f, gconstpointer data) {
        const char *fixtures = g_getenv("NP_FIXTURES");
        g_autofree char *src = NULL;
        g_autoptr(GError) e = NULL;
        NpConfig *c = NULL;

        g_assert_nonnull(fixtures);
        src = g_build_filename(fixtures, (const char *) data, NULL);
        f->root = g_dir_make_tmp("np-test-manager-XXXXXX", NULL);
        g_assert_nonnull(f->root);
        copy_tree(src, f->root);
        np_sysroot_set(f->root);
        g_assert_cmpint(
                np_config_load_data("test.conf", "[Placement]\nMinProcessMemory=100M\nMinProcessCPU=0\n", &c, &e), ==,
                0);
        g_assert_no_error(e);
        f->m = np_manager_new("/nonexistent/numaplaced.conf", c, &e);
        g_assert_no_error(e);
        g_assert_nonnull(f->m);
}

static void teardown(Fixture *f, gconstpointer data) {
        np_manager_free(f->m);
        np_sysroot_set(NULL);
        remove_tree(f->root);
        g_free(f->root);
}

/* np_scan_run() says when the nodes cannot be sampled (it used to
 * return 0 whatever happened, leaving main's error path dead). */
static void test_scan_topology_gone(Fixture *f, gconstpointer data) {
        g_autofree char *meminfo = fixture_path(f, "sys/devices/system/node/node1/meminfo");

        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(f->m->scans, ==, 1);
        g_assert_cmpint(g_unlink(meminfo), ==, 0);
        int r = np_scan_run(f->m);
        g_assert_cmpint(r, <, 0);
        g_assert_cmpint(r, ==, -ENOENT);
        /* the processes are still sampled, and the scan is counted */
        g_assert_cmpuint(f->m->scans, ==, 2);
        g_assert_nonnull(np_manager_process(f->m, 4242));
}

/* Only a vanished process is dropped: an unreadable numa_maps (here a
 * directory: EISDIR) keeps it, with MemoryPerNode empty. It used to be
 * dropped as "vanished" on any error. */
static void test_unreadable_numa_maps_keeps_process(Fixture *f, gconstpointer data) {
        g_autofree char *maps = fixture_path(f, "proc/4242/numa_maps");

        g_assert_cmpint(g_unlink(maps), ==, 0);
        g_assert_cmpint(g_mkdir(maps, 0755), ==, 0);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_true(p->significant);
        g_assert_cmpint(p->maps_error, ==, -EISDIR);
        g_assert_cmpuint(p->maps.total_bytes, ==, 0);
        g_assert_cmpuint(np_process_memory_bytes(p), ==, 1ull << 30); /* RSS */
}

/* A kernel without NUMA has no numa_maps at all (ENOENT, which the reader
 * reports like a vanished process): the process stays. */
static void test_missing_numa_maps_keeps_process(Fixture *f, gconstpointer data) {
        g_autofree char *maps = fixture_path(f, "proc/4242/numa_maps");

        g_assert_cmpint(g_unlink(maps), ==, 0);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_true(p->significant);
        g_assert_cmpint(p->maps_error, ==, -ESRCH);
        /* ...until the process really goes */
        g_autofree char *dir = fixture_path(f, "proc/4242");
        remove_tree(dir);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_null(np_manager_process(f->m, 4242));
}

/* Reading a process's details again replaces them (no leak of the previous
 * per-node array: the sanitizer run of this suite checks). */
static void test_refresh_replaces_details(Fixture *f, gconstpointer data) {
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        guint n = p->maps.per_node->len;
        g_assert_cmpuint(n, >, 0);
        for (int i = 0; i < 3; i++)
                g_assert_cmpint(np_process_refresh(p, f->m->topology, f->m->proc_table, NP_MAPS_NOW), ==, 0);
        g_assert_cmpuint(p->maps.per_node->len, ==, n);
        /* read again, nothing changed: nothing to publish (LocalityTimestamp is not signalled) */
        p->changed = 0;
        uint64_t before = p->maps_age.read_usec;
        g_usleep(2);
        g_assert_cmpint(np_process_refresh(p, f->m->topology, f->m->proc_table, NP_MAPS_NOW), ==, 0);
        g_assert_cmpuint(p->changed, ==, 0);
        g_assert_cmpuint(p->maps_age.read_usec, >, before);
        /* not due by the refresh rule (same RSS, 1 of 12 scans): not read, nothing to publish */
        p->changed = 0;
        uint64_t read_at = p->maps_age.read_usec;
        g_assert_cmpint(np_process_refresh(p, f->m->topology, f->m->proc_table, 12), ==, 0);
        g_assert_cmpuint(p->changed, ==, 0);
        g_assert_cmpuint(p->maps_age.read_usec, ==, read_at);
        g_assert_cmpuint(p->maps_age.scans, ==, 1);
}

/* A significant process that did not run (the fixture's stat never
 * changes) keeps its status, threads and cgroup between reads: a narrowed
 * affinity is seen when it runs again, or LocalityRefreshScans scans after
 * the last read, and always before a move (NP_MAPS_NOW). */
static void test_idle_details(Fixture *f, gconstpointer data) {
        g_autofree char *status = fixture_path(f, "proc/4242/status");
        g_autofree char *stat = fixture_path(f, "proc/4242/stat");
        g_autofree char *orig = NULL, *narrowed = NULL, *st = NULL;

        g_assert_true(g_file_get_contents(status, &orig, NULL, NULL));
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_true(p->significant);
        g_autofree char *cpus = np_mask_format(p->cpus_allowed);
        g_assert_cmpstr(cpus, ==, "0-15");

        /* someone narrows it while it sleeps: not seen at the next scans */
        GString *n = g_string_new(orig);
        g_string_replace(n, "Cpus_allowed:\t0000ffff", "Cpus_allowed:\t00000003", 1);
        g_string_replace(n, "Cpus_allowed_list:\t0-15", "Cpus_allowed_list:\t0-1", 1);
        narrowed = g_string_free(n, FALSE);
        g_assert_true(g_file_set_contents(status, narrowed, -1, NULL));
        unsigned max = f->m->config->locality_refresh_scans;
        g_assert_cmpuint(max, >, 2);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_free(cpus);
        cpus = np_mask_format(p->cpus_allowed);
        g_assert_cmpstr(cpus, ==, "0-15");
        g_assert_cmpuint(p->details_age.scans, ==, 1);

        /* before a move it is read whatever the rule says */
        g_assert_cmpint(np_process_refresh(p, f->m->topology, f->m->proc_table, NP_MAPS_NOW), ==, 0);
        g_free(cpus);
        cpus = np_mask_format(p->cpus_allowed);
        g_assert_cmpstr(cpus, ==, "0-1");

        /* it runs (utime 184467 -> 184567): read at the next scan */
        g_assert_true(g_file_set_contents(status, orig, -1, NULL));
        g_assert_true(g_file_get_contents(stat, &st, NULL, NULL));
        GString *s2 = g_string_new(st);
        g_assert_cmpuint(g_string_replace(s2, " 184467 9230 ", " 184567 9230 ", 1), ==, 1);
        g_assert_true(g_file_set_contents(stat, s2->str, -1, NULL));
        g_string_free(s2, TRUE);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_free(cpus);
        cpus = np_mask_format(p->cpus_allowed);
        g_assert_cmpstr(cpus, ==, "0-15");
        g_assert_cmpuint(p->details_age.scans, ==, 0);

        /* idle again and narrowed again: read LocalityRefreshScans scans after the last read */
        g_assert_true(g_file_set_contents(status, narrowed, -1, NULL));
        for (unsigned i = 1; i < max; i++) {
                g_assert_cmpint(np_scan_run(f->m), ==, 0);
                g_free(cpus);
                cpus = np_mask_format(p->cpus_allowed);
                g_assert_cmpstr(cpus, ==, "0-15");
        }
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_free(cpus);
        cpus = np_mask_format(p->cpus_allowed);
        g_assert_cmpstr(cpus, ==, "0-1");
        g_assert_true(np_classify_foreign(f->m, p));
        g_assert_true(g_file_set_contents(status, orig, -1, NULL));
}

/* Write field `field` (1-based, as in proc(5)) of the fixture's stat of
 * 4242 (bigdb, state R). */
static void set_stat_field_of(Fixture *f, int pid, unsigned field, unsigned value) {
        g_autofree char *rel = g_strdup_printf("proc/%d/stat", pid);
        g_autofree char *stat = fixture_path(f, rel);
        g_autofree char *st = NULL;
        g_assert_true(g_file_get_contents(stat, &st, NULL, NULL));
        g_autofree char *pattern = g_strdup_printf("^(%d \\(bigdb\\) R( [^ ]+){%u}) [0-9]+ ", pid, field - 4);
        g_autoptr(GRegex) re = g_regex_new(pattern, 0, 0, NULL);
        g_assert_true(g_regex_match(re, st, 0, NULL));
        g_autofree char *with = g_strdup_printf("\\1 %u ", value);
        g_autofree char *out = g_regex_replace(re, st, -1, 0, with, 0, NULL);
        /* in place: the table may hold the file open (a process with a statm) */
        FILE *w = fopen(stat, "w");
        g_assert_nonnull(w);
        g_assert_cmpint(fputs(out, w), >=, 0);
        g_assert_cmpint(fclose(w), ==, 0);
}

static void set_stat_field(Fixture *f, unsigned field, unsigned value) {
        set_stat_field_of(f, 4242, field, value);
}

/* Its utime: it ran. */
static void set_utime(Fixture *f, unsigned utime) {
        set_stat_field(f, 14, utime);
}

/* Its utime and its resident pages. */
static void set_stat(Fixture *f, unsigned utime, unsigned rss_pages) {
        set_stat_field(f, 14, utime);
        set_stat_field(f, 24, rss_pages);
}

/* One scan and the policy after it (Mode=advise: decisions published,
 * nothing moved). */
static gint64 last_scan;
static void scan_and_decide(Fixture *f) {
        g_usleep(100 * 1000);
        last_scan = g_get_monotonic_time();
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        np_decide_run(f->m);
}

/* The ticks of one CPU since the last scan began, plus the 100 ms before
 * the next (a scan under valgrind takes longer than that). */
static unsigned one_cpu_ticks(void) {
        double secs = (double) (g_get_monotonic_time() - last_scan) / 1e6 + 0.1;
        return (unsigned) (secs * (double) sysconf(_SC_CLK_TCK) + 0.5);
}

/* On one node of memory nothing is decided, but a process narrowed by
 * someone else is shown foreign, its Decision naming its cgroup (a guest
 * libvirt pinned); no longer narrowed, it is observed again. */
static void test_one_node_foreign(Fixture *f, gconstpointer data) {
        g_autofree char *status = fixture_path(f, "proc/4242/status");
        g_autofree char *cgroup = fixture_path(f, "proc/4242/cgroup");
        g_autofree char *orig = NULL;

        g_assert_cmpuint(np_mask_weight(f->m->topology->with_memory), ==, 1);
        g_assert_true(g_file_get_contents(status, &orig, NULL, NULL));
        scan_and_decide(f);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_true(p->significant);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);

        GString *s = g_string_new(orig);
        g_assert_cmpuint(g_string_replace(s, "Cpus_allowed_list:\t0-3", "Cpus_allowed_list:\t0", 1), ==, 1);
        g_assert_true(g_file_set_contents(status, s->str, -1, NULL));
        g_string_free(s, TRUE);
        g_assert_true(
                g_file_set_contents(cgroup, "3:cpuset:/machine/qemu-1-guest.libvirt-qemu/emulator\n0::/\n", -1, NULL));
        set_utime(f, 184567); /* it ran: its details are read again */
        scan_and_decide(f);
        g_assert_cmpint(p->state, ==, NP_PROC_FOREIGN);
        g_assert_cmpstr(p->decision, ==,
                        "its CPUs or memory nodes were narrowed by someone else (cgroup "
                        "/machine/qemu-1-guest.libvirt-qemu/emulator): left alone");

        g_assert_true(g_file_set_contents(status, orig, -1, NULL));
        set_utime(f, 184667);
        scan_and_decide(f);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_cmpstr(p->decision, ==, "");
}

/* The follow-up scan (NP_FOLLOWUP_USEC) on a sequence of snapshots: a
 * process that crossed MinProcessMemory is measured again at a follow-up
 * instead of the next regular scan; one still touching its memory (a
 * start-up burst) is not decided while its memory grows and not at all
 * once it idles; a steady one is decided at the follow-up. */
static void test_followup(Fixture *f, gconstpointer data) {
        NpConfig *c = f->m->config;
        c->mode = NP_MODE_ADVISE;
        c->min_process_cpu = 0.3;
        c->scan_interval_usec = 5 * G_USEC_PER_SEC;
        unsigned utime = 1000;

        /* a start-up burst: seen at 128 MB, its CPU unknown */
        set_stat(f, utime, 32768);
        scan_and_decide(f);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_false(p->significant);
        g_assert_cmpuint(f->m->scan_interval_usec, ==, NP_FOLLOWUP_USEC);
        /* busy and growing to 1 GB: significant, not decided */
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_true(p->significant);
        g_assert_true(p->grew);
        g_assert_nonnull(strstr(p->decision, "its memory is still growing"));
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_cmpuint(f->m->scan_interval_usec, ==, NP_FOLLOWUP_USEC);
        /* the burst is over: idle, no longer significant, never advised */
        scan_and_decide(f);
        g_assert_false(p->significant);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_null(p->target);
        g_assert_cmpuint(f->m->scan_interval_usec, ==, c->scan_interval_usec);

        /* a steady process (a new one at the same pid: its start time
         * differs): seen at 1 GB, busy at the follow-up with its memory
         * held: decided there (the advice: node 0, which has 75% of it) */
        g_autofree char *stat = fixture_path(f, "proc/4242/stat");
        g_autofree char *st = NULL;
        g_assert_true(g_file_get_contents(stat, &st, NULL, NULL));
        g_autoptr(GString) s2 = g_string_new(st);
        g_assert_cmpuint(g_string_replace(s2, " 20481 ", " 20999 ", 1), ==, 1);
        g_assert_true(g_file_set_contents(stat, s2->str, -1, NULL));
        scan_and_decide(f);
        p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_cmpuint(p->starttime, ==, 20999);
        g_assert_cmpuint(f->m->scan_interval_usec, ==, NP_FOLLOWUP_USEC);
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_true(p->significant);
        g_assert_false(p->grew);
        g_assert_true(np_process_cpu_settled(p));
        g_assert_cmpint(p->state, ==, NP_PROC_ADVISED);
        g_autofree char *target = np_mask_format(p->target);
        g_assert_cmpstr(target, ==, "0");
        g_assert_cmpuint(f->m->scan_interval_usec, ==, c->scan_interval_usec);
}

/* A process sized by the lower of its last two measurements, but not by
 * one taken while its memory grew: seen at 128 MB, measured at one CPU while
 * it touched its memory up to 1 GB (one thread), then at six CPUs with its
 * memory held (its busy threads begun). Sized at one CPU, it would be
 * confined to one node of four CPUs; at six it needs two. */
static void test_sized_after_its_start(Fixture *f, gconstpointer data) {
        NpConfig *c = f->m->config;
        c->mode = NP_MODE_ADVISE;
        c->min_process_cpu = 0.3;
        unsigned utime = 1000;
        set_stat(f, utime, 32768);
        scan_and_decide(f);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);

        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_true(p->grew);
        g_assert_cmpfloat(p->cpu_usage, <, 1.5);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);

        set_stat(f, utime += 6 * one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_false(p->grew);
        g_assert_true(p->cpu_prev_grew);
        g_assert_cmpfloat(p->cpu_usage, >, 5.0);
        g_assert_true(np_process_cpu_settled(p));
        g_assert_cmpint(p->state, ==, NP_PROC_ADVISED);
        g_assert_cmpuint(np_mask_weight(p->target), ==, 2);
        g_assert_true(np_mask_test(p->target, 0));

        /* measured again with its memory held: now the lower of the two */
        set_stat(f, utime += 5 * one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_false(p->cpu_prev_grew);
}

/* The fixture's processes started at 204.81 s (their stat's start time):
 * with the uptime at 206.00 s, one seen now is 1.19 s old, and its CPU use
 * is guessed from its CPU time so far (a new process). */
static void seen_young(Fixture *f) {
        g_autofree char *uptime = fixture_path(f, "proc/uptime");
        g_assert_true(g_file_set_contents(uptime, "206.00 100.00\n", -1, NULL));
}

/* A newcomer read while it started, its memory still under the interleave
 * policy it was allocated with, sets the policy back to the default before
 * its follow-up scan: numa_maps is read again there, at the same resident
 * memory, and the policy decides on the default policy (the kernel's NUMA
 * balancing can move it), not on the interleave policy it had at first
 * sight; a later scan keeps the read (the age rule). */
static void test_newcomer_read_again(Fixture *f, gconstpointer data) {
        g_autofree char *maps = fixture_path(f, "proc/4242/numa_maps");
        f->m->config->mode = NP_MODE_ADVISE;
        f->m->config->min_process_cpu = 0.3;
        const char *interleaved = "7f3a00000000 interleave:0-3 anon=262144 dirty=262144 N0=65536 N1=65536 N2=65536 "
                                  "N3=65536 kernelpagesize_kB=4\n";
        g_assert_true(g_file_set_contents(maps, interleaved, -1, NULL));
        /* seen 1.19 s after its start (204.81 s): its CPU guessed from its
         * life so far, significant at once */
        seen_young(f);
        unsigned utime = 100;
        set_stat(f, utime, 262144);
        scan_and_decide(f);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_true(p->significant);
        g_assert_false(np_process_cpu_settled(p));
        g_assert_cmpuint(p->maps.balanced_bytes, ==, 0);
        g_assert_true(p->maps_age.starting);
        unsigned reads = p->maps_reads;
        /* its policy reset, its pages where they were */
        g_autofree char *reset = g_strdup(interleaved);
        memcpy(strstr(reset, "interleave:0-3"), "default       ", strlen("interleave:0-3"));
        g_assert_true(g_file_set_contents(maps, reset, -1, NULL));
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_true(np_process_cpu_settled(p));
        g_assert_cmpuint(p->maps_reads, ==, reads + 1);
        g_assert_false(p->maps_age.starting);
        g_assert_cmpuint(p->maps.balanced_bytes, ==, p->maps.total_bytes);
        g_assert_cmpint(p->state, ==, NP_PROC_ADVISED);
        g_assert_null(strstr(p->decision, "interleaved"));
        g_assert_nonnull(strstr(p->decision, "the kernel's NUMA balancing"));
        f->m->config->locality_refresh_scans = 100;
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_cmpuint(p->maps_reads, <=, reads + 2);
}

/* With the kernel's NUMA balancing on, a significant process it can make
 * local (the default policy) and that is not local is read every scan it
 * runs, so the policy sees whether the kernel is getting it there; with
 * the balancing off, by the age rule. */
static void test_kernel_watch(Fixture *f, gconstpointer data) {
        g_autofree char *nb = fixture_path(f, "proc/sys/kernel/numa_balancing");
        unsigned utime = 1000;
        set_stat(f, utime, 262144);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_true(np_manager_kernel_balancing(f->m));
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_true(p->maps.balanced_bytes * 2 >= p->maps.total_bytes);
        g_assert_cmpfloat(p->locality, <, 0.9);
        for (unsigned i = 0; i < 3; i++) {
                set_stat(f, utime += 10, 262144);
                g_assert_cmpint(np_scan_run(f->m), ==, 0);
                g_assert_cmpuint(p->maps_age.scans, ==, 0);
                g_assert_cmpfloat(p->locality_prev, ==, p->locality);
        }
        g_assert_true(g_file_set_contents(nb, "0\n", -1, NULL));
        set_stat(f, utime += 10, 262144);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_false(np_manager_kernel_balancing(f->m));
        set_stat(f, utime += 10, 262144);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(p->maps_age.scans, >, 0);
}

/* p's n threads, each measured at cpu over the interval (p->threads = n),
 * its busy ones last ran on `running`. */
static void set_threads(NpProcess *p, guint n, double cpu, const char *running) {
        p->threads = n;
        g_clear_pointer(&p->thread_cpu, g_array_unref);
        p->thread_cpu = g_array_new(FALSE, FALSE, sizeof(NpThreadCpu));
        for (guint i = 0; i < n; i++) {
                NpThreadCpu t = { .tid = 4243 + (pid_t) i, .node = 1, .cpu = cpu };
                g_array_append_val(p->thread_cpu, t);
        }
        g_clear_pointer(&p->running_nodes, np_mask_free);
        g_assert_cmpint(np_mask_parse(running, &p->running_nodes), ==, 0);
}

/* np_thread_homes_workers(): a process's busy threads read as all on one
 * node (where each last ran, a moment) are placed whole when they could
 * have run there, and judged by their faults when they used more CPU than
 * that node has (the scheduler had only just brought them together);
 * threads not measured over an interval yet may be busy. The 4node
 * fixture: 4 CPUs a node; bigdb (4242) with the balancing on. */
static void test_homes_workers_one_node(Fixture *f, gconstpointer data) {
        set_stat(f, 1000, 262144);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_true(np_manager_kernel_balancing(f->m));
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);

        /* three busy threads, 2.4 CPUs, on node 1 (4 CPUs): they fit there */
        set_threads(p, 3, 0.8, "1");
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_FEW_THREADS);
        /* six, 4.8 CPUs: not all on node 1 over the interval; the kernel has
         * counted none of their faults yet */
        set_threads(p, 6, 0.8, "1");
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_FEW_FAULTS);
        /* ... and once it has, each on its own pages */
        for (guint i = 0; i < 6; i++) {
                g_autofree char *dir = g_strdup_printf("%s/proc/4242/task/%u", f->root, 4243 + i);
                g_autofree char *sched = g_build_filename(dir, "sched", NULL);
                g_autofree char *text = g_strdup_printf(
                        "numa_faults node=%u task_private=5000 task_shared=0 group_private=0 group_shared=0\n", i % 4);
                g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
                g_assert_true(g_file_set_contents(sched, text, -1, NULL));
        }
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_GIVEN);
        /* on two nodes they are judged by their faults whatever they use */
        set_threads(p, 3, 0.8, "1-2");
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_GIVEN);
        /* one busy thread is too few anywhere */
        set_threads(p, 1, 0.8, "1-2");
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_FEW_THREADS);
        /* threads read once only (all of them when it became significant
         * in this scan; a numa02 so decided was placed whole): which are
         * busy is not known yet. Its main thread measured, four workers
         * new since; none measured; a one-thread process */
        set_threads(p, 1, 0.07, "0-3");
        p->threads = 5;
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_UNMEASURED);
        set_threads(p, 0, 0.0, "0-3");
        p->threads = 5;
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_UNMEASURED);
        p->threads = 1;
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_FEW_THREADS);
        /* all of them measured, one busy: too few */
        set_threads(p, 3, 0.8, "1-2");
        g_array_index(p->thread_cpu, NpThreadCpu, 1).cpu = 0.01;
        g_array_index(p->thread_cpu, NpThreadCpu, 2).cpu = 0.01;
        g_assert_cmpint(np_thread_homes_workers(f->m, p), ==, NP_HOMES_FEW_THREADS);
}

/* A young process the policy would spread over two nodes waits while the
 * kernel has not counted its busy threads' faults, and that wait makes the
 * next scan a follow-up (np-decide.h), also after a scan that reset the
 * interval; once they are counted it waits no more. The 4node fixture
 * (4 CPUs a node), bigdb (4242) with the balancing on, its memory
 * interleaved, seen 1.19 s after its start, busy on 6 CPUs: more than one
 * node's 3.4 at TargetUtilization=85%. */
static void test_faults_wait_followup(Fixture *f, gconstpointer data) {
        g_autofree char *maps = fixture_path(f, "proc/4242/numa_maps");
        f->m->config->mode = NP_MODE_ADVISE;
        /* interleaved (the kernel's balancing leaves it where it is) */
        g_assert_true(g_file_set_contents(maps,
                                          "7f3a00000000 interleave:0-3 anon=262144 dirty=262144 N0=65536 "
                                          "N1=65536 N2=65536 N3=65536 kernelpagesize_kB=4\n",
                                          -1, NULL));
        /* started 1.19 s ago by this machine's clock (the wait is for the
         * young, np_process_age_usec()) */
        struct timespec ts;
        g_assert_cmpint(clock_gettime(CLOCK_BOOTTIME, &ts), ==, 0);
        double now = (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
        g_autofree char *uptime = fixture_path(f, "proc/uptime");
        g_autofree char *up = g_strdup_printf("%.2f 100.00\n", now);
        g_assert_true(g_file_set_contents(uptime, up, -1, NULL));
        set_stat_field(f, 22, (unsigned) ((now - 1.19) * (double) sysconf(_SC_CLK_TCK)));
        unsigned utime = 100;
        set_stat(f, utime, 262144);
        scan_and_decide(f);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        for (guint round = 0; round < 2; round++) {
                f->m->followup_scan = false;
                set_stat(f, utime += 6 * one_cpu_ticks(), 262144);
                g_usleep(100 * 1000);
                last_scan = g_get_monotonic_time();
                g_assert_cmpint(np_scan_run(f->m), ==, 0);
                g_assert_true(np_process_cpu_settled(p));
                /* (the scan alone wants no follow-up) */
                g_assert_cmpuint(f->m->scan_interval_usec, >, NP_FOLLOWUP_USEC);
                /* six busy threads on nodes 1 and 2, no faults counted */
                set_threads(p, 6, 0.9, "1-2");
                np_decide_run(f->m);
                g_assert_nonnull(strstr(p->decision, "the kernel has not counted its busy threads' NUMA faults"));
                g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
                g_assert_cmpuint(f->m->scan_interval_usec, ==, NP_FOLLOWUP_USEC);
                g_assert_true(f->m->followup_scan);
        }
        /* counted (shared pages): decided, no follow-up for it */
        for (guint i = 0; i < 6; i++) {
                g_autofree char *dir = g_strdup_printf("%s/proc/4242/task/%u", f->root, 4243 + i);
                g_autofree char *sched = g_build_filename(dir, "sched", NULL);
                g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
                g_assert_true(g_file_set_contents(sched,
                                                  "numa_faults node=1 task_private=100 task_shared=5000 "
                                                  "group_private=0 group_shared=0\n",
                                                  -1, NULL));
        }
        f->m->followup_scan = false;
        set_stat(f, utime += 6 * one_cpu_ticks(), 262144);
        g_usleep(100 * 1000);
        last_scan = g_get_monotonic_time();
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        set_threads(p, 6, 0.9, "1-2");
        np_decide_run(f->m);
        g_assert_null(strstr(p->decision, "has not counted"));
        g_assert_cmpint(p->state, ==, NP_PROC_ADVISED);
        g_assert_cmpuint(np_mask_weight(p->target), ==, 2);
        g_assert_false(f->m->followup_scan);
        g_assert_cmpuint(f->m->scan_interval_usec, !=, NP_FOLLOWUP_USEC);
}

/* With the balancing on, a process that became local between two reads
 * (the kernel moved it while the daemon looked away) is read again until its
 * locality stops changing, however local it is: a decision on the read
 * before would take pages away from where the kernel just put them. */
static void test_kernel_watch_until_settled(Fixture *f, gconstpointer data) {
        g_autofree char *maps = fixture_path(f, "proc/4242/numa_maps");
        unsigned utime = 1000;
        set_stat(f, utime, 262144);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_cmpfloat(p->locality, <, 0.9);
        int node = np_mask_first(p->running_nodes);
        g_assert_cmpint(node, >=, 0);
        /* the kernel gathered 95% on the node its thread runs on */
        g_autofree char *line = g_strdup_printf("7f3a00000000 default anon=262144 dirty=262144 N%d=249037 N%d=13107 "
                                                "kernelpagesize_kB=4\n",
                                                node, (node + 1) % 4);
        g_assert_true(g_file_set_contents(maps, line, -1, NULL));
        set_stat(f, utime += 10, 262144);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(p->maps_age.scans, ==, 0);
        g_assert_cmpfloat(p->locality, >=, 0.9);
        /* local, but it changed since the read before: read again */
        set_stat(f, utime += 10, 262144);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(p->maps_age.scans, ==, 0);
        g_assert_cmpfloat(p->locality_prev, ==, p->locality);
        /* settled: the age rule again */
        set_stat(f, utime += 10, 262144);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(p->maps_age.scans, ==, 1);
}

/* A busy process whose cpuset allows one memory node, with every page there
 * (what a placement on one node leaves), has its numa_maps read when it
 * becomes significant and then not by age (np-maps-refresh.h); once its
 * cpuset allows more nodes, the age rule holds again. Pages outside that
 * its last move left there (stuck_bytes) do not unsettle it. */
static void test_settled_memory(Fixture *f, gconstpointer data) {
        g_autofree char *status = fixture_path(f, "proc/4242/status");
        g_autofree char *maps = fixture_path(f, "proc/4242/numa_maps");
        g_autofree char *nb = fixture_path(f, "proc/sys/kernel/numa_balancing");
        /* the age rule alone: with the kernel's balancing on, a process not
         * local is read every scan it runs (test_kernel_watch) */
        g_assert_true(g_file_set_contents(nb, "0\n", -1, NULL));
        g_autofree char *orig = NULL;
        g_assert_true(g_file_get_contents(status, &orig, NULL, NULL));
        GString *n = g_string_new(orig);
        g_assert_cmpuint(g_string_replace(n, ",0000000f\n", ",00000004\n", 1), ==, 1);
        g_assert_cmpuint(g_string_replace(n, "Mems_allowed_list:\t0-3", "Mems_allowed_list:\t2", 1), ==, 1);
        g_autofree char *on_2 = g_string_free(n, FALSE);
        g_assert_true(g_file_set_contents(status, on_2, -1, NULL));
        g_assert_true(g_file_set_contents(
                maps, "7f3a00000000 default anon=262144 dirty=262144 N2=262144 kernelpagesize_kB=4\n", -1, NULL));

        unsigned utime = 184467;
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_true(p->significant);
        g_assert_cmpuint(p->maps_age.scans, ==, 0);
        /* read before its CPU use was measured: read again at the scan that
         * measures it (test_newcomer_read_again) */
        g_assert_true(p->maps_age.starting);
        set_utime(f, utime += 100);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(p->maps_age.scans, ==, 0);
        g_assert_false(p->maps_age.starting);
        unsigned max = f->m->config->locality_refresh_scans;
        for (unsigned i = 0; i < 2 * max; i++) {
                set_utime(f, utime += 100);
                g_assert_cmpint(np_scan_run(f->m), ==, 0);
        }
        g_assert_cmpuint(p->maps_age.scans, ==, 2 * max); /* never read by age */
        g_autofree char *mems = np_mask_format(p->mems_allowed);
        g_assert_cmpstr(mems, ==, "2");

        /* its cpuset widened: read at the next scan (it is long past the
         * bound); a page is elsewhere now */
        g_assert_true(g_file_set_contents(status, orig, -1, NULL));
        g_assert_true(g_file_set_contents(
                maps, "7f3a00000000 default anon=262144 dirty=262144 N1=1 N2=262143 kernelpagesize_kB=4\n", -1, NULL));
        set_utime(f, utime += 100);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(p->maps_age.scans, ==, 0);
        g_assert_cmpuint(np_numa_maps_node_bytes(&p->maps, 1), ==, 4096);

        /* one node again, but a page was elsewhere at the last read: the bound holds */
        g_assert_true(g_file_set_contents(status, on_2, -1, NULL));
        for (unsigned i = 1; i < max; i++) {
                set_utime(f, utime += 100);
                g_assert_cmpint(np_scan_run(f->m), ==, 0);
        }
        g_assert_cmpuint(p->maps_age.scans, ==, max - 1);
        set_utime(f, utime += 100);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(p->maps_age.scans, ==, 0);

        /* that page is one its last move left where it was (stuck_bytes,
         * MoveSharedPages=no): settled again, never read by age */
        p->stuck_bytes = 4096;
        for (unsigned i = 0; i < 2 * max; i++) {
                set_utime(f, utime += 100);
                g_assert_cmpint(np_scan_run(f->m), ==, 0);
        }
        g_assert_cmpuint(p->maps_age.scans, ==, 2 * max);
}

/* Actions read the one process concerned and never run a scan: Scans and
 * the CPU use of every process come from the timer's scans alone. */
static void test_actions_do_not_scan(Fixture *f, gconstpointer data) {
        g_autoptr(GError) e = NULL;

        /* before any scan: Include() samples pid 812 alone */
        g_assert_cmpint(np_manager_include(f->m, 812, &e), ==, 0);
        g_assert_no_error(e);
        g_assert_cmpuint(f->m->scans, ==, 0);
        g_assert_cmpuint(g_hash_table_size(f->m->processes), ==, 1);
        NpProcess *p = np_manager_process(f->m, 812);
        g_assert_nonnull(p);
        g_assert_true(p->significant); /* included, whatever its size */
        g_assert_cmpstr(p->comm, ==, "sshd");
        g_assert_true(f->m->changes.processes);

        g_assert_cmpint(np_manager_exclude(f->m, 5151, &e), ==, 0);
        g_assert_cmpint(np_manager_process(f->m, 5151)->state, ==, NP_PROC_EXCLUDED);
        g_assert_cmpint(np_manager_forget(f->m, 5151, &e), ==, 0);
        g_assert_cmpint(np_manager_process(f->m, 5151)->state, ==, NP_PROC_OBSERVED);
        g_assert_cmpuint(f->m->scans, ==, 0);

        /* errors name what is wrong */
        g_assert_cmpint(np_manager_include(f->m, 2, &e), <, 0);
        g_assert_error(e, NP_ERROR, NP_ERROR_INVALID_ARGS);
        g_clear_error(&e);
        g_assert_cmpint(np_manager_include(f->m, 99999, &e), ==, -ESRCH);
        g_assert_error(e, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS);
        g_clear_error(&e);
        g_assert_cmpint(np_manager_forget(f->m, 99999, &e), ==, -ESRCH);
        g_assert_error(e, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS);
        g_assert_cmpuint(f->m->scans, ==, 0);
}

/* What the scans record for the bus: the first scan changes everything,
 * an idle scan only the scan counters. */
static void test_change_records(Fixture *f, gconstpointer data) {
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_true(f->m->changes.manager & NP_MANAGER_SCANS);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, f->m->topology->nodes->len);

        /* the bus took everything */
        f->m->changes.manager = 0;
        g_hash_table_remove_all(f->m->changes.nodes);
        f->m->changes.processes = false;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, f->m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v))
                ((NpProcess *) v)->changed = 0;

        uint64_t interval = f->m->scan_interval_usec;
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        /* the quiet scan stretched the adaptive interval: that changed too */
        g_assert_cmpuint(f->m->scan_interval_usec, >, interval);
        g_assert_cmpuint(f->m->changes.manager, ==,
                         NP_MANAGER_SCANS | NP_MANAGER_LAST_SCAN | NP_MANAGER_DAEMON_CPU | NP_MANAGER_SCAN_INTERVAL);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, 0);
        g_assert_false(f->m->changes.processes);
        g_hash_table_iter_init(&it, f->m->processes);
        while (g_hash_table_iter_next(&it, NULL, &v))
                g_assert_cmpuint(((NpProcess *) v)->changed, ==, 0);

        /* a node's free memory changes: that node's MemoryFreeBytes only */
        g_autofree char *meminfo = fixture_path(f, "sys/devices/system/node/node1/meminfo");
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(meminfo, &text, NULL, NULL));
        g_autoptr(GRegex) re = g_regex_new("(Node 1 MemFree: +)[0-9]+", 0, 0, NULL);
        g_autofree char *edited = g_regex_replace(re, text, -1, 0, "\\g<1>1234", 0, NULL);
        g_assert_cmpstr(edited, !=, text);
        g_assert_true(g_file_set_contents(meminfo, edited, -1, NULL));
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, 1);
        g_assert_cmpuint(GPOINTER_TO_UINT(g_hash_table_lookup(f->m->changes.nodes, GUINT_TO_POINTER(1))), ==,
                         NP_NODE_MEMORY_FREE);
}

/* A process that started within the last two scan intervals has its CPU
 * use known at first sight (its CPU time over its life), so a busy new
 * process is a candidate in the first scan that sees it; an older one waits
 * for a measured interval. */
static void test_young_process_cpu(Fixture *f, gconstpointer data) {
        g_autofree char *uptime = fixture_path(f, "proc/uptime");
        NpConfig *c = f->m->config;

        c->min_process_cpu = 0.5;
        c->min_process_memory = 0; /* every process has a record, sshd too */
        /* bigdb (4242) started at 204.81 s: 5.19 s old, 1936.97 s of CPU */
        g_assert_true(g_file_set_contents(uptime, "210.00 100.00\n", -1, NULL));
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_cmpfloat(p->cpu_usage, >, 0.5);
        g_assert_true(p->significant);
        /* sshd (812) started at 11.87 s: too old to guess */
        g_assert_cmpfloat(np_manager_process(f->m, 812)->cpu_usage, ==, 0.0);
}

/* Only a process that can be significant, alone or with its group, has a
 * record of the manager's: the small ones (below MinProcessMemory/16) live
 * in the cheap tier only, are still counted as seen, and get a record in
 * the scan that sees them above it or included. */
static void test_records_only_for_candidates(Fixture *f, gconstpointer data) {
        f->m->config->min_process_memory = 200u << 20; /* the member floor: 12.5 MB */
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_nonnull(np_manager_process(f->m, 4242)); /* bigdb: 1 GB */
        g_assert_null(np_manager_process(f->m, 812)); /* sshd: 9 MB */
        g_assert_nonnull(np_proc_table_lookup(f->m->proc_table, 812));
        guint records = g_hash_table_size(f->m->processes);
        g_assert_cmpuint(f->m->processes_seen, >, records);
        uint64_t seen = f->m->processes_seen;

        /* Include= by name: a record from the next scan on */
        g_strfreev(f->m->config->include);
        f->m->config->include = g_strsplit("sshd", " ", -1);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 812);
        g_assert_nonnull(p);
        g_assert_true(p->significant);
        g_assert_cmpuint(f->m->processes_seen, ==, seen); /* not new */

        /* the threshold falls below every process: each has a record */
        f->m->config->min_process_memory = 0;
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(g_hash_table_size(f->m->processes), ==, seen);
}

/* Rewrite a fixture file in place (the daemon keeps some descriptors open:
 * a rename would leave it reading the old file). */
static void rewrite_in_place(Fixture *f, const char *rel, const char *from, const char *to) {
        g_autofree char *path = fixture_path(f, rel);
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        g_autoptr(GString) s = g_string_new(text);
        g_assert_cmpuint(g_string_replace(s, from, to, 1), ==, 1);
        FILE *out = fopen(path, "w");
        g_assert_nonnull(out);
        g_assert_cmpuint(fwrite(s->str, 1, s->len, out), ==, s->len);
        g_assert_cmpint(fclose(out), ==, 0);
}

/* Between scans a peek reads the nodes only: while nothing was gained it
 * asks for no scan; once a node has 95 MB more in use (MinProcessMemory=
 * 100M: the bar is 90 MB) it does, without scanning itself, whether it
 * looks at the CPUs or not; the next scan is the new base. CPUs busier
 * by a whole CPU count only for a peek that looks at them. */
static void test_peek(Fixture *f, gconstpointer data) {
        g_assert_true(np_scan_peek(f->m, false)); /* nothing scanned yet */
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        uint64_t scans = f->m->scans;
        g_assert_false(np_scan_peek(f->m, false));
        g_assert_false(np_scan_peek(f->m, true));
        rewrite_in_place(f, "sys/devices/system/node/node1/meminfo", "MemFree:          6291456 kB",
                         "MemFree:          6194176 kB");
        g_assert_true(np_scan_peek(f->m, false));
        g_assert_true(np_scan_peek(f->m, true));
        g_assert_cmpuint(f->m->scans, ==, scans);
        /* the scan it brought forward is followed by another soon */
        f->m->scan_interval_usec = f->m->config->max_scan_interval_usec;
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(f->m->scan_interval_usec, ==, NP_FOLLOWUP_USEC);
        g_assert_false(np_scan_peek(f->m, true));
        /* and then the regular interval again */
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        g_assert_cmpuint(f->m->scan_interval_usec, ==, f->m->config->scan_interval_usec);
        /* 85 MB more: below the bar */
        rewrite_in_place(f, "sys/devices/system/node/node1/meminfo", "MemFree:          6194176 kB",
                         "MemFree:          6107136 kB");
        g_assert_false(np_scan_peek(f->m, false));
        g_assert_false(np_scan_peek(f->m, true));
        /* CPUs 0-2 busy for 100 s since the scan, no other tick: three
         * whole CPUs, more than 80% of MinProcessCPU=0.5 once the CPU this
         * test's own process used (at most one: the daemon's own, not
         * counted) is taken out */
        f->m->config->min_process_cpu = 0.5;
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        rewrite_in_place(f, "proc/stat", "cpu0 10000 12 4000 200000", "cpu0 20000 12 4000 200000");
        rewrite_in_place(f, "proc/stat", "cpu1 10137 13 4053 200911", "cpu1 20137 13 4053 200911");
        rewrite_in_place(f, "proc/stat", "cpu2 10274 14 4106 201822", "cpu2 20274 14 4106 201822");
        g_assert_false(np_scan_peek(f->m, false));
        g_assert_true(np_scan_peek(f->m, true));
}

/* Replace the first match of `pattern` in proc/4242/<file> with `with`. */
static void edit_bigdb(Fixture *f, const char *file, const char *pattern, const char *with) {
        g_autofree char *rel = g_strdup_printf("proc/4242/%s", file);
        g_autofree char *path = fixture_path(f, rel);
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        g_autoptr(GRegex) re = g_regex_new(pattern, G_REGEX_MULTILINE, 0, NULL);
        g_assert_true(g_regex_match(re, text, 0, NULL));
        g_autofree char *out = g_regex_replace(re, text, -1, 0, with, 0, NULL);
        g_assert_true(g_file_set_contents(path, out, -1, NULL));
}

/* Advice that reserves room, on the fixture through the real readers:
 * answers are held (and recorded as a change), a second answer goes
 * elsewhere, unprivileged callers are bounded; bigdb restarted after the
 * answer and confined to its node (as libvirt confines a guest) takes the
 * reservation up, which then holds what bigdb does not use there, and ends
 * when bigdb exits. */
static void set_file(Fixture *f, const char *rel, const char *text) {
        g_autofree char *path = fixture_path(f, rel);
        g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* Groups=: two processes of one podman container (its cgroup matches the
 * default libpod-*.scope) are decided as one on any backend, each Decision
 * naming the group; with Groups=none each is decided on its own. */
/* 4242 and 4343 busy (a CPU each) for three scans: measured, then
 * decided. Returns the first Decision of 4242 that places it (later ones
 * say "placed on ..."); caller frees. */
static char *both_busy(Fixture *f) {
        unsigned utime = 200000;
        char *first = NULL;
        for (int i = 0; i < 3; i++) {
                utime += one_cpu_ticks();
                set_stat_field_of(f, 4242, 14, utime);
                set_stat_field_of(f, 4343, 14, utime);
                scan_and_decide(f);
                NpProcess *p = np_manager_process(f->m, 4242);
                if (!first && p && p->decision && strstr(p->decision, "MiB to move"))
                        first = g_strdup(p->decision);
        }
        return first;
}

static void test_cgroup_group(Fixture *f, gconstpointer data) {
        f->m->config->mode = NP_MODE_ADVISE;
        g_autofree char *src = fixture_path(f, "proc/4242");
        g_autofree char *dst = fixture_path(f, "proc/4343");
        g_assert_cmpint(g_mkdir(dst, 0755), ==, 0);
        copy_tree(src, dst);
        g_autofree char *stat_path = fixture_path(f, "proc/4343/stat");
        g_autofree char *stat = NULL;
        g_assert_true(g_file_get_contents(stat_path, &stat, NULL, NULL));
        g_assert_true(g_str_has_prefix(stat, "4242 "));
        memcpy(stat, "4343", 4);
        g_assert_true(g_file_set_contents(stat_path, stat, -1, NULL));
        set_file(f, "proc/4242/cgroup", "0::/machine.slice/libpod-c1.scope/container\n");
        set_file(f, "proc/4343/cgroup", "0::/machine.slice/libpod-c1.scope/container\n");

        g_free(both_busy(f));
        NpProcess *a = np_manager_process(f->m, 4242), *b = np_manager_process(f->m, 4343);
        g_assert_nonnull(a);
        g_assert_nonnull(b);
        g_assert_true(a->significant && b->significant);
        g_assert_cmpstr(a->systemd_cgroup, ==, "/machine.slice/libpod-c1.scope/container");
        const char *want = "with the 2 processes of its group /machine.slice/libpod-c1.scope: ";
        g_test_message("decision: %s", a->decision);
        g_assert_true(g_str_has_prefix(a->decision, want));
        g_assert_cmpstr(a->decision, ==, b->decision);
        g_assert_true(a->target && b->target && np_mask_equal(a->target, b->target));

        /* Groups=none: the container's scope still makes them one, as a
         * unit, whatever the backend */
        g_strfreev(f->m->config->groups);
        f->m->config->groups = g_new0(char *, 1);
        g_free(both_busy(f)); /* the cgroup is read again when it runs */
        g_test_message("decision: %s", a->decision);
        g_assert_true(g_str_has_prefix(a->decision, "with the 2 processes of its unit libpod-c1.scope: "));
        g_assert_cmpstr(a->decision, ==, b->decision);

        /* two services: two groups */
        set_file(f, "proc/4242/cgroup", "0::/system.slice/a.service\n");
        set_file(f, "proc/4343/cgroup", "0::/system.slice/b.service\n");
        g_free(both_busy(f)); /* the cgroup is read again when it runs */
        g_test_message("decision: %s", a->decision);
        g_assert_false(g_str_has_prefix(a->decision, "with the"));
        g_assert_false(g_str_has_prefix(b->decision, "with the"));

        /* one service, also when one process is in a unit of a user manager
         * or container below it: the outermost unit is the process's */
        set_file(f, "proc/4343/cgroup", "0::/system.slice/a.service/payload/inner.service\n");
        g_free(both_busy(f)); /* the cgroup is read again when it runs */
        g_test_message("decision: %s", a->decision);
        g_assert_cmpstr(b->unit, ==, "a.service");
        g_assert_true(g_str_has_prefix(a->decision, "with the 2 processes of its unit a.service: "));

        /* a login session or a user's manager holds unrelated jobs: each on
         * its own */
        const char *const apart[] = { "/user.slice/user-1000.slice/session-3.scope",
                                      "/user.slice/user-1000.slice/user@1000.service/app.slice/x.service" };
        for (size_t i = 0; i < G_N_ELEMENTS(apart); i++) {
                g_autofree char *line = g_strdup_printf("0::%s\n", apart[i]);
                set_file(f, "proc/4242/cgroup", line);
                set_file(f, "proc/4343/cgroup", line);
                g_free(both_busy(f)); /* the cgroup is read again when it runs */
                g_test_message("%s: %s", apart[i], a->decision);
                g_assert_false(g_str_has_prefix(a->decision, "with the"));
                g_assert_false(g_str_has_prefix(b->decision, "with the"));
        }
}

/* Copy process 4242 of the fixture as `pid` (its stat names the new pid). */
static void clone_bigdb(Fixture *f, int pid) {
        g_autofree char *src = fixture_path(f, "proc/4242");
        g_autofree char *rel = g_strdup_printf("proc/%d", pid);
        g_autofree char *dst = fixture_path(f, rel);
        g_assert_cmpint(g_mkdir(dst, 0755), ==, 0);
        copy_tree(src, dst);
        g_autofree char *stat_rel = g_strdup_printf("proc/%d/stat", pid);
        g_autofree char *stat_path = fixture_path(f, stat_rel);
        g_autofree char *stat = NULL;
        g_assert_true(g_file_get_contents(stat_path, &stat, NULL, NULL));
        g_assert_true(g_str_has_prefix(stat, "4242 "));
        g_autofree char *edited = g_strdup_printf("%d%s", pid, stat + 4);
        g_assert_true(g_file_set_contents(stat_path, edited, -1, NULL));
}

/* A shared mapping of `mb` MB (shmem inode `inode`, all on node 1) added to
 * pid's numa_maps and maps. */
static void add_shared_mapping(Fixture *f, int pid, const char *what, uint64_t inode, unsigned mb) {
        g_autofree char *rel = g_strdup_printf("proc/%d/numa_maps", pid);
        g_autofree char *path = fixture_path(f, rel);
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        g_auto(GStrv) words = g_strsplit(what, " ", -1);
        g_autofree char *escaped = g_strjoinv("\\040", words);
        g_autofree char *more = g_strdup_printf("%s7f5000000000 default file=%s dirty=%u mapmax=2 N1=%u "
                                                "kernelpagesize_kB=4\n",
                                                text, escaped, mb * 256, mb * 256);
        g_assert_true(g_file_set_contents(path, more, -1, NULL));
        g_autofree char *maps_rel = g_strdup_printf("proc/%d/maps", pid);
        g_autofree char *maps = g_strdup_printf("555555554000-555555654000 r-xp 00000000 fe:01 1234 /usr/sbin/bigdb\n"
                                                "7f5000000000-%llx rw-s 00000000 00:01 %" G_GUINT64_FORMAT " %s\n"
                                                "7f3b40000000-7f3b40200000 r-xp 00000000 fe:01 99 "
                                                "/usr/lib/x86_64-linux-gnu/libc.so.6\n",
                                                0x7f5000000000ull + ((unsigned long long) mb << 20), inode, what);
        set_file(f, maps_rel, maps);
}

/* Two processes mapping one shared anonymous object are one group: one
 * target, the Decision names the group, the object is theirs alone (their
 * moves carry it); one mapping too little of it stays on its own. */
static void test_shared_group(Fixture *f, gconstpointer data) {
        f->m->config->mode = NP_MODE_ADVISE;
        g_strfreev(f->m->config->groups);
        f->m->config->groups = g_new0(char *, 1);
        clone_bigdb(f, 4343);
        add_shared_mapping(f, 4242, "/dev/zero (deleted)", 4711, 128);
        add_shared_mapping(f, 4343, "/dev/zero (deleted)", 4711, 128);
        g_free(both_busy(f));
        NpProcess *a = np_manager_process(f->m, 4242), *b = np_manager_process(f->m, 4343);
        g_assert_nonnull(a);
        g_assert_nonnull(b);
        g_assert_true(a->significant && b->significant);
        g_assert_nonnull(a->maps.shm);
        g_assert_cmpuint(a->maps.shm->len, ==, 1);
        g_assert_nonnull(a->shmaps);
        g_test_message("decision: %s", a->decision);
        g_assert_true(g_str_has_prefix(a->decision, "with the 2 processes of its group shm:4711: "));
        g_assert_cmpstr(a->decision, ==, b->decision);
        g_assert_true(a->target && b->target && np_mask_equal(a->target, b->target));
        g_assert_cmpstr(a->group, ==, "shm:4711");
        g_assert_nonnull(a->group_objects);
        g_assert_cmpuint(a->group_objects->len, ==, 1);
        g_assert_cmpuint(g_array_index(a->group_objects, NpSharedId, 0).inode, ==, 4711);
        g_assert_nonnull(b->group_objects);
}

/* 16 MB of one shared object (below NP_GROUP_MIN_SHARED_BYTES) groups
 * nothing, and neither do the libraries both map. */
static void test_shared_small(Fixture *f, gconstpointer data) {
        f->m->config->mode = NP_MODE_ADVISE;
        g_strfreev(f->m->config->groups);
        f->m->config->groups = g_new0(char *, 1);
        clone_bigdb(f, 4343);
        add_shared_mapping(f, 4242, "/SYSV0052e2c1 (deleted)", 99, 16);
        add_shared_mapping(f, 4343, "/SYSV0052e2c1 (deleted)", 99, 16);
        g_free(both_busy(f));
        NpProcess *a = np_manager_process(f->m, 4242), *b = np_manager_process(f->m, 4343);
        g_assert_nonnull(a);
        g_assert_nonnull(b);
        g_assert_nonnull(a->maps.shm);
        g_assert_nonnull(a->shmaps); /* looked up (its group would count it once), but too small to group */
        g_test_message("decision: %s", a->decision);
        g_assert_false(g_str_has_prefix(a->decision, "with the"));
        g_assert_false(g_str_has_prefix(b->decision, "with the"));
        g_assert_null(a->group);
        g_assert_null(a->group_objects);
}

/* A Groups= cgroup's processes sharing 16 MiB of one object (too little
 * to make a group by itself): the group counts it once, in what it has to
 * move (1024 MiB of their own pages off node 2, plus 16 MiB, not 32). */
static void test_cgroup_group_shared_once(Fixture *f, gconstpointer data) {
        f->m->config->mode = NP_MODE_ADVISE;
        clone_bigdb(f, 4343);
        set_file(f, "proc/4242/cgroup", "0::/machine.slice/libpod-c1.scope/container\n");
        set_file(f, "proc/4343/cgroup", "0::/machine.slice/libpod-c1.scope/container\n");
        add_shared_mapping(f, 4242, "/SYSV0052e2c1 (deleted)", 99, 16);
        add_shared_mapping(f, 4343, "/SYSV0052e2c1 (deleted)", 99, 16);
        g_autofree char *first = both_busy(f);
        NpProcess *a = np_manager_process(f->m, 4242);
        g_assert_nonnull(a);
        g_test_message("decision: %s", first);
        g_assert_nonnull(first);
        g_assert_true(g_str_has_prefix(first, "with the 2 processes of its group /machine.slice/libpod-c1.scope: "));
        g_assert_nonnull(strstr(first, "place on 2 (1040 MiB to move)"));
        g_assert_cmpstr(a->group, ==, "/machine.slice/libpod-c1.scope");
        g_assert_nonnull(a->group_objects);
        g_assert_cmpuint(g_array_index(a->group_objects, NpSharedId, 0).inode, ==, 99);
}

/* The fixture root's memory.numa_stat of cgroup `cg` (cgroup v2 under
 * /sys/fs/cgroup): `text`, or none when NULL. */
static void set_numa_stat(Fixture *f, const char *cg, const char *text) {
        g_autofree char *rel = g_strdup_printf("sys/fs/cgroup%s", cg);
        g_autofree char *dir = fixture_path(f, rel);
        g_autofree char *path = g_build_filename(dir, "memory.numa_stat", NULL);
        if (!text) {
                g_assert_true(g_unlink(path) == 0 || errno == ENOENT);
                return;
        }
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        g_assert_true(g_file_set_contents(path, text, -1, NULL));
}

/* Two processes of one container, each with 1 GiB in its numa_maps, and
 * the container's memory.numa_stat: 100, 200 and 300 MiB anon on nodes
 * 0-2, 50 MiB shmem on node 1, 1000 MiB of other page cache on node 0
 * (not moved, not counted). */
#define NUMA_STAT_C1 \
        "anon N0=104857600 N1=209715200 N2=314572800 N3=0\n" \
        "file N0=1048576000 N1=52428800 N2=0 N3=0\n" \
        "kernel_stack N0=65536 N1=0 N2=16384 N3=0\n" \
        "shmem N0=0 N1=52428800 N2=0 N3=0\n" \
        "file_mapped N0=4096 N1=0 N2=0 N3=0\n"
#define C1 "/machine.slice/libpod-c1.scope"

static void two_in_c1(Fixture *f) {
        f->m->config->mode = NP_MODE_ADVISE;
        clone_bigdb(f, 4343);
        set_file(f, "proc/4242/cgroup", "0::" C1 "/container\n");
        set_file(f, "proc/4343/cgroup", "0::" C1 "/container\n");
}

/* Busy scans of 4242 and 4343 after both_busy(), with numa_maps due by age
 * every scan (LocalityRefreshScans=1): the numa_maps reads of each. */
static void busy_scans(Fixture *f, int n, uint64_t reads[2]) {
        f->m->config->locality_refresh_scans = 1;
        NpProcess *a = np_manager_process(f->m, 4242), *b = np_manager_process(f->m, 4343);
        uint64_t a0 = a->maps_reads, b0 = b->maps_reads;
        unsigned utime = 400000;
        for (int i = 0; i < n; i++) {
                utime += one_cpu_ticks();
                set_stat_field_of(f, 4242, 14, utime);
                set_stat_field_of(f, 4343, 14, utime);
                scan_and_decide(f);
        }
        g_assert_true(a == np_manager_process(f->m, 4242) && b == np_manager_process(f->m, 4343));
        reads[0] = a->maps_reads - a0;
        reads[1] = b->maps_reads - b0;
}

/* A Groups= cgroup's pages come from its memory.numa_stat (anon + shmem:
 * 650 MiB, 300 of them on node 2), not from its processes' numa_maps (2 x
 * 1 GiB, 1024 MiB of it off node 2): what it has to move says so, and
 * their numa_maps are no longer read by age. Without the file again, the
 * numa_maps count, and are read at the next scan. */
static void test_cgroup_group_numa_stat(Fixture *f, gconstpointer data) {
        two_in_c1(f);
        set_numa_stat(f, C1, NUMA_STAT_C1);
        g_autofree char *first = both_busy(f);
        g_test_message("decision: %s", first);
        g_assert_nonnull(first);
        g_assert_true(g_str_has_prefix(first, "with the 2 processes of its group " C1 ": "));
        g_assert_nonnull(strstr(first, "place on 2 (350 MiB to move)"));
        NpProcess *a = np_manager_process(f->m, 4242), *b = np_manager_process(f->m, 4343);
        g_assert_true(a->pages_from_group && b->pages_from_group);
        /* its Group object shows numa_stat's 650 MiB too, not the 2 GiB of the numa_maps */
        NpGroupView *v = np_group_table_find(f->m->groups, C1);
        g_assert_nonnull(v);
        g_assert_cmpuint(v->mem, ==, 650ull << 20);
        g_assert_cmpuint(v->per_node->len, ==, 3);
        g_assert_cmpuint(f->m->numa_stat_reads, ==, 3);
        g_assert_cmpuint(a->maps_reads, >=, 1);

        uint64_t reads[2];
        busy_scans(f, 3, reads);
        g_assert_cmpuint(reads[0], ==, 0);
        g_assert_cmpuint(reads[1], ==, 0);
        g_assert_cmpuint(f->m->numa_stat_reads, ==, 6);
        g_autofree char *dump = np_manager_dump(f->m);
        g_assert_nonnull(strstr(dump, "Cgroup groups' memory.numa_stat read: 6 times\n"));
        g_autofree char *row = g_strdup_printf(" %" G_GUINT64_FORMAT "  numa_stat   N0=", a->maps_reads);
        g_assert_nonnull(strstr(dump, row));

        /* the cgroup has no memory.numa_stat any more: numa_maps again, read
         * at once, then by age */
        set_numa_stat(f, C1, NULL);
        busy_scans(f, 1, reads);
        g_assert_false(a->pages_from_group || b->pages_from_group);
        g_assert_cmpuint(f->m->numa_stat_reads, ==, 6);
        busy_scans(f, 2, reads);
        g_test_message("numa_maps reads in 2 scans: %" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT, reads[0], reads[1]);
        g_assert_cmpuint(reads[0], ==, 2);
        g_assert_cmpuint(reads[1], ==, 2);
}

/* No memory.numa_stat (no memory controller, a v1 host), or a malformed
 * one: the group's pages are its processes' numa_maps as before (1024 MiB
 * of them off node 2), read by age as before. */
static void test_cgroup_group_numa_stat_missing(Fixture *f, gconstpointer data) {
        two_in_c1(f);
        g_autofree char *first = both_busy(f);
        g_test_message("decision: %s", first);
        g_assert_nonnull(first);
        g_assert_true(g_str_has_prefix(first, "with the 2 processes of its group " C1 ": "));
        g_assert_nonnull(strstr(first, "place on 2 (1024 MiB to move)"));
        NpProcess *a = np_manager_process(f->m, 4242), *b = np_manager_process(f->m, 4343);
        g_assert_false(a->pages_from_group || b->pages_from_group);
        g_assert_cmpuint(f->m->numa_stat_reads, ==, 0);
        uint64_t reads[2];
        busy_scans(f, 2, reads);
        g_assert_cmpuint(reads[0], ==, 2);
        g_assert_cmpuint(reads[1], ==, 2);

        /* malformed: the same, never a crash */
        set_numa_stat(f, C1, "anon N0=12 N1=x\n");
        busy_scans(f, 2, reads);
        g_assert_false(a->pages_from_group || b->pages_from_group);
        g_assert_cmpuint(f->m->numa_stat_reads, ==, 0);
        g_assert_cmpuint(reads[0], ==, 2);
        g_assert_true(g_str_has_prefix(a->decision, "with the 2 processes of its group " C1 ": "));
}

/* Copy 4242 as `pid` in `cgroup` (a /proc/PID/cgroup line) with `statm`
 * (size resident shared text lib data dt, in pages). */
static void clone_in(Fixture *f, int pid, const char *cgroup, const char *statm) {
        clone_bigdb(f, pid);
        g_autofree char *cg = g_strdup_printf("proc/%d/cgroup", pid);
        set_file(f, cg, cgroup);
        g_autofree char *sm = g_strdup_printf("proc/%d/statm", pid);
        set_file(f, sm, statm);
}

/* One scan in which each of pids used 0.3 CPU since the last (*utime: their
 * stat's utime, advanced). */
static void scan_at_0_3(Fixture *f, const int *pids, size_t n, unsigned *utime) {
        *utime += (unsigned) (0.3 * one_cpu_ticks());
        for (size_t i = 0; i < n; i++)
                set_stat_field_of(f, pids[i], 14, *utime);
        scan_and_decide(f);
}

/* The stat of a process below MinProcessMemory= (and the 64 MiB of the
 * shared memory rule) is read every scan only when it can count in a group
 * by unit or cgroup: three of 40 MiB, above the member floor (300M / 16),
 * in a service, a login session and no unit. */
static const NpProcEntry *entry_of(Fixture *f, int pid) {
        const GPtrArray *entries = np_proc_table_entries(f->m->proc_table);
        for (guint i = 0; i < entries->len; i++)
                if (((const NpProcEntry *) entries->pdata[i])->pid == pid)
                        return entries->pdata[i];
        return NULL;
}

static void test_stat_floor(Fixture *f, gconstpointer data) {
        f->m->config->mode = NP_MODE_ADVISE;
        f->m->config->min_process_memory = 300u << 20;
        const int pids[] = { 4343, 4444, 4545 };
        const char *const cgroups[] = { "0::/system.slice/db.service\n",
                                        "0::/user.slice/user-1000.slice/session-3.scope\n", "0::/\n" };
        for (unsigned i = 0; i < G_N_ELEMENTS(pids); i++)
                clone_in(f, pids[i], cgroups[i], "787456 10240 1024 5 0 1000 0\n"); /* 40 MiB resident */
        unsigned utime = 200000;
        for (int scan = 0; scan < 3; scan++) {
                scan_at_0_3(f, pids, G_N_ELEMENTS(pids), &utime);
                if (scan == 0)
                        continue; /* new: every one's stat is read */
                for (unsigned i = 0; i < G_N_ELEMENTS(pids); i++) {
                        const NpProcEntry *e = entry_of(f, pids[i]);
                        NpProcess *p = np_manager_process(f->m, pids[i]);
                        g_assert_nonnull(e);
                        g_assert_nonnull(p); /* a record from the member floor up */
                        g_test_message("scan %d: %d (%s) stat read %d, may_group %d, %.2f CPU", scan, pids[i], p->unit,
                                       e->stat_read, p->may_group, p->cpu_usage);
                        g_assert_true(e->stat_read == (i == 0));
                        g_assert_cmpint(p->may_group, ==, i == 0);
                }
        }
        g_assert_cmpfloat(np_manager_process(f->m, 4343)->cpu_usage, >, 0.2);
}

/* Group significance: three processes of one container, none significant
 * alone (80 MiB each against MinProcessMemory=100M, 0.3 CPU each against
 * MinProcessCPU=0.5), are as one: 3 x 20 MiB private plus the 60 MiB they
 * share, once, is 120 MiB, and 0.9 CPU. Three others just like them but
 * sharing 75 MiB of their 80 (3 x 5 + 75 = 90 MiB) are not, though their
 * resident memory sums to 240 MiB. */
static void test_group_significance(Fixture *f, gconstpointer data) {
        f->m->config->mode = NP_MODE_ADVISE;
        f->m->config->min_process_cpu = 0.5;
        const int pids[] = { 4343, 4444, 4545, 5353, 5454, 5555 };
        for (unsigned i = 0; i < G_N_ELEMENTS(pids); i++) {
                bool first = i < 3;
                clone_in(f, pids[i],
                         first ? "0::/machine.slice/libpod-c1.scope/container\n"
                               : "0::/machine.slice/libpod-c2.scope/container\n",
                         first ? "787456 20480 15360 5 0 1000 0\n" : "787456 20480 19200 5 0 1000 0\n");
        }
        unsigned utime = 200000;
        for (int scan = 0; scan < 3; scan++)
                scan_at_0_3(f, pids, G_N_ELEMENTS(pids), &utime);
        for (unsigned i = 0; i < G_N_ELEMENTS(pids); i++) {
                NpProcess *p = np_manager_process(f->m, pids[i]);
                g_assert_nonnull(p);
                g_test_message("%d: %" G_GUINT64_FORMAT " MiB, %" G_GUINT64_FORMAT " MiB shared, %.2f CPU, %s", p->pid,
                               p->rss_bytes >> 20, p->rss_shared_bytes >> 20, p->cpu_usage,
                               p->significant ? p->decision : "not significant");
                g_assert_cmpuint(p->rss_bytes, ==, 80u << 20);
                g_assert_cmpfloat(p->cpu_usage, <, 0.5);
                g_assert_true(p->group_significant == (i < 3));
                g_assert_true(p->significant == (i < 3));
                if (i < 3) {
                        g_assert_true(g_str_has_prefix(
                                p->decision, "with the 3 processes of its group /machine.slice/libpod-c1.scope"));
                        g_assert_cmpstr(p->group, ==, "/machine.slice/libpod-c1.scope");
                }
        }
        /* bigdb itself (1 GiB, no CPU used here) is in neither group */
        NpProcess *big = np_manager_process(f->m, 4242);
        g_assert_false(big && big->group_significant);

        /* the group as the bus shows it (org.numaplaced1.Group) */
        NpGroupView *v = np_group_table_find(f->m->groups, "/machine.slice/libpod-c1.scope");
        g_assert_nonnull(v);
        g_assert_cmpint(v->kind, ==, NP_GROUP_CGROUP);
        g_assert_cmpuint(v->members->len, ==, 3);
        for (unsigned i = 0; i < 3; i++) {
                g_assert_cmpuint(g_array_index(v->members, guint32, i), ==, (guint32) pids[i]);
                g_assert_cmpuint(np_manager_process(f->m, pids[i])->group_id, ==, v->id);
        }
        g_assert_cmpuint(v->mem, >, 0);
        g_assert_cmpuint(v->per_node->len, >, 0);
        g_assert_cmpfloat(v->locality, >=, 0.0);
        g_assert_cmpfloat(v->locality, <=, 1.0);
        g_assert_false(np_mask_empty(v->target));
        g_assert_cmpstr(v->state, ==, "advised");
        g_test_message("group %u %s: %s", v->id, v->name, v->decision);
        g_assert_true(*v->decision && !g_str_has_prefix(v->decision, "with the"));
        g_assert_cmpuint(np_group_table_size(f->m->groups), ==, 1); /* the others are not significant */
        g_assert_true(v->added);
        v->added = false; /* published (what the bus does) */
        GArray *removed = np_group_table_steal_removed(f->m->groups);
        g_array_unref(removed);

        /* the container ends: its group goes with the next round */
        for (unsigned i = 0; i < 3; i++) {
                g_autofree char *rel = g_strdup_printf("proc/%d", pids[i]);
                g_autofree char *dir = fixture_path(f, rel);
                remove_tree(dir);
        }
        unsigned id = v->id;
        scan_and_decide(f);
        g_assert_null(np_group_table_get(f->m->groups, id));
        removed = np_group_table_steal_removed(f->m->groups);
        g_assert_cmpuint(removed->len, ==, 1);
        g_assert_cmpuint(g_array_index(removed, guint32, 0), ==, id);
        g_array_unref(removed);
}

static void test_advice_reserves(Fixture *f, gconstpointer data) {
        g_autoptr(GError) e = NULL;
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        f->m->changes.manager = 0;
        g_autoptr(NpMask) a = np_advice_give(f->m, 2.0, 1ull << 30, 0, &e);
        g_assert_no_error(e);
        g_assert_cmpuint(np_mask_weight(a), ==, 1);
        g_assert_cmpuint(np_reservations_count(f->m->reservations), ==, 1);
        g_assert_true(f->m->changes.manager & NP_MANAGER_RESERVATIONS);
        g_autoptr(NpMask) b = np_advice_give(f->m, 2.0, 1ull << 30, 0, &e);
        g_assert_nonnull(b);
        g_assert_false(np_mask_intersects(a, b));
        for (int i = 0; i < 6; i++) {
                g_autoptr(NpMask) u = np_advice_give(f->m, 0.1, 1 << 20, 1000, &e);
                g_assert_nonnull(u); /* answered, held or not */
        }
        g_assert_cmpuint(np_reservations_count(f->m->reservations), ==, 2 + NP_RESERVE_UNPRIV_MAX);

        unsigned node = (unsigned) np_mask_first(a);
        struct timespec ts;
        g_assert_cmpint(clock_gettime(CLOCK_BOOTTIME, &ts), ==, 0);
        unsigned ticks = (unsigned) ((ts.tv_sec + 1) * sysconf(_SC_CLK_TCK));
        g_autofree char *start = g_strdup_printf(" %u ", ticks);
        edit_bigdb(f, "stat", " 20481 ", start);
        g_autofree char *cpus = g_strdup_printf("Cpus_allowed_list:\t%u-%u", node * 4, node * 4 + 3);
        g_autofree char *mems = g_strdup_printf("Mems_allowed_list:\t%u", node);
        edit_bigdb(f, "status", "^Cpus_allowed_list:.*$", cpus);
        edit_bigdb(f, "status", "^Mems_allowed_list:.*$", mems);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        g_assert_true(p->significant);
        uint64_t there = 0;
        for (guint i = 0; i < p->maps.per_node->len; i++) {
                const NpNodeBytes *nb = &g_array_index(p->maps.per_node, NpNodeBytes, i);
                if (nb->node == node)
                        there = nb->bytes;
        }
        g_assert_cmpuint(there, >, 0);
        f->m->changes.manager = 0;
        np_advice_settle(f->m);
        g_assert_true(f->m->changes.manager & NP_MANAGER_RESERVATIONS);
        const NpReservation *res = np_reservations_get(f->m->reservations, 0);
        g_assert_cmpint(res->pid, ==, 4242);
        g_assert_cmpuint(res->bytes, ==, (1ull << 30) - there);
        g_assert_cmpint(np_reservations_get(f->m->reservations, 1)->pid, ==, 0);

        /* bigdb exits: its reservation ends, the others stay */
        g_autofree char *dir = fixture_path(f, "proc/4242");
        remove_tree(dir);
        g_assert_cmpint(np_scan_run(f->m), ==, 0);
        np_advice_settle(f->m);
        g_assert_cmpuint(np_reservations_count(f->m->reservations), ==, 1 + NP_RESERVE_UNPRIV_MAX);
        g_assert_cmpint(np_reservations_get(f->m->reservations, 0)->pid, ==, 0);
}

/* np_manager_process() only looks up; np_scan_pid() is the step that reads
 * a pid and makes its record (then returns the same one). */
static void test_lookup_is_pure(Fixture *f, gconstpointer data) {
        g_autoptr(GError) e = NULL;

        g_assert_null(np_manager_process(f->m, 812));
        g_assert_cmpuint(g_hash_table_size(f->m->processes), ==, 0);
        g_assert_false(f->m->changes.processes);
        NpProcess *p = np_scan_pid(f->m, 812, &e);
        g_assert_no_error(e);
        g_assert_nonnull(p);
        g_assert_true(np_manager_process(f->m, 812) == p);
        g_assert_true(np_scan_pid(f->m, 812, &e) == p);
        g_assert_cmpuint(g_hash_table_size(f->m->processes), ==, 1);
        g_assert_null(np_scan_pid(f->m, 99999, &e));
        g_assert_error(e, NP_ERROR, NP_ERROR_NO_SUCH_PROCESS);
        g_assert_cmpuint(g_hash_table_size(f->m->processes), ==, 1);
}

static void clear_changes(NpManager *m) {
        m->changes.manager = 0;
        g_hash_table_remove_all(m->changes.nodes);
        m->changes.processes = false;
}

/* The setters record what changed, and only that: a process becoming held
 * or released marks ManagedProcesses of the Manager, a held one's nodes
 * changing marks that of the nodes it joins or leaves;
 * setting the same again marks nothing; a change of significance or a
 * record that goes changes the set of published processes. */
static void test_setters_record_changes(Fixture *f, gconstpointer data) {
        g_autoptr(GError) e = NULL;
        g_autoptr(NpMask) n1 = np_mask_new();
        np_mask_set(n1, 1);
        NpProcess *p = np_scan_pid(f->m, 812, &e);
        g_assert_nonnull(p);
        clear_changes(f->m);
        p->changed = 0;

        np_manager_set_state(f->m, p, NP_PROC_PLACED, n1, 7);
        g_assert_cmpuint(f->m->changes.manager, ==, NP_MANAGER_MANAGED);
        g_assert_cmpuint(GPOINTER_TO_UINT(g_hash_table_lookup(f->m->changes.nodes, GUINT_TO_POINTER(1))), ==,
                         NP_NODE_MANAGED);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, 1);
        g_assert_cmpuint(p->changed, ==, NP_PROCESS_STATE | NP_PROCESS_TARGET_NODES | NP_PROCESS_LAST_PLACED);
        g_assert_true(f->m->changes.processes);

        clear_changes(f->m);
        p->changed = 0;
        np_manager_set_state(f->m, p, NP_PROC_PLACED, n1, 7);
        np_process_set_significant(p, p->significant);
        g_assert_cmpuint(f->m->changes.manager, ==, 0);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, 0);
        g_assert_cmpuint(p->changed, ==, 0);
        g_assert_false(f->m->changes.processes);

        /* placed -> pinned on the same node: still managed there */
        np_manager_set_state(f->m, p, NP_PROC_PINNED, n1, 7);
        g_assert_cmpuint(f->m->changes.manager, ==, 0);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, 0);
        /* pinned on 1 -> 0-1: node 0 gains it */
        g_autoptr(NpMask) n01 = np_mask_new();
        np_mask_set(n01, 0);
        np_mask_set(n01, 1);
        np_manager_set_state(f->m, p, NP_PROC_PINNED, n01, 7);
        g_assert_cmpuint(f->m->changes.manager, ==, 0);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, 1);
        g_assert_cmpuint(GPOINTER_TO_UINT(g_hash_table_lookup(f->m->changes.nodes, GUINT_TO_POINTER(0))), ==,
                         NP_NODE_MANAGED);
        clear_changes(f->m);

        np_manager_set_state(f->m, p, NP_PROC_OBSERVED, NULL, 7);
        g_assert_cmpuint(f->m->changes.manager, ==, NP_MANAGER_MANAGED);
        g_assert_cmpuint(GPOINTER_TO_UINT(g_hash_table_lookup(f->m->changes.nodes, GUINT_TO_POINTER(1))), ==,
                         NP_NODE_MANAGED);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, 2);

        /* observed -> foreign, advised: not held before or after, no list changes */
        clear_changes(f->m);
        np_manager_set_state(f->m, p, NP_PROC_FOREIGN, NULL, 7);
        np_manager_set_state(f->m, p, NP_PROC_ADVISED, n1, 7);
        g_assert_cmpuint(f->m->changes.manager, ==, 0);
        g_assert_cmpuint(g_hash_table_size(f->m->changes.nodes), ==, 0);

        clear_changes(f->m);
        np_process_set_significant(p, !p->significant);
        g_assert_true(f->m->changes.processes);
        clear_changes(f->m);
        g_hash_table_remove(f->m->processes, GINT_TO_POINTER(812));
        g_assert_true(f->m->changes.processes);
}

/* The 4node fixture's nodes with 1.3, 1.3, 1.5 and 1.3 GiB free of 8: 4242
 * (1 GiB, 512 MiB of it on node 2) fits no node alone at
 * TargetUtilization=85% (node 2 lacks about 200 MiB) and needs two. */
static void fill_nodes(Fixture *f) {
        const unsigned free_mb[4] = { 1331, 1331, 1536, 1331 };
        for (unsigned n = 0; n < 4; n++) {
                g_autofree char *rel = g_strdup_printf("sys/devices/system/node/node%u/meminfo", n);
                g_autofree char *text = g_strdup_printf("Node %u MemTotal:        8388608 kB\n"
                                                        "Node %u MemFree:         %u kB\n",
                                                        n, n, free_mb[n] * 1024);
                set_file(f, rel, text);
        }
}

/* Mode=advise, MinProcessCPU=0.3, the nodes filled (fill_nodes()) or not;
 * 4242 seen for the first time at 1 GiB with its CPU time at *utime. */
static NpProcess *first_sight(Fixture *f, bool fill, unsigned *utime) {
        f->m->config->mode = NP_MODE_ADVISE;
        f->m->config->min_process_cpu = 0.3;
        if (fill)
                fill_nodes(f);
        *utime = 1000;
        set_stat(f, *utime, 262144);
        scan_and_decide(f);
        NpProcess *p = np_manager_process(f->m, 4242);
        g_assert_nonnull(p);
        return p;
}

/* A round that would spread a process over two nodes for want of memory
 * that a newcomer waiting for its follow-up holds (its pages may be about
 * to leave) waits for that follow-up; with the newcomer measured (idle: it
 * stays), the process is decided on two nodes. */
static void test_round_waits_for_newcomer(Fixture *f, gconstpointer data) {
        unsigned utime;
        NpProcess *p = first_sight(f, true, &utime);
        g_assert_false(p->significant);
        g_assert_cmpuint(f->m->rounds_deferred, ==, 0); /* nothing to decide yet */

        /* 4242 busy and measured; 4343 (1 GiB) new, its CPU unknown */
        clone_bigdb(f, 4343);
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_true(p->significant);
        g_assert_true(np_process_cpu_settled(p));
        NpProcess *q = np_manager_process(f->m, 4343);
        g_assert_nonnull(q);
        g_assert_false(q->significant);
        g_assert_cmpuint(f->m->awaiting_bytes, ==, 1ull << 30);
        g_assert_cmpuint(f->m->rounds_deferred, ==, 1);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_null(p->target);

        /* 4343 measured idle: it stays where it is, 4242 gets two nodes */
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_false(q->significant);
        g_assert_cmpuint(f->m->awaiting_bytes, ==, 0);
        g_assert_cmpuint(f->m->rounds_deferred, ==, 0);
        g_assert_cmpint(p->state, ==, NP_PROC_ADVISED);
        g_assert_cmpuint(np_mask_weight(p->target), ==, 2);
        g_assert_true(np_mask_test(p->target, 2));
        g_assert_nonnull(strstr(p->decision, "2 alone is too small (memory"));
}

/* A newcomer the kernel's balancing has begun to move is decided at first
 * sight where one node holds it; where none does (here: its CPU use so far,
 * its start, needs several), the round leaves it for its follow-up, and it
 * holds back a process that would be spread for want of the memory it holds
 * as a newcomer waiting for its follow-up does. */
static void test_round_waits_for_kernel_newcomer(Fixture *f, gconstpointer data) {
        unsigned utime;
        NpProcess *p = first_sight(f, true, &utime);
        g_assert_false(p->significant);

        /* 4343 (1 GiB) seen 1.19 s after its start (204.81 s), 10 s of CPU
         * so far, the kernel has moved 39 MiB of it */
        clone_bigdb(f, 4343);
        seen_young(f);
        g_autofree char *task = fixture_path(f, "proc/4343/task/4343");
        g_assert_cmpint(g_mkdir_with_parents(task, 0755), ==, 0);
        g_autofree char *sched = g_build_filename(task, "sched", NULL);
        g_assert_true(g_file_set_contents(sched, "numa_pages_migrated : 10000\n", -1, NULL));
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        NpProcess *q = np_manager_process(f->m, 4343);
        g_assert_nonnull(q);
        g_assert_true(q->significant);
        g_assert_false(np_process_cpu_settled(q));
        g_assert_cmpuint(q->kernel_migrated_bytes, ==, 10000ull * (uint64_t) sysconf(_SC_PAGESIZE));
        g_assert_cmpuint(f->m->awaiting_bytes, ==, 0); /* the scan took it for decided at first sight */
        g_assert_true(p->significant);
        g_assert_cmpuint(f->m->rounds_deferred, ==, 1);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_null(p->target);
}

/* Every CPU of the fixture user/(user + idle) busy over the next interval:
 * adds `user` and `idle` ticks to each cpuN line of proc/stat (and their
 * sums to the cpu line). */
static void cpus_busy(Fixture *f, unsigned user, unsigned idle) {
        g_autofree char *path = fixture_path(f, "proc/stat");
        g_autofree char *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        guint ncpu = 0;
        for (guint i = 0; lines[i]; i++)
                if (g_str_has_prefix(lines[i], "cpu") && g_ascii_isdigit(lines[i][3]))
                        ncpu++;
        GString *out = g_string_new(NULL);
        for (guint i = 0; lines[i]; i++) {
                if (!g_str_has_prefix(lines[i], "cpu")) {
                        g_string_append(out, lines[i]);
                        if (lines[i + 1])
                                g_string_append_c(out, '\n');
                        continue;
                }
                g_auto(GStrv) w = g_strsplit(lines[i], " ", -1);
                guint k = g_str_equal(w[0], "cpu") ? 2 : 1; /* "cpu  176440 ..." */
                unsigned mul = k == 2 ? ncpu : 1;
                g_autofree char *u =
                        g_strdup_printf("%" G_GUINT64_FORMAT, g_ascii_strtoull(w[k], NULL, 10) + user * mul);
                g_autofree char *d =
                        g_strdup_printf("%" G_GUINT64_FORMAT, g_ascii_strtoull(w[k + 3], NULL, 10) + idle * mul);
                g_free(w[k]);
                w[k] = g_steal_pointer(&u);
                g_free(w[k + 3]);
                w[k + 3] = g_steal_pointer(&d);
                g_autofree char *joined = g_strjoinv(" ", w);
                g_string_append(out, joined);
                g_string_append_c(out, '\n');
        }
        g_assert_true(g_file_set_contents(path, out->str, -1, NULL));
        g_string_free(out, TRUE);
}

/* A round that would spread a process over two nodes for want of CPUs
 * that the CPU use of a process starting beside it could make up (not a
 * candidate yet: the ledger spreads its CPU over every node as background)
 * waits for a follow-up scan; the starter measured idle (a start that
 * ended), the process fits one node. */
static void test_round_waits_for_busy_starter(Fixture *f, gconstpointer data) {
        unsigned utime;
        NpProcess *p = first_sight(f, false, &utime);

        /* 4242 busy on 1 CPU; 4343 (80 MiB, below MinProcessMemory=100M)
         * seen 1.19 s after its start with 3 s of CPU time; the machine's 16
         * CPUs 3/4 busy: 11 CPUs besides 4242's, 2.74 a node, for which the
         * other nodes have room for 0.66 each at TargetUtilization=85%, so
         * the node with most of 4242's pages keeps 0.76 of it, more than the
         * 0.6 its 85% leaves: 4242 would get two nodes */
        clone_bigdb(f, 4343);
        set_stat_field_of(f, 4343, 24, 20480);
        set_stat_field_of(f, 4343, 14, 300);
        set_stat_field_of(f, 4343, 15, 0);
        seen_young(f);
        cpus_busy(f, 3, 1);
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        NpProcess *q = np_manager_process(f->m, 4343);
        g_assert_nonnull(q);
        g_assert_false(q->significant);
        g_assert_cmpfloat(q->cpu_usage, >, 2.0);
        g_assert_cmpfloat(q->cpu_usage, <, 3.0);
        g_assert_true(p->significant);
        g_assert_cmpuint(f->m->rounds_deferred, ==, 1);
        g_assert_cmpuint(f->m->scan_interval_usec, ==, NP_FOLLOWUP_USEC);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_null(p->target);

        /* 4343 measured idle: the busy CPUs are 4242's */
        cpus_busy(f, 1, 15);
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_false(q->significant);
        g_assert_cmpuint(f->m->rounds_deferred, ==, 0);
        g_assert_cmpint(p->state, ==, NP_PROC_ADVISED);
        g_assert_cmpuint(np_mask_weight(p->target), ==, 1);
}

/* A round that would spread a process over two nodes for want of memory
 * that a process starting beside it holds, below MinProcessMemory= (no
 * follow-up scan of its own) but from half of it up and not yet measured,
 * waits for the follow-up scan; with that process measured (idle: it stays
 * where it is), the process is decided on two nodes. */
static void test_round_waits_for_small_starter(Fixture *f, gconstpointer data) {
        unsigned utime;
        NpProcess *p = first_sight(f, true, &utime);
        /* node 2, with most of 4242's pages, lacks 205 MiB for it */
        f->m->config->min_process_memory = 512u << 20;

        /* 4343: 300 MiB, idle so far, seen 1.19 s after its start */
        clone_bigdb(f, 4343);
        set_stat_field_of(f, 4343, 24, 76800);
        set_stat_field_of(f, 4343, 14, 0);
        set_stat_field_of(f, 4343, 15, 0);
        seen_young(f);
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        NpProcess *q = np_manager_process(f->m, 4343);
        g_assert_nonnull(q);
        g_assert_false(q->significant);
        g_assert_false(np_process_cpu_settled(q));
        g_assert_true(p->significant);
        g_assert_cmpuint(f->m->awaiting_bytes, ==, 0); /* below MinProcessMemory: no follow-up of its own */
        g_assert_cmpuint(f->m->rounds_deferred, ==, 1);
        g_assert_cmpuint(f->m->scan_interval_usec, ==, NP_FOLLOWUP_USEC);
        g_assert_cmpint(p->state, ==, NP_PROC_OBSERVED);
        g_assert_null(p->target);

        /* 4343 measured idle, its memory held still: 4242 gets two nodes */
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_false(q->significant);
        g_assert_true(np_process_cpu_settled(q));
        g_assert_cmpuint(f->m->rounds_deferred, ==, 0);
        g_assert_cmpint(p->state, ==, NP_PROC_ADVISED);
        g_assert_cmpuint(np_mask_weight(p->target), ==, 2);
        g_assert_nonnull(strstr(p->decision, "2 alone is too small (memory"));
}

/* Newcomers that keep arriving hold a process that needs their memory
 * back NP_DECIDE_WAIT_ROUNDS rounds at most. */
static void test_round_wait_bounded(Fixture *f, gconstpointer data) {
        unsigned utime;
        NpProcess *p = first_sight(f, true, &utime);
        unsigned rounds = 0;
        for (int pid = 5001; p->state != NP_PROC_ADVISED; pid++) {
                g_assert_cmpuint(rounds, <=, NP_DECIDE_WAIT_ROUNDS);
                clone_bigdb(f, pid);
                set_stat(f, utime += one_cpu_ticks(), 262144);
                scan_and_decide(f);
                g_assert_true(p->significant);
                g_assert_cmpuint(f->m->awaiting_bytes, >=, 1ull << 30);
                rounds++;
        }
        g_assert_cmpuint(rounds, ==, NP_DECIDE_WAIT_ROUNDS + 1);
        g_assert_cmpuint(np_mask_weight(p->target), ==, 2);
}

/* A process that fits one node is decided beside a newcomer all the same. */
static void test_round_fits_one(Fixture *f, gconstpointer data) {
        unsigned utime;
        NpProcess *p = first_sight(f, false, &utime);
        clone_bigdb(f, 4343);
        set_stat(f, utime += one_cpu_ticks(), 262144);
        scan_and_decide(f);
        g_assert_cmpuint(f->m->awaiting_bytes, ==, 1ull << 30);
        g_assert_cmpuint(f->m->rounds_deferred, ==, 0);
        g_assert_cmpint(p->state, ==, NP_PROC_ADVISED);
        g_assert_cmpuint(np_mask_weight(p->target), ==, 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, tree, fn) g_test_add(path, Fixture, tree, setup, fn, teardown)
        ADD("/manager/scan-topology-gone", "2node", test_scan_topology_gone);
        ADD("/manager/unreadable-numa-maps", "2node", test_unreadable_numa_maps_keeps_process);
        ADD("/manager/missing-numa-maps", "nonuma", test_missing_numa_maps_keeps_process);
        ADD("/manager/refresh-replaces-details", "4node", test_refresh_replaces_details);
        ADD("/manager/settled-memory", "4node", test_settled_memory);
        ADD("/manager/idle-details", "4node", test_idle_details);
        ADD("/manager/one-node-foreign", "nonuma", test_one_node_foreign);
        ADD("/manager/actions-do-not-scan", "2node", test_actions_do_not_scan);
        ADD("/manager/records-only-for-candidates", "2node", test_records_only_for_candidates);
        ADD("/manager/change-records", "2node", test_change_records);
        ADD("/manager/lookup-is-pure", "2node", test_lookup_is_pure);
        ADD("/manager/setters-record-changes", "2node", test_setters_record_changes);
        ADD("/manager/young-process-cpu", "2node", test_young_process_cpu);
        ADD("/manager/followup", "2node", test_followup);
        ADD("/manager/sized-after-its-start", "4node", test_sized_after_its_start);
        ADD("/manager/newcomer-read-again", "4node", test_newcomer_read_again);
        ADD("/manager/round-waits-for-newcomer", "4node", test_round_waits_for_newcomer);
        ADD("/manager/round-waits-for-kernel-newcomer", "4node", test_round_waits_for_kernel_newcomer);
        ADD("/manager/round-waits-for-busy-starter", "4node", test_round_waits_for_busy_starter);
        ADD("/manager/round-waits-for-small-starter", "4node", test_round_waits_for_small_starter);
        ADD("/manager/round-wait-bounded", "4node", test_round_wait_bounded);
        ADD("/manager/round-fits-one", "4node", test_round_fits_one);
        ADD("/manager/kernel-watch", "4node", test_kernel_watch);
        ADD("/manager/homes-workers-one-node", "4node", test_homes_workers_one_node);
        ADD("/manager/faults-wait-followup", "4node", test_faults_wait_followup);
        ADD("/manager/kernel-watch-until-settled", "4node", test_kernel_watch_until_settled);
        ADD("/manager/peek", "4node", test_peek);
        ADD("/manager/advice-reserves", "4node", test_advice_reserves);
        ADD("/manager/cgroup-group", "4node", test_cgroup_group);
        ADD("/manager/shared-group", "4node", test_shared_group);
        ADD("/manager/shared-small", "4node", test_shared_small);
        ADD("/manager/cgroup-group-shared-once", "4node", test_cgroup_group_shared_once);
        ADD("/manager/group-significance", "4node", test_group_significance);
        ADD("/manager/stat-floor", "4node", test_stat_floor);
        ADD("/manager/cgroup-group-numa-stat", "4node", test_cgroup_group_numa_stat);
        ADD("/manager/cgroup-group-numa-stat-missing", "4node", test_cgroup_group_numa_stat_missing);
#undef ADD
        return g_test_run();
}
