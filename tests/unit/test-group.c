/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Placement groups (np-group.c) on snapshot literals: by unit, by Groups=
 * glob, by shared memory (SysV shm, a fork child's shared anonymous memory,
 * a library-sized object that must not group, a chain), a group's demand,
 * stable keys and the foreign member.
 */
#include <errno.h>
#include <glib.h>
#include <stdarg.h>

#include "np-group.h"

#define MiB (1024ull * 1024ull)

/* The arrays a test's snapshot points to, freed at its end. */
static GPtrArray *keep;

/* NpNodeBytes from n pairs (unsigned node, uint64_t bytes). */
static const GArray *on(guint n, ...) {
        GArray *a = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        va_list ap;
        va_start(ap, n);
        for (guint i = 0; i < n; i++) {
                NpNodeBytes b;
                b.node = va_arg(ap, unsigned);
                b.bytes = va_arg(ap, uint64_t);
                g_array_append_val(a, b);
        }
        va_end(ap);
        g_ptr_array_add(keep, a);
        return a;
}

static void setup(void) {
        keep = g_ptr_array_new_with_free_func((GDestroyNotify) g_array_unref);
}

static void teardown(void) {
        g_clear_pointer(&keep, g_ptr_array_unref);
}

static const NpGroupParams units_on = { .units = true, .min_shared_bytes = NP_GROUP_MIN_SHARED_BYTES };
static const NpGroupParams units_off = { .units = false, .min_shared_bytes = NP_GROUP_MIN_SHARED_BYTES };

static GPtrArray *form(const NpGroupMember *procs, guint n, const NpGroupParams *params) {
        GPtrArray *groups = NULL;
        g_assert_cmpint(np_groups_form(procs, n, params, &groups), ==, 0);
        g_assert_nonnull(groups);
        /* every process is in exactly one group */
        guint members = 0;
        for (guint i = 0; i < groups->len; i++)
                members += ((NpGroup *) groups->pdata[i])->members->len;
        g_assert_cmpuint(members, ==, n);
        return groups;
}

static NpGroup *nth(GPtrArray *groups, guint i) {
        g_assert_cmpuint(i, <, groups->len);
        return groups->pdata[i];
}

static const NpGroupJoin *member(const NpGroup *g, guint i) {
        g_assert_cmpuint(i, <, g->members->len);
        return &g_array_index(g->members, NpGroupJoin, i);
}

static void assert_members(const NpGroup *g, guint n, const int *pids) {
        g_assert_cmpuint(g->members->len, ==, n);
        for (guint i = 0; i < n; i++)
                g_assert_cmpint(member(g, i)->pid, ==, pids[i]);
}

