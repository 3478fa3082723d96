/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Actions on one process (numad -r / -p / -x), for the bus. None runs a
 * scan: only the process concerned is read. Each returns 0, or a negative
 * errno with an NP_ERROR *error.
 */
#include <glib.h>

#include "np-manager.h"

/* Forget(): drop Include/Exclude/pin for pid, cancel a queued or running move
 * of it, and put it back where it was if it is held. NP_ERROR_NO_SUCH_PROCESS
 * when the pid is neither known nor managed. */
int np_manager_forget(NpManager *m, int pid, GError **error);
/* Include(): pid is a candidate whatever its size, until it exits or
 * Forget(). NP_ERROR_NO_SUCH_PROCESS / NP_ERROR_INVALID_ARGS (kernel
 * thread, the daemon itself). */
int np_manager_include(NpManager *m, int pid, GError **error);
/* Exclude(): pid is never placed, until it exits or Forget(). Same errors. */
int np_manager_exclude(NpManager *m, int pid, GError **error);
