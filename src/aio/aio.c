/* SPDX-License-Identifier: MIT */
/*
 * POSIX AIO on the uaio loop (see include/uaio/aio.h, docs/design.md).
 *
 * A request first tries to finish in the caller without blocking
 * (RWF_NOWAIT): cached reads, room in a pipe. Only when it would block
 * does it get a record and become an op on the engine's loop, which one
 * engine thread drives: io_uring ties a request to the thread that issued
 * it and cancels it when that thread exits, so the engine thread is the
 * only issuer, and it sleeps in the kernel between completions so that
 * signals and SIGEV_THREAD callbacks arrive while the program sleeps.
 *
 * The status lives in the caller's aiocb (glibc's __error_code and
 * __return_value), so aio_error(), aio_return() and aio_suspend() are
 * lock-free and async-signal-safe. The aiocb's reserved bytes carry a
 * state word (LIVE / DONE / RETURNED, xor'ed with its address) that tells
 * our aiocbs from ones we never saw.
 *
 * Ordering: requests on a non-seekable file (pipe, socket, tty) run one at
 * a time in submission order (a FIFO per file, keyed by device and inode);
 * requests on regular files run in parallel, and an fsync waits for the
 * writes to its descriptor that were queued before it (epoch barriers).
 *
 * Locking: the engine mutex guards records, FIFOs, barriers and list-I/O
 * groups; it is taken before the loop's own lock. Records carry a pinned
 * handle of their file (uaio_file_pin), so the caller may close or reuse
 * the descriptor while the request is in flight.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <uaio/aio.h>
#include <uaio/loop.h>
#include "aio/aio_internal.h"
#include "core/internal.h"

#define API __attribute__((visibility("default")))

/* The kernel moves at most this much per read or write (MAX_RW_COUNT). */
#define RW_MAX		((size_t)INT_MAX & ~(size_t)4095)
#define CHUNK_REQS	512
#define SERIAL_BUCKETS	256
/*
 * The most one submitting call copies itself (a request, or a whole
 * lio_listio): about one small copy, so that submission returns promptly
 * and larger work overlaps with the caller's (docs/design.md: measured).
 */
#define INLINE_MAX	UAIO__AIO_INLINE_MAX
/* Descriptor hints (struct aio_hint): refreshed after this many uses; an
 * inline try is skipped after this many refusals in a row. */
#define HINT_USES	256
#define HINT_REFUSALS	4
#define HINT_PAGE	1024
#define HINT_PAGES	1024

/* ------------------------------------------------------ aiocb state */

struct cbpriv {
	_Atomic uint64_t state;		/* ST_* ^ the aiocb's address */
	struct aio_req *req;		/* its record, while it has one */
	uint64_t done;			/* bytes written before the current op */
	uint64_t spare;
};
_Static_assert(sizeof(struct cbpriv) <= sizeof(((struct aiocb *)0)->__glibc_reserved),
	       "aiocb reserved area too small");
_Static_assert(offsetof(struct aiocb, __glibc_reserved) % 8 == 0,
	       "aiocb reserved area misaligned");

#define ST_LIVE		0x75616f696c697665ull
#define ST_DONE		0x75616f69646f6e65ull
#define ST_RETURNED	0x75616f6972657464ull

static inline struct cbpriv *priv(const struct aiocb *cb)
{
	return (struct cbpriv *)(void *)cb->__glibc_reserved;
}

static inline uint64_t tag(const struct aiocb *cb, uint64_t st)
{
	return st ^ (uint64_t)(uintptr_t)cb;
}

static inline uint64_t cb_state(const struct aiocb *cb)
{
	return atomic_load_explicit(&priv(cb)->state, memory_order_acquire) ^
	       (uint64_t)(uintptr_t)cb;
}

/* ------------------------------------------------------ the engine */

enum { K_READ, K_WRITE, K_FSYNC, K_DSYNC };
enum { RS_FREE, RS_QUEUED, RS_LOOP };	/* RS_QUEUED: waiting in this layer */
#define RF_PINNED	0x1
#define RF_SERIAL	0x2
#define RF_LEADER	0x8	/* carries adjacent list entries in one op */
#define RF_MEMBER	0x10	/* carried by a leader (its next chain) */
#define RF_DIRECT	0x20	/* issued by the submitting thread (u.thr) */

struct aio_lio;

/* A thread that handed requests to the kernel itself: its exit must wait
 * for them, or io_uring would cancel them (see submit_parallel). */
struct aio_thread {
	unsigned direct;		/* its requests still in flight */
	bool exiting;
};

struct aio_req {
	uaio_op op;			/* first: the op callback finds the record */
	struct aiocb *cb;
	struct aio_req *next;		/* FIFO, barrier list or free list */
	void *owner;			/* struct aio_serial * or struct aio_fdw * */
	struct aio_lio *lio;
	union {
		struct aio_thread *thr;	/* RF_DIRECT: issued by that thread */
		struct iovec *iov;	/* RF_LEADER: one per carried request */
	} u;
	uint32_t epoch;			/* write: its descriptor's epoch; fsync: its barrier */
	uint32_t remaining;		/* fsync: earlier writes still in flight */
	int fd;				/* what the op uses: a pinned handle, or the fd */
	uint8_t kind, state, flags;
	int8_t prio;
};
_Static_assert(sizeof(struct aio_req) <= 120, "request record over budget");

struct aio_chunk {
	struct aio_chunk *next;
	struct aio_req reqs[CHUNK_REQS];
};

/* A non-seekable file with requests: one in flight, the rest wait. */
struct aio_serial {
	struct aio_serial *hnext;
	dev_t dev;
	ino_t ino;
	struct aio_req *busy;
	struct aio_req *head;		/* waiting, lower aio_reqprio first */
};

/* A descriptor with writes in flight: fsyncs wait for the earlier ones. */
struct aio_fdw {
	int fd;
	unsigned writes;
	uint32_t epoch;
	struct aio_req *barriers;
};

/*
 * What the engine learned about a descriptor number: its status flags and
 * whether the kernel keeps refusing inline tries on it. A hint only steers
 * speed (a stale one costs a try that blocks or an inline finish missed),
 * never a result, so it is kept without locks and refreshed every
 * HINT_USES requests instead of on every one.
 */
struct aio_hint {
	atomic_int fl;			/* F_GETFL + 1; 0: unknown */
	_Atomic uint16_t left;		/* uses before the next refresh */
	_Atomic uint8_t refused[2];	/* per kind: refusals in a row */
};

/* A list-I/O group: LIO_WAIT's waiter or LIO_NOWAIT's notification. */
struct aio_lio {
	unsigned pending;		/* async requests left, +1 while submitting */
	unsigned refs;			/* pending + the waiter */
	bool notify;
	atomic_uint done;		/* futex: 1 once pending reached 0 */
	struct sigevent sev;
};

