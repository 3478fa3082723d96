/* SPDX-License-Identifier: GPL-2.0-or-later */
/* numaplaced: parse options, preflight with clear errors, run the loop. */
#include <errno.h>
#include <locale.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "np-advise.h"
#include "np-status.h"
#include "np-build-config.h"
#include "np-config.h"
#include "np-log.h"
#include "np-daemon.h"
#include "np-manager.h"
#include "np-migrate-plan.h"
#include "np-scan.h"
#include "np-sysroot.h"

static char *opt_config;
static char *opt_root;
static char *opt_log_level;
static gboolean opt_version;
static gboolean opt_once;
static gboolean opt_plan;
static char *opt_advise;
static gboolean opt_status;
static gboolean opt_json;
static char **opt_args;

static const GOptionEntry entries[] = {
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &opt_config,
          "Main configuration file (default " NP_CONFIG_FILE "); drop-ins are read from FILE.d/", "FILE" },
        { "root", 0, 0, G_OPTION_ARG_FILENAME, &opt_root,
          "Read /sys and /proc below DIR (for tests; default $NUMAPLACED_ROOT or /)", "DIR" },
        { "log-level", 0, 0, G_OPTION_ARG_STRING, &opt_log_level,
          "Log level: err, warning, notice, info or debug (overrides LogLevel=)", "LEVEL" },
        { "once", 0, 0, G_OPTION_ARG_NONE, &opt_once,
          "Sample twice one second apart, print the state as Dump() does, and exit", NULL },
        { "plan", 0, 0, G_OPTION_ARG_NONE, &opt_plan,
          "Print the migration plan from node list FROM to node list TO (one 'source -> destination' pair a "
          "line, honouring SkipOverlappingNodes=) and exit",
          NULL },
        { "advise", 0, 0, G_OPTION_ARG_STRING, &opt_advise,
          "Print the best node list for a job of CPUS CPUs and MB MiB, as numad -w does (asks the running daemon, "
          "or samples the machine when none runs) and exit",
          "CPUS[:MB]" },
        { "status", 0, 0, G_OPTION_ARG_NONE, &opt_status,
          "Print what the running daemon sees, like numastat -p: memory per node, locality, target and state of "
          "each significant or managed process, and each node (no root needed) and exit",
          NULL },
        { "json", 0, 0, G_OPTION_ARG_NONE, &opt_json, "With --status: print JSON", NULL },
        { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL },
        { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_args, NULL, "[FROM TO]" },
        { NULL, 0, 0, 0, NULL, NULL, NULL },
};

static int run_plan(const NpConfig *config) {
        if (!opt_args || g_strv_length(opt_args) != 2) {
                fprintf(stderr, "numaplaced: --plan takes two node lists, e.g. --plan 0-7 3,4\n");
                return 2;
        }
        g_autoptr(NpMask) from = NULL;
        g_autoptr(NpMask) to = NULL;
        if (np_mask_parse(opt_args[0], &from) < 0 || np_mask_empty(from)) {
                fprintf(stderr, "numaplaced: --plan: '%s' is not a node list (expected e.g. 0-3,7)\n", opt_args[0]);
                return 2;
        }
        if (np_mask_parse(opt_args[1], &to) < 0 || np_mask_empty(to)) {
                fprintf(stderr, "numaplaced: --plan: '%s' is not a node list (expected e.g. 0-3,7)\n", opt_args[1]);
                return 2;
        }
        g_autoptr(GArray) plan = np_plan_migration(from, to, config->skip_overlapping_nodes);
        g_autofree char *text = np_plan_format(plan);
        fputs(text, stdout);
        return 0;
}

static int run_once(NpManager *m) {
        int r = np_scan_run(m);
        if (r >= 0) {
                g_usleep(G_USEC_PER_SEC);
                r = np_scan_run(m);
        }
        if (r < 0) {
                fprintf(stderr, "numaplaced: scan failed: %s\n", g_strerror(-r));
                return 1;
        }
        g_autofree char *dump = np_manager_dump(m);
        fputs(dump, stdout);
        return 0;
}

