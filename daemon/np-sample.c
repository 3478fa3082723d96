/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-sample.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "np-sysroot.h"
#include "np-test-api.h"

/* ---- small lexing helpers ---------------------------------------------- */

/* A whole token [s, e) as a signed decimal number. */
static int tok_i64(const char *s, const char *e, int64_t *out) {
        bool neg = s < e && *s == '-';
        uint64_t v;
        if (np_lex_token_u64(s + neg, e, &v) < 0)
                return -EINVAL;
        if (neg) {
                if (v > (uint64_t) INT64_MAX + 1)
                        return -EINVAL;
                *out = v == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) v;
        } else {
                if (v > INT64_MAX)
                        return -EINVAL;
                *out = (int64_t) v;
        }
        return 0;
}

static int tok_int(const char *s, const char *e, int *out) {
        int64_t v;
        if (tok_i64(s, e, &v) < 0 || v < INT_MIN || v > INT_MAX)
                return -EINVAL;
        *out = (int) v;
        return 0;
}

/* A vanished process shows up as ENOENT (open) or ESRCH (read). */
static int gone_or(int r) {
        return (r == -ENOENT || r == -ESRCH) ? -ESRCH : r;
}

/* ---- /proc/stat -------------------------------------------------------- */

#define MAX_CPU_ID (1u << 20)

int np_parse_proc_stat(const char *buf, GArray *per_cpu) {
        if (!buf || !per_cpu || g_array_get_element_size(per_cpu) != sizeof(NpCpuTicks))
                return -EINVAL;
        g_array_set_size(per_cpu, 0);
        bool any = false;
        for (const char *line = buf; line && *line;) {
                const char *eol = strchr(line, '\n');
                const char *next = eol ? eol + 1 : NULL;
                if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9') {
                        line = next;
                        continue;
                }
                const char *p = line + 3;
                uint64_t cpu;
                if (np_lex_u64(&p, &cpu) < 0 || cpu >= MAX_CPU_ID || !np_lex_blank(*p))
                        goto bad;
                uint64_t v[10] = { 0 };
                unsigned n = 0;
                for (;;) {
                        p = np_lex_skip_blanks(p);
                        if (!*p || *p == '\n')
                                break;
                        uint64_t x;
                        if (np_lex_u64(&p, &x) < 0 || (*p && !np_lex_blank(*p) && *p != '\n'))
                                goto bad;
                        if (n < G_N_ELEMENTS(v))
                                v[n] = x;
                        n++;
                }
                if (n < 4) /* user nice system idle are always there */
                        goto bad;
                /* user nice system idle iowait irq softirq steal guest guest_nice;
                 * guest time is already part of user time. Counters whose sum
                 * does not fit 64 bits are not ticks: a wrapped sum would make
                 * busy larger than total. */
                NpCpuTicks tk = { 0 };
                static const unsigned busy_fields[] = { 0, 1, 2, 5, 6, 7 }, idle_fields[] = { 3, 4 };
                for (unsigned i = 0; i < G_N_ELEMENTS(busy_fields); i++)
                        if (__builtin_add_overflow(tk.busy, v[busy_fields[i]], &tk.busy))
                                goto bad;
                tk.total = tk.busy;
                for (unsigned i = 0; i < G_N_ELEMENTS(idle_fields); i++)
                        if (__builtin_add_overflow(tk.total, v[idle_fields[i]], &tk.total))
                                goto bad;
                if (cpu >= per_cpu->len) {
                        guint old = per_cpu->len;
                        g_array_set_size(per_cpu, (guint) cpu + 1);
                        memset(&g_array_index(per_cpu, NpCpuTicks, old), 0,
                               ((guint) cpu + 1 - old) * sizeof(NpCpuTicks));
                }
                g_array_index(per_cpu, NpCpuTicks, cpu) = tk;
                any = true;
                line = next;
        }
        if (!any)
                goto bad;
        return 0;
bad:
        g_array_set_size(per_cpu, 0);
        return -EINVAL;
}

/* ---- per node ---------------------------------------------------------- */

static double cpu_busy_fraction(const GArray *prev, const GArray *cur, unsigned cpu) {
        if (!prev || cpu >= prev->len || cpu >= cur->len)
                return 0.0;
        const NpCpuTicks *a = &g_array_index(prev, NpCpuTicks, cpu);
        const NpCpuTicks *b = &g_array_index(cur, NpCpuTicks, cpu);
        /* iowait may go backwards on NOHZ kernels and hotplug resets counters */
        if (b->total <= a->total || b->busy < a->busy)
                return 0.0;
        double f = (double) (b->busy - a->busy) / (double) (b->total - a->total);
        return f > 1.0 ? 1.0 : f;
}

