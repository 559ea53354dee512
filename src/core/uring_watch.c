/* SPDX-License-Identifier: MIT */
/*
 * The io_uring backend's watches. Level-triggered ones of an ordinary loop
 * sit in an epoll set beside the ring (the shared reactor, reactor.c):
 * io_uring's polls are one-shot or edge-triggered. Edge-triggered watches
 * are multishot ring polls; regular files (which epoll refuses) and
 * thread-safe loops use one-shot ring polls, armed again after dispatch.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/uring.h"

/* The epoll set and the ring's eventfd, made on first need. */
int uring__ep_setup(uaio_loop *l)
{
	struct uring_state *u = U(l);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = EV_KEY };
	bool registered = false;
	int r;

	if (u->epfd >= 0)
		return 0;
	u->epfd = uaio__fd_own(epoll_create1(EPOLL_CLOEXEC));
	u->evfd = uaio__fd_own(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (u->epfd < 0 || u->evfd < 0)
		r = -errno;
	else if ((r = io_uring_register_eventfd(&u->ring, u->evfd)) == 0) {
		registered = true;
		if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, u->evfd, &ev) < 0)
			r = -errno;
	}
	/* The wake eventfd joins the set itself: a ring read of it completes
	 * through task work, whose eventfd signal the kernel may fold into
	 * earlier pending work and never send (workers' results were lost
	 * that way). An armed ring read is cancelled; its CQE still wakes. */
	if (r == 0 && !l->threadsafe) {
		struct epoll_event wev = { .events = EPOLLIN, .data.u64 = EV_WAKE };

		if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, l->wake_fd, &wev) < 0)
			r = -errno;
		else if (u->wake_armed)
			uring__cancel_wake(l);
	}
	if (r < 0) {
		/* Else the ring keeps the closed eventfd: every later try
		 * would fail with EBUSY. */
		if (registered)
			io_uring_unregister_eventfd(&u->ring);
		if (u->epfd >= 0)
			uaio__fd_close(u->epfd);
		if (u->evfd >= 0)
			uaio__fd_close(u->evfd);
		u->epfd = u->evfd = -1;
	}
	return r;
}

/* Leaves the epoll set (the watch stays active). */
void uring__ep_leave(uaio_loop *l, uaio_watch *w)
{
	if (!(w->state & WS_EPOLL))
		return;
	uaio__epoll_set(U(l)->epfd, w->fd, w->armed, 0, 0);
	w->state &= ~WS_EPOLL;
	w->armed = 0;
	U(l)->nep--;
}

/* Arms w in the epoll set: 1 done, 0 not for epoll (use ring polls),
 * -errno on failure. */
static int ep_arm(uaio_loop *l, uaio_watch *w)
{
	uint32_t want = uaio__watch_mask(w);
	int r;

	if (l->threadsafe || (w->events & UAIO_EDGE) || (w->state & WS_RINGPOLL))
		return 0;
	if ((w->state & WS_EPOLL) && want == w->armed)
		return 1;
	if (!want) {
		uring__ep_leave(l, w);
		return 1;
	}
	if (!(w->state & WS_EPOLL) && (r = uring__ep_setup(l)) < 0)
		return r;
	if ((r = uaio__epoll_set(U(l)->epfd, w->fd, w->state & WS_EPOLL ? w->armed : 0,
				 want, (uint64_t)w->fd)) < 0) {
		if (r == -EPERM) {	/* a regular file: ring polls */
			w->state |= WS_RINGPOLL;
			return 0;
		}
		return r;
	}
	if (!(w->state & WS_EPOLL))
		U(l)->nep++;
	w->state |= WS_EPOLL;
	w->armed = want;
	return 1;
}

/* Asks the ring to drop w's poll; the poll's own CQE follows. With the
 * SQ full (thousands of watches stopped in one iteration, the CQ backed
 * up) the request waits in rm_head and goes at the next reap or wait:
 * dropping it would leave the watch armed and its handle_close owed
 * for ever. */
static void ring_poll_remove(uaio_loop *l, uaio_watch *w)
{
	struct io_uring_sqe *sqe;

	if (w->state & WS_RMQ)
		return;
	if (U(l)->rm_head || !(sqe = uring__get_sqe(l))) {
		w->state |= WS_RMQ;
		w->next = U(l)->rm_head;
		U(l)->rm_head = w;
		return;
	}
	io_uring_prep_poll_remove(sqe, ud(w, TAG_WATCH));
	io_uring_sqe_set_data64(sqe, ud(w, TAG_WREMOVE));
	U(l)->kops++;
}

void uring__rm_retry(uaio_loop *l)
{
	struct uring_state *u = U(l);
	bool lk = uaio__lock(l);

	while (u->rm_head) {
		uaio_watch *w = u->rm_head;
		struct io_uring_sqe *sqe = uring__get_sqe(l);

		if (!sqe)
			break;
		u->rm_head = w->next;
		w->next = NULL;
		w->state &= ~WS_RMQ;
		io_uring_prep_poll_remove(sqe, ud(w, TAG_WATCH));
		io_uring_sqe_set_data64(sqe, ud(w, TAG_WREMOVE));
		u->kops++;
	}
	uaio__unlock(l, lk);
}

