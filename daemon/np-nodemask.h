/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * NpMask: a growable bitmap of node or CPU ids of any size (sparse ids and
 * ids above 64 are ordinary). Pure: no I/O.
 *
 * Ownership: np_mask_new()/np_mask_copy()/np_mask_parse() return a mask the
 * caller frees with np_mask_free() (g_autoptr(NpMask) works).
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct NpMask NpMask;

NpMask *np_mask_new(void);
NpMask *np_mask_copy(const NpMask *m);
void np_mask_free(NpMask *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpMask, np_mask_free)

void np_mask_set(NpMask *m, unsigned bit);
/* Set every bit from lo to hi inclusive (nothing when hi < lo). */
void np_mask_set_range(NpMask *m, unsigned lo, unsigned hi);
void np_mask_clear(NpMask *m, unsigned bit);
void np_mask_zero(NpMask *m);
bool np_mask_test(const NpMask *m, unsigned bit);

unsigned np_mask_weight(const NpMask *m);
bool np_mask_empty(const NpMask *m);
bool np_mask_equal(const NpMask *a, const NpMask *b);
/* true when every bit of a is in b */
bool np_mask_subset(const NpMask *a, const NpMask *b);
bool np_mask_intersects(const NpMask *a, const NpMask *b);

/* Iteration: first set bit, next set bit after prev; -1 when none.
 *   for (int b = np_mask_first(m); b >= 0; b = np_mask_next(m, b)) */
int np_mask_first(const NpMask *m);
int np_mask_next(const NpMask *m, int prev);
int np_mask_last(const NpMask *m);
#define NP_MASK_FOREACH(b, m) for (int b = np_mask_first(m); b >= 0; b = np_mask_next((m), b))

/* The n-th set bit (0-based), -1 when n >= weight. */
int np_mask_nth(const NpMask *m, unsigned n);
/* The ordinal of bit among the set bits, -1 when bit is not set. */
int np_mask_ord(const NpMask *m, unsigned bit);

/* In-place set algebra on dst. */
void np_mask_or(NpMask *dst, const NpMask *src);
void np_mask_and(NpMask *dst, const NpMask *src);
void np_mask_andnot(NpMask *dst, const NpMask *src);
void np_mask_assign(NpMask *dst, const NpMask *src);

/*
 * Parse a kernel list such as "0-3,7,9-11" (whitespace around items and a
 * trailing newline are accepted; "" and "\n" give the empty mask).
 * Returns 0 and a new mask in *out, or -EINVAL (out untouched) when the text
 * is not a list, -ERANGE when an id exceeds NP_MASK_MAX_ID.
 */
#define NP_MASK_MAX_ID (1u << 20)

/* The highest node id any Linux kernel can have: MAX_NUMNODES - 1 with the
 * largest NODES_SHIFT an architecture allows (10). Node lists from outside
 * (D-Bus, memory.numa_stat) are refused above it; the migration planner's
 * cost grows with the square of the number of nodes, which this bounds. */
#define NP_NODE_MAX_ID 1023u
int np_mask_parse(const char *s, NpMask **out);

/* Format as a kernel list ("0-3,7"); "" for the empty mask. Caller frees. */
char *np_mask_format(const NpMask *m);

/*
 * For syscalls (migrate_pages, sched_setaffinity): a newly allocated
 * unsigned long array large enough for the highest set bit, and its size in
 * bits (a multiple of the word size, at least `min_bits`). Caller g_free()s.
 */
unsigned long *np_mask_to_ulongs(const NpMask *m, unsigned min_bits, unsigned long *nbits);

/* Bits as a GArray of guint32 (for D-Bus "au"). Caller frees the array. */
GArray *np_mask_to_u32_array(const NpMask *m);

/*
 * systemd's D-Bus form of AllowedCPUs/AllowedMemoryNodes ("ay"): a
 * little-endian bitmask, bit (i % 8) of byte (i / 8) is id i; the empty
 * array means "no restriction" (it is also what the empty mask encodes to).
 * np_mask_to_bytes() gives the shortest array (no trailing zero bytes);
 * caller frees with g_byte_array_unref().
 * np_mask_from_bytes() accepts trailing zero bytes; returns 0 and a new mask
 * in *out, or -ERANGE (out untouched) when a set bit exceeds NP_MASK_MAX_ID.
 */
GByteArray *np_mask_to_bytes(const NpMask *m);
int np_mask_from_bytes(const uint8_t *bytes, size_t n, NpMask **out);
