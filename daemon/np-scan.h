/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The scan: the nodes and every process sampled, the records of the
 * processes that can be significant kept (np-classify.h decides what they
 * are), the topology re-read when it changed, the interval adapted; the
 * peek between scans; one pid made current for an action on it.
 * Records what changed; publishes nothing.
 */
#include <glib.h>
#include <stdbool.h>

#include "np-manager.h"
#include "np-process.h"

/*
 * One scan: reload the topology when CPUs or nodes went on- or offline or a
 * node's memory changed (np_topology_outdated(), MemTotal from the node
 * sample; the nodes whose CPUs changed are added to m->cpus_changed), sample
 * the nodes and every process, read the details of the significant ones,
 * drop processes that exited (releasing their records), adapt the scan
 * interval, count it (Scans).
 * Returns 0, or a negative errno when the nodes cannot be sampled (e.g.
 * -ENOENT when the topology is gone); the process sample is still taken.
 */
int np_scan_run(NpManager *m);

/* A process at or above MinProcessMemory whose CPU use is not yet measured
 * over an interval in which its memory held still (a new process, or one
 * still touching its memory) is measured again by a follow-up scan this
 * soon, at most NP_FOLLOWUP_MAX times, instead of at the next regular
 * scan. The interval does not stretch while one waits. */
#define NP_FOLLOWUP_USEC (2 * G_USEC_PER_SEC)
#define NP_FOLLOWUP_MAX 3u

/* Between two scans, a peek every this often (the daemon's timer). */
#define NP_PEEK_USEC (1 * G_USEC_PER_SEC)

/*
 * A peek between scans: sample the nodes only (no process) and tell whether
 * the machine gained what a new significant process brings since the last
 * scan: 90% of MinProcessMemory more memory in use, or, when `with_cpu`,
 * 80% of MinProcessCPU more CPUs busy since the last peek that looked at
 * them (the daemon's own CPU taken out). True: the scan is due now (also
 * when the nodes cannot be sampled), and the scan after it comes
 * NP_FOLLOWUP_USEC later.
 */
bool np_scan_peek(NpManager *m, bool with_cpu);

/*
 * Make pid's record current for an action on it (Place(), Include(),
 * Exclude()): reads /proc/PID/stat only, never a full scan. A pid the scans
 * know with the same start time is returned as it is; otherwise a record is
 * created (replacing that of a reused pid), sampled and classified
 * (np_classify_update()). Returns the record (owned by m), or NULL with
 * *error set: NP_ERROR_NO_SUCH_PROCESS, NP_ERROR_INVALID_ARGS for a kernel
 * thread or the daemon itself, NP_ERROR_FAILED when /proc/PID/stat cannot be
 * read (e.g. out of descriptors).
 */
NpProcess *np_scan_pid(NpManager *m, int pid, GError **error);
