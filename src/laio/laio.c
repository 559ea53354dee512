/* SPDX-License-Identifier: MIT */
/*
 * Lazy asynchronous syscalls (see include/uaio/laio.h, docs/laio.md).
 *
 * One engine per process owns a thread-safe uaio loop. A call is first
 * tried without blocking in the caller (RWF_NOWAIT, MSG_DONTWAIT, openat2
 * RESOLVE_CACHED, or an io_uring submission whose completion is already
 * there); only when it would block does it get a record (the handle) and
 * continue on the loop. Nobody runs the loop in the background: the
 * thread in laio_poll() drives it, and op callbacks queue the records on
 * the engine's completion queue.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <uaio/laio.h>
#include <uaio/loop.h>
#include "core/uaio_core.h"
#include "laio/laio_internal.h"

#define LAIO_MAGIC	0x6c61696fu	/* "laio": a live background record */
#define SLAB_CALLS	1024

/* laio_call.phase */
enum {
	PH_FREE = 0,
	PH_TRY,		/* submitted to io_uring, caller still hoping for inline */
	PH_INLINE,	/* completed while PH_TRY: the caller returns it inline */
	PH_BG,		/* background: its completion goes to the queue */
	PH_QUEUED,	/* on the completion queue */
};

/* laio_call.kind: what the current op of a background call is */
enum {
	K_OP,		/* the call itself as a uaio op */
	K_POLL,		/* readiness poll, then a non-blocking retry */
	K_WORK,		/* the helper pool runs the blocking syscall */
};

/* laio_call.flags */
#define CF_CANCEL_REQ	0x01	/* laio_cancel() asked: do not resubmit */
#define CF_CANCEL_OP	0x02	/* r->cop in flight: keep r alive */
#define CF_RELEASE	0x04	/* returned by laio_poll while CF_CANCEL_OP */
#define CF_ISREG	0x08	/* fd is a regular file (known) */
#define CF_NOTREG	0x10	/* fd is not a regular file (known) */

struct laio_call {
	uaio_op op;
	uaio_op cop;			/* the cancel op */
	struct laio_call *next;		/* free list / completion queue */
	long nr;
	long a[6];
	long ret;			/* result or -errno */
	size_t done;			/* bytes already written (continuation) */
	struct iovec *iov;		/* writev continuation: remaining iovs */
	int iovcnt;
	uint32_t magic;
	uint8_t phase;
	uint8_t kind;
	uint8_t flags;			/* CF_CANCEL_*, CF_RELEASE: under mu */
	uint8_t ftype;			/* CF_ISREG / CF_NOTREG: owner only */
	uint8_t retries;
};

struct laio_slab {
	struct laio_slab *next;
	struct laio_call calls[SLAB_CALLS];
};

static struct laio_engine {
	pthread_mutex_t init_mu;
	atomic_bool ready;
	uaio_loop *loop;
	int mech;			/* LAIO_MECH_OP or LAIO_MECH_POLL */

	pthread_mutex_t mu;		/* everything below */
	pthread_cond_t cv;		/* completions queued / driver gone */
	struct laio_call *free;
	struct laio_call *cq_head, *cq_tail;
	unsigned long ncq;
	unsigned long outstanding;	/* background, not yet returned */
	bool driving;			/* a thread is inside run_once */
	bool has_driver;
	pthread_t driver;		/* the last thread that ran the loop */
	unsigned waiters;
	struct laio_slab *slabs;

	/* laio_fd(): epoll over the loop's fd and efd, which is kept
	 * readable while the completion queue is not empty. */
	int efd, epfd;
	bool efd_set;
} laio_engine = {
	.init_mu = PTHREAD_MUTEX_INITIALIZER,
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.efd = -1,
	.epfd = -1,
};

static __thread struct laio_call *laio_last;

/* ------------------------------------------------------------ engine */

static void engine_fork_prepare(void)
{
	pthread_mutex_lock(&laio_engine.init_mu);
	pthread_mutex_lock(&laio_engine.mu);
}

static void engine_fork_parent(void)
{
	pthread_mutex_unlock(&laio_engine.mu);
	pthread_mutex_unlock(&laio_engine.init_mu);
}

/* The child has none of the parent's background calls. */
static void engine_fork_child(void)
{
	struct laio_engine *e = &laio_engine;
	struct laio_slab *s, *next;

	pthread_mutex_init(&e->init_mu, NULL);
	pthread_mutex_init(&e->mu, NULL);
	/* A loop another thread was inside may be mid-update: leak it. */
	if (e->loop && !e->driving)
		uaio_loop_free(e->loop);
	e->loop = NULL;
	for (s = e->slabs; s; s = next) {
		next = s->next;
		for (int i = 0; i < SLAB_CALLS; i++)
			free(s->calls[i].iov);
		free(s);
	}
	e->slabs = NULL;
	e->free = e->cq_head = e->cq_tail = NULL;
	e->ncq = e->outstanding = 0;
	e->driving = false;
	e->has_driver = false;
	e->waiters = 0;
	if (e->efd >= 0)
		close(e->efd);
	if (e->epfd >= 0)
		close(e->epfd);
	e->efd = e->epfd = -1;
	e->efd_set = false;
	laio_last = NULL;
	atomic_store(&e->ready, false);
}

