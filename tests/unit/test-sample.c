/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-sample and np-numa-maps: /proc/stat deltas, per-node samples on fixture
 * trees, and the per-process parsers and readers (hostile comm, truncated
 * buffers, huge pages, interleave, vanished pids). */
#include <errno.h>
#include <glib.h>
#include <string.h>
#include <unistd.h>

#include "np-config.h"
#include "np-proc-table.h"
#include "np-numa-maps.h"
#include "np-sample.h"
#include "np-sysroot.h"
#include "np-test-api.h"

#define KIB UINT64_C(1024)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static void use_tree(const char *tree) {
        const char *f = g_getenv("NP_FIXTURES");
        g_assert_nonnull(f);
        g_autofree char *root = g_build_filename(f, tree, NULL);
        np_sysroot_set(root);
}

static NpTopology *load_tree(const char *tree) {
        use_tree(tree);
        g_autoptr(GError) error = NULL;
        NpTopology *t = NULL;
        g_assert_cmpint(np_topology_load(&t, &error), ==, 0);
        g_assert_no_error(error);
        return t;
}

/* ---- /proc/stat ---------------------------------------------------------- */

static void test_proc_stat(void) {
        const char *buf = "cpu  300 0 30 3000 30 0 3 0 0 0\n"
                          "cpu0 100 1 10 1000 10 2 1 4 50 0\n"
                          "cpu2 200 0 20 2000 20 0 2 0 0 0\n"
                          "intr 1 2 3\nctxt 5\nbtime 1\n";
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(NpCpuTicks));
        g_assert_cmpint(np_parse_proc_stat(buf, a), ==, 0);
        g_assert_cmpuint(a->len, ==, 3);
        /* busy = user nice system irq softirq steal; total adds idle iowait */
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 0).busy, ==, 100 + 1 + 10 + 2 + 1 + 4);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 0).total, ==, 118 + 1000 + 10);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 1).busy, ==, 0);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 1).total, ==, 0);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 2).busy, ==, 222);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 2).total, ==, 2242);

        /* reused array: contents replaced, old CPUs gone */
        g_assert_cmpint(np_parse_proc_stat("cpu1 1 2 3 4\n", a), ==, 0);
        g_assert_cmpuint(a->len, ==, 2);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 0).total, ==, 0);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 1).busy, ==, 6);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 1).total, ==, 10);

        /* no trailing newline, high CPU id */
        g_assert_cmpint(np_parse_proc_stat("cpu 1 1 1 1\ncpu300 1 1 1 1 1 1 1 1 1 1 1 1", a), ==, 0);
        g_assert_cmpuint(a->len, ==, 301);
        g_assert_cmpuint(g_array_index(a, NpCpuTicks, 300).busy, ==, 6);

        static const char *bad[] = {
                "",
                "intr 1 2\n",
                "cpu  1 2 3 4\n", /* aggregate only */
                "cpu0 1 2 3\n",
                "cpu0 1 2 x 4\n",
                "cpu0 1 2 -3 4\n",
                "cpu0 1 2 3 4x\n",
                "cpu0\n",
                "cpux 1 2 3 4\ncpu0x 1 2 3 4\n",
                "cpu99999999999 1 2 3 4\n",
                "cpu0 1 2 3 99999999999999999999999\n",
                /* each fits, the sums wrap (busy would exceed total) */
                "cpu1 1 9 0 18446744073709551611\n",
                "cpu0 18446744073709551615 1 0 0\n",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_test_message("bad /proc/stat: '%s'", bad[i]);
                g_assert_cmpint(np_parse_proc_stat(bad[i], a), ==, -EINVAL);
        }
        g_autoptr(GArray) wrong = g_array_new(FALSE, FALSE, sizeof(int));
        g_assert_cmpint(np_parse_proc_stat("cpu0 1 2 3 4\n", wrong), ==, -EINVAL);
}

static const NpNodeSample *sample_of(const GArray *s, unsigned id) {
        for (unsigned i = 0; i < s->len; i++)
                if (g_array_index(s, NpNodeSample, i).id == id)
                        return &g_array_index(s, NpNodeSample, i);
        g_assert_not_reached();
        return NULL;
}

static void test_sample_nodes_4node(void) {
        g_autoptr(NpTopology) t = load_tree("4node");
        g_autoptr(GArray) ticks = g_array_new(FALSE, FALSE, sizeof(NpCpuTicks));
        g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(NpNodeSample));

        g_assert_cmpint(np_sample_nodes(t, true, NULL, ticks, out, NULL), ==, 0);
        g_assert_cmpuint(out->len, ==, 4);
        g_assert_cmpuint(ticks->len, ==, 16);
        /* fixture README: busy = 14062 + 192c, total = busy + 200300 + 918c */
        g_assert_cmpuint(g_array_index(ticks, NpCpuTicks, 5).busy, ==, 14062 + 192 * 5);
        g_assert_cmpuint(g_array_index(ticks, NpCpuTicks, 5).total, ==, 14062 + 192 * 5 + 200300 + 918 * 5);

        static const uint64_t free_kb[] = { 4194304, 6291456, 2097152, 1048576 };
        static const uint64_t inact_kb[] = { 524288, 262144, 1048576, 131072 };
        for (unsigned i = 0; i < 4; i++) {
                const NpNodeSample *s = &g_array_index(out, NpNodeSample, i);
                g_assert_cmpuint(s->id, ==, i);
                g_assert_cmpuint(s->mem_total_bytes, ==, 8 * GIB);
                g_assert_cmpuint(s->mem_free_strict_bytes, ==, free_kb[i] * KIB);
                g_assert_cmpuint(s->mem_free_bytes, ==, (free_kb[i] + inact_kb[i]) * KIB);
                g_assert_cmpfloat(s->cpu_capacity, ==, 4.0);
                g_assert_cmpfloat(s->cpu_busy, ==, 0.0); /* no previous sample */
        }

        /* a previous sample 100 ticks ago per CPU, of which CPU c was busy
         * for 10*(c%4) + 25 ticks: node n busy = (25+35+45+55)/100 = 1.6 */
        g_autoptr(GArray) prev = g_array_copy(ticks);
        for (unsigned c = 0; c < prev->len; c++) {
                NpCpuTicks *p = &g_array_index(prev, NpCpuTicks, c);
                p->busy -= 10 * (c % 4) + 25;
                p->total -= 100;
        }
        g_autoptr(GArray) ticks2 = g_array_new(FALSE, FALSE, sizeof(NpCpuTicks));
        g_assert_cmpint(np_sample_nodes(t, false, prev, ticks2, out, NULL), ==, 0);
        for (unsigned i = 0; i < 4; i++) {
                const NpNodeSample *s = &g_array_index(out, NpNodeSample, i);
                g_assert_cmpfloat_with_epsilon(s->cpu_busy, 1.6, 1e-9);
                g_assert_cmpuint(s->mem_free_bytes, ==, s->mem_free_strict_bytes);
        }

        /* unchanged ticks (a static fixture) give 0, and counters that went
         * backwards (iowait on NOHZ, hotplug) never give a negative or >1 value */
        g_assert_cmpint(np_sample_nodes(t, true, ticks, NULL, out, NULL), ==, 0);
        for (unsigned i = 0; i < 4; i++)
                g_assert_cmpfloat(g_array_index(out, NpNodeSample, i).cpu_busy, ==, 0.0);
        g_autoptr(GArray) weird = g_array_copy(ticks);
        g_array_index(weird, NpCpuTicks, 0).busy += 1000; /* busy went backwards */
        g_array_index(weird, NpCpuTicks, 1).total += 1000; /* total went backwards */
        g_array_index(weird, NpCpuTicks, 2).busy -= 500; /* busy delta > total delta */
        g_array_index(weird, NpCpuTicks, 2).total -= 100;
        g_array_set_size(weird, 3); /* CPUs 3.. unknown */
        g_assert_cmpint(np_sample_nodes(t, true, weird, NULL, out, NULL), ==, 0);
        g_assert_cmpfloat(sample_of(out, 0)->cpu_busy, ==, 1.0);
        g_assert_cmpfloat(sample_of(out, 1)->cpu_busy, ==, 0.0);
        np_sysroot_set(NULL);
}

