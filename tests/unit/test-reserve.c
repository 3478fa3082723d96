/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reservations (np-reserve.c): the list, expiry, the bounds on unprivileged
 * callers, the rule that matches a process to a reservation, and what a
 * taken-up reservation still holds. Times are plain numbers.
 */
#include <glib.h>

#include "np-reserve.h"
#include "np-numa-maps.h"
#include "np-sample.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)
#define SEC G_USEC_PER_SEC

static NpMask *nodes(const char *list) {
        NpMask *m = NULL;
        g_assert_cmpint(np_mask_parse(list, &m), ==, 0);
        return m;
}

static NpReserveRequest root_at(uint64_t now) {
        return (NpReserveRequest){ .made_usec = now, .now_usec = now, .hold_usec = 60 * SEC, .privileged = true };
}

static void test_add_and_expire(void) {
        g_autoptr(NpReservations) r = np_reservations_new();
        g_autoptr(NpMask) n1 = nodes("1");
        g_autoptr(NpMask) n23 = nodes("2-3");
        NpReserveRequest q = root_at(10 * SEC);
        uint64_t id = 0;
        g_assert_cmpuint(np_reservations_next_expiry(r), ==, UINT64_MAX);
        g_assert_cmpint(np_reservations_add(r, n1, 2.0, 300 * MiB, &q, &id), ==, NP_RESERVE_HELD);
        g_assert_cmpuint(id, ==, 1);
        q = root_at(20 * SEC);
        g_assert_cmpint(np_reservations_add(r, n23, 4.0, 1 * GiB, &q, &id), ==, NP_RESERVE_HELD);
        g_assert_cmpuint(id, ==, 2);
        g_assert_cmpuint(np_reservations_count(r), ==, 2);
        g_assert_cmpuint(np_reservations_bytes(r), ==, 300 * MiB + 1 * GiB);
        g_assert_cmpuint(np_reservations_next_expiry(r), ==, 70 * SEC);
        const NpReservation *a = np_reservations_get(r, 0);
        g_assert_true(np_mask_equal(a->nodes, n1));
        g_assert_cmpfloat(a->cpus, ==, 2.0);
        g_assert_null(np_reservations_get(r, 2));

        g_assert_cmpuint(np_reservations_expire(r, 70 * SEC - 1), ==, 0);
        g_assert_cmpuint(np_reservations_expire(r, 70 * SEC), ==, 1);
        g_assert_cmpuint(np_reservations_get(r, 0)->id, ==, 2);
        g_assert_cmpuint(np_reservations_next_expiry(r), ==, 80 * SEC);
        g_assert_cmpuint(np_reservations_expire(r, UINT64_MAX), ==, 1);
        g_assert_cmpuint(np_reservations_count(r), ==, 0);
}

/* The list records its own changes where its owner asks: an answer held,
 * reservations expired; not an answer refused, nor an expiry that drops
 * nothing. */
static void test_records_changes(void) {
        g_autoptr(NpReservations) r = np_reservations_new();
        g_autoptr(NpMask) n1 = nodes("1");
        uint32_t changes = 0;
        np_reservations_record_changes(r, &changes, 1u << 4);
        NpReserveRequest q = root_at(10 * SEC);
        q.hold_usec = 0;
        g_assert_cmpint(np_reservations_add(r, n1, 2.0, 300 * MiB, &q, NULL), ==, NP_RESERVE_OFF);
        g_assert_cmpuint(changes, ==, 0);
        q = root_at(10 * SEC);
        g_assert_cmpint(np_reservations_add(r, n1, 2.0, 300 * MiB, &q, NULL), ==, NP_RESERVE_HELD);
        g_assert_cmpuint(changes, ==, 1u << 4);
        changes = 0;
        g_assert_cmpuint(np_reservations_expire(r, 10 * SEC), ==, 0);
        g_assert_cmpuint(np_reservations_settle(r, NULL, 0, NULL), ==, 0);
        g_assert_cmpuint(changes, ==, 0);
        g_assert_cmpuint(np_reservations_expire(r, 70 * SEC), ==, 1);
        g_assert_cmpuint(changes, ==, 1u << 4);
}

