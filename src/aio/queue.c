/* SPDX-License-Identifier: MIT */
/*
 * What runs when: requests on a stream one at a time in submission order
 * (a FIFO per descriptor), fsyncs behind the writes queued before them (epoch
 * barriers), and the issue and end of every record.
 */
#define _GNU_SOURCE
#include "aio/engine.h"

/* ---------------------------------------------- serial files, fsync */

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

/* A zeroed record of size bytes: a kept one, or a new one (NULL). */
static void *spare_get(struct aio_spares *sp, size_t size)
{
	if (!sp->n)
		return calloc(1, size);
	return memset(sp->rec[--sp->n], 0, size);
}

static void spare_put(struct aio_spares *sp, void *rec)
{
	if (sp->n < SPARE_RECORDS) {
		sp->rec[sp->n++] = rec;
	} else if (E->own_reaping) {	/* no free(): the engine's */
		*(void **)rec = E->spare_over;
		E->spare_over = rec;
	} else {
		free(rec);
	}
}

struct aio_serial *aio__serial_get_locked(int fd, const struct stat *st, bool create)
{
	struct aio_serial **pp = serial_slot(fd, st->st_dev, st->st_ino), *s = *pp;

	if (s || !create)
		return s;
	if (!(s = spare_get(&E->serial_spare, sizeof(*s))))
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

	if (s->busy || s->head || s->ops)
		return;
	pp = serial_slot(s->fd, s->dev, s->ino);
	*pp = s->hnext;
	if (s->pinh)
		uaio_file_unpin(E->loop, s->pinh);
	spare_put(&E->serial_spare, s);
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

struct aio_fdw *aio__fdw_get_locked(int fd, bool create)
{
	struct aio_fdw *w;

