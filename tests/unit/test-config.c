/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-config: defaults, every key, bad values with file:line,
 * syntax errors, drop-in order, rendering, the shipped file and man page. */
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <syslog.h>

#include "np-config.h"
#include "np-group.h"
#include "np-test-api.h"
#include "np-test-util.h"

#define SEC UINT64_C(1000000)

static NpConfig *load_ok(const char *text) {
        g_autoptr(GError) error = NULL;
        NpConfig *c = NULL;
        int r = np_config_load_data("test.conf", text, &c, &error);
        g_assert_no_error(error);
        g_assert_cmpint(r, ==, 0);
        g_assert_nonnull(c);
        return c;
}

/* Load text that must fail; return the message. *out must stay untouched. */
static char *load_fail(const char *text, int *ret) {
        g_autoptr(GError) error = NULL;
        NpConfig *c = (NpConfig *) (void *) 0x1;
        int r = np_config_load_data("test.conf", text, &c, &error);
        g_assert_cmpint(r, <, 0);
        g_assert_true(c == (NpConfig *) (void *) 0x1);
        g_assert_nonnull(error);
        if (ret)
                *ret = r;
        return g_strdup(error->message);
}

static void assert_defaults(const NpConfig *c) {
        g_assert_cmpint(c->mode, ==, NP_MODE_ENFORCE);
        g_assert_cmpint(c->backend, ==, NP_BACKEND_AUTO);
        g_assert_cmpuint(c->scan_interval_usec, ==, 5 * SEC);
        g_assert_cmpuint(c->max_scan_interval_usec, ==, 15 * SEC);
        g_assert_cmpint(c->log_level, ==, LOG_INFO);
        g_assert_true(c->release_on_stop);
        g_assert_cmpstr(c->metrics_file, ==, "");
        g_assert_cmpuint(c->metrics_max_processes, ==, 100);
        g_assert_cmpuint(c->target_utilization, ==, 85);
        g_assert_cmpuint(c->memory_locality_target, ==, 90);
        g_assert_cmpuint(c->min_process_memory, ==, UINT64_C(300) << 20);
        g_assert_cmpfloat(c->min_process_cpu, ==, 0.5);
        g_assert_cmpuint(c->min_usec_between_moves, ==, 30 * SEC);
        g_assert_cmpuint(c->locality_refresh_scans, ==, 12);
        g_assert_nonnull(c->reserved_cpus);
        g_assert_true(np_mask_empty(c->reserved_cpus));
        g_assert_false(c->keep_interleaved);
        g_assert_cmpuint(c->advice_hold_usec, ==, 60 * SEC);
        g_assert_nonnull(c->include);
        g_assert_null(c->include[0]);
        g_assert_nonnull(c->exclude);
        g_assert_null(c->exclude[0]);
        g_assert_nonnull(c->groups);
        g_assert_cmpstr(c->groups[0], ==, np_group_default_globs[0]);
        g_assert_true(c->skip_overlapping_nodes);
        g_assert_cmpuint(c->max_rate, ==, 0);
        g_assert_false(c->move_shared_pages);
        g_assert_nonnull(c->files);
}

static void test_defaults(void) {
        g_autoptr(NpConfig) c = np_config_new_default();
        assert_defaults(c);
        g_assert_null(c->files[0]);

        g_autoptr(NpConfig) e = load_ok("");
        assert_defaults(e);
        g_assert_cmpstr(e->files[0], ==, "test.conf");

        g_autoptr(NpConfig) g = load_ok("# only comments\n\n[Daemon]\n[Placement]\n[Migration]\n");
        assert_defaults(g);
}

