/* np-workload: a NUMA test workload for numaplaced's tests.
 *
 * Allocates memory with a chosen placement policy, touches every page,
 * optionally runs threads on chosen nodes, then either sweeps its memory
 * busily or sleeps.  It reports its own per-node page counts (queried with
 * move_pages(2) in status mode, which moves nothing) and announces that the
 * allocation is complete with a READY line and an optional ready file.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum policy { POL_DEFAULT, POL_INTERLEAVE, POL_BIND, POL_PREFERRED, POL_PER_NODE };

struct chunk {
        char *addr;
        size_t len;
        int node; /* bound node for POL_PER_NODE, else -1 */
};

struct opts {
        enum policy policy;
        struct bitmask *nodes; /* --nodes / --per-node */
        size_t mb; /* total MB (not per-node mode) */
        size_t mb_per_node;
        unsigned threads;
        struct bitmask *thread_nodes;
        bool sweep;
        double duration; /* seconds, <= 0: forever */
        const char *ready_file;
        bool report;
        bool no_thp;
        bool reset_policy; /* --reset-policy */
        bool worker_touch; /* --worker-touch */
        bool unpin; /* --unpin */
        bool no_pin; /* --no-pin */
        unsigned duty; /* --duty (100) */
        unsigned busy_threads; /* --busy-threads (0 = all) */
        bool verify;
        size_t share_mb; /* --share-mb (0 = none) */
        bool share_busy; /* --share-busy */
        unsigned share_children; /* --share-children (1) */
        bool hugetlb; /* --hugetlb */
        const char *hugetlb_file; /* --hugetlb-file */
};

static struct chunk *chunks;
static size_t n_chunks;
static long page_size;
static volatile sig_atomic_t stop_flag;
static volatile sig_atomic_t report_flag;
static volatile sig_atomic_t verify_flag;
static bool verify_mode;

static void usage(FILE *f) {
        fprintf(f,
                "Usage: np-workload [OPTION]...\n"
                "Allocate memory with a NUMA policy, touch every page, then sweep or sleep.\n"
                "\n"
                "Placement (choose one; default: the default policy):\n"
                "  --mb N                  allocate N MB in total (default 64)\n"
                "  --interleave LIST       interleave the allocation over the nodes in LIST\n"
                "  --bind LIST             bind the allocation to the nodes in LIST\n"
                "  --preferred NODE        prefer NODE for the allocation\n"
                "  --per-node LIST         one chunk per node in LIST, each bound there (mbind)\n"
                "  --mb-per-node N         size of each per-node chunk in MB (default 32)\n"
                "Behaviour:\n"
                "  --threads N             run N worker threads (default 1)\n"
                "  --thread-nodes LIST     run worker i on node LIST[i %% |LIST|]\n"
                "                          (default: the placement nodes, if any)\n"
                "  --sweep                 workers read/write the memory continuously\n"
                "  --sleep                 workers sleep (default)\n"
                "  --duration SECONDS      exit after SECONDS (default: run until SIGTERM)\n"
                "  --ready-file PATH       write PATH (atomically) once memory is touched\n"
                "  --no-thp                no transparent huge pages (MADV_NOHUGEPAGE), so\n"
                "                          interleaving is exact page by page\n"
                "  --reset-policy          after touching, set the memory's policy back to the\n"
                "                          default (allocated interleaved, policy not left set)\n"
                "  --worker-touch          each worker, on its node, touches its share of the\n"
                "                          memory (first touch: pages land on its node)\n"
                "  --unpin                 workers run anywhere once the memory is touched\n"
                "  --no-pin                workers are never pinned to a node\n"
                "  --duty PERCENT          with --sweep: sweep PERCENT ms of every 100 ms\n"
                "  --busy-threads N        with --sweep: only the first N workers sweep\n"
                "  --report                print per-node page counts after touching;\n"
                "                          SIGUSR1 prints them again at any time, and with\n"
                "                          --threads N --sweep how local each worker's own\n"
                "                          slice is ('SLICES local=PERMILLE w0=NODE:PERMILLE\n"
                "                          ... unknown=PAGES': the node of the CPU it last ran\n"
                "                          on, of the pages move_pages(2) tells the node of;\n"
                "                          the shape of autonuma-benchmark's numa02)\n"
                "  --share-mb N            also N MB of shared memory (MAP_SHARED, same policy),\n"
                "                          mapped by a child that sleeps until this ends;\n"
                "                          prints 'CHILD pid=C'\n"
                "  --share-children N      N children map the shared memory (1); each prints\n"
                "                          its CHILD line\n"
                "  --share-busy            the child sweeps the shared memory as the workers sweep\n"
                "                          theirs (--duty), and so does this process (the\n"
                "                          shape of autonuma-benchmark's numa01: two busy\n"
                "                          processes on one shared memory); --reset-policy\n"
                "                          resets its policy too\n"
                "  --verify                fill every word of every page with a pattern\n"
                "                          derived from its address and print 'VERIFY pages=N\n"
                "                          bad=0 sum=HEX'; SIGUSR2 checks every page again and\n"
                "                          prints the same line (bad: pages that changed;\n"
                "                          workers then only read the memory)\n"
                "  --hugetlb               the memory in hugetlb pages of the default huge page\n"
                "                          size (MAP_HUGETLB; sizes rounded up to whole pages):\n"
                "                          reserve them first (nr_hugepages); not with\n"
                "                          --share-mb\n"
                "  --hugetlb-file PATH     the same from a file created at PATH on a hugetlbfs\n"
                "                          mount (MAP_SHARED, as a guest's RAM), removed at exit\n"
                "  -h, --help              show this help\n"
                "\n"
                "LIST is a node list as numactl takes it, e.g. 0-3,6.\n"
                "Output: 'READY pid=P mb=M' when touched, 'PAGES node=count ...' reports.\n");
}