static void test_not_held(void) {
        g_autoptr(NpReservations) r = np_reservations_new();
        g_autoptr(NpMask) n1 = nodes("1");
        g_autoptr(NpMask) none = np_mask_new();
        NpReserveRequest q = root_at(0);
        q.hold_usec = 0;
        g_assert_cmpint(np_reservations_add(r, n1, 2.0, 300 * MiB, &q, NULL), ==, NP_RESERVE_OFF);
        q = root_at(0);
        g_assert_cmpint(np_reservations_add(r, n1, 0, 0, &q, NULL), ==, NP_RESERVE_EMPTY);
        g_assert_cmpint(np_reservations_add(r, none, 1, 0, &q, NULL), ==, NP_RESERVE_EMPTY);
        for (guint i = 0; i < NP_RESERVE_MAX; i++)
                g_assert_cmpint(np_reservations_add(r, n1, 0.5, 0, &q, NULL), ==, NP_RESERVE_HELD);
        g_assert_cmpint(np_reservations_add(r, n1, 0.5, 0, &q, NULL), ==, NP_RESERVE_FULL);
        g_assert_cmpuint(np_reservations_count(r), ==, NP_RESERVE_MAX);
        g_assert_cmpstr(np_reserve_outcome_to_string(NP_RESERVE_FULL), ==, "too many reservations are outstanding");
}

/* Unprivileged callers together: NP_RESERVE_UNPRIV_MAX reservations and a
 * quarter of the machine; root's are not counted against them. */
static void test_unprivileged_bounds(void) {
        g_autoptr(NpReservations) r = np_reservations_new();
        g_autoptr(NpMask) n0 = nodes("0");
        NpReserveRequest user = { .now_usec = 0,
                                  .hold_usec = 60 * SEC,
                                  .uid = 1000,
                                  .machine_cpus = 64,
                                  .machine_bytes = 256 * GiB };
        NpReserveRequest root = root_at(0);
        /* a quarter: 16 CPUs, 64 GiB */
        g_assert_cmpint(np_reservations_add(r, n0, 17, 1 * GiB, &user, NULL), ==, NP_RESERVE_UNPRIV_OVER);
        g_assert_cmpint(np_reservations_add(r, n0, 1, 65 * GiB, &user, NULL), ==, NP_RESERVE_UNPRIV_OVER);
        g_assert_cmpint(np_reservations_add(r, n0, 15, 60 * GiB, &user, NULL), ==, NP_RESERVE_HELD);
        g_assert_cmpint(np_reservations_add(r, n0, 2, 1 * GiB, &user, NULL), ==, NP_RESERVE_UNPRIV_OVER);
        g_assert_cmpint(np_reservations_add(r, n0, 64, 256 * GiB, &root, NULL), ==, NP_RESERVE_HELD);
        for (guint i = 1; i < NP_RESERVE_UNPRIV_MAX; i++) {
                user.uid = 1000 + i; /* any unprivileged caller: they share the bound */
                g_assert_cmpint(np_reservations_add(r, n0, 0.1, 1 * MiB, &user, NULL), ==, NP_RESERVE_HELD);
        }
        g_assert_cmpint(np_reservations_add(r, n0, 0.1, 1 * MiB, &user, NULL), ==, NP_RESERVE_UNPRIV_MANY);
        g_assert_cmpint(np_reservations_add(r, n0, 1, 1 * GiB, &root, NULL), ==, NP_RESERVE_HELD);
        g_assert_cmpuint(np_reservations_count(r), ==, NP_RESERVE_UNPRIV_MAX + 2);
        const NpReservation *first = np_reservations_get(r, 0);
        g_assert_false(first->privileged);
        g_assert_cmpuint(first->uid, ==, 1000);
        /* expired, they make room for new ones */
        g_assert_cmpuint(np_reservations_expire(r, 60 * SEC), ==, NP_RESERVE_UNPRIV_MAX + 2);
        g_assert_cmpint(np_reservations_add(r, n0, 0.1, 1 * MiB, &user, NULL), ==, NP_RESERVE_HELD);
}

