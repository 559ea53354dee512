/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend. Level-triggered watches of an ordinary loop live in an
 * epoll set: io_uring's polls are one-shot (a re-arm per event) or
 * edge-triggered, and refuse to be level-triggered and multishot at once.
 * Once that set exists the loop sleeps in epoll_wait(), with an eventfd
 * registered on the ring in the same set to say when completions (or
 * DEFER_TASKRUN work, which the ring fd itself does not report) arrive.
 * Edge-triggered watches stay multishot polls on the ring.
 *
 * user_data carries a pointer with a 2-bit tag:
 *   0 op, 1 watch on the ring (multishot poll for UAIO_EDGE; a one-shot
 *   poll re-armed after dispatch for files and thread-safe loops),
 *   2 the wake eventfd read, 3 internal requests whose CQE is ignored.
 * Ops beyond what the CQ can hold wait in loop->pending, so the kernel
 * never has to overflow for ops; watches rely on IORING_FEAT_NODROP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/uring.h"


static int ring_enable(uaio_loop *l)
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
	if (!l->threadsafe && io_uring_register_ring_fd(&u->ring) == 1)
		l->features |= UAIO_FEAT_REG_RING_FD;
	return 0;
}

static int ring_submit(uaio_loop *l)
{
	int r = ring_enable(l);
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
		ring_submit(l);
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

static bool past_budget(const uaio_op *op)
{
	return jumps_queue(op) || op->opcode == OP_CLOSE || op->opcode == OP_NOP;
}

/* An op waiting for room works on fd (a splice's or tee's output too). */
static bool pending_on(const uaio_loop *l, int fd)
{
	for (const uaio_op *op = l->pending_head; op; op = op->next)
		if (op->fd == fd || ((op->opcode == OP_SPLICE || op->opcode == OP_TEE) &&
				     (int)op->addr2 == fd))
			return true;
	return false;
}

/* A close goes ahead too, but of its own descriptor's ops (made before
 * it, they go first): behind idle reads that hold the whole budget it
 * waited for ever, though its cancel is what makes room. */
static bool goes_ahead(const uaio_loop *l, const uaio_op *op)
{
	return jumps_queue(op) ||
	       (op->opcode == OP_CLOSE && l->pending_head && !pending_on(l, op->fd));
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

	if (UAIO_UNLIKELY(u->kops + 2 > u->cq_cap) && !past_budget(op))
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
			ring_submit(l);
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
	r = issue_sqe(l, op);
	if (UAIO_UNLIKELY(r < 0))
		uring__order_undo(l, op);
	return r;
}

static int uring_cancel(uaio_loop *l, uaio_op *op, uaio_op *target);
static int uring_cancel_fd(uaio_loop *l, uaio_op *op);

/* Starts op on the issuing thread: 0, or -EAGAIN to wait for room. */
int uring__start(uaio_loop *l, uaio_op *op)
{
	switch (op->opcode) {
	case OP_CANCEL:
		return uring_cancel(l, op, (uaio_op *)(uintptr_t)op->addr);
	case OP_CANCEL_FD:
		return uring_cancel_fd(l, op);
	case OP_CLOSE:
		if (!(op->xflags & OX_STARTED)) {	/* once, even if retried */
			uaio__cancel_local_fd(l, op->fd);
			uring__order_cancel_fd(l, op->fd);
			uring__end_watch_on_close(l, op->fd);
			op->xflags |= OX_STARTED;
		}
		break;
	}
	return issue(l, op);
}

static int uring_submit(uaio_loop *l, uaio_op *op)
{
	bool issuer, ahead;

	if (!uaio__opdef(op)->prep && op->opcode != OP_CANCEL &&
	    op->opcode != OP_CANCEL_FD)
		return uaio__workers_submit(l, op);
	if ((op->xflags & OX_ISSUE_HERE) && l->threadsafe) {
		/* Out now, from this thread, or not at all (see loop.h); the
		 * stream order is the caller's then (uring_order.c). */
		int r = uring__start(l, op);
		if (r < 0)
			return r;
		ring_submit(l);
		return 0;
	}
	issuer = is_issuer(l);
	/* A cancel needs one completion of room and makes room: it goes
	 * ahead of ops waiting for room (behind them, a full ring would
	 * never hear of it); so do the other ops that end on their own. */
	ahead = goes_ahead(l, op);
	if (ahead && (!issuer || uring__start(l, op) == -EAGAIN)) {
		pending_push(l, op, true);
		if (!issuer)
			uaio__wake(l);
		return 0;
	}
	if (ahead)
		return 0;
	/* FIFO behind waiting ops; other threads hand over to the issuer. */
	if (l->pending_head || !issuer || uring__start(l, op) == -EAGAIN) {
		pending_push(l, op, false);
		if (!issuer)
			uaio__wake(l);
	}
	return 0;
}

/* The core has done what both backends share (uaio__cancel_here); run
 * again here, since a cancel handed over to the issuing thread finds its
 * target as it is by then. In the kernel: an async cancel. */
static int uring_cancel(uaio_loop *l, uaio_op *op, uaio_op *target)
{
	struct io_uring_sqe *sqe;
	int r = uaio__cancel_here(l, target);

	if (r == 1 && target->state == OS_HELD) {
		uaio__complete(l, op, uring__order_cancel(l, target));
		return 0;
	}
	if (r == 1 && target->state == OS_KERNEL && (target->xflags & OX_CANCELLING)) {
		/* The kernel would say 0 to this one too: the first has it,
		 * as the epoll backend's first has ended it (-ENOENT). (Were
		 * the first to find it running, -EALREADY, this one would
		 * say -ENOENT too: the flag lives until it is resubmitted.) */
		uaio__complete(l, op, -ENOENT);
		return 0;
	}
	if (r == 1 && target->state == OS_KERNEL) {
		sqe = uring__get_sqe(l);
		if (!sqe)
			return -EAGAIN;
		io_uring_prep_cancel64(sqe, ud(target, TAG_OP), 0);
		io_uring_sqe_set_data64(sqe, ud(op, TAG_OP));
		target->xflags |= OX_CANCELLING;
		op->state = OS_KERNEL;
		U(l)->kops++;
		return 0;
	}
	uaio__complete(l, op, r == 1 ? -ENOENT : r);
	return 0;
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
	op->off = (uint64_t)local;	/* added to the kernel's count */
	op->state = OS_KERNEL;
	u->kops++;
	return 0;
}

/* The wake eventfd is read by the ring, or by epoll_wait in the epoll-set
 * mode of ordinary loops. */
static bool ring_reads_wake(const uaio_loop *l)
{
	return U(l)->epfd < 0 || l->threadsafe;
}

void uring__cancel_wake(uaio_loop *l)
{
	struct io_uring_sqe *sqe = uring__get_sqe(l);

	if (!sqe)
		return;
	io_uring_prep_cancel64(sqe, ud(l, TAG_WAKE), 0);
	io_uring_sqe_set_data64(sqe, ud(NULL, TAG_IGNORE));
	U(l)->kops++;
}

static void arm_wake(uaio_loop *l)
{
	struct uring_state *u = U(l);
	struct io_uring_sqe *sqe;
	bool lk;

	if (u->wake_armed || !ring_reads_wake(l))
		return;
	lk = uaio__lock(l);
	sqe = uring__get_sqe(l);
	if (sqe) {
		io_uring_prep_read(sqe, l->wake_fd, &l->wake_buf,
				   sizeof(l->wake_buf), 0);
		io_uring_sqe_set_data64(sqe, ud(l, TAG_WAKE));
		u->wake_armed = true;
		u->wake_tail = u->ring.sq.sqe_tail;
	}
	uaio__unlock(l, lk);
}

/* Moves pending ops into the ring while there is room. */
static void refill(uaio_loop *l)
{
	struct uring_state *u = U(l);

	while (l->pending_head && (u->kops + 2 <= u->cq_cap || past_budget(l->pending_head))) {
		uaio_op *op = l->pending_head;
		l->pending_head = op->next;
		if (!l->pending_head)
			l->pending_tail = NULL;
		op->state = OS_IDLE;
		if (uring__start(l, op) == -EAGAIN) {
			pending_push(l, op, true);
			break;
		}
	}
}

static void uring_flush(uaio_loop *l)
{
	if (is_issuer(l) && io_uring_sq_ready(&U(l)->ring))
		ring_submit(l);
}

struct cqe_copy {
	uint64_t ud;
	int32_t res;
	uint32_t flags;
};

/*
 * The kernel's restart codes (-ERESTARTSYS, -ERESTARTNOINTR,
 * -ERESTARTNOHAND, -ERESTART_RESTARTBLOCK) never reach a program from a
 * system call, but io_uring passes them on from an io-wq worker that a
 * cancel interrupted (a blocked splice or tee). Its read and write paths
 * turn them into -EINTR: so does the loop, for every op.
 */
static inline int op_res(int res)
{
	if (UAIO_UNLIKELY(res <= -512 && res >= -516 && res != -515))
		return -EINTR;
	return res;
}

/* Moves CQEs to l->fired while there is room there; the rest stay in
 * the CQ for the next round. */
static int reap(uaio_loop *l)
{
	struct uring_state *u = U(l);
	int total = 0;

	for (;;) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0, room = uaio__fired_room(l), ended = 0, internal = 0;
		bool lk;

		/* Completions the kernel had to hold back (NODROP) come in
		 * only through an enter. */
		if (UAIO_UNLIKELY(IO_URING_READ_ONCE(*u->ring.sq.kflags) &
				  IORING_SQ_CQ_OVERFLOW))
			io_uring_get_events(&u->ring);
		io_uring_for_each_cqe(&u->ring, head, cqe) {
			void *p = (void *)(uintptr_t)(cqe->user_data & ~(uint64_t)TAG_MASK);
			int res = cqe->res;

			if (n == room)
				break;
			n++;
			switch (cqe->user_data & TAG_MASK) {
			case TAG_OP: {
				uaio_op *op = p;

				res = op_res(res);
				if (uring__returns_fd(op) && res >= 0)
					uring__order_after(l, op, res);
				if (cqe->flags & IORING_CQE_F_MORE) {
					uaio__fire(l, op, res, FIRED_OP_MORE);
					break;
				}
				ended++;
				if (op->xflags & OX_ORDERED)
					uring__order_after(l, op, res);
				if (op->opcode == OP_CANCEL_FD) {
					/* The kernel's count plus the loop's own; the
					 * kernel's error (-EBADF after a close(2))
					 * only when the loop cancelled none, as on
					 * epoll: never the two summed. */
					int local = (int)op->off;

					res = res >= 0 ? res + local :
					      res == -ENOENT || local ? local : res;
				}
				uaio__fire(l, op, res, FIRED_OP);
				break;
			}
			case TAG_WATCH:
				uring__watch_cqe(l, p, res, cqe->flags);
				break;
			case TAG_WREMOVE:
				internal++;
				uring__watch_rm_cqe(l, p, res);
				break;
			case TAG_WAKE:
				u->wake_armed = false;
				uaio__fire(l, NULL, 0, FIRED_INBOX);
				break;
			default:		/* TAG_IGNORE: our own requests */
				internal++;
			}
		}
		if (!n)
			break;
		io_uring_cq_advance(&u->ring, n);
		total += n;
		lk = uaio__lock(l);
		u->kops -= ended + internal;
		uaio__unlock(l, lk);
		if (!u->wake_armed)
			arm_wake(l);
		if (n == room)
			break;
	}
	if (UAIO_UNLIKELY(u->rm_head))
		uring__rm_retry(l);
	if (l->pending_head) {
		bool lk = uaio__lock(l);
		refill(l);
		uaio__unlock(l, lk);
	}
	return total;
}

