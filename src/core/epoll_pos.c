/* SPDX-License-Identifier: MIT */
/*
 * The epoll backend's ops that run on the worker pool in their turn on a
 * side of a descriptor: reads and writes at a regular file's position
 * that would wait for the disk, and the flagged blocking calls
 * (UAIO_OPF_BLOCKING; OX_WORKCALL). The side's busy op is on a worker;
 * the ops behind it are held, and go when it ends (uaio__ep_pos_next).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "core/epoll.h"

/*
 * Reads and writes at a regular file's position (off -1). Those that
 * would wait for the disk run on a worker, and workers run side by side:
 * so one side of a file has one such op out at a time, and the next
 * waits (held, not tried: the page cache would answer it first) until
 * its result is out, as io_uring keeps a stream side's order.
 */
static int pos_side(const uaio_op *op)
{
	return uaio__op_read_side(op) ? 0 : 1;
}

/* Whether op is to wait behind its side's op at the position: held then. */
bool uaio__ep_pos_held(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e = uaio__fdent(l, op->fd, false);
	int sd = pos_side(op);

	if (!e || !e->q || (!e->q->pbusy[sd] && !e->q->ph[sd]))
		return false;
	uaio__ep_q_push(&e->q->ph[sd], &e->q->pt[sd], op);
	op->state = OS_HELD;
	return true;
}

/* op, which would wait for the disk, to a worker as its side's busy one. */
int uaio__ep_pos_worker(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdq *q = uaio__ep_fdq(l, op->fd);
	int r;

	if (!q)
		return -ENOMEM;
	op->xflags |= OX_POSBUSY;
	q->pbusy[pos_side(op)] = op;
	/* a flagged op may be a stream's, which may wait for ever */
	if ((r = uaio__ep_work(l, op, !(op->xflags & OX_EP_BLOCKING))) < 0) {
		op->xflags &= ~OX_POSBUSY;
		q->pbusy[pos_side(op)] = NULL;
	}
	return r;
}

/* first, then the ops still held on side sd, to the readiness queue in
 * order; the first's error if it could not go (the others go on). */
static int unhold_side(uaio_loop *l, struct uaio_fdq *q, int sd, uaio_op *first)
{
	uaio_op *rest = q->ph[sd], *next;
	int r = uaio__ep_enqueue(l, first);

	q->ph[sd] = q->pt[sd] = NULL;
	for (uaio_op *op = rest; op; op = next) {
		int r2;

		next = op->next;
		op->state = OS_MOVING;
		if ((r2 = uaio__ep_enqueue(l, op)) < 0)
			uaio__complete(l, op, r2);
	}
	return r;
}

/* done, counted, has ended: the closes held for it go. */
static void late_end(uaio_loop *l, uaio_op *done)
{
	uaio_op *c, *next, *tail;

	for (c = uaio__late_end(l, done, &tail); c; c = next) {
		next = c->next;
		c->next = NULL;
		uaio__ep_close(l, c);
	}
}

/*
 * A worker looks the descriptor up by number as its call starts: a file
 * op a worker had taken but not begun ran after a close (EBADF), or on a
 * file opened on the number since (an fsync, a fallocate, a write). So a
 * close of fd waits for the file ops workers run on fd (late.c): bounded
 * calls (counted); not the flagged ops that may wait on a stream for
 * ever (uaio_op_set_flags(3) says so).
 */
int uaio__ep_work(uaio_loop *l, uaio_op *op, bool counted)
{
	int r;

	if (counted)
		uaio__late_count(l, op);
	if ((r = uaio__workers_submit(l, op)) < 0 && (op->xflags & OX_LATE))
		late_end(l, op);
	return r;
}

/* The side's busy op ended: the held ones go, in order, while each ends
 * at once; the first that would wait for the disk becomes the busy one.
 * Only if done is that side's busy op: a close freed the queue since,
 * and the number may name another file, with a busy op of its own. */