static void test_by_unit(void) {
        setup();
        const NpGroupMember procs[] = {
                { .pid = 302,
                  .unit = "postgresql@15-main.service",
                  .cgroup = "/system.slice/system-postgresql.slice/postgresql@15-main.service" },
                { .pid = 300,
                  .unit = "postgresql@15-main.service",
                  .cgroup = "/system.slice/system-postgresql.slice/postgresql@15-main.service" },
                { .pid = 400, .unit = "cron.service", .cgroup = "/system.slice/cron.service" },
                { .pid = 301,
                  .unit = "postgresql@15-main.service",
                  .cgroup = "/system.slice/system-postgresql.slice/postgresql@15-main.service" },
                { .pid = 1, .unit = "init.scope", .cgroup = "/init.scope" },
                { .pid = 500, .unit = "", .cgroup = "/" },
                { .pid = 600, .unit = "user-1000.slice", .cgroup = "/user.slice/user-1000.slice" },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &units_on);
        g_assert_cmpuint(groups->len, ==, 5);
        /* units first, by name; then the processes of their own, by pid */
        NpGroup *cron = nth(groups, 0), *pg = nth(groups, 1);
        g_assert_cmpint(cron->key.kind, ==, NP_GROUP_UNIT);
        g_assert_cmpstr(cron->key.name, ==, "cron.service");
        assert_members(cron, 1, (int[]){ 400 });
        g_assert_cmpint(pg->key.kind, ==, NP_GROUP_UNIT);
        g_assert_cmpstr(pg->key.name, ==, "postgresql@15-main.service");
        assert_members(pg, 3, (int[]){ 300, 301, 302 });
        for (guint i = 0; i < 3; i++) {
                g_assert_cmpint(member(pg, i)->rule, ==, NP_GROUP_UNIT);
                g_assert_cmpstr(member(pg, i)->what, ==, "postgresql@15-main.service");
        }
        /* init.scope, no unit, a slice: each alone */
        int alone[] = { 1, 500, 600 };
        for (guint i = 0; i < 3; i++) {
                NpGroup *g = nth(groups, 2 + i);
                g_assert_cmpint(g->key.kind, ==, NP_GROUP_PROCESS);
                g_assert_cmpint(g->key.pid, ==, alone[i]);
                g_assert_null(g->key.name);
                assert_members(g, 1, &alone[i]);
                g_assert_cmpint(member(g, 0)->rule, ==, NP_GROUP_PROCESS);
        }
        g_autofree char *name = np_group_key_name(&nth(groups, 3)->key);
        g_assert_cmpstr(name, ==, "pid:500");

        /* not a systemd host: units do not group */
        g_autoptr(GPtrArray) apart = form(procs, G_N_ELEMENTS(procs), &units_off);
        g_assert_cmpuint(apart->len, ==, G_N_ELEMENTS(procs));
        for (guint i = 0; i < apart->len; i++)
                g_assert_cmpint(nth(apart, i)->key.kind, ==, NP_GROUP_PROCESS);
        teardown();
}

/* The units that group when the mechanism holds each process on its own. */
static void test_unit_is_workload(void) {
        const char *const yes[] = { "postgresql@15-main.service", "libpod-aaaa.scope",
                                    "machine-qemu\\x2d1\\x2dvm.scope", "run-r1234.scope", "docker-ab.scope" };
        const char *const no[] = { "session-3.scope", "user@1000.service", "init.scope", "user-1000.slice", "",
                                   "foo.socket" };
        for (size_t i = 0; i < G_N_ELEMENTS(yes); i++)
                g_assert_true(np_group_unit_is_workload(yes[i]));
        for (size_t i = 0; i < G_N_ELEMENTS(no); i++)
                g_assert_false(np_group_unit_is_workload(no[i]));
        g_assert_false(np_group_unit_is_workload(NULL));
}

