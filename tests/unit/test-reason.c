/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The Decision's words (np-reason.c): one rendering per code, kernel clause,
 * context and shortage. The man pages, the README and the VM tests quote
 * these texts: a change here is a change users see.
 */
#include <glib.h>
#include <string.h>

#include "np-reason.h"

#define MiB (1024.0 * 1024.0)
#define SEC ((uint64_t) G_USEC_PER_SEC)

static NpMask *mask(const char *list) {
        NpMask *m = NULL;
        if (!list)
                return NULL;
        g_assert_cmpint(np_mask_parse(list, &m), ==, 0);
        return m;
}

/* Render r with `nodes` and `on` (may be NULL) and compare. */
static void check(NpReason r, const char *nodes, const char *on, const char *want) {
        r.nodes = mask(nodes);
        r.on = mask(on);
        r.cgroup = g_strdup(r.cgroup);
        r.group = g_strdup(r.group);
        r.error = g_strdup(r.error);
        r.cpus_before = r.cpus_before ? np_mask_copy(r.cpus_before) : NULL;
        r.cpus = r.cpus ? np_mask_copy(r.cpus) : NULL;
        g_autofree char *got = np_reason_render(&r);
        g_assert_cmpstr(got, ==, want);
        NpReason copy;
        np_reason_copy(&copy, &r);
        g_autofree char *again = np_reason_render(&copy);
        g_assert_cmpstr(again, ==, want);
        np_reason_clear(&copy);
        np_reason_clear(&r);
}

static void test_held(void) {
        check((NpReason){ .code = NP_REASON_PINNED }, "1", NULL, "pinned on 1 by Place()");
        check((NpReason){ .code = NP_REASON_PINNED }, NULL, NULL, "pinned on - by Place()");
        check((NpReason){ .code = NP_REASON_EXCLUDED }, NULL, NULL, "excluded");
        check((NpReason){ .code = NP_REASON_FOREIGN, .cgroup = "/machine/qemu-1-guest.libvirt-qemu/emulator" }, NULL,
              NULL,
              "its CPUs or memory nodes were narrowed by someone else (cgroup "
              "/machine/qemu-1-guest.libvirt-qemu/emulator): left alone");
        /* the root cgroup narrows nothing: not named */
        const char *unnamed[] = { NULL, "", "/" };
        for (guint i = 0; i < G_N_ELEMENTS(unnamed); i++)
                check((NpReason){ .code = NP_REASON_FOREIGN, .cgroup = (char *) unnamed[i] }, NULL, NULL,
                      "its CPUs or memory nodes were narrowed by someone else: left alone");
        check((NpReason){ .code = NP_REASON_MOVING }, "0-1", NULL, "moving to 0-1");
        check((NpReason){ .code = NP_REASON_RESERVED }, "2", NULL, "room on 2 held by an answer of Advise()");
        check((NpReason){ .code = NP_REASON_MAPS_UNKNOWN }, NULL, NULL,
              "where its memory is is unknown (numa_maps unreadable)");
        check((NpReason){ .code = NP_REASON_NO_MEMORY }, NULL, NULL, "it has no memory to place");
        check((NpReason){ .code = NP_REASON_INTERLEAVED }, NULL, NULL,
              "its memory is interleaved and KeepInterleaved=yes");
        check((NpReason){ .code = NP_REASON_GROWING, .cpu = 0.31 }, NULL, NULL,
              "its memory is still growing (0.3 CPUs while it grew): decided once it holds still");
        check((NpReason){ .code = NP_REASON_CPU_UNMEASURED, .cpu = 0.9 }, NULL, NULL,
              "its CPU use is not measured yet (0.9 CPUs so far): decided at the follow-up scan");
        check((NpReason){ .code = NP_REASON_CPU_UNMEASURED_SPREAD, .cpu = 0.55 }, NULL, NULL,
              "its CPU use is not measured yet (0.6 CPUs so far) and no single node holds it now: decided at the "
              "follow-up scan");
        check((NpReason){ .code = NP_REASON_BACKOFF,
                          .bytes = 200 * 1024 * 1024,
                          .full = true,
                          .since_usec = 31 * SEC,
                          .wait_usec = 60 * SEC,
                          .min_wait_usec = 30 * SEC,
                          .doublings = 1 },
              NULL, NULL,
              "its last move could not move 200.0 MiB (no free memory there): moved 31 s ago, waits 60 s "
              "(MinSecondsBetweenMoves=30, doubled 1 time: one for each move in a row that failed on pages)");
        check((NpReason){ .code = NP_REASON_BACKOFF,
                          .bytes = 200 * 1024 * 1024,
                          .since_usec = 119 * SEC,
                          .wait_usec = 120 * SEC,
                          .min_wait_usec = 30 * SEC,
                          .doublings = 2 },
              NULL, NULL,
              "its last move could not move 200.0 MiB (pages in use): moved 119 s ago, waits 120 s "
              "(MinSecondsBetweenMoves=30, doubled 2 times: one for each move in a row that failed on pages)");
        check((NpReason){ .code = NP_REASON_RECENTLY_MOVED, .since_usec = 10 * SEC, .min_wait_usec = 30 * SEC }, NULL,
              NULL, "moved 10 s ago (MinSecondsBetweenMoves=30)");
}

