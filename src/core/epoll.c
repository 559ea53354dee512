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

#include "core/internal.h"

#define WAKE_KEY	UINT64_MAX
#define MAX_EVENTS	256

struct uaio_fdq {
	uaio_op *rh, *rt;	/* read-side ops, FIFO */
	uaio_op *wh, *wt;	/* write-side ops, FIFO */
	uint32_t reg;		/* events registered with epoll */
	bool idle_marked;	/* on idle[]: maybe deregister next round */
};

struct epoll_state {
	int epfd;
	uaio_watch **always;	/* regular-file watches: always ready */
	unsigned nalways, capalways;
	int *idle;		/* fds whose queue emptied this round */
	unsigned nidle, capidle;
	unsigned npinned, pin_budget;	/* uaio_file_pin duplicates */
	struct epoll_event evs[MAX_EVENTS];
	/* evs[next..nevs) came from epoll but found l->fired full: an
	 * edge-triggered watch would never hear of them again. */
	int next, nevs;
};

#define E(l) ((struct epoll_state *)(l)->bs)

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
	l->bs = es;
	return 0;
}

static void ep_fini(uaio_loop *l)
{
	struct epoll_state *es = E(l);

	uaio__fd_close(es->epfd);
	free(es->always);
	free(es->idle);
	free(es);
	l->bs = NULL;
}

static uint32_t want_mask(const struct uaio_fdent *e)
{
	uint32_t want = 0;

	if (e->w && (e->w->state & WS_ACTIVE) && !(e->w->state & WS_ALWAYS)) {
		want = uaio__watch_mask(e->w);
		if ((e->w->events & UAIO_EDGE) && want)
			want |= EPOLLET;
	}
	if (e->q && e->q->rh)
		want |= EPOLLIN | EPOLLRDHUP;
	if (e->q && e->q->wh)
		want |= EPOLLOUT;
	/* Queued ops are retried until EAGAIN only while level-triggered. */
	if (e->q && (e->q->rh || e->q->wh))
		want &= ~EPOLLET;
	return want;
}

/* The fd's one epoll registration: its mask is kept in the fdq if there is
 * one, else in the watch (no allocation for watch-only fds). */
static uint32_t reg_of(const struct uaio_fdent *e)
{
	return e->q ? e->q->reg : e->w ? e->w->armed : 0;
}

/* Registers the union of what the watch and the queued ops wait for.
 * force re-issues an unchanged mask: see enqueue(). */
static int update_reg_force(uaio_loop *l, int fd, bool force)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	uint32_t want, have;
	int r;

	if (!e)
		return 0;
	want = want_mask(e);
	have = reg_of(e);
	if (want == have && !(force && want))
		return 0;
	if ((r = uaio__epoll_set(E(l)->epfd, fd, have, want, (uint64_t)fd)) < 0)
		return r;
	if (e->q)
		e->q->reg = want;
	if (e->w)
		e->w->armed = want;
	return 0;
}

static int update_reg(uaio_loop *l, int fd)
{
	return update_reg_force(l, fd, false);
}

/* Deregistering an fd whose queue just emptied waits a round: the
 * callback usually queues the next op on it at once (saves two
 * epoll_ctl calls per op). */
static void mark_idle(uaio_loop *l, int fd, struct uaio_fdq *q)
{
	struct epoll_state *es = E(l);

	if (q->idle_marked)
		return;
	if (UAIO_GROW(es->idle, es->capidle, (size_t)es->nidle + 1) < 0) {
		update_reg(l, fd);
		return;
	}
	es->idle[es->nidle++] = fd;
	q->idle_marked = true;
}

static void flush_idle(uaio_loop *l)
{
	struct epoll_state *es = E(l);

	for (unsigned i = 0; i < es->nidle; i++) {
		struct uaio_fdent *e = uaio__fdent(l, es->idle[i], false);
		if (e && e->q && e->q->idle_marked) {
			e->q->idle_marked = false;
			update_reg(l, es->idle[i]);
		}
	}
	es->nidle = 0;
}

static struct uaio_fdq *fdq(uaio_loop *l, int fd)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, true);

	if (!e)
		return NULL;
	if (!e->q && (e->q = calloc(1, sizeof(*e->q))) && e->w)
		e->q->reg = e->w->armed;
	return e->q;
}

static void q_push(uaio_op **h, uaio_op **t, uaio_op *op)
{
	op->next = NULL;
	if (*t)
		(*t)->next = op;
	else
		*h = op;
	*t = op;
}

static bool q_unlink(uaio_op **h, uaio_op **t, uaio_op *op)
{
	uaio_op *prev = NULL;

	for (uaio_op **pp = h; *pp; prev = *pp, pp = &(*pp)->next) {
		if (*pp == op) {
			*pp = op->next;
			if (*t == op)
				*t = prev;
			return true;
		}
	}
	return false;
}

