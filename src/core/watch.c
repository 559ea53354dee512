/* SPDX-License-Identifier: MIT */
/*
 * Watches (the Reactor): the loop's descriptor table, starting, changing
 * and stopping a watch, and its end (handle_close runs from the loop).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "core/internal.h"

struct uaio_fdent *uaio__fdent_grow(uaio_loop *l, int fd, bool grow)
{
	struct rlimit rl;
	size_t limit = 0;

	if ((unsigned)fd < l->nfds)
		return &l->fds[fd];
	/* no descriptor takes a slot past RLIMIT_NOFILE: the table stops
	 * there rather than at the next power of two */
	if (grow && getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		limit = (size_t)rl.rlim_cur;
	if (!grow || UAIO_GROW_UPTO(l->fds, l->nfds, (size_t)fd + 1, limit) < 0)
		return NULL;
	return &l->fds[fd];
}

/* The watch is over: unlink it; handle_close runs at the next dispatch
 * point so that callers never see their watch closed under their feet. */
void uaio__watch_finish(uaio_loop *l, uaio_watch *w, int reason)
{
	struct uaio_fdent *e = uaio__fdent(l, w->fd, false);

	if (w->state & WS_CLOSING)
		return;
	if (e && e->w == w)
		e->w = NULL;
	if (w->state & WS_ACTIVE)
		l->nwatch--;
	if (!(w->state & WS_STOPPING))
		uaio__watch_set_reason(w, reason);
	w->state = (w->state & ~(WS_ACTIVE | WS_STOPPING)) | WS_CLOSING;
	w->armed = 0;
	w->next = l->closing;
	l->closing = w;
}

UAIO_API int uaio_watch_peer_closed(const uaio_watch *w)
{
	return w && (w->state & WS_PEER_CLOSED) ? 1 : 0;
}

/* Common event delivery for both backends; returns callbacks run. */
UAIO_API int uaio_watch_start(uaio_loop *l, uaio_watch *w, int fd,
			      uint32_t events, const struct uaio_handler *h,
			      void *data)
{
	struct uaio_fdent *e;
	bool lk;
	int ret;

	if (!l || !w || !h || (events & ~(UAIO_READABLE | UAIO_WRITABLE | UAIO_EDGE)))
		return -EINVAL;
	if (fd < 0 || fcntl(fd, F_GETFD) < 0)
		return -EBADF;
	if (w->state & (WS_ACTIVE | WS_CLOSING))
		return -EBUSY;
	if (uaio__foreign(l))
		return -ECHILD;
	lk = uaio__lock(l);
	e = uaio__fdent(l, fd, true);
	if (!e || e->w) {
		uaio__unlock(l, lk);
		return !e ? -ENOMEM : -EEXIST;
	}
	w->handler = h;
	w->data = data;
	w->fd = fd;
	w->events = events;
	w->armed = 0;
	w->state = WS_ACTIVE;
	w->next = NULL;
	e->w = w;
	l->nwatch++;
	ret = l->be->watch_arm(l, w);
	if (ret < 0) {
		uaio__fdent(l, fd, false)->w = NULL;
		l->nwatch--;
		w->state = 0;
	}
	uaio__unlock(l, lk);
	return ret;
}

/* Whether active watch w is l's: one of another loop's names its fd
 * there (stopping it here closed it in the wrong loop, whose count of
 * watches then wrapped). Under l's lock. */
static bool watch_of(uaio_loop *l, const uaio_watch *w)
{
	struct uaio_fdent *e = uaio__fdent(l, w->fd, false);

	return e && e->w == w;
}

UAIO_API int uaio_watch_modify(uaio_loop *l, uaio_watch *w, uint32_t events)
{
	bool lk;
	int r;

	if (!l || !w || (events & ~(UAIO_READABLE | UAIO_WRITABLE | UAIO_EDGE)))
		return -EINVAL;
	if (!(w->state & WS_ACTIVE) || (w->state & WS_STOPPING))
		return -ENOENT;
	if (w->events == events)
		return 0;
	if (uaio__foreign(l))
		return -ECHILD;
	lk = uaio__lock(l);
	if (watch_of(l, w)) {
		w->events = events;
		r = l->be->watch_arm(l, w);
	} else {
		r = -ENOENT;
	}
	uaio__unlock(l, lk);
	return r;
}

UAIO_API int uaio_watch_stop(uaio_loop *l, uaio_watch *w)
{
	bool lk;

	if (!l || !w)
		return -EINVAL;
	if (w->state & (WS_STOPPING | WS_CLOSING))
		return -EALREADY;
	if (!(w->state & WS_ACTIVE))
		return -ENOENT;
	if (uaio__foreign(l))
		return -ECHILD;
	lk = uaio__lock(l);
	if (!watch_of(l, w)) {
		uaio__unlock(l, lk);
		return -ENOENT;
	}
	l->be->watch_stop(l, w);
	uaio__unlock(l, lk);
	return 0;
}

/* At uaio_loop_free: its watches end without handle_close (loop.h), idle
 * again, so that another loop takes them (they were refused: -EBUSY). */
void uaio__watches_forget(uaio_loop *l)
{
	for (uaio_watch *w = l->closing; w; w = w->next)
		w->state = 0;
	for (unsigned i = 0; i < l->nfds; i++)
		if (l->fds[i].w)
			l->fds[i].w->state = 0;
}
