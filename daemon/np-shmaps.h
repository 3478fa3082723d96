/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * What /proc/PID/maps tells of a process's mappings and numa_maps does not:
 * the shared-memory mappings that can make processes one group because they
 * map the same shmem object, and whether a file mapping may be written (the
 * kernel's NUMA balancing does not scan one that may not). A pure parser and
 * a thin reader.
 *
 * A mapping is returned when it is shared ('s' in perms), lives on a device
 * with major 0 (the kernel's internal shmem mount, a tmpfs, hugetlbfs) and
 * its path is one of
 *   NP_SHMAP_SYSV    "/SYSV<key, 8 hex digits> (deleted)"   shmget(2)+shmat(2)
 *   NP_SHMAP_MEMFD   "/memfd:<name> (deleted)"              memfd_create(2)
 *   NP_SHMAP_DEVSHM  "/dev/shm/<file>" (+ " (deleted)")     shm_open(3), a file in /dev/shm
 *   NP_SHMAP_ANON    "/dev/zero (deleted)", "[anon_shmem:<name>]"
 *                    MAP_SHARED|MAP_ANONYMOUS (or a shared map of /dev/zero),
 *                    shared with the children forked after it
 * The object's key is (dev_major, dev_minor, inode): the path is not (every
 * IPC_PRIVATE segment is "/SYSV00000000", two memfds may share a name).
 *
 * Not returned: private mappings (libraries and executables are mapped
 * private, so shared libraries never make a group), shared mappings of
 * ordinary files on disk or of tmpfs files outside /dev/shm, the heap, the
 * stack, [vdso] and the like.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
        NP_SHMAP_SYSV,
        NP_SHMAP_MEMFD,
        NP_SHMAP_DEVSHM,
        NP_SHMAP_ANON,
} NpShmapKind;

typedef struct {
        uint64_t start, end; /* virtual addresses, end exclusive */
        unsigned dev_major, dev_minor;
        uint64_t inode;
        NpShmapKind kind;
} NpShmap;

/* A mapping of a file (inode not 0) that is not one of the shmem objects
 * above. */
typedef struct {
        uint64_t start, end; /* virtual addresses, end exclusive */
        bool readonly; /* readable, not writable ('r' and '-' in perms): the kernel's
                        * NUMA balancing does not scan it (task_numa_work() in
                        * kernel/sched/fair.c) */
} NpFileMap;

/* "sysv", "memfd", "devshm", "anon"; "?" for another value. */
const char *np_shmap_kind_name(NpShmapKind kind);

/*
 * Parse a /proc/PID/maps buffer (NUL-terminated): each line is
 * `start-end perms offset major:minor inode [path]`, the path possibly
 * holding spaces and parentheses. Replaces the contents of `out` (GArray of
 * NpShmap) with the mappings named above, and those of `files` (GArray of
 * NpFileMap; NULL when not wanted) with the file mappings, both in file
 * order. 0, or -EINVAL with `error` naming the line (G_FILE_ERROR_INVAL; out
 * and files emptied) when a line does not have that form or start > end.
 */
int np_parse_shmaps(const char *buf, GArray *out, GArray *files, GError **error);

/*
 * Read /proc/<pid>/maps below the sysroot and parse it. 0 and a new GArray
 * of NpShmap in *out and, when files is not NULL, of NpFileMap in *files
 * (caller unrefs), or a negative errno with `error` set:
 * -ESRCH when the process is gone or exits while it is read (its stat then
 * shows it exiting, which a maps read cut short by the exit cannot), -EINVAL
 * for pid <= 0 or malformed contents, another errno from reading (-EACCES
 * for another user's process without the right to read it).
 */
int np_read_shmaps(int pid, GArray **out, GArray **files, GError **error);
