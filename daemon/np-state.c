/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The backend's state file: see np-state.h for the format and contract. */
#include "np-state.h"

#include <dirent.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_GROUP "numaplaced"
#define PROCESS_PREFIX "process "

static void thread_free(gpointer data) {
        NpStateThread *t = data;

        if (!t)
                return;
        g_free(t->cgroup);
        np_mask_free(t->affinity);
        g_free(t);
}

static void process_free(gpointer data) {
        NpStateProcess *p = data;

        if (!p)
                return;
        g_free(p->cgroup);
        g_free(p->orig_cgroup);
        np_mask_free(p->orig_affinity);
        np_mask_free(p->nodes);
        np_mask_free(p->cpus);
        g_ptr_array_unref(p->threads);
        g_hash_table_unref(p->extra);
        g_free(p->old_cgroup);
        g_free(p);
}

const char *np_state_backend_to_string(NpBackendKind k) {
        switch (k) {
        case NP_BACKEND_CPUSET:
                return "cpuset";
        case NP_BACKEND_AFFINITY:
                return "affinity";
        case NP_BACKEND_SYSTEMD:
                return "systemd";
        case NP_BACKEND_AUTO:
        default:
                return "auto";
        }
}

int np_state_backend_from_string(const char *s, NpBackendKind *out) {
        if (g_strcmp0(s, "cpuset") == 0)
                *out = NP_BACKEND_CPUSET;
        else if (g_strcmp0(s, "affinity") == 0)
                *out = NP_BACKEND_AFFINITY;
        else if (g_strcmp0(s, "systemd") == 0)
                *out = NP_BACKEND_SYSTEMD;
        else
                return -EINVAL;
        return 0;
}

NpState *np_state_new(const char *path) {
        NpState *s = g_new0(NpState, 1);

        s->path = g_strdup(path);
        s->procs = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, process_free);
        return s;
}

void np_state_free(NpState *s) {
        if (!s)
                return;
        g_free(s->path);
        g_free(s->hierarchy);
        g_free(s->cgroup_mode);
        g_hash_table_unref(s->procs);
        g_free(s);
}

void np_state_set_hierarchy(NpState *s, const char *hierarchy, const char *cgroup_mode) {
        g_free(s->hierarchy);
        g_free(s->cgroup_mode);
        s->hierarchy = g_strdup(hierarchy);
        s->cgroup_mode = g_strdup(cgroup_mode);
}

guint np_state_count(const NpState *s) {
        return g_hash_table_size(s->procs);
}

NpStateProcess *np_state_lookup(const NpState *s, pid_t pid) {
        return g_hash_table_lookup(s->procs, GINT_TO_POINTER(pid));
}

static gint pid_cmp(gconstpointer a, gconstpointer b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

GArray *np_state_pids(const NpState *s) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(pid_t));
        GHashTableIter it;
        gpointer key;

        g_hash_table_iter_init(&it, s->procs);
        while (g_hash_table_iter_next(&it, &key, NULL)) {
                pid_t pid = GPOINTER_TO_INT(key);
                g_array_append_val(a, pid);
        }
        g_array_sort(a, pid_cmp);
        return a;
}

NpStateProcess *np_state_add(NpState *s, pid_t pid, uint64_t starttime, NpBackendKind backend) {
        NpStateProcess *p = g_new0(NpStateProcess, 1);

        p->pid = pid;
        p->starttime = starttime;
        p->backend = backend;
        p->nodes = np_mask_new();
        p->cpus = np_mask_new();
        p->threads = g_ptr_array_new_with_free_func(thread_free);
        p->extra = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_hash_table_replace(s->procs, GINT_TO_POINTER(pid), p);
        return p;
}

bool np_state_remove(NpState *s, pid_t pid) {
        return g_hash_table_remove(s->procs, GINT_TO_POINTER(pid));
}

NpStateThread *np_state_process_thread(const NpStateProcess *p, pid_t tid) {
        for (guint i = 0; i < p->threads->len; i++) {
                NpStateThread *t = g_ptr_array_index(p->threads, i);
                if (t->tid == tid)
                        return t;
        }
        return NULL;
}

