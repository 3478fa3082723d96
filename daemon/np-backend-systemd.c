/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The systemd mechanism: on cgroup v2 machines where systemd (PID 1) owns the
 * cgroup tree, the daemon does not write cgroups itself; it asks systemd to
 * set AllowedCPUs= (confine) and, after its own migration plan has run,
 * AllowedMemoryNodes= (finish) on the unit holding the process, as runtime
 * properties. restore() sets both back to the originals recorded in the
 * state file (Unit=, SystemdAllowedCPUs=, SystemdAllowedMemoryNodes=, as
 * kernel lists; "" = no restriction).
 *
 * Calls are synchronous, bounded by NP_SYSTEMD_TIMEOUT_USEC: systemd answers
 * them in milliseconds. The exception is AllowedMemoryNodes= in finish(),
 * which PID 1 applies on cgroup v2 by writing cpuset.mems, a write that
 * returns once the kernel has moved the unit's memory (seconds for a few
 * hundred MB): with the daemon's event loop attached it is sent without
 * waiting; when the answer comes the daemon is told the unit's processes'
 * pages moved (np_backend_notify_moved()), and an error or no answer in
 * time is logged. The value is taken as set either way.
 *
 * Several processes of one unit: the second record of a unit reuses the
 * originals of an existing record (the unit then already carries the
 * daemon's values), and restore() leaves the unit alone while another record
 * of the same unit remains.
 */
#include <errno.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "np-backend-private.h"
#include "np-log.h"

#define NP_SYSTEMD_TIMEOUT_USEC (5 * G_USEC_PER_SEC)
#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER "org.freedesktop.systemd1.Manager"

#define KEY_UNIT "Unit"
#define KEY_CPUS "SystemdAllowedCPUs"
#define KEY_MEMS "SystemdAllowedMemoryNodes"

static void bus_free(void *data) {
        if (data)
                sd_bus_flush_close_unref(data);
}

static int op_probe(NpBackend *b, NpMechanism *m, char **why) {
        struct statfs fs;
        sd_bus *bus = NULL;
        int r;

        if (access("/run/systemd/system", F_OK) < 0) {
                *why = g_strdup("systemd is not PID 1 (no /run/systemd/system)");
                return -ENOTSUP;
        }
        if (statfs("/sys/fs/cgroup", &fs) < 0 || fs.f_type != CGROUP2_SUPER_MAGIC) {
                *why = g_strdup("the cgroup hierarchy is not v2 unified (cgroup v1 or hybrid)");
                return -ENOTSUP;
        }
        r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_set_method_call_timeout(bus, NP_SYSTEMD_TIMEOUT_USEC);
        if (r >= 0) {
                /* does systemd answer? */
                sd_bus_error e = SD_BUS_ERROR_NULL;
                char *v = NULL;
                r = sd_bus_get_property_string(bus, SD_DEST, SD_PATH, SD_MANAGER, "Version", &e, &v);
                if (r < 0)
                        *why = g_strdup_printf("no system bus: systemd does not answer: %s",
                                               e.message ? e.message : g_strerror(-r));
                free(v);
                sd_bus_error_free(&e);
        } else {
                *why = g_strdup_printf("no system bus: %s", g_strerror(-r));
        }
        if (r < 0) {
                if (bus)
                        sd_bus_flush_close_unref(bus);
                return -ENOTSUP;
        }
        m->data = bus;
        return 0;
}

/* The unit's type interface from its name, NULL for units the mechanism
 * does not handle. */
static const char *unit_interface(const char *unit) {
        if (g_str_has_suffix(unit, ".service"))
                return "org.freedesktop.systemd1.Service";
        if (g_str_has_suffix(unit, ".scope"))
                return "org.freedesktop.systemd1.Scope";
        return NULL;
}

/* The unit's AllowedCPUs=/AllowedMemoryNodes= apply to all its processes;
 * init.scope and the daemon's own unit are not changed. */
static NpUnitRole op_unit_role(const NpMechanism *m, const char *unit, const char *self_unit) {
        if (g_str_equal(unit, "init.scope") || (self_unit && self_unit[0] && g_str_equal(unit, self_unit)))
                return NP_UNIT_UNTOUCHABLE;
        return unit_interface(unit) ? NP_UNIT_TOGETHER : NP_UNIT_EACH;
}

/* Unit name of pid: 0 or a negative errno with *error set. */
static int unit_of_pid(sd_bus *bus, pid_t pid, char **unit, char **path, GError **error) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *p = NULL;
        char *id = NULL;
        int r;

        r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnitByPID", &e, &reply, "u", (uint32_t) pid);
        if (r >= 0)
                r = sd_bus_message_read(reply, "o", &p);
        if (r >= 0)
                r = sd_bus_get_property_string(bus, SD_DEST, p, "org.freedesktop.systemd1.Unit", "Id", &e, &id);
        if (r < 0)
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
                            "systemd: cannot find the unit of process %d: %s", (int) pid,
                            e.message ? e.message : g_strerror(-r));
        else {
                *unit = g_strdup(id);
                if (path)
                        *path = g_strdup(p);
        }
        free(id);
        sd_bus_error_free(&e);
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