void uaio__ep_pos_next(uaio_loop *l, uaio_op *done)
{
	bool lk = uaio__lock(l);
	struct uaio_fdent *e;
	int sd = pos_side(done);

	if (done->xflags & OX_LATE)
		late_end(l, done);
	e = uaio__fdent(l, done->fd, false);

	if (e && e->q && e->q->pbusy[sd] == done) {
		e->q->pbusy[sd] = NULL;
		while (e->q->ph[sd] && !e->q->pbusy[sd]) {
			uaio_op *op = e->q->ph[sd];
			long r;

			e->q->ph[sd] = op->next;
			if (!e->q->ph[sd])
				e->q->pt[sd] = NULL;
			op->state = OS_MOVING;
			bool flagged = (op->xflags & OX_EP_BLOCKING) && uaio__ep_is_rw(op);

			r = flagged ? -EAGAIN : uaio__ep_attempt(op);
			if (r == -EOPNOTSUPP && !flagged && uaio__ep_is_rw(op) &&
			    !(op->xflags & OX_PLAIN) && uaio__ep_go_plain(op)) {
				flagged = true;
				r = -EAGAIN;
			}
			if ((r == -EAGAIN || r == -EOPNOTSUPP) && !flagged &&
			    (!uaio__ep_is_rw(op) || !uaio__ep_blocks_on_disk(op->fd))) {
				/* a stream behind a flagged op: it and the rest
				 * wait for readiness, in order, as they would
				 * have without it */
				if (r == -EOPNOTSUPP)
					uaio__ep_go_plain(op);	/* (a read) */
				r = unhold_side(l, e->q, sd, op);
				if (r < 0)
					uaio__complete(l, op, r);
				break;
			}
			if (uaio__ep_moved_part(op, r)) {
				uaio__ep_rest_at_pos(op, r);
				r = -EAGAIN;	/* the rest: to a worker */
			}
			if (r == -EAGAIN || r == -EOPNOTSUPP)
				r = uaio__ep_pos_worker(l, op);
			if (r < 0 || !(op->xflags & OX_POSBUSY))
				uaio__complete(l, op, r);
		}
	}
	uaio__unlock(l, lk);
}

/* A held op, cancelled: true when it was one. */
bool uaio__ep_pos_cancel(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e = uaio__fdent(l, op->fd, false);
	int sd = pos_side(op);

	if (!e || !e->q || !uaio__ep_q_unlink(&e->q->ph[sd], &e->q->pt[sd], op))
		return false;
	uaio__complete(l, op, -ECANCELED);
	return true;
}


/* op, a flagged one (UAIO_OPF_BLOCKING, OX_WORKCALL) at *pp in its side's
 * queue (t its tail, prev before it), has its turn: it goes to a worker as
 * the side's busy op, and the other ops after it (not the polls) are held
 * behind it. */
void uaio__ep_hold_behind(uaio_loop *l, uaio_op **t, uaio_op **pp, uaio_op *prev,
			  uaio_op *op)
{
	struct uaio_fdent *e = uaio__fdent(l, op->fd, false);
	int sd = pos_side(op), r;

	*pp = op->next;
	if (*t == op)
		*t = prev;
	op->state = OS_MOVING;
	for (uaio_op **qq = pp; *qq;) {
		uaio_op *x = *qq;

		if (x->opcode == OP_POLL) {
			prev = x;
			qq = &x->next;
			continue;
		}
		*qq = x->next;
		if (*t == x)
			*t = prev;
		uaio__ep_q_push(&e->q->ph[sd], &e->q->pt[sd], x);
		x->state = OS_HELD;
	}
	if ((r = uaio__ep_pos_worker(l, op)) < 0) {
		uaio_op *first = e->q->ph[sd];

		uaio__complete(l, op, r);
		if (first) {	/* the others wait for readiness again */
			e->q->ph[sd] = first->next;
			if (!e->q->ph[sd])
				e->q->pt[sd] = NULL;
			first->state = OS_MOVING;
			if ((r = unhold_side(l, e->q, sd, first)) < 0)
				uaio__complete(l, first, r);
		}
	}
}
