/* SPDX-License-Identifier: MIT */
/*
 * The loop's small worker pool: blocking calls that have no kernel async
 * path on the current backend (file ops on epoll, uaio_op_work on both).
 * Threads start on first need, up to loop->nworkers. Results go back
 * through the loop's inbox, so callbacks always run on the loop thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/internal.h"

static long sysret(long r)
{
	return r < 0 ? -errno : r;
}

/* Performs op synchronously; returns result or -errno. */
long uaio__op_exec(uaio_op *op)
{
	void *a = (void *)(uintptr_t)op->addr;
	void *a2 = (void *)(uintptr_t)op->addr2;
	off_t off = (off_t)op->off;

	switch (op->opcode) {
	case OP_NOP:
		return 0;
	case OP_READ: {
		struct iovec iov = { a, op->len };
		return sysret(preadv2(op->fd, &iov, 1, off, 0));
	}
	case OP_WRITE: {
		struct iovec iov = { a, op->len };
		return sysret(pwritev2(op->fd, &iov, 1, off, 0));
	}
	case OP_READV:
		return sysret(preadv2(op->fd, a, (int)op->len, off, 0));
	case OP_WRITEV:
		return sysret(pwritev2(op->fd, a, (int)op->len, off, 0));
	case OP_RECV:
		return sysret(recv(op->fd, a, op->len, (int)op->rw_flags));
	case OP_SEND:
		return sysret(send(op->fd, a, op->len, (int)op->rw_flags | MSG_NOSIGNAL));
	case OP_RECVMSG:
		return sysret(recvmsg(op->fd, a, (int)op->rw_flags));
	case OP_SENDMSG:
		return sysret(sendmsg(op->fd, a, (int)op->rw_flags | MSG_NOSIGNAL));
	case OP_CONNECT:
		return sysret(connect(op->fd, a, op->len));
	case OP_OPENAT:
		return sysret(openat(op->fd, a, (int)op->rw_flags, (mode_t)op->len));
	case OP_OPENAT2:
		return sysret(syscall(SYS_openat2, op->fd, a, a2, 24));
	case OP_STATX:
		return sysret(statx(op->fd, a, (int)op->rw_flags, op->len, a2));
	case OP_FSYNC:
		return sysret(op->rw_flags ? fdatasync(op->fd) : fsync(op->fd));
	case OP_FALLOCATE:
		return sysret(fallocate(op->fd, (int)op->len, off, (off_t)op->addr));
	case OP_SPLICE: {
		loff_t oin = (loff_t)op->off, oout = (loff_t)op->addr;
		return sysret(splice(op->fd, (int64_t)op->off == -1 ? NULL : &oin,
				     (int)op->addr2, (int64_t)op->addr == -1 ? NULL : &oout,
				     op->len, op->rw_flags));
	}
	case OP_TEE:
		return sysret(tee(op->fd, (int)op->addr2, op->len, op->rw_flags));
	case OP_UNLINKAT:
		return sysret(unlinkat(op->fd, a, (int)op->rw_flags));
	case OP_RENAMEAT:
		return sysret(syscall(SYS_renameat2, op->fd, a, (int)op->len, a2,
				      op->rw_flags));
	case OP_MKDIRAT:
		return sysret(mkdirat(op->fd, a, (mode_t)op->len));
	case OP_SYMLINKAT:
		return sysret(symlinkat(a, op->fd, a2));
	case OP_LINKAT:
		return sysret(linkat(op->fd, a, (int)op->len, a2, (int)op->rw_flags));
	case OP_FADVISE: {
		int r = posix_fadvise(op->fd, off, (off_t)op->addr, (int)op->rw_flags);
		return -r;
	}
	case OP_MADVISE:
		return sysret(madvise(a, (size_t)op->addr2, (int)op->rw_flags));
	case OP_SHUTDOWN:
		return sysret(shutdown(op->fd, (int)op->len));
	case OP_CLOSE:
		return sysret(close(op->fd));
	case OP_WORK:
		return ((long (*)(void *))a)(a2);
	}
	return -EINVAL;
}

