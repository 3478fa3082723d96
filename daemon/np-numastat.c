/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-numastat.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "np-lex.h"
#include "np-sysroot.h"

typedef enum { ITEM_OTHER = -1, ITEM_ANON, ITEM_FILE, ITEM_SHMEM, ITEM_N } Item;

static Item item_of(const char *name, size_t len) {
        static const char *const names[ITEM_N] = { "anon", "file", "shmem" };
        for (int i = 0; i < ITEM_N; i++)
                if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
                        return (Item) i;
        return ITEM_OTHER;
}

static uint64_t *item_slot(NpNumaStatNode *n, Item item) {
        switch (item) {
        case ITEM_ANON:
                return &n->anon;
        case ITEM_FILE:
                return &n->file;
        default:
                return &n->shmem;
        }
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

G_GNUC_PRINTF(3, 4) static int bad_line(GError **error, unsigned lineno, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *why = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "memory.numa_stat line %u: %s", lineno, why);
        return -EINVAL;
}

/* One token "N<id>=<value>" [b, e) into *node, *value. */
static int node_token(const char *b, const char *e, unsigned lineno, uint64_t *node, uint64_t *value, GError **error) {
        int len = (int) MIN(e - b, 64);
        const char *eq = memchr(b, '=', (size_t) (e - b));
        if (!eq)
                return bad_line(error, lineno, "'%.*s' has no '='", len, b);
        const char *p = b + 1;
        if (*b != 'N' || np_lex_u64(&p, node) < 0 || p != eq)
                return bad_line(error, lineno, "'%.*s' does not name a node as N<id>", len, b);
        if (*node > NP_NODE_MAX_ID)
                return bad_line(error, lineno, "node %" G_GUINT64_FORMAT " is above %u", *node, NP_NODE_MAX_ID);
        p = eq + 1;
        if (np_lex_u64(&p, value) < 0) {
                bool digits = eq + 1 < e && eq[1] >= '0' && eq[1] <= '9';
                return bad_line(error, lineno, digits ? "'%.*s' does not fit 64 bits" : "'%.*s' is not a number", len,
                                b);
        }
        if (p != e)
                return bad_line(error, lineno, "'%.*s' is not a number", len, b);
        return 0;
}

/* One line [p, eol), not empty. acc is indexed by node id; present holds
 * the nodes seen in any line, in_line those of this one. */
static int numa_stat_line(const char *p, const char *eol, unsigned lineno, bool *seen, GArray *acc, NpMask *present,
                          NpMask *in_line, GError **error) {
        const char *name = p;
        while (p < eol && !is_blank(*p))
                p++;
        size_t name_len = (size_t) (p - name);
        if (name_len == 0 || memchr(name, '=', name_len))
                return bad_line(error, lineno, "'%.*s' is not an item name", (int) MIN(name_len, 64), name);
        Item item = item_of(name, name_len);
        if (item != ITEM_OTHER) {
                if (seen[item])
                        return bad_line(error, lineno, "item %.*s a second time", (int) name_len, name);
                seen[item] = true;
        }
        np_mask_zero(in_line);
        while (p < eol) {
                while (p < eol && is_blank(*p))
                        p++;
                const char *b = p;
                while (p < eol && !is_blank(*p))
                        p++;
                if (b == p)
                        break;
                uint64_t node = 0, value = 0;
                int r = node_token(b, p, lineno, &node, &value, error);
                if (r < 0)
                        return r;
                if (np_mask_test(in_line, (unsigned) node))
                        return bad_line(error, lineno, "node %u a second time", (unsigned) node);
                np_mask_set(in_line, (unsigned) node);
                np_mask_set(present, (unsigned) node);
                if (node >= acc->len)
                        g_array_set_size(acc, (guint) node + 1);
                if (item != ITEM_OTHER)
                        *item_slot(&g_array_index(acc, NpNumaStatNode, node), item) = value;
        }
        return 0;
}

int np_parse_numa_stat(const char *buf, NpNumaStat *out, GError **error) {
        g_return_val_if_fail(buf && out, -EINVAL);
        g_autoptr(GArray) acc = g_array_new(FALSE, TRUE, sizeof(NpNumaStatNode));
        g_autoptr(NpMask) present = np_mask_new();
        g_autoptr(NpMask) in_line = np_mask_new();
        bool seen[ITEM_N] = { false };
        unsigned lineno = 0;

        for (const char *line = buf; *line;) {
                const char *eol = strchr(line, '\n');
                if (!eol)
                        eol = line + strlen(line);
                lineno++;
                if (eol > line) {
                        int r = numa_stat_line(line, eol, lineno, seen, acc, present, in_line, error);
                        if (r < 0)
                                return r;
                }
                line = *eol ? eol + 1 : eol;
        }
        GArray *per_node = g_array_sized_new(FALSE, FALSE, sizeof(NpNumaStatNode), np_mask_weight(present));
        NP_MASK_FOREACH (node, present) {
                NpNumaStatNode n = g_array_index(acc, NpNumaStatNode, node);
                n.node = (unsigned) node;
                g_array_append_val(per_node, n);
        }
        out->per_node = per_node;
        return 0;
}

void np_numa_stat_clear(NpNumaStat *s) {
        if (s)
                g_clear_pointer(&s->per_node, g_array_unref);
}

const NpNumaStatNode *np_numa_stat_node(const NpNumaStat *s, unsigned node) {
        for (guint i = 0; s && s->per_node && i < s->per_node->len; i++) {
                const NpNumaStatNode *n = &g_array_index(s->per_node, NpNumaStatNode, i);
                if (n->node == node)
                        return n;
        }
        return NULL;
}

/* A cgroup path as /proc/PID/cgroup shows it: absolute, no ".." component
 * (which would lead out of the mount). */
static bool cgroup_path_ok(const char *cgroup) {
        if (!cgroup || cgroup[0] != '/')
                return false;
        for (const char *p = cgroup; (p = strstr(p, "..")); p += 2)
                if (p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
                        return false;
        return true;
}

int np_read_numa_stat(const char *cgroup2_mount, const char *cgroup, NpNumaStat *out, GError **error) {
        if (!cgroup2_mount || !cgroup_path_ok(cgroup)) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "not a cgroup path: '%s'",
                            cgroup ? cgroup : "(null)");
                return -EINVAL;
        }
        size_t n = strlen(cgroup);
        while (n > 0 && cgroup[n - 1] == '/')
                n--;
        g_autofree char *path = g_strdup_printf("%s%.*s/memory.numa_stat", cgroup2_mount, (int) n, cgroup);
        g_autofree char *buf = NULL;
        int r = np_read_file(path, &buf, NULL);
        if (r < 0) {
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot read %s: %s", path,
                            g_strerror(-r));
                return r;
        }
        r = np_parse_numa_stat(buf, out, error);
        if (r < 0)
                g_prefix_error(error, "%s: ", path);
        return r;
}
