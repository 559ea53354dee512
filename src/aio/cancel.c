/* SPDX-License-Identifier: MIT */
/* aio_cancel, with glibc's choice of what is "being performed". */
#define _GNU_SOURCE
#include <stdlib.h>
#include "aio/engine.h"

/* ---------------------------------------------------------- cancel */

/*
 * As glibc: only a request that is still waiting in this layer (behind
 * another on a stream, or an fsync behind writes) is cancelled; one the
 * kernel has (a read it started, a socket write waiting for room) is
 * being performed, so it is AIO_NOTCANCELED and finishes normally. 1 if
 * r was cancelled, 0 if it is in progress.
 */
static int cancel_locked(struct aio_req *r)
{
	struct aio_req **pp;

	if (r->state != RS_QUEUED)
		return 0;
	if (r->flags & RF_SERIAL) {
		struct aio_serial *s = r->owner;
		for (pp = &s->head; *pp != r; pp = &(*pp)->next)
			;
		*pp = r->next;
		aio__req_release_locked(r, -ECANCELED);
		aio__serial_maybe_free_locked(s);
	} else if (r->flags & RF_HELD) {	/* a write behind an fsync */
		struct aio_fdw *w = r->owner;
		struct aio_req *prev = NULL;

		for (pp = &w->held; *pp != r; prev = *pp, pp = &(*pp)->next)
			;
		*pp = r->next;
		if (w->held_tail == r)
			w->held_tail = prev;
		r->flags &= ~RF_HELD;
		aio__req_finish_parallel_locked(r, -ECANCELED);
	} else {
		struct aio_fdw *w = r->owner;
		for (pp = &w->barriers; *pp != r; pp = &(*pp)->next)
			;
		*pp = r->next;
		/* an fsync: the writes after it go; a read: those it held */
		aio__req_finish_parallel_locked(r, -ECANCELED);
	}
	return 1;
}

/* The requests of fd waiting in this layer, in the order glibc's list
 * would have them: a stream's queue; a file's writes waiting for fsyncs
 * or earlier requests, and fsyncs and reads waiting for writes, by call
 * order (two lists, each in it). Into v when given; their number. */
static size_t queued_of_locked(int fd, struct aio_req **v)
{
	struct aio_fdw *w = aio__fdw_get_locked(fd, false);
	struct aio_req *r, *h = w ? w->held : NULL, *b = w ? w->barriers : NULL;
	size_t n = 0;

	for (int i = 0; i < SERIAL_BUCKETS; i++)
		for (struct aio_serial *s = E->serial[i]; s; s = s->hnext)
			for (r = s->head; r; r = r->next)
				if (req_cb(r)->aio_fildes == fd) {
					if (v)
						v[n] = r;
					n++;
				}
	while (h || b) {
		/* seq wraps: compared as a distance */
		if (h && (!b || (int32_t)(h->u.seq - b->u.seq) < 0)) {
			r = h;
			h = h->next;
		} else {
			r = b;
			b = b->next;
		}
		if (v)
			v[n] = r;
		n++;
	}
	return n;
}

/*
 * aio_cancel(fd, NULL): the requests waiting when it began (marked doomed
 * by the caller) are cancelled, and notified, in the order glibc's list
 * has them. Those left (if memory ran out) go in the slab's order after.
 *
 * As in glibc, a request's signal is taken before the next is sent: its
 * handler runs in aio_cancel, once per request, under the engine lock as
 * glibc's runs under its mutex. (Held to the end, three SIGUSR1s were one:
 * standard signals merge while pending.) A handler may change the queues:
 * the order is looked up again after one ran, and only the requests marked
 * at the start are cancelled (one a handler submits meanwhile is not, as
 * glibc's list was cut off before its notifications).
 */
static size_t queued_snapshot_locked(int fd, struct aio_req ***vp)
{
	size_t n = queued_of_locked(fd, NULL);

	*vp = n ? malloc(n * sizeof(**vp)) : NULL;
	if (!*vp)
		return 0;
	return queued_of_locked(fd, *vp);
}

static int cancel_queued_in_order_locked(int fd)
{
	struct aio_req **v;
	size_t n = queued_snapshot_locked(fd, &v), i;
	int canceled = 0;
	bool again;

	do {
		struct aio_fdw *w;

		/* A cancelled write ends an fsync's wait, a cancelled fsync
		 * a write's: none may start now, being cancelled next (w
		 * goes with its last request; one made anew starts clear) */
		if ((w = aio__fdw_get_locked(fd, false)))
			w->cancelling = true;
		again = false;
		for (i = 0; i < n && !again; i++) {
			if (!v[i]->doomed)
				continue;
			if (cancel_locked(v[i])) {
				v[i]->doomed = false;	/* (freed: not looked at again) */
				canceled++;
			}
			again = aio__signals_held_here();
		}
		if ((w = aio__fdw_get_locked(fd, false)))
			w->cancelling = false;
		free(v);
		n = 0;
		if (again) {
			aio__signals_let_go();
			n = queued_snapshot_locked(fd, &v);
		}
	} while (n);
	return canceled;
}

