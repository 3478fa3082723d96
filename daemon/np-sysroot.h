/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Every /sys and /proc path the daemon reads goes through here, so tests can
 * point the real daemon at a fixture tree (--root DIR or $NUMAPLACED_ROOT).
 * The root applies to reads of kernel state only; syscalls and cgroupfs
 * writes always act on the real machine.
 */
#include <glib.h>
#include <stdbool.h>

/* Set the root prefix; NULL, "" or "/" mean the real root. */
void np_sysroot_set(const char *root);
/* The prefix in force ("" for the real root). Never NULL. */
const char *np_sysroot_get(void);

/* printf-style path under the root, e.g. np_path("/proc/%d/stat", pid).
 * Returns a newly allocated string, caller g_free()s. */
char *np_path(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/*
 * Read a whole file below the root (path is the absolute kernel path, e.g.
 * "/proc/stat"). Returns 0 and a NUL-terminated buffer in *contents (caller
 * g_free()s; *len gets the length when len is not NULL), or a negative errno
 * (-ENOENT/-ESRCH for a vanished process are ordinary outcomes).
 */
int np_read_file(const char *path, char **contents, size_t *len);
int np_read_filef(char **contents, size_t *len, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/*
 * The same for the machine-wide files read every scan (/proc/stat, the nodes'
 * meminfo, node/online, numa_balancing): a file on procfs or sysfs (below
 * any root, so also a root whose proc and sys lead to the real ones) is
 * opened once and kept, and each read is a pread() from offset 0, which
 * makes the kernel generate it afresh; that saves an open() and a close()
 * per file per scan. Each is one record the kernel formats whole, so a
 * short read is all of it (no read for end of file), and the buffer is
 * sized from the last read: one pread() per file per scan as a rule. At
 * most NP_KEPT_FILES_MAX are kept (beyond that, and for a regular file of
 * a fixture tree, which tests replace between scans, it is an ordinary
 * open/read/close). A kept file that fails to read (a node went offline)
 * is closed and opened once more. Never for /proc/<pid> files.
 */
#define NP_KEPT_FILES_MAX 64
int np_read_file_kept(const char *path, char **contents, size_t *len);
int np_read_u64_kept(const char *path, guint64 *out);
/* Close every kept file (np_sysroot_set() does, since the root changes). */
void np_kept_files_close(void);
