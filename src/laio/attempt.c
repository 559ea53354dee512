/* SPDX-License-Identifier: MIT */
/* Trying a call in the caller without blocking, and going on from where
 * a call stopped as the plain call would. */
#define _GNU_SOURCE
#include "laio/engine.h"

/* ------------------------------------------------------- attempts */

/* Returns to the caller the way syscall(2) does. */
long laio__ret_inline(long res)
{
	laio__last = NULL;
	if (res < 0 && res > -4096) {
		errno = (int)-res;
		return -1;
	}
	return res;
}

long laio__ret_background(struct laio_call *r)
{
	laio__last = r;
	errno = EINPROGRESS;
	return -1;
}

bool laio__is_write_nr(long nr)
{
	switch (nr) {
	case SYS_write: case SYS_writev: case SYS_pwrite64: case SYS_pwritev:
	case SYS_pwritev2: case SYS_sendto: case SYS_sendmsg:
		return true;
	}
	return false;
}

bool laio__is_read_nr(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_readv: case SYS_pread64: case SYS_preadv:
	case SYS_preadv2:
		return true;
	}
	return false;
}

/* The offset of a positioned call's next byte (-1: the file position). */
int64_t laio__call_off(const struct laio_call *r)
{
	switch (r->nr) {
	case SYS_pread64: case SYS_pwrite64: case SYS_preadv: case SYS_pwritev:
	case SYS_preadv2: case SYS_pwritev2:
		return r->a[3] < 0 ? -1 : r->a[3] + (int64_t)r->done;
	}
	return -1;
}

/* The msghdr a sendmsg/recvmsg goes on with: the caller's, or ours once
 * part of it has moved. */
struct msghdr *laio__call_msg(struct laio_call *r)
{
	return r->msg ? &r->msg->h : (struct msghdr *)r->a[1];
}

/* The current iov of a read/write-class call (single buffers as iov1). */
const struct iovec *laio__call_iov(struct laio_call *r, struct iovec *iov1,
				    int *cnt)
{
	const struct msghdr *m;

	if (r->iov) {
		*cnt = r->iovcnt;
		return r->iov;
	}
	switch (r->nr) {
	case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64:
	case SYS_recvfrom: case SYS_sendto:
		iov1->iov_base = (char *)r->a[1] + r->done;
		iov1->iov_len = (size_t)r->a[2] - r->done;
		*cnt = 1;
		return iov1;
	case SYS_recvmsg: case SYS_sendmsg:
		m = laio__call_msg(r);
		*cnt = (int)m->msg_iovlen;
		return m->msg_iov;
	}
	*cnt = (int)r->a[2];
	return (const struct iovec *)r->a[1];
}

/*
 * One non-blocking attempt of a read/write/socket-class call; returns its
 * result or -errno (-EAGAIN: would block, -EOPNOTSUPP: cannot tell).
 */
long laio__try_nowait(struct laio_call *r)
{
	const long *a = r->a;
	struct iovec iov1;
	const struct iovec *iov;
	int cnt;
	int fd = laio__call_fd(r);
	/* In the background a send raises no SIGPIPE (laio_syscall(3)). */
	int quiet = r->phase == PH_BG ? MSG_NOSIGNAL : 0;

	switch (r->nr) {
	case SYS_recvfrom:
		return uaio__sysret(recvfrom(fd, (char *)a[1] + r->done,
				       (size_t)a[2] - r->done, (int)a[3] | MSG_DONTWAIT,
				       (struct sockaddr *)a[4], (socklen_t *)a[5]));
	case SYS_sendto:
		return uaio__sysret(sendto(fd, (char *)a[1] + r->done,
				     (size_t)a[2] - r->done,
				     (int)a[3] | MSG_DONTWAIT | quiet,
				     (const struct sockaddr *)a[4], (socklen_t)a[5]));
	case SYS_recvmsg:
		return uaio__sysret(recvmsg(fd, laio__call_msg(r),
				      (int)a[2] | MSG_DONTWAIT));
	case SYS_sendmsg:
		return uaio__sysret(sendmsg(fd, laio__call_msg(r),
				      (int)a[2] | MSG_DONTWAIT | quiet));
	}
	iov = laio__call_iov(r, &iov1, &cnt);
	switch (r->nr) {
	case SYS_read: case SYS_readv:
		return uaio__rw(fd, false, iov, cnt, -1, RWF_NOWAIT);
	case SYS_pread64: case SYS_preadv:
		return uaio__rw(fd, false, iov, cnt, laio__call_off(r), RWF_NOWAIT);
	case SYS_preadv2:
		return uaio__rw(fd, false, iov, cnt, laio__call_off(r), (int)a[5] | RWF_NOWAIT);
	case SYS_write: case SYS_writev:
		return uaio__rw(fd, true, iov, cnt, -1, RWF_NOWAIT);
	case SYS_pwrite64: case SYS_pwritev:
		return uaio__rw(fd, true, iov, cnt, laio__call_off(r), RWF_NOWAIT);
	case SYS_pwritev2:
		return uaio__rw(fd, true, iov, cnt, laio__call_off(r), (int)a[5] | RWF_NOWAIT);
	}
	return -ENOSYS;
}

