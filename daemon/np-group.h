/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/*
 * Placement groups (pure: no I/O, no daemon state): what the policy decides
 * and a mechanism confines as one. np_groups_form() takes a snapshot of
 * processes (NpGroupMember) and returns their groups; each process is in
 * exactly one.
 *
 * Two processes are in one group when they are related by a rule of the
 * table in np-group.c, in its order, or through a chain of such relations
 * (union-find over all rules, so a Groups= cgroup or a unit absorbs the
 * processes that share memory with its members):
 *
 *   1. cgroup: their cgroups lie in the same cgroup matching a Groups= glob
 *      (np_group_cgroup_match(): the outermost match, so two containers are
 *      two groups and a pod holds its containers);
 *   2. unit: they are processes of the same systemd service or scope (the
 *      unit name ends in .service or .scope, init.scope excepted; the
 *      caller passes only the units that group, see
 *      np_group_unit_is_workload());
 *   3. shared: each has at least min_shared_bytes of one shared memory
 *      object resident in its mapping (a library-sized object never groups);
 *   4. otherwise a process is a group of its own.
 */
#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "np-numa-maps.h"
#include "np-sample.h"

/* The kinds of group, in the rules' order (a group's key is of the first
 * kind among its members' relations). Also the reason a member joined. */
typedef enum {
        NP_GROUP_CGROUP, /* a cgroup matching a Groups= glob */
        NP_GROUP_UNIT, /* a systemd service or scope */
        NP_GROUP_SHARED, /* processes mapping one shared memory object */
        NP_GROUP_PROCESS, /* a process of its own */
} NpGroupKind;

/* "cgroup", "unit", "shared", "process" (the Group's Kind on the bus). */
const char *np_group_kind_to_string(NpGroupKind k);

/* Is `unit` a workload whose processes belong together when nothing else
 * ties them (the mechanism confines each process on its own)? Services and
 * scopes are, except the ones that hold a user's unrelated jobs: login
 * sessions (session-*.scope) and user managers (user@*.service); and
 * init.scope. */
bool np_group_unit_is_workload(const char *unit);

/* The default Groups= globs, each with the cgroups it matches. */
/* clang-format off */
#define NP_GROUP_DEFAULT_GLOBS                                                                                         \
        "libpod-*.scope",                                                                                              \
        /* podman, systemd manager: /machine.slice/libpod-<id>.scope; rootless:                                        \
         * /user.slice/user-<uid>.slice/user@<uid>.service/user.slice/libpod-<id>.scope */                             \
        "/machine.slice/machine-libpod_pod_*.slice",                                                                   \
        /* a podman pod, holding its containers' scopes */                                                             \
        "/libpod_parent/libpod-*",                                                                                     \
        /* podman, cgroupfs manager: /libpod_parent/libpod-<id> */                                                     \
        "docker-*.scope",                                                                                              \
        /* docker, systemd driver: /system.slice/docker-<id>.scope */                                                  \
        "/docker/*",                                                                                                   \
        /* docker, cgroupfs driver: /docker/<id> */                                                                    \
        "/machine.slice/machine-*.scope",                                                                              \
        /* libvirt guests (machined): /machine.slice/machine-qemu\x2d<n>\x2d<name>.scope, whose qemu                  \
         * sits below it in libvirt/emulator, libvirt/vcpu<n> */                                                       \
        "/machine/*.libvirt-qemu",                                                                                     \
        /* libvirt without systemd (cgroup v1): /machine/<name>.libvirt-qemu */                                        \
        "/kubepods/pod*", "/kubepods/burstable/pod*", "/kubepods/besteffort/pod*",                                     \
        /* Kubernetes pods, cgroupfs driver: guaranteed, burstable, best effort (/kubepods/burstable/pod<uid>) */      \
        "kubepods-*pod*.slice"                                                                                         \
        /* Kubernetes pods, systemd driver: /kubepods.slice/kubepods-pod<uid>.slice,                                   \
         * /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice */
/* clang-format on */

/* NP_GROUP_DEFAULT_GLOBS, NULL-terminated. */
extern const char *const np_group_default_globs[];

/* Shared memory that groups: 64 MiB, a fifth of MinProcessMemory=300M, is
 * memory worth keeping beside its users, while IPC buffers (Wayland, audio,
 * D-Bus memfds) stay far below it. */
#define NP_GROUP_MIN_SHARED_BYTES (64ull << 20)

/* A shared memory object: its backing inode (SysV shm, a memfd or /dev/shm
 * file, shared anonymous memory: "/dev/zero (deleted)" on the shmem mount). */
typedef struct {
        uint64_t dev;
        uint64_t inode;
} NpSharedId;

/* The id of the object a mapping on device major:minor, inode maps. */
static inline NpSharedId np_shared_id(unsigned major, unsigned minor, uint64_t inode) {
        return (NpSharedId){ .dev = ((uint64_t) major << 32) | minor, .inode = inode };
}

