/* SPDX-License-Identifier: GPL-2.0-or-later */
/* bench-node-sample: CPU time of one node sample (np_sample_nodes(): the
 * /proc/stat parse and the per-node meminfo reads) on fixture trees of 2, 8,
 * 16 and 32 nodes and on this machine, so its growth with the machine shows.
 *
 *     bench-node-sample [--runs R] [--iters K] TREE...   (a TREE of "/" is this machine)
 *
 * Per tree: R runs of K samples; per run the CPU microseconds per sample
 * (CLOCK_PROCESS_CPUTIME_ID); printed as min/mean/trimmed mean/stddev/max
 * over the runs, mmtests style. Trees are read from files, not sysfs, so the
 * reads are cheaper than the kernel's; the parse is the same. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "np-sample.h"
#include "np-sysroot.h"
#include "np-topology.h"

static double cpu_us(void) {
        struct timespec t;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return (double) t.tv_sec * 1e6 + (double) t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return (x > y) - (x < y);
}

int main(int argc, char **argv) {
        int runs = 6, iters = 200, first = 1;
        while (first + 1 < argc && argv[first][0] == '-') {
                if (strcmp(argv[first], "--runs") == 0)
                        runs = atoi(argv[first + 1]);
                else if (strcmp(argv[first], "--iters") == 0)
                        iters = atoi(argv[first + 1]);
                else
                        break;
                first += 2;
        }
        if (first >= argc || runs < 1 || iters < 1) {
                fprintf(stderr, "usage: bench-node-sample [--runs R] [--iters K] TREE...\n");
                return 2;
        }
        printf("%-10s %5s %5s %9s | %8s %8s %8s %8s %8s | %9s\n", "tree", "nodes", "cpus", "stat KiB", "Min", "Mean",
               "TrimMean", "Stddev", "Max", "us/node");
        for (int a = first; a < argc; a++) {
                np_sysroot_set(argv[a]);
                g_autoptr(GError) error = NULL;
                NpTopology *t = NULL;
                if (np_topology_load(&t, &error) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[a], error->message);
                        return 1;
                }
                g_autofree char *stat = NULL;
                size_t stat_len = 0;
                np_read_file("/proc/stat", &stat, &stat_len);
                GArray *prev = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
                GArray *cur = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));
                GArray *out = g_array_new(FALSE, TRUE, sizeof(NpNodeSample));
                if (np_sample_nodes(t, true, NULL, prev, out, NULL) < 0) {
                        fprintf(stderr, "%s: sampling failed\n", argv[a]);
                        return 1;
                }
                double *v = g_new(double, runs);
                for (int r = 0; r < runs; r++) {
                        double t0 = cpu_us();
                        for (int i = 0; i < iters; i++) {
                                np_sample_nodes(t, true, prev, cur, out, NULL);
                                GArray *x = prev;
                                prev = cur;
                                cur = x;
                        }
                        v[r] = (cpu_us() - t0) / iters;
                }
                qsort(v, (size_t) runs, sizeof *v, cmp_double);
                int k = runs >= 5 ? MAX(1, runs / 10) : 0;
                double sum = 0, tsum = 0, sq = 0;
                for (int r = 0; r < runs; r++)
                        sum += v[r];
                for (int r = k; r < runs - k; r++)
                        tsum += v[r];
                double mean = sum / runs, trim = tsum / (runs - 2 * k);
                for (int r = 0; r < runs; r++)
                        sq += (v[r] - mean) * (v[r] - mean);
                double sd = runs > 1 ? sqrt(sq / (runs - 1)) : 0;
                const char *name = strrchr(argv[a], '/');
                name = name && name[1] ? name + 1 : argv[a];
                printf("%-10s %5u %5u %9.1f | %8.1f %8.1f %8.1f %8.2f %8.1f | %9.2f\n", name, t->nodes->len,
                       np_mask_weight(t->all_cpus), (double) stat_len / 1024.0, v[0], mean, trim, sd, v[runs - 1],
                       mean / t->nodes->len);
                g_free(v);
                g_array_free(prev, TRUE);
                g_array_free(cur, TRUE);
                g_array_free(out, TRUE);
                np_topology_free(t);
        }
        return 0;
}
