/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Decision's words, pure: see np-reason.h. */
#include "np-reason.h"

#include <glib.h>

#define MIB (1024.0 * 1024.0)

void np_reason_clear(NpReason *r) {
        np_mask_free(r->nodes);
        np_mask_free(r->on);
        np_mask_free(r->runs_on);
        np_mask_free(r->cpus_before);
        np_mask_free(r->cpus);
        g_free(r->cgroup);
        g_free(r->group);
        g_free(r->error);
        *r = (NpReason){ 0 };
}

void np_reason_copy(NpReason *dst, const NpReason *src) {
        *dst = *src;
        dst->nodes = src->nodes ? np_mask_copy(src->nodes) : NULL;
        dst->on = src->on ? np_mask_copy(src->on) : NULL;
        dst->runs_on = src->runs_on ? np_mask_copy(src->runs_on) : NULL;
        dst->cgroup = g_strdup(src->cgroup);
        dst->group = g_strdup(src->group);
        dst->cpus_before = src->cpus_before ? np_mask_copy(src->cpus_before) : NULL;
        dst->cpus = src->cpus ? np_mask_copy(src->cpus) : NULL;
        dst->error = g_strdup(src->error);
}

static char *fmt_mask(const NpMask *m) {
        return m && !np_mask_empty(m) ? np_mask_format(m) : g_strdup("-");
}

/* Where a process whose memory is held lets its threads run. */
static void add_runs_on(GString *o, const NpReason *r) {
        if (!r->runs_on) {
                g_string_append(o, "its threads run where they may");
                return;
        }
        g_autofree char *on = fmt_mask(r->runs_on);
        g_string_append_printf(o, "its threads run on %s", on);
}

static void add_shortage(GString *o, const NpShortage *x) {
        switch (x->kind) {
        case NP_SHORT_MEMORY:
                g_string_append_printf(
                        o, "memory: %.0f MiB of others' and its %.0f MiB, %.0f MiB at TargetUtilization=%u%%",
                        x->others / MIB, x->its / MIB, x->capacity / MIB, x->target_utilization);
                break;
        case NP_SHORT_CPU:
                g_string_append_printf(o, "CPUs: %.2f of others' ", x->others);
                if (x->background >= 0.005)
                        g_string_append_printf(o, "(%.2f unconfined, %.2f of which the other nodes have room for) ",
                                               x->background, x->background_elsewhere);
                g_string_append_printf(o, "and its %.2f, %.2f at TargetUtilization=%u%%", x->its, x->capacity,
                                       x->target_utilization);
                break;
        case NP_SHORT_HUGE:
                g_string_append_printf(o, "huge pages: its %.0f MiB in %.0f kB pages, %.0f MiB of them free there",
                                       x->its / MIB, (double) x->page_bytes / 1024.0, x->capacity / MIB);
                break;
        case NP_SHORT_NONE:
                break;
        }
}

/* Does the outcome leave the process to the kernel's balancing? */
static bool leaves_to_kernel(const NpReason *r) {
        return r->code == NP_REASON_KERNEL_FINISHING || r->code == NP_REASON_LEFT_TO_KERNEL;
}

static void add_kernel(GString *o, const NpReason *r) {
        switch (r->kernel) {
        case NP_KERNEL_INTERLEAVED:
                g_string_append(o, "the kernel's NUMA balancing does not move interleaved memory; ");
                break;
        case NP_KERNEL_CANNOT_MOVE:
                g_string_append(o,
                                "the kernel's NUMA balancing cannot move most of its memory (a memory policy, "
                                "huge pages, shared memory or files mapped read-only); ");
                break;
        case NP_KERNEL_BEGAN:
                g_string_append_printf(o, "the kernel's NUMA balancing has begun moving its memory (%.0f MiB so far)",
                                       (double) r->kernel_moved / MIB);
                g_string_append(o, leaves_to_kernel(r) ? "; " : ", numaplaced decides at first sight; ");
                break;
        case NP_KERNEL_MOVING:
                g_string_append_printf(
                        o, "the kernel's NUMA balancing is moving its memory to its threads (up from %.0f%%)",
                        r->kernel_before * 100.0);
                g_string_append(o, leaves_to_kernel(r) ? "; " : ", numaplaced finishes it in one move; ");
                break;
        case NP_KERNEL_NOT_LOCAL:
                g_string_append(o, "the kernel's NUMA balancing has not made it local; ");
                break;
        case NP_KERNEL_KEEPS_LOCAL:
                g_string_append(o, "; the kernel's NUMA balancing keeps it local");
                break;
        case NP_KERNEL_EVERY_NODE:
                g_string_append(o, "; it runs on every node: the kernel's NUMA balancing places its pages among them");
                break;
        case NP_KERNEL_NONE:
                break;
        }
}

