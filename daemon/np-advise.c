/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Pre-placement advice on the command line: see np-advise.h. */
#include "np-advise.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>

#include "np-cleanup.h"
#include "np-config.h"
#include "np-log.h"
#include "np-manager.h"
#include "np-decide.h"
#include "np-scan.h"

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

/* ---- the hard limit ----------------------------------------------------- */

#define STR_(x) #x
#define STR(x) STR_(x)

/* Whatever blocks (a /proc file of a process stuck in the kernel, a bus
 * that never finishes the handshake), the command ends here. */
static void on_alarm(int sig) {
        static const char msg[] = "numaplaced: no advice within " STR(
                NP_ADVISE_LIMIT_SEC) " s, the limit of "
                                     "--advise and numad -w; giving up (see \"Advice for jobs not started yet\" in "
                                     "numaplaced(8))\n";
        ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void) n;
        _exit(1);
}

static void arm_limit(void) {
        struct sigaction sa = { .sa_handler = on_alarm };
        struct itimerval it = { .it_value = { .tv_sec = NP_ADVISE_LIMIT_USEC / G_USEC_PER_SEC,
                                              .tv_usec = NP_ADVISE_LIMIT_USEC % G_USEC_PER_SEC } };
        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGALRM, &sa, NULL);
        (void) setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- asking the daemon -------------------------------------------------- */

typedef struct {
        bool done;
        sd_bus_message *reply; /* referenced */
} Answer;

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret) {
        Answer *a = userdata;
        a->done = true;
        a->reply = sd_bus_message_ref(m);
        return 0;
}

/* No daemon to ask: no bus, nobody owns the name (never activated: the
 * answer cannot wait for a start), or the bus went away. */
static bool no_daemon(const sd_bus_error *e, sd_bus *bus) {
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER,
                                   SD_BUS_ERROR_DISCONNECTED))
                return true;
        /* sd-bus answers the calls pending on a connection that closed with
         * NoReply too: that is no daemon, not a daemon that did not answer */
        return sd_bus_error_has_name(e, SD_BUS_ERROR_NO_REPLY) && sd_bus_is_open(bus) <= 0;
}

static NpMask *read_nodes(sd_bus_message *reply) {
        const guint32 *ids;
        size_t size;
        int r = sd_bus_message_read_array(reply, 'u', (const void **) &ids, &size);
        if (r < 0) {
                fprintf(stderr, "numaplaced: unexpected reply to Advise(): %s\n", strerror(-r));
                return NULL;
        }
        NpMask *m = np_mask_new();
        for (size_t i = 0; i < size / sizeof(guint32); i++)
                if (ids[i] <= NP_MASK_MAX_ID)
                        np_mask_set(m, ids[i]);
        return m;
}

/* Send Advise() and wait for its reply until `deadline` (CLOCK_MONOTONIC):
 * 1 with *reply set; 0 when the connection ended first; -ETIMEDOUT. */
static int call_until(sd_bus *bus, double cpus, uint64_t bytes, uint64_t deadline, sd_bus_message **reply) {
        g_autoptr(sd_bus_message) call = NULL;
        Answer a = { 0 };
        int r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, "/org/numaplaced1", "org.numaplaced1.Manager",
                                               "Advise");
        if (r >= 0)
                r = sd_bus_message_append(call, "dt", cpus, bytes);
        if (r >= 0)
                r = sd_bus_message_set_auto_start(call, 0);
        if (r >= 0)
                r = sd_bus_call_async(bus, NULL, call, on_reply, &a, NP_ADVISE_BUS_TIMEOUT_USEC);
        if (r < 0)
                return 0;
        while (!a.done) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        break;
                if (r > 0)
                        continue;
                uint64_t now = np_now_usec(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return -ETIMEDOUT;
                if (sd_bus_wait(bus, deadline - now) < 0)
                        break;
        }
        if (!a.done)
                return 0;
        *reply = a.reply;
        return 1;
}

/* Ask the running daemon. 1 with *out set, 0 when no daemon answers (ask
 * the machine instead), negative with a message printed on failure. */