static void test_cgroup_match(void) {
        const char *const *d = np_group_default_globs;
        struct {
                const char *cgroup, *match;
        } cases[] = {
                /* podman, systemd manager: rootful, rootless, a container running systemd */
                { "/machine.slice/libpod-3f2a.scope", "/machine.slice/libpod-3f2a.scope" },
                { "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-3f2a.scope",
                  "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-3f2a.scope" },
                { "/machine.slice/libpod-3f2a.scope/container", "/machine.slice/libpod-3f2a.scope" },
                /* a podman pod holds its containers */
                { "/machine.slice/machine-libpod_pod_77.slice/libpod-3f2a.scope",
                  "/machine.slice/machine-libpod_pod_77.slice" },
                { "/libpod_parent/libpod-3f2a", "/libpod_parent/libpod-3f2a" },
                /* docker, both drivers */
                { "/system.slice/docker-9c1e.scope", "/system.slice/docker-9c1e.scope" },
                { "/docker/9c1e", "/docker/9c1e" },
                { "/docker/9c1e/sub", "/docker/9c1e" },
                /* libvirt: qemu sits below its machine scope */
                { "/machine.slice/machine-qemu\\x2d1\\x2dguest.scope/libvirt/emulator",
                  "/machine.slice/machine-qemu\\x2d1\\x2dguest.scope" },
                { "/machine/guest.libvirt-qemu/emulator", "/machine/guest.libvirt-qemu" },
                /* Kubernetes, both drivers; docker inside a pod: the outermost match */
                { "/kubepods/pod0a1b/c0ffee", "/kubepods/pod0a1b" },
                { "/kubepods/burstable/pod0a1b/c0ffee", "/kubepods/burstable/pod0a1b" },
                { "/kubepods.slice/kubepods-pod0a1b.slice/cri-containerd-c0ffee.scope",
                  "/kubepods.slice/kubepods-pod0a1b.slice" },
                { "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b.slice/docker-c0ffee.scope",
                  "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0a1b.slice" },
                /* no match */
                { "/kubepods/burstable", NULL },
                { "/kubepods.slice/kubepods-burstable.slice", NULL },
                { "/system.slice/postgresql@15-main.service", NULL },
                { "/", NULL },
                { "", NULL },
                { "machine.slice/libpod-3f2a.scope", NULL }, /* relative: not a cgroup path */
                { NULL, NULL },
        };
        for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
                g_autofree char *m = np_group_cgroup_match(cases[i].cgroup, d);
                g_assert_cmpstr(m, ==, cases[i].match);
        }
        /* FNM_PATHNAME: a star never crosses "/"; an anchored glob matches
         * from the root, another one trailing components; a trailing "/"
         * is no component */
        const char *const star[] = { "/a/*", NULL };
        g_autofree char *deep = np_group_cgroup_match("/x/a/b", star);
        g_assert_null(deep);
        g_autofree char *two = np_group_cgroup_match("/a/b/c/", star);
        g_assert_cmpstr(two, ==, "/a/b");
        const char *const tail[] = { "b/c*", NULL };
        g_autofree char *t = np_group_cgroup_match("/a/b/c1/d", tail);
        g_assert_cmpstr(t, ==, "/a/b/c1");
        g_assert_null(np_group_cgroup_match("/a/b/c1", NULL));
}

static void test_by_glob(void) {
        setup();
        const char *const globs[] = { "libpod-*.scope", NULL };
        NpGroupParams p = { .globs = globs, .units = true, .min_shared_bytes = NP_GROUP_MIN_SHARED_BYTES };
        const NpGroupMember procs[] = {
                { .pid = 21, .unit = "libpod-bbbb.scope", .cgroup = "/machine.slice/libpod-bbbb.scope" },
                { .pid = 11, .unit = "libpod-aaaa.scope", .cgroup = "/machine.slice/libpod-aaaa.scope" },
                { .pid = 12, .unit = "libpod-aaaa.scope", .cgroup = "/machine.slice/libpod-aaaa.scope/container" },
                { .pid = 31, .unit = "libpod-conmon-aaaa.scope", .cgroup = "/machine.slice/libpod-conmon-aaaa.scope" },
                { .pid = 41, .unit = "", .cgroup = "/machine.slice/other" },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &p);
        g_assert_cmpuint(groups->len, ==, 4);
        /* two containers are two groups, named by their cgroups (not their units) */
        NpGroup *a = nth(groups, 0), *b = nth(groups, 1), *conmon = nth(groups, 2), *other = nth(groups, 3);
        g_assert_cmpint(a->key.kind, ==, NP_GROUP_CGROUP);
        g_assert_cmpstr(a->key.name, ==, "/machine.slice/libpod-aaaa.scope");
        assert_members(a, 2, (int[]){ 11, 12 });
        g_assert_cmpint(member(a, 1)->rule, ==, NP_GROUP_CGROUP);
        g_assert_cmpstr(member(a, 1)->what, ==, "/machine.slice/libpod-aaaa.scope");
        g_assert_cmpstr(b->key.name, ==, "/machine.slice/libpod-bbbb.scope");
        assert_members(b, 1, (int[]){ 21 });
        /* conmon's scope matches the glob too: a cgroup of its own */
        g_assert_cmpstr(conmon->key.name, ==, "/machine.slice/libpod-conmon-aaaa.scope");
        /* a path that does not match, without a unit: alone */
        g_assert_cmpint(other->key.kind, ==, NP_GROUP_PROCESS);
        assert_members(other, 1, (int[]){ 41 });
        g_autofree char *name = np_group_key_name(&a->key);
        g_assert_cmpstr(name, ==, "/machine.slice/libpod-aaaa.scope");
        teardown();
}

