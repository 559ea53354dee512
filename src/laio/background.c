/* SPDX-License-Identifier: MIT */
/* A call that would block continues on the loop: as an io_uring op, a
 * readiness poll and a retry, or on the helper pool; its completion goes
 * to the engine's queue. The read/write class gets here from its first
 * try (laio__rw_after_try), with what that try moved. */
#define _GNU_SOURCE
#include "laio/engine.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ----------------------------------------------------- background */

static void poll_cb(uaio_op *op, int res, void *data);
static void work_cb(uaio_op *op, int res, void *data);

static bool on_epoll(void)
{
	return uaio_loop_backend(laio__engine.loop) == UAIO_BACKEND_EPOLL;
}

/* The descriptor an op of the loop names: the call's duplicate, but on
 * epoll one that is no pin, whose registration its close would leave in
 * the set (keyed by file and number, the file open through the caller's
 * number): the caller's number there. */
static int op_fd(const struct laio_call *r)
{
	return on_epoll() && !r->hold_pin ? (int)r->a[0] : laio__call_fd(r);
}

static long work_fn(void *arg)
{
	struct laio_call *r = arg;
	const long *a = r->a;
	struct iovec iov1;
	const struct iovec *iov;
	int cnt;
	/* a[0] whole: for most calls here it is no descriptor */
	long fd = r->hold > 0 ? r->hold : a[0];

	if (!r->done)
		return uaio__sysret(syscall(r->nr, fd, a[1], a[2], a[3], a[4], a[5]));
	/* What is left of a call that moved a part before (work_cb adds
	 * that part): from where it stopped, never from the start. */
	switch (r->nr) {
	case SYS_recvfrom: case SYS_sendto:
		return uaio__sysret(syscall(r->nr, fd, a[1] + (long)r->done,
					    a[2] - (long)r->done, a[3], a[4], a[5]));
	case SYS_recvmsg: case SYS_sendmsg:
		return uaio__sysret(syscall(r->nr, fd, (long)laio__call_msg(r), a[2]));
	}
	iov = laio__call_iov(r, &iov1, &cnt);
	return uaio__sysret(syscall(laio__is_write_nr(r->nr) ? SYS_pwritev2 : SYS_preadv2,
				    fd, (long)iov, (long)cnt, (long)laio__call_off(r), 0L,
				    r->nr == SYS_preadv2 || r->nr == SYS_pwritev2 ? a[5] : 0L));
}

int laio__submit_work(struct laio_call *r)
{
	r->kind = K_WORK;
	return uaio_op_work(laio__engine.loop, &r->op, work_fn, r, work_cb, r);
}

static int submit_poll(struct laio_call *r)
{
	short ev = laio__is_write_nr(r->nr) ? POLLOUT : POLLIN;

	r->kind = K_POLL;
	return uaio_op_poll(laio__engine.loop, &r->op, op_fd(r), ev, poll_cb, r);
}

/* The read/write/socket-class call as one uaio op; -EOPNOTSUPP when the
 * core has no op for this form of it. */