	if ((unsigned)fd < E->nfdw && E->fdw[fd])
		return E->fdw[fd];
	if (!create)
		return NULL;
	if (UAIO_GROW(E->fdw, E->nfdw, (size_t)fd + 1) < 0)
		return NULL;
	w = spare_get(&E->fdw_spare, sizeof(*w));
	if (w)
		w->fd = fd;
	E->fdw[fd] = w;
	return w;
}

void aio__fdw_maybe_free_locked(struct aio_fdw *w)
{
	if (w->writes || w->reads || w->barriers || w->syncs || w->held)
		return;
	E->fdw[w->fd] = NULL;
	spare_put(&E->fdw_spare, w);
}

/* Whether [ao, ao + al) and [bo, bo + bl) share a byte (an empty span
 * shares none). */
static bool spans_meet(uint64_t ao, uint64_t al, uint64_t bo, uint64_t bl)
{
	return al && bl && ao < bo + bl && bo < ao + al;
}

void aio__fdw_live_add_locked(struct aio_fdw *w, struct aio_req *r)
{
	uint64_t off = (uint64_t)req_cb(r)->aio_offset, end = off + cb_len(req_cb(r));

	if (!w->live || off < w->lo)
		w->lo = off;
	if (!w->live || end > w->hi)
		w->hi = end;
	if ((r->lnext = w->live))
		w->live->lprev = &r->lnext;
	r->lprev = &w->live;
	w->live = r;
	atomic_fetch_add_explicit(&E->plive, 1, memory_order_relaxed);
}

static void live_remove_locked(struct aio_fdw *w, struct aio_req *r)
{
	if (r->lnext)
		r->lnext->lprev = r->lprev;
	*r->lprev = r->lnext;
	r->lnext = NULL;
	r->lprev = NULL;
	if (!w->live)
		w->lo = w->hi = 0;
	atomic_fetch_sub_explicit(&E->plive, 1, memory_order_relaxed);
}

/*
 * Whether a write of cb must wait for a read or write on w made before
 * it (glibc would run that first, and the result would show it): one
 * that shares a byte of the file with it; a read into the buffer it
 * writes from (a copy within the file); a read that ends before it,
 * past the file's end (its short count would grow by the write). h: the
 * head of w's held writes, or NULL for a write being made (everything on
 * w is earlier then). Before h: the writes not held (a later one meeting
 * h is held behind it) and the reads of its epoch or before (a read made
 * after a write waits for it, with an epoch of its own).
 */
bool aio__fdw_meets_locked(const struct aio_fdw *w, const struct aiocb *cb,
			   const struct aio_req *h)
{
	uint64_t off = (uint64_t)cb->aio_offset, len = cb_len(cb);
	uint64_t buf = (uint64_t)(uintptr_t)cb->aio_buf;
	int64_t size = -1;
	struct stat st;

	if (!len || (!w->reads && !spans_meet(off, len, w->lo, w->hi - w->lo)))
		return false;
	for (const struct aio_req *x = w->live; x; x = x->lnext) {
		uint64_t xoff = (uint64_t)req_cb(x)->aio_offset, xlen = cb_len(req_cb(x));

		if (x == h || (h && ((x->flags & RF_HELD) ||
				     (x->kind == K_READ && x->epoch > h->epoch))))
			continue;
		if (spans_meet(xoff, xlen, off, len))
			return true;
		if (x->kind != K_READ)
			continue;
		if (spans_meet((uint64_t)(uintptr_t)req_cb(x)->aio_buf, xlen, buf, len))
			return true;
		if (xlen && xoff + xlen <= off) {
			if (size < 0)
				size = fstat(w->fd, &st) == 0 ? st.st_size : 0;
			if ((uint64_t)size < xoff + xlen)
				return true;
		}
	}
	return false;
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
	while (!s->busy && s->head) {
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

/*
 * A request whose issue failed at once ends in the outermost drain, not
 * where it failed: its end may release the next, which may fail too (a
 * chain of writes to the same bytes with a bad buffer), and ending each
 * inside the last would take a stack frame per request.
 */
static void fail_later_locked(struct aio_req *r, int ret)
{
	r->remaining = (uint32_t)-ret;
	r->next = NULL;
	*(E->failq ? &E->failq_tail->next : &E->failq) = r;
	E->failq_tail = r;
}

static void drain_failed_locked(void)
{
	struct aio_req *r;

	if (E->draining)
		return;
	E->draining = true;
	while ((r = E->failq)) {
		if (!(E->failq = r->next))
			E->failq_tail = NULL;
		r->next = NULL;
		aio__req_finish_parallel_locked(r, -(long)r->remaining);
	}
	E->draining = false;
}

static void issue_or_fail_locked(struct aio_req *r)
{
	int ret;

	if ((ret = aio__req_issue_locked(r)) < 0)
		fail_later_locked(r, ret);
}

/* A request that waited for another (held, or a barrier) goes. Where a
 * thread reaps its own ring, maybe in a signal handler, the engine
 * issues it: an issue may allocate, and its failure notify. Until then
 * it counts as begun (aio_cancel: AIO_NOTCANCELED), as one already
 * issued would. */
static void issue_released_locked(struct aio_req *r)
{
	if (E->own_reaping) {
		r->state = RS_LOOP;
		r->next = NULL;
		*(E->deferq ? &E->deferq_tail->next : &E->deferq) = r;
		E->deferq_tail = r;
		return;
	}
	issue_or_fail_locked(r);
}

void aio__deferred_locked(void)
{
	struct aio_req *r;
	void *rec;

	while ((rec = E->spare_over)) {
		E->spare_over = *(void **)rec;
		free(rec);
	}
	while ((r = E->deferq)) {
		if (!(E->deferq = r->next))
			E->deferq_tail = NULL;
		r->next = NULL;
		issue_or_fail_locked(r);
	}
	drain_failed_locked();
}

/*
 * The writes at the head of w->held that wait for nothing more (no
 * earlier fsync left, no earlier request they meet) go, in call order.
 * w is not touched after they are issued: it lives while they count in
 * w->writes, and while a failed one waiting in E->failq counts.
 */
static void held_release_locked(struct aio_fdw *w)
{
	struct aio_req *h, *go = NULL, **tail = &go;

	while ((h = w->held) && h->remaining == 0 && !w->cancelling &&
	       !aio__fdw_meets_locked(w, req_cb(h), h)) {
		w->held = h->next;
		h->next = NULL;
		h->flags &= ~RF_HELD;
		*tail = h;
		tail = &h->next;
	}
	if (!w->held)
		w->held_tail = NULL;
	if (!go)
		aio__fdw_maybe_free_locked(w);
	while (go) {
		h = go;
		go = h->next;
		h->next = NULL;
		issue_released_locked(h);
	}
	drain_failed_locked();
}

/* A write on w ended: release the fsyncs and reads that waited for it,
 * and the writes held behind it. */
static void fdw_write_done_locked(struct aio_fdw *w, struct aio_req *wr)
{
	struct aio_req **pp = &w->barriers;

	w->writes--;
	atomic_fetch_sub_explicit(&E->pwrites, 1, memory_order_relaxed);
	while (*pp) {
		struct aio_req *b = *pp;

		if (b->epoch > wr->epoch && --b->remaining == 0 && !w->cancelling) {
			*pp = b->next;
			b->next = NULL;
			issue_released_locked(b);
			continue;
		}
		pp = &b->next;
	}
	held_release_locked(w);
}

/* A read on w ended: the writes held behind it may go. */
static void fdw_read_done_locked(struct aio_fdw *w)
{
	w->reads--;
	held_release_locked(w);
}

/* An fsync on w ended: the writes held behind it go, in call order, once
 * no earlier fsync is left. */
static void fdw_sync_done_locked(struct aio_fdw *w, struct aio_req *s)
{
	w->syncs--;
	atomic_fetch_sub_explicit(&E->psyncs, 1, memory_order_relaxed);
	for (struct aio_req *h = w->held; h; h = h->next)
		if (h->epoch >= s->epoch && h->remaining)
			h->remaining--;
	held_release_locked(w);
}

void aio__req_finish_parallel_locked(struct aio_req *r, long res)
{
	struct aio_fdw *w = r->owner;

	if (w && r->lprev)
		live_remove_locked(w, r);
	if (w && r->kind == K_WRITE)
		fdw_write_done_locked(w, r);
	else if (w && r->kind == K_READ)
		fdw_read_done_locked(w);
	else if (w)
		fdw_sync_done_locked(w, r);
	aio__req_release_locked(r, res);
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

