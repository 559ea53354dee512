/* SPDX-License-Identifier: MIT */
/*
 * The loop core: one iteration (the run loop), timers due, deferred
 * completions. Creation, teardown and the backend's choice are in
 * loop_life.c; the cross-thread inbox (posts, wake-ups, worker results)
 * in inbox.c, timers' heap in timers.c, watches in watch.c, pins in
 * pin.c, the cancellation both backends share in cancel.c, the uaio_op_*
 * packers in pack.c, the op table in ops.h. Backends only move ops into
 * and out of the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"

/* The clock is read only when someone needs it: timers, or a caller. */
static uint64_t loop_now(uaio_loop *l)
{
	if (!l->now_valid) {
		l->now = (uint64_t)uaio__now_ns();
		l->now_valid = true;
	}
	return l->now;
}

UAIO_API uint64_t uaio_loop_now(uaio_loop *l)
{
	return loop_now(l);
}

/* The backend's timer serves ops in flight: with none, it goes. (Under
 * the lock: other threads' ops and timers change both.) */
static void be_timer_idle(uaio_loop *l)
{
	bool lk;

	if (!l->be_timer)
		return;
	lk = uaio__lock(l);
	if (!l->inflight && uaio_timer_pending(l->be_timer))
		uaio__timer_unlink(l, l->be_timer);
	uaio__unlock(l, lk);
}

/* ns until the earliest timer (0: due), or -1 with none. */
static int64_t timer_wait_ns(uaio_loop *l)
{
	bool lk;
	bool any;

	be_timer_idle(l);
	lk = uaio__lock(l);
	any = l->nheap;
	uint64_t when = any ? l->heap[0].when : 0, now;

	uaio__unlock(l, lk);
	if (!any)
		return -1;
	now = loop_now(l);
	return when <= now ? 0 : when - now > INT64_MAX ? INT64_MAX : (int64_t)(when - now);
}

UAIO_API int64_t uaio_loop_timeout(uaio_loop *l)
{
	bool lk, now_work;

	if (!l)
		return -EINVAL;
	if (uaio__foreign(l))	/* its locks may be held by a parent's thread */
		return -ECHILD;
	pthread_mutex_lock(&l->inbox_lock);
	now_work = l->post_head != NULL;
	pthread_mutex_unlock(&l->inbox_lock);
	lk = uaio__lock(l);
	now_work = now_work || l->done_head || l->closing || l->fired_next < l->nfired ||
		   atomic_load(&l->wake_pending) ||
		   (l->be->unannounced && l->be->unannounced(l));
	uaio__unlock(l, lk);
	if (now_work)
		return 0;
	l->now_valid = false;	/* a caller between iterations: read it fresh */
	return timer_wait_ns(l);
}

UAIO_API unsigned uaio_loop_inflight(const uaio_loop *l)
{
	return l->inflight;
}

UAIO_API void uaio_loop_stop(uaio_loop *l)
{
	l->stop = true;
}

UAIO_API void uaio_loop_lock(uaio_loop *l)
{
	if (!uaio__foreign(l))	/* a parent's thread may hold it: no wait */
		uaio__lock(l);
}

UAIO_API void uaio_loop_unlock(uaio_loop *l)
{
	if (!l->threadsafe || !uaio__holds(l))
		return;
	if (!uaio__foreign(l)) {
		uaio__unlock(l, true);
		return;
	}
	/* A fork child's thread that held it across the fork: the loop is
	 * the parent's (its lock stays as it is), but the thread's cancel
	 * state, which the lock took, comes back. */
	atomic_store_explicit(&l->holder, 0, memory_order_relaxed);
	uaio__nocancel_end(l->holder_cs);
}

/* ------------------------------------------------------------ completion */

static void done_push(uaio_loop *l, uaio_op *op)
{
	UAIO_FIFO_PUSH(l->done_head, l->done_tail, op);
	l->ndone++;
}

/* Result known outside a CQE: the callback runs at the next dispatch
 * point, never from inside the submitting call. */
void uaio__complete(uaio_loop *l, uaio_op *op, long res)
{
	/* a MSG_WAITALL part ended by a cancel, an error or EOF (epoll) */
	if (res <= 0 && (op->xflags & OX_PART))
		res = (long)op->off;
	if (UAIO_UNLIKELY(op->xflags & OX_HEAD)) {	/* the part first, as read(2) */
		res = res >= 0 ? res + (long)op->addr2 : (long)op->addr2;
		op->xflags &= ~OX_HEAD;
	}
	op->off = (uint64_t)res;
	op->xflags &= ~(OX_MORE | OX_PART);
	op->state = OS_DONE;
	done_push(l, op);
}