NpStateThread *np_state_process_add_thread(NpStateProcess *p, pid_t tid, const char *cgroup, const NpMask *affinity) {
        NpStateThread *t = np_state_process_thread(p, tid);

        if (t)
                return t;
        t = g_new0(NpStateThread, 1);
        t->tid = tid;
        t->cgroup = g_strdup(cgroup);
        t->affinity = affinity ? np_mask_copy(affinity) : NULL;
        g_ptr_array_add(p->threads, t);
        return t;
}

static void set_mask(GKeyFile *kf, const char *group, const char *key, const NpMask *m) {
        g_autofree char *s = NULL;

        if (!m)
                return;
        s = np_mask_format(m);
        g_key_file_set_string(kf, group, key, s);
}

/* Keys np-state itself reads and writes; any other key of a record is a
 * mechanism's own and goes to p->extra. */
static bool is_known_key(const char *key) {
        static const char *const known[] = { "Pid",    "StartTime",      "Backend",
                                             "Cgroup", "OriginalCgroup", "OriginalAffinity",
                                             "Nodes",  "CPUs",           "Threads",
                                             NULL };
        return g_strv_contains(known, key) || g_str_has_prefix(key, "Thread.");
}

static void save_extra(GKeyFile *kf, const char *group, const NpStateProcess *p) {
        g_autoptr(GList) keys = g_hash_table_get_keys(p->extra);

        keys = g_list_sort(keys, (GCompareFunc) strcmp);
        for (GList *l = keys; l; l = l->next) {
                if (is_known_key(l->data))
                        continue; /* never let a mechanism's key shadow a common one */
                g_key_file_set_string(kf, group, l->data, g_hash_table_lookup(p->extra, l->data));
        }
}

char *np_state_to_data(const NpState *s, size_t *len) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autoptr(GArray) pids = NULL;
        gsize n = 0;
        char *data;

        g_key_file_set_integer(kf, STATE_GROUP, "Version", NP_STATE_VERSION);
        if (s->hierarchy)
                g_key_file_set_string(kf, STATE_GROUP, "Hierarchy", s->hierarchy);
        if (s->cgroup_mode)
                g_key_file_set_string(kf, STATE_GROUP, "CgroupMode", s->cgroup_mode);

        pids = np_state_pids(s);
        for (guint i = 0; i < pids->len; i++) {
                const NpStateProcess *p = np_state_lookup(s, g_array_index(pids, pid_t, i));
                g_autofree char *group = g_strdup_printf(PROCESS_PREFIX "%d", (int) p->pid);
                g_autofree gint *tids = g_new0(gint, p->threads->len + 1);

                g_key_file_set_integer(kf, group, "Pid", p->pid);
                g_key_file_set_uint64(kf, group, "StartTime", p->starttime);
                g_key_file_set_string(kf, group, "Backend", np_state_backend_to_string(p->backend));
                if (p->cgroup)
                        g_key_file_set_string(kf, group, "Cgroup", p->cgroup);
                if (p->orig_cgroup)
                        g_key_file_set_string(kf, group, "OriginalCgroup", p->orig_cgroup);
                set_mask(kf, group, "OriginalAffinity", p->orig_affinity);
                set_mask(kf, group, "Nodes", p->nodes);
                set_mask(kf, group, "CPUs", p->cpus);
                for (guint j = 0; j < p->threads->len; j++) {
                        const NpStateThread *t = g_ptr_array_index(p->threads, j);
                        g_autofree char *kc = g_strdup_printf("Thread.%d.Cgroup", (int) t->tid);
                        g_autofree char *ka = g_strdup_printf("Thread.%d.Affinity", (int) t->tid);

                        tids[j] = t->tid;
                        if (t->cgroup)
                                g_key_file_set_string(kf, group, kc, t->cgroup);
                        set_mask(kf, group, ka, t->affinity);
                }
                g_key_file_set_integer_list(kf, group, "Threads", tids, p->threads->len);
                save_extra(kf, group, p);
        }

        data = g_key_file_to_data(kf, &n, NULL);
        if (len)
                *len = n;
        return data;
}