/* The match rule: started no earlier than the answer (a clock tick of
 * slack), CPUs on the answered nodes, memory nodes within them or not
 * narrowed. */
static void test_match_rule(void) {
        g_autoptr(NpReservations) r = np_reservations_new();
        g_autoptr(NpMask) n12 = nodes("1-2");
        g_autoptr(NpMask) n1 = nodes("1");
        g_autoptr(NpMask) n13 = nodes("1,3");
        NpReserveRequest q = root_at(100 * SEC);
        g_assert_cmpint(np_reservations_add(r, n12, 2.0, 300 * MiB, &q, NULL), ==, NP_RESERVE_HELD);
        const NpReservation *res = np_reservations_get(r, 0);
        NpReserveUser u = { .pid = 10, .start_usec = 100 * SEC, .cpu_nodes = n12, .mem_nodes = n12 };
        g_assert_true(np_reservation_matches(res, &u));
        u.start_usec = 100 * SEC - NP_RESERVE_START_SLACK_USEC;
        g_assert_true(np_reservation_matches(res, &u));
        u.start_usec = 100 * SEC - NP_RESERVE_START_SLACK_USEC - 1; /* running before the answer */
        g_assert_false(np_reservation_matches(res, &u));
        u.start_usec = 200 * SEC;
        u.cpu_nodes = n1; /* within */
        g_assert_true(np_reservation_matches(res, &u));
        u.cpu_nodes = n13; /* a CPU elsewhere */
        g_assert_false(np_reservation_matches(res, &u));
        u.cpu_nodes = NULL; /* unknown */
        g_assert_false(np_reservation_matches(res, &u));
        u.cpu_nodes = n12;
        u.mem_nodes = n13; /* memory elsewhere */
        g_assert_false(np_reservation_matches(res, &u));
        u.mem_nodes = NULL; /* memory not narrowed (taskset alone) */
        g_assert_true(np_reservation_matches(res, &u));
}

static GArray *pages(unsigned node, uint64_t bytes) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        NpNodeBytes nb = { node, bytes };
        g_array_append_val(a, nb);
        return a;
}

/* A guest that shows up takes its reservation: it holds what the guest
 * does not use yet, and ends when the guest's memory is there, or when the
 * guest exits. One guest takes one reservation; a pid reused is another
 * process. */
