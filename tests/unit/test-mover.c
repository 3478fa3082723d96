/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mover (np-mover.c) on a real sd-event loop with real child processes:
 * moves run on worker threads while the loop keeps running, one at a time
 * in submission order unless they move to different nodes (then side by
 * side, when the owner agrees, and it is asked again while it does not), a
 * second move of the same pid is refused, cancelling a queued or a running
 * (paced) move, stop, and a prepare() failure; the worker runs on the
 * move's CPUs where it may, and without CAP_SYS_NICE unless the move may
 * take shared pages. This machine has one NUMA node, so the plans here are
 * the no-op pair 0 -> 0 (the kernel moves nothing) and the long move is
 * made long by MaxRate pacing of the child's memory on node 0.
 */
#include <errno.h>
#include <glib.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "np-migrate-plan.h"
#include "np-mover.h"
#include "np-test-api.h"
#include "np-thread.h"

#define CHILD_MB 16

static pid_t spawn_child(void) {
        int p[2];
        g_assert_cmpint(pipe(p), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                close(p[0]);
                size_t len = (size_t) CHILD_MB << 20;
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

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000;
}

typedef struct {
        sd_event *event;
        NpMover *mover;
        GPtrArray *order; /* pids in done() order (GINT_TO_POINTER) */
        GArray *results; /* r of each done() */
        int fail_prepare; /* pid whose prepare() fails */
        NpMask *cpus; /* prepare() gives each move these CPUs (NULL: none) */
        bool move_shared; /* prepare() sets mv->move_shared to it */
        bool allow_join; /* what may_start() says */
        unsigned yes_from; /* ... or yes from its yes_from-th call on (0: never) */
        unsigned prepared;
        unsigned asked; /* may_start() calls */
} Fixture;

static int prepare(NpMove *mv, void *userdata) {
        Fixture *f = userdata;
        f->prepared++;
        if (mv->pid == f->fail_prepare)
                return -EPERM;
        mv->plan = g_array_new(FALSE, FALSE, sizeof(NpMovePair));
        /* two no-op pairs: a cancel during the first one's pacing sleep
         * skips the second (after the last pair there is nothing to skip) */
        NpMovePair pair = { 0, 0 };
        g_array_append_val(mv->plan, pair);
        g_array_append_val(mv->plan, pair);
        if (f->cpus)
                mv->cpus = np_mask_copy(f->cpus);
        mv->move_shared = f->move_shared;
        return 0;
}

static bool may_start(const NpMove *mv, void *userdata) {
        Fixture *f = userdata;
        f->asked++;
        return f->allow_join || (f->yes_from && f->asked >= f->yes_from);
}

static void done(NpMove *mv, void *userdata) {
        Fixture *f = userdata;
        g_ptr_array_add(f->order, GINT_TO_POINTER(mv->pid));
        g_array_append_val(f->results, mv->r);
        np_move_free(mv);
}

static void setup(Fixture *f, gconstpointer data) {
        g_autoptr(GError) e = NULL;
        g_assert_cmpint(sd_event_new(&f->event), >=, 0);
        f->order = g_ptr_array_new();
        f->results = g_array_new(FALSE, FALSE, sizeof(int));
        f->mover = np_mover_new(f->event, prepare, may_start, done, f, &e);
        g_assert_no_error(e);
        g_assert_nonnull(f->mover);
}

static void teardown(Fixture *f, gconstpointer data) {
        np_mover_free(f->mover);
        sd_event_unref(f->event);
        g_ptr_array_unref(f->order);
        g_array_unref(f->results);
        np_mask_free(f->cpus);
}

/* Run the loop until n moves are done or the deadline passes. */
static void run_until(Fixture *f, guint n, uint64_t timeout_usec) {
        uint64_t end = now_usec() + timeout_usec;
        while (f->order->len < n && now_usec() < end)
                g_assert_cmpint(sd_event_run(f->event, 100 * 1000), >=, 0);
}

static void test_order_and_busy(Fixture *f, gconstpointer data) {
        pid_t a = spawn_child(), b = spawn_child();

        /* a is paced to take a while: b waits behind it */
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(a, 0, 64u << 20, NULL, NULL)), ==, 0);
        g_assert_true(np_mover_running(f->mover, a));
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(b, 0, 0, NULL, NULL)), ==, 0);
        g_assert_false(np_mover_running(f->mover, b));
        g_assert_cmpuint(np_mover_queued(f->mover), ==, 1);
        /* a second move of a pid in flight is refused, queued or running */
        g_autoptr(NpMove) again = np_move_new(a, 0, 0, NULL, NULL);
        g_assert_cmpint(np_mover_submit(f->mover, again), ==, -EBUSY);
        g_autoptr(NpMove) again_b = np_move_new(b, 0, 0, NULL, NULL);
        g_assert_cmpint(np_mover_submit(f->mover, again_b), ==, -EBUSY);
        g_assert_nonnull(np_mover_find(f->mover, b));

        run_until(f, 2, 30 * G_USEC_PER_SEC);
        g_assert_cmpuint(f->order->len, ==, 2);
        g_assert_cmpint(GPOINTER_TO_INT(f->order->pdata[0]), ==, a);
        g_assert_cmpint(GPOINTER_TO_INT(f->order->pdata[1]), ==, b);
        g_assert_cmpint(g_array_index(f->results, int, 0), ==, 0);
        g_assert_cmpint(g_array_index(f->results, int, 1), ==, 0);
        g_assert_false(np_mover_busy(f->mover));
        reap_child(a);
        reap_child(b);
}

