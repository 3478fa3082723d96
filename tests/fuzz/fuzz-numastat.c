/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_numa_stat(): cgroup v2 memory.numa_stat (written by the
 * kernel; a fixture root or a future kernel may write anything). Checks
 * the nodes are sorted and bounded, an error comes with a message and
 * leaves the result untouched, and what is kept renders to a file that
 * parses back to the same. */
#include <errno.h>

#include "fuzz.h"
#include "np-numastat.h"

static char *render(const NpNumaStat *s) FUZZ_NO_COVERAGE;

static char *render(const NpNumaStat *s) {
        GString *out = g_string_new(NULL);
        static const char *const names[] = { "anon", "file", "shmem" };
        for (int item = 0; item < 3; item++) {
                g_string_append(out, names[item]);
                for (guint i = 0; i < s->per_node->len; i++) {
                        const NpNumaStatNode *n = &g_array_index(s->per_node, NpNumaStatNode, i);
                        uint64_t v = item == 0 ? n->anon : item == 1 ? n->file : n->shmem;
                        g_string_append_printf(out, " N%u=%" G_GUINT64_FORMAT, n->node, v);
                }
                g_string_append_c(out, '\n');
        }
        return g_string_free(out, FALSE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autofree char *buf = NULL;
        g_autoptr(GError) error = NULL;
        NpNumaStat s = { .per_node = NULL };

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        int r = np_parse_numa_stat(buf, &s, &error);
        if (r < 0) {
                FUZZ_ASSERT(r == -EINVAL);
                FUZZ_ASSERT(error && error->message[0]);
                FUZZ_ASSERT(s.per_node == NULL);
                return 0;
        }
        FUZZ_ASSERT(r == 0 && !error && s.per_node);
        for (guint i = 0; i < s.per_node->len; i++) {
                const NpNumaStatNode *n = &g_array_index(s.per_node, NpNumaStatNode, i);
                FUZZ_ASSERT(n->node <= NP_NODE_MAX_ID);
                FUZZ_ASSERT(i == 0 || g_array_index(s.per_node, NpNumaStatNode, i - 1).node < n->node);
                FUZZ_ASSERT(np_numa_stat_node(&s, n->node) == n);
        }
        g_autofree char *again = render(&s);
        NpNumaStat t = { .per_node = NULL };
        FUZZ_ASSERT(np_parse_numa_stat(again, &t, NULL) == 0);
        FUZZ_ASSERT(t.per_node->len == s.per_node->len);
        for (guint i = 0; i < s.per_node->len; i++) {
                const NpNumaStatNode *x = &g_array_index(s.per_node, NpNumaStatNode, i);
                const NpNumaStatNode *y = &g_array_index(t.per_node, NpNumaStatNode, i);
                FUZZ_ASSERT(x->node == y->node && x->anon == y->anon && x->file == y->file && x->shmem == y->shmem);
        }
        np_numa_stat_clear(&t);
        np_numa_stat_clear(&s);
        np_numa_stat_clear(&s);
        return 0;
}
