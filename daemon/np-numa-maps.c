/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-numa-maps.h"

#include <errno.h>
#include <string.h>

#include "np-lex.h"
#include "np-sysroot.h"

typedef struct {
        unsigned node;
        uint64_t pages;
} LinePages;

static void add_bytes(GArray *acc, unsigned node, uint64_t bytes) {
        if (node >= acc->len) {
                guint old = acc->len;
                g_array_set_size(acc, node + 1);
                memset(&g_array_index(acc, uint64_t, old), 0, (node + 1 - old) * sizeof(uint64_t));
        }
        g_array_index(acc, uint64_t, node) += bytes;
}

/* Hugetlb bytes of one page size on one node, added to huge (NpHugeBytes). */
static void add_huge(GArray *huge, unsigned node, uint64_t page_bytes, uint64_t bytes) {
        for (guint i = 0; i < huge->len; i++) {
                NpHugeBytes *h = &g_array_index(huge, NpHugeBytes, i);
                if (h->node == node && h->page_bytes == page_bytes) {
                        h->bytes += bytes;
                        return;
                }
        }
        NpHugeBytes h = { .node = node, .page_bytes = page_bytes, .bytes = bytes };
        g_array_append_val(huge, h);
}

static gint cmp_huge(gconstpointer a, gconstpointer b) {
        const NpHugeBytes *x = a, *y = b;
        if (x->page_bytes != y->page_bytes)
                return x->page_bytes < y->page_bytes ? -1 : 1;
        return (x->node > y->node) - (x->node < y->node);
}

/* The file= paths of shmem objects, as numa_maps escapes them (a space is
 * \040): shared anonymous memory, SysV shm, memfd, POSIX shm. */
static const char *const shm_paths[] = { "/dev/zero\\040(deleted)", "/SYSV", "/memfd:", "/dev/shm/" };

static bool is_shm_path(const char *b, const char *e) {
        for (size_t i = 0; i < G_N_ELEMENTS(shm_paths); i++) {
                size_t n = strlen(shm_paths[i]);
                if ((size_t) (e - b) >= n && memcmp(b, shm_paths[i], n) == 0)
                        return true;
        }
        return false;
}

static void shm_clear(gpointer x) {
        NpNumaMapsShm *s = x;
        if (s->per_node)
                g_array_unref(s->per_node);
}

static gint cmp_node_bytes(gconstpointer a, gconstpointer b) {
        const NpNodeBytes *x = a, *y = b;
        return (x->node > y->node) - (x->node < y->node);
}

/* A line of a shmem object, appended to m->shm. */
static void add_shm(NpNumaMaps *m, uint64_t start, uint64_t page_bytes, uint64_t mapmax, const GArray *line_pages,
                    uint64_t line_bytes) {
        NpNumaMapsShm s = {
                .start = start,
                .page_bytes = page_bytes,
                .bytes = line_bytes,
                .mapmax = mapmax > UINT_MAX ? UINT_MAX
                        : mapmax            ? (unsigned) mapmax
                                            : 1,
                .per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes)),
        };
        for (guint i = 0; i < line_pages->len; i++) {
                const LinePages *lp = &g_array_index(line_pages, LinePages, i);
                guint j = 0;
                while (j < s.per_node->len && g_array_index(s.per_node, NpNodeBytes, j).node != lp->node)
                        j++;
                if (j < s.per_node->len)
                        g_array_index(s.per_node, NpNodeBytes, j).bytes += lp->pages * page_bytes;
                else if (lp->pages) {
                        NpNodeBytes nb = { .node = lp->node, .bytes = lp->pages * page_bytes };
                        g_array_append_val(s.per_node, nb);
                }
        }
        g_array_sort(s.per_node, cmp_node_bytes);
        if (!m->shm) {
                m->shm = g_array_new(FALSE, FALSE, sizeof(NpNumaMapsShm));
                g_array_set_clear_func(m->shm, shm_clear);
        }
        g_array_append_val(m->shm, s);
}

/* One numa_maps line [p, eol): "<addr> <policy> [key=value | flag]...".
 * Adds to acc (bytes per node, indexed by node), huge (NpHugeBytes of the
 * lines marked huge), file_acc (bytes per node of the page cache's
 * lines), the totals in m and, for a shmem object, m->shm. */