static void *worker_main(void *arg)
{
	uaio_loop *l = arg;
	struct uaio_workers *w = &l->workers;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		uaio_op *op;

		while (!w->head && !w->stop) {
			w->idle++;
			pthread_cond_wait(&w->cv, &w->mu);
			w->idle--;
		}
		if (w->stop)
			break;
		op = w->head;
		w->head = op->next;
		if (!w->head)
			w->tail = NULL;
		op->state = OS_RUNNING;
		pthread_mutex_unlock(&w->mu);

		op->off = (uint64_t)uaio__op_exec(op);

		pthread_mutex_lock(&l->inbox_lock);
		op->next = NULL;
		if (l->wdone_tail)
			l->wdone_tail->next = op;
		else
			l->wdone_head = op;
		l->wdone_tail = op;
		pthread_mutex_unlock(&l->inbox_lock);
		uaio__wake(l);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

int uaio__thread_start(pthread_t *t, const pthread_attr_t *attr,
		       void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int r;

	/* Signals are the application's: our threads never take them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -r;
}

int uaio__workers_submit(uaio_loop *l, uaio_op *op)
{
	struct uaio_workers *w = &l->workers;
	int ret = 0;

	pthread_mutex_lock(&w->mu);
	if (!w->tids) {
		w->tids = calloc(l->nworkers, sizeof(*w->tids));
		if (!w->tids) {
			pthread_mutex_unlock(&w->mu);
			return -ENOMEM;
		}
		w->max = l->nworkers;
	}
	op->state = OS_WORKQ;
	op->next = NULL;
	if (w->tail)
		w->tail->next = op;
	else
		w->head = op;
	w->tail = op;
	if (!w->idle && w->nthreads < w->max) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		if (uaio__thread_start(&w->tids[w->nthreads], &attr, worker_main, l) == 0)
			w->nthreads++;
		else if (!w->nthreads)
			ret = -EAGAIN;
		pthread_attr_destroy(&attr);
		if (ret) {
			w->head = w->tail = NULL;
			pthread_mutex_unlock(&w->mu);
			return ret;
		}
	}
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

/* 0: removed from the queue and completed -ECANCELED; -EALREADY: a worker
 * runs it; -ENOENT: not here. */
int uaio__workers_cancel(uaio_loop *l, uaio_op *target)
{
	struct uaio_workers *w = &l->workers;
	uaio_op **pp, *prev = NULL;
	int ret = -ENOENT;

	pthread_mutex_lock(&w->mu);
	if (target->state == OS_RUNNING) {
		ret = -EALREADY;
	} else if (target->state == OS_WORKQ) {
		for (pp = &w->head; *pp; prev = *pp, pp = &(*pp)->next) {
			if (*pp == target) {
				*pp = target->next;
				if (w->tail == target)
					w->tail = prev;
				ret = 0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&w->mu);
	if (ret == 0)
		uaio__complete(l, target, -ECANCELED);
	return ret;
}

int uaio__workers_cancel_fd(uaio_loop *l, int fd)
{
	struct uaio_workers *w = &l->workers;
	uaio_op **pp, *prev = NULL, *hit = NULL, *next;
	int n = 0;

	pthread_mutex_lock(&w->mu);
	pp = &w->head;
	while (*pp) {
		uaio_op *op = *pp;
		if (op->fd == fd && op->opcode != OP_WORK && op->opcode != OP_CLOSE) {
			*pp = op->next;
			if (w->tail == op)
				w->tail = prev;
			op->next = hit;
			hit = op;
		} else {
			prev = op;
			pp = &op->next;
		}
	}
	pthread_mutex_unlock(&w->mu);
	for (; hit; hit = next, n++) {
		next = hit->next;
		uaio__complete(l, hit, -ECANCELED);
	}
	return n;
}

void uaio__workers_stop(uaio_loop *l, bool join)
{
	struct uaio_workers *w = &l->workers;

	if (!w->tids)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	w->head = w->tail = NULL;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; join && i < w->nthreads; i++)
		pthread_join(w->tids[i], NULL);
	w->nthreads = 0;
}