/* np_sample_gained(): memory in use over all nodes, CPUs busy over all
 * nodes less the daemon's own. */
static void test_sample_gained(void) {
        const uint64_t G = 1ull << 30, M = 1ull << 20;
        NpNodeSample b[] = { { .id = 0, .mem_total_bytes = 4 * G, .mem_free_bytes = 3 * G, .cpu_busy = 0.5 },
                             { .id = 1, .mem_total_bytes = 4 * G, .mem_free_bytes = 4 * G, .cpu_busy = 0.0 } };
        NpNodeSample n[G_N_ELEMENTS(b)];
        g_autoptr(GArray) before = g_array_new(FALSE, FALSE, sizeof(NpNodeSample));
        g_autoptr(GArray) now = g_array_new(FALSE, FALSE, sizeof(NpNodeSample));
        g_array_append_vals(before, b, G_N_ELEMENTS(b));

        memcpy(n, b, sizeof n);
        g_array_append_vals(now, n, G_N_ELEMENTS(n));
        g_assert_false(np_sample_gained(before, now, 270 * M, 0.4, 0));
        /* 100 MB more on each node: 200 MB is not 270 MB */
        g_array_index(now, NpNodeSample, 0).mem_free_bytes -= 100 * M;
        g_array_index(now, NpNodeSample, 1).mem_free_bytes -= 100 * M;
        g_assert_false(np_sample_gained(before, now, 270 * M, 0.4, 0));
        /* 150 MB more on each: 300 MB, spread over the nodes */
        g_array_index(now, NpNodeSample, 0).mem_free_bytes -= 50 * M;
        g_array_index(now, NpNodeSample, 1).mem_free_bytes -= 50 * M;
        g_assert_true(np_sample_gained(before, now, 270 * M, 0.4, 0));
        /* memory given back on one node offsets what another took */
        g_array_index(now, NpNodeSample, 0).mem_free_bytes = 3 * G + 150 * M;
        g_assert_false(np_sample_gained(before, now, 270 * M, 0.4, 0));
        /* one CPU more busy, unless it was the daemon's own */
        g_array_index(now, NpNodeSample, 1).cpu_busy = 1.0;
        g_assert_true(np_sample_gained(before, now, 270 * M, 0.4, 0));
        g_assert_false(np_sample_gained(before, now, 270 * M, 0.4, 0.7));
        g_assert_false(np_sample_gained(before, now, 270 * M, 0, 0));
        /* a process takes 300 MB of a node's pool of 2 MB pages: meminfo
         * counted the pool as used already */
        g_array_index(before, NpNodeSample, 1).n_huge = 1;
        g_array_index(before, NpNodeSample, 1).huge[0] = (NpHugePool){ .page_bytes = 2 * M, .free_pages = 200 };
        g_array_index(now, NpNodeSample, 1).n_huge = 1;
        g_array_index(now, NpNodeSample, 1).huge[0] = (NpHugePool){ .page_bytes = 2 * M, .free_pages = 50 };
        g_assert_true(np_sample_gained(before, now, 270 * M, 0, 0));
        g_assert_false(np_sample_gained(NULL, now, 270 * M, 0.4, 0));
}

static void test_sample_nodes_special(void) {
        g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(NpNodeSample));
        {
                g_autoptr(NpTopology) t = load_tree("cpuonly");
                g_assert_cmpint(np_sample_nodes(t, true, NULL, NULL, out, NULL), ==, 0);
                g_assert_cmpuint(out->len, ==, 2);
                const NpNodeSample *s = sample_of(out, 1);
                g_assert_cmpuint(s->mem_total_bytes, ==, 0);
                g_assert_cmpuint(s->mem_free_bytes, ==, 0);
                g_assert_cmpfloat(s->cpu_capacity, ==, 4.0);
        }
        {
                g_autoptr(NpTopology) t = load_tree("memonly");
                g_assert_cmpint(np_sample_nodes(t, true, NULL, NULL, out, NULL), ==, 0);
                const NpNodeSample *s = sample_of(out, 2);
                g_assert_cmpuint(s->mem_total_bytes, ==, 16 * GIB);
                g_assert_cmpuint(s->mem_free_bytes, ==, 15728640 * KIB);
                g_assert_cmpfloat(s->cpu_capacity, ==, 0.0);
                g_assert_cmpfloat(s->cpu_busy, ==, 0.0);
        }
        {
                g_autoptr(NpTopology) t = load_tree("sparse");
                g_assert_cmpint(np_sample_nodes(t, true, NULL, NULL, out, NULL), ==, 0);
                g_assert_cmpuint(out->len, ==, 5);
                const NpNodeSample *s = &g_array_index(out, NpNodeSample, 4);
                g_assert_cmpuint(s->id, ==, 70);
                g_assert_cmpuint(s->mem_total_bytes, ==, 2 * GIB);
                g_assert_cmpuint(s->mem_free_bytes, ==, (1572864 + 16384) * KIB);
        }
        {
                g_autoptr(NpTopology) t = load_tree("nonuma");
                g_assert_cmpint(np_sample_nodes(t, true, NULL, NULL, out, NULL), ==, 0);
                g_assert_cmpuint(out->len, ==, 1);
                const NpNodeSample *s = sample_of(out, 0);
                g_assert_cmpuint(s->mem_total_bytes, ==, 8159924 * KIB);
                g_assert_cmpuint(s->mem_free_strict_bytes, ==, 6291456 * KIB);
                g_assert_cmpuint(s->mem_free_bytes, ==, (6291456 + 393216) * KIB);
                g_assert_cmpfloat(s->cpu_capacity, ==, 4.0);
        }
        np_sysroot_set(NULL);
}

/* ---- /proc/<pid>/stat ------------------------------------------------------ */

#define STAT_TAIL \
        " S 812 5151 812 34816 5151 4194304 1328 0 37 0 120 33 0 0 20 0 2 0 30215 10485760 512 " \
        "18446744073709551615 94829824806912 94829824826793 140723669278992 0 0 0 0 4096 81923 1 0 0 17 " \
        "1 0 0 3 0 0 94829824842800 94829824844416 94830663180288 140723669281418 140723669281438 " \
        "140723669281438 140723669282795 0\n"

