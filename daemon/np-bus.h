#pragma once
/*
 * D-Bus glue: vtables for org.numaplaced1.Manager, .Node and .Process. It
 * only maps calls and properties onto np-manager. The interface is described
 * for humans in org.numaplaced1(5) and shipped as introspection XML in
 * systemd/org.numaplaced1.xml (a test compares it to the live vtables).
 */
#include <systemd/sd-bus.h>
#include "np-manager.h"

#define NP_BUS_NAME "org.numaplaced1"
#define NP_BUS_PATH "/org/numaplaced1"
#define NP_BUS_NODE_PREFIX "/org/numaplaced1/node"
#define NP_BUS_PROCESS_PREFIX "/org/numaplaced1/process"
#define NP_BUS_MANAGER_IFACE "org.numaplaced1.Manager"
#define NP_BUS_NODE_IFACE "org.numaplaced1.Node"
#define NP_BUS_PROCESS_IFACE "org.numaplaced1.Process"

/* Register all objects on m->bus. 0 or negative errno. */
int np_bus_register(NpManager *m);

/* Emit PropertiesChanged for what a scan changes, InterfacesAdded/Removed
 * for processes that appeared or went. Called once at the end of a scan. */
void np_bus_scan_done(NpManager *m, GPtrArray *added_pids, GPtrArray *removed);

/* Node objects that came or went (InterfacesAdded/Removed) and NodeIds. */
void np_bus_nodes_changed(NpManager *m, const NpMask *before, const NpMask *after);

/* Emit PropertiesChanged on the Manager for the named properties (NULL-terminated). */
void np_bus_manager_changed(NpManager *m, ...) G_GNUC_NULL_TERMINATED;

/* Emit ProcessPlaced(u pid, s comm, au from, au to, t moved_bytes, t usec). */
void np_bus_emit_placed(NpManager *m, const NpProcess *p, const NpMask *from, const NpMask *to,
                        uint64_t moved_bytes, uint64_t usec);

/* Map an NP_ERROR GError to sd_bus_error. Returns the negative errno for
 * the method handler to return. */
int np_bus_error_from_gerror(sd_bus_error *ret, const GError *e);
