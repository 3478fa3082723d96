/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-proc-table, the cheap tier of process sampling: statm
 * parsing, the fixture trees (no statm there: stat every scan), real child
 * processes read through kept descriptors, a process that runs a new
 * program (its stat read once, with no kept descriptor), a kept descriptor
 * of a process that exited and whose PID a new process got (clone3 with
 * set_tid), the fallback past the descriptor cap and the promotion when
 * room frees up.
 *
 * Real processes are watched through a "farm": a temporary root whose proc/
 * holds symlinks /proc/<pid> for the test's own children only, so the table
 * sees exactly them. Needs root (clone3 set_tid). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "np-proc-table.h"
#include "np-sysroot.h"
#include "np-test-api.h"

#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

/* ---- helpers ------------------------------------------------------------- */

static void use_tree(const char *tree) {
        const char *f = g_getenv("NP_FIXTURES");
        g_assert_nonnull(f);
        g_autofree char *root = g_build_filename(f, tree, NULL);
        np_sysroot_set(root);
}

/* The child runs this binary again (so that under valgrind it is a plain
 * process of its own size, not a copy of the instrumented parent), touches
 * `mb` MiB, says so on `wfd` and waits for SIGKILL; it dies with the test. */
static char *self_exe;

static void child_body(int wfd, unsigned mb) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
                dup2(null, STDOUT_FILENO);
                dup2(null, STDERR_FILENO);
        }
        char fd_arg[16], mb_arg[16];
        snprintf(fd_arg, sizeof fd_arg, "%d", wfd);
        snprintf(mb_arg, sizeof mb_arg, "%u", mb);
        execl(self_exe, "test-proc-table", "--child", fd_arg, mb_arg, (char *) NULL);
        _exit(127);
}

static int child_main(int wfd, unsigned mb) {
        if (mb) {
                size_t sz = (size_t) mb << 20;
                char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED)
                        return 1;
                for (size_t i = 0; i < sz; i += 4096)
                        m[i] = 1;
        }
        char c = 'r';
        if (write(wfd, &c, 1) != 1)
                return 1;
        for (;;)
                pause();
}

/* fork() with the next PID asked for through ns_last_pid (root in the
 * initial PID namespace): how the PID is chosen where clone3(2) is not
 * available, as under valgrind. Another process may take the PID first, so
 * it is tried again, up to 200 times (a parallel test run forks too). */
static pid_t fork_at(int p[2], unsigned mb, pid_t pid_wanted) {
        for (int attempt = 0; attempt < 200; attempt++) {
                FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
                g_assert_nonnull(f);
                fprintf(f, "%d", pid_wanted - 1);
                g_assert_cmpint(fclose(f), ==, 0);
                pid_t r = fork();
                g_assert_cmpint(r, >=, 0);
                if (r == 0) {
                        close(p[0]);
                        child_body(p[1], mb);
                }
                if (r == pid_wanted)
                        return r;
                kill(r, SIGKILL);
                waitpid(r, NULL, 0);
        }
        g_assert_not_reached();
}

/* A child that touches `mb` MiB and waits for SIGKILL. pid_wanted 0: any
 * pid; otherwise exactly that pid (clone3 set_tid, or ns_last_pid). */
static pid_t spawn_child(unsigned mb, pid_t pid_wanted) {
        int p[2];
        g_assert_cmpint(pipe(p), ==, 0);
        struct clone_args a;
        memset(&a, 0, sizeof a);
        a.exit_signal = SIGCHLD;
        pid_t tid = pid_wanted;
        if (pid_wanted) {
                a.set_tid = (uint64_t) (uintptr_t) &tid;
                a.set_tid_size = 1;
        }
        long r = syscall(SYS_clone3, &a, sizeof a);
        if (r < 0 && errno == ENOSYS)
                r = pid_wanted ? fork_at(p, mb, pid_wanted) : fork();
        if (r == 0) {
                close(p[0]);
                child_body(p[1], mb);
        }
        g_assert_cmpint(r, >, 0);
        close(p[1]);
        char c;
        g_assert_cmpint(read(p[0], &c, 1), ==, 1); /* ready: memory touched */
        close(p[0]);
        return (pid_t) r;
}

static void kill_child(pid_t pid, bool reap) {
        g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
        if (reap)
                g_assert_cmpint(waitpid(pid, NULL, 0), ==, pid);
        else {
                /* wait until it is a zombie */
                for (int i = 0; i < 500; i++) {
                        g_autofree char *s = NULL;
                        g_autofree char *path = g_strdup_printf("/proc/%d/stat", pid);
                        if (g_file_get_contents(path, &s, NULL, NULL) && strstr(s, ") Z "))
                                return;
                        g_usleep(2000);
                }
                g_assert_not_reached();
        }
}

typedef struct {
        char *dir; /* the root; dir/proc holds the symlinks */
} Farm;

