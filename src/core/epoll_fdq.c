/* SPDX-License-Identifier: MIT */
/*
 * The epoll backend's descriptor queues: ops on a pollable descriptor
 * that would block wait in a FIFO per side (read, write), and the
 * descriptor has one epoll registration, the union of what its queues
 * and its watch wait for. An event runs the queue's head while it makes
 * progress.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/epoll.h"

static uint32_t want_mask(const struct uaio_fdent *e)
{
	uint32_t want = 0;

	if (e->w && (e->w->state & WS_ACTIVE) && !(e->w->state & WS_ALWAYS)) {
		want = uaio__watch_mask(e->w);
		if ((e->w->events & UAIO_EDGE) && want)
			want |= EPOLLET;
	}
	if (e->q && e->q->rh && !(e->q->muted & 1))
		want |= EPOLLIN | EPOLLRDHUP;
	if (e->q && e->q->wh && !(e->q->muted & 2))
		want |= EPOLLOUT;
	/* Queued ops are retried until EAGAIN only while level-triggered
	 * (a muted side's are not retried). */
	if (e->q && ((e->q->rh && !(e->q->muted & 1)) || (e->q->wh && !(e->q->muted & 2))))
		want &= ~EPOLLET;
	/* A muted side keeps a registration (for edges only): drop_stale
	 * tells a closed descriptor by it, before the ops run on a file that
	 * got the number since. */
	if (!want && e->q && ((e->q->rh && (e->q->muted & 1)) || (e->q->wh && (e->q->muted & 2))))
		want = EPOLLET;
	return want;
}

/* The fd's one epoll registration: its mask is kept in the fdq if there is
 * one, else in the watch (no allocation for watch-only fds). */
static uint32_t reg_of(const struct uaio_fdent *e)
{
	return e->q ? e->q->reg : e->w ? e->w->armed : 0;
}

/* Registers the union of what the watch and the queued ops wait for.
 * force re-issues an unchanged mask: see uaio__ep_enqueue(). */
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
	if ((r = uaio__epoll_set(E(l)->epfd, fd, have, want, (uint64_t)fd)) < 0) {
		/* EPERM for a number that had a registration: it names a file
		 * epoll cannot watch now (the old one closed, the number
		 * reused): that registration is gone */
		if (r == -EPERM && have && e->q)
			e->q->reg = 0;
		return r;
	}
	if (e->q)
		e->q->reg = want;
	if (e->w)
		e->w->armed = want;
	return 0;
}

int uaio__ep_update_reg(uaio_loop *l, int fd)
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
		uaio__ep_update_reg(l, fd);
		return;
	}
	es->idle[es->nidle++] = fd;
	q->idle_marked = true;
}

void uaio__ep_flush_idle(uaio_loop *l)
{
	struct epoll_state *es = E(l);

	for (unsigned i = 0; i < es->nidle; i++) {
		struct uaio_fdent *e = uaio__fdent(l, es->idle[i], false);
		if (e && e->q && e->q->idle_marked) {
			e->q->idle_marked = false;
			uaio__ep_update_reg(l, es->idle[i]);
		}
	}
	es->nidle = 0;
}

struct uaio_fdq *uaio__ep_fdq(uaio_loop *l, int fd)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, true);

	if (!e)
		return NULL;
	if (!e->q && (e->q = calloc(1, sizeof(*e->q))) && e->w)
		e->q->reg = e->w->armed;
	return e->q;
}

bool uaio__ep_q_unlink(uaio_op **h, uaio_op **t, uaio_op *op)
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

/* A recv or send with the caller's MSG_DONTWAIT: one try is its answer
 * (-EAGAIN too), as io_uring gives it, never a wait. */
bool uaio__ep_dontwait(const uaio_op *op)
{
	return (op->opcode == OP_RECV || op->opcode == OP_SEND || op->opcode == OP_RECVMSG ||
		op->opcode == OP_SENDMSG) && (op->rw_flags & MSG_DONTWAIT);
}

bool uaio__ep_is_rw(const uaio_op *op)
{
	return uaio__opdef(op)->flags & OPF_RW;
}

