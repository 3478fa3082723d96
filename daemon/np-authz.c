/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Authorization of changing bus methods through polkit: see np-authz.h. */
#include "np-authz.h"

#include <errno.h>
#include <string.h>

#include "np-cleanup.h"
#include "np-log.h"
#include "np-test-api.h"

#define POLKIT_SERVICE "org.freedesktop.PolicyKit1"
#define POLKIT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_IFACE "org.freedesktop.PolicyKit1.Authority"

/* One method call waiting for (or holding) polkit's verdict. */
typedef struct {
        NpAuthz *owner;
        sd_bus_message *request; /* the method call, referenced until it is answered */
        sd_bus_slot *slot; /* the CheckAuthorization call, while pending */
        uid_t uid;
        bool done;
        NpAuthzVerdict verdict;
        char *detail; /* polkit's error, for NP_AUTHZ_FAILED and NP_AUTHZ_UNAVAILABLE */
} Query;

struct NpAuthz {
        GHashTable *queries; /* sd_bus_message * (the request) -> Query *, owned */
};

/* ---- pure part ---------------------------------------------------------- */

NpAuthzVerdict np_authz_verdict_from_error(const char *name) {
        static const char *const absent[] = {
                "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
                "org.freedesktop.DBus.Error.NoReply",        "org.freedesktop.DBus.Error.TimedOut",
                "org.freedesktop.DBus.Error.Timeout",        "org.freedesktop.DBus.Error.Disconnected",
        };
        if (!name)
                return NP_AUTHZ_FAILED;
        for (size_t i = 0; i < G_N_ELEMENTS(absent); i++)
                if (strcmp(name, absent[i]) == 0)
                        return NP_AUTHZ_UNAVAILABLE;
        if (g_str_has_prefix(name, "org.freedesktop.DBus.Error.Spawn."))
                return NP_AUTHZ_UNAVAILABLE; /* activation failed */
        return NP_AUTHZ_FAILED;
}

NpAuthzVerdict np_authz_verdict_from_result(bool is_authorized, bool is_challenge) {
        if (is_authorized)
                return NP_AUTHZ_GRANTED;
        return is_challenge ? NP_AUTHZ_CHALLENGE : NP_AUTHZ_DENIED;
}

const char *np_authz_verdict_to_string(NpAuthzVerdict v) {
        switch (v) {
        case NP_AUTHZ_GRANTED:
                return "authorized by polkit";
        case NP_AUTHZ_DENIED:
                return "not authorized by polkit";
        case NP_AUTHZ_CHALLENGE:
                return "polkit requires authentication, which a D-Bus method call cannot offer";
        case NP_AUTHZ_UNAVAILABLE:
                return "polkit is not available, only root may";
        case NP_AUTHZ_FAILED:
                return "the polkit check failed";
        }
        return "unknown verdict";
}

/* ---- queries ------------------------------------------------------------ */

static void query_free(Query *q) {
        sd_bus_slot_unref(q->slot);
        sd_bus_message_unref(q->request);
        g_free(q->detail);
        g_free(q);
}

NpAuthz *np_authz_new(void) {
        NpAuthz *a = g_new0(NpAuthz, 1);
        a->queries = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) query_free);
        return a;
}

void np_authz_free(NpAuthz *a) {
        if (!a)
                return;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, a->queries);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                Query *q = v;
                /* answered but not yet re-dispatched calls get their error too:
                 * the bus closes before their second dispatch */
                int r = sd_bus_reply_method_errorf(q->request, SD_BUS_ERROR_NO_REPLY,
                                                   "numaplaced is stopping: %s() was not run",
                                                   sd_bus_message_get_member(q->request));
                if (r < 0)
                        log_debug("Cannot answer %s() while stopping: %s", sd_bus_message_get_member(q->request),
                                  strerror(-r));
        }
        g_hash_table_destroy(a->queries);
        g_free(a);
}

unsigned np_authz_pending(const NpAuthz *a) {
        return g_hash_table_size(a->queries);
}

static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Query *q = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        q->slot = sd_bus_slot_unref(q->slot);
        q->done = true;
        if (e) {
                q->verdict = np_authz_verdict_from_error(e->name);
                q->detail = g_strdup_printf("%s: %s", e->name, e->message ? e->message : "");
        } else {
                int authorized = 0, challenge = 0;
                int r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
                if (r == 0)
                        r = -EBADMSG;
                if (r > 0)
                        r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
                if (r < 0) {
                        q->verdict = NP_AUTHZ_FAILED;
                        q->detail = g_strdup_printf("unexpected reply from polkit: %s", strerror(-r));
                } else {
                        q->verdict = np_authz_verdict_from_result(authorized, challenge);
                }
        }

        /* The method call goes through the bus's dispatch again: its handler
         * runs once more and finds the verdict (np_authz_check). */
        int r = sd_bus_enqueue_for_read(sd_bus_message_get_bus(q->request), q->request);
        if (r < 0) {
                log_warning("Cannot resume %s() after polkit's answer: %s", sd_bus_message_get_member(q->request),
                            strerror(-r));
                (void) sd_bus_reply_method_errorf(q->request, SD_BUS_ERROR_FAILED,
                                                  "Cannot resume the call after authorization: %s", strerror(-r));
                g_hash_table_remove(q->owner->queries, q->request);
        }
        return 0;
}

