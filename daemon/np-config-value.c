/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Value parsers of the configuration: sizes, durations, booleans, and the
 * lists of names and of cgroup globs. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <glib.h>

#include "np-config-private.h"
#include "np-group.h"

/* ---- scalar parsers ---------------------------------------------------- */

static uint64_t pow10_u64(unsigned n) {
        uint64_t r = 1;
        while (n--)
                r *= 10;
        return r;
}

/*
 * Parse an unsigned decimal ("12", "1.5", ".5", "3.") at *p and return
 * floor(value * mult). At most 9 fraction digits count, further ones are
 * accepted and ignored. *p is advanced past the number. 0, -EINVAL when there
 * is no number, -ERANGE on overflow. *had_fraction tells whether a '.' with
 * a non-zero fraction was seen.
 */
int np_config_parse_decimal(const char **p, uint64_t mult, uint64_t *out, bool *had_fraction) {
        const char *s = *p;
        uint64_t ip = 0, frac = 0;
        unsigned fdigits = 0;
        bool any = false, overflow = false;

        while (g_ascii_isdigit(*s)) {
                unsigned d = (unsigned) (*s - '0');
                if (ip > (UINT64_MAX - d) / 10)
                        overflow = true;
                else
                        ip = ip * 10 + d;
                any = true;
                s++;
        }
        if (*s == '.') {
                s++;
                while (g_ascii_isdigit(*s)) {
                        if (fdigits < 9) {
                                frac = frac * 10 + (uint64_t) (*s - '0');
                                fdigits++;
                        }
                        any = true;
                        s++;
                }
        }
        if (!any)
                return -EINVAL;
        *p = s;
        if (overflow)
                return -ERANGE;

        if (had_fraction)
                *had_fraction = frac != 0;

        if (ip != 0 && mult > UINT64_MAX / ip)
                return -ERANGE;
        uint64_t v = ip * mult;
        if (fdigits > 0) {
                /* floor(frac * mult / 10^d) without overflow: frac < 10^d */
                uint64_t den = pow10_u64(fdigits);
                uint64_t add = (mult / den) * frac + ((mult % den) * frac) / den;
                if (v > UINT64_MAX - add)
                        return -ERANGE;
                v += add;
        }
        *out = v;
        return 0;
}

const char *np_config_skip_blank(const char *s) {
        while (*s == ' ' || *s == '\t')
                s++;
        return s;
}

int np_parse_size(const char *s, uint64_t *bytes) {
        static const struct {
                char c;
                uint64_t mult;
        } suffixes[] = {
                { 'K', UINT64_C(1) << 10 },
                { 'M', UINT64_C(1) << 20 },
                { 'G', UINT64_C(1) << 30 },
                { 'T', UINT64_C(1) << 40 },
        };
        const char *p, *q, *numend;
        uint64_t mult = 1, v;
        bool fraction = false;
        int r;

        if (!s)
                return -EINVAL;
        p = np_config_skip_blank(s);

        /* Find the suffix first: the multiplier is needed to scale the fraction. */
        q = p;
        while (g_ascii_isdigit(*q) || *q == '.')
                q++;
        numend = q;
        q = np_config_skip_blank(q);
        for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++)
                if (g_ascii_toupper(*q) == suffixes[i].c) {
                        mult = suffixes[i].mult;
                        q++;
                        break;
                }
        if (mult > 1 && *q == 'i' && q[1] == 'B')
                q += 2;
        else if (*q == 'B')
                q++;
        if (*np_config_skip_blank(q) != '\0')
                return -EINVAL;

        r = np_config_parse_decimal(&p, mult, &v, &fraction);
        if (r < 0)
                return r;
        if (p != numend)
                return -EINVAL; /* "1..5" */
        if (fraction && mult == 1)
                return -EINVAL; /* a fraction of a byte */
        *bytes = v;
        return 0;
}

