/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Deciding: after each scan, takes the policy's snapshot of the manager
 * (np-snapshot.h), runs the pure policy, and carries out its
 * decisions: in Mode=enforce every move goes through the placement path
 * (np-placement.h), all of a scan's moves queued at once; in Mode=advise the
 * decision is published (State "advised", TargetNodes) and logged, nothing
 * moves. Nothing is decided while paused, nor on a machine with one node of
 * memory, where only foreign processes are marked (State and Decision).
 *
 * A round waits when it would spread a process over several nodes for
 * want of memory on the node with most of its pages, and processes of
 * MinProcessMemory waiting for their follow-up scan (np-scan.h: new, or
 * still touching their memory) hold at least that much: their pages count
 * where they are now, on nodes they may be about to leave; the memory of
 * the processes starting beside it below MinProcessMemory (from half of it
 * up, still touching their memory or not yet measured), which have no
 * follow-up of their own, counts too. So too for want
 * of CPUs there, when the CPU use of the processes starting beside it (not
 * candidates yet, from half of MinProcessMemory up, still touching their
 * memory or waiting for their follow-up) is at least the want: until they
 * are measured candidates, the ledger spreads their CPU over every node as
 * the machine's background (np-ledger.h). It carries out nothing, makes
 * the next scan a follow-up, and decides again there, with them measured.
 * One the kernel's balancing has begun to move (decided at first sight)
 * holds nothing back, unless the round keeps it where it is for its
 * follow-up too (no single node holds it yet, or it still touches its
 * memory). A round waits NP_DECIDE_WAIT_ROUNDS in a row at most: processes
 * that keep arriving do not hold the others back for longer.
 *
 * A process or group the round keeps where it is while the kernel has
 * not counted enough of its busy threads' NUMA faults (young, the kernel's
 * balancing on: NpPolicyProcess.thread_faults_pending, np-thread-homes.h)
 * makes the next scan a follow-up (NP_FOLLOWUP_USEC, np-scan.h): its homes,
 * or its placement, come as soon as the faults are counted, for as long as
 * it is young enough to wait (NP_HOMES_WAIT_USEC).
 *
 * The snapshot the policy decides from is np-snapshot.h's.
 */
#include <stdbool.h>
#include <stdint.h>

#include "np-manager.h"
#include "np-policy.h"

#define NP_DECIDE_WAIT_ROUNDS 4u

/* Run the policy over the manager's last scan and carry out its decisions. */
void np_decide_run(NpManager *m);

/*
 * Advise(): the nodes for a job that needs `cpus` CPUs and `bytes` of
 * memory, from the same policy and the last scan's ledger, with the room
 * the outstanding reservations hold taken. *fit (may be NULL) says whether
 * they have the room at TargetUtilization, and what they lack. NULL with
 * *error set when the arguments are invalid or no node has memory.
 */
NpMask *np_decide_advise(NpManager *m, double cpus, uint64_t bytes, NpAdviceFit *fit, GError **error);