static struct aio_engine {
	pthread_mutex_t mu;
	uaio_loop *loop;		/* created with the engine thread */
	bool atfork;

	struct aio_chunk *chunks;
	struct aio_req *free;
	unsigned long nreq;		/* records in use = requests in flight */
	unsigned long max;		/* AIO_MAX */
	unsigned workers;		/* fallback pool size */

	atomic_uint nserial;		/* serial files with requests */
	struct aio_serial *serial[SERIAL_BUCKETS];
	struct aio_fdw **fdw;
	unsigned nfdw;
	unsigned *pinrefs;		/* requests per pinned handle */
	unsigned npinrefs;
	bool uring;			/* the loop is io_uring: direct issue */
	/* Hints by descriptor number, in pages made on first use. */
	struct aio_hint *_Atomic hints[HINT_PAGES];

	atomic_uint engine_up;		/* futex: the engine thread runs */
	pthread_key_t thread_key;	/* destructor: thread_exit_wait */
	pthread_cond_t thread_cv;	/* a thread's direct requests ended */

	/* Bumped at every completion; aio_suspend and aio_cancel sleep on
	 * it with a futex (a LIO_WAIT caller sleeps on its group's word). */
	atomic_uint seq;
	atomic_uint waiters;
	_Atomic unsigned long long inline_bytes;	/* copied by submitters */
} aio_engine = {
	/* Held briefly by submitters and the engine thread alike: spin a
	 * little before sleeping. */
	.mu = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP,
	.thread_cv = PTHREAD_COND_INITIALIZER,
	.max = UAIO_AIO_MAX_DEFAULT,
	.workers = 8,
};

#define E (&aio_engine)

static __thread struct aio_thread *aio_self;

static void req_cb(uaio_op *op, int res, void *data);

/* ------------------------------------------------ completion, waiting */

static void seq_bump(void)
{
	atomic_fetch_add(&E->seq, 1);
	if (atomic_load(&E->waiters))
		syscall(SYS_futex, &E->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Sleeps while *word == snap. Always with an absolute deadline: the
 * kernel then reports EINTR for every handled signal, SA_RESTART or not,
 * as aio_suspend and lio_listio must. Returns 0, -ETIMEDOUT or -EINTR. */
static int futex_wait_abs(atomic_uint *word, unsigned snap,
			  const struct timespec *deadline)
{
	struct timespec far;
	long r;

	if (!deadline) {
		clock_gettime(CLOCK_MONOTONIC, &far);
		far.tv_sec += 86400;
		deadline = &far;
	}
	r = syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, snap, deadline,
		    NULL, FUTEX_BITSET_MATCH_ANY);
	if (r < 0 && (errno == ETIMEDOUT || errno == EINTR))
		return -errno;
	return 0;
}

static int seq_wait(unsigned snap, const struct timespec *deadline)
{
	return futex_wait_abs(&E->seq, snap, deadline);
}

/* The final status, for aio_error/aio_return: nothing touches cb after
 * this, the caller may reuse it at once. */
static void publish(struct aiocb *cb, long res)
{
	cb->__return_value = res < 0 ? -1 : res;
	atomic_store_explicit(&priv(cb)->state, tag(cb, ST_DONE), memory_order_release);
	__atomic_store_n(&cb->__error_code, res < 0 ? (int)-res : 0, __ATOMIC_RELEASE);
}

/* Whether sev delivers anything: not SIGEV_SIGNAL with signal 0, nor a
 * sigevent that is no good (glibc takes any, and sends nothing). */
static bool sev_notifies(const struct sigevent *sev)
{
	return uaio__sigevent_check(sev) == 0 &&
	       (sev->sigev_notify == SIGEV_THREAD ||
		(sev->sigev_notify == SIGEV_SIGNAL && sev->sigev_signo));
}

/* A request's end: status, then waiters, then its notification. */
static void complete(struct aiocb *cb, long res)
{
	struct sigevent sev;
	bool notify = sev_notifies(&cb->aio_sigevent);

	/* glibc: a signal that cannot be queued becomes the status. */
	if (cb->aio_sigevent.sigev_notify == SIGEV_SIGNAL && !notify &&
	    cb->aio_sigevent.sigev_signo)
		res = -EINVAL;
	if (notify)
		sev = cb->aio_sigevent;
	publish(cb, res);
	seq_bump();
	if (notify)
		uaio__notify(&sev);
}

static void lio_put_locked(struct aio_lio *g, bool pending)
{
	bool last = pending && --g->pending == 0;

	if (last && g->notify)
		uaio__notify(&g->sev);
	if (last) {		/* LIO_WAIT's waiter sleeps on the group alone */
		atomic_store(&g->done, 1);
		if (g->refs > 1)
			syscall(SYS_futex, &g->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	if (--g->refs == 0)
		free(g);
}

/* ------------------------------------------------------ hints */

static struct aio_hint *hint_get(int fd)
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
static int hint_flags(int fd, struct aio_hint *h, bool fresh)
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
		atomic_store_explicit(&h->fl, fl < 0 ? 0 : fl + 1, memory_order_relaxed);
		atomic_store_explicit(&h->left, HINT_USES, memory_order_relaxed);
		atomic_store_explicit(&h->refused[0], 0, memory_order_relaxed);
		atomic_store_explicit(&h->refused[1], 0, memory_order_relaxed);
	}
	return fl;
}

static bool fd_mode_ok(int fl, int kind)
{
	return (fl & O_ACCMODE) != (kind == K_READ ? O_WRONLY : O_RDONLY);
}

/* Whether an inline try on fd is worth making: the kernel has not kept
 * refusing it. */
static bool hint_try(struct aio_hint *h, int kind)
{
	return !h || atomic_load_explicit(&h->refused[kind], memory_order_relaxed) <
		     HINT_REFUSALS;
}

static void hint_learn(struct aio_hint *h, int kind, long res)
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

static struct aio_req *req_alloc_locked(void)
{
	struct aio_req *r;

	if (E->nreq >= E->max)
		return NULL;
	if (!E->free) {
		struct aio_chunk *c = calloc(1, sizeof(*c));

		if (!c)
			return NULL;
		c->next = E->chunks;
		E->chunks = c;
		for (int i = CHUNK_REQS - 1; i >= 0; i--) {
			c->reqs[i].next = E->free;
			E->free = &c->reqs[i];
		}
	}
	r = E->free;
	E->free = r->next;
	memset(r, 0, sizeof(*r));
	E->nreq++;
	return r;
}

static void req_free_locked(struct aio_req *r)
{
	r->state = RS_FREE;
	r->cb = NULL;
	r->next = E->free;
	E->free = r;
	E->nreq--;
}

/* --------------------------------------------------------- pinning */

/*
 * One lio_listio() call's submission context: a pinned handle that the
 * entries on one descriptor share (it holds a pin reference of its own
 * until the call ends), how much the call may still copy inline, and the
 * adjacent entries waiting to go out as one readv/writev.
 */
struct lio_ctx {
	int fd, pinned;
	size_t inline_left;
	struct aio_req *mhead, *mtail;
	unsigned mcount;
	int64_t mnext;		/* offset right after the last one */
	size_t mbytes;
};

static bool pinref_grow_locked(unsigned idx)
{
	unsigned n = E->npinrefs ? E->npinrefs : 256, *a;

	if (idx < E->npinrefs)
		return true;
	while (n <= idx)
		n *= 2;
	a = realloc(E->pinrefs, n * sizeof(*a));
	if (!a)
		return false;
	memset(a + E->npinrefs, 0, (n - E->npinrefs) * sizeof(*a));
	E->pinrefs = a;
	E->npinrefs = n;
	return true;
}

/* A pinned handle's slot number or duplicate descriptor: the handle
 * without the registered-file bit. */
static unsigned pin_index(int pinned)
{
	return (unsigned)pinned & ~(unsigned)UAIO_FD_FIXED;
}

/* Requests (and list caches) using a pinned handle. */
static unsigned *pinref(int pinned)
{
	return &E->pinrefs[pin_index(pinned)];
}

static void pin_unref_locked(int pinned)
{
	if (--*pinref(pinned) == 0)
		uaio_file_unpin(E->loop, pinned);
}

static void lio_ctx_release(struct lio_ctx *pc)
{
	if (pc->pinned < 0)
		return;
	pthread_mutex_lock(&E->mu);
	pin_unref_locked(pc->pinned);
	pthread_mutex_unlock(&E->mu);
	pc->pinned = -1;
}

static void pin_get_locked(struct aio_req *r, int fd, struct lio_ctx *pc)
{
	int p;

	if (pc && pc->fd == fd && pc->pinned >= 0) {
		p = pc->pinned;
	} else {
		p = uaio_file_pin(E->loop, fd);
		if (p >= 0 && !pinref_grow_locked(pin_index(p))) {
			uaio_file_unpin(E->loop, p);
			p = -1;
		}
		if (p < 0) {		/* no slot left: the bare descriptor */
			r->fd = fd;
			return;
		}
		if (pc) {
			if (pc->pinned >= 0)
				pin_unref_locked(pc->pinned);
			pc->fd = fd;
			pc->pinned = p;
			++*pinref(p);
		}
	}
	++*pinref(p);
	r->fd = p;
	r->flags |= RF_PINNED;
}

static void pin_put_locked(struct aio_req *r)
{
	if (!(r->flags & RF_PINNED))
		return;
	r->flags &= ~RF_PINNED;
	pin_unref_locked(r->fd);
}

/* ------------------------------------------------- engine thread */

static void mutex_init_adaptive(pthread_mutex_t *mu)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(mu, &a);
	pthread_mutexattr_destroy(&a);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&E->mu);
	if (E->loop)
		uaio_loop_lock(E->loop);
	uaio__notify_fork_prepare();
}

