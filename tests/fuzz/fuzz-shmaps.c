/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fuzz np_parse_shmaps(): /proc/PID/maps (file names in it are any user's
 * choice). Checks every mapping returned is a shmem one with a sane range,
 * an error comes with a message and an emptied result, and what is kept
 * renders to maps lines that parse back to the same. */
#include <errno.h>
#include <inttypes.h>

#include "fuzz.h"
#include "np-shmaps.h"

static const char *path_of(NpShmapKind kind) {
        switch (kind) {
        case NP_SHMAP_SYSV:
                return "/SYSV00000000 (deleted)";
        case NP_SHMAP_MEMFD:
                return "/memfd:x (deleted)";
        case NP_SHMAP_DEVSHM:
                return "/dev/shm/x";
        case NP_SHMAP_ANON:
                return "/dev/zero (deleted)";
        }
        return NULL;
}

static char *render(const GArray *a) FUZZ_NO_COVERAGE;

static char *render(const GArray *a) {
        GString *out = g_string_new(NULL);
        for (guint i = 0; i < a->len; i++) {
                const NpShmap *m = &g_array_index(a, NpShmap, i);
                g_string_append_printf(out, "%" PRIx64 "-%" PRIx64 " rw-s 00000000 %02x:%02x %" PRIu64 " %s\n",
                                       m->start, m->end, m->dev_major, m->dev_minor, m->inode, path_of(m->kind));
        }
        return g_string_free(out, FALSE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autofree char *buf = NULL;
        g_autoptr(GError) error = NULL;
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(NpShmap));
        g_autoptr(GArray) files = g_array_new(FALSE, FALSE, sizeof(NpFileMap));
        NpShmap stale = { .start = 1, .end = 2 };
        NpFileMap stale_file = { .start = 1, .end = 2 };

        fuzz_setup();
        buf = fuzz_cstring(data, size);
        g_array_append_val(a, stale);
        g_array_append_val(files, stale_file);
        int r = np_parse_shmaps(buf, a, files, &error);
        if (r < 0) {
                FUZZ_ASSERT(r == -EINVAL);
                FUZZ_ASSERT(error && error->message[0]);
                FUZZ_ASSERT(a->len == 0 && files->len == 0);
                return 0;
        }
        FUZZ_ASSERT(r == 0 && !error);
        size_t lines = 0;
        for (const char *p = buf; *p; p++)
                lines += *p == '\n' || p[1] == '\0';
        FUZZ_ASSERT(a->len + files->len <= lines);
        for (guint i = 0; i < files->len; i++)
                FUZZ_ASSERT(g_array_index(files, NpFileMap, i).start <= g_array_index(files, NpFileMap, i).end);
        /* the shmem mappings are the same whether the files are wanted */
        g_autoptr(GArray) c = g_array_new(FALSE, FALSE, sizeof(NpShmap));
        FUZZ_ASSERT(np_parse_shmaps(buf, c, NULL, NULL) == 0 && c->len == a->len);
        for (guint i = 0; i < a->len; i++) {
                const NpShmap *m = &g_array_index(a, NpShmap, i);
                FUZZ_ASSERT(m->start <= m->end);
                FUZZ_ASSERT(m->dev_major == 0);
                FUZZ_ASSERT(path_of(m->kind) != NULL);
                FUZZ_ASSERT(strcmp(np_shmap_kind_name(m->kind), "?") != 0);
        }
        g_autofree char *again = render(a);
        g_autoptr(GArray) b = g_array_new(FALSE, FALSE, sizeof(NpShmap));
        FUZZ_ASSERT(np_parse_shmaps(again, b, NULL, NULL) == 0);
        FUZZ_ASSERT(b->len == a->len);
        for (guint i = 0; i < a->len; i++) {
                const NpShmap *x = &g_array_index(a, NpShmap, i), *y = &g_array_index(b, NpShmap, i);
                FUZZ_ASSERT(x->start == y->start && x->end == y->end && x->dev_major == y->dev_major &&
                            x->dev_minor == y->dev_minor && x->inode == y->inode && x->kind == y->kind);
        }
        return 0;
}