static bool taskrun_pending(const struct uring_state *u)
{
	return IO_URING_READ_ONCE(*u->ring.sq.kflags) & IORING_SQ_TASKRUN;
}

/* Sleeps in epoll_wait: level-triggered watches, plus the eventfd that
 * the ring signals for completions. */
static int ep_wait(uaio_loop *l, int64_t timeout_ns)
{
	struct uring_state *u = U(l);
	bool ring = false;
	int n, total = 0;

	if (io_uring_sq_ready(&u->ring))
		ring_submit(l);
	if (io_uring_cq_ready(&u->ring) || taskrun_pending(u))
		timeout_ns = 0;
	n = uaio__epoll_wait(u->epfd, u->evs, EP_BATCH, timeout_ns);
	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		uint64_t key = u->evs[i].data.u64;

		if (key == EV_KEY) {
			ring = true;
			continue;
		}
		if (key == EV_WAKE) {
			uint64_t v;

			if (read(l->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				return -errno;
			uaio__fire(l, NULL, 0, FIRED_INBOX);
			total++;
			continue;
		}
		total += uaio__epoll_fire(l, (int)key, u->evs[i].events, WS_EPOLL);
	}
	/* Deferred task work posts the CQEs. One enter runs at most a few
	 * dozen items (the kernel's IO_LOCAL_TW_DEFAULT_MAX) and keeps the
	 * rest without signalling the eventfd again: the TASKRUN flag says
	 * they wait, and the next iteration must not sleep on them. */
	if (u->defer && (ring || taskrun_pending(u)))
		io_uring_get_events(&u->ring);
	if (ring || io_uring_cq_ready(&u->ring) || l->pending_head)
		total += reap(l);
	return total;
}

static int uring_wait(uaio_loop *l, int64_t timeout_ns)
{
	struct uring_state *u = U(l);
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts, *tsp = NULL;
	int r = 0;

	if (UAIO_UNLIKELY(!u->enabled)) {
		if ((r = ring_enable(l)) < 0)
			return r;
		refill(l);	/* what waited for room before the first run */
	}
	if (UAIO_UNLIKELY(!u->wake_armed))
		arm_wake(l);
	if (UAIO_UNLIKELY(u->rm_head))
		uring__rm_retry(l);
	if (u->epfd >= 0 && !l->threadsafe)
		return ep_wait(l, timeout_ns);
	if (timeout_ns > 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tsp = &ts;
	}
	if (l->threadsafe) {
		/* Submitters share the SQ under the lock: flush it there, then
		 * wait touching only the CQ side. */
		bool lk = uaio__lock(l);
		refill(l);
		if (io_uring_sq_ready(&u->ring))
			ring_submit(l);
		uaio__unlock(l, lk);
		if (timeout_ns != 0 && !io_uring_cq_ready(&u->ring))
			r = io_uring_wait_cqes(&u->ring, &cqe, 1, tsp, NULL);
	} else if (timeout_ns == 0) {
		if (io_uring_sq_ready(&u->ring) || u->defer)
			r = io_uring_submit_and_get_events(&u->ring);
	} else if (io_uring_cq_ready(&u->ring)) {
		if (io_uring_sq_ready(&u->ring))
			r = io_uring_submit(&u->ring);
	} else if (!tsp) {	/* one plain enter: the common, hot case */
		r = io_uring_submit_and_wait(&u->ring, 1);
	} else {
		r = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, tsp, NULL);
	}
	if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN && r != -EBUSY)
		return r;
	return reap(l);
}

