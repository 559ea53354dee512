/* SPDX-License-Identifier: MIT */
/*
 * Fallback backend for when io_uring is missing or forbidden: level-
 * triggered epoll for watches and for ops on pollable fds (pipes, sockets,
 * ttys: tried at once without blocking, else queued per fd until ready),
 * and the worker pool for everything that may block (regular files,
 * path ops, fsync, ...). Results reach callbacks through loop->done.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/epoll.h"

static int ep_init(uaio_loop *l, const struct uaio_loop_params *p)
{
	struct epoll_state *es = calloc(1, sizeof(*es));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_KEY };

	if (!es)
		return -ENOMEM;
	es->epfd = uaio__fd_own(epoll_create1(EPOLL_CLOEXEC));
	if (es->epfd < 0 || epoll_ctl(es->epfd, EPOLL_CTL_ADD, l->wake_fd, &ev) < 0) {
		int err = -errno;
		if (es->epfd >= 0)
			uaio__fd_close(es->epfd);
		free(es);
		return err;
	}
	uaio_timer_init(&es->mute_timer, uaio__ep_unmute, l);
	l->be_timer = &es->mute_timer;
	l->bs = es;
	return 0;
}

static void ep_fini(uaio_loop *l)
{
	struct epoll_state *es = E(l);

	uaio__fd_close(es->epfd);
	uaio__timer_unlink(l, &es->mute_timer);
	l->be_timer = NULL;
	free(es->muted);
	free(es->always);
	free(es->idle);
	free(es);
	l->bs = NULL;
}

static void ep_forsake(uaio_loop *l)
{
	uaio__fd_close(E(l)->epfd);
}

static void always_remove(uaio_loop *l, uaio_watch *w)
{
	struct epoll_state *es = E(l);

	for (unsigned i = 0; i < es->nalways; i++) {
		if (es->always[i] == w) {
			es->always[i] = es->always[--es->nalways];
			return;
		}
	}
}

/* Watches are the owner's, but on a thread-safe loop other threads'
 * ops share the descriptor's registration: changed under the lock. */
static void ep_watch_stop(uaio_loop *l, uaio_watch *w)
{
	bool lk = uaio__lock(l);
	struct uaio_fdent *e = uaio__fdent(l, w->fd, false);
	int fd = w->fd;

	if (w->state & WS_ALWAYS)
		always_remove(l, w);
	/* Without an fdq the registration is recorded only in the watch. */
	if (e && !e->q && w->armed)
		epoll_ctl(E(l)->epfd, EPOLL_CTL_DEL, fd, NULL);
	uaio__watch_finish(l, w, 0);
	uaio__ep_update_reg(l, fd);
	uaio__unlock(l, lk);
}

/* Also a close held for the pool's file ops on its descriptor, once
 * they have ended (epoll_fdq.c, late_end). */
int uaio__ep_close(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e;
	int fd = op->fd;

	uaio__ep_cancel_fd_ops(l, fd);
	if (uaio__late_hold_close(l, op))	/* a worker's file op on fd */
		return 0;
	e = uaio__fdent(l, fd, false);
	if (e && e->w) {
		uaio_watch *w = e->w;
		if (w->state & WS_ALWAYS)
			always_remove(l, w);
		if (!e->q && w->armed)
			epoll_ctl(E(l)->epfd, EPOLL_CTL_DEL, fd, NULL);
		uaio__watch_finish(l, w, -EBADF);
	}
	if (e) {
		epoll_ctl(E(l)->epfd, EPOLL_CTL_DEL, fd, NULL);
		free(e->q);
		e->q = NULL;
	}
	uaio__complete(l, op, close(fd) < 0 ? -errno : 0);
	return 0;
}