__attribute__((format(printf, 1, 2))) static _Noreturn void die_usage(const char *fmt, ...) {
        va_list ap;
        fprintf(stderr, "np-workload: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry 'np-workload --help'.\n");
        exit(2);
}

static _Noreturn void die_errno(const char *what) {
        fprintf(stderr, "np-workload: %s: %s\n", what, strerror(errno));
        exit(1);
}

static size_t parse_size(const char *s, const char *opt) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *end || v == 0 || v > (1ULL << 30) || s[0] == '-')
                die_usage("%s: expected a positive number of MB", opt);
        return (size_t) v;
}

static struct bitmask *parse_nodes(const char *s, const char *opt) {
        struct bitmask *bm = numa_parse_nodestring(s);
        if (!bm || numa_bitmask_weight(bm) == 0)
                die_usage("%s: not a valid list of existing nodes", opt);
        return bm;
}

static int bitmask_nth(const struct bitmask *bm, unsigned n) {
        unsigned seen = 0;
        for (unsigned i = 0; i < bm->size; i++) {
                if (numa_bitmask_isbitset(bm, i)) {
                        if (seen == n)
                                return (int) i;
                        seen++;
                }
        }
        return -1;
}

static void on_term(int sig) {
        (void) sig;
        stop_flag = 1;
}

static void on_usr1(int sig) {
        (void) sig;
        report_flag = 1;
}

static void on_usr2(int sig) {
        (void) sig;
        verify_flag = 1;
}