static void add_share(GString *o, const NpReason *r) {
        g_autofree char *on = fmt_mask(r->on);
        g_string_append_printf(o, "%.0f%% of its memory is on the nodes it runs on (%s)", r->share * 100.0, on);
}

/* What joins an outcome that goes against the context: ", but " after the
 * share of its memory where it runs, "; " after a context that has its
 * own "but" (run apart, scattered). */
static const char *but(const NpReason *r) {
        return r->context == NP_CONTEXT_APART || r->context == NP_CONTEXT_SCATTERED ? "; " : ", but ";
}

static void add_context(GString *o, const NpReason *r) {
        g_autofree char *on = fmt_mask(r->on);
        switch (r->context) {
        case NP_CONTEXT_SHARE:
                add_kernel(o, r);
                add_share(o, r);
                break;
        case NP_CONTEXT_CROWDED:
                g_string_append_printf(o, "placed on %s, which is now crowded (", on);
                add_shortage(o, &r->crowded);
                g_string_append_c(o, ')');
                break;
        case NP_CONTEXT_CROWDED_MEMORY:
                g_string_append_printf(o, "its memory is held on %s, which is now crowded (", on);
                add_shortage(o, &r->crowded);
                g_string_append_c(o, ')');
                break;
        case NP_CONTEXT_SCATTERED:
                add_kernel(o, r);
                g_string_append_printf(o, "it runs on every node (%s), but one holds its demand (%.2f CPUs)", on,
                                       r->cpu);
                break;
        case NP_CONTEXT_APART:
                add_kernel(o, r);
                g_string_append_printf(o,
                                       "its %s run on nodes %s, but fewer hold its demand (%.2f CPUs) and "
                                       "its memory",
                                       r->group_members > 1 ? "processes" : "threads", on, r->cpu);
                break;
        case NP_CONTEXT_NONE:
                break;
        }
}

static const char *failed_why(const NpReason *r) {
        return r->full ? "no free memory there" : "pages in use";
}

/* The CPUs of nodes r->nodes are gone or changed: what was done. */
static void add_hotplug(GString *o, const NpReason *r, const char *nodes) {
        g_autofree char *before = r->cpus_before ? np_mask_format(r->cpus_before) : g_strdup("");
        g_autofree char *cpus = r->cpus ? np_mask_format(r->cpus) : g_strdup("");
        switch (r->code) {
        case NP_REASON_HOTPLUG_RELEASED:
        case NP_REASON_HOTPLUG_RELEASE_FAILED:
                g_string_append_printf(
                        o, "its nodes %s have no online CPU left (CPUs %s went offline): released from %s, ", nodes,
                        before, nodes);
                if (r->code == NP_REASON_HOTPLUG_RELEASED)
                        g_string_append(o, "the policy places it again from where its memory is");
                else
                        g_string_append_printf(o, "not everything could be put back (%s)", r->error);
                break;
        case NP_REASON_HOTPLUG_CONFINE_FAILED:
                g_string_append_printf(
                        o, "the CPUs of its nodes %s changed (%s -> %s): confining it again failed, released (%s)",
                        nodes, before, cpus, r->error);
                break;
        case NP_REASON_HOTPLUG_NO_CPU:
                g_string_append_printf(o, "its nodes %s have no online CPU: it runs on CPUs %s, its memory stays on %s",
                                       nodes, cpus, nodes);
                break;
        case NP_REASON_HOTPLUG_CONFINED:
                if (g_str_equal(before, cpus))
                        g_string_append_printf(o, "the CPUs of its nodes %s changed: confined to CPUs %s again", nodes,
                                               cpus);
                else
                        g_string_append_printf(o, "the CPUs of its nodes %s changed (%s -> %s): confined to CPUs %s",
                                               nodes, before, cpus, cpus);
                break;
        default:
                break;
        }
}

