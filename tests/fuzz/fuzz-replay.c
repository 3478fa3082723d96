/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Replay a corpus through one fuzz target without libFuzzer: every regular
 * file in every directory (or file) named on the command line is passed to
 * LLVMFuzzerTestOneInput() once. TAP output, one test point per directory
 * argument; a crash is the test failing. Used by the `unit` suite with the
 * normal (gcc) build, so every corpus file stays a regression test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"

static int run_file(const char *path) {
        g_autofree char *data = NULL;
        g_autoptr(GError) e = NULL;
        gsize len = 0;

        if (!g_file_get_contents(path, &data, &len, &e)) {
                printf("# cannot read %s: %s\n", path, e->message);
                return -EIO;
        }
        (void) LLVMFuzzerTestOneInput((const uint8_t *) data, len);
        return 0;
}

static gint cmp_names(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int main(int argc, char **argv) {
        int failed = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
                return 2;
        }
        printf("1..%d\n", argc - 1);
        for (int i = 1; i < argc; i++) {
                g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
                unsigned n = 0, bad = 0;

                if (g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
                        g_autoptr(GDir) d = g_dir_open(argv[i], 0, NULL);
                        const char *name;

                        while (d && (name = g_dir_read_name(d)))
                                if (name[0] != '.')
                                        g_ptr_array_add(files, g_build_filename(argv[i], name, NULL));
                        g_ptr_array_sort(files, cmp_names);
                } else
                        g_ptr_array_add(files, g_strdup(argv[i]));
                for (guint k = 0; k < files->len; k++) {
                        if (!g_file_test(files->pdata[k], G_FILE_TEST_IS_REGULAR))
                                continue;
                        if (run_file(files->pdata[k]) < 0)
                                bad++;
                        n++;
                }
                /* an empty corpus would test nothing */
                if (n == 0 || bad) {
                        printf("not ok %d - %s: %u inputs, %u unreadable\n", i, argv[i], n, bad);
                        failed = 1;
                } else
                        printf("ok %d - %s: %u inputs replayed\n", i, argv[i], n);
        }
        return failed;
}