static void test_every_key(void) {
        g_autoptr(NpConfig) c = load_ok("[Daemon]\n"
                                        "Mode=advise\n"
                                        "Backend=systemd\n"
                                        "ScanIntervalSec=2.5\n"
                                        "MaxScanIntervalSec=60\n"
                                        "LogLevel=debug\n"
                                        "ReleaseOnStop=no\n"
                                        "MetricsFile=/var/lib/prometheus/node-exporter/numaplaced.prom\n"
                                        "MetricsMaxProcesses=0\n"
                                        "[Placement]\n"
                                        "TargetUtilization=70\n"
                                        "MemoryLocalityTarget=95%\n"
                                        "MinProcessMemory=1G\n"
                                        "MinProcessCPU=1.25\n"
                                        "MinSecondsBetweenMoves=0\n"
                                        "LocalityRefreshScans=1\n"
                                        "ReservedCPUs=0-1,8\n"
                                        "KeepInterleaved=yes\n"
                                        "AdviceHoldSec=0\n"
                                        "Include=postgres java*\n"
                                        "Exclude=1234\n"
                                        "[Migration]\n"
                                        "SkipOverlappingNodes=no\n"
                                        "MaxRate=512M\n"
                                        "MoveSharedPages=yes\n");
        g_assert_cmpint(c->mode, ==, NP_MODE_ADVISE);
        g_assert_cmpint(c->backend, ==, NP_BACKEND_SYSTEMD);
        g_assert_cmpuint(c->scan_interval_usec, ==, 2500000);
        g_assert_cmpuint(c->max_scan_interval_usec, ==, 60 * SEC);
        g_assert_cmpint(c->log_level, ==, LOG_DEBUG);
        g_assert_false(c->release_on_stop);
        g_assert_cmpstr(c->metrics_file, ==, "/var/lib/prometheus/node-exporter/numaplaced.prom");
        g_assert_cmpuint(c->metrics_max_processes, ==, 0);
        g_assert_cmpuint(c->target_utilization, ==, 70);
        g_assert_cmpuint(c->memory_locality_target, ==, 95);
        g_assert_cmpuint(c->min_process_memory, ==, UINT64_C(1) << 30);
        g_assert_cmpfloat_with_epsilon(c->min_process_cpu, 1.25, 1e-9);
        g_assert_cmpuint(c->min_usec_between_moves, ==, 0);
        g_assert_cmpuint(c->locality_refresh_scans, ==, 1);
        g_autofree char *cpus = np_mask_format(c->reserved_cpus);
        g_assert_cmpstr(cpus, ==, "0-1,8");
        g_assert_true(c->keep_interleaved);
        g_assert_cmpuint(c->advice_hold_usec, ==, 0);
        const char *inc[] = { "postgres", "java*", NULL };
        g_assert_cmpstrv(c->include, inc);
        const char *exc[] = { "1234", NULL };
        g_assert_cmpstrv(c->exclude, exc);
        g_assert_false(c->skip_overlapping_nodes);
        g_assert_cmpuint(c->max_rate, ==, UINT64_C(512) << 20);
        g_assert_true(c->move_shared_pages);

        /* the other enum values, case and whitespace */
        g_autoptr(NpConfig) d = load_ok("  [Daemon]  \n  Backend = cpuset  \nMode=ENFORCE\nLogLevel=warn\r\n");
        g_assert_cmpint(d->backend, ==, NP_BACKEND_CPUSET);
        g_assert_cmpint(d->mode, ==, NP_MODE_ENFORCE);
        g_assert_cmpint(d->log_level, ==, LOG_WARNING);
        g_autoptr(NpConfig) a = load_ok("[Daemon]\nBackend=affinity\n");
        g_assert_cmpint(a->backend, ==, NP_BACKEND_AFFINITY);
}

static void test_parse_size(void) {
        static const struct {
                const char *s;
                uint64_t v;
        } good[] = {
                { "0", 0 },
                { "4096", 4096 },
                { "4096B", 4096 },
                { "1K", 1024 },
                { "1k", 1024 },
                { "2KB", 2048 },
                { "2KiB", 2048 },
                { "300M", UINT64_C(300) << 20 },
                { "300MiB", UINT64_C(300) << 20 },
                { "1G", UINT64_C(1) << 30 },
                { "1.5G", UINT64_C(3) << 29 },
                { "0.5 M", UINT64_C(1) << 19 },
                { ".5K", 512 },
                { "2T", UINT64_C(2) << 40 },
                { "2TB", UINT64_C(2) << 40 },
                { "16777215T", UINT64_C(16777215) << 40 },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
                uint64_t v = 1;
                g_test_message("size %s", good[i].s);
                g_assert_cmpint(np_parse_size(good[i].s, &v), ==, 0);
                g_assert_cmpuint(v, ==, good[i].v);
        }

        static const char *const bad[] = { "",    "M",   "-1",   "1X",       "1.5", "1.5B", "1..5G", "1 G B",
                                           "1GG", "1e3", "0x10", "10 bytes", "1iB", "+5",   "1,5G" };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                uint64_t v = 7;
                g_test_message("bad size '%s'", bad[i]);
                g_assert_cmpint(np_parse_size(bad[i], &v), ==, -EINVAL);
                g_assert_cmpuint(v, ==, 7);
        }
        uint64_t v;
        g_assert_cmpint(np_parse_size("16777216T", &v), ==, -ERANGE);
        g_assert_cmpint(np_parse_size("99999999999999999999", &v), ==, -ERANGE);
        g_assert_cmpint(np_parse_size(NULL, &v), ==, -EINVAL);
}

static void test_parse_seconds_bool(void) {
        static const struct {
                const char *s;
                uint64_t v;
        } good[] = {
                { "5", 5 * SEC },      { "0.5", SEC / 2 },     { "2s", 2 * SEC },
                { "500ms", 500000 },   { "1.5 sec", 1500000 }, { "250us", 250 },
                { "2min", 120 * SEC }, { "1h", 3600 * SEC },   { "0.0000001", 0 },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(good); i++) {
                uint64_t v = 1;
                g_test_message("seconds %s", good[i].s);
                g_assert_cmpint(np_parse_seconds(good[i].s, &v), ==, 0);
                g_assert_cmpuint(v, ==, good[i].v);
        }
        static const char *const bad[] = { "", "s", "-1", "5x", "1 2", "5 s s", "inf", "nan" };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                uint64_t v;
                g_test_message("bad seconds '%s'", bad[i]);
                g_assert_cmpint(np_parse_seconds(bad[i], &v), ==, -EINVAL);
        }

        static const char *const yes[] = { "yes", "YES", "true", "on", "1" };
        static const char *const no[] = { "no", "False", "off", "0" };
        for (size_t i = 0; i < G_N_ELEMENTS(yes); i++) {
                bool b = false;
                g_assert_cmpint(np_parse_bool(yes[i], &b), ==, 0);
                g_assert_true(b);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(no); i++) {
                bool b = true;
                g_assert_cmpint(np_parse_bool(no[i], &b), ==, 0);
                g_assert_false(b);
        }
        bool b;
        g_assert_cmpint(np_parse_bool("maybe", &b), ==, -EINVAL);
        g_assert_cmpint(np_parse_bool("", &b), ==, -EINVAL);
        g_assert_cmpint(np_parse_bool("2", &b), ==, -EINVAL);
}

