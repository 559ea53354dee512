/* SPDX-License-Identifier: MIT */
/* Trying a call in the caller without blocking, and continuing a
 * blocking write to a pipe or socket from where it stopped. */
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

/* The current iov of a read/write-class call (single buffers as iov1). */
const struct iovec *laio__call_iov(struct laio_call *r, struct iovec *iov1,
				    int *cnt)
{
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
	int fd = (int)a[0];

	switch (r->nr) {
	case SYS_recvfrom:
		return uaio__sysret(recvfrom(fd, (void *)a[1], (size_t)a[2],
				       (int)a[3] | MSG_DONTWAIT,
				       (struct sockaddr *)a[4], (socklen_t *)a[5]));
	case SYS_sendto:
		return uaio__sysret(sendto(fd, (char *)a[1] + r->done,
				     (size_t)a[2] - r->done,
				     (int)a[3] | MSG_DONTWAIT,
				     (const struct sockaddr *)a[4], (socklen_t)a[5]));
	case SYS_recvmsg:
		return uaio__sysret(recvmsg(fd, (struct msghdr *)a[1],
				      (int)a[2] | MSG_DONTWAIT));
	case SYS_sendmsg:
		return uaio__sysret(sendmsg(fd, (const struct msghdr *)a[1],
				      (int)a[2] | MSG_DONTWAIT));
	}
	iov = laio__call_iov(r, &iov1, &cnt);
	switch (r->nr) {
	case SYS_read: case SYS_readv:
		return uaio__rw(fd, false, iov, cnt, -1, RWF_NOWAIT);
	case SYS_pread64: case SYS_preadv:
		return uaio__rw(fd, false, iov, cnt, a[3], RWF_NOWAIT);
	case SYS_preadv2:
		return uaio__rw(fd, false, iov, cnt, a[3], (int)a[5] | RWF_NOWAIT);
	case SYS_write: case SYS_writev:
		return uaio__rw(fd, true, iov, cnt, -1, RWF_NOWAIT);
	case SYS_pwrite64: case SYS_pwritev:
		return uaio__rw(fd, true, iov, cnt, a[3] + (long)r->done, RWF_NOWAIT);
	case SYS_pwritev2:
		return uaio__rw(fd, true, iov, cnt, a[3], (int)a[5] | RWF_NOWAIT);
	}
	return -ENOSYS;
}

bool laio__fd_isreg(struct laio_call *r)
{
	struct stat st;

	if (!r->ftype)
		r->ftype = fstat((int)r->a[0], &st) == 0 && S_ISREG(st.st_mode) ?
			   CF_ISREG : CF_NOTREG;
	return r->ftype == CF_ISREG;
}

/* Drops the first n bytes of the remaining writev iovs (continuation). */
int laio__iov_advance(struct laio_call *r, size_t n)
{
	struct iovec iov1;
	const struct iovec *iov;
	int cnt, i;
	struct iovec *copy;

	iov = laio__call_iov(r, &iov1, &cnt);
	if (iov == &iov1)
		return 0;	/* single buffer: r->done is enough */
	/* The caller's iovecs are theirs: skip in a copy. */
	copy = malloc(sizeof(*copy) * (size_t)(cnt ? cnt : 1));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, iov, sizeof(*copy) * (size_t)cnt);
	i = uaio__iov_skip(copy, cnt, n);
	memmove(copy, copy + i, sizeof(*copy) * (size_t)(cnt - i));
	free(r->iov);
	r->iov = copy;
	r->iovcnt = cnt - i;
	return 0;
}

/* A write to a pipe or socket that blocks writes everything: continue. */
bool laio__continue_write(struct laio_call *r, long res)
{
	struct iovec iov1;
	int cnt;

	if (res <= 0 || !laio__is_write_nr(r->nr) || r->nr == SYS_sendmsg ||
	    laio__fd_isreg(r))
		return false;
	laio__call_iov(r, &iov1, &cnt);
	{
		size_t left = 0;
		const struct iovec *iov = laio__call_iov(r, &iov1, &cnt);

		for (int i = 0; i < cnt; i++)
			left += iov[i].iov_len;
		if ((size_t)res >= left)
			return false;
	}
	if (laio__iov_advance(r, (size_t)res) < 0)
		return false;
	r->done += (size_t)res;
	return true;
}

