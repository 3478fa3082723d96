/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-sysroot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *root_prefix;
static GHashTable *kept_files; /* path -> fd (GINT_TO_POINTER(fd + 1)) */

void np_sysroot_set(const char *root) {
        np_kept_files_close();
        /* strip trailing slashes so "/x/" + "/proc" stays tidy; "//" is "/" */
        size_t n = root ? strlen(root) : 0;
        while (n > 0 && root[n - 1] == '/')
                n--;
        /* copy before freeing: root may be np_sysroot_get()'s own string */
        char *p = n ? g_strndup(root, n) : NULL;
        g_free(root_prefix);
        root_prefix = p;
}

const char *np_sysroot_get(void) {
        return root_prefix ? root_prefix : "";
}

bool np_sysroot_is_real(void) {
        return root_prefix == NULL;
}

G_GNUC_PRINTF(1, 0) static char *vpath(const char *fmt, va_list ap) {
        g_autofree char *rel = g_strdup_vprintf(fmt, ap);
        return g_strconcat(np_sysroot_get(), rel, NULL);
}

char *np_path(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *p = vpath(fmt, ap);
        va_end(ap);
        return p;
}

/* The whole of fd: from its position with read(), or from offset 0 with
 * pread() (for a kept file; the file position is then not used). */
static int read_fd(int fd, bool from_start, char **contents, size_t *len) {
        size_t cap = 4096, n = 0;
        char *buf = g_malloc(cap);
        for (;;) {
                if (cap - n < 2) {
                        cap *= 2;
                        buf = g_realloc(buf, cap);
                }
                ssize_t k = from_start ? pread(fd, buf + n, cap - n - 1, (off_t) n) : read(fd, buf + n, cap - n - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        g_free(buf);
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        buf[n] = '\0';
        *contents = buf;
        if (len)
                *len = n;
        return 0;
}

static int read_all(const char *full, char **contents, size_t *len) {
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = read_fd(fd, false, contents, len);
        close(fd);
        return r;
}

int np_read_file_kept(const char *path, char **contents, size_t *len) {
        if (!np_sysroot_is_real())
                return np_read_file(path, contents, len);
        if (!kept_files)
                kept_files = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        gpointer v = g_hash_table_lookup(kept_files, path);
        if (v) {
                int r = read_fd(GPOINTER_TO_INT(v) - 1, true, contents, len);
                if (r == 0)
                        return 0;
                /* gone stale (an offline node's file): open it again */
                close(GPOINTER_TO_INT(v) - 1);
                g_hash_table_remove(kept_files, path);
        }
        if (g_hash_table_size(kept_files) >= NP_KEPT_FILES_MAX)
                return np_read_file(path, contents, len);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = read_fd(fd, true, contents, len);
        if (r < 0) {
                close(fd);
                return r;
        }
        g_hash_table_insert(kept_files, g_strdup(path), GINT_TO_POINTER(fd + 1));
        return 0;
}

unsigned np_kept_files_count(void) {
        return kept_files ? g_hash_table_size(kept_files) : 0;
}

void np_kept_files_close(void) {
        if (!kept_files)
                return;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, kept_files);
        while (g_hash_table_iter_next(&it, NULL, &v))
                close(GPOINTER_TO_INT(v) - 1);
        g_clear_pointer(&kept_files, g_hash_table_destroy);
}

int np_read_file(const char *path, char **contents, size_t *len) {
        g_autofree char *full = g_strconcat(np_sysroot_get(), path, NULL);
        return read_all(full, contents, len);
}

int np_read_filef(char **contents, size_t *len, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *full = vpath(fmt, ap);
        va_end(ap);
        return read_all(full, contents, len);
}

static int parse_u64(char *buf, guint64 *out) {
        char *end;
        const char *s = g_strstrip(buf);
        /* strtoull() would silently wrap "-1" to 2^64-1 */
        if (!g_ascii_isdigit(*s))
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end)
                return -EINVAL;
        *out = v;
        return 0;
}

int np_read_u64(const char *path, guint64 *out) {
        g_autofree char *buf = NULL;
        int r = np_read_file(path, &buf, NULL);
        return r < 0 ? r : parse_u64(buf, out);
}

int np_read_u64_kept(const char *path, guint64 *out) {
        g_autofree char *buf = NULL;
        int r = np_read_file_kept(path, &buf, NULL);
        return r < 0 ? r : parse_u64(buf, out);
}
