/* SPDX-License-Identifier: MIT */
/*
 * Cancellation both backends share: what the loop itself still holds (an
 * op waiting for the ring's room, or queued for the worker pool) is taken
 * back here; what is in the kernel, on an epoll queue or in the timer
 * heap is left to the backend.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "core/internal.h"

/*
 * The part of cancelling target that both backends share (under the
 * lock): an op still queued by the loop or the worker pool, or one with
 * nothing left to cancel. 0 cancelled, -ENOENT nothing to cancel (or a
 * worker already runs it), 1 the backend's to cancel (in the kernel, on
 * an fd queue, a timer, held behind another op on its stream).
 */
int uaio__cancel_here(uaio_loop *l, uaio_op *target)
{
	switch (target->state) {
	case OS_PENDING:
		return uaio__cancel_local(l, target);
	case OS_WORKQ:
	case OS_RUNNING:
		return uaio__workers_cancel(l, target);
	case OS_KERNEL:
	case OS_FDQ:
	case OS_TIMERQ:
	case OS_HELD:
		return 1;
	}
	return -ENOENT;
}

/* Takes out of the FIFO head..tail (linked by next) and ends with
 * -ECANCELED: target, or with no target every op on fd but a close or
 * a cancel (they end on their own). How many. Under the lock. */
int uaio__cancel_queued(uaio_loop *l, uaio_op **head, uaio_op **tail, int fd,
			const uaio_op *target)
{
	uaio_op **pp = head, *prev = NULL;
	int n = 0;

	while (*pp) {
		uaio_op *op = *pp;

		if (target ? op != target :
		    !uaio__op_on_fd(op, fd) || op->opcode == OP_CLOSE ||
		    op->opcode == OP_CANCEL || op->opcode == OP_CANCEL_FD) {
			prev = op;
			pp = &op->next;
			continue;
		}
		*pp = op->next;
		if (*tail == op)
			*tail = prev;
		uaio__complete(l, op, -ECANCELED);
		n++;
		if (target)
			break;
	}
	return n;
}

/* Removes target from the loop's own queue (not yet in any kernel or
 * worker): 0 if found and cancelled, -ENOENT otherwise. Under the lock. */
int uaio__cancel_local(uaio_loop *l, uaio_op *target)
{
	if (target->state != OS_PENDING ||
	    !uaio__cancel_queued(l, &l->pending_head, &l->pending_tail, -1, target))
		return -ENOENT;
	return 0;
}

int uaio__cancel_local_fd(uaio_loop *l, int fd)
{
	return uaio__cancel_queued(l, &l->pending_head, &l->pending_tail, fd, NULL);
}