static Farm *farm_new(void) {
        Farm *f = g_new0(Farm, 1);
        f->dir = g_dir_make_tmp("np-proc-table-XXXXXX", NULL);
        g_assert_nonnull(f->dir);
        g_autofree char *proc = g_build_filename(f->dir, "proc", NULL);
        g_assert_cmpint(g_mkdir(proc, 0755), ==, 0);
        np_sysroot_set(f->dir);
        return f;
}

static void farm_add(Farm *f, pid_t pid) {
        g_autofree char *link = g_strdup_printf("%s/proc/%d", f->dir, pid);
        g_autofree char *target = g_strdup_printf("/proc/%d", pid);
        g_assert_cmpint(symlink(target, link), ==, 0);
}

static void farm_remove(Farm *f, pid_t pid) {
        g_autofree char *link = g_strdup_printf("%s/proc/%d", f->dir, pid);
        g_assert_cmpint(g_unlink(link), ==, 0);
}

static void farm_free(Farm *f) {
        g_autoptr(GDir) d = NULL;
        g_autofree char *proc = g_build_filename(f->dir, "proc", NULL);
        d = g_dir_open(proc, 0, NULL);
        const char *n;
        while (d && (n = g_dir_read_name(d))) {
                g_autofree char *p = g_build_filename(proc, n, NULL);
                g_unlink(p);
        }
        g_rmdir(proc);
        g_rmdir(f->dir);
        g_free(f->dir);
        g_free(f);
        np_sysroot_set(NULL);
}

static const NpProcEntry *find(const NpProcTable *t, int pid) {
        const GPtrArray *a = np_proc_table_entries(t);
        for (guint i = 0; i < a->len; i++) {
                const NpProcEntry *e = a->pdata[i];
                if (e->pid == pid)
                        return e;
        }
        return NULL;
}

static uint64_t starttime_of(pid_t pid) {
        NpPidStat st;
        g_autofree char *saved = g_strdup(np_sysroot_get());
        np_sysroot_set(NULL);
        g_assert_cmpint(np_read_pid_stat(pid, &st), ==, 0);
        np_sysroot_set(saved);
        return st.starttime;
}

/* ---- statm --------------------------------------------------------------- */

static void test_parse_statm(void) {
        uint64_t res = 0, text = 0;
        g_assert_cmpint(np_parse_statm("586 124 101 1 0 56 0\n", &res, &text, NULL, NULL), ==, 0);
        g_assert_cmpuint(res, ==, 124);
        g_assert_cmpuint(text, ==, 1);
        g_assert_cmpint(np_parse_statm("0 0 0 0 0 0 0", &res, &text, NULL, NULL), ==, 0); /* zombie, kernel thread */
        g_assert_cmpuint(res, ==, 0);
        g_assert_cmpint(np_parse_statm("18446744073709551615 7 0 9 0 0 0\n", &res, &text, NULL, NULL), ==, 0);
        g_assert_cmpuint(res, ==, 7);
        g_assert_cmpuint(text, ==, 9);
        static const char *bad[] = {
                "",
                "\n",
                "1 2 3 4 5 6\n",
                "1 2 3 4 5 6 7 8\n",
                "1 2 3 4 5 6 x\n",
                "1  2 3 4 5 6 7\n",
                "-1 2 3 4 5 6 7\n",
                "1 2 3 4 5 6 18446744073709551616\n",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_test_message("bad statm: '%s'", bad[i]);
                g_assert_cmpint(np_parse_statm(bad[i], &res, &text, NULL, NULL), ==, -EINVAL);
        }
}

/* ---- fixture trees ------------------------------------------------------- */

static bool wants_5151(void *userdata, const NpProcEntry *e) {
        (*(int *) userdata)++;
        return e->pid == 5151;
}