/* Each bad value sits on line 3 behind a comment line; the full message is asserted. */
static void test_bad_values(void) {
        static const struct {
                const char *group, *line, *message;
        } cases[] = {
                { "Daemon", "Mode=bogus", "[Daemon] Mode: 'bogus': expected one of: enforce, advise" },
                { "Daemon", "Backend=numad",
                  "[Daemon] Backend: 'numad': expected one of: auto, cpuset, systemd, affinity" },
                { "Daemon", "ScanIntervalSec=fast",
                  "[Daemon] ScanIntervalSec: 'fast': not a time span (expected seconds between 0.1 and 3600, e.g. 5, "
                  "0.5 or 500ms)" },
                { "Daemon", "ScanIntervalSec=0.05",
                  "[Daemon] ScanIntervalSec: '0.05': expected seconds between 0.1 and 3600" },
                { "Daemon", "ScanIntervalSec=3601",
                  "[Daemon] ScanIntervalSec: '3601': expected seconds between 0.1 and 3600" },
                { "Daemon", "MaxScanIntervalSec=2h",
                  "[Daemon] MaxScanIntervalSec: '2h': expected seconds between 0.1 and 3600" },
                { "Daemon", "LogLevel=loud",
                  "[Daemon] LogLevel: 'loud': expected a log level: emerg, alert, crit, err, warning, notice, info or "
                  "debug" },
                { "Daemon", "ReleaseOnStop=maybe",
                  "[Daemon] ReleaseOnStop: 'maybe': expected a boolean (yes/no, true/false, on/off, 1/0)" },
                { "Placement", "TargetUtilization=0",
                  "[Placement] TargetUtilization: '0': expected a percentage between 1 and 100" },
                { "Placement", "TargetUtilization=101",
                  "[Placement] TargetUtilization: '101': expected a percentage between 1 and 100" },
                { "Placement", "TargetUtilization=85.5",
                  "[Placement] TargetUtilization: '85.5': expected a percentage between 1 and 100" },
                { "Placement", "MemoryLocalityTarget=-5",
                  "[Placement] MemoryLocalityTarget: '-5': expected a percentage between 1 and 100" },
                { "Placement", "MemoryLocalityTarget=99999999999999999999999",
                  "[Placement] MemoryLocalityTarget: '99999999999999999999999': expected a percentage between 1 and "
                  "100" },
                { "Placement", "MinProcessMemory=300X",
                  "[Placement] MinProcessMemory: '300X': not a size (expected a number with optional K, M, G or T "
                  "suffix)" },
                { "Placement", "MinProcessMemory=99999999T",
                  "[Placement] MinProcessMemory: '99999999T': size too large" },
                { "Placement", "MinProcessCPU=lots",
                  "[Placement] MinProcessCPU: 'lots': expected a number of CPUs between 0 and 4096" },
                { "Placement", "MinProcessCPU=5000",
                  "[Placement] MinProcessCPU: '5000': expected a number of CPUs between 0 and 4096" },
                { "Placement", "MinProcessCPU=-1",
                  "[Placement] MinProcessCPU: '-1': expected a number of CPUs between 0 and 4096" },
                { "Placement", "MinSecondsBetweenMoves=86401",
                  "[Placement] MinSecondsBetweenMoves: '86401': expected seconds between 0 and 86400" },
                { "Placement", "AdviceHoldSec=3601",
                  "[Placement] AdviceHoldSec: '3601': expected seconds between 0 and 3600" },
                { "Placement", "AdviceHoldSec=-1",
                  "[Placement] AdviceHoldSec: '-1': not a time span (expected seconds between 0 and 3600, e.g. 5, "
                  "0.5 or 500ms)" },
                { "Placement", "LocalityRefreshScans=0",
                  "[Placement] LocalityRefreshScans: '0': expected a whole number between 1 and 10000" },
                { "Placement", "LocalityRefreshScans=10001",
                  "[Placement] LocalityRefreshScans: '10001': expected a whole number between 1 and 10000" },
                { "Placement", "LocalityRefreshScans=99999999999999999999",
                  "[Placement] LocalityRefreshScans: '99999999999999999999': expected a whole number between 1 and "
                  "10000" },
                { "Placement", "LocalityRefreshScans=1.5",
                  "[Placement] LocalityRefreshScans: '1.5': expected a whole number between 1 and 10000" },
                { "Placement", "LocalityRefreshScans=-3",
                  "[Placement] LocalityRefreshScans: '-3': expected a whole number between 1 and 10000" },
                { "Daemon", "MetricsFile=numaplaced.prom",
                  "[Daemon] MetricsFile: 'numaplaced.prom': expected an absolute file name (or nothing)" },
                { "Daemon", "MetricsFile=/var/lib/prometheus/",
                  "[Daemon] MetricsFile: '/var/lib/prometheus/': expected an absolute file name (or nothing)" },
                { "Daemon", "MetricsFile=/tmp/a\\tb",
                  "[Daemon] MetricsFile: '/tmp/a\\tb': expected an absolute file name (or nothing)" },
                { "Daemon", "MetricsMaxProcesses=100001",
                  "[Daemon] MetricsMaxProcesses: '100001': expected a whole number between 0 and 100000" },
                { "Placement", "ReservedCPUs=0-x",
                  "[Placement] ReservedCPUs: '0-x': not a CPU list (expected e.g. 0-1,8)" },
                { "Placement", "ReservedCPUs=3-1",
                  "[Placement] ReservedCPUs: '3-1': not a CPU list (expected e.g. 0-1,8)" },
                { "Placement", "ReservedCPUs=99999999",
                  "[Placement] ReservedCPUs: '99999999': CPU id too large (at most 1048576)" },
                { "Placement", "KeepInterleaved=2",
                  "[Placement] KeepInterleaved: '2': expected a boolean (yes/no, true/false, on/off, 1/0)" },
                { "Placement", "Include=bash 0",
                  "[Placement] Include: 'bash 0': '0' is not a valid PID (expected 1 to 4194304)" },
                /* the kernel's limit, TASK_COMM_LEN - 1 = 15: 16 characters never match */
                { "Placement", "Exclude=abcdefghijklmnop",
                  "[Placement] Exclude: 'abcdefghijklmnop': 'abcdefghijklmnop' is longer than 15 characters "
                  "and can never match a process name (comm)" },
                { "Placement", "Exclude=averyveryverylongname",
                  "[Placement] Exclude: 'averyveryverylongname': 'averyveryverylongname' is longer than 15 characters "
                  "and can never match a process name (comm)" },
                { "Placement", "Include=foo\\x",
                  "[Placement] Include: 'foo\\\\x': invalid escape sequence '\\x' (GKeyFile knows \\s \\n \\t \\r "
                  "\\\\)" },
                { "Migration", "SkipOverlappingNodes=sometimes",
                  "[Migration] SkipOverlappingNodes: 'sometimes': expected a boolean (yes/no, true/false, on/off, "
                  "1/0)" },
                { "Migration", "MaxRate=fast",
                  "[Migration] MaxRate: 'fast': not a size (expected a number with optional K, M, G or T suffix)" },
                { "Migration", "MaxRate=-1M",
                  "[Migration] MaxRate: '-1M': not a size (expected a number with optional K, M, G or T suffix)" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *text = g_strdup_printf("[%s]\n# comment\n%s\n", cases[i].group, cases[i].line);
                g_autofree char *expected = g_strdup_printf("test.conf:3: %s", cases[i].message);
                g_autofree char *msg = load_fail(text, NULL);
                g_assert_cmpstr(msg, ==, expected);
        }
}

static void test_unknown_key_group(void) {
        g_autofree char *m1 = load_fail("[Daemon]\nMode=advise\nFrobnicate=1\n", NULL);
        g_assert_cmpstr(m1, ==, "test.conf:3: [Daemon] Frobnicate: '1': unknown key");

        /* a key of another group is unknown here */
        g_autofree char *m2 = load_fail("[Migration]\n\nMode=advise\n", NULL);
        g_assert_cmpstr(m2, ==, "test.conf:3: [Migration] Mode: 'advise': unknown key");

        /* keys are case-sensitive like GKeyFile */
        g_autofree char *m3 = load_fail("[Daemon]\nmode=advise\n", NULL);
        g_assert_cmpstr(m3, ==, "test.conf:2: [Daemon] mode: 'advise': unknown key");

        /* ';' is not a comment in GKeyFile syntax */
        g_autofree char *m4 = load_fail("[Daemon]\n;Mode=advise\n", NULL);
        g_assert_cmpstr(m4, ==, "test.conf:2: [Daemon] ;Mode: 'advise': unknown key (only '#' starts a comment)");

        g_autofree char *m5 = load_fail("[Daemon]\nMode=advise\n\n[Scheduler]\nFoo=1\n", NULL);
        g_assert_cmpstr(m5, ==,
                        "test.conf:4: [Scheduler]: unknown group (expected [Daemon], [Placement] or [Migration])");

        g_autofree char *m6 = load_fail("[daemon]\n", NULL);
        g_assert_cmpstr(m6, ==, "test.conf:1: [daemon]: unknown group (expected [Daemon], [Placement] or [Migration])");
}

static void test_malformed(void) {
        static const struct {
                const char *text, *message;
        } cases[] = {
                { "[Daemon]\nMode advise\n",
                  "test.conf:2: 'Mode advise': not a Key=value line, [Group] header or # comment" },
                { "[Daemon]\n\n\n  garbage\n",
                  "test.conf:4: 'garbage': not a Key=value line, [Group] header or # comment" },
                { "# header\nMode=advise\n[Daemon]\n", "test.conf:2: 'Mode=advise': key outside of any [Group]" },
                { "[Daemon\nMode=advise\n", "test.conf:1: '[Daemon': not a valid [Group] header" },
                { "[Daemon] x\n", "test.conf:1: '[Daemon] x': not a valid [Group] header" },
                { "[]\n", "test.conf:1: '[]': not a valid [Group] header" },
                { "[Daemon]\n=5\n", "test.conf:2: '=5': empty key name" },
                { "[Daemon]\nMode=advise\\\n",
                  "test.conf:2: [Daemon] Mode: 'advise\\\\': escape character '\\' at end of line" },
                { "[Daemon]\nMode=\xff\xfe\n", "test.conf:2: line is not valid UTF-8" },
        };
        for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
                int r = 0;
                g_autofree char *msg = load_fail(cases[i].text, &r);
                g_assert_cmpstr(msg, ==, cases[i].message);
                g_assert_cmpint(r, ==, -EINVAL);
        }
}