/* The machine's pool of one size: 0 with *nr and *free (not read when *nr
 * is 0), or a negative errno. */
static int read_machine_pool(uint64_t page_bytes, guint64 *nr, guint64 *free) {
        char path[96];
        snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/nr_hugepages", page_bytes / 1024);
        int r = np_read_u64_kept(path, nr);
        if (r < 0 || *nr == 0)
                return r; /* no page of this size: nothing free either */
        snprintf(path, sizeof path, "/sys/kernel/mm/hugepages/hugepages-%" PRIu64 "kB/free_hugepages",
                 page_bytes / 1024);
        return np_read_u64_kept(path, free);
}

/* The pools of the sizes that have pages, on every node of out. */
static void sample_pools(const NpTopology *t, GArray *out, NpHugeSample *huge) {
        NpHugeSample h = { 0 };
        for (unsigned k = 0; k < t->n_huge_sizes; k++) {
                guint64 nr, free;
                uint64_t size = t->huge_sizes[k];
                if (read_machine_pool(size, &nr, &free) < 0 || nr == 0)
                        continue; /* no page of this size anywhere: no pool to count */
                h.in_use = h.in_use || nr > free;
                h.used_pages += nr > free ? nr - free : 0;
                for (guint i = 0; i < out->len; i++) {
                        NpNodeSample *s = &g_array_index(out, NpNodeSample, i);
                        char path[128];
                        guint64 node_free = 0;
                        if (t->synthetic)
                                node_free = free;
                        else {
                                snprintf(path, sizeof path,
                                         "/sys/devices/system/node/node%u/hugepages/hugepages-%" PRIu64
                                         "kB/free_hugepages",
                                         s->id, size / 1024);
                                (void) np_read_u64_kept(path, &node_free);
                        }
                        s->huge[s->n_huge++] = (NpHugePool){ .page_bytes = size, .free_pages = node_free };
                }
        }
        if (huge)
                *huge = h;
}

/* Node n's meminfo (the machine's for a synthetic topology) into *mi. */
static int read_node_meminfo(const NpTopology *t, const NpNode *n, char **mi) {
        if (t->synthetic)
                return np_read_file_kept("/proc/meminfo", mi, NULL);
        char path[64];
        snprintf(path, sizeof path, "/sys/devices/system/node/node%u/meminfo", n->id);
        return np_read_file_kept(path, mi, NULL);
}

int np_sample_mem_free_now(const NpTopology *t, const NpNode *n, uint64_t *free_bytes, uint64_t *total_bytes) {
        if (!t || !n || !free_bytes || !total_bytes)
                return -EINVAL;
        g_autofree char *mi = NULL;
        int r = read_node_meminfo(t, n, &mi);
        if (r < 0)
                return r;
        if (np_parse_meminfo_value(mi, "MemFree", free_bytes) < 0)
                return -EINVAL;
        if (np_parse_meminfo_value(mi, "MemTotal", total_bytes) < 0)
                *total_bytes = n->mem_total_bytes;
        return 0;
}

int np_sample_nodes(const NpTopology *t, bool inactive_file_is_free, const GArray *prev_ticks, GArray *ticks_out,
                    GArray *out, NpHugeSample *huge) {
        if (!t || !out)
                return -EINVAL;
        g_autoptr(GArray) own_ticks = NULL;
        if (!ticks_out)
                ticks_out = own_ticks = g_array_new(FALSE, TRUE, sizeof(NpCpuTicks));

        g_autofree char *stat = NULL;
        int r = np_read_file_kept("/proc/stat", &stat, NULL);
        if (r < 0)
                return r;
        r = np_parse_proc_stat(stat, ticks_out);
        if (r < 0)
                return r;

        g_array_set_size(out, 0);
        for (unsigned i = 0; i < t->nodes->len; i++) {
                const NpNode *n = g_ptr_array_index(t->nodes, i);
                NpNodeSample s = {
                        .id = n->id,
                        .mem_total_bytes = n->mem_total_bytes,
                        .cpu_capacity = (double) np_mask_weight(n->cpus),
                };

                g_autofree char *mi = NULL;
                r = read_node_meminfo(t, n, &mi);
                if (r < 0)
                        return r;
                uint64_t v;
                if (np_parse_meminfo_value(mi, "MemTotal", &v) == 0)
                        s.mem_total_bytes = v; /* memory hotplug */
                r = np_parse_meminfo_value(mi, "MemFree", &s.mem_free_strict_bytes);
                if (r < 0)
                        return -EINVAL;
                s.mem_free_bytes = s.mem_free_strict_bytes;
                if (inactive_file_is_free && np_parse_meminfo_value(mi, "Inactive(file)", &v) == 0)
                        s.mem_free_bytes += v;

                NP_MASK_FOREACH (cpu, n->cpus)
                        s.cpu_busy += cpu_busy_fraction(prev_ticks, ticks_out, (unsigned) cpu);

                g_array_append_val(out, s);
        }
        sample_pools(t, out, huge);
        return 0;
}