int np_state_save(const NpState *s, GError **error) {
        g_autofree char *data = NULL;
        size_t len = 0;

        if (np_state_count(s) == 0) {
                int r = np_state_unlink(s);
                if (r < 0)
                        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "Cannot remove state file %s: %s",
                                    s->path, g_strerror(-r));
                return r;
        }

        data = np_state_to_data(s, &len);
        /* g_file_set_contents_full() writes a temporary file "<path>.XXXXXX"
         * in the same directory, fsyncs it and renames it over the target;
         * a crash in between leaves the temporary file, which
         * np_state_remove_stale_temporaries() deletes at the next start. */
        if (!g_file_set_contents_full(s->path, data, (gssize) len, G_FILE_SET_CONTENTS_CONSISTENT, 0600, error))
                return -EIO;
        return 0;
}

int np_state_unlink(const NpState *s) {
        struct stat sb;

        if (g_unlink(s->path) == 0 || errno == ENOENT)
                return 0;
        /* a read-only file system refuses even to remove what is not there */
        if (lstat(s->path, &sb) < 0 && errno == ENOENT)
                return 0;
        return -errno;
}

int np_state_check_writable(const char *path) {
        g_autofree char *dir = g_path_get_dirname(path);

        if (access(dir, W_OK) < 0)
                return -errno;
        if (access(path, W_OK) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/* An optional mask key: absent or malformed gives NULL (malformed counts
 * as damage). */
static NpMask *get_mask(GKeyFile *kf, const char *group, const char *key, NpStateReport *rep) {
        g_autofree char *v = g_key_file_get_string(kf, group, key, NULL);
        NpMask *m = NULL;

        if (!v)
                return NULL;
        if (np_mask_parse(v, &m) < 0) {
                rep->damaged_fields++;
                return NULL;
        }
        return m;
}

static void load_thread(GKeyFile *kf, const char *group, NpStateProcess *p, pid_t tid, NpStateReport *rep) {
        g_autofree char *kc = g_strdup_printf("Thread.%d.Cgroup", (int) tid);
        g_autofree char *ka = g_strdup_printf("Thread.%d.Affinity", (int) tid);
        g_autofree char *cg = g_key_file_get_string(kf, group, kc, NULL);
        g_autoptr(NpMask) aff = get_mask(kf, group, ka, rep);

        np_state_process_add_thread(p, tid, cg, aff);
}

/* One [process N] group. A record needs its identity (Pid, StartTime) and
 * the mechanism that recorded it (Backend): without them nothing can be put
 * back safely, and the record is skipped (-EINVAL). Anything else that does
 * not parse is left out of the record and counted as damage: recovery then
 * falls back to the mechanism's defaults for what is missing. */
static int load_process(GKeyFile *kf, const char *group, NpState *s, NpStateReport *rep) {
        g_auto(GStrv) keys = NULL;
        g_autofree char *backend = NULL;
        g_autofree gint *tids = NULL;
        g_autoptr(GError) e = NULL;
        NpBackendKind kind;
        NpStateProcess *p;
        gsize ntids = 0;
        guint64 starttime;
        gint pid;
        NpMask *m;

        pid = g_key_file_get_integer(kf, group, "Pid", &e);
        if (e || pid <= 0)
                return -EINVAL;
        starttime = g_key_file_get_uint64(kf, group, "StartTime", &e);
        if (e)
                return -EINVAL;
        backend = g_key_file_get_string(kf, group, "Backend", NULL);
        if (np_state_backend_from_string(backend, &kind) < 0)
                return -EINVAL;

        p = np_state_add(s, pid, starttime, kind);
        p->cgroup = g_key_file_get_string(kf, group, "Cgroup", NULL);
        p->orig_cgroup = g_key_file_get_string(kf, group, "OriginalCgroup", NULL);
        p->orig_affinity = get_mask(kf, group, "OriginalAffinity", rep);
        if ((m = get_mask(kf, group, "Nodes", rep))) {
                np_mask_free(p->nodes);
                p->nodes = m;
        }
        if ((m = get_mask(kf, group, "CPUs", rep))) {
                np_mask_free(p->cpus);
                p->cpus = m;
        }

        /* The threads: those Threads= lists, then any other that has a
         * Thread.<tid>.* key (so a damaged Threads= line loses nothing). */
        tids = g_key_file_get_integer_list(kf, group, "Threads", &ntids, &e);
        if (e && !g_error_matches(e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND))
                rep->damaged_fields++;
        for (gsize i = 0; i < ntids; i++) {
                if (tids[i] <= 0)
                        rep->damaged_fields++;
                else
                        load_thread(kf, group, p, tids[i], rep);
        }
        keys = g_key_file_get_keys(kf, group, NULL, NULL);
        for (char **k = keys; k && *k; k++) {
                const char *t = *k + strlen("Thread.");
                char *end = NULL;
                long tid;

                if (!g_str_has_prefix(*k, "Thread.") || !g_ascii_isdigit(*t))
                        continue;
                errno = 0;
                tid = strtol(t, &end, 10);
                if (errno == 0 && *end == '.' && tid > 0 && tid <= G_MAXINT && !np_state_process_thread(p, (pid_t) tid))
                        load_thread(kf, group, p, (pid_t) tid, rep);
        }

        for (char **k = keys; k && *k; k++) {
                char *v;

                if (is_known_key(*k))
                        continue;
                v = g_key_file_get_string(kf, group, *k, NULL);
                if (v)
                        g_hash_table_replace(p->extra, g_strdup(*k), v);
                else
                        rep->damaged_fields++; /* not UTF-8, or a bad escape */
        }
        return 0;
}

/* Does GKeyFile accept this one line, under a group header when it is not
 * one itself? */
static bool line_is_key_file(const char *line, size_t n, bool is_header) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autoptr(GString) text = g_string_new(is_header ? "" : "[g]\n");

        g_string_append_len(text, line, (gssize) n);
        g_string_append_c(text, '\n');
        return g_key_file_load_from_data(kf, text->str, text->len, G_KEY_FILE_NONE, NULL);
}

/*
 * Keep what GKeyFile can read of a damaged file: a last line without its
 * newline is cut; a line that is not key-file syntax is dropped, and so is
 * every key after an unreadable [group] header (they would otherwise land
 * in the group before it and mix two records).
 */
static GString *salvage(const char *data, size_t len, NpStateReport *rep) {
        GString *out = g_string_sized_new(len);
        bool in_group = false, dropping = false;
        const char *p = data, *end = data + len;

        if (len > 0 && data[len - 1] != '\n') {
                const char *last = memrchr(data, '\n', len);

                rep->truncated = true;
                rep->dropped_lines++;
                end = last ? last + 1 : data;
        }
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = (size_t) ((nl ? nl : end) - p);
                const char *s = p;
                bool ok;

                p = nl ? nl + 1 : end;
                while (n > 0 && g_ascii_isspace(*s))
                        s++, n--;
                if (n == 0 || *s == '#')
                        continue;
                if (memchr(s, '\0', n) || !g_utf8_validate(s, (gssize) n, NULL)) {
                        rep->dropped_lines++;
                        if (*s == '[')
                                dropping = true;
                        continue;
                }
                if (*s == '[') {
                        ok = line_is_key_file(s, n, true);
                        dropping = !ok;
                        in_group = in_group || ok;
                } else
                        ok = in_group && !dropping && line_is_key_file(s, n, false);
                if (!ok) {
                        rep->dropped_lines++;
                        continue;
                }
                g_string_append_len(out, s, (gssize) n);
                g_string_append_c(out, '\n');
        }
        return out;
}