static int numa_maps_line(const char *p, const char *eol, GArray *line_pages, GArray *acc, GArray *huge_acc,
                          GArray *file_acc, NpNumaMaps *m) {
        const char *q = p;
        uint64_t start = 0;
        /* start address, hex */
        while (q < eol && g_ascii_isxdigit(*q)) {
                if (start >> 60)
                        return -EINVAL;
                start = start << 4 | (uint64_t) g_ascii_xdigit_value(*q);
                q++;
        }
        if (q == p || q == eol || !np_lex_blank(*q))
                return -EINVAL;
        q = np_lex_skip_blanks(q);
        bool interleave = (eol - q >= 10 && memcmp(q, "interleave", 10) == 0) ||
                (eol - q >= 19 && memcmp(q, "weighted interleave", 19) == 0);
        bool default_policy = eol - q >= 7 && memcmp(q, "default", 7) == 0 && (eol - q == 7 || np_lex_blank(q[7]));

        uint64_t page_kb = 4, mapmax = 0;
        bool huge = false, shm = false, file = false;
        g_array_set_size(line_pages, 0);

        while (q < eol) {
                q = np_lex_skip_blanks(q);
                const char *b = q;
                while (q < eol && !np_lex_blank(*q))
                        q++;
                const char *e = q;
                if (b == e)
                        break;
                if (e - b == 4 && memcmp(b, "huge", 4) == 0) {
                        huge = true;
                } else if (e - b > 5 && memcmp(b, "file=", 5) == 0) {
                        file = true;
                        shm = is_shm_path(b + 5, e);
                } else if (e - b > 7 && memcmp(b, "mapmax=", 7) == 0) {
                        if (np_lex_token_u64(b + 7, e, &mapmax) < 0)
                                return -EINVAL;
                } else if (e - b > 18 && memcmp(b, "kernelpagesize_kB=", 18) == 0) {
                        if (np_lex_token_u64(b + 18, e, &page_kb) < 0 || page_kb == 0)
                                return -EINVAL;
                } else if (*b == 'N' && e - b > 1 && b[1] >= '0' && b[1] <= '9') {
                        const char *c = b + 1;
                        uint64_t node, pages;
                        if (np_lex_u64(&c, &node) < 0 || *c != '=' || node >= NP_LEX_MAX_NODE_ID)
                                return -EINVAL;
                        if (np_lex_token_u64(c + 1, e, &pages) < 0)
                                return -EINVAL;
                        LinePages lp = { .node = (unsigned) node, .pages = pages };
                        g_array_append_val(line_pages, lp);
                }
                /* anything else (policy, file=, anon=, dirty=, ...) is not needed */
        }

        uint64_t line_bytes = 0;
        for (unsigned i = 0; i < line_pages->len; i++) {
                LinePages *lp = &g_array_index(line_pages, LinePages, i);
                uint64_t bytes;
                if (__builtin_mul_overflow(lp->pages, page_kb * 1024, &bytes) ||
                    __builtin_add_overflow(line_bytes, bytes, &line_bytes))
                        return -EINVAL;
                add_bytes(acc, lp->node, bytes);
                if (file && !shm && !huge)
                        add_bytes(file_acc, lp->node, bytes);
                if (huge && bytes)
                        add_huge(huge_acc, lp->node, page_kb * 1024, bytes);
        }
        if (__builtin_add_overflow(m->total_bytes, line_bytes, &m->total_bytes))
                return -EINVAL;
        if (huge)
                m->huge_bytes += line_bytes;
        if (interleave)
                m->interleaved_bytes += line_bytes;
        if (default_policy && !huge && !shm) {
                m->balanced_bytes += line_bytes;
                if (file && line_bytes) {
                        if (!m->files)
                                m->files = g_array_new(FALSE, FALSE, sizeof(NpNumaMapsFile));
                        NpNumaMapsFile f = { .start = start, .bytes = line_bytes };
                        g_array_append_val(m->files, f);
                }
        }
        if (shm && line_bytes)
                add_shm(m, start, page_kb * 1024, mapmax, line_pages, line_bytes);
        return 0;
}

/* The bytes of acc (indexed by node) appended to out as NpNodeBytes, in
 * node order, nodes with none left out. */
static void by_node(const GArray *acc, GArray *out) {
        for (unsigned node = 0; node < acc->len; node++) {
                uint64_t b = g_array_index(acc, uint64_t, node);
                if (b) {
                        NpNodeBytes nb = { .node = node, .bytes = b };
                        g_array_append_val(out, nb);
                }
        }
}

int np_parse_numa_maps(const char *buf, NpNumaMaps *out) {
        if (!buf || !out)
                return -EINVAL;
        NpNumaMaps m = { .per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes)) };
        g_autoptr(GArray) acc = g_array_new(FALSE, TRUE, sizeof(uint64_t));
        g_autoptr(GArray) line_pages = g_array_new(FALSE, FALSE, sizeof(LinePages));
        g_autoptr(GArray) huge = g_array_new(FALSE, FALSE, sizeof(NpHugeBytes));
        g_autoptr(GArray) file_acc = g_array_new(FALSE, TRUE, sizeof(uint64_t));

        for (const char *line = buf; *line;) {
                const char *eol = strchr(line, '\n');
                if (!eol)
                        eol = line + strlen(line);
                if (eol > line && numa_maps_line(line, eol, line_pages, acc, huge, file_acc, &m) < 0) {
                        np_numa_maps_clear(&m);
                        return -EINVAL;
                }
                line = *eol ? eol + 1 : eol;
        }
        by_node(acc, m.per_node);
        if (file_acc->len) {
                m.file_per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
                by_node(file_acc, m.file_per_node);
                if (m.file_per_node->len == 0)
                        g_clear_pointer(&m.file_per_node, g_array_unref);
        }
        if (huge->len) {
                g_array_sort(huge, cmp_huge);
                m.huge_per_node = g_steal_pointer(&huge);
        }
        *out = m;
        return 0;
}

