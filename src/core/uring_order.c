/* SPDX-License-Identifier: MIT */
/*
 * Stream order on io_uring. An op that finds a pipe or socket not ready
 * waits on the file's wait queue, and the kernel wakes the newest waiter
 * first: reads queued together take the bytes in reverse, writes queued
 * on a full pipe interleave. So the ops of one side (read, write) of a
 * stream go to the kernel one at a time, in the order they were made, as
 * the epoll backend's descriptor queues run them. Positional file I/O
 * (off >= 0), ops by a pinned handle and ops a thread-safe loop's caller
 * issues itself (UAIO_OPF_ISSUE_HERE) are not held. And which ops a
 * close waits for, those that look its descriptor up late (end of file).
 *
 * All of it runs under the loop's lock (a thread-safe loop's), where
 * the fd table may grow.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "core/uring.h"

struct uring_held {
	uaio_op *head[2], *tail[2];	/* per side, linked by next */
};

static bool ordered(const uaio_loop *l, const uaio_op *op)
{
	const struct uaio_opdef *d = uaio__opdef(op);

	return (d->flags & OPF_ST) && op->fd >= 0 && op->fd < UAIO_FD_FIXED &&
	       (!(d->flags & OPF_RW) || op->off == (uint64_t)-1) &&
	       !(l->threadsafe && (op->xflags & OX_ISSUE_HERE));
}

static int side(const uaio_op *op)
{
	return uaio__opdef(op)->side == SIDE_W;
}

/* Before op goes to the kernel: 1 when it waits behind its side's busy
 * op (held), 0 when it may go (and is its side's busy op from now on;
 * uring__order_undo if it does not go after all), -ENOMEM when it
 * cannot be held. */
int uring__order_hold(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e;
	struct uring_held *h;
	int s;

	if (!ordered(l, op))
		return 0;
	if (!(e = uaio__fdent(l, op->fd, true)))
		return -ENOMEM;
	s = side(op);
	if (!e->busy[s]) {
		e->busy[s] = op;
		op->xflags |= OX_ORDERED;
		return 0;
	}
	if (!e->held && !(e->held = calloc(1, sizeof(*e->held))))
		return -ENOMEM;
	h = e->held;
	UAIO_FIFO_PUSH(h->head[s], h->tail[s], op);
	op->state = OS_HELD;
	return 1;
}

/* op did not go to the kernel (no room): its side is free again. */
void uring__order_undo(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e;

	if ((op->xflags & OX_ORDERED) && (e = uaio__fdent(l, op->fd, false)) &&
	    e->busy[side(op)] == op)
		e->busy[side(op)] = NULL;
	op->xflags &= (uint16_t)~OX_ORDERED;
}

/* Takes side s's held ops off fd's entry: the first, linked by next to
 * the others in order, and the last in *tail; NULL when none. */
static uaio_op *take_held(struct uaio_fdent *e, int s, uaio_op **tail)
{
	uaio_op *first;

	if (!e->held || !(first = e->held->head[s]))
		return NULL;
	*tail = e->held->tail[s];
	e->held->head[s] = e->held->tail[s] = NULL;
	for (uaio_op *op = first; op; op = op->next)
		op->state = OS_MOVING;
	return first;
}

/* op, its side's busy op, ended (its last completion): the side's held
 * ops, in order (*tail the last), for the caller to start the first and
 * queue the rest behind it; NULL when none. */
static uaio_op *order_next(uaio_loop *l, uaio_op *op, uaio_op **tail)
{
	struct uaio_fdent *e = uaio__fdent(l, op->fd, false);
	int s = side(op);

	op->xflags &= (uint16_t)~OX_ORDERED;
	if (!e || e->busy[s] != op)
		return NULL;
	e->busy[s] = NULL;
	return take_held(e, s, tail);
}

/* fd is a new file (an accept or open of the loop's returned it): what
 * was busy there was on an old file a plain close(2) left in the kernel,
 * and must not hold up this one. Its held ops come back, both sides in
 * order (reads first), for the caller to queue; NULL when none. */
static uaio_op *order_new_file(uaio_loop *l, int fd, uaio_op **tail)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	uaio_op *first = NULL, *last = NULL, *t;

	if (!e || (!e->busy[0] && !e->busy[1]))
		return NULL;
	e->busy[0] = e->busy[1] = NULL;
	for (int s = 0; s < 2; s++) {
		uaio_op *h = take_held(e, s, &t);

		if (!h)
			continue;
		if (last)
			last->next = h;
		else
			first = h;
		last = t;
	}
	*tail = last;
	return first;
}

