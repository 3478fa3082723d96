/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The mover: a queue of moves and their worker threads. See np-mover.h. */
#include "np-mover.h"

#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "np-log.h"
#include "np-test-api.h"
#include "np-thread.h"

/* A move on a worker thread. */
typedef struct {
        NpMover *mover;
        NpMove *mv;
        GThread *thread;
        gint cancel; /* read by the worker between calls */
        gint finished; /* set by the worker before it wakes the loop */
} Slot;

struct NpMover {
        sd_event_source *io; /* the workers' eventfd on the main loop */
        sd_event_source *retry; /* asks the owner again (NP_MOVER_RETRY_USEC) */
        int efd;
        GQueue queue; /* NpMove*, waiting */
        GPtrArray *running; /* Slot*, on their workers, in the order they started */
        bool kicking; /* in kick(): submissions from callbacks just queue */
        NpMovePrepareFn prepare;
        NpMoveMayStartFn may_start;
        NpMoveDoneFn done;
        void *userdata;
};

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * G_USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

NpMove *np_move_new(pid_t pid, uint64_t starttime, uint64_t max_rate, void *data, GDestroyNotify data_free) {
        NpMove *mv = g_new0(NpMove, 1);
        mv->pid = pid;
        mv->starttime = starttime;
        mv->max_rate = max_rate;
        mv->data = data;
        mv->data_free = data_free;
        return mv;
}

void np_move_free(NpMove *mv) {
        if (!mv)
                return;
        if (mv->plan)
                g_array_unref(mv->plan);
        if (mv->shared)
                g_array_unref(mv->shared);
        np_migrate_result_clear(&mv->result);
        np_numa_maps_clear(&mv->before);
        np_mask_free(mv->cpus);
        np_mask_free(mv->nodes);
        if (mv->data_free)
                mv->data_free(mv->data);
        g_free(mv);
}

/* Run the calling worker thread on the CPUs of mv->cpus it may use. */
static void run_near(const NpMove *mv) {
        g_autoptr(NpMask) mine = NULL;
        int r;

        if (!mv->cpus)
                return;
        r = np_thread_get_affinity(0, &mine);
        if (r < 0) {
                log_debug("pid %d: the mover's own CPUs are unreadable (%s); it runs where it is", (int) mv->pid,
                          g_strerror(-r));
                return;
        }
        np_mask_and(mine, mv->cpus);
        if (np_mask_empty(mine)) {
                log_debug("pid %d: the daemon may use none of its CPUs; the move runs where the daemon may",
                          (int) mv->pid);
                return;
        }
        r = np_thread_set_affinity(0, mine);
        if (r < 0)
                log_debug("pid %d: the mover cannot run on its CPUs (%s); it runs where it is", (int) mv->pid,
                          g_strerror(-r));
}

/* Without CAP_SYS_NICE, migrate_pages(2) leaves the pages that other
 * processes map too (see np-mover.h). */
static void exclusive_pages_only(const NpMove *mv) {
        int r;

        if (mv->move_shared)
                return;
        r = np_thread_drop_effective_cap(CAP_SYS_NICE);
        if (r < 0)
                log_warning("pid %d: the mover cannot drop CAP_SYS_NICE (%s); pages shared with other processes move "
                            "too",
                            (int) mv->pid, g_strerror(-r));
}

static gpointer worker(gpointer data) {
        Slot *slot = data;
        NpMove *mv = slot->mv;
        uint64_t one = 1;

        exclusive_pages_only(mv);
        run_near(mv);
        mv->r = np_migrate_execute_from(mv->pid, mv->plan, mv->shared, mv->have_before ? &mv->before : NULL,
                                        mv->max_rate, &slot->cancel, &mv->result);
        /* a new thread per move: its CPU time is this move's */
        mv->cpu_usec = np_cpu_usec(RUSAGE_THREAD);
        g_atomic_int_set(&slot->finished, 1);
        /* Wake the main loop. An eventfd counter write of 1 cannot block. */
        while (write(slot->mover->efd, &one, sizeof one) < 0 && errno == EINTR)
                ;
        return NULL;
}

/* Hand a finished (or never started) move back to its owner. */
static void deliver(NpMover *m, NpMove *mv) {
        m->done(mv, m->userdata);
}

/* May mv, at the head of the queue, start while other moves run? Only to
 * nodes none of them moves to, and when the owner says so. *owner_said_no:
 * only the owner's answer kept it back. */