static void test_placed(void) {
        check((NpReason){ .code = NP_REASON_PLACED_ROOM }, "1", NULL, "placed on 1, which has room");
        check((NpReason){ .code = NP_REASON_PLACED_STUCK, .bytes = 160 * 1024 * 1024 }, "1", NULL,
              "placed on 1, which has room (its last move left 160.0 MiB elsewhere that it could not move)");
        check((NpReason){ .code = NP_REASON_PLACED_FAILED, .bytes = 200 * 1024 * 1024, .full = true }, "1", NULL,
              "placed on 1; its last move could not move 200.0 MiB (no free memory there): the rest follows when 1 "
              "has room for it");
        check((NpReason){ .code = NP_REASON_PLACED_REST, .share = 0.667 }, "1", NULL,
              "placed on 1, but only 67% of its memory is there: moving the rest");
}

static void test_local(void) {
        check((NpReason){ .code = NP_REASON_LOCAL, .share = 0.95 }, NULL, "1",
              "95% of its memory is on the nodes it runs on (1)");
        check((NpReason){ .code = NP_REASON_LOCAL, .share = 0.98, .kernel = NP_KERNEL_KEEPS_LOCAL }, NULL, "3",
              "98% of its memory is on the nodes it runs on (3); the kernel's NUMA balancing keeps it local");
        check((NpReason){ .code = NP_REASON_LOCAL, .share = 1.0, .kernel = NP_KERNEL_EVERY_NODE }, NULL, "0-3",
              "100% of its memory is on the nodes it runs on (0-3); it runs on every node: the kernel's NUMA "
              "balancing places its pages among them");
}

/* The outcomes of a placement after the context of a process found not
 * local (with what the kernel does about it) or crowded where it is. */