static void sample_totals(const GArray *samples, double *used, double *busy) {
        *used = *busy = 0;
        for (guint i = 0; i < samples->len; i++) {
                const NpNodeSample *s = &g_array_index(samples, NpNodeSample, i);
                if (s->mem_total_bytes > s->mem_free_bytes)
                        *used += (double) (s->mem_total_bytes - s->mem_free_bytes);
                /* free huge pages count as used in meminfo: a process's are not */
                for (unsigned k = 0; k < s->n_huge; k++)
                        *used -= (double) s->huge[k].free_pages * (double) s->huge[k].page_bytes;
                *busy += s->cpu_busy;
        }
}

bool np_sample_gained(const GArray *before, const GArray *now, uint64_t mem, double cpu, double own_cpu) {
        if (!before || !now)
                return false;
        double used0, busy0, used1, busy1;
        sample_totals(before, &used0, &busy0);
        sample_totals(now, &used1, &busy1);
        return used1 - used0 >= (double) mem || (cpu > 0 && busy1 - busy0 - MAX(0.0, own_cpu) >= cpu);
}

/* ---- /proc/<pid>/stat --------------------------------------------------- */

int np_parse_pid_stat(const char *buf, NpPidStat *out) {
        if (!buf || !out)
                return -EINVAL;
        NpPidStat s = { 0 };
        const char *p = buf;

        uint64_t pid;
        if (np_lex_u64(&p, &pid) < 0 || pid > INT_MAX || p[0] != ' ' || p[1] != '(')
                return -EINVAL;
        s.pid = (int) pid;

        /* comm may hold anything but NUL, ')' included: it ends at the last ')' */
        const char *open = p + 1;
        const char *close = strrchr(open, ')');
        if (!close)
                return -EINVAL;
        size_t len = (size_t) (close - open - 1);
        if (len > NP_COMM_MAX - 1)
                len = NP_COMM_MAX - 1;
        memcpy(s.comm, open + 1, len);
        s.comm[len] = '\0';

        /* fields 3 (state) .. 39 (processor), numbered as in proc(5) */
        p = close + 1;
        for (unsigned field = 3; field <= 39; field++) {
                if (*p != ' ')
                        return -EINVAL;
                const char *b = ++p;
                while (*p && *p != ' ' && *p != '\n')
                        p++;
                const char *e = p;
                if (e == b)
                        return -EINVAL;
                int r = 0;
                uint64_t u;
                int64_t i;
                switch (field) {
                case 3:
                        if (e - b != 1)
                                return -EINVAL;
                        s.state = *b;
                        break;
                case 4:
                        r = tok_int(b, e, &s.ppid);
                        break;
                case 9:
                        r = np_lex_token_u64(b, e, &u);
                        if (r == 0 && u > ULONG_MAX)
                                r = -EINVAL;
                        s.flags = (unsigned long) u;
                        break;
                case 14:
                        r = np_lex_token_u64(b, e, &s.utime);
                        break;
                case 15:
                        r = np_lex_token_u64(b, e, &s.stime);
                        break;
                case 20:
                        r = tok_i64(b, e, &i);
                        if (r == 0 && (i < LONG_MIN || i > LONG_MAX))
                                r = -EINVAL;
                        s.num_threads = (long) i;
                        break;
                case 22:
                        r = np_lex_token_u64(b, e, &s.starttime);
                        break;
                case 23:
                        r = np_lex_token_u64(b, e, &s.vsize);
                        break;
                case 24:
                        r = tok_i64(b, e, &s.rss_pages);
                        break;
                case 39:
                        r = tok_int(b, e, &s.processor);
                        break;
                default:
                        break;
                }
                if (r < 0)
                        return -EINVAL;
        }
        *out = s;
        return 0;
}