static void test_fixture(void) {
        use_tree("2node");
        g_autoptr(NpProcTable) t = np_proc_table_new(64);
        int asked = 0;
        g_assert_cmpint(np_proc_table_scan(t, 300 * MIB, wants_5151, &asked), ==, 4);
        const GPtrArray *a = np_proc_table_entries(t);
        /* kernel threads 2 and 15 are known but never reported; sorted by pid */
        g_assert_cmpint(((NpProcEntry *) a->pdata[0])->pid, ==, 1);
        g_assert_cmpint(((NpProcEntry *) a->pdata[1])->pid, ==, 812);
        g_assert_cmpint(((NpProcEntry *) a->pdata[2])->pid, ==, 4242);
        g_assert_cmpint(((NpProcEntry *) a->pdata[3])->pid, ==, 5151);
        g_assert_nonnull(np_proc_table_lookup(t, 2));
        g_assert_true(np_proc_table_lookup(t, 2)->kthread);
        g_assert_true(np_proc_table_lookup(t, 15)->kthread);
        g_assert_null(np_proc_table_lookup(t, 3));

        const NpProcEntry *db = find(t, 4242);
        g_assert_cmpuint(db->rss_bytes, ==, GIB);
        g_assert_cmpuint(db->starttime, ==, 20481);
        g_assert_cmpstr(db->comm, ==, "bigdb");
        g_assert_cmpuint(db->ticks, ==, 184467 + 9230);
        g_assert_cmpuint(db->threads, ==, 16);
        g_assert_true(db->new_this_scan);
        g_assert_cmpint(db->fd, ==, -1); /* fixtures have no statm */
        g_assert_true(db->no_statm);
        g_assert_cmpstr(find(t, 5151)->comm, ==, "a) (b c");
        g_assert_cmpuint(find(t, 5151)->rss_bytes, ==, 2 * MIB);
        g_assert_cmpuint(find(t, 812)->rss_bytes, ==, 9 * MIB);

        /* second scan: nothing new; without statm every entry is read by stat */
        g_assert_cmpint(np_proc_table_scan(t, 300 * MIB, wants_5151, &asked), ==, 4);
        db = find(t, 4242);
        g_assert_false(db->new_this_scan);
        g_assert_true(db->stat_read);
        g_assert_cmpfloat(db->cpu_usage, ==, 0.0); /* the fixture's ticks do not move */
        NpProcTableStats s;
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.kept, ==, 0);
        g_assert_cmpuint(s.kthreads, ==, 2);
        g_assert_cmpuint(s.beyond_cap, ==, 4);
        g_assert_cmpuint(s.discovered, ==, 6);
        g_assert_cmpuint(s.dropped, ==, 0);

        /* a root without proc/ cannot be listed */
        np_sysroot_set("/nonexistent-np-root");
        g_autoptr(NpProcTable) t2 = np_proc_table_new(64);
        g_assert_cmpint(np_proc_table_scan(t2, 0, NULL, NULL), ==, -ENOENT);
        g_assert_cmpuint(np_proc_table_entries(t2)->len, ==, 0);
        np_sysroot_set(NULL);
}

/* ---- real processes ------------------------------------------------------- */

static bool wants_pid(void *userdata, const NpProcEntry *e) {
        return e->pid == *(pid_t *) userdata;
}

static void test_kept_reads(void) {
        Farm *f = farm_new();
        pid_t small = spawn_child(0, 0), big = spawn_child(64, 0), asked = spawn_child(0, 0);
        farm_add(f, small);
        farm_add(f, big);
        farm_add(f, asked);
        g_autoptr(NpProcTable) t = np_proc_table_new(64);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, wants_pid, &asked), ==, 3);
        for (int i = 0; i < 3; i++) {
                const NpProcEntry *e = np_proc_table_entries(t)->pdata[i];
                g_assert_cmpint(e->fd, >=, 0);
                g_assert_true(e->new_this_scan);
                g_assert_true(e->stat_read); /* a new process is read in full once */
                g_assert_cmpuint(e->starttime, ==, starttime_of(e->pid));
        }
        g_assert_cmpuint(find(t, big)->rss_bytes, >=, 64 * MIB);
        g_assert_cmpuint(find(t, small)->rss_bytes, <, 32 * MIB);
        g_assert_cmpstr(find(t, small)->comm, ==, "test-proc-table");

        g_usleep(20000);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, wants_pid, &asked), ==, 3);
        /* known now: statm only, stat where the memory threshold or the caller asks */
        g_assert_false(find(t, small)->new_this_scan);
        g_assert_false(find(t, small)->stat_read);
        g_assert_true(find(t, big)->stat_read);
        g_assert_true(find(t, asked)->stat_read);
        g_assert_cmpuint(find(t, big)->rss_bytes, >=, 64 * MIB);
        NpProcTableStats s;
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.kept, ==, 3);
        g_assert_cmpuint(s.statm_reads, ==, 3);
        g_assert_cmpuint(s.stat_reads, ==, 5);
        /* those read every scan keep a stat descriptor too, and read it again */
        g_assert_cmpint(find(t, small)->stat_fd, ==, -1);
        int sfd_big = find(t, big)->stat_fd, sfd_asked = find(t, asked)->stat_fd;
        g_assert_cmpint(sfd_big, >=, 0);
        g_assert_cmpint(sfd_asked, >=, 0);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, wants_pid, &asked), ==, 3);
        g_assert_cmpint(find(t, big)->stat_fd, ==, sfd_big);
        g_assert_cmpint(find(t, asked)->stat_fd, ==, sfd_asked);
        g_assert_true(find(t, big)->stat_read);
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.stat_reads, ==, 7);

        /* a process leaves the listing: dropped, its descriptor closed */
        int fd_small = find(t, small)->fd;
        farm_remove(f, small);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, NULL, NULL), ==, 2);
        g_assert_null(np_proc_table_lookup(t, small));
        g_assert_cmpint(fcntl(fd_small, F_GETFD), ==, -1);
        g_assert_cmpint(errno, ==, EBADF);
        /* no longer asked for: its stat descriptor is closed, statm's stays */
        g_assert_cmpint(find(t, asked)->stat_fd, ==, -1);
        g_assert_cmpint(find(t, asked)->fd, >=, 0);
        g_assert_cmpint(fcntl(sfd_asked, F_GETFD), ==, -1);
        g_assert_cmpint(find(t, big)->stat_fd, ==, sfd_big);
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.kept, ==, 2);

        /* a zombie reads as zero resident memory; once reaped it is dropped
         * although the listing (a dangling symlink here) still names it */
        g_assert_false(find(t, big)->exited);
        kill_child(big, false);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, wants_pid, &big), ==, 2);
        g_assert_cmpuint(find(t, big)->rss_bytes, ==, 0);
        /* its stat (read when asked, as for a held process, through the kept
         * descriptor: what it reads is fresh) says it exited */
        g_assert_true(find(t, big)->stat_read);
        g_assert_true(find(t, big)->exited);
        g_assert_false(find(t, asked)->exited);
        g_assert_cmpint(waitpid(big, NULL, 0), ==, big);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, NULL, NULL), ==, 1);
        g_assert_null(np_proc_table_lookup(t, big));
        g_assert_cmpint(fcntl(sfd_big, F_GETFD), ==, -1); /* its stat descriptor closed too */
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.kept, ==, 1);

        kill_child(small, true);
        kill_child(asked, true);
        farm_free(f);
}

