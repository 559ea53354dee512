/* SPDX-License-Identifier: MIT */
/*
 * aio_suspend. As glibc's, a wait is woken by the requests it waits on
 * only: each waiter takes a record, lists its aiocbs there, and sleeps on
 * the record's own futex word, which a completion of one of them sets.
 * So another request's signal that this thread handles ends the wait
 * with EINTR (woken by every completion, the wait took the handler that
 * ran as it woke for a spurious wake, and slept on), and a completion
 * ends it even if a handler has submitted the aiocb anew by the time the
 * waiter looks (it found it in progress again, and slept on).
 *
 * Records never go away (a completion may read one its waiter has just
 * left): a generation in the futex word tells whose list a completion
 * read, and only the generation it read is woken. A wait longer than a
 * record holds, or with every record taken, sleeps on the engine's
 * completion count as before, woken by every completion.
 */
#define _GNU_SOURCE
#include "aio/engine.h"

/* Tells a thread's records in a child of fork (its address is the same
 * there): a handler that interrupted this thread's wait may fork. */
static UAIO_TLS char susp_self;

/* word: generation << 1 | closed. Closed: not waiting, or woken. */
static struct aio_susp *susp_take(const struct aiocb *const list[], int nent,
				  unsigned *gen)
{
	int n = 0;

	for (int i = 0; i < nent; i++)
		if (list[i] && ++n > AIO_SUSP_LIST)
			return NULL;
	for (unsigned i = 0; i < AIO_SUSP_SLOTS; i++) {
		struct aio_susp *s = &E->susp[i];
		const void *none = NULL;
		unsigned hi = atomic_load(&E->susp_hi);

		/* taken and marked as this thread's in one step: a fork in
		 * between would find it neither free nor anyone's */
		if (atomic_load_explicit(&s->owner, memory_order_relaxed) ||
		    !atomic_compare_exchange_strong(&s->owner, &none, &susp_self))
			continue;
		while (hi < i + 1 && !atomic_compare_exchange_weak(&E->susp_hi, &hi, i + 1))
			;
		n = 0;
		for (int k = 0; k < nent; k++)
			if (list[k])
				atomic_store_explicit(&s->cbs[n++], list[k], memory_order_relaxed);
		atomic_store_explicit(&s->n, n, memory_order_relaxed);
		*gen = ((atomic_load(&s->word) >> 1) + 1) << 1;
		atomic_store(&s->word, *gen);		/* open: after the list */
		atomic_fetch_add(&E->nsusp, 1);
		/* against a completion's state store and its look at nsusp:
		 * one of the two sees the other */
		atomic_thread_fence(memory_order_seq_cst);
		return s;
	}
	return NULL;
}

static void susp_leave(struct aio_susp *s, unsigned gen)
{
	atomic_store(&s->word, gen | 1);	/* a late completion's CAS fails */
	atomic_store_explicit(&s->n, 0, memory_order_relaxed);
	atomic_fetch_sub(&E->nsusp, 1);
	atomic_store_explicit(&s->owner, NULL, memory_order_release);
}

/* After cb's status is out (aio__complete): wakes the waits listing it. */
void aio__suspend_wake(const struct aiocb *cb)
{
	unsigned hi;

	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&E->nsusp, memory_order_relaxed))
		return;
	hi = atomic_load(&E->susp_hi);
	for (unsigned i = 0; i < hi; i++) {
		struct aio_susp *s = &E->susp[i];
		unsigned w = atomic_load(&s->word);
		int n;

		if (w & 1)
			continue;
		n = atomic_load_explicit(&s->n, memory_order_relaxed);
		for (int k = 0; k < n && k < AIO_SUSP_LIST; k++) {
			if (atomic_load_explicit(&s->cbs[k], memory_order_relaxed) != cb)
				continue;
			/* only the generation whose list this was */
			if (atomic_compare_exchange_strong(&s->word, &w, w | 1))
				syscall(SYS_futex, &s->word, FUTEX_WAKE_PRIVATE, 1, NULL,
					NULL, 0);
			break;
		}
	}
}

/* This thread's waits on the completion count (the fallback). */
static UAIO_TLS unsigned susp_counted;

/* A child of fork: the waits of the parent's other threads are let go;
 * the forking thread's own stay (a wait its handler interrupted goes on,
 * and ends as it would have). */
void aio__suspend_fork_child(void)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < AIO_SUSP_SLOTS; i++) {
		struct aio_susp *s = &E->susp[i];

		if (atomic_load(&s->owner) == &susp_self) {
			kept++;
			continue;
		}
		atomic_store(&s->word, atomic_load(&s->word) | 1);
		atomic_store(&s->n, 0);
		atomic_store(&s->owner, NULL);
	}
	atomic_store(&E->nsusp, kept);
	atomic_store(&E->waiters, susp_counted);
}

