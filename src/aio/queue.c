/* SPDX-License-Identifier: MIT */
/*
 * What runs when: requests on a stream one at a time in submission order
 * (a FIFO per descriptor, with its socket's or terminal's clock), and the
 * issue and end of every record (a regular file's order: fdw.c).
 */
#define _GNU_SOURCE
#include "aio/engine.h"

/* ---------------------------------------------- serial files */

/* glibc queues a stream's requests per descriptor: a pipe's two ends, a
 * dup'd socket, or eventfds (which share one inode) never wait for one
 * another. The inode is in the key too, so a number closed and reused for
 * another file starts a queue of its own. */
static struct aio_serial **serial_slot(int fd, dev_t dev, ino_t ino)
{
	size_t h = (size_t)((ino * 0x9e3779b97f4a7c15ull ^ dev) + (unsigned)fd * 0x2545f491u) %
		   SERIAL_BUCKETS;
	struct aio_serial **pp = &E->serial[h];

	while (*pp && ((*pp)->fd != fd || (*pp)->dev != dev || (*pp)->ino != ino))
		pp = &(*pp)->hnext;
	return pp;
}

struct aio_serial *aio__serial_get_locked(int fd, const struct stat *st, bool create)
{
	struct aio_serial **pp = serial_slot(fd, st->st_dev, st->st_ino), *s = *pp;

	if (s || !create)
		return s;
	if (!(s = aio__spare_get(&E->serial_spare, sizeof(*s))))
		return NULL;
	s->fd = fd;
	s->dev = st->st_dev;
	s->ino = st->st_ino;
	*pp = s;
	atomic_fetch_add(&E->nserial, 1);
	return s;
}

void aio__serial_maybe_free_locked(struct aio_serial *s)
{
	struct aio_serial **pp;

	if (s->busy || s->head || s->ops || s->after_reads)
		return;
	pp = serial_slot(s->fd, s->dev, s->ino);
	*pp = s->hnext;
	if (s->pinh)
		uaio_file_unpin(E->loop, s->pinh);
	aio__spare_put(&E->serial_spare, s);
	atomic_fetch_sub(&E->nserial, 1);
}

/* Waiting requests go in priority order (serial_prio in submit.c: the
 * higher first), equal priorities in call order, as in glibc's list. */
void aio__serial_queue_locked(struct aio_serial *s, struct aio_req *r)
{
	struct aio_req **pp = &s->head;

	while (*pp && (*pp)->prio >= r->prio)
		pp = &(*pp)->next;
	r->next = *pp;
	*pp = r;
	r->state = RS_QUEUED;
}

/* ------------------------------------------------- issue and end */

/* A blocking request's call on a worker (aio__req_blocking), on the
 * descriptor number as glibc's helper makes it, once the number still
 * names the stream's file (else EBADF, as lone.c does). */
static long blocking_call(void *arg)
{
	struct aio_req *r = arg;
	const struct aio_serial *s = r->owner;
	struct req_span sp = req_span(r);

	if (!aio__same_file(r->fd, s->dev, s->ino))
		return -EBADF;
	return aio__glibc_rw(r->fd, req_cb(r), r->kind, sp.buf, sp.len, sp.off);
}

/* Hands r's (next) op to the loop. */
int aio__req_issue_locked(struct aio_req *r)
{
	struct req_span sp = req_span(r);
	int ret;

	r->state = RS_LOOP;
	if (aio__req_blocking(r)) {
		ret = uaio_op_work(E->loop, &r->op, blocking_call, r, aio__req_cb, req_cb(r));
		if (ret < 0)
			r->state = RS_QUEUED;
		return ret;
	}
	switch (r->kind) {
	case K_READ:
		ret = uaio_op_read(E->loop, &r->op, r->fd, sp.buf, sp.len, sp.off,
				   aio__req_cb, req_cb(r));
		break;
	case K_WRITE:
		ret = uaio_op_write(E->loop, &r->op, r->fd, sp.buf, sp.len, sp.off,
				    aio__req_cb, req_cb(r));
		break;
	default:
		ret = uaio_op_fsync(E->loop, &r->op, r->fd, r->kind == K_DSYNC,
				    aio__req_cb, req_cb(r));
	}
	if (ret < 0)
		r->state = RS_QUEUED;
	return ret;
}

