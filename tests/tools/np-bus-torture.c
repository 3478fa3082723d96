/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * np-bus-torture: hostile calls to numaplaced's D-Bus interface.
 *
 * Sends every Manager method with wrong signatures (and a passed file
 * descriptor), Advise() with NaN, infinities, negative and huge values,
 * empty and huge arrays (100 000 node ids), node ids up to 2^32-1, PIDs 0,
 * 1, 2 (a kernel thread), 2^31-1, 2^31 and above, the daemon's own PID,
 * PIDs that exit during the call, Properties.Set on every (read-only)
 * property, Get/GetAll/Introspect on odd object paths, and N random
 * well-formed calls with random arguments. Every answer must be a method
 * return or an error with a D-Bus name of the org.freedesktop.DBus.Error
 * or org.numaplaced1.Error families; a timeout, a lost connection or any
 * other error name is a failure.
 *
 * Safety on a real machine: calls that change something (Place, Include,
 * Exclude, Forget) only name processes this tool started itself, PIDs that
 * cannot be placed (0, 2, the daemon, >= 2^31, exited), or PID 1 with a node
 * list the daemon refuses before looking at the process: PID 1 is never
 * given a valid node list. Run the daemon with Mode=advise. Reload() is
 * sent, so its configuration file must stay valid. At the end every PID a
 * Place, Include or Exclude was accepted for is forgotten (Forget), also an
 * exited child's: the daemon may know that PID as another process (a
 * fixture tree's, or a new one).
 *
 * Usage: np-bus-torture --daemon-pid PID [--random N] [--seed S]
 *                       [--children N] [--node ID] [--quiet]
 * Connects to the system bus ($DBUS_SYSTEM_BUS_ADDRESS). Prints one summary
 * line "calls=... replies=... errors=... failures=..." and the error names
 * seen; exit status 0 when there was no failure, 1 otherwise, 2 for usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glib.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#define NAME "org.numaplaced1"
#define PATH "/org/numaplaced1"
#define MGR "org.numaplaced1.Manager"
#define NODE_IFACE "org.numaplaced1.Node"
#define PROC_IFACE "org.numaplaced1.Process"
#define PROPS "org.freedesktop.DBus.Properties"
#define CALL_TIMEOUT_USEC (60ULL * 1000000ULL)
#define HUGE_ARRAY 100000u

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sd_bus_message, sd_bus_message_unref)

static sd_bus *bus;
static GRand *rng;
static bool quiet;
static uint32_t daemon_pid;
static uint32_t node_id; /* an online node with memory (0 by default) */
static GArray *children; /* pid_t: our own sleeping children (safe targets) */
static GArray *dead; /* pid_t: children that have exited (reaped) */
static GHashTable *changed; /* PIDs a Place, Include or Exclude was accepted for: forgotten at the end */

static struct {
        unsigned calls, replies, errors, failures;
        GHashTable *names; /* error name -> count */
        int64_t slowest_usec;
        char *slowest; /* the call that took longest */
} st;

/* ---- sending and judging ------------------------------------------------ */

static bool named(const char *name) {
        return name &&
                (g_str_has_prefix(name, "org.freedesktop.DBus.Error.") ||
                 g_str_has_prefix(name, "org.numaplaced1.Error."));
}

static void fail(const char *what, const char *why) {
        st.failures++;
        fprintf(stderr, "np-bus-torture: FAIL: %s: %s\n", what, why);
}

/* Send m and judge the answer. expect_error: a method return is a failure
 * too (a wrong signature must never be accepted). Returns 1 for a method
 * return, 0 for a named error, -1 for a failure. */
