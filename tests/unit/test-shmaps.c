/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for np-shmaps: /proc/PID/maps lines as a 6.18 kernel prints
 * them for each kind of shared memory (a SysV segment, a memfd, a /dev/shm
 * file, shared anonymous memory inherited over fork), paths with spaces and
 * parentheses, libraries and ordinary files that must not be returned,
 * malformed lines, and the reader on this process, a forked child, a zombie
 * and a reaped child. */
#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "np-shmaps.h"
#include "np-sysroot.h"

/* The maps of a process that made one of each kind, then forked (lines as
 * read, file names changed; trailing blanks of anonymous lines kept). */
static const char probe_maps[] =
        "55c991923000-55c991924000 r--p 00000000 fe:00 10953293                   /usr/local/bin/probe\n"
        "55c991924000-55c991925000 r-xp 00001000 fe:00 10953293                   /usr/local/bin/probe\n"
        "55c991927000-55c991928000 rw-p 00003000 fe:00 10953293                   /usr/local/bin/probe\n"
        "55c9baf96000-55c9bafb7000 rw-p 00000000 00:00 0                          [heap]\n"
        "7fbd8bac3000-7fbd8bbc3000 r--s 00000000 fe:00 10953338                   /srv/data/disk file\n"
        "7fbd8bbc3000-7fbd8bcc3000 rw-s 00000000 00:01 131                        /dev/zero (deleted)\n"
        "7fbd8bcc3000-7fbd8bdc3000 r--p 00000000 00:1a 15                         /dev/shm/np probe (x)\n"
        "7fbd8bdc3000-7fbd8bec3000 rw-s 00000000 00:1a 15                         /dev/shm/np probe (x)\n"
        "7fbd8bec3000-7fbd8bfc3000 rw-s 00000000 00:01 130                        /memfd:pg shared (buf) (deleted)\n"
        "7fbd8bfc3000-7fbd8c0c3000 rw-s 00000000 00:01 2                          /SYSV00000000 (deleted)\n"
        "7fbd8c0c3000-7fbd8c0c6000 rw-p 00000000 00:00 0 \n"
        "7fbd8c0c6000-7fbd8c0ec000 r--p 00000000 fe:00 332835                     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7fbd8c0ec000-7fbd8c242000 r-xp 00026000 fe:00 332835                     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7fbd8c242000-7fbd8c295000 r--p 0017c000 fe:00 332835                     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7fbd8c295000-7fbd8c299000 r--p 001cf000 fe:00 332835                     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7fbd8c299000-7fbd8c29b000 rw-p 001d3000 fe:00 332835                     /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7fbd8c29b000-7fbd8c2a8000 rw-p 00000000 00:00 0 \n"
        "7fbd8c2ae000-7fbd8c2af000 r--s 00000000 00:1a 16                         /dev/shm/np-unlinked (deleted)\n"
        "7fbd8c2af000-7fbd8c2b0000 r--s 00000000 00:01 134                        /memfd:gone (deleted)\n"
        "7fbd8c2b0000-7fbd8c2b2000 rw-s 00000000 00:01 133                        /dev/zero (deleted)\n"
        "7fbd8c2b2000-7fbd8c2b4000 r--s 00000000 00:01 3                          /SYSV4e505301 (deleted)\n"
        "7fbd8c2b4000-7fbd8c2b6000 rw-p 00000000 00:00 0 \n"
        "7fbd8c2b6000-7fbd8c2ba000 r--p 00000000 00:00 0                          [vvar]\n"
        "7fbd8c2ba000-7fbd8c2bc000 r--p 00000000 00:00 0                          [vvar_vclock]\n"
        "7fbd8c2bc000-7fbd8c2be000 r-xp 00000000 00:00 0                          [vdso]\n"
        "7fbd8c2be000-7fbd8c2bf000 r--p 00000000 fe:00 332383                     "
        "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
        "7fbd8c2f1000-7fbd8c2f3000 rw-p 00033000 fe:00 332383                     "
        "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
        "7fffeaccc000-7fffeaced000 rw-p 00000000 00:00 0                          [stack]\n"
        "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static void assert_shmap(const GArray *a, guint i, uint64_t start, uint64_t end, unsigned major, unsigned minor,
                         uint64_t inode, NpShmapKind kind) {
        g_assert_cmpuint(i, <, a->len);
        const NpShmap *m = &g_array_index(a, NpShmap, i);
        g_assert_cmphex(m->start, ==, start);
        g_assert_cmphex(m->end, ==, end);
        g_assert_cmpuint(m->dev_major, ==, major);
        g_assert_cmpuint(m->dev_minor, ==, minor);
        g_assert_cmpuint(m->inode, ==, inode);
        g_assert_cmpstr(np_shmap_kind_name(m->kind), ==, np_shmap_kind_name(kind));
}