static int ask_daemon(double cpus, uint64_t bytes, NpMask **out) {
        g_autoptr(sd_bus_message) reply = NULL;
        sd_bus *bus = NULL;
        int r;

        if (sd_bus_open_system(&bus) < 0)
                return 0; /* no system bus: no daemon */
        r = call_until(bus, cpus, bytes, np_now_usec(CLOCK_MONOTONIC) + NP_ADVISE_BUS_TIMEOUT_USEC, &reply);
        const sd_bus_error *err = reply ? sd_bus_message_get_error(reply) : NULL;
        if (r == -ETIMEDOUT && sd_bus_is_ready(bus) <= 0) {
                fprintf(stderr, "numaplaced: the system bus did not accept the connection within %.0f s; no advice\n",
                        (double) NP_ADVISE_BUS_TIMEOUT_USEC / 1e6);
        } else if (r == -ETIMEDOUT ||
                   (err && sd_bus_error_has_name(err, SD_BUS_ERROR_NO_REPLY) && !no_daemon(err, bus))) {
                fprintf(stderr,
                        "numaplaced: the numaplaced daemon owns %s but did not answer Advise() within %.0f s "
                        "(is it stopped or hung? see systemctl status numaplaced); no advice\n",
                        BUS_NAME, (double) NP_ADVISE_BUS_TIMEOUT_USEC / 1e6);
                r = -ETIMEDOUT;
        } else if (r == 0 || (err && no_daemon(err, bus))) {
                r = 0;
        } else if (err) {
                fprintf(stderr, "numaplaced: Advise() failed: %s\n", err->message ? err->message : err->name);
                r = -EIO;
        } else {
                *out = read_nodes(reply);
                r = *out ? 1 : -EBADMSG;
        }
        sd_bus_close_unref(bus); /* nothing to flush: a flush could wait for a stuck bus */
        return r;
}

/* ---- sampling the machine here ------------------------------------------ */

/* Two scans NP_ADVISE_SAMPLE_USEC apart, then the policy; one scan only when
 * the first took so long that a second would not end before `deadline`. */
static NpMask *ask_machine(double cpus, uint64_t bytes, const char *config_file, uint64_t deadline) {
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
        uint64_t t0 = np_now_usec(CLOCK_MONOTONIC);
        (void) np_scan_run(m);
        uint64_t now = np_now_usec(CLOCK_MONOTONIC), took = now - t0;
        uint64_t left = deadline > now + took ? deadline - now - took : 0;
        if (left >= NP_ADVISE_SAMPLE_USEC / 10) {
                g_usleep(MIN(left, NP_ADVISE_SAMPLE_USEC));
                if (np_scan_run(m) < 0)
                        fprintf(stderr, "numaplaced: sampling the nodes failed; advice from their sizes only\n");
        } else {
                fprintf(stderr, "numaplaced: sampling this machine is slow (%.1f s); advice from one sample\n",
                        (double) took / 1e6);
        }
        NpMask *nodes = np_decide_advise(m, cpus, bytes, NULL, &e);
        if (!nodes)
                fprintf(stderr, "numaplaced: no advice: %s\n", e->message);
        return nodes;
}

int np_advise_main(const char *arg, const char *config_file) {
        uint64_t started = np_now_usec(CLOCK_MONOTONIC);
        double cpus;
        unsigned long long mb;

        if (np_advise_parse(arg, &cpus, &mb) < 0) {
                fprintf(stderr, "numaplaced: --advise %s: expected CPUS[:MB], e.g. 4:8192 (CPUs and MiB)\n",
                        arg ? arg : "");
                return 2;
        }
        arm_limit();
        /* messages from sampling: warnings only, never the journal */
        np_log_set_journal(0);
        np_log_set_level(LOG_WARNING);
        g_autoptr(NpMask) nodes = NULL;
        int r = ask_daemon(cpus, (uint64_t) mb << 20, &nodes);
        if (r < 0)
                return 1;
        /* sampling ends a second before the hard limit */
        if (r == 0)
                nodes = ask_machine(cpus, (uint64_t) mb << 20, config_file,
                                    started + NP_ADVISE_LIMIT_USEC - G_USEC_PER_SEC);
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