static int engine_init_locked(void)
{
	struct laio_engine *e = &laio_engine;
	static bool atfork_done;
	struct uaio_loop_params p = {
		.flags = UAIO_LOOP_THREADSAFE,
		.entries = 1024,
		.workers = 8,
	};
	pthread_condattr_t ca;
	const char *m = getenv("LAIO_BG");

	if (!atfork_done) {
		if (pthread_atfork(engine_fork_prepare, engine_fork_parent,
				   engine_fork_child))
			return -ENOMEM;
		atfork_done = true;
	}
	e->mech = LAIO_MECH_DEFAULT;
	if (m && !strcmp(m, "op"))
		e->mech = LAIO_MECH_OP;
	else if (m && !strcmp(m, "poll"))
		e->mech = LAIO_MECH_POLL;
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

static int engine_get(void)
{
	int r = 0;

	if (UAIO_LIKELY(atomic_load_explicit(&laio_engine.ready,
					     memory_order_acquire)))
		return 0;
	pthread_mutex_lock(&laio_engine.init_mu);
	if (!atomic_load(&laio_engine.ready))
		r = engine_init_locked();
	pthread_mutex_unlock(&laio_engine.init_mu);
	return r;
}

int laio__mechanism(void)
{
	return engine_get() < 0 ? -1 : laio_engine.mech;
}

const char *laio__backend_name(void)
{
	return engine_get() < 0 ? "none" : uaio_loop_backend_name(laio_engine.loop);
}

/* --------------------------------------------------------- records */

static struct laio_call *call_alloc_locked(void)
{
	struct laio_engine *e = &laio_engine;
	struct laio_call *r;

	if (!e->free) {
		struct laio_slab *s = calloc(1, sizeof(*s));

		if (!s)
			return NULL;
		s->next = e->slabs;
		e->slabs = s;
		for (int i = SLAB_CALLS - 1; i >= 0; i--) {
			s->calls[i].next = e->free;
			e->free = &s->calls[i];
		}
	}
	r = e->free;
	e->free = r->next;
	r->next = NULL;
	return r;
}

static void call_release_locked(struct laio_call *r)
{
	free(r->iov);
	r->iov = NULL;
	r->magic = 0;
	r->phase = PH_FREE;
	r->flags = 0;
	r->next = laio_engine.free;
	laio_engine.free = r;
}

static struct laio_call *call_new(long nr, const long *a)
{
	struct laio_call *r;

	pthread_mutex_lock(&laio_engine.mu);
	r = call_alloc_locked();
	pthread_mutex_unlock(&laio_engine.mu);
	if (!r)
		return NULL;
	r->nr = nr;
	memcpy(r->a, a, sizeof(r->a));
	r->ret = 0;
	r->done = 0;
	r->iovcnt = 0;
	r->flags = 0;
	r->ftype = 0;
	r->retries = 0;
	return r;
}

static void nop_post(void *data)
{
	(void)data;
}

/* Nothing may be left for a driver asleep in the kernel to wait for. */
static void outstanding_dec_locked(void)
{
	if (--laio_engine.outstanding == 0 && laio_engine.driving)
		uaio_loop_post(laio_engine.loop, nop_post, NULL);
}

/* Keeps laio_fd()'s eventfd readable exactly while completions wait. */
static void efd_sync_locked(void)
{
	struct laio_engine *e = &laio_engine;
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
static void call_finish(struct laio_call *r, long res)
{
	struct laio_engine *e = &laio_engine;

	pthread_mutex_lock(&e->mu);
	r->ret = res;
	if (r->phase == PH_TRY) {
		r->phase = PH_INLINE;
	} else {
		r->phase = PH_QUEUED;
		r->next = NULL;
		if (e->cq_tail)
			e->cq_tail->next = r;
		else
			e->cq_head = r;
		e->cq_tail = r;
		e->ncq++;
		if (e->waiters)
			pthread_cond_signal(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
}

/* Runs the loop once without waiting if nobody else is running it.
 * Called and returns with mu held. */
static void drive_locked(int64_t timeout_ns)
{
	struct laio_engine *e = &laio_engine;

	e->driving = true;
	e->has_driver = true;
	e->driver = pthread_self();
	pthread_mutex_unlock(&e->mu);
	uaio_loop_run_once(e->loop, timeout_ns);
	pthread_mutex_lock(&e->mu);
	e->driving = false;
	if (e->waiters)
		pthread_cond_broadcast(&e->cv);
}

/* ------------------------------------------------------- attempts */

static inline long sysret(long r)
{
	return r < 0 ? -errno : r;
}

/* Returns to the caller the way syscall(2) does. */
static inline long ret_inline(long res)
{
	laio_last = NULL;
	if (res < 0 && res > -4096) {
		errno = (int)-res;
		return -1;
	}
	return res;
}

static long ret_background(struct laio_call *r)
{
	laio_last = r;
	errno = EINPROGRESS;
	return -1;
}

static bool is_write_nr(long nr)
{
	switch (nr) {
	case SYS_write: case SYS_writev: case SYS_pwrite64: case SYS_pwritev:
	case SYS_pwritev2: case SYS_sendto: case SYS_sendmsg:
		return true;
	}
	return false;
}

/* The current iov of a read/write-class call (single buffers as iov1). */
static const struct iovec *call_iov(struct laio_call *r, struct iovec *iov1,
				    int *cnt)
{
	if (r->iov) {
		*cnt = r->iovcnt;
		return r->iov;
	}
	switch (r->nr) {
	case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64:
	case SYS_recvfrom: case SYS_sendto:
		iov1->iov_base = (char *)r->a[1] + r->done;
		iov1->iov_len = (size_t)r->a[2] - r->done;
		*cnt = 1;
		return iov1;
	}
	*cnt = (int)r->a[2];
	return (const struct iovec *)r->a[1];
}

/*
 * One non-blocking attempt of a read/write/socket-class call; returns its
 * result or -errno (-EAGAIN: would block, -EOPNOTSUPP: cannot tell).
 */
static long try_nowait(struct laio_call *r)
{
	const long *a = r->a;
	struct iovec iov1;
	const struct iovec *iov;
	int cnt;
	int fd = (int)a[0];

	switch (r->nr) {
	case SYS_recvfrom:
		return sysret(recvfrom(fd, (void *)a[1], (size_t)a[2],
				       (int)a[3] | MSG_DONTWAIT,
				       (struct sockaddr *)a[4], (socklen_t *)a[5]));
	case SYS_sendto:
		return sysret(sendto(fd, (char *)a[1] + r->done,
				     (size_t)a[2] - r->done,
				     (int)a[3] | MSG_DONTWAIT,
				     (const struct sockaddr *)a[4], (socklen_t)a[5]));
	case SYS_recvmsg:
		return sysret(recvmsg(fd, (struct msghdr *)a[1],
				      (int)a[2] | MSG_DONTWAIT));
	case SYS_sendmsg:
		return sysret(sendmsg(fd, (const struct msghdr *)a[1],
				      (int)a[2] | MSG_DONTWAIT));
	}
	iov = call_iov(r, &iov1, &cnt);
	switch (r->nr) {
	case SYS_read: case SYS_readv:
		return sysret(preadv2(fd, iov, cnt, -1, RWF_NOWAIT));
	case SYS_pread64: case SYS_preadv:
		return sysret(preadv2(fd, iov, cnt, a[3], RWF_NOWAIT));
	case SYS_preadv2:
		return sysret(preadv2(fd, iov, cnt, a[3], (int)a[5] | RWF_NOWAIT));
	case SYS_write: case SYS_writev:
		return sysret(pwritev2(fd, iov, cnt, -1, RWF_NOWAIT));
	case SYS_pwrite64: case SYS_pwritev:
		return sysret(pwritev2(fd, iov, cnt, a[3] + (long)r->done, RWF_NOWAIT));
	case SYS_pwritev2:
		return sysret(pwritev2(fd, iov, cnt, a[3], (int)a[5] | RWF_NOWAIT));
	}
	return -ENOSYS;
}

static bool fd_isreg(struct laio_call *r)
{
	struct stat st;

	if (!r->ftype)
		r->ftype = fstat((int)r->a[0], &st) == 0 && S_ISREG(st.st_mode) ?
			   CF_ISREG : CF_NOTREG;
	return r->ftype == CF_ISREG;
}

/* Drops the first n bytes of the remaining writev iovs (continuation). */
static int iov_advance(struct laio_call *r, size_t n)
{
	struct iovec iov1;
	const struct iovec *iov;
	int cnt, i = 0;
	struct iovec *copy;

	iov = call_iov(r, &iov1, &cnt);
	if (iov == &iov1)
		return 0;	/* single buffer: r->done is enough */
	while (i < cnt && n >= iov[i].iov_len)
		n -= iov[i++].iov_len;
	copy = malloc(sizeof(*copy) * (size_t)(cnt - i ? cnt - i : 1));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, iov + i, sizeof(*copy) * (size_t)(cnt - i));
	if (cnt - i) {
		copy[0].iov_base = (char *)copy[0].iov_base + n;
		copy[0].iov_len -= n;
	}
	free(r->iov);
	r->iov = copy;
	r->iovcnt = cnt - i;
	return 0;
}

/* ----------------------------------------------------- background */

static void op_cb(uaio_op *op, int res, void *data);
static void poll_cb(uaio_op *op, int res, void *data);
static void work_cb(uaio_op *op, int res, void *data);

static long work_fn(void *arg)
{
	struct laio_call *r = arg;
	const long *a = r->a;

	return sysret(syscall(r->nr, a[0], a[1], a[2], a[3], a[4], a[5]));
}

static int submit_work(struct laio_call *r)
{
	r->kind = K_WORK;
	return uaio_op_work(laio_engine.loop, &r->op, work_fn, r, work_cb, r);
}

static int submit_poll(struct laio_call *r)
{
	short ev = is_write_nr(r->nr) ? POLLOUT : POLLIN;

	r->kind = K_POLL;
	return uaio_op_poll(laio_engine.loop, &r->op, (int)r->a[0], ev, poll_cb, r);
}

/* The read/write/socket-class call as one uaio op; -EOPNOTSUPP when the
 * core has no op for this form of it. */
static int submit_rw_op(struct laio_call *r)
{
	uaio_loop *l = laio_engine.loop;
	const long *a = r->a;
	int fd = (int)a[0];
	struct iovec iov1;
	const struct iovec *iov;
	int cnt;

	r->kind = K_OP;
	switch (r->nr) {
	case SYS_recvfrom:
		if (a[4])
			return -EOPNOTSUPP;
		return uaio_op_recv(l, &r->op, fd, (void *)a[1], (size_t)a[2],
				    (int)a[3], op_cb, r);
	case SYS_sendto:
		if (a[4])
			return -EOPNOTSUPP;
		return uaio_op_send(l, &r->op, fd, (char *)a[1] + r->done,
				    (size_t)a[2] - r->done, (int)a[3], op_cb, r);
	case SYS_recvmsg:
		return uaio_op_recvmsg(l, &r->op, fd, (struct msghdr *)a[1],
				       (int)a[2], op_cb, r);
	case SYS_sendmsg:
		return uaio_op_sendmsg(l, &r->op, fd, (const struct msghdr *)a[1],
				       (int)a[2], op_cb, r);
	case SYS_preadv2: case SYS_pwritev2:
		if (a[5])
			return -EOPNOTSUPP;	/* flags the op cannot carry */
		break;
	}
	iov = call_iov(r, &iov1, &cnt);
	switch (r->nr) {
	case SYS_read:
		return uaio_op_read(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				    -1, op_cb, r);
	case SYS_pread64:
		return uaio_op_read(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				    a[3], op_cb, r);
	case SYS_write:
		return uaio_op_write(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				     -1, op_cb, r);
	case SYS_pwrite64:
		return uaio_op_write(l, &r->op, fd, iov1.iov_base, iov1.iov_len,
				     a[3] + (long)r->done, op_cb, r);
	case SYS_readv:
		return uaio_op_readv(l, &r->op, fd, iov, cnt, -1, op_cb, r);
	case SYS_preadv: case SYS_preadv2:
		return uaio_op_readv(l, &r->op, fd, iov, cnt, a[3], op_cb, r);
	case SYS_writev:
		return uaio_op_writev(l, &r->op, fd, iov, cnt, -1, op_cb, r);
	case SYS_pwritev: case SYS_pwritev2:
		return uaio_op_writev(l, &r->op, fd, iov, cnt, a[3], op_cb, r);
	}
	return -EOPNOTSUPP;
}

/* Next background step of a read/write-class call that would block. */
static int submit_rw_bg(struct laio_call *r)
{
	int ret;

	if (laio_engine.mech == LAIO_MECH_POLL && !fd_isreg(r) &&
	    r->retries < 4)
		ret = submit_poll(r);
	else
		ret = submit_rw_op(r);
	if (ret < 0)
		ret = submit_work(r);
	return ret;
}

/* Resubmits r from its own callback unless a cancel asked otherwise. */
static void resubmit(struct laio_call *r, int (*fn)(struct laio_call *))
{
	int ret;

	pthread_mutex_lock(&laio_engine.mu);
	ret = r->flags & CF_CANCEL_REQ ? -ECANCELED : fn(r);
	pthread_mutex_unlock(&laio_engine.mu);
	if (ret < 0)
		call_finish(r, ret);
}

/* A write to a pipe or socket that blocks writes everything: continue. */
static bool continue_write(struct laio_call *r, long res)
{
	struct iovec iov1;
	int cnt;

	if (res <= 0 || !is_write_nr(r->nr) || r->nr == SYS_sendmsg ||
	    fd_isreg(r))
		return false;
	call_iov(r, &iov1, &cnt);
	{
		size_t left = 0;
		const struct iovec *iov = call_iov(r, &iov1, &cnt);

		for (int i = 0; i < cnt; i++)
			left += iov[i].iov_len;
		if ((size_t)res >= left)
			return false;
	}
	if (iov_advance(r, (size_t)res) < 0)
		return false;
	r->done += (size_t)res;
	return true;
}

static void op_cb(uaio_op *op, int res, void *data)
{
	struct laio_call *r = data;

	if (continue_write(r, res)) {
		resubmit(r, submit_rw_bg);
		return;
	}
	if (res >= 0)
		res += (int)r->done;
	else if (r->done && res != -ECANCELED)
		res = (int)r->done;
	call_finish(r, res);
}

static void poll_cb(uaio_op *op, int res, void *data)
{
	struct laio_call *r = data;
	long v;

	if (res < 0) {
		call_finish(r, r->done && res != -ECANCELED ? (long)r->done : res);
		return;
	}
	v = try_nowait(r);
	if (v == -EAGAIN || v == -EOPNOTSUPP || continue_write(r, v)) {
		if (v == -EAGAIN || v == -EOPNOTSUPP)
			r->retries++;
		resubmit(r, submit_rw_bg);
		return;
	}
	if (v >= 0)
		v += (long)r->done;
	else if (r->done)
		v = (long)r->done;
	call_finish(r, v);
}

static void work_cb(uaio_op *op, int res, void *data)
{
	call_finish(data, uaio_op_result_long(op));
}

/* Starts r in the background (submit(r) queues its first op). */
static long go_background(struct laio_call *r, int (*submit)(struct laio_call *))
{
	struct laio_engine *e = &laio_engine;
	int ret;

	pthread_mutex_lock(&e->mu);
	r->phase = PH_BG;
	r->magic = LAIO_MAGIC;
	e->outstanding++;
	ret = submit(r);
	if (ret < 0 && submit != submit_work)
		ret = submit_work(r);
	if (ret < 0) {
		outstanding_dec_locked();
		call_release_locked(r);
		pthread_mutex_unlock(&e->mu);
		return ret_inline(ret);
	}
	/* The core issues to io_uring only from the thread that last ran
	 * the loop; if that is not us and nobody runs it now, take over
	 * rather than leave the op waiting for the next laio_poll(). */
	if (!e->driving && r->kind != K_WORK &&
	    (!e->has_driver || !pthread_equal(e->driver, pthread_self()))) {
		drive_locked(0);
		efd_sync_locked();
	}
	pthread_mutex_unlock(&e->mu);
	return ret_background(r);
}

/*
 * io_uring-class call: submit(r) queues the op; if the kernel completed it
 * during submission the loop has the result at once and the caller gets
 * it inline, otherwise the call stays in the background.
 */
static long try_ring(long nr, const long *a, int (*submit)(struct laio_call *))
{
	struct laio_engine *e = &laio_engine;
	struct laio_call *r;
	int ret;
	long res;

	if (engine_get() < 0 || !(r = call_new(nr, a)))
		return ret_inline(-EAGAIN);
	r->phase = PH_TRY;
	r->kind = K_OP;
	ret = submit(r);
	if (ret < 0)
		return go_background(r, submit_work);
	pthread_mutex_lock(&e->mu);
	if (r->phase == PH_TRY && !e->driving)
		drive_locked(0);
	if (r->phase == PH_INLINE) {
		res = r->ret;
		call_release_locked(r);
		efd_sync_locked();
		pthread_mutex_unlock(&e->mu);
		return ret_inline(res);
	}
	r->phase = PH_BG;
	r->magic = LAIO_MAGIC;
	e->outstanding++;
	efd_sync_locked();
	pthread_mutex_unlock(&e->mu);
	return ret_background(r);
}

/* ------------------------------------------------- io_uring class */

#define A(i) (r->a[i])
#define L (laio_engine.loop)
#define OPARGS op_cb, r

static int s_accept(struct laio_call *r)
{
	return uaio_op_accept(L, &r->op, (int)A(0), (struct sockaddr *)A(1),
			      (socklen_t *)A(2), r->nr == SYS_accept ? 0 : (int)A(3),
			      OPARGS);
}
static int s_connect(struct laio_call *r)
{
	return uaio_op_connect(L, &r->op, (int)A(0), (const struct sockaddr *)A(1),
			       (socklen_t)A(2), OPARGS);
}
/* a[] normalised to openat(dfd, path, flags, mode) */
static int s_openat(struct laio_call *r)
{
	return uaio_op_openat(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
			      (mode_t)A(3), OPARGS);
}
static int s_openat2(struct laio_call *r)
{
	return uaio_op_openat2(L, &r->op, (int)A(0), (const char *)A(1),
			       (struct open_how *)A(2), OPARGS);
}
static int s_close(struct laio_call *r)
{
	return uaio_op_close(L, &r->op, (int)A(0), OPARGS);
}
static int s_statx(struct laio_call *r)
{
	return uaio_op_statx(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
			     (unsigned)A(3), (struct statx *)A(4), OPARGS);
}
static int s_fsync(struct laio_call *r)
{
	return uaio_op_fsync(L, &r->op, (int)A(0), r->nr == SYS_fdatasync, OPARGS);
}
static int s_fallocate(struct laio_call *r)
{
	return uaio_op_fallocate(L, &r->op, (int)A(0), (int)A(1), A(2), A(3), OPARGS);
}
/* normalised to unlinkat(dfd, path, flags) */
static int s_unlinkat(struct laio_call *r)
{
	return uaio_op_unlinkat(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
				OPARGS);
}
/* normalised to renameat2(od, op, nd, np, flags) */
static int s_renameat(struct laio_call *r)
{
	return uaio_op_renameat(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
				(const char *)A(3), (unsigned)A(4), OPARGS);
}
/* normalised to mkdirat(dfd, path, mode) */
static int s_mkdirat(struct laio_call *r)
{
	return uaio_op_mkdirat(L, &r->op, (int)A(0), (const char *)A(1),
			       (mode_t)A(2), OPARGS);
}
/* normalised to symlinkat(target, dfd, path) */
static int s_symlinkat(struct laio_call *r)
{
	return uaio_op_symlinkat(L, &r->op, (const char *)A(0), (int)A(1),
				 (const char *)A(2), OPARGS);
}
/* normalised to linkat(od, op, nd, np, flags) */
static int s_linkat(struct laio_call *r)
{
	return uaio_op_linkat(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
			      (const char *)A(3), (int)A(4), OPARGS);
}
static int s_fadvise(struct laio_call *r)
{
	return uaio_op_fadvise(L, &r->op, (int)A(0), A(1), A(2), (int)A(3), OPARGS);
}
static int s_madvise(struct laio_call *r)
{
	return uaio_op_madvise(L, &r->op, (void *)A(0), (size_t)A(1), (int)A(2),
			       OPARGS);
}
static int s_splice(struct laio_call *r)
{
	return uaio_op_splice(L, &r->op, (int)A(0), -1, (int)A(2), -1, (size_t)A(4),
			      (unsigned)A(5), OPARGS);
}
static int s_tee(struct laio_call *r)
{
	return uaio_op_tee(L, &r->op, (int)A(0), (int)A(1), (size_t)A(2),
			   (unsigned)A(3), OPARGS);
}
static int s_shutdown(struct laio_call *r)
{
	return uaio_op_shutdown(L, &r->op, (int)A(0), (int)A(1), OPARGS);
}

#undef A
#undef L
#undef OPARGS

/* ------------------------------------------------- classification */

static uint64_t laio_known[1024 / 64];	/* syscall numbers this build knows */
static pthread_once_t laio_known_once = PTHREAD_ONCE_INIT;

static void known_init(void)
{
	static const long nums[] = {
#define LAIO_SYS(name) SYS_##name,
#include "laio/sysnums.h"
#undef LAIO_SYS
	};

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (nums[i] >= 0 && nums[i] < 1024)
			laio_known[nums[i] / 64] |= 1ull << (nums[i] % 64);
}

static bool known(long nr)
{
	if (nr < 0 || nr >= 1024)
		return false;
	pthread_once(&laio_known_once, known_init);
	return laio_known[nr / 64] >> (nr % 64) & 1;
}

/* Calls that only make sense in the calling thread, or never block. */
static bool run_inline(long nr)
{
	switch (nr) {
	/* process and thread lifecycle */
	case SYS_exit: case SYS_exit_group: case SYS_fork: case SYS_vfork:
	case SYS_clone: case SYS_execve: case SYS_execveat:
#ifdef SYS_clone3
	case SYS_clone3:
#endif
	case SYS_set_tid_address: case SYS_set_robust_list:
	case SYS_get_robust_list: case SYS_restart_syscall:
#ifdef SYS_rseq
	case SYS_rseq:
#endif
#ifdef SYS_arch_prctl
	case SYS_arch_prctl:
#endif
	case SYS_prctl: case SYS_personality: case SYS_seccomp:
	case SYS_unshare: case SYS_setns:
	/* signal state of the calling thread */
	case SYS_rt_sigprocmask: case SYS_rt_sigaction: case SYS_rt_sigreturn:
	case SYS_sigaltstack: case SYS_rt_sigpending: case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait:
#ifdef SYS_pause
	case SYS_pause:
#endif
	/* identity, credentials (per thread at the syscall level), limits */
	case SYS_getpid: case SYS_getppid: case SYS_gettid:
	case SYS_getuid: case SYS_geteuid: case SYS_getgid: case SYS_getegid:
	case SYS_getresuid: case SYS_getresgid: case SYS_getgroups:
	case SYS_setuid: case SYS_setgid: case SYS_setreuid: case SYS_setregid:
	case SYS_setresuid: case SYS_setresgid: case SYS_setfsuid:
	case SYS_setfsgid: case SYS_setgroups: case SYS_capget: case SYS_capset:
	case SYS_getpgid: case SYS_setpgid: case SYS_getsid: case SYS_setsid:
#ifdef SYS_getpgrp
	case SYS_getpgrp:
#endif
#ifdef SYS_getrlimit
	case SYS_getrlimit:
#endif
	case SYS_setrlimit: case SYS_prlimit64: case SYS_getrusage:
	case SYS_umask: case SYS_times:
	/* scheduling of the calling thread */
	case SYS_sched_yield: case SYS_sched_getaffinity:
	case SYS_sched_setaffinity: case SYS_sched_getparam:
	case SYS_sched_setparam: case SYS_sched_getscheduler:
	case SYS_sched_setscheduler: case SYS_sched_getattr:
	case SYS_sched_setattr: case SYS_getpriority: case SYS_setpriority:
	case SYS_ioprio_get: case SYS_ioprio_set: case SYS_getcpu:
	case SYS_set_mempolicy: case SYS_get_mempolicy:
#ifdef SYS_modify_ldt
	case SYS_modify_ldt:
#endif
#ifdef SYS_ioperm
	case SYS_ioperm: case SYS_iopl:
#endif
	/* clocks and fixed facts: cannot block */
	case SYS_clock_gettime: case SYS_clock_getres: case SYS_gettimeofday:
	case SYS_uname:
#ifdef SYS_time
	case SYS_time:
#endif
	/* not implemented on x86-64: the kernel answers ENOSYS at once */
#ifdef SYS_afs_syscall
	case SYS_afs_syscall: case SYS_tuxcall: case SYS_security:
	case SYS_vserver: case SYS_getpmsg: case SYS_putpmsg:
	case SYS_create_module: case SYS_get_kernel_syms:
	case SYS_query_module: case SYS_nfsservctl: case SYS__sysctl:
	case SYS_set_thread_area: case SYS_get_thread_area:
	case SYS_lookup_dcookie: case SYS_uselib:
#endif
		return true;
	}
	return false;
}

/* --------------------------------------------------------- the API */

static long rw_call(long nr, const long *a)
{
	struct laio_call tmp, *r;
	long res;
	int fl;

	/* The kernel would refuse these forms before blocking. */
	if ((nr == SYS_pread64 || nr == SYS_pwrite64 || nr == SYS_preadv ||
	     nr == SYS_pwritev) && a[3] < 0)
		return ret_inline(-EINVAL);
	if ((nr == SYS_preadv2 || nr == SYS_pwritev2) && a[3] < -1)
		return ret_inline(-EINVAL);
	if ((nr == SYS_preadv2 || nr == SYS_pwritev2) && (a[5] & RWF_NOWAIT))
		return ret_inline(sysret(syscall(nr, a[0], a[1], a[2], a[3],
						 a[4], a[5])));
	if ((nr == SYS_recvfrom || nr == SYS_sendto) && (a[3] & MSG_DONTWAIT))
		return ret_inline(sysret(syscall(nr, a[0], a[1], a[2], a[3],
						 a[4], a[5])));
	if ((nr == SYS_recvmsg || nr == SYS_sendmsg) && (a[2] & MSG_DONTWAIT))
		return ret_inline(sysret(syscall(nr, a[0], a[1], a[2])));

	tmp.nr = nr;
	memcpy(tmp.a, a, sizeof(tmp.a));
	tmp.done = 0;
	tmp.iov = NULL;
	tmp.ftype = 0;
	res = try_nowait(&tmp);
	if (UAIO_LIKELY(res != -EAGAIN && res != -EOPNOTSUPP)) {
		/* A blocking write to a pipe or socket writes it all. */
		if (res > 0 && is_write_nr(nr) && nr != SYS_sendmsg &&
		    continue_write(&tmp, res)) {
			fl = fcntl((int)a[0], F_GETFL);
			if (fl >= 0 && !(fl & O_NONBLOCK))
				goto background;
			free(tmp.iov);
			return ret_inline(res);
		}
		return ret_inline(res);
	}
	if (res == -EAGAIN) {
		/* A caller's O_NONBLOCK pipe or socket does not block. */
		fl = fcntl((int)a[0], F_GETFL);
		if (fl >= 0 && (fl & O_NONBLOCK) && !fd_isreg(&tmp))
			return ret_inline(-EAGAIN);
	}
	tmp.done = 0;
	free(tmp.iov);
	tmp.iov = NULL;
background:
	if (engine_get() < 0 || !(r = call_new(nr, a))) {
		free(tmp.iov);
		return ret_inline(-EAGAIN);
	}
	r->done = tmp.done;
	r->iov = tmp.iov;
	r->iovcnt = tmp.iovcnt;
	r->ftype = tmp.ftype;
	if (res == -EOPNOTSUPP)
		r->retries = 4;	/* polling cannot tell: use the op */
	return go_background(r, submit_rw_bg);
}

static long open_call(long nr, long *a)
{
	/* Cached lookups complete in the caller (what io_uring tries too). */
	if (!((int)a[2] & (O_CREAT | O_TRUNC | O_TMPFILE))) {
		struct open_how how = {
			.flags = (uint64_t)(unsigned)a[2],
			.resolve = RESOLVE_CACHED,
		};
		long fd = syscall(SYS_openat2, (int)a[0], (const char *)a[1], &how,
				  sizeof(how));

		if (fd >= 0)
			return ret_inline(fd);
		if (errno != EAGAIN && errno != EINVAL && errno != ENOSYS &&
		    errno != E2BIG)
			return ret_inline(-errno);
	}
	return try_ring(nr, a, s_openat);
}

static long openat2_call(long nr, long *a)
{
	struct open_how *how = (struct open_how *)a[2];

	if ((size_t)a[3] != sizeof(struct open_how) || !how)
		goto pool;
	if (!(how->flags & (O_CREAT | O_TRUNC | O_TMPFILE)) &&
	    !(how->resolve & RESOLVE_CACHED)) {
		struct open_how h = *how;
		long fd;

		h.resolve |= RESOLVE_CACHED;
		fd = syscall(SYS_openat2, (int)a[0], (const char *)a[1], &h, sizeof(h));
		if (fd >= 0)
			return ret_inline(fd);
		if (errno != EAGAIN)
			return ret_inline(-errno);
	} else if (how->resolve & RESOLVE_CACHED) {
		return ret_inline(sysret(syscall(nr, a[0], a[1], a[2], a[3])));
	}
	return try_ring(nr, a, s_openat2);
pool: {
		struct laio_call *r;

		if (engine_get() < 0 || !(r = call_new(nr, a)))
			return ret_inline(-EAGAIN);
		return go_background(r, submit_work);
	}
}

static long pool_call(long nr, const long *a)
{
	struct laio_call *r;

	if (engine_get() < 0 || !(r = call_new(nr, a)))
		return ret_inline(-EAGAIN);
	return go_background(r, submit_work);
}

__attribute__((visibility("default")))
long laio_syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);

	/* The hot cases, read(2) and pread(2) that do not block: one raw
	 * syscall (no cancellation-point wrapper), nothing else. A part of a
	 * pread from the cache is left to the full path. */
	if (UAIO_LIKELY(nr == SYS_read || (nr == SYS_pread64 && a[3] >= 0))) {
		struct iovec iov = { (void *)a[1], (size_t)a[2] };
		long r = syscall(SYS_preadv2, a[0], &iov, 1, nr == SYS_read ? -1L : a[3], 0L,
				 RWF_NOWAIT);

		if (r < 0 ? errno != EAGAIN && errno != EOPNOTSUPP
			  : nr == SYS_read || r == 0 || r == a[2]) {
			laio_last = NULL;
			return r;
		}
	}

	switch (nr) {
	case SYS_read: case SYS_write: case SYS_readv: case SYS_writev:
	case SYS_pread64: case SYS_pwrite64: case SYS_preadv: case SYS_pwritev:
	case SYS_preadv2: case SYS_pwritev2:
	case SYS_recvfrom: case SYS_sendto: case SYS_recvmsg: case SYS_sendmsg:
		return rw_call(nr, a);

	case SYS_accept: case SYS_accept4: case SYS_connect: {
		/* io_uring waits even on the caller's O_NONBLOCK socket,
		 * where the syscall itself cannot block: run it here. */
		int fl = fcntl((int)a[0], F_GETFL);

		if (fl < 0 || (fl & O_NONBLOCK))
			return ret_inline(sysret(syscall(nr, a[0], a[1], a[2], a[3])));
		return try_ring(nr, a, nr == SYS_connect ? s_connect : s_accept);
	}
#ifdef SYS_open
	case SYS_open:
		memmove(a + 1, a, 3 * sizeof(long));
		a[0] = AT_FDCWD;
		return open_call(nr, a);
#endif
#ifdef SYS_creat
	case SYS_creat:
		a[3] = a[1];
		a[2] = O_CREAT | O_WRONLY | O_TRUNC;
		a[1] = a[0];
		a[0] = AT_FDCWD;
		return open_call(nr, a);
#endif
	case SYS_openat:
		return open_call(nr, a);
	case SYS_openat2:
		return openat2_call(nr, a);
	case SYS_close:
		return try_ring(nr, a, s_close);
	case SYS_statx:
		return try_ring(nr, a, s_statx);
	case SYS_fsync: case SYS_fdatasync:
		return try_ring(nr, a, s_fsync);
	case SYS_fallocate:
		return try_ring(nr, a, s_fallocate);
	case SYS_unlinkat:
		return try_ring(nr, a, s_unlinkat);
#ifdef SYS_unlink
	case SYS_unlink: case SYS_rmdir:
		a[2] = nr == SYS_rmdir ? AT_REMOVEDIR : 0;
		a[1] = a[0];
		a[0] = AT_FDCWD;
		return try_ring(nr, a, s_unlinkat);
#endif
	case SYS_renameat:
		a[4] = 0;
		return try_ring(nr, a, s_renameat);
	case SYS_renameat2:
		return try_ring(nr, a, s_renameat);
#ifdef SYS_rename
	case SYS_rename:
		a[3] = a[1];
		a[2] = AT_FDCWD;
		a[1] = a[0];
		a[0] = AT_FDCWD;
		a[4] = 0;
		return try_ring(nr, a, s_renameat);
#endif
	case SYS_mkdirat:
		return try_ring(nr, a, s_mkdirat);
#ifdef SYS_mkdir
	case SYS_mkdir:
		a[2] = a[1];
		a[1] = a[0];
		a[0] = AT_FDCWD;
		return try_ring(nr, a, s_mkdirat);
#endif
	case SYS_symlinkat:
		return try_ring(nr, a, s_symlinkat);
#ifdef SYS_symlink
	case SYS_symlink:
		a[2] = a[1];
		a[1] = AT_FDCWD;
		return try_ring(nr, a, s_symlinkat);
#endif
	case SYS_linkat:
		return try_ring(nr, a, s_linkat);
#ifdef SYS_link
	case SYS_link:
		a[3] = a[1];
		a[2] = AT_FDCWD;
		a[1] = a[0];
		a[0] = AT_FDCWD;
		a[4] = 0;
		return try_ring(nr, a, s_linkat);
#endif
#ifdef SYS_fadvise64
	case SYS_fadvise64:
		return try_ring(nr, a, s_fadvise);
#endif
	case SYS_madvise:
		return try_ring(nr, a, s_madvise);
	case SYS_splice:
		/* io_uring does not update the caller's offsets: pool */
		if (a[1] || a[3])
			return pool_call(nr, a);
		return try_ring(nr, a, s_splice);
	case SYS_tee:
		return try_ring(nr, a, s_tee);
	case SYS_shutdown:
		return try_ring(nr, a, s_shutdown);
	}
	/* The kernel would truncate it to an int and run another call. */
	if (nr < 0 || nr > INT_MAX)
		return ret_inline(-ENOSYS);
	if (run_inline(nr) || !known(nr))
		return ret_inline(sysret(syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5])));
	return pool_call(nr, a);
}

