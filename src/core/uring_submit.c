/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend: submission. An op goes into the ring from the thread
 * that issues for it (io_uring ties a request to its thread), in stream
 * order (uring_order.c), or waits in loop->pending while the completion
 * budget (cq_cap) is spoken for: the kernel never has to overflow for
 * ops. Cancels, timeouts and closes may go ahead of the waiting ops
 * (goes_ahead). uring.c reaps and waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/uring.h"

int uring__ring_enable(uaio_loop *l)
{
	struct uring_state *u = U(l);

	if (UAIO_LIKELY(u->enabled))
		return 0;
	/* The first thread to submit becomes the single issuer. */
	if (u->ring.flags & IORING_SETUP_R_DISABLED) {
		/* liburing 2.3 declares io_uring_enable_rings but does not
		 * export it: register directly. */
		if (syscall(__NR_io_uring_register, u->ring.ring_fd,
			    IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
			return -errno;
	}
	u->enabled = true;
	if (!l->threadsafe && io_uring_register_ring_fd(&u->ring) == 1) {
		l->features |= UAIO_FEAT_REG_RING_FD;
		u->reg_tid = (pid_t)syscall(SYS_gettid);
	}
	return 0;
}

int uring__ring_submit(uaio_loop *l)
{
	int r = uring__ring_enable(l);
	if (r < 0)
		return r;
	do {
		r = io_uring_submit(&U(l)->ring);
	} while (r == -EINTR);
	return r;
}

/* An SQE, submitting what is queued if the SQ is full. */
struct io_uring_sqe *uring__get_sqe(uaio_loop *l)
{
	struct uring_state *u = U(l);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	if (UAIO_UNLIKELY(!sqe)) {
		uring__ring_submit(l);
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe;
}

static void prep(struct io_uring_sqe *sqe, uaio_op *op)
{
	const struct uaio_opdef *d = uaio__opdef(op);

	d->prep(sqe, op);
	/* A pinned handle names a registered file (ops whose file is fd). */
	if (UAIO_UNLIKELY(op->fd >= UAIO_FD_FIXED) && (d->flags & OPF_FD)) {
		sqe->fd = op->fd & ~UAIO_FD_FIXED;
		sqe->flags |= IOSQE_FIXED_FILE;
	}
	io_uring_sqe_set_data64(sqe, ud(op, TAG_OP));
}

static bool is_cancel(const uaio_op *op)
{
	return op->opcode == OP_CANCEL || op->opcode == OP_CANCEL_FD;
}

/*
 * Ops that end on their own, soon (never waiting on a peer), go to the
 * kernel even when the ring's completion budget (cq_cap) is spoken for:
 * behind idle reads that fill it (a server's connections) they would wait
 * for ever, a close among them, whose own cancel is what would make room.
 * The kernel keeps completions past the CQ's size (IORING_FEAT_NODROP)
 * until reaped. Cancels and timeouts, which touch no descriptor, also go
 * ahead of ops waiting for room; a close keeps its place (the writes made
 * before it go first).
 */
static bool jumps_queue(const uaio_op *op)
{
	return is_cancel(op) || op->opcode == OP_TIMEOUT;
}

bool uring__past_budget(const uaio_op *op)
{
	return jumps_queue(op) || op->opcode == OP_CLOSE || op->opcode == OP_NOP;
}

/* The last op waiting for room that works on fd (a copy's, splice's or
 * tee's output too), or NULL. */
static uaio_op *last_pending_on(const uaio_loop *l, int fd)
{
	uaio_op *last = NULL;

	for (uaio_op *op = l->pending_head; op; op = op->next)
		if (uaio__op_on_fd(op, fd))
			last = op;
	return last;
}

/* A close goes ahead too, but of its own descriptor's ops (made before
 * it, they go first; behind is the last of them): behind idle reads that
 * hold the whole budget it waited for ever, though its cancel is what
 * makes room. */
static bool goes_ahead(const uaio_loop *l, const uaio_op *op, const uaio_op *behind)
{
	return jumps_queue(op) ||
	       (op->opcode == OP_CLOSE && l->pending_head && !behind);
}

/* first .. last (linked by next) wait for room ahead of the others. */
void uring__pending_front(uaio_loop *l, uaio_op *first, uaio_op *last)
{
	for (uaio_op *op = first; op != last->next; op = op->next)
		op->state = OS_PENDING;
	last->next = l->pending_head;
	l->pending_head = first;
	if (!l->pending_tail)
		l->pending_tail = last;
}

static void pending_push(uaio_loop *l, uaio_op *op, bool front)
{
	if (front) {
		op->next = NULL;
		uring__pending_front(l, op, op);
		return;
	}
	op->state = OS_PENDING;
	UAIO_FIFO_PUSH(l->pending_head, l->pending_tail, op);
}

/*
 * io_uring ties a request to the thread that issued it and cancels it when
 * that thread exits. A thread-safe loop therefore issues only from the
 * thread that drives it; other threads queue and wake that thread.
 */
static bool is_issuer(const uaio_loop *l)
{
	return uaio__on_driver(l);
}

/* Into the kernel; -EAGAIN when the CQ is spoken for or the SQ is full. */
static int issue_sqe(uaio_loop *l, uaio_op *op)
{
	struct uring_state *u = U(l);
	struct io_uring_sqe *sqe, *sqe2;

	if (UAIO_UNLIKELY(u->kops + 2 > u->cq_cap) && !uring__past_budget(op))
		return -EAGAIN;
	/* Before the loop first runs, a full SQ is not submitted here: that
	 * would make this thread the ring's single issuer, and a loop filled
	 * here may run on another. The op waits for room instead. */
	if (UAIO_UNLIKELY(!u->enabled) && io_uring_sq_space_left(&u->ring) < 2)
		return -EAGAIN;
	sqe = uring__get_sqe(l);
	if (UAIO_UNLIKELY(!sqe))
		return -EAGAIN;
	if (op->opcode == OP_CLOSE && u->cancel_fd) {
		/* Cancel what is in flight on fd first, whatever it finds:
		 * a hard link runs the close even if the cancel "fails". */
		io_uring_prep_cancel_fd(sqe, op->fd, IORING_ASYNC_CANCEL_ALL);
		io_uring_sqe_set_data64(sqe, ud(NULL, TAG_IGNORE));
		sqe->flags |= IOSQE_IO_HARDLINK;
		u->kops++;
		/* The pair must reach the kernel together: no submit between. */
		sqe2 = io_uring_get_sqe(&u->ring);
		if (!sqe2) {
			sqe->flags &= ~IOSQE_IO_HARDLINK;
			uring__ring_submit(l);
			sqe2 = uring__get_sqe(l);
			if (!sqe2)
				return -EAGAIN;
		}
		sqe = sqe2;
	}
	prep(sqe, op);
	op->state = OS_KERNEL;
	u->kops++;
	return 0;
}

/* As issue_sqe, for an op that may have to wait behind another on its
 * stream (uring_order.c). */
static int issue(uaio_loop *l, uaio_op *op)
{
	int r = uring__order_hold(l, op);

	if (r) {		/* held, or -ENOMEM */
		if (r < 0)
			uaio__complete(l, op, r);
		return 0;
	}
	/* The caller's word (loop.h), in its turn on the stream; not by a
	 * slot, which is no descriptor a worker could use */
	if (UAIO_UNLIKELY(op->xflags & OX_BLOCKING) && (uaio__opdef(op)->flags & OPF_RW) &&
	    !(op->fd & UAIO_FD_FIXED)) {
		/* its error is the op's: -EAGAIN here means "no room" */
		if ((r = uaio__workers_submit(l, op)) < 0) {
			uring__order_undo(l, op);
			uaio__complete(l, op, r);
		}
		return 0;
	}
	r = issue_sqe(l, op);
	if (UAIO_UNLIKELY(r < 0))
		uring__order_undo(l, op);
	else
		uring__late_issued(l, op);
	return r;
}

static int uring_cancel(uaio_loop *l, uaio_op *op, uaio_op *target);
static int uring_cancel_fd(uaio_loop *l, uaio_op *op);

/* An op with no io_uring request (a cancel has its own): the worker
 * pool runs it. */
static bool pool_op(const uaio_op *op)
{
	return !uaio__opdef(op)->prep && op->opcode != OP_CANCEL && op->opcode != OP_CANCEL_FD;
}

/* A pool op goes to the workers, counted before one can take it if a
 * close must wait for it (a copy, a long fadvise: uring_order.c); those
 * come here on the driving thread only (uring__submit). */
static int pool(uaio_loop *l, uaio_op *op)
{
	int r;

	uring__late_issued(l, op);
	if ((r = uaio__workers_submit(l, op)) < 0 && (op->xflags & OX_LATE))
		uring__late_ended(l, op);
	return r;
}

/* Starts op on the issuing thread: 0, or -EAGAIN to wait for room. */
int uring__start(uaio_loop *l, uaio_op *op)
{
	if (pool_op(op)) {
		int r = pool(l, op);	/* handed over by another thread */

		if (r < 0)
			uaio__complete(l, op, r);
		return 0;
	}
	switch (op->opcode) {
	case OP_CANCEL:
		return uring_cancel(l, op, (uaio_op *)(uintptr_t)op->addr);
	case OP_CANCEL_FD:
		return uring_cancel_fd(l, op);
	case OP_CLOSE:
		if (!(op->xflags & OX_STARTED)) {	/* once, even if retried */
			uaio__cancel_local_fd(l, op->fd);
			uring__order_cancel_fd(l, op->fd);
			/* flagged ops waiting for a worker (UAIO_OPF_BLOCKING);
			 * one running there holds up no new file */
			uaio__workers_cancel_fd(l, op->fd);
			uring__order_forget_fd(l, op->fd);
			uring__end_watch_on_close(l, op->fd);
			op->xflags |= OX_STARTED;
		}
		if (uaio__late_hold_close(l, op))
			return 0;
		break;
	}
	return issue(l, op);
}

int uring__submit(uaio_loop *l, uaio_op *op)
{
	bool issuer, ahead;
	uaio_op *behind;

	if (pool_op(op)) {
		/* one a close must wait for is counted where the ring's
		 * are, on the driving thread: handed over */
		if ((uaio__opdef(op)->flags & OPF_LATE) && !is_issuer(l)) {
			pending_push(l, op, false);
			uaio__wake(l);
			return 0;
		}
		return pool(l, op);
	}
	if ((op->xflags & OX_ISSUE_HERE) && l->threadsafe) {
		/* Out now, from this thread, or not at all (see loop.h); the
		 * stream order is the caller's then (uring_order.c). */
		int r = uring__start(l, op);
		if (r < 0)
			return r;
		uring__ring_submit(l);
		return 0;
	}
	issuer = is_issuer(l);
	/* A cancel needs one completion of room and makes room: it goes
	 * ahead of ops waiting for room (behind them, a full ring would
	 * never hear of it); so do the other ops that end on their own. */
	behind = op->opcode == OP_CLOSE ? last_pending_on(l, op->fd) : NULL;
	ahead = goes_ahead(l, op, behind);
	if (ahead && (!issuer || uring__start(l, op) == -EAGAIN)) {
		pending_push(l, op, true);
		if (!issuer)
			uaio__wake(l);
		return 0;
	}
	if (ahead)
		return 0;
	if (behind) {
		/* Right behind its own descriptor's ops, not at the tail:
		 * there, once they were in, it still waited behind other
		 * descriptors' reads that wanted the room only its cancel
		 * (and those of the closes queued with it) would free. */
		op->state = OS_PENDING;
		op->next = behind->next;
		behind->next = op;
		if (l->pending_tail == behind)
			l->pending_tail = op;
		if (!issuer)
			uaio__wake(l);
		return 0;
	}
	/* FIFO behind waiting ops; other threads hand over to the issuer. */
	if (l->pending_head || !issuer || uring__start(l, op) == -EAGAIN) {
		pending_push(l, op, false);
		if (!issuer)
			uaio__wake(l);
	}
	return 0;
}

/* Whether a cancel of target is in this loop's kernel already. */
static bool cancel_in_kernel(const struct uring_state *u, const uaio_op *target)
{
	for (const uaio_op *c = u->cancels; c; c = c->next)
		if (c->addr == (uintptr_t)target && !c->addr2)
			return true;
	return false;
}

/* The core has done what both backends share (uaio__cancel_here); run
 * again here, since a cancel handed over to the issuing thread finds its
 * target as it is by then. In the kernel: an async cancel. */
static int uring_cancel(uaio_loop *l, uaio_op *op, uaio_op *target)
{
	struct uring_state *u = U(l);
	struct io_uring_sqe *sqe;
	int r = uaio__cancel_here(l, target);

	if (r == 1 && target->state == OS_HELD) {
		uaio__complete(l, op, uring__order_cancel(l, target));
		return 0;
	}
	if (r == 1 && target->state == OS_KERNEL && cancel_in_kernel(u, target)) {
		/* The kernel would say 0 to this one too: the first has it,
		 * as the epoll backend's first has ended it (-ENOENT). (Were
		 * the first to find it running, -EALREADY, this one would
		 * say -ENOENT too, until the target ends.) */
		uaio__complete(l, op, -ENOENT);
		return 0;
	}
	if (r == 1 && target->state == OS_KERNEL) {
		sqe = uring__get_sqe(l);
		if (!sqe)
			return -EAGAIN;
		io_uring_prep_cancel64(sqe, ud(target, TAG_OP), 0);
		io_uring_sqe_set_data64(sqe, ud(op, TAG_OP));
		op->next = u->cancels;
		u->cancels = op;
		op->state = OS_KERNEL;
		u->kops++;
		return 0;
	}
	uaio__complete(l, op, r == 1 ? -ENOENT : r);
	return 0;
}

/* op's final completion, while cancels are in the kernel: a cancel
 * leaves the list; one whose target op was stops matching it (its next
 * submission is another request). */
void uring__cancels_settle(uaio_loop *l, uaio_op *op)
{
	struct uring_state *u = U(l);

	for (uaio_op **pp = &u->cancels; *pp;) {
		uaio_op *c = *pp;

		if (c == op) {
			*pp = c->next;
			c->next = NULL;
			continue;
		}
		if (c->addr == (uintptr_t)op)
			c->addr2 = 1;
		pp = &c->next;
	}
}

static int uring_cancel_fd(uaio_loop *l, uaio_op *op)
{
	struct uring_state *u = U(l);
	struct io_uring_sqe *sqe;
	/* Held ops first: the busy one's end must not start them. */
	int local = uring__order_cancel_fd(l, op->fd) + uaio__cancel_local_fd(l, op->fd);

	local += uaio__workers_cancel_fd(l, op->fd);
	if (!u->cancel_fd || !(sqe = uring__get_sqe(l))) {
		uaio__complete(l, op, local);
		return 0;
	}
	io_uring_prep_cancel_fd(sqe, op->fd, IORING_ASYNC_CANCEL_ALL);
	io_uring_sqe_set_data64(sqe, ud(op, TAG_OP));
	/* added to the kernel's count, less the watch's poll it cancels */
	op->off = (uint64_t)(uint32_t)local |
		  (uint64_t)uring__watch_ring_polls(l, op->fd) << 32;
	op->state = OS_KERNEL;
	u->kops++;
	return 0;
}

/* Moves pending ops into the ring while there is room. */
void uring__refill(uaio_loop *l)
{
	struct uring_state *u = U(l);

	while (l->pending_head && (u->kops + 2 <= u->cq_cap || uring__past_budget(l->pending_head))) {
		uaio_op *op = l->pending_head;
		l->pending_head = op->next;
		if (!l->pending_head)
			l->pending_tail = NULL;
		op->state = OS_MOVING;
		if (uring__start(l, op) == -EAGAIN) {
			pending_push(l, op, true);
			break;
		}
	}
}

void uring__flush(uaio_loop *l)
{
	if (is_issuer(l) && io_uring_sq_ready(&U(l)->ring))
		uring__ring_submit(l);
}