static void test_outcomes(void) {
        NpReason share = { .context = NP_CONTEXT_SHARE, .share = 0.25 };
        NpReason r = share;
        r.code = NP_REASON_CROWDED_LOCAL;
        r.share = 1.0;
        check(r, "0,2-3", "0-3",
              "100% of its memory is on the nodes it runs on (0-3), which are crowded; 0,2-3 would only take nodes "
              "from it: left where it is");
        r = share;
        r.code = NP_REASON_CPU_EVERY_NODE;
        r.cpu = 3.6;
        check(r, NULL, "0",
              "25% of its memory is on the nodes it runs on (0), but 3.6 CPUs need every node: left spread");
        r = share;
        r.code = NP_REASON_NOFIT;
        r.cpu = 1.0;
        r.bytes = 400 * 1024 * 1024;
        r.target_utilization = 85;
        r.share = 0;
        check(r, NULL, "0",
              "0% of its memory is on the nodes it runs on (0), but no set of nodes has room for 1.0 CPUs and 400 MiB "
              "at TargetUtilization=85%: left where it is");
        r.bytes = 204 * 1024 * 1024;
        r.huge_bytes = 200 * 1024 * 1024;
        check(r, NULL, "1",
              "0% of its memory is on the nodes it runs on (1), but no set of nodes has room for 1.0 CPUs and 204 MiB "
              "(200 MiB of it in hugetlb pages, which need free huge pages of their size) at TargetUtilization=85%: "
              "left where it is");
        r = share;
        r.code = NP_REASON_WAIT_FREE;
        check(r, "1", "0",
              "25% of its memory is on the nodes it runs on (0); 1 would hold it but has not the free memory for its "
              "pages yet: left where it is for now");
        r = share;
        r.code = NP_REASON_EVERY_NODE;
        r.cpu = 3.6;
        r.bytes = 400 * 1024 * 1024;
        check(r, NULL, "0",
              "25% of its memory is on the nodes it runs on (0), but 3.6 CPUs and 400 MiB need every node: left "
              "spread");
        r = share;
        r.code = NP_REASON_STILL_BEST;
        check(r, "2-3", "2", "25% of its memory is on the nodes it runs on (2); its nodes 2-3 are still the best");
        r = share;
        r.code = NP_REASON_PLACE;
        r.bytes = 240 * 1024 * 1024;
        check(r, "1", "1", "25% of its memory is on the nodes it runs on (1): place on 1 (240 MiB to move)");
        r.dist_lo = r.dist_hi = 20;
        r.alone_node = 0;
        r.alone = (NpShortage){ .kind = NP_SHORT_CPU,
                                .others = 0.4,
                                .its = 0.6,
                                .capacity = 0.85,
                                .target_utilization = 85 };
        check(r, "0-1", "1",
              "25% of its memory is on the nodes it runs on (1): place on 0-1 (distance 20, 240 MiB to move); 0 alone "
              "is too small (CPUs: 0.40 of others' and its 0.60, 0.85 at TargetUtilization=85%)");
        r.alone.background = 0.3;
        r.alone.background_elsewhere = 0.1;
        check(r, "0-1", "1",
              "25% of its memory is on the nodes it runs on (1): place on 0-1 (distance 20, 240 MiB to move); 0 alone "
              "is too small (CPUs: 0.40 of others' (0.30 unconfined, 0.10 of which the other nodes have room for) and "
              "its 0.60, 0.85 at TargetUtilization=85%)");
        r.dist_hi = 30;
        r.alone_node = 4;
        r.alone = (NpShortage){ .kind = NP_SHORT_MEMORY,
                                .others = 95 * MiB,
                                .its = 10240 * MiB,
                                .capacity = 6963.2 * MiB,
                                .target_utilization = 85 };
        check(r, "4-6", "1",
              "25% of its memory is on the nodes it runs on (1): place on 4-6 (distances 20 to 30, 240 MiB to move); 4 "
              "alone is too small (memory: 95 MiB of others' and its 10240 MiB, 6963 MiB at TargetUtilization=85%)");
        r.dist_lo = r.dist_hi = 20;
        r.alone_node = 2;
        r.alone = (NpShortage){ .kind = NP_SHORT_HUGE,
                                .its = 300 * MiB,
                                .page_bytes = 2 * 1024 * 1024,
                                .capacity = 200 * MiB };
        check(r, "2-3", "2",
              "25% of its memory is on the nodes it runs on (2): place on 2-3 (distance 20, 240 MiB to move); 2 alone "
              "is too small (huge pages: its 300 MiB in 2048 kB pages, 200 MiB of them free there)");
}

/* After a context with its own "but" (threads run apart, scattered), an
 * outcome against it is joined by "; ", not a second "but". */
static void test_apart_outcomes(void) {
        NpReason r = { .context = NP_CONTEXT_APART, .cpu = 2.4, .code = NP_REASON_THREAD_WORKERS };
        check(r, "0-2", "0-3",
              "its threads run on nodes 0-3, but fewer hold its demand (2.40 CPUs) and its memory; it needs 3 nodes "
              "and its busy threads work on their own pages: left spread");
        r.code = NP_REASON_THREAD_FAULTS_PENDING;
        check(r, "0-2", "0-3",
              "its threads run on nodes 0-3, but fewer hold its demand (2.40 CPUs) and its memory; it needs 3 nodes "
              "and the kernel has not counted its busy threads' NUMA faults yet (do they work on their own pages?): "
              "left where it is for now");
        r = (NpReason){ .context = NP_CONTEXT_SCATTERED,
                        .cpu = 0.4,
                        .code = NP_REASON_NOFIT,
                        .bytes = 400 * MiB,
                        .target_utilization = 85 };
        check(r, NULL, "0-3",
              "it runs on every node (0-3), but one holds its demand (0.40 CPUs); no set of nodes has room for 0.4 "
              "CPUs and 400 MiB at TargetUtilization=85%: left where it is");
        /* after the share of its memory, "but" as before */
        r = (NpReason){ .context = NP_CONTEXT_SHARE, .share = 0.5, .code = NP_REASON_THREAD_WORKERS };
        check(r, "0-2", "0-3",
              "50% of its memory is on the nodes it runs on (0-3), but it needs 3 nodes and its busy threads work on "
              "their own pages: left spread");
}