/* The op's result is out, its callback about to run: cb and data are
 * read before it is idle, since from then on another thread may submit
 * it anew (uaio_op_pending says 0 once the final callback has begun). */
static void op_ended(uaio_op *op, uaio_op_cb *cb, void **data)
{
	*cb = op->cb;
	*data = op->data;
	/* its last: a multishot op's later results were dispatched */
	op->xflags &= ~OX_MORE;
	__atomic_store_n(&op->state, OS_IDLE, __ATOMIC_RELEASE);
}

int uaio__run_done(uaio_loop *l)
{
	bool lk = uaio__lock(l);
	/* Only what is here now: callbacks that resubmit wait a round. One
	 * at a time off the list: a callback that runs the loop itself finds
	 * the rest still there (taken whole, they waited where no nested
	 * run could see them, and a nested uaio_loop_run slept for ever). */
	unsigned left = l->ndone;
	int n = 0;

	while (left-- && l->done_head && !l->stop) {
		uaio_op *op = l->done_head;
		long res = (long)op->off;
		uaio_op_cb cb;
		void *data;

		l->done_head = op->next;
		if (!l->done_head)
			l->done_tail = NULL;
		l->ndone--;
		l->inflight--;
		op_ended(op, &cb, &data);
		uaio__unlock(l, lk);
		cb(op, res > INT_MAX ? INT_MAX : res < INT_MIN ? INT_MIN : (int)res, data);
		n++;
		lk = uaio__lock(l);
	}
	uaio__unlock(l, lk);
	return n;
}

UAIO_API void uaio_op_set_flags(uaio_op *op, unsigned flags)
{
	op->xflags = (uint16_t)((op->xflags & ~OX_USER_MASK) |
				((flags << OX_USER_SHIFT) & OX_USER_MASK));
}

UAIO_API int uaio_op_more(const uaio_op *op)
{
	return !!(op->xflags & OX_MORE);
}

UAIO_API int uaio_op_pending(const uaio_op *op)
{
	return __atomic_load_n(&op->state, __ATOMIC_ACQUIRE) != OS_IDLE;
}

UAIO_API long uaio_op_result_long(const uaio_op *op)
{
	return (long)op->off;
}

/* ------------------------------------------------------------------ run */

/* Timers due: callbacks run, periodic ones start again. On a thread-safe
 * loop the heap is shared with other threads' timeout ops (epoll), so it
 * is read and changed under the lock. */
static int run_timers(uaio_loop *l)
{
	int n = 0;

	if (!l->threadsafe && !l->nheap)
		return 0;
	loop_now(l);
	while (!l->stop) {
		bool lk = uaio__lock(l);
		uaio_timer *t;
		uintptr_t p;

		if (!l->nheap || l->heap[0].when > l->now) {
			uaio__unlock(l, lk);
			break;
		}
		p = l->heap[0].p;
		uaio__heap_remove(l, 0);
		if (p & 1) {	/* epoll backend's timeout op */
			uaio__complete(l, (uaio_op *)(p & ~(uintptr_t)1), -ETIME);
			uaio__unlock(l, lk);
			continue;
		}
		t = (uaio_timer *)p;
		if (t->period) {
			/* Fell behind by more than a period: skip, don't burst. */
			t->when = uaio__deadline(t->when, t->period);
			if (t->when <= l->now)
				t->when = uaio__deadline(l->now, t->period);
			uaio__heap_push(l, t->when, p);
		}
		uaio__unlock(l, lk);
		t->cb(t);
		n += t != l->be_timer;
	}
	return n;
}

static int run_closing(uaio_loop *l)
{
	int n = 0;

	while (l->closing && !l->stop) {
		bool lk = uaio__lock(l);
		uaio_watch *w = l->closing;
		int reason = 0;

		if (w) {
			l->closing = w->next;
			reason = uaio__watch_reason(w);
			w->state &= WS_PEER_CLOSED;	/* kept till a new start */
		}
		uaio__unlock(l, lk);
		if (!w)
			break;
		if (w->handler && w->handler->handle_close)
			w->handler->handle_close(w, reason);
		n++;
	}
	return n;
}

