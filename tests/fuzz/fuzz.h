/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Shared by the libFuzzer targets in this directory. Each target defines
 * LLVMFuzzerTestOneInput(); it is linked either with libFuzzer (meson
 * -Dfuzz=true, clang) or with fuzz-replay.c, which feeds it every file of a
 * corpus (the `unit` suite does that with the normal build).
 */
#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "np-log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Quiet logging (the parsers' callers log, the fuzzers need not). */
static inline void fuzz_setup(void) {
        static bool done;

        if (!done) {
                np_log_set_journal(0);
                np_log_set_level(LOG_CRIT);
                done = true;
        }
}

/* A NUL-terminated copy of the input (parsers take C strings). Caller
 * g_free()s. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size) {
        char *s = g_malloc(size + 1);

        if (size)
                memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/* A harness loop that must not steer the fuzzer (libFuzzer's coverage is
 * for the code under test). */
#if defined(__clang__)
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define FUZZ_NO_COVERAGE
#endif

/* An invariant of the code under test does not hold: a crash the fuzzer
 * reports (abort() works with or without sanitizers). */
#define FUZZ_ASSERT(cond) \
        do { \
                if (!(cond)) { \
                        g_printerr("%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #cond); \
                        abort(); \
                } \
        } while (0)