int np_read_pid_stat(int pid, NpPidStat *out) {
        char path[PATH_MAX];
        char buf[4096];

        if (pid <= 0)
                return -EINVAL;
        int n = snprintf(path, sizeof(path), "%s/proc/%d/stat", np_sysroot_get(), pid);
        if (n < 0 || (size_t) n >= sizeof(path))
                return -ENAMETOOLONG;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return gone_or(-errno);
        ssize_t k;
        do
                k = read(fd, buf, sizeof(buf) - 1);
        while (k < 0 && errno == EINTR);
        int saved = errno;
        close(fd);
        if (k < 0)
                return gone_or(-saved);
        if (k == 0)
                return -ESRCH; /* exited between open and read */
        if ((size_t) k == sizeof(buf) - 1)
                return -EINVAL; /* far longer than any stat line */
        buf[k] = '\0';
        return np_parse_pid_stat(buf, out);
}

/* ---- /proc/<pid>/status ------------------------------------------------- */

static int status_mask(const char *v, const char *eol, NpMask **slot) {
        g_autofree char *s = eol ? g_strndup(v, (gsize) (eol - v)) : g_strdup(v);
        NpMask *m = NULL;
        int r = np_mask_parse(s, &m);
        if (r < 0)
                return -EINVAL;
        np_mask_free(*slot);
        *slot = m;
        return 0;
}

/* "<number>" or "<number> kB" (then in bytes); for "Uid:" only the first of
 * the four numbers (the real uid) is read. */
static int status_number(const char *v, bool kb, uint64_t *out) {
        const char *p = v;
        uint64_t x;
        if (np_lex_u64(&p, &x) < 0 || (*p && *p != '\n' && !np_lex_blank(*p)))
                return -EINVAL;
        if (kb) {
                p = np_lex_skip_blanks(p);
                if (strncmp(p, "kB", 2) != 0 || x > UINT64_MAX / 1024)
                        return -EINVAL;
                x *= 1024;
                p = np_lex_skip_blanks(p + 2);
                if (*p && *p != '\n')
                        return -EINVAL;
        }
        *out = x;
        return 0;
}

int np_parse_pid_status(const char *buf, NpPidStatus *out) {
        if (!buf || !out)
                return -EINVAL;
        NpPidStatus s = { 0 };
        bool have_uid = false, have_threads = false;
        int r = 0;

        for (const char *line = buf; line && *line;) {
                const char *start = line;
                const char *eol = strchr(line, '\n');
                const char *colon = memchr(line, ':', eol ? (size_t) (eol - line) : strlen(line));
                line = eol ? eol + 1 : NULL;
                if (!colon)
                        continue;
                size_t klen = (size_t) (colon - start);
                const char *v = np_lex_skip_blanks(colon + 1);
                uint64_t x;
#define KEY(name) (klen == sizeof(name) - 1 && memcmp(start, name, klen) == 0)
                if (KEY("VmRSS")) {
                        r = status_number(v, true, &s.vm_rss_bytes);
                } else if (KEY("HugetlbPages")) {
                        r = status_number(v, true, &s.hugetlb_bytes);
                } else if (KEY("Threads")) {
                        r = status_number(v, false, &x);
                        if (r == 0 && x > UINT_MAX)
                                r = -EINVAL;
                        s.threads = (unsigned) x;
                        have_threads = r == 0;
                } else if (KEY("Uid")) {
                        r = status_number(v, false, &x);
                        if (r == 0 && x > UINT_MAX)
                                r = -EINVAL;
                        s.uid = (unsigned) x;
                        have_uid = r == 0;
                } else if (KEY("Cpus_allowed_list")) {
                        r = status_mask(v, eol, &s.cpus_allowed);
                } else if (KEY("Mems_allowed_list")) {
                        r = status_mask(v, eol, &s.mems_allowed);
                }
#undef KEY
                if (r < 0)
                        break;
        }
        if (r == 0 && (!have_uid || !have_threads))
                r = -EINVAL;
        if (r < 0) {
                np_pid_status_clear(&s);
                return -EINVAL;
        }
        *out = s;
        return 0;
}

int np_parse_status_hugetlb(const char *buf, uint64_t *bytes) {
        if (!buf || !bytes)
                return -EINVAL;
        static const char key[] = "HugetlbPages:";
        for (const char *p = buf; p && *p;) {
                if (strncmp(p, key, sizeof key - 1) == 0)
                        return status_number(np_lex_skip_blanks(p + sizeof key - 1), true, bytes) < 0 ? -EINVAL : 0;
                p = strchr(p, '\n');
                p = p ? p + 1 : NULL;
        }
        *bytes = 0;
        return 0;
}