static bool may_join(NpMover *m, const NpMove *mv, bool *owner_said_no) {
        *owner_said_no = false;
        if (!m->may_start || !mv->nodes)
                return false;
        for (guint i = 0; i < m->running->len; i++) {
                const NpMove *run = ((Slot *) m->running->pdata[i])->mv;
                if (!run->nodes || np_mask_intersects(run->nodes, mv->nodes))
                        return false;
        }
        *owner_said_no = !m->may_start(mv, m->userdata);
        return !*owner_said_no;
}

static void kick(NpMover *m);

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        kick(userdata);
        return 0;
}

/* Ask the owner about the head of the queue again in NP_MOVER_RETRY_USEC:
 * what it waits for (room on its nodes) comes while the running moves
 * run, not only when they end. */
static void arm_retry(NpMover *m) {
        int r;

        if (m->retry) {
                r = sd_event_source_set_time_relative(m->retry, NP_MOVER_RETRY_USEC);
                if (r >= 0)
                        r = sd_event_source_set_enabled(m->retry, SD_EVENT_ONESHOT);
        } else {
                r = sd_event_add_time_relative(sd_event_source_get_event(m->io), &m->retry, CLOCK_MONOTONIC,
                                               NP_MOVER_RETRY_USEC, 0, on_retry, m);
                if (r >= 0)
                        (void) sd_event_source_set_description(m->retry, "mover-retry");
        }
        if (r < 0)
                log_debug("The mover cannot arm its retry timer (%s); the next move waits for the running ones",
                          g_strerror(-r));
}

/* Start moves from the head of the queue: one when none runs, more while
 * the head may join those running (may_join()). */
static void kick(NpMover *m) {
        if (m->kicking)
                return;
        m->kicking = true;
        while (!g_queue_is_empty(&m->queue)) {
                NpMove *mv = g_queue_peek_head(&m->queue);
                bool owner_said_no = false;
                if (m->running->len > 0 && !may_join(m, mv, &owner_said_no)) {
                        if (owner_said_no)
                                arm_retry(m);
                        break;
                }
                g_queue_pop_head(&m->queue);
                int r = m->prepare(mv, m->userdata);

                if (r < 0 || !mv->plan) {
                        mv->r = r < 0 ? r : -EINVAL;
                        deliver(m, mv);
                        continue;
                }
                Slot *slot = g_new0(Slot, 1);
                slot->mover = m;
                slot->mv = mv;
                mv->started = true;
                mv->started_usec = now_usec();
                g_ptr_array_add(m->running, slot);
                slot->thread = g_thread_try_new("np-mover", worker, slot, NULL);
                if (!slot->thread) {
                        log_error("Cannot start a migration worker thread; move of pid %d dropped", (int) mv->pid);
                        g_ptr_array_remove(m->running, slot);
                        g_free(slot);
                        mv->started = false;
                        mv->r = -EAGAIN;
                        deliver(m, mv);
                }
        }
        m->kicking = false;
}

/* Join the workers that said they are done, then deliver their moves. */
static void reap(NpMover *m) {
        g_autoptr(GPtrArray) ended = g_ptr_array_new();

        for (guint i = 0; i < m->running->len;) {
                Slot *slot = m->running->pdata[i];
                if (!g_atomic_int_get(&slot->finished)) {
                        i++;
                        continue;
                }
                g_thread_join(slot->thread);
                g_ptr_array_remove_index(m->running, i);
                g_ptr_array_add(ended, slot);
        }
        /* (a done() may submit, and start, moves: the running list is
         * not walked meanwhile) */
        for (guint i = 0; i < ended->len; i++) {
                Slot *slot = ended->pdata[i];
                NpMove *mv = slot->mv;
                g_free(slot);
                deliver(m, mv);
        }
}

static int on_worker_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        NpMover *m = userdata;
        uint64_t n;

        if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN && errno != EINTR)
                log_warning("Reading the mover's eventfd failed: %s", g_strerror(errno));
        reap(m);
        kick(m);
        return 0;
}