/*
 * A fork's child and its parent's requests on fd (or cb alone; struct
 * aio_orphan): a waiting one is cancelled as glibc's child cancels it
 * (ECANCELED, notified), a running one never is. One whose aiocb was
 * reused since is forgotten, unless it was running: glibc's child keeps
 * that in its list of fd for ever.
 */
static void orphans_cancel_locked(int fd, struct aiocb *cb, int *canceled,
				  int *notcanceled)
{
	for (unsigned i = 0; i < E->norphans;) {
		struct aio_orphan *o = &E->orphans[i];

		if (o->fd != fd || (cb && o->cb != cb)) {
			i++;
			continue;
		}
		if (!o->queued) {
			(*notcanceled)++;
			i++;
			continue;
		}
		if (cb_state(o->cb) == ST_ORPHAN) {
			aio__complete(o->cb, -ECANCELED);
			(*canceled)++;
		}
		*o = E->orphans[--E->norphans];
	}
}

static int cancel_call(int fd, struct aiocb *cb)
{
	int canceled = 0, notcanceled = 0;

	if (fcntl(fd, F_GETFD) < 0)
		return posix_ret(-EBADF);
	if (cb && cb->aio_fildes != fd)
		return posix_ret(-EINVAL);
	if (cb && cb_state(cb) == ST_ORPHAN) {
		aio__lock();
		orphans_cancel_locked(fd, cb, &canceled, &notcanceled);
		aio__unlock();
		return canceled ? AIO_CANCELED : AIO_NOTCANCELED;
	}
	if (cb && cb_state(cb) != ST_LIVE) {
		/* glibc looks an aiocb marked in progress up in its lists:
		 * one that is not there (a copy of a live one) is EINVAL.
		 * One ending now is done by the time glibc's lock is had. */
		if (cb_state(cb) != ST_DONE && cb_state(cb) != ST_ENDING &&
		    __atomic_load_n(&cb->__error_code, __ATOMIC_ACQUIRE) == EINPROGRESS)
			return posix_ret(-EINVAL);
		return AIO_ALLDONE;
	}

	/* In a handler that interrupted an AIO call of this thread: its
	 * records may be half made. What may be in flight stays. */
	if (aio__lock_in_call())
		return cb || E->nreq || E->lone || aio__nested_on(fd) ? AIO_NOTCANCELED
							    : AIO_ALLDONE;
	aio__lock();
	if (cb && E->lone && aio__lone_cancel_locked(fd, cb, &canceled, &notcanceled)) {
		aio__unlock();
		return canceled ? AIO_CANCELED : AIO_NOTCANCELED;
	}
	if (cb) {
		struct aio_req *r = priv(cb)->req;

		if (!r || req_cb(r) != cb || r->state == RS_FREE) {
			/* Finishing inline in another thread right now. */
			aio__unlock();
			return cb_state(cb) == ST_LIVE ? AIO_NOTCANCELED : AIO_ALLDONE;
		}
		canceled = cancel_locked(r);
		notcanceled = !canceled;
	} else {
		struct aio_req *r;

		/* The requests of fd now, none a handler submits later: the
		 * waiting ones marked (others' marks untouched: a handler's
		 * own aio_cancel of another descriptor runs in the middle),
		 * the running ones counted now (a handler's aio_cancel of
		 * this one may take them over) */
		UAIO_SLAB_FOREACH(&E->reqs, r) {
			if (r->state == RS_FREE || req_cb(r)->aio_fildes != fd)
				continue;
			if (r->state == RS_QUEUED)
				r->doomed = true;
			else
				notcanceled++;
		}
		orphans_cancel_locked(fd, NULL, &canceled, &notcanceled);
		aio__lone_cancel_locked(fd, NULL, &canceled, &notcanceled);
		canceled += cancel_queued_in_order_locked(fd);
		notcanceled += aio__nested_on(fd);	/* run as the call ends */
		UAIO_SLAB_FOREACH(&E->reqs, r) {
			if (r->state == RS_FREE || !r->doomed || req_cb(r)->aio_fildes != fd)
				continue;
			r->doomed = false;
			if (cancel_locked(r))
				canceled++;
			else
				notcanceled++;	/* started meanwhile */
		}
	}
	aio__unlock();
	if (notcanceled)
		return AIO_NOTCANCELED;
	return canceled ? AIO_CANCELED : AIO_ALLDONE;
}

UAIO_API int uaio_cancel(int fd, struct aiocb *cb)
{
	int ct = uaio__nocancel_begin(), r = cancel_call(fd, cb);

	uaio__nocancel_end(ct);
	return r;
}