static int send_and_judge(sd_bus_message *m, const char *what, bool expect_error) {
        sd_bus_error err = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int64_t t0;
        int r, ret;

        st.calls++;
        if (getenv("NP_TORTURE_VERBOSE"))
                fprintf(stderr, "> %s\n", what);
        t0 = g_get_monotonic_time();
        r = sd_bus_call(bus, m, CALL_TIMEOUT_USEC, &err, &reply);
        t0 = g_get_monotonic_time() - t0;
        if (t0 > st.slowest_usec) {
                st.slowest_usec = t0;
                g_free(st.slowest);
                st.slowest = g_strdup(what);
        }
        if (r >= 0) {
                st.replies++;
                ret = 1;
                if (expect_error) {
                        fail(what, "accepted (a method return), expected an error");
                        ret = -1;
                }
        } else if (sd_bus_error_is_set(&err) && named(err.name)) {
                guint n = GPOINTER_TO_UINT(g_hash_table_lookup(st.names, err.name));

                st.errors++;
                g_hash_table_replace(st.names, g_strdup(err.name), GUINT_TO_POINTER(n + 1));
                ret = 0;
        } else {
                g_autofree char *why = NULL;

                if (sd_bus_error_is_set(&err))
                        why = g_strdup_printf("error %s: %s", err.name, err.message ? err.message : "");
                else
                        why = g_strdup_printf("no answer: %s", strerror(-r));
                fail(what, why);
                ret = -1;
                if (r == -ENOTCONN || r == -ECONNRESET) {
                        fprintf(stderr, "np-bus-torture: lost the bus connection\n");
                        exit(1);
                }
        }
        if (!quiet && ret >= 0 && getenv("NP_TORTURE_VERBOSE"))
                fprintf(stderr, "%s -> %s (%.3f s)\n", what, ret ? "reply" : err.name, (double) t0 / 1e6);
        sd_bus_error_free(&err);
        sd_bus_message_unref(reply);
        return ret;
}

static sd_bus_message *new_call(const char *path, const char *iface, const char *member) {
        sd_bus_message *m = NULL;
        int r = sd_bus_message_new_method_call(bus, &m, NAME, path, iface, member);

        if (r < 0) {
                fprintf(stderr, "np-bus-torture: cannot build a call to %s: %s\n", member, strerror(-r));
                exit(1);
        }
        return m;
}

static void must(int r, const char *what) {
        if (r < 0) {
                fprintf(stderr, "np-bus-torture: cannot build %s: %s\n", what, strerror(-r));
                exit(1);
        }
}

static void append_ids(sd_bus_message *m, const uint32_t *ids, size_t n) {
        must(sd_bus_message_append_array(m, 'u', ids, n * sizeof(uint32_t)), "an au");
}

/* ---- the methods, well formed ------------------------------------------- */

static int call_nodes2(const char *member, const uint32_t *a, size_t na, const uint32_t *b, size_t nb,
                       const char *what) {
        g_autoptr(sd_bus_message) m = new_call(PATH, MGR, member);

        append_ids(m, a, na);
        append_ids(m, b, nb);
        return send_and_judge(m, what, false);
}

static int call_place(uint32_t pid, const uint32_t *ids, size_t n, const char *what) {
        g_autoptr(sd_bus_message) m = new_call(PATH, MGR, "Place");

        must(sd_bus_message_append(m, "u", pid), "Place's pid");
        append_ids(m, ids, n);
        int r = send_and_judge(m, what, false);
        if (r > 0)
                g_hash_table_add(changed, GUINT_TO_POINTER(pid));
        return r;
}

static int call_advise(double cpus, uint64_t bytes, const char *what) {
        g_autoptr(sd_bus_message) m = new_call(PATH, MGR, "Advise");

        must(sd_bus_message_append(m, "dt", cpus, bytes), "Advise's arguments");
        return send_and_judge(m, what, false);
}

static int call_pid(const char *member, uint32_t pid, const char *what) {
        g_autoptr(sd_bus_message) m = new_call(PATH, MGR, member);

        must(sd_bus_message_append(m, "u", pid), "a pid");
        int r = send_and_judge(m, what, false);
        if (r > 0 && strcmp(member, "Forget") != 0)
                g_hash_table_add(changed, GUINT_TO_POINTER(pid));
        return r;
}

static int call_void(const char *member) {
        g_autoptr(sd_bus_message) m = new_call(PATH, MGR, member);

        return send_and_judge(m, member, false);
}