/* The pattern word i of page p holds (splitmix64 of its position). */
static uint64_t pattern(uint64_t page, uint64_t i) {
        uint64_t z = (page << 12 | i) + 0x9e3779b97f4a7c15ULL;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

/* Fill (fill = true) or check every page of every chunk; prints the
 * VERIFY line. The sum covers every word as it is now. */
static void verify_pages(bool fill) {
        size_t words = (size_t) page_size / sizeof(uint64_t);
        uint64_t page = 0, bad = 0, sum = 0;

        for (size_t c = 0; c < n_chunks; c++) {
                size_t npages = chunks[c].len / (size_t) page_size;
                for (size_t p = 0; p < npages; p++, page++) {
                        uint64_t *w = (uint64_t *) (chunks[c].addr + p * (size_t) page_size);
                        bool ok = true;
                        for (size_t i = 0; i < words; i++) {
                                uint64_t want = pattern(page, i);
                                if (fill)
                                        w[i] = want;
                                else if (w[i] != want)
                                        ok = false;
                                sum = (sum ^ w[i]) * 0x100000001b3ULL;
                        }
                        bad += !ok;
                }
        }
        printf("VERIFY pages=%llu bad=%llu sum=%016llx\n", (unsigned long long) page, (unsigned long long) bad,
               (unsigned long long) sum);
        fflush(stdout);
}

static void bind_chunk(struct chunk *c, int mode, const struct bitmask *bm) {
        if (mbind(c->addr, c->len, mode, bm->maskp, bm->size + 1, 0) != 0)
                die_errno("mbind");
}

static void touch(struct chunk *c) {
        for (size_t off = 0; off < c->len; off += (size_t) page_size)
                c->addr[off] = (char) (off / (size_t) page_size);
}

/* Per-node page counts of all chunks, via move_pages(2) with nodes == NULL. */
static void report_pages(void) {
        int max_node = numa_max_node();
        unsigned long *count = calloc((size_t) max_node + 2, sizeof(*count));
        enum { BATCH = 4096 };
        void *pages[BATCH];
        int status[BATCH];
        unsigned long missing = 0;

        if (!count)
                die_errno("calloc");
        for (size_t c = 0; c < n_chunks; c++) {
                size_t npages = chunks[c].len / (size_t) page_size;
                for (size_t done = 0; done < npages;) {
                        size_t n = npages - done < BATCH ? npages - done : BATCH;
                        for (size_t i = 0; i < n; i++)
                                pages[i] = chunks[c].addr + (done + i) * (size_t) page_size;
                        if (move_pages(0, n, pages, NULL, status, 0) != 0)
                                die_errno("move_pages");
                        for (size_t i = 0; i < n; i++) {
                                if (status[i] >= 0 && status[i] <= max_node)
                                        count[status[i]]++;
                                else
                                        missing++;
                        }
                        done += n;
                }
        }
        printf("PAGES");
        for (int n = 0; n <= max_node; n++)
                if (numa_bitmask_isbitset(numa_all_nodes_ptr, (unsigned) n))
                        printf(" %d=%lu", n, count[n]);
        printf(" missing=%lu pagesize=%ld\n", missing, page_size);
        fflush(stdout);
        free(count);
}

static void write_ready_file(const char *path) {
        char tmp[PATH_MAX];
        if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int) sizeof tmp) {
                errno = ENAMETOOLONG;
                die_errno(path);
        }
        FILE *f = fopen(tmp, "w");
        if (!f)
                die_errno(tmp);
        fprintf(f, "%ld\n", (long) getpid());
        if (fclose(f) != 0)
                die_errno(tmp);
        if (rename(tmp, path) != 0)
                die_errno(path);
}

struct worker {
        pthread_t tid;
        unsigned index;
        unsigned nworkers;
        int node;
        bool sweep;
        bool touch; /* first-touch its share of every chunk */
        unsigned duty; /* percent of the time it sweeps */
        bool unpin; /* run anywhere once touched */
        pthread_barrier_t *ready; /* touched (when touch) */
        volatile int cpu; /* the CPU it last ran on (sweeping workers), -1 = not yet */
};

static struct worker *workers;
static unsigned n_workers;

/* The worker's share of chunk c: pages [*from, *to). */
static void share(const struct worker *w, size_t c, size_t *from, size_t *to) {
        size_t npages = chunks[c].len / (size_t) page_size;
        size_t per = (npages + w->nworkers - 1) / w->nworkers;
        *from = per * w->index < npages ? per * w->index : npages;
        *to = *from + per < npages ? *from + per : npages;
}

/* Pages of `from`..`to` of chunk c on `node`, and how many were asked
 * (move_pages(2) with nodes == NULL). */
static unsigned long unknown_pages; /* of the last report */

static void count_on_node(size_t c, size_t from, size_t to, int node, unsigned long *on, unsigned long *all) {
        enum { BATCH = 4096 };
        void *pages[BATCH];
        int status[BATCH];
        for (size_t done = from; done < to;) {
                size_t n = to - done < BATCH ? to - done : BATCH;
                for (size_t i = 0; i < n; i++)
                        pages[i] = chunks[c].addr + (done + i) * (size_t) page_size;
                if (move_pages(0, n, pages, NULL, status, 0) != 0)
                        die_errno("move_pages");
                /* a page the kernel cannot say the node of now (a
                 * negative status) is counted nowhere */
                for (size_t i = 0; i < n; i++) {
                        *on += status[i] == node;
                        *all += status[i] >= 0;
                        unknown_pages += status[i] < 0;
                }
                done += n;
        }
}

