/* SPDX-License-Identifier: MIT */
/*
 * The inline try: one non-blocking read or write on the caller's thread
 * (RWF_NOWAIT, or a plain page-cache write the kernel would refuse to
 * try), a stream's with the signals glibc's helpers never let through
 * held back, and whether its result is the request's (submit.c, queue.c).
 */
#define _GNU_SOURCE
#include "aio/engine.h"

#include <sys/socket.h>

/* One non-blocking try of the rest of cb's transfer at off. */
long aio__attempt(int fd, int kind, struct aiocb *cb, int64_t off, int rwf)
{
	uint64_t done = priv(cb)->done;
	struct iovec iov = { (char *)cb->aio_buf + done, cb_len(cb) - done };
	bool wr = kind != K_READ;

	return uaio__rw(fd, wr, &iov, 1, wr && off >= 0 ? off + (int64_t)done : off, rwf);
}

/*
 * A stream request made on the caller's thread must not raise SIGPIPE or
 * job control's SIGTTIN / SIGTTOU there: glibc reads and writes from a
 * helper thread that blocks every signal, so a program never sees one.
 * A socket is asked not to (MSG_NOSIGNAL); elsewhere the signals are
 * blocked around the call (the kernel then lets a background write to
 * the terminal through, and fails a read with EIO) and the SIGPIPE it
 * raised, if any, taken back.
 */
long aio__attempt_stream(int fd, int kind, struct aiocb *cb, int64_t off, int rwf,
			   const struct aio_serial *s)
{
	sigset_t pipe_set, old, pend;
	bool pending;
	long res;

	if (s->tty && kind == K_READ && aio__tty_background(fd))
		return -EIO;
	if (kind != K_WRITE && !s->tty)
		return aio__attempt(fd, kind, cb, off, rwf);
	if (s->sock) {
		uint64_t done = priv(cb)->done;

		res = send(fd, (const char *)cb->aio_buf + done, cb_len(cb) - done,
			   MSG_NOSIGNAL | (rwf & RWF_NOWAIT ? MSG_DONTWAIT : 0));
		return res < 0 ? -errno : res;
	}
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigaddset(&pipe_set, SIGTTIN);
	sigaddset(&pipe_set, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	pending = sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE);
	res = aio__attempt(fd, kind, cb, off, rwf);
	if (res == -EPIPE && !pending)
		sigtimedwait(&pipe_set, NULL, &(struct timespec){ 0, 0 });
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return res;
}

/*
 * A queued stream request starts: glibc's helper would read or write the
 * descriptor number now, and on one made non-blocking meanwhile its call
 * ends at once (EAGAIN, or what it could move). 1 with *res when that is
 * the request's end; 0 when it is to be issued as usual.
 */
int aio__serial_nonblock_try(struct aio_req *r, const struct aio_serial *s, long *res)
{
	int fd = s->fd, fl = fcntl(fd, F_GETFL);
	long n;

	if (s->sigfd && r->kind == K_READ)	/* a worker's, as it starts */
		return 0;
	if (s->tty && r->kind == K_READ && aio__tty_background(fd)) {
		*res = -EIO;	/* see attempt_stream */
		return 1;
	}
	/* a VMIN 0, VTIME 0 terminal's read: the plain call never waits */
	bool now = (r->flags & RF_TTY_TIME) && !r->tmo_us;

	if (fl < 0 || (!(fl & O_NONBLOCK) && !now) || r->kind > K_WRITE)
		return 0;
	n = aio__attempt_stream(fd, r->kind, req_cb(r), -1, RWF_NOWAIT, s);
	if (n == -EOPNOTSUPP)
		n = aio__attempt_stream(fd, r->kind, req_cb(r), -1, 0, s);
	*res = n + (n >= 0 ? (long)priv(req_cb(r))->done : 0);
	return 1;
}

/*
 * Whether a write the kernel will not take without blocking (ext4 and
 * others refuse RWF_NOWAIT for buffered writes) may still be made here
 * as a plain page-cache copy: small, whole pages (no page has to be read
 * first), and no O_SYNC / O_DSYNC (which would wait for the disk). This
 * is what a file system with non-blocking buffered writes (XFS, btrfs)
 * does under RWF_NOWAIT; it costs one syscall, where handing it to the
 * kernel's workers costs a thread hop each way (docs/design.md).
 */
bool aio__page_write_ok(const struct aiocb *cb, int kind, int fl)
{
	return kind == K_WRITE && !(fl & (O_SYNC | O_DSYNC)) &&
	       cb->aio_offset >= 0 && !(cb->aio_offset % 4096) &&
	       !(cb->aio_nbytes % 4096);
}

/* Whether an attempt's result is the request's result (else: background,
 * after recording a partial write in done). */
bool aio__attempt_final(struct aiocb *cb, int kind, long res, bool stream,
			  bool nonblock)
{
	if (res == -EAGAIN || res == -EOPNOTSUPP)
		return stream && nonblock && res == -EAGAIN;
	if (res < 0)
		return true;
	if (kind == K_READ)	/* short from the cache may be EOF or not */
		return stream || res == 0 || (size_t)res == cb_len(cb);
	if ((size_t)res == cb_len(cb) - priv(cb)->done || nonblock)
		return true;
	priv(cb)->done += (uint64_t)res;
	return false;
}
