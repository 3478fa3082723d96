/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The pure part of np-authz: polkit's answers and errors to verdicts. */
#include <glib.h>
#include <string.h>

#include "np-authz.h"
#include "np-test-api.h"

static void test_result(void) {
        g_assert_cmpint(np_authz_verdict_from_result(true, false), ==, NP_AUTHZ_GRANTED);
        g_assert_cmpint(np_authz_verdict_from_result(true, true), ==, NP_AUTHZ_GRANTED);
        g_assert_cmpint(np_authz_verdict_from_result(false, false), ==, NP_AUTHZ_DENIED);
        g_assert_cmpint(np_authz_verdict_from_result(false, true), ==, NP_AUTHZ_CHALLENGE);
}

static void test_errors(void) {
        static const char *const absent[] = {
                "org.freedesktop.DBus.Error.ServiceUnknown",    "org.freedesktop.DBus.Error.NameHasNoOwner",
                "org.freedesktop.DBus.Error.NoReply",           "org.freedesktop.DBus.Error.TimedOut",
                "org.freedesktop.DBus.Error.Disconnected",      "org.freedesktop.DBus.Error.Spawn.ExecFailed",
                "org.freedesktop.DBus.Error.Spawn.ChildExited",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(absent); i++)
                g_assert_cmpint(np_authz_verdict_from_error(absent[i]), ==, NP_AUTHZ_UNAVAILABLE);
        g_assert_cmpint(np_authz_verdict_from_error("org.freedesktop.PolicyKit1.Error.Failed"), ==, NP_AUTHZ_FAILED);
        g_assert_cmpint(np_authz_verdict_from_error("org.freedesktop.DBus.Error.AccessDenied"), ==, NP_AUTHZ_FAILED);
        /* a prefix of a known name is not that name */
        g_assert_cmpint(np_authz_verdict_from_error("org.freedesktop.DBus.Error.Spawn"), ==, NP_AUTHZ_FAILED);
        g_assert_cmpint(np_authz_verdict_from_error("org.freedesktop.DBus.Error.ServiceUnknownX"), ==, NP_AUTHZ_FAILED);
        g_assert_cmpint(np_authz_verdict_from_error(NULL), ==, NP_AUTHZ_FAILED);
}

static void test_words(void) {
        g_assert_cmpstr(np_authz_verdict_to_string(NP_AUTHZ_GRANTED), ==, "authorized by polkit");
        g_assert_nonnull(strstr(np_authz_verdict_to_string(NP_AUTHZ_UNAVAILABLE), "polkit is not available"));
        g_assert_nonnull(strstr(np_authz_verdict_to_string(NP_AUTHZ_CHALLENGE), "authentication"));
}

static void test_free_empty(void) {
        NpAuthz *a = np_authz_new();
        g_assert_cmpuint(np_authz_pending(a), ==, 0);
        np_authz_free(a);
        np_authz_free(NULL);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/authz/result", test_result);
        g_test_add_func("/authz/errors", test_errors);
        g_test_add_func("/authz/words", test_words);
        g_test_add_func("/authz/free-empty", test_free_empty);
        return g_test_run();
}
