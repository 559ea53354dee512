/* SPDX-License-Identifier: MIT */
/*
 * uaio_file_pin: pinned handles with reference counts; the backend makes
 * and drops the handle itself (a registered-file slot, a duplicate fd).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* A handle's references: slot number, or duplicate descriptor. */
static unsigned *pin_refs(uaio_loop *l, int handle, bool grow)
{
	unsigned idx = (unsigned)handle & ~(unsigned)UAIO_FD_FIXED;

	if (idx >= l->npinrefs &&
	    (!grow || UAIO_GROW(l->pinrefs, l->npinrefs, (size_t)idx + 1) < 0))
		return NULL;
	return &l->pinrefs[idx];
}

/* Slot handles carry UAIO_FD_FIXED; duplicates (the fallback's, and
 * io_uring's where slots free files late) are descriptors of ours, known
 * by their reference count. */
static bool is_handle(uaio_loop *l, int fd)
{
	unsigned *refs = pin_refs(l, fd, false);

	return refs && *refs && ((fd & UAIO_FD_FIXED) != 0) == !l->pins_dup;
}

UAIO_API int uaio_file_pin(uaio_loop *l, int fd)
{
	unsigned *refs;
	bool lk;
	int r;

	if (!l)
		return -EINVAL;
	if (fd < 0)
		return -EBADF;
	if (uaio__foreign(l))
		return -ECHILD;
	lk = uaio__lock(l);
	if (is_handle(l, fd)) {
		(*pin_refs(l, fd, false))++;
		r = fd;
	} else if (fd >= UAIO_FD_FIXED) {
		r = -EBADF;
	} else if ((r = l->be->pin(l, fd)) >= 0) {
		if ((refs = pin_refs(l, r, true)))
			*refs = 1;
		else {
			l->be->unpin(l, r);
			r = -ENOMEM;
		}
	}
	uaio__unlock(l, lk);
	return r;
}

UAIO_API void uaio_file_unpin(uaio_loop *l, int pinned)
{
	bool lk;

	if (!l || pinned < 0 || uaio__foreign(l))
		return;
	lk = uaio__lock(l);
	if (is_handle(l, pinned) && --*pin_refs(l, pinned, false) == 0)
		l->be->unpin(l, pinned);
	uaio__unlock(l, lk);
}
