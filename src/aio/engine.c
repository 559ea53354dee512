/* SPDX-License-Identifier: MIT */
/*
 * The engine object: its records, descriptor hints, pinned files, the
 * engine thread that drives the loop, fork handling, and the tuning calls
 * (aio_init, sysconf). Its lock, and the signals held on the caller's
 * thread: lock.c. See docs/design.md, POSIX AIO.
 */
#define _GNU_SOURCE
#include "aio/engine.h"


struct aio_engine aio__engine = {
	.max = UAIO_AIO_MAX_DEFAULT,
	.workers = 8,
	.idle_s = 1,		/* glibc's default aio_idle_time */
	.own_evfd = -1,
};

/* ------------------------------------------------------ hints */

struct aio_hint *aio__hint_get(int fd)
{
	struct aio_hint *page, *fresh;
	unsigned pg = (unsigned)fd / HINT_PAGE;

	if (fd < 0 || pg >= HINT_PAGES)
		return NULL;
	page = atomic_load_explicit(&E->hints[pg], memory_order_acquire);
	if (!page) {
		if (!(fresh = calloc(HINT_PAGE, sizeof(*fresh))))
			return NULL;
		if (atomic_compare_exchange_strong(&E->hints[pg], &page, fresh))
			page = fresh;
		else
			free(fresh);
	}
	return &page[(unsigned)fd % HINT_PAGE];
}

/* fd's status flags (F_GETFL), from the hint while it is fresh unless
 * fresh is asked for. */
int aio__hint_flags(int fd, struct aio_hint *h, bool fresh)
{
	int fl;

	if (h && !fresh) {
		unsigned left = atomic_load_explicit(&h->left, memory_order_relaxed);

		fl = atomic_load_explicit(&h->fl, memory_order_relaxed);
		if (fl && left) {
			atomic_store_explicit(&h->left, (uint16_t)(left - 1),
					      memory_order_relaxed);
			return fl - 1;
		}
	}
	fl = fcntl(fd, F_GETFL);
	if (h) {
		int now = fl < 0 ? 0 : fl + 1;
		unsigned left = atomic_load_explicit(&h->left, memory_order_relaxed);

		/* What was learned of the file (refused tries) is learned
		 * anew when its flags change, and after HINT_USES uses: a
		 * fresh read (each write's) counts as a use. */
		if (atomic_load_explicit(&h->fl, memory_order_relaxed) != now || !left) {
			atomic_store_explicit(&h->fl, now, memory_order_relaxed);
			atomic_store_explicit(&h->left, HINT_USES, memory_order_relaxed);
			atomic_store_explicit(&h->refused[0], 0, memory_order_relaxed);
			atomic_store_explicit(&h->refused[1], 0, memory_order_relaxed);
		} else {
			atomic_store_explicit(&h->left, (uint16_t)(left - 1),
					      memory_order_relaxed);
		}
	}
	return fl;
}

/* Whether an inline try on fd is worth making: the kernel has not kept
 * refusing it. */
bool aio__hint_try(struct aio_hint *h, int kind)
{
	return !h || atomic_load_explicit(&h->refused[kind], memory_order_relaxed) <
		     HINT_REFUSALS;
}

void aio__hint_learn(struct aio_hint *h, int kind, long res)
{
	unsigned n;

	if (!h)
		return;
	if (res == -EBADF) {
		atomic_store_explicit(&h->fl, 0, memory_order_relaxed);
		return;
	}
	n = atomic_load_explicit(&h->refused[kind], memory_order_relaxed);
	if (res == -EAGAIN || res == -EOPNOTSUPP)
		n += n < 255;
	else
		n = 0;
	atomic_store_explicit(&h->refused[kind], (uint8_t)n, memory_order_relaxed);
}

/* ------------------------------------------------------ records */

/* A zeroed record of size bytes (a stream's, a file's): a kept one, or a
 * new one (NULL). */
void *aio__spare_get(struct aio_spares *sp, size_t size)
{
	if (!sp->n)
		return calloc(1, size);
	return memset(sp->rec[--sp->n], 0, size);
}

void aio__spare_put(struct aio_spares *sp, void *rec)
{
	if (sp->n < SPARE_RECORDS) {
		sp->rec[sp->n++] = rec;
	} else if (E->own_reaping) {	/* no free(): the engine's */
		*(void **)rec = E->spare_over;
		E->spare_over = rec;
	} else {
		free(rec);
	}
}