static void test_kernel_clauses(void) {
        NpReason r = { .context = NP_CONTEXT_SHARE,
                       .code = NP_REASON_PLACE,
                       .share = 0.25,
                       .bytes = 240 * 1024 * 1024 };
        r.kernel = NP_KERNEL_INTERLEAVED;
        check(r, "1", "1",
              "the kernel's NUMA balancing does not move interleaved memory; 25% of its memory is on the nodes it runs "
              "on (1): place on 1 (240 MiB to move)");
        r.kernel = NP_KERNEL_CANNOT_MOVE;
        check(r, "1", "1",
              "the kernel's NUMA balancing cannot move most of its memory (a memory policy, huge pages, shared "
              "memory or files mapped read-only); 25% of its "
              "memory is on the nodes it runs on (1): place on 1 (240 MiB to move)");
        r.kernel = NP_KERNEL_MOVING;
        r.kernel_before = 0.55;
        r.share = 0.70;
        r.bytes = 96 * 1024 * 1024;
        check(r, "3", "3",
              "the kernel's NUMA balancing is moving its memory to its threads (up from 55%), numaplaced finishes it "
              "in one move; 70% of its memory is on the nodes it runs on (3): place on 3 (96 MiB to move)");
        r.kernel = NP_KERNEL_BEGAN;
        r.kernel_moved = 116 * 1024 * 1024;
        r.share = 0.74;
        r.bytes = 126 * 1024 * 1024;
        check(r, "3", "1,3",
              "the kernel's NUMA balancing has begun moving its memory (116 MiB so far), numaplaced decides at first "
              "sight; 74% of its memory is on the nodes it runs on (1,3): place on 3 (126 MiB to move)");
        /* its nodes short of room, the set with room elsewhere: left to
         * the kernel, which moves it there anyway */
        r.code = NP_REASON_LEFT_TO_KERNEL;
        r.target_utilization = 85;
        check(r, "2", "3",
              "the kernel's NUMA balancing has begun moving its memory (116 MiB so far); 74% of its memory is on the "
              "nodes it runs on (3), but the nodes with room for it at TargetUtilization=85% (2) would take its memory "
              "from where the kernel moves it: left to the kernel");
        r.kernel = NP_KERNEL_MOVING;
        r.kernel_before = 0.18;
        r.share = 0.69;
        check(r, "2", "3",
              "the kernel's NUMA balancing is moving its memory to its threads (up from 18%); 69% of its memory is on "
              "the nodes it runs on (3), but the nodes with room for it at TargetUtilization=85% (2) would take its "
              "memory from where the kernel moves it: left to the kernel");
        r.code = NP_REASON_KERNEL_FINISHING;
        r.kernel_before = 0.19;
        r.share = 0.73;
        check(r, NULL, "3",
              "the kernel's NUMA balancing is moving its memory to its threads (up from 19%); 73% of its memory is on "
              "the nodes it runs on (3): the kernel moved more of it since the read before than is left to move, and "
              "is done sooner than a move would be: left to the kernel");
        r.code = NP_REASON_PLACE;
        r.kernel = NP_KERNEL_NOT_LOCAL;
        r.share = 0.25;
        r.bytes = 240 * 1024 * 1024;
        check(r, "3", "3",
              "the kernel's NUMA balancing has not made it local; 25% of its memory is on the nodes it runs on (3): "
              "place on 3 (240 MiB to move)");
}

static void test_crowded(void) {
        NpReason r = { .context = NP_CONTEXT_CROWDED,
                       .code = NP_REASON_EVERY_NODE,
                       .cpu = 0.5,
                       .bytes = 700 * 1024 * 1024 };
        r.crowded = (NpShortage){ .kind = NP_SHORT_MEMORY,
                                  .others = 294 * MiB,
                                  .its = 700 * MiB,
                                  .capacity = 870.4 * MiB,
                                  .target_utilization = 85 };
        check(r, NULL, "1",
              "placed on 1, which is now crowded (memory: 294 MiB of others' and its 700 MiB, 870 MiB at "
              "TargetUtilization=85%), but 0.5 CPUs and 700 MiB need every node: left spread");
        r.crowded = (NpShortage){ .kind = NP_SHORT_CPU,
                                  .others = 1.5,
                                  .its = 1.0,
                                  .capacity = 1.7,
                                  .target_utilization = 85 };
        r.code = NP_REASON_PLACE;
        r.bytes = 0;
        r.dist_lo = r.dist_hi = 20;
        check(r, "0-1", "1",
              "placed on 1, which is now crowded (CPUs: 1.50 of others' and its 1.00, 1.70 at TargetUtilization=85%): "
              "place on 0-1 (distance 20, 0 MiB to move)");
        r.crowded =
                (NpShortage){ .kind = NP_SHORT_HUGE, .its = 300 * MiB, .page_bytes = 2 * 1024 * 1024, .capacity = 0 };
        r.code = NP_REASON_STILL_BEST;
        check(r, "1", "1",
              "placed on 1, which is now crowded (huge pages: its 300 MiB in 2048 kB pages, 0 MiB of them free there); "
              "its nodes 1 are still the best");
}

