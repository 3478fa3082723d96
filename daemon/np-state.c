/* The backend's state file: see np-state.h for the format and contract. */
#include "np-state.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "np-log.h"

#define STATE_GROUP "numaplaced"
#define STATE_VERSION 1
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
        pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

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

NpStateThread *np_state_process_add_thread(NpStateProcess *p, pid_t tid, const char *cgroup,
                                           const NpMask *affinity) {
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

int np_state_save(const NpState *s, GError **error) {
        g_autoptr(GKeyFile) kf = NULL;
        g_autoptr(GArray) pids = NULL;
        g_autofree char *data = NULL;
        gsize len = 0;

        if (np_state_count(s) == 0) {
                int r = np_state_unlink(s);
                if (r < 0)
                        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                                    "Cannot remove state file %s: %s", s->path, g_strerror(-r));
                return r;
        }

        kf = g_key_file_new();
        g_key_file_set_integer(kf, STATE_GROUP, "Version", STATE_VERSION);
        if (s->hierarchy)
                g_key_file_set_string(kf, STATE_GROUP, "Hierarchy", s->hierarchy);
        if (s->cgroup_mode)
                g_key_file_set_string(kf, STATE_GROUP, "CgroupMode", s->cgroup_mode);

        pids = np_state_pids(s);
        for (guint i = 0; i < pids->len; i++) {
                const NpStateProcess *p = np_state_lookup(s, g_array_index(pids, pid_t, i));
                g_autofree char *group = g_strdup_printf(PROCESS_PREFIX "%d", (int)p->pid);
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
                        g_autofree char *kc = g_strdup_printf("Thread.%d.Cgroup", (int)t->tid);
                        g_autofree char *ka = g_strdup_printf("Thread.%d.Affinity", (int)t->tid);

                        tids[j] = t->tid;
                        if (t->cgroup)
                                g_key_file_set_string(kf, group, kc, t->cgroup);
                        set_mask(kf, group, ka, t->affinity);
                }
                g_key_file_set_integer_list(kf, group, "Threads", tids, p->threads->len);
        }

        data = g_key_file_to_data(kf, &len, NULL);
        /* g_file_set_contents_full() writes a temporary file in the same
         * directory, fsyncs it and renames it over the target. */
        if (!g_file_set_contents_full(s->path, data, (gssize)len, G_FILE_SET_CONTENTS_CONSISTENT,
                                      0600, error))
                return -EIO;
        return 0;
}

int np_state_unlink(const NpState *s) {
        if (g_unlink(s->path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static int get_mask(GKeyFile *kf, const char *group, const char *key, NpMask **out) {
        g_autofree char *v = g_key_file_get_string(kf, group, key, NULL);

        *out = NULL;
        if (!v)
                return 0;
        return np_mask_parse(v, out);
}

static int load_process(GKeyFile *kf, const char *group, NpState *s) {
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
        if (get_mask(kf, group, "OriginalAffinity", &p->orig_affinity) < 0)
                goto fail;
        if (get_mask(kf, group, "Nodes", &m) < 0)
                goto fail;
        if (m) {
                np_mask_free(p->nodes);
                p->nodes = m;
        }
        if (get_mask(kf, group, "CPUs", &m) < 0)
                goto fail;
        if (m) {
                np_mask_free(p->cpus);
                p->cpus = m;
        }

        tids = g_key_file_get_integer_list(kf, group, "Threads", &ntids, NULL);
        for (gsize i = 0; i < ntids; i++) {
                g_autofree char *kc = g_strdup_printf("Thread.%d.Cgroup", tids[i]);
                g_autofree char *ka = g_strdup_printf("Thread.%d.Affinity", tids[i]);
                g_autofree char *cg = g_key_file_get_string(kf, group, kc, NULL);
                g_autoptr(NpMask) aff = NULL;

                if (tids[i] <= 0 || get_mask(kf, group, ka, &aff) < 0)
                        goto fail;
                np_state_process_add_thread(p, tids[i], cg, aff);
        }
        return 0;
fail:
        np_state_remove(s, pid);
        return -EINVAL;
}

int np_state_load(const char *path, NpState **out, GError **error) {
        g_autoptr(GKeyFile) kf = g_key_file_new();
        g_autoptr(GError) e = NULL;
        g_autoptr(NpState) s = NULL;
        g_auto(GStrv) groups = NULL;

        if (!g_key_file_load_from_file(kf, path, G_KEY_FILE_NONE, &e)) {
                if (g_error_matches(e, G_FILE_ERROR, G_FILE_ERROR_NOENT))
                        return -ENOENT;
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "Cannot read state file %s: %s",
                            path, e->message);
                return g_error_matches(e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE) ? -EINVAL : -EIO;
        }

        s = np_state_new(path);
        {
                g_autofree char *h = g_key_file_get_string(kf, STATE_GROUP, "Hierarchy", NULL);
                g_autofree char *m = g_key_file_get_string(kf, STATE_GROUP, "CgroupMode", NULL);
                np_state_set_hierarchy(s, h, m);
        }

        groups = g_key_file_get_groups(kf, NULL);
        for (char **g = groups; *g; g++) {
                if (!g_str_has_prefix(*g, PROCESS_PREFIX))
                        continue;
                if (load_process(kf, *g, s) < 0)
                        log_warning("State file %s: ignoring malformed record [%s]", path, *g);
        }

        *out = g_steal_pointer(&s);
        return 0;
}
