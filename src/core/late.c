/* SPDX-License-Identifier: MIT */
/*
 * A close waits for the ops that look its descriptor up late. A worker
 * (io_uring's, or the pool's) finds a descriptor by its number only as
 * its call starts: a close that ran first made the op fail with EBADF,
 * and a file opened on the number since was the one synced, cut, advised
 * or copied into. So the ops a worker may take are counted on each
 * descriptor they name (the backend says which: io_uring the op table's
 * LATE ops, epoll every bounded file op it gives its workers), and a
 * close of a counted descriptor is held here until the count is zero.
 *
 * Both backends share this record; each restarts the closes it gets back
 * in its own way. Under the loop's lock, where the fd table may grow.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "core/internal.h"

void uaio__late_count(uaio_loop *l, uaio_op *op)
{
	int fds[2], n = uaio__op_fds(op, fds);

	/* both entries first: the second may move the table */
	for (int i = 0; i < n; i++)
		if (!uaio__fdent(l, fds[i], true))
			return;		/* no memory: not waited for */
	for (int i = 0; i < n; i++)
		l->fds[fds[i]].late++;
	if (n)
		op->xflags |= OX_LATE;
}

/* Takes the closes of the descriptors fds[0..n) out of the held ones,
 * in the order they were made. */
static uaio_op *take_closes(uaio_loop *l, const int *fds, int n, uaio_op **tail)
{
	uaio_op **pp = &l->late_head, *prev = NULL, *first = NULL, *last = NULL;

	while (*pp) {
		uaio_op *op = *pp;

		if (op->fd != fds[0] && (n < 2 || op->fd != fds[1])) {
			prev = op;
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		if (l->late_tail == op)
			l->late_tail = prev;
		op->state = OS_MOVING;
		UAIO_FIFO_PUSH(first, last, op);
	}
	*tail = last;
	return first;
}

uaio_op *uaio__late_end(uaio_loop *l, uaio_op *op, uaio_op **tail)
{
	int fds[2], zero[2], n = (op->xflags & OX_LATE) ? uaio__op_fds(op, fds) : 0, nzero = 0;

	op->xflags &= (uint16_t)~OX_LATE;
	for (int i = 0; i < n; i++) {
		struct uaio_fdent *e = uaio__fdent(l, fds[i], false);

		if (e && e->late && !--e->late)
			zero[nzero++] = fds[i];	/* its count is zero now */
	}
	*tail = NULL;
	return nzero ? take_closes(l, zero, nzero, tail) : NULL;
}

bool uaio__late_hold_close(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e = op->fd >= 0 && op->fd < UAIO_FD_FIXED ?
			       uaio__fdent(l, op->fd, false) : NULL;

	if (!e || !e->late)
		return false;
	UAIO_FIFO_PUSH(l->late_head, l->late_tail, op);
	op->state = OS_HELD;
	return true;
}

bool uaio__late_cancel_close(uaio_loop *l, const uaio_op *op)
{
	return op->opcode == OP_CLOSE &&
	       uaio__cancel_queued(l, &l->late_head, &l->late_tail, op->fd, op) > 0;
}
