/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * A cgroup's memory per node from cgroup v2 `memory.numa_stat`: no page
 * table of the workload is walked. A pure parser and a thin reader.
 *
 * The file has one line per item, `NAME N<id>=<bytes> ...`, listing the
 * nodes with memory (ids may be sparse). Only three items are kept:
 *   anon   anonymous memory (private anonymous, brk, stacks); not shmem
 *   file   the page cache, shmem included (tmpfs and /dev/shm files, SysV
 *          shm, memfd, shared anonymous memory)
 *   shmem  the shmem part of file (so file - shmem is the rest of the page
 *          cache, and anon + file is the cgroup's memory on the node)
 * Every value is charged to the cgroup that first touched the page, which
 * for shared memory need not be the cgroup of every process mapping it.
 */
#include <glib.h>
#include <stdint.h>

#include "np-nodemask.h"

typedef struct {
        unsigned node;
        uint64_t anon;
        uint64_t file; /* shmem included */
        uint64_t shmem;
} NpNumaStatNode;

typedef struct {
        GArray *per_node; /* NpNumaStatNode sorted by node, one per node the file names
                           * (nodes with 0 bytes kept) */
} NpNumaStat;

/*
 * Parse a memory.numa_stat buffer (NUL-terminated). Other items are ignored,
 * but every line must have the form above: a name without '=', then
 * N<id>=<decimal> tokens, id <= NP_NODE_MAX_ID, each node at most once per
 * line, the value within 64 bits; anon, file and shmem at most once each. A
 * node missing from a line counts 0 for that item; an empty buffer gives no
 * nodes. 0 and *out overwritten, or -EINVAL with `error` saying which line
 * and why (G_FILE_ERROR_INVAL; out untouched). Free with
 * np_numa_stat_clear() (idempotent).
 */
int np_parse_numa_stat(const char *buf, NpNumaStat *out, GError **error);
void np_numa_stat_clear(NpNumaStat *s);

/* The entry of one node, or NULL when the file did not name it. */
const NpNumaStatNode *np_numa_stat_node(const NpNumaStat *s, unsigned node);

/*
 * Read and parse <root><cgroup2_mount><cgroup>/memory.numa_stat in one read
 * (cgroup2_mount e.g. "/sys/fs/cgroup", cgroup as in /proc/PID/cgroup's
 * "0::" line, starting with '/'). 0, or a negative errno with `error` set:
 * -EINVAL for a cgroup path that does not start with '/' or has a ".."
 * component, or malformed contents; -ENOENT when the cgroup is gone or has
 * no memory controller; another errno from reading.
 */
int np_read_numa_stat(const char *cgroup2_mount, const char *cgroup, NpNumaStat *out, GError **error);
