/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-maps-refresh, the rule that decides when a significant
 * process's numa_maps is read: sequences of per-scan snapshots (resident
 * memory, significant or not, moved by the daemon) run through the rule the
 * way the manager does, asserting on which scans the read happens and why. */
#include <glib.h>

#include "np-maps-refresh.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

typedef struct {
        uint64_t rss; /* resident memory this scan */
        bool significant;
        bool moved; /* the daemon moved it this scan: read before, mover's after taken */
        NpMapsDue want; /* NP_MAPS_KEEP: no read this scan */
        bool idle; /* its CPU time does not move */
        bool settled; /* all its pages on its one allowed memory node */
} Snap;

/* One scan as the manager runs it. Returns what the rule said. */
static NpMapsDue scan(NpMapsAge *a, const Snap *s, unsigned max_scans, uint64_t clock, unsigned *reads) {
        if (!s->significant) {
                np_maps_age_invalidate(a);
                return NP_MAPS_KEEP;
        }
        /* busy: its CPU time moves every scan (unless the sequence says idle) */
        uint64_t ticks = s->idle ? 7 : clock;
        NpMapsDue d = np_maps_refresh_due(a, s->rss, ticks, max_scans, s->settled);
        if (d != NP_MAPS_KEEP) {
                np_maps_age_read(a, s->rss, ticks, clock);
                (*reads)++;
        } else
                np_maps_age_scan(a);
        if (s->moved) {
                /* before the move the manager reads; after it the mover's read counts */
                np_maps_age_read(a, s->rss, ticks, clock);
                np_maps_age_read(a, s->rss, ticks, clock + 1);
        }
        return d;
}

static void run(const char *name, const Snap *seq, size_t n, unsigned max_scans) {
        NpMapsAge a = { 0 };
        unsigned reads = 0, want_reads = 0;
        for (size_t i = 0; i < n; i++) {
                uint64_t clock = 1000 * (i + 1);
                NpMapsDue d = scan(&a, &seq[i], max_scans, clock, &reads);
                g_test_message("%s: scan %zu rss %" G_GUINT64_FORMAT " -> %s", name, i, seq[i].rss,
                               np_maps_due_to_string(d));
                g_assert_cmpint(d, ==, seq[i].want);
                want_reads += seq[i].want != NP_MAPS_KEEP;
                if (seq[i].significant && (seq[i].want != NP_MAPS_KEEP || seq[i].moved))
                        g_assert_cmpuint(a.read_usec, ==, clock + (seq[i].moved ? 1 : 0));
        }
        g_assert_cmpuint(reads, ==, want_reads);
}

#define SIG(rss, want) \
        { rss, true, false, want, false, false }
#define IDLE(rss, want) \
        { rss, true, false, want, true, false }
#define MOVED(rss, want) \
        { rss, true, true, want, false, false }
#define SETTLED(rss, want) \
        { rss, true, false, want, false, true }
#define GONE \
        { 0, false, false, NP_MAPS_KEEP, false, false }

static void test_steady(void) {
        /* a constant 1 GiB process: read when it becomes significant, then every 4th scan */
        static const Snap seq[] = {
                SIG(GIB, NP_MAPS_DUE_NEW), SIG(GIB, NP_MAPS_KEEP),    SIG(GIB, NP_MAPS_KEEP),
                SIG(GIB, NP_MAPS_KEEP),    SIG(GIB, NP_MAPS_DUE_AGE), SIG(GIB, NP_MAPS_KEEP),
                SIG(GIB, NP_MAPS_KEEP),    SIG(GIB, NP_MAPS_KEEP),    SIG(GIB, NP_MAPS_DUE_AGE),
        };
        run("steady", seq, G_N_ELEMENTS(seq), 4);
}

