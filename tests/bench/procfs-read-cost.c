/* SPDX-License-Identifier: GPL-2.0-or-later */
/* procfs-read-cost: CPU microseconds per process for the ways a scanner can
 * read per-process data from /proc, over every PID present now.  The floor
 * under numaplaced's per-process scan cost, and what other access patterns
 * would cost.  Used by bench-scan.py (which runs it with its N sleepers in
 * place); also runs alone:
 *
 *     build-bench/tests/bench/procfs-read-cost [REPS [INTERVAL_MS [MIN_BYTES [REFRESH]]]]
 *
 * INTERVAL_MS (default 200, 0 leaves it out) paces the last method, the
 * daemon's whole pattern, at one pass per interval.
 * Prints one "method us_per_process" line per method, then "pids N".
 *
 * MIN_BYTES (MinProcessMemory=) adds what numaplaced reads on top for the
 * processes with at least that much resident memory, taken as significant
 * and idle (the benchmark's big row): "significant N" and
 * "significant_us_per_scan X", the CPU microseconds those reads add per
 * scan averaged over their cycle (REFRESH is LocalityRefreshScans=,
 * default 12), and "significant_numa_maps_us_per_read Y", one read of all
 * their numa_maps. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double cpu_us(void) {
        struct timespec t;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return (double) t.tv_sec * 1e6 + (double) t.tv_nsec / 1e3;
}

static int *list_pids(int *n) {
        size_t cap = 1024;
        int *pids = malloc(cap * sizeof(int));
        DIR *d = opendir("/proc");
        struct dirent *e;
        *n = 0;
        while (d && pids && (e = readdir(d))) {
                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                if ((size_t) *n == cap) {
                        cap *= 2;
                        int *p = realloc(pids, cap * sizeof(int));
                        if (!p)
                                break;
                        pids = p;
                }
                pids[(*n)++] = atoi(e->d_name);
        }
        if (d)
                closedir(d);
        return pids;
}

static char buf[4096];

/* open + read + close of /proc/<pid>/<file>, as numaplaced and numad do */
static double open_read_close(const int *pids, int n, int reps, const char *file, int dirfd) {
        char path[64];
        double t0 = cpu_us();
        for (int r = 0; r < reps; r++)
                for (int i = 0; i < n; i++) {
                        int fd;
                        if (dirfd >= 0) {
                                snprintf(path, sizeof path, "%d/%s", pids[i], file);
                                fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
                        } else {
                                snprintf(path, sizeof path, "/proc/%d/%s", pids[i], file);
                                fd = open(path, O_RDONLY | O_CLOEXEC);
                        }
                        if (fd < 0)
                                continue;
                        if (read(fd, buf, sizeof buf) < 0)
                                buf[0] = 0;
                        close(fd);
                }
        return (cpu_us() - t0) / reps / n;
}