/* ---- children: safe targets, and processes that exit during a call ------ */

static pid_t spawn_child(unsigned exit_after_usec) {
        pid_t pid = fork();

        if (pid < 0) {
                perror("np-bus-torture: fork");
                exit(1);
        }
        if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (exit_after_usec) {
                        usleep(exit_after_usec);
                        _exit(0);
                }
                for (;;)
                        pause();
        }
        return pid;
}

static void reap_children(void) {
        for (guint i = 0; i < children->len; i++) {
                pid_t pid = g_array_index(children, pid_t, i);
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
        }
        g_array_set_size(children, 0);
}

/* A pid that just exited (reaped: nobody has it, or a new process later). */
static uint32_t dead_pid(void) {
        if (dead->len == 0) {
                pid_t pid = spawn_child(1);
                waitpid(pid, NULL, 0);
                g_array_append_val(dead, pid);
        }
        return (uint32_t) g_array_index(dead, pid_t, g_rand_int_range(rng, 0, (gint32) dead->len));
}

/* ---- the phases ---------------------------------------------------------- */

/* Every method with signatures it does not take, and a file descriptor. */
static void phase_wrong_signatures(void) {
        static const struct {
                const char *member, *sig;
        } methods[] = {
                { "Advise", "dt" }, { "Reload", "" },        { "Pause", "" },
                { "Resume", "" },   { "Dump", "" },          { "PlanMigration", "auau" },
                { "Place", "uau" }, { "Include", "u" },      { "Exclude", "u" },
                { "Forget", "u" },  { "NoSuchMethod", "-" },
        };
        static const char *const bodies[] = { "",  "u",     "s", "uu", "au",   "auau", "uau",  "ay",
                                              "v", "a{sv}", "b", "t",  "(uu)", "aau",  "uauu", "auauau",
                                              "i", "x",     "d", "o",  "g",    "h",    "su",   "us" };
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

        for (size_t i = 0; i < G_N_ELEMENTS(methods); i++)
                for (size_t j = 0; j < G_N_ELEMENTS(bodies); j++) {
                        g_autoptr(sd_bus_message) m = NULL;
                        g_autofree char *what = NULL;
                        const char *b = bodies[j];
                        int r = 0;

                        if (strcmp(b, methods[i].sig) == 0)
                                continue;
                        m = new_call(PATH, MGR, methods[i].member);
                        what = g_strdup_printf("%s(%s) with wrong signature", methods[i].member, b);
                        for (const char *c = b; *c && r >= 0; c++) {
                                switch (*c) {
                                case 'u':
                                        r = sd_bus_message_append(m, "u", (uint32_t) g_array_index(children, pid_t, 0));
                                        break;
                                case 'a':
                                        if (c[1] == 'u') {
                                                uint32_t ids[] = { node_id };
                                                r = sd_bus_message_append_array(m, 'u', ids, sizeof ids);
                                                c++;
                                        } else if (c[1] == 'y') {
                                                r = sd_bus_message_append_array(m, 'y', "xyz", 3);
                                                c++;
                                        } else if (c[1] == 'a') {
                                                r = sd_bus_message_append(m, "aau", 1, 1, node_id);
                                                c += 2;
                                        } else {
                                                r = sd_bus_message_append(m, "a{sv}", 1, "k", "u", 1);
                                                c += 4;
                                        }
                                        break;
                                case '(':
                                        r = sd_bus_message_append(m, "(uu)", 0, 1);
                                        c += 3;
                                        break;
                                case 's':
                                        r = sd_bus_message_append(m, "s", "0");
                                        break;
                                case 'v':
                                        r = sd_bus_message_append(m, "v", "u", 0);
                                        break;
                                case 'b':
                                        r = sd_bus_message_append(m, "b", 1);
                                        break;
                                case 't':
                                        r = sd_bus_message_append(m, "t", (uint64_t) 1);
                                        break;
                                case 'i':
                                        r = sd_bus_message_append(m, "i", -1);
                                        break;
                                case 'x':
                                        r = sd_bus_message_append(m, "x", (int64_t) -1);
                                        break;
                                case 'd':
                                        r = sd_bus_message_append(m, "d", 1.5);
                                        break;
                                case 'o':
                                        r = sd_bus_message_append(m, "o", "/x");
                                        break;
                                case 'g':
                                        r = sd_bus_message_append(m, "g", "au");
                                        break;
                                case 'h':
                                        r = sd_bus_message_append(m, "h", devnull);
                                        break;
                                }
                        }
                        must(r, what);
                        (void) send_and_judge(m, what, true);
                }
        close(devnull);
}

