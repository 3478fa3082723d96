/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The migration executor: one migrate_pages(2) call per planned pair,
 * accounting from numa_maps, optional pacing to [Migration] MaxRate=.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <linux/mempolicy.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "np-log.h"
#include "np-migrate.h"
#include "np-thread.h"

long np_migrate_pair(pid_t pid, unsigned src, unsigned dst) {
        g_autoptr(NpMask) old_nodes = np_mask_new();
        g_autoptr(NpMask) new_nodes = np_mask_new();
        np_mask_set(old_nodes, src);
        np_mask_set(new_nodes, dst);

        /* Both arrays the same size, with room for the higher id. */
        unsigned need = MAX(src, dst) + 1;
        unsigned long old_bits = 0, new_bits = 0;
        g_autofree unsigned long *old_v = np_mask_to_ulongs(old_nodes, need, &old_bits);
        g_autofree unsigned long *new_v = np_mask_to_ulongs(new_nodes, need, &new_bits);
        g_assert(old_bits == new_bits);

        /* The kernel reads maxnode - 1 bits (get_nodes() decrements it), so
         * maxnode is the array size in bits plus one: every bit we pass,
         * including the last word's highest one, is seen. */
        long r = syscall(SYS_migrate_pages, (long) pid, old_bits + 1, old_v, new_v);
        if (r < 0)
                return -errno;
        return r;
}

/* ---- accounting -------------------------------------------------------- */

/* A tiny node -> bytes map (plans touch a handful of nodes). */
typedef struct {
        GArray *v; /* NpNodeBytes */
} NodeState;

static NpNodeBytes *state_slot(NodeState *s, unsigned node) {
        for (guint i = 0; i < s->v->len; i++) {
                NpNodeBytes *nb = &g_array_index(s->v, NpNodeBytes, i);
                if (nb->node == node)
                        return nb;
        }
        NpNodeBytes nb = { .node = node, .bytes = 0 };
        g_array_append_val(s->v, nb);
        return &g_array_index(s->v, NpNodeBytes, s->v->len - 1);
}

static void state_init(NodeState *s, const NpNumaMaps *m) {
        s->v = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        if (m && m->per_node)
                g_array_append_vals(s->v, m->per_node->data, m->per_node->len);
}

static void state_clear(NodeState *s) {
        g_clear_pointer(&s->v, g_array_unref);
}

static bool refilled_later(const GArray *plan, guint i, guint n_done, unsigned node) {
        for (guint j = i + 1; j < n_done; j++)
                if (g_array_index(plan, NpMovePair, j).dst == node)
                        return true;
        return false;
}

uint64_t np_migrate_moved_bytes(const GArray *plan, guint n_done, const NpNumaMaps *before, const NpNumaMaps *after) {
        g_return_val_if_fail(plan, 0);
        g_return_val_if_fail(before, 0);

        n_done = MIN(n_done, plan->len);

        NodeState st;
        state_init(&st, before);

        uint64_t moved = 0;
        for (guint i = 0; i < n_done; i++) {
                const NpMovePair *p = &g_array_index(plan, NpMovePair, i);
                uint64_t have = state_slot(&st, p->src)->bytes;
                uint64_t stay = 0;

                /* What is still on a source that no later pair refills did
                 * not leave it (pages that failed to move, or shared pages). */
                if (after && !refilled_later(plan, i, n_done, p->src))
                        stay = MIN(np_numa_maps_node_bytes(after, p->src), have);

                uint64_t left = have - stay;
                moved += left;
                state_slot(&st, p->src)->bytes = stay;
                state_slot(&st, p->dst)->bytes += left;
        }

        state_clear(&st);
        return moved;
}

uint64_t np_migrate_full_bytes(const GArray *plan, const bool *full, const NpNumaMaps *after) {
        g_return_val_if_fail(plan && full && after, 0);
        g_autoptr(NpMask) dsts = np_mask_new();
        g_autoptr(NpMask) counted = np_mask_new();
        for (guint i = 0; i < plan->len; i++)
                np_mask_set(dsts, g_array_index(plan, NpMovePair, i).dst);
        uint64_t bytes = 0;
        for (guint i = 0; i < plan->len; i++) {
                unsigned src = g_array_index(plan, NpMovePair, i).src;
                if (!full[i] || np_mask_test(dsts, src) || np_mask_test(counted, src))
                        continue;
                np_mask_set(counted, src);
                bytes += np_numa_maps_node_bytes(after, src);
        }
        return bytes;
}

