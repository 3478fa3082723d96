/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Configuration loading: one table of keys drives defaults, parsing,
 * validation and rendering.
 *
 * Syntax is GKeyFile's. GKeyFile does not report line numbers, so the text is
 * scanned line by line here, with GKeyFile's rules (leading whitespace
 * ignored, only '#' starts a comment, "[Group]" headers, "Key=value" pairs,
 * GKeyFile's escapes \s \n \t \r \\ in values), and then also handed to
 * GKeyFile as a cross-check so that every file accepted here is a valid key
 * file. Every assignment is validated at its own line, so a bad value is
 * reported even when a later line overrides it.
 */
#include "np-config.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stddef.h>
#include <limits.h>
#include <string.h>

#include "np-config-private.h"
#include "np-log.h"
#include "np-test-api.h"

typedef enum {
        NP_KEY_ENUM, /* int-sized enum, one of `choices` */
        NP_KEY_LOG_LEVEL, /* int, np_log_level_from_string() */
        NP_KEY_BOOL, /* bool */
        NP_KEY_SECONDS, /* uint64_t usec, range in seconds */
        NP_KEY_PERCENT, /* unsigned, integer range */
        NP_KEY_COUNT, /* unsigned, integer range (a number of scans) */
        NP_KEY_SIZE, /* uint64_t bytes */
        NP_KEY_CPUS, /* double, range */
        NP_KEY_CPU_LIST, /* NpMask * */
        NP_KEY_NAME_LIST, /* char ** of comm globs or PIDs */
        NP_KEY_PATH, /* char *, "" or an absolute file name */
        NP_KEY_CGROUP_GLOBS, /* char ** of cgroup path globs; "" = NP_GROUP_DEFAULT_GLOBS, "none" = empty */
} NpKeyType;

typedef struct {
        const char *group;
        const char *name;
        NpKeyType type;
        size_t offset;
        const char *def; /* default, as text, parsed by the same code */
        double min, max; /* range in the key's unit (seconds, percent, CPUs) */
        const char *const *choices; /* NP_KEY_ENUM: index == enum value */
} NpConfigKey;

static const char *const mode_names[] = { "enforce", "advise", NULL };
static const char *const backend_names[] = { "auto", "cpuset", "systemd", "affinity", NULL };

#define OFF(f) offsetof(NpConfig, f)

static const NpConfigKey config_keys[] = {
        { "Daemon", "Mode", NP_KEY_ENUM, OFF(mode), "enforce", 0, 0, mode_names },
        { "Daemon", "Backend", NP_KEY_ENUM, OFF(backend), "auto", 0, 0, backend_names },
        { "Daemon", "ScanIntervalSec", NP_KEY_SECONDS, OFF(scan_interval_usec), "5", 0.1, 3600, NULL },
        { "Daemon", "MaxScanIntervalSec", NP_KEY_SECONDS, OFF(max_scan_interval_usec), "15", 0.1, 3600, NULL },
        { "Daemon", "LogLevel", NP_KEY_LOG_LEVEL, OFF(log_level), "info", 0, 0, NULL },
        { "Daemon", "ReleaseOnStop", NP_KEY_BOOL, OFF(release_on_stop), "yes", 0, 0, NULL },
        { "Daemon", "MetricsFile", NP_KEY_PATH, OFF(metrics_file), "", 0, 0, NULL },
        { "Daemon", "MetricsMaxProcesses", NP_KEY_COUNT, OFF(metrics_max_processes), "100", 0, 100000, NULL },

        { "Placement", "TargetUtilization", NP_KEY_PERCENT, OFF(target_utilization), "85", 1, 100, NULL },
        { "Placement", "MemoryLocalityTarget", NP_KEY_PERCENT, OFF(memory_locality_target), "90", 1, 100, NULL },
        { "Placement", "MinProcessMemory", NP_KEY_SIZE, OFF(min_process_memory), "300M", 0, 0, NULL },
        { "Placement", "MinProcessCPU", NP_KEY_CPUS, OFF(min_process_cpu), "0.5", 0, 4096, NULL },
        { "Placement", "MinSecondsBetweenMoves", NP_KEY_SECONDS, OFF(min_usec_between_moves), "30", 0, 86400, NULL },
        { "Placement", "LocalityRefreshScans", NP_KEY_COUNT, OFF(locality_refresh_scans), "12", 1, 10000, NULL },
        { "Placement", "ReservedCPUs", NP_KEY_CPU_LIST, OFF(reserved_cpus), "", 0, 0, NULL },
        { "Placement", "KeepInterleaved", NP_KEY_BOOL, OFF(keep_interleaved), "no", 0, 0, NULL },
        { "Placement", "AdviceHoldSec", NP_KEY_SECONDS, OFF(advice_hold_usec), "60", 0, 3600, NULL },
        { "Placement", "Include", NP_KEY_NAME_LIST, OFF(include), "", 0, 0, NULL },
        { "Placement", "Exclude", NP_KEY_NAME_LIST, OFF(exclude), "", 0, 0, NULL },
        { "Placement", "Groups", NP_KEY_CGROUP_GLOBS, OFF(groups), "", 0, 0, NULL },

        { "Migration", "SkipOverlappingNodes", NP_KEY_BOOL, OFF(skip_overlapping_nodes), "yes", 0, 0, NULL },
        { "Migration", "MaxRate", NP_KEY_SIZE, OFF(max_rate), "0", 0, 0, NULL },
        { "Migration", "MoveSharedPages", NP_KEY_BOOL, OFF(move_shared_pages), "no", 0, 0, NULL },
};