static void test_shared_sysv(void) {
        setup();
        NpGroupShared a_sh[] = { { { 5, 0x52e2c1 }, "/SYSV0052e2c1", on(2, 0u, 100 * MiB, 1u, 100 * MiB) } };
        NpGroupShared b_sh[] = { { { 5, 0x52e2c1 }, "/SYSV0052e2c1", on(1, 1u, 80 * MiB) } };
        const NpGroupMember procs[] = {
                { .pid = 1234, .cpu = 1.0, .shared = a_sh, .n_shared = 1 },
                { .pid = 1300, .cpu = 1.0, .shared = b_sh, .n_shared = 1 },
                { .pid = 1400, .cpu = 1.0 },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &units_on);
        g_assert_cmpuint(groups->len, ==, 2);
        NpGroup *g = nth(groups, 0);
        g_assert_cmpint(g->key.kind, ==, NP_GROUP_SHARED);
        g_assert_cmpuint(g->key.shared.dev, ==, 5);
        g_assert_cmpuint(g->key.shared.inode, ==, 0x52e2c1);
        g_assert_cmpstr(g->key.name, ==, "/SYSV0052e2c1");
        assert_members(g, 2, (int[]){ 1234, 1300 });
        g_assert_cmpint(member(g, 0)->rule, ==, NP_GROUP_SHARED);
        g_assert_cmpint(member(g, 0)->partner, ==, 1300);
        g_assert_cmpint(member(g, 1)->rule, ==, NP_GROUP_SHARED);
        g_assert_cmpint(member(g, 1)->partner, ==, 1234);
        g_autofree char *why = np_group_join_format(member(g, 1));
        g_assert_cmpstr(why, ==, "maps the same shared memory /SYSV0052e2c1 as 1234");
        g_autofree char *name = np_group_key_name(&g->key);
        g_assert_cmpstr(name, ==, "shm:5432001");
        g_assert_cmpint(nth(groups, 1)->key.kind, ==, NP_GROUP_PROCESS);
        g_assert_cmpuint(g->objects->len, ==, 1);
        g_assert_false(g_array_index(g->objects, NpGroupObject, 0).outside);
        teardown();
}

static void test_shared_fork_child(void) {
        setup();
        /* mmap(MAP_SHARED | MAP_ANONYMOUS) before fork(): one shmem inode, "/dev/zero (deleted)" */
        NpGroupShared parent_sh[] = { { { 1, 4711 }, "/dev/zero (deleted)", on(2, 0u, 200 * MiB, 2u, 200 * MiB) } };
        NpGroupShared child_sh[] = { { { 1, 4711 }, "/dev/zero (deleted)", on(2, 0u, 150 * MiB, 2u, 190 * MiB) } };
        const NpGroupMember procs[] = {
                { .pid = 900, .cpu = 0.1, .per_node = on(1, 0u, 4 * MiB), .shared = parent_sh, .n_shared = 1 },
                { .pid = 901, .cpu = 1.0, .per_node = on(1, 2u, 2 * MiB), .shared = child_sh, .n_shared = 1 },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &units_off);
        g_assert_cmpuint(groups->len, ==, 1);
        NpGroup *g = nth(groups, 0);
        g_assert_cmpint(g->key.kind, ==, NP_GROUP_SHARED);
        g_assert_cmpuint(g->key.shared.inode, ==, 4711);
        assert_members(g, 2, (int[]){ 900, 901 });
        g_assert_cmpint(member(g, 1)->partner, ==, 900);
        teardown();
}

