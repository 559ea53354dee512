/* SPDX-License-Identifier: MIT */
/*
 * The LAIO engine: one per process, with a thread-safe uaio loop that no
 * thread runs in the background (whoever is in laio_poll drives it), the
 * call records (handles) from a slab, the completion queue, laio_fd's
 * epoll set, fork handling; laio_gethandle, laio_poll, laio_fd,
 * laio_cancel.
 */
#define _GNU_SOURCE
#include "laio/engine.h"

struct laio_engine laio__engine = {
	.init_mu = PTHREAD_MUTEX_INITIALIZER,
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.efd = -1,
	.epfd = -1,
};

UAIO_TLS struct laio_call *laio__last;
UAIO_TLS bool laio__own_context;
static UAIO_TLS bool drove;		/* this thread has run the loop */

static void driver_gone(void *unused)
{
	atomic_fetch_add(&laio__engine.driver_exits, 1);
}

/* ------------------------------------------------------------ engine */

static void engine_fork_prepare(void)
{
	pthread_mutex_lock(&laio__engine.init_mu);
	pthread_mutex_lock(&laio__engine.mu);
}

static void engine_fork_parent(void)
{
	pthread_mutex_unlock(&laio__engine.mu);
	pthread_mutex_unlock(&laio__engine.init_mu);
}

/* The child has none of the parent's background calls. */
static void engine_fork_child(void)
{
	struct laio_engine *e = &laio__engine;
	struct laio_call *r;

	pthread_mutex_init(&e->init_mu, NULL);
	pthread_mutex_init(&e->mu, NULL);
	/* The calls' pins are the loop's: closed with it when it is freed,
	 * left to the calls when it is forsaken. */
	UAIO_SLAB_FOREACH(&e->calls, r) {
		if (r->hold_pin && !e->driving)
			r->hold = 0;
		r->hold_pin = false;
	}
	/* A loop another thread was inside may be mid-update: leak it, but
	 * not its descriptors. */
	if (e->loop && !e->driving)
		uaio_loop_free(e->loop);
	else if (e->loop)
		uaio__loop_forsake(e->loop);
	e->loop = NULL;
	UAIO_SLAB_FOREACH(&e->calls, r)
		laio__call_free_parts(r);
	uaio__slab_destroy(&e->calls);
	e->cq_head = e->cq_tail = NULL;
	e->ncq = e->outstanding = 0;
	e->driving = false;
	e->driver = 0;
	e->waiters = 0;
	if (e->efd >= 0)
		close(e->efd);
	if (e->epfd >= 0)
		close(e->epfd);
	e->efd = e->epfd = -1;
	e->efd_set = false;
	laio__last = NULL;
	atomic_store(&e->ready, false);
}

/* At load, not at the engine's start under init_mu: pthread_atfork waits
 * for a fork under way, and that fork would copy init_mu locked into a
 * child that runs none of our handlers, whose first call then waited for
 * ever. After the loop layer's own (its constructor has a priority):
 * child handlers run in the order they were registered. */
__attribute__((constructor)) static void engine_atfork(void)
{
	(void)uaio__atfork_once(&laio__engine.atfork, engine_fork_prepare, engine_fork_parent,
				engine_fork_child);
}

static int engine_init_locked(void)
{
	struct laio_engine *e = &laio__engine;
	struct uaio_loop_params p = {
		.flags = UAIO_LOOP_THREADSAFE,
		.entries = 1024,
		.workers = 8,
	};
	pthread_condattr_t ca;
	const char *m = getenv("LAIO_BG");

	if (uaio__atfork_once(&e->atfork, engine_fork_prepare, engine_fork_parent,
			      engine_fork_child))
		return -ENOMEM;	/* (the constructor's failed: no memory) */
	e->mech = LAIO_MECH_DEFAULT;
	if (m && !strcmp(m, "op"))
		e->mech = LAIO_MECH_OP;
	else if (m && !strcmp(m, "poll"))
		e->mech = LAIO_MECH_POLL;
	if (!e->key_made && pthread_key_create(&e->driver_key, driver_gone) != 0)
		return -EAGAIN;
	e->key_made = true;
	e->loop = uaio_loop_new(&p);
	if (!e->loop)
		return -errno;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv, &ca);
	pthread_condattr_destroy(&ca);
	atomic_store_explicit(&e->ready, true, memory_order_release);
	return 0;
}