static void test_probe(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(NpShmap));
        g_assert_cmpint(np_parse_shmaps(probe_maps, a, NULL, &error), ==, 0);
        g_assert_no_error(error);
        /* not the executable, heap, the shared map of a disk file, the
         * private map of the /dev/shm file, libc, ld.so, vdso, stack */
        g_assert_cmpuint(a->len, ==, 8);
        assert_shmap(a, 0, 0x7fbd8bbc3000, 0x7fbd8bcc3000, 0, 1, 131, NP_SHMAP_ANON);
        assert_shmap(a, 1, 0x7fbd8bdc3000, 0x7fbd8bec3000, 0, 0x1a, 15, NP_SHMAP_DEVSHM);
        assert_shmap(a, 2, 0x7fbd8bec3000, 0x7fbd8bfc3000, 0, 1, 130, NP_SHMAP_MEMFD);
        assert_shmap(a, 3, 0x7fbd8bfc3000, 0x7fbd8c0c3000, 0, 1, 2, NP_SHMAP_SYSV);
        assert_shmap(a, 4, 0x7fbd8c2ae000, 0x7fbd8c2af000, 0, 0x1a, 16, NP_SHMAP_DEVSHM);
        assert_shmap(a, 5, 0x7fbd8c2af000, 0x7fbd8c2b0000, 0, 1, 134, NP_SHMAP_MEMFD);
        assert_shmap(a, 6, 0x7fbd8c2b0000, 0x7fbd8c2b2000, 0, 1, 133, NP_SHMAP_ANON);
        assert_shmap(a, 7, 0x7fbd8c2b2000, 0x7fbd8c2b4000, 0, 1, 3, NP_SHMAP_SYSV);

        /* the contents are replaced; an empty file (a kernel thread) has none */
        g_assert_cmpint(np_parse_shmaps("", a, NULL, &error), ==, 0);
        g_assert_cmpuint(a->len, ==, 0);
}

static void assert_file(const GArray *f, guint i, uint64_t start, uint64_t end, bool readonly) {
        g_assert_cmpuint(i, <, f->len);
        const NpFileMap *m = &g_array_index(f, NpFileMap, i);
        g_assert_cmphex(m->start, ==, start);
        g_assert_cmphex(m->end, ==, end);
        g_assert_cmpint(m->readonly, ==, readonly);
}

/* The file mappings besides: every mapping with an inode that is not a
 * shmem object, readonly when readable and not writable (the kernel's
 * balancing does not scan those); the shmem objects the same as without. */