static void test_settle(void) {
        g_autoptr(NpReservations) r = np_reservations_new();
        g_autoptr(NpMask) n1 = nodes("1");
        g_autoptr(NpMask) n2 = nodes("2");
        NpReserveRequest q = root_at(100 * SEC);
        g_assert_cmpint(np_reservations_add(r, n1, 2.0, 300 * MiB, &q, NULL), ==, NP_RESERVE_HELD);
        g_assert_cmpint(np_reservations_add(r, n1, 2.0, 300 * MiB, &q, NULL), ==, NP_RESERVE_HELD);
        g_assert_cmpint(np_reservations_add(r, n2, 1.0, 100 * MiB, &q, NULL), ==, NP_RESERVE_HELD);

        g_autoptr(GArray) some = pages(1, 100 * MiB);
        NpReserveUser u[2] = {
                { .pid = 50,
                  .starttime = 9000,
                  .start_usec = 101 * SEC,
                  .cpu_nodes = n1,
                  .per_node = some,
                  .cpu = 0.5 },
                /* an old process on node 2: takes nothing */
                { .pid = 40, .starttime = 10, .start_usec = 1 * SEC, .cpu_nodes = n2, .mem_nodes = n2, .cpu = 1 },
        };
        bool changed = false;
        g_assert_cmpuint(np_reservations_settle(r, u, 2, &changed), ==, 0);
        g_assert_true(changed);
        const NpReservation *a = np_reservations_get(r, 0), *b = np_reservations_get(r, 1);
        g_assert_cmpint(a->pid, ==, 50);
        g_assert_cmpuint(a->bytes, ==, 200 * MiB);
        g_assert_cmpfloat(a->cpus, ==, 1.5);
        g_assert_cmpint(b->pid, ==, 0); /* one reservation a process */
        g_assert_cmpuint(b->bytes, ==, 300 * MiB);
        g_assert_cmpint(np_reservations_get(r, 2)->pid, ==, 0);
        /* nothing new: nothing changed */
        g_assert_cmpuint(np_reservations_settle(r, u, 2, &changed), ==, 0);
        g_assert_false(changed);

        /* its memory is there: the reservation ends */
        g_array_index(some, NpNodeBytes, 0).bytes = 320 * MiB;
        g_assert_cmpuint(np_reservations_settle(r, u, 1, &changed), ==, 1);
        g_assert_true(changed);
        g_assert_cmpuint(np_reservations_count(r), ==, 2);
        /* the next reservation on node 1 is free for the next guest */
        g_assert_cmpint(np_reservations_get(r, 0)->pid, ==, 0);

        /* a second guest takes it, then exits (its pid comes back as
         * another process): the reservation ends with it */
        g_autoptr(GArray) little = pages(1, 10 * MiB);
        NpReserveUser g = { .pid = 60,
                            .starttime = 9100,
                            .start_usec = 102 * SEC,
                            .cpu_nodes = n1,
                            .per_node = little };
        g_assert_cmpuint(np_reservations_settle(r, &g, 1, &changed), ==, 0);
        g_assert_cmpint(np_reservations_get(r, 0)->pid, ==, 60);
        g.starttime = 9999;
        g.start_usec = 50 * SEC; /* started before the answers: takes nothing */
        g_assert_cmpuint(np_reservations_settle(r, &g, 1, &changed), ==, 1);
        g_assert_cmpuint(np_reservations_count(r), ==, 1);
        g_assert_cmpuint(np_reservations_settle(r, NULL, 0, &changed), ==, 0);
        g_assert_cmpuint(np_reservations_count(r), ==, 1);
}

static void test_to_procs(void) {
        g_autoptr(NpReservations) r = np_reservations_new();
        g_autoptr(NpMask) n1 = nodes("1");
        NpReserveRequest q = root_at(0);
        g_assert_cmpint(np_reservations_add(r, n1, 2.0, 300 * MiB, &q, NULL), ==, NP_RESERVE_HELD);
        g_autoptr(GArray) procs = g_array_new(FALSE, FALSE, sizeof(NpPolicyProcess));
        np_reservations_to_procs(r, procs);
        g_assert_cmpuint(procs->len, ==, 1);
        const NpPolicyProcess *p = &g_array_index(procs, NpPolicyProcess, 0);
        g_assert_cmpint(p->pid, ==, -1);
        g_assert_cmpint(p->hold, ==, NP_HOLD_RESERVED);
        g_assert_true(np_mask_equal(p->current, n1));
        g_assert_cmpfloat(p->cpu, ==, 2.0);
        g_assert_cmpuint(p->mem, ==, 300 * MiB);
        g_assert_null(p->per_node);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/reserve/add-and-expire", test_add_and_expire);
        g_test_add_func("/reserve/not-held", test_not_held);
        g_test_add_func("/reserve/records-changes", test_records_changes);
        g_test_add_func("/reserve/unprivileged-bounds", test_unprivileged_bounds);
        g_test_add_func("/reserve/match-rule", test_match_rule);
        g_test_add_func("/reserve/settle", test_settle);
        g_test_add_func("/reserve/to-procs", test_to_procs);
        return g_test_run();
}
