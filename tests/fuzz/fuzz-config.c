/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz np_config_load(): a main file plus drop-ins, read from a real
 * directory. The input is split at NUL bytes (which no valid file holds):
 * the first part is numaplaced.conf, each further part (up to 8) a drop-in
 * numaplaced.conf.d/NN-fuzz.conf. An accepted configuration renders (as
 * Dump() shows it) to text that loads back to the same configuration.
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"
#include "np-config.h"
#include "np-test-api.h"

#define MAX_DROPINS 8

static char *dir, *main_file, *dropin_dir;

static void setup_dir(void) {
        if (dir)
                return;
        dir = g_dir_make_tmp("np-fuzz-config-XXXXXX", NULL);
        if (!dir)
                abort();
        main_file = g_build_filename(dir, "numaplaced.conf", NULL);
        dropin_dir = g_build_filename(dir, "numaplaced.conf.d", NULL);
        if (g_mkdir(dropin_dir, 0700) < 0)
                abort();
}

static char *dropin_path(unsigned i) {
        g_autofree char *name = g_strdup_printf("%02u-fuzz.conf", i);
        return g_build_filename(dropin_dir, name, NULL);
}

static void write_file(const char *path, const uint8_t *data, size_t len) {
        if (!g_file_set_contents(path, (const char *) data, (gssize) len, NULL))
                abort();
}

/* The rendering without its comment lines (they name the files read). */
static char *render(const NpConfig *c) {
        g_autofree char *text = np_config_to_string(c);
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
        GString *s = g_string_new(NULL);

        for (char **l = lines; *l; l++)
                if (**l != '#')
                        g_string_append_printf(s, "%s\n", *l);
        return g_string_free(s, false);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        g_autoptr(NpConfig) c = NULL;
        g_autoptr(GError) e = NULL;
        const uint8_t *p = data, *end = data + size;
        unsigned part = 0;
        int r;

        fuzz_setup();
        setup_dir();
        (void) g_unlink(main_file);
        for (unsigned i = 0; i < MAX_DROPINS; i++) {
                g_autofree char *path = dropin_path(i);
                (void) g_unlink(path);
        }
        /* an empty input: no main file at all (defaults) */
        while (size > 0 && part <= MAX_DROPINS) {
                const uint8_t *nul = memchr(p, '\0', (size_t) (end - p));
                const uint8_t *stop = nul ? nul : end;
                g_autofree char *path = part == 0 ? g_strdup(main_file) : dropin_path(part - 1);

                write_file(path, p, (size_t) (stop - p));
                part++;
                if (!nul)
                        break;
                p = nul + 1;
        }

        r = np_config_load(main_file, &c, &e);
        if (r < 0) {
                FUZZ_ASSERT(e != NULL && e->message && *e->message);
                FUZZ_ASSERT(c == NULL);
                return 0;
        }
        FUZZ_ASSERT(e == NULL);
        FUZZ_ASSERT(c->max_scan_interval_usec >= c->scan_interval_usec);
        {
                g_autofree char *text = np_config_to_string(c);
                g_autofree char *a = render(c);
                g_autofree char *b = NULL;
                g_autoptr(NpConfig) again = NULL;
                g_autoptr(GError) e2 = NULL;

                r = np_config_load_data("rendered", text, &again, &e2);
                if (r < 0)
                        g_printerr("rendered configuration rejected: %s\n%s", e2->message, text);
                FUZZ_ASSERT(r == 0);
                b = render(again);
                if (strcmp(a, b) != 0)
                        g_printerr("rendered twice differently:\n%s---\n%s", a, b);
                FUZZ_ASSERT(strcmp(a, b) == 0);
        }
        return 0;
}