static void test_shared_library_does_not_group(void) {
        setup();
        /* 8 MiB of a library (or a small shm) resident in both: below the threshold */
        NpGroupShared lib[] = { { { 8, 77 }, "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1", on(1, 0u, 8 * MiB) } };
        /* 100 MiB of an object in one, 4 KiB of it in the other: the other does not join */
        NpGroupShared big[] = { { { 1, 99 }, "/dev/shm/pool", on(1, 1u, 100 * MiB) } };
        NpGroupShared peek[] = { { { 1, 99 }, "/dev/shm/pool", on(1, 1u, 4096ull) } };
        const NpGroupMember procs[] = {
                { .pid = 10, .shared = lib, .n_shared = 1 },
                { .pid = 11, .shared = lib, .n_shared = 1 },
                { .pid = 12, .shared = big, .n_shared = 1 },
                { .pid = 13, .shared = peek, .n_shared = 1 },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &units_on);
        g_assert_cmpuint(groups->len, ==, 4);
        for (guint i = 0; i < 4; i++) {
                NpGroup *g = nth(groups, i);
                g_assert_cmpint(g->key.kind, ==, NP_GROUP_PROCESS);
                g_assert_cmpint(g->key.pid, ==, 10 + (int) i);
                /* the object still counts in its demand, and is known to be shared with another group */
                g_assert_cmpuint(g->objects->len, ==, 1);
                g_assert_true(g_array_index(g->objects, NpGroupObject, 0).outside);
        }
        g_assert_cmpuint(nth(groups, 0)->mem, ==, 8 * MiB);
        teardown();
}

static void test_shared_transitive(void) {
        setup();
        const GArray *x = on(1, 0u, 128 * MiB), *y = on(1, 1u, 128 * MiB);
        NpGroupShared a_sh[] = { { { 1, 300 }, "/memfd:x (deleted)", x } };
        NpGroupShared b_sh[] = { { { 1, 300 }, "/memfd:x (deleted)", x }, { { 1, 200 }, "/dev/shm/y", y } };
        NpGroupShared c_sh[] = { { { 1, 200 }, "/dev/shm/y", y } };
        const NpGroupMember procs[] = {
                { .pid = 3, .shared = c_sh, .n_shared = 1 },
                { .pid = 1, .shared = a_sh, .n_shared = 1 },
                { .pid = 2, .shared = b_sh, .n_shared = 2 },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &units_on);
        g_assert_cmpuint(groups->len, ==, 1);
        NpGroup *g = nth(groups, 0);
        /* the key: the smallest object (1, 200); 1 joins through 2 and x */
        g_assert_cmpint(g->key.kind, ==, NP_GROUP_SHARED);
        g_assert_cmpuint(g->key.shared.inode, ==, 200);
        assert_members(g, 3, (int[]){ 1, 2, 3 });
        g_assert_cmpstr(member(g, 0)->what, ==, "/memfd:x (deleted)");
        g_assert_cmpint(member(g, 0)->partner, ==, 2);
        g_assert_cmpstr(member(g, 1)->what, ==, "/dev/shm/y");
        g_assert_cmpint(member(g, 1)->partner, ==, 3);
        g_assert_cmpstr(member(g, 2)->what, ==, "/dev/shm/y");
        g_assert_cmpint(member(g, 2)->partner, ==, 2);
        g_assert_cmpuint(g->mem, ==, 256 * MiB);
        teardown();
}