uint64_t np_migrate_failed_bytes(uint64_t pages, unsigned src, const NpNumaMaps *after, uint64_t base_page) {
        if (!after || !after->per_node)
                return pages * base_page;
        uint64_t on_src = np_numa_maps_node_bytes(after, src), bytes = 0;
        /* huge_per_node is sorted by page size: the largest last */
        for (guint i = after->huge_per_node ? after->huge_per_node->len : 0; i > 0 && pages; i--) {
                const NpHugeBytes *h = &g_array_index(after->huge_per_node, NpHugeBytes, i - 1);
                if (h->node != src || !h->page_bytes)
                        continue;
                uint64_t n = MIN(pages, h->bytes / h->page_bytes);
                bytes += n * h->page_bytes;
                pages -= n;
        }
        bytes += pages * base_page;
        return MIN(bytes, on_src);
}

/* ---- pacing ------------------------------------------------------------- */

uint64_t np_migrate_pace_usec(uint64_t done_bytes, uint64_t max_rate, uint64_t elapsed_usec) {
        if (max_rate == 0 || done_bytes == 0)
                return 0;

        /* need = ceil(done_bytes * 1e6 / max_rate) without overflowing:
         * whole seconds first, then the remainder (< max_rate). */
        const uint64_t M = 1000000;
        uint64_t q = done_bytes / max_rate, rem = done_bytes % max_rate;
        if (q > (UINT64_MAX - M) / M)
                return UINT64_MAX;
        uint64_t need = q * M;
        if (rem <= UINT64_MAX / M)
                need += (rem * M + max_rate - 1) / max_rate;
        else {
#ifdef __SIZEOF_INT128__
                __extension__ typedef unsigned __int128 u128;
                need += (uint64_t) (((u128) rem * M + max_rate - 1) / max_rate);
#else
                /* rem < max_rate: at most M; rounding can only be off by one
                 * microsecond, towards sleeping longer */
                need += (uint64_t) ((long double) rem * (long double) M / (long double) max_rate) + 1;
#endif
        }

        return need > elapsed_usec ? need - elapsed_usec : 0;
}

/* ---- execution ---------------------------------------------------------- */

void np_migrate_result_clear(NpMigrateResult *r) {
        if (!r)
                return;
        np_numa_maps_clear(&r->before);
        np_numa_maps_clear(&r->after);
        np_mask_free(r->full);
        memset(r, 0, sizeof(*r));
}

static void maps_set_empty(NpNumaMaps *m) {
        memset(m, 0, sizeof(*m));
        m->per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
}

/* Read numa_maps into *out; on failure *out is a valid empty NpNumaMaps. */
static int read_maps(pid_t pid, NpNumaMaps *out) {
        NpNumaMaps m = { 0 };
        int k = np_read_numa_maps((int) pid, &m);
        if (k < 0) {
                np_numa_maps_clear(&m);
                maps_set_empty(out);
                return k;
        }
        if (!m.per_node)
                m.per_node = g_array_new(FALSE, FALSE, sizeof(NpNodeBytes));
        *out = m;
        return 0;
}

/* migrate_pages() says EINVAL, not ESRCH, for a process that has already
 * released its memory (exiting, or a zombie): treat those as gone. */
static bool process_gone(pid_t pid) {
        NpPidStat st;
        memset(&st, 0, sizeof(st));
        int k = np_read_pid_stat((int) pid, &st);
        if (k == -ESRCH)
                return true;
        if (k < 0)
                return false;
        return st.state == 'Z' || st.state == 'X' || (st.flags & NP_PF_EXITING);
}

static void log_pair_failure(pid_t pid, const NpMovePair *p, long err) {
        char f_pid[32], f_src[32], f_dst[32], f_errno[32];
        snprintf(f_pid, sizeof(f_pid), "PID=%d", (int) pid);
        snprintf(f_src, sizeof(f_src), "FROM=%u", p->src);
        snprintf(f_dst, sizeof(f_dst), "TO=%u", p->dst);
        snprintf(f_errno, sizeof(f_errno), "ERRNO=%ld", -err);
        const char *const fields[] = { f_pid, f_src, f_dst, f_errno, NULL };

        /* with MoveSharedPages=no the mover drops CAP_SYS_NICE (np-mover.h);
         * without it the kernel refuses nodes outside the process's cpuset */
        const char *why = err == -EPERM && np_thread_has_effective_cap(CAP_SYS_NICE) == 0
                ? " (without CAP_SYS_NICE, as MoveSharedPages=no runs it, the kernel moves pages "
                  "only to nodes the process's cpuset allows)"
                : "";

        np_log_fields(LOG_WARNING, NP_MESSAGE_MIGRATION_FAILED, fields,
                      "migrate_pages(pid %d, node %u -> node %u) failed: %s%s; plan abandoned", (int) pid, p->src,
                      p->dst, g_strerror((int) -err), why);
}