/* A move paced to take 16 s runs on the worker: the loop keeps
 * dispatching (a timer fires repeatedly) and a cancel ends it quickly. */
static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        (*(unsigned *) userdata)++;
        sd_event_source_set_time_relative(s, 50 * 1000);
        return 0;
}

static void test_cancel_running(Fixture *f, gconstpointer data) {
        pid_t a = spawn_child();
        unsigned ticks = 0;
        sd_event_source *tick = NULL;
        g_assert_cmpint(sd_event_add_time_relative(f->event, &tick, CLOCK_MONOTONIC, 50 * 1000, 0, on_tick, &ticks), >=,
                        0);
        g_assert_cmpint(sd_event_source_set_enabled(tick, SD_EVENT_ON), >=, 0);

        /* CHILD_MB MiB at 1 MiB/s */
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(a, 0, 1u << 20, NULL, NULL)), ==, 0);
        uint64_t t0 = now_usec();
        while (now_usec() - t0 < 500 * 1000)
                g_assert_cmpint(sd_event_run(f->event, 100 * 1000), >=, 0);
        g_assert_cmpuint(f->order->len, ==, 0); /* still moving */
        g_assert_cmpuint(ticks, >=, 3); /* and the loop ran meanwhile */
        g_assert_true(np_mover_running(f->mover, a));

        g_assert_cmpint(np_mover_cancel(f->mover, a), ==, 0);
        run_until(f, 1, 10 * G_USEC_PER_SEC);
        g_assert_cmpuint(f->order->len, ==, 1);
        g_assert_cmpint(g_array_index(f->results, int, 0), ==, -ECANCELED);
        g_test_message("cancelled after %.2f s", (double) (now_usec() - t0) / 1e6);
        g_assert_cmpint(np_mover_cancel(f->mover, a), ==, -ENOENT);
        sd_event_source_unref(tick);
        reap_child(a);
}

static void test_cancel_queued_and_stop(Fixture *f, gconstpointer data) {
        pid_t a = spawn_child(), b = spawn_child(), c = spawn_child();

        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(a, 0, 1u << 20, NULL, NULL)), ==, 0);
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(b, 0, 0, NULL, NULL)), ==, 0);
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(c, 0, 0, NULL, NULL)), ==, 0);
        /* a queued move is cancelled at once, without prepare() */
        g_assert_cmpint(np_mover_cancel(f->mover, b), ==, 0);
        g_assert_cmpuint(f->order->len, ==, 1);
        g_assert_cmpint(GPOINTER_TO_INT(f->order->pdata[0]), ==, b);
        g_assert_cmpint(g_array_index(f->results, int, 0), ==, -ECANCELED);
        g_assert_cmpuint(f->prepared, ==, 1);

        /* stop: everything gets its done() before stop returns */
        uint64_t t0 = now_usec();
        np_mover_stop(f->mover);
        g_assert_cmpuint(f->order->len, ==, 3);
        for (guint i = 0; i < 3; i++)
                g_assert_cmpint(g_array_index(f->results, int, i), ==, -ECANCELED);
        g_assert_false(np_mover_busy(f->mover));
        g_test_message("stop took %.3f s", (double) (now_usec() - t0) / 1e6);
        /* still usable */
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(a, 0, 0, NULL, NULL)), ==, 0);
        run_until(f, 4, 10 * G_USEC_PER_SEC);
        g_assert_cmpint(g_array_index(f->results, int, 3), ==, 0);
        reap_child(a);
        reap_child(b);
        reap_child(c);
}