#define N_KEYS G_N_ELEMENTS(config_keys)

static const char *const config_groups[] = { "Daemon", "Placement", "Migration" };

#define FIELD(c, k, type) ((type *) (void *) ((char *) (c) + (k)->offset))

const char *np_mode_to_string(NpMode m) {
        if ((unsigned) m >= G_N_ELEMENTS(mode_names) - 1)
                return "?";
        return mode_names[m];
}

const char *np_backend_kind_to_string(NpBackendKind k) {
        if ((unsigned) k >= G_N_ELEMENTS(backend_names) - 1)
                return "?";
        return backend_names[k];
}

/* Is `cgroup` the cgroup `prefix` or below it ("/a/b" matches "/a/b" and
 * "/a/b/c", not "/a/bc"; "/" matches everything)? */
static bool cgroup_under(const char *prefix, const char *cgroup) {
        size_t n = strlen(prefix);
        while (n > 1 && prefix[n - 1] == '/')
                n--;
        if (n == 1 && prefix[0] == '/')
                return cgroup[0] == '/';
        return strncmp(prefix, cgroup, n) == 0 && (cgroup[n] == '\0' || cgroup[n] == '/');
}

bool np_config_list_match(char *const *list, unsigned pid, const char *comm, const char *cgroup) {
        if (!list)
                return false;
        for (char *const *i = list; *i; i++) {
                const char *e = *i;
                if (e[0] == '/') {
                        if (cgroup && *cgroup && cgroup_under(e, cgroup))
                                return true;
                        continue;
                }
                if (g_ascii_isdigit(e[0])) {
                        guint64 v;
                        if (g_ascii_string_to_unsigned(e, 10, 1, NP_PID_MAX, &v, NULL) && v == pid)
                                return true;
                        continue;
                }
                if (comm && fnmatch(e, comm, 0) == 0)
                        return true;
        }
        return false;
}

bool np_config_has_cgroup_entries(const NpConfig *c) {
        for (int k = 0; k < 2; k++)
                for (char *const *i = k ? c->exclude : c->include; i && *i; i++)
                        if ((*i)[0] == '/')
                                return true;
        return false;
}

/* ---- the table-driven value parser -------------------------------------- */

/* Render a number for messages: "0.1", "3600", "4096". */
static char *format_number(double v) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        return g_strdup(g_ascii_formatd(buf, sizeof buf, "%.15g", v));
}

static char *choices_text(const char *const *choices) {
        return g_strjoinv(", ", (char **) choices);
}

/*
 * Parse `value` for key k and store it in c. An empty value means the key's
 * default. Returns 0, or -EINVAL/-ERANGE with *why set.
 */
