/* SPDX-License-Identifier: MIT */
/*
 * Loop internals shared by the loop core (loop.c), its two backends
 * (uring.c, epoll.c) and the worker pool (workers.c).
 *
 * Ownership: everything here belongs to the loop's owner thread except the
 * inbox (posts and worker completions, under inbox_lock) and, on
 * UAIO_LOOP_THREADSAFE loops, the submission state (under lock).
 */
#ifndef UAIO_CORE_INTERNAL_H
#define UAIO_CORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <uaio/loop.h>

#include "core/uaio_core.h"


#include "core/ops.h"
#include "util/plumb.h"

/* uaio_op.state */
enum {
	OS_IDLE = 0,
	OS_PENDING,	/* in loop->pending: waiting for room in the ring */
	OS_KERNEL,	/* in the io_uring */
	OS_FDQ,		/* epoll: queued on its fd, waiting for readiness */
	OS_WORKQ,	/* queued for the worker pool */
	OS_RUNNING,	/* a worker is executing it */
	OS_TIMERQ,	/* epoll: timeout op in the timer heap */
	OS_DONE,	/* result known, callback not yet run (loop->done) */
	OS_HELD,	/* behind an op on its stream (io_uring: uring_order.c) or,
			 * on epoll, at its file's position (epoll_pos.c); or a
			 * close waiting for late ops (late.c) */
	OS_MOVING,	/* taken off a queue to start again (under the lock):
			 * in flight still to uaio_op_pending and to another
			 * thread's submit, where OS_IDLE would say it is free */
};

/* uaio_op.xflags */
#define OX_MORE		0x1	/* multishot: more completions follow */
#define OX_PLAIN	0x2	/* epoll: fd lacks RWF_NOWAIT: readiness, then plain I/O */
#define OX_ORDERED	0x4	/* io_uring: its stream side's busy op */
#define OX_HEAD		0x8	/* epoll: part moved at the file position, in op->addr2 */
#define OX_POSBUSY	0x10	/* epoll: at a file's position, on a worker */
#define OX_PART		0x20	/* epoll: MSG_WAITALL part done, in op->off */
#define OX_BLOCKSOCK	0x40	/* epoll: a connect on a blocking socket */
#define OX_LATE		0x80	/* counted among its descriptors' late ops (a close waits) */
#define OX_WORKCALL	0x1000	/* epoll: as OX_BLOCKING, the backend's choice (epoll_fdq.c, go_plain) */
#define OX_MAYWAIT	0x2000	/* on the pool, a call that may wait for ever (workers.c) */
#define OX_SOCK		0x4000	/* such a call's file is a socket (workers.c) */
#define OX_STARTED	0x8000	/* io_uring close: local cancels done */
/* The caller's UAIO_OPF_* flags live above the private ones. */
#define OX_USER_SHIFT	8
#define OX_USER_MASK	0x0f00
#define OX_ISSUE_HERE	(UAIO_OPF_ISSUE_HERE << OX_USER_SHIFT)
#define OX_BLOCKING	(UAIO_OPF_BLOCKING << OX_USER_SHIFT)

/* uaio_watch.state */
#define WS_ACTIVE	0x01
#define WS_STOPPING	0x02
#define WS_ALWAYS	0x04	/* epoll: regular file, always ready */
#define WS_CLOSING	0x08	/* on loop->closing, handle_close pending */
#define WS_REMOVING	0x10	/* io_uring: poll remove in flight */
#define WS_EPOLL	0x20	/* io_uring: level-triggered, in the epoll set */
#define WS_RINGPOLL	0x40	/* io_uring: epoll refused the fd (a file) */
#define WS_RMQ		0x80	/* io_uring: its poll remove waits for SQ room */
#define WS_REASON_SHIFT	8	/* -reason stored above the flags */
#define WS_PEER_CLOSED	(1u << 30)	/* an event said POLLRDHUP / POLLHUP */

