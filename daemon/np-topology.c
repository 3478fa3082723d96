/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-topology.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "np-sysroot.h"
#include "np-test-api.h"

#define NODE_DIR "/sys/devices/system/node"

static void node_free(gpointer p) {
        NpNode *n = p;
        if (!n)
                return;
        np_mask_free(n->cpus);
        if (n->distances)
                g_array_unref(n->distances);
        g_free(n);
}

void np_topology_free(NpTopology *t) {
        if (!t)
                return;
        if (t->nodes)
                g_ptr_array_unref(t->nodes);
        np_mask_free(t->online);
        np_mask_free(t->with_memory);
        np_mask_free(t->with_cpus);
        np_mask_free(t->all_cpus);
        np_mask_free(t->cpus_online);
        g_free(t);
}

static NpTopology *topology_new(void) {
        NpTopology *t = g_new0(NpTopology, 1);
        t->nodes = g_ptr_array_new_with_free_func(node_free);
        t->online = np_mask_new();
        t->with_memory = np_mask_new();
        t->with_cpus = np_mask_new();
        t->all_cpus = np_mask_new();
        return t;
}

static NpNode *node_new(unsigned id) {
        NpNode *n = g_new0(NpNode, 1);
        n->id = id;
        n->cpus = np_mask_new();
        n->distances = g_array_new(FALSE, TRUE, sizeof(NpDistance));
        return n;
}

/* Parse a decimal unsigned 64-bit number at *pp; advances *pp. */
static int parse_u64(const char **pp, uint64_t *out) {
        const char *p = *pp;
        uint64_t v = 0;
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        *pp = p;
        *out = v;
        return 0;
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

int np_parse_meminfo_value(const char *buf, const char *key, uint64_t *bytes) {
        if (!buf || !key || !*key)
                return -EINVAL;
        size_t klen = strlen(key);
        for (const char *line = buf; line && *line;) {
                const char *eol = strchr(line, '\n');
                const char *p = line;
                /* per-node files prefix each line with "Node <id> " */
                if (strncmp(p, "Node ", 5) == 0) {
                        p += 5;
                        while (*p >= '0' && *p <= '9')
                                p++;
                        while (is_blank(*p))
                                p++;
                }
                if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
                        p += klen + 1;
                        while (is_blank(*p))
                                p++;
                        uint64_t v;
                        int r = parse_u64(&p, &v);
                        if (r < 0)
                                return -EINVAL;
                        while (is_blank(*p))
                                p++;
                        uint64_t mult = 1;
                        if (strncmp(p, "kB", 2) == 0) {
                                mult = 1024;
                                p += 2;
                        }
                        while (is_blank(*p))
                                p++;
                        if (*p && *p != '\n')
                                return -EINVAL;
                        if (v > UINT64_MAX / mult)
                                return -EINVAL;
                        *bytes = v * mult;
                        return 0;
                }
                line = eol ? eol + 1 : NULL;
        }
        return -ENOENT;
}

int np_parse_distance_line(const char *buf, const NpMask *online, GArray *out) {
        if (!buf || !online || !out)
                return -EINVAL;
        unsigned want = np_mask_weight(online);
        g_autoptr(GArray) tmp = g_array_sized_new(FALSE, FALSE, sizeof(NpDistance), want);
        const char *p = buf;
        int node = np_mask_first(online);
        for (;;) {
                while (is_blank(*p))
                        p++;
                if (!*p || *p == '\n')
                        break;
                uint64_t v;
                if (parse_u64(&p, &v) < 0 || v > UINT_MAX)
                        return -EINVAL;
                if (*p && !is_blank(*p) && *p != '\n')
                        return -EINVAL;
                if (node < 0)
                        return -EINVAL; /* more distances than online nodes */
                NpDistance d = { .node = (unsigned) node, .distance = (unsigned) v };
                g_array_append_val(tmp, d);
                node = np_mask_next(online, node);
        }
        /* only whitespace may follow the line */
        if (*p == '\n')
                for (p++; *p; p++)
                        if (!g_ascii_isspace(*p))
                                return -EINVAL;
        if (tmp->len != want || want == 0)
                return -EINVAL;
        g_array_set_size(out, 0);
        g_array_append_vals(out, tmp->data, tmp->len);
        return 0;
}