static void test_shared_joins_cgroups(void) {
        setup();
        /* two containers whose processes share a big segment: one group,
         * named by the first cgroup; the reasons lead back to it */
        const char *const globs[] = { "docker-*.scope", NULL };
        NpGroupParams p = { .globs = globs, .min_shared_bytes = NP_GROUP_MIN_SHARED_BYTES };
        NpGroupShared sh[] = { { { 1, 5 }, "/SYSV00000005", on(1, 0u, 64 * MiB) } };
        const NpGroupMember procs[] = {
                { .pid = 50, .cgroup = "/system.slice/docker-b.scope" },
                { .pid = 40, .cgroup = "/system.slice/docker-b.scope", .shared = sh, .n_shared = 1 },
                { .pid = 30, .cgroup = "/system.slice/docker-a.scope", .shared = sh, .n_shared = 1 },
                { .pid = 20, .cgroup = "/system.slice/docker-a.scope" },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &p);
        g_assert_cmpuint(groups->len, ==, 1);
        NpGroup *g = nth(groups, 0);
        g_assert_cmpint(g->key.kind, ==, NP_GROUP_CGROUP);
        g_assert_cmpstr(g->key.name, ==, "/system.slice/docker-a.scope");
        assert_members(g, 4, (int[]){ 20, 30, 40, 50 });
        g_assert_cmpint(member(g, 0)->rule, ==, NP_GROUP_CGROUP);
        g_assert_cmpint(member(g, 1)->rule, ==, NP_GROUP_CGROUP);
        g_assert_cmpint(member(g, 2)->rule, ==, NP_GROUP_SHARED);
        g_assert_cmpint(member(g, 2)->partner, ==, 30);
        g_assert_cmpint(member(g, 3)->rule, ==, NP_GROUP_CGROUP);
        g_assert_cmpstr(member(g, 3)->what, ==, "/system.slice/docker-b.scope");
        g_autofree char *why = np_group_join_format(member(g, 3));
        g_assert_cmpstr(why, ==, "in cgroup /system.slice/docker-b.scope (Groups=)");
        teardown();
}

static uint64_t node_bytes(const GArray *per_node, unsigned node) {
        for (guint i = 0; i < per_node->len; i++)
                if (g_array_index(per_node, NpNodeBytes, i).node == node)
                        return g_array_index(per_node, NpNodeBytes, i).bytes;
        return 0;
}

static void test_demand(void) {
        setup();
        /* shared_buffers: each backend sees part of it; counted once, per node the most any sees */
        NpGroupShared pm[] = { { { 1, 42 }, "/SYSV0052e2c1", on(2, 0u, 200 * MiB, 1u, 10 * MiB) },
                               { { 8, 7 }, "/usr/lib/libc.so.6", on(1, 0u, 1 * MiB) } };
        NpGroupShared be[] = { { { 1, 42 }, "/SYSV0052e2c1", on(2, 0u, 150 * MiB, 1u, 40 * MiB) },
                               { { 8, 7 }, "/usr/lib/libc.so.6", on(1, 0u, 1 * MiB) } };
        const NpGroupMember procs[] = {
                { .pid = 700,
                  .unit = "postgresql@15-main.service",
                  .cpu = 0.25,
                  .per_node = on(1, 0u, 100 * MiB),
                  .shared = pm,
                  .n_shared = 2 },
                { .pid = 701,
                  .unit = "postgresql@15-main.service",
                  .cpu = 1.5,
                  .per_node = on(2, 1u, 50 * MiB, 3u, 0ull),
                  .shared = be,
                  .n_shared = 2 },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &units_on);
        g_assert_cmpuint(groups->len, ==, 1);
        NpGroup *g = nth(groups, 0);
        g_assert_cmpint(g->key.kind, ==, NP_GROUP_UNIT);
        g_assert_cmpfloat_with_epsilon(g->cpu, 1.75, 1e-9);
        /* private summed, shared once: node 0 100 + 200 + 1, node 1 50 + 40; node 3 (0) omitted */
        g_assert_cmpuint(g->per_node->len, ==, 2);
        g_assert_cmpuint(node_bytes(g->per_node, 0), ==, 301 * MiB);
        g_assert_cmpuint(node_bytes(g->per_node, 1), ==, 90 * MiB);
        g_assert_cmpuint(g->mem, ==, 391 * MiB);
        /* the objects, by (dev, inode) */
        g_assert_cmpuint(g->objects->len, ==, 2);
        const NpGroupObject *o = &g_array_index(g->objects, NpGroupObject, 0);
        g_assert_cmpuint(o->id.inode, ==, 42);
        g_assert_cmpuint(o->bytes, ==, 240 * MiB);
        g_assert_false(o->outside);
        g_assert_cmpuint(g_array_index(g->objects, NpGroupObject, 1).id.dev, ==, 8);
        /* a unit key wins over the shared object that also links them */
        g_assert_cmpint(member(g, 1)->rule, ==, NP_GROUP_UNIT);
        teardown();
}

