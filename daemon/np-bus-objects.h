/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * The bus's objects below the Manager: org.numaplaced1.Node at
 * /org/numaplaced1/node/<id> (online nodes), .Process at
 * /org/numaplaced1/process/<pid> (significant processes) and .Group at
 * /org/numaplaced1/group/<id> (the manager's group table). Each object is
 * found from its path when called (fallback vtables and enumerators), so
 * none is registered per process. Which of them were announced, and their
 * signals, are np-bus.c's. Also the encodings np-bus.c shares with them.
 */
#include <systemd/sd-bus.h>

#include "np-manager.h"
#include "np-nodemask.h"

#define NP_BUS_NODE_PREFIX "/org/numaplaced1/node"
#define NP_BUS_PROCESS_PREFIX "/org/numaplaced1/process"
#define NP_BUS_GROUP_PREFIX "/org/numaplaced1/group"
#define NP_BUS_NODE_IFACE "org.numaplaced1.Node"
#define NP_BUS_PROCESS_IFACE "org.numaplaced1.Process"
#define NP_BUS_GROUP_IFACE "org.numaplaced1.Group"

/* Register the Node, Process and Group objects of m on bus (for the life of
 * the bus). 0 or a negative errno. */
int np_bus_objects_add(sd_bus *bus, NpManager *m);

/* A node or CPU set as au (ascending ids). */
int np_bus_append_mask(sd_bus_message *reply, const NpMask *mask);
/* NpNodeBytes (NULL: none) as a(ut). */
int np_bus_append_node_bytes(sd_bus_message *reply, const GArray *per_node);
/* A GArray of guint32 as au. */
int np_bus_append_u32s(sd_bus_message *reply, const GArray *a);
/* s when it is valid UTF-8 (D-Bus strings must be), else fallback. */
const char *np_bus_utf8_or(const char *s, const char *fallback);