static gint node_cmp(gconstpointer a, gconstpointer b) {
        const NpNode *x = *(NpNode *const *) a, *y = *(NpNode *const *) b;
        return x->id < y->id ? -1 : x->id > y->id;
}

NpNode *np_topology_node(const NpTopology *t, unsigned id) {
        if (!t || !t->nodes)
                return NULL;
        unsigned lo = 0, hi = t->nodes->len;
        while (lo < hi) {
                unsigned mid = lo + (hi - lo) / 2;
                NpNode *n = g_ptr_array_index(t->nodes, mid);
                if (n->id == id)
                        return n;
                if (n->id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

unsigned np_topology_distance(const NpTopology *t, unsigned a, unsigned b) {
        NpNode *n = np_topology_node(t, a);
        if (!n)
                return 0;
        for (unsigned i = 0; i < n->distances->len; i++) {
                NpDistance *d = &g_array_index(n->distances, NpDistance, i);
                if (d->node == b)
                        return d->distance;
        }
        return 0;
}

NpMask *np_topology_cpus_of(const NpTopology *t, const NpMask *nodes) {
        NpMask *m = np_mask_new();
        NP_MASK_FOREACH (id, nodes) {
                NpNode *n = np_topology_node(t, (unsigned) id);
                if (n)
                        np_mask_or(m, n->cpus);
        }
        return m;
}

int np_topology_node_of_cpu(const NpTopology *t, unsigned cpu) {
        for (unsigned i = 0; t && i < t->nodes->len; i++) {
                NpNode *n = g_ptr_array_index(t->nodes, i);
                if (np_mask_test(n->cpus, cpu))
                        return (int) n->id;
        }
        return -1;
}

/* Read and parse a list file below the root. */
static int read_mask(const char *path, NpMask **out) {
        g_autofree char *buf = NULL;
        int r = np_read_file(path, &buf, NULL);
        if (r < 0)
                return r;
        return np_mask_parse(buf, out);
}

static int set_error(GError **error, int r, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static int set_error(GError **error, int r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *msg = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "%s%s: %s", np_sysroot_get(), msg,
                    g_strerror(-r));
        return r;
}

static void finish(NpTopology *t) {
        g_ptr_array_sort(t->nodes, node_cmp);
        int last = -1;
        for (unsigned i = 0; i < t->nodes->len; i++) {
                NpNode *n = g_ptr_array_index(t->nodes, i);
                np_mask_set(t->online, n->id);
                np_mask_or(t->all_cpus, n->cpus);
                if (!np_mask_empty(n->cpus))
                        np_mask_set(t->with_cpus, n->id);
        }
        last = np_mask_last(t->all_cpus);
        if ((unsigned) (last + 1) > t->max_cpu)
                t->max_cpu = (unsigned) (last + 1);
}

uint64_t np_parse_hugepages_dir(const char *name) {
        if (!name || strncmp(name, "hugepages-", 10) != 0)
                return 0;
        const char *p = name + 10;
        uint64_t kb;
        if (parse_u64(&p, &kb) < 0 || strcmp(p, "kB") != 0 || kb == 0 || kb > UINT64_MAX / 1024)
                return 0;
        return kb * 1024;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return (x > y) - (x < y);
}

/* The hugetlb page sizes (a kernel without hugetlb has none). */
static void load_huge_sizes(NpTopology *t) {
        g_autofree char *dir = np_path("/sys/kernel/mm/hugepages");
        DIR *d = opendir(dir);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d)) && t->n_huge_sizes < NP_HUGE_SIZES_MAX) {
                uint64_t size = np_parse_hugepages_dir(de->d_name);
                if (size)
                        t->huge_sizes[t->n_huge_sizes++] = size;
        }
        closedir(d);
        qsort(t->huge_sizes, t->n_huge_sizes, sizeof(uint64_t), cmp_u64);
}

