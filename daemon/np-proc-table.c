/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "np-proc-table.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "np-lex.h"
#include "np-sysroot.h"
#include "np-test-api.h"

struct NpProcTable {
        GHashTable *by_pid; /* pid -> NpProcEntry* (owned) */
        GPtrArray *live; /* user processes of the last scan, sorted by pid */
        /* every entry after the last scan, kernel threads too, sorted by pid:
         * the next scan walks it beside the /proc listing (which is sorted by
         * pid too) instead of looking each pid up in by_pid */
        GPtrArray *all, *all_next;
        DIR *proc_dir; /* <root>/proc, kept open and rewound each scan */
        char *proc_path; /* its path (the sysroot in force at creation) */
        unsigned max_kept;
        unsigned kept; /* statm descriptors */
        unsigned stat_kept; /* stat descriptors (processes whose stat is read every scan) */
        unsigned detail_kept; /* status and cgroup descriptors beside them */
        uint32_t gen;
        uint64_t page_size;
        bool huge_in_use, huge_changed; /* np_proc_table_watch_hugetlb() */
        uint64_t huge_min_bytes; /* its min_bytes */
        NpProcTableStats totals; /* the counters part */
};

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

unsigned np_proc_fd_budget(uint64_t *soft_out) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
                if (soft_out)
                        *soft_out = 0;
                return 0;
        }
        if (rl.rlim_cur != rl.rlim_max) {
                struct rlimit want = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };
                if (setrlimit(RLIMIT_NOFILE, &want) == 0)
                        rl.rlim_cur = rl.rlim_max;
        }
        if (soft_out)
                *soft_out = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t) rl.rlim_cur;
        if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur <= NP_PROC_FDS_RESERVED)
                return 0;
        uint64_t room = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t) rl.rlim_cur - NP_PROC_FDS_RESERVED;
        return (unsigned) MIN(room, (uint64_t) NP_PROC_KEPT_FDS_MAX);
}

static void entry_free(NpProcEntry *e) {
        if (!e)
                return;
        if (e->fd >= 0)
                close(e->fd);
        if (e->stat_fd >= 0)
                close(e->stat_fd);
        for (unsigned i = 0; i < G_N_ELEMENTS(e->detail_fd); i++)
                if (e->detail_fd[i] >= 0)
                        close(e->detail_fd[i]);
        g_free(e);
}

NpProcTable *np_proc_table_new(unsigned max_kept) {
        NpProcTable *t = g_new0(NpProcTable, 1);
        t->by_pid = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify) entry_free);
        t->live = g_ptr_array_new();
        t->all = g_ptr_array_new();
        t->all_next = g_ptr_array_new();
        t->proc_path = np_path("/proc");
        t->max_kept = max_kept;
        long ps = sysconf(_SC_PAGESIZE);
        t->page_size = ps > 0 ? (uint64_t) ps : 4096;
        return t;
}

void np_proc_table_free(NpProcTable *t) {
        if (!t)
                return;
        g_ptr_array_free(t->live, TRUE);
        g_ptr_array_free(t->all, TRUE);
        g_ptr_array_free(t->all_next, TRUE);
        g_hash_table_destroy(t->by_pid);
        if (t->proc_dir)
                closedir(t->proc_dir);
        g_free(t->proc_path);
        g_free(t);
}

/* ---- parsing ------------------------------------------------------------- */

int np_parse_statm(const char *buf, uint64_t *resident, uint64_t *text, uint64_t *size, uint64_t *shared) {
        if (!buf || !resident || !text)
                return -EINVAL;
        uint64_t v[7];
        const char *p = buf;
        for (unsigned i = 0; i < 7; i++) {
                if (i > 0) {
                        if (*p != ' ')
                                return -EINVAL;
                        p++;
                }
                if (np_lex_u64(&p, &v[i]) < 0)
                        return -EINVAL;
        }
        if (*p != '\n' && *p != '\0')
                return -EINVAL;
        *resident = v[1];
        *text = v[3];
        if (size)
                *size = v[0];
        if (shared)
                *shared = v[2];
        return 0;
}

/* ---- reads --------------------------------------------------------------- */

/* A vanished process shows up as ENOENT (open) or ESRCH (read). */
static int gone_or(int r) {
        return (r == -ENOENT || r == -ESRCH) ? -ESRCH : r;
}