/* Two formings give the same groups, members and reasons. */
static void assert_same(GPtrArray *a, GPtrArray *b) {
        g_assert_cmpuint(a->len, ==, b->len);
        for (guint i = 0; i < a->len; i++) {
                NpGroup *x = nth(a, i), *y = nth(b, i);
                g_autofree char *nx = np_group_key_name(&x->key);
                g_autofree char *ny = np_group_key_name(&y->key);
                g_assert_cmpstr(nx, ==, ny);
                g_assert_cmpint(x->key.kind, ==, y->key.kind);
                g_assert_cmpuint(x->members->len, ==, y->members->len);
                for (guint k = 0; k < x->members->len; k++) {
                        g_assert_cmpint(member(x, k)->pid, ==, member(y, k)->pid);
                        g_assert_cmpint(member(x, k)->rule, ==, member(y, k)->rule);
                        g_assert_cmpstr(member(x, k)->what, ==, member(y, k)->what);
                        g_assert_cmpint(member(x, k)->partner, ==, member(y, k)->partner);
                }
                g_assert_cmpuint(x->mem, ==, y->mem);
        }
}

static void test_stable(void) {
        setup();
        const char *const globs[] = { "docker-*.scope", NULL };
        NpGroupParams p = { .globs = globs, .units = true, .min_shared_bytes = NP_GROUP_MIN_SHARED_BYTES };
        const GArray *big = on(1, 0u, 100 * MiB);
        NpGroupShared s1[] = { { { 1, 11 }, "/dev/shm/a", big } };
        NpGroupShared s2[] = { { { 1, 12 }, "/dev/shm/b", big }, { { 1, 11 }, "/dev/shm/a", big } };
        NpGroupShared s3[] = { { { 1, 12 }, "/dev/shm/b", big } };
        NpGroupMember procs[] = {
                { .pid = 5, .unit = "a.service", .shared = s1, .n_shared = 1 },
                { .pid = 9, .unit = "a.service" },
                { .pid = 2, .shared = s2, .n_shared = 2 },
                { .pid = 7, .shared = s3, .n_shared = 1 },
                { .pid = 4, .cgroup = "/system.slice/docker-x.scope", .unit = "docker-x.scope" },
                { .pid = 8, .cgroup = "/system.slice/docker-x.scope/init", .unit = "docker-x.scope" },
                { .pid = 6 },
                { .pid = 3, .unit = "b.service" },
        };
        g_autoptr(GPtrArray) first = form(procs, G_N_ELEMENTS(procs), &p);
        g_assert_cmpuint(first->len, ==, 4);
        for (guint round = 0; round < 20; round++) {
                /* a reversal, then shuffles */
                NpGroupMember shuffled[G_N_ELEMENTS(procs)];
                for (guint i = 0; i < G_N_ELEMENTS(procs); i++)
                        shuffled[i] = procs[G_N_ELEMENTS(procs) - 1 - i];
                for (guint i = G_N_ELEMENTS(procs) - 1; round && i > 0; i--) {
                        guint j = (guint) g_random_int_range(0, (gint) i + 1);
                        NpGroupMember t = shuffled[i];
                        shuffled[i] = shuffled[j];
                        shuffled[j] = t;
                }
                g_autoptr(GPtrArray) again = form(shuffled, G_N_ELEMENTS(shuffled), &p);
                assert_same(first, again);
        }
        /* cgroup docker-x.scope; unit a.service with 2, 5, 7, 9 (shared chain); b.service; pid 6 */
        g_assert_cmpint(nth(first, 0)->key.kind, ==, NP_GROUP_CGROUP);
        assert_members(nth(first, 1), 4, (int[]){ 2, 5, 7, 9 });
        g_assert_cmpstr(nth(first, 1)->key.name, ==, "a.service");
        g_assert_cmpstr(nth(first, 2)->key.name, ==, "b.service");
        g_assert_cmpint(nth(first, 3)->key.pid, ==, 6);
        teardown();
}

