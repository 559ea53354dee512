/* SPDX-License-Identifier: MIT */
/*
 * The io_uring backend's registered resources: file slots behind
 * uaio_file_pin() and buffer slots behind uaio_buf_register(). Both tables
 * are registered sparse on first use and updated a slot at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/uio.h>

#include "core/uring.h"

static int files_setup(struct uring_state *u)
{
	struct rlimit rl;
	unsigned n = 65536;
	int r;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < n)
		n = (unsigned)rl.rlim_cur;
	u->slot_free = malloc(n * sizeof(*u->slot_free));
	if (!u->slot_free)
		return -ENOMEM;
	r = io_uring_register_files_sparse(&u->ring, n);
	if (r < 0) {
		free(u->slot_free);
		u->slot_free = NULL;
		return r;
	}
	for (unsigned i = 0; i < n; i++)
		u->slot_free[i] = (int)(n - 1 - i);
	u->nslots = u->nfree = n;
	return 0;
}

int uring__pin(uaio_loop *l, int fd)
{
	struct uring_state *u = U(l);
	int slot, r;

	if (!u->nslots && !u->files_err && (r = files_setup(u)) < 0)
		u->files_err = r;
	if (u->files_err)
		return u->files_err;
	if (!u->nfree)
		return -ENFILE;
	slot = u->slot_free[--u->nfree];
	r = io_uring_register_files_update(&u->ring, (unsigned)slot, &fd, 1);
	if (r < 0) {
		u->slot_free[u->nfree++] = slot;
		return r;
	}
	return slot | UAIO_FD_FIXED;
}

void uring__unpin(uaio_loop *l, int pinned)
{
	struct uring_state *u = U(l);
	int slot = pinned & ~UAIO_FD_FIXED, none = -1;

	if (!(pinned & UAIO_FD_FIXED) || (unsigned)slot >= u->nslots)
		return;
	/* Drop the reference now: a pipe end kept open here would hide EOF
	 * from its reader. */
	io_uring_register_files_update(&u->ring, (unsigned)slot, &none, 1);
	u->slot_free[u->nfree++] = slot;
}

/* iov NULL empties the slot; the kernel drops its page references once
 * no request in flight uses the buffer. */
int uring__buf_update(uaio_loop *l, unsigned idx, const struct iovec *iov)
{
	struct uring_state *u = U(l);
	struct iovec none = { 0 };
	int r;

	if (!u->bufs_ready) {
		if (!iov)
			return 0;
		if ((r = io_uring_register_buffers_sparse(&u->ring, UAIO_BUFS_MAX)) < 0)
			return r;
		u->bufs_ready = true;
	}
	r = io_uring_register_buffers_update_tag(&u->ring, idx, iov ? iov : &none,
						 NULL, 1);
	return r < 0 ? r : 0;
}