/* Until pid's statm shows code mapped (text above 0): its exec is over. */
static void wait_text_mapped(pid_t pid) {
        g_autofree char *path = g_strdup_printf("/proc/%d/statm", pid);
        for (int i = 0; i < 500; i++) {
                g_autofree char *buf = NULL;
                uint64_t resident, text;
                if (g_file_get_contents(path, &buf, NULL, NULL) &&
                    np_parse_statm(buf, &resident, &text, NULL, NULL) == 0 && text > 0)
                        return;
                g_usleep(10000);
        }
        g_error("%s: no code mapped after 5 s", path);
}

/* A small process that runs a new program (exec: its text size changes)
 * has its stat read in that scan (new comm), but through no kept
 * descriptor: it is not read every scan. */
static void test_exec_read_once(void) {
        Farm *f = farm_new();
        int in[2];
        g_assert_cmpint(pipe(in), ==, 0);
        pid_t pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(in[0], STDIN_FILENO);
                close(in[0]);
                close(in[1]);
                execl("/bin/sh", "sh", "-c", "read x; exec sleep 1000", (char *) NULL);
                _exit(127);
        }
        close(in[0]);
        farm_add(f, pid);
        g_autofree char *comm_path = g_strdup_printf("/proc/%d/comm", pid);
        g_autofree char *comm = NULL;
        for (int i = 0; i < 500; i++) { /* until the exec of sh is done */
                g_clear_pointer(&comm, g_free);
                if (g_file_get_contents(comm_path, &comm, NULL, NULL) && strcmp(comm, "sh\n") == 0)
                        break;
                g_usleep(10000);
        }
        g_assert_cmpstr(comm, ==, "sh\n");
        wait_text_mapped(pid);

        g_autoptr(NpProcTable) t = np_proc_table_new(64);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, NULL, NULL), ==, 1);
        g_assert_cmpstr(find(t, pid)->comm, ==, "sh");
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, NULL, NULL), ==, 1);
        g_assert_false(find(t, pid)->stat_read);
        NpProcTableStats s;
        np_proc_table_stats(t, &s);
        uint64_t stat_reads = s.stat_reads;

        g_assert_cmpint(write(in[1], "\n", 1), ==, 1);
        for (int i = 0; i < 500; i++) {
                g_clear_pointer(&comm, g_free);
                if (g_file_get_contents(comm_path, &comm, NULL, NULL) && strcmp(comm, "sleep\n") == 0)
                        break;
                g_usleep(10000);
        }
        g_assert_cmpstr(comm, ==, "sleep\n");
        /* the comm is set before the new program's code is mapped: wait
         * for the code too (a read in that window is the fixture test
         * below), so that the exec is over when the table reads it */
        wait_text_mapped(pid);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, NULL, NULL), ==, 1);
        const NpProcEntry *e = find(t, pid);
        g_assert_true(e->stat_read);
        g_assert_cmpstr(e->comm, ==, "sleep");
        g_assert_cmpint(e->stat_fd, ==, -1);
        g_assert_cmpint(e->fd, >=, 0);
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.stat_reads, ==, stat_reads + 1);
        g_assert_cmpuint(s.kept, ==, 1);
        /* and not again in the next scan */
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, NULL, NULL), ==, 1);
        g_assert_false(find(t, pid)->stat_read);
        g_assert_cmpint(find(t, pid)->stat_fd, ==, -1);

        close(in[1]);
        kill_child(pid, true);
        farm_free(f);
}

/* Rewrite a file in place: a descriptor the table keeps on it reads the new
 * contents (g_file_set_contents() would put a new file in its place). */
static void rewrite(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(write(fd, text, strlen(text)), ==, (ssize_t) strlen(text));
        close(fd);
}

/* One scan of a table holding pid alone: stat read in it or not, and its
 * comm after it (unless NULL). */