static int ep_cancel(uaio_loop *l, uaio_op *op, uaio_op *t)
{
	struct uaio_fdent *e;
	int r = -ENOENT;

	switch (t->state) {
	case OS_FDQ:
		e = uaio__fdent(l, t->fd, false);
		if (e && e->q && (uaio__ep_q_unlink(&e->q->rh, &e->q->rt, t) ||
				  uaio__ep_q_unlink(&e->q->wh, &e->q->wt, t))) {
			uaio__complete(l, t, -ECANCELED);
			uaio__ep_update_reg(l, t->fd);
			r = 0;
		}
		break;
	case OS_HELD:
		if (uaio__ep_pos_cancel(l, t) || uaio__late_cancel_close(l, t))
			r = 0;
		break;
	case OS_TIMERQ:
		/* (in this loop's heap: another loop's op is not ours) */
		if (t->len < l->nheap && l->heap[t->len].p == ((uintptr_t)t | 1)) {
			uaio__heap_remove(l, t->len);
			uaio__complete(l, t, -ECANCELED);
			r = 0;
		}
		break;
	}
	uaio__complete(l, op, r);
	return 0;
}

static int ep_cancel_fd(uaio_loop *l, uaio_op *op)
{
	int n = uaio__ep_cancel_fd_ops(l, op->fd);

	/* io_uring looks the descriptor up first */
	uaio__complete(l, op, !n && fcntl(op->fd, F_GETFD) < 0 ? -EBADF : n);
	return 0;
}

/* The ops this backend runs itself (EP_SELF in the op table). */
static int ep_self(uaio_loop *l, uaio_op *op)
{
	long r;

	switch (op->opcode) {
	case OP_NOP:
		uaio__complete(l, op, 0);
		return 0;
	case OP_TIMEOUT: {
		int r = uaio__heap_push(l, uaio__deadline((uint64_t)uaio__now_ns(), op->off),
					(uintptr_t)op | 1);

		op->state = OS_TIMERQ;
		/* The driving thread may be asleep for as long as its heap
		 * said before this deadline came: it must look again. */
		if (r == 0 && !uaio__on_driver(l))
			uaio__wake(l);
		return r;
	}
	case OP_CANCEL:
		return ep_cancel(l, op, (uaio_op *)(uintptr_t)op->addr);
	case OP_CANCEL_FD:
		return ep_cancel_fd(l, op);
	case OP_CLOSE:
		return uaio__ep_close(l, op);
	case OP_CONNECT: {
		int fl = fcntl(op->fd, F_GETFL);
		if (fl < 0) {
			uaio__complete(l, op, -EBADF);	/* as io_uring's */
			return 0;
		}
		/* A blocking socket: its connect made non-blocking for the
		 * call (the kernel goes on with it after), so that it waits
		 * for readiness here as any other, and can be cancelled or
		 * closed as on io_uring; in a worker it could not, and four
		 * to a dead host held every file op for minutes. */
		if (!(fl & O_NONBLOCK))
			op->xflags |= OX_BLOCKSOCK;
		r = uaio__connect_nonblock(op);
		if (r < 0 && errno == EAGAIN && (op->xflags & OX_BLOCKSOCK)) {
			/* an AF_UNIX listener's backlog full: no readiness
			 * tells of room; the blocking call waits for it */
			op->xflags &= ~OX_BLOCKSOCK;
			return uaio__workers_submit(l, op);
		}
		if (r == 0 || errno != EINPROGRESS) {
			uaio__complete(l, op, r < 0 ? -errno : 0);
			return 0;
		}
		return uaio__ep_enqueue(l, op);
	}
	}
	return uaio__workers_submit(l, op);
}