/* The notes that lead the Decision of a held process whose nodes' CPUs
 * changed. */
static void test_hotplug(void) {
        g_autoptr(NpMask) two = mask("2");
        g_autoptr(NpMask) two_three = mask("2-3");
        g_autoptr(NpMask) others = mask("0-1,3");
        NpReason r = { .code = NP_REASON_HOTPLUG_RELEASED, .cpus_before = two };
        check(r, "2", NULL,
              "its nodes 2 have no online CPU left (CPUs 2 went offline): released from 2, the policy places it again "
              "from where its memory is");
        r.code = NP_REASON_HOTPLUG_RELEASE_FAILED;
        r.error = "Permission denied";
        check(r, "2", NULL,
              "its nodes 2 have no online CPU left (CPUs 2 went offline): released from 2, not everything could be "
              "put back (Permission denied)");
        r.code = NP_REASON_HOTPLUG_CONFINE_FAILED;
        r.cpus_before = two_three;
        r.cpus = two;
        check(r, "1", NULL,
              "the CPUs of its nodes 1 changed (2-3 -> 2): confining it again failed, released (Permission denied)");
        r.error = NULL;
        r.code = NP_REASON_HOTPLUG_CONFINED;
        check(r, "1", NULL, "the CPUs of its nodes 1 changed (2-3 -> 2): confined to CPUs 2");
        r.cpus_before = two;
        check(r, "1", NULL, "the CPUs of its nodes 1 changed: confined to CPUs 2 again");
        r.code = NP_REASON_HOTPLUG_NO_CPU;
        r.cpus = others;
        check(r, "2", NULL, "its nodes 2 have no online CPU: it runs on CPUs 0-1,3, its memory stays on 2");
}

static void test_unit(void) {
        check((NpReason){ .code = NP_REASON_PINNED, .group_members = 2, .group_unit = true }, "1", NULL,
              "with the 2 processes of its unit: pinned on 1 by Place()");
        check((NpReason){ .code = NP_REASON_PLACED_ROOM, .group_members = 1 }, "1", NULL,
              "placed on 1, which has room");
        check((NpReason){ .code = NP_REASON_JOIN_GROUP,
                          .group_members = 2,
                          .group_unit = true,
                          .bytes = 110 * 1024 * 1024 },
              "2", NULL,
              "with the 2 processes of its unit: its unit's other processes are placed on 2: it joins them there "
              "(110 MiB to move)");
        /* a unit named */
        check((NpReason){ .code = NP_REASON_JOIN_GROUP,
                          .group_members = 3,
                          .group = "postgresql@15-main.service",
                          .group_unit = true,
                          .bytes = 110 * 1024 * 1024 },
              "2", NULL,
              "with the 3 processes of its unit postgresql@15-main.service: its unit's other processes are placed "
              "on 2: it joins them there (110 MiB to move)");
        /* a Groups= cgroup */
        check((NpReason){ .code = NP_REASON_JOIN_GROUP,
                          .group_members = 3,
                          .group = "/machine.slice/libpod-1.scope",
                          .bytes = 110 * 1024 * 1024 },
              "2", NULL,
              "with the 3 processes of its group /machine.slice/libpod-1.scope: its group's other processes are "
              "placed on 2: it joins them there (110 MiB to move)");
        check((NpReason){ .code = NP_REASON_FOREIGN,
                          .group_members = 2,
                          .group = "/machine.slice/libpod-1.scope",
                          .member = 4242,
                          .cgroup = "/machine.slice/libpod-1.scope/container" },
              NULL, NULL,
              "with the 2 processes of its group /machine.slice/libpod-1.scope: the CPUs or memory nodes of its "
              "member 4242 were narrowed by someone else (cgroup /machine.slice/libpod-1.scope/container): left "
              "alone");
}

int main(int argc, char **argv) {
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/reason/held", test_held);
        g_test_add_func("/reason/placed", test_placed);
        g_test_add_func("/reason/local", test_local);
        g_test_add_func("/reason/outcomes", test_outcomes);
        g_test_add_func("/reason/apart-outcomes", test_apart_outcomes);
        g_test_add_func("/reason/kernel-clauses", test_kernel_clauses);
        g_test_add_func("/reason/crowded", test_crowded);
        g_test_add_func("/reason/hotplug", test_hotplug);
        g_test_add_func("/reason/unit", test_unit);
        return g_test_run();
}