static void scan_expect(NpProcTable *t, int pid, gboolean stat_read, const char *comm) {
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, NULL, NULL), ==, 1);
        g_assert_cmpint(find(t, pid)->stat_read, ==, stat_read);
        if (comm)
                g_assert_cmpstr(find(t, pid)->comm, ==, comm);
}

/* The fixture process pid runs `comm` (its stat says so): `window` scans
 * read its statm with no text (no stat read), then the one after the code
 * is mapped reads stat. Every program here has the same 5 pages of text. */
static void exec_through_window(NpProcTable *t, int pid, const char *stat, const char *statm, const char *rest,
                                const char *comm, int window) {
        g_autofree char *st = g_strdup_printf("%d (%s)%s", pid, comm, rest);
        rewrite(stat, st);
        rewrite(statm, "730 470 440 0 0 89 0\n");
        for (int i = 0; i < window; i++)
                scan_expect(t, pid, FALSE, NULL);
        rewrite(statm, "730 470 440 5 0 89 0\n");
        scan_expect(t, pid, TRUE, comm);
}

/* statm read while an exec is under way shows no text (the new mm is in
 * place, the new program's code not yet, its comm set or not): stat is read
 * once the code is there, whatever it was before the window, and only then
 * (CI27 saw the old rule read it twice: at the window, 0 after sh's text,
 * and after it). A fixture process (files, not a live one) makes the window
 * last. */
static void test_exec_after_textless_read(void) {
        Farm *f = farm_new();
        const int pid = 3999999;
        g_autofree char *dir = g_strdup_printf("%s/proc/%d", f->dir, pid);
        g_autofree char *stat = g_build_filename(dir, "stat", NULL);
        g_autofree char *statm = g_build_filename(dir, "statm", NULL);
        const char *rest = " S 1 812 812 0 -1 4194624 1776 0 37 0 25 17 0 0 20 0 1 0 1187 32505856 2304 "
                           "18446744073709551615 1 1 1 0 0 0 0 4096 81923 1 0 0 17 0 0 0 3 0 0 1 1 1 1 1 1 1 0\n";
        g_assert_cmpint(g_mkdir(dir, 0755), ==, 0);
        g_autofree char *st_sh = g_strdup_printf("%d (sh)%s", pid, rest);
        rewrite(stat, st_sh);
        rewrite(statm, "700 450 420 0 0 90 0\n"); /* sh's exec under way: no text yet */

        g_autoptr(NpProcTable) t = np_proc_table_new(64);
        g_assert_cmpint(np_proc_table_scan(t, 32 * MIB, NULL, NULL), ==, 1);
        g_assert_cmpint(find(t, pid)->fd, >=, 0);
        /* the first statm read is in the window too */
        scan_expect(t, pid, FALSE, NULL);
        /* sh's code mapped: stat is read once more, for the comm the exec
         * may not have set yet when the table was first read */
        rewrite(statm, "700 450 420 19 0 90 0\n");
        scan_expect(t, pid, TRUE, "sh");
        scan_expect(t, pid, FALSE, NULL);

        /* read in the window of the next exec (the new comm set or not),
         * twice, then done: stat is read once, when the exec is over */
        exec_through_window(t, pid, stat, statm, rest, "sleep", 2);
        scan_expect(t, pid, FALSE, NULL);
        /* an exec to a program of the same text size, read in its window:
         * still seen */
        exec_through_window(t, pid, stat, statm, rest, "true", 1);

        g_clear_pointer(&t, np_proc_table_free);
        g_unlink(stat);
        g_unlink(statm);
        g_rmdir(dir);
        farm_free(f);
}

/* A kept descriptor of a process that exited never yields the data of the
 * new process that got its PID. */