static void fork_parent(void)
{
	uaio__notify_fork_parent();
	if (E->loop)
		uaio_loop_unlock(E->loop);
	pthread_mutex_unlock(&E->mu);
}

/* The child inherits no requests: its copies of our aiocbs become unknown
 * ones, and the engine starts afresh on first need. */
static void fork_child(void)
{
	struct aio_chunk *c, *cnext;

	uaio__notify_fork_child();
	for (c = E->chunks; c; c = cnext) {
		cnext = c->next;
		for (int i = 0; i < CHUNK_REQS; i++) {
			struct aio_req *r = &c->reqs[i];
			if (r->state != RS_FREE && r->cb &&
			    cb_state(r->cb) == ST_LIVE)
				atomic_store(&priv(r->cb)->state, 0);
		}
		free(c);
	}
	E->chunks = NULL;
	E->free = NULL;
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
	for (unsigned i = 0; i < E->nfdw; i++)
		free(E->fdw[i]);
	free(E->fdw);
	E->fdw = NULL;
	E->nfdw = 0;
	free(E->pinrefs);
	E->pinrefs = NULL;
	E->npinrefs = 0;
	if (E->loop) {
		uaio_loop_unlock(E->loop);
		uaio_loop_free(E->loop);	/* child-safe: no locks, no joins */
		E->loop = NULL;
	}
	atomic_store(&E->waiters, 0);
	if (aio_self)		/* the forking thread's count: records are gone */
		aio_self->direct = 0;
	mutex_init_adaptive(&E->mu);
	pthread_cond_init(&E->thread_cv, NULL);
}