/*
 * -EALREADY: the kernel was delivering an event of the poll (its task
 * work queued) and left it armed; a multishot poll on a socket the peer
 * has closed then never completes on its own, so the watch would never
 * end. Ask again. (Only -EALREADY leaves the poll, and so w, alive: on
 * any other result w may already be finished and freed.)
 */
void uring__watch_rm_cqe(uaio_loop *l, uaio_watch *w, int res)
{
	bool lk;

	if (res != -EALREADY)
		return;
	lk = uaio__lock(l);
	if (w->armed && (w->state & (WS_STOPPING | WS_REMOVING)))
		ring_poll_remove(l, w);
	uaio__unlock(l, lk);
}

void uring__end_watch_on_close(uaio_loop *l, int fd)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	uaio_watch *w = e ? e->w : NULL;

	if (!w || !(w->state & WS_ACTIVE))
		return;
	uring__ep_leave(l, w);
	uaio__watch_set_reason(w, -EBADF);
	w->state |= WS_STOPPING;
	e->w = NULL;
	/* An armed poll is cancelled by the close's cancel-fd; its CQE
	 * finishes the watch. */
	if (!w->armed || !U(l)->cancel_fd)
		uaio__watch_finish(l, w, -EBADF);
	if (w->armed && !U(l)->cancel_fd)
		ring_poll_remove(l, w);
}

static int watch_arm_locked(uaio_loop *l, uaio_watch *w)
{
	struct io_uring_sqe *sqe;
	int r;

	if (!(w->state & WS_EPOLL) && w->armed) {
		/* A ring poll is armed: its -ECANCELED completion re-arms
		 * (through here) with the current events and mechanism. */
		if (!(w->state & WS_REMOVING)) {
			ring_poll_remove(l, w);
			w->state |= WS_REMOVING;
		}
		return 0;
	}
	if ((r = ep_arm(l, w)) != 0)
		return r < 0 ? r : 0;
	uring__ep_leave(l, w);		/* now edge-triggered: over to the ring */
	if (!(w->events & (UAIO_READABLE | UAIO_WRITABLE)))
		return 0;
	sqe = uring__get_sqe(l);
	if (!sqe)
		return -EAGAIN;
	if (w->events & UAIO_EDGE)	/* armed once, stays armed */
		io_uring_prep_poll_multishot(sqe, w->fd, uaio__watch_mask(w));
	else
		io_uring_prep_poll_add(sqe, w->fd, uaio__watch_mask(w));
	io_uring_sqe_set_data64(sqe, ud(w, TAG_WATCH));
	w->armed = w->events;
	return 0;
}

/* The loop's own ring polls on fd (a watch's): a cancel-fd cancels them
 * too, and they are no op of the caller's to count. */
int uring__watch_ring_polls(uaio_loop *l, int fd)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	uaio_watch *w = e ? e->w : NULL;

	return w && !(w->state & WS_EPOLL) && w->armed ? 1 : 0;
}

/* Thread-safe loops share the SQ with submitters: lock around it. */
int uring__watch_arm(uaio_loop *l, uaio_watch *w)
{
	bool lk = uaio__lock(l);
	int r = watch_arm_locked(l, w);

	uaio__unlock(l, lk);
	return r;
}

static void watch_stop_locked(uaio_loop *l, uaio_watch *w)
{
	struct uaio_fdent *e = uaio__fdent(l, w->fd, false);

	uaio__watch_set_reason(w, 0);
	w->state |= WS_STOPPING;
	if (e && e->w == w)
		e->w = NULL;
	uring__ep_leave(l, w);
	if (!w->armed) {
		uaio__watch_finish(l, w, 0);
		return;
	}
	ring_poll_remove(l, w);
}

void uring__watch_stop(uaio_loop *l, uaio_watch *w)
{
	bool lk = uaio__lock(l);

	watch_stop_locked(l, w);
	uaio__unlock(l, lk);
}

/* A ring poll's CQE: bookkeeping here, the handlers in the loop. */
void uring__watch_cqe(uaio_loop *l, uaio_watch *w, int res, unsigned flags)
{
	bool lk = uaio__lock(l);

	if (flags & IORING_CQE_F_MORE) {	/* multishot: still armed */
		if ((w->state & WS_ACTIVE) && !(w->state & (WS_STOPPING | WS_REMOVING)) &&
		    res > 0)
			uaio__fire(l, w, res, FIRED_WATCH);
		uaio__unlock(l, lk);
		return;
	}
	w->armed = 0;
	w->state &= ~WS_REMOVING;
	if (UAIO_UNLIKELY(w->state & WS_RMQ)) {
		/* The poll ended on its own before its remove went out. */
		uaio_watch **pp = &U(l)->rm_head;

		while (*pp != w)
			pp = &(*pp)->next;
		*pp = w->next;
		w->next = NULL;
		w->state &= ~WS_RMQ;
	}
	if (w->state & WS_STOPPING)
		uaio__watch_finish(l, w, uaio__watch_reason(w));
	else if (res == -ECANCELED && (w->state & WS_ACTIVE))
		watch_arm_locked(l, w);		/* mask change or cancel_fd */
	else if (res < 0 && res != -ECANCELED && (w->state & WS_ACTIVE))
		uaio__watch_finish(l, w, res == -EBADF ? -EBADF : -EPIPE);
	else if (w->state & WS_ACTIVE)
		uaio__fire(l, w, res, FIRED_WATCH);
	uaio__unlock(l, lk);
}