/* The ring fd misses DEFER_TASKRUN work: ordinary loops hand out their
 * epoll set instead (the loop then sleeps in it too). */
static int uring_fd(const uaio_loop *l)
{
	struct uring_state *u = U(l);
	struct epoll_event ev = { .events = EPOLLIN };

	/* Not the ring's own fd when the set cannot be made: completions
	 * that come by task work do not make it readable. */
	if (!l->threadsafe) {
		int r = uring__ep_setup((uaio_loop *)l);

		return r < 0 ? r : u->epfd;
	}
	/* A thread-safe loop's other threads queue submissions for the
	 * driver and say so on the wake eventfd, which the ring's fd does
	 * not report until the driver has armed its read of it. */
	if (u->tsfd < 0) {
		int fd = uaio__fd_own(epoll_create1(EPOLL_CLOEXEC));

		if (fd < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, u->ring.ring_fd, &ev) < 0 ||
		    epoll_ctl(fd, EPOLL_CTL_ADD, l->wake_fd, &ev) < 0) {
			if (fd >= 0)
				uaio__fd_close(fd);
			return -errno;
		}
		u->tsfd = fd;
	}
	return u->tsfd;
}

/* An op the ring ran on an io-wq worker is freed, and drops the files it
 * holds, by task work the worker leaves behind as it lets go; under
 * DEFER_TASKRUN that work waits for the next enter. Run it before the
 * loop returns, so that a program closing a descriptor once its last op
 * has completed really closes it (a reader of the pipe gets EOF, the
 * socket's peer a FIN). */