struct uaio_fdent {
	uaio_watch *w;
	union {			/* freed with the table (loop.c) */
		struct uaio_fdq *q;	/* epoll backend: ops waiting on this fd */
		struct uring_held *held; /* io_uring: ops behind busy[] */
	};
	/* io_uring: the op of each side (read, write) of a stream in the
	 * kernel, which the others of that side wait behind (uring_order.c) */
	uaio_op *busy[2];
	unsigned late;		/* ops a worker looks this number up for (late.c) */
};

struct uaio_heap_ent {
	uint64_t when;
	uint64_t seq;
	uintptr_t p;		/* uaio_timer *, or uaio_op * | 1 */
};

/*
 * What a backend's wait hands the loop to run (redis ae.c's fired[]): an
 * op's completion, a watch's readiness, or "the inbox has posts". The
 * backend has done its own bookkeeping; the loop runs every callback.
 */
enum { FIRED_OP, FIRED_OP_MORE, FIRED_WATCH, FIRED_WATCH_LT, FIRED_INBOX };
struct uaio_fired {
	void *target;		/* uaio_op *, uaio_watch * */
	int32_t res;		/* op: result; watch: revents */
	uint32_t kind;		/* FIRED_*: _MORE a multishot op's non-final
				 * result; WATCH a one-shot readiness, armed
				 * again after its handlers; WATCH_LT one that
				 * level-triggered epoll reports again */
};
#define UAIO_FIRED_MAX	256

struct uaio_backend {
	const char *name;
	int kind;
	int (*init)(uaio_loop *l, const struct uaio_loop_params *p);
	void (*fini)(uaio_loop *l);
	/* A fork child's loop that another thread was inside: close the
	 * backend's descriptors, reading only their numbers (see
	 * uaio__loop_forsake). */
	void (*forsake)(uaio_loop *l);
	/* Queue op (state set by the backend). Called under the loop lock. */
	int (*submit)(uaio_loop *l, uaio_op *op);
	/* Make the backend watch w->events (0 = nothing); w is active. */
	int (*watch_arm)(uaio_loop *l, uaio_watch *w);
	/* Stop watching; the backend calls uaio__watch_finish() when done. */
	void (*watch_stop)(uaio_loop *l, uaio_watch *w);
	/* Submit, wait up to timeout_ns (<0 forever), and add what happened
	 * to l->fired (room: UAIO_FIRED_MAX - l->nfired); runs no callback.
	 * Returns the number added, or -errno. */
	int (*wait)(uaio_loop *l, int64_t timeout_ns);
	/* Hand queued submissions to the kernel now (thread-safe loops). */
	void (*flush)(uaio_loop *l);
	int (*fd)(const uaio_loop *l);
	/* Work uaio_loop_fd() would not announce: submissions not yet in
	 * the kernel, completions or events already in but not dispatched,
	 * watches the descriptor cannot show (regular files). */
	bool (*unannounced)(uaio_loop *l);
	/* uaio_file_pin / unpin, called under the loop lock. */
	int (*pin)(uaio_loop *l, int fd);
	void (*unpin)(uaio_loop *l, int pinned);
	/* Buffer slot idx now holds iov (NULL: empty); NULL slot: nothing
	 * to register (the fallback reads into any memory). Under the lock. */
	int (*buf_update)(uaio_loop *l, unsigned idx, const struct iovec *iov);
	/* After dispatch: let the kernel release what finished ops still
	 * hold (NULL: nothing to do). */
	void (*settle)(uaio_loop *l);
	/* op, OX_POSBUSY (epoll) or OX_ORDERED (io_uring), ended on the
	 * pool (its result is out, or it was cancelled before it ran): the
	 * next op held behind it on that side of its file goes (NULL: none). */
	void (*pool_next)(uaio_loop *l, uaio_op *op);
};

/* A pinned handle on io_uring: registered-file slot | this bit. Real
 * descriptors stay below 2^30 (the kernel caps fs.nr_open there). */
#define UAIO_FD_FIXED	0x40000000

/* Whether op works on fd: its own, or the output of a copy, splice or
 * tee (a close of it cancels or waits for the op). */
