/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The small lexing helpers every parser of /proc and /sys files shares.
 * Pure, inline, no allocation.
 */
#include <errno.h>
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

/* Node ids at or above this are not a real machine's: a malformed line. */
#define NP_LEX_MAX_NODE_ID (1u << 20)

static inline bool np_lex_blank(char c) {
        return c == ' ' || c == '\t';
}

static inline const char *np_lex_skip_blanks(const char *p) {
        while (np_lex_blank(*p))
                p++;
        return p;
}

/* Decimal digits at *pp into *out (no sign); -EINVAL when *pp does not start
 * with a digit or the number overflows. Advances *pp past the digits. Inline:
 * the per-process scan (np-proc-table) and every parser use it. */
static inline int np_lex_u64(const char **pp, uint64_t *out) {
        const char *p = *pp;
        uint64_t v = 0;
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                unsigned d = (unsigned) (*p - '0');
                /* v * 10 + d overflows past UINT64_MAX / 10 (and at it, with
                 * a last digit above UINT64_MAX % 10): compares only, no
                 * division per digit */
                if (G_UNLIKELY(v >= UINT64_MAX / 10) && (v > UINT64_MAX / 10 || d > UINT64_MAX % 10))
                        return -EINVAL;
                v = v * 10 + d;
        }
        *pp = p;
        *out = v;
        return 0;
}

/* The whole token [s, e) as an unsigned decimal number: 0, or -EINVAL when
 * it is not one (empty, other characters, overflow). */
static inline int np_lex_token_u64(const char *s, const char *e, uint64_t *out) {
        const char *p = s;
        if (np_lex_u64(&p, out) < 0 || p != e)
                return -EINVAL;
        return 0;
}
