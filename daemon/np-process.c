/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One process's sample and the daemon's view of it: see np-process.h. */
#include "np-process.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "np-log.h"
#include "np-proc-table.h"
#include "np-sysroot.h"

static uint64_t np_now_monotonic_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * G_USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

const char *np_proc_state_to_string(NpProcState s) {
        switch (s) {
        case NP_PROC_OBSERVED:
                return "observed";
        case NP_PROC_PINNED:
                return "pinned";
        case NP_PROC_PLACED:
                return "placed";
        case NP_PROC_EXCLUDED:
                return "excluded";
        case NP_PROC_FOREIGN:
                return "foreign";
        case NP_PROC_ADVISED:
                return "advised";
        case NP_PROC_NOFIT:
                return "nofit";
        }
        return "unknown";
}

bool np_process_cpu_settled(const NpProcess *p) {
        return p->cpu_measured >= 2 || (p->cpu_measured == 1 && !p->grew);
}

NpProcess *np_process_new(int pid, uint64_t starttime) {
        NpProcess *p = g_new0(NpProcess, 1);
        p->pid = pid;
        p->starttime = starttime;
        p->state = NP_PROC_OBSERVED;
        p->locality = 1.0;
        p->locality_prev = -1.0;
        p->cgroup = g_strdup("");
        p->systemd_cgroup = g_strdup("");
        p->unit = g_strdup("");
        p->may_group = -1;
        p->decision = g_strdup("");
        p->note = g_strdup("");
        return p;
}

void np_process_free(NpProcess *p) {
        if (!p)
                return;
        np_mask_free(p->cpus_allowed);
        np_mask_free(p->mems_allowed);
        np_mask_free(p->running_nodes);
        if (p->cpu_per_node)
                g_array_unref(p->cpu_per_node);
        if (p->thread_ticks)
                g_hash_table_unref(p->thread_ticks);
        if (p->thread_cpu)
                g_array_unref(p->thread_cpu);
        np_mask_free(p->target);
        np_mask_free(p->left);
        np_mask_free(p->runs_on);
        np_mask_free(p->moving_to);
        if (p->kernel_seen)
                g_array_unref(p->kernel_seen);
        if (p->thread_homes)
                g_array_unref(p->thread_homes);
        if (p->homes_pending)
                g_array_unref(p->homes_pending);
        g_free(p->decision);
        g_free(p->note);
        np_numa_maps_clear(&p->maps);
        if (p->shmaps)
                g_array_unref(p->shmaps);
        if (p->file_maps)
                g_array_unref(p->file_maps);
        if (p->group_objects)
                g_array_unref(p->group_objects);
        g_free(p->group);
        g_free(p->cgroup);
        g_free(p->systemd_cgroup);
        g_free(p->unit);
        g_free(p);
}

/* Every published value of p that changes goes through here: its bit, and
 * the owner's record that there is something to publish. */
static void mark(NpProcess *p, uint32_t bits) {
        p->changed |= bits;
        if (p->owner_changed)
                *p->owner_changed = true;
}

void np_process_set_significant(NpProcess *p, bool significant) {
        if (p->significant == significant)
                return;
        p->significant = significant;
        if (p->owner_changed)
                *p->owner_changed = true;
}

void np_process_set_decision(NpProcess *p, const char *why) {
        if (g_strcmp0(p->decision, why) == 0)
                return;
        g_free(p->decision);
        p->decision = g_strdup(why);
        mark(p, NP_PROCESS_DECISION);
}

void np_process_set_note(NpProcess *p, const char *note) {
        if (!note)
                note = "";
        if (g_strcmp0(p->note, note) == 0)
                return;
        g_free(p->note);
        p->note = g_strdup(note);
        mark(p, NP_PROCESS_DECISION);
}

char *np_process_decision_text(const NpProcess *p) {
        const char *why = p->decision ? p->decision : "";
        if (!p->note || !*p->note)
                return g_strdup(why);
        return *why ? g_strdup_printf("%s; %s", p->note, why) : g_strdup(p->note);
}

bool np_process_held(const NpProcess *p) {
        return p->state == NP_PROC_PINNED || p->state == NP_PROC_PLACED;
}

uint64_t np_process_memory_bytes(const NpProcess *p) {
        return p->maps.total_bytes ? p->maps.total_bytes : p->rss_bytes + p->hugetlb_bytes;
}

