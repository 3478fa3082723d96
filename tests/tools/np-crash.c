/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * np-crash: SIGKILL a process at a chosen moment of its work, for the
 * fault-injection tests (tests/vm/test_crash.py).
 *
 *   np-crash --pid PID --syscall NAME[,NAME...] [--path SUBSTRING]
 *            [--nth N] [--delay-us USEC] [--timeout SEC]
 *
 * Traces every thread of PID (ptrace, new threads included) and counts the
 * entries into the named system calls (migrate_pages, write, fsync,
 * rename/renameat/renameat2, openat, unlink...). With --path, only calls
 * on a file whose path contains SUBSTRING count: for write and fsync the
 * path of the descriptor, for the others the (first) path argument. At
 * the Nth one (default 1):
 *   --delay-us 0 (default): SIGKILL while the thread is stopped at the
 *     entry, before the call runs;
 *   --delay-us D: let the call run, SIGKILL D microseconds later. A call
 *     that returned sooner is let go, and the next call of those named
 *     is taken instead, with half the delay (at least NP_CRASH_MIN_DELAY
 *     us), up to NP_CRASH_RETRIES times; after that the process is killed
 *     all the same. "inside" says the call had not yet returned at the
 *     kill, "after" that it had (every retry used up).
 * Prints one line: "np-crash: killed PID at NAME #N: entry|inside|after
 * (D us)", N the call killed in and D its delay, and exits 0. When the
 * call is not seen within --timeout seconds the process is killed all the
 * same ("killed PID after T s without call #N") and the exit status is 2;
 * 1 on errors (nothing killed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const struct {
        const char *name;
        long nr;
        int path_arg; /* the argument naming the file: -1 none, 0.. a path
                       * pointer, or -2: argument 0 is a descriptor */
} calls[] = {
        { "migrate_pages", SYS_migrate_pages, -1 },
        { "write", SYS_write, -2 },
        { "pwrite64", SYS_pwrite64, -2 },
        { "fsync", SYS_fsync, -2 },
        { "fdatasync", SYS_fdatasync, -2 },
        { "rename", SYS_rename, 0 },
        { "renameat", SYS_renameat, 1 },
        { "renameat2", SYS_renameat2, 1 },
        { "openat", SYS_openat, 1 },
        { "unlink", SYS_unlink, 0 },
        { "unlinkat", SYS_unlinkat, 1 },
        { "mkdir", SYS_mkdir, 0 },
        { "rmdir", SYS_rmdir, 0 },
};
#define N_CALLS (sizeof(calls) / sizeof(calls[0]))

static pid_t target;
static bool wanted[N_CALLS];
static const char *path_sub;
static unsigned nth = 1;
static long delay_us;
static double timeout_sec = 60;

/* --delay-us: how often a call that returned before the kill passes it on
 * to the next one, and the shortest delay that halving comes to */
#define NP_CRASH_RETRIES 8
#define NP_CRASH_MIN_DELAY 100

/* Let a traced thread stopped with status go on, as the main loop does. */
static void resume(pid_t tid, int status) {
        int sig = WSTOPSIG(status);
        int event = (unsigned) status >> 16;
        bool ours =
                sig == (SIGTRAP | 0x80) || sig == SIGTRAP || event == PTRACE_EVENT_STOP || event == PTRACE_EVENT_CLONE;
        ptrace(PTRACE_SYSCALL, tid, 0, ours ? 0 : sig);
}

static int call_index(long nr) {
        for (size_t i = 0; i < N_CALLS; i++)
                if (calls[i].nr == nr)
                        return (int) i;
        return -1;
}

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Attach to every thread of the target that is not traced yet. */
static int attach_all(void) {
        char dir[64];
        DIR *d;
        struct dirent *de;
        int n = 0;

        snprintf(dir, sizeof dir, "/proc/%d/task", (int) target);
        d = opendir(dir);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                pid_t tid = (pid_t) atoi(de->d_name);
                if (tid <= 0)
                        continue;
                if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL) ==
                    0) {
                        n++;
                        /* stop it once to start syscall tracing */
                        ptrace(PTRACE_INTERRUPT, tid, 0, 0);
                }
        }
        closedir(d);
        return n;
}

static bool path_matches(pid_t tid, const struct __ptrace_syscall_info *si, int idx) {
        char buf[PATH_MAX + 1];
        int a = calls[idx].path_arg;

        if (!path_sub)
                return true;
        if (a == -1)
                return true;
        if (a == -2) {
                char link[64];
                ssize_t n;
                snprintf(link, sizeof link, "/proc/%d/fd/%d", (int) target, (int) si->entry.args[0]);
                n = readlink(link, buf, sizeof buf - 1);
                if (n < 0)
                        return false;
                buf[n] = '\0';
        } else {
                struct iovec local = { buf, sizeof buf - 1 };
                struct iovec remote = { (void *) (uintptr_t) si->entry.args[a], sizeof buf - 1 };
                ssize_t n = process_vm_readv(tid, &local, 1, &remote, 1, 0);
                if (n <= 0) {
                        /* the string may end before a page that is not
                         * mapped: read it word by word */
                        size_t k = 0;
                        for (; k + sizeof(long) < sizeof buf; k += sizeof(long)) {
                                errno = 0;
                                long w = ptrace(PTRACE_PEEKDATA, tid, (void *) (uintptr_t) (si->entry.args[a] + k), 0);
                                if (errno)
                                        break;
                                memcpy(buf + k, &w, sizeof w);
                                if (memchr(&w, 0, sizeof w))
                                        break;
                        }
                        n = (ssize_t) k + (ssize_t) sizeof(long);
                }
                buf[n < (ssize_t) sizeof buf ? n : (ssize_t) sizeof buf - 1] = '\0';
        }
        return strstr(buf, path_sub) != NULL;
}

