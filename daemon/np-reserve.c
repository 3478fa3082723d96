/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Reservations made by Advise() (pure): see np-reserve.h. */
#include "np-reserve.h"

#include <math.h>

#include "np-numa-maps.h"
#include "np-sample.h"

struct NpReservations {
        GPtrArray *items; /* NpReservation*, in the order made */
        GHashTable *spent; /* pid -> start time of the processes whose reservation ended with their memory
                            * there: they take no other while they live */
        uint64_t next_id;
        uint32_t *changes, change_bit; /* np_reservations_record_changes() */
};

/* The list changed: recorded where the owner asked. */
static void mark_changed(NpReservations *r) {
        if (r->changes)
                *r->changes |= r->change_bit;
}

void np_reservations_record_changes(NpReservations *r, uint32_t *changes, uint32_t bit) {
        r->changes = changes;
        r->change_bit = bit;
}

static void reservation_free(NpReservation *res) {
        if (!res)
                return;
        np_mask_free(res->nodes);
        g_free(res);
}

NpReservations *np_reservations_new(void) {
        NpReservations *r = g_new0(NpReservations, 1);
        r->items = g_ptr_array_new_with_free_func((GDestroyNotify) reservation_free);
        r->spent = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
        r->next_id = 1;
        return r;
}

void np_reservations_free(NpReservations *r) {
        if (!r)
                return;
        g_ptr_array_unref(r->items);
        g_hash_table_destroy(r->spent);
        g_free(r);
}

guint np_reservations_count(const NpReservations *r) {
        return r->items->len;
}

const NpReservation *np_reservations_get(const NpReservations *r, guint i) {
        return i < r->items->len ? r->items->pdata[i] : NULL;
}

uint64_t np_reservations_bytes(const NpReservations *r) {
        uint64_t sum = 0;
        for (guint i = 0; i < r->items->len; i++)
                sum += ((const NpReservation *) r->items->pdata[i])->bytes;
        return sum;
}

uint64_t np_reservations_next_expiry(const NpReservations *r) {
        uint64_t next = UINT64_MAX;
        for (guint i = 0; i < r->items->len; i++)
                next = MIN(next, ((const NpReservation *) r->items->pdata[i])->expires_usec);
        return next;
}

const char *np_reserve_outcome_to_string(NpReserveOutcome o) {
        switch (o) {
        case NP_RESERVE_HELD:
                return "";
        case NP_RESERVE_OFF:
                return "AdviceHoldSec=0";
        case NP_RESERVE_EMPTY:
                return "nothing to hold";
        case NP_RESERVE_FULL:
                return "too many reservations are outstanding";
        case NP_RESERVE_UNPRIV_MANY:
                return "unprivileged callers have as many reservations outstanding as they may";
        case NP_RESERVE_UNPRIV_OVER:
                return "it would take unprivileged callers' reservations past their share of the machine";
        }
        return "?";
}

/* Unprivileged callers' reservations now: how many, CPUs, bytes. */
static void unprivileged(const NpReservations *r, guint *n, double *cpus, uint64_t *bytes) {
        *n = 0;
        *cpus = 0;
        *bytes = 0;
        for (guint i = 0; i < r->items->len; i++) {
                const NpReservation *res = r->items->pdata[i];
                if (res->privileged)
                        continue;
                (*n)++;
                *cpus += res->cpus;
                *bytes += res->bytes;
        }
}

NpReserveOutcome np_reservations_add(NpReservations *r, const NpMask *nodes, double cpus, uint64_t bytes,
                                     const NpReserveRequest *q, uint64_t *id) {
        if (!q->hold_usec)
                return NP_RESERVE_OFF;
        if (!nodes || np_mask_empty(nodes) || ((!isfinite(cpus) || cpus <= 0) && !bytes))
                return NP_RESERVE_EMPTY;
        cpus = isfinite(cpus) && cpus > 0 ? cpus : 0.0;
        if (r->items->len >= NP_RESERVE_MAX)
                return NP_RESERVE_FULL;
        if (!q->privileged) {
                guint n;
                double c;
                uint64_t b;
                unprivileged(r, &n, &c, &b);
                if (n >= NP_RESERVE_UNPRIV_MAX)
                        return NP_RESERVE_UNPRIV_MANY;
                if (c + cpus > q->machine_cpus * NP_RESERVE_UNPRIV_SHARE ||
                    (double) b + (double) bytes > (double) q->machine_bytes * NP_RESERVE_UNPRIV_SHARE)
                        return NP_RESERVE_UNPRIV_OVER;
        }
        NpReservation *res = g_new0(NpReservation, 1);
        res->id = r->next_id++;
        res->nodes = np_mask_copy(nodes);
        res->cpus = res->cpus_asked = cpus;
        res->bytes = res->bytes_asked = bytes;
        res->made_usec = q->made_usec;
        res->expires_usec = q->now_usec > UINT64_MAX - q->hold_usec ? UINT64_MAX : q->now_usec + q->hold_usec;
        res->uid = q->uid;
        res->privileged = q->privileged;
        g_ptr_array_add(r->items, res);
        mark_changed(r);
        if (id)
                *id = res->id;
        return NP_RESERVE_HELD;
}

