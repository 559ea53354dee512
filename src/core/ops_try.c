/* SPDX-License-Identifier: MIT */
/*
 * The epoll backend's column of the op table (ops.h): one non-blocking
 * try per op, answering its result or -EAGAIN to wait for readiness.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/epoll.h"

#define A(op)	((void *)(uintptr_t)(op)->addr)
#define A2(op)	((void *)(uintptr_t)(op)->addr2)

static short ready(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	return poll(&p, 1, 0) == 1 ? p.revents : 0;
}

/* A plain write to a file that refuses RWF_NOWAIT (a named FIFO, a tty),
 * ready for writing: readiness promises room for one atomic write (a
 * pipe's free page), not more, so it goes PIPE_BUF at a time while the
 * file stays ready; a write of more at once could block the loop (a FIFO
 * whose reader stopped). What moved before it stopped is the result. */
static long plain_write(int fd, const struct iovec *iov, int n, off_t off)
{
	long done = 0;
	int i = 0;
	size_t at = 0;

	while (i < n) {
		struct iovec cut[16];
		size_t left = PIPE_BUF;
		int k = 0;
		ssize_t r;

		for (int j = i; j < n && left && k < 16; j++) {
			size_t from = j == i ? at : 0, len = iov[j].iov_len - from;

			if (!len)
				continue;
			cut[k].iov_base = (char *)iov[j].iov_base + from;
			cut[k].iov_len = len < left ? len : left;
			left -= cut[k++].iov_len;
		}
		if (!k)
			break;
		if (done && !ready(fd, POLLOUT))
			break;
		r = pwritev2(fd, cut, k, off, 0);
		if (r < 0 && errno == ESPIPE && off != -1) {
			off = -1;	/* a stream ignores the offset, as under io_uring */
			continue;
		}
		if (r <= 0)
			return done ? done : r < 0 ? -errno : 0;
		done += r;
		for (size_t m = (size_t)r; m && i < n;) {	/* advance (i, at) */
			size_t rest = iov[i].iov_len - at;

			if (m < rest) {
				at += m;
				m = 0;
			} else {
				m -= rest;
				i++;
				at = 0;
			}
		}
		while (i < n && iov[i].iov_len == at) {
			i++;
			at = 0;
		}
	}
	return done;
}

/* A file or stream read or write without blocking: RWF_NOWAIT, or, on a
 * file that refuses it (OX_PLAIN), readiness first and then plain I/O. */
long uaio__try_rw(uaio_op *op)
{
	struct iovec one;
	const struct iovec *iov;
	int n;
	off_t off = (off_t)op->off;
	bool wr = uaio__opdef(op)->side == SIDE_W;
	bool plain = op->xflags & OX_PLAIN;

	/* Not ready: waits, but for a read of a FIFO the caller made
	 * non-blocking, whose own answer may be no wait (one that never had
	 * a writer: 0, as read(2) and io_uring give, where poll says nothing
	 * until a writer comes) */
	if (plain && !ready(op->fd, wr ? POLLOUT : POLLIN) &&
	    (wr || !(fcntl(op->fd, F_GETFL) & O_NONBLOCK) || !uaio__ep_is_fifo(op->fd)))
		return -EAGAIN;
	iov = uaio__rw_iovs(op, &one, &n);
	if (plain && wr)
		return plain_write(op->fd, iov, n, off);
	return uaio__rw_iov(op->fd, iov, n, off, plain ? 0 : RWF_NOWAIT, wr);
}

/* preadv2/pwritev2, or -errno. A file with no offset (a stream; a
 * procfs seq_file that seeks but has no pread/pwrite: ESPIPE) is read or
 * written at its position, as io_uring does. The workers' blocking calls
 * (ops.c) and the tries above share it. */
long uaio__rw_iov(int fd, const struct iovec *iov, int n, off_t off, int flags, bool wr)
{
	ssize_t r;

	for (;;) {
		if (n == 1 && !iov[0].iov_len && !flags)	/* preadv2 would not ask the file */
			r = off == -1 ? (wr ? write(fd, iov[0].iov_base, 0) : read(fd, iov[0].iov_base, 0)) :
			      (wr ? pwrite(fd, iov[0].iov_base, 0, off) : pread(fd, iov[0].iov_base, 0, off));
		else
			r = wr ? pwritev2(fd, iov, n, off, flags) : preadv2(fd, iov, n, off, flags);
		if (r < 0 && errno == ESPIPE && off != -1) {
			off = -1;
			continue;
		}
		return r < 0 ? -errno : r;
	}
}

/* MSG_WAITALL on a stream socket (SOCK_STREAM, SOCK_SEQPACKET, as
 * io_uring's io_net_retry): a part is kept in op->off (OX_PART) and the
 * op waits for the rest, as io_uring retries it itself; uaio__complete
 * answers the part at EOF, an error or a cancel, as io_uring does. With
 * MSG_DONTWAIT one try is the answer, and so for a recvmsg with room for
 * ancillary data (io_uring's min_ret is 0 then). */
static bool waitall(const uaio_op *op)
{
	return (op->rw_flags & (MSG_WAITALL | MSG_DONTWAIT)) == MSG_WAITALL;
}

static bool retries_part(int fd)
{
	int t = 0;
	socklen_t len = sizeof(t);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &t, &len) == 0 &&
	       (t == SOCK_STREAM || t == SOCK_SEQPACKET);
}

/* After one try that moved r (or -errno) of want - op->off bytes: the
 * answer, or -EAGAIN with the part kept. */
static long waitall_step(uaio_op *op, long r, uint64_t want)
{
	uint64_t done = op->off;

	if (r == -EAGAIN)
		return r;
	if (r <= 0)
		return done ? (long)done : r;
	done += (uint64_t)r;
	if (done < want && waitall(op) &&
	    ((op->xflags & OX_PART) || retries_part(op->fd))) {
		op->off = done;
		op->xflags |= OX_PART;
		return 0;
	}
	return (long)done;
}

