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

/* Removes target from the loop's own queues (not yet in any kernel or
 * worker): 0 if found and cancelled, -ENOENT otherwise. Under the lock. */
int uaio__cancel_local(uaio_loop *l, uaio_op *target)
{
	uaio_op **pp, *prev = NULL;

	if (target->state != OS_PENDING)
		return -ENOENT;
	for (pp = &l->pending_head; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == target) {
			*pp = target->next;
			if (l->pending_tail == target)
				l->pending_tail = prev;
			uaio__complete(l, target, -ECANCELED);
			return 0;
		}
	}
	return -ENOENT;
}

int uaio__cancel_local_fd(uaio_loop *l, int fd)
{
	uaio_op **pp = &l->pending_head, *prev = NULL;
	int n = 0;

	while (*pp) {
		uaio_op *op = *pp;
		if (op->fd == fd && op->opcode != OP_CLOSE &&
		    op->opcode != OP_CANCEL && op->opcode != OP_CANCEL_FD) {
			*pp = op->next;
			if (l->pending_tail == op)
				l->pending_tail = prev;
			uaio__complete(l, op, -ECANCELED);
			n++;
		} else {
			prev = op;
			pp = &op->next;
		}
	}
	return n;
}