static int ep_submit(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e;
	long r;

	switch (uaio__opdef(op)->ep) {
	case EP_WORK:
		return uaio__ep_work(l, op, true);
	case EP_SELF:
		return ep_self(l, op);
	}

	/* Behind the op of that side on a worker: at a file's position, a
	 * stream's (its sends and receives too), or a flagged one */
	if (((uaio__opdef(op)->flags & OPF_ST) && (op->off == (uint64_t)-1 || !uaio__ep_is_rw(op))) ||
	    ((op->xflags & OX_EP_BLOCKING) && uaio__ep_is_rw(op)))
		if (uaio__ep_pos_held(l, op))
			return 0;
	/* Keep per-fd order: behind anything already queued on that side.
	 * If epoll already watches that side, it will say when to try. */
	e = uaio__fdent(l, op->fd, false);
	/* The caller's word (loop.h): no try, a blocking call on a worker
	 * in its turn; what comes after it on that side is held behind it */
	if ((op->xflags & OX_EP_BLOCKING) && uaio__ep_is_rw(op))
		return e && e->q && (uaio__op_read_side(op) ? e->q->rh : e->q->wh) ?
		       uaio__ep_enqueue(l, op) : uaio__ep_pos_worker(l, op);
	if (e && e->q && (uaio__op_read_side(op) ? e->q->rh : e->q->wh) &&
	    op->opcode != OP_POLL)	/* a poll waits for no turn */
		return uaio__ep_enqueue(l, op);
	/* epoll watches the read side (a registration kept a round after
	 * its queue emptied): it will say when to try; but for the caller's
	 * MSG_DONTWAIT, whose try now is its answer. Not the write side: a
	 * write may go where poll says no room (a pipe's last page takes a
	 * small one with every slot in use; a socket's send buffer takes one
	 * below the third poll wants free), and no event would come. Nor a
	 * read of nothing (no bytes, or no vectors: the caller's vectors are
	 * not read here), which read(2) answers 0 at once, data or none. */
	if (e && e->q && uaio__op_read_side(op) && (e->q->reg & EPOLLIN) &&
	    !uaio__ep_dontwait(op) && op->opcode != OP_POLL &&
	    !(uaio__ep_is_rw(op) && !op->len))
		return uaio__ep_enqueue(l, op);
	if (op->opcode == OP_ACCEPT_MULTI) {
		if ((r = uaio__accept_refused(op->fd)) < 0) {
			uaio__complete(l, op, r);
			return 0;
		}
		return uaio__ep_enqueue(l, op);
	}
	r = uaio__ep_attempt(op);
	/* A read of a named FIFO (which refuses RWF_NOWAIT) is tried plain
	 * at once: its answer may need no wait (uaio__try_rw). Not a tty's,
	 * on the caller's thread: a background process group's read there
	 * would stop it (SIGTTIN), where the loop's thread may block it. */
	if (r == -EOPNOTSUPP && uaio__ep_is_rw(op) && uaio__op_read_side(op) &&
	    uaio__ep_is_fifo(op->fd)) {
		op->xflags |= OX_PLAIN;
		r = uaio__ep_attempt(op);
	}
	if (r == -EAGAIN && uaio__ep_dontwait(op)) {
		uaio__complete(l, op, r);
		return 0;
	}
	if (r == -EAGAIN || (r == -EOPNOTSUPP && uaio__ep_is_rw(op))) {
		if (uaio__ep_is_rw(op) && uaio__ep_blocks_on_disk(op->fd))
			return op->off == (uint64_t)-1 ? uaio__ep_pos_worker(l, op) :
							 uaio__ep_work(l, op, true);
		if (r == -EOPNOTSUPP && uaio__ep_go_plain(op))
			return uaio__ep_pos_worker(l, op);
		return uaio__ep_enqueue(l, op);
	}
	/* Part of a file from the cache, the rest on disk: io_uring would
	 * return it all (or stop at EOF), so a worker redoes the whole op;
	 * at the file position, which the part has moved already, it does
	 * the rest. */
	if (uaio__ep_moved_part(op, r)) {
		if (op->off != (uint64_t)-1)
			return uaio__ep_work(l, op, true);
		/* (the part is moved: a rest that cannot go is its answer) */
		uaio__ep_rest_at_pos(op, r);
		if ((r = uaio__ep_pos_worker(l, op)) == 0)
			return 0;
	}
	uaio__complete(l, op, r);
	return 0;
}

static int ep_watch_arm(uaio_loop *l, uaio_watch *w)
{
	struct epoll_state *es = E(l);
	bool lk;
	int r;

	if (w->state & WS_ALWAYS)
		return 0;
	lk = uaio__lock(l);
	r = uaio__ep_update_reg(l, w->fd);
	if (r == -EPERM) {
		/* Regular files are always ready, as poll(2) says. */
		r = UAIO_GROW(es->always, es->capalways, (size_t)es->nalways + 1) < 0 ?
		    -ENOMEM : 0;
		if (!r) {
			es->always[es->nalways++] = w;
			w->state |= WS_ALWAYS;
		}
	}
	uaio__unlock(l, lk);
	return r;
}

