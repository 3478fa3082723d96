/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Thread homes carried out: after the policy's round (np-decide.c), a
 * process the round keeps spread over several nodes, with the kernel's
 * NUMA balancing on, has its busy threads' NUMA faults read, and when they
 * work on their own pages (np-policy-threads.h) each busy thread is kept on
 * one node of its own (np_backend_pin_threads()). The kernel then moves
 * the pages each thread touches alone to its node, once; the daemon moves
 * none itself.
 *
 * A process left on every node gets state "placed" by its homes alone
 * (NpProcess.threads_only: TargetNodes the homes' nodes; the policy judges
 * it afresh every round, as a process it did not place); one the policy
 * placed whole on several nodes keeps that placement, its threads homed
 * among its nodes (the placement widened first when they need more). Homes are kept while they are still the best,
 * changed when the rule gives others, and ended (each thread put back) when the round no longer keeps the process
 * spread, or its threads stop working on their own pages.
 *
 * A group of several processes (np-group.h) on several nodes, placed there
 * as one or kept where it runs, has the busy threads of all its processes
 * homed together, by the same rule, among its nodes
 * (np_thread_homes_settle_member() for each member); a group the round
 * moves there gets them as soon as its moves end
 * (np_thread_homes_plan_member()). numa01's pair on
 * one-CPU nodes is the case: each process keeps its node, so the scheduler
 * does not swap them and the kernel moves the first's private pages once,
 * not after every swap. A member of a group
 * kept where it runs is "placed" by the homes alone, as a process is
 * (threads_only), its TargetNodes the group's homes' nodes.
 */
#include <glib.h>
#include <stdbool.h>

#include "np-group.h"
#include "np-manager.h"
#include "np-nodemask.h"
#include "np-policy.h"
#include "np-process.h"

/*
 * Settle p's thread homes after the round's decision. `eligible`: the
 * round keeps p spread (the kernel's balancing is on, Mode=enforce, a
 * KEEP); its threads are homed preferably among `prefer` (the nodes it is
 * placed on; NULL: every node). When a thread needs a node outside the
 * nodes p is placed on (none of them has room for it), p's placement is
 * widened by those nodes instead (a placement that moves no page) and the
 * homes follow at a later round. `nodes` (n_nodes) are the round's node
 * samples. Returns the words the Decision adds ("; its busy threads ...")
 * while p has homes or is widened for them, else NULL. Caller frees.
 */
char *np_thread_homes_settle(NpManager *m, NpProcess *p, const NpPolicyNode *nodes, guint n_nodes, const NpMask *prefer,
                             bool eligible);

/* The homes of the groups of one round (np_thread_homes_settle_member()),
 * each worked out once, at the first of its members. */
typedef struct NpGroupHomes NpGroupHomes;
NpGroupHomes *np_group_homes_new(void);
void np_group_homes_free(NpGroupHomes *gh);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpGroupHomes, np_group_homes_free)

/*
 * Settle the homes of p, a member of group g of several processes, as
 * np_thread_homes_settle() does for a process of its own, but never
 * widening its placement. `eligible`: the round keeps g placed on several
 * nodes (`placed`) or where it runs. g's homes are the busy threads of all
 * its members together, by np_policy_thread_homes(), among the nodes g is
 * placed on (placed) or its members run on: their CPU use by node taken
 * out of the nodes' load, busy threads without faults counted among them,
 * and a member's only busy thread with its process's pages outside shared
 * memory and the files it maps as its pages (np-policy-threads.h). Placed,
 * they are homed among its nodes only (its cpusets hold them there), by
 * room; kept where it runs, none when a thread would need a node outside
 * those (NP_HOMES_OUTSIDE). They are worked out at the
 * first member the round settles (in gh); p keeps its threads' part.
 * Returns the words its Decision adds (the group's homes), else NULL.
 * Caller frees.
 */
char *np_thread_homes_settle_member(NpManager *m, NpGroupHomes *gh, const NpGroup *g, NpProcess *p,
                                    const NpPolicyNode *nodes, guint n_nodes, bool placed, bool eligible);

/*
 * When the round moves group g of several processes whole to `target`
 * (several nodes): g's homes among target, worked out now (in gh) as
 * np_thread_homes_settle_member() works them out once g is placed there,
 * and p's part of them kept in p->homes_pending, to be carried out as soon
 * as the moves end (np_thread_homes_after_moves()). No busy thread then
 * changes node between the confinement and its home (each change of node
 * makes the kernel scan the pages of its process anew). Returns the words
 * p's Decision adds (the group's homes), else NULL: the faults are not
 * counted yet, and a later round gives the homes. Caller frees.
 */
char *np_thread_homes_plan_member(NpManager *m, NpGroupHomes *gh, const NpGroup *g, NpProcess *p,
                                  const NpPolicyNode *nodes, guint n_nodes, const NpMask *target);

/* After a placement ended: carry out the pending homes of every process no
 * longer moving (its confinement finished, np-placement.h); one whose move
 * failed, or that is no longer placed, drops them. */
void np_thread_homes_after_moves(NpManager *m);

/* A process younger than this whose busy threads' faults are not counted
 * yet (or whose threads are not measured yet) waits for them before it is
 * placed on several nodes (NpPolicyProcess.thread_faults_pending). */
#define NP_HOMES_WAIT_USEC (30 * G_USEC_PER_SEC)

/* For the policy's snapshot: with the kernel's NUMA balancing on, is g, a
 * group of several processes the oldest of which is younger than
 * NP_HOMES_WAIT_USEC, still to learn whether its busy threads work on
 * their own pages: the kernel has not counted enough of their faults yet
 * (np_policy_thread_homes() says NP_HOMES_FEW_FAULTS), or fewer than two
 * are busy but threads read once only may be? Such a group waits before it
 * is placed on several nodes (NpPolicyProcess.thread_faults_pending), and
 * once the faults are counted it gets its homes with its move
 * (np_thread_homes_plan_member()). `nodes` (n_nodes): the round's. */
bool np_thread_homes_group_pending(NpManager *m, const NpGroup *g, const NpPolicyNode *nodes, guint n_nodes);

/* For the policy's snapshot: with the kernel's NUMA balancing on, do at
 * least two busy threads of p, on more than one node, work on their own
 * pages (their faults read now)? NP_HOMES_GIVEN when they do
 * (NpPolicyProcess.thread_workers), NP_HOMES_FEW_FAULTS when the kernel
 * has not counted enough of them yet, NP_HOMES_UNMEASURED when fewer than
 * two are busy but threads read once only (new since the reading before:
 * all of them when it became significant in this scan) may be, else
 * another reason (FEW_THREADS also when the balancing is off or they run
 * on one node: last ran there, and used no more CPU than it has,
 * np_policy_threads_ran_there()). */
NpHomesWhy np_thread_homes_workers(NpManager *m, const NpProcess *p);

/* What the kernel's balancing moved of p since its homes were last
 * changed (kernel_migrated_bytes then and now), and *span_usec the time
 * since; UINT64_MAX when p has no homes. */
uint64_t np_thread_homes_migrated(const NpProcess *p, uint64_t now_usec, uint64_t *span_usec);