static void test_pid_stat_hostile(void) {
        NpPidStat s;
        const char *line = "5151 (a) (b c)" STAT_TAIL;
        g_assert_cmpint(np_parse_pid_stat(line, &s), ==, 0);
        g_assert_cmpint(s.pid, ==, 5151);
        g_assert_cmpstr(s.comm, ==, "a) (b c");
        g_assert_cmpint(s.state, ==, 'S');
        g_assert_cmpint(s.ppid, ==, 812);
        g_assert_cmpuint(s.flags, ==, 0x400000);
        g_assert_cmpuint(s.utime, ==, 120);
        g_assert_cmpuint(s.stime, ==, 33);
        g_assert_cmpint(s.num_threads, ==, 2);
        g_assert_cmpuint(s.starttime, ==, 30215);
        g_assert_cmpint(s.rss_pages, ==, 512);
        g_assert_cmpint(s.processor, ==, 1);

        /* a kernel thread's name is longer than a task's 15 bytes and is
         * kept whole (NP_COMM_MAX is the buffer, not the kernel's limit) */
        const char *kw = "77 (kworker/u8:2-events_unbound)" STAT_TAIL;
        g_assert_cmpint(np_parse_pid_stat(kw, &s), ==, 0);
        g_assert_cmpstr(s.comm, ==, "kworker/u8:2-events_unbound");
        g_assert_cmpuint(strlen(s.comm), >, NP_TASK_COMM_LEN);

        /* comms that try to look like fields */
        static const struct {
                const char *line, *comm;
        } cases[] = {
                { "7 ()" STAT_TAIL, "" },
                { "7 ())" STAT_TAIL, ")" },
                { "7 (()" STAT_TAIL, "(" },
                { "7 ( )" STAT_TAIL, " " },
                { "7 (x) S 1 2 3)" STAT_TAIL, "x) S 1 2 3" },
                { "7 (new\nline)" STAT_TAIL, "new\nline" },
                { "7 (kworker/u8:0-ext4-rsv-conversion)" STAT_TAIL, "kworker/u8:0-ext4-rsv-conversion" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                NpPidStat t;
                g_assert_cmpint(np_parse_pid_stat(cases[i].line, &t), ==, 0);
                g_assert_cmpstr(t.comm, ==, cases[i].comm);
                g_assert_cmpint(t.ppid, ==, 812);
                g_assert_cmpint(t.processor, ==, 1);
        }

        /* an overlong comm is truncated to NP_COMM_MAX - 1 characters */
        g_autofree char *longcomm = g_strnfill(200, 'x');
        g_autofree char *longline = g_strdup_printf("9 (%s)" STAT_TAIL, longcomm);
        NpPidStat l;
        g_assert_cmpint(np_parse_pid_stat(longline, &l), ==, 0);
        g_assert_cmpuint(strlen(l.comm), ==, NP_COMM_MAX - 1);
        g_assert_cmpint(l.rss_pages, ==, 512);
}

static void test_pid_stat_truncated(void) {
        const char *line = "5151 (a) (b c)" STAT_TAIL;
        /* the processor field (39) ends right before " 0 0 3 0 0 9482..." */
        const char *end39 = strstr(line, " 17 1 ") + strlen(" 17 1");
        size_t need = (size_t) (end39 - line);
        for (size_t n = 0; n < strlen(line); n++) {
                /* an exactly sized heap copy, so a sanitizer catches overreads */
                g_autofree char *cut = g_strndup(line, n);
                NpPidStat s;
                memset(&s, 0x5a, sizeof(s));
                int r = np_parse_pid_stat(cut, &s);
                if (n < need)
                        g_assert_cmpint(r, ==, -EINVAL);
                else
                        g_assert_cmpint(r, ==, 0);
        }
}

static void test_pid_stat_malformed(void) {
        static const char *bad[] = {
                "",
                "\n",
                "5151",
                "5151 ",
                "5151 (",
                "5151 (comm",
                "x (comm)" STAT_TAIL,
                "-1 (comm)" STAT_TAIL,
                "99999999999 (comm)" STAT_TAIL,
                "5151 comm)" STAT_TAIL,
                "5151  (comm)" STAT_TAIL,
                "5151 (comm)S 812 5151",
                "5151 (comm)  S 812 5151 812 34816 5151 4194304 1328 0 37 0 120 33 0 0 20 0 2 0 30215 1 5 1 1 1 1 0 0 "
                "0 0 1 1 1 0 0 17 1 0",
                "5151 (comm) SS 812 5151 812 34816 5151 4194304 1328 0 37 0 120 33 0 0 20 0 2 0 30215 1 5 1 1 1 1 0 0 "
                "0 0 1 1 1 0 0 17 1 0",
                "5151 (comm) S x 5151 812 34816 5151 4194304 1328 0 37 0 120 33 0 0 20 0 2 0 30215 1 5 1 1 1 1 0 0 0 0 "
                "1 1 1 0 0 17 1 0",
                "5151 (comm) S 812 5151 812 34816 5151 -4 1328 0 37 0 120 33 0 0 20 0 2 0 30215 1 5 1 1 1 1 0 0 0 0 1 "
                "1 1 0 0 17 1 0",
                "5151 (comm) S 812 5151 812 34816 5151 4 1328 0 37 0 1x 33 0 0 20 0 2 0 30215 1 5 1 1 1 1 0 0 0 0 1 1 "
                "1 0 0 17 1 0",
                "5151 (comm) S 812 5151 812 34816 5151 4 1328 0 37 0 1 33 0 0 20 0 2 0 30215 1 5 1 1 1 1 0 0 0 0 1 1 1 "
                "0 0 17 99999999999 0",
                "5151 (comm) S 99999999999 5151 812 34816 5151 4 1328 0 37 0 1 33 0 0 20 0 2 0 30215 1 5 1 1 1 1 0 0 0 "
                "0 1 1 1 0 0 17 1 0",
                "5151 (comm) S 812 5151 812 34816 5151 4 1328 0 37 0 1 33 0 0 20 0 2 0 30215 1 99999999999999999999 1 "
                "1 1 1 0 0 0 0 1 1 1 0 0 17 1 0",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                NpPidStat s;
                g_test_message("bad stat: '%s'", bad[i]);
                g_assert_cmpint(np_parse_pid_stat(bad[i], &s), ==, -EINVAL);
        }
        NpPidStat s;
        g_assert_cmpint(np_parse_pid_stat(NULL, &s), ==, -EINVAL);

        /* negative values where the kernel prints signed numbers are fine */
        const char *neg =
                "5 (rt) S 1 5 5 0 -1 4 1 0 0 0 1 2 -3 -4 -51 0 1 0 99 1 -1 1 1 1 1 0 0 0 0 1 1 1 0 0 17 3 50 1";
        g_assert_cmpint(np_parse_pid_stat(neg, &s), ==, 0);
        g_assert_cmpint(s.rss_pages, ==, -1);
        g_assert_cmpint(s.processor, ==, 3);
}

static void test_read_pid_stat_fixture(void) {
        use_tree("4node");
        NpPidStat s;
        g_assert_cmpint(np_read_pid_stat(5151, &s), ==, 0);
        g_assert_cmpstr(s.comm, ==, "a) (b c");
        g_assert_cmpint(s.ppid, ==, 812);

        g_assert_cmpint(np_read_pid_stat(4242, &s), ==, 0);
        g_assert_cmpstr(s.comm, ==, "bigdb");
        g_assert_cmpint(s.state, ==, 'R');
        g_assert_cmpint(s.rss_pages, ==, 262144);
        g_assert_cmpint(s.num_threads, ==, 16);
        g_assert_cmpuint(s.utime, ==, 184467);
        g_assert_cmpuint(s.stime, ==, 9230);
        g_assert_cmpuint(s.starttime, ==, 20481);
        g_assert_cmpint(s.processor, ==, 2);
        g_assert_cmpuint(s.flags & NP_PF_KTHREAD, ==, 0);

        g_assert_cmpint(np_read_pid_stat(15, &s), ==, 0);
        g_assert_cmpstr(s.comm, ==, "ksoftirqd/1");
        g_assert_cmpuint(s.flags & NP_PF_KTHREAD, !=, 0);
        g_assert_cmpint(s.ppid, ==, 2);
        g_assert_cmpint(s.rss_pages, ==, 0);

        g_assert_cmpint(np_read_pid_stat(2, &s), ==, 0);
        g_assert_cmpuint(s.flags & NP_PF_KTHREAD, !=, 0);

        g_assert_cmpint(np_read_pid_stat(99999, &s), ==, -ESRCH);
        g_assert_cmpint(np_read_pid_stat(0, &s), ==, -EINVAL);
        g_assert_cmpint(np_read_pid_stat(-3, &s), ==, -EINVAL);
        np_sysroot_set(NULL);
}

static void test_read_pid_stat_self(void) {
        np_sysroot_set(NULL);
        NpPidStat s;
        g_assert_cmpint(np_read_pid_stat(getpid(), &s), ==, 0);
        g_assert_cmpint(s.pid, ==, getpid());
        g_assert_cmpint(s.ppid, ==, getppid());
        g_assert_cmpint(s.state, ==, 'R');
        g_assert_cmpint(s.rss_pages, >, 0);
        g_assert_cmpint(s.num_threads, >=, 1);
        g_autofree char *comm = NULL;
        g_assert_true(g_file_get_contents("/proc/self/comm", &comm, NULL, NULL));
        g_strchomp(comm);
        g_assert_cmpstr(s.comm, ==, comm);

        g_autoptr(GArray) pids = np_list_pids();
        gboolean found = FALSE;
        for (unsigned i = 0; i < pids->len; i++)
                found |= g_array_index(pids, int, i) == getpid();
        g_assert_true(found);
}

/* ---- /proc/<pid>/status ---------------------------------------------------- */

/* status as the daemon reads it (np-proc-table.h; by path without a table) */
static int read_status(int pid, NpPidStatus *st) {
        g_autofree char *buf = NULL;
        int r = np_proc_table_read_detail(NULL, pid, NP_PROC_STATUS, &buf);
        return r < 0 ? r : np_parse_pid_status(buf, st);
}

static void test_pid_status(void) {
        use_tree("sparse");
        NpPidStatus st;
        g_assert_cmpint(read_status(4242, &st), ==, 0);
        g_assert_cmpuint(st.vm_rss_bytes, ==, GIB);
        g_assert_cmpuint(st.threads, ==, 16);
        g_assert_cmpuint(st.uid, ==, 1000);
        g_autofree char *c = np_mask_format(st.cpus_allowed);
        g_autofree char *m = np_mask_format(st.mems_allowed);
        g_assert_cmpstr(c, ==, "0-9");
        g_assert_cmpstr(m, ==, "0,2,5,9,70");
        np_pid_status_clear(&st);
        g_assert_null(st.cpus_allowed);

        /* a kernel thread has no VmRSS */
        g_assert_cmpint(read_status(2, &st), ==, 0);
        g_assert_cmpuint(st.vm_rss_bytes, ==, 0);
        g_assert_cmpuint(st.threads, ==, 1);
        g_assert_cmpuint(st.uid, ==, 0);
        np_pid_status_clear(&st);

        g_assert_cmpint(read_status(5151, &st), ==, 0);
        g_assert_cmpuint(st.vm_rss_bytes, ==, 2 * MIB);
        g_assert_cmpuint(st.threads, ==, 2);
        np_pid_status_clear(&st);

        g_assert_cmpint(read_status(99999, &st), ==, -ESRCH);
        np_sysroot_set(NULL);

        /* minimal buffers */
        const char *min = "Uid:\t7\t7\t7\t7\nThreads:\t3";
        g_assert_cmpint(np_parse_pid_status(min, &st), ==, 0);
        g_assert_cmpuint(st.uid, ==, 7);
        g_assert_cmpuint(st.threads, ==, 3);
        g_assert_null(st.cpus_allowed);
        g_assert_null(st.mems_allowed);
        np_pid_status_clear(&st);

        const char *empty_lists = "Uid: 0 0 0 0\nThreads: 1\nCpus_allowed_list:\t\nMems_allowed_list:\t0\n";
        g_assert_cmpint(np_parse_pid_status(empty_lists, &st), ==, 0);
        g_assert_nonnull(st.cpus_allowed);
        g_assert_true(np_mask_empty(st.cpus_allowed));
        np_pid_status_clear(&st);

        static const char *bad[] = {
                "",
                "Name:\tx\n",
                "Uid:\t0\t0\t0\t0\n", /* no Threads */
                "Threads:\t1\n", /* no Uid */
                "Uid:\tx\nThreads:\t1\n",
                "Uid:\t0\nThreads:\t1x\n",
                "Uid:\t0\nThreads:\t99999999999\n",
                "Uid:\t0\nThreads:\t1\nVmRSS:\t12\n", /* no unit */
                "Uid:\t0\nThreads:\t1\nVmRSS:\t12 MB\n",
                "Uid:\t0\nThreads:\t1\nVmRSS:\t kB\n",
                "Uid:\t0\nThreads:\t1\nCpus_allowed_list:\t0-3,\n",
                "Uid:\t0\nThreads:\t1\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t3-1\n",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_test_message("bad status: '%s'", bad[i]);
                g_assert_cmpint(np_parse_pid_status(bad[i], &st), ==, -EINVAL);
        }
}

/* ---- /proc/<pid>/numa_maps -------------------------------------------------- */

static void test_numa_maps_fixture(void) {
        use_tree("4node");
        NpNumaMaps m;

        g_assert_cmpint(np_read_numa_maps(4242, &m), ==, 0);
        g_assert_cmpuint(m.total_bytes, ==, GIB);
        g_assert_cmpuint(m.huge_bytes, ==, 0);
        g_assert_cmpuint(m.interleaved_bytes, ==, 256 * MIB);
        g_assert_cmpuint(m.per_node->len, ==, 4);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 0), ==, 256 * MIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 1), ==, 128 * MIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 2), ==, 512 * MIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 3), ==, 128 * MIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 4), ==, 0);
        np_numa_maps_clear(&m);

        /* hugetlb: 512 x 2 MiB on nodes 2,3 and one 1 GiB page on node 3 */
        g_assert_cmpint(np_read_numa_maps(6000, &m), ==, 0);
        g_assert_cmpuint(m.huge_bytes, ==, 2 * GIB);
        g_assert_cmpuint(m.total_bytes, ==, 2 * GIB + 64 * MIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 2), ==, 512 * MIB + 32 * MIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 3), ==, 512 * MIB + GIB + 32 * MIB);
        g_autoptr(NpMask) nodes = np_numa_maps_nodes(&m);
        g_autofree char *s = np_mask_format(nodes);
        g_assert_cmpstr(s, ==, "2-3");
        np_numa_maps_clear(&m);

        /* kernel thread: empty file, no pages */
        g_assert_cmpint(np_read_numa_maps(2, &m), ==, 0);
        g_assert_cmpuint(m.total_bytes, ==, 0);
        g_assert_cmpuint(m.per_node->len, ==, 0);
        np_numa_maps_clear(&m);

        g_assert_cmpint(np_read_numa_maps(99999, &m), ==, -ESRCH);
        np_sysroot_set(NULL);

        use_tree("sparse");
        g_assert_cmpint(np_read_numa_maps(4242, &m), ==, 0);
        g_assert_cmpuint(m.total_bytes, ==, GIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 70), ==, 128 * MIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 5), ==, 256 * MIB);
        g_autoptr(NpMask) sn = np_numa_maps_nodes(&m);
        g_autofree char *ss = np_mask_format(sn);
        g_assert_cmpstr(ss, ==, "0,2,5,9,70");
        g_assert_cmpuint(g_array_index(m.per_node, NpNodeBytes, 4).node, ==, 70);
        np_numa_maps_clear(&m);
        np_sysroot_set(NULL);
}