static uint64_t rw_total(const uaio_op *op)
{
	const struct iovec *iov = (const struct iovec *)(uintptr_t)op->addr;
	uint64_t n = 0;

	if (op->opcode != OP_READV && op->opcode != OP_WRITEV)
		return op->len;
	for (uint32_t i = 0; i < op->len; i++)
		n += iov[i].iov_len;
	return n;
}

static bool is_rw(const uaio_op *op)
{
	return uaio__opdef(op)->flags & OPF_RW;
}

/* One non-blocking try: result, or -EAGAIN to keep waiting. */
static long attempt(uaio_op *op)
{
	const struct uaio_opdef *d = uaio__opdef(op);

	return d->try_ ? d->try_(op) : -EINVAL;
}

static bool blocks_on_disk(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) ||
				       S_ISDIR(st.st_mode));
}

/* Ops queued on a descriptor the caller closed: its number may name
 * another file now, which epoll does not watch (it dropped the old one
 * with its last close). They end as io_uring would end an op on a
 * closed descriptor; the queue starts over for the new file. */
static void drop_stale(uaio_loop *l, int fd, struct uaio_fdq *q)
{
	struct epoll_event ev = { .events = q->reg, .data.u64 = (uint64_t)fd };
	uaio_op *lists[2] = { q->rh, q->wh }, *op, *next;

	if (!q->reg || epoll_ctl(E(l)->epfd, EPOLL_CTL_MOD, fd, &ev) == 0 || errno != ENOENT)
		return;
	q->rh = q->rt = q->wh = q->wt = NULL;
	q->reg = 0;
	for (int i = 0; i < 2; i++)
		for (op = lists[i]; op; op = next) {
			next = op->next;
			uaio__complete(l, op, -EBADF);
		}
}

static int enqueue(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdq *q = fdq(l, op->fd);
	int r;

	if (!q)
		return -ENOMEM;
	if (q->rh || q->wh)
		drop_stale(l, op->fd, q);
	if (uaio__op_read_side(op))
		q_push(&q->rh, &q->rt, op);
	else
		q_push(&q->wh, &q->wt, op);
	op->state = OS_FDQ;
	/* A registration kept past an emptied queue (mark_idle) may be
	 * stale: the caller can have closed the fd and got the number back
	 * for another file, which epoll does not watch. MOD revalidates it
	 * (ENOENT -> ADD) at one syscall instead of the DEL + ADD saved. */
	r = update_reg_force(l, op->fd, q->idle_marked);
	q->idle_marked = false;
	if (r < 0) {
		if (uaio__op_read_side(op))
			q_unlink(&q->rh, &q->rt, op);
		else
			q_unlink(&q->wh, &q->wt, op);
		op->state = OS_IDLE;
		/* Not pollable after all (EPERM): let a worker block on it. */
		return r == -EPERM ? uaio__workers_submit(l, op) : r;
	}
	return 0;
}

static int cancel_fd_ops(uaio_loop *l, int fd)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	int n = 0;

	if (e && e->q) {
		uaio_op *lists[2] = { e->q->rh, e->q->wh }, *op, *next;
		e->q->rh = e->q->rt = e->q->wh = e->q->wt = NULL;
		for (int i = 0; i < 2; i++)
			for (op = lists[i]; op; op = next, n++) {
				next = op->next;
				uaio__complete(l, op, -ECANCELED);
			}
		update_reg(l, fd);
	}
	return n + uaio__workers_cancel_fd(l, fd);
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
	update_reg(l, fd);
	uaio__unlock(l, lk);
}

static int ep_close(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdent *e;
	int fd = op->fd;

	cancel_fd_ops(l, fd);
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
		if (e && e->q && (q_unlink(&e->q->rh, &e->q->rt, t) ||
				  q_unlink(&e->q->wh, &e->q->wt, t))) {
			uaio__complete(l, t, -ECANCELED);
			update_reg(l, t->fd);
			r = 0;
		}
		break;
	case OS_TIMERQ:
		uaio__heap_remove(l, t->len);
		uaio__complete(l, t, -ECANCELED);
		r = 0;
		break;
	}
	uaio__complete(l, op, r);
	return 0;
}