static int key_apply(const NpConfigKey *k, NpConfig *c, const char *value, char **why) {
        uint64_t u = 0;
        int r;

        if (value[0] == '\0' && k->def[0] != '\0')
                value = k->def;

        switch (k->type) {
        case NP_KEY_ENUM:
                for (int i = 0; k->choices[i]; i++)
                        if (g_ascii_strcasecmp(value, k->choices[i]) == 0) {
                                *FIELD(c, k, int) = i;
                                return 0;
                        }
                {
                        g_autofree char *list = choices_text(k->choices);
                        *why = g_strdup_printf("expected one of: %s", list);
                }
                return -EINVAL;

        case NP_KEY_LOG_LEVEL:
                r = np_log_level_from_string(value);
                if (r < 0) {
                        *why = g_strdup("expected a log level: emerg, alert, crit, err, warning, notice, "
                                        "info or debug");
                        return -EINVAL;
                }
                *FIELD(c, k, int) = r;
                return 0;

        case NP_KEY_BOOL: {
                bool b;
                if (np_parse_bool(value, &b) < 0) {
                        *why = g_strdup("expected a boolean (yes/no, true/false, on/off, 1/0)");
                        return -EINVAL;
                }
                *FIELD(c, k, bool) = b;
                return 0;
        }

        case NP_KEY_SECONDS: {
                g_autofree char *lo = format_number(k->min);
                g_autofree char *hi = format_number(k->max);
                r = np_parse_seconds(value, &u);
                if (r == -EINVAL) {
                        *why = g_strdup_printf("not a time span (expected seconds between %s and %s, "
                                               "e.g. 5, 0.5 or 500ms)",
                                               lo, hi);
                        return r;
                }
                uint64_t lo_usec = (uint64_t) (k->min * USEC_PER_SEC + 0.5);
                uint64_t hi_usec = (uint64_t) (k->max * USEC_PER_SEC + 0.5);
                if (r < 0 || u < lo_usec || u > hi_usec) {
                        *why = g_strdup_printf("expected seconds between %s and %s", lo, hi);
                        return -ERANGE;
                }
                *FIELD(c, k, uint64_t) = u;
                return 0;
        }

        case NP_KEY_PERCENT:
        case NP_KEY_COUNT: {
                bool pct = k->type == NP_KEY_PERCENT;
                const char *p = value;
                uint64_t v = 0;
                bool ok = g_ascii_isdigit(*p);
                while (ok && g_ascii_isdigit(*p)) {
                        v = v * 10 + (uint64_t) (*p - '0');
                        if (v > 1000000)
                                v = 1000000; /* clamp, the range check rejects it */
                        p++;
                }
                if (pct && *p == '%')
                        p++;
                if (!ok || *p || v < k->min || v > k->max) {
                        g_autofree char *lo = format_number(k->min);
                        g_autofree char *hi = format_number(k->max);
                        *why = g_strdup_printf("expected %s between %s and %s", pct ? "a percentage" : "a whole number",
                                               lo, hi);
                        return ok && !*p ? -ERANGE : -EINVAL;
                }
                *FIELD(c, k, unsigned) = (unsigned) v;
                return 0;
        }

        case NP_KEY_SIZE:
                r = np_parse_size(value, &u);
                if (r == -ERANGE) {
                        *why = g_strdup("size too large");
                        return r;
                }
                if (r < 0) {
                        *why = g_strdup("not a size (expected a number with optional K, M, G or T suffix)");
                        return r;
                }
                *FIELD(c, k, uint64_t) = u;
                return 0;

        case NP_KEY_CPUS: {
                const char *p = np_config_skip_blank(value);
                r = np_config_parse_decimal(&p, USEC_PER_SEC, &u, NULL);
                if (r == 0 && *np_config_skip_blank(p) != '\0')
                        r = -EINVAL;
                double v = (double) u / USEC_PER_SEC;
                if (r < 0 || v < k->min || v > k->max) {
                        g_autofree char *lo = format_number(k->min);
                        g_autofree char *hi = format_number(k->max);
                        *why = g_strdup_printf("expected a number of CPUs between %s and %s", lo, hi);
                        return r < 0 ? r : -ERANGE;
                }
                *FIELD(c, k, double) = v;
                return 0;
        }

        case NP_KEY_CPU_LIST: {
                NpMask *m = NULL;
                r = np_mask_parse(value, &m);
                if (r == -ERANGE) {
                        *why = g_strdup_printf("CPU id too large (at most %u)", NP_MASK_MAX_ID);
                        return r;
                }
                if (r < 0) {
                        *why = g_strdup("not a CPU list (expected e.g. 0-1,8)");
                        return r;
                }
                NpMask **f = FIELD(c, k, NpMask *);
                np_mask_free(*f);
                *f = m;
                return 0;
        }

        case NP_KEY_PATH: {
                bool ok = value[0] == '\0' || value[0] == '/';
                for (const char *q = value; ok && *q; q++)
                        ok = (unsigned char) *q >= 0x20 && *q != 0x7f;
                size_t n = strlen(value);
                if (!ok || n >= PATH_MAX || (n > 0 && value[n - 1] == '/')) {
                        *why = g_strdup("expected an absolute file name (or nothing)");
                        return -EINVAL;
                }
                char **f = FIELD(c, k, char *);
                g_free(*f);
                *f = g_strdup(value);
                return 0;
        }

        case NP_KEY_CGROUP_GLOBS: {
                char **list = NULL;
                r = np_config_parse_cgroup_globs(value, &list, why);
                if (r < 0)
                        return r;
                char ***f = FIELD(c, k, char **);
                g_strfreev(*f);
                *f = list;
                return 0;
        }

        case NP_KEY_NAME_LIST: {
                char **list = NULL;
                r = np_config_parse_name_list(value, &list, why);
                if (r < 0)
                        return r;
                char ***f = FIELD(c, k, char **);
                g_strfreev(*f);
                *f = list;
                return 0;
        }
        }
        g_assert_not_reached();
}

