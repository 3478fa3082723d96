/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

static int log_level = LOG_INFO;
static int journal_mode = -1;
static int journal_resolved = -1;

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg",     [LOG_ALERT] = "alert",   [LOG_CRIT] = "crit", [LOG_ERR] = "err",
        [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

int np_log_level_from_string(const char *s) {
        if (!s)
                return -EINVAL;
        for (int i = 0; i < (int) G_N_ELEMENTS(level_names); i++)
                if (g_ascii_strcasecmp(s, level_names[i]) == 0)
                        return i;
        if (g_ascii_strcasecmp(s, "error") == 0)
                return LOG_ERR;
        if (g_ascii_strcasecmp(s, "warn") == 0)
                return LOG_WARNING;
        return -EINVAL;
}

const char *np_log_level_to_string(int level) {
        if (level < 0 || level >= (int) G_N_ELEMENTS(level_names))
                return "?";
        return level_names[level];
}

void np_log_set_level(int level) {
        log_level = level;
}

bool np_log_enabled(int level) {
        return level <= log_level;
}

void np_log_set_journal(int mode) {
        journal_mode = mode;
        journal_resolved = -1;
}

static bool use_journal(void) {
        if (journal_mode >= 0)
                return journal_mode;
        if (journal_resolved >= 0)
                return journal_resolved;
        bool j = false;
        const char *js = getenv("JOURNAL_STREAM");
        struct stat st;
        if (js && fstat(STDERR_FILENO, &st) == 0) {
                unsigned long long dev, ino;
                if (sscanf(js, "%llu:%llu", &dev, &ino) == 2 && dev == (unsigned long long) st.st_dev &&
                    ino == (unsigned long long) st.st_ino)
                        j = true;
        }
        journal_resolved = j;
        return j;
}

static void emit(int level, const char *file, int line, const char *func, const char *message_id,
                 const char *const *fields, const char *msg) {
        if (use_journal()) {
                g_autofree char *lvl = g_strdup_printf("PRIORITY=%d", level);
                g_autofree char *m = g_strdup_printf("MESSAGE=%s", msg);
                g_autofree char *mid = message_id ? g_strdup_printf("MESSAGE_ID=%s", message_id) : NULL;
                struct iovec iov[24];
                int n = 0;
                iov[n++] = (struct iovec){ m, strlen(m) };
                iov[n++] = (struct iovec){ lvl, strlen(lvl) };
                if (mid)
                        iov[n++] = (struct iovec){ mid, strlen(mid) };
                for (int i = 0; fields && fields[i] && n < 20; i++)
                        iov[n++] = (struct iovec){ (void *) fields[i], strlen(fields[i]) };
                g_autofree char *cf = file ? g_strdup_printf("CODE_FILE=%s", file) : NULL;
                g_autofree char *cl = file ? g_strdup_printf("CODE_LINE=%d", line) : NULL;
                g_autofree char *cfn = func ? g_strdup_printf("CODE_FUNC=%s", func) : NULL;
                if (cf) {
                        iov[n++] = (struct iovec){ cf, strlen(cf) };
                        iov[n++] = (struct iovec){ cl, strlen(cl) };
                }
                if (cfn)
                        iov[n++] = (struct iovec){ cfn, strlen(cfn) };
                if (sd_journal_sendv(iov, n) >= 0)
                        return;
        }
        fprintf(stderr, "numaplaced[%s]: %s\n", np_log_level_to_string(level), msg);
}

void np_log_full(int level, const char *file, int line, const char *func, const char *message_id, const char *fmt,
                 ...) {
        if (level > log_level)
                return;
        int saved = errno;
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *msg = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        emit(level, file, line, func, message_id, NULL, msg);
        errno = saved;
}

void np_log_fields(int level, const char *message_id, const char *const *fields, const char *fmt, ...) {
        if (level > log_level)
                return;
        int saved = errno;
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *msg = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        emit(level, NULL, 0, NULL, message_id, fields, msg);
        errno = saved;
}
