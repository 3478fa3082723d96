/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Shared between np-config.c and np-config-value.c; not part of the API. */
#include <stdbool.h>
#include <stdint.h>
#include "np-config.h"

#define USEC_PER_SEC UINT64_C(1000000)
/* the largest PID Linux gives (PID_MAX_LIMIT on 64-bit) */
#define NP_PID_MAX 4194304u

/* First non-blank character of s. */
const char *np_config_skip_blank(const char *s);

/*
 * Parse a non-negative decimal number at *p ("12", "1.5") scaled by mult
 * (fractions are kept to mult's precision); advances *p past it. Sets
 * *had_fraction (if not NULL) when a '.' was seen. 0, -EINVAL (no number)
 * or -ERANGE (overflow).
 */
int np_config_parse_decimal(const char **p, uint64_t mult, uint64_t *out, bool *had_fraction);

/*
 * A list of process names, PIDs and cgroup paths (Include=, Exclude=):
 * entries separated by blanks or commas; a PID must be 1 to NP_PID_MAX, a
 * plain name (no glob, not a path) at most NP_TASK_COMM_LEN characters.
 * 0 and *out a NULL-terminated vector (owned by the caller), or -EINVAL
 * with *why saying which entry is wrong.
 */
int np_config_parse_name_list(const char *value, char ***out, char **why);

/*
 * Groups=: cgroup path globs separated by blanks or commas; "none" alone is
 * the empty list, nothing at all the default globs (np_group_default_globs).
 * A glob with a control character, "." or ".." component, or that matches
 * every cgroup ("/", "//") is refused. 0 and *out (owned by the caller), or
 * -EINVAL with *why.
 */
int np_config_parse_cgroup_globs(const char *value, char ***out, char **why);
