/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pre-placement advice on the command line: see np-advise.h. */
#include "np-advise.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "np-cleanup.h"
#include "np-config.h"
#include "np-log.h"
#include "np-manager.h"
#include "np-placer.h"

#define BUS_NAME "org.numaplaced1"

int np_advise_parse(const char *arg, double *cpus, unsigned long long *mb) {
        char *end = NULL;

        if (!arg || !*arg || !(g_ascii_isdigit(arg[0]) || arg[0] == '.'))
                return -EINVAL;
        errno = 0;
        double c = g_ascii_strtod(arg, &end);
        if (errno || end == arg || !isfinite(c) || c < 0 || c > 1e6)
                return -EINVAL;
        unsigned long long m = 0;
        if (*end == ':') {
                const char *s = end + 1;
                if (!g_ascii_isdigit(*s))
                        return -EINVAL;
                errno = 0;
                m = g_ascii_strtoull(s, &end, 10);
                if (errno || m > (1ull << 44))
                        return -EINVAL;
        }
        if (*end)
                return -EINVAL;
        *cpus = c;
        *mb = m;
        return 0;
}

static bool no_daemon(const sd_bus_error *e) {
        return sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                      SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_DISCONNECTED);
}

/* Ask the running daemon. 1 with *out set, 0 when no daemon answers (ask
 * the machine instead), negative with a message printed on failure. */
static int ask_daemon(double cpus, uint64_t bytes, NpMask **out) {
        g_autoptr(sd_bus_message) reply = NULL;
        sd_bus_error err = SD_BUS_ERROR_NULL;
        sd_bus *bus = NULL;
        const guint32 *ids;
        size_t size;
        int r;

        r = sd_bus_open_system(&bus);
        if (r < 0)
                return 0; /* no system bus: no daemon */
        r = sd_bus_call_method(bus, BUS_NAME, "/org/numaplaced1", "org.numaplaced1.Manager", "Advise", &err, &reply,
                               "dt", cpus, bytes);
        if (r < 0) {
                int ret = no_daemon(&err) ? 0 : r;
                if (ret < 0)
                        fprintf(stderr, "numaplaced: Advise() failed: %s\n", err.message ? err.message : strerror(-r));
                sd_bus_error_free(&err);
                sd_bus_flush_close_unref(bus);
                return ret;
        }
        r = sd_bus_message_read_array(reply, 'u', (const void **) &ids, &size);
        if (r < 0) {
                fprintf(stderr, "numaplaced: unexpected reply to Advise(): %s\n", strerror(-r));
                sd_bus_flush_close_unref(bus);
                return r;
        }
        NpMask *m = np_mask_new();
        for (size_t i = 0; i < size / sizeof(guint32); i++)
                if (ids[i] <= NP_MASK_MAX_ID)
                        np_mask_set(m, ids[i]);
        *out = m;
        sd_bus_flush_close_unref(bus);
        return 1;
}

/* Sample the machine here: two scans one second apart, then the policy. */
static NpMask *ask_machine(double cpus, uint64_t bytes, const char *config_file) {
        g_autoptr(GError) e = NULL;
        NpConfig *config = NULL;

        if (np_config_load(config_file, &config, &e) < 0) {
                fprintf(stderr, "numaplaced: %s; using the defaults\n", e->message);
                g_clear_error(&e);
                config = np_config_new_default();
        }
        g_autoptr(NpManager) m = np_manager_new(config_file, config, &e);
        if (!m) {
                fprintf(stderr, "numaplaced: cannot read the NUMA topology: %s\n", e->message);
                return NULL;
        }
        (void) np_manager_scan(m);
        g_usleep(G_USEC_PER_SEC);
        if (np_manager_scan(m) < 0)
                fprintf(stderr, "numaplaced: sampling the nodes failed; advice from their sizes only\n");
        NpMask *nodes = np_placer_advise(m, cpus, bytes, NULL, &e);
        if (!nodes)
                fprintf(stderr, "numaplaced: no advice: %s\n", e->message);
        return nodes;
}

int np_advise_main(const char *arg, const char *config_file) {
        double cpus;
        unsigned long long mb;

        if (np_advise_parse(arg, &cpus, &mb) < 0) {
                fprintf(stderr, "numaplaced: --advise %s: expected CPUS[:MB], e.g. 4:8192 (CPUs and MiB)\n",
                        arg ? arg : "");
                return 2;
        }
        /* messages from sampling: warnings only, never the journal */
        np_log_set_journal(0);
        np_log_set_level(LOG_WARNING);
        g_autoptr(NpMask) nodes = NULL;
        int r = ask_daemon(cpus, (uint64_t) mb << 20, &nodes);
        if (r < 0)
                return 1;
        if (r == 0)
                nodes = ask_machine(cpus, (uint64_t) mb << 20, config_file);
        if (!nodes || np_mask_empty(nodes))
                return 1;
        g_autofree char *s = np_mask_format(nodes);
        printf("%s\n", s);
        return fflush(stdout) == 0 ? 0 : 1;
}

int np_numad_compat_main(int argc, char **argv, const char *config_file) {
        static const char usage[] =
                "numad (numaplaced): only pre-placement advice is answered here:\n"
                "  numad -w CPUS[:MB]   print the best node list for a job of CPUS CPUs and MB MiB\n"
                "numaplaced(8) is the NUMA placement daemon that replaces numad's; see numaplaced.conf(5)\n"
                "for its settings and org.numaplaced1(5) for Include()/Exclude() (numad -p/-x).\n";
        const char *want = NULL;
        int c;

        opterr = 0;
        while ((c = getopt(argc, argv, "w:h")) != -1) {
                switch (c) {
                case 'w':
                        want = optarg;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return 0;
                default:
                        fprintf(stderr, "numad (numaplaced): option -%c is not supported\n%s", optopt ? optopt : '?',
                                usage);
                        return 1;
                }
        }
        if (optind < argc || !want) {
                fprintf(stderr, "numad (numaplaced): %s\n%s",
                        optind < argc ? "unexpected argument" : "the numad daemon is numaplaced now", usage);
                return 1;
        }
        return np_advise_main(want, config_file);
}
