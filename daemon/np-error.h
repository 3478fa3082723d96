/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The daemon's error domain (GError NP_ERROR) and how its codes map to
 * D-Bus error names and errno values. Pure: no I/O, no sd-bus. The bus layer
 * turns an NP_ERROR GError into an sd_bus_error with np_error_dbus_name();
 * every name is listed in org.numaplaced1(5).
 */
#include <glib.h>

#define NP_ERROR (np_error_quark())
GQuark np_error_quark(void);

typedef enum {
        NP_ERROR_FAILED, /* org.numaplaced1.Error.Failed */
        NP_ERROR_INVALID_ARGS, /* org.freedesktop.DBus.Error.InvalidArgs */
        NP_ERROR_NO_SUCH_PROCESS, /* org.numaplaced1.Error.NoSuchProcess */
        NP_ERROR_NO_SUCH_NODE, /* org.numaplaced1.Error.NoSuchNode */
        NP_ERROR_CONFIG_INVALID, /* org.numaplaced1.Error.ConfigInvalid */
        NP_ERROR_NOT_SUPPORTED, /* org.numaplaced1.Error.NotSupported */
        NP_ERROR_MIGRATION_FAILED, /* org.numaplaced1.Error.MigrationFailed */
        NP_ERROR_MOVE_IN_PROGRESS, /* org.numaplaced1.Error.MoveInProgress */
        NP_ERROR_CANCELLED, /* org.numaplaced1.Error.Cancelled */
        NP_ERROR_ACCESS_DENIED, /* org.freedesktop.DBus.Error.AccessDenied */
} NpErrorCode;

/* The D-Bus error name of a code (NP_ERROR_FAILED's for an unknown one).
 * Never NULL. */
const char *np_error_dbus_name(int code);
/* The positive errno that goes with a code (EIO for an unknown one). */
int np_error_errno(int code);