static void test_rss_changes(void) {
        /* +4% is not enough, +6% is; the base moves to the last read; shrinking counts too */
        static const Snap seq[] = {
                SIG(1000 * MIB, NP_MAPS_DUE_NEW), SIG(1040 * MIB, NP_MAPS_KEEP),
                SIG(1050 * MIB, NP_MAPS_KEEP), /* exactly 5%: not more than 5% */
                SIG(1051 * MIB, NP_MAPS_DUE_RSS), SIG(1100 * MIB, NP_MAPS_KEEP),
                SIG(1104 * MIB, NP_MAPS_DUE_RSS), /* 1104 vs 1051: +5.04% */
                SIG(1040 * MIB, NP_MAPS_DUE_RSS), /* -5.8% */
                SIG(1040 * MIB, NP_MAPS_KEEP),    SIG(1040 * MIB, NP_MAPS_KEEP),
                SIG(1040 * MIB, NP_MAPS_KEEP),    SIG(1040 * MIB, NP_MAPS_KEEP),
                SIG(1040 * MIB, NP_MAPS_KEEP),    SIG(1040 * MIB, NP_MAPS_DUE_AGE), /* 6 scans */
        };
        run("rss-changes", seq, G_N_ELEMENTS(seq), 6);
}

static void test_significance_and_moves(void) {
        static const Snap seq[] = {
                SIG(GIB, NP_MAPS_DUE_NEW),
                SIG(GIB, NP_MAPS_KEEP),
                GONE, /* below the thresholds: nothing read */
                GONE,
                SIG(GIB, NP_MAPS_DUE_NEW), /* significant again: read at once */
                SIG(GIB, NP_MAPS_KEEP),
                MOVED(GIB, NP_MAPS_KEEP), /* moved: fresh from the mover */
                SIG(GIB, NP_MAPS_KEEP),
                SIG(GIB, NP_MAPS_KEEP),
                SIG(GIB, NP_MAPS_DUE_AGE), /* 3 after the move */
        };
        run("significance-and-moves", seq, G_N_ELEMENTS(seq), 3);
}

static void test_every_scan(void) {
        /* LocalityRefreshScans=1 (and 0 taken as 1): the old behaviour */
        static const Snap seq[] = {
                SIG(GIB, NP_MAPS_DUE_NEW),
                SIG(GIB, NP_MAPS_DUE_AGE),
                SIG(GIB, NP_MAPS_DUE_AGE),
        };
        run("every-scan", seq, G_N_ELEMENTS(seq), 1);
        run("every-scan-0", seq, G_N_ELEMENTS(seq), 0);
}

/* A process that does not run: its pages stay where they are, so it is not
 * read again by age however long it sleeps; its memory changing still
 * counts; when it runs again after the bound it is read at once, and then
 * the ordinary bound holds. */
static void test_idle(void) {
        Snap seq[120];
        size_t n = 0;
        seq[n++] = (Snap) IDLE(GIB, NP_MAPS_DUE_NEW);
        for (unsigned i = 1; i < 100; i++)
                seq[n++] = (Snap) IDLE(GIB, NP_MAPS_KEEP); /* 100 scans asleep: never */
        seq[n++] = (Snap) IDLE(GIB + 100 * MIB, NP_MAPS_DUE_RSS); /* memory still counts */
        seq[n++] = (Snap) IDLE(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) IDLE(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) IDLE(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) SIG(GIB + 100 * MIB, NP_MAPS_DUE_AGE); /* runs again, read 4 scans ago: at once */
        seq[n++] = (Snap) SIG(GIB + 100 * MIB, NP_MAPS_KEEP); /* then the ordinary bound, 3 */
        seq[n++] = (Snap) SIG(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) SIG(GIB + 100 * MIB, NP_MAPS_DUE_AGE);
        /* asleep again: it ran after the last read, so one more read by the
         * bound, then none */
        seq[n++] = (Snap) IDLE(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) IDLE(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) IDLE(GIB + 100 * MIB, NP_MAPS_DUE_AGE);
        for (unsigned i = 0; i < 8; i++)
                seq[n++] = (Snap) IDLE(GIB + 100 * MIB, NP_MAPS_KEEP);
        g_assert_cmpuint(n, <=, G_N_ELEMENTS(seq));
        run("idle", seq, n, 3);
}

/* A busy process whose memory is settled (placed on one node, all of it
 * there) is never read by age, however long it runs; its memory changing
 * still counts; once it is no longer settled (its cpuset widened, or a
 * page seen elsewhere) the ordinary bound holds again. */