/* pread(fd, 0) on descriptors kept open between scans */
static double kept_pread(const int *pids, int n, int reps, const char *file) {
        char path[64];
        int *fds = malloc((size_t) n * sizeof(int));
        if (!fds)
                return -1;
        for (int i = 0; i < n; i++) {
                snprintf(path, sizeof path, "/proc/%d/%s", pids[i], file);
                fds[i] = open(path, O_RDONLY | O_CLOEXEC);
        }
        double t0 = cpu_us();
        for (int r = 0; r < reps; r++)
                for (int i = 0; i < n; i++)
                        if (fds[i] >= 0 && pread(fds[i], buf, sizeof buf, 0) < 0)
                                buf[0] = 0;
        double us = (cpu_us() - t0) / reps / n;
        for (int i = 0; i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(fds);
        return us;
}

/* openat(<kept /proc/<pid> directory fd>, file) + read + close: a kept
 * directory descriptor costs the kernel ~0.4 kB where a kept, read file
 * descriptor holds a 4 kB seq_file buffer */
static double kept_dir_openat(const int *pids, int n, int reps, const char *file) {
        char path[64];
        int *dfds = malloc((size_t) n * sizeof(int));
        if (!dfds)
                return -1;
        for (int i = 0; i < n; i++) {
                snprintf(path, sizeof path, "/proc/%d", pids[i]);
                dfds[i] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        }
        double t0 = cpu_us();
        for (int r = 0; r < reps; r++)
                for (int i = 0; i < n; i++) {
                        if (dfds[i] < 0)
                                continue;
                        int fd = openat(dfds[i], file, O_RDONLY | O_CLOEXEC);
                        if (fd < 0)
                                continue;
                        if (read(fd, buf, sizeof buf) < 0)
                                buf[0] = 0;
                        close(fd);
                }
        double us = (cpu_us() - t0) / reps / n;
        for (int i = 0; i < n; i++)
                if (dfds[i] >= 0)
                        close(dfds[i]);
        free(dfds);
        return us;
}

static double list_only(int n, int reps) {
        double t0 = cpu_us();
        for (int r = 0; r < reps; r++) {
                DIR *d = opendir("/proc");
                while (d && readdir(d))
                        ;
                if (d)
                        closedir(d);
        }
        return (cpu_us() - t0) / reps / n;
}

/* numaplaced's whole read pattern, the way it runs: one pass every
 * interval_ms (caches go cold in between, as they do for a daemon that scans
 * every few seconds): rewinddir(/proc), and for every numeric entry a pread
 * of statm on a descriptor kept open since the first pass. CPU time counts
 * the passes only (the process CPU clock does not run while it sleeps). */
static double paced_pattern(int n, int reps, int interval_ms) {
        int maxpid = 0;
        FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
        if (!f || fscanf(f, "%d", &maxpid) != 1 || maxpid <= 0)
                maxpid = 4194304;
        if (f)
                fclose(f);
        int *fds = malloc(((size_t) maxpid + 1) * sizeof(int));
        DIR *d = opendir("/proc");
        if (!fds || !d) {
                free(fds);
                if (d)
                        closedir(d);
                return -1;
        }
        for (int i = 0; i <= maxpid; i++)
                fds[i] = -1;
        char path[64];
        struct dirent *e;
        while ((e = readdir(d))) { /* the first scan: open the descriptors */
                int pid = atoi(e->d_name);
                if (pid <= 0 || pid > maxpid)
                        continue;
                snprintf(path, sizeof path, "/proc/%d/statm", pid);
                fds[pid] = open(path, O_RDONLY | O_CLOEXEC);
        }
        double cpu = 0;
        for (int r = 0; r < reps; r++) {
                struct timespec ts = { interval_ms / 1000, (long) (interval_ms % 1000) * 1000000L };
                nanosleep(&ts, NULL);
                double t0 = cpu_us();
                rewinddir(d);
                while ((e = readdir(d))) {
                        int pid = atoi(e->d_name);
                        if (pid > 0 && pid <= maxpid && fds[pid] >= 0 && pread(fds[pid], buf, sizeof buf, 0) < 0)
                                buf[0] = 0;
                }
                cpu += cpu_us() - t0;
        }
        for (int i = 0; i <= maxpid; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(fds);
        closedir(d);
        return cpu / reps / n;
}

/* open, read to the end (or once, for a one-line file), close: as
 * numaplaced reads each of these */
static void read_all_of(const char *path, bool once) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return;
        while (read(fd, buf, sizeof buf) > 0 && !once)
                ;
        close(fd);
}

static void read_details(int pid) {
        char path[96];
        snprintf(path, sizeof path, "/proc/%d/status", pid);
        read_all_of(path, false);
        snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
        read_all_of(path, false);
        snprintf(path, sizeof path, "/proc/%d/task", pid);
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
                if (e->d_name[0] < '1' || e->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof path, "/proc/%d/task/%.16s/stat", pid, e->d_name);
                read_all_of(path, true);
        }
        if (d)
                closedir(d);
}

/* Each significant process's reads, the way numaplaced makes them for one
 * that does not run: stat with pread() on a kept descriptor every scan;
 * status, every thread's stat and cgroup every `refresh` scans; numa_maps
 * not again once read (its pages stay where they are while it does not
 * run). Each kind is measured over `reps` passes paced at interval_ms, and
 * the result is their CPU microseconds per scan averaged over the cycle.
 * *count: how many processes; *maps_us: the CPU microseconds of one read of
 * all their numa_maps (what a read after each of them ran would cost). */