/* Cancels held ops of fd (target: that one only), -ECANCELED each; how
 * many. */
static int cancel_held(uaio_loop *l, int fd, const uaio_op *target)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	int n = 0;

	for (int s = 0; e && e->held && s < 2 && !(target && n); s++)
		n += uaio__cancel_queued(l, &e->held->head[s], &e->held->tail[s], fd, target);
	/* a close waiting for late ops: by itself only, never by cancel_fd */
	if (target && !n && uaio__late_cancel_close(l, target))
		n = 1;
	return n;
}

int uring__order_cancel(uaio_loop *l, uaio_op *target)
{
	return cancel_held(l, target->fd, target) ? 0 : -ENOENT;
}

int uring__order_cancel_fd(uaio_loop *l, int fd)
{
	return cancel_held(l, fd, NULL);
}

/* fd is being closed: a busy op that a worker runs (UAIO_OPF_BLOCKING),
 * which no cancel reaches, holds up nothing on a new file of that
 * number; its end then lets nothing go. */
void uring__order_forget_fd(uaio_loop *l, int fd)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);

	for (int s = 0; e && s < 2; s++) {
		uaio_op *op = e->busy[s];

		if (op && (op->state == OS_RUNNING || op->state == OS_WORKQ)) {
			op->xflags &= (uint16_t)~OX_ORDERED;
			e->busy[s] = NULL;
		}
	}
}

/* ------------------------------------------------- on a completion */

bool uring__returns_fd(const uaio_op *op)
{
	return op->opcode == OP_ACCEPT || op->opcode == OP_ACCEPT_MULTI ||
	       op->opcode == OP_OPENAT || op->opcode == OP_OPENAT2;
}

/* Ops that were held behind another on their stream (first .. last,
 * in order) go, in order: the first to the kernel, the others held
 * again behind it. One that finds no room waits for it with those after
 * it, ahead of whatever else waits (later ops of that side may be among
 * them). */
static void order_resume(uaio_loop *l, uaio_op *first, uaio_op *last)
{
	while (first) {
		uaio_op *next = first->next;

		first->next = NULL;
		if (uring__start(l, first) == -EAGAIN) {
			first->next = next;
			uring__pending_front(l, first, last);
			return;
		}
		first = next;
	}
}

/* The final completion of op, the busy op of its stream side: the next
 * ops on that side go. Or op returned a new descriptor (accept, open):
 * ops left busy on that number by a plain close(2) hold up no more. */
void uring__order_after(uaio_loop *l, uaio_op *op, int res)
{
	bool lk = uaio__lock(l);
	uaio_op *first = NULL, *last = NULL;

	if (op->xflags & OX_ORDERED)
		first = order_next(l, op, &last);
	else if (res >= 0)
		first = order_new_file(l, res, &last);
	if (first)
		order_resume(l, first, last);
	uaio__unlock(l, lk);
}

/* op ended on the worker pool: its side's busy op (UAIO_OPF_BLOCKING),
 * or one a close waits for (a copy, a long fadvise). */
void uring__order_pool_next(uaio_loop *l, uaio_op *op)
{
	if (op->xflags & OX_ORDERED)
		uring__order_after(l, op, 0);
	if (op->xflags & OX_LATE)
		uring__late_ended(l, op);
}

/* ------------------------------------------------- late descriptors */

/*
 * io_uring sends an fsync, a fallocate or an fadvise straight to its
 * worker, which looks the descriptor up only as it starts; the pool's
 * copy_file_range and long fadvise look theirs up as their call starts,
 * after a worker has taken them off the queue a close cancels. Those are
 * the op table's LATE ops; a close waits for them (late.c).
 */
void uring__late_issued(uaio_loop *l, uaio_op *op)
{
	if (uaio__opdef(op)->flags & OPF_LATE)
		uaio__late_count(l, op);
}

void uring__late_ended(uaio_loop *l, uaio_op *op)
{
	bool lk = uaio__lock(l);
	uaio_op *last, *first = uaio__late_end(l, op, &last);

	order_resume(l, first, last);
	uaio__unlock(l, lk);
}