static void test_settled(void) {
        Snap seq[40];
        size_t n = 0;
        seq[n++] = (Snap) SIG(GIB, NP_MAPS_DUE_NEW);
        for (unsigned i = 1; i < 20; i++)
                seq[n++] = (Snap) SETTLED(GIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) SETTLED(GIB + 100 * MIB, NP_MAPS_DUE_RSS);
        seq[n++] = (Snap) SETTLED(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) SETTLED(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) SETTLED(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) SIG(GIB + 100 * MIB, NP_MAPS_DUE_AGE); /* 4 scans after the read: at once */
        seq[n++] = (Snap) SIG(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) SIG(GIB + 100 * MIB, NP_MAPS_KEEP);
        seq[n++] = (Snap) SIG(GIB + 100 * MIB, NP_MAPS_DUE_AGE);
        g_assert_cmpuint(n, <=, G_N_ELEMENTS(seq));
        run("settled", seq, n, 3);
}

static void test_edges(void) {
        NpMapsAge a = { 0 };
        g_assert_cmpint(np_maps_refresh_due(&a, 0, 0, 10, false), ==, NP_MAPS_DUE_NEW);
        np_maps_age_read(&a, 0, 0, 5);
        g_assert_cmpint(np_maps_refresh_due(&a, 0, 0, 10, false), ==, NP_MAPS_KEEP);
        g_assert_cmpint(np_maps_refresh_due(&a, 4096, 0, 10, false), ==, NP_MAPS_DUE_RSS); /* from nothing */
        /* huge values do not overflow */
        np_maps_age_read(&a, UINT64_C(1) << 56, 0, 6);
        g_assert_cmpint(np_maps_refresh_due(&a, (UINT64_C(1) << 56) + (UINT64_C(1) << 50), 0, 10, false), ==,
                        NP_MAPS_KEEP); /* +1.6% */
        g_assert_cmpint(np_maps_refresh_due(&a, UINT64_C(1) << 55, 0, 10, false), ==, NP_MAPS_DUE_RSS);
        /* invalidate keeps the timestamp: it still dates what is published */
        np_maps_age_invalidate(&a);
        g_assert_cmpuint(a.read_usec, ==, 6);
        g_assert_cmpint(np_maps_refresh_due(&a, UINT64_C(1) << 56, 0, 10, false), ==, NP_MAPS_DUE_NEW);
        /* the scan counter saturates */
        a.valid = true;
        a.scans = UINT32_MAX;
        np_maps_age_scan(&a);
        g_assert_cmpuint(a.scans, ==, UINT32_MAX);
        g_assert_cmpstr(np_maps_due_to_string(NP_MAPS_DUE_AGE), ==, "age");
}

/* The other details (status, threads, cgroup): read when never read, when
 * the process ran or its thread count changed, else every max_scans. */
static void test_details(void) {
        NpDetailsAge a = { 0 };
        g_assert_true(np_details_due(&a, 100, 4, 5)); /* never read */
        np_details_age_read(&a, 100, 4);
        /* idle, same threads: scans 1-4 keep, the 5th reads */
        for (int i = 1; i < 5; i++) {
                g_assert_false(np_details_due(&a, 100, 4, 5));
                np_details_age_scan(&a);
        }
        g_assert_true(np_details_due(&a, 100, 4, 5));
        np_details_age_read(&a, 100, 4);
        g_assert_false(np_details_due(&a, 100, 4, 5));
        g_assert_true(np_details_due(&a, 101, 4, 5)); /* it ran */
        g_assert_true(np_details_due(&a, 100, 5, 5)); /* a thread more */
        g_assert_true(np_details_due(&a, 100, 3, 5)); /* a thread less */
        g_assert_true(np_details_due(&a, 100, 4, 0)); /* 0: every scan */
        g_assert_true(np_details_due(&a, 100, 4, 1));
        np_details_age_invalidate(&a); /* not significant any more */
        g_assert_true(np_details_due(&a, 100, 4, 5));
        a.valid = true;
        a.scans = UINT32_MAX;
        np_details_age_scan(&a);
        g_assert_cmpuint(a.scans, ==, UINT32_MAX);
        g_assert_true(np_details_due(&a, 100, 4, UINT32_MAX));
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/maps-refresh/steady", test_steady);
        g_test_add_func("/maps-refresh/idle", test_idle);
        g_test_add_func("/maps-refresh/settled", test_settled);
        g_test_add_func("/maps-refresh/rss-changes", test_rss_changes);
        g_test_add_func("/maps-refresh/significance-and-moves", test_significance_and_moves);
        g_test_add_func("/maps-refresh/every-scan", test_every_scan);
        g_test_add_func("/maps-refresh/edges", test_edges);
        g_test_add_func("/maps-refresh/details", test_details);
        return g_test_run();
}