static void test_numa_maps_parse(void) {
        NpNumaMaps m;
        const char *buf = "7f12a000 interleave:0-3 anon=4096 dirty=4096 active=0 N0=1024 N1=1024 N2=1024 N3=1024 "
                          "kernelpagesize_kB=4\n"
                          "7f200000 default huge anon=2 dirty=2 N0=2 kernelpagesize_kB=2048\n"
                          "7f300000 bind:1 anon=3 dirty=3 N1=3\n" /* no kernelpagesize_kB: 4 KiB */
                          "7f400000 default file=/lib/x.so\n"
                          "7f500000 prefer (many):0-1 anon=1 N1=1 kernelpagesize_kB=4\n"
                          "7f600000 weighted interleave:0-1 anon=2 N0=1 N1=1 kernelpagesize_kB=4\n"
                          "7f700000 default anon=1 N130=1 kernelpagesize_kB=65536\n"
                          "7f800000 default anon=5 N1=2 N1=3\n" /* repeated node adds up */
                          "7f900000 default file=/dev/zero\\040(deleted) dirty=6 N2=6 kernelpagesize_kB=4\n"
                          "7fa00000 default file=/usr/lib/libbig.so mapped=7 N3=7 kernelpagesize_kB=4\n"
                          "7fb00000 bind:0 file=/srv/data mapped=4 N0=4 kernelpagesize_kB=4\n";
        g_assert_cmpint(np_parse_numa_maps(buf, &m), ==, 0);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 0), ==, 1024 * 4 * KIB + 2 * 2 * MIB + 4 * KIB + 4 * 4 * KIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 2), ==, 1024 * 4 * KIB + 6 * 4 * KIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 1), ==,
                         1024 * 4 * KIB + 3 * 4 * KIB + 4 * KIB + 4 * KIB + 5 * 4 * KIB);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 130), ==, 64 * MIB);
        g_assert_cmpuint(m.huge_bytes, ==, 4 * MIB);
        g_assert_cmpuint(m.interleaved_bytes, ==, 4096 * 4 * KIB + 2 * 4 * KIB);
        /* the kernel's balancing: default policy, not huge, not shmem (64 MiB on N130, 5
         * pages on N1, the library's 7 on N3; not the 6 pages of shared anonymous memory) */
        g_assert_cmpuint(m.balanced_bytes, ==, 64 * MIB + 5 * 4 * KIB + 7 * 4 * KIB);
        /* of them, the lines of files (with pages), whose mapping's
         * permissions decide: the library's */
        g_assert_nonnull(m.files);
        g_assert_cmpuint(m.files->len, ==, 1);
        g_assert_cmphex(g_array_index(m.files, NpNumaMapsFile, 0).start, ==, 0x7fa00000);
        g_assert_cmpuint(g_array_index(m.files, NpNumaMapsFile, 0).bytes, ==, 7 * 4 * KIB);
        /* the page cache it maps, whatever the policy: the library's 7
         * pages on N3 and the bound file's 4 on N0; not the shared
         * anonymous memory */
        g_assert_nonnull(m.file_per_node);
        g_assert_cmpuint(m.file_per_node->len, ==, 2);
        g_assert_cmpuint(g_array_index(m.file_per_node, NpNodeBytes, 0).node, ==, 0);
        g_assert_cmpuint(g_array_index(m.file_per_node, NpNodeBytes, 0).bytes, ==, 4 * 4 * KIB);
        g_assert_cmpuint(g_array_index(m.file_per_node, NpNodeBytes, 1).node, ==, 3);
        g_assert_cmpuint(g_array_index(m.file_per_node, NpNodeBytes, 1).bytes, ==, 7 * 4 * KIB);
        NpNumaMaps c;
        np_numa_maps_copy(&m, &c);
        g_assert_true(c.files != m.files && c.files->len == 1);
        g_assert_true(c.file_per_node != m.file_per_node && c.file_per_node->len == 2);
        np_numa_maps_clear(&c);
        uint64_t sum = 0;
        unsigned prev = 0;
        for (unsigned i = 0; i < m.per_node->len; i++) {
                NpNodeBytes *nb = &g_array_index(m.per_node, NpNodeBytes, i);
                g_assert_cmpuint(nb->bytes, >, 0);
                if (i)
                        g_assert_cmpuint(nb->node, >, prev);
                prev = nb->node;
                sum += nb->bytes;
        }
        g_assert_cmpuint(sum, ==, m.total_bytes);
        g_assert_cmpuint(m.per_node->len, ==, 5); /* 0 1 2 3 130 */
        np_numa_maps_clear(&m);
        np_numa_maps_clear(&m); /* idempotent */

        g_assert_cmpint(np_parse_numa_maps("", &m), ==, 0);
        g_assert_cmpuint(m.total_bytes, ==, 0);
        np_numa_maps_clear(&m);
        g_assert_cmpint(np_parse_numa_maps("\n\n7f0 default N0=1", &m), ==, 0);
        g_assert_cmpuint(m.total_bytes, ==, 4 * KIB);
        np_numa_maps_clear(&m);
        /* a file on hugetlbfs (a guest's memory) is not page cache */
        g_assert_cmpint(np_parse_numa_maps("7f0 default file=/dev/hugepages/vm huge dirty=1 N2=1 "
                                           "kernelpagesize_kB=2048\n",
                                           &m),
                        ==, 0);
        g_assert_null(m.file_per_node);
        np_numa_maps_clear(&m);

        static const char *bad[] = {
                "zz default N0=1\n",
                "7f0\n",
                "7f0 default N0=x\n",
                "7f0 default N0=\n",
                "7f0 default N0=-1\n",
                ("7f0 default Nx=1\n" /* not a node count: ignored */ "7f1 default N0=1x\n"),
                "7f0 default N0 =1\n",
                "7f0 default N0=1 kernelpagesize_kB=x\n",
                "7f0 default N0=1 kernelpagesize_kB=0\n",
                "7f0 default N99999999=1\n",
                "7f0 default N0=99999999999999999999\n",
                "7f0 default N0=18014398509481984 kernelpagesize_kB=1048576\n",
                " 7f0 default N0=1\n",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_test_message("bad numa_maps: '%s'", bad[i]);
                memset(&m, 0, sizeof(m));
                g_assert_cmpint(np_parse_numa_maps(bad[i], &m), ==, -EINVAL);
                g_assert_null(m.per_node);
        }
        g_assert_cmpint(np_parse_numa_maps(NULL, &m), ==, -EINVAL);
        g_assert_cmpuint(np_numa_maps_node_bytes(NULL, 0), ==, 0);
}