/* Timers due, deferred completions, pending handle_close calls. */
static inline int run_ready(uaio_loop *l)
{
	int n = 0;

	if (l->nheap)
		n += run_timers(l);
	if (l->done_head && !l->stop)
		n += uaio__run_done(l);
	if (l->closing && !l->stop)
		n += run_closing(l);
	return n;
}

/* The loop ends a watch (its descriptor is gone, or a hang-up no handler
 * will hear of) through its backend, which takes it out of the kernel:
 * finished bare, it left the ring's multishot poll (which later pointed
 * at the program's freed watch) or its epoll registration (ready for
 * ever: the loop spun, and the descriptor could not be watched again)
 * behind. handle_close is told why. */
static void watch_end(uaio_loop *l, uaio_watch *w, int reason)
{
	l->be->watch_stop(l, w);
	uaio__watch_set_reason(w, reason);
}

/* A watch's handlers for revents; the backend re-arms a one-shot watch
 * that is still active afterwards. */
/* In a fired watch's revents: only its output half is left (its input
 * handler stopped the loop; the rest is the next iteration's). */
#define REVENTS_OUT_ONLY	(1u << 30)

static int watch_dispatch(uaio_loop *l, uaio_watch *w, unsigned revents,
			  unsigned *rest)
{
	const struct uaio_handler *h = w->handler;
	bool in, out;
	int n = 0;

	if (revents & POLLNVAL) {
		watch_end(l, w, -EBADF);
		return 0;
	}
	if (revents & (POLLRDHUP | POLLHUP))
		w->state |= WS_PEER_CLOSED;
	in = (revents & (POLLIN | POLLPRI | POLLHUP | POLLERR | POLLRDHUP)) &&
	     (w->events & UAIO_READABLE) && h->handle_input && !(revents & REVENTS_OUT_ONLY);
	out = (revents & (POLLOUT | POLLERR)) && (w->events & UAIO_WRITABLE) &&
	      h->handle_output;
	if (!in && !out) {
		/* Hang-up or error that no handler will hear of: it would
		 * otherwise stay ready forever. */
		if (revents & (POLLHUP | POLLERR))
			watch_end(l, w, -EPIPE);
		return 0;
	}
	if (in) {
		n++;
		if (h->handle_input(w) < 0 && (w->state & WS_ACTIVE) &&
		    !(w->state & WS_STOPPING)) {
			l->be->watch_stop(l, w);
			return n;
		}
	}
	if (out && in && UAIO_UNLIKELY(l->stop)) {
		/* "returns after the current callback" */
		*rest = revents | REVENTS_OUT_ONLY;
		return n;
	}
	if (out && (w->state & WS_ACTIVE) &&
	    !(w->state & WS_STOPPING) && (w->events & UAIO_WRITABLE)) {
		n++;
		if (h->handle_output(w) < 0 && (w->state & WS_ACTIVE) &&
		    !(w->state & WS_STOPPING))
			l->be->watch_stop(l, w);
	}
	return n;
}

/*
 * Runs what the backend's wait reported, in order: op callbacks, watch
 * handlers, posts. A callback that stops the loop leaves the rest for the
 * next iteration, but for level-triggered readiness, which epoll reports
 * again.
 */
static int dispatch(uaio_loop *l)
{
	int n = 0;

	while (l->fired_next < l->nfired) {
		struct uaio_fired *f = &l->fired[l->fired_next];

		if (UAIO_UNLIKELY(l->stop)) {
			unsigned keep = l->fired_next;
			for (unsigned i = l->fired_next; i < l->nfired; i++)
				if (l->fired[i].kind != FIRED_WATCH_LT)
					l->fired[keep++] = l->fired[i];
			l->nfired = keep;
			return n;
		}
		l->fired_next++;
		n++;
		if (UAIO_LIKELY(f->kind == FIRED_OP)) {
			uaio_op *op = f->target;
			uaio_op_cb cb;
			void *data;

			if (UAIO_UNLIKELY(l->threadsafe)) {
				bool lk = uaio__lock(l);
				l->inflight--;
				uaio__unlock(l, lk);
			} else {
				l->inflight--;
			}
			op_ended(op, &cb, &data);
			cb(op, f->res, data);
			continue;
		}
		n--;
		switch (f->kind) {
		case FIRED_OP_MORE: {
			uaio_op *op = f->target;

			op->xflags |= OX_MORE;
			op->cb(op, f->res, op->data);
			n++;
			break;
		}
		case FIRED_WATCH:
		case FIRED_WATCH_LT: {
			uaio_watch *w = f->target;

			unsigned rest = 0;

			if (!(w->state & WS_ACTIVE) || (w->state & WS_STOPPING))
				break;
			n += watch_dispatch(l, w, (unsigned)f->res, &rest);
			if (rest) {	/* kept for the next iteration (above) */
				f->res = (int32_t)rest;
				l->fired_next--;
				break;
			}
			/* A one-shot readiness (a ring poll) is armed again. */
			if (f->kind == FIRED_WATCH && (w->state & WS_ACTIVE) &&
			    !(w->state & WS_STOPPING) && !w->armed)
				l->be->watch_arm(l, w);
			break;
		}
		case FIRED_INBOX:
			n += uaio__drain_inbox(l);
			break;
		}
	}
	l->nfired = l->fired_next = 0;
	return n;
}