static int submit_rw_op(struct laio_call *r)
{
	uaio_loop *l = laio__engine.loop;
	const long *a = r->a;
	int fd = op_fd(r);
	struct iovec iov1;
	const struct iovec *iov;
	int cnt;

	r->kind = K_OP;
	r->pos0 = -1;
	uaio_op_set_flags(&r->op, 0);
	switch (r->nr) {
	case SYS_read: case SYS_readv:
		if (!on_epoll() && laio__fd_isreg(r))
			r->pos0 = lseek(fd, 0, SEEK_CUR);
		break;
	case SYS_write: case SYS_writev:
		/* The plain call on a worker, in its turn: the kernel moves
		 * the position by a part too (see position_after_ring), and
		 * a later write in flight starts where this one ended. */
		if (!on_epoll() && laio__fd_isreg(r))
			uaio_op_set_flags(&r->op, UAIO_OPF_BLOCKING);
		break;
	case SYS_recvfrom: case SYS_sendto:
		if (!a[4])
			break;
		if (r->nr == SYS_recvfrom && !a[5])
			return -EOPNOTSUPP;	/* the kernel's EFAULT, after the data */
		if (!r->msg && !(r->msg = calloc(1, sizeof(*r->msg))))
			return -ENOMEM;
		/* With an address: the ring's recvmsg/sendmsg. */
		r->msg->iov1.iov_base = (char *)a[1] + r->done;
		r->msg->iov1.iov_len = (size_t)a[2] - r->done;
		r->msg->h.msg_iov = &r->msg->iov1;
		r->msg->h.msg_iovlen = 1;
		r->msg->h.msg_name = (void *)a[4];
		r->msg->h.msg_namelen = r->nr == SYS_sendto ? (socklen_t)a[5] :
					*(socklen_t *)a[5];
		if (r->nr == SYS_recvfrom)
			return uaio_op_recvmsg(l, &r->op, fd, &r->msg->h, (int)a[3],
					       laio__op_cb, r);
		return uaio_op_sendmsg(l, &r->op, fd, &r->msg->h, (int)a[3],
				       laio__op_cb, r);
	case SYS_recvmsg:
		return uaio_op_recvmsg(l, &r->op, fd, laio__call_msg(r),
				       (int)a[2], laio__op_cb, r);
	case SYS_sendmsg:
		return uaio_op_sendmsg(l, &r->op, fd, laio__call_msg(r),
				       (int)a[2], laio__op_cb, r);
	case SYS_preadv2: case SYS_pwritev2:
		if (a[5])
			return -EOPNOTSUPP;	/* flags the op cannot carry */
		break;
	}
	iov = laio__call_iov(r, &iov1, &cnt);
	switch (r->nr) {
	case SYS_recvfrom:
		return uaio_op_recv(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				    (int)a[3], laio__op_cb, r);
	case SYS_sendto:
		return uaio_op_send(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				    (int)a[3], laio__op_cb, r);
	case SYS_read:
		return uaio_op_read(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				    -1, laio__op_cb, r);
	case SYS_pread64:
		return uaio_op_read(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				    laio__call_off(r), laio__op_cb, r);
	case SYS_write:
		return uaio_op_write(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				     -1, laio__op_cb, r);
	case SYS_pwrite64:
		return uaio_op_write(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				     laio__call_off(r), laio__op_cb, r);
	case SYS_readv:
		return uaio_op_readv(l, &r->op, fd, iov, cnt, -1, laio__op_cb, r);
	case SYS_preadv: case SYS_preadv2:
		return uaio_op_readv(l, &r->op, fd, iov, cnt, laio__call_off(r),
				     laio__op_cb, r);
	case SYS_writev:
		return uaio_op_writev(l, &r->op, fd, iov, cnt, -1, laio__op_cb, r);
	case SYS_pwritev: case SYS_pwritev2:
		return uaio_op_writev(l, &r->op, fd, iov, cnt, laio__call_off(r),
				      laio__op_cb, r);
	}
	return -EOPNOTSUPP;
}

/* A plain write (not a send, whose MSG_NOSIGNAL says it) to a pipe or
 * socket: the kernel raises SIGPIPE at the thread that makes it when the
 * reader is gone. As an op it would be made by whichever thread runs the
 * loop (io_uring's retry, epoll's), with the signal free to kill the
 * process; so it waits for readiness and poll_cb() makes it. */
static bool raises_sigpipe(struct laio_call *r)
{
	switch (r->nr) {
	case SYS_write: case SYS_writev: case SYS_pwrite64: case SYS_pwritev:
	case SYS_pwritev2:
		return laio__fd_pipelike(r);
	}
	return false;
}

static bool is_read_nr(long nr)
{
	return nr == SYS_read || nr == SYS_readv || nr == SYS_preadv2;
}

/* A read of a file neither regular nor a pipe, FIFO or socket: whether
 * it is a timerfd, whose read may answer ECANCELED of its own, told by
 * its /proc/self/fd link once, when it first goes to the background
 * (own_ecanceled: not at the end, when the number may name another
 * file). */
