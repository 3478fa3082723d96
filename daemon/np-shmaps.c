/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-shmaps.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "np-lex.h"
#include "np-sample.h"
#include "np-sysroot.h"

#define DELETED " (deleted)"
#define DELETED_LEN (sizeof(DELETED) - 1)

const char *np_shmap_kind_name(NpShmapKind kind) {
        switch (kind) {
        case NP_SHMAP_SYSV:
                return "sysv";
        case NP_SHMAP_MEMFD:
                return "memfd";
        case NP_SHMAP_DEVSHM:
                return "devshm";
        case NP_SHMAP_ANON:
                return "anon";
        }
        return "?";
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Hex digits at *pp (at least one, at most 16) into *out; advances *pp. */
static bool lex_hex(const char **pp, const char *eol, uint64_t *out) {
        const char *p = *pp;
        uint64_t v = 0;
        int n = 0;
        for (int d; p < eol && (d = hexval(*p)) >= 0; p++, n++) {
                if (n == 16)
                        return false;
                v = v << 4 | (uint64_t) d;
        }
        *pp = p;
        *out = v;
        return n > 0;
}

static bool has_prefix(const char *s, size_t len, const char *prefix) {
        size_t n = strlen(prefix);
        return len >= n && memcmp(s, prefix, n) == 0;
}

static bool has_suffix(const char *s, size_t len, const char *suffix) {
        size_t n = strlen(suffix);
        return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* The kind of a shared mapping on a major-0 device by its path, or -1 when
 * it is none of them. */
static int kind_of(const char *path, size_t len) {
        if (len == 5 + 8 + DELETED_LEN && has_prefix(path, len, "/SYSV") && has_suffix(path, len, DELETED)) {
                for (size_t i = 5; i < 13; i++)
                        if (hexval(path[i]) < 0)
                                return -1;
                return NP_SHMAP_SYSV;
        }
        if (has_prefix(path, len, "/memfd:") && has_suffix(path, len, DELETED))
                return NP_SHMAP_MEMFD;
        if (len > 9 && has_prefix(path, len, "/dev/shm/"))
                return NP_SHMAP_DEVSHM;
        if (len == 9 + DELETED_LEN && has_prefix(path, len, "/dev/zero") && has_suffix(path, len, DELETED))
                return NP_SHMAP_ANON;
        if (has_prefix(path, len, "[anon_shmem:") && has_suffix(path, len, "]"))
                return NP_SHMAP_ANON;
        return -1;
}

G_GNUC_PRINTF(3, 4) static int bad_line(GError **error, unsigned lineno, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *why = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "maps line %u: %s", lineno, why);
        return -EINVAL;
}

/* One line [p, eol): appends to out when it is a shmem mapping, else to
 * files (when not NULL) when it maps a file. */
static int maps_line(const char *p, const char *eol, unsigned lineno, GArray *out, GArray *files, GError **error) {
        NpShmap m = { 0 };
        uint64_t offset, major, minor;

        if (!lex_hex(&p, eol, &m.start) || p == eol || *p++ != '-' || !lex_hex(&p, eol, &m.end) || p == eol ||
            *p++ != ' ')
                return bad_line(error, lineno, "no start-end address range");
        if (m.start > m.end)
                return bad_line(error, lineno, "start above end");
        if (eol - p < 5 || !strchr("r-", p[0]) || !strchr("w-", p[1]) || !strchr("x-", p[2]) || !strchr("sp", p[3]) ||
            p[4] != ' ')
                return bad_line(error, lineno, "no permissions");
        bool shared = p[3] == 's', readonly = p[0] == 'r' && p[1] == '-';
        p += 5;
        if (!lex_hex(&p, eol, &offset) || p == eol || *p++ != ' ')
                return bad_line(error, lineno, "no offset");
        if (!lex_hex(&p, eol, &major) || p == eol || *p++ != ':' || !lex_hex(&p, eol, &minor) || p == eol ||
            *p++ != ' ' || major > UINT32_MAX || minor > UINT32_MAX)
                return bad_line(error, lineno, "no device major:minor");
        if (np_lex_u64(&p, &m.inode) < 0 || (p < eol && *p != ' '))
                return bad_line(error, lineno, "no inode");
        while (p < eol && *p == ' ')
                p++;
        int kind = shared && major == 0 ? kind_of(p, (size_t) (eol - p)) : -1;
        if (kind < 0) {
                if (files && m.inode) {
                        NpFileMap f = { .start = m.start, .end = m.end, .readonly = readonly };
                        g_array_append_val(files, f);
                }
                return 0;
        }
        m.dev_major = (unsigned) major;
        m.dev_minor = (unsigned) minor;
        m.kind = (NpShmapKind) kind;
        g_array_append_val(out, m);
        return 0;
}

int np_parse_shmaps(const char *buf, GArray *out, GArray *files, GError **error) {
        g_return_val_if_fail(buf && out && g_array_get_element_size(out) == sizeof(NpShmap), -EINVAL);
        g_return_val_if_fail(!files || g_array_get_element_size(files) == sizeof(NpFileMap), -EINVAL);
        g_array_set_size(out, 0);
        if (files)
                g_array_set_size(files, 0);
        unsigned lineno = 0;
        for (const char *line = buf; *line;) {
                const char *eol = strchr(line, '\n');
                if (!eol)
                        eol = line + strlen(line);
                lineno++;
                if (eol > line) {
                        int r = maps_line(line, eol, lineno, out, files, error);
                        if (r < 0) {
                                g_array_set_size(out, 0);
                                if (files)
                                        g_array_set_size(files, 0);
                                return r;
                        }
                }
                line = *eol ? eol + 1 : eol;
        }
        return 0;
}

/* A maps read that a process's exit cut short ends early without an error
 * (the kernel finds no mm and stops): the process's stat tells. */
static bool exiting(int pid) {
        NpPidStat st;
        int r = np_read_pid_stat(pid, &st);
        return r == -ESRCH || (r == 0 && (st.state == 'Z' || st.state == 'X' || (st.flags & NP_PF_EXITING)));
}

int np_read_shmaps(int pid, GArray **out, GArray **files, GError **error) {
        if (pid <= 0) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "invalid pid %d", pid);
                return -EINVAL;
        }
        g_autofree char *buf = NULL;
        int r = np_read_filef(&buf, NULL, "/proc/%d/maps", pid);
        if (r == -ENOENT || r == -ESRCH || (r == 0 && exiting(pid))) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "process %d is gone", pid);
                return -ESRCH;
        }
        if (r < 0) {
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "cannot read /proc/%d/maps: %s", pid,
                            g_strerror(-r));
                return r;
        }
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(NpShmap));
        g_autoptr(GArray) f = files ? g_array_new(FALSE, FALSE, sizeof(NpFileMap)) : NULL;
        r = np_parse_shmaps(buf, a, f, error);
        if (r < 0) {
                g_prefix_error(error, "/proc/%d/maps: ", pid);
                return r;
        }
        *out = g_steal_pointer(&a);
        if (files)
                *files = g_steal_pointer(&f);
        return 0;
}
