/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-nodemask.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "np-test-api.h"

#define WORD_BITS 64u

struct NpMask {
        size_t nwords;
        uint64_t *words;
};

NpMask *np_mask_new(void) {
        return g_new0(NpMask, 1);
}

NpMask *np_mask_copy(const NpMask *m) {
        NpMask *c = np_mask_new();
        if (m && m->nwords) {
                c->nwords = m->nwords;
                c->words = g_memdup2(m->words, m->nwords * sizeof(uint64_t));
        }
        return c;
}

void np_mask_free(NpMask *m) {
        if (!m)
                return;
        g_free(m->words);
        g_free(m);
}

static void grow(NpMask *m, unsigned bit) {
        size_t need = bit / WORD_BITS + 1;
        if (need <= m->nwords)
                return;
        m->words = g_renew(uint64_t, m->words, need);
        memset(m->words + m->nwords, 0, (need - m->nwords) * sizeof(uint64_t));
        m->nwords = need;
}

NpMask *np_mask_from_array(const unsigned *ids, size_t n) {
        NpMask *m = np_mask_new();
        for (size_t i = 0; i < n; i++)
                np_mask_set(m, ids[i]);
        return m;
}

void np_mask_set(NpMask *m, unsigned bit) {
        grow(m, bit);
        m->words[bit / WORD_BITS] |= UINT64_C(1) << (bit % WORD_BITS);
}

void np_mask_set_range(NpMask *m, unsigned lo, unsigned hi) {
        if (hi < lo)
                return;
        grow(m, hi);
        for (unsigned w = lo / WORD_BITS; w <= hi / WORD_BITS; w++) {
                unsigned from = w == lo / WORD_BITS ? lo % WORD_BITS : 0;
                unsigned to = w == hi / WORD_BITS ? hi % WORD_BITS : WORD_BITS - 1;
                uint64_t bits =
                        (to - from == WORD_BITS - 1) ? UINT64_MAX : ((UINT64_C(1) << (to - from + 1)) - 1) << from;
                m->words[w] |= bits;
        }
}

void np_mask_clear(NpMask *m, unsigned bit) {
        if (bit / WORD_BITS >= m->nwords)
                return;
        m->words[bit / WORD_BITS] &= ~(UINT64_C(1) << (bit % WORD_BITS));
}

void np_mask_zero(NpMask *m) {
        if (m->nwords)
                memset(m->words, 0, m->nwords * sizeof(uint64_t));
}

bool np_mask_test(const NpMask *m, unsigned bit) {
        if (!m || bit / WORD_BITS >= m->nwords)
                return false;
        return (m->words[bit / WORD_BITS] >> (bit % WORD_BITS)) & 1u;
}

unsigned np_mask_weight(const NpMask *m) {
        unsigned w = 0;
        for (size_t i = 0; m && i < m->nwords; i++)
                w += (unsigned) __builtin_popcountll(m->words[i]);
        return w;
}

bool np_mask_empty(const NpMask *m) {
        for (size_t i = 0; m && i < m->nwords; i++)
                if (m->words[i])
                        return false;
        return true;
}

static uint64_t word_at(const NpMask *m, size_t i) {
        return (m && i < m->nwords) ? m->words[i] : 0;
}

static size_t max_words(const NpMask *a, const NpMask *b) {
        size_t na = a ? a->nwords : 0, nb = b ? b->nwords : 0;
        return na > nb ? na : nb;
}

bool np_mask_equal(const NpMask *a, const NpMask *b) {
        for (size_t i = 0, n = max_words(a, b); i < n; i++)
                if (word_at(a, i) != word_at(b, i))
                        return false;
        return true;
}

bool np_mask_subset(const NpMask *a, const NpMask *b) {
        for (size_t i = 0, n = max_words(a, b); i < n; i++)
                if (word_at(a, i) & ~word_at(b, i))
                        return false;
        return true;
}

bool np_mask_intersects(const NpMask *a, const NpMask *b) {
        for (size_t i = 0, n = max_words(a, b); i < n; i++)
                if (word_at(a, i) & word_at(b, i))
                        return true;
        return false;
}

int np_mask_next(const NpMask *m, int prev) {
        if (!m)
                return -1;
        size_t start = prev < 0 ? 0 : (size_t) prev + 1;
        for (size_t i = start / WORD_BITS; i < m->nwords; i++) {
                uint64_t w = m->words[i];
                if (i == start / WORD_BITS)
                        w &= ~UINT64_C(0) << (start % WORD_BITS);
                if (w)
                        return (int) (i * WORD_BITS + (size_t) __builtin_ctzll(w));
        }
        return -1;
}

int np_mask_first(const NpMask *m) {
        return np_mask_next(m, -1);
}

int np_mask_last(const NpMask *m) {
        for (size_t i = m ? m->nwords : 0; i > 0; i--)
                if (m->words[i - 1])
                        return (int) ((i - 1) * WORD_BITS + 63u - (unsigned) __builtin_clzll(m->words[i - 1]));
        return -1;
}

int np_mask_nth(const NpMask *m, unsigned n) {
        for (size_t i = 0; m && i < m->nwords; i++) {
                uint64_t w = m->words[i];
                unsigned c = (unsigned) __builtin_popcountll(w);
                if (n >= c) {
                        n -= c;
                        continue;
                }
                while (n--)
                        w &= w - 1; /* drop the lowest set bit */
                return (int) (i * WORD_BITS + (size_t) __builtin_ctzll(w));
        }
        return -1;
}

int np_mask_ord(const NpMask *m, unsigned bit) {
        if (!np_mask_test(m, bit))
                return -1;
        int k = 0;
        NP_MASK_FOREACH (b, m) {
                if ((unsigned) b == bit)
                        return k;
                k++;
        }
        return -1;
}

