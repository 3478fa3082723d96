/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-sysroot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "np-test-api.h"

static char *root_prefix;
/* A machine-wide file kept open between scans. */
typedef struct {
        int fd;
        size_t cap; /* buffer for the next read: the last size plus room */
} KeptFile;

static void kept_file_free(KeptFile *k) {
        if (k->fd >= 0)
                close(k->fd);
        g_free(k);
}

static GHashTable *kept_files; /* path -> KeptFile */

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

/* The whole of fd from its position, read() until end of file. */
static int read_fd(int fd, char **contents, size_t *len) {
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
        int r = read_fd(fd, contents, len);
        close(fd);
        return r;
}

/* The whole of a kept file, in one pread() from offset 0 as a rule. Every
 * kept file is a single record that the kernel formats whole on each read
 * (single_open() procfs files, sysfs attributes, sysctls), so a read that
 * returns less than was asked for returned all of it: there is no read for
 * end of file. A file larger than the buffer is read on (each pread() at an
 * offset formats it afresh) and the buffer remembers the size, so the next
 * scan reads it in one call again, however many CPUs /proc/stat lists. */
static int read_kept(KeptFile *k, char **contents, size_t *len) {
        size_t cap = k->cap, n = 0;
        char *buf = g_malloc(cap);
        for (;;) {
                size_t want = cap - n - 1;
                ssize_t got = pread(k->fd, buf + n, want, (off_t) n);
                if (got < 0) {
                        if (errno == EINTR)
                                continue;
                        int r = -errno;
                        g_free(buf);
                        return r;
                }
                n += (size_t) got;
                if ((size_t) got < want)
                        break;
                cap *= 2;
                buf = g_realloc(buf, cap);
        }
        buf[n] = '\0';
        /* room for a little growth (a counter that gains a digit) */
        size_t next = 4096;
        while (next < n + n / 8 + 64)
                next *= 2;
        k->cap = next;
        *contents = buf;
        if (len)
                *len = n;
        return 0;
}

/* procfs and sysfs format a file afresh on each read from offset 0, so a
 * descriptor kept open stays current; a regular file (a fixture tree, whose
 * files tests replace by rename) would not. */
static bool kernel_generated(int fd) {
        struct statfs sf;
        if (fstatfs(fd, &sf) < 0)
                return false;
        return sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC;
}

int np_read_file_kept(const char *path, char **contents, size_t *len) {
        if (!kept_files)
                kept_files = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify) kept_file_free);
        KeptFile *k = g_hash_table_lookup(kept_files, path);
        if (k) {
                if (read_kept(k, contents, len) == 0)
                        return 0;
                /* gone stale (an offline node's file): open it again */
                g_hash_table_remove(kept_files, path);
        }
        if (g_hash_table_size(kept_files) >= NP_KEPT_FILES_MAX)
                return np_read_file(path, contents, len);
        g_autofree char *full = g_strconcat(np_sysroot_get(), path, NULL);
        int fd = open(full, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (!kernel_generated(fd)) {
                int r = read_fd(fd, contents, len);
                close(fd);
                return r;
        }
        k = g_new0(KeptFile, 1);
        k->fd = fd;
        k->cap = 4096;
        int r = read_kept(k, contents, len);
        if (r < 0) {
                kept_file_free(k);
                return r;
        }
        g_hash_table_insert(kept_files, g_strdup(path), k);
        return 0;
}

unsigned np_kept_files_count(void) {
        return kept_files ? g_hash_table_size(kept_files) : 0;
}

void np_kept_files_close(void) {
        if (!kept_files)
                return;
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