/* The verdict polkit gave for `q`, consumed: 1 to run the method, or the
 * AccessDenied error. */
static int finish(NpAuthz *a, Query *q, sd_bus_error *ret) {
        const char *method = sd_bus_message_get_member(q->request);
        NpAuthzVerdict v = q->verdict;
        uid_t uid = q->uid;
        g_autofree char *detail = g_steal_pointer(&q->detail);
        int r = 1;

        if (v == NP_AUTHZ_GRANTED) {
                log_info("Allowed %s() from uid %u: %s (action %s)", method, (unsigned) uid,
                         np_authz_verdict_to_string(v), NP_AUTHZ_ACTION);
                /* the handler reads the arguments from the start */
                r = sd_bus_message_rewind(q->request, 1);
                if (r >= 0)
                        r = 1;
                else
                        sd_bus_error_set_errnof(ret, r, "Cannot reread the call: %s", strerror(-r));
        } else {
                log_notice("Refused %s() from uid %u: %s (action %s)%s%s", method, (unsigned) uid,
                           np_authz_verdict_to_string(v), NP_AUTHZ_ACTION, detail ? ": " : "", detail ? detail : "");
                r = sd_bus_error_setf(ret, SD_BUS_ERROR_ACCESS_DENIED, "%s() requires root or the polkit action %s: %s",
                                      method, NP_AUTHZ_ACTION, np_authz_verdict_to_string(v));
        }
        g_hash_table_remove(a->queries, q->request); /* one verdict, one call */
        return r;
}

static int ask_polkit(NpAuthz *a, sd_bus_message *msg, uid_t uid, sd_bus_error *ret) {
        const char *method = sd_bus_message_get_member(msg);
        const char *sender = sd_bus_message_get_sender(msg);
        sd_bus *bus = sd_bus_message_get_bus(msg);
        g_autoptr(sd_bus_message) call = NULL;

        if (!sender) {
                log_notice("Refused %s() from uid %u: the call has no sender bus name to ask polkit about", method,
                           (unsigned) uid);
                return sd_bus_error_setf(ret, SD_BUS_ERROR_ACCESS_DENIED, "%s() requires root or the polkit action %s",
                                         method, NP_AUTHZ_ACTION);
        }
        if (g_hash_table_size(a->queries) >= NP_AUTHZ_MAX_PENDING) {
                log_notice("Refused %s() from uid %u: %u authorization checks are already pending", method,
                           (unsigned) uid, NP_AUTHZ_MAX_PENDING);
                return sd_bus_error_setf(ret, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "Too many authorization checks pending, try again later");
        }

        int r = sd_bus_message_new_method_call(bus, &call, POLKIT_SERVICE, POLKIT_PATH, POLKIT_IFACE,
                                               "CheckAuthorization");
        /* subject ("system-bus-name", {"name": sender}), action, details {},
         * flags 0 (no interaction), cancellation id "" */
        if (r >= 0)
                r = sd_bus_message_append(call, "(sa{sv})sa{ss}us", "system-bus-name", 1, "name", "s", sender,
                                          NP_AUTHZ_ACTION, 0, 0, "");
        if (r < 0)
                return sd_bus_error_set_errnof(ret, r, "Cannot build the polkit query: %s", strerror(-r));

        Query *q = g_new0(Query, 1);
        q->owner = a;
        q->uid = uid;
        r = sd_bus_call_async(bus, &q->slot, call, on_polkit_reply, q, 0);
        if (r < 0) {
                g_free(q);
                log_notice("Refused %s() from uid %u: cannot ask polkit: %s", method, (unsigned) uid, strerror(-r));
                return sd_bus_error_setf(ret, SD_BUS_ERROR_ACCESS_DENIED,
                                         "%s() requires root or the polkit action %s: %s", method, NP_AUTHZ_ACTION,
                                         np_authz_verdict_to_string(NP_AUTHZ_UNAVAILABLE));
        }
        q->request = sd_bus_message_ref(msg);
        g_hash_table_insert(a->queries, msg, q);
        log_debug("Asked polkit whether uid %u (%s) may call %s()", (unsigned) uid, sender, method);
        return 0;
}

int np_authz_check(NpAuthz *a, sd_bus_message *msg, sd_bus_error *ret) {
        Query *q = g_hash_table_lookup(a->queries, msg);
        if (q) {
                if (q->done)
                        return finish(a, q, ret);
                /* dispatched again before polkit answered: cannot happen,
                 * the message is only re-queued by the answer */
                return 0;
        }

        g_autoptr(sd_bus_creds) creds = NULL;
        uid_t euid;
        int r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds);
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &euid);
        if (r < 0)
                return sd_bus_error_set_errnof(ret, r, "Cannot determine the caller's credentials: %s", strerror(-r));
        if (euid == 0)
                return 1;
        return ask_polkit(a, msg, euid, ret);
}
