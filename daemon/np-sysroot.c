/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-sysroot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *root_prefix;

void np_sysroot_set(const char *root) {
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

static int read_all(const char *full, char **contents, size_t *len) {
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t cap = 4096, n = 0;
        char *buf = g_malloc(cap);
        for (;;) {
                if (cap - n < 2) {
                        cap *= 2;
                        buf = g_realloc(buf, cap);
                }
                ssize_t k = read(fd, buf + n, cap - n - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        close(fd);
                        g_free(buf);
                        return r;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        close(fd);
        buf[n] = '\0';
        *contents = buf;
        if (len)
                *len = n;
        return 0;
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

int np_read_u64(const char *path, guint64 *out) {
        g_autofree char *buf = NULL;
        int r = np_read_file(path, &buf, NULL);
        if (r < 0)
                return r;
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
