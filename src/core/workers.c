/* SPDX-License-Identifier: MIT */
/*
 * The loop's small worker pool: blocking calls that have no kernel async
 * path on the current backend (file ops on epoll, uaio_op_work on both).
 * Threads start on first need, up to loop->nworkers (and one more for
 * each call running that may wait for ever and, tried once without
 * waiting, did not end there). Results go back
 * through the loop's inbox, so callbacks always run on the loop thread.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/internal.h"

/* Performs op synchronously; returns result or -errno. */
long uaio__op_exec(uaio_op *op)
{
	const struct uaio_opdef *d = uaio__opdef(op);

	return d->exec ? d->exec(op) : -EINVAL;
}

/* A blocking call on a stream that may wait for ever (the caller's
 * UAIO_OPF_BLOCKING; the epoll backend's eventfd writes, OX_WORKCALL):
 * while one runs, the pool may start one thread more, as io_uring's
 * unbounded workers, so that such calls never hold up the file ops
 * behind them; up to EXTRA_MAX beyond the pool's size. */
#define EXTRA_MAX	256

static bool may_wait(uaio_op *op)
{
	struct stat st;
	bool known;

	if (op->xflags & OX_WORKCALL)
		return true;
	/* (LAIO's writes at a file's position are bounded) */
	if (!(op->xflags & OX_BLOCKING) || !(uaio__opdef(op)->flags & OPF_RW))
		return false;
	if ((known = fstat(op->fd, &st) == 0) && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)))
		return false;
	if (known && S_ISSOCK(st.st_mode))
		op->xflags |= OX_SOCK;
	return true;
}

static void *worker_main(void *arg);

/* One more thread if the queue has more ops than idle threads and the
 * pool may grow; under w->mu. -EAGAIN when none could start and none
 * runs. (For calls that may wait queued behind such calls too: one may
 * be the way out of another, a pipe's reader behind its writer. The
 * price: a burst of such calls that do wait, and then end at once, starts
 * and joins a thread for many of them; those that need not wait are
 * answered first without counting, uaio__exec_nowait.) */
static int grow(uaio_loop *l, struct uaio_workers *w)
{
	unsigned extra = w->nwaiting < EXTRA_MAX ? w->nwaiting : EXTRA_MAX;

	if (w->nqueued <= w->idle || w->nthreads >= w->max + extra)
		return 0;
	if (w->nthreads == w->captids) {
		pthread_t *t = realloc(w->tids, 2 * w->captids * sizeof(*t));

		if (!t)
			return w->nthreads ? 0 : -ENOMEM;
		w->tids = t;
		w->captids *= 2;
	}
	if (uaio__thread_start_stack(&w->tids[w->nthreads], 64 * 1024, worker_main, l) == 0)
		w->nthreads++;
	else if (!w->nthreads)
		return -EAGAIN;
	return 0;
}

/* After a call that may wait for ever, under w->mu: a thread more than
 * the pool's size and the calls still waiting goes (unlocking w->mu), so
 * that the other ops never run on more threads than the pool's size. It
 * stays joinable (retired): the next submission or uaio__workers_stop
 * joins it, so that no thread of the library's runs once the loop is
 * freed (a dlclose may follow). Not once the pool stops. */
static bool retire(struct uaio_workers *w)
{
	unsigned extra = w->nwaiting < EXTRA_MAX ? w->nwaiting : EXTRA_MAX;

	if (w->stop || w->nthreads <= w->max + extra ||
	    UAIO_GROW(w->retired, w->capretired, (size_t)w->nretired + 1) < 0)
		return false;
	for (unsigned i = 0; i < w->nthreads; i++)
		if (pthread_equal(w->tids[i], pthread_self())) {
			w->tids[i] = w->tids[--w->nthreads];
			break;
		}
	w->retired[w->nretired++] = pthread_self();
	pthread_mutex_unlock(&w->mu);
	return true;
}

/* Joins the retired threads; w->mu held, and let go while joining. Not
 * a cancellation point of the submitting thread's (pthread_join is one):
 * a thread taken off the list would never be joined. */