char *np_reason_render(const NpReason *r) {
        GString *o = g_string_new(NULL);
        g_autofree char *nodes = fmt_mask(r->nodes);
        double mib = (double) r->bytes / MIB;

        if (r->group_members > 1)
                g_string_append_printf(o, "with the %u processes of its %s%s%s: ", r->group_members,
                                       r->group_unit ? "unit" : "group", r->group ? " " : "", r->group ? r->group : "");
        add_context(o, r);
        switch (r->code) {
        case NP_REASON_NONE:
                break;
        case NP_REASON_PINNED:
                g_string_append_printf(o, "pinned on %s by Place()", nodes);
                break;
        case NP_REASON_EXCLUDED:
                g_string_append(o, "excluded");
                break;
        case NP_REASON_FOREIGN:
                if (r->member > 0)
                        g_string_append_printf(o,
                                               "the CPUs or memory nodes of its member %d were narrowed by someone "
                                               "else",
                                               r->member);
                else
                        g_string_append(o, "its CPUs or memory nodes were narrowed by someone else");
                /* in the root cgroup, whose cpuset holds everything, only
                 * its own affinity narrows */
                if (r->cgroup && *r->cgroup && !g_str_equal(r->cgroup, "/"))
                        g_string_append_printf(o, " (cgroup %s)", r->cgroup);
                g_string_append(o, ": left alone");
                break;
        case NP_REASON_MOVING:
                g_string_append_printf(o, "moving to %s", nodes);
                break;
        case NP_REASON_RESERVED:
                g_string_append_printf(o, "room on %s held by an answer of Advise()", nodes);
                break;
        case NP_REASON_MAPS_UNKNOWN:
                g_string_append(o, "where its memory is is unknown (numa_maps unreadable)");
                break;
        case NP_REASON_NO_MEMORY:
                g_string_append(o, "it has no memory to place");
                break;
        case NP_REASON_INTERLEAVED:
                g_string_append(o, "its memory is interleaved and KeepInterleaved=yes");
                break;
        case NP_REASON_GROWING:
                g_string_append_printf(o,
                                       "its memory is still growing (%.1f CPUs while it grew): decided once it holds "
                                       "still",
                                       r->cpu);
                break;
        case NP_REASON_CPU_UNMEASURED:
                g_string_append_printf(o,
                                       "its CPU use is not measured yet (%.1f CPUs so far): decided at the follow-up "
                                       "scan",
                                       r->cpu);
                break;
        case NP_REASON_CPU_UNMEASURED_SPREAD:
                g_string_append_printf(o,
                                       "its CPU use is not measured yet (%.1f CPUs so far) and no single node holds it "
                                       "now: decided at the follow-up scan",
                                       r->cpu);
                break;
        case NP_REASON_BACKOFF:
                g_string_append_printf(o,
                                       "its last move could not move %.1f MiB (%s): moved %.0f s ago, waits %.0f s "
                                       "(MinSecondsBetweenMoves=%.0f, doubled %u time%s: one for each move in a row "
                                       "that failed on pages)",
                                       mib, failed_why(r), (double) r->since_usec / 1e6, (double) r->wait_usec / 1e6,
                                       (double) r->min_wait_usec / 1e6, r->doublings, r->doublings > 1 ? "s" : "");
                break;
        case NP_REASON_RECENTLY_MOVED:
                g_string_append_printf(o, "moved %.0f s ago (MinSecondsBetweenMoves=%.0f)",
                                       (double) r->since_usec / 1e6, (double) r->min_wait_usec / 1e6);
                break;
        case NP_REASON_PLACED_ROOM:
                g_string_append_printf(o, "placed on %s, which has room", nodes);
                break;
        case NP_REASON_PLACED_STUCK:
                g_string_append_printf(o,
                                       "placed on %s, which has room (its last move left %.1f MiB elsewhere that it "
                                       "could not move)",
                                       nodes, mib);
                break;
        case NP_REASON_PLACED_FAILED:
                g_string_append_printf(o,
                                       "placed on %s; its last move could not move %.1f MiB (%s): the rest follows "
                                       "when %s has room for it",
                                       nodes, mib, failed_why(r), nodes);
                break;
        case NP_REASON_PLACED_REST:
                g_string_append_printf(o, "placed on %s, but only %.0f%% of its memory is there: moving the rest",
                                       nodes, r->share * 100.0);
                break;
        case NP_REASON_PLACED_MEMORY:
                g_string_append_printf(o, "its memory is held on %s, which has room, ", nodes);
                add_runs_on(o, r);
                g_string_append(o, " (the kernel's NUMA balancing moved its pages back and forth)");
                break;
        case NP_REASON_KERNEL_CHURN:
                g_string_append_printf(o,
                                       "the kernel's NUMA balancing moved %.0f MiB of its %.0f MiB in the last %.0f s "
                                       "without settling: its memory goes to %s (%.0f MiB to move), ",
                                       (double) r->kernel_moved / MIB, (double) r->mem / MIB,
                                       (double) r->window_usec / 1e6, nodes, mib);
                add_runs_on(o, r);
                break;
        case NP_REASON_LOCAL:
                add_share(o, r);
                add_kernel(o, r);
                break;
        case NP_REASON_CROWDED_LOCAL:
                g_string_append_printf(o, ", which are crowded; %s would only take nodes from it: left where it is",
                                       nodes);
                break;
        case NP_REASON_CPU_EVERY_NODE:
                g_string_append_printf(o, "%s%.1f CPUs need every node: left spread", but(r), r->cpu);
                break;
        case NP_REASON_NOFIT:
                g_string_append_printf(o, "%sno set of nodes has room for %.1f CPUs and %.0f MiB", but(r), r->cpu, mib);
                if (r->huge_bytes)
                        g_string_append_printf(o,
                                               " (%.0f MiB of it in hugetlb pages, which need free huge pages of "
                                               "their size)",
                                               (double) r->huge_bytes / MIB);
                g_string_append_printf(o, " at TargetUtilization=%u%%: left where it is", r->target_utilization);
                break;
        case NP_REASON_WAIT_FREE:
                g_string_append_printf(o,
                                       "; %s would hold it but has not the free memory for its pages yet: left "
                                       "where it is for now",
                                       nodes);
                break;
        case NP_REASON_EVERY_NODE:
                g_string_append_printf(o, "%s%.1f CPUs and %.0f MiB need every node: left spread", but(r), r->cpu, mib);
                break;
        case NP_REASON_THREAD_WORKERS:
                g_string_append_printf(o,
                                       "%sit needs %u nodes and its busy threads work on their own pages: left "
                                       "spread",
                                       but(r), r->nodes ? np_mask_weight(r->nodes) : 0);
                break;
        case NP_REASON_THREAD_FAULTS_PENDING:
                g_string_append_printf(o,
                                       "%sit needs %u nodes and the kernel has not counted its busy threads' NUMA "
                                       "faults yet (do they work on their own pages?): left where it is for now",
                                       but(r), r->nodes ? np_mask_weight(r->nodes) : 0);
                break;
        case NP_REASON_STILL_BEST:
                g_string_append_printf(o, "; its nodes %s are still the best", nodes);
                break;
        case NP_REASON_KERNEL_FINISHING:
                g_string_append(o,
                                ": the kernel moved more of it since the read before than is left to move, and is "
                                "done sooner than a move would be: left to the kernel");
                break;
        case NP_REASON_LEFT_TO_KERNEL:
                g_string_append_printf(o,
                                       "%sthe nodes with room for it at TargetUtilization=%u%% (%s) would take its "
                                       "memory from where the kernel moves it: left to the kernel",
                                       but(r), r->target_utilization, nodes);
                break;
        case NP_REASON_PLACE:
        case NP_REASON_PLACE_MEMORY:
                g_string_append_printf(o, r->code == NP_REASON_PLACE ? ": place on %s (" : ": its memory goes to %s (",
                                       nodes);
                if (r->dist_hi && r->dist_lo == r->dist_hi)
                        g_string_append_printf(o, "distance %u, ", r->dist_lo);
                else if (r->dist_hi)
                        g_string_append_printf(o, "distances %u to %u, ", r->dist_lo, r->dist_hi);
                g_string_append_printf(o, "%.0f MiB to move)", mib);
                if (r->code == NP_REASON_PLACE_MEMORY) {
                        g_string_append(o, ", ");
                        add_runs_on(o, r);
                }
                if (r->alone.kind != NP_SHORT_NONE) {
                        g_string_append_printf(o, "; %u alone is too small (", r->alone_node);
                        add_shortage(o, &r->alone);
                        g_string_append_c(o, ')');
                }
                break;
        case NP_REASON_JOIN_GROUP:
                g_string_append_printf(o,
                                       "its %s's other processes are placed on %s: it joins them there (%.0f MiB to "
                                       "move)",
                                       r->group_unit ? "unit" : "group", nodes, mib);
                break;
        case NP_REASON_HOTPLUG_RELEASED:
        case NP_REASON_HOTPLUG_RELEASE_FAILED:
        case NP_REASON_HOTPLUG_CONFINE_FAILED:
        case NP_REASON_HOTPLUG_NO_CPU:
        case NP_REASON_HOTPLUG_CONFINED:
                add_hotplug(o, r, nodes);
                break;
        }
        return g_string_free(o, FALSE);
}