/* Read an "ay" property of unit as a kernel list ("" = no restriction). */
static int get_mask_prop(sd_bus *bus, const char *unit, const char *path, const char *prop, char **out,
                         GError **error) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const void *data = NULL;
        size_t n = 0;
        int r;

        r = sd_bus_get_property(bus, SD_DEST, path, unit_interface(unit), prop, &e, &reply, "ay");
        if (r >= 0)
                r = sd_bus_message_read_array(reply, 'y', &data, &n);
        if (r >= 0) {
                g_autoptr(NpMask) mk = NULL;
                r = np_mask_from_bytes(data, n, &mk);
                if (r >= 0)
                        *out = np_mask_format(mk);
        }
        if (r < 0)
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "systemd: cannot read %s of %s: %s", prop,
                            unit, e.message ? e.message : g_strerror(-r));
        sd_bus_error_free(&e);
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

/* A call SetUnitProperties(unit, runtime, [(prop, ay list)]). */
static int new_set_call(sd_bus *bus, const char *unit, const char *prop, const NpMask *mask, sd_bus_message **out) {
        sd_bus_message *msg = NULL;
        g_autoptr(GByteArray) bytes = np_mask_to_bytes(mask);
        int r = sd_bus_message_new_method_call(bus, &msg, SD_DEST, SD_PATH, SD_MANAGER, "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(msg, "sb", unit, 1);
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(msg, "s", prop);
        if (r >= 0)
                r = sd_bus_message_open_container(msg, 'v', "ay");
        if (r >= 0)
                r = sd_bus_message_append_array(msg, 'y', bytes->data, bytes->len);
        for (int i = 0; i < 3 && r >= 0; i++)
                r = sd_bus_message_close_container(msg);
        if (r < 0) {
                sd_bus_message_unref(msg);
                return r;
        }
        *out = msg;
        return 0;
}

static int set_mask_prop(sd_bus *bus, const char *unit, const char *prop, const NpMask *mask, bool *gone,
                         GError **error) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *msg = NULL, *reply = NULL;
        int r = new_set_call(bus, unit, prop, mask, &msg);
        if (r >= 0)
                r = sd_bus_call(bus, msg, NP_SYSTEMD_TIMEOUT_USEC, &e, &reply);
        if (gone)
                *gone = sd_bus_error_has_name(&e, "org.freedesktop.systemd1.NoSuchUnit");
        if (r < 0) {
                g_autofree char *list = np_mask_format(mask);
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "systemd: cannot set %s=%s on %s: %s",
                            prop, list[0] ? list : "(unrestricted)", unit, e.message ? e.message : g_strerror(-r));
        }
        sd_bus_error_free(&e);
        sd_bus_message_unref(msg);
        sd_bus_message_unref(reply);
        return r < 0 ? r : 0;
}