static void reap(struct uaio_workers *w)
{
	int cs;

	if (!w->nretired)
		return;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
	while (w->nretired) {
		pthread_t t = w->retired[--w->nretired];

		pthread_mutex_unlock(&w->mu);
		pthread_join(t, NULL);
		pthread_mutex_lock(&w->mu);
	}
	pthread_setcancelstate(cs, NULL);
}

static void *worker_main(void *arg)
{
	uaio_loop *l = arg;
	struct uaio_workers *w = &l->workers;
	bool ours, waits;
	size_t moved;
	long res;

	/* Cancelled only inside a system call of the loop's own ops (see
	 * uaio__workers_stop). */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
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
		w->nqueued--;
		op->state = OS_RUNNING;
		waits = op->xflags & OX_MAYWAIT;
		pthread_mutex_unlock(&w->mu);

		/* One that need not wait (its data there, room for all
		 * of it) is answered at once and counts as none: a burst
		 * of them starts no threads (the caller's flag) */
		res = -EAGAIN;
		moved = 0;
		if (waits && !(op->xflags & OX_WORKCALL) &&
		    (res = uaio__exec_nowait(op, &moved)) != -EAGAIN)
			waits = false;
		if (waits) {
			pthread_mutex_lock(&w->mu);
			w->nwaiting++;
			grow(l, w);	/* for the ops queued behind it */
			pthread_mutex_unlock(&w->mu);
		}
		if (res == -EAGAIN) {
			ours = op->opcode != OP_WORK;
			if (ours)
				pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
			res = moved ? uaio__exec_rest(op, moved) : uaio__op_exec(op);
			if (ours)
				pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		}
		op->off = (uint64_t)res;

		if (waits) {
			pthread_mutex_lock(&w->mu);
			w->nwaiting--;
			pthread_mutex_unlock(&w->mu);
		}
		uaio__inbox_done(l, op);
		pthread_mutex_lock(&w->mu);
		if (waits && retire(w))
			return NULL;
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

static int tls_add(struct dl_phdr_info *info, size_t size, void *data)
{
	size_t *sum = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		size_t align = ph->p_align ? ph->p_align : 1;

		if (ph->p_type != PT_TLS)
			continue;
		sum[0] += (ph->p_memsz + align - 1) / align * align + align;
		if (align > sum[1])
			sum[1] = align;
	}
	return 0;
}

/* ld.so's _dl_get_tls_static_info, looked up once at load: dlsym waits
 * for the loader's lock, which a dlopen holds while its constructors run,
 * and a constructor may submit to a loop whose lock the caller holds.
 * Set at load, only read after. */
static void (*tls_static_info)(size_t *, size_t *);

__attribute__((constructor)) static void tls_info_lookup(void)
{
	*(void **)&tls_static_info = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
}

/* The static TLS glibc carves out of every thread's stack, and its
 * alignment: glibc's own count (which the sanitizers read too: the
 * modules' blocks, the thread descriptor, the surplus for dlopen that a
 * tunable may enlarge); without it, the modules' PT_TLS blocks and
 * 64 KiB for the rest. */
static void static_tls(size_t *size, size_t *align)
{
	void (*info)(size_t *, size_t *) = tls_static_info;

	if (info) {
		info(size, align);
	} else {
		size_t tls[2] = { 64 * 1024, 1 };

		dl_iterate_phdr(tls_add, tls);
		*size = tls[0];
		*align = tls[1];
	}
}

