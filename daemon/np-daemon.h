/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The daemon's main loop: sd-event with the signals (SIGTERM/SIGINT stop,
 * SIGHUP reloads), the systemd watchdog, the scan timer, the mover's
 * completion source and the system bus attached; sd_notify READY/STATUS/
 * STOPPING. At stop: every move is cancelled (the running one ends between
 * two migrate_pages() calls), the processes are released when
 * ReleaseOnStop=yes, and a final log line gives the counters.
 */
#include "np-manager.h"

/* Run until SIGTERM/SIGINT. The manager has its backend set up. Returns 0,
 * or a negative errno when the loop or the bus cannot be set up (logged). */
int np_daemon_run(NpManager *m);