/* With several sweeping workers (the shape of autonuma-benchmark's
 * numa02): the share of each worker's own slice on the node of the CPU it
 * last ran on, and of all slices together, in per mille, of the pages
 * whose node move_pages(2) tells, and how many it did not tell:
 * 'SLICES local=L w0=NODE:L0 w1=NODE:L1 ... unknown=N'. */
static void report_slices(void) {
        unsigned long on_all = 0, all = 0;
        unknown_pages = 0;
        char line[4096];
        size_t len = 0;
        for (unsigned i = 0; i < n_workers; i++) {
                const struct worker *w = &workers[i];
                int cpu = w->cpu;
                if (!w->sweep || cpu < 0)
                        continue;
                int node = numa_node_of_cpu(cpu);
                unsigned long on = 0, n = 0;
                for (size_t c = 0; c < n_chunks; c++) {
                        size_t from, to;
                        share(w, c, &from, &to);
                        count_on_node(c, from, to, node, &on, &n);
                }
                on_all += on;
                all += n;
                int k = snprintf(line + len, sizeof line - len, " w%u=%d:%lu", i, node, n ? 1000 * on / n : 0);
                if (k > 0 && (size_t) k < sizeof line - len)
                        len += (size_t) k;
        }
        line[len] = 0;
        printf("SLICES local=%lu%s unknown=%lu\n", all ? 1000 * on_all / all : 0, line, unknown_pages);
        fflush(stdout);
}

static void *worker_main(void *arg) {
        struct worker *w = arg;
        if (w->node >= 0 && numa_run_on_node(w->node) != 0)
                fprintf(stderr, "np-workload: worker %u: cannot run on node %d: %s\n", w->index, w->node,
                        strerror(errno));
        if (w->touch) {
                for (size_t c = 0; c < n_chunks; c++) {
                        size_t from, to;
                        share(w, c, &from, &to);
                        for (size_t p = from; p < to; p++)
                                chunks[c].addr[p * (size_t) page_size] = (char) p;
                }
                pthread_barrier_wait(w->ready);
        }
        if (w->unpin && numa_run_on_node(-1) != 0)
                fprintf(stderr, "np-workload: worker %u: cannot unpin: %s\n", w->index, strerror(errno));
        /* with --duty, busy for duty ms of every 100 ms: the busy part
         * runs on across sweeps (natively a sweep of 64 MB takes about
         * 2 ms, so a clock started at each sweep never reached the duty) */
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        while (!stop_flag) {
                if (!w->sweep) {
                        struct timespec ts = { 0, 100 * 1000 * 1000 };
                        nanosleep(&ts, NULL);
                        continue;
                }
                /* Each worker sweeps its own share of every chunk; the
                 * clock is read every 32 pages (under TCG 256 pages could
                 * take longer than the busy part, and a duty of 50 ran at
                 * 0.9 CPUs) */
                for (size_t c = 0; c < n_chunks && !stop_flag; c++) {
                        size_t from, to;
                        share(w, c, &from, &to);
                        for (size_t p = from; p < to; p++) {
                                if (verify_mode) /* reading keeps the pattern */
                                        (void) *(volatile char *) &chunks[c].addr[p * (size_t) page_size];
                                else
                                        chunks[c].addr[p * (size_t) page_size]++;
                                if ((p & 255) == 0)
                                        w->cpu = sched_getcpu();
                                if (w->duty >= 100 || (p & 31) != 0)
                                        continue;
                                clock_gettime(CLOCK_MONOTONIC, &t);
                                long ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
                                if (ms >= (long) w->duty) {
                                        struct timespec ts = { 0, (long) (100 - w->duty) * 1000 * 1000 };
                                        nanosleep(&ts, NULL);
                                        clock_gettime(CLOCK_MONOTONIC, &t0);
                                }
                        }
                }
        }
        return NULL;
}

