/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend: waiting and reaping (submission is uring_submit.c).
 * Level-triggered watches of an ordinary loop live in an epoll set:
 * io_uring's polls are one-shot (a re-arm per event) or edge-triggered,
 * and refuse to be level-triggered and multishot at once. Once that set
 * exists the loop sleeps in epoll_wait(), with an eventfd registered on
 * the ring in the same set to say when completions (or DEFER_TASKRUN
 * work, which the ring fd itself does not report) arrive. Edge-triggered
 * watches stay multishot polls on the ring.
 *
 * user_data carries a pointer with a 3-bit tag (uring.h): an op, a watch
 * on the ring (multishot poll for UAIO_EDGE; a one-shot poll re-armed
 * after dispatch for files and thread-safe loops), the wake eventfd's
 * read, a watch's poll remove, or an internal request whose CQE is
 * ignored. reap() turns CQEs into l->fired; the loop runs the handlers.
 * Ops never overflow the CQ (uring_submit.c); watches rely on
 * IORING_FEAT_NODROP.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <liburing.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "core/uring.h"

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

/* What poll(2) reports for a poll op: the events asked, and the three
 * it always may. */
static inline int poll_asked(const uaio_op *op)
{
	return (int)op->len | POLLERR | POLLHUP | POLLNVAL;
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
				if (UAIO_UNLIKELY(u->cancels != NULL))
					uring__cancels_settle(l, op);
				if (op->xflags & OX_ORDERED)
					uring__order_after(l, op, res);
				if (op->xflags & OX_LATE)
					uring__late_ended(l, op);
				/* poll(2)'s revents, as on epoll: the ring's
				 * poll always waits for POLLRDHUP too, and says
				 * it where nobody asked. Alone (a POLLOUT poll
				 * woken by the peer's shutdown) it stays, not a
				 * 0 that would read as no answer. */
				if (op->opcode == OP_POLL && res > 0 &&
				    (res & poll_asked(op)))
					res &= poll_asked(op);
				if (op->opcode == OP_CANCEL_FD) {
					/* The kernel's count plus the loop's own; the
					 * kernel's error (-EBADF after a close(2))
					 * only when the loop cancelled none, as on
					 * epoll: never the two summed. */
					int local = (int)(uint32_t)op->off;
					int polls = (int)(op->off >> 32);

					res = res >= 0 ? (res > polls ? res - polls : 0) + local :
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
		uring__refill(l);
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

	/* A refused submit (another thread: EINVAL, EBADF or EEXIST) is the caller's
	 * error, as on the plain path; only a full CQ waits (for the reap). */
	if (io_uring_sq_ready(&u->ring)) {
		int r = uring__ring_submit(l);

		if (r < 0 && r != -EAGAIN && r != -EBUSY)
			return r;
	}
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
		if ((r = uring__ring_enable(l)) < 0)
			return r;
		uring__refill(l);	/* what waited for room before the first run */
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
		uring__refill(l);
		if (io_uring_sq_ready(&u->ring))
			uring__ring_submit(l);
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
	       (l->pending_head && (u->kops + 2 <= u->cq_cap || uring__past_budget(l->pending_head)));
}

const struct uaio_backend uaio__uring_backend = {
	.name = "io_uring",
	.kind = UAIO_BACKEND_URING,
	.init = uring__init,
	.fini = uring__fini,
	.forsake = uring__forsake,
	.submit = uring__submit,
	.watch_arm = uring__watch_arm,
	.watch_stop = uring__watch_stop,
	.wait = uring_wait,
	.flush = uring__flush,
	.fd = uring_fd,
	.unannounced = uring_unannounced,
	.pin = uring__pin,
	.unpin = uring__unpin,
	.buf_update = uring__buf_update,
	.settle = uring_settle,
	.pool_next = uring__order_pool_next,
};
