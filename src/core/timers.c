/* SPDX-License-Identifier: MIT */
/*
 * Timers: a binary min-heap of (deadline, sequence) in one array that grows
 * by doubling; equal deadlines fire in start order. The loop runs them
 * (run_timers in loop.c); the epoll backend keeps its timeout ops here too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static bool heap_less(const struct uaio_heap_ent *a, const struct uaio_heap_ent *b)
{
	return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static void heap_set(uaio_loop *l, uint32_t i, struct uaio_heap_ent e)
{
	l->heap[i] = e;
	if (e.p & 1)
		((uaio_op *)(e.p & ~(uintptr_t)1))->len = i;
	else
		((uaio_timer *)e.p)->heap_index = i;
}

static void heap_up(uaio_loop *l, uint32_t i)
{
	struct uaio_heap_ent e = l->heap[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!heap_less(&e, &l->heap[parent]))
			break;
		heap_set(l, i, l->heap[parent]);
		i = parent;
	}
	heap_set(l, i, e);
}

static void heap_down(uaio_loop *l, uint32_t i)
{
	struct uaio_heap_ent e = l->heap[i];

	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= l->nheap)
			break;
		if (c + 1 < l->nheap && heap_less(&l->heap[c + 1], &l->heap[c]))
			c++;
		if (!heap_less(&l->heap[c], &e))
			break;
		heap_set(l, i, l->heap[c]);
		i = c;
	}
	heap_set(l, i, e);
}

int uaio__heap_push(uaio_loop *l, uint64_t when, uintptr_t p)
{
	if (UAIO_GROW(l->heap, l->capheap, (size_t)l->nheap + 1) < 0)
		return -ENOMEM;
	l->heap[l->nheap] = (struct uaio_heap_ent){ when, l->heap_seq++, p };
	heap_up(l, l->nheap++);
	return 0;
}

void uaio__heap_remove(uaio_loop *l, uint32_t idx)
{
	uintptr_t p = l->heap[idx].p;

	if (p & 1)
		((uaio_op *)(p & ~(uintptr_t)1))->len = UINT32_MAX;
	else
		((uaio_timer *)p)->heap_index = UINT32_MAX;
	if (--l->nheap == idx)
		return;
	heap_set(l, idx, l->heap[l->nheap]);
	if (idx > 0 && heap_less(&l->heap[idx], &l->heap[(idx - 1) / 2]))
		heap_up(l, idx);
	else
		heap_down(l, idx);
}

UAIO_API void uaio_timer_init(uaio_timer *t, uaio_timer_cb cb, void *data)
{
	memset(t, 0, sizeof(*t));
	t->cb = cb;
	t->data = data;
	t->heap_index = UINT32_MAX;
}

/* Timers are the owner's, but on a thread-safe epoll loop other threads'
 * timeout ops share the heap: it changes under the lock. */
/* Whether pending timer t is in l's heap (one of another loop's must not
 * be removed from this one: that took out whichever timer sat at its
 * index). Under l's lock. */
static bool timer_of(const uaio_loop *l, const uaio_timer *t)
{
	return t->heap_index < l->nheap && l->heap[t->heap_index].p == (uintptr_t)t;
}

UAIO_API int uaio_timer_start(uaio_loop *l, uaio_timer *t, uint64_t timeout_ns,
			      uint64_t period_ns)
{
	bool lk;
	int r;

	if (!l || !t || !t->cb)
		return -EINVAL;
	if (uaio__foreign(l))	/* and its lock may be held by a parent's thread */
		return -ECHILD;
	lk = uaio__lock(l);
	if (t->heap_index != UINT32_MAX) {
		if (!timer_of(l, t)) {
			uaio__unlock(l, lk);
			return -EBUSY;
		}
		uaio__heap_remove(l, t->heap_index);
	}
	t->when = uaio__deadline((uint64_t)uaio__now_ns(), timeout_ns);
	t->period = period_ns;
	r = uaio__heap_push(l, t->when, (uintptr_t)t);
	uaio__unlock(l, lk);
	return r;
}

UAIO_API int uaio_timer_stop(uaio_loop *l, uaio_timer *t)
{
	bool lk;
	int r;

	if (!l || !t)
		return -EINVAL;
	if (uaio__foreign(l))
		return -ECHILD;
	lk = uaio__lock(l);
	r = uaio__timer_unlink(l, t);
	uaio__unlock(l, lk);
	return r;
}

/* uaio_timer_stop without its checks: a forked child's loop frees its
 * own timers too. */
int uaio__timer_unlink(uaio_loop *l, uaio_timer *t)
{
	if (t->heap_index == UINT32_MAX || !timer_of(l, t))
		return -ENOENT;
	uaio__heap_remove(l, t->heap_index);
	return 0;
}

UAIO_API int uaio_timer_pending(const uaio_timer *t)
{
	return t->heap_index != UINT32_MAX;
}

/* At uaio_loop_free: its timers end unseen (loop.h), idle again, so that
 * another loop takes them (they read as pending there, and were refused). */
void uaio__timers_forget(uaio_loop *l)
{
	for (unsigned i = 0; i < l->nheap; i++)
		if (!(l->heap[i].p & 1))
			((uaio_timer *)l->heap[i].p)->heap_index = UINT32_MAX;
}
