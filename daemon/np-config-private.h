/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* Shared between np-config.c and np-config-value.c; not part of the API. */
#include <stdbool.h>
#include <stdint.h>
#include "np-config.h"

#define USEC_PER_SEC UINT64_C(1000000)

/* First non-blank character of s. */
const char *np_config_skip_blank(const char *s);

/*
 * Parse a non-negative decimal number at *p ("12", "1.5") scaled by mult
 * (fractions are kept to mult's precision); advances *p past it. Sets
 * *had_fraction (if not NULL) when a '.' was seen. 0, -EINVAL (no number)
 * or -ERANGE (overflow).
 */
int np_config_parse_decimal(const char **p, uint64_t mult, uint64_t *out, bool *had_fraction);