static void test_empty_and_duplicates(void) {
        /* an empty scalar means the default; an empty list is empty */
        g_autoptr(NpConfig) c = load_ok("[Daemon]\nMode=advise\nMode=\nScanIntervalSec=\n"
                                        "[Placement]\nReservedCPUs=1\nReservedCPUs=\nInclude=a b\nInclude=\n"
                                        "MinProcessMemory=\n");
        assert_defaults(c);

        /* duplicates: the last one wins, groups may repeat */
        g_autoptr(NpConfig) d = load_ok("[Daemon]\nMode=advise\n[Placement]\nTargetUtilization=50\n"
                                        "[Daemon]\nMode=enforce\nMode=advise\n");
        g_assert_cmpint(d->mode, ==, NP_MODE_ADVISE);
        g_assert_cmpuint(d->target_utilization, ==, 50);

        /* an overridden bad value is still an error */
        g_autofree char *m = load_fail("[Daemon]\nMode=bad\nMode=advise\n", NULL);
        g_assert_cmpstr(m, ==, "test.conf:2: [Daemon] Mode: 'bad': expected one of: enforce, advise");

        /* GKeyFile escapes are understood */
        g_autoptr(NpConfig) e = load_ok("[Placement]\nInclude=a\\sb\\tc\n");
        const char *abc[] = { "a", "b", "c", NULL };
        g_assert_cmpstrv(e->include, abc);
}