/* The end of r whatever its owner: unpin, free, publish, notify. */
void aio__req_release_locked(struct aio_req *r, long res)
{
	struct aiocb *cb = req_cb(r);
	struct aio_lio *g = priv(cb)->lio;

	aio__pin_put_locked(r);
	if ((r->flags & RF_DIRECT) && --r->u.thr->direct == 0 && r->u.thr->exiting)
		aio__cond_broadcast();
	priv(cb)->req = NULL;
	aio__req_free_locked(r);
	/* The list's last entry: its notification thread is made while the
	 * attributes are surely the caller's (see aio__complete). */
	if (g && g->notify && g->pending == 1 && !g->begun) {
		uaio__notify_begin(&g->sev, &g->held);
		g->begun = true;
	}
	aio__complete(cb, res);
	if (g)
		aio__lio_put_locked(g, true);
}

/* ------------------------------------------------- serial clock */

/*
 * The busy request of a socket with a timeout runs against one clock op,
 * started when it starts, as a blocking call's timeout would be. When the
 * clock runs out, the request's op is cancelled and ends with EAGAIN, or
 * the count moved so far (a write's earlier parts). A clock, or a cancel
 * of one, still in flight when the next request starts delays that one's
 * clock until it is back, so a cancel never meets a newer clock.
 */
static void serial_clock_locked(struct aio_serial *s);

static void clock_done(uaio_op *op, int res, void *data)
{
	struct aio_serial *s = data;

	aio__lock();
	if (op == &s->clock) {
		s->ops &= ~SO_CLOCK;
		if (res == -ETIME && s->timed && s->busy == s->timed &&
		    !(s->ops & SO_STOP_REQ)) {
			s->expired = true;
			if (uaio_op_cancel(E->loop, &s->stop_req, &s->busy->op,
					   clock_done, s) == 0)
				s->ops |= SO_STOP_REQ;
		}
	} else {
		s->ops &= ~(op == &s->stop_clock ? SO_STOP_CLOCK : SO_STOP_REQ);
	}
	serial_clock_locked(s);
	aio__serial_maybe_free_locked(s);
	aio__unlock();
}

static void serial_clock_locked(struct aio_serial *s)
{
	struct aio_req *r = s->busy;

	if (!r || !r->tmo_us || s->timed == r ||
	    (s->ops & (SO_CLOCK | SO_STOP_CLOCK | SO_STOP_REQ)))
		return;
	s->timed = r;
	s->expired = false;
	if (uaio_op_timeout(E->loop, &s->clock, r->tmo_us * 1000, clock_done, s) == 0)
		s->ops |= SO_CLOCK;
}

/* r, timed, ended: its clock is not needed any more. */
static void serial_clock_end_locked(struct aio_serial *s, struct aio_req *r)
{
	if (s->timed != r)
		return;
	s->timed = NULL;
	s->expired = false;
	if ((s->ops & SO_CLOCK) && !(s->ops & SO_STOP_CLOCK) &&
	    uaio_op_cancel(E->loop, &s->stop_clock, &s->clock, clock_done, s) == 0)
		s->ops |= SO_STOP_CLOCK;
}

/* glibc's helper tries pread first and, told ESPIPE, blocks in read or
 * write with the -1 of that try in the aiocb: aio_return of a stream
 * request under way answers -1 there (0 while it waits its turn). Its
 * clock, if its socket has a timeout, starts now. */
void aio__serial_started(struct aio_req *r)
{
	struct aio_serial *s = r->owner;

	if (r->kind <= K_WRITE && !s->reg && !s->pread_ok)
		req_cb(r)->__return_value = -1;
	serial_clock_locked(s);
}

