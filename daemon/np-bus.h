/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * D-Bus glue: the connection, org.numaplaced1.Manager (its properties and
 * methods, mapped onto the manager, the placement path and the actions) and
 * the signals; the Node, Process and Group objects are np-bus-objects.c's.
 * The bus owns which objects are published: once per event loop iteration (an sd-event
 * post source) it compares what it published with the manager's processes
 * and nodes (InterfacesAdded/Removed), emits PropertiesChanged for what the
 * manager recorded as changed (m->changes and each process's mask), and
 * ProcessPlaced for each placement carried out. The interface is described
 * for humans in org.numaplaced1(5) and shipped as introspection XML in
 * systemd/org.numaplaced1.xml (a test compares it to the live vtables).
 */
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "np-bus-objects.h"
#include "np-manager.h"

#define NP_BUS_NAME "org.numaplaced1"
#define NP_BUS_PATH "/org/numaplaced1"
#define NP_BUS_MANAGER_IFACE "org.numaplaced1.Manager"

typedef struct NpBus NpBus;

/*
 * Connect to the system bus ($DBUS_SYSTEM_BUS_ADDRESS or the default;
 * no descriptor passing; a lost connection ends the event loop with
 * EXIT_FAILURE, for the daemon to stop and systemd to restart it),
 * attach it to `event`, register every object and the post source, and
 * request NP_BUS_NAME. Returns 0 and the bus in *out, or a negative errno
 * (logged with what to check).
 */
int np_bus_new(NpManager *m, sd_event *event, NpBus **out);
/* Publish what is pending, flush and close the connection, free. */
void np_bus_free(NpBus *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpBus, np_bus_free)

/* Publish what the manager recorded now (the post source does this after
 * every loop iteration). */
void np_bus_publish(NpBus *b);

/* Map an NP_ERROR GError to sd_bus_error. Returns the negative errno for
 * the method handler to return. */
int np_bus_error_from_gerror(sd_bus_error *ret, const GError *e);