void np_numa_maps_clear(NpNumaMaps *m) {
        if (!m)
                return;
        if (m->per_node)
                g_array_unref(m->per_node);
        if (m->huge_per_node)
                g_array_unref(m->huge_per_node);
        if (m->shm)
                g_array_unref(m->shm);
        if (m->files)
                g_array_unref(m->files);
        if (m->file_per_node)
                g_array_unref(m->file_per_node);
        memset(m, 0, sizeof(*m));
}

void np_numa_maps_copy(const NpNumaMaps *src, NpNumaMaps *dst) {
        *dst = *src;
        dst->per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        if (src->per_node && src->per_node->len)
                g_array_append_vals(dst->per_node, src->per_node->data, src->per_node->len);
        dst->huge_per_node = NULL;
        if (src->huge_per_node && src->huge_per_node->len) {
                dst->huge_per_node = g_array_sized_new(FALSE, FALSE, sizeof(NpHugeBytes), src->huge_per_node->len);
                g_array_append_vals(dst->huge_per_node, src->huge_per_node->data, src->huge_per_node->len);
        }
        dst->files = src->files ? g_array_copy(src->files) : NULL;
        dst->file_per_node = src->file_per_node ? g_array_copy(src->file_per_node) : NULL;
        dst->shm = NULL;
        for (guint i = 0; src->shm && i < src->shm->len; i++) {
                NpNumaMapsShm c = g_array_index(src->shm, NpNumaMapsShm, i);
                c.per_node = g_array_copy(c.per_node);
                if (!dst->shm) {
                        dst->shm = g_array_sized_new(FALSE, FALSE, sizeof(NpNumaMapsShm), src->shm->len);
                        g_array_set_clear_func(dst->shm, shm_clear);
                }
                g_array_append_val(dst->shm, c);
        }
}

uint64_t np_numa_maps_node_bytes(const NpNumaMaps *m, unsigned node) {
        for (unsigned i = 0; m && m->per_node && i < m->per_node->len; i++) {
                const NpNodeBytes *nb = &g_array_index(m->per_node, NpNodeBytes, i);
                if (nb->node == node)
                        return nb->bytes;
        }
        return 0;
}

uint64_t np_node_bytes_sum(const GArray *a) {
        uint64_t sum = 0;
        for (guint j = 0; a && j < a->len; j++)
                sum += g_array_index(a, NpNodeBytes, j).bytes;
        return sum;
}

bool np_node_bytes_equal(const GArray *a, const GArray *b) {
        guint na = a ? a->len : 0, nb = b ? b->len : 0;
        if (na != nb)
                return false;
        /* field by field: memcmp would compare the padding after .node too */
        for (guint i = 0; i < na; i++) {
                const NpNodeBytes *x = &g_array_index(a, NpNodeBytes, i), *y = &g_array_index(b, NpNodeBytes, i);
                if (x->node != y->node || x->bytes != y->bytes)
                        return false;
        }
        return true;
}

void np_node_bytes_add(GArray *acc, const GArray *add) {
        for (guint k = 0; add && k < add->len; k++) {
                const NpNodeBytes *b = &g_array_index(add, NpNodeBytes, k);
                guint j = 0;
                while (j < acc->len && g_array_index(acc, NpNodeBytes, j).node < b->node)
                        j++;
                if (j < acc->len && g_array_index(acc, NpNodeBytes, j).node == b->node)
                        g_array_index(acc, NpNodeBytes, j).bytes += b->bytes;
                else
                        g_array_insert_val(acc, j, *b);
        }
}

void np_node_bytes_subtract(GArray *acc, const GArray *sub) {
        for (guint k = 0; sub && k < sub->len; k++) {
                const NpNodeBytes *b = &g_array_index(sub, NpNodeBytes, k);
                for (guint j = 0; j < acc->len; j++) {
                        NpNodeBytes *x = &g_array_index(acc, NpNodeBytes, j);
                        if (x->node == b->node)
                                x->bytes = x->bytes > b->bytes ? x->bytes - b->bytes : 0;
                }
        }
}

NpMask *np_numa_maps_nodes(const NpNumaMaps *m) {
        NpMask *mask = np_mask_new();
        for (unsigned i = 0; m && m->per_node && i < m->per_node->len; i++) {
                const NpNodeBytes *nb = &g_array_index(m->per_node, NpNodeBytes, i);
                if (nb->bytes)
                        np_mask_set(mask, nb->node);
        }
        return mask;
}

int np_read_numa_maps(int pid, NpNumaMaps *out) {
        if (pid <= 0)
                return -EINVAL;
        g_autofree char *buf = NULL;
        int r = np_read_filef(&buf, NULL, "/proc/%d/numa_maps", pid);
        if (r < 0)
                return (r == -ENOENT || r == -ESRCH) ? -ESRCH : r;
        return np_parse_numa_maps(buf, out);
}