/* Starts the next waiting request of a serial file. */
static void serial_advance_locked(struct aio_serial *s)
{
	while (!s->busy && s->head && !s->after_reads) {
		struct aio_req *r = s->head;
		long res;
		int ret;

		s->head = r->next;
		if (!s->reg && aio__serial_nonblock_try(r, s, &res)) {
			aio__req_release_locked(r, res);
			continue;
		}
		s->busy = r;
		ret = aio__req_issue_locked(r);
		if (ret < 0) {
			s->busy = NULL;
			aio__req_release_locked(r, ret);
		} else {
			aio__serial_started(r);
		}
	}
	aio__serial_maybe_free_locked(s);
}

void aio__serial_reads_done_locked(struct aio_serial *s)
{
	s->after_reads = false;
	serial_advance_locked(s);
}

/*
 * A leader's readv/writev ended with res: each carried request gets its
 * share, in order. A short count ends in the request it stops in (a
 * short transfer, as read/write would report); the requests after it, or
 * all of them after an error, are issued again one by one to get results
 * of their own.
 */
void aio__leader_end_locked(struct aio_req *r, long res)
{
	long left = res > 0 ? res : 0;
	bool rest_alone = false, carried = r->next != NULL;
	struct aio_req *m, *next;

	free(r->u.iov);
	r->u.iov = NULL;
	for (m = r; m; m = next) {
		long n = (long)cb_len(req_cb(m));
		int ret;

		next = m == r ? r->next : m->next;
		m->flags &= ~(RF_LEADER | RF_MEMBER);
		m->next = NULL;
		if (m == r && res < 0 && carried) {
			/* The error may be any one's (a misaligned O_DIRECT
			 * buffer): each is issued alone for a result of its
			 * own, as glibc makes one call per request. */
			rest_alone = true;
			if ((ret = aio__req_issue_locked(m)) < 0)
				aio__req_finish_parallel_locked(m, ret);
		} else if (m == r && res <= 0) {	/* nothing moved */
			aio__req_finish_parallel_locked(m, res);
			rest_alone = true;
		} else if (!rest_alone && left >= n) {
			left -= n;
			aio__req_finish_parallel_locked(m, n);
		} else if (!rest_alone && left > 0) {
			aio__req_finish_parallel_locked(m, left);
			left = 0;
			rest_alone = true;
		} else {			/* it stopped before m */
			rest_alone = true;
			if ((ret = aio__req_issue_locked(m)) < 0)
				aio__req_finish_parallel_locked(m, ret);
		}
	}
}

/* r's op ended with res: continue a stream write, else finish r. */
void aio__req_end_locked(struct aio_req *r, long res)
{
	struct aiocb *cb = req_cb(r);
	struct cbpriv *pv = priv(cb);

	if (r->flags & RF_LEADER) {
		aio__leader_end_locked(r, res);
		return;
	}

	struct aio_serial *s = r->flags & RF_SERIAL ? r->owner : NULL;
	bool expired = s && s->timed == r && s->expired;

	/* A blocking write to a pipe or socket writes everything, unless
	 * its socket's timeout runs out first. */
	if (r->kind == K_WRITE && s && !s->reg && res > 0 &&
	    (size_t)res < cb_len(cb) - pv->done && !expired) {
		pv->done += (uint64_t)res;
		if (aio__req_issue_locked(r) == 0)
			return;
		res = 0;
	}
	/* A file that refused the offset (ESPIPE, O_APPEND's pwrite to
	 * /proc/PID/comm): at its position, as glibc's write after it */
	if (s && (r->flags & RF_AT_OFFSET) && res == -ESPIPE && !pv->done) {
		r->flags &= (uint8_t)~RF_AT_OFFSET;
		s->nopos = true;
		s->reg = false;
		if (aio__req_issue_locked(r) == 0)
			return;
	}
	if (expired && res == -ECANCELED)
		res = r->flags & RF_TTY_TIME ? 0 : -EAGAIN;
	if (pv->done)
		res = res >= 0 ? res + (long)pv->done : (long)pv->done;
	if (s) {
		serial_clock_end_locked(s, r);
		s->busy = NULL;
		aio__req_release_locked(r, res);
		serial_advance_locked(s);
		return;
	}
	aio__req_finish_parallel_locked(r, res);
}

void aio__req_cb(uaio_op *op, int res, void *data)
{
	aio__lock();
	aio__req_end_locked((struct aio_req *)op, res);
	aio__unlock();
}