static void uring_settle(uaio_loop *l)
{
	struct uring_state *u = U(l);

	if (u->defer && (IO_URING_READ_ONCE(*u->ring.sq.kflags) & IORING_SQ_TASKRUN))
		io_uring_get_events(&u->ring);
}

static bool uring_unannounced(uaio_loop *l)
{
	struct uring_state *u = U(l);
	unsigned sq = io_uring_sq_ready(&u->ring);

	/* The loop's own read of the wake eventfd, queued after the last
	 * one fired, need not reach the kernel first: a post still shows on
	 * uaio_loop_fd() (the eventfd is in its epoll set). */
	if (sq && u->wake_armed &&
	    (int)(u->wake_tail - IO_URING_READ_ONCE(*u->ring.sq.khead)) > 0)
		sq--;
	return sq || io_uring_cq_ready(&u->ring) || u->rm_head ||
	       (u->defer && taskrun_pending(u)) ||
	       (l->pending_head && (u->kops + 2 <= u->cq_cap || past_budget(l->pending_head)));
}

const struct uaio_backend uaio__uring_backend = {
	.name = "io_uring",
	.kind = UAIO_BACKEND_URING,
	.init = uring__init,
	.fini = uring__fini,
	.submit = uring_submit,
	.watch_arm = uring__watch_arm,
	.watch_stop = uring__watch_stop,
	.wait = uring_wait,
	.flush = uring_flush,
	.fd = uring_fd,
	.unannounced = uring_unannounced,
	.pin = uring__pin,
	.unpin = uring__unpin,
	.buf_update = uring__buf_update,
	.settle = uring_settle,
};
