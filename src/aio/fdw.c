/* SPDX-License-Identifier: MIT */
/*
 * A regular file's requests, which run side by side as far as glibc's
 * one-at-a-time helper would show no difference (struct aio_fdw): writes
 * wait for the earlier requests they share a byte with and for earlier
 * fsyncs, fsyncs and reads for the earlier writes; each end releases
 * what waited for it, in call order. Released requests that fail at once,
 * or that a thread reaping its own ring releases, end or go later, from
 * the outermost drain or the engine (aio__deferred_locked).
 */
#define _GNU_SOURCE
#include "aio/engine.h"

/* ------------------------------------------ the descriptor's record */

struct aio_fdw *aio__fdw_get_locked(int fd, bool create)
{
	struct aio_fdw *w;

	if ((unsigned)fd < E->nfdw && E->fdw[fd])
		return E->fdw[fd];
	if (!create)
		return NULL;
	if (UAIO_GROW(E->fdw, E->nfdw, (size_t)fd + 1) < 0)
		return NULL;
	w = aio__spare_get(&E->fdw_spare, sizeof(*w));
	if (w)
		w->fd = fd;
	E->fdw[fd] = w;
	return w;
}

void aio__fdw_maybe_free_locked(struct aio_fdw *w)
{
	if (w->writes || w->reads || w->barriers || w->syncs || w->held || w->appends)
		return;
	E->fdw[w->fd] = NULL;
	aio__spare_put(&E->fdw_spare, w);
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

/* ------------------------------------------------- release */

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
	struct aio_serial *s = w->appends;

	if (--w->reads == 0 && s) {
		w->appends = NULL;
		aio__serial_reads_done_locked(s);
	}
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