static void test_lists(void) {
        g_autoptr(NpConfig) c = load_ok("[Placement]\n"
                                        "ReservedCPUs= 0-1, 8 ,10-11\n"
                                        "Include=postgres,  java*\t,mysql?  42\n"
                                        "Exclude=,,0042,[ab]sh,\n");
        g_autofree char *cpus = np_mask_format(c->reserved_cpus);
        g_assert_cmpstr(cpus, ==, "0-1,8,10-11");
        g_assert_cmpuint(np_mask_weight(c->reserved_cpus), ==, 5);
        const char *inc[] = { "postgres", "java*", "mysql?", "42", NULL };
        g_assert_cmpstrv(c->include, inc);
        const char *exc[] = { "42", "[ab]sh", NULL };
        g_assert_cmpstrv(c->exclude, exc);
        /* a name of exactly NP_TASK_COMM_LEN characters can match */
        g_autoptr(NpConfig) c15 = load_ok("[Placement]\nInclude=abcdefghijklmno\n");
        g_assert_cmpuint(strlen(c15->include[0]), ==, NP_TASK_COMM_LEN);

        g_assert_true(np_config_list_match(c->include, 1, "postgres", NULL));
        g_assert_true(np_config_list_match(c->include, 1, "java-17", NULL));
        g_assert_true(np_config_list_match(c->include, 1, "mysqld", NULL));
        g_assert_false(np_config_list_match(c->include, 1, "mysql", NULL));
        g_assert_true(np_config_list_match(c->include, 42, "anything", NULL));
        g_assert_true(np_config_list_match(c->include, 42, NULL, NULL));
        g_assert_false(np_config_list_match(c->include, 43, "bash", NULL));
        g_assert_true(np_config_list_match(c->exclude, 7, "bsh", NULL));
        g_assert_false(np_config_list_match(c->exclude, 7, "bash", NULL));
        g_assert_true(np_config_list_match(c->exclude, 7, "ash", NULL));
        g_assert_true(np_config_list_match(c->exclude, 42, "x", NULL));
        g_assert_false(np_config_list_match(c->exclude, 7, "zsh", NULL));
        g_assert_false(np_config_list_match(NULL, 7, "zsh", NULL));

        /* cgroup path prefixes, at a path component boundary */
        g_autoptr(NpConfig) cg = load_ok("[Placement]\nInclude=/system.slice/db.service /machine.slice/\n"
                                         "Exclude=/\n");
        g_assert_true(np_config_list_match(cg->include, 1, "x", "/system.slice/db.service"));
        g_assert_true(np_config_list_match(cg->include, 1, "x", "/system.slice/db.service/worker"));
        g_assert_false(np_config_list_match(cg->include, 1, "x", "/system.slice/db.services"));
        g_assert_true(np_config_list_match(cg->include, 1, "x", "/machine.slice/vm1.scope"));
        g_assert_false(np_config_list_match(cg->include, 1, "x", "/machine.slicex"));
        g_assert_false(np_config_list_match(cg->include, 1, "x", NULL));
        g_assert_false(np_config_list_match(cg->include, 1, "/system.slice/db.service", ""));
        g_assert_true(np_config_list_match(cg->exclude, 1, NULL, "/anything"));
        /* a long cgroup path is not a too-long name */
        g_autoptr(NpConfig) longcg = load_ok("[Placement]\nInclude=/a-very-long-slice-name.slice/x.service\n");
        g_assert_nonnull(longcg->include);

        /* long names are fine as patterns */
        g_autoptr(NpConfig) d = load_ok("[Placement]\nInclude=averyveryverylongname*\n");
        g_assert_cmpstr(d->include[0], ==, "averyveryverylongname*");
}