static bool masks_equal(const NpMask *a, const NpMask *b) {
        if (!a || !b)
                return a == b;
        return np_mask_equal(a, b);
}

void np_process_set_state(NpProcess *p, NpProcState state, const NpMask *target, uint64_t last_placed_usec) {
        /* what the daemon did to it changed (placed, released): its allowed
         * CPUs and nodes are read again at the next refresh */
        if (p->state != state || !masks_equal(p->target, target))
                np_details_age_invalidate(&p->details_age);
        if (p->state != state)
                mark(p, NP_PROCESS_STATE);
        if (state != NP_PROC_PLACED) {
                p->memory_only = false;
                g_clear_pointer(&p->runs_on, np_mask_free);
        }
        p->state = state;
        if (!masks_equal(p->target, target)) {
                mark(p, NP_PROCESS_TARGET_NODES);
                np_mask_free(p->target);
                p->target = target ? np_mask_copy(target) : NULL;
                p->stuck_bytes = 0; /* it was of the nodes it left */
                if (target && (state == NP_PROC_PLACED || state == NP_PROC_PINNED))
                        np_process_set_note(p, NULL); /* placed anew: what happened before is over */
        }
        if (p->last_placed_usec != last_placed_usec)
                mark(p, NP_PROCESS_LAST_PLACED);
        p->last_placed_usec = last_placed_usec;
}

void np_process_set_sample(NpProcess *p, const char *comm, double cpu_usage, uint64_t rss_bytes, uint64_t hugetlb_bytes,
                           unsigned threads) {
        uint64_t mem = np_process_memory_bytes(p);

        if (strcmp(p->comm, comm) != 0) {
                g_strlcpy(p->comm, comm, sizeof p->comm);
                mark(p, NP_PROCESS_COMM);
        }
        if (p->cpu_usage != cpu_usage)
                mark(p, NP_PROCESS_CPU_USAGE);
        p->cpu_usage = cpu_usage;
        p->rss_bytes = rss_bytes;
        p->hugetlb_bytes = hugetlb_bytes;
        p->threads = threads;
        if (np_process_memory_bytes(p) != mem)
                mark(p, NP_PROCESS_MEMORY_BYTES);
}

static char *cgroup_path_of(NpProcTable *tab, int pid, char **unit, char **systemd) {
        g_autofree char *buf = NULL;
        char *save = NULL;
        *unit = NULL;
        if (np_proc_table_read_detail(tab, pid, NP_PROC_CGROUP, &buf) < 0) {
                *unit = g_strdup("");
                *systemd = g_strdup("");
                return g_strdup("");
        }
        const char *cpuset = NULL, *unified = NULL, *named = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *c1 = strchr(line, ':');
                char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                *c2 = '\0';
                const char *ctrl = c1 + 1, *path = c2 + 1;
                if (g_str_equal(ctrl, ""))
                        unified = path;
                else if (g_str_equal(ctrl, "name=systemd"))
                        named = path;
                else {
                        g_auto(GStrv) parts = g_strsplit(ctrl, ",", -1);
                        if (g_strv_contains((const char *const *) parts, "cpuset"))
                                cpuset = path;
                }
        }
        const char *sysd = unified ? unified : named;
        if (sysd) {
                /* the outermost unit: the one the system's service manager
                 * runs (units inside a user manager or a container belong to
                 * it, and GetUnitByPID names it) */
                g_auto(GStrv) comps = g_strsplit(sysd, "/", -1);
                for (guint i = 0; comps[i]; i++)
                        if (g_str_has_suffix(comps[i], ".service") || g_str_has_suffix(comps[i], ".scope")) {
                                *unit = g_strdup(comps[i]);
                                break;
                        }
        }
        if (!*unit)
                *unit = g_strdup("");
        *systemd = g_strdup(sysd ? sysd : "");
        return g_strdup(cpuset ? cpuset : sysd ? sysd : "");
}

static void add_cpu(GArray *per_node, unsigned node, double cpu) {
        for (guint i = 0; i < per_node->len; i++) {
                NpNodeCpu *c = &g_array_index(per_node, NpNodeCpu, i);
                if (c->node == node) {
                        c->cpu += cpu;
                        return;
                }
        }
        NpNodeCpu c = { node, cpu };
        g_array_append_val(per_node, c);
}

