/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Reservations (pure): the room an answer of Advise() (--advise, numad -w)
 * handed out, held in the ledger until the process that uses it shows up
 * or AdviceHoldSec= passes. A list in the order made, the rule that matches
 * a process to a reservation, expiry, the bounds on unprivileged callers,
 * and the reservations as pinned pseudo-processes for the policy. No I/O,
 * no clock: every time is an argument.
 *
 * "Shows up" (numaplaced.conf(5), AdviceHoldSec=): a significant process
 * that started no earlier than the answer (within NP_RESERVE_START_SLACK_USEC)
 * whose allowed CPUs are all on the answered nodes and whose allowed memory
 * nodes are within them (or not narrowed at all) takes the reservation up.
 * From then on the reservation holds only what that process does not use
 * yet (the reserved bytes less its memory on those nodes, the reserved
 * CPUs less its CPU use); it ends when the process's memory there covers
 * the reserved bytes, when the process exits, or when its time is up.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "np-nodemask.h"
#include "np-policy.h"

/* At most this many reservations at once (one answer is one). */
#define NP_RESERVE_MAX 256u
/* Unprivileged callers (uid not 0) together: at most this many outstanding
 * reservations ... */
#define NP_RESERVE_UNPRIV_MAX 4u
/* ... holding together at most this share of the machine's CPUs and of its
 * memory. */
#define NP_RESERVE_UNPRIV_SHARE 0.25
/* Process start times are in clock ticks (10 ms): a process that the
 * kernel says started up to this long before the answer is counted as
 * started after it. */
#define NP_RESERVE_START_SLACK_USEC (10 * 1000ull)

typedef struct {
        uint64_t id; /* 1, 2, ... in the order made */
        NpMask *nodes; /* the answer */
        double cpus; /* CPUs held now */
        uint64_t bytes; /* bytes held now */
        double cpus_asked; /* as answered (bounded by the nodes' capacity) */
        uint64_t bytes_asked;
        uint64_t made_usec; /* when answered, in the clock of process start times */
        uint64_t expires_usec; /* CLOCK_MONOTONIC */
        uint32_t uid; /* the caller */
        bool privileged; /* the caller was root */
        int pid; /* the process that took it up, 0 = none yet */
        uint64_t starttime; /* that process's start time (its identity with pid) */
} NpReservation;

typedef struct NpReservations NpReservations;

NpReservations *np_reservations_new(void);
void np_reservations_free(NpReservations *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpReservations, np_reservations_free)
/* From now on every change of the list (one made, taken up, shrunk,
 * dropped) ORs `bit` into *changes (NULL: recorded nowhere). */
void np_reservations_record_changes(NpReservations *r, uint32_t *changes, uint32_t bit);

/* How many; the i-th in the order made (i < count). */
guint np_reservations_count(const NpReservations *r);
const NpReservation *np_reservations_get(const NpReservations *r, guint i);
/* The bytes they hold now, together. */
uint64_t np_reservations_bytes(const NpReservations *r);
/* The earliest expiry (CLOCK_MONOTONIC), UINT64_MAX when there is none. */
uint64_t np_reservations_next_expiry(const NpReservations *r);

typedef enum {
        NP_RESERVE_HELD, /* taken */
        NP_RESERVE_OFF, /* AdviceHoldSec=0 */
        NP_RESERVE_EMPTY, /* nothing to hold (no CPUs, no bytes, no nodes) */
        NP_RESERVE_FULL, /* NP_RESERVE_MAX are outstanding */
        NP_RESERVE_UNPRIV_MANY, /* unprivileged callers have NP_RESERVE_UNPRIV_MAX outstanding */
        NP_RESERVE_UNPRIV_OVER, /* it would take unprivileged callers past their share */
} NpReserveOutcome;

/* Why an answer was not held, for a log line ("" for NP_RESERVE_HELD). */
const char *np_reserve_outcome_to_string(NpReserveOutcome o);

typedef struct {
        uint64_t made_usec; /* now, in the clock of process start times */
        uint64_t now_usec; /* now, CLOCK_MONOTONIC */
        uint64_t hold_usec; /* AdviceHoldSec= (0 = off) */
        uint32_t uid;
        bool privileged;
        double machine_cpus; /* the machine's CPUs and memory: what the unprivileged share is of */
        uint64_t machine_bytes;
} NpReserveRequest;

/* Hold `cpus` and `bytes` on `nodes` (copied) for q->hold_usec. Returns
 * NP_RESERVE_HELD with *id (may be NULL) set, or why not (nothing added). */
NpReserveOutcome np_reservations_add(NpReservations *r, const NpMask *nodes, double cpus, uint64_t bytes,
                                     const NpReserveRequest *q, uint64_t *id);

/* Drop the reservations whose time is up (expires_usec <= now). Returns how
 * many were dropped. */
guint np_reservations_expire(NpReservations *r, uint64_t now_usec);

/* A process as the match rule sees it. */
typedef struct {
        int pid;
        uint64_t starttime; /* identity with pid */
        uint64_t start_usec; /* when it started, in the clock of made_usec */
        const NpMask *cpu_nodes; /* the nodes of its allowed CPUs (NULL: unknown, never matches) */
        const NpMask *mem_nodes; /* its allowed memory nodes; NULL: not narrowed */
        const GArray *per_node; /* NpNodeBytes: where its pages are (may be NULL) */
        double cpu; /* CPUs it uses */
} NpReserveUser;

/* Does u take up res (the rule above; res not taken up yet)? */
bool np_reservation_matches(const NpReservation *res, const NpReserveUser *u);

/*
 * After a scan, with users = the significant processes: a reservation taken
 * up by a process that is no longer among them (exited, or its pid reused)
 * is dropped; each reservation not taken up yet, oldest first, is taken up
 * by the lowest-pid user that matches it and has none; a taken-up one then
 * holds what its process does not use yet, and is dropped when that is no
 * memory (that process takes no other reservation while it lives). Returns how many reservations were dropped; *changed
 * (may be NULL) says whether any reservation changed or was dropped.
 */
guint np_reservations_settle(NpReservations *r, const NpReserveUser *users, guint n_users, bool *changed);

/* Append the reservations to `procs` (GArray of NpPolicyProcess) as
 * pseudo-processes held on their nodes (NP_HOLD_RESERVED, pid -id); the
 * masks stay owned by r, which must outlive the array's use. */
void np_reservations_to_procs(const NpReservations *r, GArray *procs);
