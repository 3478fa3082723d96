/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The error domain and its D-Bus names: see np-error.h. */
#include "np-error.h"

#include <errno.h>
#include <stdlib.h>

G_DEFINE_QUARK(np - error - quark, np_error)

#define NP_BUS_ERROR_PREFIX "org.numaplaced1.Error."

static const struct {
        NpErrorCode code;
        const char *name;
        int err;
} table[] = {
        { NP_ERROR_FAILED, NP_BUS_ERROR_PREFIX "Failed", EIO },
        { NP_ERROR_INVALID_ARGS, "org.freedesktop.DBus.Error.InvalidArgs", EINVAL },
        { NP_ERROR_NO_SUCH_PROCESS, NP_BUS_ERROR_PREFIX "NoSuchProcess", ESRCH },
        { NP_ERROR_NO_SUCH_NODE, NP_BUS_ERROR_PREFIX "NoSuchNode", ENOENT },
        { NP_ERROR_CONFIG_INVALID, NP_BUS_ERROR_PREFIX "ConfigInvalid", EINVAL },
        { NP_ERROR_NOT_SUPPORTED, NP_BUS_ERROR_PREFIX "NotSupported", EOPNOTSUPP },
        { NP_ERROR_MIGRATION_FAILED, NP_BUS_ERROR_PREFIX "MigrationFailed", EIO },
        { NP_ERROR_MOVE_IN_PROGRESS, NP_BUS_ERROR_PREFIX "MoveInProgress", EBUSY },
        { NP_ERROR_CANCELLED, NP_BUS_ERROR_PREFIX "Cancelled", ECANCELED },
        { NP_ERROR_ACCESS_DENIED, "org.freedesktop.DBus.Error.AccessDenied", EACCES },
};

const char *np_error_dbus_name(int code) {
        for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
                if ((int) table[i].code == code)
                        return table[i].name;
        return table[0].name;
}

int np_error_errno(int code) {
        for (size_t i = 0; i < G_N_ELEMENTS(table); i++)
                if ((int) table[i].code == code)
                        return table[i].err;
        return EIO;
}