/* The lines of shmem objects: address, page size, mapmax, pages by node;
 * libraries, private and file mappings are not such lines. */
static void test_numa_maps_shm(void) {
        const char *buf =
                "7f3b40000000 default file=/usr/lib/x86_64-linux-gnu/libc.so.6 mapped=39 mapmax=30 N0=39 "
                "kernelpagesize_kB=4\n"
                "7fac07600000 default file=/dev/zero\\040(deleted) dirty=25600 mapmax=5 active=0 N0=100 N2=25500 "
                "kernelpagesize_kB=4\n"
                "7fac10000000 default file=/SYSV0052e2c1\\040(deleted) huge dirty=4 N1=4 kernelpagesize_kB=2048\n"
                "7fac20000000 default file=/memfd:guest\\040(deleted) N3=2 kernelpagesize_kB=4\n"
                "7fac30000000 default file=/dev/shm/pool N1=1 kernelpagesize_kB=4\n"
                "7fac40000000 default file=/dev/shm/empty\n"
                "7fac50000000 default file=/dev/zero N1=9 kernelpagesize_kB=4\n"
                "7fac60000000 default anon=10 N0=10 kernelpagesize_kB=4\n";
        NpNumaMaps m = { 0 };
        g_assert_cmpint(np_parse_numa_maps(buf, &m), ==, 0);
        g_assert_nonnull(m.shm);
        g_assert_cmpuint(m.shm->len, ==, 4);
        const NpNumaMapsShm *z = &g_array_index(m.shm, NpNumaMapsShm, 0);
        g_assert_cmphex(z->start, ==, 0x7fac07600000ull);
        g_assert_cmpuint(z->page_bytes, ==, 4096);
        g_assert_cmpuint(z->bytes, ==, 25600ull * 4096);
        g_assert_cmpuint(z->mapmax, ==, 5);
        g_assert_cmpuint(z->per_node->len, ==, 2);
        g_assert_cmpuint(g_array_index(z->per_node, NpNodeBytes, 0).node, ==, 0);
        g_assert_cmpuint(g_array_index(z->per_node, NpNodeBytes, 0).bytes, ==, 100ull * 4096);
        g_assert_cmpuint(g_array_index(z->per_node, NpNodeBytes, 1).node, ==, 2);
        const NpNumaMapsShm *sysv = &g_array_index(m.shm, NpNumaMapsShm, 1);
        g_assert_cmpuint(sysv->page_bytes, ==, 2 * MIB);
        g_assert_cmpuint(sysv->bytes, ==, 8 * MIB);
        g_assert_cmpuint(sysv->mapmax, ==, 1);
        g_assert_cmphex(g_array_index(m.shm, NpNumaMapsShm, 2).start, ==, 0x7fac20000000ull);
        g_assert_cmphex(g_array_index(m.shm, NpNumaMapsShm, 3).start, ==, 0x7fac30000000ull);

        NpNumaMaps c = { 0 };
        np_numa_maps_copy(&m, &c);
        np_numa_maps_clear(&m);
        g_assert_nonnull(c.shm);
        g_assert_cmpuint(c.shm->len, ==, 4);
        g_assert_cmpuint(g_array_index(c.shm, NpNumaMapsShm, 0).per_node->len, ==, 2);
        np_numa_maps_clear(&c);

        /* an address too large for 64 bits */
        g_assert_cmpint(np_parse_numa_maps("17fac076000000000 default N0=1\n", &m), ==, -EINVAL);
        g_assert_cmpint(np_parse_numa_maps("7f00 default file=/dev/zero\\040(deleted) mapmax=x N0=1\n", &m), ==,
                        -EINVAL);
}