static void test_prepare_fails_and_gone(Fixture *f, gconstpointer data) {
        pid_t a = spawn_child(), b = spawn_child();
        f->fail_prepare = a;
        /* prepare() fails: done() at once with its error, the next one starts */
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(a, 0, 0, NULL, NULL)), ==, 0);
        g_assert_cmpuint(f->order->len, ==, 1);
        g_assert_cmpint(g_array_index(f->results, int, 0), ==, -EPERM);
        /* a process that exits before its move: -ESRCH */
        reap_child(b);
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(b, 0, 0, NULL, NULL)), ==, 0);
        run_until(f, 2, 10 * G_USEC_PER_SEC);
        g_assert_cmpint(g_array_index(f->results, int, 1), ==, -ESRCH);
        reap_child(a);
}

/* A move to `nodes` (NULL: none given), paced at `rate` bytes/s. */
static NpMove *move_to(pid_t pid, uint64_t rate, const char *nodes) {
        NpMove *mv = np_move_new(pid, 0, rate, NULL, NULL);
        if (nodes)
                g_assert_cmpint(np_mask_parse(nodes, &mv->nodes), ==, 0);
        return mv;
}

/* Moves to nodes that none of the running ones moves to start beside them
 * when may_start() agrees; one that shares a node waits, and so does every
 * move queued behind it (they start in submission order). */
static void test_parallel(Fixture *f, gconstpointer data) {
        pid_t a = spawn_child(), b = spawn_child(), c = spawn_child(), d = spawn_child();
        f->allow_join = true;

        /* a (paced, CHILD_MB MiB at 1 MiB/s) to node 0; b to node 1 beside it */
        g_assert_cmpint(np_mover_submit(f->mover, move_to(a, 1u << 20, "0")), ==, 0);
        g_assert_cmpuint(f->asked, ==, 0); /* alone: not asked */
        g_assert_cmpint(np_mover_submit(f->mover, move_to(b, 1u << 20, "1")), ==, 0);
        g_assert_true(np_mover_running(f->mover, a));
        g_assert_true(np_mover_running(f->mover, b));
        g_assert_cmpuint(np_mover_running_count(f->mover), ==, 2);
        g_assert_cmpint(np_mover_running_nth(f->mover, 1)->pid, ==, b);
        g_assert_null(np_mover_running_nth(f->mover, 2));
        g_assert_cmpuint(f->asked, ==, 1);
        /* c shares node 1 with b: it waits, and d (node 3) behind it */
        g_assert_cmpint(np_mover_submit(f->mover, move_to(c, 0, "1-2")), ==, 0);
        g_assert_cmpint(np_mover_submit(f->mover, move_to(d, 0, "3")), ==, 0);
        g_assert_false(np_mover_running(f->mover, c));
        g_assert_false(np_mover_running(f->mover, d));
        g_assert_cmpuint(np_mover_queued(f->mover), ==, 2);
        g_assert_cmpuint(f->asked, ==, 1); /* the mover saw the overlap itself */

        /* b ends: c starts beside a, then d beside both; a is still paced */
        g_assert_cmpint(np_mover_cancel(f->mover, b), ==, 0);
        run_until(f, 3, 10 * G_USEC_PER_SEC);
        g_assert_cmpuint(f->order->len, ==, 3);
        g_assert_cmpint(GPOINTER_TO_INT(f->order->pdata[0]), ==, b);
        g_assert_cmpint(g_array_index(f->results, int, 0), ==, -ECANCELED);
        for (guint i = 1; i < 3; i++) {
                int pid = GPOINTER_TO_INT(f->order->pdata[i]);
                g_assert_true(pid == c || pid == d);
                g_assert_cmpint(g_array_index(f->results, int, i), ==, 0);
        }
        g_assert_true(np_mover_running(f->mover, a));

        /* the owner says no: a move to other nodes waits for a */
        f->allow_join = false;
        g_assert_cmpint(np_mover_submit(f->mover, move_to(b, 0, "2")), ==, 0);
        g_assert_false(np_mover_running(f->mover, b));
        g_assert_cmpuint(np_mover_running_count(f->mover), ==, 1);
        /* nor does one without nodes start beside it, whatever the owner says */
        f->allow_join = true;
        g_assert_cmpint(np_mover_cancel(f->mover, b), ==, 0);
        g_assert_cmpint(np_mover_submit(f->mover, move_to(b, 0, NULL)), ==, 0);
        g_assert_false(np_mover_running(f->mover, b));

        /* stop: the running and the queued get their done() */
        np_mover_stop(f->mover);
        g_assert_cmpuint(f->order->len, ==, 6);
        g_assert_false(np_mover_busy(f->mover));
        reap_child(a);
        reap_child(b);
        reap_child(c);
        reap_child(d);
}