/* Another record (not p) of the same unit whose process still lives (the
 * records of dead processes are forgotten without a restore). */
static const NpStateProcess *other_of_unit(NpBackend *b, const NpStateProcess *p, const char *unit) {
        g_autoptr(GArray) pids = np_state_pids(b->state);
        for (guint i = 0; i < pids->len; i++) {
                const NpStateProcess *o = np_state_lookup(b->state, g_array_index(pids, pid_t, i));
                if (o && o != p && o->backend == NP_BACKEND_SYSTEMD && np_proc_alive(o->pid, o->starttime) &&
                    g_strcmp0(g_hash_table_lookup(o->extra, KEY_UNIT), unit) == 0)
                        return o;
        }
        return NULL;
}

static int op_record(NpBackend *b, NpMechanism *m, NpStateProcess *p) {
        sd_bus *bus = m->data;
        g_autoptr(GError) e = NULL;
        g_autofree char *unit = NULL, *path = NULL, *own = NULL, *cpus = NULL, *mems = NULL;
        int r;

        r = unit_of_pid(bus, p->pid, &unit, &path, &e);
        if (r < 0 && !np_proc_alive(p->pid, p->starttime))
                return -ESRCH;
        if (r < 0) {
                /* no unit systemd will name (NoUnitForPID): one the daemon
                 * could change does not hold it either */
                log_info("%s; placing it without systemd", e->message);
                return -EXDEV;
        }
        if (unit_of_pid(bus, getpid(), &own, NULL, NULL) == 0 && g_strcmp0(own, unit) == 0) {
                log_info("systemd: process %d is in the daemon's own unit %s, which the daemon does not change",
                         (int) p->pid, unit);
                return -EXDEV;
        }
        if (g_str_equal(unit, "init.scope") || !unit_interface(unit)) {
                log_info("systemd: process %d is in %s, not a .service or .scope the daemon may change", (int) p->pid,
                         unit);
                return -EXDEV;
        }

        const NpStateProcess *o = other_of_unit(b, p, unit);
        if (o) {
                /* the unit already carries the daemon's values: reuse the originals */
                cpus = g_strdup(g_hash_table_lookup(o->extra, KEY_CPUS));
                mems = g_strdup(g_hash_table_lookup(o->extra, KEY_MEMS));
        } else if (get_mask_prop(bus, unit, path, "AllowedCPUs", &cpus, &e) < 0 ||
                   get_mask_prop(bus, unit, path, "AllowedMemoryNodes", &mems, &e) < 0) {
                log_warning("%s", e->message);
                return -EIO;
        }
        g_hash_table_replace(p->extra, g_strdup(KEY_UNIT), g_strdup(unit));
        g_hash_table_replace(p->extra, g_strdup(KEY_CPUS), g_strdup(cpus ? cpus : ""));
        g_hash_table_replace(p->extra, g_strdup(KEY_MEMS), g_strdup(mems ? mems : ""));
        return 0;
}

static int op_confine(NpBackend *b, NpMechanism *m, NpStateProcess *p, GError **error) {
        const char *unit = g_hash_table_lookup(p->extra, KEY_UNIT);
        if (!unit) {
                g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "systemd: process %d has no recorded unit",
                            (int) p->pid);
                return -EINVAL;
        }
        /* CPUs only: on cgroup v2 the kernel moves pages when cpuset.mems
         * changes, so the mems wait for the daemon's own plan (finish()). */
        return set_mask_prop(m->data, unit, "AllowedCPUs", p->cpus, NULL, error);
}

/* What an AllowedMemoryNodes= call sent without waiting was about. */
typedef struct {
        NpBackend *b; /* owns the bus, so outlives the call */
        char *unit;
        char *list;
} MemsCall;

