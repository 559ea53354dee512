/* SPDX-License-Identifier: MIT */
/*
 * Registered buffers (uaio_buf_register): memory the kernel maps once, so
 * that fixed reads and writes skip pinning its pages on every call. The
 * core numbers the slots for both backends; io_uring also registers each
 * slot with the ring, the fallback needs nothing more.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "core/internal.h"

UAIO_API int uaio_buf_register(uaio_loop *l, void *buf, size_t len)
{
	unsigned i;
	bool lk;
	int r = -ENOBUFS;

	if (!l || !buf || !len)
		return !l || !len ? -EINVAL : -EFAULT;
	if (len > (1u << 30))		/* io_uring's limit per buffer */
		return -EOVERFLOW;
	if (uaio__foreign(l))
		return -ECHILD;
	lk = uaio__lock(l);
	for (i = 0; i < UAIO_BUFS_MAX; i++) {
		if (i >= l->nbufs &&
		    UAIO_GROW(l->bufs, l->nbufs, (size_t)i + 1) < 0) {
			r = -ENOMEM;
			break;
		}
		if (l->bufs[i].iov_base)
			continue;
		l->bufs[i] = (struct iovec){ buf, len };
		r = l->be->buf_update ? l->be->buf_update(l, i, &l->bufs[i]) : 0;
		if (r < 0)
			l->bufs[i] = (struct iovec){ 0 };
		else
			r = (int)i;
		break;
	}
	uaio__unlock(l, lk);
	return r;
}

UAIO_API int uaio_buf_unregister(uaio_loop *l, int buf_index)
{
	bool lk;
	int r = 0;

	if (!l)
		return -EINVAL;
	if (uaio__foreign(l))
		return -ECHILD;
	lk = uaio__lock(l);
	if (buf_index < 0 || (unsigned)buf_index >= l->nbufs ||
	    !l->bufs[buf_index].iov_base)
		r = -ENOENT;
	else if (l->be->buf_update)
		r = l->be->buf_update(l, (unsigned)buf_index, NULL);
	if (!r)
		l->bufs[buf_index] = (struct iovec){ 0 };
	uaio__unlock(l, lk);
	return r;
}

bool uaio__buf_covers(uaio_loop *l, int buf_index, const void *p, size_t len)
{
	const char *b;
	bool lk = uaio__lock(l), ok = false;

	if (buf_index >= 0 && (unsigned)buf_index < l->nbufs &&
	    (b = l->bufs[buf_index].iov_base))
		ok = (const char *)p >= b &&
		     (const char *)p + len <= b + l->bufs[buf_index].iov_len;
	uaio__unlock(l, lk);
	return ok;
}

void uaio__bufs_free(uaio_loop *l)
{
	free(l->bufs);
	l->bufs = NULL;
	l->nbufs = 0;
}