static void note_own_cancel(struct laio_call *r)
{
	char path[40], link[32];
	ssize_t n;

	if (!is_read_nr(r->nr) || laio__fd_isreg(r) || (r->ftype & CF_PIPELIKE))
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", (int)r->a[0]);
	n = readlink(path, link, sizeof(link));
	if (n < 0 || (n == 20 && !memcmp(link, "anon_inode:[timerfd]", 20)))
		r->ftype |= CF_OWNCANCEL;
}

/* Next background step of a read/write-class call that would block. */
int laio__submit_rw_bg(struct laio_call *r)
{
	bool by_poll, sigpipe = raises_sigpipe(r);
	int ret, d;

	if (!r->timeo) {
		note_own_cancel(r);
		r->timeo = !laio__fd_isreg(r) &&
			   laio__sock_timeout((int)r->a[0], laio__is_write_nr(r->nr) ||
					      r->nr == SYS_sendto || r->nr == SYS_sendmsg) ? 2 : 1;
	}
	if (r->timeo == 2)
		return laio__submit_work(r);
	/* A pipe or socket on epoll waits for readiness and is tried again
	 * here, where the engine's duplicate below is used. After four
	 * refusals (and at once for a file without RWF_NOWAIT, a named FIFO
	 * or a tty) the call is the core's op, which a cancel still reaches;
	 * a plain write there raises SIGPIPE where the op is made (io_uring
	 * makes a FIFO's in its workers, which block signals; epoll in the
	 * thread running the loop: laio_syscall(3)). */
	by_poll = !laio__fd_isreg(r) && r->retries < 4 &&
		  (laio__engine.mech == LAIO_MECH_POLL || sigpipe ||
		   (on_epoll() && laio__fd_pipelike(r)));
	if (!by_poll) {
		ret = submit_rw_op(r);
		/* A form the core has no op for (a NULL buffer, preadv2's
		 * flags): a pipe or socket waits for readiness, where a
		 * cancel reaches it, not in a helper blocked in the call;
		 * also after refusals, as no op could take over. Not one
		 * whose tries are refused outright (EOPNOTSUPP: flags the
		 * file refuses, a FIFO's RWF_NOWAIT): no readiness helps. */
		if (ret >= 0 || !laio__fd_pipelike(r) || r->no_nowait)
			return ret < 0 ? laio__submit_work(r) : ret;
		by_poll = true;
	}
	/* A duplicate keeps a pipe or socket open, as a plain call blocked
	 * in it does, if the caller closes its descriptor meanwhile; the
	 * poll and the retries go on with it (and with the old file if the
	 * number is reused). Not other files: closing a duplicate drops the
	 * process's POSIX locks on its file. On epoll it is the loop's pin
	 * (a duplicate too), whose unpin drops its registration from the
	 * set before the close: the file stays open through the caller's
	 * number, and epoll would keep a closed number's entry. */
	if (by_poll && !r->hold && laio__fd_pipelike(r)) {
		d = on_epoll() ? uaio_file_pin(laio__engine.loop, (int)r->a[0]) : -1;
		r->hold_pin = d > 0;
		/* past the pin budget (a quarter of RLIMIT_NOFILE): a
		 * duplicate for the retries, the poll by number (op_fd) */
		if (d <= 0)
			d = uaio__fd_dup_own((int)r->a[0]);
		if (d > 0)
			r->hold = d;
	}
	if ((ret = submit_poll(r)) < 0)
		ret = laio__submit_work(r);
	return ret;
}

/* A plain send blocked on a socket whose peer closes with data unread
 * wakes to the error that close leaves (ECONNRESET on AF_UNIX) and takes
 * it; a retry after the close meets the peer's shutdown first (EPIPE) and
 * would leave the error pending. The call in the background is that
 * blocked one: it takes the error too. */
