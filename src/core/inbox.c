/* SPDX-License-Identifier: MIT */
/*
 * The cross-thread inbox: functions posted from any thread
 * (uaio_loop_post), worker results on their way back, and the eventfd
 * wake-up that tells the loop to drain them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/internal.h"

struct uaio_post {
	struct uaio_post *next;
	uint64_t seq;		/* uaio_loop.post_seq when made */
	void (*fn)(void *);
	void *data;
};

void uaio__wake(uaio_loop *l)
{
	uint64_t one = 1;

	if (atomic_exchange(&l->wake_pending, 1) == 0) {
		/* not cancelled before the write (a cancellation point): a
		 * wake marked pending and never written would be the last */
		int cs = uaio__nocancel_begin();
		ssize_t r = write(l->wake_fd, &one, sizeof(one));

		uaio__nocancel_end(cs);
		(void)r;
	}
}

/* The next post for a drain that began at post number end, unlinked;
 * NULL when none is that old. Posts stay in the inbox until their turn,
 * so that a run nested in one of them (a post that runs the loop) runs
 * the ones after it first, in order. */
static struct uaio_post *post_next(uaio_loop *l, uint64_t end)
{
	struct uaio_post *pn;

	pthread_mutex_lock(&l->inbox_lock);
	pn = l->post_head;
	if (pn && pn->seq <= end) {
		l->post_head = pn->next;
		if (!l->post_head)
			l->post_tail = NULL;
	} else {
		pn = NULL;
	}
	pthread_mutex_unlock(&l->inbox_lock);
	return pn;
}

static bool posts_waiting(uaio_loop *l)
{
	bool any;

	pthread_mutex_lock(&l->inbox_lock);
	any = l->post_head != NULL;
	pthread_mutex_unlock(&l->inbox_lock);
	return any;
}

struct drain {
	uaio_loop *l;
	struct uaio_post *cur;
};

/* The drain's end, also when a posted function leaves its thread
 * (pthread_exit, a cancel): the posts behind it wait in the inbox, and
 * the wake-up brings the next iteration to them. */
static void drain_end(void *arg)
{
	struct drain *d = arg;

	d->l->draining--;
	if (!d->cur)
		return;
	free(d->cur);
	uaio__wake(d->l);
}

/* Runs posts and moves worker results to the done list. */
int uaio__drain_inbox(uaio_loop *l)
{
	struct uaio_post *pn;
	struct drain d = { l, NULL };
	uaio_op *op, *next;
	uint64_t end;
	int n = 0;

	/* Clear first: a post racing with the drain wakes us again. */
	atomic_store(&l->wake_pending, 0);
	pthread_mutex_lock(&l->inbox_lock);
	end = l->post_seq;	/* later posts wait for the next iteration */
	op = l->wdone_head;
	l->wdone_head = l->wdone_tail = NULL;
	pthread_mutex_unlock(&l->inbox_lock);

	if (op) {
		bool lk = uaio__lock(l);
		for (; op; op = next) {
			next = op->next;
			uaio__worker_op_end(l, op, (long)op->off);
		}
		uaio__unlock(l, lk);
	}
	/* UAIO_DRAIN_DEPTH drains deep at most: a post that runs the loop
	 * runs the posts after it, and so on, but not as deep as a queue of
	 * posts that each run the loop is long (the stack); past it they
	 * wait for the drain above. The wake-up stays, for whoever drains
	 * next. */
	if (UAIO_UNLIKELY(l->draining >= UAIO_DRAIN_DEPTH)) {
		if (posts_waiting(l))
			uaio__wake(l);
		return 0;
	}
	l->draining++;
	pthread_cleanup_push(drain_end, &d);
	while ((pn = post_next(l, end))) {
		d.cur = pn;
		pn->fn(pn->data);
		d.cur = NULL;
		free(pn);
		n++;
		if (UAIO_UNLIKELY(l->stop)) {
			/* stopped by this one: the rest wait for the next
			 * iteration */
			if (posts_waiting(l))
				uaio__wake(l);
			break;
		}
	}
	pthread_cleanup_pop(1);
	return n;
}

UAIO_API int uaio_loop_post(uaio_loop *l, void (*fn)(void *), void *data)
{
	struct uaio_post *pn;

	if (!l || !fn)
		return -EINVAL;
	if (uaio__foreign(l))
		return -ECHILD;
	pn = malloc(sizeof(*pn));
	if (!pn)
		return -ENOMEM;
	pn->fn = fn;
	pn->data = data;
	pn->next = NULL;
	pthread_mutex_lock(&l->inbox_lock);
	pn->seq = ++l->post_seq;
	if (l->post_tail)
		l->post_tail->next = pn;
	else
		l->post_head = pn;
	l->post_tail = pn;
	pthread_mutex_unlock(&l->inbox_lock);
	uaio__wake(l);
	return 0;
}

/* A worker's finished op, for the loop's thread (any thread). */
void uaio__inbox_done(uaio_loop *l, uaio_op *op)
{
	pthread_mutex_lock(&l->inbox_lock);
	UAIO_FIFO_PUSH(l->wdone_head, l->wdone_tail, op);
	pthread_mutex_unlock(&l->inbox_lock);
	uaio__wake(l);
}

/* Posts that never ran, when the loop is freed. */
void uaio__inbox_free(uaio_loop *l)
{
	struct uaio_post *pn;

	while ((pn = l->post_head)) {
		l->post_head = pn->next;
		free(pn);
	}
}