static inline bool uaio__op_on_fd(const uaio_op *op, int fd)
{
	return op->fd == fd ||
	       ((op->opcode == OP_COPY_RANGE || op->opcode == OP_SPLICE || op->opcode == OP_TEE) &&
		(int)op->addr2 == fd);
}

/* The plain descriptors op names that a worker looks up as its call
 * starts (a close of one waits for the op): fd, and a copy's output. */
static inline int uaio__op_fds(const uaio_op *op, int fds[2])
{
	int n = 0, out = (int)op->addr2;

	if ((uaio__opdef(op)->flags & (OPF_FD | OPF_LATE)) && op->fd >= 0 &&
	    op->fd < UAIO_FD_FIXED)
		fds[n++] = op->fd;
	if (op->opcode == OP_COPY_RANGE && out >= 0 && out < UAIO_FD_FIXED && out != op->fd)
		fds[n++] = out;
	return n;
}

struct uaio_workers {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uaio_op *head, *tail;
	pthread_t *tids;
	unsigned nthreads, max, idle, captids;
	unsigned nqueued;	/* ops in head..tail */
	unsigned nwaiting;	/* running calls that may wait for ever */
	pthread_t *retired;	/* threads gone from tids, to join */
	unsigned nretired, capretired;
	bool stop;
};

struct uaio_post;

struct uaio_loop {
	const struct uaio_backend *be;
	void *bs;			/* backend state */
	unsigned flags;
	unsigned features;
	unsigned fork_gen;		/* uaio__process's at creation */
	bool stop;
	bool threadsafe;
	/* Runs in progress on the loop's thread (nested ones too): a free
	 * asked from a callback waits for the outermost to return. */
	unsigned running;
	bool free_asked;

	uint64_t now;
	bool now_valid;
	unsigned inflight;		/* ops submitted, final callback not yet run */
	unsigned nwatch;		/* active watches */

	/* Ops waiting for ring room, FIFO; and ops with a result whose
	 * callback runs at the next dispatch point. */
	uaio_op *pending_head, *pending_tail;
	uaio_op *done_head, *done_tail;
	unsigned ndone;			/* on done_head */
	uaio_watch *closing;		/* handle_close still to run */
	/* The last wait's events; [fired_next, nfired) not yet run (a
	 * callback stopped the loop). */
	struct uaio_fired fired[UAIO_FIRED_MAX];
	unsigned nfired, fired_next;

	struct uaio_fdent *fds;
	unsigned nfds;
	uaio_op *late_head, *late_tail;	/* closes waiting for late ops (late.c) */

	struct uaio_heap_ent *heap;
	uint32_t nheap, capheap;
	uint64_t heap_seq;
	/* The backend's own timer (epoll: its mute timer), if any: not the
	 * caller's, so it runs no callback of theirs and, with no op in
	 * flight, keeps no run going (uaio__be_timer_idle). */
	uaio_timer *be_timer;

	/* Cross-thread inbox: posts and worker completions. */
	int wake_fd;			/* eventfd */
	uint64_t wake_buf;
	atomic_int wake_pending;
	pthread_mutex_t inbox_lock;
	struct uaio_post *post_head, *post_tail;
	uint64_t post_seq;		/* the last post's number */
	/* Drains under way on the loop's thread: a run nested in a post
	 * runs the posts the outer drain has not reached (inbox.c), to
	 * UAIO_DRAIN_DEPTH drains deep */
#define UAIO_DRAIN_DEPTH	32
	unsigned draining;
	uaio_op *wdone_head, *wdone_tail;

	struct uaio_workers workers;
	unsigned nworkers;

	unsigned *pinrefs;		/* uaio_file_pin references per handle */
	unsigned npinrefs;
	bool pins_dup;			/* handles are duplicate fds, not slots */

	struct iovec *bufs;		/* uaio_buf_register slots; base NULL: free */
	unsigned nbufs;

	pthread_mutex_t lock;		/* thread-safe loops only */
	_Atomic uintptr_t holder;	/* &uaio__self of the thread holding lock */
	int holder_cs;			/* its cancel state before it took lock */
	uint64_t owner;		/* thread-safe loops: the driving thread's token, or 0 */
};