bool laio__fd_isreg(struct laio_call *r)
{
	struct stat st;

	if (!r->ftype)
		r->ftype = fstat((int)r->a[0], &st) < 0 ? CF_NOTREG :
			   S_ISREG(st.st_mode) ? CF_ISREG :
			   S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ?
			   CF_NOTREG | CF_PIPELIKE : CF_NOTREG;
	return r->ftype == CF_ISREG;
}

bool laio__fd_pipelike(struct laio_call *r)
{
	return !laio__fd_isreg(r) && (r->ftype & CF_PIPELIKE);
}

/* A socket with a timeout for this direction (SO_RCVTIMEO, SO_SNDTIMEO):
 * the plain call gives up after it (EAGAIN, or its part), the ring would
 * wait for ever, so such a call goes to the helper pool, which makes the
 * plain call. Not a socket: none. */
bool laio__sock_timeout(int fd, bool write)
{
	struct timeval tv = { 0 };
	socklen_t len = sizeof(tv);

	return getsockopt(fd, SOL_SOCKET, write ? SO_SNDTIMEO : SO_RCVTIMEO, &tv, &len) == 0 &&
	       (tv.tv_sec || tv.tv_usec);
}

/* Drops the first n bytes of the remaining iovs (continuation). A
 * sendmsg or recvmsg goes on with a msghdr of ours: what the first part
 * carried besides data (ancillary data; the peer's address, received) is
 * not sent or received again. */
int laio__iov_advance(struct laio_call *r, size_t n)
{
	struct iovec iov1;
	const struct iovec *iov;
	int cnt, i;
	struct iovec *copy;
	bool msg = r->nr == SYS_sendmsg || r->nr == SYS_recvmsg;

	iov = laio__call_iov(r, &iov1, &cnt);
	if (iov == &iov1)
		return 0;	/* single buffer: r->done is enough */
	if (msg && !r->msg) {
		if (!(r->msg = malloc(sizeof(*r->msg))))
			return -ENOMEM;
		r->msg->h = *(const struct msghdr *)r->a[1];
		/* room for ancillary data the rest may bring (goes_on) */
		r->msg->h.msg_controllen = r->nr == SYS_recvmsg ? r->ctl_cap : 0;
		if (!r->msg->h.msg_controllen)
			r->msg->h.msg_control = NULL;
		if (r->nr == SYS_recvmsg) {
			r->msg->h.msg_name = NULL;
			r->msg->h.msg_namelen = 0;
		}
	}
	/* each part has the whole room (the last wrote what it used) */
	if (r->nr == SYS_recvmsg && r->msg && r->ctl_cap) {
		r->msg->h.msg_control = ((const struct msghdr *)r->a[1])->msg_control;
		r->msg->h.msg_controllen = r->ctl_cap;
	}
	/* The caller's iovecs are theirs: skip in a copy. */
	copy = malloc(sizeof(*copy) * (size_t)(cnt ? cnt : 1));
	if (!copy) {
		if (msg && !r->iov) {	/* made just now */
			free(r->msg);
			r->msg = NULL;
		}
		return -ENOMEM;
	}
	memcpy(copy, iov, sizeof(*copy) * (size_t)cnt);
	i = uaio__iov_skip(copy, cnt, n);
	memmove(copy, copy + i, sizeof(*copy) * (size_t)(cnt - i));
	free(r->iov);
	r->iov = copy;
	r->iovcnt = cnt - i;
	if (msg) {
		r->msg->h.msg_iov = copy;
		r->msg->h.msg_iovlen = (size_t)(cnt - i);
	}
	return 0;
}