int laio__engine_get(void)
{
	int r = 0;

	if (UAIO_LIKELY(atomic_load_explicit(&laio__engine.ready,
					     memory_order_acquire)))
		return 0;
	pthread_mutex_lock(&laio__engine.init_mu);
	if (!atomic_load(&laio__engine.ready))
		r = engine_init_locked();
	pthread_mutex_unlock(&laio__engine.init_mu);
	return r;
}

int laio__mechanism(void)
{
	return laio__engine_get() < 0 ? -1 : laio__engine.mech;
}

const char *laio__backend_name(void)
{
	return laio__engine_get() < 0 ? "none" : uaio_loop_backend_name(laio__engine.loop);
}

/* --------------------------------------------------------- records */

static struct laio_call *call_alloc_locked(void)
{
	struct uaio__slab *s = &laio__engine.calls;

	if (!s->size)
		uaio__slab_init(s, sizeof(struct laio_call),
				offsetof(struct laio_call, next), SLAB_CALLS);
	return uaio__slab_get(s);
}

/* The call's duplicate of its pipe or socket, under mu (background.c). */
static void drop_hold(struct laio_call *r)
{
	if (r->hold > 0 && r->hold_pin)
		uaio_file_unpin(laio__engine.loop, r->hold);
	else if (r->hold > 0)
		uaio__fd_close(r->hold);
	r->hold = 0;
	r->hold_pin = false;
}

/* The copies a continued call made of the caller's iovecs and msghdr. */
void laio__call_free_parts(struct laio_call *r)
{
	drop_hold(r);
	free(r->iov);
	free(r->msg);
	r->iov = NULL;
	r->msg = NULL;
}

void laio__call_release_locked(struct laio_call *r)
{
	laio__call_free_parts(r);
	r->magic = 0;
	r->phase = PH_FREE;
	r->flags = 0;
	uaio__slab_put(&laio__engine.calls, r);
}

struct laio_call *laio__call_new(long nr, const long *a)
{
	struct laio_call *r;

	pthread_mutex_lock(&laio__engine.mu);
	r = call_alloc_locked();
	pthread_mutex_unlock(&laio__engine.mu);
	if (!r)
		return NULL;
	r->nr = nr;
	memcpy(r->a, a, sizeof(r->a));
	r->ret = 0;
	r->done = 0;
	r->iov = NULL;
	r->msg = NULL;
	r->iovcnt = 0;
	r->hold = 0;
	r->hold_pin = false;
	r->pos0 = -1;
	r->flags = 0;
	r->ftype = 0;
	r->timeo = 0;
	r->retries = 0;
	r->unasked = 0;
	r->no_nowait = false;
	r->submit = NULL;
	r->gen = atomic_load(&laio__engine.driver_exits);
	return r;
}

static void nop_post(void *data)
{
	(void)data;
}

/* Nothing may be left for a driver asleep in the kernel to wait for. */
void laio__outstanding_dec_locked(void)
{
	if (--laio__engine.outstanding == 0 && laio__engine.driving)
		uaio_loop_post(laio__engine.loop, nop_post, NULL);
}

/* Keeps laio_fd()'s eventfd readable exactly while completions wait. */
void laio__efd_sync_locked(void)
{
	struct laio_engine *e = &laio__engine;
	uint64_t v = 1;

	if (e->efd < 0)
		return;
	if (e->ncq && !e->efd_set) {
		if (write(e->efd, &v, sizeof(v)) == sizeof(v))
			e->efd_set = true;
	} else if (!e->ncq && e->efd_set) {
		if (read(e->efd, &v, sizeof(v)) == sizeof(v) || errno == EAGAIN)
			e->efd_set = false;
	}
}

/* The call's final result: inline if its submitter is still waiting for
 * it, else one completion on the queue. */
