/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Helpers shared by the unit tests (header only). */
#include <glib.h>
#include <glib/gstdio.h>

/* Remove path and, when it is a directory (not a symlink to one), everything
 * below it. Errors are ignored: for a test's temporary tree. */
static inline void np_test_rm_rf(const char *path) {
        if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
                g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
                const char *n;
                while (d && (n = g_dir_read_name(d))) {
                        g_autofree char *p = g_build_filename(path, n, NULL);
                        np_test_rm_rf(p);
                }
                (void) g_rmdir(path);
        } else {
                (void) g_unlink(path);
        }
}