guint np_reservations_expire(NpReservations *r, uint64_t now_usec) {
        guint dropped = 0;
        for (guint i = r->items->len; i-- > 0;)
                if (((NpReservation *) r->items->pdata[i])->expires_usec <= now_usec) {
                        g_ptr_array_remove_index(r->items, i);
                        dropped++;
                }
        if (dropped)
                mark_changed(r);
        return dropped;
}

static uint64_t bytes_on(const NpReserveUser *u, const NpMask *nodes) {
        uint64_t sum = 0;
        for (guint i = 0; u->per_node && i < u->per_node->len; i++) {
                const NpNodeBytes *nb = &g_array_index(u->per_node, NpNodeBytes, i);
                if (np_mask_test(nodes, nb->node))
                        sum += nb->bytes;
        }
        return sum;
}

bool np_reservation_matches(const NpReservation *res, const NpReserveUser *u) {
        if (res->pid || u->start_usec + NP_RESERVE_START_SLACK_USEC < res->made_usec)
                return false;
        if (!u->cpu_nodes || np_mask_empty(u->cpu_nodes) || !np_mask_subset(u->cpu_nodes, res->nodes))
                return false;
        return !u->mem_nodes || np_mask_subset(u->mem_nodes, res->nodes);
}

static const NpReserveUser *find_user(const NpReserveUser *users, guint n, int pid, uint64_t starttime) {
        for (guint i = 0; i < n; i++)
                if (users[i].pid == pid && users[i].starttime == starttime)
                        return &users[i];
        return NULL;
}

static bool user_has_one(const NpReservations *r, const NpReserveUser *u) {
        const uint64_t *spent = g_hash_table_lookup(r->spent, GINT_TO_POINTER(u->pid));
        if (spent && *spent == u->starttime)
                return true;
        for (guint i = 0; i < r->items->len; i++) {
                const NpReservation *res = r->items->pdata[i];
                if (res->pid == u->pid && res->starttime == u->starttime)
                        return true;
        }
        return false;
}

/* The lowest-pid user that takes res up and has no reservation yet. */
static const NpReserveUser *claimant(const NpReservations *r, const NpReservation *res, const NpReserveUser *users,
                                     guint n) {
        const NpReserveUser *best = NULL;
        for (guint i = 0; i < n; i++)
                if ((!best || users[i].pid < best->pid) && np_reservation_matches(res, &users[i]) &&
                    !user_has_one(r, &users[i]))
                        best = &users[i];
        return best;
}

guint np_reservations_settle(NpReservations *r, const NpReserveUser *users, guint n_users, bool *changed) {
        guint dropped = 0;
        bool any = false;
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, r->spent);
        while (g_hash_table_iter_next(&it, &k, &v))
                if (!find_user(users, n_users, GPOINTER_TO_INT(k), *(uint64_t *) v))
                        g_hash_table_iter_remove(&it); /* gone: its pid may come back as another */
        for (guint i = 0; i < r->items->len;) {
                NpReservation *res = r->items->pdata[i];
                const NpReserveUser *u = res->pid ? find_user(users, n_users, res->pid, res->starttime)
                                                  : claimant(r, res, users, n_users);
                if (res->pid && !u) {
                        g_ptr_array_remove_index(r->items, i); /* its process is gone */
                        dropped++;
                        continue;
                }
                if (!u) {
                        i++;
                        continue;
                }
                uint64_t there = bytes_on(u, res->nodes);
                double cpus = MAX(0.0, res->cpus_asked - MAX(u->cpu, 0.0));
                uint64_t bytes = res->bytes_asked > there ? res->bytes_asked - there : 0;
                if (!bytes) {
                        uint64_t *st = g_new(uint64_t, 1);
                        *st = u->starttime;
                        g_hash_table_replace(r->spent, GINT_TO_POINTER(u->pid), st);
                        g_ptr_array_remove_index(r->items, i); /* its memory is there */
                        dropped++;
                        continue;
                }
                any = any || !res->pid || cpus != res->cpus || bytes != res->bytes;
                res->pid = u->pid;
                res->starttime = u->starttime;
                res->cpus = cpus;
                res->bytes = bytes;
                i++;
        }
        if (any || dropped)
                mark_changed(r);
        if (changed)
                *changed = any || dropped;
        return dropped;
}

void np_reservations_to_procs(const NpReservations *r, GArray *procs) {
        for (guint i = 0; i < r->items->len; i++) {
                const NpReservation *res = r->items->pdata[i];
                NpPolicyProcess p = {
                        .pid = -(int) MIN(res->id, (uint64_t) G_MAXINT),
                        .cpu = res->cpus,
                        .mem = res->bytes,
                        .current = res->nodes,
                        .since_move_usec = UINT64_MAX,
                        .locality_before = -1,
                        .hold = NP_HOLD_RESERVED,
                };
                g_array_append_val(procs, p);
        }
}