/* Empty and huge node lists, ids up to 2^32-1. */
static void phase_arrays(void) {
        g_autofree uint32_t *seq = g_new(uint32_t, HUGE_ARRAY);
        g_autofree uint32_t *same = g_new(uint32_t, HUGE_ARRAY);
        g_autofree uint32_t *maxed = g_new(uint32_t, HUGE_ARRAY);
        g_autofree uint32_t *rnd = g_new(uint32_t, HUGE_ARRAY);
        const uint32_t edge[] = { node_id, 1, 63, 64, 1u << 20, (1u << 20) + 1, 1u << 31, UINT32_MAX - 1, UINT32_MAX };
        uint32_t one[] = { node_id };
        uint32_t child = (uint32_t) g_array_index(children, pid_t, 0);

        for (uint32_t i = 0; i < HUGE_ARRAY; i++) {
                seq[i] = i;
                same[i] = node_id;
                maxed[i] = UINT32_MAX;
                rnd[i] = g_rand_int(rng);
        }
        call_nodes2("PlanMigration", NULL, 0, NULL, 0, "PlanMigration([], [])");
        call_nodes2("PlanMigration", one, 1, NULL, 0, "PlanMigration([n], [])");
        call_nodes2("PlanMigration", NULL, 0, one, 1, "PlanMigration([], [n])");
        call_nodes2("PlanMigration", seq, HUGE_ARRAY, one, 1, "PlanMigration(100000 ids, [n])");
        call_nodes2("PlanMigration", one, 1, seq, HUGE_ARRAY, "PlanMigration([n], 100000 ids)");
        call_nodes2("PlanMigration", seq, HUGE_ARRAY, seq + 1, HUGE_ARRAY - 1, "PlanMigration(100000 ids, 99999 ids)");
        call_nodes2("PlanMigration", same, HUGE_ARRAY, same, HUGE_ARRAY, "PlanMigration(100000 x n, 100000 x n)");
        call_nodes2("PlanMigration", maxed, HUGE_ARRAY, maxed, HUGE_ARRAY, "PlanMigration(100000 x 2^32-1)");
        call_nodes2("PlanMigration", rnd, HUGE_ARRAY, rnd, HUGE_ARRAY, "PlanMigration(100000 random ids)");
        for (size_t i = 0; i < G_N_ELEMENTS(edge); i++) {
                g_autofree char *what = g_strdup_printf("PlanMigration([%u], [n])", edge[i]);
                g_autofree char *what2 = g_strdup_printf("Place(child, [%u])", edge[i]);
                call_nodes2("PlanMigration", &edge[i], 1, one, 1, what);
                call_nodes2("PlanMigration", one, 1, &edge[i], 1, what);
                call_place(child, &edge[i], 1, what2);
        }
        call_place(child, NULL, 0, "Place(child, [])");
        call_place(child, seq, HUGE_ARRAY, "Place(child, 100000 ids)");
        call_place(child, same, HUGE_ARRAY, "Place(child, 100000 x n)");
        call_place(child, maxed, HUGE_ARRAY, "Place(child, 100000 x 2^32-1)");
        call_place(child, rnd, HUGE_ARRAY, "Place(child, 100000 random ids)");
        call_place(1, seq, HUGE_ARRAY, "Place(1, 100000 ids)"); /* refused: node 1.. not online */
        call_pid("Forget", child, "Forget(child)");
}

