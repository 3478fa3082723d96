/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench-helper: the processes the benchmarks watch.
 *
 *   bench-helper shared N MB
 *       N processes with MB MiB resident each, all mapping one shared memfd
 *       (so N x MB of RSS costs MB of the machine's memory; each still has
 *       MB/4 kB page-table entries, which is what reading numa_maps walks).
 *       Prints "READY <pid>..." when every page is mapped, then waits to be
 *       killed (the children die with it: PR_SET_PDEATHSIG).
 *
 *   bench-helper fault MB SECONDS
 *       Maps MB MiB of anonymous memory without transparent huge pages,
 *       touches it, then for SECONDS faults pages in a tight loop: per 2 MiB
 *       chunk, MADV_DONTNEED then touch each page again, timing every touch
 *       (a page fault) with CLOCK_MONOTONIC. Resident memory stays at MB
 *       (minus one chunk). Prints one JSON line: faults, p50/p90/p99/p99.9/max
 *       in microseconds, and the count above 100 us and 1 ms.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t) t.tv_sec * 1000000000u + (uint64_t) t.tv_nsec;
}

static int shared(int n, size_t mb) {
        size_t sz = mb << 20;
        int fd = memfd_create("bench-shared", 0);
        if (fd < 0 || ftruncate(fd, (off_t) sz) < 0) {
                perror("memfd");
                return 1;
        }
        char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        for (size_t i = 0; i < sz; i += 4096)
                m[i] = 1;
        munmap(m, sz);
        int p[2];
        if (pipe(p) < 0)
                return 1;
        pid_t *kids = calloc((size_t) n, sizeof(pid_t));
        for (int i = 0; i < n; i++) {
                kids[i] = fork();
                if (kids[i] == 0) {
                        prctl(PR_SET_PDEATHSIG, SIGKILL);
                        char *c = mmap(NULL, sz, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
                        if (c == MAP_FAILED)
                                _exit(1);
                        if (write(p[1], "r", 1) != 1)
                                _exit(1);
                        for (;;)
                                pause();
                }
        }
        for (int i = 0; i < n; i++) {
                char c;
                if (read(p[0], &c, 1) != 1)
                        return 1;
        }
        printf("READY");
        for (int i = 0; i < n; i++)
                printf(" %d", (int) kids[i]);
        printf("\n");
        fflush(stdout);
        for (;;)
                pause();
}

/* latency histogram: 10 ns buckets up to 100 us, then 1 us buckets to 100 ms */
#define FINE 10000u
#define COARSE 100000u
static uint64_t fine[FINE], coarse[COARSE];
static uint64_t over, n_faults, max_ns;

static void record(uint64_t ns) {
        n_faults++;
        if (ns > max_ns)
                max_ns = ns;
        if (ns < FINE * 10u)
                fine[ns / 10u]++;
        else if (ns < (uint64_t) COARSE * 1000u)
                coarse[ns / 1000u]++;
        else
                over++;
}

static double percentile(double q) {
        uint64_t want = (uint64_t) (q * (double) n_faults), seen = 0;
        for (unsigned i = 0; i < FINE; i++)
                if ((seen += fine[i]) > want)
                        return (double) i * 0.01;
        for (unsigned i = 0; i < COARSE; i++)
                if ((seen += coarse[i]) > want)
                        return (double) i;
        return (double) max_ns / 1000.0;
}

static int fault(size_t mb, double seconds) {
        size_t sz = mb << 20, chunk = 2u << 20;
        char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        madvise(m, sz, MADV_NOHUGEPAGE);
        for (size_t i = 0; i < sz; i += 4096)
                m[i] = 1;
        fprintf(stderr, "fault: %zu MiB touched, faulting for %.0f s\n", mb, seconds);
        uint64_t end = now_ns() + (uint64_t) (seconds * 1e9);
        uint64_t above_100us = 0, above_1ms = 0;
        size_t off = 0;
        while (now_ns() < end) {
                madvise(m + off, chunk, MADV_DONTNEED);
                for (size_t i = 0; i < chunk; i += 4096) {
                        uint64_t t0 = now_ns();
                        m[off + i] = 2;
                        uint64_t d = now_ns() - t0;
                        record(d);
                        above_100us += d > 100000u;
                        above_1ms += d > 1000000u;
                }
                off = (off + chunk) % sz;
        }
        printf("{\"faults\": %llu, \"p50_us\": %.2f, \"p90_us\": %.2f, \"p99_us\": %.2f, \"p999_us\": %.2f, "
               "\"max_us\": %.1f, \"above_100us\": %llu, \"above_1ms\": %llu}\n",
               (unsigned long long) n_faults, percentile(0.5), percentile(0.9), percentile(0.99), percentile(0.999),
               (double) max_ns / 1000.0, (unsigned long long) above_100us, (unsigned long long) above_1ms);
        return 0;
}

int main(int argc, char **argv) {
        if (argc == 4 && strcmp(argv[1], "shared") == 0)
                return shared(atoi(argv[2]), (size_t) atol(argv[3]));
        if (argc == 4 && strcmp(argv[1], "fault") == 0)
                return fault((size_t) atol(argv[2]), atof(argv[3]));
        fprintf(stderr, "usage: bench-helper shared N MB | fault MB SECONDS\n");
        return 2;
}