static long sock_error_first(const struct laio_call *r, long res)
{
	int e = 0, err = errno;
	socklen_t n = sizeof(e);

	if (res != -EPIPE || !(r->ftype & CF_PIPELIKE))
		return res;
	if (getsockopt(laio__call_fd(r), SOL_SOCKET, SO_ERROR, &e, &n) < 0 || !e)
		e = EPIPE;	/* a pipe, or no error pending */
	errno = err;
	return -e;
}

/* The result of a call that ended with res, after r->done bytes moved
 * by its earlier parts: those bytes, as a plain call interrupted after a
 * partial transfer returns them. */
static long with_done(const struct laio_call *r, long res)
{
	if (res >= 0)
		return res + (long)r->done;
	res = sock_error_first(r, res);
	return r->done ? (long)r->done : res;
}

/* Resubmits r from its own callback unless a cancel asked otherwise. */
static void resubmit(struct laio_call *r, int (*fn)(struct laio_call *))
{
	int ret;

	pthread_mutex_lock(&laio__engine.mu);
	r->submit = fn;
	r->gen = atomic_load(&laio__engine.driver_exits);
	ret = r->flags & CF_CANCEL_REQ ? -ECANCELED : fn(r);
	pthread_mutex_unlock(&laio__engine.mu);
	if (ret < 0)
		laio__call_finish(r, with_done(r, ret));
}

/* Whether -ECANCELED may be the call's own answer: a timerfd's read
 * whose clock was set (TFD_TIMER_CANCEL_ON_SET) says it once. Known when
 * the call went to the background (note_own_cancel), not looked up now:
 * the number may lead to another file since. */
static bool own_ecanceled(const struct laio_call *r)
{
	return is_read_nr(r->nr) && (!r->ftype || (r->ftype & CF_OWNCANCEL));
}

/* -ECANCELED that laio_cancel() did not ask for, before the op moved
 * any byte: the thread that issued it exited (io_uring cancels a task's
 * requests then); or io-wq could not start a worker for it (a signal was
 * pending at the issuing thread at each of its tries) and cancelled it
 * unstarted. The call goes on, a few times for the second, never for a
 * call whose own answer it may be; resubmit() ends it if a cancel has
 * been asked since. */
static bool orphaned(struct laio_call *r, int res)
{
	if (res != -ECANCELED || !r->submit)
		return false;
	if (r->gen == atomic_load(&laio__engine.driver_exits)) {
		if (r->unasked >= 8 || own_ecanceled(r))
			return false;
		r->unasked++;
	}
	resubmit(r, r->submit);
	return true;
}

/*
 * io_uring at the file position: a transfer that moved a part and then
 * met an error (EFAULT part-way; for a write ENOSPC too: the kernel's
 * retry of the rest fails) reports the part but leaves the position where
 * it was. A plain call moves the position by the part, so a read does
 * here; writes are plain calls on a worker (UAIO_OPF_BLOCKING), or a
 * write() after one would overwrite its part. A second read at the
 * position in flight on the file started from the unmoved position
 * already: not mended (it needs a bad buffer part-way).
 */
static void position_after_ring(struct laio_call *r, int res)
{
	int fd = (int)r->a[0];

	if ((r->nr != SYS_read && r->nr != SYS_readv) || r->pos0 < 0 || res <= 0 ||
	    laio__whole(r, res))
		return;
	if (lseek(fd, 0, SEEK_CUR) == r->pos0)
		lseek(fd, r->pos0 + res, SEEK_SET);
}

void laio__op_cb(uaio_op *op, int res, void *data)
{
	struct laio_call *r = data;

	if (orphaned(r, res))
		return;
	position_after_ring(r, res);
	if (laio__continue(r, res, false)) {
		resubmit(r, laio__submit_rw_bg);
		return;
	}
	if (res >= 0 && r->nr == SYS_recvfrom && r->msg)
		*(socklen_t *)r->a[5] = r->msg->h.msg_namelen;
	laio__call_finish(r, with_done(r, res));
}

/* The retry a readiness poll allows. A plain write's SIGPIPE, raised at
 * this thread, is taken back (laio_syscall(3): EPIPE alone), unless one
 * was pending here already. */
