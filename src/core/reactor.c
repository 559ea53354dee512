/* SPDX-License-Identifier: MIT */
/*
 * The epoll reactor both backends use for level-triggered readiness (the
 * fallback for everything, io_uring for watches: see uring.c): one
 * translation of a watch's events into a mask, one registration step,
 * one way an epoll event reaches the loop, one nanosecond wait.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sys/epoll.h>
#include <time.h>

#include "core/internal.h"

uint32_t uaio__watch_mask(const uaio_watch *w)
{
	return (w->events & UAIO_READABLE ? EPOLLIN | EPOLLRDHUP : 0) |
	       (w->events & UAIO_WRITABLE ? EPOLLOUT : 0);
}

int uaio__epoll_set(int epfd, int fd, uint32_t have, uint32_t want, uint64_t key)
{
	struct epoll_event ev = { .events = want, .data.u64 = key };
	int op = !have ? EPOLL_CTL_ADD : !want ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
	int r;

	if (!have && !want)
		return 0;
	r = epoll_ctl(epfd, op, fd, &ev);
	/* A registration kept after the caller closed fd and got its number
	 * back for another file is gone from epoll: add it anew. */
	if (r < 0 && op == EPOLL_CTL_MOD && errno == ENOENT)
		r = epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
	return r < 0 && op != EPOLL_CTL_DEL ? -errno : 0;
}

bool uaio__epoll_fire(uaio_loop *l, int fd, uint32_t events, unsigned need)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	uaio_watch *w = e ? e->w : NULL;

	if (!w || !(w->state & WS_ACTIVE) || (w->state & (WS_STOPPING | need)) != need)
		return false;
	/* An edge is reported once: a stopped dispatch must keep it. */
	return uaio__fire(l, w, (int32_t)events,
			  w->events & UAIO_EDGE ? FIRED_WATCH : FIRED_WATCH_LT);
}

int uaio__epoll_wait(int epfd, struct epoll_event *evs, int max, int64_t timeout_ns)
{
	struct timespec ts;
	int n;

	if (timeout_ns < 0)
		n = epoll_wait(epfd, evs, max, -1);
	else {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		n = epoll_pwait2(epfd, evs, max, &ts, NULL);
		if (n < 0 && errno == ENOSYS)	/* before 5.11: millisecond waits */
			n = epoll_wait(epfd, evs, max, timeout_ns / 1000000 >= INT_MAX ? INT_MAX :
				       (int)((timeout_ns + 999999) / 1000000));
	}
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n;
}