/* Ready work the epoll descriptor does not show: regular files (epoll
 * refuses them; always ready), and events of the last wait that found
 * fired[] full (an edge-triggered one never comes again). */
static bool ep_unannounced(uaio_loop *l)
{
	struct epoll_state *es = E(l);

	if (es->next < es->nevs)
		return true;
	for (unsigned i = 0; i < es->nalways; i++)
		if (es->always[i]->events)
			return true;
	return false;
}

static int ep_wait(uaio_loop *l, int64_t timeout_ns)
{
	struct epoll_state *es = E(l);
	int n, total = 0;

	if (es->nidle) {
		bool lk = uaio__lock(l);
		uaio__ep_flush_idle(l);
		uaio__unlock(l, lk);
	}
	for (unsigned i = 0; i < es->nalways; i++)
		if (es->always[i]->events)
			timeout_ns = 0;
	if (es->next < es->nevs) {
		/* Events left over from the last wait go first, without waiting
		 * (a stale one for a since-stopped watch finds no watch). */
		n = es->nevs;
	} else {
		es->next = 0;
		n = uaio__epoll_wait(es->epfd, es->evs, MAX_EVENTS, timeout_ns);
		if (n < 0)
			return n;
	}
	es->nevs = n;
	for (int i = es->next; i < n; i++, es->next = i) {
		uint64_t key = es->evs[i].data.u64;

		if (uaio__fired_room(l) < 2)
			break;
		if (key == WAKE_KEY) {
			uint64_t v;
			ssize_t r = read(l->wake_fd, &v, sizeof(v));
			(void)r;
			total += uaio__fire(l, NULL, 0, FIRED_INBOX);
			continue;
		}
		uaio__ep_handle_fd(l, (int)key, es->evs[i].events);
		total++;
	}
	for (unsigned i = 0; i < es->nalways; i++)
		if (es->always[i]->events &&
		    uaio__fire(l, es->always[i], POLLIN | POLLOUT, FIRED_WATCH_LT))
			total++;
	return total;
}

static int ep_fd(const uaio_loop *l)
{
	return E(l)->epfd;
}

/* No registered files here: a duplicate descriptor keeps the file. At
 * most a quarter of RLIMIT_NOFILE, so that the program keeps room for
 * its own descriptors. */
static int ep_pin(uaio_loop *l, int fd)
{
	struct epoll_state *es = E(l);
	struct rlimit rl;
	int d;

	if (!es->pin_budget)
		es->pin_budget = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur / 4 > 16 ?
				 (unsigned)(rl.rlim_cur / 4 > 65536 ? 65536 : rl.rlim_cur / 4) : 16;
	l->pins_dup = true;
	if (es->npinned >= es->pin_budget)
		return -EMFILE;
	d = uaio__fd_dup_own(fd);
	if (d < 0)
		return d;
	es->npinned++;
	return d;
}

/* The file stays open through the caller's fd, so epoll would keep our
 * registration of the duplicate after close(): drop it first. */
static void ep_unpin(uaio_loop *l, int pinned)
{
	struct uaio_fdent *e;

	/* Ops still queued on the handle (unpinned too early) end, as the
	 * ring's would on a closed file, instead of waiting for ever. */
	uaio__ep_cancel_fd_ops(l, pinned);
	e = uaio__fdent(l, pinned, false);
	if (e && e->q) {
		epoll_ctl(E(l)->epfd, EPOLL_CTL_DEL, pinned, NULL);
		e->q->reg = 0;
		e->q->idle_marked = false;
	}
	uaio__fd_close(pinned);
	E(l)->npinned--;
}

const struct uaio_backend uaio__epoll_backend = {
	.name = "epoll",
	.kind = UAIO_BACKEND_EPOLL,
	.init = ep_init,
	.fini = ep_fini,
	.forsake = ep_forsake,
	.submit = ep_submit,
	.watch_arm = ep_watch_arm,
	.watch_stop = ep_watch_stop,
	.pool_next = uaio__ep_pos_next,
	.wait = ep_wait,
	.flush = NULL,
	.fd = ep_fd,
	.unannounced = ep_unannounced,
	.pin = ep_pin,
	.unpin = ep_unpin,
};