int np_parse_sched_numa_migrated(const char *buf, uint64_t *pages) {
        if (!buf || !pages)
                return -EINVAL;
        static const char key[] = "numa_pages_migrated";
        for (const char *p = buf; p && *p;) {
                if (strncmp(p, key, sizeof key - 1) == 0 &&
                    (np_lex_blank(p[sizeof key - 1]) || p[sizeof key - 1] == ':')) {
                        const char *v = np_lex_skip_blanks(p + sizeof key - 1);
                        if (*v != ':')
                                return -EINVAL;
                        v = np_lex_skip_blanks(v + 1);
                        uint64_t x;
                        if (np_lex_u64(&v, &x) < 0)
                                return -EINVAL;
                        v = np_lex_skip_blanks(v);
                        if (*v && *v != '\n')
                                return -EINVAL;
                        *pages = x;
                        return 0;
                }
                p = strchr(p, '\n');
                p = p ? p + 1 : NULL;
        }
        return -ENOENT;
}

/* "KEY=NUMBER" at *p (after blanks): the number, *p past it. */
static int faults_field(const char **p, const char *key, uint64_t *v) {
        const char *s = np_lex_skip_blanks(*p);
        size_t n = strlen(key);
        if (strncmp(s, key, n) != 0 || s[n] != '=')
                return -EINVAL;
        s += n + 1;
        if (np_lex_u64(&s, v) < 0 || (*s && *s != '\n' && !np_lex_blank(*s)))
                return -EINVAL;
        *p = s;
        return 0;
}

int np_parse_sched_numa_faults(const char *buf, GArray **out) {
        if (!buf || !out)
                return -EINVAL;
        static const char key[] = "numa_faults";
        g_autoptr(GArray) a = NULL;
        for (const char *p = buf; p && *p;) {
                if (strncmp(p, key, sizeof key - 1) == 0 && np_lex_blank(p[sizeof key - 1])) {
                        const char *s = p + sizeof key - 1;
                        uint64_t node, priv, shared;
                        if (faults_field(&s, "node", &node) < 0 || node >= NP_LEX_MAX_NODE_ID ||
                            faults_field(&s, "task_private", &priv) < 0 || faults_field(&s, "task_shared", &shared) < 0)
                                return -EINVAL;
                        NpNodeFaults f = { (unsigned) node, priv, shared };
                        if (!a)
                                a = g_array_new(FALSE, FALSE, sizeof(NpNodeFaults));
                        g_array_append_val(a, f);
                }
                p = strchr(p, '\n');
                p = p ? p + 1 : NULL;
        }
        if (!a)
                return -ENOENT;
        *out = g_steal_pointer(&a);
        return 0;
}

void np_node_cpu_add(GArray *acc, const GArray *add) {
        for (guint k = 0; add && k < add->len; k++) {
                const NpNodeCpu *c = &g_array_index(add, NpNodeCpu, k);
                guint j = 0;
                while (j < acc->len && g_array_index(acc, NpNodeCpu, j).node != c->node)
                        j++;
                if (j < acc->len)
                        g_array_index(acc, NpNodeCpu, j).cpu += c->cpu;
                else
                        g_array_append_val(acc, *c);
        }
}

void np_pid_status_clear(NpPidStatus *s) {
        if (!s)
                return;
        g_clear_pointer(&s->cpus_allowed, np_mask_free);
        g_clear_pointer(&s->mems_allowed, np_mask_free);
        memset(s, 0, sizeof(*s));
}

/* ---- pids, clock ------------------------------------------------------- */

static gint int_cmp(gconstpointer a, gconstpointer b) {
        int x = *(const int *) a, y = *(const int *) b;
        return x < y ? -1 : x > y;
}

GArray *np_list_pids(void) {
        GArray *pids = g_array_new(FALSE, FALSE, sizeof(int));
        g_autofree char *dir = np_path("/proc");
        DIR *d = opendir(dir);
        if (!d)
                return pids;
        struct dirent *de;
        while ((de = readdir(d))) {
                const char *p = de->d_name;
                uint64_t v;
                if (np_lex_u64(&p, &v) < 0 || *p || v == 0 || v > INT_MAX)
                        continue;
                int pid = (int) v;
                g_array_append_val(pids, pid);
        }
        closedir(d);
        g_array_sort(pids, int_cmp);
        return pids;
}

long np_clock_ticks(void) {
        static long ticks;
        if (!ticks) {
                long t = sysconf(_SC_CLK_TCK);
                ticks = t > 0 ? t : 100;
        }
        return ticks;
}