int np_parse_seconds(const char *s, uint64_t *usec) {
        static const struct {
                const char *name;
                uint64_t mult;
        } units[] = {
                { "", USEC_PER_SEC },
                { "us", 1 },
                { "usec", 1 },
                { "ms", 1000 },
                { "msec", 1000 },
                { "s", USEC_PER_SEC },
                { "sec", USEC_PER_SEC },
                { "min", 60 * USEC_PER_SEC },
                { "h", 3600 * USEC_PER_SEC },
                { "hr", 3600 * USEC_PER_SEC },
        };
        const char *p, *q, *u;
        uint64_t v;
        int r;

        if (!s)
                return -EINVAL;
        p = np_config_skip_blank(s);
        q = p;
        while (g_ascii_isdigit(*q) || *q == '.')
                q++;
        u = np_config_skip_blank(q);
        size_t ulen = 0;
        while (g_ascii_isalpha(u[ulen]))
                ulen++;
        if (*np_config_skip_blank(u + ulen) != '\0')
                return -EINVAL;

        for (size_t i = 0; i < G_N_ELEMENTS(units); i++) {
                if (strlen(units[i].name) != ulen || strncmp(units[i].name, u, ulen) != 0)
                        continue;
                r = np_config_parse_decimal(&p, units[i].mult, &v, NULL);
                if (r < 0)
                        return r;
                if (p != q)
                        return -EINVAL;
                *usec = v;
                return 0;
        }
        return -EINVAL;
}

int np_parse_bool(const char *s, bool *b) {
        static const char *const yes[] = { "yes", "true", "on", "1" };
        static const char *const no[] = { "no", "false", "off", "0" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
                if (g_ascii_strcasecmp(s, yes[i]) == 0) {
                        *b = true;
                        return 0;
                }
                if (g_ascii_strcasecmp(s, no[i]) == 0) {
                        *b = false;
                        return 0;
                }
        }
        return -EINVAL;
}

/* ---- lists ------------------------------------------------------------- */

int np_config_parse_name_list(const char *value, char ***out, char **why) {
        g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_free);
        const char *p = value;

        for (;;) {
                while (*p && strchr(" \t\r\n,", *p))
                        p++;
                if (!*p)
                        break;
                size_t n = strcspn(p, " \t\r\n,");
                g_autofree char *item = g_strndup(p, n);
                p += n;

                bool all_digits = true;
                for (const char *c = item; *c; c++)
                        if (!g_ascii_isdigit(*c))
                                all_digits = false;

                if (all_digits) {
                        guint64 pid;
                        if (!g_ascii_string_to_unsigned(item, 10, 1, NP_PID_MAX, &pid, NULL)) {
                                *why = g_strdup_printf("'%s' is not a valid PID (expected 1 to %u)", item, NP_PID_MAX);
                                return -EINVAL;
                        }
                        g_ptr_array_add(items, g_strdup_printf("%" G_GUINT64_FORMAT, pid));
                        continue;
                }
                if (item[0] != '/' && !strpbrk(item, "*?[") && strlen(item) > NP_TASK_COMM_LEN) {
                        *why = g_strdup_printf("'%s' is longer than %d characters and can never match a "
                                               "process name (comm)",
                                               item, NP_TASK_COMM_LEN);
                        return -EINVAL;
                }
                g_ptr_array_add(items, g_steal_pointer(&item));
        }
        g_ptr_array_add(items, NULL);
        *out = (char **) g_ptr_array_free(g_steal_pointer(&items), false);
        return 0;
}

int np_config_parse_cgroup_globs(const char *value, char ***out, char **why) {
        g_auto(GStrv) items = g_strsplit_set(value, " \t\r\n,", -1);
        g_autoptr(GPtrArray) globs = g_ptr_array_new_with_free_func(g_free);
        bool none = false;
        for (char **i = items; *i; i++) {
                const char *g = *i;
                if (!*g)
                        continue;
                if (g_str_equal(g, "none")) {
                        none = true;
                        continue;
                }
                bool ok = true;
                for (const char *q = g; *q && ok; q++)
                        ok = (unsigned char) *q >= 0x20 && *q != 0x7f;
                g_auto(GStrv) comps = g_strsplit(g, "/", -1);
                for (char **c = comps; *c && ok; c++)
                        ok = !g_str_equal(*c, "..") && !g_str_equal(*c, ".");
                if (!ok) {
                        *why = g_strdup_printf("'%s' is not a cgroup path glob", g);
                        return -EINVAL;
                }
                if (g[strspn(g, "/")] == '\0') {
                        *why = g_strdup_printf("'%s' would make every process one group", g);
                        return -EINVAL;
                }
                g_ptr_array_add(globs, g_strdup(g));
        }
        if (none && globs->len) {
                *why = g_strdup("'none' cannot be combined with globs");
                return -EINVAL;
        }
        if (!none && !globs->len)
                for (const char *const *d = np_group_default_globs; *d; d++)
                        g_ptr_array_add(globs, g_strdup(*d));
        g_ptr_array_add(globs, NULL);
        *out = (char **) g_ptr_array_free(g_steal_pointer(&globs), false);
        return 0;
}