static void test_pid_reuse_kept_fd(void) {
        Farm *f = farm_new();
        pid_t old = spawn_child(0, 0);
        farm_add(f, old);
        g_autoptr(NpProcTable) t = np_proc_table_new(64);
        /* asked for twice: its stat is kept open too */
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &old), ==, 1);
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &old), ==, 1);
        const NpProcEntry *e = find(t, old);
        int fd = e->fd, sfd = e->stat_fd;
        g_assert_cmpint(fd, >=, 0);
        g_assert_cmpint(sfd, >=, 0);
        uint64_t old_start = e->starttime;
        uint64_t old_rss = e->rss_bytes;
        g_assert_cmpuint(old_rss, <, 16 * MIB);

        kill_child(old, true);
        g_usleep(30000); /* a different start time (clock ticks) for the new one */
        pid_t reused = spawn_child(48, old);
        g_assert_cmpint(reused, ==, old);
        uint64_t new_start = starttime_of(reused);
        g_assert_cmpuint(new_start, !=, old_start);

        /* what the kernel does: the old descriptor reads ESRCH, not the new
         * process (which has 48 MiB resident) */
        char buf[256];
        g_assert_cmpint(pread(fd, buf, sizeof buf, 0), ==, -1);
        g_assert_cmpint(errno, ==, ESRCH);
        g_assert_cmpint(pread(sfd, buf, sizeof buf, 0), ==, -1);
        g_assert_cmpint(errno, ==, ESRCH);
        g_autofree char *path = g_strdup_printf("/proc/%d/statm", reused);
        g_autofree char *now = NULL;
        g_assert_true(g_file_get_contents(path, &now, NULL, NULL));
        uint64_t res, text;
        g_assert_cmpint(np_parse_statm(now, &res, &text, NULL, NULL), ==, 0);
        g_assert_cmpuint(res * 4096, >=, 48 * MIB);

        /* what the table does: the old entry is dropped, the new process is
         * a new entry with its own start time, read in full */
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &old), ==, 1);
        e = find(t, reused);
        g_assert_nonnull(e);
        g_assert_cmpint(fcntl(sfd, F_GETFD), ==, -1); /* the old entry's stat descriptor is closed */
        g_assert_true(e->new_this_scan);
        g_assert_true(e->stat_read);
        g_assert_cmpuint(e->starttime, ==, new_start);
        g_assert_cmpuint(e->rss_bytes, >=, 48 * MIB);
        g_assert_cmpint(e->fd, >=, 0);
        NpProcTableStats s;
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.kept, ==, 1);
        g_assert_cmpuint(s.dropped, ==, 1);
        g_assert_cmpuint(s.discovered, ==, 2);

        kill_child(reused, true);
        farm_free(f);
}

/* status and cgroup of a process read every scan: descriptors kept beside
 * its stat descriptor, closed with it; never another process's data after
 * its PID is reused, whether the reuse comes before or after the open. */
static char *read_detail(NpProcTable *t, int pid, NpProcDetail which, int expect) {
        char *buf = NULL;
        g_assert_cmpint(np_proc_table_read_detail(t, pid, which, &buf), ==, expect);
        g_assert_true(expect == 0 ? buf != NULL : buf == NULL);
        return buf;
}

static void assert_status_of(NpProcTable *t, int pid) {
        g_autofree char *buf = read_detail(t, pid, NP_PROC_STATUS, 0);
        g_autofree char *line = g_strdup_printf("\nPid:\t%d\n", pid);
        g_assert_nonnull(strstr(buf, line));
        g_assert_nonnull(strstr(buf, "Cpus_allowed_list:"));
}