/* ---- rendering ---------------------------------------------------------- */

static char *format_usec(uint64_t usec) {
        uint64_t s = usec / USEC_PER_SEC, f = usec % USEC_PER_SEC;
        if (f == 0)
                return g_strdup_printf("%" PRIu64, s);
        char *t = g_strdup_printf("%" PRIu64 ".%06" PRIu64, s, f);
        size_t n = strlen(t);
        while (t[n - 1] == '0')
                t[--n] = '\0';
        return t;
}

static char *format_size(uint64_t bytes) {
        static const char suffixes[] = "TGMK";
        if (bytes == 0)
                return g_strdup("0");
        for (int i = 0; i < 4; i++) {
                unsigned shift = (unsigned) (40 - 10 * i);
                uint64_t mult = UINT64_C(1) << shift;
                if (bytes % mult == 0)
                        return g_strdup_printf("%" PRIu64 "%c", bytes / mult, suffixes[i]);
        }
        return g_strdup_printf("%" PRIu64, bytes);
}

static char *format_cpus(double v) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];
        char *t = g_strdup(g_ascii_formatd(buf, sizeof buf, "%.6f", v));
        size_t n = strlen(t);
        while (n > 1 && t[n - 1] == '0')
                t[--n] = '\0';
        if (t[n - 1] == '.')
                t[n - 1] = '\0';
        return t;
}

/* Escape backslashes so the value reads back the same through GKeyFile escapes. */
static char *escape_value(const char *s) {
        GString *out = g_string_new(NULL);
        for (; *s; s++) {
                if (*s == '\\')
                        g_string_append_c(out, '\\');
                g_string_append_c(out, *s);
        }
        return g_string_free(out, false);
}