/* pread(fd, 0) into buf (NUL-terminated). Bytes read, -ESRCH when the
 * process is gone (or read nothing), another negative errno. */
static ssize_t pread_all(int fd, char *buf, size_t size) {
        ssize_t k;
        do
                k = pread(fd, buf, size - 1, 0);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return gone_or(-errno);
        if (k == 0)
                return -ESRCH;
        buf[k] = '\0';
        return k;
}

static void take_stat(NpProcTable *t, NpProcEntry *e, const NpPidStat *st, uint64_t now) {
        uint64_t ticks = st->utime + st->stime;
        if (e->ticks_usec && now > e->ticks_usec && ticks >= e->ticks)
                e->cpu_usage = ((double) (ticks - e->ticks) / (double) np_clock_ticks()) /
                        ((double) (now - e->ticks_usec) / 1e6);
        e->ticks = ticks;
        e->ticks_usec = now;
        e->threads = st->num_threads > 0 ? (unsigned) st->num_threads : 0;
        /* a zombie leader whose other threads still run is alive */
        e->exited = (st->state == 'Z' || st->state == 'X') && st->num_threads <= 1;
        g_strlcpy(e->comm, st->comm, sizeof e->comm);
        e->size_bytes = st->vsize;
        e->stat_read = true;
        t->totals.stat_reads++;
}

/*
 * Open <root>/proc/<pid> and read stat through it; when keep_fd, also open
 * statm through the same directory descriptor, so both belong to the process
 * that held pid at that instant. 0 with *st and *fd (-1 when not kept or no
 * statm; *no_statm then tells whether statm is missing), -ESRCH when gone,
 * -EINVAL for a malformed stat.
 */
