/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Logging: to the journal (sd_journal_send, with structured fields) when the
 * daemon was started by systemd, to stderr otherwise. Levels are syslog
 * priorities; LogLevel= and --log-level set the threshold.
 */
#include <glib.h>
#include <stdbool.h>
#include <syslog.h>

/* Returns a LOG_* priority, or -EINVAL for an unknown name.
 * Names: emerg alert crit err (error) warning (warn) notice info debug. */
int np_log_level_from_string(const char *s);
const char *np_log_level_to_string(int level);

void np_log_set_level(int level);
/* Would a message of `level` be logged (LogLevel=)? For messages costly to
 * put together. */
bool np_log_enabled(int level);
/* Force the target: 1 journal, 0 stderr, -1 auto (journal when
 * $JOURNAL_STREAM names the device and inode of our stderr, i.e. systemd
 * connected stderr to the journal). */
void np_log_set_journal(int mode);

void np_log_full(int level, const char *file, int line, const char *func, const char *message_id, const char *fmt, ...)
        G_GNUC_PRINTF(6, 7);

/* Extra structured fields (e.g. "PID=123") for the journal; ignored on
 * stderr. `fields` is a NULL-terminated list of "KEY=value" strings. */
void np_log_fields(int level, const char *message_id, const char *const *fields, const char *fmt, ...)
        G_GNUC_PRINTF(4, 5);

#define np_log(level, ...) np_log_full(level, __FILE__, __LINE__, __func__, NULL, __VA_ARGS__)
#define log_debug(...) np_log(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) np_log(LOG_INFO, __VA_ARGS__)
#define log_notice(...) np_log(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) np_log(LOG_WARNING, __VA_ARGS__)
#define log_error(...) np_log(LOG_ERR, __VA_ARGS__)

/* MESSAGE_IDs for events an operator cares about (journalctl MESSAGE_ID=...) */
#define NP_MESSAGE_PLACED "5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b01"
#define NP_MESSAGE_MIGRATION_FAILED "5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b02"
#define NP_MESSAGE_CONFIG_REJECTED "5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b03"
#define NP_MESSAGE_RELEASED "5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b04"
#define NP_MESSAGE_RECOVERED "5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b05"
#define NP_MESSAGE_PLACE_FAILED "5b0e6f0a1c1d4f4e9a3c2a7f6d1e8b06"
/* Every MESSAGE_ID has an entry in systemd/numaplaced.catalog (journalctl
 * -x explains it); tests/unit/check-catalog.py checks both ways. Structured fields, where
 * they apply: PID, COMM, FROM, TO (node lists), BYTES, USEC, REASON,
 * ERRNO, CONFIG_FILE. */