/* len bytes of memory: private anonymous pages, or hugetlb pages with
 * --hugetlb (anonymous MAP_HUGETLB) or --hugetlb-file (a hugetlbfs file,
 * shared, as a guest's RAM), each file of --hugetlb-file PATH.N for chunk N
 * but the first. Touching it faults the pages in. */
static char *map_memory(const struct opts *o, size_t len) {
        static unsigned files;
        void *a;
        if (o->hugetlb_file) {
                char path[PATH_MAX];
                if (files == 0)
                        snprintf(path, sizeof path, "%s", o->hugetlb_file);
                else
                        snprintf(path, sizeof path, "%s.%u", o->hugetlb_file, files);
                files++;
                int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd < 0)
                        die_errno(path);
                a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                close(fd);
        } else if (o->hugetlb) {
                a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
        } else {
                a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        }
        if (a == MAP_FAILED)
                die_errno(o->hugetlb ? "mmap of hugetlb pages (are enough reserved? nr_hugepages)" : "mmap");
        return a;
}

/* --share-mb: a MAP_SHARED region with the allocation's policy, touched,
 * then mapped by a child that reads every page (so both map each one) and
 * sleeps until this process ends. The child unmaps the private memory it
 * inherited, so that stays mapped by this process only. */
static void share_with_child(const struct opts *o) {
        struct chunk sh = { .node = -1, .len = o->share_mb << 20 };
        int p[2];
        char c = 0;

        sh.addr = mmap(NULL, sh.len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (sh.addr == MAP_FAILED)
                die_errno("mmap(MAP_SHARED)");
        if (o->policy == POL_INTERLEAVE)
                bind_chunk(&sh, MPOL_INTERLEAVE, o->nodes);
        else if (o->policy == POL_BIND)
                bind_chunk(&sh, MPOL_BIND, o->nodes);
        else if (o->policy == POL_PREFERRED)
                bind_chunk(&sh, MPOL_PREFERRED, o->nodes);
        else if (o->policy == POL_PER_NODE) {
                struct bitmask *one = numa_allocate_nodemask();
                numa_bitmask_setbit(one, (unsigned) bitmask_nth(o->nodes, 0));
                bind_chunk(&sh, MPOL_BIND, one);
                numa_free_nodemask(one);
        }
        touch(&sh);
        if (o->reset_policy && mbind(sh.addr, sh.len, MPOL_DEFAULT, NULL, 0, 0) != 0)
                die_errno("mbind(MPOL_DEFAULT)");
        if (pipe(p) != 0)
                die_errno("pipe");
        pid_t parent = getpid();
        for (unsigned n = 0; n < o->share_children; n++) {
                pid_t child = fork();
                if (child < 0)
                        die_errno("fork");
                if (child == 0) {
                        volatile char sum = 0;
                        close(p[0]);
                        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
                                _exit(1);
                        /* the private memory is the parent's alone again */
                        for (size_t i = 0; i < n_chunks; i++)
                                munmap(chunks[i].addr, chunks[i].len);
                        for (size_t off = 0; off < sh.len; off += (size_t) page_size)
                                sum += sh.addr[off];
                        (void) sum;
                        if (write(p[1], "r", 1) != 1)
                                _exit(1);
                        if (o->share_busy) {
                                /* the shared memory is its only chunk: a worker of its own */
                                chunks[0] = sh;
                                n_chunks = 1;
                                struct worker w = { .index = 0,
                                                    .nworkers = 1,
                                                    .node = -1,
                                                    .sweep = true,
                                                    .duty = o->duty };
                                worker_main(&w);
                                _exit(0);
                        }
                        for (;;)
                                pause();
                }
                printf("CHILD pid=%ld\n", (long) child);
        }
        close(p[1]);
        for (unsigned n = 0; n < o->share_children; n++)
                if (read(p[0], &c, 1) != 1) {
                        fprintf(stderr, "np-workload: a --share-mb child did not map the shared memory\n");
                        exit(1);
                }
        close(p[0]);
        if (o->share_busy) { /* this process's workers sweep it too */
                struct chunk *more = realloc(chunks, (n_chunks + 1) * sizeof(*chunks));
                if (!more)
                        die_errno("realloc");
                chunks = more;
                chunks[n_chunks++] = sh;
        }
}

int main(int argc, char **argv) {
        enum {
                OPT_MB = 256,
                OPT_INTERLEAVE,
                OPT_BIND,
                OPT_PREFERRED,
                OPT_PER_NODE,
                OPT_MB_PER_NODE,
                OPT_THREADS,
                OPT_THREAD_NODES,
                OPT_SWEEP,
                OPT_SLEEP,
                OPT_DURATION,
                OPT_READY_FILE,
                OPT_REPORT,
                OPT_NO_THP,
                OPT_RESET_POLICY,
                OPT_WORKER_TOUCH,
                OPT_UNPIN,
                OPT_NO_PIN,
                OPT_DUTY,
                OPT_BUSY_THREADS,
                OPT_VERIFY,
                OPT_SHARE_MB,
                OPT_SHARE_BUSY,
                OPT_SHARE_CHILDREN,
                OPT_HUGETLB,
                OPT_HUGETLB_FILE,
        };
        static const struct option longopts[] = {
                { "mb", required_argument, NULL, OPT_MB },
                { "interleave", required_argument, NULL, OPT_INTERLEAVE },
                { "bind", required_argument, NULL, OPT_BIND },
                { "preferred", required_argument, NULL, OPT_PREFERRED },
                { "per-node", required_argument, NULL, OPT_PER_NODE },
                { "mb-per-node", required_argument, NULL, OPT_MB_PER_NODE },
                { "threads", required_argument, NULL, OPT_THREADS },
                { "thread-nodes", required_argument, NULL, OPT_THREAD_NODES },
                { "sweep", no_argument, NULL, OPT_SWEEP },
                { "sleep", no_argument, NULL, OPT_SLEEP },
                { "duration", required_argument, NULL, OPT_DURATION },
                { "ready-file", required_argument, NULL, OPT_READY_FILE },
                { "report", no_argument, NULL, OPT_REPORT },
                { "no-thp", no_argument, NULL, OPT_NO_THP },
                { "reset-policy", no_argument, NULL, OPT_RESET_POLICY },
                { "worker-touch", no_argument, NULL, OPT_WORKER_TOUCH },
                { "unpin", no_argument, NULL, OPT_UNPIN },
                { "no-pin", no_argument, NULL, OPT_NO_PIN },
                { "duty", required_argument, NULL, OPT_DUTY },
                { "busy-threads", required_argument, NULL, OPT_BUSY_THREADS },
                { "verify", no_argument, NULL, OPT_VERIFY },
                { "share-mb", required_argument, NULL, OPT_SHARE_MB },
                { "share-busy", no_argument, NULL, OPT_SHARE_BUSY },
                { "share-children", required_argument, NULL, OPT_SHARE_CHILDREN },
                { "hugetlb", no_argument, NULL, OPT_HUGETLB },
                { "hugetlb-file", required_argument, NULL, OPT_HUGETLB_FILE },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        struct opts o = { .policy = POL_DEFAULT,
                          .mb = 64,
                          .mb_per_node = 32,
                          .threads = 1,
                          .duty = 100,
                          .share_children = 1 };
        int c;

        if (numa_available() < 0) {
                fprintf(stderr, "np-workload: NUMA is not available on this system\n");
                return 1;
        }
        while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
                bool placement = false;
                switch (c) {
                case OPT_MB:
                        o.mb = parse_size(optarg, "--mb");
                        break;
                case OPT_INTERLEAVE:
                        o.nodes = parse_nodes(optarg, "--interleave");
                        o.policy = POL_INTERLEAVE;
                        placement = true;
                        break;
                case OPT_BIND:
                        o.nodes = parse_nodes(optarg, "--bind");
                        o.policy = POL_BIND;
                        placement = true;
                        break;
                case OPT_PREFERRED:
                        o.nodes = parse_nodes(optarg, "--preferred");
                        if (numa_bitmask_weight(o.nodes) != 1)
                                die_usage("%s: exactly one node expected", "--preferred");
                        o.policy = POL_PREFERRED;
                        placement = true;
                        break;
                case OPT_PER_NODE:
                        o.nodes = parse_nodes(optarg, "--per-node");
                        o.policy = POL_PER_NODE;
                        placement = true;
                        break;
                case OPT_MB_PER_NODE:
                        o.mb_per_node = parse_size(optarg, "--mb-per-node");
                        break;
                case OPT_THREADS: {
                        size_t t = parse_size(optarg, "--threads");
                        if (t > 1024)
                                die_usage("%s: at most 1024 threads", "--threads");
                        o.threads = (unsigned) t;
                        break;
                }
                case OPT_THREAD_NODES:
                        o.thread_nodes = parse_nodes(optarg, "--thread-nodes");
                        break;
                case OPT_SWEEP:
                        o.sweep = true;
                        break;
                case OPT_SLEEP:
                        o.sweep = false;
                        break;
                case OPT_DURATION: {
                        char *end;
                        o.duration = strtod(optarg, &end);
                        if (end == optarg || *end || o.duration <= 0)
                                die_usage("%s: expected a positive number of seconds", "--duration");
                        break;
                }
                case OPT_READY_FILE:
                        o.ready_file = optarg;
                        break;
                case OPT_REPORT:
                        o.report = true;
                        break;
                case OPT_NO_THP:
                        o.no_thp = true;
                        break;
                case OPT_RESET_POLICY:
                        o.reset_policy = true;
                        break;
                case OPT_WORKER_TOUCH:
                        o.worker_touch = true;
                        break;
                case OPT_UNPIN:
                        o.unpin = true;
                        break;
                case OPT_NO_PIN:
                        o.no_pin = true;
                        break;
                case OPT_BUSY_THREADS:
                        o.busy_threads = (unsigned) parse_size(optarg, "--busy-threads");
                        break;
                case OPT_DUTY: {
                        size_t d = parse_size(optarg, "--duty");
                        if (d < 1 || d > 100)
                                die_usage("%s: expected 1 to 100", "--duty");
                        o.duty = (unsigned) d;
                        break;
                }
                case OPT_SHARE_BUSY:
                        o.share_busy = true;
                        break;
                case OPT_SHARE_MB:
                        o.share_mb = parse_size(optarg, "--share-mb");
                        break;
                case OPT_SHARE_CHILDREN: {
                        size_t n = parse_size(optarg, "--share-children");
                        if (n > 64)
                                die_usage("%s: at most 64", "--share-children");
                        o.share_children = (unsigned) n;
                        break;
                }
                case OPT_VERIFY:
                        o.verify = true;
                        break;
                case OPT_HUGETLB:
                        o.hugetlb = true;
                        break;
                case OPT_HUGETLB_FILE:
                        o.hugetlb = true;
                        o.hugetlb_file = optarg;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
                if (placement && o.policy != POL_DEFAULT) {
                        static bool seen;
                        if (seen)
                                die_usage("choose only one of --interleave, --bind, --preferred, --per-node");
                        seen = true;
                }
        }
        if (optind < argc)
                die_usage("unexpected argument '%s'", argv[optind]);
        if (o.hugetlb && o.share_mb)
                die_usage("--hugetlb and --share-mb do not go together");

        page_size = sysconf(_SC_PAGESIZE);
        setvbuf(stdout, NULL, _IOLBF, 0);

        /* Allocate and place. */
        if (o.policy == POL_PER_NODE) {
                n_chunks = (size_t) numa_bitmask_weight(o.nodes);
                chunks = calloc(n_chunks, sizeof(*chunks));
                if (!chunks)
                        die_errno("calloc");
                struct bitmask *one = numa_allocate_nodemask();
                for (size_t i = 0; i < n_chunks; i++) {
                        chunks[i].node = bitmask_nth(o.nodes, (unsigned) i);
                        chunks[i].len = o.mb_per_node << 20;
                        chunks[i].addr = map_memory(&o, chunks[i].len);
                        numa_bitmask_clearall(one);
                        numa_bitmask_setbit(one, (unsigned) chunks[i].node);
                        bind_chunk(&chunks[i], MPOL_BIND, one);
                }
                numa_free_nodemask(one);
        } else {
                n_chunks = 1;
                chunks = calloc(1, sizeof(*chunks));
                if (!chunks)
                        die_errno("calloc");
                chunks[0].node = -1;
                chunks[0].len = o.mb << 20;
                chunks[0].addr = map_memory(&o, chunks[0].len);
                if (o.policy == POL_INTERLEAVE)
                        bind_chunk(&chunks[0], MPOL_INTERLEAVE, o.nodes);
                else if (o.policy == POL_BIND)
                        bind_chunk(&chunks[0], MPOL_BIND, o.nodes);
                else if (o.policy == POL_PREFERRED)
                        bind_chunk(&chunks[0], MPOL_PREFERRED, o.nodes);
        }
        for (size_t i = 0; i < n_chunks; i++) {
                if (o.no_thp && !o.hugetlb && madvise(chunks[i].addr, chunks[i].len, MADV_NOHUGEPAGE) != 0)
                        die_errno("madvise(MADV_NOHUGEPAGE)");
                if (!o.worker_touch && !o.verify) /* --verify fills every page itself */
                        touch(&chunks[i]);
        }
        if (o.share_mb)
                share_with_child(&o);
        verify_mode = o.verify;
        if (o.verify)
                verify_pages(true);

        size_t total_mb = 0;
        for (size_t i = 0; i < n_chunks; i++)
                total_mb += chunks[i].len >> 20;

        struct sigaction sa = { 0 };
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
        sa.sa_handler = on_usr2;
        sigaction(SIGUSR2, &sa, NULL);

        /* Workers. */
        struct bitmask *tn = o.thread_nodes ? o.thread_nodes : (o.policy != POL_DEFAULT ? o.nodes : NULL);
        if (o.no_pin)
                tn = NULL;
        workers = calloc(o.threads, sizeof(*workers));
        n_workers = o.threads;
        pthread_barrier_t touched;
        if (!workers)
                die_errno("calloc");
        if (o.worker_touch && pthread_barrier_init(&touched, NULL, o.threads + 1) != 0)
                die_errno("pthread_barrier_init");
        for (unsigned i = 0; i < o.threads; i++) {
                workers[i].index = i;
                workers[i].nworkers = o.threads;
                workers[i].sweep = o.sweep && (o.busy_threads == 0 || i < o.busy_threads);
                workers[i].touch = o.worker_touch;
                workers[i].duty = o.duty;
                workers[i].unpin = o.unpin;
                workers[i].ready = &touched;
                workers[i].cpu = -1;
                workers[i].node = tn ? bitmask_nth(tn, i % (unsigned) numa_bitmask_weight(tn)) : -1;
                int err = pthread_create(&workers[i].tid, NULL, worker_main, &workers[i]);
                if (err) {
                        errno = err;
                        die_errno("pthread_create");
                }
        }

        if (o.worker_touch)
                pthread_barrier_wait(&touched);
        if (o.reset_policy) {
                /* allocated with the policy; from now on the default one */
                for (size_t i = 0; i < n_chunks; i++)
                        if (mbind(chunks[i].addr, chunks[i].len, MPOL_DEFAULT, NULL, 0, 0) != 0)
                                die_errno("mbind(MPOL_DEFAULT)");
        }
        if (o.report)
                report_pages();
        printf("READY pid=%ld mb=%zu\n", (long) getpid(), total_mb);
        if (o.ready_file)
                write_ready_file(o.ready_file);

        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (!stop_flag) {
                struct timespec ts = { 0, 50 * 1000 * 1000 };
                nanosleep(&ts, NULL);
                if (report_flag) {
                        report_flag = 0;
                        report_pages();
                        if (o.threads > 1 && o.sweep)
                                report_slices();
                }
                if (verify_flag) {
                        verify_flag = 0;
                        if (verify_mode)
                                verify_pages(false);
                }
                if (o.duration > 0) {
                        clock_gettime(CLOCK_MONOTONIC, &now);
                        double el = (double) (now.tv_sec - start.tv_sec) + (double) (now.tv_nsec - start.tv_nsec) / 1e9;
                        if (el >= o.duration)
                                stop_flag = 1;
                }
        }
        for (unsigned i = 0; i < o.threads; i++)
                pthread_join(workers[i].tid, NULL);
        free(workers);
        if (o.hugetlb_file)
                unlink(o.hugetlb_file);
        return 0;
}