static char *key_format(const NpConfigKey *k, const NpConfig *c) {
        switch (k->type) {
        case NP_KEY_ENUM: {
                int v = *FIELD(c, k, const int);
                if (v < 0 || v >= (int) g_strv_length((char **) k->choices))
                        return g_strdup("?");
                return g_strdup(k->choices[v]);
        }
        case NP_KEY_LOG_LEVEL:
                return g_strdup(np_log_level_to_string(*FIELD(c, k, const int)));
        case NP_KEY_BOOL:
                return g_strdup(*FIELD(c, k, const bool) ? "yes" : "no");
        case NP_KEY_SECONDS:
                return format_usec(*FIELD(c, k, const uint64_t));
        case NP_KEY_PERCENT:
        case NP_KEY_COUNT:
                return g_strdup_printf("%u", *FIELD(c, k, const unsigned));
        case NP_KEY_SIZE:
                return format_size(*FIELD(c, k, const uint64_t));
        case NP_KEY_CPUS:
                return format_cpus(*FIELD(c, k, const double));
        case NP_KEY_CPU_LIST: {
                const NpMask *m = *FIELD(c, k, NpMask *const);
                return m ? np_mask_format(m) : g_strdup("");
        }
        case NP_KEY_PATH:
                return escape_value(*FIELD(c, k, char *const) ? *FIELD(c, k, char *const) : "");
        case NP_KEY_CGROUP_GLOBS: {
                char *const *l = *FIELD(c, k, char **const);
                g_autofree char *joined = l && l[0] ? g_strjoinv(" ", (char **) l) : g_strdup("none");
                return escape_value(joined);
        }
        case NP_KEY_NAME_LIST: {
                char *const *l = *FIELD(c, k, char **const);
                g_autofree char *joined = l ? g_strjoinv(" ", (char **) l) : g_strdup("");
                return escape_value(joined);
        }
        }
        g_assert_not_reached();
}

char *np_config_to_string(const NpConfig *c) {
        GString *s = g_string_new("# numaplaced: effective configuration\n");
        const char *group = NULL;

        if (c->files && c->files[0]) {
                g_string_append(s, "# Read from:");
                for (char **f = c->files; *f; f++)
                        g_string_append_printf(s, " %s", *f);
                g_string_append_c(s, '\n');
        } else
                g_string_append(s, "# Read from: no file (built-in defaults)\n");

        for (size_t i = 0; i < N_KEYS; i++) {
                const NpConfigKey *k = &config_keys[i];
                if (!group || strcmp(group, k->group) != 0) {
                        g_string_append_printf(s, "\n[%s]\n", k->group);
                        group = k->group;
                }
                g_autofree char *v = key_format(k, c);
                g_string_append_printf(s, "%s=%s\n", k->name, v);
        }
        return g_string_free(s, false);
}

/* ---- construction ------------------------------------------------------- */

NpConfig *np_config_new_default(void) {
        NpConfig *c = g_new0(NpConfig, 1);

        for (size_t i = 0; i < N_KEYS; i++) {
                g_autofree char *why = NULL;
                int r = key_apply(&config_keys[i], c, config_keys[i].def, &why);
                g_assert(r == 0);
        }
        c->files = g_new0(char *, 1);
        return c;
}

void np_config_free(NpConfig *c) {
        if (!c)
                return;
        np_mask_free(c->reserved_cpus);
        g_strfreev(c->include);
        g_strfreev(c->exclude);
        g_strfreev(c->groups);
        g_free(c->metrics_file);
        g_strfreev(c->files);
        g_free(c);
}

/* ---- the loader --------------------------------------------------------- */

typedef struct {
        NpConfig *config;
        GPtrArray *files;
        unsigned seq;
        struct {
                unsigned seq; /* 0: never assigned */
                char *file;
                unsigned line;
                char *value;
        } where[N_KEYS];
} Loader;

static void loader_clear(Loader *l) {
        np_config_free(l->config);
        if (l->files)
                g_ptr_array_unref(l->files);
        for (size_t i = 0; i < N_KEYS; i++) {
                g_free(l->where[i].file);
                g_free(l->where[i].value);
        }
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Loader, loader_clear)

static const NpConfigKey *key_lookup(const char *group, const char *name, size_t *idx) {
        for (size_t i = 0; i < N_KEYS; i++)
                if (strcmp(config_keys[i].group, group) == 0 && strcmp(config_keys[i].name, name) == 0) {
                        *idx = i;
                        return &config_keys[i];
                }
        return NULL;
}