struct aio_req *aio__req_alloc_locked(void)
{
	struct aio_req *r;

	if (E->nreq >= E->max)
		return NULL;
	if (!E->reqs.size)
		uaio__slab_init(&E->reqs, sizeof(*r), offsetof(struct aio_req, next),
				CHUNK_REQS);
	if (!(r = uaio__slab_get(&E->reqs)))
		return NULL;
	memset(r, 0, sizeof(*r));
	E->nreq++;
	return r;
}

void aio__req_free_locked(struct aio_req *r)
{
	r->state = RS_FREE;
	r->op.data = NULL;
	uaio__slab_put(&E->reqs, r);
	E->nreq--;
}

/* ------------------------------------------------------ pinning */

/* The list's pinned handle goes back (its own reference). */
void aio__lio_ctx_release(struct lio_ctx *pc)
{
	if (pc->pinned < 0)
		return;
	uaio_file_unpin(E->loop, pc->pinned);
	pc->pinned = -1;
}

/*
 * r's file, pinned (a reference of its own): a list's entries on one
 * descriptor share one handle, which the list holds until it ends. With
 * no slot left, the bare descriptor.
 */
/* A stream request made as a blocking call on a worker (queue.c,
 * blocking_call): a write to a device that is no terminal
 * (aio_serial.wblock), a read of one that seeks (rblock), a signalfd's
 * read (the reading thread's own signals count: a worker has none, as
 * glibc's helper), or a zero-length
 * one (not on a socket or a regular file), which the plain call puts to
 * the file as glibc's does. By the
 * descriptor number, as glibc's helper makes it: no pin (a registered
 * slot is no descriptor a worker can use) and no duplicate (its close
 * would drop the process's record locks on the file). */
bool aio__req_blocking(const struct aio_req *r)
{
	const struct aio_serial *s = r->owner;

	return (r->flags & RF_SERIAL) && r->kind <= K_WRITE &&
	       ((r->kind == K_WRITE && s->wblock) ||
		(r->kind == K_READ && (s->sigfd || s->rblock)) ||
		(!req_cb(r)->aio_nbytes && !s->sock && !s->regfile));
}

void aio__pin_get_locked(struct aio_req *r, int fd, struct lio_ctx *pc)
{
	int p;

	if (pc && pc->fd != fd) {
		aio__lio_ctx_release(pc);
		pc->fd = fd;
		pc->pinned = uaio_file_pin(E->loop, fd);
	}
	p = uaio_file_pin(E->loop, pc && pc->pinned >= 0 ? pc->pinned : fd);
	if (p < 0) {
		r->fd = fd;
		return;
	}
	r->fd = p;
	r->flags |= RF_PINNED;
}

void aio__pin_stream_locked(struct aio_req *r, int fd, int fl)
{
	struct aio_serial *s = r->owner;
	int p;

	if (aio__req_blocking(r)) {
		r->fd = fd;
		return;
	}
	if (!s->pinh && (p = uaio_file_pin(E->loop, fd)) > 0) {
		s->pinh = p;
		s->pinfl = fl;
	}
	p = uaio_file_pin(E->loop, s->pinh && fl == s->pinfl ? s->pinh : fd);
	r->fd = p < 0 ? fd : p;
	r->flags |= p < 0 ? 0 : RF_PINNED;
}

void aio__pin_put_locked(struct aio_req *r)
{
	if (!(r->flags & RF_PINNED))
		return;
	r->flags &= ~RF_PINNED;
	uaio_file_unpin(E->loop, r->fd);
}

/* ------------------------------------------------- engine thread */

/* A fork from a handler that interrupted this thread under the lock
 * (depth > 0) leaves the loop's lock alone: the interrupted code may
 * hold it. The child frees the loop without taking it anyway. */
static void fork_prepare(void)
{
	if (aio__lock_fork_prepare())
		uaio_loop_lock(E->loop);
}

static void fork_parent(void)
{
	if (aio__lock_fork_loop())
		uaio_loop_unlock(E->loop);
	aio__lock_fork_parent();
}

/* The parent's requests in flight become orphans (struct aio_orphan), as
 * many as there is memory for; the rest stay in progress, uncancellable. */