static void test_numa_maps_truncated(void) {
        g_autofree char *buf = NULL;
        use_tree("4node");
        g_assert_cmpint(np_read_filef(&buf, NULL, "/proc/%d/numa_maps", 6000), ==, 0);
        np_sysroot_set(NULL);
        /* every prefix either parses or is refused, never read out of bounds */
        size_t len = strlen(buf);
        for (size_t n = 0; n <= len; n++) {
                g_autofree char *cut = g_strndup(buf, n);
                NpNumaMaps m;
                int r = np_parse_numa_maps(cut, &m);
                g_assert_true(r == 0 || r == -EINVAL);
                if (r == 0) {
                        g_assert_cmpuint(m.total_bytes, <=, 2 * GIB + 64 * MIB);
                        np_numa_maps_clear(&m);
                }
        }
}

/* ---- pids ---------------------------------------------------------------- */

/* ---- hugetlb ----------------------------------------------------------------- */

static void test_hugetlb_pools_4node(void) {
        g_autoptr(NpTopology) t = load_tree("4node");
        g_assert_cmpuint(t->n_huge_sizes, ==, 2);
        g_assert_cmpuint(t->huge_sizes[0], ==, 2 * MIB);
        g_assert_cmpuint(t->huge_sizes[1], ==, GIB);
        g_autoptr(GArray) out = g_array_new(FALSE, FALSE, sizeof(NpNodeSample));
        NpHugeSample h;
        g_assert_cmpint(np_sample_nodes(t, true, NULL, NULL, out, &h), ==, 0);
        /* fixture README: 2 MiB pools 128/512/256/256 pages, 128 and 512
         * free on nodes 0 and 1; one 1 GiB page on node 3, taken */
        g_assert_true(h.in_use);
        g_assert_cmpuint(h.used_pages, ==, 128 + 512 + 256 + 256 + 1 - 640);
        static const uint64_t free_2m[] = { 128, 512, 0, 0 };
        for (unsigned n = 0; n < 4; n++) {
                const NpNodeSample *s = sample_of(out, n);
                g_assert_cmpuint(s->n_huge, ==, 2);
                g_assert_cmpuint(s->huge[0].page_bytes, ==, 2 * MIB);
                g_assert_cmpuint(s->huge[0].free_pages, ==, free_2m[n]);
                g_assert_cmpuint(s->huge[1].page_bytes, ==, GIB);
                g_assert_cmpuint(s->huge[1].free_pages, ==, 0);
        }
        np_sysroot_set(NULL);

        /* sizes without pages anywhere: no pool, nothing in use */
        g_autoptr(NpTopology) t2 = load_tree("2node");
        g_assert_cmpuint(t2->n_huge_sizes, ==, 2);
        g_assert_cmpint(np_sample_nodes(t2, true, NULL, NULL, out, &h), ==, 0);
        g_assert_false(h.in_use);
        g_assert_cmpuint(h.used_pages, ==, 0);
        g_assert_cmpuint(sample_of(out, 0)->n_huge, ==, 0);
        np_sysroot_set(NULL);

        /* a kernel without hugetlb (no /sys/kernel/mm/hugepages): no sizes */
        g_autoptr(NpTopology) t3 = load_tree("nonuma");
        g_assert_cmpuint(t3->n_huge_sizes, ==, 0);
        np_sysroot_set(NULL);
}