static void usage(FILE *f) {
        fprintf(f,
                "Usage: np-crash --pid PID --syscall NAME[,NAME...] [--path SUBSTRING] [--nth N] "
                "[--delay-us USEC] [--timeout SEC]\n");
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "pid", required_argument, NULL, 'p' },      { "syscall", required_argument, NULL, 's' },
                { "path", required_argument, NULL, 'P' },     { "nth", required_argument, NULL, 'n' },
                { "delay-us", required_argument, NULL, 'd' }, { "timeout", required_argument, NULL, 't' },
                { "help", no_argument, NULL, 'h' },           { NULL, 0, NULL, 0 },
        };
        unsigned seen = 0, retries = 0;
        bool any = false;
        double deadline;
        int c;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        target = (pid_t) atoi(optarg);
                        break;
                case 's': {
                        char *list = strdup(optarg), *save = NULL;
                        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                                size_t i;
                                for (i = 0; i < N_CALLS; i++)
                                        if (strcmp(calls[i].name, tok) == 0)
                                                break;
                                if (i == N_CALLS) {
                                        fprintf(stderr, "np-crash: unknown system call '%s'\n", tok);
                                        return 1;
                                }
                                wanted[i] = true;
                                any = true;
                        }
                        free(list);
                        break;
                }
                case 'P':
                        path_sub = optarg;
                        break;
                case 'n':
                        nth = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'd':
                        delay_us = strtol(optarg, NULL, 10);
                        break;
                case 't':
                        timeout_sec = strtod(optarg, NULL);
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 1;
                }
        }
        if (target <= 0 || !any || nth == 0) {
                usage(stderr);
                return 1;
        }
        if (attach_all() <= 0) {
                fprintf(stderr, "np-crash: cannot trace pid %d: %s\n", (int) target, strerror(errno));
                return 1;
        }
        deadline = now() + timeout_sec;

        for (;;) {
                int status;
                pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);

                if (tid == 0) {
                        if (now() > deadline) {
                                /* not seen: kill it now all the same */
                                kill(target, SIGKILL);
                                printf("np-crash: killed %d after %.0f s without call #%u (%u seen)\n", (int) target,
                                       timeout_sec, nth, seen);
                                fflush(stdout);
                                while (waitpid(-1, &status, __WALL) > 0 || errno == EINTR)
                                        ;
                                return 2;
                        }
                        usleep(200);
                        continue;
                }
                if (tid < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "np-crash: pid %d went away before the call\n", (int) target);
                        return 1;
                }
                if (WIFEXITED(status) || WIFSIGNALED(status))
                        continue;
                if (!WIFSTOPPED(status))
                        continue;
                int sig = WSTOPSIG(status);
                int event = (unsigned) status >> 16;

                if (sig == (SIGTRAP | 0x80)) {
                        struct __ptrace_syscall_info si;
                        if (ptrace(PTRACE_GET_SYSCALL_INFO, tid, sizeof si, &si) > 0 &&
                            si.op == PTRACE_SYSCALL_INFO_ENTRY) {
                                int idx = call_index((long) si.entry.nr);
                                if (idx >= 0 && wanted[idx] && path_matches(tid, &si, idx) && ++seen == nth) {
                                        const char *where = "entry";
                                        if (delay_us > 0) {
                                                /* let it run into the call, then kill */
                                                ptrace(PTRACE_SYSCALL, tid, 0, 0);
                                                usleep((useconds_t) delay_us);
                                                /* has this thread come back out of it? */
                                                int st2;
                                                pid_t r = waitpid(tid, &st2, __WALL | WNOHANG);
                                                where = r == 0 ? "inside" : "after";
                                                if (r != 0 && retries < NP_CRASH_RETRIES) {
                                                        /* too quick: the next one, sooner */
                                                        retries++;
                                                        nth = seen + 1;
                                                        delay_us = delay_us / 2 > NP_CRASH_MIN_DELAY
                                                                ? delay_us / 2
                                                                : NP_CRASH_MIN_DELAY;
                                                        if (r == tid && WIFSTOPPED(st2))
                                                                resume(tid, st2);
                                                        continue;
                                                }
                                        }
                                        kill(target, SIGKILL);
                                        printf("np-crash: killed %d at %s #%u: %s (%ld us)\n", (int) target,
                                               calls[idx].name, nth, where, delay_us);
                                        fflush(stdout);
                                        /* reap the trace events until every thread is gone */
                                        while (waitpid(-1, &status, __WALL) > 0 || errno == EINTR)
                                                ;
                                        return 0;
                                }
                        }
                        ptrace(PTRACE_SYSCALL, tid, 0, 0);
                } else if (event == PTRACE_EVENT_STOP || event == PTRACE_EVENT_CLONE) {
                        ptrace(PTRACE_SYSCALL, tid, 0, 0);
                } else if (sig == SIGTRAP) {
                        ptrace(PTRACE_SYSCALL, tid, 0, 0);
                } else {
                        /* a real signal: deliver it */
                        ptrace(PTRACE_SYSCALL, tid, 0, sig);
                }
        }
}