/* Groups=: the default globs, "none", globs of one's own, and what is refused. */
static void test_groups(void) {
        g_autoptr(NpConfig) def = np_config_new_default();
        g_assert_nonnull(def->groups);
        g_assert_cmpuint(g_strv_length(def->groups), ==, g_strv_length((char **) np_group_default_globs));
        g_assert_cmpstr(def->groups[0], ==, "libpod-*.scope");

        g_autoptr(NpConfig) none = load_ok("[Placement]\nGroups=none\n");
        g_assert_nonnull(none->groups);
        g_assert_null(none->groups[0]);
        g_autofree char *s = np_config_to_string(none);
        g_assert_nonnull(strstr(s, "\nGroups=none\n"));

        g_autoptr(NpConfig) own = load_ok("[Placement]\nGroups=/workloads/*, app-*.service\n");
        g_assert_cmpuint(g_strv_length(own->groups), ==, 2);
        g_assert_cmpstr(own->groups[0], ==, "/workloads/*");
        g_assert_cmpstr(own->groups[1], ==, "app-*.service");
        g_autofree char *s2 = np_config_to_string(own);
        g_assert_nonnull(strstr(s2, "\nGroups=/workloads/* app-*.service\n"));
        g_autoptr(NpConfig) back = load_ok(s2);
        g_assert_cmpstr(back->groups[1], ==, "app-*.service");

        /* an empty value is the default again (a drop-in undoing a setting) */
        g_autoptr(NpConfig) undo = load_ok("[Placement]\nGroups=none\nGroups=\n");
        g_assert_cmpuint(g_strv_length(undo->groups), ==, g_strv_length(def->groups));

        g_autofree char *e1 = load_fail("[Placement]\nGroups=/\n", NULL);
        g_assert_cmpstr(e1, ==, "test.conf:2: [Placement] Groups: '/': '/' would make every process one group");
        g_autofree char *e2 = load_fail("[Placement]\nGroups=/a/../b\n", NULL);
        g_assert_cmpstr(e2, ==, "test.conf:2: [Placement] Groups: '/a/../b': '/a/../b' is not a cgroup path glob");
        g_autofree char *e3 = load_fail("[Placement]\nGroups=none /docker/*\n", NULL);
        g_assert_cmpstr(e3, ==,
                        "test.conf:2: [Placement] Groups: 'none /docker/*': 'none' cannot be combined with globs");
}

static void test_scan_interval_order(void) {
        g_autofree char *m1 = load_fail("[Daemon]\nScanIntervalSec=10\nMaxScanIntervalSec=5\n", NULL);
        g_assert_cmpstr(m1, ==, "test.conf:3: [Daemon] MaxScanIntervalSec: '5': must be at least ScanIntervalSec (10)");

        g_autofree char *m2 = load_fail("[Daemon]\nMaxScanIntervalSec=5\n\nScanIntervalSec=10\n", NULL);
        g_assert_cmpstr(m2, ==, "test.conf:4: [Daemon] ScanIntervalSec: '10': must not exceed MaxScanIntervalSec (5)");

        /* against the default maximum (15) */
        g_autofree char *m3 = load_fail("[Daemon]\nScanIntervalSec=20\n", NULL);
        g_assert_cmpstr(m3, ==, "test.conf:2: [Daemon] ScanIntervalSec: '20': must not exceed MaxScanIntervalSec (15)");

        g_autofree char *m4 = load_fail("[Daemon]\nMaxScanIntervalSec=500ms\n", NULL);
        g_assert_cmpstr(m4, ==,
                        "test.conf:2: [Daemon] MaxScanIntervalSec: '500ms': must be at least ScanIntervalSec (5)");

        g_autoptr(NpConfig) c = load_ok("[Daemon]\nScanIntervalSec=0.1\nMaxScanIntervalSec=0.1\n");
        g_assert_cmpuint(c->scan_interval_usec, ==, 100000);
        g_autoptr(NpConfig) d = load_ok("[Daemon]\nScanIntervalSec=20\nMaxScanIntervalSec=20\n");
        g_assert_cmpuint(d->max_scan_interval_usec, ==, 20 * SEC);
}

/* ---- files ---- */

static void write_file(const char *dir, const char *name, const char *text) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autoptr(GError) error = NULL;
        g_file_set_contents(path, text, -1, &error);
        g_assert_no_error(error);
}