/* A move the owner kept back is offered to it again while the move before
 * it runs (the room it waited for comes while that runs), and starts
 * beside it when the owner agrees. */
static void test_ask_again(Fixture *f, gconstpointer data) {
        pid_t a = spawn_child(), b = spawn_child();
        f->yes_from = 3;

        /* a paced to take CHILD_MB s; b to other nodes, kept back */
        g_assert_cmpint(np_mover_submit(f->mover, move_to(a, 1u << 20, "0")), ==, 0);
        g_assert_cmpint(np_mover_submit(f->mover, move_to(b, 0, "1")), ==, 0);
        g_assert_cmpuint(f->asked, ==, 1);
        g_assert_false(np_mover_running(f->mover, b));

        /* the loop asks again until the owner agrees: b runs and ends, a
         * still runs */
        run_until(f, 1, 10 * G_USEC_PER_SEC);
        g_assert_cmpuint(f->order->len, ==, 1);
        g_assert_cmpint(GPOINTER_TO_INT(f->order->pdata[0]), ==, b);
        g_assert_cmpint(g_array_index(f->results, int, 0), ==, 0);
        g_assert_cmpuint(f->asked, ==, 3);
        g_assert_true(np_mover_running(f->mover, a));

        /* nothing is waiting: nobody is asked any more */
        for (int i = 0; i < 3; i++)
                g_assert_cmpint(sd_event_run(f->event, NP_MOVER_RETRY_USEC), >=, 0);
        g_assert_cmpuint(f->asked, ==, 3);
        np_mover_stop(f->mover);
        g_assert_cmpuint(f->order->len, ==, 2);
        reap_child(a);
        reap_child(b);
}

/* Two paced moves to different nodes run at once, each on a worker of
 * its own, and a stop cancels both. */
static void test_parallel_stop(Fixture *f, gconstpointer data) {
        pid_t a = spawn_child(), b = spawn_child();
        f->allow_join = true;
        g_assert_cmpint(np_mover_submit(f->mover, move_to(a, 1u << 20, "0")), ==, 0);
        g_assert_cmpint(np_mover_submit(f->mover, move_to(b, 1u << 20, "1")), ==, 0);
        g_assert_cmpuint(np_mover_running_count(f->mover), ==, 2);
        uint64_t t0 = now_usec();
        np_mover_stop(f->mover);
        g_test_message("stop of two running moves took %.3f s", (double) (now_usec() - t0) / 1e6);
        g_assert_cmpuint(f->order->len, ==, 2);
        g_assert_cmpint(g_array_index(f->results, int, 0), ==, -ECANCELED);
        g_assert_cmpint(g_array_index(f->results, int, 1), ==, -ECANCELED);
        g_assert_cmpuint(np_mover_running_count(f->mover), ==, 0);
        reap_child(a);
        reap_child(b);
}

/* The mover's owner data is freed with the move. */
static void test_data_freed(Fixture *f, gconstpointer data) {
        pid_t a = spawn_child();
        char *owned = g_strdup("request");
        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(a, 0, 0, owned, g_free)), ==, 0);
        run_until(f, 1, 10 * G_USEC_PER_SEC);
        g_assert_cmpuint(f->order->len, ==, 1);
        reap_child(a);
}

/* The thread id of the worker thread ("np-mover"), or 0. */
static pid_t worker_tid(void) {
        g_autoptr(GDir) d = g_dir_open("/proc/self/task", 0, NULL);
        const char *name;

        g_assert_nonnull(d);
        while ((name = g_dir_read_name(d))) {
                g_autofree char *path = g_strdup_printf("/proc/self/task/%s/comm", name);
                g_autofree char *comm = NULL;

                if (g_file_get_contents(path, &comm, NULL, NULL) && strcmp(g_strchomp(comm), "np-mover") == 0)
                        return (pid_t) atoi(name);
        }
        return 0;
}