static int load_synthetic(NpTopology *t, GError **error) {
        g_autoptr(NpMask) cpus = NULL;
        int r = read_mask("/sys/devices/system/cpu/online", &cpus);
        if (r < 0)
                return set_error(error, r, "/sys/devices/system/cpu/online");
        g_autofree char *buf = NULL;
        r = np_read_file("/proc/meminfo", &buf, NULL);
        if (r < 0)
                return set_error(error, r, "/proc/meminfo");
        NpNode *n = node_new(0);
        g_ptr_array_add(t->nodes, n);
        r = np_parse_meminfo_value(buf, "MemTotal", &n->mem_total_bytes);
        if (r < 0)
                return set_error(error, r, "/proc/meminfo: MemTotal");
        np_mask_assign(n->cpus, cpus);
        t->cpus_online = np_mask_copy(cpus);
        NpDistance d = { .node = 0, .distance = 10 };
        g_array_append_val(n->distances, d);
        if (n->mem_total_bytes > 0)
                np_mask_set(t->with_memory, 0);
        t->synthetic = true;
        finish(t);
        load_huge_sizes(t);
        return 0;
}

int np_topology_load(NpTopology **out, GError **error) {
        g_autoptr(NpTopology) t = topology_new();
        g_autofree char *dir = np_path(NODE_DIR);
        struct stat st;
        int r;

        if (stat(dir, &st) < 0) {
                if (errno != ENOENT)
                        return set_error(error, -errno, NODE_DIR);
                r = load_synthetic(t, error);
                if (r < 0)
                        return r;
                *out = g_steal_pointer(&t);
                return 0;
        }

        g_autoptr(NpMask) online = NULL;
        r = read_mask(NODE_DIR "/online", &online);
        if (r < 0)
                return set_error(error, r, NODE_DIR "/online");
        if (np_mask_empty(online))
                return set_error(error, -EINVAL, NODE_DIR "/online: no online node");

        /* Optional: online CPUs, to drop offline CPUs from the node lists. */
        g_autoptr(NpMask) cpu_online = NULL;
        r = read_mask("/sys/devices/system/cpu/online", &cpu_online);
        if (r < 0 && r != -ENOENT)
                return set_error(error, r, "/sys/devices/system/cpu/online");

        /* Optional: has_memory (N_MEMORY); without it, MemTotal > 0 decides. */
        g_autoptr(NpMask) has_memory = NULL;
        r = read_mask(NODE_DIR "/has_memory", &has_memory);
        if (r < 0 && r != -ENOENT)
                return set_error(error, r, NODE_DIR "/has_memory");

        NP_MASK_FOREACH (id, online) {
                NpNode *n = node_new((unsigned) id);
                g_ptr_array_add(t->nodes, n);

                g_autofree char *path = g_strdup_printf(NODE_DIR "/node%d/cpulist", id);
                g_autoptr(NpMask) cpus = NULL;
                r = read_mask(path, &cpus);
                if (r < 0)
                        return set_error(error, r, "%s", path);
                if (cpu_online)
                        np_mask_and(cpus, cpu_online);
                np_mask_assign(n->cpus, cpus);

                g_free(path);
                path = g_strdup_printf(NODE_DIR "/node%d/meminfo", id);
                g_autofree char *buf = NULL;
                r = np_read_file(path, &buf, NULL);
                if (r < 0)
                        return set_error(error, r, "%s", path);
                r = np_parse_meminfo_value(buf, "MemTotal", &n->mem_total_bytes);
                if (r < 0)
                        return set_error(error, r == -ENOENT ? -EINVAL : r, "%s: MemTotal", path);

                g_free(path);
                g_clear_pointer(&buf, g_free);
                path = g_strdup_printf(NODE_DIR "/node%d/distance", id);
                r = np_read_file(path, &buf, NULL);
                if (r < 0)
                        return set_error(error, r, "%s", path);
                r = np_parse_distance_line(buf, online, n->distances);
                if (r < 0)
                        return set_error(error, r, "%s: does not match online nodes", path);

                if (has_memory ? np_mask_test(has_memory, (unsigned) id) : n->mem_total_bytes > 0)
                        np_mask_set(t->with_memory, (unsigned) id);
        }

        finish(t);
        load_huge_sizes(t);
        if (cpu_online)
                t->cpus_online = np_mask_copy(cpu_online);
        int last_online = np_mask_last(cpu_online);
        if (last_online >= 0 && (unsigned) (last_online + 1) > t->max_cpu)
                t->max_cpu = (unsigned) (last_online + 1);
        *out = g_steal_pointer(&t);
        return 0;
}

/* ---- changes at run time ---- */

/* Does the list file at path differ from `known`? false when it cannot be
 * read or parsed (nothing to compare with), or known is NULL. */