static bool cancelled(const gint *cancel) {
        return cancel && g_atomic_int_get(cancel);
}

/* Sleep for MaxRate in slices, giving up when the move is cancelled.
 * Returns false when the plan should end now. */
static bool pace_sleep(uint64_t usec, const gint *cancel) {
        const uint64_t slice = 50 * 1000;
        while (usec > 0) {
                if (cancelled(cancel))
                        return false;
                uint64_t d = MIN(usec, slice);
                g_usleep((gulong) d);
                usec -= d;
        }
        return !cancelled(cancel);
}

uint64_t np_migrate_retry_failed_bytes(uint64_t failed_bytes, unsigned src, const NpNumaMaps *mid,
                                       const NpNumaMaps *after) {
        uint64_t was = np_numa_maps_node_bytes(mid, src), is = np_numa_maps_node_bytes(after, src);
        uint64_t left = was > is ? was - is : 0;
        return failed_bytes > left ? failed_bytes - left : 0;
}

/* Should pair i be tried again: some of its pages did not move (failed[i]),
 * its destination had room (not full[i]), and no pair of the plan refills
 * its source (moving that again would undo the other pair). */
static bool retry_wanted(const GArray *plan, guint i, const bool *full, const uint64_t *failed) {
        if (!failed[i] || full[i])
                return false;
        unsigned src = g_array_index(plan, NpMovePair, i).src;
        for (guint j = 0; j < plan->len; j++)
                if (g_array_index(plan, NpMovePair, j).dst == src)
                        return false;
        return true;
}

int np_migrate_execute(pid_t pid, const GArray *plan, uint64_t max_rate, const gint *cancel, NpMigrateResult *r) {
        return np_migrate_execute_from(pid, plan, NULL, NULL, max_rate, cancel, r);
}

int np_migrate_plan_dest(const GArray *plan, unsigned node) {
        unsigned cur = node;
        for (guint i = 0; plan && i < plan->len; i++) {
                const NpMovePair *p = &g_array_index(plan, NpMovePair, i);
                if (p->src == cur)
                        cur = p->dst;
        }
        return cur == node ? -1 : (int) cur;
}

/* One batch of a shared range: look the pages up, move those on a source
 * (one move_pages(2) call, counted in r->calls). Returns 0, or a negative
 * errno from move_pages(2). */
static long move_batch(pid_t pid, const GArray *plan, void **pages, unsigned n, uint64_t page_bytes, uint64_t *moved,
                       uint64_t *failed, NpMigrateResult *r) {
        g_autofree int *status = g_new(int, n);
        g_autofree int *nodes = g_new(int, n);
        g_autofree void **which = g_new(void *, n);
        if (syscall(SYS_move_pages, (long) pid, (unsigned long) n, pages, NULL, status, 0) < 0)
                return -errno;
        unsigned k = 0;
        for (unsigned i = 0; i < n; i++) {
                int dst = status[i] >= 0 ? np_migrate_plan_dest(plan, (unsigned) status[i]) : -1;
                if (dst < 0)
                        continue;
                which[k] = pages[i];
                nodes[k++] = dst;
        }
        if (!k)
                return 0;
        r->calls++;
        if (syscall(SYS_move_pages, (long) pid, (unsigned long) k, which, nodes, status, MPOL_MF_MOVE_ALL) < 0 &&
            errno != ENOENT)
                return -errno;
        for (unsigned i = 0; i < k; i++) {
                if (status[i] == nodes[i])
                        *moved += page_bytes;
                else if (status[i] != -ENOENT && status[i] != -EFAULT)
                        *failed += page_bytes;
        }
        return 0;
}

/* The shared ranges after the pairs (see np_migrate_execute_from()), paced
 * with the pairs: *paced_bytes is what the execution moved so far, since t0. */
