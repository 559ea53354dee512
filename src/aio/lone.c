/* SPDX-License-Identifier: MIT */
/*
 * Requests on threads of their own: the engine's way out when it cannot
 * have the descriptors it needs, as glibc's helper threads need none.
 */
#define _GNU_SOURCE
#include "aio/engine.h"

#include <pthread.h>
#include <unistd.h>

/*
 * The engine needs descriptors (a ring, eventfds); glibc's helper threads
 * do not. With none to be had (EMFILE, ENFILE), a request (or a list
 * entry) runs as glibc runs it: on a thread of its own, in blocking
 * calls (pread, read on ESPIPE). Requests on one stream may then finish
 * out of submission order.
 */
struct aio_lone {
	struct aio_lone *next;
	struct aiocb *cb;
	int kind, fd;
	struct aio_lio *g;
};

static void lone_unlink_locked(struct aio_lone *l)
{
	struct aio_lone **pp = &E->lone;

	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
}

/* A fork's child: the threads are the parent's, their records go. */
void aio__lone_forget(void)
{
	while (E->lone) {
		struct aio_lone *l = E->lone;

		E->lone = l->next;
		free(l);
	}
}

/* Whether a request on fd runs on a thread of its own. */
bool aio__lone_running_locked(int fd)
{
	for (struct aio_lone *l = E->lone; l; l = l->next)
		if (l->fd == fd)
			return true;
	return false;
}

static void *lone_main(void *arg)
{
	struct aio_lone *l = arg;
	struct aiocb *cb = l->cb;
	uint64_t done = priv(cb)->done;
	char *buf = (char *)cb->aio_buf + done;
	size_t len = cb_len(cb) - done;
	off_t off = cb->aio_offset + (off_t)done;
	long r;

	if (l->g) {
		/* The list's last entry: its thread is made first (see
		 * aio__req_release_locked). */
		aio__lock();
		if (l->g->notify && l->g->pending == 1 && !l->g->begun) {
			uaio__notify_begin(&l->g->sev, &l->g->held);
			l->g->begun = true;
		}
		aio__unlock();
	}
	switch (l->kind) {
	case K_READ:
		r = pread(cb->aio_fildes, buf, len, off);
		if (r < 0 && errno == ESPIPE) {
			cb->__return_value = -1;	/* as glibc's helper: see aio__serial_started */
			r = read(cb->aio_fildes, buf, len);
		}
		break;
	case K_WRITE:
		r = pwrite(cb->aio_fildes, buf, len, off);
		if (r < 0 && errno == ESPIPE) {
			cb->__return_value = -1;
			r = write(cb->aio_fildes, buf, len);
		}
		break;
	default:
		r = l->kind == K_DSYNC ? fdatasync(cb->aio_fildes) : fsync(cb->aio_fildes);
	}
	aio__complete(cb, r < 0 ? -errno : r + (long)done);
	/* Counted as running until now: a cancel just after the status is
	 * out says AIO_NOTCANCELED, never AIO_ALLDONE before it is. */
	aio__lock();
	lone_unlink_locked(l);
	if (l->g)
		aio__lio_put_locked(l->g, true);
	aio__unlock();
	free(l);
	return NULL;
}

/* cb on a thread of its own, if err says the engine found no descriptor:
 * 0, or err when no thread can be made either. */
int aio__lone_thread(struct aiocb *cb, int kind, struct aio_lio *g, int err)
{
	struct aio_lone *l;
	pthread_attr_t a;
	pthread_t t;
	int r;

	if ((err != -EMFILE && err != -ENFILE) || !(l = malloc(sizeof(*l))))
		return err;
	l->cb = cb;
	l->kind = kind;
	l->fd = cb->aio_fildes;
	l->g = g;
	aio__lock();
	l->next = E->lone;
	E->lone = l;
	if (g) {
		g->pending++;
		g->refs++;
	}
	aio__unlock();
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	r = uaio__thread_start(&t, &a, lone_main, l);
	pthread_attr_destroy(&a);
	if (r < 0) {
		aio__lock();
		lone_unlink_locked(l);
		if (g) {
			g->pending--;
			g->refs--;
		}
		aio__unlock();
		free(l);
		return err;
	}
	return 0;
}