NpState *np_state_parse(const char *path, const char *data, size_t len, NpStateReport *report) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autoptr(NpState) s = np_state_new(path);
        g_auto(GStrv) groups = NULL;
        NpStateReport rep = { .version = -1 };

        if (len > 0 && data[len - 1] == '\n' && !memchr(data, '\0', len) &&
            g_key_file_load_from_data(kf, data, len, G_KEY_FILE_NONE, NULL)) {
                /* the ordinary case: a file this daemon wrote */
        } else {
                g_autoptr(GString) kept = salvage(data, len, &rep);

                g_key_file_free(kf);
                kf = g_key_file_new();
                if (!g_key_file_load_from_data(kf, kept->str, kept->len, G_KEY_FILE_NONE, NULL))
                        g_warn_if_reached(); /* every kept line was checked */
        }

        {
                g_autoptr(GError) e = NULL;
                gint v = g_key_file_get_integer(kf, STATE_GROUP, "Version", &e);
                g_autofree char *h = g_key_file_get_string(kf, STATE_GROUP, "Hierarchy", NULL);
                g_autofree char *m = g_key_file_get_string(kf, STATE_GROUP, "CgroupMode", NULL);

                rep.version = e ? -1 : v;
                np_state_set_hierarchy(s, h, m);
        }

        groups = g_key_file_get_groups(kf, NULL);
        for (char **g = groups; *g; g++) {
                if (!g_str_has_prefix(*g, PROCESS_PREFIX))
                        continue;
                if (load_process(kf, *g, s, &rep) < 0)
                        rep.skipped_records++;
        }
        if (report)
                *report = rep;
        return g_steal_pointer(&s);
}