static void mems_call_free(void *userdata) {
        MemsCall *c = userdata;
        g_free(c->unit);
        g_free(c->list);
        g_free(c);
}

static void log_mems_timeout(const char *list, const char *unit) {
        log_notice("systemd did not answer within %d s to AllowedMemoryNodes=%s on %s (it waits while the "
                   "kernel moves the unit's memory there); taken as set",
                   (int) (NP_SYSTEMD_TIMEOUT_USEC / G_USEC_PER_SEC), list, unit);
}

static int mems_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        const MemsCall *c = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        bool moved = !e || sd_bus_error_has_names(e, SD_BUS_ERROR_TIMEOUT, SD_BUS_ERROR_NO_REPLY);
        if (!e)
                log_debug("systemd: AllowedMemoryNodes=%s set on %s", c->list, c->unit);
        else if (moved)
                log_mems_timeout(c->list, c->unit);
        else
                log_warning("systemd refused AllowedMemoryNodes=%s on %s: %s; the unit's processes keep its CPUs "
                            "and their memory nodes stay as they were (the daemon's plan moved their pages)",
                            c->list, c->unit, e->message ? e->message : e->name);
        if (moved) {
                /* the kernel moved (or is moving) the unit's pages: every
                 * placed process of it is told */
                g_autoptr(GArray) pids = np_state_pids(c->b->state);
                for (guint i = 0; i < pids->len; i++) {
                        const NpStateProcess *o = np_state_lookup(c->b->state, g_array_index(pids, pid_t, i));
                        if (o && o->backend == NP_BACKEND_SYSTEMD &&
                            g_strcmp0(g_hash_table_lookup(o->extra, KEY_UNIT), c->unit) == 0)
                                np_backend_notify_moved(c->b, o->pid);
                }
        }
        return 0;
}

/* Send AllowedMemoryNodes= without waiting: 0 or a negative errno (then
 * nothing was sent). */
static int set_mems_async(NpBackend *b, sd_bus *bus, const char *unit, const NpMask *mask) {
        sd_bus_message *msg = NULL;
        sd_bus_slot *slot = NULL;
        int r = new_set_call(bus, unit, "AllowedMemoryNodes", mask, &msg);
        if (r < 0)
                return r;
        MemsCall *c = g_new0(MemsCall, 1);
        c->b = b;
        c->unit = g_strdup(unit);
        c->list = np_mask_format(mask);
        r = sd_bus_call_async(bus, &slot, msg, mems_reply, c, NP_SYSTEMD_TIMEOUT_USEC);
        sd_bus_message_unref(msg);
        if (r < 0) {
                mems_call_free(c);
                return r;
        }
        /* the bus owns the pending call, and frees c with it */
        (void) sd_bus_slot_set_destroy_callback(slot, mems_call_free);
        (void) sd_bus_slot_set_floating(slot, 1);
        sd_bus_slot_unref(slot);
        return 0;
}

static int op_attach_event(NpMechanism *m, sd_event *event) {
        return m->data ? sd_bus_attach_event(m->data, event, SD_EVENT_PRIORITY_NORMAL) : 0;
}

static int op_finish(NpBackend *b, NpMechanism *m, NpStateProcess *p, GError **error) {
        const char *unit = g_hash_table_lookup(p->extra, KEY_UNIT);
        if (!unit)
                return 0;
        if (sd_bus_get_event(m->data)) {
                int r = set_mems_async(b, m->data, unit, p->nodes);
                if (r >= 0)
                        return 0;
                log_debug("systemd: cannot send AllowedMemoryNodes= without waiting (%s): waiting for it",
                          g_strerror(-r));
        }
        g_autoptr(GError) e = NULL;
        int r = set_mask_prop(m->data, unit, "AllowedMemoryNodes", p->nodes, NULL, &e);
        if (r == -ETIMEDOUT) {
                /* PID 1's write of cpuset.mems returns (cgroup v2) only once
                 * the kernel has moved the unit's memory off the other nodes,
                 * seconds for a few hundred MB of memory the daemon's plan
                 * left (pages other processes map): systemd sets it after
                 * the call timed out. Taken as set, the placement stands
                 * (failing it would leave a unit narrowed that no record
                 * explains: foreign to the next scan). */
                g_autofree char *list = np_mask_format(p->nodes);
                log_mems_timeout(list, unit);
                return 0;
        }
        if (r < 0)
                g_propagate_error(error, g_steal_pointer(&e));
        return r;
}