int uaio__thread_start_stack(pthread_t *t, size_t want, void *(*fn)(void *), void *arg)
{
	size_t tls, align, page = (size_t)sysconf(_SC_PAGESIZE), unit, size;
	pthread_attr_t a;
	int r = -EINVAL;

	static_tls(&tls, &align);
	/* glibc rounds the size down to the TLS's alignment and places the
	 * block at the top, aligned down from wherever the mapping ends (up
	 * to an alignment less a page lost there): one alignment more, a
	 * guard page, and room for glibc's own frames at the start */
	unit = align > page ? align : page;
	size = (want + (tls + align - 1) / align * align + align + page + 16 * 1024 + unit - 1) /
	       unit * unit;
	/* much TLS, or strictly aligned: never less than the usual 8 MiB
	 * (address space only; AddressSanitizer's own start of a thread
	 * needs more room than glibc's count leaves there) */
	if ((tls > 64 * 1024 || align > page) && size < (8u << 20))
		size = 8u << 20;
	pthread_attr_init(&a);
	if (pthread_attr_setstacksize(&a, size) == 0)
		r = uaio__thread_start(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	/* refused all the same: glibc's default, RLIMIT_STACK's size */
	if (r == -EINVAL)
		r = uaio__thread_start(t, NULL, fn, arg);
	return r;
}

int uaio__workers_submit(uaio_loop *l, uaio_op *op)
{
	struct uaio_workers *w = &l->workers;
	int ret = 0;

	if (may_wait(op))	/* (before the lock: an fstat) */
		op->xflags |= OX_MAYWAIT;
	pthread_mutex_lock(&w->mu);
	reap(w);
	if (!w->tids) {
		w->tids = calloc(l->nworkers, sizeof(*w->tids));
		if (!w->tids) {
			pthread_mutex_unlock(&w->mu);
			return -ENOMEM;
		}
		w->max = w->captids = l->nworkers;
	}
	op->state = OS_WORKQ;
	UAIO_FIFO_PUSH(w->head, w->tail, op);
	/* An idle thread already signalled for an earlier op stays counted
	 * in idle until it wakes: start a thread for each op beyond them, or
	 * two quick ops run one after the other on one thread. */
	w->nqueued++;
	if ((ret = grow(l, w)) < 0) {
		w->head = w->tail = NULL;
		w->nqueued = 0;
		pthread_mutex_unlock(&w->mu);
		return ret;
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
				w->nqueued--;
				ret = 0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&w->mu);
	if (ret == 0)
		uaio__worker_op_end(l, target, -ECANCELED);
	return ret;
}

/* A pool op ends (its result, or its cancel before it ran). One at a
 * file's position lets the next one there go (epoll), after its own
 * result, so that the callbacks keep the order; a close waiting for a
 * file op on its number goes (epoll). */
void uaio__worker_op_end(uaio_loop *l, uaio_op *op, long res)
{
	bool next = op->xflags & (OX_POSBUSY | OX_ORDERED | OX_LATE);

	op->xflags &= ~OX_POSBUSY;
	uaio__complete(l, op, res);
	if (next && l->be->pool_next)
		l->be->pool_next(l, op);
}

int uaio__workers_cancel_fd(uaio_loop *l, int fd)
{
	struct uaio_workers *w = &l->workers;
	uaio_op **pp, *prev = NULL, *hit = NULL, **hit_end = &hit, *next;
	int n = 0;

	pthread_mutex_lock(&w->mu);
	pp = &w->head;
	while (*pp) {
		uaio_op *op = *pp;
		if (uaio__op_on_fd(op, fd) && op->opcode != OP_WORK && op->opcode != OP_CLOSE) {
			*pp = op->next;
			if (w->tail == op)
				w->tail = prev;
			w->nqueued--;
			op->next = NULL;	/* in the order they were queued */
			*hit_end = op;
			hit_end = &op->next;
		} else {
			prev = op;
			pp = &op->next;
		}
	}
	pthread_mutex_unlock(&w->mu);
	for (; hit; hit = next, n++) {
		next = hit->next;
		uaio__worker_op_end(l, hit, -ECANCELED);
	}
	return n;
}

void uaio__workers_stop(uaio_loop *l, bool join)
{
	struct uaio_workers *w = &l->workers;

	pthread_mutex_lock(&w->mu);
	if (!w->tids) {
		pthread_mutex_unlock(&w->mu);
		return;
	}
	w->stop = true;
	w->head = w->tail = NULL;
	w->nqueued = 0;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	/* A thread in one of the loop's own system calls may wait there for
	 * ever (a FIFO with no writer, a connect to a full backlog): the
	 * loop is going, so the call is cancelled there, as io_uring cancels
	 * its own. Idle threads and the caller's work functions run on to
	 * their end (their cancel state is off). */
	for (unsigned i = 0; join && i < w->nthreads; i++)
		pthread_cancel(w->tids[i]);
	for (unsigned i = 0; join && i < w->nthreads; i++)
		pthread_join(w->tids[i], NULL);
	for (unsigned i = 0; join && i < w->nretired; i++)
		pthread_join(w->retired[i], NULL);
	w->nthreads = w->nretired = 0;
}