/* One non-blocking try: result, or -EAGAIN to keep waiting. */
long uaio__ep_attempt(uaio_op *op)
{
	const struct uaio_opdef *d = uaio__opdef(op);

	return d->try_ ? d->try_(op) : -EINVAL;
}

/* Whether a try's result r is part of a file read or write, the rest
 * on disk: io_uring, and read(2), would give it all (or stop at EOF). */
bool uaio__ep_moved_part(const uaio_op *op, long r)
{
	return r > 0 && uaio__ep_is_rw(op) && (uint64_t)r < uaio__rw_total(op) &&
	       uaio__ep_blocks_on_disk(op->fd);
}

/* A read or write at the file position that moved part of its bytes
 * without blocking, the rest on disk: read(2) gives them all (or stops at
 * EOF), and so does io_uring. The part is kept (op->addr2, OX_HEAD): a
 * worker moves the rest, at the position the part has moved (ops.c), and
 * uaio__complete adds them up. Nothing is allocated: a loop freed with
 * the rest queued has nothing of it to free. */
void uaio__ep_rest_at_pos(uaio_op *op, long done)
{
	op->addr2 = (uint64_t)done;
	op->xflags |= OX_HEAD;
}

/* op's file refuses RWF_NOWAIT: readiness, then plain I/O (OX_PLAIN).
 * True when it is to be a blocking call on a worker instead, as flagged
 * (OX_BLOCKING): a write to a blocking anonymous-inode file (an eventfd),
 * whose readiness promises room for 1, not for the value written, so
 * that the plain write could block the loop's thread (io_uring's worker
 * makes that call too). */
bool uaio__ep_go_plain(uaio_op *op)
{
	struct stat st;
	int fl;

	op->xflags |= OX_PLAIN;
	if (uaio__op_read_side(op) || fstat(op->fd, &st) < 0 || (st.st_mode & S_IFMT) ||
	    (fl = fcntl(op->fd, F_GETFL)) < 0 || (fl & O_NONBLOCK))
		return false;
	op->xflags |= OX_WORKCALL;
	return true;
}

bool uaio__ep_is_fifo(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode);
}

bool uaio__ep_blocks_on_disk(int fd)
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

int uaio__ep_enqueue(uaio_loop *l, uaio_op *op)
{
	struct uaio_fdq *q = uaio__ep_fdq(l, op->fd);
	int r, sd;

	if (!q)
		return -ENOMEM;
	if (q->rh || q->wh)
		drop_stale(l, op->fd, q);
	sd = uaio__op_read_side(op) ? 0 : 1;
	if (!(sd ? q->wh : q->rh)) {	/* a new first op: not muted */
		q->dry[sd] = 0;
		q->muted &= (uint8_t)~(1u << sd);
	}
	if (sd)
		uaio__ep_q_push(&q->wh, &q->wt, op);
	else
		uaio__ep_q_push(&q->rh, &q->rt, op);
	op->state = OS_FDQ;
	/* A registration kept past an emptied queue (mark_idle) may be
	 * stale: the caller can have closed the fd and got the number back
	 * for another file, which epoll does not watch. MOD revalidates it
	 * (ENOENT -> ADD) at one syscall instead of the DEL + ADD saved. */
	r = update_reg_force(l, op->fd, q->idle_marked);
	q->idle_marked = false;
	if (r < 0) {
		if (uaio__op_read_side(op))
			uaio__ep_q_unlink(&q->rh, &q->rt, op);
		else
			uaio__ep_q_unlink(&q->wh, &q->wt, op);
		op->state = OS_MOVING;
		/* Not pollable after all (EPERM): let a worker block on it. */
		return r == -EPERM ? uaio__ep_work(l, op, !(op->xflags & OX_EP_BLOCKING)) : r;
	}
	return 0;
}

