/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * g_autoptr() for the libsystemd and libc handles the daemon uses, so no
 * function frees them by hand:
 *   g_autoptr(sd_bus_message) m = NULL;   sd_bus_message_unref
 *   g_autoptr(sd_bus_creds) c = NULL;     sd_bus_creds_unref
 *   g_autoptr(sd_bus_slot) s = NULL;      sd_bus_slot_unref
 *   g_autoptr(sd_event_source) s = NULL;  sd_event_source_unref
 *   g_autoptr(sd_event) e = NULL;         sd_event_unref
 *   g_autoptr(DIR) d = NULL;              closedir
 * (struct cgroup of libcgroup: NpCgroup in np-backend-cpuset.c.)
 */
#include <dirent.h>
#include <glib.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sd_bus_message, sd_bus_message_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sd_bus_creds, sd_bus_creds_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sd_bus_slot, sd_bus_slot_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sd_event_source, sd_event_source_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sd_event, sd_event_unref)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DIR, closedir)
