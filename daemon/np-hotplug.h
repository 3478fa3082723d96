/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The held placements against the machine as it is now. The scan reloads
 * the topology when CPUs, nodes or a node's memory change (np-scan.h);
 * after it, each process the daemon holds is checked:
 *
 *   - placed by the policy, and its nodes lost their last online CPU in this
 *     change: released, put back where it was before the daemon placed it;
 *     the policy decides it again from where its memory is (a process the
 *     policy placed on nodes without CPUs is not released for that);
 *   - otherwise, when its nodes' CPUs changed (m->cpus_changed) or differ
 *     from the CPUs it is held on: confined again to its nodes' CPUs as
 *     they are now (np_placement_cpus_for(); a pinned process on nodes without
 *     CPUs runs on every online CPU, its memory stays pinned). No page
 *     moves. A failure releases it (the backend's rule).
 *
 * Either way its Decision is led by a note that says what happened. A
 * process whose move is queued or running is checked after the move. The
 * threads a release put back while CPUs of their original affinity were
 * offline get those CPUs back once they are online and the kernel lets
 * them have them (np_backend_complete_restores(), tried at every scan while
 * any wait).
 */
#include "np-manager.h"

/* Check every held process (see above). Returns how many were confined
 * again or released. */
unsigned np_hotplug_recheck(NpManager *m);