static void test_dropins(void) {
        g_autoptr(GError) error = NULL;
        g_autofree char *tmp = g_dir_make_tmp("np-config-XXXXXX", &error);
        g_assert_no_error(error);
        g_autofree char *main_file = g_build_filename(tmp, "numaplaced.conf", NULL);
        g_autofree char *dropdir = g_build_filename(tmp, "numaplaced.conf.d", NULL);

        write_file(tmp, "numaplaced.conf",
                   "[Daemon]\nMode=advise\nLogLevel=debug\n[Placement]\nTargetUtilization=50\nInclude=a b\n");
        g_assert_cmpint(g_mkdir(dropdir, 0755), ==, 0);
        /* written in reverse order: name order must win, not creation order */
        write_file(dropdir, "20-b.conf", "[Placement]\nTargetUtilization=70\n[Migration]\nMaxRate=1G\n");
        write_file(dropdir, "10-a.conf", "[Placement]\nTargetUtilization=60\nMemoryLocalityTarget=80\nInclude=c\n");
        write_file(dropdir, "30-c.conf.bak", "[Placement]\nTargetUtilization=99\n");
        write_file(dropdir, "README", "this is not a config file\n");
        write_file(dropdir, ".hidden.conf", "[Placement]\nTargetUtilization=98\n");
        g_autofree char *subdir = g_build_filename(dropdir, "40-dir.conf", NULL);
        g_assert_cmpint(g_mkdir(subdir, 0755), ==, 0);

        NpConfig *raw = NULL;
        int r = np_config_load(main_file, &raw, &error);
        g_assert_no_error(error);
        g_assert_cmpint(r, ==, 0);
        g_autoptr(NpConfig) c = raw;
        g_assert_cmpint(c->mode, ==, NP_MODE_ADVISE); /* main only */
        g_assert_cmpint(c->log_level, ==, LOG_DEBUG); /* main only */
        g_assert_cmpuint(c->target_utilization, ==, 70); /* 20-b wins */
        g_assert_cmpuint(c->memory_locality_target, ==, 80); /* 10-a */
        g_assert_cmpuint(c->max_rate, ==, UINT64_C(1) << 30); /* 20-b */
        const char *inc[] = { "c", NULL }; /* lists are replaced, not merged */
        g_assert_cmpstrv(c->include, inc);
        g_autofree char *a = g_build_filename(dropdir, "10-a.conf", NULL);
        g_autofree char *b = g_build_filename(dropdir, "20-b.conf", NULL);
        const char *files[] = { main_file, a, b, NULL };
        g_assert_cmpstrv(c->files, files);

        /* a bad drop-in names its own file and line; nothing is returned */
        write_file(dropdir, "15-bad.conf", "[Migration]\n\nMaxRate=lots\n");
        NpConfig *untouched = (NpConfig *) (void *) 0x1;
        r = np_config_load(main_file, &untouched, &error);
        g_assert_cmpint(r, ==, -EINVAL);
        g_assert_true(untouched == (NpConfig *) (void *) 0x1);
        g_assert_nonnull(error);
        g_autofree char *expected = g_strdup_printf("%s/15-bad.conf:3: [Migration] MaxRate: 'lots': not a size "
                                                    "(expected a number with optional K, M, G or T suffix)",
                                                    dropdir);
        g_assert_cmpstr(error->message, ==, expected);
        g_clear_error(&error);

        /* the cross-key check spans files and blames the later one */
        g_autofree char *bad = g_build_filename(dropdir, "15-bad.conf", NULL);
        write_file(dropdir, "15-bad.conf", "[Daemon]\nMaxScanIntervalSec=2\n");
        r = np_config_load(main_file, &untouched, &error);
        g_assert_cmpint(r, ==, -EINVAL);
        g_autofree char *expected2 =
                g_strdup_printf("%s:2: [Daemon] MaxScanIntervalSec: '2': must be at least ScanIntervalSec (5)", bad);
        g_assert_cmpstr(error->message, ==, expected2);
        g_clear_error(&error);
        g_unlink(bad);

        /* main file absent, drop-ins still read */
        g_unlink(main_file);
        r = np_config_load(main_file, &raw, &error);
        g_assert_no_error(error);
        g_autoptr(NpConfig) d = raw;
        g_assert_cmpint(d->mode, ==, NP_MODE_ENFORCE);
        g_assert_cmpuint(d->target_utilization, ==, 70);
        const char *files2[] = { a, b, NULL };
        g_assert_cmpstrv(d->files, files2);

        /* an unreadable main file (a directory) is an error, not defaults */
        g_assert_cmpint(g_mkdir(main_file, 0755), ==, 0);
        r = np_config_load(main_file, &untouched, &error);
        g_assert_cmpint(r, <, 0);
        g_assert_nonnull(error);
        g_assert_true(g_str_has_prefix(error->message, main_file));
        g_clear_error(&error);

        np_test_rm_rf(tmp);
}

static void test_missing_file(void) {
        g_autoptr(GError) error = NULL;
        NpConfig *raw = NULL;
        int r = np_config_load("/nonexistent/numaplaced/numaplaced.conf", &raw, &error);
        g_assert_no_error(error);
        g_assert_cmpint(r, ==, 0);
        g_autoptr(NpConfig) c = raw;
        assert_defaults(c);
        g_assert_null(c->files[0]);
}

static void test_to_string(void) {
        g_autoptr(NpConfig) def = np_config_new_default();
        g_autofree char *s = np_config_to_string(def);
        g_assert_nonnull(strstr(s,
                                "\n[Daemon]\nMode=enforce\nBackend=auto\nScanIntervalSec=5\nMaxScanIntervalSec=15\n"
                                "LogLevel=info\nReleaseOnStop=yes\nMetricsFile=\nMetricsMaxProcesses=100\n"));
        g_assert_nonnull(
                strstr(s,
                       "\n[Placement]\nTargetUtilization=85\nMemoryLocalityTarget=90\n"
                       "MinProcessMemory=300M\nMinProcessCPU=0.5\nMinSecondsBetweenMoves=30\nLocalityRefreshScans=12\n"
                       "ReservedCPUs=\nKeepInterleaved=no\nAdviceHoldSec=60\nInclude=\nExclude=\n"));
        g_assert_nonnull(strstr(s, "\n[Migration]\nSkipOverlappingNodes=yes\nMaxRate=0\nMoveSharedPages=no\n"));

        /* round trip of non-default values */
        const char *text =
                "[Daemon]\nMode=advise\nBackend=cpuset\nScanIntervalSec=0.25\nMaxScanIntervalSec=1min\n"
                "LogLevel=err\nReleaseOnStop=off\n"
                "[Placement]\nTargetUtilization=1\nMemoryLocalityTarget=100\nMinProcessMemory=1.5G\n"
                "MinProcessCPU=0.125\nMinSecondsBetweenMoves=1.5\nLocalityRefreshScans=7\nReservedCPUs=3,1,2,9\n"
                "KeepInterleaved=true\nAdviceHoldSec=2min\nInclude=a\\\\b x* 7\nExclude=z\n"
                "[Migration]\nSkipOverlappingNodes=0\nMaxRate=1000\nMoveSharedPages=on\n";
        g_autoptr(NpConfig) c = load_ok(text);
        g_autofree char *s1 = np_config_to_string(c);
        g_assert_nonnull(strstr(s1, "ScanIntervalSec=0.25\n"));
        g_assert_nonnull(strstr(s1, "MaxScanIntervalSec=60\n"));
        g_assert_nonnull(strstr(s1, "MinProcessMemory=1536M\n"));
        g_assert_nonnull(strstr(s1, "MinProcessCPU=0.125\n"));
        g_assert_nonnull(strstr(s1, "ReservedCPUs=1-3,9\n"));
        g_assert_nonnull(strstr(s1, "MaxRate=1000\n"));
        g_assert_nonnull(strstr(s1, "MoveSharedPages=yes\n"));
        g_assert_nonnull(strstr(s1, "LocalityRefreshScans=7\n"));
        g_assert_nonnull(strstr(s1, "AdviceHoldSec=120\n"));
        g_assert_nonnull(strstr(s1, "# Read from: test.conf\n"));
        g_autoptr(NpConfig) c2 = load_ok(s1);
        g_autofree char *s2 = np_config_to_string(c2);
        g_assert_cmpstr(s1, ==, s2);
        g_assert_cmpstr(c2->include[0], ==, "a\\b");
}