static inline bool np_shared_id_equal(const NpSharedId *a, const NpSharedId *b) {
        return a->dev == b->dev && a->inode == b->inode;
}

/* One shared object as one process maps it. */
typedef struct {
        NpSharedId id;
        const char *name; /* as numa_maps shows it, e.g. "/SYSV0052e2c1" */
        const GArray *per_node; /* NpNodeBytes: its pages resident in this process's
                                 * mappings, by node; NULL = none */
} NpGroupShared;

/* One process of the snapshot. The caller lists the shared memory it maps
 * (not libraries or other regular files) and keeps everything pointed to
 * until np_groups_form() returns. */
typedef struct {
        int pid; /* > 0, distinct */
        const char *unit; /* its systemd unit; NULL or "" = none */
        const char *cgroup; /* its cgroup path ("/a/b"); NULL or "" = unknown */
        double cpu; /* CPUs it uses */
        const GArray *per_node; /* NpNodeBytes: its pages outside `shared`; NULL = none */
        const NpGroupShared *shared;
        guint n_shared;
} NpGroupMember;

typedef struct {
        const char *const *globs; /* Groups=: NULL-terminated; NULL = none */
        bool units; /* rule 2: group systemd services and scopes (a systemd host) */
        uint64_t min_shared_bytes; /* rule 3: NP_GROUP_MIN_SHARED_BYTES by default */
} NpGroupParams;

/* What names a group: the smallest key of the first kind among its
 * members' relations (by path, unit name, (dev, inode) or pid), so the same
 * snapshot in any order gives the same keys. */
typedef struct {
        NpGroupKind kind;
        char *name; /* CGROUP: the matched cgroup; UNIT: the unit; SHARED: the object's name;
                     * PROCESS: NULL */
        NpSharedId shared; /* SHARED: the object */
        int pid; /* PROCESS: the process */
} NpGroupKey;

/* Why a member is in its group. Members with the group's key relation join
 * by it; each other member by a relation (in the rules' order) it has with a
 * member already joined, so the reasons chain back to the key. */
typedef struct {
        int pid;
        NpGroupKind rule; /* PROCESS: the group is this process alone */
        char *what; /* CGROUP: its matched cgroup; UNIT: its unit; SHARED: the object's name;
                     * PROCESS: NULL */
        int partner; /* SHARED: a member mapping the same object (joined before it), else 0 */
} NpGroupJoin;

/* A shared object some member maps, counted once in the group's demand. */
typedef struct {
        NpSharedId id;
        char *name;
        GArray *per_node; /* NpNodeBytes sorted by node: per node, the most any member has there */
        uint64_t bytes; /* their sum */
        bool outside; /* a process of another group of the snapshot maps it too (not the group's alone) */
} NpGroupObject;

typedef struct {
        NpGroupKey key;
        GArray *members; /* NpGroupJoin sorted by pid */
        double cpu; /* the sum of the members' */
        GArray *per_node; /* NpNodeBytes sorted by node, 0 omitted: the members' private pages
                           * summed plus each object's pages once */
        uint64_t mem; /* the sum of per_node */
        GArray *objects; /* NpGroupObject sorted by (dev, inode) */
} NpGroup;

void np_group_free(NpGroup *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(NpGroup, np_group_free)

/* The outermost of `cgroup` and its ancestors that one of `globs` matches,
 * or NULL (also for a NULL, empty or relative cgroup). A glob starting with
 * "/" is matched against the whole path, any other against its trailing
 * components ("docker-*.scope" matches /system.slice/docker-1.scope); with
 * fnmatch(3)'s FNM_PATHNAME: `*`, `?` and `[...]` never match "/". Caller frees. */
char *np_group_cgroup_match(const char *cgroup, const char *const *globs);

/* Form the groups of `procs` (n of them). Returns 0 and in *out a new
 * GPtrArray of NpGroup* (freed with it) sorted by key (kind, then name,
 * object or pid); or -EINVAL (*out untouched) when a pid is <= 0 or appears
 * twice. */
int np_groups_form(const NpGroupMember *procs, guint n, const NpGroupParams *params, GPtrArray **out);

/* Is pid a member of g? */
bool np_group_has_member(const NpGroup *g, int pid);

/* The group is foreign when a member is (narrowed by someone else):
 * returns the first foreign member by pid, or 0 when none is.
 * is_foreign(pid, user) says whether one member is. */
int np_group_foreign_member(const NpGroup *g, bool (*is_foreign)(int pid, void *user), void *user);

/* The group's Name on the bus: the cgroup path, the unit, "shm:<inode>" or
 * "pid:<n>". Caller frees. */
char *np_group_key_name(const NpGroupKey *k);

/* A member's reason as one line for the Decision, e.g. "maps the same
 * shared memory /SYSV0052e2c1 as 1234". Caller frees. */
char *np_group_join_format(const NpGroupJoin *j);