static void test_detail_reads(void) {
        Farm *f = farm_new();
        pid_t asked = spawn_child(0, 0), small = spawn_child(0, 0);
        farm_add(f, asked);
        farm_add(f, small);
        g_autoptr(NpProcTable) t = np_proc_table_new(64);
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &asked), ==, 2);
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &asked), ==, 2);
        const NpProcEntry *e = find(t, asked);
        g_assert_cmpint(e->stat_fd, >=, 0);
        g_assert_cmpint(e->detail_fd[NP_PROC_STATUS], ==, -1);

        /* stat read again now through the kept descriptor, not by path */
        NpPidStat st;
        g_assert_cmpint(np_proc_table_read_stat(t, asked, &st), ==, 0);
        g_assert_cmpint(st.pid, ==, asked);
        g_assert_cmpuint(st.starttime, ==, e->starttime);
        g_assert_cmpint(np_proc_table_read_stat(t, small, &st), ==, -ENOENT);
        g_assert_cmpint(np_proc_table_read_stat(t, getpid(), &st), ==, -ENOENT);
        g_assert_cmpint(np_proc_table_read_stat(NULL, asked, &st), ==, -ENOENT);

        /* kept at the first read, the same descriptor for the next */
        assert_status_of(t, asked);
        int sfd = e->detail_fd[NP_PROC_STATUS];
        g_assert_cmpint(sfd, >=, 0);
        assert_status_of(t, asked);
        g_assert_cmpint(e->detail_fd[NP_PROC_STATUS], ==, sfd);
        g_autofree char *cg = read_detail(t, asked, NP_PROC_CGROUP, 0);
        g_autofree char *cg_path = g_strdup_printf("/proc/%d/cgroup", asked);
        g_autofree char *cg_real = NULL;
        g_assert_true(g_file_get_contents(cg_path, &cg_real, NULL, NULL));
        g_assert_cmpstr(cg, ==, cg_real);
        int cfd = e->detail_fd[NP_PROC_CGROUP];
        g_assert_cmpint(cfd, >=, 0);

        /* not read every scan, unknown to the table, or no pid: by path */
        assert_status_of(t, small);
        g_assert_cmpint(find(t, small)->detail_fd[NP_PROC_STATUS], ==, -1);
        g_free(read_detail(t, getpid(), NP_PROC_STATUS, -ESRCH)); /* not in the farm */
        g_free(read_detail(t, 0, NP_PROC_STATUS, -EINVAL));
        g_free(read_detail(NULL, -1, NP_PROC_CGROUP, -EINVAL));

        /* no longer asked for: closed with its stat descriptor */
        g_assert_cmpint(np_proc_table_scan(t, GIB, NULL, NULL), ==, 2);
        e = find(t, asked);
        g_assert_cmpint(e->stat_fd, ==, -1);
        g_assert_cmpint(e->detail_fd[NP_PROC_STATUS], ==, -1);
        g_assert_cmpint(e->detail_fd[NP_PROC_CGROUP], ==, -1);
        g_assert_cmpint(fcntl(sfd, F_GETFD), ==, -1);
        g_assert_cmpint(fcntl(cfd, F_GETFD), ==, -1);
        assert_status_of(t, asked); /* by path */
        g_assert_cmpint(e->detail_fd[NP_PROC_STATUS], ==, -1);

        /* reuse after the open: the kept descriptor says gone, not the new one */
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &asked), ==, 2);
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &asked), ==, 2);
        assert_status_of(t, asked);
        g_assert_cmpint(find(t, asked)->detail_fd[NP_PROC_STATUS], >=, 0);
        kill_child(asked, true);
        g_usleep(30000);
        pid_t reused = spawn_child(0, asked);
        g_assert_cmpint(reused, ==, asked);
        g_free(read_detail(t, asked, NP_PROC_STATUS, -ESRCH));
        g_assert_cmpint(np_proc_table_read_stat(t, asked, &st), ==, -ESRCH);
        /* the scan makes it a new entry; two scans give it a stat descriptor */
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &asked), ==, 2);
        g_assert_true(find(t, asked)->new_this_scan);
        g_assert_cmpint(np_proc_table_scan(t, GIB, wants_pid, &asked), ==, 2);
        assert_status_of(t, asked);
        g_assert_cmpint(find(t, asked)->detail_fd[NP_PROC_STATUS], >=, 0);

        /* reuse before the open: the new process's file is opened, but the
         * old stat descriptor no longer reads, so it is given up */
        g_assert_cmpint(find(t, asked)->detail_fd[NP_PROC_CGROUP], ==, -1);
        kill_child(asked, true);
        g_usleep(30000);
        reused = spawn_child(0, asked);
        g_assert_cmpint(reused, ==, asked);
        g_free(read_detail(t, asked, NP_PROC_CGROUP, -ESRCH));
        g_assert_cmpint(find(t, asked)->detail_fd[NP_PROC_CGROUP], ==, -1);
        farm_remove(f, reused);
        kill_child(reused, true);

        /* at the cap (statm and stat take both): read by path */
        g_autoptr(NpProcTable) t2 = np_proc_table_new(2);
        g_assert_cmpint(np_proc_table_scan(t2, GIB, wants_pid, &small), ==, 1);
        g_assert_cmpint(np_proc_table_scan(t2, GIB, wants_pid, &small), ==, 1);
        g_assert_cmpint(find(t2, small)->stat_fd, >=, 0);
        assert_status_of(t2, small);
        g_assert_cmpint(find(t2, small)->detail_fd[NP_PROC_STATUS], ==, -1);
        kill_child(small, true);
        farm_free(f);
}

/* Past the cap: open+read+close of stat every scan, identity by start time;
 * a descriptor is taken when one frees up. */
static void test_cap_fallback(void) {
        Farm *f = farm_new();
        pid_t c[4];
        for (int i = 0; i < 4; i++) {
                c[i] = spawn_child(i == 3 ? 40 : 0, 0);
                farm_add(f, c[i]);
        }
        g_autoptr(NpProcTable) t = np_proc_table_new(2);
        g_assert_cmpint(np_proc_table_scan(t, GIB, NULL, NULL), ==, 4);
        g_assert_cmpint(np_proc_table_scan(t, GIB, NULL, NULL), ==, 4);
        NpProcTableStats s;
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.max_kept, ==, 2);
        g_assert_cmpuint(s.kept, ==, 2);
        g_assert_cmpuint(s.beyond_cap, ==, 2);
        unsigned with_fd = 0;
        for (int i = 0; i < 4; i++) {
                const NpProcEntry *e = find(t, c[i]);
                g_assert_nonnull(e);
                g_assert_cmpuint(e->starttime, ==, starttime_of(c[i]));
                if (e->fd >= 0) {
                        with_fd++;
                        g_assert_false(e->stat_read); /* statm only */
                } else
                        g_assert_true(e->stat_read); /* the fallback reads stat */
        }
        g_assert_cmpuint(with_fd, ==, 2);
        g_assert_cmpuint(find(t, c[3])->rss_bytes, >=, 40 * MIB);

        /* a PID reused beyond the cap: a new entry, by start time */
        pid_t victim = -1;
        for (int i = 0; i < 4; i++)
                if (find(t, c[i])->fd < 0)
                        victim = c[i];
        g_assert_cmpint(victim, >, 0);
        uint64_t vstart = find(t, victim)->starttime;
        kill_child(victim, true);
        g_usleep(30000);
        pid_t reused = spawn_child(24, victim);
        g_assert_cmpint(reused, ==, victim);
        g_assert_cmpint(np_proc_table_scan(t, GIB, NULL, NULL), ==, 4);
        const NpProcEntry *e = find(t, reused);
        g_assert_true(e->new_this_scan);
        g_assert_cmpuint(e->starttime, !=, vstart);
        g_assert_cmpuint(e->rss_bytes, >=, 24 * MIB);
        for (int i = 0; i < 4; i++)
                if (c[i] == victim)
                        c[i] = reused;

        /* a kept one exits: the next scan gives its descriptor to one beyond the cap */
        pid_t kept_one = -1;
        for (int i = 0; i < 4; i++)
                if (find(t, c[i])->fd >= 0)
                        kept_one = c[i];
        farm_remove(f, kept_one);
        kill_child(kept_one, true);
        g_assert_cmpint(np_proc_table_scan(t, GIB, NULL, NULL), ==, 3); /* closes the exited one's */
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.kept, ==, 1);
        g_assert_cmpint(np_proc_table_scan(t, GIB, NULL, NULL), ==, 3); /* gives it away */
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.kept, ==, 2);
        g_assert_cmpuint(s.beyond_cap, ==, 1);
        for (int i = 0; i < 4; i++)
                if (c[i] != kept_one)
                        kill_child(c[i], true);
        farm_free(f);
}