/* Advise() (open to everyone): CPUs and bytes of every odd kind. */
static void phase_advise(void) {
        const double cpus[] = { 0.0, -0.0, -1.0, 0.5, 1.0, 4096.0, 1e308, -1e308, 5e-324, NAN, INFINITY, -INFINITY };
        const uint64_t bytes[] = { 0, 1, 4096, UINT64_C(1) << 30, UINT64_C(1) << 62, UINT64_MAX };

        for (size_t i = 0; i < G_N_ELEMENTS(cpus); i++)
                for (size_t k = 0; k < G_N_ELEMENTS(bytes); k++) {
                        g_autofree char *what = g_strdup_printf("Advise(%g, %" G_GUINT64_FORMAT ")", cpus[i], bytes[k]);
                        call_advise(cpus[i], bytes[k], what);
                }
}

/* PIDs that cannot (or must not) be placed, with each method. */
static void phase_pids(void) {
        const uint32_t bad[] = {
                0, 2, daemon_pid, (1u << 31) - 1, 1u << 31, (1u << 31) + 1, UINT32_MAX - 1, UINT32_MAX, dead_pid()
        };
        const char *const members[] = { "Include", "Exclude", "Forget" };
        uint32_t one[] = { node_id };
        uint32_t offline[] = { UINT32_MAX };

        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
                g_autofree char *what = g_strdup_printf("Place(%u, [n])", bad[i]);
                call_place(bad[i], one, 1, what);
                for (size_t k = 0; k < G_N_ELEMENTS(members); k++) {
                        g_autofree char *w = g_strdup_printf("%s(%u)", members[k], bad[i]);
                        call_pid(members[k], bad[i], w);
                }
        }
        /* PID 1: only what cannot change it (an invalid node list), and
         * Include/Exclude/Forget (Mode=advise: nothing is placed). */
        call_place(1, offline, 1, "Place(1, [2^32-1])");
        call_place(1, NULL, 0, "Place(1, [])");
        call_pid("Exclude", 1, "Exclude(1)");
        call_pid("Include", 1, "Include(1)");
        call_pid("Forget", 1, "Forget(1)");

        /* Processes that exit during the call: a child that lives 0-3 ms. */
        for (unsigned i = 0; i < 200; i++) {
                pid_t pid = spawn_child(1 + (unsigned) g_rand_int_range(rng, 0, 3000));
                const char *member = members[i % G_N_ELEMENTS(members)];

                if (i % 2 == 0)
                        call_place((uint32_t) pid, one, 1, "Place(exiting child, [n])");
                else
                        call_pid(member, (uint32_t) pid, "Include/Exclude/Forget(exiting child)");
                waitpid(pid, NULL, 0);
                if (dead->len < 64)
                        g_array_append_val(dead, pid);
        }
}

static const char *const manager_props[] = { "Version",
                                             "Mode",
                                             "Backend",
                                             "Paused",
                                             "ScanIntervalUSec",
                                             "Scans",
                                             "LastScanTimestamp",
                                             "LastScanDurationUSec",
                                             "DaemonCPUUSec",
                                             "NodeIds",
                                             "ManagedProcesses",
                                             "MigratedBytes",
                                             "MigrationCalls",
                                             "MigrationFailedPages",
                                             "KernelNumaBalancing",
                                             "ConfigFiles",
                                             "ConfigError",
                                             NULL };
static const char *const node_props[] = {
        "Id", "CPUs", "Distances", "MemoryTotalBytes", "MemoryFreeBytes", "CPUCapacity", "CPUBusy", "ManagedProcesses",
        NULL
};
static const char *const proc_props[] = { "Pid",           "Comm",     "StartTime",   "CPUUsage", "MemoryBytes",
                                          "MemoryPerNode", "Locality", "TargetNodes", "State",    "LastPlacedTimestamp",
                                          "Cgroup",        "Unit",     NULL };