/* buf_index is registered and [p, p + len) lies within it. */
bool uaio__buf_covers(uaio_loop *l, int buf_index, const void *p, size_t len);
void uaio__bufs_free(uaio_loop *l);

extern const struct uaio_backend uaio__uring_backend;
extern const struct uaio_backend uaio__epoll_backend;

/*
 * The process, for its loops: its fork generation, bumped in every child
 * (a pthread_atfork handler registered when the library loads, so that it
 * runs before the other layers' child handlers). A loop made in an earlier
 * generation is a parent's: its ring, epoll set and eventfd are the
 * parent's too, and a child's call would act on the parent's loop, so
 * every call on it but uaio_loop_free says -ECHILD.
 */
struct uaio_process {
	atomic_uint fork_gen;
};
extern struct uaio_process uaio__process;

static inline bool uaio__foreign(const uaio_loop *l)
{
	return UAIO_UNLIKELY(atomic_load_explicit(&uaio__process.fork_gen,
						  memory_order_relaxed) != l->fork_gen);
}

/* Thread-safe loops take the loop lock around submission state. The loop
 * records which thread holds it (the address of that thread's uaio__self):
 * one thread-local "held" loop was lost when a thread holding a's lock
 * (uaio_loop_lock) submitted to b, and a's next op locked a again. */
extern UAIO_TLS char uaio__self;
static inline bool uaio__holds(const uaio_loop *l)
{
	return atomic_load_explicit(&l->holder, memory_order_relaxed) ==
	       (uintptr_t)&uaio__self;
}
/* now + after, saturated: a deadline past the clock's range is never. */
static inline uint64_t uaio__deadline(uint64_t now, uint64_t after)
{
	return after > UINT64_MAX - now ? UINT64_MAX : now + after;
}

/* No cancel acts while it is held: the submission paths' read, write,
 * send... are cancellation points, and a thread cancelled in one would
 * keep the lock for good. */
static inline bool uaio__lock(uaio_loop *l)
{
	int cs;

	if (!l->threadsafe || uaio__holds(l))
		return false;
	cs = uaio__nocancel_begin();
	pthread_mutex_lock(&l->lock);
	atomic_store_explicit(&l->holder, (uintptr_t)&uaio__self, memory_order_relaxed);
	l->holder_cs = cs;
	return true;
}
static inline void uaio__unlock(uaio_loop *l, bool taken)
{
	if (taken) {
		int cs = l->holder_cs;

		if (l->be->flush)
			l->be->flush(l);
		atomic_store_explicit(&l->holder, 0, memory_order_relaxed);
		pthread_mutex_unlock(&l->lock);
		uaio__nocancel_end(cs);
	}
}

/* loop.c */
void uaio__complete(uaio_loop *l, uaio_op *op, long res);
int uaio__run_done(uaio_loop *l);
void uaio__watch_finish(uaio_loop *l, uaio_watch *w, int reason);
/* Adds an event for the loop to run; false when l->fired is full. */
static inline bool uaio__fire(uaio_loop *l, void *target, int32_t res, uint32_t kind)
{
	if (l->nfired == UAIO_FIRED_MAX)
		return false;
	l->fired[l->nfired++] = (struct uaio_fired){ target, res, kind };
	return true;
}
static inline unsigned uaio__fired_room(const uaio_loop *l)
{
	return UAIO_FIRED_MAX - l->nfired;
}
int uaio__drain_inbox(uaio_loop *l);
void uaio__worker_op_end(uaio_loop *l, uaio_op *op, long res);
void uaio__wake(uaio_loop *l);
void uaio__inbox_free(uaio_loop *l);
void uaio__inbox_done(uaio_loop *l, uaio_op *op);
/* Whether the calling thread drives l (always, for a loop that is not
 * thread-safe): others' changes to its waits must wake it. */
static inline bool uaio__on_driver(const uaio_loop *l)
{
	return !l->threadsafe || l->owner == uaio__thread_token();
}
/* fd's entry in l->fds; with grow, the table grows to hold it (NULL
 * when it cannot); without, NULL past its end. */