static bool list_differs(const char *path, const NpMask *known) {
        g_autofree char *buf = NULL;
        g_autoptr(NpMask) now = NULL;
        if (!known || np_read_file_kept(path, &buf, NULL) < 0 || np_mask_parse(buf, &now) < 0)
                return false;
        return !np_mask_equal(now, known);
}

bool np_topology_outdated(const NpTopology *t) {
        if (list_differs("/sys/devices/system/cpu/online", t->cpus_online))
                return true;
        return !t->synthetic && list_differs(NODE_DIR "/online", t->online);
}

bool np_topology_memory_differs(const NpTopology *t, const NpNodeTotal *totals, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const NpNode *node = np_topology_node(t, totals[i].id);
                if (node && node->mem_total_bytes != totals[i].bytes)
                        return true;
        }
        return false;
}

bool np_topology_diff(const NpTopology *before, const NpTopology *after, NpTopologyDiff *out) {
        *out = (NpTopologyDiff){
                .added = np_mask_copy(after->online),
                .removed = np_mask_copy(before->online),
                .cpus_changed = np_mask_new(),
                .memory_changed = np_mask_new(),
        };
        np_mask_andnot(out->added, before->online);
        np_mask_andnot(out->removed, after->online);
        for (guint i = 0; i < after->nodes->len; i++) {
                const NpNode *a = after->nodes->pdata[i];
                const NpNode *b = np_topology_node(before, a->id);
                if (!b)
                        continue;
                if (!np_mask_equal(a->cpus, b->cpus))
                        np_mask_set(out->cpus_changed, a->id);
                if (a->mem_total_bytes != b->mem_total_bytes ||
                    np_mask_test(after->with_memory, a->id) != np_mask_test(before->with_memory, a->id))
                        np_mask_set(out->memory_changed, a->id);
        }
        return !np_mask_empty(out->added) || !np_mask_empty(out->removed) || !np_mask_empty(out->cpus_changed) ||
                !np_mask_empty(out->memory_changed);
}

void np_topology_diff_clear(NpTopologyDiff *d) {
        g_clear_pointer(&d->added, np_mask_free);
        g_clear_pointer(&d->removed, np_mask_free);
        g_clear_pointer(&d->cpus_changed, np_mask_free);
        g_clear_pointer(&d->memory_changed, np_mask_free);
}

static char *cpus_text(const NpNode *n) {
        return np_mask_empty(n->cpus) ? g_strdup("none") : np_mask_format(n->cpus);
}

char *np_topology_diff_describe(const NpTopology *before, const NpTopology *after, const NpTopologyDiff *d) {
        g_autoptr(NpMask) all = np_mask_copy(before->online);
        np_mask_or(all, after->online);
        GString *s = g_string_new(NULL);
        NP_MASK_FOREACH (id, all) {
                const NpNode *b = np_topology_node(before, (unsigned) id);
                const NpNode *a = np_topology_node(after, (unsigned) id);
                GString *clause = g_string_new(NULL);
                if (np_mask_test(d->added, (unsigned) id)) {
                        g_autofree char *cpus = cpus_text(a);
                        g_string_append_printf(clause, "added (CPUs %s, memory %" G_GUINT64_FORMAT " MiB)", cpus,
                                               a->mem_total_bytes >> 20);
                } else if (np_mask_test(d->removed, (unsigned) id)) {
                        g_string_append(clause, "removed");
                } else {
                        if (np_mask_test(d->cpus_changed, (unsigned) id)) {
                                g_autofree char *from = cpus_text(b), *to = cpus_text(a);
                                g_string_append_printf(clause, "CPUs %s -> %s", from, to);
                        }
                        if (np_mask_test(d->memory_changed, (unsigned) id))
                                g_string_append_printf(
                                        clause, "%smemory %" G_GUINT64_FORMAT " MiB -> %" G_GUINT64_FORMAT " MiB",
                                        clause->len ? ", " : "", b->mem_total_bytes >> 20, a->mem_total_bytes >> 20);
                }
                if (clause->len)
                        g_string_append_printf(s, "%snode %d: %s", s->len ? "; " : "", id, clause->str);
                g_string_free(clause, TRUE);
        }
        return g_string_free(s, FALSE);
}