static long retry(struct laio_call *r)
{
	sigset_t pipe, old, pend;
	bool had = false;
	long v;

	if (!raises_sigpipe(r))
		return laio__try_nowait(r);
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, &old);
	if (sigismember(&old, SIGPIPE))
		had = sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE);
	v = laio__try_nowait(r);
	if (v == -EPIPE && !had)
		uaio__sig_take_back(SIGPIPE);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return v;
}

static void poll_cb(uaio_op *op, int res, void *data)
{
	struct laio_call *r = data;
	long v;

	if (orphaned(r, res))
		return;
	if (res < 0) {
		laio__call_finish(r, with_done(r, res));
		return;
	}
	v = retry(r);
	if (v == -EAGAIN || v == -EOPNOTSUPP || laio__continue(r, v, false)) {
		if (v == -EAGAIN || v == -EOPNOTSUPP)
			r->retries++;
		r->no_nowait |= v == -EOPNOTSUPP;
		resubmit(r, laio__submit_rw_bg);
		return;
	}
	laio__call_finish(r, with_done(r, v));
}

static void work_cb(uaio_op *op, int res, void *data)
{
	laio__call_finish(data, with_done(data, uaio_op_result_long(op)));
}

/* Starts r in the background (submit(r) queues its first op). */
long laio__go_background(struct laio_call *r, int (*submit)(struct laio_call *))
{
	struct laio_engine *e = &laio__engine;
	int ret;

	pthread_mutex_lock(&e->mu);
	r->phase = PH_BG;
	r->magic = LAIO_MAGIC;
	e->outstanding++;
	r->submit = submit;
	ret = submit(r);
	if (ret < 0 && submit != laio__submit_work) {
		r->submit = laio__submit_work;
		ret = laio__submit_work(r);
	}
	if (ret < 0) {
		/* what an earlier part moved is the call's result, as it
		 * would be had the rest failed in the background */
		long moved = (long)r->done;

		laio__outstanding_dec_locked();
		laio__call_release_locked(r);
		pthread_mutex_unlock(&e->mu);
		return laio__ret_inline(moved ? moved : ret);
	}
	/* The core issues to io_uring only from the thread that last ran
	 * the loop; if that is not us and nobody runs it now, take over
	 * rather than leave the op waiting for the next laio_poll(). */
	if (!e->driving && r->kind != K_WORK &&
	    e->driver != uaio__thread_token()) {
		laio__drive_locked(0);
		laio__efd_sync_locked();
	}
	pthread_mutex_unlock(&e->mu);
	return laio__ret_background(r);
}

/*
 * io_uring-class call: submit(r) queues the op; if the kernel completed it
 * during submission the loop has the result at once and the caller gets
 * it inline, otherwise the call stays in the background.
 */
long laio__try_ring(long nr, const long *a, int (*submit)(struct laio_call *))
{
	struct laio_engine *e = &laio__engine;
	struct laio_call *r;
	int ret;
	long res;

	if (laio__engine_get() < 0 || !(r = laio__call_new(nr, a)))
		return laio__ret_inline(-EAGAIN);
	r->phase = PH_TRY;
	r->kind = K_OP;
	r->submit = submit;
	ret = submit(r);
	/* A negative descriptor the op refuses is what the kernel answers
	 * at once too: inline, as syscall(2) gives it. Other refusals (a
	 * NULL argument, which the kernel may find wrong only after another
	 * error or a wait; a limit of the op's) go to the helper pool,
	 * which makes the call itself. */
	if (ret == -EBADF) {
		pthread_mutex_lock(&e->mu);
		laio__call_release_locked(r);
		pthread_mutex_unlock(&e->mu);
		return laio__ret_inline(ret);
	}
	if (ret < 0)
		return laio__go_background(r, laio__submit_work);
	pthread_mutex_lock(&e->mu);
	if (r->phase == PH_TRY && !e->driving)
		laio__drive_locked(0);
	if (r->phase == PH_INLINE) {
		res = r->ret;
		laio__call_release_locked(r);
		laio__efd_sync_locked();
		pthread_mutex_unlock(&e->mu);
		return laio__ret_inline(res);
	}
	r->phase = PH_BG;
	r->magic = LAIO_MAGIC;
	e->outstanding++;
	laio__efd_sync_locked();
	pthread_mutex_unlock(&e->mu);
	return laio__ret_background(r);
}

