/* SPDX-License-Identifier: MIT */
/*
 * A loop's life: the process-wide fork generation, the backend's choice,
 * creation and teardown, and what a loop says of itself (backend,
 * features, descriptor). One iteration (the run loop) is in loop.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "core/internal.h"

UAIO_TLS char uaio__self;

struct uaio_process uaio__process;

static void forked_child(void)
{
	atomic_fetch_add(&uaio__process.fork_gen, 1);
}

/* At load, before any layer registers its own (a priority: before the
 * AIO engine's constructor): child handlers run in the order they were
 * registered, and theirs may free a parent's loop. */
__attribute__((constructor(101))) static void process_init(void)
{
	pthread_atfork(NULL, NULL, forked_child);
}

static const struct uaio_backend *pick_backend(const struct uaio_loop_params *p)
{
	unsigned flags = p ? p->flags : 0;
	const char *env = getenv("UAIO_BACKEND");

	if (flags & UAIO_LOOP_FORCE_EPOLL)
		return &uaio__epoll_backend;
	if (flags & UAIO_LOOP_FORCE_URING)
		return &uaio__uring_backend;
	if (env && (!strcmp(env, "epoll") || !strcmp(env, "fallback")))
		return &uaio__epoll_backend;
	return &uaio__uring_backend;
}

UAIO_API uaio_loop *uaio_loop_new(const struct uaio_loop_params *p)
{
	const unsigned known = UAIO_LOOP_FORCE_EPOLL | UAIO_LOOP_FORCE_URING |
			       UAIO_LOOP_SQPOLL | UAIO_LOOP_THREADSAFE;
	uaio_loop *l;
	int ret;

	/* As io_uring_setup: a flag this library does not know is refused,
	 * not ignored, so a caller learns its request was not honoured. */
	if (p && ((p->flags & ~known) ||
		  (p->flags & UAIO_LOOP_FORCE_EPOLL && p->flags & UAIO_LOOP_FORCE_URING))) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->flags = p ? p->flags : 0;
	l->threadsafe = !!(l->flags & UAIO_LOOP_THREADSAFE);
	l->nworkers = p && p->workers ? p->workers : 4;
	l->fork_gen = atomic_load(&uaio__process.fork_gen);
	l->wake_fd = uaio__fd_own(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (l->wake_fd < 0) {
		free(l);
		return NULL;
	}
	pthread_mutex_init(&l->inbox_lock, NULL);
	pthread_mutex_init(&l->lock, NULL);
	pthread_mutex_init(&l->workers.mu, NULL);
	pthread_cond_init(&l->workers.cv, NULL);
	l->now = (uint64_t)uaio__now_ns();

	l->be = pick_backend(p);
	ret = l->be->init(l, p);
	/* No ring here (ENOSYS, EPERM from io_uring_disabled or seccomp, old
	 * kernel): the same interface on epoll, unless the caller insisted. */
	if (ret < 0 && l->be == &uaio__uring_backend &&
	    !(l->flags & UAIO_LOOP_FORCE_URING)) {
		l->be = &uaio__epoll_backend;
		ret = l->be->init(l, p);
	}
	if (ret < 0) {
		uaio__fd_close(l->wake_fd);
		free(l);
		errno = -ret;
		return NULL;
	}
	return l;
}

UAIO_API void uaio_loop_free(uaio_loop *l)
{
	bool child;

	if (!l)
		return;
	child = uaio__foreign(l);
	/* From one of its callbacks: the run that called it still reads the
	 * loop on its way out, so the outermost run frees it as it returns;
	 * meanwhile nothing more of the loop's runs. */
	if (l->running && !child) {
		l->free_asked = true;
		l->stop = true;
		return;
	}
	/* A forked child has none of the parent's threads, and any lock one
	 * of them held stays locked: neither join nor lock. */
	if (!child)
		uaio__workers_stop(l, true);
	l->be->fini(l);
	uaio__inbox_free(l);
	uaio__timers_forget(l);
	uaio__watches_forget(l);
	for (unsigned i = 0; i < l->nfds; i++)
		free(l->fds[i].q);
	free(l->fds);
	free(l->heap);
	/* Pins still held (a fork child's copy of requests it will never
	 * finish): duplicates (the fallback's, io_uring's where slots free
	 * files late) are closed with the loop. */
	if (l->pins_dup)
		for (unsigned i = 0; i < l->npinrefs; i++)
			if (l->pinrefs[i])
				uaio__fd_close((int)i);
	free(l->pinrefs);
	uaio__bufs_free(l);
	free(l->workers.tids);
	free(l->workers.retired);
	uaio__fd_close(l->wake_fd);
	free(l);
}

void uaio__loop_forsake(uaio_loop *l)
{
	if (!l)
		return;
	l->be->forsake(l);
	uaio__fd_close(l->wake_fd);
}

UAIO_API int uaio_loop_backend(const uaio_loop *l)
{
	return l->be->kind;
}

UAIO_API const char *uaio_loop_backend_name(const uaio_loop *l)
{
	return l->be->name;
}

UAIO_API unsigned uaio_loop_features(const uaio_loop *l)
{
	return l->features;
}

UAIO_API int uaio_loop_fd(const uaio_loop *l)
{
	if (uaio__foreign(l))
		return -ECHILD;
	return l->be->fd(l);
}