/* The threads read so far (read_threads()). */
typedef struct {
        NpProcess *p;
        const NpTopology *t;
        GHashTable *ticks; /* tid -> utime+stime */
        GArray *threads; /* NpThreadCpu of those measured */
        NpMask *all, *busy;
        GArray *per_node;
        double secs, hz; /* secs 0: no CPU use is measured this time */
} ThreadRead;

static void take_thread(ThreadRead *r, int tid, int n, uint64_t tk) {
        g_hash_table_insert(r->ticks, GINT_TO_POINTER(tid), GSIZE_TO_POINTER((gsize) tk));
        if (n < 0)
                return;
        np_mask_set(r->all, (unsigned) n);
        gpointer prev;
        if (r->secs > 0 && r->p->thread_ticks &&
            g_hash_table_lookup_extended(r->p->thread_ticks, GINT_TO_POINTER(tid), NULL, &prev) &&
            tk >= GPOINTER_TO_SIZE(prev)) {
                double cpu = (double) (tk - GPOINTER_TO_SIZE(prev)) / r->hz / r->secs;
                add_cpu(r->per_node, (unsigned) n, cpu);
                if (r->threads) {
                        NpThreadCpu tc = { (pid_t) tid, n, cpu };
                        g_array_append_val(r->threads, tc);
                }
                if (cpu >= NP_BUSY_THREAD_CPU)
                        np_mask_set(r->busy, (unsigned) n);
        }
}

/* The node every thread of p runs on, when the daemon confined it to one:
 * placed or pinned on a single node (the backends confine every thread,
 * and new threads inherit it), and its CPUs (the leader's, as status said a
 * moment ago) still all of that node. -1 otherwise. */
static int confined_node(const NpProcess *p, const NpTopology *t) {
        if ((p->state != NP_PROC_PLACED && p->state != NP_PROC_PINNED) || !p->target ||
            np_mask_weight(p->target) != 1 || !p->cpus_allowed || np_mask_empty(p->cpus_allowed))
                return -1;
        int n = np_mask_first(p->target);
        NP_MASK_FOREACH (c, p->cpus_allowed)
                if (np_topology_node_of_cpu(t, (unsigned) c) != n)
                        return -1;
        return n;
}

/* Read every thread's stat: where each last ran and, against the previous
 * read, how much CPU it used; so running_nodes are where the busy threads
 * are and cpu_per_node where its CPU use goes. A process with one thread
 * (status said so a moment ago, and so does its stat read now through the
 * table's kept descriptor) has it all in that stat: its one thread is the
 * leader, whose task/<pid>/stat is the process's stat, so the task
 * directory is not listed and read (one pread() instead of eight calls).
 * So does a process the daemon confined to one node (confined_node()):
 * all its threads run there, so its own ticks are its CPU on that node,
 * however many threads it has. The process's ticks also count its threads
 * that exited, so they are compared only with ticks read the same way. */
/* fn(contents, data) for each readable /proc/PID/task/TID/<file> of p. */
static void each_task_file(const NpProcess *p, const char *file, void (*fn)(const char *buf, void *data), void *data) {
        g_autofree char *dir = np_path("/proc/%d/task", p->pid);
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        const char *name;
        while (d && (name = g_dir_read_name(d))) {
                g_autofree char *buf = NULL;
                if (np_read_filef(&buf, NULL, "/proc/%d/task/%s/%s", p->pid, name, file) >= 0)
                        fn(buf, data);
        }
}

static void take_task_stat(const char *buf, void *data) {
        ThreadRead *r = data;
        NpPidStat st;
        if (np_parse_pid_stat(buf, &st) == 0)
                take_thread(r, st.pid, np_topology_node_of_cpu(r->t, (unsigned) st.processor), st.utime + st.stime);
}