static int ep_cancel_fd(uaio_loop *l, uaio_op *op)
{
	int n = cancel_fd_ops(l, op->fd);

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
		return ep_close(l, op);
	case OP_CONNECT: {
		int fl = fcntl(op->fd, F_GETFL);
		if (fl < 0) {
			uaio__complete(l, op, -EBADF);	/* as io_uring's */
			return 0;
		}
		/* A blocking socket would block the loop: a worker waits. */
		if (!(fl & O_NONBLOCK))
			return uaio__workers_submit(l, op);
		r = connect(op->fd, (void *)(uintptr_t)op->addr, op->len);
		if (r == 0 || errno != EINPROGRESS) {
			uaio__complete(l, op, r < 0 ? -errno : 0);
			return 0;
		}
		return enqueue(l, op);
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
		return uaio__workers_submit(l, op);
	case EP_SELF:
		return ep_self(l, op);
	}

	/* Keep per-fd order: behind anything already queued on that side.
	 * If epoll already watches that side, it will say when to try. */
	e = uaio__fdent(l, op->fd, false);
	if (e && e->q && (uaio__op_read_side(op) ? e->q->rh || (e->q->reg & EPOLLIN)
					   : e->q->wh || (e->q->reg & EPOLLOUT)))
		return enqueue(l, op);
	if (op->opcode == OP_ACCEPT_MULTI) {
		if ((r = uaio__accept_refused(op->fd)) < 0) {
			uaio__complete(l, op, r);
			return 0;
		}
		return enqueue(l, op);
	}
	r = attempt(op);
	if (r == -EAGAIN || (r == -EOPNOTSUPP && is_rw(op))) {
		if (is_rw(op) && blocks_on_disk(op->fd))
			return uaio__workers_submit(l, op);
		if (r == -EOPNOTSUPP)
			op->xflags |= OX_PLAIN;
		return enqueue(l, op);
	}
	/* Part of a file from the cache, the rest on disk: io_uring would
	 * return it all (or stop at EOF), so a worker redoes the whole op.
	 * Only at an explicit offset: at the file position, the partial
	 * transfer has moved the position already. */
	if (r > 0 && is_rw(op) && op->off != (uint64_t)-1 &&
	    (uint64_t)r < rw_total(op) && blocks_on_disk(op->fd))
		return uaio__workers_submit(l, op);
	uaio__complete(l, op, r);
	return 0;
}

/* Runs the queue of one side while its head makes progress: results go
 * to the done list, a multishot op's to l->fired (while there is room). */
static void run_queue(uaio_loop *l, uaio_op **h, uaio_op **t)
{
	while (*h) {
		uaio_op *op = *h;
		long r;

		if (op->opcode == OP_ACCEPT_MULTI && !uaio__fired_room(l))
			break;
		r = attempt(op);
		/* Queued behind another without its own first try: a file
		 * that refuses RWF_NOWAIT (a named FIFO) is learnt here. */
		if (r == -EOPNOTSUPP && is_rw(op) && !(op->xflags & OX_PLAIN)) {
			op->xflags |= OX_PLAIN;
			r = attempt(op);
		}
		if (r == -EAGAIN)
			break;
		if (op->opcode == OP_ACCEPT_MULTI && r >= 0) {
			uaio__fire(l, op, (int32_t)r, FIRED_OP_MORE);
			continue;
		}
		*h = op->next;
		if (!*h)
			*t = NULL;
		uaio__complete(l, op, r);
	}
}

/* One descriptor's readiness: its queued ops run, its watch's readiness
 * goes to l->fired, and its epoll registration follows what is wanted. */
static void handle_fd(uaio_loop *l, int fd, uint32_t events)
{
	/* Other threads may grow the fd table of a thread-safe loop. */
	bool lk = uaio__lock(l);
	struct uaio_fdent *e = uaio__fdent(l, fd, false);

	if (e && e->q) {
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP))
			run_queue(l, &e->q->rh, &e->q->rt);
		if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
			run_queue(l, &e->q->wh, &e->q->wt);
	}
	uaio__epoll_fire(l, fd, events, 0);
	if (e && e->q && !(want_mask(e) & ~reg_of(e)))
		mark_idle(l, fd, e->q);	/* only less wanted: next round */
	else
		update_reg(l, fd);
	uaio__unlock(l, lk);
}

static int ep_watch_arm(uaio_loop *l, uaio_watch *w)
{
	struct epoll_state *es = E(l);
	bool lk;
	int r;

	if (w->state & WS_ALWAYS)
		return 0;
	lk = uaio__lock(l);
	r = update_reg(l, w->fd);
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

static int ep_wait(uaio_loop *l, int64_t timeout_ns)
{
	struct epoll_state *es = E(l);
	int n, total = 0;

	if (es->nidle) {
		bool lk = uaio__lock(l);
		flush_idle(l);
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
		handle_fd(l, (int)key, es->evs[i].events);
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
	cancel_fd_ops(l, pinned);
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
	.submit = ep_submit,
	.watch_arm = ep_watch_arm,
	.watch_stop = ep_watch_stop,
	.wait = ep_wait,
	.flush = NULL,
	.fd = ep_fd,
	.pin = ep_pin,
	.unpin = ep_unpin,
};
