/* SPDX-License-Identifier: MIT */
/*
 * The io_uring backend's registered resources: file slots behind
 * uaio_file_pin() and buffer slots behind uaio_buf_register(). Both tables
 * are registered sparse on first use and updated a slot at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/uring.h"
#include "util/plumb.h"

/*
 * Whether the kernel keeps a file up to a second after its slot is
 * emptied (before 6.4 the put went to a delayed work, HZ later): a pipe's
 * write end, registered in slot 0 and closed here, its slot emptied; its
 * reader sees the hang-up at once only where the file goes at once. A
 * pipe end kept past close() hides EOF from its reader (a socket's, the
 * peer's FIN; a lock stays held), so there pins are duplicates instead.
 * UAIO_PIN=dup asks for duplicates anyway (tests of that path).
 */
static bool slots_release_late(struct uring_state *u)
{
	const char *force = getenv("UAIO_PIN");
	struct pollfd pf;
	int p[2], none = -1;
	bool late = false;

	if (force && !strcmp(force, "dup"))
		return true;
	if (pipe2(p, O_CLOEXEC) < 0)
		return false;
	if (io_uring_register_files_update(&u->ring, 0, &p[1], 1) == 1) {
		close(p[1]);
		p[1] = -1;
		io_uring_register_files_update(&u->ring, 0, &none, 1);
		pf = (struct pollfd){ .fd = p[0], .events = POLLIN };
		late = poll(&pf, 1, 0) == 0;
	}
	close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	return late;
}

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
	/* as the fallback's: a quarter of the table, so that the program
	 * keeps room for its own descriptors */
	if ((u->slots_late = slots_release_late(u)))
		u->nfree = n / 4 > 16 ? n / 4 : 16 < n ? 16 : n;
	return 0;
}

int uring__pin(uaio_loop *l, int fd)
{
	struct uring_state *u = U(l);
	int slot, r;

	/* A kernel without sparse file tables (EINVAL) says so once; other
	 * failures (memory; EEXIST from a thread the ring is not tied to)
	 * are the caller's, and the next pin tries again. */
	if (u->files_err)
		return u->files_err;
	if (!u->nslots && (r = files_setup(u)) < 0) {
		if (r == -EINVAL)
			u->files_err = r;
		return r;
	}
	if (!u->nfree)
		return u->slots_late ? -EMFILE : -ENFILE;
	if (u->slots_late) {
		l->pins_dup = true;
		if ((r = uaio__fd_dup_own(fd)) >= 0)
			u->nfree--;
		return r;
	}
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

	if (u->slots_late && !(pinned & UAIO_FD_FIXED)) {
		uaio__fd_close(pinned);
		u->nfree++;
		return;
	}
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
