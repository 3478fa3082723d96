/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The main loop: see np-daemon.h. */
#include "np-daemon.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "np-advice.h"
#include "np-build-config.h"
#include "np-bus.h"
#include "np-cleanup.h"
#include "np-hotplug.h"
#include "np-log.h"
#include "np-metrics.h"
#include "np-placement.h"
#include "np-decide.h"
#include "np-scan.h"

typedef struct {
        NpManager *m;
        NpBus *bus;
        sd_event_source *scan_timer;
        uint64_t next_scan_usec; /* CLOCK_MONOTONIC: the next scan; peeks come between */
        uint64_t next_cpu_peek_usec; /* CLOCK_MONOTONIC: from here a peek looks at the CPUs too */
        char *status; /* the last STATUS= sent */
        bool stopped; /* stop() ran */
        char *metrics_file; /* the MetricsFile= last written, or NULL */
        char *metrics_error; /* the last error writing it (logged once), or NULL */
} NpDaemon;

/* MetricsFile= removed or renamed by a reload, or the daemon stops: the
 * old file goes, so that node_exporter does not serve stale values. */
static void metrics_remove(NpDaemon *d) {
        if (d->metrics_file && unlink(d->metrics_file) < 0 && errno != ENOENT)
                log_warning("Cannot remove the metrics file %s: %s", d->metrics_file, strerror(errno));
        g_clear_pointer(&d->metrics_file, g_free);
}

/* After each scan: the metrics file (MetricsFile=), replaced atomically.
 * A failure is logged when it first happens and when it changes, and the
 * recovery once. */
static void metrics_update(NpDaemon *d) {
        const NpConfig *c = d->m->config;
        if (d->metrics_file && g_strcmp0(d->metrics_file, c->metrics_file) != 0)
                metrics_remove(d);
        if (!c->metrics_file || !c->metrics_file[0])
                return;
        g_autoptr(NpMetrics) s = np_metrics_collect(d->m, c->metrics_max_processes);
        g_autofree char *text = np_metrics_format(s);
        g_autoptr(GError) e = NULL;
        if (np_metrics_write(c->metrics_file, text, &e) < 0) {
                if (g_strcmp0(d->metrics_error, e->message) != 0)
                        log_warning("Metrics not written: %s (retried after every scan)", e->message);
                g_free(d->metrics_error);
                d->metrics_error = g_strdup(e->message);
                return;
        }
        if (d->metrics_error)
                log_info("Metrics written to %s again", c->metrics_file);
        g_clear_pointer(&d->metrics_error, g_free);
        if (!d->metrics_file)
                d->metrics_file = g_strdup(c->metrics_file);
}

/* STATUS= for systemctl status, sent when it changes. */
static void notify_status(NpDaemon *d) {
        NpManager *m = d->m;
        unsigned sig, held;
        np_manager_count(m, &sig, &held);
        g_autofree char *status = g_strdup_printf(
                "%s%u nodes, %u significant processes, %u managed, %" G_GUINT64_FORMAT " bytes migrated",
                m->paused ? "Paused; " : "", m->topology->nodes->len, sig, held, m->migrated_bytes);
        /* a notification costs a socket and a dozen system calls: not every
         * scan, only when the text changed or the manager sent its own */
        if (m->status_sent)
                g_clear_pointer(&d->status, g_free);
        m->status_sent = false;
        if (g_strcmp0(status, d->status) == 0)
                return;
        sd_notifyf(false, "STATUS=%s", status);
        g_free(d->status);
        d->status = g_steal_pointer(&status);
}

/* The scan timer fires at the next scan or, every NP_PEEK_USEC before it,
 * for a peek (np_scan_peek()). */
static int arm_scan_timer(NpDaemon *d) {
        uint64_t peek = np_now_usec(CLOCK_MONOTONIC) + NP_PEEK_USEC;
        int r = sd_event_source_set_time(d->scan_timer, MIN(d->next_scan_usec, peek));
        if (r >= 0)
                r = sd_event_source_set_enabled(d->scan_timer, SD_EVENT_ONESHOT);
        return r;
}