static void orphans_adopt(void)
{
	struct aio_orphan *o;
	struct aio_req *r;
	size_t n = E->norphans + E->nreq;

	o = n ? realloc(E->orphans, n * sizeof(*o)) : NULL;
	if (o)
		E->orphans = o;
	UAIO_SLAB_FOREACH(&E->reqs, r) {
		struct aiocb *cb = r->state == RS_FREE ? NULL : req_cb(r);

		if (!cb || cb_state(cb) != ST_LIVE)
			continue;
		atomic_store(&priv(cb)->state, tag(cb, ST_ORPHAN));
		if (o && E->norphans < n)
			o[E->norphans++] = (struct aio_orphan){
				cb, cb->aio_fildes, r->state == RS_QUEUED };
	}
}

/* A request that never reached the engine becomes an orphan too, one
 * that waits (nested.c). */
void aio__orphan_queued(struct aiocb *cb)
{
	struct aio_orphan *o = realloc(E->orphans, (E->norphans + 1) * sizeof(*o));

	atomic_store(&priv(cb)->state, tag(cb, ST_ORPHAN));
	if (!o)
		return;
	E->orphans = o;
	o[E->norphans++] = (struct aio_orphan){ cb, cb->aio_fildes, true };
}

/* The child inherits no requests: the engine starts afresh on first need,
 * and its copies of our aiocbs become orphans. */
static void fork_child(void)
{
	orphans_adopt();
	uaio__slab_destroy(&E->reqs);
	E->nreq = 0;
	for (int i = 0; i < SERIAL_BUCKETS; i++) {
		struct aio_serial *s, *snext;
		for (s = E->serial[i]; s; s = snext) {
			snext = s->hnext;
			free(s);
		}
		E->serial[i] = NULL;
	}
	atomic_store(&E->nserial, 0);
	atomic_store(&E->pwrites, 0);
	atomic_store(&E->psyncs, 0);
	atomic_store(&E->plive, 0);
	E->failq = E->failq_tail = NULL;
	E->draining = false;
	E->deferq = E->deferq_tail = NULL;	/* their records went with the slab */
	E->own_reaping = false;
	for (unsigned i = 0; i < E->nfdw; i++)
		free(E->fdw[i]);
	free(E->fdw);
	E->fdw = NULL;
	E->nfdw = 0;
	if (E->loop) {
		if (aio__lock_fork_loop())
			uaio_loop_unlock(E->loop);
		uaio_loop_free(E->loop);	/* child-safe: no locks, no joins */
		E->loop = NULL;
	}
	aio__suspend_fork_child();	/* E->waiters too */
	atomic_store(&E->ending, 0);
	aio__lone_forget();
	aio__threads_fork_child();
	aio__lock_fork_child();
}

/*
 * glibc's helper threads end after aio_idle_time (1 s) without work, so a
 * program done with AIO is single-threaded again (unshare(2) into a user
 * namespace refuses a threaded process). The engine does as they do: with
 * no request in flight for that long its loop and thread go, and the next
 * request makes them anew.
 */
static bool engine_retire(uaio_loop *l)
{
	bool idle;

	aio__lock();
	aio__deferred_locked();	/* records a thread's reaping set aside */
	idle = E->loop == l && !E->nreq && !atomic_load(&E->nserial);
	if (idle) {
		if (E->own_evfd >= 0)
			uaio_watch_stop(l, &E->own_watch);
		E->loop = NULL;
		uaio_loop_free(l);
		aio__threads_retire_locked();
	}
	aio__unlock();
	return idle;
}

