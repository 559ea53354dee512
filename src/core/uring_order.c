/* SPDX-License-Identifier: MIT */
/*
 * Stream order on io_uring. An op that finds a pipe or socket not ready
 * waits on the file's wait queue, and the kernel wakes the newest waiter
 * first: reads queued together take the bytes in reverse, writes queued
 * on a full pipe interleave. So the ops of one side (read, write) of a
 * stream go to the kernel one at a time, in the order they were made, as
 * the epoll backend's descriptor queues run them. Positional file I/O
 * (off >= 0) and ops by a pinned handle are not held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>

#include "core/uring.h"

struct uring_held {
	uaio_op *head[2], *tail[2];	/* per side, linked by next */
};

static bool ordered(const uaio_op *op)
{
	const struct uaio_opdef *d = uaio__opdef(op);

	return (d->flags & OPF_ST) && op->fd >= 0 && op->fd < UAIO_FD_FIXED &&
	       (!(d->flags & OPF_RW) || op->off == (uint64_t)-1);
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

	if (!ordered(op))
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

/* Whether op would wait behind another on its stream. */
bool uring__order_busy(uaio_loop *l, const uaio_op *op)
{
	struct uaio_fdent *e;

	return ordered(op) && (e = uaio__fdent(l, op->fd, false)) && e->busy[side(op)];
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

/* op, its side's busy op, ended (its last completion): the next held op
 * of that side, taken off the list, for the caller to start; or NULL. */
uaio_op *uring__order_next(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e = uaio__fdent(l, op->fd, false);
	struct uring_held *h;
	uaio_op *next;
	int s = side(op);

	op->xflags &= (uint16_t)~OX_ORDERED;
	if (!e || e->busy[s] != op)
		return NULL;
	e->busy[s] = NULL;
	if (!(h = e->held) || !(next = h->head[s]))
		return NULL;
	if (!(h->head[s] = next->next))
		h->tail[s] = NULL;
	next->next = NULL;
	next->state = OS_IDLE;
	return next;
}

/* Cancels held ops of fd (target: that one only), -ECANCELED each; how
 * many. */
static int cancel_held(uaio_loop *l, int fd, const uaio_op *target)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	int n = 0;

	if (!e || !e->held)
		return 0;
	for (int s = 0; s < 2; s++) {
		uaio_op **pp = &e->held->head[s], *prev = NULL;

		while (*pp) {
			uaio_op *op = *pp;

			if (target && op != target) {
				prev = op;
				pp = &op->next;
				continue;
			}
			*pp = op->next;
			if (e->held->tail[s] == op)
				e->held->tail[s] = prev;
			uaio__complete(l, op, -ECANCELED);
			n++;
		}
	}
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