static void props_set(const char *path, const char *iface, const char *prop, const char *type) {
        g_autoptr(sd_bus_message) m = new_call(path, PROPS, "Set");
        g_autofree char *what = g_strdup_printf("Set %s %s.%s as %s", path, iface, prop, type);
        int r;

        r = sd_bus_message_append(m, "ss", iface, prop);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', type);
        if (r >= 0) {
                switch (type[0]) {
                case 's':
                        r = sd_bus_message_append(m, "s", "x");
                        break;
                case 'u':
                        r = sd_bus_message_append(m, "u", 1);
                        break;
                case 't':
                        r = sd_bus_message_append(m, "t", (uint64_t) 1);
                        break;
                case 'b':
                        r = sd_bus_message_append(m, "b", 1);
                        break;
                case 'd':
                        r = sd_bus_message_append(m, "d", 2.0);
                        break;
                default: /* au */
                        r = sd_bus_message_append(m, "au", 2, 0, 1);
                }
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        must(r, what);
        (void) send_and_judge(m, what, true);
}

static void props_get(const char *path, const char *iface, const char *prop, bool expect_error) {
        g_autoptr(sd_bus_message) m = new_call(path, PROPS, "Get");
        g_autofree char *what = g_strdup_printf("Get %s %s.%s", path, iface, prop);

        must(sd_bus_message_append(m, "ss", iface, prop), what);
        (void) send_and_judge(m, what, expect_error);
}

static void get_all(const char *path, const char *iface) {
        g_autoptr(sd_bus_message) m = new_call(path, PROPS, "GetAll");
        g_autofree char *what = g_strdup_printf("GetAll %s %s", path, iface);

        must(sd_bus_message_append(m, "s", iface), what);
        (void) send_and_judge(m, what, false);
}

static void introspect(const char *path) {
        g_autoptr(sd_bus_message) m = new_call(path, "org.freedesktop.DBus.Introspectable", "Introspect");
        g_autofree char *what = g_strdup_printf("Introspect %s", path);

        (void) send_and_judge(m, what, false);
}

/* Set on every property (all read-only) with its type and others; Get of
 * unknown properties; GetAll and Introspect on odd paths. */
static void phase_properties(void) {
        static const char *const types[] = { "s", "u", "t", "b", "d", "au" };
        g_autofree char *node_path = g_strdup_printf(PATH "/node/%u", node_id);
        g_autofree char *proc_path =
                g_strdup_printf(PATH "/process/%d", (int) g_array_index(children, pid_t, 0)); /* may not exist */
        static const char *const odd_paths[] = {
                PATH "/node/4294967295",
                PATH "/node/4294967296",
                PATH "/node/99999999999999999999",

                PATH "/node/abc",

                PATH "/node/0/x",
                PATH "/process/0",
                PATH "/process/2147483648",
                PATH "/process/1",
                PATH "/process/x",
                PATH "/process",
                PATH "/group/0",
                PATH "/group/1",
                PATH "/group/4294967295",
                PATH "/group/x",
                PATH "/group",
                "/",
                "/org",
                PATH "/node/00",
        };
        const struct {
                const char *path, *iface;
                const char *const *props;
        } objs[] = { { PATH, MGR, manager_props },
                     { node_path, NODE_IFACE, node_props },
                     { proc_path, PROC_IFACE, proc_props } };

        for (size_t o = 0; o < G_N_ELEMENTS(objs); o++)
                for (const char *const *p = objs[o].props; *p; p++)
                        for (size_t t = 0; t < G_N_ELEMENTS(types); t++)
                                props_set(objs[o].path, objs[o].iface, *p, types[t]);
        props_set(PATH, MGR, "NoSuchProperty", "s");
        props_set(PATH, "org.example.NoSuchInterface", "Mode", "s");
        props_get(PATH, MGR, "NoSuchProperty", true);
        props_get(PATH, "org.example.NoSuchInterface", "Mode", true);
        props_get(PATH, "", "Mode", false); /* any interface: allowed by the spec */
        for (const char *const *p = manager_props; *p; p++)
                props_get(PATH, MGR, *p, false);
        for (const char *const *p = node_props; *p; p++)
                props_get(node_path, NODE_IFACE, *p, false);
        get_all(PATH, MGR);
        get_all(PATH, "");
        get_all(node_path, NODE_IFACE);
        for (size_t i = 0; i < G_N_ELEMENTS(odd_paths); i++) {
                introspect(odd_paths[i]);
                get_all(odd_paths[i], NODE_IFACE);
                get_all(odd_paths[i], PROC_IFACE);
                get_all(odd_paths[i], "org.numaplaced1.Group");
                props_get(odd_paths[i], NODE_IFACE, "Id", false);
                {
                        g_autoptr(sd_bus_message) m = new_call(odd_paths[i], MGR, "Dump");
                        (void) send_and_judge(m, "Dump on an odd path", false);
                }
        }
        introspect(PATH);
        introspect(node_path);
        introspect(PATH "/node");
        {
                g_autoptr(sd_bus_message) m = new_call(PATH, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects");
                (void) send_and_judge(m, "GetManagedObjects", false);
        }
}

/* ---- random well-formed calls -------------------------------------------- */

static uint32_t random_pid(bool for_place) {
        switch (g_rand_int_range(rng, 0, 10)) {
        case 0:
                return 0;
        case 1:
                return for_place ? 2 : 1;
        case 2:
                return daemon_pid;
        case 3:
                return dead_pid();
        case 4:
                return (uint32_t) g_rand_int_range(rng, 1 << 22, G_MAXINT32) + (g_rand_boolean(rng) ? 1u << 31 : 0);
        default:
                return (uint32_t) g_array_index(children, pid_t, g_rand_int_range(rng, 0, (gint32) children->len));
        }
}

static size_t random_nodes(uint32_t *ids, size_t max) {
        size_t n = (size_t) g_rand_int_range(rng, 0, (gint32) max + 1);

        for (size_t i = 0; i < n; i++) {
                switch (g_rand_int_range(rng, 0, 6)) {
                case 0:
                case 1:
                case 2:
                        ids[i] = node_id;
                        break;
                case 3:
                        ids[i] = (uint32_t) g_rand_int_range(rng, 0, 80);
                        break;
                case 4:
                        ids[i] = (uint32_t) g_rand_int_range(rng, 0, (1 << 20) + 2);
                        break;
                default:
                        ids[i] = g_rand_int(rng);
                }
        }
        return n;
}

static void phase_random(unsigned n) {
        uint32_t a[16], b[16];

        for (unsigned i = 0; i < n; i++) {
                size_t na, nb;

                switch (g_rand_int_range(rng, 0, 15)) {
                case 14:
                        call_advise(g_rand_double_range(rng, -2.0, 8.0),
                                    g_rand_boolean(rng) ? (uint64_t) g_rand_int(rng) << 12 : (uint64_t) g_rand_int(rng),
                                    "random Advise");
                        break;
                case 0:
                        call_void("Reload");
                        break;
                case 1:
                        call_void("Pause");
                        break;
                case 2:
                        call_void("Resume");
                        break;
                case 3:
                        call_void("Dump");
                        break;
                case 4:
                case 5:
                        na = random_nodes(a, G_N_ELEMENTS(a));
                        nb = random_nodes(b, G_N_ELEMENTS(b));
                        call_nodes2("PlanMigration", a, na, b, nb, "random PlanMigration");
                        break;
                case 6:
                case 7: {
                        uint32_t pid = random_pid(true);
                        na = random_nodes(a, 4);
                        call_place(pid, a, na, "random Place");
                        break;
                }
                case 8:
                        call_pid("Include", random_pid(false), "random Include");
                        break;
                case 9:
                        call_pid("Exclude", random_pid(false), "random Exclude");
                        break;
                case 10:
                        call_pid("Forget", random_pid(false), "random Forget");
                        break;
                case 11:
                        props_get(PATH, MGR, manager_props[g_rand_int_range(rng, 0, G_N_ELEMENTS(manager_props) - 1)],
                                  false);
                        break;
                case 12: {
                        g_autofree char *p = g_strdup_printf(PATH "/node/%u", random_nodes(a, 1) ? a[0] : node_id);
                        get_all(p, NODE_IFACE);
                        break;
                }
                default: {
                        g_autofree char *p = g_strdup_printf(PATH "/process/%u", random_pid(false));
                        get_all(p, PROC_IFACE);
                        break;
                }
                }
        }
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *f) {
        fprintf(f,
                "Usage: np-bus-torture --daemon-pid PID [--random N] [--seed S] [--children N] [--node ID] "
                "[--quiet]\n");
}

int main(int argc, char **argv) {
        static const struct option opts[] = {
                { "daemon-pid", required_argument, NULL, 'p' },
                { "random", required_argument, NULL, 'r' },
                { "seed", required_argument, NULL, 's' },
                { "children", required_argument, NULL, 'c' },
                { "node", required_argument, NULL, 'n' },
                { "quiet", no_argument, NULL, 'q' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        unsigned n_random = 10000, n_children = 4;
        guint32 seed = 1;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case 'p':
                        daemon_pid = (uint32_t) strtoul(optarg, NULL, 10);
                        break;
                case 'r':
                        n_random = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 's':
                        seed = (guint32) strtoul(optarg, NULL, 10);
                        break;
                case 'c':
                        n_children = (unsigned) strtoul(optarg, NULL, 10);
                        break;
                case 'n':
                        node_id = (uint32_t) strtoul(optarg, NULL, 10);
                        break;
                case 'q':
                        quiet = true;
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (!daemon_pid || n_children == 0) {
                usage(stderr);
                return 2;
        }
        rng = g_rand_new_with_seed(seed);
        st.names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        children = g_array_new(FALSE, FALSE, sizeof(pid_t));
        dead = g_array_new(FALSE, FALSE, sizeof(pid_t));
        changed = g_hash_table_new(g_direct_hash, g_direct_equal);
        for (unsigned i = 0; i < n_children; i++) {
                pid_t pid = spawn_child(0);
                g_array_append_val(children, pid);
        }

        r = sd_bus_open_system(&bus);
        if (r < 0) {
                fprintf(stderr, "np-bus-torture: cannot connect to the system bus: %s\n", strerror(-r));
                reap_children();
                return 1;
        }
        phase_wrong_signatures();
        phase_arrays();
        phase_advise();
        phase_pids();
        phase_properties();
        phase_random(n_random);
        /* put our children back before they go */
        for (guint i = 0; i < children->len; i++)
                (void) call_pid("Forget", (uint32_t) g_array_index(children, pid_t, i), "final Forget");
        call_void("Resume");
        (void) call_pid("Forget", 1, "final Forget(1)"); /* drop a random Include(1)/Exclude(1) */
        /* and whatever else was accepted: an exited child's PID that the
         * daemon's root (a fixture tree) has as another process, or that
         * was reused meanwhile */
        GHashTableIter it;
        gpointer key;
        g_hash_table_iter_init(&it, changed);
        while (g_hash_table_iter_next(&it, &key, NULL))
                (void) call_pid("Forget", GPOINTER_TO_UINT(key), "final Forget");
        g_hash_table_unref(changed);
        reap_children();

        printf("np-bus-torture: calls=%u replies=%u errors=%u failures=%u\n", st.calls, st.replies, st.errors,
               st.failures);
        printf("np-bus-torture: slowest call %.3f s: %s\n", (double) st.slowest_usec / 1e6, st.slowest);
        {
                g_autoptr(GList) names = g_hash_table_get_keys(st.names);
                names = g_list_sort(names, (GCompareFunc) strcmp);
                for (GList *l = names; l; l = l->next)
                        printf("np-bus-torture: error %s: %u\n", (char *) l->data,
                               GPOINTER_TO_UINT(g_hash_table_lookup(st.names, l->data)));
        }
        sd_bus_flush_close_unref(bus);
        g_hash_table_destroy(st.names);
        g_array_unref(children);
        g_array_unref(dead);
        g_rand_free(rng);
        return st.failures ? 1 : 0;
}