static long try_sr(uaio_op *op, bool send_)
{
	int fl = (int)op->rw_flags | MSG_DONTWAIT | (send_ ? MSG_NOSIGNAL : 0);

	for (;;) {
		char *p = (char *)A(op) + op->off;
		size_t n = op->len - op->off;
		long r = uaio__sysret(send_ ? send(op->fd, p, n, fl) : recv(op->fd, p, n, fl));

		r = waitall_step(op, r, op->len);
		if (r != 0 || !(op->xflags & OX_PART) || op->off >= op->len)
			return r;
	}
}

long uaio__try_recv(uaio_op *op)
{
	return try_sr(op, false);
}

long uaio__try_send(uaio_op *op)
{
	return try_sr(op, true);
}

/* A msghdr's iovec less its first skip bytes, in iov[] (at most
 * UIO_MAXIOV, the kernel's own bound for msg_iovlen). */
static void msg_rest(const struct msghdr *m, struct msghdr *out, struct iovec *iov,
		     uint64_t skip)
{
	size_t k = 0;

	*out = *m;
	for (size_t i = 0; i < m->msg_iovlen && k < UIO_MAXIOV; i++) {
		struct iovec v = m->msg_iov[i];

		if (skip >= v.iov_len) {
			skip -= v.iov_len;
			continue;
		}
		iov[k].iov_base = (char *)v.iov_base + skip;
		iov[k++].iov_len = v.iov_len - skip;
		skip = 0;
	}
	out->msg_iov = iov;
	out->msg_iovlen = k;
	/* The control data went with the first part (and a receive's
	 * msg_controllen says what it used). A later part's: dropped, as
	 * a receive with no room for it, MSG_CTRUNC. */
	out->msg_control = NULL;
	out->msg_controllen = 0;
}

static long try_msg(uaio_op *op, bool send_)
{
	struct msghdr *m = A(op), rest;
	struct iovec iov[UIO_MAXIOV];
	int fl = (int)op->rw_flags | MSG_DONTWAIT | (send_ ? MSG_NOSIGNAL : 0);
	uint64_t want = 0;

	/* io_uring waits for all of a receive only without room for
	 * ancillary data (io_recvmsg's min_ret): with it, one try */
	if (!send_ && m->msg_controllen && !(op->xflags & OX_PART))
		return uaio__sysret(recvmsg(op->fd, m, fl));
	for (size_t i = 0; i < m->msg_iovlen; i++)
		want += m->msg_iov[i].iov_len;
	for (;;) {
		struct msghdr *use = m;
		int first = m->msg_flags;
		long r;

		if (op->xflags & OX_PART) {
			msg_rest(m, &rest, iov, op->off);
			use = &rest;
		}
		r = uaio__sysret(send_ ? sendmsg(op->fd, use, fl) : recvmsg(op->fd, use, fl));
		if (use == &rest && !send_ && r >= 0)
			m->msg_flags = first | rest.msg_flags;
		r = waitall_step(op, r, want);
		if (r != 0 || !(op->xflags & OX_PART) || op->off >= want)
			return r;
	}
}

long uaio__try_recvmsg(uaio_op *op)
{
	return try_msg(op, false);
}

long uaio__try_sendmsg(uaio_op *op)
{
	return try_msg(op, true);
}

/* What accept(2) answers a socket that is not listening (it would
 * never be readable for us): 0 when it listens. */
long uaio__accept_refused(int fd)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) < 0)
		return -errno;
	if (v)
		return 0;
	len = sizeof(v);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0)
		return -errno;
	return v == SOCK_STREAM || v == SOCK_SEQPACKET ? -EINVAL : -EOPNOTSUPP;
}

/* The listening socket may be a blocking one: accept once it is ready. */
long uaio__try_accept(uaio_op *op)
{
	short rv = ready(op->fd, POLLIN);
	long r;

	if (rv & POLLNVAL)
		return -EBADF;
	if (!rv)
		return (r = uaio__accept_refused(op->fd)) ? r : -EAGAIN;
	return uaio__sysret(accept4(op->fd, A(op), A2(op), (int)op->rw_flags));
}

/* A connect in progress, once writable: connect(2) again says how it
 * ended, and leaves the socket as io_uring's connect does (a later
 * connect gets EISCONN). */
long uaio__try_connect(uaio_op *op)
{
	if (!ready(op->fd, POLLOUT))
		return -EAGAIN;
	if (uaio__connect_nonblock(op) == 0 || errno == EISCONN)
		return 0;
	return errno == EALREADY || errno == EINPROGRESS ? -EAGAIN : -errno;
}

/* connect(2) as on a non-blocking socket: a blocking one (OX_BLOCKSOCK)
 * is made non-blocking for the call only, its flags put back at once. */
int uaio__connect_nonblock(uaio_op *op)
{
	int fl = 0, r, e;

	if ((op->xflags & OX_BLOCKSOCK) &&
	    ((fl = fcntl(op->fd, F_GETFL)) < 0 || fcntl(op->fd, F_SETFL, fl | O_NONBLOCK) < 0))
		return -1;
	r = connect(op->fd, A(op), op->len);
	e = errno;
	if (op->xflags & OX_BLOCKSOCK)
		(void)fcntl(op->fd, F_SETFL, fl);
	errno = e;
	return r;
}

long uaio__try_poll(uaio_op *op)
{
	short rv = ready(op->fd, (short)op->len);

	if (rv & POLLNVAL)
		return -EBADF;	/* as io_uring's poll of a closed descriptor */
	return rv ? rv : -EAGAIN;
}