static void move_ranges(pid_t pid, const GArray *plan, const GArray *shared, uint64_t max_rate, int64_t t0,
                        uint64_t *paced_bytes, const gint *cancel, NpMigrateResult *r) {
        int had = np_thread_has_effective_cap(CAP_SYS_NICE);
        if (had == 0)
                np_thread_set_effective_cap(CAP_SYS_NICE, true);
        uint64_t moved = 0, failed = 0, base = (uint64_t) sysconf(_SC_PAGESIZE);
        g_autofree void **pages = g_new(void *, NP_MIGRATE_RANGE_BATCH);
        for (guint i = 0; i < shared->len && r->error == 0; i++) {
                const NpMigrateRange *rg = &g_array_index(shared, NpMigrateRange, i);
                uint64_t step = rg->page_bytes ? rg->page_bytes : base;
                for (uint64_t a = rg->start; a < rg->end && r->error == 0;) {
                        if (cancelled(cancel)) {
                                r->error = -ECANCELED;
                                break;
                        }
                        unsigned n = 0;
                        for (; n < NP_MIGRATE_RANGE_BATCH && a < rg->end; n++, a += step)
                                pages[n] = (void *) (uintptr_t) a;
                        uint64_t before = moved;
                        long e = move_batch(pid, plan, pages, n, step, &moved, &failed, r);
                        if (e == -ESRCH) {
                                r->error = -ESRCH;
                                break;
                        }
                        if (e < 0) {
                                log_warning("pid %d: cannot move its group's shared memory at %" PRIx64 "-%" PRIx64
                                            ": %s; it stays where it is",
                                            (int) pid, rg->start, rg->end, g_strerror((int) -e));
                                break;
                        }
                        *paced_bytes += moved - before;
                        if (max_rate > 0) {
                                int64_t now = g_get_monotonic_time();
                                uint64_t wait = np_migrate_pace_usec(*paced_bytes, max_rate, (uint64_t) (now - t0));
                                if (wait > 0) {
                                        bool go_on = pace_sleep(wait, cancel);
                                        r->paced_usec += (uint64_t) (g_get_monotonic_time() - now);
                                        if (!go_on)
                                                r->error = -ECANCELED;
                                }
                        }
                }
        }
        if (had == 0)
                np_thread_set_effective_cap(CAP_SYS_NICE, false);
        r->failed_bytes += failed;
        if (moved || failed)
                log_debug("pid %d: %" G_GUINT64_FORMAT " bytes of its group's shared memory moved, %" G_GUINT64_FORMAT
                          " could not move",
                          (int) pid, moved, failed);
}

