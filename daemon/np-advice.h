/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Advice that reserves room, on the manager: Advise() answers from the
 * policy (np_decide_advise()) and holds what it handed out (np-reserve.h)
 * for AdviceHoldSec=; after each scan the reservations whose process showed
 * up shrink or end; a timer on the manager's event loop drops each at its
 * expiry. The list records its own changes (NP_MANAGER_RESERVATIONS). An
 * answer that cannot be given room is still given, and logged.
 */
#include <stdint.h>

#include "np-manager.h"

/*
 * The nodes for a job of `cpus` CPUs and `bytes` of memory, asked by `uid`
 * (0 is privileged: its reservation is bounded only by NP_RESERVE_MAX; the
 * others' by the unprivileged bounds of np-reserve.h), holding them unless
 * AdviceHoldSec=0. A reservation never holds more than its nodes have.
 * NULL with *error set when the arguments are invalid or no node has memory.
 */
NpMask *np_advice_give(NpManager *m, double cpus, uint64_t bytes, uint32_t uid, GError **error);

/* After a scan: drop the reservations whose time is up, and match the
 * others to the significant processes (np_reservations_settle()). */
void np_advice_settle(NpManager *m);