int uaio__ep_cancel_fd_ops(uaio_loop *l, int fd)
{
	struct uaio_fdent *e = uaio__fdent(l, fd, false);
	int n = 0;

	uaio_op *lists[4] = { NULL }, *op, *next;

	if (e && e->q) {
		lists[0] = e->q->rh;
		lists[1] = e->q->wh;
		lists[2] = e->q->ph[0];
		lists[3] = e->q->ph[1];
		e->q->rh = e->q->rt = e->q->wh = e->q->wt = NULL;
		e->q->ph[0] = e->q->pt[0] = e->q->ph[1] = e->q->pt[1] = NULL;
	}
	/* the pool's first: a busy op at the file's position was made
	 * before those held behind it, whose lists are out of reach of its
	 * end (pool_next) now */
	n = uaio__workers_cancel_fd(l, fd);
	for (int i = 0; i < 4; i++)
		for (op = lists[i]; op; op = next, n++) {
			next = op->next;
			uaio__complete(l, op, -ECANCELED);
		}
	if (e && e->q)
		uaio__ep_update_reg(l, fd);
	return n;
}

/*
 * Readiness that no call can use: epoll says a side is ready while its
 * first op answers EAGAIN at every wake-up (a datagram to an unconnected
 * AF_UNIX peer whose queue is full: epoll looks at the sender's socket;
 * an eventfd write the counter cannot take: epoll asks for room for 1).
 * Level-triggered, that spun the loop's thread. After EP_DRY_WAKES such
 * wake-ups in a row epoll stops watching that side for 1 ms, then 2, 4,
 * up to 8 ms at a time, until a try makes progress; the op stays queued
 * and cancellable, and is tried once at each turn. (io_uring instead
 * hands such an op to a blocking worker, which cannot be cancelled
 * here.) A loser of a race for shared readiness (other processes read
 * the pipe first) waits the same way after as many losses in a row.
 */
#define EP_DRY_WAKES	16
#define EP_MUTE_MS_MAX	8

static void mute_side(uaio_loop *l, int fd, struct uaio_fdq *q, int sd)
{
	struct epoll_state *es = E(l);
	unsigned sh = q->dry[sd] - EP_DRY_WAKES;	/* 1, 2, 4 ms, then the most */
	uint64_t wait = (sh < 3 ? 1u << sh : EP_MUTE_MS_MAX) * 1000000ull;
	uint64_t when = (uint64_t)uaio__now_ns() + wait;
	uaio_timer *t = &es->mute_timer;

	if (UAIO_GROW(es->muted, es->capmuted, (size_t)es->nmuted + 1) < 0)
		return;	/* watched as before */
	es->muted[es->nmuted++] = (struct ep_muted){ when, fd, (uint8_t)(1u << sd) };
	q->muted |= (uint8_t)(1u << sd);
	if (!uaio_timer_pending(t) || t->when > when)
		uaio_timer_start(l, t, wait, 0);
}

/* The mute timer: sides whose time has come are watched again (and tried
 * at their next readiness); the timer is set for the next. */
void uaio__ep_unmute(uaio_timer *t)
{
	uaio_loop *l = t->data;
	bool lk = uaio__lock(l);
	struct epoll_state *es = E(l);
	uint64_t now = (uint64_t)uaio__now_ns(), next = UINT64_MAX;

	for (unsigned i = 0; i < es->nmuted;) {
		struct ep_muted m = es->muted[i];
		struct uaio_fdent *e;

		if (m.when > now) {
			next = m.when < next ? m.when : next;
			i++;
			continue;
		}
		es->muted[i] = es->muted[--es->nmuted];
		/* (a number closed since, maybe reused: at worst an early try) */
		if ((e = uaio__fdent(l, m.fd, false)) && e->q && (e->q->muted & m.side)) {
			e->q->muted &= (uint8_t)~m.side;
			if (e->q->rh || e->q->wh)
				drop_stale(l, m.fd, e->q);
			uaio__ep_update_reg(l, m.fd);
		}
	}
	if (next != UINT64_MAX)
		uaio_timer_start(l, t, next - now, 0);
	uaio__unlock(l, lk);
}

/* Tries the queue's polls (kind 1) or its other ops (kind 0): a poll
 * waits for readiness, not for its turn, so it is tried wherever it
 * stands, first (it sees the readiness the data op after it may use up,
 * as io_uring's poll is woken with the read), and holds nothing up. Other
 * ops go while the first of them makes progress: results go to the done
 * list, a multishot op's to l->fired (while there is room). True when the
 * first op tried answered EAGAIN: a fruitless wake-up. */