static void test_hugetlb_status(void) {
        uint64_t b = 1;
        g_assert_cmpint(np_parse_status_hugetlb("VmRSS:\t 100 kB\nHugetlbPages:\t  307200 kB\nThreads:\t1\n", &b), ==,
                        0);
        g_assert_cmpuint(b, ==, 300 * MIB);
        g_assert_cmpint(np_parse_status_hugetlb("HugetlbPages:\t       0 kB", &b), ==, 0);
        g_assert_cmpuint(b, ==, 0);
        b = 1;
        g_assert_cmpint(np_parse_status_hugetlb("Name:\tx\nVmRSS:\t1 kB\n", &b), ==, 0); /* older kernel */
        g_assert_cmpuint(b, ==, 0);
        static const char *const bad[] = { "HugetlbPages:\t12\n", "HugetlbPages:\t-1 kB\n", "HugetlbPages:\tkB\n",
                                           "HugetlbPages:\t99999999999999999999 kB\n", "HugetlbPages:\t12 MB\n" };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
                g_assert_cmpint(np_parse_status_hugetlb(bad[i], &b), ==, -EINVAL);

        /* the full parser and the fixture: hugeapp's 2 GiB, none for the others */
        use_tree("4node");
        static const struct {
                int pid;
                uint64_t bytes;
        } want[] = { { 6000, 2 * GIB }, { 4242, 0 }, { 2, 0 } };
        for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
                g_autofree char *buf = NULL;
                g_assert_cmpint(np_read_filef(&buf, NULL, "/proc/%d/status", want[i].pid), ==, 0);
                NpPidStatus st;
                g_assert_cmpint(np_parse_pid_status(buf, &st), ==, 0);
                g_assert_cmpuint(st.hugetlb_bytes, ==, want[i].bytes);
                np_pid_status_clear(&st);
                g_assert_cmpint(np_parse_status_hugetlb(buf, &b), ==, 0);
                g_assert_cmpuint(b, ==, want[i].bytes);
        }
        /* mapped size: stat vsize holds the hugetlb mapping, rss does not */
        NpPidStat ps;
        g_assert_cmpint(np_read_pid_stat(6000, &ps), ==, 0);
        g_assert_cmpuint(ps.vsize, >=, 2 * GIB);
        g_assert_cmpuint((uint64_t) ps.rss_pages * 4096, ==, 64 * MIB);
        np_sysroot_set(NULL);
}

/* numa_maps of hugetlb memory as each kind of mapping shows it: anonymous
 * MAP_HUGETLB, a file on hugetlbfs (a guest's RAM), a memfd with
 * MFD_HUGETLB; by node and page size. */
static void test_hugetlb_numa_maps(void) {
        static const char maps[] =
                "7f4c00000000 default file=/anon_hugepage\\040(deleted) huge anon=150 dirty=150 N0=75 N1=75 "
                "kernelpagesize_kB=2048\n"
                "7f5000000000 bind:1 file=/dev/hugepages/guest-ram huge dirty=100 mapmax=2 N1=100 "
                "kernelpagesize_kB=2048\n"
                "7f6000000000 default file=/memfd:guest\\040(deleted) huge dirty=1 N3=1 kernelpagesize_kB=1048576\n"
                "7f7000000000 default anon=256 dirty=256 N0=256 kernelpagesize_kB=4\n";
        NpNumaMaps m;
        g_assert_cmpint(np_parse_numa_maps(maps, &m), ==, 0);
        g_assert_cmpuint(m.huge_bytes, ==, 250 * 2 * MIB + GIB);
        g_assert_cmpuint(m.total_bytes, ==, m.huge_bytes + MIB);
        g_assert_nonnull(m.huge_per_node);
        g_assert_cmpuint(m.huge_per_node->len, ==, 3);
        const NpHugeBytes *h = (const NpHugeBytes *) (void *) m.huge_per_node->data;
        g_assert_cmpuint(h[0].page_bytes, ==, 2 * MIB);
        g_assert_cmpuint(h[0].node, ==, 0);
        g_assert_cmpuint(h[0].bytes, ==, 150 * MIB);
        g_assert_cmpuint(h[1].node, ==, 1);
        g_assert_cmpuint(h[1].bytes, ==, 350 * MIB);
        g_assert_cmpuint(h[2].page_bytes, ==, GIB);
        g_assert_cmpuint(h[2].node, ==, 3);
        g_assert_cmpuint(np_numa_maps_node_bytes(&m, 0), ==, 151 * MIB);
        NpNumaMaps c;
        np_numa_maps_copy(&m, &c);
        g_assert_cmpuint(c.huge_per_node->len, ==, 3);
        g_assert_true(c.huge_per_node != m.huge_per_node);
        np_numa_maps_clear(&c);
        np_numa_maps_clear(&m);
        np_numa_maps_clear(&m); /* idempotent */

        g_assert_cmpint(np_parse_numa_maps("7f7000000000 default anon=1 N0=1 kernelpagesize_kB=4\n", &m), ==, 0);
        g_assert_null(m.huge_per_node);
        np_numa_maps_clear(&m);
}

/* The proc table counts hugetlb pages against the threshold while a pool
 * is in use: hugeapp (64 MiB resident, 2 GiB in huge pages) reaches 300M;
 * with no pool in use nothing is read and it does not. */
static void test_hugetlb_proc_table(void) {
        use_tree("4node");
        g_autoptr(NpProcTable) tab = np_proc_table_new(64);
        for (int in_use = 1; in_use >= 0; in_use--) {
                np_proc_table_watch_hugetlb(tab, in_use, false, 0);
                g_assert_cmpint(np_proc_table_scan(tab, 300 * MIB, NULL, NULL), >, 0);
                const NpProcEntry *e = np_proc_table_lookup(tab, 6000);
                g_assert_nonnull(e);
                g_assert_cmpuint(e->rss_bytes, ==, 64 * MIB);
                g_assert_cmpuint(e->hugetlb_bytes, ==, in_use ? 2 * GIB : 0);
                g_assert_cmpuint(np_proc_entry_memory(e) >= 300 * MIB, ==, in_use);
                /* bigdb is resident: never looked at */
                g_assert_cmpuint(np_proc_table_lookup(tab, 4242)->hugetlb_bytes, ==, 0);
        }
        NpProcTableStats st;
        np_proc_table_stats(tab, &st);
        g_assert_cmpuint(st.hugetlb_looks, ==, 1);
        np_sysroot_set(NULL);
}

static void test_list_pids(void) {
        use_tree("4node");
        g_autoptr(GArray) pids = np_list_pids();
        static const int want[] = { 1, 2, 15, 812, 4242, 5151, 6000 };
        g_assert_cmpuint(pids->len, ==, G_N_ELEMENTS(want));
        for (unsigned i = 0; i < pids->len; i++)
                g_assert_cmpint(g_array_index(pids, int, i), ==, want[i]);

        np_sysroot_set("/nonexistent-np-root");
        g_autoptr(GArray) none = np_list_pids();
        g_assert_cmpuint(none->len, ==, 0);
        np_sysroot_set(NULL);

        g_assert_cmpint(np_clock_ticks(), >, 0);
}