/* The effective capabilities of thread `tid` (CapEff: of its status). */
static uint64_t cap_eff(pid_t tid) {
        g_autofree char *path = g_strdup_printf("/proc/self/task/%d/status", (int) tid);
        g_autofree char *s = NULL;

        g_assert_true(g_file_get_contents(path, &s, NULL, NULL));
        const char *l = strstr(s, "\nCapEff:");
        g_assert_nonnull(l);
        return g_ascii_strtoull(l + strlen("\nCapEff:"), NULL, 16);
}

/* The CPUs the worker thread ("np-mover") may run on now, or NULL. */
static NpMask *worker_cpus(void) {
        pid_t tid = worker_tid();
        NpMask *cpus = NULL;

        if (tid <= 0)
                return NULL;
        g_assert_cmpint(np_thread_get_affinity(tid, &cpus), ==, 0);
        return cpus;
}

/* Run a paced move with f->cpus, return the worker's CPUs while it runs
 * and, when capeff is given, its effective capabilities then. */
static NpMask *cpus_of_running_move(Fixture *f, uint64_t *capeff) {
        pid_t a = spawn_child();
        NpMask *got;

        g_assert_cmpint(np_mover_submit(f->mover, np_move_new(a, 0, 1u << 20, NULL, NULL)), ==, 0);
        g_assert_true(np_mover_running(f->mover, a));
        /* the thread names itself, then sets its CPUs, then moves and
         * sleeps for 16 s: wait for the name, then up to 1 s for a change */
        g_autoptr(NpMask) mine = NULL;
        g_assert_cmpint(np_thread_get_affinity(0, &mine), ==, 0);
        uint64_t t0 = now_usec();
        while (!(got = worker_cpus()) && now_usec() - t0 < 5 * G_USEC_PER_SEC)
                g_usleep(10 * 1000);
        g_assert_nonnull(got);
        t0 = now_usec();
        while (np_mask_equal(got, mine) && now_usec() - t0 < G_USEC_PER_SEC) {
                g_usleep(10 * 1000);
                np_mask_free(got);
                got = worker_cpus();
                g_assert_nonnull(got);
        }
        if (capeff) {
                pid_t tid = worker_tid();
                g_assert_cmpint(tid, >, 0);
                *capeff = cap_eff(tid);
        }
        g_assert_cmpint(np_mover_cancel(f->mover, a), ==, 0);
        run_until(f, f->order->len + 1, 10 * G_USEC_PER_SEC);
        reap_child(a);
        return got;
}

/* The worker runs the move on the CPUs of mv->cpus that the daemon may
 * use; on its own CPUs when it may use none of them or none are given. */
static void test_runs_near(Fixture *f, gconstpointer data) {
        g_autoptr(NpMask) mine = NULL;
        g_assert_cmpint(np_thread_get_affinity(0, &mine), ==, 0);
        int last = np_mask_last(mine);
        g_assert_cmpint(last, >=, 0);

        /* one of ours and one that no machine here has */
        f->cpus = np_mask_new();
        np_mask_set(f->cpus, (unsigned) last);
        np_mask_set(f->cpus, 100000);
        g_autoptr(NpMask) near = cpus_of_running_move(f, NULL);
        g_assert_nonnull(near);
        g_autofree char *near_s = np_mask_format(near);
        g_autofree char *want_s = g_strdup_printf("%d", last);
        g_assert_cmpstr(near_s, ==, want_s);

        /* none of ours: where the daemon may */
        np_mask_zero(f->cpus);
        np_mask_set(f->cpus, 100000);
        g_autoptr(NpMask) none = cpus_of_running_move(f, NULL);
        g_assert_nonnull(none);
        g_assert_true(np_mask_equal(none, mine));

        /* no CPUs given: the same */
        g_clear_pointer(&f->cpus, np_mask_free);
        g_autoptr(NpMask) unset = cpus_of_running_move(f, NULL);
        g_assert_nonnull(unset);
        g_assert_true(np_mask_equal(unset, mine));

        /* and the daemon's own thread was never moved */
        g_autoptr(NpMask) after = NULL;
        g_assert_cmpint(np_thread_get_affinity(0, &after), ==, 0);
        g_assert_true(np_mask_equal(after, mine));
        g_assert_cmpuint(f->order->len, ==, 3);
}

