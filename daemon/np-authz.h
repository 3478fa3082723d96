/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Authorization of the changing bus methods: "may this caller do this?".
 *
 * Reading is open to everyone and never comes here. A changing method calls
 * np_authz_check() first thing:
 *   - a caller with euid 0 passes at once;
 *   - anyone else is checked by polkit (CheckAuthorization of the action
 *     NP_AUTHZ_ACTION, subject: the caller's unique bus name, no
 *     interaction: a daemon's method has no authentication agent). The
 *     question is asked asynchronously: the handler returns 1 (its reply
 *     comes later), and when polkit answers the method call is dispatched a
 *     second time (sd_bus_enqueue_for_read), so that the same handler runs
 *     again and np_authz_check() finds the verdict kept for that message,
 *     once: verdicts are never kept beyond the call they were asked for;
 *   - when polkit is not on the bus (no owner, activation failed, it went
 *     away mid-call) only root may: everyone else is refused with a message
 *     saying polkit is not available.
 * Refusals are AccessDenied errors naming the action, and a notice in the
 * log naming the method, the uid and the verdict.
 */
#include <stdbool.h>
#include <systemd/sd-bus.h>

#include <glib.h>

#define NP_AUTHZ_ACTION "org.numaplaced1.manage"
/* More pending polkit questions than this are refused at once
 * (LimitsExceeded): a caller flooding the daemon cannot grow it without bound. */
#define NP_AUTHZ_MAX_PENDING 1024

typedef struct NpAuthz NpAuthz;

NpAuthz *np_authz_new(void);
/* Cancel the questions still pending; their callers get an error reply
 * ("numaplaced is stopping"). Call while the bus is still open. */
void np_authz_free(NpAuthz *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpAuthz, np_authz_free)

/*
 * May the sender of `msg` (a call of a changing method) go on?
 * Returns 1: yes, run the method; 0: the question is with polkit, the
 * handler must return 1 now and is called again with the same message when
 * the answer is there; < 0: refused or failed, with `ret` set (return it).
 */
int np_authz_check(NpAuthz *a, sd_bus_message *msg, sd_bus_error *ret);

/* ---- pure part ---------------------------------------------------------- */

typedef enum {
        NP_AUTHZ_GRANTED,
        NP_AUTHZ_DENIED, /* polkit said no */
        NP_AUTHZ_CHALLENGE, /* polkit would grant after authentication, which needs an agent */
        NP_AUTHZ_UNAVAILABLE, /* polkit is not on the bus, or went away: root only */
        NP_AUTHZ_FAILED, /* polkit answered with an error */
} NpAuthzVerdict;

/* The verdict for a D-Bus error polkit's CheckAuthorization call ended
 * with: NP_AUTHZ_UNAVAILABLE for the errors that mean polkit is not there
 * (ServiceUnknown, NameHasNoOwner, Spawn.*, NoReply, TimedOut,
 * Disconnected), NP_AUTHZ_FAILED for any other. */
NpAuthzVerdict np_authz_verdict_from_error(const char *error_name);
/* The verdict for CheckAuthorization's (is_authorized, is_challenge). */
NpAuthzVerdict np_authz_verdict_from_result(bool is_authorized, bool is_challenge);
/* Words for the log and the AccessDenied message: "authorized by polkit",
 * "not authorized by polkit", ... */
const char *np_authz_verdict_to_string(NpAuthzVerdict v);