static bool any_live(const struct aiocb *const list[], int nent)
{
	if (!list)
		return false;
	for (int i = 0; i < nent; i++)
		if (list[i])
			return true;
	return false;
}

struct susp_hold {
	struct aio_susp *s;
	unsigned gen;
};

static void waiter_gone(void *arg)
{
	struct susp_hold *h = arg;

	if (h->s) {
		susp_leave(h->s, h->gen);
	} else {
		susp_counted--;
		atomic_fetch_sub(&E->waiters, 1);
	}
}

/* suspend's wait, on its record's word (h->s) or on the completion
 * count; its own function, so that no caller's variable lives across
 * pthread_cleanup_push's setjmp. */
static int suspend_wait(const struct aiocb *const list[], int nent,
			const struct timespec *deadline, struct susp_hold *h)
{
	volatile int r = 0;	/* set between the setjmp and a cancel's unwind */

	pthread_cleanup_push(waiter_gone, h);
	for (;;) {
		atomic_uint *word = h->s ? &h->s->word : &E->seq;
		unsigned snap = h->s ? h->gen : atomic_load(&E->seq);
		int ct;

		if (aio__any_done(list, nent) || (h->s && atomic_load(word) != snap))
			break;
		ct = aio__cancel_async();
		r = aio__futex_wait_abs(word, snap, deadline);
		aio__cancel_restore(ct);
		if (h->s && atomic_load(word) != snap) {
			r = 0;		/* woken, whatever else happened */
			break;
		}
		if (r == -ETIMEDOUT) {
			r = aio__any_done(list, nent) ? 0 : -EAGAIN;
			break;
		}
		if (r == -EINTR)
			break;
	}
	pthread_cleanup_pop(1);
	return r;
}

static int suspend(const struct aiocb *const list[], int nent,
		   const struct timespec *timeout);

/* Deferred cancellation but in the sleep itself: a signal handler run
 * during that sleep inherits the asynchronous type, and its own
 * aio_suspend must not take the engine lock with it. */
UAIO_API int uaio_suspend(const struct aiocb *const list[], int nent,
			  const struct timespec *timeout)
{
	int old = PTHREAD_CANCEL_DEFERRED, was, r;

	pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old);
	r = suspend(list, nent, timeout);
	pthread_setcanceltype(old, &was);
	return r;
}

/*
 * aio_suspend's deadline as glibc makes it: the clock plus the timeout,
 * its nanoseconds carried once. What that leaves in the past (a negative
 * timeout, none, a sum past the largest second, which glibc's addition
 * wraps below zero) has expired: -EAGAIN. Nanoseconds still out of range
 * after the carry ({0, -5e8}, {0, 3e9}) fail glibc's assertion, which
 * aborts the program: -EINVAL here, as pthread_cond_timedwait's.
 */
static int glibc_deadline(const struct timespec *rel, struct timespec *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (__builtin_add_overflow(now.tv_sec, rel->tv_sec, &d->tv_sec))
		return -EAGAIN;
	if (__builtin_add_overflow(now.tv_nsec, rel->tv_nsec, &d->tv_nsec))
		return -EINVAL;
	if (d->tv_nsec >= 1000000000) {
		d->tv_nsec -= 1000000000;
		if (__builtin_add_overflow(d->tv_sec, 1, &d->tv_sec))
			return -EAGAIN;
	}
	if (d->tv_nsec < 0 || d->tv_nsec >= 1000000000)
		return -EINVAL;
	if (d->tv_sec < now.tv_sec ||
	    (d->tv_sec == now.tv_sec && d->tv_nsec <= now.tv_nsec))
		return -EAGAIN;
	return 0;
}

static int suspend(const struct aiocb *const list[], int nent,
		   const struct timespec *timeout)
{
	struct susp_hold h = { 0 };
	struct timespec deadline;
	int r = 0;

	/* As glibc: nothing to wait for returns at once, and a timeout that
	 * is no duration (POSIX has no EINVAL here) has expired already. */
	if (nent < 0)
		return posix_ret(-EINVAL);	/* glibc's check */
	if (nent == 0 || !any_live(list, nent) || aio__any_done(list, nent))
		return 0;
	if (timeout && (r = glibc_deadline(timeout, &deadline)) < 0)
		return posix_ret(r);
	if (aio__own_wait(list, nent, timeout ? &deadline : NULL, &r))
		return posix_ret(r);
	h.s = susp_take(list, nent, &h.gen);
	if (!h.s) {
		susp_counted++;
		atomic_fetch_add(&E->waiters, 1);
	}
	return posix_ret(suspend_wait(list, nent, timeout ? &deadline : NULL, &h));
}