static void test_files(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(NpShmap));
        g_autoptr(GArray) f = g_array_new(FALSE, FALSE, sizeof(NpFileMap));
        g_assert_cmpint(np_parse_shmaps(probe_maps, a, f, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(a->len, ==, 8);
        /* the executable (3), the disk file, the private map of the
         * /dev/shm file, libc (5), ld.so (2); not the heap, anonymous
         * memory, [vvar], [vdso], the stack, [vsyscall] */
        g_assert_cmpuint(f->len, ==, 12);
        assert_file(f, 0, 0x55c991923000, 0x55c991924000, true); /* r--p */
        assert_file(f, 1, 0x55c991924000, 0x55c991925000, true); /* r-xp: text */
        assert_file(f, 2, 0x55c991927000, 0x55c991928000, false); /* rw-p: data */
        assert_file(f, 3, 0x7fbd8bac3000, 0x7fbd8bbc3000, true); /* r--s */
        assert_file(f, 4, 0x7fbd8bcc3000, 0x7fbd8bdc3000, true);
        assert_file(f, 9, 0x7fbd8c299000, 0x7fbd8c29b000, false);
        assert_file(f, 11, 0x7fbd8c2f1000, 0x7fbd8c2f3000, false);
        for (guint i = 1; i < f->len; i++)
                g_assert_cmphex(g_array_index(f, NpFileMap, i - 1).start, <, g_array_index(f, NpFileMap, i).start);

        /* a shared writable map of a disk file may be written */
        g_assert_cmpint(np_parse_shmaps("7f0000000000-7f0000001000 rw-s 00000000 fe:00 7 /srv/x\n", a, f, &error), ==,
                        0);
        g_assert_cmpuint(a->len, ==, 0);
        g_assert_cmpuint(f->len, ==, 1);
        assert_file(f, 0, 0x7f0000000000, 0x7f0000001000, false);

        /* a malformed line empties both */
        g_assert_cmpint(np_parse_shmaps(probe_maps, a, f, NULL), ==, 0);
        g_assert_cmpint(np_parse_shmaps("7f0000000000-7f0000001000 rw-s\n", a, f, &error), ==, -EINVAL);
        g_assert_cmpuint(a->len, ==, 0);
        g_assert_cmpuint(f->len, ==, 0);
}

static void test_paths(void) {
        g_autoptr(GError) error = NULL;
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(NpShmap));
        const char *buf =
                /* a memfd whose name holds " (deleted)" and parentheses */
                "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /memfd:a) (b (deleted) (deleted)\n"
                /* named shared anonymous memory (PR_SET_VMA_ANON_NAME) */
                "7f0000001000-7f0000002000 rw-s 00000000 00:01 8 [anon_shmem:pool (a)]\n"
                /* a memfd with MFD_HUGETLB, on hugetlbfs, minor above 255 */
                "7f0000200000-7f0000400000 rw-s 00000000 00:1f4 9 /memfd:huge (deleted)\n"
                /* no newline at the end */
                "7f0000400000-7f0000401000 r--s 00001000 00:1a 10 /dev/shm/PostgreSQL.1804289383";
        g_assert_cmpint(np_parse_shmaps(buf, a, NULL, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(a->len, ==, 4);
        assert_shmap(a, 0, 0x7f0000000000, 0x7f0000001000, 0, 1, 7, NP_SHMAP_MEMFD);
        assert_shmap(a, 1, 0x7f0000001000, 0x7f0000002000, 0, 1, 8, NP_SHMAP_ANON);
        assert_shmap(a, 2, 0x7f0000200000, 0x7f0000400000, 0, 0x1f4, 9, NP_SHMAP_MEMFD);
        assert_shmap(a, 3, 0x7f0000400000, 0x7f0000401000, 0, 0x1a, 10, NP_SHMAP_DEVSHM);

        /* not keys: shared maps of disk files even when their names look
         * like one (a device with a major), private maps of shmem, a tmpfs
         * file outside /dev/shm, /dev/shm itself, names that only start alike */
        const char *none = "7f0000000000-7f0000001000 rw-s 00000000 fe:00 7 /SYSV00000000 (deleted)\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 08:01 7 /dev/shm/x\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 fe:00 7 /home/u/a) (b (deleted)\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 fe:00 7 /usr/lib/libfoo.so\n"
                           "7f0000000000-7f0000001000 rw-p 00000000 00:01 7 /memfd:x (deleted)\n"
                           "7f0000000000-7f0000001000 rw-p 00000000 00:01 7 /SYSV00000000 (deleted)\n"
                           "7f0000000000-7f0000001000 r--p 00000000 00:1a 7 /dev/shm/x\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:19 7 /run/user/0/x\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:1a 7 /dev/shm/\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /SYSV0000000 (deleted)\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /SYSV0000000g (deleted)\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /SYSV00000000\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /memfd:x\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /dev/zero\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 /dev/zeroes (deleted)\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 [anon_shmem:x\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:05 7 /dev/fb0\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7\n"
                           "7f0000000000-7f0000001000 rw-s 00000000 00:01 7 \n";
        g_assert_cmpint(np_parse_shmaps(none, a, NULL, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(a->len, ==, 0);
}

static void test_malformed(void) {
        static const struct {
                const char *buf;
                const char *msg;
        } bad[] = {
                { "7f00-7f01 rw-s 00000000 00:01 7 /dev/zero (deleted)\nx\n", "maps line 2: no start-end" },
                { "7f00 rw-s 00000000 00:01 7\n", "no start-end" },
                { "7f00-7f01rw-s 00000000 00:01 7\n", "no start-end" },
                { "-7f01 rw-s 00000000 00:01 7\n", "no start-end" },
                { "10000000000000000-10000000000000001 rw-s 0 00:01 7\n", "no start-end" },
                { "7f01-7f00 rw-s 00000000 00:01 7\n", "start above end" },
                { "7f00-7f01 rw-x 00000000 00:01 7\n", "no permissions" },
                { "7f00-7f01 rw-s00000000 00:01 7\n", "no permissions" },
                { "7f00-7f01 rw-\n", "no permissions" },
                { "7f00-7f01 rw-s zz 00:01 7\n", "no offset" },
                { "7f00-7f01 rw-s 00000000 0001 7\n", "no device" },
                { "7f00-7f01 rw-s 00000000 00:01:7\n", "no device" },
                { "7f00-7f01 rw-s 00000000 100000000:01 7\n", "no device" },
                { "7f00-7f01 rw-s 00000000 00:01 x /dev/zero (deleted)\n", "no inode" },
                { "7f00-7f01 rw-s 00000000 00:01 7x /dev/zero (deleted)\n", "no inode" },
                { "7f00-7f01 rw-s 00000000 00:01 99999999999999999999999 /dev/zero (deleted)\n", "no inode" },
                { "7f00-7f01 rw-s 00000000 00:01\n", "no device" },
        };
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(NpShmap));
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autoptr(GError) error = NULL;
                g_assert_cmpint(np_parse_shmaps(probe_maps, a, NULL, NULL), ==, 0);
                g_assert_cmpuint(a->len, >, 0);
                g_test_message("%s", bad[i].buf);
                g_assert_cmpint(np_parse_shmaps(bad[i].buf, a, NULL, &error), ==, -EINVAL);
                g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
                g_assert_true(g_str_has_prefix(error->message, "maps line "));
                if (!strstr(error->message, bad[i].msg))
                        g_error("'%s': message '%s' lacks '%s'", bad[i].buf, error->message, bad[i].msg);
                g_assert_cmpuint(a->len, ==, 0); /* emptied */
        }
}

/* ---- the reader ------------------------------------------------------------ */

/* The entry of `a` whose range holds addr, or NULL. */
static const NpShmap *find(const GArray *a, const void *addr) {
        uint64_t x = (uint64_t) (uintptr_t) addr;
        for (guint i = 0; i < a->len; i++) {
                const NpShmap *m = &g_array_index(a, NpShmap, i);
                if (m->start <= x && x < m->end)
                        return m;
        }
        return NULL;
}

static void assert_same_object(const NpShmap *x, const NpShmap *y) {
        g_assert_nonnull(x);
        g_assert_nonnull(y);
        g_assert_cmpuint(x->dev_major, ==, y->dev_major);
        g_assert_cmpuint(x->dev_minor, ==, y->dev_minor);
        g_assert_cmpuint(x->inode, ==, y->inode);
        g_assert_cmpint(x->kind, ==, y->kind);
}

/* One of each kind made here, in this process, then a forked child that
 * inherits them: the reader sees each in both, with the same key; libc's
 * mappings and a private anonymous one are not returned. */
static void test_read_live(void) {
        const size_t len = 1 << 20;
        np_sysroot_set(NULL);

        int shmid = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
        if (shmid < 0) {
                g_test_skip("shmget() is not allowed here");
                return;
        }
        char *sysv = shmat(shmid, NULL, 0);
        shmctl(shmid, IPC_RMID, NULL);
        g_assert_true(sysv != (void *) -1);
        int mfd = memfd_create("np test (memfd)", 0);
        g_assert_cmpint(mfd, >=, 0);
        g_assert_cmpint(ftruncate(mfd, (off_t) len), ==, 0);
        char *memfd = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
        g_assert_true(memfd != MAP_FAILED);
        close(mfd);
        char *anon = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        g_assert_true(anon != MAP_FAILED);
        char *priv = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        g_assert_true(priv != MAP_FAILED);
        char *devshm = NULL;
        g_autofree char *shm_path = g_strdup_printf("/dev/shm/np-test shmaps (%d)", (int) getpid());
        int sfd = open(shm_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (sfd >= 0) {
                g_assert_cmpint(ftruncate(sfd, (off_t) len), ==, 0);
                devshm = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
                g_assert_true(devshm != MAP_FAILED);
                close(sfd);
                unlink(shm_path); /* still mapped: "(deleted)" */
        }
        memset(sysv, 1, 4096);
        memset(memfd, 1, 4096);
        memset(anon, 1, 4096);
        memset(priv, 1, 4096);

        g_autoptr(GError) error = NULL;
        g_autoptr(GArray) mine = NULL;
        g_assert_cmpint(np_read_shmaps((int) getpid(), &mine, NULL, &error), ==, 0);
        g_assert_no_error(error);
        const NpShmap *m = find(mine, sysv);
        g_assert_nonnull(m);
        g_assert_cmpint(m->kind, ==, NP_SHMAP_SYSV);
        g_assert_cmpuint(m->dev_major, ==, 0);
        g_assert_cmpuint(m->inode, ==, (unsigned) shmid); /* the segment's inode is its id */
        g_assert_cmpint(find(mine, memfd)->kind, ==, NP_SHMAP_MEMFD);
        g_assert_cmpint(find(mine, anon)->kind, ==, NP_SHMAP_ANON);
        if (devshm) {
                struct stat st;
                g_assert_cmpint(find(mine, devshm)->kind, ==, NP_SHMAP_DEVSHM);
                g_assert_cmpint(stat("/dev/shm", &st), ==, 0);
                g_assert_cmpuint(find(mine, devshm)->dev_minor, ==, minor(st.st_dev));
        }
        g_assert_null(find(mine, priv));
        g_assert_null(find(mine, (const void *) &memcpy)); /* libc: private */
        g_assert_null(find(mine, &error)); /* the stack */

        int go[2];
        g_assert_cmpint(pipe(go), ==, 0);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                char c;
                close(go[1]);
                /* wait until told, then exit without being reaped */
                while (read(go[0], &c, 1) < 0 && errno == EINTR)
                        ;
                _exit(0);
        }
        close(go[0]);
        g_autoptr(GArray) theirs = NULL;
        g_assert_cmpint(np_read_shmaps((int) child, &theirs, NULL, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(theirs->len, ==, mine->len);
        assert_same_object(find(theirs, sysv), find(mine, sysv));
        assert_same_object(find(theirs, memfd), find(mine, memfd));
        assert_same_object(find(theirs, anon), find(mine, anon));
        if (devshm)
                assert_same_object(find(theirs, devshm), find(mine, devshm));

        /* exited, not reaped (a zombie: maps reads empty): gone */
        siginfo_t info = { 0 };
        g_assert_cmpint(write(go[1], "x", 1), ==, 1);
        close(go[1]);
        g_assert_cmpint(waitid(P_PID, (id_t) child, &info, WEXITED | WNOWAIT), ==, 0);
        g_autoptr(GArray) none = NULL;
        g_assert_cmpint(np_read_shmaps((int) child, &none, NULL, &error), ==, -ESRCH);
        g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT);
        g_clear_error(&error);
        g_assert_null(none);
        /* reaped: gone */
        g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
        g_assert_cmpint(np_read_shmaps((int) child, &none, NULL, &error), ==, -ESRCH);
        g_clear_error(&error);

        /* a kernel thread has no mappings */
        g_autoptr(GArray) kthread = NULL;
        g_assert_cmpint(np_read_shmaps(2, &kthread, NULL, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(kthread->len, ==, 0);

        g_assert_cmpint(np_read_shmaps(0, &none, NULL, &error), ==, -EINVAL);
        g_clear_error(&error);
        g_assert_cmpint(np_read_shmaps(-1, &none, NULL, &error), ==, -EINVAL);
        g_clear_error(&error);

        shmdt(sysv);
        munmap(memfd, len);
        munmap(anon, len);
        munmap(priv, len);
        if (devshm)
                munmap(devshm, len);
}

/* Through the sysroot: a fixture tree's maps and stat. */
static void test_read_fixture(void) {
        g_autoptr(GError) error = NULL;
        g_autofree char *root = g_dir_make_tmp("np-shmaps-XXXXXX", &error);
        g_assert_no_error(error);
        g_autofree char *dir = g_build_filename(root, "proc", "4242", NULL);
        g_assert_cmpint(g_mkdir_with_parents(dir, 0755), ==, 0);
        g_autofree char *maps = g_build_filename(dir, "maps", NULL);
        g_autofree char *stat = g_build_filename(dir, "stat", NULL);
        g_assert_true(g_file_set_contents(maps, probe_maps, -1, NULL));
        const char *stat_line = "4242 (a) (b c) S 1 4242 4242 0 -1 4194560 100 0 0 0 10 20 0 0 20 0 1 0 300 "
                                "1000 50 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
        g_assert_true(g_file_set_contents(stat, stat_line, -1, NULL));
        np_sysroot_set(root);

        g_autoptr(GArray) a = NULL;
        g_assert_cmpint(np_read_shmaps(4242, &a, NULL, &error), ==, 0);
        g_assert_no_error(error);
        g_assert_cmpuint(a->len, ==, 8);
        g_clear_pointer(&a, g_array_unref);

        /* its stat says it is exiting (PF_EXITING): what was read may be cut short */
        g_autofree char *exiting = g_strdup(stat_line);
        memcpy(strstr(exiting, "4194560"), "4194564", 7);
        g_assert_true(g_file_set_contents(stat, exiting, -1, NULL));
        g_assert_cmpint(np_read_shmaps(4242, &a, NULL, &error), ==, -ESRCH);
        g_clear_error(&error);

        /* malformed: the line, with the file */
        g_assert_true(g_file_set_contents(stat, stat_line, -1, NULL));
        g_assert_true(
                g_file_set_contents(maps, "7f00-7f01 rw-s 00000000 00:01 7 /dev/zero (deleted)\n7f00\n", -1, NULL));
        g_assert_cmpint(np_read_shmaps(4242, &a, NULL, &error), ==, -EINVAL);
        g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL);
        g_assert_cmpstr(error->message, ==, "/proc/4242/maps: maps line 2: no start-end address range");
        g_clear_error(&error);
        g_assert_null(a);

        /* no such process */
        g_assert_cmpint(np_read_shmaps(4243, &a, NULL, &error), ==, -ESRCH);
        g_clear_error(&error);

        np_sysroot_set(NULL);
        g_unlink(maps);
        g_unlink(stat);
        g_rmdir(dir);
        g_autofree char *proc = g_build_filename(root, "proc", NULL);
        g_rmdir(proc);
        g_rmdir(root);
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/shmaps/probe", test_probe);
        g_test_add_func("/shmaps/paths", test_paths);
        g_test_add_func("/shmaps/files", test_files);
        g_test_add_func("/shmaps/malformed", test_malformed);
        g_test_add_func("/shmaps/read-live", test_read_live);
        g_test_add_func("/shmaps/read-fixture", test_read_fixture);
        return g_test_run();
}