int np_migrate_execute_from(pid_t pid, const GArray *plan, const GArray *shared, const NpNumaMaps *before,
                            uint64_t max_rate, const gint *cancel, NpMigrateResult *r) {
        g_return_val_if_fail(r, -EINVAL);

        memset(r, 0, sizeof(*r));
        int64_t t0 = g_get_monotonic_time();

        if (pid <= 0 || !plan) {
                maps_set_empty(&r->before);
                maps_set_empty(&r->after);
                r->error = -EINVAL;
                return r->error;
        }

        int k = 0;
        if (before)
                np_numa_maps_copy(before, &r->before);
        else
                k = read_maps(pid, &r->before);
        if (k == -ESRCH) {
                log_debug("pid %d is gone, migration plan dropped", (int) pid);
                maps_set_empty(&r->after);
                r->error = -ESRCH;
                r->usec = (uint64_t) (g_get_monotonic_time() - t0);
                return r->error;
        }
        if (k < 0)
                log_debug("pid %d: numa_maps unreadable (%s), accounting will be empty", (int) pid, g_strerror(-k));

        /* The simulated per-node state drives the pacing estimate: each pair
         * moves what its source holds at that point of the plan. */
        NodeState st;
        state_init(&st, &r->before);
        uint64_t paced_bytes = 0;
        guint n_done = 0;
        g_autofree bool *full = g_new0(bool, plan->len);
        g_autofree uint64_t *failed = g_new0(uint64_t, plan->len); /* positive returns, per pair */

        for (guint i = 0; i < plan->len; i++) {
                const NpMovePair *p = &g_array_index(plan, NpMovePair, i);

                if (cancelled(cancel)) {
                        log_info("Migration of pid %d cancelled after %u of %u pairs", (int) pid, i, plan->len);
                        r->error = -ECANCELED;
                        break;
                }
                long ret = np_migrate_pair(pid, p->src, p->dst);
                r->calls++;

                if (ret == -ENOMEM) {
                        /* the destination is full: what fitted moved, the
                         * rest stays; other pairs may have room */
                        full[i] = true;
                        if (!r->full)
                                r->full = np_mask_new();
                        np_mask_set(r->full, p->dst);
                        ret = 0;
                }
                if (ret < 0) {
                        if (ret == -ESRCH || (ret == -EINVAL && process_gone(pid))) {
                                log_debug("pid %d went away during migration (%u -> %u)", (int) pid, p->src, p->dst);
                                r->error = -ESRCH;
                        } else {
                                log_pair_failure(pid, p, ret);
                                r->error = (int) ret;
                                /* the kernel may have moved part of the
                                 * source before failing (ENOMEM when the
                                 * destination filled up): numa_maps after
                                 * says what left it */
                                n_done++;
                        }
                        break;
                }

                failed[i] = (uint64_t) ret;
                n_done++;

                NpNodeBytes *s = state_slot(&st, p->src);
                uint64_t est = s->bytes;
                s->bytes = 0;
                state_slot(&st, p->dst)->bytes += est;
                paced_bytes += est;

                if (max_rate > 0) {
                        int64_t now = g_get_monotonic_time();
                        uint64_t wait = np_migrate_pace_usec(paced_bytes, max_rate, (uint64_t) (now - t0));
                        if (wait > 0) {
                                bool go_on = pace_sleep(wait, cancel);
                                r->paced_usec += (uint64_t) (g_get_monotonic_time() - now);
                                if (!go_on && i + 1 < plan->len) {
                                        log_info("Migration of pid %d cancelled after %u of %u pairs", (int) pid, i + 1,
                                                 plan->len);
                                        r->error = -ECANCELED;
                                        break;
                                }
                        }
                }
        }
        state_clear(&st);
        if (shared && shared->len && r->error == 0)
                move_ranges(pid, plan, shared, max_rate, t0, &paced_bytes, cancel, r);

        k = read_maps(pid, &r->after);
        bool gone = k == -ESRCH || r->error == -ESRCH;
        if (k == -ESRCH && r->error == 0) {
                log_debug("pid %d exited right after its migration", (int) pid);
                r->error = -ESRCH;
        }

        /* what each pair left behind, in bytes, from numa_maps after the pass */
        g_autofree uint64_t *failed_bytes = g_new0(uint64_t, plan->len);
        bool retry = false;
        for (guint i = 0; i < plan->len; i++) {
                if (!failed[i])
                        continue;
                failed_bytes[i] = np_migrate_failed_bytes(failed[i], g_array_index(plan, NpMovePair, i).src,
                                                          gone ? NULL : &r->after, (uint64_t) sysconf(_SC_PAGESIZE));
                retry = retry || (!gone && r->error == 0 && retry_wanted(plan, i, full, failed));
        }
        if (retry && pace_sleep(NP_MIGRATE_RETRY_USEC, cancel)) {
                for (guint i = 0; i < plan->len && !gone; i++) {
                        if (!retry_wanted(plan, i, full, failed))
                                continue;
                        const NpMovePair *p = &g_array_index(plan, NpMovePair, i);
                        long ret = np_migrate_pair(pid, p->src, p->dst);
                        r->calls++;
                        log_debug("pid %d: %" G_GUINT64_FORMAT
                                  " pages did not move from node %u to %u: tried again (%ld)",
                                  (int) pid, failed[i], p->src, p->dst, ret);
                        gone = ret == -ESRCH || (ret == -EINVAL && process_gone(pid));
                }
                NpNumaMaps mid = r->after;
                memset(&r->after, 0, sizeof(r->after));
                k = read_maps(pid, &r->after);
                gone = gone || k == -ESRCH;
                if (gone) {
                        log_debug("pid %d exited while its migration was tried again", (int) pid);
                        r->error = -ESRCH;
                } else
                        for (guint i = 0; i < plan->len; i++)
                                if (retry_wanted(plan, i, full, failed))
                                        failed_bytes[i] = np_migrate_retry_failed_bytes(
                                                failed_bytes[i], g_array_index(plan, NpMovePair, i).src, &mid,
                                                &r->after);
                np_numa_maps_clear(&mid);
        }

        r->moved_bytes = np_migrate_moved_bytes(plan, n_done, &r->before, gone ? NULL : &r->after);
        for (guint i = 0; i < plan->len; i++)
                r->failed_bytes += failed_bytes[i];
        if (r->full && !gone) {
                uint64_t left = np_migrate_full_bytes(plan, full, &r->after);
                g_autofree char *to = np_mask_format(r->full);
                r->failed_bytes += left;
                log_notice("Migration of pid %d: %s %s had no free memory for it; %.1f MiB stayed where they were",
                           (int) pid, np_mask_weight(r->full) > 1 ? "nodes" : "node", to,
                           (double) left / (1024.0 * 1024.0));
        }
        r->usec = (uint64_t) (g_get_monotonic_time() - t0);
        return r->error;
}