static bool loop_alive(uaio_loop *l)
{
	be_timer_idle(l);
	return l->inflight || l->nwatch || l->nheap || l->closing ||
	       l->post_head || atomic_load(&l->wake_pending) ||
	       l->fired_next < l->nfired;
}

static int run_once(uaio_loop *l, int64_t timeout_ns)
{
	int n, r;

	if (l->threadsafe && l->owner != uaio__thread_token()) {
		/* Whoever drives the loop issues for everyone (see uring_submit.c). */
		bool lk = uaio__lock(l);
		l->owner = uaio__thread_token();
		uaio__unlock(l, lk);
	}
	l->now_valid = false;
	l->stop = false;
	n = dispatch(l);	/* what a stopped iteration left */
	/* nested in a posted function: the posts after it (inbox.c) */
	if (UAIO_UNLIKELY(l->draining) && l->draining < UAIO_DRAIN_DEPTH && !l->stop)
		n += uaio__drain_inbox(l);
	if (!l->stop)
		n += run_ready(l);
	if (l->stop)	/* a callback asked to return: don't wait or reap */
		return n;
	if (n || l->done_head || l->closing) {
		timeout_ns = 0;
	} else {
		int64_t until = timer_wait_ns(l);

		if (until >= 0 && (timeout_ns < 0 || until < timeout_ns))
			timeout_ns = until;
	}
	r = l->be->wait(l, timeout_ns);
	if (r < 0)
		return r;
	l->now_valid = false;
	n += dispatch(l);
	if (!l->stop)
		n += run_ready(l);
	if (l->be->settle)
		l->be->settle(l);
	return n;
}

/* A run's way in: 0, or why l cannot be run. */
static int run_enter(uaio_loop *l)
{
	if (!l)
		return -EINVAL;
	if (uaio__foreign(l))
		return -ECHILD;
	if (UAIO_UNLIKELY(l->free_asked))
		return -EINVAL;
	l->running++;
	return 0;
}

/* A run's way out: the loop freed from a callback goes now, with the
 * outermost run (uaio_loop_free). */
static int run_leave(uaio_loop *l, int r)
{
	if (--l->running == 0 && UAIO_UNLIKELY(l->free_asked))
		uaio_loop_free(l);
	return r;
}

/* A thread cancelled inside a run (the epoll backend's wait is a
 * cancellation point), or leaving it by pthread_exit, never returns from
 * it: it is out of the run all the same, and a free its callback asked
 * for happens as the outermost run's handler runs (nothing of the loop
 * runs on this thread after it). */
static void run_cancelled(void *arg)
{
	run_leave(arg, 0);
}

UAIO_API int uaio_loop_run_once(uaio_loop *l, int64_t timeout_ns)
{
	int r = run_enter(l);

	if (r < 0)
		return r;
	pthread_cleanup_push(run_cancelled, l);
	r = run_once(l, timeout_ns);
	pthread_cleanup_pop(0);
	return run_leave(l, r);
}

UAIO_API int uaio_loop_run(uaio_loop *l)
{
	int r = run_enter(l);

	if (r < 0)
		return r;
	pthread_cleanup_push(run_cancelled, l);
	l->stop = false;
	while (!l->stop && loop_alive(l) && (r = run_once(l, -1)) >= 0)
		;
	if (r >= 0) {
		r = 0;
		if (l->stop && !l->free_asked) {
			l->stop = false;
			r = loop_alive(l) ? 1 : 0;
		}
	}
	pthread_cleanup_pop(0);
	return run_leave(l, r);
}
