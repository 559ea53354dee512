/* SPDX-License-Identifier: MIT */
/*
 * The io_uring backend's ring: made with the best setup flags the kernel
 * takes (each try drops what an older kernel refuses), the features that
 * gives recorded, and torn down with the descriptors the backend added.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/uring.h"

int uring__init(uaio_loop *l, const struct uaio_loop_params *p)
{
	struct uring_state *u = calloc(1, sizeof(*u));
	struct io_uring_params prm;
	unsigned entries = p && p->entries ? p->entries : 256;
	unsigned base = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
	/* Best first; each step drops what an older kernel refuses. */
	unsigned tries[5];
	int n = 0, r = -ENOSYS;

	if (!u)
		return -ENOMEM;
	u->epfd = u->evfd = u->tsfd = -1;
	if (p && (p->flags & UAIO_LOOP_SQPOLL))
		tries[n++] = base | IORING_SETUP_SQPOLL;
	if (!(l->flags & UAIO_LOOP_THREADSAFE)) {
		tries[n++] = base | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_TASKRUN_FLAG |
			     IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
		tries[n++] = base | IORING_SETUP_SINGLE_ISSUER |
			     IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_R_DISABLED;
		tries[n++] = base | IORING_SETUP_COOP_TASKRUN;
	}
	tries[n++] = base;
	for (int i = 0; i < n; i++) {
		memset(&prm, 0, sizeof(prm));
		prm.flags = tries[i];
		prm.cq_entries = entries * 16 < 4096 ? 4096 : entries * 16;
		r = io_uring_queue_init_params(entries, &u->ring, &prm);
		if (r == 0)
			break;
	}
	if (r < 0) {
		free(u);
		return r;
	}
	u->ring.ring_fd = u->ring.enter_ring_fd = uaio__fd_own(u->ring.ring_fd);
	if (u->ring.ring_fd < 0) {	/* no room above the program's numbers */
		r = -errno;
		io_uring_queue_exit(&u->ring);
		free(u);
		return r;
	}
	/* Without these the guarantees above do not hold: use epoll. */
	if (!(prm.features & IORING_FEAT_NODROP) ||
	    !(prm.features & IORING_FEAT_EXT_ARG)) {
		uaio__fd_disown(u->ring.ring_fd);
		io_uring_queue_exit(&u->ring);
		free(u);
		return -EOPNOTSUPP;
	}
	if (prm.flags & IORING_SETUP_SINGLE_ISSUER)
		l->features |= UAIO_FEAT_SINGLE_ISSUER;
	if (prm.flags & IORING_SETUP_DEFER_TASKRUN) {
		l->features |= UAIO_FEAT_DEFER_TASKRUN;
		u->defer = true;
	}
	if (prm.flags & IORING_SETUP_COOP_TASKRUN)
		l->features |= UAIO_FEAT_COOP_TASKRUN;
	if (prm.flags & IORING_SETUP_SQPOLL)
		l->features |= UAIO_FEAT_SQPOLL;
	/* Thread-safe rings have no issuer to register: ready at once. */
	u->enabled = l->threadsafe;
	{
		struct io_uring_probe *probe = io_uring_get_probe_ring(&u->ring);
		/* ASYNC_CANCEL_FD arrived with 5.19 together with OP_SOCKET. */
		if (probe && io_uring_opcode_supported(probe, IORING_OP_SOCKET)) {
			l->features |= UAIO_FEAT_MULTISHOT | UAIO_FEAT_CANCEL_FD;
			u->cancel_fd = true;
		}
		if (probe)
			io_uring_free_probe(probe);
	}
	u->cq_cap = prm.cq_entries > 256 ? prm.cq_entries - 128 : prm.cq_entries / 2;
	l->bs = u;
	return 0;
}

/* The epoll set, its eventfd, a thread-safe loop's descriptor. */
static void close_side_fds(struct uring_state *u)
{
	if (u->epfd >= 0)
		uaio__fd_close(u->epfd);
	if (u->evfd >= 0)
		uaio__fd_close(u->evfd);
	if (u->tsfd >= 0)
		uaio__fd_close(u->tsfd);
}

void uring__forsake(uaio_loop *l)
{
	struct uring_state *u = U(l);

	if (!u)
		return;
	uaio__fd_close(u->ring.ring_fd);
	close_side_fds(u);
}

/*
 * Ops waiting in the kernel (polls, poll-armed reads and writes, timeouts)
 * are cancelled before the ring goes: its close would do that only once
 * every copy of its descriptor is closed (a forked child may hold one),
 * and meanwhile a read could still write into a buffer the caller frees
 * next. Work an io-wq worker is already doing is not waited for (the
 * cancel of any op returns at once); nor is anything cancelled on a
 * single-issuer ring freed by another thread (EEXIST), or before Linux
 * 6.0: there the close is all there is. uaio_loop_new(3) says so.
 */
static void cancel_all(uaio_loop *l, struct uring_state *u)
{
	struct io_uring_sync_cancel_reg reg = {
		.flags = IORING_ASYNC_CANCEL_ANY | IORING_ASYNC_CANCEL_ALL,
		.timeout = { .tv_sec = -1, .tv_nsec = -1 },
	};

	if (u->kops && !uaio__foreign(l))
		(void)io_uring_register_sync_cancel(&u->ring, &reg);
}

void uring__fini(uaio_loop *l)
{
	struct uring_state *u = U(l);

	if (!u)
		return;
	cancel_all(l, u);
	uaio__fd_disown(u->ring.ring_fd);
	/* The registered ring fd is a slot in its registering thread's
	 * table: liburing would unregister that slot number in this
	 * thread's (or a fork child's), another loop's if it has one there.
	 * An offset past the kernel's table (16) makes that unregister
	 * fail; the owner's slot keeps the ring until that thread exits. */
	if ((l->features & UAIO_FEAT_REG_RING_FD) && u->reg_tid != (pid_t)syscall(SYS_gettid))
		u->ring.enter_ring_fd = INT_MAX;
	io_uring_queue_exit(&u->ring);
	close_side_fds(u);
	free(u->slot_free);
	free(u);
	l->bs = NULL;
}