int np_state_load(const char *path, NpState **out, NpStateReport *report, GError **error) {
        g_autofree char *data = NULL;
        g_autoptr(GError) e = NULL;
        gsize len = 0;

        if (!g_file_get_contents(path, &data, &len, &e)) {
                int r = e->domain == G_FILE_ERROR && e->code == G_FILE_ERROR_NOENT ? -ENOENT : -EIO;

                if (r == -ENOENT)
                        return r;
                g_set_error(error, G_FILE_ERROR, e->domain == G_FILE_ERROR ? e->code : G_FILE_ERROR_FAILED,
                            "Cannot read state file %s: %s", path, e->message);
                return r;
        }
        *out = np_state_parse(path, data, len, report);
        return 0;
}

bool np_state_report_damaged(const NpStateReport *r) {
        return r->truncated || r->dropped_lines || r->skipped_records || r->damaged_fields ||
                r->version != NP_STATE_VERSION;
}

char *np_state_report_describe(const NpStateReport *r) {
        GString *s = g_string_new(NULL);

#define SEP() (s->len ? ", " : "")
        if (r->truncated)
                g_string_append_printf(s, "%struncated (no newline at the end)", SEP());
        if (r->dropped_lines)
                g_string_append_printf(s, "%s%u unreadable line%s dropped", SEP(), r->dropped_lines,
                                       r->dropped_lines == 1 ? "" : "s");
        if (r->skipped_records)
                g_string_append_printf(s, "%s%u record%s without a usable Pid, StartTime or Backend skipped", SEP(),
                                       r->skipped_records, r->skipped_records == 1 ? "" : "s");
        if (r->damaged_fields)
                g_string_append_printf(s, "%s%u malformed value%s ignored", SEP(), r->damaged_fields,
                                       r->damaged_fields == 1 ? "" : "s");
        if (r->version < 0)
                g_string_append_printf(s, "%sno readable Version (this numaplaced writes %d)", SEP(), NP_STATE_VERSION);
        else if (r->version != NP_STATE_VERSION)
                g_string_append_printf(s, "%sVersion=%d (this numaplaced writes %d; read as version %d)", SEP(),
                                       r->version, NP_STATE_VERSION, NP_STATE_VERSION);
#undef SEP
        return g_string_free(s, false);
}

int np_state_remove_stale_temporaries(const char *path) {
        g_autofree char *dir = g_path_get_dirname(path);
        g_autofree char *base = g_path_get_basename(path);
        size_t blen = strlen(base);
        DIR *d = opendir(dir);
        int n = 0;

        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                const char *name = de->d_name;
                g_autofree char *full = NULL;

                /* "<base>." and exactly six characters, as g_mkstemp() makes */
                if (strlen(name) != blen + 7 || strncmp(name, base, blen) != 0 || name[blen] != '.')
                        continue;
                full = g_build_filename(dir, name, NULL);
                if (unlink(full) == 0)
                        n++;
        }
        closedir(d);
        return n;
}