static bool group_known(const char *group) {
        for (size_t i = 0; i < G_N_ELEMENTS(config_groups); i++)
                if (strcmp(config_groups[i], group) == 0)
                        return true;
        return false;
}

/* Quote text for a one-line message: control characters escaped, UTF-8 kept. */
static char *quote(const char *s) {
        char exceptions[129];
        for (int i = 0; i < 128; i++)
                exceptions[i] = (char) (128 + i);
        exceptions[128] = '\0';
        return g_strescape(s, exceptions);
}

G_GNUC_PRINTF(4, 5)
static int set_error(GError **error, int code, int r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        g_autofree char *msg = g_strdup_vprintf(fmt, ap);
        va_end(ap);
        g_set_error_literal(error, G_KEY_FILE_ERROR, code, msg);
        return r;
}

/* GKeyFile's value unescaping (g_key_file_parse_value_as_string). */
static int unescape_value(const char *raw, char **out, char **why) {
        GString *s = g_string_sized_new(strlen(raw));
        for (const char *p = raw; *p; p++) {
                if (*p != '\\') {
                        g_string_append_c(s, *p);
                        continue;
                }
                p++;
                switch (*p) {
                case 's':
                        g_string_append_c(s, ' ');
                        break;
                case 'n':
                        g_string_append_c(s, '\n');
                        break;
                case 't':
                        g_string_append_c(s, '\t');
                        break;
                case 'r':
                        g_string_append_c(s, '\r');
                        break;
                case '\\':
                        g_string_append_c(s, '\\');
                        break;
                case '\0':
                        *why = g_strdup("escape character '\\' at end of line");
                        g_string_free(s, true);
                        return -EINVAL;
                default:
                        *why = g_strdup_printf("invalid escape sequence '\\%c' (GKeyFile knows \\s \\n \\t "
                                               "\\r \\\\)",
                                               *p);
                        g_string_free(s, true);
                        return -EINVAL;
                }
        }
        *out = g_string_free(s, false);
        return 0;
}

static bool valid_group_name(const char *s, size_t n) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] == '[' || s[i] == ']' || g_ascii_iscntrl(s[i]))
                        return false;
        return true;
}