static void read_threads(NpProcess *p, const NpTopology *t, NpProcTable *tab) {
        g_autoptr(GHashTable) ticks = g_hash_table_new(g_direct_hash, g_direct_equal);
        g_autoptr(NpMask) all = np_mask_new();
        g_autoptr(NpMask) busy = np_mask_new();
        NpPidStat st1;
        int confined = confined_node(p, t);
        bool from_stat = (p->threads == 1 || confined >= 0) && np_proc_table_read_stat(tab, p->pid, &st1) == 0 &&
                (st1.num_threads == 1 || confined >= 0) && st1.state != 'Z' && st1.state != 'X' &&
                st1.starttime == p->starttime;
        uint64_t now = np_now_monotonic_usec();
        ThreadRead r = {
                .p = p,
                .t = t,
                .ticks = ticks,
                .all = all,
                .busy = busy,
                .per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeCpu)),
                /* (a confined process's stat is all its threads at once) */
                .threads = from_stat && confined >= 0 ? NULL : g_array_new(FALSE, FALSE, sizeof(NpThreadCpu)),
                .secs = p->threads_usec && now > p->threads_usec && p->threads_from_stat == from_stat
                        ? (double) (now - p->threads_usec) / 1e6
                        : 0.0,
                .hz = (double) np_clock_ticks(),
        };

        if (from_stat) {
                int n = confined >= 0 ? confined : np_topology_node_of_cpu(t, (unsigned) st1.processor);
                take_thread(&r, p->pid, n, st1.utime + st1.stime);
        } else {
                each_task_file(p, "stat", take_task_stat, &r);
        }
        if (np_mask_empty(all)) {
                /* no task directory readable: the process's own last CPU */
                NpPidStat st;
                if (np_read_pid_stat(p->pid, &st) == 0) {
                        int n = np_topology_node_of_cpu(t, (unsigned) st.processor);
                        if (n >= 0)
                                np_mask_set(all, (unsigned) n);
                }
        }
        np_mask_free(p->running_nodes);
        p->running_nodes = np_mask_copy(np_mask_empty(busy) ? all : busy);
        if (p->cpu_per_node)
                g_array_unref(p->cpu_per_node);
        p->cpu_per_node = r.per_node;
        if (p->thread_ticks)
                g_hash_table_unref(p->thread_ticks);
        p->thread_ticks = g_steal_pointer(&ticks);
        if (p->thread_cpu)
                g_array_unref(p->thread_cpu);
        p->thread_cpu = r.threads;
        p->threads_usec = now;
        p->threads_from_stat = from_stat;
}

void np_process_read_cgroup(NpProcess *p, NpProcTable *tab) {
        g_autofree char *unit = NULL, *systemd = NULL;
        p->may_group = -1;
        g_autofree char *cgroup = cgroup_path_of(tab, p->pid, &unit, &systemd);
        if (g_strcmp0(cgroup, p->cgroup) != 0) {
                mark(p, NP_PROCESS_CGROUP);
                g_free(p->cgroup);
                p->cgroup = g_steal_pointer(&cgroup);
        }
        g_free(p->systemd_cgroup);
        p->systemd_cgroup = g_steal_pointer(&systemd);
        if (g_strcmp0(unit, p->unit) != 0) {
                mark(p, NP_PROCESS_UNIT);
                g_free(p->unit);
                p->unit = g_steal_pointer(&unit);
        }
}

/* Is (pid, starttime) still there? Readers say -ESRCH for a missing file,
 * which is also what a kernel without numa_maps looks like. */
static bool still_there(const NpProcess *p) {
        NpPidStat st;
        return np_read_pid_stat(p->pid, &st) == 0 && st.starttime == p->starttime;
}

void np_thread_faults_clear(NpThreadFaults *t) {
        g_clear_pointer(&t->faults, g_array_unref);
}

static gint by_cpu_desc(gconstpointer a, gconstpointer b) {
        const NpThreadFaults *x = a, *y = b;
        if (x->cpu != y->cpu)
                return x->cpu > y->cpu ? -1 : 1;
        return (x->tid > y->tid) - (x->tid < y->tid);
}

int np_process_read_thread_faults(const NpProcess *p, double min_cpu, GArray **out) {
        g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(NpThreadFaults));
        g_array_set_clear_func(a, (GDestroyNotify) np_thread_faults_clear);
        for (guint i = 0; p->thread_cpu && i < p->thread_cpu->len; i++) {
                const NpThreadCpu *tc = &g_array_index(p->thread_cpu, NpThreadCpu, i);
                g_autofree char *buf = NULL;
                GArray *faults = NULL;
                if (tc->cpu < min_cpu ||
                    np_read_filef(&buf, NULL, "/proc/%d/task/%d/sched", p->pid, (int) tc->tid) < 0 ||
                    np_parse_sched_numa_faults(buf, &faults) < 0)
                        continue;
                NpThreadFaults t = { tc->tid, tc->node, tc->cpu, faults };
                g_array_append_val(a, t);
        }
        if (a->len == 0 && !still_there(p))
                return -ESRCH;
        g_array_sort(a, by_cpu_desc);
        *out = g_steal_pointer(&a);
        return 0;
}