/* The real /proc: kernel threads known and skipped, ourselves found. */
static void test_real_proc(void) {
        np_sysroot_set(NULL);
        g_autoptr(NpProcTable) t = np_proc_table_new(np_proc_fd_budget(NULL));
        g_assert_cmpint(np_proc_table_scan(t, GIB, NULL, NULL), >, 0);
        g_assert_cmpint(np_proc_table_scan(t, GIB, NULL, NULL), >, 0);
        const NpProcEntry *self = find(t, getpid());
        g_assert_nonnull(self);
        g_assert_cmpint(self->fd, >=, 0);
        g_assert_cmpuint(self->rss_bytes, >, 0);
        g_assert_null(find(t, 2));
        g_assert_nonnull(np_proc_table_lookup(t, 2));
        g_assert_true(np_proc_table_lookup(t, 2)->kthread);
        NpProcTableStats s;
        np_proc_table_stats(t, &s);
        g_assert_cmpuint(s.kthreads, >, 0);
        g_assert_cmpuint(s.beyond_cap, ==, 0);
}

static void test_fd_budget(void) {
        uint64_t soft = 0;
        unsigned cap = np_proc_fd_budget(&soft);
        struct rlimit rl;
        g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
        g_assert_cmpuint(rl.rlim_cur, ==, rl.rlim_max); /* raised to the hard limit */
        g_assert_cmpuint(soft, ==, rl.rlim_cur);
        g_assert_cmpuint(cap, ==, MIN((uint64_t) NP_PROC_KEPT_FDS_MAX, soft - NP_PROC_FDS_RESERVED));

        /* a low hard limit: the cap follows it (in a process of its own,
         * run afresh: valgrind does not let its client move the hard limit) */
        pid_t pid = fork();
        if (pid == 0) {
                execl(self_exe, "test-proc-table", "--low-fd-limit", (char *) NULL);
                _exit(127);
        }
        int status;
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFEXITED(status));
        g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

/* run by test_fd_budget in a process of its own */
static int low_fd_limit_main(void) {
        struct rlimit low = { 600, 600 };
        if (setrlimit(RLIMIT_NOFILE, &low) < 0 || np_proc_fd_budget(NULL) != 600 - NP_PROC_FDS_RESERVED)
                return 1;
        struct rlimit tiny = { 100, 100 };
        if (setrlimit(RLIMIT_NOFILE, &tiny) < 0 || np_proc_fd_budget(NULL) != 0)
                return 2;
        return 0;
}

int main(int argc, char **argv) {
        if (argc == 2 && strcmp(argv[1], "--low-fd-limit") == 0)
                return low_fd_limit_main();
        if (argc == 4 && strcmp(argv[1], "--child") == 0)
                return child_main(atoi(argv[2]), (unsigned) atoi(argv[3]));
        g_test_init(&argc, &argv, NULL);
        self_exe = g_file_read_link("/proc/self/exe", NULL);
        g_assert_nonnull(self_exe);
        g_test_add_func("/proc-table/parse-statm", test_parse_statm);
        g_test_add_func("/proc-table/fixture", test_fixture);
        g_test_add_func("/proc-table/kept-reads", test_kept_reads);
        g_test_add_func("/proc-table/exec-read-once", test_exec_read_once);
        g_test_add_func("/proc-table/exec-after-textless-read", test_exec_after_textless_read);
        g_test_add_func("/proc-table/pid-reuse-kept-fd", test_pid_reuse_kept_fd);
        g_test_add_func("/proc-table/detail-reads", test_detail_reads);
        g_test_add_func("/proc-table/cap-fallback", test_cap_fallback);
        g_test_add_func("/proc-table/real-proc", test_real_proc);
        g_test_add_func("/proc-table/fd-budget", test_fd_budget);
        return g_test_run();
}