/* The caller made fd non-blocking (unknown: no). */
bool laio__nonblocking(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl >= 0 && (fl & O_NONBLOCK);
}

bool laio__fd_isdir(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
}

static int recv_flags(const struct laio_call *r)
{
	return (int)(r->nr == SYS_recvfrom ? r->a[3] : r->a[2]);
}

static bool stream_socket(int fd)
{
	int type;
	socklen_t len = sizeof(type);

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	       type == SOCK_STREAM;
}

/* After moving part of its count, does the call go on for the rest, as
 * the plain call would? A blocking write to a pipe or socket writes it
 * all. A read of a regular file is short only at its end, so one that
 * stopped short goes on, and the next read says 0 at the end: a first
 * try that stopped at a page not in the cache, and on the epoll backend
 * any part (its read tries without blocking first); io_uring's reads of
 * files are whole already. A blocking stream socket's MSG_WAITALL receive
 * waits for all of it; not a MSG_PEEK one, whose rest is not after its
 * part (laio__peek_waitall). */
static bool goes_on(struct laio_call *r, bool first_try)
{
	if (laio__is_write_nr(r->nr))
		return !laio__fd_isreg(r);
	if (laio__is_read_nr(r->nr))	/* (not one opened as a stream: trace_pipe) */
		return laio__fd_isreg(r) &&
		       (first_try || uaio_loop_backend(laio__engine.loop) != UAIO_BACKEND_URING) &&
		       (lseek((int)r->a[0], 0, SEEK_CUR) >= 0 || errno != ESPIPE);
	/* recvmsg with room for ancillary data stops at some, as the
	 * kernel stops at passed descriptors: its part is the result. A
	 * part that brought none goes on, with the room the call had. */
	if (r->nr == SYS_recvmsg && ((const struct msghdr *)r->a[1])->msg_control) {
		const struct msghdr *m = laio__call_msg(r);

		if (!r->ctl_cap || m->msg_controllen || (m->msg_flags & MSG_CTRUNC))
			return false;
	}
	if (r->nr == SYS_recvfrom || r->nr == SYS_recvmsg)
		return (recv_flags(r) & (MSG_WAITALL | MSG_PEEK)) == MSG_WAITALL &&
		       stream_socket((int)r->a[0]) && !laio__nonblocking((int)r->a[0]);
	return false;
}

/* recv(MSG_PEEK | MSG_WAITALL) on a blocking stream socket: it waits
 * until the whole count can be peeked, from the start of the queue each
 * time, so a part is no start to go on from (and the ring's MSG_WAITALL,
 * which goes on from its part, would peek the same bytes twice). */
bool laio__peek_waitall(const struct laio_call *r)
{
	return (r->nr == SYS_recvfrom || r->nr == SYS_recvmsg) &&
	       (recv_flags(r) & (MSG_WAITALL | MSG_PEEK)) == (MSG_WAITALL | MSG_PEEK) &&
	       stream_socket((int)r->a[0]) && !laio__nonblocking((int)r->a[0]);
}

/* Whether res bytes are the whole of what the call asked for. */
bool laio__whole(struct laio_call *r, long res)
{
	struct iovec iov1;
	const struct iovec *iov;
	size_t left = 0;
	int cnt;

	iov = laio__call_iov(r, &iov1, &cnt);
	for (int i = 0; i < cnt; i++)
		left += iov[i].iov_len;
	return (size_t)res >= left;
}

/* The call moved res bytes: true when it goes on for the rest (r->done
 * and the iovs advanced past them). */
bool laio__continue(struct laio_call *r, long res, bool first_try)
{
	if (res <= 0 || !(laio__is_write_nr(r->nr) || laio__is_read_nr(r->nr) ||
			  r->nr == SYS_recvfrom || r->nr == SYS_recvmsg))
		return false;
	/* A later part's ancillary data and flags are the call's, in the
	 * caller's msghdr (the first part wrote them there itself). */
	if (r->nr == SYS_recvmsg && r->msg && r->ctl_cap) {
		struct msghdr *u = (struct msghdr *)r->a[1];

		u->msg_controllen = r->msg->h.msg_controllen;
		u->msg_flags = r->msg->h.msg_flags;
	}
	if (laio__whole(r, res) || !goes_on(r, first_try))
		return false;
	if (laio__iov_advance(r, (size_t)res) < 0)
		return false;
	r->done += (size_t)res;
	return true;
}