bool np_process_has_thread(const NpProcess *p, pid_t tid) {
        return p->thread_cpu && p->thread_ticks && g_hash_table_contains(p->thread_ticks, GINT_TO_POINTER(tid));
}

static uint64_t realtime_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

void np_process_set_group(NpProcess *p, const char *group, const GArray *objects) {
        if (group && !*group)
                group = NULL;
        if (g_strcmp0(p->group, group) != 0) {
                g_free(p->group);
                p->group = g_strdup(group);
                mark(p, NP_PROCESS_GROUP);
        }
        g_clear_pointer(&p->group_objects, g_array_unref);
        if (objects && objects->len)
                p->group_objects = g_array_copy((GArray *) objects);
}

void np_process_set_group_id(NpProcess *p, unsigned id) {
        if (p->group_id == id)
                return;
        p->group_id = id;
        mark(p, NP_PROCESS_GROUP);
}

const NpShmap *np_process_shmap_of(const NpProcess *p, const NpNumaMapsShm *s) {
        for (guint i = 0; p->shmaps && i < p->shmaps->len; i++) {
                const NpShmap *m = &g_array_index(p->shmaps, NpShmap, i);
                if (m->start == s->start)
                        return m;
        }
        return NULL;
}

/* Its file mapping that starts at start, from the last maps read; NULL
 * when not known. */