static void *engine_main(void *arg)
{
	uaio_loop *l = arg;
	int64_t idle = E->idle_s > 0 ? (int64_t)E->idle_s * 1000000000 : 0,
		busy = uaio__now_ns();

	/* Running: aio__engine_start_locked() may return. */
	atomic_store(&E->engine_up, 1);
	syscall(SYS_futex, &E->engine_up, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	for (;;) {
		/* no idle time: 1 ms waits, so no spin while requests run */
		int n = uaio_loop_run_once(l, idle ? idle : 1000000);
		int64_t now = uaio__now_ns();

		if (n < 0)
			usleep(1000);	/* never seen; don't spin if it happens */
		else if (n > 0)
			busy = now;
		else if (now - busy >= idle && engine_retire(l))
			return NULL;
	}
}

/* At load, not at the engine's start: a call holds the lock, and a
 * handler's requests wait (nested.c), before any engine exists, and a
 * fork must find both. After the loop layer's own (its constructor has
 * a priority): child handlers run in the order they were registered. */
__attribute__((constructor)) static void engine_atfork(void)
{
	(void)uaio__atfork_once(&E->atfork, fork_prepare, fork_parent, fork_child);
}

int aio__engine_start_locked(void)
{
	struct uaio_loop_params p = {
		.flags = UAIO_LOOP_THREADSAFE,
		.entries = 1024,
		.workers = E->workers,
	};
	pthread_t thread;
	int r;

	if (E->loop)
		return 0;
	if (!E->thread_key_made) {
		if (pthread_key_create(&E->thread_key, aio__thread_exit_wait))
			return -EAGAIN;
		E->thread_key_made = true;
	}
	if (uaio__atfork_once(&E->atfork, fork_prepare, fork_parent, fork_child))
		return -EAGAIN;	/* (the constructor's failed: no memory) */
	E->loop = uaio_loop_new(&p);
	if (!E->loop)
		return errno == ENOMEM ? -EAGAIN : -errno;
	/* Threads' own rings, when it can have them (else own_evfd stays -1
	 * and every request goes through the loop). */
	E->copies_itself = uaio_loop_backend(E->loop) == UAIO_BACKEND_URING;
	if (E->copies_itself)
		aio__threads_start_locked();
	atomic_store(&E->engine_up, 0);
	r = uaio__thread_start_stack(&thread, 256 * 1024, engine_main, E->loop);
	if (r) {
		uaio_loop_free(E->loop);
		E->loop = NULL;
		return -EAGAIN;
	}
	pthread_detach(thread);
	/* Wait until the thread runs: one that is still starting up may hold
	 * allocator locks (a sanitizer's), which a fork() right after the
	 * first request would hand to the child locked. */
	while (!atomic_load(&E->engine_up))
		aio__futex_wait_abs(&E->engine_up, 0, NULL);
	return 0;
}

unsigned long long uaio__aio_inline_bytes(void)
{
	return atomic_load(&E->inline_bytes);
}

/* Whether the engine's loop copies a cached read on its own thread
 * (SPLIT_MIN): started first if need be, as the backend decides. The
 * fallback's pin is a duplicate, whose close drops the process's record
 * locks: no hand-off there. */
bool aio__engine_copies(void)
{
	int r = 0;

	if (!E->loop) {
		aio__lock();
		r = aio__engine_start_locked();
		aio__unlock();
	}
	return r == 0 && E->copies_itself;
}

bool uaio__aio_engine_started(void)
{
	bool s;

	aio__lock();
	s = E->loop != NULL;
	aio__unlock();
	return s;
}

const char *uaio__aio_backend_name(void)
{
	const char *n;

	aio__lock();
	n = E->loop ? uaio_loop_backend_name(E->loop) : "none";
	aio__unlock();
	return n;
}

/* ------------------------------------------------------ init, limits */

UAIO_API void uaio_init(const struct aioinit *init)
{
	if (!init)
		return;
	aio__lock();
	if (init->aio_num > 0)
		E->max = (unsigned long)init->aio_num;
	if (init->aio_threads > 0 && !E->loop)
		E->workers = (unsigned)init->aio_threads;
	/* As glibc: 0 keeps what was set; a negative time ends the engine as
	 * soon as it has nothing in flight (glibc's helper waits until a
	 * moment already past). */
	if (init->aio_idle_time != 0)
		E->idle_s = init->aio_idle_time;
	aio__unlock();
}

/* The drop-in's aio_init: glibc takes aio_num as a hint, so it only ever
 * raises the limit there. */
void uaio__init_hint(const struct aioinit *init)
{
	struct aioinit in;

	if (!init)
		return;
	in = *init;
	if ((unsigned long)(in.aio_num > 0 ? in.aio_num : 0) < E->max)
		in.aio_num = 0;
	uaio_init(&in);
}

UAIO_API long uaio_sysconf(int name)
{
	switch (name) {
	case _SC_AIO_MAX:
	case _SC_AIO_LISTIO_MAX:
		return (long)E->max;
	case _SC_AIO_PRIO_DELTA_MAX:
		return UAIO_AIO_PRIO_DELTA_MAX;
	}
	errno = EINVAL;
	return -1;
}