/* Every online CPU, or every node with memory, of the real machine (NULL
 * when it cannot be read). */
static NpMask *machine_mask(const char *path) {
        g_autofree char *buf = NULL;
        NpMask *mk = NULL;
        if (!g_file_get_contents(path, &buf, NULL, NULL) || np_mask_parse(buf, &mk) < 0 || np_mask_empty(mk)) {
                np_mask_free(mk);
                return NULL;
        }
        return mk;
}

static int restore_prop(sd_bus *bus, const NpStateProcess *p, const char *unit, const char *prop, const char *key,
                        const char *all_path) {
        g_autoptr(NpMask) orig = NULL;
        g_autoptr(GError) e = NULL;
        const char *list = g_hash_table_lookup(p->extra, key);
        if (np_mask_parse(list ? list : "", &orig) < 0) {
                log_warning("systemd: the recorded %s of %s (%s) is not a list: leaving %s as it is", prop, unit, list,
                            prop);
                return -EINVAL;
        }
        bool gone = false;
        int r;
        if (np_mask_empty(orig)) {
                /* "No restriction" makes systemd drop the unit's cpuset,
                 * which leaves its tasks' CPU affinity and mems_allowed as
                 * narrow as they were: widen the cpuset to the whole
                 * machine first (the kernel then widens every task of the
                 * unit), then drop it. */
                g_autoptr(NpMask) all = machine_mask(all_path);
                if (all) {
                        r = set_mask_prop(bus, unit, prop, all, &gone, &e);
                        if (r < 0 && gone) {
                                log_debug("%s (the unit is gone)", e->message);
                                return 0;
                        }
                        if (r < 0)
                                log_warning("%s", e->message);
                        g_clear_error(&e);
                }
        }
        r = set_mask_prop(bus, unit, prop, orig, &gone, &e);
        if (r < 0 && gone) {
                log_debug("%s (the unit is gone)", e->message);
                return 0;
        }
        if (r < 0)
                log_warning("%s; set it back by hand: systemctl set-property --runtime %s %s=%s", e->message, unit,
                            prop, list && list[0] ? list : "\"\"");
        return r;
}

static int op_restore(NpBackend *b, NpMechanism *m, const NpStateProcess *p) {
        const char *unit = g_hash_table_lookup(p->extra, KEY_UNIT);
        if (!unit)
                return 0;
        if (other_of_unit(b, p, unit)) {
                log_debug("systemd: %s still holds another placed process: not restoring it yet", unit);
                return 0;
        }
        int r1 = restore_prop(m->data, p, unit, "AllowedMemoryNodes", KEY_MEMS, "/sys/devices/system/node/has_memory");
        int r2 = restore_prop(m->data, p, unit, "AllowedCPUs", KEY_CPUS, "/sys/devices/system/cpu/online");
        return r1 < 0 ? r1 : r2;
}

const NpBackendOps np_backend_systemd_ops = {
        .kind = NP_BACKEND_SYSTEMD,
        .name = "systemd",
        .holds_memory = true,
        .probe = op_probe,
        .free_data = bus_free,
        .attach_event = op_attach_event,
        .unit_role = op_unit_role,
        .record = op_record,
        .confine = op_confine,
        .finish = op_finish,
        .restore = op_restore,
        .restore_when_gone = true,
};