static const NpFileMap *file_map_at(const NpProcess *p, uint64_t start) {
        guint lo = 0, hi = p->file_maps ? p->file_maps->len : 0;
        while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                const NpFileMap *f = &g_array_index(p->file_maps, NpFileMap, mid);
                if (f->start == start)
                        return f;
                if (f->start < start)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* After a numa_maps read: maps again when a big shmem line is not known
 * (a new mapping, or one at another address; the objects of the lines it
 * knows do not change while the mapping stays), or a big file line (whether
 * it may be written); then the file lines that may not be written leave
 * maps.balanced_bytes: the kernel's balancing does not scan them. */
static void refresh_maps(NpProcess *p) {
        bool want = false;
        for (guint i = 0; p->maps.shm && i < p->maps.shm->len && !want; i++) {
                const NpNumaMapsShm *s = &g_array_index(p->maps.shm, NpNumaMapsShm, i);
                want = s->bytes >= NP_SHM_MAPS_MIN_BYTES && !np_process_shmap_of(p, s);
        }
        for (guint i = 0; p->maps.files && i < p->maps.files->len && !want; i++) {
                const NpNumaMapsFile *f = &g_array_index(p->maps.files, NpNumaMapsFile, i);
                want = f->bytes >= NP_SHM_MAPS_MIN_BYTES && !file_map_at(p, f->start);
        }
        if (want) {
                g_autoptr(GError) e = NULL;
                GArray *got = NULL, *files = NULL;
                int r = np_read_shmaps(p->pid, &got, &files, &e);
                if (r < 0) {
                        log_debug("Cannot read /proc/%d/maps (%s): %s; its shared memory groups nothing, and its "
                                  "files count as the kernel's to move",
                                  p->pid, p->comm, e ? e->message : g_strerror(-r));
                } else {
                        if (p->shmaps)
                                g_array_unref(p->shmaps);
                        if (p->file_maps)
                                g_array_unref(p->file_maps);
                        p->shmaps = got;
                        p->file_maps = files;
                }
        } else {
                if (!p->maps.shm && p->shmaps)
                        g_clear_pointer(&p->shmaps, g_array_unref);
                if (!p->maps.files && p->file_maps)
                        g_clear_pointer(&p->file_maps, g_array_unref);
        }
        uint64_t readonly = 0;
        for (guint i = 0; p->maps.files && i < p->maps.files->len; i++) {
                const NpNumaMapsFile *f = &g_array_index(p->maps.files, NpNumaMapsFile, i);
                const NpFileMap *m = file_map_at(p, f->start);
                if (m && m->readonly)
                        readonly += f->bytes;
        }
        p->maps.balanced_bytes -= MIN(readonly, p->maps.balanced_bytes);
}

void np_process_take_maps(NpProcess *p, NpNumaMaps *maps) {
        if (!maps->per_node)
                return;
        uint64_t mem_before = np_process_memory_bytes(p);
        if (!np_node_bytes_equal(p->maps.per_node, maps->per_node))
                mark(p, NP_PROCESS_MEMORY_PER_NODE);
        np_numa_maps_clear(&p->maps);
        p->maps = *maps;
        *maps = (NpNumaMaps){ 0 };
        p->maps_error = 0;
        refresh_maps(p);
        if (np_process_memory_bytes(p) != mem_before)
                mark(p, NP_PROCESS_MEMORY_BYTES);
        np_maps_age_read(&p->maps_age, np_process_scan_memory(p), p->cpu_ticks, realtime_usec());
}

/* The process did not run since its threads were last read: it used no CPU
 * on any node since (the next read measures over the whole time). */
static void threads_idle(NpProcess *p) {
        for (guint i = 0; p->cpu_per_node && i < p->cpu_per_node->len; i++)
                g_array_index(p->cpu_per_node, NpNodeCpu, i).cpu = 0.0;
}

/* /proc/PID/status, through the table's kept descriptor when it has one. */
static int read_status(NpProcTable *tab, int pid, NpPidStatus *out) {
        g_autofree char *buf = NULL;
        int r = np_proc_table_read_detail(tab, pid, NP_PROC_STATUS, &buf);
        return r < 0 ? r : np_parse_pid_status(buf, out);
}

/* Its cpuset allows one memory node and every page of the last numa_maps
 * read was there, but for those its last move left elsewhere (stuck_bytes)
 * (np-maps-refresh.h). */
static bool memory_settled(const NpProcess *p) {
        if (!p->mems_allowed || np_mask_weight(p->mems_allowed) != 1 || !p->maps.per_node || p->maps_error)
                return false;
        int n = np_mask_first(p->mems_allowed);
        return n >= 0 && np_numa_maps_node_bytes(&p->maps, (unsigned) n) + p->stuck_bytes >= p->maps.total_bytes;
}

static void add_task_migrated(const char *buf, void *data) {
        uint64_t *sum = data, pages;
        if (np_parse_sched_numa_migrated(buf, &pages) == 0 && pages <= UINT64_MAX - *sum)
                *sum += pages;
}

void np_process_read_kernel_migrated(NpProcess *p) {
        uint64_t sum = 0;
        each_task_file(p, "sched", add_task_migrated, &sum);
        p->kernel_migrated_bytes = sum * (uint64_t) sysconf(_SC_PAGESIZE);
}

uint64_t np_process_age_usec(const NpProcess *p) {
        struct timespec ts;
        long hz = sysconf(_SC_CLK_TCK);
        if (!p->starttime || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
                return 0;
        uint64_t now = (uint64_t) ts.tv_sec * G_USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
        uint64_t start = p->starttime * G_USEC_PER_SEC / (uint64_t) hz;
        return now > start ? now - start : 0;
}

void np_process_note_kernel_migrated(NpProcess *p, uint64_t now_usec, uint64_t window_usec, uint64_t age_usec) {
        np_process_read_kernel_migrated(p);
        if (!p->kernel_seen)
                p->kernel_seen = g_array_new(FALSE, FALSE, sizeof(NpKernelSeen));
        /* its threads' counts began at 0 when they started */
        if (!p->kernel_seen->len && age_usec && age_usec < window_usec && age_usec < now_usec) {
                NpKernelSeen origin = { now_usec - age_usec, 0 };
                g_array_append_val(p->kernel_seen, origin);
        }
        NpKernelSeen k = { now_usec, p->kernel_migrated_bytes };
        g_array_append_val(p->kernel_seen, k);
        /* drop the readings older than the newest one at least window_usec old */
        guint keep = 0;
        for (guint i = 0; i < p->kernel_seen->len; i++)
                if (g_array_index(p->kernel_seen, NpKernelSeen, i).usec + window_usec <= now_usec)
                        keep = i;
        if (keep)
                g_array_remove_range(p->kernel_seen, 0, keep);
}

uint64_t np_process_kernel_churn(const NpProcess *p, uint64_t *span_usec) {
        if (span_usec)
                *span_usec = 0;
        if (!p->kernel_seen || p->kernel_seen->len < 2)
                return 0;
        const NpKernelSeen *first = &g_array_index(p->kernel_seen, NpKernelSeen, 0);
        const NpKernelSeen *last = &g_array_index(p->kernel_seen, NpKernelSeen, p->kernel_seen->len - 1);
        if (span_usec)
                *span_usec = last->usec - first->usec;
        return last->bytes > first->bytes ? last->bytes - first->bytes : 0;
}

int np_process_refresh(NpProcess *p, const NpTopology *t, NpProcTable *tab, unsigned maps_max_scans) {
        /* status, threads and cgroup: when it ran, or by the age rule, or
         * always before a move (np-maps-refresh.h) */
        bool details = maps_max_scans == NP_MAPS_NOW ||
                np_details_due(&p->details_age, p->cpu_ticks, p->threads, maps_max_scans);
        NpPidStatus status = { 0 };
        int r = details ? read_status(tab, p->pid, &status) : 1;
        if (r == -ESRCH || (r < 0 && !still_there(p)))
                return -ESRCH;
        if (r == 0) {
                np_mask_free(p->cpus_allowed);
                np_mask_free(p->mems_allowed);
                p->cpus_allowed = g_steal_pointer(&status.cpus_allowed);
                p->mems_allowed = g_steal_pointer(&status.mems_allowed);
                p->threads = status.threads;
                if (status.hugetlb_bytes != p->hugetlb_bytes && !p->maps.total_bytes)
                        mark(p, NP_PROCESS_MEMORY_BYTES);
                p->hugetlb_bytes = status.hugetlb_bytes;
                np_pid_status_clear(&status);
        } else if (r < 0) {
                log_debug("Cannot read /proc/%d/status: %s; keeping what was known", p->pid, g_strerror(-r));
        }

        uint64_t mem_before = np_process_memory_bytes(p);
        bool had_maps = p->maps.per_node && !p->maps_error;
        NpMapsDue due = maps_max_scans == NP_MAPS_NOW
                ? NP_MAPS_DUE_NEW
                : np_maps_refresh_due(&p->maps_age, np_process_scan_memory(p), p->cpu_ticks, maps_max_scans,
                                      memory_settled(p) || p->pages_from_group);
        if (due == NP_MAPS_KEEP) {
                np_maps_age_scan(&p->maps_age);
        } else {
                log_debug("Read numa_maps of %d (%s): %s", p->pid, p->comm, np_maps_due_to_string(due));
                NpNumaMaps maps = { 0 };
                p->maps_reads++;
                r = np_read_numa_maps(p->pid, &maps);
                if (r == -ESRCH && !still_there(p)) {
                        np_numa_maps_clear(&maps);
                        return -ESRCH;
                }
                if (r < 0) {
                        np_numa_maps_clear(&maps);
                        if (p->maps_error != r)
                                log_debug("Cannot read /proc/%d/numa_maps (%s): %s; where its memory is stays unknown",
                                          p->pid, p->comm, r == -ESRCH ? "no such file" : g_strerror(-r));
                        p->maps_error = r;
                        if (p->maps.per_node && p->maps.per_node->len)
                                mark(p, NP_PROCESS_MEMORY_PER_NODE);
                        np_numa_maps_clear(&p->maps);
                } else {
                        p->maps_error = 0;
                        if (!np_node_bytes_equal(p->maps.per_node, maps.per_node))
                                mark(p, NP_PROCESS_MEMORY_PER_NODE);
                        np_numa_maps_clear(&p->maps);
                        p->maps = maps;
                        refresh_maps(p);
                }
                if (np_process_memory_bytes(p) != mem_before)
                        mark(p, NP_PROCESS_MEMORY_BYTES);
                np_maps_age_read(&p->maps_age, np_process_scan_memory(p), p->cpu_ticks, realtime_usec());
                p->maps_age.starting = !np_process_cpu_settled(p);
        }

        if (details) {
                read_threads(p, t, tab);
                np_process_read_cgroup(p, tab);
                np_details_age_read(&p->details_age, p->cpu_ticks, p->threads);
        } else {
                threads_idle(p);
                np_details_age_scan(&p->details_age);
        }
        if (due != NP_MAPS_KEEP)
                p->locality_prev = had_maps ? p->locality : -1.0;
        uint64_t local = 0;
        NP_MASK_FOREACH (n, p->running_nodes)
                local += np_numa_maps_node_bytes(&p->maps, (unsigned) n);
        double locality = p->maps.total_bytes ? (double) local / (double) p->maps.total_bytes : 1.0;
        if (locality != p->locality)
                mark(p, NP_PROCESS_LOCALITY);
        p->locality = locality;
        return 0;
}