/* The numa_faults lines of a thread's sched file, as 6.1 printed them for
 * a worker of the numa02 shape in the 4-node VM. */
static void test_sched_numa_faults(void) {
        static const char sched[] =
                "np-workload (170, #threads: 5)\n"
                "numa_pages_migrated                          :                 3077\n"
                "numa_preferred_nid                           :                    0\n"
                "total_numa_faults                            :                31909\n"
                "current_node=0, numa_group_id=0\n"
                "numa_faults node=0 task_private=28805 task_shared=0 group_private=28805 group_shared=0\n"
                "numa_faults node=1 task_private=2624 task_shared=1 group_private=2624 group_shared=2\n"
                "numa_faults node=2 task_private=479 task_shared=0 group_private=40593 group_shared=1\n"
                "numa_faults node=3 task_private=0 task_shared=0 group_private=0 group_shared=0\n";
        g_autoptr(GArray) f = NULL;
        g_assert_cmpint(np_parse_sched_numa_faults(sched, &f), ==, 0);
        g_assert_cmpuint(f->len, ==, 4);
        const NpNodeFaults *x = &g_array_index(f, NpNodeFaults, 1);
        g_assert_cmpuint(x->node, ==, 1);
        g_assert_cmpuint(x->private_faults, ==, 2624);
        g_assert_cmpuint(x->shared_faults, ==, 1);
        g_assert_cmpuint(g_array_index(f, NpNodeFaults, 0).private_faults, ==, 28805);
        g_assert_cmpuint(g_array_index(f, NpNodeFaults, 3).node, ==, 3);

        GArray *none = NULL;
        /* no faults yet, or a kernel without the balancing: no lines */
        g_assert_cmpint(np_parse_sched_numa_faults("numa_preferred_nid : -1\n", &none), ==, -ENOENT);
        g_assert_cmpint(np_parse_sched_numa_faults("", &none), ==, -ENOENT);
        g_assert_null(none);
        /* the group's counts alone are not enough */
        g_assert_cmpint(np_parse_sched_numa_faults("numa_faults node=0 group_private=5\n", &none), ==, -EINVAL);
        g_assert_cmpint(np_parse_sched_numa_faults("numa_faults node=x task_private=1 task_shared=0\n", &none), ==,
                        -EINVAL);
        g_assert_cmpint(np_parse_sched_numa_faults("numa_faults node=0 task_private=-1 task_shared=0\n", &none), ==,
                        -EINVAL);
        g_assert_cmpint(np_parse_sched_numa_faults("numa_faults node=4294967296 task_private=1 task_shared=0\n", &none),
                        ==, -EINVAL);
        g_assert_cmpint(np_parse_sched_numa_faults("numa_faults node=0 task_private=1x task_shared=0\n", &none), ==,
                        -EINVAL);
        g_assert_null(none);
        /* a longer key with the same start is not it */
        g_assert_cmpint(np_parse_sched_numa_faults("numa_faults_x node=0\n", &none), ==, -ENOENT);
        g_assert_cmpint(np_parse_sched_numa_faults(NULL, &none), ==, -EINVAL);
}

/* The numa_pages_migrated line of a thread's sched file (6.1 and 6.18
 * print it the same way). */
static void test_sched_numa_migrated(void) {
        static const char sched[] = "np-workload (171, #threads: 1)\n"
                                    "-------------------------------------------------------------------\n"
                                    "se.exec_start                                :          5261.224040\n"
                                    "mm->numa_scan_seq                            :                    3\n"
                                    "numa_pages_migrated                          :                10077\n"
                                    "numa_preferred_nid                           :                    2\n"
                                    "total_numa_faults                            :                 2930\n"
                                    "current_node=2, numa_group_id=0\n";
        uint64_t pages = 1;
        g_assert_cmpint(np_parse_sched_numa_migrated(sched, &pages), ==, 0);
        g_assert_cmpuint(pages, ==, 10077);
        g_assert_cmpint(np_parse_sched_numa_migrated("numa_pages_migrated:0", &pages), ==, 0);
        g_assert_cmpuint(pages, ==, 0);
        /* absent: a kernel without NUMA balancing or SCHED_DEBUG */
        g_assert_cmpint(np_parse_sched_numa_migrated("se.exec_start : 1.0\n", &pages), ==, -ENOENT);
        g_assert_cmpint(np_parse_sched_numa_migrated("", &pages), ==, -ENOENT);
        /* a longer key with the same start is not it */
        g_assert_cmpint(np_parse_sched_numa_migrated("numa_pages_migrated_x : 5\n", &pages), ==, -ENOENT);
        g_assert_cmpint(np_parse_sched_numa_migrated("numa_pages_migrated : -5\n", &pages), ==, -EINVAL);
        g_assert_cmpint(np_parse_sched_numa_migrated("numa_pages_migrated : 18446744073709551616\n", &pages), ==,
                        -EINVAL);
        g_assert_cmpint(np_parse_sched_numa_migrated("numa_pages_migrated 5\n", &pages), ==, -EINVAL);
        g_assert_cmpint(np_parse_sched_numa_migrated("numa_pages_migrated : 5 pages\n", &pages), ==, -EINVAL);
        g_assert_cmpint(np_parse_sched_numa_migrated(NULL, &pages), ==, -EINVAL);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/sample/proc-stat", test_proc_stat);
        g_test_add_func("/sample/nodes-4node", test_sample_nodes_4node);
        g_test_add_func("/sample/nodes-special", test_sample_nodes_special);
        g_test_add_func("/sample/gained", test_sample_gained);
        g_test_add_func("/sample/sched-numa-migrated", test_sched_numa_migrated);
        g_test_add_func("/sample/sched-numa-faults", test_sched_numa_faults);
        g_test_add_func("/sample/pid-stat-hostile", test_pid_stat_hostile);
        g_test_add_func("/sample/pid-stat-truncated", test_pid_stat_truncated);
        g_test_add_func("/sample/pid-stat-malformed", test_pid_stat_malformed);
        g_test_add_func("/sample/read-pid-stat-fixture", test_read_pid_stat_fixture);
        g_test_add_func("/sample/read-pid-stat-self", test_read_pid_stat_self);
        g_test_add_func("/sample/pid-status", test_pid_status);
        g_test_add_func("/sample/numa-maps-fixture", test_numa_maps_fixture);
        g_test_add_func("/sample/numa-maps-parse", test_numa_maps_parse);
        g_test_add_func("/sample/numa-maps-shm", test_numa_maps_shm);
        g_test_add_func("/sample/numa-maps-truncated", test_numa_maps_truncated);
        g_test_add_func("/sample/list-pids", test_list_pids);
        g_test_add_func("/sample/hugetlb-pools-4node", test_hugetlb_pools_4node);
        g_test_add_func("/sample/hugetlb-status", test_hugetlb_status);
        g_test_add_func("/sample/hugetlb-numa-maps", test_hugetlb_numa_maps);
        g_test_add_func("/sample/hugetlb-proc-table", test_hugetlb_proc_table);
        return g_test_run();
}
