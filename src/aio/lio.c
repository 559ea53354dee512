/* SPDX-License-Identifier: MIT */
/* lio_listio and its groups: LIO_WAIT's waiter, LIO_NOWAIT's notification. */
#define _GNU_SOURCE
#include "aio/engine.h"

void aio__lio_put_locked(struct aio_lio *g, bool pending)
{
	bool last = pending && --g->pending == 0;

	if (last && g->notify) {
		if (!g->begun)
			uaio__notify_begin(&g->sev, &g->held);
		if (g->sev.sigev_notify == SIGEV_SIGNAL)
			aio__signals_hold();
		uaio__notify_end(&g->sev, g->held);
	}
	if (last) {		/* LIO_WAIT's waiter sleeps on the group alone */
		atomic_store(&g->done, 1);
		if (g->refs > 1)
			syscall(SYS_futex, &g->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	if (--g->refs == 0)
		free(g);
}

/* ------------------------------------------------------ lio_listio */

/* An entry's place in the order below: its descriptor's group (the list
 * index of the group's first entry), then the group's first, then by
 * aio_reqprio, ties in list order. */
struct lio_key {
	int64_t fd;
	int idx, group, prio;
};

static int by_fd(const void *a, const void *b)
{
	const struct lio_key *x = a, *y = b;

	if (x->fd != y->fd)
		return x->fd < y->fd ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int by_turn(const void *a, const void *b)
{
	const struct lio_key *x = a, *y = b;
	bool xf = x->idx == x->group, yf = y->idx == y->group;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (xf != yf)
		return xf ? -1 : 1;
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* An entry's aio_reqprio as glibc queues it (its syncs with 0), or -1
 * for one that is skipped or refused before it is queued (a bad
 * aio_reqprio): neither takes its descriptor's first turn. */
static int lio_prio(const struct aiocb *cb)
{
	if (!cb || cb->aio_lio_opcode == LIO_NOP)
		return -1;
	if (cb->aio_lio_opcode == LIO_DSYNC_GLIBC || cb->aio_lio_opcode == LIO_SYNC_GLIBC)
		return 0;
	return cb->aio_reqprio >= 0 && cb->aio_reqprio <= UAIO_AIO_PRIO_DELTA_MAX ?
	       cb->aio_reqprio : -1;
}

/*
 * glibc, holding its lock for the whole list, starts the first entry on
 * each descriptor at once and queues the others behind it by priority
 * (rt/aio_misc.c, __aio_enqueue_request: a lower aio_reqprio first, ties
 * in list order). Here entries run inline as they are submitted, so they
 * are submitted in that order: the list's indices in it, or NULL for the
 * list's own order (one priority throughout, the usual case, or no
 * memory).
 */
static int *lio_order(struct aiocb *const list[], int nent)
{
	struct lio_key *k;
	int *ord, prio0 = 0;
	bool mixed = false, any = false;

	for (int i = 0; i < nent; i++) {
		int p = lio_prio(list[i]);

		if (p < 0)
			continue;
		mixed |= any && p != prio0;
		if (!any)
			prio0 = p;
		any = true;
	}
	if (!mixed || !(k = malloc(sizeof(*k) * (size_t)nent)))
		return NULL;
	if (!(ord = malloc(sizeof(*ord) * (size_t)nent))) {
		free(k);
		return NULL;
	}
	for (int i = 0; i < nent; i++) {
		k[i] = (struct lio_key){ .idx = i, .group = i, .prio = lio_prio(list[i]) };
		/* a skipped or refused entry is a group of its own */
		k[i].fd = k[i].prio < 0 ? INT64_MIN + i : list[i]->aio_fildes;
	}
	qsort(k, (size_t)nent, sizeof(*k), by_fd);
	for (int i = 1; i < nent; i++)
		if (k[i].fd == k[i - 1].fd)
			k[i].group = k[i - 1].group;
	qsort(k, (size_t)nent, sizeof(*k), by_turn);
	for (int i = 0; i < nent; i++)
		ord[i] = k[i].idx;
	free(k);
	return ord;
}

/*
 * As glibc: every entry is accepted unless refused at submission (a bad
 * aio_reqprio or sigevent, no room), and entries that fail as they run
 * (a bad descriptor, an unknown opcode) report through their own status
 * and notification. LIO_NOWAIT returns 0 once every entry was accepted,
 * else -1 with the last refusal's errno; its sigevent fires once, after
 * the last entry ends. LIO_WAIT returns -1/EIO when any entry failed,
 * or -1 with the refusal's errno when none was taken.
 */
static int lio_one(int mode, struct aiocb *const list[], int nent,
		   struct sigevent *sig)
{
	struct aio_lio *g = NULL;
	struct aio_xfsz x;
	/* LIO_WAIT's caller waits for the whole list anyway: nothing to
	 * overlap with, so it may finish all of it inline. */
	struct lio_ctx pc = { .fd = -1, .pinned = -1,
			      .inline_left = mode == LIO_WAIT ? SIZE_MAX : INLINE_MAX };
	bool notify = mode == LIO_NOWAIT && sig && aio__sev_notifies(sig);
	int refused = 0, refused_at = -1, want = 0, accepted = 0, r;
	int *ord;

	/* As glibc: no limit on nent but the requests it holds (AIO_MAX,
	 * EAGAIN below), and a negative one is an empty list. The drop-in
	 * calls this directly; ulio_listio checks nent as POSIX asks. */
	if (nent < 0)
		nent = 0;
	if ((mode != LIO_WAIT && mode != LIO_NOWAIT) || (nent && !list))
		return posix_ret(-EINVAL);
	for (int i = 0; i < nent; i++)
		if (list[i] && list[i]->aio_lio_opcode != LIO_NOP)
			want++;
	/* AIO_MAX would be exceeded: nothing is queued. Nor in a handler
	 * that interrupted an AIO call of this thread, whose entries wait
	 * for it to end (nested.c): LIO_WAIT would wait for ever. */
	if (E->nreq + (unsigned long)want > E->max ||
	    (mode == LIO_WAIT && want && aio__nested_must_wait()))
		return posix_ret(-EAGAIN);
	if (mode == LIO_WAIT || notify) {
		g = calloc(1, sizeof(*g));
		if (!g)
			return posix_ret(-EAGAIN);
		g->pending = 1;		/* held while submitting */
		g->refs = 1;
		g->notify = notify;
		if (notify)
			g->sev = *sig;
	}
	ord = lio_order(list, nent);
	aio__xfsz_hold(&x);
	for (int n = 0; n < nent; n++) {
		int i = ord ? ord[n] : n;
		struct aiocb *cb = list[i];
		int op = cb ? cb->aio_lio_opcode : LIO_NOP, rw = op & 127;

		if (op == LIO_NOP)
			continue;
		/* glibc's helper reads or writes by the opcode's low 7 bits
		 * (bit 7 marks its 64-bit calls), syncs by the exact value
		 * with aio_reqprio set to 0, and takes anything else with
		 * aio_reqprio checked, to fail it with EINVAL as it runs. */
		if (rw == LIO_READ || rw == LIO_WRITE) {
			r = aio__submit_rw(cb, rw == LIO_READ ? K_READ : K_WRITE, &pc, g);
		} else if (op == LIO_DSYNC_GLIBC || op == LIO_SYNC_GLIBC) {
			if (aio__settled(cb, NULL) != ST_LIVE)
				cb->aio_reqprio = 0;
			r = aio__submit_sync(cb, op == LIO_DSYNC_GLIBC ? K_DSYNC : K_FSYNC, g);
		} else if ((r = aio__cb_check(cb, true)) == 0) {
			aio__cb_mark_live(cb, g);
			aio__complete(cb, -EINVAL);
		}
		if (r < 0 && i > refused_at) {	/* the list's last refusal */
			refused = r;
			refused_at = i;
		} else if (r >= 0) {
			accepted++;
		}
	}
	free(ord);
	aio__batch_flush(&pc);
	aio__xfsz_release(&x);
	aio__lio_ctx_release(&pc);
	if (!g)
		return posix_ret(refused);

	aio__lock();
	if (mode == LIO_WAIT)
		g->refs++;		/* the waiter's */
	aio__lio_put_locked(g, true);	/* the submission hold */
	aio__unlock();
	/* Nothing taken: glibc waits for nothing, and the refusal's errno
	 * is the call's (EINVAL, not EIO). */
	if (mode == LIO_NOWAIT || !accepted) {
		if (mode == LIO_WAIT) {
			aio__lock();
			aio__lio_put_locked(g, false);
			aio__unlock();
		}
		return posix_ret(refused);
	}

	r = 0;
	while (!atomic_load(&g->done))
		if (aio__futex_wait_abs(&g->done, 0, NULL) == -EINTR) {
			r = -EINTR;
			break;
		}
	/* The entries' aiocbs are not read again: a handler or thread
	 * notified of one may have submitted it anew, or freed it. */
	aio__lock();
	if (r == 0 && (atomic_load_explicit(&g->failed, memory_order_relaxed) || refused))
		r = -EIO;
	aio__lio_put_locked(g, false);
	aio__unlock();
	return posix_ret(r);
}


/* A LIO_WAIT list longer than the records left (AIO_MAX less those in
 * flight) goes in slices that fit, each waited for: glibc, which has no
 * such limit, takes the whole list (70 000 cached reads), and its caller
 * waits for all of it anyway. -1/EIO if an entry failed (or a slice was
 * refused beside others taken); an interrupted wait (EINTR) ends it. */
static int lio_listio_call(int mode, struct aiocb *const list[], int nent,
			   struct sigevent *sig)
{
	unsigned long room;
	int ret = 0, err = 0;
	bool took = false;

	if (mode != LIO_WAIT || nent <= 0 || !list)
		return lio_one(mode, list, nent, sig);
	aio__lock();
	room = E->max > E->nreq ? E->max - E->nreq : 0;
	aio__unlock();
	if (!room || (unsigned long)nent <= room)
		return lio_one(mode, list, nent, sig);
	for (int i = 0; i < nent; i += (int)room) {
		int n = nent - i < (int)room ? nent - i : (int)room;

		if (lio_one(mode, list + i, n, sig) == 0) {
			took = true;
			continue;
		}
		ret = -1;
		if (errno == EINTR)	/* the wait interrupted: it ends here */
			return -1;
		if (errno == EIO)
			took = true;
		else
			err = errno;	/* a slice none of whose entries was taken */
	}
	/* as one list: EIO when any entry was taken and one failed, else
	 * the refusal's errno */
	if (ret)
		errno = took ? EIO : err;
	return ret;
}

/* The drop-in's lio_listio and ulio_listio: no cancellation point, as
 * glibc's (engine.h, uaio__nocancel_begin). */
int aio__lio_listio(int mode, struct aiocb *const list[], int nent,
		    struct sigevent *sig)
{
	int ct = uaio__nocancel_begin(), r = lio_listio_call(mode, list, nent, sig);

	uaio__nocancel_end(ct);
	return r;
}

/* POSIX: EINVAL for nent over AIO_LISTIO_MAX, which uaio_sysconf tells
 * (glibc's sysconf tells no limit, so its lio_listio has none). */
UAIO_API int ulio_listio(int mode, struct aiocb *const list[], int nent,
			 struct sigevent *sig)
{
	if (nent < 0 || (unsigned long)nent > E->max)
		return posix_ret(-EINVAL);
	return aio__lio_listio(mode, list, nent, sig);
}