static bool foreign_in(int pid, void *user) {
        for (const int *f = user; *f; f++)
                if (*f == pid)
                        return true;
        return false;
}

static void test_foreign(void) {
        setup();
        const NpGroupMember procs[] = {
                { .pid = 302, .unit = "postgresql@15-main.service" },
                { .pid = 300, .unit = "postgresql@15-main.service" },
                { .pid = 301, .unit = "postgresql@15-main.service" },
        };
        g_autoptr(GPtrArray) groups = form(procs, G_N_ELEMENTS(procs), &units_on);
        NpGroup *g = nth(groups, 0);
        int two[] = { 302, 301, 0 }, none[] = { 0 }, gone[] = { 999, 0 };
        g_assert_cmpint(np_group_foreign_member(g, foreign_in, two), ==, 301);
        g_assert_cmpint(np_group_foreign_member(g, foreign_in, none), ==, 0);
        g_assert_cmpint(np_group_foreign_member(g, foreign_in, gone), ==, 0);
        g_assert_true(np_group_has_member(g, 300));
        g_assert_true(np_group_has_member(g, 302));
        g_assert_false(np_group_has_member(g, 303));
        teardown();
}

static void test_bad_input(void) {
        const NpGroupMember dup[] = { { .pid = 5 }, { .pid = 6 }, { .pid = 5 } };
        const NpGroupMember zero[] = { { .pid = 0 } };
        GPtrArray *out = NULL;
        g_assert_cmpint(np_groups_form(dup, G_N_ELEMENTS(dup), &units_on, &out), ==, -EINVAL);
        g_assert_cmpint(np_groups_form(zero, 1, &units_on, &out), ==, -EINVAL);
        g_assert_null(out);
        /* no process: no group */
        g_assert_cmpint(np_groups_form(NULL, 0, &units_on, &out), ==, 0);
        g_assert_cmpuint(out->len, ==, 0);
        g_ptr_array_unref(out);
        /* the kinds as the bus names them */
        g_assert_cmpstr(np_group_kind_to_string(NP_GROUP_CGROUP), ==, "cgroup");
        g_assert_cmpstr(np_group_kind_to_string(NP_GROUP_UNIT), ==, "unit");
        g_assert_cmpstr(np_group_kind_to_string(NP_GROUP_SHARED), ==, "shared");
        g_assert_cmpstr(np_group_kind_to_string(NP_GROUP_PROCESS), ==, "process");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/group/by-unit", test_by_unit);
        g_test_add_func("/group/unit-is-workload", test_unit_is_workload);
        g_test_add_func("/group/cgroup-match", test_cgroup_match);
        g_test_add_func("/group/by-glob", test_by_glob);
        g_test_add_func("/group/shared-sysv", test_shared_sysv);
        g_test_add_func("/group/shared-fork-child", test_shared_fork_child);
        g_test_add_func("/group/shared-library-does-not-group", test_shared_library_does_not_group);
        g_test_add_func("/group/shared-transitive", test_shared_transitive);
        g_test_add_func("/group/shared-joins-cgroups", test_shared_joins_cgroups);
        g_test_add_func("/group/demand", test_demand);
        g_test_add_func("/group/stable", test_stable);
        g_test_add_func("/group/foreign", test_foreign);
        g_test_add_func("/group/bad-input", test_bad_input);
        return g_test_run();
}