__attribute__((visibility("default")))
void *laio_gethandle(void)
{
	return laio_last;
}

static bool call_valid_locked(const struct laio_call *r)
{
	for (struct laio_slab *s = laio_engine.slabs; s; s = s->next)
		if ((const char *)r >= (const char *)s->calls &&
		    (const char *)r < (const char *)(s->calls + SLAB_CALLS))
			return ((const char *)r - (const char *)s->calls) %
			       sizeof(*r) == 0;
	return false;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int drain_locked(struct laio_completion *c, int n)
{
	struct laio_engine *e = &laio_engine;
	int got = 0;

	while (got < n && e->cq_head) {
		struct laio_call *r = e->cq_head;

		e->cq_head = r->next;
		if (!e->cq_head)
			e->cq_tail = NULL;
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
		outstanding_dec_locked();
		r->magic = 0;
		if (r->flags & CF_CANCEL_OP)
			r->flags |= CF_RELEASE;
		else
			call_release_locked(r);
	}
	return got;
}

__attribute__((visibility("default")))
int laio_poll(struct laio_completion *c, int n, const struct timespec *timeout)
{
	struct laio_engine *e = &laio_engine;
	int64_t deadline = -1, now;
	int got = 0;

	if (!c || n <= 0 || (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 ||
					 timeout->tv_nsec >= 1000000000))) {
		errno = EINVAL;
		return -1;
	}
	if (!atomic_load_explicit(&e->ready, memory_order_acquire))
		return 0;
	if (timeout)
		deadline = timeout->tv_sec || timeout->tv_nsec ?
			   mono_ns() + timeout->tv_sec * 1000000000ll + timeout->tv_nsec : 0;
	pthread_mutex_lock(&e->mu);
	for (;;) {
		if (e->ncq) {
			got = drain_locked(c, n);
			break;
		}
		if (!e->outstanding)
			break;
		if (deadline == 0) {
			if (e->driving)
				break;
			drive_locked(0);
			got = drain_locked(c, n);
			break;
		}
		now = deadline > 0 ? mono_ns() : 0;
		if (deadline > 0 && now >= deadline)
			break;
		if (!e->driving) {
			drive_locked(deadline > 0 ? deadline - now : -1);
			continue;
		}
		e->waiters++;
		if (deadline > 0) {
			struct timespec ts = {
				.tv_sec = deadline / 1000000000,
				.tv_nsec = deadline % 1000000000,
			};
			pthread_cond_timedwait(&e->cv, &e->mu, &ts);
		} else {
			pthread_cond_wait(&e->cv, &e->mu);
		}
		e->waiters--;
	}
	efd_sync_locked();
	/* Someone else may be waiting for what we left behind. */
	if (e->ncq && e->waiters)
		pthread_cond_signal(&e->cv);
	pthread_mutex_unlock(&e->mu);
	return got;
}

