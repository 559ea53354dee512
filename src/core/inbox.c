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

/* Puts posts taken but not run back ahead of later ones, as callbacks
 * left for the next iteration are. */
static void posts_back(uaio_loop *l, struct uaio_post *first)
{
	struct uaio_post *last = first;

	while (last->next)
		last = last->next;
	pthread_mutex_lock(&l->inbox_lock);
	last->next = l->post_head;
	if (!l->post_head)
		l->post_tail = last;
	l->post_head = first;
	pthread_mutex_unlock(&l->inbox_lock);
	uaio__wake(l);
}

struct drain {
	uaio_loop *l;
	struct uaio_post *cur;
};

/* A posted function left its thread (pthread_exit, a cancel): the posts
 * behind it are not lost with the drain's list. (None runs: a cancel in
 * posts_back's wake-up, the rest already given back.) */
static void post_left(void *arg)
{
	struct drain *d = arg;
	struct uaio_post *rest;

	if (!d->cur)
		return;
	rest = d->cur->next;
	free(d->cur);
	if (rest)
		posts_back(d->l, rest);
}

/* Runs posts and moves worker results to the done list. */
int uaio__drain_inbox(uaio_loop *l)
{
	struct uaio_post *pn, *pnext;
	struct drain d = { l, NULL };
	uaio_op *op, *next;
	int n = 0;

	/* Clear first: a post racing with the drain wakes us again. */
	atomic_store(&l->wake_pending, 0);
	pthread_mutex_lock(&l->inbox_lock);
	pn = l->post_head;
	op = l->wdone_head;
	l->post_head = l->post_tail = NULL;
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
	pthread_cleanup_push(post_left, &d);
	for (; pn; pn = pnext, n++) {
		pnext = pn->next;
		d.cur = pn;
		pn->fn(pn->data);
		d.cur = NULL;
		free(pn);
		if (UAIO_UNLIKELY(l->stop) && pnext) {
			/* stopped by this one: the rest wait for the next
			 * iteration */
			posts_back(l, pnext);
			n++;
			break;
		}
	}
	pthread_cleanup_pop(0);
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