void laio__call_finish(struct laio_call *r, long res)
{
	struct laio_engine *e = &laio__engine;

	pthread_mutex_lock(&e->mu);
	/* the file as the call leaves it; under mu, which a fork takes
	 * first, so that the child never closes the number again */
	drop_hold(r);
	r->ret = res;
	if (r->phase == PH_TRY) {
		r->phase = PH_INLINE;
	} else {
		r->phase = PH_QUEUED;
		UAIO_FIFO_PUSH(e->cq_head, e->cq_tail, r);
		e->ncq++;
		if (e->waiters)
			pthread_cond_signal(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
}

/* Runs the loop once without waiting if nobody else is running it.
 * Called and returns with mu held. */
void laio__drive_locked(int64_t timeout_ns)
{
	struct laio_engine *e = &laio__engine;
	int cs;

	if (!drove) {	/* its exit is counted (driver_gone) */
		drove = true;
		pthread_setspecific(e->driver_key, &drove);
	}
	e->driving = true;
	e->driver = uaio__thread_token();
	pthread_mutex_unlock(&e->mu);
	/* not cancelled in the loop's wait: the loop and driving would be
	 * left mid-way; the cancel acts at laio_poll's next wait */
	cs = uaio__nocancel_begin();
	uaio_loop_run_once(e->loop, timeout_ns);
	uaio__nocancel_end(cs);
	pthread_mutex_lock(&e->mu);
	e->driving = false;
	if (e->waiters)
		pthread_cond_broadcast(&e->cv);
}

UAIO_API
void *laio_gethandle(void)
{
	return laio__last;
}

static bool call_valid_locked(const struct laio_call *r)
{
	return uaio__slab_owns(&laio__engine.calls, r);
}

static int drain_locked(struct laio_completion *c, int n)
{
	struct laio_engine *e = &laio__engine;
	int got = 0;

	while (got < n && e->cq_head) {
		struct laio_call *r;

		UAIO_FIFO_POP(e->cq_head, e->cq_tail, r);
		e->ncq--;
		c[got].laio_handle = r;
		if (r->ret < 0 && r->ret > -4096) {
			c[got].laio_return_value = -1;
			c[got].laio_errno = (int)-r->ret;
		} else {
			c[got].laio_return_value = r->ret;
			c[got].laio_errno = 0;
		}
		got++;
		laio__outstanding_dec_locked();
		r->magic = 0;
		if (r->flags & CF_CANCEL_OP)
			r->flags |= CF_RELEASE;
		else
			laio__call_release_locked(r);
	}
	return got;
}

/* A thread cancelled in laio_poll's wait (pthread_cancel): mu is held
 * again then, and is let go, its wait uncounted. */
static void waiter_cancelled(void *arg)
{
	struct laio_engine *e = arg;

	e->waiters--;
	if (e->ncq && e->waiters)
		pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

/* Waits for a completion or the driver's end (until deadline when > 0),
 * a cancellation point for pthread_cancel when cs (the caller's state,
 * laio_poll runs with cancellation disabled) allows it: the only one
 * while mu is held, and its handler lets mu go. */
static void wait_locked(struct laio_engine *e, int64_t deadline, int cs)
{
	e->waiters++;
	pthread_cleanup_push(waiter_cancelled, e);
	uaio__nocancel_end(cs);
	if (deadline > 0) {
		struct timespec ts = {
			.tv_sec = deadline / 1000000000,
			.tv_nsec = deadline % 1000000000,
		};
		pthread_cond_timedwait(&e->cv, &e->mu, &ts);
	} else {
		pthread_cond_wait(&e->cv, &e->mu);
	}
	(void)uaio__nocancel_begin();	/* cs again at laio_poll's end */
	pthread_cleanup_pop(0);
	e->waiters--;
}

/* A thread with a context of its own (laio__own_context) does not run the
 * loop: io_uring makes the ops it submits, every thread's, with its
 * credentials, and the epoll backend's loop retries a ready pipe's or
 * socket's call in the thread that runs it. */
static bool may_drive(void)
{
	return !laio__own_context;
}

UAIO_API
int laio_poll(struct laio_completion *c, int n, const struct timespec *timeout)
{
	struct laio_engine *e = &laio__engine;
	int64_t deadline = -1, now;
	int got = 0, cs;

	if (!c || n <= 0 || (timeout && !uaio__ts_valid(timeout))) {
		errno = EINVAL;
		return -1;
	}
	if (!atomic_load_explicit(&e->ready, memory_order_acquire))
		return 0;
	if (timeout && (timeout->tv_sec || timeout->tv_nsec)) {
		now = uaio__now_ns();
		/* Past what the clock can count (about 292 years): no deadline. */
		if (timeout->tv_sec < (INT64_MAX - now) / 1000000000 - 1)
			deadline = now + timeout->tv_sec * 1000000000ll + timeout->tv_nsec;
	} else if (timeout) {
		deadline = 0;
	}
	cs = uaio__nocancel_begin();
	pthread_mutex_lock(&e->mu);
	for (;;) {
		if (e->ncq) {
			got = drain_locked(c, n);
			break;
		}
		if (!e->outstanding)
			break;
		if (deadline == 0) {
			if (e->driving || !may_drive())
				break;
			laio__drive_locked(0);
			got = drain_locked(c, n);
			break;
		}
		now = deadline > 0 ? uaio__now_ns() : 0;
		if (deadline > 0 && now >= deadline)
			break;
		if (!e->driving && may_drive()) {
			laio__drive_locked(deadline > 0 ? deadline - now : -1);
			continue;
		}
		wait_locked(e, deadline, cs);
	}
	laio__efd_sync_locked();
	/* Someone else may be waiting for what we left behind. */
	if (e->ncq && e->waiters)
		pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
	uaio__nocancel_end(cs);
	return got;
}

UAIO_API
int laio_fd(void)
{
	struct laio_engine *e = &laio__engine;
	struct epoll_event ev = { .events = EPOLLIN };
	int r, fd, cs;

	if ((r = laio__engine_get()) < 0) {
		errno = -r;
		return -1;
	}
	cs = uaio__nocancel_begin();
	pthread_mutex_lock(&e->mu);
	if (e->epfd < 0) {
		int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		int epfd = epoll_create1(EPOLL_CLOEXEC);

		if (efd < 0 || epfd < 0 ||
		    epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev) < 0 ||
		    uaio_loop_fd(e->loop) < 0 ||
		    epoll_ctl(epfd, EPOLL_CTL_ADD, uaio_loop_fd(e->loop), &ev) < 0) {
			r = errno;
			if (efd >= 0)
				close(efd);
			if (epfd >= 0)
				close(epfd);
			pthread_mutex_unlock(&e->mu);
			uaio__nocancel_end(cs);
			errno = r;
			return -1;
		}
		e->efd = efd;
		e->epfd = epfd;
		e->efd_set = false;
		laio__efd_sync_locked();
	}
	fd = e->epfd;
	pthread_mutex_unlock(&e->mu);
	uaio__nocancel_end(cs);
	return fd;
}

static void cancel_cb(uaio_op *op, int res, void *data)
{
	struct laio_call *r = data;

	pthread_mutex_lock(&laio__engine.mu);
	r->flags &= ~CF_CANCEL_OP;
	if (r->flags & CF_RELEASE)
		laio__call_release_locked(r);
	pthread_mutex_unlock(&laio__engine.mu);
}

UAIO_API
int laio_cancel(void *handle)
{
	struct laio_engine *e = &laio__engine;
	struct laio_call *r = handle;
	int ret = 0, cs;

	if (!r || !atomic_load_explicit(&e->ready, memory_order_acquire)) {
		errno = EINVAL;
		return -1;
	}
	cs = uaio__nocancel_begin();
	pthread_mutex_lock(&e->mu);
	if (!call_valid_locked(r) || r->magic != LAIO_MAGIC) {
		ret = EINVAL;
	} else if (r->phase == PH_QUEUED) {
		ret = EALREADY;
	} else if (!(r->flags & CF_CANCEL_REQ)) {
		r->flags |= CF_CANCEL_REQ;
		if (!(r->flags & CF_CANCEL_OP) &&
		    uaio_op_cancel(e->loop, &r->cop, &r->op, cancel_cb, r) == 0)
			r->flags |= CF_CANCEL_OP;
	}
	pthread_mutex_unlock(&e->mu);
	uaio__nocancel_end(cs);
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}