static int open_process(NpProcTable *t, int pid, bool keep_fd, NpPidStat *st, int *fd, bool *no_statm) {
        char path[PATH_MAX];
        char buf[1024];
        *fd = -1;
        *no_statm = false;
        int n = snprintf(path, sizeof path, "%s/%d", t->proc_path, pid);
        if (n < 0 || (size_t) n >= sizeof path)
                return -ENAMETOOLONG;
        int dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return gone_or(-errno);
        int sfd = openat(dfd, "stat", O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (sfd < 0) {
                int r = gone_or(-errno);
                close(dfd);
                return r;
        }
        ssize_t k = pread_all(sfd, buf, sizeof buf);
        close(sfd);
        int r = k < 0 ? (int) k : np_parse_pid_stat(buf, st);
        if (r == 0 && keep_fd && !(st->flags & NP_PF_KTHREAD) && st->ppid != 2 && pid != 2) {
                *fd = openat(dfd, "statm", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (*fd < 0)
                        *no_statm = errno == ENOENT && access(path, F_OK) == 0;
        }
        close(dfd);
        return r;
}

static bool is_kthread(int pid, const NpPidStat *st) {
        return (st->flags & NP_PF_KTHREAD) || st->ppid == 2 || pid == 2;
}

/* Room under the cap for one more kept descriptor. */
static bool room(const NpProcTable *t) {
        return t->kept + t->stat_kept + t->detail_kept < t->max_kept;
}

/* The counts of e's descriptors, before it leaves the table. */
static void uncount(NpProcTable *t, const NpProcEntry *e) {
        if (e->fd >= 0)
                t->kept--;
        if (e->stat_fd >= 0)
                t->stat_kept--;
        for (unsigned i = 0; i < G_N_ELEMENTS(e->detail_fd); i++)
                if (e->detail_fd[i] >= 0)
                        t->detail_kept--;
}

/* Close e's stat descriptor and the details descriptors kept beside it. */
static void close_stat_fds(NpProcTable *t, NpProcEntry *e) {
        if (e->stat_fd >= 0) {
                close(e->stat_fd);
                e->stat_fd = -1;
                t->stat_kept--;
        }
        for (unsigned i = 0; i < G_N_ELEMENTS(e->detail_fd); i++)
                if (e->detail_fd[i] >= 0) {
                        close(e->detail_fd[i]);
                        e->detail_fd[i] = -1;
                        t->detail_kept--;
                }
}

static void drop(NpProcTable *t, NpProcEntry *e) {
        uncount(t, e);
        t->totals.dropped++;
        g_hash_table_remove(t->by_pid, GINT_TO_POINTER(e->pid));
}

/* A process not known yet (or whose pid was reused). NULL when it is gone. */
static NpProcEntry *discover(NpProcTable *t, int pid, uint32_t ino, uint64_t now) {
        NpPidStat st;
        int fd;
        bool no_statm;
        if (open_process(t, pid, room(t), &st, &fd, &no_statm) < 0)
                return NULL;
        NpProcEntry *e = g_new0(NpProcEntry, 1);
        e->pid = pid;
        e->stat_fd = -1;
        e->detail_fd[0] = e->detail_fd[1] = -1;
        e->starttime = st.starttime;
        e->ino = ino;
        e->fd = fd;
        e->kthread = is_kthread(pid, &st);
        e->text_pages = NP_TEXT_UNKNOWN;
        e->new_this_scan = true;
        if (fd >= 0)
                t->kept++;
        e->no_statm = no_statm;
        take_stat(t, e, &st, now);
        e->rss_bytes = st.rss_pages > 0 ? (uint64_t) st.rss_pages * t->page_size : 0;
        g_hash_table_replace(t->by_pid, GINT_TO_POINTER(pid), e);
        t->totals.discovered++;
        return e;
}

/* stat by path for an entry without a descriptor: identity by start time.
 * 0, or -ESRCH when our process is gone (the caller drops the entry). */
static int read_stat_by_path(NpProcTable *t, NpProcEntry *e, uint64_t now, NpPidStat *st) {
        int r = np_read_pid_stat(e->pid, st);
        if (r < 0)
                return -ESRCH;
        if (st->starttime != e->starttime)
                return -ESRCH; /* pid reused */
        take_stat(t, e, st, now);
        return 0;
}

/* stat of a process that has it read every scan (at or above the memory
 * threshold, or asked for): pread() on a descriptor kept for it, as statm
 * is, while there is room under the cap (one pread() instead of open, read
 * and close each scan); by path otherwise, and in a tree without statm (a
 * fixture, whose files tests replace). keep false (a read for an exec
 * only): no descriptor is opened for it. Identity: a kept descriptor of a
 * reaped process reads ESRCH; one opened now is checked against the start
 * time. 0, or -ESRCH when our process is gone. */
static int read_stat_kept(NpProcTable *t, NpProcEntry *e, uint64_t now, NpPidStat *st, bool keep) {
        char buf[1024];
        if (e->stat_fd < 0 && (!keep || e->fd < 0 || !room(t)))
                return read_stat_by_path(t, e, now, st);
        bool opened = false;
        if (e->stat_fd < 0) {
                char path[PATH_MAX];
                int n = snprintf(path, sizeof path, "%s/%d/stat", t->proc_path, e->pid);
                if (n < 0 || (size_t) n >= sizeof path)
                        return read_stat_by_path(t, e, now, st);
                e->stat_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (e->stat_fd < 0)
                        return -ESRCH;
                t->stat_kept++;
                opened = true;
        }
        ssize_t k = pread_all(e->stat_fd, buf, sizeof buf);
        if (k < 0 || np_parse_pid_stat(buf, st) < 0 || (opened && st->starttime != e->starttime))
                return -ESRCH; /* the caller drops the entry, which closes it */
        take_stat(t, e, st, now);
        return 0;
}

/* The per-scan read of one known user process. Returns the entry to report
 * (e, or a new entry when the pid was reused), or NULL when gone. */
static NpProcEntry *sample_known(NpProcTable *t, NpProcEntry *e, uint32_t ino, uint64_t now, bool *exec_seen) {
        char buf[256];
        int pid = e->pid;
        *exec_seen = false;

        if (e->fd < 0 && !e->no_statm && room(t)) {
                /* beyond the cap until now: try to get a descriptor */
                NpPidStat st;
                int fd;
                bool no_statm;
                if (open_process(t, pid, true, &st, &fd, &no_statm) < 0) {
                        drop(t, e);
                        return NULL;
                }
                if (st.starttime != e->starttime) {
                        if (fd >= 0)
                                close(fd);
                        drop(t, e);
                        return discover(t, pid, ino, now);
                }
                if (fd >= 0) {
                        e->fd = fd;
                        t->kept++;
                }
                e->no_statm = no_statm;
                take_stat(t, e, &st, now);
                e->rss_bytes = st.rss_pages > 0 ? (uint64_t) st.rss_pages * t->page_size : 0;
                e->shared_bytes = 0;
                if (fd < 0)
                        return e; /* no statm (a fixture tree): stat was the read */
        }

        if (e->fd >= 0) {
                ssize_t k = pread_all(e->fd, buf, sizeof buf);
                t->totals.statm_reads++;
                if (k == -ESRCH) {
                        /* our process was reaped: anyone holding pid now is new */
                        drop(t, e);
                        return discover(t, pid, ino, now);
                }
                uint64_t resident, text, size, shared;
                if (k < 0 || np_parse_statm(buf, &resident, &text, &size, &shared) < 0) {
                        drop(t, e);
                        return NULL;
                }
                if (text == 0) {
                        /* in an exec's window (or without an mm): read
                         * stat when the new program's code is there */
                        e->text_pages = NP_TEXT_EXECING;
                } else {
                        uint32_t tp = (uint32_t) MIN(text, (uint64_t) NP_TEXT_EXECING - 1);
                        *exec_seen = e->text_pages != NP_TEXT_UNKNOWN && tp != e->text_pages;
                        e->text_pages = tp;
                }
                e->rss_bytes = resident * t->page_size;
                e->size_bytes = size * t->page_size;
                e->shared_bytes = MIN(shared, resident) * t->page_size;
                return e;
        }

        /* no descriptor: stat by path every scan */
        NpPidStat st;
        if (read_stat_by_path(t, e, now, &st) < 0) {
                drop(t, e);
                return discover(t, pid, ino, now);
        }
        e->rss_bytes = st.rss_pages > 0 ? (uint64_t) st.rss_pages * t->page_size : 0;
        e->shared_bytes = 0;
        return e;
}

void np_proc_table_watch_hugetlb(NpProcTable *t, bool in_use, bool changed, uint64_t min_bytes) {
        t->huge_in_use = in_use;
        t->huge_changed = changed;
        t->huge_min_bytes = min_bytes;
}

/*
 * The hugetlb pages of e, when some pool is in use (np-proc-table.h). The
 * cost: nothing while no pool has pages in use; otherwise one read of
 * status (the kernel formats about 1.5 kB, some 15 us) for a process whose
 * mapped size reaches the threshold while its resident memory does not,
 * and only when its look is due: a process that keeps its mappings is
 * looked at once every NP_HUGETLB_RECHECK_SCANS scans (and in the scans
 * in which the pools' pages in use grow: a guest faulting its RAM in), one
 * that holds hugetlb pages every scan (a guest: few per machine).
 */
static void look_hugetlb(NpProcTable *t, NpProcEntry *e, uint64_t min_rss_bytes) {
        uint64_t min = MAX(t->huge_min_bytes, min_rss_bytes);
        if (!t->huge_in_use || e->rss_bytes >= min || e->size_bytes < min) {
                e->hugetlb_bytes = 0;
                e->hugetlb_gen = 0;
                return;
        }
        bool due = e->hugetlb_gen == 0 || e->size_bytes != e->hugetlb_size || t->huge_changed || e->hugetlb_bytes > 0 ||
                t->gen - e->hugetlb_gen >= NP_HUGETLB_RECHECK_SCANS;
        if (!due)
                return;
        g_autofree char *buf = NULL;
        uint64_t bytes = 0;
        if (np_proc_table_read_detail(t, e->pid, NP_PROC_STATUS, &buf) < 0 || np_parse_status_hugetlb(buf, &bytes) < 0)
                bytes = 0; /* gone (the stat read finds out) or unreadable: nothing counted */
        t->totals.hugetlb_looks++;
        e->hugetlb_bytes = bytes;
        e->hugetlb_size = e->size_bytes;
        e->hugetlb_gen = t->gen;
}

static gint cmp_entry_pid(gconstpointer a, gconstpointer b) {
        int x = (*(NpProcEntry *const *) a)->pid, y = (*(NpProcEntry *const *) b)->pid;
        return (x > y) - (x < y);
}

static bool parse_pid_name(const char *s, int *pid) {
        uint64_t v;
        const char *p = s;
        if (np_lex_u64(&p, &v) < 0 || *p || v == 0 || v > INT_MAX)
                return false;
        *pid = (int) v;
        return true;
}

int np_proc_table_scan(NpProcTable *t, uint64_t min_rss_bytes, NpProcWantsStat wants, void *userdata) {
        if (!t->proc_dir) {
                t->proc_dir = opendir(t->proc_path);
                if (!t->proc_dir)
                        return -errno;
        } else
                rewinddir(t->proc_dir);

        uint32_t gen = ++t->gen;
        uint64_t now = now_usec();
        bool sorted = true;
        int last_pid = 0;
        g_ptr_array_set_size(t->live, 0);
        g_ptr_array_set_size(t->all_next, 0);
        guint seen = 0; /* entries marked seen this scan */
        /* the entries of the last scan, by pid, walked beside the listing
         * while it comes in pid order (/proc's does; a fixture tree's need
         * not, and then each pid is looked up) */
        const GPtrArray *prev = t->all;
        guint cur = 0;
        bool merge = true;
        int last_listed = 0;

        struct dirent *de;
        errno = 0;
        while ((de = readdir(t->proc_dir))) {
                int pid;
                if (!parse_pid_name(de->d_name, &pid))
                        continue;
                uint32_t ino = (uint32_t) de->d_ino;
                NpProcEntry *e = NULL;
                merge = merge && pid > last_listed;
                last_listed = pid;
                if (merge) {
                        /* those passed over have exited (the sweep below);
                         * cur moves past e at once: e may be freed below */
                        while (cur < prev->len && ((NpProcEntry *) prev->pdata[cur])->pid < pid)
                                cur++;
                        if (cur < prev->len && ((NpProcEntry *) prev->pdata[cur])->pid == pid)
                                e = prev->pdata[cur++];
                } else
                        e = g_hash_table_lookup(t->by_pid, GINT_TO_POINTER(pid));
                bool exec_seen = false;
                if (!e) {
                        e = discover(t, pid, ino, now);
                } else if (e->kthread) {
                        if (e->ino != ino) {
                                /* a new inode: maybe another process has this pid now */
                                NpPidStat st;
                                if (np_read_pid_stat(pid, &st) < 0) {
                                        drop(t, e);
                                        e = NULL;
                                } else if (st.starttime != e->starttime) {
                                        drop(t, e);
                                        e = discover(t, pid, ino, now);
                                } else
                                        e->ino = ino;
                        }
                } else {
                        e->stat_read = false;
                        e->new_this_scan = false;
                        e->ino = ino;
                        e = sample_known(t, e, ino, now, &exec_seen);
                }
                if (!e)
                        continue;
                if (e->seen_gen != gen)
                        seen++;
                e->seen_gen = gen;
                if (e->kthread) {
                        g_ptr_array_add(t->all_next, e);
                        continue;
                }
                look_hugetlb(t, e, min_rss_bytes);
                bool every_scan = np_proc_entry_memory(e) >= min_rss_bytes || (wants && wants(userdata, e));
                if (!every_scan && e->stat_fd >= 0)
                        close_stat_fds(t, e); /* no longer read every scan: its descriptors go */
                if (!e->stat_read && (exec_seen || every_scan)) {
                        NpPidStat st;
                        if (read_stat_kept(t, e, now, &st, every_scan) < 0) {
                                /* exited (or pid reused) since statm: gone for this scan */
                                drop(t, e);
                                seen--;
                                continue;
                        }
                }
                if (e->pid < last_pid)
                        sorted = false;
                last_pid = e->pid;
                g_ptr_array_add(t->live, e);
                g_ptr_array_add(t->all_next, e);
        }

        /* what the listing no longer holds has exited (when every entry
         * was seen, none has: no walk of the table) */
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, t->by_pid);
        while (seen < g_hash_table_size(t->by_pid) && g_hash_table_iter_next(&it, NULL, &v)) {
                NpProcEntry *e = v;
                if (e->seen_gen == gen)
                        continue;
                uncount(t, e);
                t->totals.dropped++;
                g_hash_table_iter_remove(&it);
        }
        if (!sorted) /* a fixture tree lists in directory order; /proc lists by pid */
                g_ptr_array_sort(t->live, cmp_entry_pid);
        GPtrArray *swap = t->all;
        t->all = t->all_next;
        t->all_next = swap;
        if (!merge)
                g_ptr_array_sort(t->all, cmp_entry_pid);
        return (int) t->live->len;
}

int np_proc_table_read_stat(NpProcTable *t, int pid, NpPidStat *st) {
        const NpProcEntry *e = t ? g_hash_table_lookup(t->by_pid, GINT_TO_POINTER(pid)) : NULL;
        if (!e || e->stat_fd < 0)
                return -ENOENT;
        char buf[1024];
        ssize_t k = pread_all(e->stat_fd, buf, sizeof buf);
        return k < 0 ? (int) k : np_parse_pid_stat(buf, st);
}

static const char *const detail_names[] = { [NP_PROC_STATUS] = "status", [NP_PROC_CGROUP] = "cgroup" };

static int read_detail_by_path(int pid, NpProcDetail which, char **contents) {
        g_autofree char *buf = NULL;
        int r = np_read_filef(&buf, NULL, "/proc/%d/%s", pid, detail_names[which]);
        if (r < 0)
                return gone_or(r);
        if (!*buf)
                return -ESRCH;
        *contents = g_steal_pointer(&buf);
        return 0;
}

/* The whole of a kept details file: pread() from offset 0 into a buffer that
 * grows until the file fits (status is a few kB; the kernel formats it whole
 * for each read). */
static int pread_whole(int fd, char **contents) {
        size_t size = 4096;
        for (;;) {
                g_autofree char *buf = g_malloc(size);
                ssize_t k = pread_all(fd, buf, size);
                if (k < 0)
                        return (int) k;
                if ((size_t) k < size - 1) {
                        *contents = g_steal_pointer(&buf);
                        return 0;
                }
                if (size >= 1024 * 1024)
                        return -EFBIG;
                size *= 2;
        }
}

int np_proc_table_read_detail(NpProcTable *t, int pid, NpProcDetail which, char **contents) {
        g_return_val_if_fail(which < G_N_ELEMENTS(detail_names), -EINVAL);
        if (pid <= 0)
                return -EINVAL;
        NpProcEntry *e = t ? g_hash_table_lookup(t->by_pid, GINT_TO_POINTER(pid)) : NULL;
        if (!e || e->kthread || e->stat_fd < 0)
                return read_detail_by_path(pid, which, contents);
        int *fd = &e->detail_fd[which];
        if (*fd < 0) {
                if (!room(t))
                        return read_detail_by_path(pid, which, contents);
                char path[PATH_MAX];
                int n = snprintf(path, sizeof path, "%s/%d/%s", t->proc_path, pid, detail_names[which]);
                if (n < 0 || (size_t) n >= sizeof path)
                        return read_detail_by_path(pid, which, contents);
                int nfd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (nfd < 0)
                        return gone_or(-errno);
                char buf[1024];
                if (pread_all(e->stat_fd, buf, sizeof buf) < 0) {
                        close(nfd); /* reaped: the pid may be someone else's by now */
                        return -ESRCH;
                }
                *fd = nfd;
                t->detail_kept++;
        }
        int r = pread_whole(*fd, contents);
        if (r < 0 && r != -ESRCH) {
                /* not a vanished process: the next read opens it afresh */
                close(*fd);
                *fd = -1;
                t->detail_kept--;
        }
        return r;
}

const GPtrArray *np_proc_table_entries(const NpProcTable *t) {
        return t->live;
}

const NpProcEntry *np_proc_table_lookup(const NpProcTable *t, int pid) {
        return g_hash_table_lookup(t->by_pid, GINT_TO_POINTER(pid));
}

void np_proc_table_stats(const NpProcTable *t, NpProcTableStats *out) {
        *out = t->totals;
        out->max_kept = t->max_kept;
        out->kept = t->kept;
        out->beyond_cap = 0;
        out->kthreads = 0;
        GHashTableIter it;
        gpointer v;
        g_hash_table_iter_init(&it, t->by_pid);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
                const NpProcEntry *e = v;
                out->kthreads += e->kthread;
                out->beyond_cap += !e->kthread && e->fd < 0;
        }
}