NpMover *np_mover_new(sd_event *event, NpMovePrepareFn prepare, NpMoveMayStartFn may_start, NpMoveDoneFn done,
                      void *userdata, GError **error) {
        g_autoptr(NpMover) m = g_new0(NpMover, 1);
        int r;

        g_return_val_if_fail(event && prepare && done, NULL);
        m->running = g_ptr_array_new();
        m->prepare = prepare;
        m->may_start = may_start;
        m->done = done;
        m->userdata = userdata;
        g_queue_init(&m->queue);
        m->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->efd < 0) {
                int errsv = errno;
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errsv), "Cannot create an eventfd: %s",
                            g_strerror(errsv));
                return NULL;
        }
        r = sd_event_add_io(event, &m->io, m->efd, EPOLLIN, on_worker_done, m);
        if (r < 0) {
                g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r), "Cannot watch the mover's eventfd: %s",
                            g_strerror(-r));
                return NULL;
        }
        (void) sd_event_source_set_description(m->io, "mover-done");
        return g_steal_pointer(&m);
}

void np_mover_stop(NpMover *m) {
        NpMove *mv;

        /* Queued moves first, so a done() that submits again does not race
         * the running ones; then the running ones, each stopped between two
         * calls. */
        while ((mv = g_queue_pop_head(&m->queue))) {
                mv->r = -ECANCELED;
                deliver(m, mv);
        }
        if (m->running->len > 0) {
                g_autoptr(GPtrArray) ended = m->running;
                uint64_t n;

                m->running = g_ptr_array_new();
                for (guint i = 0; i < ended->len; i++)
                        g_atomic_int_set(&((Slot *) ended->pdata[i])->cancel, 1);
                for (guint i = 0; i < ended->len; i++)
                        g_thread_join(((Slot *) ended->pdata[i])->thread);
                (void) !read(m->efd, &n, sizeof n);
                for (guint i = 0; i < ended->len; i++) {
                        Slot *slot = ended->pdata[i];
                        mv = slot->mv;
                        g_free(slot);
                        deliver(m, mv);
                }
        }
        /* done() may have queued (and started) more: stop those too. */
        if (!g_queue_is_empty(&m->queue) || m->running->len > 0)
                np_mover_stop(m);
}

void np_mover_free(NpMover *m) {
        if (!m)
                return;
        if (m->prepare && m->running)
                np_mover_stop(m);
        sd_event_source_disable_unref(m->io);
        sd_event_source_disable_unref(m->retry);
        if (m->efd >= 0)
                close(m->efd);
        if (m->running)
                g_ptr_array_unref(m->running);
        g_free(m);
}

static Slot *slot_of(const NpMover *m, pid_t pid) {
        for (guint i = 0; i < m->running->len; i++)
                if (((Slot *) m->running->pdata[i])->mv->pid == pid)
                        return m->running->pdata[i];
        return NULL;
}

const NpMove *np_mover_find(const NpMover *m, pid_t pid) {
        Slot *slot = slot_of(m, pid);
        if (slot)
                return slot->mv;
        for (GList *l = m->queue.head; l; l = l->next)
                if (((NpMove *) l->data)->pid == pid)
                        return l->data;
        return NULL;
}

bool np_mover_running(const NpMover *m, pid_t pid) {
        return slot_of(m, pid) != NULL;
}

guint np_mover_running_count(const NpMover *m) {
        return m->running->len;
}

const NpMove *np_mover_running_nth(const NpMover *m, guint i) {
        return i < m->running->len ? ((Slot *) m->running->pdata[i])->mv : NULL;
}

guint np_mover_queued(const NpMover *m) {
        return m->queue.length;
}

bool np_mover_busy(const NpMover *m) {
        return m->running->len > 0 || m->queue.length > 0;
}

int np_mover_submit(NpMover *m, NpMove *mv) {
        g_return_val_if_fail(mv, -EINVAL);
        if (np_mover_find(m, mv->pid))
                return -EBUSY;
        mv->queued_usec = now_usec();
        g_queue_push_tail(&m->queue, mv);
        kick(m);
        return 0;
}

int np_mover_cancel(NpMover *m, pid_t pid) {
        Slot *slot = slot_of(m, pid);
        if (slot) {
                g_atomic_int_set(&slot->cancel, 1);
                return 0;
        }
        for (GList *l = m->queue.head; l; l = l->next) {
                NpMove *mv = l->data;
                if (mv->pid == pid) {
                        g_queue_delete_link(&m->queue, l);
                        mv->r = -ECANCELED;
                        deliver(m, mv);
                        return 0;
                }
        }
        return -ENOENT;
}