int main(int argc, char *argv[]) {
#ifdef M_MMAP_THRESHOLD
        /* A fixed threshold: every block of 128 KiB or more is mmap()ed and
         * given back when freed. glibc's default raises the threshold to the
         * largest block freed so far (and the heap's trim threshold to twice
         * that), so a large D-Bus message, which any caller may send, would
         * stay in the heap for good: an 800 kB node list, 788 kB of RSS
         * (test_bus_robustness.py, test_large_message). */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
        /* No transparent huge pages for the daemon's own memory: its
         * anonymous mappings are sparse (libcgroup's 2.4 MB of static tables,
         * about 800 kB of them used), and khugepaged, when it collapses one
         * 2 MB range of them into a huge page, makes the whole range
         * resident: 1.3 MB more RSS at a moment no one chose
         * (test_soak.py). The daemon spawns nothing that would inherit it.
         * A kernel without it (before 3.15) keeps the default. */
        (void) prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
        setlocale(LC_ALL, "");
        /* Installed as "numad" (-Dnumad_compat=true): libvirt's numad -w. */
        g_autofree char *self = g_path_get_basename(argv[0]);
        if (g_str_equal(self, "numad"))
                return np_numad_compat_main(argc, argv, NP_CONFIG_FILE);

        g_autoptr(GOptionContext) ctx = g_option_context_new("- keep processes close to their memory on NUMA machines");
        g_option_context_add_main_entries(ctx, entries, NULL);
        g_option_context_set_description(ctx, "See numaplaced(8), numaplaced.conf(5) and org.numaplaced1(5).");
        g_autoptr(GError) e = NULL;
        if (!g_option_context_parse(ctx, &argc, &argv, &e)) {
                fprintf(stderr, "numaplaced: %s (see --help)\n", e->message);
                return 2;
        }
        if (opt_version) {
                printf("numaplaced %s\n", NP_VERSION);
                return 0;
        }
        if (opt_args && !opt_plan) {
                fprintf(stderr, "numaplaced: unexpected argument '%s' (see --help)\n", opt_args[0]);
                return 2;
        }

        if (opt_json && !opt_status) {
                fprintf(stderr, "numaplaced: --json goes with --status\n");
                return 2;
        }
        if (opt_status)
                return np_status_main(opt_json);

        const char *root = opt_root ? opt_root : getenv("NUMAPLACED_ROOT");
        if (root && *root) {
                if (!g_file_test(root, G_FILE_TEST_IS_DIR)) {
                        fprintf(stderr, "numaplaced: --root %s: not a directory\n", root);
                        return 2;
                }
                np_sysroot_set(root);
        }
        if (opt_advise)
                return np_advise_main(opt_advise, opt_config ? opt_config : NP_CONFIG_FILE);

        const char *config_file = opt_config ? opt_config : NP_CONFIG_FILE;
        NpConfig *config = NULL;
        if (np_config_load(config_file, &config, &e) < 0) {
                fprintf(stderr, "numaplaced: configuration error: %s\n", e->message);
                return 1;
        }
        if (opt_log_level) {
                int l = np_log_level_from_string(opt_log_level);
                if (l < 0) {
                        np_config_free(config);
                        fprintf(stderr, "numaplaced: --log-level %s: expected err, warning, notice, info or debug\n",
                                opt_log_level);
                        return 2;
                }
                config->log_level = l;
        }
        np_log_set_level(config->log_level);

        if (opt_plan) {
                int r = run_plan(config);
                np_config_free(config);
                return r;
        }

        g_autoptr(NpManager) m = np_manager_new(config_file, config, &e);
        if (!m) {
                fprintf(stderr, "numaplaced: cannot read the NUMA topology: %s\n", e->message);
                return 1;
        }
        if (opt_once) {
                np_log_set_journal(0);
                return run_once(m);
        }

        /* In both modes: setting up the backend also recovers what a crashed
         * instance left (its state file), and Place() works in both; only
         * the daemon's own policy is off in advise mode. */
        np_manager_setup_backend(m);
        int r = np_daemon_run(m);
        if (r < 0) {
                log_error("Exiting: %s", g_strerror(-r));
                return 1;
        }
        return 0;
}