/* ------------------------------------------- read/write-class calls */

/* The top of user space the kernel's access_ok checks against (x86-64,
 * 4-level paging); elsewhere a count past it is cut like any other. */
#ifdef __x86_64__
#define USER_TOP ((1ul << 47) - 4096)
#else
#define USER_TOP (~0ul)
#endif

/* After the first try of a read/write-class call (res): inline when it
 * is done, else on to the background with what it has moved. */
long laio__rw_after_try(struct laio_call *tmp, long res)
{
	struct laio_call *r;
	long nr = tmp->nr;

	while (res > 0 && laio__continue(tmp, res, true)) {
		/* A file's read stopped at a page not cached, or at its end:
		 * a second try tells (0: the end). */
		if (laio__is_read_nr(nr)) {
			res = laio__try_nowait(tmp);
			continue;
		}
		/* A write to the caller's O_NONBLOCK pipe or socket ends here. */
		if (laio__is_write_nr(nr) && laio__nonblocking((int)tmp->a[0])) {
			res = 0;
			break;
		}
		goto background;
	}
	if (tmp->done) {
		if (res == -EAGAIN || res == -EOPNOTSUPP)
			goto background;
		laio__call_free_parts(tmp);
		return laio__ret_inline(res >= 0 ? res + (long)tmp->done : (long)tmp->done);
	}
	if (UAIO_LIKELY(res != -EAGAIN && res != -EOPNOTSUPP))
		return laio__ret_inline(res);
	/* A caller's O_NONBLOCK pipe or socket does not block. */
	if (res == -EAGAIN && laio__nonblocking((int)tmp->a[0]) && !laio__fd_isreg(tmp))
		return laio__ret_inline(-EAGAIN);
	/* Nor does one that has no RWF_NOWAIT (a tty, inotify): the plain
	 * call, here; the ring would wait for data the caller did not. Nor
	 * a directory's read, which the kernel refuses (EISDIR) only after
	 * RWF_NOWAIT. */
	if (res == -EOPNOTSUPP && ((laio__nonblocking((int)tmp->a[0]) && !laio__fd_isreg(tmp)) ||
				   laio__fd_isdir((int)tmp->a[0])))
		return laio__ret_inline(uaio__sysret(syscall(nr, tmp->a[0], tmp->a[1], tmp->a[2],
							   tmp->a[3], tmp->a[4], tmp->a[5])));
background:
	if (laio__engine_get() < 0 || !(r = laio__call_new(nr, tmp->a))) {
		laio__call_free_parts(tmp);
		return laio__ret_inline(tmp->done ? (long)tmp->done : -EAGAIN);
	}
	r->done = tmp->done;
	r->iov = tmp->iov;
	r->iovcnt = tmp->iovcnt;
	r->msg = tmp->msg;
	r->ftype = tmp->ftype;
	r->ctl_cap = tmp->ctl_cap;
	if (r->msg && r->iov)
		r->msg->h.msg_iov = r->iov;
	if (res == -EOPNOTSUPP) {
		r->retries = 4;	/* polling cannot tell: use the op */
		r->no_nowait = true;
	}
	return laio__go_background(r, laio__submit_rw_bg);
}

void laio__tmp_init(struct laio_call *tmp, long nr, const long *a)
{
	tmp->nr = nr;
	memcpy(tmp->a, a, sizeof(tmp->a));
	tmp->done = 0;
	tmp->iov = NULL;
	tmp->msg = NULL;
	tmp->ftype = 0;
	tmp->ctl_cap = 0;
	tmp->hold = 0;
	tmp->phase = PH_FREE;
}