/* Unless MoveSharedPages=yes, the worker drops CAP_SYS_NICE from its own
 * effective set before the plan (migrate_pages(2) then moves only the pages
 * the process alone maps); the daemon's other threads keep it, and the
 * move still succeeds. */
static void test_shared_pages_cap(Fixture *f, gconstpointer data) {
        const uint64_t nice = UINT64_C(1) << CAP_SYS_NICE;
        uint64_t eff = 0;

        if (!(cap_eff(gettid()) & nice)) {
                g_test_skip("needs CAP_SYS_NICE (run as root)");
                return;
        }
        /* the worker is confined to one CPU (when there are several) right
         * after it drops the capability: a change to wait for */
        g_autoptr(NpMask) mine = NULL;
        g_assert_cmpint(np_thread_get_affinity(0, &mine), ==, 0);
        f->cpus = np_mask_new();
        np_mask_set(f->cpus, (unsigned) np_mask_last(mine));

        f->move_shared = false;
        g_autoptr(NpMask) c1 = cpus_of_running_move(f, &eff);
        g_assert_nonnull(c1);
        g_assert_cmpuint(eff & nice, ==, 0);
        g_assert_cmpint(np_thread_has_effective_cap(CAP_SYS_NICE), ==, 1);
        g_assert_cmpuint(cap_eff(gettid()) & nice, ==, nice);

        f->move_shared = true;
        g_autoptr(NpMask) c2 = cpus_of_running_move(f, &eff);
        g_assert_nonnull(c2);
        g_assert_cmpuint(eff & nice, ==, nice);

        /* both moves ended by the cancel, not by a failure */
        g_assert_cmpuint(f->results->len, ==, 2);
        g_assert_cmpint(g_array_index(f->results, int, 0), ==, -ECANCELED);
        g_assert_cmpint(g_array_index(f->results, int, 1), ==, -ECANCELED);
}

/* np_thread_drop_effective_cap() changes the calling thread only, and
 * migrate_pages(2) of another process to a node its cpuset allows works
 * without CAP_SYS_NICE. */
static pid_t drop_child;

static gpointer drop_in_thread(gpointer data) {
        long *r = data;
        r[0] = np_thread_drop_effective_cap(CAP_SYS_NICE);
        r[1] = np_thread_has_effective_cap(CAP_SYS_NICE);
        r[2] = np_thread_drop_effective_cap(CAP_SYS_NICE); /* already dropped: 0 */
        r[3] = np_migrate_pair(drop_child, 0, 0);
        return NULL;
}

static void test_drop_cap_thread_only(void) {
        long r[4] = { -1, -1, -1, -1 };

        g_assert_cmpint(np_thread_drop_effective_cap(-1), ==, -EINVAL);
        g_assert_cmpint(np_thread_has_effective_cap(64), ==, -EINVAL);
        if (np_thread_has_effective_cap(CAP_SYS_NICE) != 1) {
                g_test_skip("needs CAP_SYS_NICE (run as root)");
                return;
        }
        drop_child = spawn_child();
        GThread *t = g_thread_new("drop", drop_in_thread, r);
        g_thread_join(t);
        reap_child(drop_child);
        g_assert_cmpint(r[0], ==, 0);
        g_assert_cmpint(r[1], ==, 0);
        g_assert_cmpint(r[2], ==, 0);
        g_assert_cmpint(r[3], ==, 0);
        g_assert_cmpint(np_thread_has_effective_cap(CAP_SYS_NICE), ==, 1);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
#define ADD(path, fn) g_test_add(path, Fixture, NULL, setup, fn, teardown)
        ADD("/mover/order-and-busy", test_order_and_busy);
        ADD("/mover/cancel-running", test_cancel_running);
        ADD("/mover/cancel-queued-and-stop", test_cancel_queued_and_stop);
        ADD("/mover/prepare-fails-and-gone", test_prepare_fails_and_gone);
        ADD("/mover/data-freed", test_data_freed);
        ADD("/mover/parallel", test_parallel);
        ADD("/mover/parallel-stop", test_parallel_stop);
        ADD("/mover/ask-again", test_ask_again);
        ADD("/mover/runs-near", test_runs_near);
        ADD("/mover/shared-pages-cap", test_shared_pages_cap);
#undef ADD
        g_test_add_func("/mover/drop-cap-thread-only", test_drop_cap_thread_only);
        return g_test_run();
}