__attribute__((visibility("default")))
int laio_fd(void)
{
	struct laio_engine *e = &laio_engine;
	struct epoll_event ev = { .events = EPOLLIN };
	int r, fd;

	if ((r = engine_get()) < 0) {
		errno = -r;
		return -1;
	}
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
			errno = r;
			return -1;
		}
		e->efd = efd;
		e->epfd = epfd;
		e->efd_set = false;
		efd_sync_locked();
	}
	fd = e->epfd;
	pthread_mutex_unlock(&e->mu);
	return fd;
}

static void cancel_cb(uaio_op *op, int res, void *data)
{
	struct laio_call *r = data;

	pthread_mutex_lock(&laio_engine.mu);
	r->flags &= ~CF_CANCEL_OP;
	if (r->flags & CF_RELEASE)
		call_release_locked(r);
	pthread_mutex_unlock(&laio_engine.mu);
}

__attribute__((visibility("default")))
int laio_cancel(void *handle)
{
	struct laio_engine *e = &laio_engine;
	struct laio_call *r = handle;
	int ret = 0;

	if (!r || !atomic_load_explicit(&e->ready, memory_order_acquire)) {
		errno = EINVAL;
		return -1;
	}
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
	if (ret) {
		errno = ret;
		return -1;
	}
	return 0;
}