/* Parse one file's text into l->config. */
static int loader_parse(Loader *l, const char *name, const char *data, size_t len, GError **error) {
        g_autofree char *group = NULL;
        unsigned lineno = 0;
        const char *p = data, *end = data + len;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                const char *eol = nl ? nl : end;
                g_autofree char *line = NULL;
                size_t n = (size_t) (eol - p);

                lineno++;
                if (n > 0 && p[n - 1] == '\r')
                        n--;
                if (memchr(p, '\0', n))
                        return set_error(error, G_KEY_FILE_ERROR_PARSE, -EINVAL, "%s:%u: line contains a NUL byte",
                                         name, lineno);
                if (!g_utf8_validate(p, (gssize) n, NULL))
                        return set_error(error, G_KEY_FILE_ERROR_PARSE, -EINVAL, "%s:%u: line is not valid UTF-8", name,
                                         lineno);
                line = g_strndup(p, n);
                p = nl ? nl + 1 : end;

                const char *s = line;
                while (g_ascii_isspace(*s))
                        s++;
                if (*s == '\0' || *s == '#')
                        continue;

                if (*s == '[') {
                        const char *close = strchr(s, ']');
                        if (!close || *np_config_skip_blank(close + 1) != '\0' ||
                            !valid_group_name(s + 1, (size_t) (close - s - 1))) {
                                g_autofree char *q = quote(s);
                                return set_error(error, G_KEY_FILE_ERROR_PARSE, -EINVAL,
                                                 "%s:%u: '%s': not a valid [Group] header", name, lineno, q);
                        }
                        g_free(group);
                        group = g_strndup(s + 1, (size_t) (close - s - 1));
                        if (!group_known(group))
                                return set_error(error, G_KEY_FILE_ERROR_GROUP_NOT_FOUND, -EINVAL,
                                                 "%s:%u: [%s]: unknown group (expected [Daemon], [Placement] or "
                                                 "[Migration])",
                                                 name, lineno, group);
                        continue;
                }

                const char *eq = strchr(s, '=');
                if (!eq) {
                        g_autofree char *q = quote(s);
                        return set_error(error, G_KEY_FILE_ERROR_PARSE, -EINVAL,
                                         "%s:%u: '%s': not a Key=value line, [Group] header or # comment", name, lineno,
                                         q);
                }
                size_t klen = (size_t) (eq - s);
                while (klen > 0 && g_ascii_isspace(s[klen - 1]))
                        klen--;
                g_autofree char *key = g_strndup(s, klen);
                const char *vs = eq + 1;
                while (g_ascii_isspace(*vs))
                        vs++;
                g_autofree char *raw = g_strdup(vs);
                g_strchomp(raw);

                if (klen == 0) {
                        g_autofree char *q = quote(s);
                        return set_error(error, G_KEY_FILE_ERROR_PARSE, -EINVAL, "%s:%u: '%s': empty key name", name,
                                         lineno, q);
                }
                if (!group) {
                        g_autofree char *q = quote(s);
                        return set_error(error, G_KEY_FILE_ERROR_PARSE, -EINVAL,
                                         "%s:%u: '%s': key outside of any [Group]", name, lineno, q);
                }

                size_t idx = 0;
                const NpConfigKey *k = key_lookup(group, key, &idx);
                if (!k) {
                        g_autofree char *qk = quote(key);
                        g_autofree char *qv = quote(raw);
                        return set_error(error, G_KEY_FILE_ERROR_KEY_NOT_FOUND, -EINVAL,
                                         "%s:%u: [%s] %s: '%s': unknown key%s", name, lineno, group, qk, qv,
                                         key[0] == ';' ? " (only '#' starts a comment)" : "");
                }

                g_autofree char *value = NULL;
                g_autofree char *why = NULL;
                int r = unescape_value(raw, &value, &why);
                if (r == 0)
                        r = key_apply(k, l->config, value, &why);
                if (r < 0) {
                        g_autofree char *qv = quote(value ? value : raw);
                        return set_error(error, G_KEY_FILE_ERROR_INVALID_VALUE, r, "%s:%u: [%s] %s: '%s': %s", name,
                                         lineno, group, k->name, qv, why);
                }

                l->where[idx].seq = ++l->seq;
                g_free(l->where[idx].file);
                l->where[idx].file = g_strdup(name);
                l->where[idx].line = lineno;
                g_free(l->where[idx].value);
                l->where[idx].value = g_steal_pointer(&value);
        }

        /* Cross-check: whatever is accepted here must be a valid key file. */
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autoptr(GError) kerr = NULL;
        if (!g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, &kerr))
                return set_error(error, G_KEY_FILE_ERROR_PARSE, -EINVAL, "%s: not a valid key file: %s", name,
                                 kerr->message);

        g_ptr_array_add(l->files, g_strdup(name));
        return 0;
}

static int loader_check(Loader *l, GError **error) {
        size_t si = 0, mi = 0;
        const NpConfigKey *ks = key_lookup("Daemon", "ScanIntervalSec", &si);
        const NpConfigKey *km = key_lookup("Daemon", "MaxScanIntervalSec", &mi);
        g_assert(ks && km);

        const NpConfig *c = l->config;
        if (c->max_scan_interval_usec >= c->scan_interval_usec)
                return 0;

        /* Blame the key assigned last: the defaults are consistent. */
        g_autofree char *scan = format_usec(c->scan_interval_usec);
        g_autofree char *max = format_usec(c->max_scan_interval_usec);
        if (l->where[mi].seq > l->where[si].seq) {
                g_autofree char *qv = quote(l->where[mi].value);
                return set_error(error, G_KEY_FILE_ERROR_INVALID_VALUE, -EINVAL,
                                 "%s:%u: [Daemon] MaxScanIntervalSec: '%s': must be at least ScanIntervalSec (%s)",
                                 l->where[mi].file, l->where[mi].line, qv, scan);
        }
        g_assert(l->where[si].seq > 0);
        g_autofree char *qv = quote(l->where[si].value);
        return set_error(error, G_KEY_FILE_ERROR_INVALID_VALUE, -EINVAL,
                         "%s:%u: [Daemon] ScanIntervalSec: '%s': must not exceed MaxScanIntervalSec (%s)",
                         l->where[si].file, l->where[si].line, qv, max);
}