static void schedule_scan(NpDaemon *d) {
        uint64_t now = np_now_usec(CLOCK_MONOTONIC);
        d->next_scan_usec = now + d->m->scan_interval_usec;
        d->next_cpu_peek_usec = now + d->m->config->scan_interval_usec;
}

/* A timer this close to the next scan scans (no peek just before it). */
#define PEEK_SLACK_USEC (100 * 1000)

/* Does this peek look at the CPUs too? Only while the interval is
 * stretched past ScanIntervalSec, once every ScanIntervalSec: CPU use over
 * a second is too noisy to scan by. */
static bool cpu_peek_due(NpDaemon *d, uint64_t usec) {
        const NpManager *m = d->m;
        if (m->scan_interval_usec <= m->config->scan_interval_usec || usec + PEEK_SLACK_USEC < d->next_cpu_peek_usec)
                return false;
        d->next_cpu_peek_usec = usec + m->config->scan_interval_usec;
        return true;
}

static int on_scan_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        NpDaemon *d = userdata;
        int r;
        if (usec + PEEK_SLACK_USEC < d->next_scan_usec && !np_scan_peek(d->m, cpu_peek_due(d, usec))) {
                r = arm_scan_timer(d);
                goto armed;
        }
        r = np_scan_run(d->m);
        /* also when paused: a placement whose CPUs went away is not kept */
        (void) np_hotplug_recheck(d->m);
        if (r < 0)
                log_warning("Scan %" G_GUINT64_FORMAT " could not sample the nodes: %s", d->m->scans, g_strerror(-r));
        else {
                np_advice_settle(d->m);
                np_decide_run(d->m);
        }
        metrics_update(d);
        notify_status(d);
        schedule_scan(d);
        r = arm_scan_timer(d);
armed:
        if (r < 0) {
                log_error("Cannot re-arm the scan timer: %s; stopping", strerror(-r));
                return sd_event_exit(sd_event_source_get_event(s), r);
        }
        return 0;
}

static void stop(NpDaemon *d);

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        log_info("Received %s, stopping", strsignal((int) si->ssi_signo));
        sd_notify(false, "STOPPING=1\nSTATUS=Stopping");
        /* While the bus is still open: the callers of a cancelled Place()
         * get their reply before sd-bus flushes and closes at loop exit. */
        stop(userdata);
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_hup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        NpDaemon *d = userdata;
        log_info("Received SIGHUP, reloading configuration");
        (void) np_manager_reload(d->m, NULL);
        if (d->scan_timer) {
                schedule_scan(d);
                (void) arm_scan_timer(d);
        }
        return 0;
}

static int setup_loop(NpDaemon *d, sd_event *e) {
        static const int stop_signals[] = { SIGTERM, SIGINT };
        sigset_t ss;
        int r;

        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigaddset(&ss, SIGINT);
        sigaddset(&ss, SIGHUP);
        /* Blocked before any thread starts, so the mover's worker
         * inherits the mask and signals reach the signalfd. */
        if (sigprocmask(SIG_BLOCK, &ss, NULL) < 0) {
                r = -errno;
                log_error("Cannot block signals: %s", strerror(-r));
                return r;
        }
        for (size_t i = 0; i < G_N_ELEMENTS(stop_signals); i++) {
                r = sd_event_add_signal(e, NULL, stop_signals[i], on_exit_signal, d);
                if (r < 0) {
                        log_error("Cannot watch signal %s: %s", strsignal(stop_signals[i]), strerror(-r));
                        return r;
                }
        }
        r = sd_event_add_signal(e, NULL, SIGHUP, on_hup, d);
        if (r < 0) {
                log_error("Cannot watch SIGHUP: %s", strerror(-r));
                return r;
        }
        /* WatchdogSec= in the unit: the loop pings at half the interval.
         * Returns 0 when no watchdog was asked for. */
        r = sd_event_set_watchdog(e, true);
        if (r < 0) {
                log_error("Cannot set up the systemd watchdog: %s", strerror(-r));
                return r;
        }
        return 0;
}

