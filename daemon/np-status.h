/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * `numaplaced --status [--json]`: a numastat-like view of the running
 * daemon, read over the system bus (GetManagedObjects on /org/numaplaced1,
 * open to every user). One row per significant or managed process (memory
 * per node, locality, target nodes, state) and one row per node; --json
 * prints the same for scripts.
 */
#include <stdbool.h>

/* Print the status and return the exit status: 0, or 1 with a message on
 * stderr (no daemon on the bus, a call that failed, an unexpected reply). */
int np_status_main(bool json);