static double significant_per_scan(const int *pids, int n, long long min_bytes, int refresh, int reps, int interval_ms,
                                   int *count, double *maps_us) {
        long page = sysconf(_SC_PAGESIZE);
        int *sig = malloc((size_t) n * sizeof(int)), *fds = malloc((size_t) n * sizeof(int));
        char path[96];
        *count = 0;
        for (int i = 0; sig && fds && i < n; i++) {
                snprintf(path, sizeof path, "/proc/%d/statm", pids[i]);
                FILE *f = fopen(path, "re");
                long long size = 0, resident = 0;
                if (!f)
                        continue;
                if (fscanf(f, "%lld %lld", &size, &resident) == 2 && resident * page >= min_bytes) {
                        snprintf(path, sizeof path, "/proc/%d/stat", pids[i]);
                        fds[*count] = open(path, O_RDONLY | O_CLOEXEC);
                        sig[(*count)++] = pids[i];
                }
                fclose(f);
        }
        struct timespec ts = { interval_ms / 1000, (long) (interval_ms % 1000) * 1000000L };
        double stat = 0, details = 0, maps = 0;
        for (int r = 0; r < reps; r++) {
                nanosleep(&ts, NULL);
                double t0 = cpu_us();
                for (int i = 0; i < *count; i++)
                        if (fds[i] >= 0 && pread(fds[i], buf, sizeof buf, 0) < 0)
                                buf[0] = 0;
                stat += cpu_us() - t0;
        }
        for (int r = 0; r < reps; r++) {
                nanosleep(&ts, NULL);
                double t0 = cpu_us();
                for (int i = 0; i < *count; i++)
                        read_details(sig[i]);
                details += cpu_us() - t0;
        }
        for (int r = 0; r < reps; r++) {
                nanosleep(&ts, NULL);
                double t0 = cpu_us();
                for (int i = 0; i < *count; i++) {
                        snprintf(path, sizeof path, "/proc/%d/numa_maps", sig[i]);
                        read_all_of(path, false);
                }
                maps += cpu_us() - t0;
        }
        for (int i = 0; i < *count; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(sig);
        free(fds);
        if (refresh < 1)
                refresh = 1;
        *maps_us = maps / reps;
        return (stat + details / refresh) / reps;
}

int main(int argc, char **argv) {
        int reps = argc > 1 ? atoi(argv[1]) : 10;
        int interval_ms = argc > 2 ? atoi(argv[2]) : 200;
        int n = 0;
        int *pids = list_pids(&n);
        if (!pids || n == 0 || reps < 1) {
                fprintf(stderr, "procfs-read-cost: no PIDs or bad REPS\n");
                return 1;
        }
        struct rlimit rl; /* one kept descriptor per process */
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
        }
        int dirfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        open_read_close(pids, n, 1, "stat", -1); /* warm the dentry cache */
        printf("readdir_proc %.3f\n", list_only(n, reps));
        printf("open_read_close_stat %.3f\n", open_read_close(pids, n, reps, "stat", -1));
        printf("openat_procfd_stat %.3f\n", open_read_close(pids, n, reps, "stat", dirfd));
        printf("open_read_close_statm %.3f\n", open_read_close(pids, n, reps, "statm", -1));
        printf("open_read_close_status %.3f\n", open_read_close(pids, n, reps, "status", -1));
        printf("kept_fd_pread_stat %.3f\n", kept_pread(pids, n, reps, "stat"));
        printf("kept_fd_pread_statm %.3f\n", kept_pread(pids, n, reps, "statm"));
        printf("kept_dir_openat_statm %.3f\n", kept_dir_openat(pids, n, reps, "statm"));
        if (interval_ms > 0)
                printf("paced_readdir_pread_statm %.3f\n", paced_pattern(n, reps, interval_ms));
        printf("pids %d\n", n);
        if (argc > 3) {
                int count = 0;
                double maps_us = 0;
                double us = significant_per_scan(pids, n, atoll(argv[3]), argc > 4 ? atoi(argv[4]) : 12, reps,
                                                 interval_ms > 0 ? interval_ms : 200, &count, &maps_us);
                printf("significant %d\n", count);
                printf("significant_us_per_scan %.3f\n", us);
                printf("significant_numa_maps_us_per_read %.3f\n", maps_us);
        }
        free(pids);
        return 0;
}