static void stop(NpDaemon *d) {
        NpManager *m = d->m;

        if (d->stopped)
                return;
        d->stopped = true;
        /* Cancel every move: the running one ends between two
         * migrate_pages() calls and its process is put back; Place()
         * callers get a Cancelled error. */
        np_placement_shutdown(m);
        if (m->backend) {
                if (m->config->release_on_stop) {
                        np_backend_release_all(m->backend);
                        log_info("Released every managed process (ReleaseOnStop=yes)");
                } else
                        log_info("Leaving managed processes confined (ReleaseOnStop=no); the next start releases "
                                 "them");
        }
        log_info("Stopped after %" G_GUINT64_FORMAT " scans: MigratedBytes=%" G_GUINT64_FORMAT
                 " MigrationCalls=%" G_GUINT64_FORMAT " MigrationFailedPages=%" G_GUINT64_FORMAT,
                 m->scans, m->migrated_bytes, m->migration_calls, m->migration_failed_pages);
        metrics_remove(d);
}

int np_daemon_run(NpManager *m) {
        g_autoptr(sd_event) e = NULL;
        g_autoptr(sd_event_source) scan_timer = NULL;
        NpDaemon d = { .m = m };
        g_autoptr(GError) err = NULL;
        int r;

        r = sd_event_new(&e);
        if (r < 0) {
                log_error("Cannot create the event loop: %s", strerror(-r));
                return r;
        }
        r = setup_loop(&d, e);
        if (r < 0)
                return r;
        m->event = e;
        if (m->backend && (r = np_backend_attach_event(m->backend, e, np_placement_kernel_moved, m)) < 0)
                log_warning("The backend's calls to systemd stay synchronous: %s", strerror(-r));
        r = np_placement_setup(m, &err);
        if (r < 0) {
                log_error("Cannot set up the migration worker: %s", err->message);
                goto out;
        }
        r = np_bus_new(m, e, &d.bus);
        if (r < 0)
                goto out;

        r = np_scan_run(m);
        if (r < 0)
                log_warning("The first scan could not sample the nodes: %s", g_strerror(-r));
        r = sd_event_add_time_relative(e, &scan_timer, CLOCK_MONOTONIC, m->scan_interval_usec, 0, on_scan_timer, &d);
        d.scan_timer = scan_timer;
        if (r < 0) {
                log_error("Cannot add the scan timer: %s", strerror(-r));
                goto out;
        }
        schedule_scan(&d);
        (void) sd_event_source_set_description(d.scan_timer, "scan-timer");
        r = arm_scan_timer(&d);
        if (r < 0) {
                log_error("Cannot arm the scan timer: %s", strerror(-r));
                goto out;
        }

        log_info("numaplaced %s running: %u nodes, backend %s, mode %s, scanning every %.1f s", NP_VERSION,
                 m->topology->nodes->len, m->backend_name, np_mode_to_string(m->config->mode),
                 (double) m->config->scan_interval_usec / 1e6);
        r = sd_notify(false, "READY=1");
        if (r < 0) /* e.g. out of descriptors: systemd would time the start out */
                log_error("Cannot tell systemd the daemon is ready: %s", strerror(-r));
        notify_status(&d);

        r = sd_event_loop(e);
        if (r < 0)
                log_error("The event loop failed: %s", strerror(-r));
        else if (r > 0) {
                /* only sd-bus's exit-on-disconnect ends the loop with a
                 * positive code (EXIT_FAILURE) */
                log_error("Lost the connection to the system bus: stopping");
                r = -ENOTCONN;
        }
        stop(&d); /* when the loop ended for another reason than a signal */
out:
        if (scan_timer)
                (void) sd_event_source_set_enabled(scan_timer, SD_EVENT_OFF);
        np_mover_free(g_steal_pointer(&m->mover));
        np_bus_free(d.bus);
        g_free(d.status);
        g_free(d.metrics_file);
        g_free(d.metrics_error);
        m->event = NULL;
        return r < 0 ? r : 0;
}