/* The caller's msghdr as it is now, without faulting on a bad one (the
 * plain call answers EFAULT for it). */
static bool msghdr_peek(struct msghdr *m, const void *at)
{
	struct iovec l = { m, sizeof(*m) }, r = { (void *)at, sizeof(*m) };

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof(*m);
}

/* A receive from the error queue of a socket that has one (IPv4, IPv6,
 * packet, vsock, CAN, RDS, Bluetooth: sock_recv_errqueue's callers): the
 * kernel answers it at once. Others (Unix, netlink) ignore the flag, and
 * the receive waits for data as any other. */
static bool errqueue(int fd, long flags)
{
	int dom = 0;
	socklen_t len = sizeof(dom);

	if (!(flags & MSG_ERRQUEUE) || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) < 0)
		return false;
	switch (dom) {
	case AF_INET: case AF_INET6: case AF_PACKET: case AF_VSOCK:
	case AF_CAN: case AF_RDS: case AF_BLUETOOTH:
		return true;
	}
	return false;
}

long laio__rw_call(long nr, long *a)
{
	struct laio_call tmp;
	long res;

	/* The kernel would refuse these forms before blocking. */
	if ((nr == SYS_pread64 || nr == SYS_pwrite64 || nr == SYS_preadv ||
	     nr == SYS_pwritev) && a[3] < 0)
		return laio__ret_inline(-EINVAL);
	if ((nr == SYS_preadv2 || nr == SYS_pwritev2) && a[3] < -1)
		return laio__ret_inline(-EINVAL);
	if ((nr == SYS_preadv2 || nr == SYS_pwritev2) && (a[5] & RWF_NOWAIT))
		return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3],
						 a[4], a[5])));
	/* (nor does a receive from an error queue ever wait: EAGAIN when it
	 * is empty, which no readiness would end) */
	if ((nr == SYS_recvfrom || nr == SYS_sendto) &&
	    ((a[3] & MSG_DONTWAIT) || (nr == SYS_recvfrom && errqueue((int)a[0], a[3]))))
		return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3],
						 a[4], a[5])));
	if ((nr == SYS_recvmsg || nr == SYS_sendmsg) &&
	    ((a[2] & MSG_DONTWAIT) || (nr == SYS_recvmsg && errqueue((int)a[0], a[2]))))
		return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2])));
	switch (nr) {
	case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64:
		if ((unsigned long)a[2] <= LAIO_RW_MAX)
			break;
		/* The kernel checks the whole span (access_ok: below the
		 * top of user space, 4-level paging) before any wait, after
		 * the descriptor: the plain call answers, at once. */
		if ((unsigned long)a[2] > USER_TOP ||
		    (unsigned long)a[1] > USER_TOP - (unsigned long)a[2])
			return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3])));
		a[2] = LAIO_RW_MAX;
		break;
	case SYS_recvfrom: case SYS_sendto:
		if ((unsigned long)a[2] > INT_MAX)
			a[2] = INT_MAX;
		break;
	}
	laio__tmp_init(&tmp, nr, a);
	/* A MSG_WAITALL receive with room for ancillary data goes on past
	 * a part that brought none: the room is known before it is used */
	if (nr == SYS_recvmsg && (a[2] & (MSG_WAITALL | MSG_PEEK)) == MSG_WAITALL) {
		struct msghdr m;

		if (msghdr_peek(&m, (const void *)a[1]) && m.msg_control)
			tmp.ctl_cap = m.msg_controllen;
	}
	res = laio__try_nowait(&tmp);
	if (laio__peek_waitall(&tmp) && (res == -EAGAIN || (res > 0 && !laio__whole(&tmp, res)))) {
		struct laio_call *r;

		laio__call_free_parts(&tmp);
		if (laio__engine_get() < 0 || !(r = laio__call_new(nr, a)))
			return laio__ret_inline(-EAGAIN);
		return laio__go_background(r, laio__submit_work);
	}
	return laio__rw_after_try(&tmp, res);
}