static void loader_init(Loader *l) {
        memset(l, 0, sizeof *l);
        l->config = np_config_new_default();
        l->files = g_ptr_array_new_with_free_func(g_free);
}

static void loader_finish(Loader *l, NpConfig **out) {
        g_strfreev(l->config->files);
        g_ptr_array_add(l->files, NULL);
        l->config->files = (char **) g_ptr_array_free(g_steal_pointer(&l->files), false);
        *out = g_steal_pointer(&l->config);
}

static int file_error_to_errno(const GError *e) {
        if (e->domain != G_FILE_ERROR)
                return -EIO;
        switch (e->code) {
        case G_FILE_ERROR_NOENT:
                return -ENOENT;
        case G_FILE_ERROR_ACCES:
        case G_FILE_ERROR_PERM:
                return -EACCES;
        case G_FILE_ERROR_ISDIR:
                return -EISDIR;
        case G_FILE_ERROR_NOTDIR:
                return -ENOTDIR;
        case G_FILE_ERROR_NOMEM:
                return -ENOMEM;
        default:
                return -EIO;
        }
}

/* Read one file; an absent file is skipped (returns 0, nothing read). */
static int loader_read_file(Loader *l, const char *path, GError **error) {
        g_autofree char *data = NULL;
        g_autoptr(GError) e = NULL;
        gsize len = 0;

        if (!g_file_get_contents(path, &data, &len, &e)) {
                int r = file_error_to_errno(e);
                if (r == -ENOENT)
                        return 0;
                g_set_error(error, G_FILE_ERROR, e->code, "%s: cannot read: %s", path, e->message);
                return r;
        }
        return loader_parse(l, path, data, len, error);
}

static gint compare_names(gconstpointer a, gconstpointer b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int np_config_load(const char *main_file, NpConfig **out, GError **error) {
        g_auto(Loader) l = { 0 };
        g_autofree char *dir_path = NULL;
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GError) e = NULL;
        g_autoptr(GDir) dir = NULL;
        int r;

        g_return_val_if_fail(main_file && out, -EINVAL);

        loader_init(&l);
        r = loader_read_file(&l, main_file, error);
        if (r < 0)
                return r;

        dir_path = g_strconcat(main_file, ".d", NULL);
        dir = g_dir_open(dir_path, 0, &e);
        if (!dir) {
                r = file_error_to_errno(e);
                if (r != -ENOENT) {
                        g_set_error(error, G_FILE_ERROR, e->code, "%s: cannot open drop-in directory: %s", dir_path,
                                    e->message);
                        return r;
                }
        } else {
                const char *n;
                while ((n = g_dir_read_name(dir))) {
                        if (n[0] == '.' || !g_str_has_suffix(n, ".conf"))
                                continue;
                        g_ptr_array_add(names, g_strdup(n));
                }
                g_ptr_array_sort(names, compare_names);
        }

        for (guint i = 0; i < names->len; i++) {
                g_autofree char *path = g_build_filename(dir_path, names->pdata[i], NULL);
                if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
                        continue;
                r = loader_read_file(&l, path, error);
                if (r < 0)
                        return r;
        }

        r = loader_check(&l, error);
        if (r < 0)
                return r;
        loader_finish(&l, out);
        return 0;
}

int np_config_load_data(const char *name, const char *data, NpConfig **out, GError **error) {
        g_auto(Loader) l = { 0 };
        int r;

        g_return_val_if_fail(name && data && out, -EINVAL);

        loader_init(&l);
        r = loader_parse(&l, name, data, strlen(data), error);
        if (r < 0)
                return r;
        r = loader_check(&l, error);
        if (r < 0)
                return r;
        loader_finish(&l, out);
        return 0;
}