static bool run_kind(uaio_loop *l, uaio_op **h, uaio_op **t, bool polls, bool rdhup)
{
	uaio_op **pp = h, *prev = NULL;
	bool moved = false;
	uint64_t off0;

	while (*pp) {
		uaio_op *op = *pp;
		long r;

		if ((op->opcode == OP_POLL) != polls) {
			prev = op;
			pp = &op->next;
			continue;
		}
		if (op->opcode == OP_ACCEPT_MULTI && !uaio__fired_room(l))
			break;
		if ((op->xflags & OX_EP_BLOCKING) && uaio__ep_is_rw(op)) {
			uaio__ep_hold_behind(l, t, pp, prev, op);
			break;
		}
		off0 = op->off;
		r = uaio__ep_attempt(op);
		/* Queued behind another without its own first try: a file
		 * that refuses RWF_NOWAIT (a named FIFO) is learnt here. */
		if (r == -EOPNOTSUPP && uaio__ep_is_rw(op) && !(op->xflags & OX_PLAIN)) {
			if (uaio__ep_go_plain(op)) {
				uaio__ep_hold_behind(l, t, pp, prev, op);
				break;
			}
			r = uaio__ep_attempt(op);
		}
		/* A datagram socket shut for reading: epoll says readable
		 * (RDHUP) and a non-blocking receive says EAGAIN for ever,
		 * where the blocking call (io_uring's fallback to it too)
		 * answers 0. A stream's receive there answers 0 itself. */
		if (r == -EAGAIN && rdhup && !polls && !uaio__ep_dontwait(op) &&
		    op->opcode != OP_ACCEPT && op->opcode != OP_ACCEPT_MULTI)
			r = 0;
		if (r == -EAGAIN && !uaio__ep_dontwait(op)) {
			/* (a MSG_WAITALL part moved: progress) */
			if (!polls)
				return !moved && !((op->xflags & OX_PART) && op->off != off0);
			prev = op;
			pp = &op->next;
			continue;
		}
		moved = true;
		if (op->opcode == OP_ACCEPT_MULTI && r >= 0) {
			uaio__fire(l, op, (int32_t)r, FIRED_OP_MORE);
			continue;
		}
		*pp = op->next;
		if (*t == op)
			*t = prev;
		uaio__complete(l, op, r);
	}
	return false;
}

/* Side sd (0 read, 1 write) of fd is ready. */
static void run_queue(uaio_loop *l, int fd, struct uaio_fdq *q, int sd, bool rdhup)
{
	uaio_op **h = sd ? &q->wh : &q->rh, **t = sd ? &q->wt : &q->rt;

	run_kind(l, h, t, true, false);
	if (!run_kind(l, h, t, false, rdhup))
		q->dry[sd] = 0;
	else if ((q->dry[sd] += q->dry[sd] < UINT8_MAX) >= EP_DRY_WAKES)
		mute_side(l, fd, q, sd);
}

/* One descriptor's readiness: its queued ops run, its watch's readiness
 * goes to l->fired, and its epoll registration follows what is wanted. */
void uaio__ep_handle_fd(uaio_loop *l, int fd, uint32_t events)
{
	/* Other threads may grow the fd table of a thread-safe loop. */
	bool lk = uaio__lock(l);
	struct uaio_fdent *e = uaio__fdent(l, fd, false);

	if (e && e->q) {
		/* (a muted side's events are the watch's) */
		if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) && !(e->q->muted & 1))
			run_queue(l, fd, e->q, 0, events & EPOLLRDHUP);
		if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) && !(e->q->muted & 2))
			run_queue(l, fd, e->q, 1, false);
	}
	uaio__epoll_fire(l, fd, events, 0);
	if (e && e->q && !(want_mask(e) & ~reg_of(e)))
		mark_idle(l, fd, e->q);	/* only less wanted: next round */
	else
		uaio__ep_update_reg(l, fd);
	uaio__unlock(l, lk);
}