/* Keys as the renderer lists them: the table's rows in order. */
static char **key_names(void) {
        g_autoptr(NpConfig) def = np_config_new_default();
        g_autofree char *s = np_config_to_string(def);
        g_auto(GStrv) lines = g_strsplit(s, "\n", -1);
        g_autoptr(GPtrArray) keys = g_ptr_array_new();
        for (char **l = lines; *l; l++) {
                char *eq = strchr(*l, '=');
                if (eq && g_ascii_isupper((*l)[0]))
                        g_ptr_array_add(keys, g_strndup(*l, (size_t) (eq - *l)));
        }
        g_assert_cmpuint(keys->len, ==, 23);
        g_ptr_array_add(keys, NULL);
        return (char **) g_ptr_array_free(g_steal_pointer(&keys), false);
}

static char *source_file(const char *rel) {
        const char *root = g_getenv("NP_SOURCE_ROOT");
        if (!root)
                return NULL;
        g_autofree char *path = g_build_filename(root, rel, NULL);
        char *text = NULL;
        g_autoptr(GError) error = NULL;
        g_file_get_contents(path, &text, NULL, &error);
        g_assert_no_error(error);
        return text;
}

/* config/numaplaced.conf: every key commented out with its default. */
static void test_shipped_config(void) {
        g_autofree char *text = source_file("config/numaplaced.conf");
        if (!text) {
                g_test_skip("NP_SOURCE_ROOT not set (run through meson test)");
                return;
        }
        /* As shipped, it parses to the defaults. */
        g_autoptr(NpConfig) shipped = load_ok(text);
        assert_defaults(shipped);

        /* Uncommenting every "#Key=default" line still gives the defaults. */
        g_autoptr(GRegex) re = g_regex_new("^#([A-Z][A-Za-z]+=)", G_REGEX_MULTILINE, 0, NULL);
        g_autofree char *uncommented = g_regex_replace(re, text, -1, 0, "\\1", 0, NULL);
        g_autoptr(NpConfig) c = load_ok(uncommented);
        assert_defaults(c);

        g_auto(GStrv) keys = key_names();
        for (char **k = keys; *k; k++) {
                g_autofree char *needle = g_strdup_printf("\n#%s=", *k);
                g_test_message("shipped key %s", *k);
                g_assert_nonnull(strstr(text, needle));
        }
}

/* man/numaplaced.conf.5 documents every key. */
static void test_man_page(void) {
        g_autofree char *text = source_file("man/numaplaced.conf.5");
        if (!text) {
                g_test_skip("NP_SOURCE_ROOT not set (run through meson test)");
                return;
        }
        g_auto(GStrv) keys = key_names();
        for (char **k = keys; *k; k++) {
                g_autofree char *needle = g_strdup_printf("\n.BI %s= ", *k);
                g_test_message("man key %s", *k);
                g_assert_nonnull(strstr(text, needle));
        }
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/config/defaults", test_defaults);
        g_test_add_func("/config/every-key", test_every_key);
        g_test_add_func("/config/parse-size", test_parse_size);
        g_test_add_func("/config/parse-seconds-bool", test_parse_seconds_bool);
        g_test_add_func("/config/bad-values", test_bad_values);
        g_test_add_func("/config/unknown-key-group", test_unknown_key_group);
        g_test_add_func("/config/malformed", test_malformed);
        g_test_add_func("/config/empty-and-duplicates", test_empty_and_duplicates);
        g_test_add_func("/config/lists", test_lists);
        g_test_add_func("/config/groups", test_groups);
        g_test_add_func("/config/scan-interval-order", test_scan_interval_order);
        g_test_add_func("/config/dropins", test_dropins);
        g_test_add_func("/config/missing-file", test_missing_file);
        g_test_add_func("/config/to-string", test_to_string);
        g_test_add_func("/config/shipped-config", test_shipped_config);
        g_test_add_func("/config/man-page", test_man_page);
        return g_test_run();
}