void np_mask_or(NpMask *dst, const NpMask *src) {
        if (!src || !src->nwords)
                return;
        grow(dst, (unsigned) (src->nwords * WORD_BITS - 1));
        for (size_t i = 0; i < src->nwords; i++)
                dst->words[i] |= src->words[i];
}

void np_mask_and(NpMask *dst, const NpMask *src) {
        for (size_t i = 0; i < dst->nwords; i++)
                dst->words[i] &= word_at(src, i);
}

void np_mask_andnot(NpMask *dst, const NpMask *src) {
        for (size_t i = 0; i < dst->nwords; i++)
                dst->words[i] &= ~word_at(src, i);
}

void np_mask_assign(NpMask *dst, const NpMask *src) {
        np_mask_zero(dst);
        np_mask_or(dst, src);
}

static const char *skip_ws(const char *p) {
        while (*p && isspace((unsigned char) *p))
                p++;
        return p;
}

static int parse_id(const char **pp, unsigned *out) {
        const char *p = *pp;
        if (!isdigit((unsigned char) *p))
                return -EINVAL;
        errno = 0;
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (errno == ERANGE || v > NP_MASK_MAX_ID)
                return -ERANGE;
        *out = (unsigned) v;
        *pp = end;
        return 0;
}

int np_mask_parse(const char *s, NpMask **out) {
        if (!s)
                return -EINVAL;
        g_autoptr(NpMask) m = np_mask_new();
        const char *p = skip_ws(s);
        while (*p) {
                unsigned lo, hi;
                int r = parse_id(&p, &lo);
                if (r < 0)
                        return r;
                hi = lo;
                p = skip_ws(p);
                if (*p == '-') {
                        p = skip_ws(p + 1);
                        r = parse_id(&p, &hi);
                        if (r < 0)
                                return r;
                        if (hi < lo)
                                return -EINVAL;
                        p = skip_ws(p);
                }
                np_mask_set_range(m, lo, hi);
                if (*p == ',') {
                        p = skip_ws(p + 1);
                        if (!*p)
                                return -EINVAL;
                } else if (*p)
                        return -EINVAL;
        }
        *out = g_steal_pointer(&m);
        return 0;
}

char *np_mask_format(const NpMask *m) {
        GString *s = g_string_new(NULL);
        int b = np_mask_first(m);
        while (b >= 0) {
                int e = b;
                int n;
                for (;;) {
                        /* a run through whole words: skip them */
                        size_t i = (size_t) (e + 1) / WORD_BITS;
                        if ((size_t) (e + 1) % WORD_BITS == 0 && i < m->nwords && m->words[i] == UINT64_MAX) {
                                e += (int) WORD_BITS;
                                continue;
                        }
                        if ((n = np_mask_next(m, e)) != e + 1)
                                break;
                        e = n;
                }
                if (s->len)
                        g_string_append_c(s, ',');
                if (e == b)
                        g_string_append_printf(s, "%d", b);
                else
                        g_string_append_printf(s, "%d-%d", b, e);
                b = n;
        }
        return g_string_free(s, FALSE);
}

unsigned long *np_mask_to_ulongs(const NpMask *m, unsigned min_bits, unsigned long *nbits) {
        const unsigned lbits = sizeof(unsigned long) * CHAR_BIT;
        int last = np_mask_last(m);
        unsigned bits = (unsigned) (last + 1);
        if (bits < min_bits)
                bits = min_bits;
        size_t nlongs = (bits + lbits - 1) / lbits;
        if (nlongs == 0)
                nlongs = 1;
        unsigned long *v = g_new0(unsigned long, nlongs);
        for (size_t i = 0; last >= 0 && i <= (size_t) last / WORD_BITS; i++)
                for (unsigned j = 0; j < WORD_BITS; j += lbits) /* one or two longs per word */
                        v[(i * WORD_BITS + j) / lbits] |= (unsigned long) (m->words[i] >> j);
        *nbits = nlongs * lbits;
        return v;
}

GArray *np_mask_to_u32_array(const NpMask *m) {
        GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(guint32), np_mask_weight(m));
        for (size_t i = 0; m && i < m->nwords; i++)
                for (uint64_t w = m->words[i]; w; w &= w - 1) {
                        guint32 v = (guint32) (i * WORD_BITS + (size_t) __builtin_ctzll(w));
                        g_array_append_val(a, v);
                }
        return a;
}

GByteArray *np_mask_to_bytes(const NpMask *m) {
        GByteArray *a = g_byte_array_new();
        int last = np_mask_last(m);
        if (last < 0)
                return a;
        g_byte_array_set_size(a, (guint) last / 8 + 1);
        memset(a->data, 0, a->len);
        NP_MASK_FOREACH (b, m)
                a->data[(unsigned) b / 8] |= (guint8) (1u << ((unsigned) b % 8));
        return a;
}

int np_mask_from_bytes(const uint8_t *bytes, size_t n, NpMask **out) {
        /* trailing zero bytes carry no bits: ignore them before the range check */
        while (n > 0 && bytes[n - 1] == 0)
                n--;
        if (n > 0 && (n - 1) * 8 > NP_MASK_MAX_ID)
                return -ERANGE;
        NpMask *m = np_mask_new();
        for (size_t i = 0; i < n; i++)
                for (unsigned j = 0; j < 8; j++)
                        if (bytes[i] & (1u << j)) {
                                unsigned bit = (unsigned) (i * 8 + j);
                                if (bit > NP_MASK_MAX_ID) {
                                        np_mask_free(m);
                                        return -ERANGE;
                                }
                                np_mask_set(m, bit);
                        }
        *out = m;
        return 0;
}