static void *engine_main(void *arg)
{
	uaio_loop *l = arg;

	/* Running: engine_start_locked() may return. */
	atomic_store(&E->engine_up, 1);
	syscall(SYS_futex, &E->engine_up, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	for (;;)
		if (uaio_loop_run_once(l, -1) < 0)
			usleep(1000);	/* never seen; don't spin if it happens */
	return NULL;
}

/* pthread key destructor: the exiting thread waits until the kernel
 * has finished the requests it issued itself. */
static void thread_exit_wait(void *arg)
{
	struct aio_thread *t = arg;

	pthread_mutex_lock(&E->mu);
	t->exiting = true;
	while (t->direct)
		pthread_cond_wait(&E->thread_cv, &E->mu);
	aio_self = NULL;
	pthread_mutex_unlock(&E->mu);
	free(t);
}

static struct aio_thread *thread_self_locked(void)
{
	if (!aio_self && (aio_self = calloc(1, sizeof(*aio_self))) &&
	    pthread_setspecific(E->thread_key, aio_self)) {
		free(aio_self);
		aio_self = NULL;
	}
	return aio_self;
}

static int engine_start_locked(void)
{
	struct uaio_loop_params p = {
		.flags = UAIO_LOOP_THREADSAFE,
		.entries = 1024,
		.workers = E->workers,
	};
	pthread_attr_t attr;
	pthread_t thread;
	int r;

	if (E->loop)
		return 0;
	if (!E->atfork) {
		if (pthread_key_create(&E->thread_key, thread_exit_wait))
			return -EAGAIN;
		if (pthread_atfork(fork_prepare, fork_parent, fork_child)) {
			pthread_key_delete(E->thread_key);
			return -EAGAIN;
		}
		E->atfork = true;
	}
	E->loop = uaio_loop_new(&p);
	if (!E->loop)
		return errno == ENOMEM ? -EAGAIN : -errno;
	E->uring = uaio_loop_backend(E->loop) == UAIO_BACKEND_URING;
	atomic_store(&E->engine_up, 0);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	r = uaio__thread_start(&thread, &attr, engine_main, E->loop);
	pthread_attr_destroy(&attr);
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
		futex_wait_abs(&E->engine_up, 0, NULL);
	return 0;
}

unsigned long long uaio__aio_inline_bytes(void)
{
	return atomic_load(&E->inline_bytes);
}

bool uaio__aio_engine_started(void)
{
	bool s;

	pthread_mutex_lock(&E->mu);
	s = E->loop != NULL;
	pthread_mutex_unlock(&E->mu);
	return s;
}

const char *uaio__aio_backend_name(void)
{
	const char *n;

	pthread_mutex_lock(&E->mu);
	n = E->loop ? uaio_loop_backend_name(E->loop) : "none";
	pthread_mutex_unlock(&E->mu);
	return n;
}

/* ---------------------------------------------- serial files, fsync */

static struct aio_serial **serial_slot(dev_t dev, ino_t ino)
{
	size_t h = (size_t)(ino * 0x9e3779b97f4a7c15ull ^ dev) % SERIAL_BUCKETS;
	struct aio_serial **pp = &E->serial[h];

	while (*pp && ((*pp)->dev != dev || (*pp)->ino != ino))
		pp = &(*pp)->hnext;
	return pp;
}

static struct aio_serial *serial_get_locked(const struct stat *st, bool create)
{
	struct aio_serial **pp = serial_slot(st->st_dev, st->st_ino), *s = *pp;

	if (s || !create)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->dev = st->st_dev;
	s->ino = st->st_ino;
	*pp = s;
	atomic_fetch_add(&E->nserial, 1);
	return s;
}

static void serial_maybe_free_locked(struct aio_serial *s)
{
	struct aio_serial **pp;

	if (s->busy || s->head)
		return;
	pp = serial_slot(s->dev, s->ino);
	*pp = s->hnext;
	free(s);
	atomic_fetch_sub(&E->nserial, 1);
}

/* Waiting requests go in priority order, equal priorities in order. */
static void serial_queue_locked(struct aio_serial *s, struct aio_req *r)
{
	struct aio_req **pp = &s->head;

	while (*pp && (*pp)->prio <= r->prio)
		pp = &(*pp)->next;
	r->next = *pp;
	*pp = r;
	r->state = RS_QUEUED;
}

static struct aio_fdw *fdw_get_locked(int fd, bool create)
{
	struct aio_fdw *w;

	if ((unsigned)fd < E->nfdw && E->fdw[fd])
		return E->fdw[fd];
	if (!create)
		return NULL;
	if ((unsigned)fd >= E->nfdw) {
		unsigned n = E->nfdw ? E->nfdw : 64;
		struct aio_fdw **a;

		while (n <= (unsigned)fd)
			n *= 2;
		a = realloc(E->fdw, n * sizeof(*a));
		if (!a)
			return NULL;
		memset(a + E->nfdw, 0, (n - E->nfdw) * sizeof(*a));
		E->fdw = a;
		E->nfdw = n;
	}
	w = calloc(1, sizeof(*w));
	if (w)
		w->fd = fd;
	E->fdw[fd] = w;
	return w;
}

static void fdw_maybe_free_locked(struct aio_fdw *w)
{
	if (w->writes || w->barriers)
		return;
	E->fdw[w->fd] = NULL;
	free(w);
}

/* ------------------------------------------------- issue and end */

static size_t cb_len(const struct aiocb *cb)
{
	return cb->aio_nbytes > RW_MAX ? RW_MAX : cb->aio_nbytes;
}

/* Hands r's (next) op to the loop. */
static int req_issue_locked(struct aio_req *r)
{
	struct aiocb *cb = r->cb;
	uint64_t done = priv(cb)->done;
	char *buf = (char *)cb->aio_buf;
	int64_t off = r->flags & RF_SERIAL ? -1 : (int64_t)cb->aio_offset;
	int ret;

	r->state = RS_LOOP;
	switch (r->kind) {
	case K_READ:
		ret = uaio_op_read(E->loop, &r->op, r->fd, buf, cb_len(cb), off,
				   req_cb, NULL);
		break;
	case K_WRITE:
		ret = uaio_op_write(E->loop, &r->op, r->fd, buf + done,
				    cb_len(cb) - done, off < 0 ? -1 : off + (int64_t)done,
				    req_cb, NULL);
		break;
	default:
		ret = uaio_op_fsync(E->loop, &r->op, r->fd, r->kind == K_DSYNC,
				    req_cb, NULL);
	}
	if (ret < 0)
		r->state = RS_QUEUED;
	return ret;
}

/* The end of r whatever its owner: unpin, free, publish, notify. */
static void req_release_locked(struct aio_req *r, long res)
{
	struct aiocb *cb = r->cb;
	struct aio_lio *g = r->lio;

	pin_put_locked(r);
	if ((r->flags & RF_DIRECT) && --r->u.thr->direct == 0 && r->u.thr->exiting)
		pthread_cond_broadcast(&E->thread_cv);
	priv(cb)->req = NULL;
	req_free_locked(r);
	complete(cb, res);
	if (g)
		lio_put_locked(g, true);
}

static void req_end_locked(struct aio_req *r, long res);

/* Starts the next waiting request of a serial file. */
static void serial_advance_locked(struct aio_serial *s)
{
	while (!s->busy && s->head) {
		struct aio_req *r = s->head;
		int ret;

		s->head = r->next;
		s->busy = r;
		ret = req_issue_locked(r);
		if (ret < 0) {
			s->busy = NULL;
			req_release_locked(r, ret);
		}
	}
	serial_maybe_free_locked(s);
}

/* A write in flight on w ended: release the fsyncs that waited for it. */
static void fdw_write_done_locked(struct aio_fdw *w, struct aio_req *wr)
{
	struct aio_req **pp = &w->barriers;

	w->writes--;
	while (*pp) {
		struct aio_req *b = *pp;

		if (b->epoch > wr->epoch && --b->remaining == 0) {
			int ret;

			*pp = b->next;
			b->owner = NULL;
			ret = req_issue_locked(b);
			if (ret < 0)
				req_release_locked(b, ret);
			continue;
		}
		pp = &b->next;
	}
	fdw_maybe_free_locked(w);
}

static void req_finish_parallel_locked(struct aio_req *r, long res)
{
	if (r->kind == K_WRITE && r->owner)
		fdw_write_done_locked(r->owner, r);
	req_release_locked(r, res);
}

/*
 * A leader's readv/writev ended with res: each carried request gets its
 * share, in order. A short count ends in the request it stops in (a
 * short transfer, as read/write would report); the requests after it, or
 * all but the leader after an error, are issued again one by one to get
 * results of their own.
 */
static void leader_end_locked(struct aio_req *r, long res)
{
	long left = res > 0 ? res : 0;
	bool rest_alone = false;
	struct aio_req *m, *next;

	free(r->u.iov);
	r->u.iov = NULL;
	for (m = r; m; m = next) {
		long n = (long)cb_len(m->cb);
		int ret;

		next = m == r ? r->next : m->next;
		m->flags &= ~(RF_LEADER | RF_MEMBER);
		m->next = NULL;
		if (m == r && res <= 0) {		/* nothing moved */
			req_finish_parallel_locked(m, res);
			rest_alone = true;
		} else if (!rest_alone && left >= n) {
			left -= n;
			req_finish_parallel_locked(m, n);
		} else if (!rest_alone && left > 0) {
			req_finish_parallel_locked(m, left);
			left = 0;
			rest_alone = true;
		} else {			/* it stopped before m */
			rest_alone = true;
			if ((ret = req_issue_locked(m)) < 0)
				req_finish_parallel_locked(m, ret);
		}
	}
}

/* r's op ended with res: continue a stream write, else finish r. */
static void req_end_locked(struct aio_req *r, long res)
{
	struct aiocb *cb = r->cb;
	struct cbpriv *pv = priv(cb);

	if (r->flags & RF_LEADER) {
		leader_end_locked(r, res);
		return;
	}

	/* A blocking write to a pipe or socket writes everything. */
	if (r->kind == K_WRITE && (r->flags & RF_SERIAL) && res > 0 &&
	    (size_t)res < cb_len(cb) - pv->done) {
		pv->done += (uint64_t)res;
		if (req_issue_locked(r) == 0)
			return;
		res = 0;
	}
	if (pv->done)
		res = res >= 0 ? res + (long)pv->done : (long)pv->done;
	if (r->flags & RF_SERIAL) {
		struct aio_serial *s = r->owner;
		s->busy = NULL;
		req_release_locked(r, res);
		serial_advance_locked(s);
		return;
	}
	req_finish_parallel_locked(r, res);
}

static void req_cb(uaio_op *op, int res, void *data)
{
	pthread_mutex_lock(&E->mu);
	req_end_locked((struct aio_req *)op, res);
	pthread_mutex_unlock(&E->mu);
}

/* ---------------------------------------------------- submission */

/*
 * What glibc refuses at submission: no aiocb, a bad aio_reqprio (reads
 * and writes only); and, ours, the same aiocb twice at once, which is
 * undefined. glibc leaves the reason in the aiocb too, so aio_error()
 * tells it afterwards; the live aiocb is left alone. (A bad sigevent is
 * not refused: see complete().)
 */
static int cb_check(struct aiocb *cb, bool prio)
{
	if (!cb || cb_state(cb) == ST_LIVE)
		return -EINVAL;
	if (prio && (cb->aio_reqprio < 0 ||
		     cb->aio_reqprio > UAIO_AIO_PRIO_DELTA_MAX)) {
		publish(cb, -EINVAL);
		return -EINVAL;
	}
	return 0;
}

static void cb_mark_live(struct aiocb *cb)
{
	struct cbpriv *pv = priv(cb);

	cb->__return_value = 0;
	pv->req = NULL;
	pv->done = 0;
	__atomic_store_n(&cb->__error_code, EINPROGRESS, __ATOMIC_RELAXED);
	atomic_store_explicit(&pv->state, tag(cb, ST_LIVE), memory_order_release);
}


/* One non-blocking try of the rest of cb's transfer at off. */
static long attempt(int fd, int kind, struct aiocb *cb, int64_t off, int rwf)
{
	uint64_t done = priv(cb)->done;
	struct iovec iov = { (char *)cb->aio_buf + done, cb_len(cb) - done };
	ssize_t r;

	if (kind == K_READ)
		r = preadv2(fd, &iov, 1, off, rwf);
	else
		r = pwritev2(fd, &iov, 1, off < 0 ? -1 : off + (int64_t)done, rwf);
	return r < 0 ? -errno : r;
}

/*
 * Whether a write the kernel will not take without blocking (ext4 and
 * others refuse RWF_NOWAIT for buffered writes) may still be made here
 * as a plain page-cache copy: small, whole pages (no page has to be read
 * first), and no O_SYNC / O_DSYNC (which would wait for the disk). This
 * is what a file system with non-blocking buffered writes (XFS, btrfs)
 * does under RWF_NOWAIT; it costs one syscall, where handing it to the
 * kernel's workers costs a thread hop each way (docs/design.md).
 */
static bool page_write_ok(const struct aiocb *cb, int kind, int fl)
{
	return kind == K_WRITE && !(fl & (O_SYNC | O_DSYNC)) &&
	       cb->aio_offset >= 0 && !(cb->aio_offset % 4096) &&
	       !(cb->aio_nbytes % 4096);
}

/* Whether an attempt's result is the request's result (else: background,
 * after recording a partial write in done). */
static bool attempt_final(struct aiocb *cb, int kind, long res, bool stream,
			  bool nonblock)
{
	if (res == -EAGAIN || res == -EOPNOTSUPP)
		return stream && nonblock && res == -EAGAIN;
	if (res < 0)
		return true;
	if (kind == K_READ)	/* short from the cache may be EOF or not */
		return stream || res == 0 || (size_t)res == cb_len(cb);
	if ((size_t)res == cb_len(cb) - priv(cb)->done || nonblock)
		return true;
	priv(cb)->done += (uint64_t)res;
	return false;
}

static void lio_add_locked(struct aio_req *r, struct aio_lio *g)
{
	if (g) {
		r->lio = g;
		g->pending++;
		g->refs++;
	}
}

/* The request becomes a record on a non-seekable file's FIFO. */
static int submit_serial(struct aiocb *cb, int kind, int fd, int fl,
			 const struct stat *st, struct lio_ctx *pc,
			 struct aio_lio *g)
{
	struct aio_serial *s;
	struct aio_req *r;
	long res;
	int ret;

	pthread_mutex_lock(&E->mu);
	s = serial_get_locked(st, true);
	if (!s) {
		pthread_mutex_unlock(&E->mu);
		return -EAGAIN;
	}
	if (!s->busy && !s->head && kind <= K_WRITE) {
		/* Nothing ahead of it: try now, under the lock, so that no
		 * later request can overtake it. */
		res = attempt(fd, kind, cb, -1, RWF_NOWAIT);
		if (res == -EOPNOTSUPP && (fl & O_NONBLOCK))
			res = attempt(fd, kind, cb, -1, 0);
		if (attempt_final(cb, kind, res, true, fl & O_NONBLOCK)) {
			serial_maybe_free_locked(s);
			pthread_mutex_unlock(&E->mu);
			complete(cb, res + (res >= 0 ? (long)priv(cb)->done : 0));
			return 0;
		}
	}
	if ((ret = engine_start_locked()) < 0 || !(r = req_alloc_locked())) {
		serial_maybe_free_locked(s);
		pthread_mutex_unlock(&E->mu);
		return ret < 0 ? ret : -EAGAIN;
	}
	r->cb = cb;
	r->kind = (uint8_t)kind;
	r->prio = (int8_t)cb->aio_reqprio;
	r->flags = RF_SERIAL;
	r->owner = s;
	priv(cb)->req = r;
	pin_get_locked(r, fd, pc);
	lio_add_locked(r, g);
	if (s->busy || s->head) {
		serial_queue_locked(s, r);
	} else {
		s->busy = r;
		if ((ret = req_issue_locked(r)) < 0) {
			s->busy = NULL;
			req_release_locked(r, ret);
			serial_maybe_free_locked(s);
		}
	}
	pthread_mutex_unlock(&E->mu);
	return 0;
}

/* Sends out the entries gathered in pc: alone, or as one readv/writev
 * led by the first. */
static void batch_flush_locked(struct lio_ctx *pc)
{
	struct aio_req *lead = pc->mhead, *m;
	struct iovec *iov = NULL;
	unsigned i = 0;
	int ret;

	pc->mhead = pc->mtail = NULL;
	if (!lead)
		return;
	if (pc->mcount > 1)
		iov = malloc(pc->mcount * sizeof(*iov));
	if (!iov) {		/* one entry, or no memory: one by one */
		for (m = lead; m; m = lead) {
			lead = m->next;
			m->next = NULL;
			if ((ret = req_issue_locked(m)) < 0)
				req_finish_parallel_locked(m, ret);
		}
		return;
	}
	for (m = lead; m; m = m->next, i++) {
		iov[i].iov_base = (void *)m->cb->aio_buf;
		iov[i].iov_len = cb_len(m->cb);
		m->flags |= m == lead ? RF_LEADER : RF_MEMBER;
		m->state = RS_LOOP;
	}
	lead->u.iov = iov;
	if (lead->kind == K_READ)
		ret = uaio_op_readv(E->loop, &lead->op, lead->fd, iov, (int)i,
				    lead->cb->aio_offset, req_cb, NULL);
	else
		ret = uaio_op_writev(E->loop, &lead->op, lead->fd, iov, (int)i,
				     lead->cb->aio_offset, req_cb, NULL);
	if (ret < 0)
		leader_end_locked(lead, ret);
}

static void batch_flush(struct lio_ctx *pc)
{
	if (!pc->mhead)
		return;
	pthread_mutex_lock(&E->mu);
	batch_flush_locked(pc);
	pthread_mutex_unlock(&E->mu);
}

/* Whether r extends pc's gathered entries: same kind, same file, next
 * offset, and room left in one readv/writev. */
static bool batch_fits(const struct lio_ctx *pc, const struct aio_req *r)
{
	const struct aio_req *t = pc->mtail;

	return t && t->kind == r->kind && t->fd == r->fd && t->prio == r->prio &&
	       r->cb->aio_offset == pc->mnext && pc->mcount < IOV_MAX &&
	       pc->mbytes + cb_len(r->cb) <= RW_MAX;
}

/* The request becomes a record on a regular file or block device. direct:
 * a single request the calling thread may hand to the kernel itself. */
static int submit_parallel(struct aiocb *cb, int kind, int fd, bool direct,
			   struct lio_ctx *pc, struct aio_lio *g)
{
	struct aio_req *r;
	struct aio_fdw *w = NULL;
	int ret;

	pthread_mutex_lock(&E->mu);
	if ((ret = engine_start_locked()) < 0 || !(r = req_alloc_locked())) {
		pthread_mutex_unlock(&E->mu);
		return ret < 0 ? ret : -EAGAIN;
	}
	if (kind != K_READ && !(w = fdw_get_locked(fd, kind == K_WRITE)) &&
	    kind == K_WRITE) {
		req_free_locked(r);
		pthread_mutex_unlock(&E->mu);
		return -EAGAIN;
	}
	r->cb = cb;
	r->kind = (uint8_t)kind;
	r->prio = (int8_t)(kind <= K_WRITE ? cb->aio_reqprio : 0);
	priv(cb)->req = r;
	lio_add_locked(r, g);
	if (kind == K_WRITE) {
		r->owner = w;
		r->epoch = w->epoch;
		w->writes++;
	} else if (w && w->writes) {
		/* An fsync after writes still in flight: a barrier. */
		pin_get_locked(r, fd, pc);
		r->epoch = ++w->epoch;
		r->remaining = w->writes;
		r->owner = w;
		r->next = w->barriers;
		w->barriers = r;
		r->state = RS_QUEUED;
		pthread_mutex_unlock(&E->mu);
		return 0;
	}
	/* A list's entries gather while they are adjacent (see batch_*);
	 * not one whose inline try already wrote a part. */
	if (pc && kind <= K_WRITE && !priv(cb)->done) {
		pin_get_locked(r, fd, pc);
		if (!batch_fits(pc, r)) {
			batch_flush_locked(pc);
			pc->mhead = r;
			pc->mcount = 0;
			pc->mbytes = 0;
		} else {
			pc->mtail->next = r;
		}
		pc->mtail = r;
		pc->mcount++;
		pc->mbytes += cb_len(cb);
		pc->mnext = cb->aio_offset + (int64_t)cb_len(cb);
		r->state = RS_LOOP;
		pthread_mutex_unlock(&E->mu);
		return 0;
	}
	/*
	 * A single small (or O_DIRECT) request on a regular file goes to the
	 * kernel from this thread, by its descriptor: the kernel takes the
	 * file reference before we return, so nothing needs pinning, and no
	 * engine wake-up is needed. Disk I/O ends in bounded time, so the
	 * thread's exit can wait for it (thread_exit_wait). When the ring has
	 * no room, it is pinned and handed over like any other.
	 */
	ret = -EAGAIN;
	if (direct && E->uring && (r->u.thr = thread_self_locked())) {
		r->fd = fd;
		r->u.thr->direct++;
		r->flags |= RF_DIRECT;
		uaio_op_set_flags(&r->op, UAIO_OPF_ISSUE_HERE);
		ret = req_issue_locked(r);
		if (ret == -EAGAIN) {
			uaio_op_set_flags(&r->op, 0);
			r->u.thr->direct--;
			r->u.thr = NULL;
			r->flags &= ~RF_DIRECT;
		}
	}
	if (ret == -EAGAIN) {
		pin_get_locked(r, fd, pc);
		ret = req_issue_locked(r);
	}
	if (ret < 0)
		req_end_locked(r, ret);
	pthread_mutex_unlock(&E->mu);
	return 0;
}

/*
 * Queues a read or write: 0 when queued or finished (the status is in the
 * aiocb then), -errno when refused. As in glibc, a descriptor that is bad
 * or not open for this direction, or a negative offset, is not a refusal:
 * the request fails as it runs, through aio_error, aio_return and its
 * notification.
 */
static int submit_rw(struct aiocb *cb, int kind, struct lio_ctx *pc,
		     struct aio_lio *g)
{
	size_t one = INLINE_MAX, *budget = pc ? &pc->inline_left : &one;
	struct aio_hint *h;
	struct stat st;
	int fd, fl, ret;
	long res;
	bool positional = false, try;
	int rwf;

	if ((ret = cb_check(cb, true)) < 0)
		return ret;
	fd = cb->aio_fildes;
	h = hint_get(fd);
	fl = hint_flags(fd, h, false);
	/* A hint may speak of an earlier file with this number: what would
	 * fail the request is checked afresh. */
	if (fl < 0 || (fl & O_PATH) || !fd_mode_ok(fl, kind))
		fl = hint_flags(fd, h, true);
	cb_mark_live(cb);
	if (fl < 0 || (fl & O_PATH) || !fd_mode_ok(fl, kind)) {
		complete(cb, -EBADF);
		return 0;
	}

	/* A try on a stream fails at once (ESPIPE), which tells regular files
	 * from streams. Without a try (O_DIRECT, whose "non-blocking" try
	 * would wait for the device; too big; refused before), or when serial
	 * files with requests exist, or with no usable offset: classify the
	 * file first. */
	rwf = hint_try(h, kind) ? RWF_NOWAIT : 0;
	try = !(fl & O_DIRECT) && cb_len(cb) <= *budget &&
	      (rwf || page_write_ok(cb, kind, fl));
	if (!try || atomic_load_explicit(&E->nserial, memory_order_relaxed) ||
	    cb->aio_offset < 0) {
		if (fstat(fd, &st) < 0) {
			complete(cb, -errno);
			return 0;
		}
		if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
			goto serial;
		if (cb->aio_offset < 0) {
			complete(cb, -EINVAL);
			return 0;
		}
		positional = true;
	}
	if (try) {
		res = attempt(fd, kind, cb, cb->aio_offset, rwf);
		if (rwf)
			hint_learn(h, kind, res);
		if (res == -ESPIPE && !positional) {	/* a stream */
			if (fstat(fd, &st) < 0) {
				complete(cb, -errno);
				return 0;
			}
			goto serial;
		}
		if (res > 0) {
			*budget -= (size_t)res < *budget ? (size_t)res : *budget;
			atomic_fetch_add_explicit(&E->inline_bytes, (unsigned long long)res,
						  memory_order_relaxed);
		}
		if (attempt_final(cb, kind, res, false, false)) {
			complete(cb, res + (res >= 0 ? (long)priv(cb)->done : 0));
			return 0;
		}
	}
	ret = submit_parallel(cb, kind, fd, !pc && ((fl & O_DIRECT) || cb_len(cb) <= INLINE_MAX),
			      pc, g);
	if (ret == 0)
		return 0;
	goto refuse;
serial:
	/* O_NONBLOCK decides a stream request's result: not from a hint. */
	fl = hint_flags(fd, h, true);
	ret = submit_serial(cb, kind, fd, fl < 0 ? 0 : fl, &st, pc, g);
	if (ret == 0)
		return 0;
refuse:
	publish(cb, ret);
	return ret;
}

static int posix_ret(int r)
{
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

/* glibc records the operation in aio_lio_opcode; so do we. */
API int uaio_read(struct aiocb *cb)
{
	if (cb && cb_state(cb) != ST_LIVE)
		cb->aio_lio_opcode = LIO_READ;
	return posix_ret(submit_rw(cb, K_READ, NULL, NULL));
}

API int uaio_write(struct aiocb *cb)
{
	if (cb && cb_state(cb) != ST_LIVE)
		cb->aio_lio_opcode = LIO_WRITE;
	return posix_ret(submit_rw(cb, K_WRITE, NULL, NULL));
}

/* POSIX: only aio_fildes and aio_sigevent are used. As glibc, a bad
 * descriptor is refused here, and aio_reqprio is set to 0. */
API int uaio_fsync(int op, struct aiocb *cb)
{
	struct stat st;
	int fd, kind = op == O_DSYNC ? K_DSYNC : K_FSYNC, ret;

	if (op != O_SYNC && op != O_DSYNC)
		return posix_ret(-EINVAL);
	if (cb && cb_state(cb) != ST_LIVE && fstat(cb->aio_fildes, &st) < 0)
		return posix_ret(-EBADF);
	if ((ret = cb_check(cb, false)) < 0)
		return posix_ret(ret);
	fd = cb->aio_fildes;
	cb->aio_reqprio = 0;
	cb->aio_lio_opcode = op == O_DSYNC ? LIO_NOP + 1 : LIO_NOP + 2; /* glibc's LIO_DSYNC, LIO_SYNC */
	cb_mark_live(cb);
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		ret = submit_parallel(cb, kind, fd, true, NULL, NULL);
	else
		ret = submit_serial(cb, kind, fd, 0, &st, NULL, NULL);
	if (ret < 0)
		publish(cb, ret);
	return posix_ret(ret);
}


/* ------------------------------------------------------ lio_listio */

/*
 * As glibc: every entry is accepted unless refused at submission (a bad
 * aio_reqprio or sigevent, no room), and entries that fail as they run
 * (a bad descriptor, an unknown opcode) report through their own status
 * and notification. LIO_NOWAIT returns 0 once every entry was accepted,
 * else -1 with the last refusal's errno; its sigevent fires once, after
 * the last entry ends. LIO_WAIT returns -1/EIO when any entry failed.
 */
API int ulio_listio(int mode, struct aiocb *const list[], int nent,
		    struct sigevent *sig)
{
	struct aio_lio *g = NULL;
	struct lio_ctx pc = { .fd = -1, .pinned = -1, .inline_left = INLINE_MAX };
	bool notify = mode == LIO_NOWAIT && sig && sev_notifies(sig);
	int refused = 0, failed = 0, want = 0, r;

	if ((mode != LIO_WAIT && mode != LIO_NOWAIT) || nent < 0 ||
	    (unsigned long)nent > E->max || (nent && !list))
		return posix_ret(-EINVAL);
	for (int i = 0; i < nent; i++)
		if (list[i] && list[i]->aio_lio_opcode != LIO_NOP)
			want++;
	/* AIO_MAX would be exceeded: nothing is queued. */
	if (E->nreq + (unsigned long)want > E->max)
		return posix_ret(-EAGAIN);
	if (mode == LIO_WAIT || notify) {
		g = calloc(1, sizeof(*g));
		if (!g)
			return posix_ret(-EAGAIN);
		g->pending = 1;		/* held while submitting */
		g->refs = 1;
		g->notify = notify;
		if (notify)
			g->sev = *sig;
	}
	for (int i = 0; i < nent; i++) {
		struct aiocb *cb = list[i];
		int op = cb ? cb->aio_lio_opcode : LIO_NOP;

		if (op == LIO_NOP)
			continue;
		if (op == LIO_READ || op == LIO_WRITE) {
			r = submit_rw(cb, op == LIO_READ ? K_READ : K_WRITE, &pc, g);
		} else if ((r = cb_check(cb, false)) == 0) {
			cb_mark_live(cb);
			complete(cb, -EINVAL);
		}
		if (r < 0)
			refused = r;
	}
	batch_flush(&pc);
	lio_ctx_release(&pc);
	if (!g)
		return posix_ret(refused);

	pthread_mutex_lock(&E->mu);
	if (mode == LIO_WAIT)
		g->refs++;		/* the waiter's */
	lio_put_locked(g, true);	/* the submission hold */
	pthread_mutex_unlock(&E->mu);
	if (mode == LIO_NOWAIT)
		return posix_ret(refused);

	r = 0;
	while (!atomic_load(&g->done))
		if (futex_wait_abs(&g->done, 0, NULL) == -EINTR) {
			r = -EINTR;
			break;
		}
	pthread_mutex_lock(&E->mu);
	lio_put_locked(g, false);
	pthread_mutex_unlock(&E->mu);
	if (r < 0)
		return posix_ret(r);
	for (int i = 0; i < nent && !failed && !refused; i++) {
		const struct aiocb *cb = list[i];
		if (cb && cb->aio_lio_opcode != LIO_NOP &&
		    __atomic_load_n(&cb->__error_code, __ATOMIC_ACQUIRE) != 0)
			failed++;
	}
	return posix_ret(failed || refused ? -EIO : 0);
}


/* ------------------------------------------- error, return, suspend */

API int uaio_error(const struct aiocb *cb)
{
	uint64_t st;

	if (!cb)
		return posix_ret(-EINVAL);
	st = cb_state(cb);
	if (st != ST_LIVE && st != ST_DONE && st != ST_RETURNED)
		return posix_ret(-EINVAL);
	return __atomic_load_n(&cb->__error_code, __ATOMIC_ACQUIRE);
}

API ssize_t uaio_return(struct aiocb *cb)
{
	uint64_t want;

	if (!cb)
		return posix_ret(-EINVAL);
	want = tag(cb, ST_DONE);
	/* Exactly once, even when threads race for it. */
	if (atomic_compare_exchange_strong(&priv(cb)->state, &want,
					   tag(cb, ST_RETURNED)))
		return cb->__return_value;
	return posix_ret(cb_state(cb) == ST_LIVE ? -EINPROGRESS : -EINVAL);
}

static bool any_done(const struct aiocb *const list[], int nent)
{
	for (int i = 0; i < nent; i++) {
		const struct aiocb *cb = list[i];

		if (cb && (cb_state(cb) != ST_LIVE ||
			   __atomic_load_n(&cb->__error_code, __ATOMIC_ACQUIRE) != EINPROGRESS))
			return true;
	}
	return false;
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

API int uaio_suspend(const struct aiocb *const list[], int nent,
		     const struct timespec *timeout)
{
	struct timespec deadline;
	int r = 0;

	/* As glibc: nothing to wait for returns at once, and a timeout that
	 * is no duration (POSIX has no EINVAL here) has expired already. */
	if (nent <= 0 || !any_live(list, nent) || any_done(list, nent))
		return 0;
	if (timeout) {
		if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 ||
		    timeout->tv_nsec >= 1000000000 ||
		    (!timeout->tv_sec && !timeout->tv_nsec))
			return posix_ret(-EAGAIN);
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout->tv_sec;
		deadline.tv_nsec += timeout->tv_nsec;
		if (deadline.tv_nsec >= 1000000000) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000;
		}
	}
	atomic_fetch_add(&E->waiters, 1);
	for (;;) {
		unsigned snap = atomic_load(&E->seq);

		if (any_done(list, nent))
			break;
		r = seq_wait(snap, timeout ? &deadline : NULL);
		if (r == -ETIMEDOUT && !timeout)
			r = 0;
		if (r == -ETIMEDOUT) {
			r = any_done(list, nent) ? 0 : -EAGAIN;
			break;
		}
		if (r == -EINTR)
			break;
	}
	atomic_fetch_sub(&E->waiters, 1);
	return posix_ret(r);
}

/* ---------------------------------------------------------- cancel */

/*
 * As glibc: only a request that is still waiting in this layer (behind
 * another on a stream, or an fsync behind writes) is cancelled; one the
 * kernel has (a read it started, a socket write waiting for room) is
 * being performed, so it is AIO_NOTCANCELED and finishes normally. 1 if
 * r was cancelled, 0 if it is in progress.
 */
static int cancel_locked(struct aio_req *r)
{
	struct aio_req **pp;

	if (r->state != RS_QUEUED)
		return 0;
	if (r->flags & RF_SERIAL) {
		struct aio_serial *s = r->owner;
		for (pp = &s->head; *pp != r; pp = &(*pp)->next)
			;
		*pp = r->next;
		req_release_locked(r, -ECANCELED);
		serial_maybe_free_locked(s);
	} else {
		struct aio_fdw *w = r->owner;
		for (pp = &w->barriers; *pp != r; pp = &(*pp)->next)
			;
		*pp = r->next;
		req_release_locked(r, -ECANCELED);
		fdw_maybe_free_locked(w);
	}
	return 1;
}

API int uaio_cancel(int fd, struct aiocb *cb)
{
	int canceled = 0, notcanceled = 0;

	if (fcntl(fd, F_GETFD) < 0)
		return posix_ret(-EBADF);
	if (cb && cb->aio_fildes != fd)
		return posix_ret(-EINVAL);
	if (cb && cb_state(cb) != ST_LIVE)
		return AIO_ALLDONE;

	pthread_mutex_lock(&E->mu);
	if (cb) {
		struct aio_req *r = priv(cb)->req;

		if (!r || r->cb != cb || r->state == RS_FREE) {
			/* Finishing inline in another thread right now. */
			pthread_mutex_unlock(&E->mu);
			return cb_state(cb) == ST_LIVE ? AIO_NOTCANCELED : AIO_ALLDONE;
		}
		canceled = cancel_locked(r);
		notcanceled = !canceled;
	} else {
		for (struct aio_chunk *c = E->chunks; c; c = c->next) {
			for (int i = 0; i < CHUNK_REQS; i++) {
				struct aio_req *r = &c->reqs[i];

				if (r->state == RS_FREE || r->cb->aio_fildes != fd)
					continue;
				if (cancel_locked(r))
					canceled++;
				else
					notcanceled++;
			}
		}
	}
	pthread_mutex_unlock(&E->mu);
	if (notcanceled)
		return AIO_NOTCANCELED;
	return canceled ? AIO_CANCELED : AIO_ALLDONE;
}


/* ------------------------------------------------------ init, limits */

API void uaio_init(const struct aioinit *init)
{
	if (!init)
		return;
	pthread_mutex_lock(&E->mu);
	if (init->aio_num > 0)
		E->max = (unsigned long)init->aio_num;
	if (init->aio_threads > 0 && !E->loop)
		E->workers = (unsigned)init->aio_threads;
	pthread_mutex_unlock(&E->mu);
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

API long uaio_sysconf(int name)
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