struct uaio_fdent *uaio__fdent_grow(uaio_loop *l, int fd, bool grow);
static inline struct uaio_fdent *uaio__fdent(uaio_loop *l, int fd, bool grow)
{
	if ((unsigned)fd < l->nfds)
		return &l->fds[fd];
	return uaio__fdent_grow(l, fd, grow);
}
int uaio__heap_push(uaio_loop *l, uint64_t when, uintptr_t p);
void uaio__heap_remove(uaio_loop *l, uint32_t idx);
int uaio__timer_unlink(uaio_loop *l, uaio_timer *t);
void uaio__timers_forget(uaio_loop *l);
void uaio__watches_forget(uaio_loop *l);
/* reactor.c: the epoll reactor of both backends. */
struct epoll_event;
/* The epoll mask for a watch's events (UAIO_READABLE / UAIO_WRITABLE);
 * the same bits are poll(2)'s. */
uint32_t uaio__watch_mask(const uaio_watch *w);
/* Moves fd's registration from mask have to want (ADD, MOD or DEL). */
int uaio__epoll_set(int epfd, int fd, uint32_t have, uint32_t want, uint64_t key);
/* An epoll event for fd: its active watch (with state bits need) goes to
 * l->fired as level-triggered readiness. */
bool uaio__epoll_fire(uaio_loop *l, int fd, uint32_t events, unsigned need);
/* epoll_wait with a timeout in ns (< 0: none): events, 0 on EINTR, or
 * -errno. Both backends sleep in epoll (see uring.c). */
int uaio__epoll_wait(int epfd, struct epoll_event *evs, int max, int64_t timeout_ns);
int uaio__cancel_here(uaio_loop *l, uaio_op *target);
int uaio__cancel_queued(uaio_loop *l, uaio_op **head, uaio_op **tail, int fd,
			const uaio_op *target);
int uaio__cancel_local(uaio_loop *l, uaio_op *target);
int uaio__cancel_local_fd(uaio_loop *l, int fd);

/* the reason's bits: between the flags and WS_PEER_CLOSED */
#define WS_REASON_MASK	(((1u << 30) - 1) & ~((1u << WS_REASON_SHIFT) - 1))
static inline int uaio__watch_reason(const uaio_watch *w)
{
	return -(int)((w->state & WS_REASON_MASK) >> WS_REASON_SHIFT);
}
static inline void uaio__watch_set_reason(uaio_watch *w, int reason)
{
	w->state = (w->state & ~WS_REASON_MASK) |
		   (((uint32_t)(-reason) << WS_REASON_SHIFT) & WS_REASON_MASK);
}

/* late.c: a close of a descriptor waits for the ops a worker looks it
 * up for. Counts op on its descriptors (uaio__op_fds), marking it
 * OX_LATE; not if it names none, or there is no memory (then it is not
 * waited for). */
void uaio__late_count(uaio_loop *l, uaio_op *op);
/* op, counted, has ended (or never went): the closes held for it, in
 * order (*tail the last), for the backend to start again; NULL if none. */
uaio_op *uaio__late_end(uaio_loop *l, uaio_op *op, uaio_op **tail);
/* A close of a counted descriptor is held (OS_HELD): true. */
bool uaio__late_hold_close(uaio_loop *l, uaio_op *op);
/* A held close, cancelled (-ECANCELED): true when op was one. */
bool uaio__late_cancel_close(uaio_loop *l, const uaio_op *op);

/* workers.c */
int uaio__workers_submit(uaio_loop *l, uaio_op *op);
int uaio__workers_cancel(uaio_loop *l, uaio_op *op);
int uaio__workers_cancel_fd(uaio_loop *l, int fd);
void uaio__workers_stop(uaio_loop *l, bool join);
long uaio__op_exec(uaio_op *op);
/* A call that may wait, tried first without waiting; the rest of a part
 * it moved (ops.c). */
long uaio__exec_nowait(uaio_op *op, size_t *moved);
long uaio__exec_rest(uaio_op *op, size_t moved);

#endif
