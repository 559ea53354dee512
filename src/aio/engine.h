/* SPDX-License-Identifier: MIT */
/*
 * POSIX AIO on the uaio loop: the engine shared by the files of src/aio/
 * (see include/uaio/aio.h, docs/design.md).
 *
 * A request first tries to finish in the caller without blocking
 * (RWF_NOWAIT): cached reads, room in a pipe. Only when it would block
 * does it get a record and become an op on the engine's loop, which one
 * engine thread drives: it sleeps in the kernel between completions so
 * that signals and SIGEV_THREAD callbacks arrive while the program sleeps.
 * The exception: a single small or O_DIRECT request of a thread that waits
 * in aio_suspend goes on that thread's own ring (thread.c), which the
 * thread reaps while it waits there, and the engine otherwise.
 *
 * The status lives in the caller's aiocb (glibc's __error_code and
 * __return_value), so aio_error(), aio_return() and aio_suspend() are
 * lock-free and async-signal-safe. The aiocb's reserved bytes carry a
 * state word (LIVE / DONE / RETURNED, xor'ed with its address) that tells
 * our aiocbs from ones we never saw.
 *
 * Ordering: requests on a non-seekable file (pipe, socket, tty) run one at
 * a time in submission order (a FIFO per file, keyed by device and inode);
 * requests on regular files run in parallel, an fsync or read waits for
 * the writes to its descriptor that were queued before it (epoch
 * barriers), and a write for the fsyncs queued before it (held).
 *
 * Locking: the engine lock (aio__lock) guards records, FIFOs, barriers and list-I/O
 * groups; it is taken before the loop's own lock. Records carry a pinned
 * handle of their file (uaio_file_pin), so the caller may close or reuse
 * the descriptor while the request is in flight.
 *
 * Files: status.c (the aiocb's status, aio_error / aio_return),
 * suspend.c (aio_suspend and its waits), engine.c (records, hints, pins, the engine thread, fork),
 * lock.c (the engine lock; signals held on the caller's thread),
 * nested.c (what a handler submits while its thread is in an AIO call),
 * thread.c (a submitting thread's own ring, its exit),
 * queue.c (stream FIFOs, issue and end), fdw.c (a regular file's order:
 * overlaps, fsync barriers, held writes), calls.c (aio_read / aio_write /
 * aio_fsync), submit.c (where their requests go), attempt.c (the inline
 * try), lio.c, cancel.c.
 */
#ifndef UAIO_AIO_ENGINE_H
#define UAIO_AIO_ENGINE_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <uaio/aio.h>
#include <uaio/loop.h>
#include "aio/aio_internal.h"
#include "core/uaio_core.h"
#include "util/plumb.h"


/* The kernel moves at most this much per read or write (MAX_RW_COUNT). */
#define RW_MAX		((size_t)INT_MAX & ~(size_t)4095)
#define CHUNK_REQS	512
#define SERIAL_BUCKETS	256
#define SPARE_RECORDS	16	/* freed serial and fdw records kept (each) */
/*
 * The most one submitting call copies itself (a request, or a whole
 * lio_listio): about one small copy, so that submission returns promptly
 * and larger work overlaps with the caller's (docs/design.md: measured).
 */
#define INLINE_MAX	UAIO__AIO_INLINE_MAX
/*
 * A cached read this large, of a caller that keeps others in flight, is
 * copied by the engine thread while the caller copies the next inline:
 * two cores copying, where one copy is worth the hand-off (the pin, the
 * wake-up), as long as the engine has fewer than SPLIT_DEPTH reads and
 * writes of regular files in hand (docs/design.md: measured).
 */
#define SPLIT_MIN	((size_t)64 * 1024)
#define SPLIT_DEPTH	2
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
	struct aio_lio *lio;		/* its lio_listio list (LIO_WAIT or notified) */
};
_Static_assert(sizeof(struct cbpriv) <= sizeof(((struct aiocb *)0)->__glibc_reserved),
	       "aiocb reserved area too small");
_Static_assert(offsetof(struct aiocb, __glibc_reserved) % 8 == 0,
	       "aiocb reserved area misaligned");

#define ST_LIVE		0x75616f696c697665ull
#define ST_DONE		0x75616f69646f6e65ull
#define ST_RETURNED	0x75616f6972657464ull
/* In a child of fork(): a request of the parent's, which no one will
 * finish here. As under glibc (whose helper threads the child lacks) it
 * stays in progress: aio_suspend waits, aio_cancel cannot cancel it. */
#define ST_ORPHAN	0x75616f696f727068ull
/* Ended, its signal being queued, its status not yet out (aio__complete):
 * aio_error and aio_return wait, as glibc's wait on the lock its
 * completion holds while it notifies. Still in progress to the rest. */
#define ST_ENDING	0x75616f69656e6467ull

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
#define RF_AT_OFFSET	0x4	/* serial on a file (O_APPEND): at aio_offset, as pwrite */
#define RF_LEADER	0x8	/* carries adjacent list entries in one op */
#define RF_MEMBER	0x10	/* carried by a leader (its next chain) */
#define RF_DIRECT	0x20	/* issued by the submitting thread (u.thr) */
#define RF_HELD		0x40	/* a write behind an fsync or an overlapping
				 * earlier request (aio_fdw.held) */
#define RF_TTY_TIME	0x80	/* a VMIN 0 terminal read: its clock's end
				 * is 0; tmo_us 0 (VTIME 0): read at once */

struct aio_lio;

/*
 * A thread that hands requests to the kernel itself, on a ring of its own
 * (thread.c): its exit must wait for them, or io_uring would cancel them.
 * Its ring's completions are reaped by the thread itself while it sleeps
 * in aio_suspend on them (reaping), else by the engine thread, which the
 * ring's eventfd wakes. Guarded by the engine lock.
 */
struct aio_thread {
	unsigned direct;		/* its requests still in flight */
	bool exiting;
	bool reaping;			/* the thread reaps its ring itself */
	bool waits;			/* has waited in aio_suspend (set by itself) */
	bool ring_ok;
	struct aio_thread *next;	/* E->threads: those with a ring */
	struct io_uring ring;
};
#define OWN_ENTRIES	256

struct aio_req {
	/* First: the op callback finds the record. Its data is the aiocb
	 * (req_cb), set when the record is made and passed on at each issue;
	 * the aiocb's list is priv(cb)->lio. */
	uaio_op op;
	struct aio_req *next;		/* FIFO, barrier list or free list */
	void *owner;			/* struct aio_serial * or struct aio_fdw * */
	union {				/* a file's request waits (held, barrier) or is out */
		uint32_t seq;		/* held or a barrier: its call order on the
					 * descriptor (aio_fdw.seq), set when made */
		struct aio_thread *thr;	/* RF_DIRECT: issued by that thread */
		struct iovec *iov;	/* RF_LEADER: one per carried request */
	} u;
	union {
		struct {
			uint32_t epoch;		/* write: its descriptor's epoch; fsync: its barrier */
			uint32_t remaining;	/* fsync, read: earlier writes still in
						 * flight; held write: earlier fsyncs */
		};
		uint64_t tmo_us;	/* RF_SERIAL: the socket's SO_RCVTIMEO/SO_SNDTIMEO,
				 * or a terminal's VTIME (RF_TTY_TIME) */
	};
	/* a file's read or write, from its call to its end (aio_fdw.live) */
	struct aio_req *lnext, **lprev;
	int fd;				/* what the op uses: a pinned handle, or the fd */
	uint8_t kind : 2, state : 2;	/* K_*, RS_* */
	uint8_t doomed : 1;		/* waiting when aio_cancel(fd, NULL) began */
	uint8_t flags;			/* RF_* */
	int8_t prio;
};
/* Most of what a request in flight costs: bench/aio's memory target is
 * 128 B a request, the allocator's share included. */
_Static_assert(sizeof(struct aio_req) <= 120, "request record over budget");

static inline struct aiocb *req_cb(const struct aio_req *r)
{
	return r->op.data;
}


/* A non-seekable file's descriptor with requests: one in flight, the
 * rest wait. */
struct aio_serial {
	struct aio_serial *hnext;
	int fd;
	dev_t dev;
	ino_t ino;
	struct aio_req *busy;
	struct aio_req *head;		/* waiting, higher priority first */
	/* A socket's timeout on the busy request: glibc's helper blocks in
	 * read or write, which give up after SO_RCVTIMEO / SO_SNDTIMEO with
	 * EAGAIN or the part done (queue.c, serial clock). */
	struct aio_req *timed;		/* the request the clock runs for */
	uaio_op clock, stop_clock, stop_req;
	uint8_t ops;			/* SO_* of those in flight */
	bool expired;			/* timed's clock ran out */
	bool sock;			/* a socket (writes by send, MSG_NOSIGNAL) */
	bool tty;			/* a character device: job control */
	bool reg;			/* a regular file's O_APPEND writes: in call
					 * order, O_NONBLOCK meaningless, one write
					 * each (a short one is its result) */
	bool nopos;			/* a file that refused an offset (ESPIPE):
					 * at its position from then on, as glibc's
					 * read/write after pread's ESPIPE */
	bool wblock;			/* a device, no terminal: a write blocks on
					 * a worker as glibc's helper's (/dev/kmsg
					 * never says POLLOUT, takes every write) */
	bool pread_ok;			/* a device pread reaches (no ESPIPE) */
	bool after_reads;		/* an O_APPEND write waits at head for the
					 * descriptor's reads made before it: they
					 * could see what it appends (aio_fdw.appends) */
	bool rblock;			/* a device that seeks, no terminal (/dev/zero,
					 * /dev/urandom): a read is a plain pread on a
					 * worker, as glibc's helper's. A try with
					 * RWF_NOWAIT, and io_uring's read, end short
					 * when the reader is due to reschedule */
	bool known;			/* sock, tty, wblock, pread_ok, regfile,
					 * sigfd set */
	bool regfile;			/* regular or block: never duplicated (a
					 * close drops the record locks) */
	bool sigfd;			/* a signalfd: never read on the caller's
					 * thread, whose own pending signals
					 * glibc's helper thread never sees */
	int pinh, pinfl;		/* the stream's pin, each request's pin's
					 * source, or 0; and its F_GETFL (a new
					 * opening on the number pins its own) */
};
#define SO_CLOCK	1
#define SO_STOP_CLOCK	2
#define SO_STOP_REQ	4

/* A regular file's descriptor with writes or fsyncs in flight: fsyncs
 * and reads wait for the earlier writes (barriers, in call order), and
 * writes for the earlier fsyncs (held, in call order), as glibc runs a
 * descriptor's requests one after another. Writes and reads otherwise
 * run side by side. */
struct aio_fdw {
	int fd;
	unsigned writes;	/* held ones too */
	unsigned reads;		/* waiting ones too */
	unsigned syncs;		/* fsyncs not ended, waiting or not */
	uint32_t epoch;
	struct aio_req *barriers;
	/* Writes waiting, in call order, for earlier fsyncs (remaining) or
	 * for earlier reads and writes they overlap: glibc runs a
	 * descriptor's requests one after another, so the later of two
	 * writes to a byte wins, and a read never sees a later write. */
	struct aio_req *held, *held_tail;
	struct aio_req *live;	/* its reads and writes not ended */
	/* The bytes the live ones cover lie in [lo, hi): a write outside
	 * meets none of them without a walk (kept till live empties). */
	uint64_t lo, hi;
	uint32_t seq;
	/* aio_cancel(fd, NULL) at work: an end counts, but releases none
	 * of those waiting (each is about to be cancelled) */
	bool cancelling;
	/* The O_APPEND FIFO of this descriptor, whose next write waits for
	 * the reads made before it (aio_serial.after_reads) */
	struct aio_serial *appends;
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
	bool begun;			/* held: made before the last status */
	/* an entry ended in error: LIO_WAIT's EIO. Kept here as the entries
	 * end, as glibc's waitlist does: once an aiocb's status is out, a
	 * handler may submit it again, or free it. */
	atomic_bool failed;
	atomic_uint done;		/* futex: 1 once pending reached 0 */
	struct sigevent sev;
	struct uaio_note *held;		/* SIGEV_THREAD's thread, waiting */
};

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

/*
 * In a child of fork(): a request of the parent's that was in flight. As
 * in glibc's child, which keeps its parent's lists but not the helpers
 * that ran them: one that was waiting in this layer can be cancelled,
 * one that was running never ends, and aio_cancel of its descriptor
 * number says so (AIO_NOTCANCELED).
 */
struct aio_orphan {
	struct aiocb *cb;
	int fd;				/* its aio_fildes at the fork */
	bool queued;
};

struct aio_lone;

/* Freed records of one size, kept for reuse (engine.c, aio__spare_get). */
struct aio_spares {
	void *rec[SPARE_RECORDS];
	unsigned n;
};

/* One aio_suspend's wait (suspend.c). */
#define AIO_SUSP_SLOTS	64
#define AIO_SUSP_LIST	64	/* aiocbs a record lists */
struct aio_susp {
	atomic_uint word;	/* futex: generation << 1 | closed */
	atomic_int n;
	/* taken: its thread's mark (suspend.c, susp_self); NULL: free */
	const void *_Atomic owner;
	const struct aiocb *_Atomic cbs[AIO_SUSP_LIST];
};

struct aio_engine {
	atomic_uint lock;		/* aio__lock: owner's tid | waiters */
	uaio_loop *loop;		/* created with the engine thread */
	/* Its loop copies a cached read on its own thread (io_uring); the
	 * fallback tries one on the submitting thread (SPLIT_MIN) */
	bool copies_itself;
	bool atfork, thread_key_made;

	struct uaio__slab reqs;		/* aio_req records */
	unsigned long nreq;		/* records in use = requests in flight */
	unsigned long max;		/* AIO_MAX */
	unsigned workers;		/* fallback pool size */
	int idle_s;			/* aio_idle_time: the engine's life idle (<= 0: none) */

	atomic_uint nserial;		/* serial files with requests */
	atomic_uint pwrites;		/* writes in flight on regular files (fdw) */
	atomic_uint psyncs;		/* fsyncs in flight on them (fdw) */
	atomic_uint plive;		/* reads and writes on them (fdw.live) */
	/* Records whose issue failed at once, ended by the outermost
	 * drain (fdw.c: a chain of them would nest one end per record) */
	struct aio_req *failq, *failq_tail;
	bool draining;
	/* A thread reaps its own ring (thread.c), maybe in a signal
	 * handler's aio_suspend, which must not allocate or free: what
	 * those ends release (requests that waited for them, records past
	 * the spares) waits here for the engine (fdw.c) */
	bool own_reaping;
	struct aio_req *deferq, *deferq_tail;
	void *spare_over;		/* linked through their first word */
	struct aio_serial *serial[SERIAL_BUCKETS];
	struct aio_fdw **fdw;
	unsigned nfdw;
	/* Requests on helper threads, one per descriptor, running or
	 * waiting their turn (no descriptor for the engine: lone.c); the
	 * running ones aio_cancel counts as in progress. */
	struct aio_lone *lone;
	/* Records kept for reuse, so that a steady stream of requests calls
	 * no malloc: a signal handler that forks while this thread is inside
	 * one would wait in fork for glibc's malloc lock for ever. */
	struct aio_spares serial_spare, fdw_spare;
	struct aio_orphan *orphans;	/* a fork's child: the parent's requests */
	unsigned norphans;
	/* Hints by descriptor number, in pages made on first use. */
	struct aio_hint *_Atomic hints[HINT_PAGES];

	atomic_uint engine_up;		/* futex: the engine thread runs */
	pthread_key_t thread_key;	/* destructor: thread_exit_wait */
	atomic_uint thread_gen;		/* futex: a thread's direct requests ended */
	struct aio_thread *threads;	/* with a ring of their own */
	int own_evfd;			/* their rings' eventfd; -1: no rings */
	/* Completions reaped by their own thread, by the engine (tests). */
	_Atomic unsigned long own_reaped[2];
	uaio_watch own_watch;		/* the engine thread's watch on it */

	/* aio_suspend's waits, each on its own word (suspend.c) */
	struct aio_susp susp[AIO_SUSP_SLOTS];
	atomic_uint nsusp;		/* records taken */
	atomic_uint susp_hi;		/* records ever taken: [0, susp_hi) */

	/* Bumped at every completion; aio_suspend and aio_cancel sleep on
	 * it with a futex (a LIO_WAIT caller sleeps on its group's word). */
	atomic_uint seq;
	atomic_uint waiters;
	/* threads between a request's ST_ENDING and its status: none in a
	 * child of fork, where an ST_ENDING found is stale (an orphan) */
	atomic_uint ending;
	_Atomic unsigned long long inline_bytes;	/* copied by submitters */
	/* RLIMIT_FSIZE is finite (aio__xfsz_hold), as last looked up; the
	 * next look after fsize_left more submissions. */
	atomic_bool fsize_limited;
	atomic_uint fsize_left;
};

extern struct aio_engine aio__engine;
#define E (&aio__engine)

static inline int posix_ret(int r)
{
	if (r < 0) {
		errno = -r;
		return -1;
	}
	return r;
}

static inline size_t cb_len(const struct aiocb *cb)
{
	return cb->aio_nbytes > RW_MAX ? RW_MAX : cb->aio_nbytes;
}

/* What r's next op moves: the rest of its transfer (only a write's inline
 * try leaves a part done), at the file position on a stream (-1). An
 * O_APPEND file's writes queue as a stream's but go at aio_offset, as
 * glibc's pwrite: the kernel appends them all the same, and the file
 * position, which a write at -1 would move, stays where it was. */
struct req_span {
	char *buf;
	size_t len;
	int64_t off;
};

static inline struct req_span req_span(const struct aio_req *r)
{
	const struct aiocb *cb = req_cb(r);
	uint64_t done = priv(cb)->done;
	int64_t off = (r->flags & (RF_SERIAL | RF_AT_OFFSET)) == RF_SERIAL ? -1 :
		      (int64_t)cb->aio_offset;

	return (struct req_span){ (char *)cb->aio_buf + done, cb_len(cb) - done,
				  off < 0 ? -1 : off + (int64_t)done };
}

static inline bool fd_mode_ok(int fl, int kind)
{
	return (fl & O_ACCMODE) != (kind == K_READ ? O_WRONLY : O_RDONLY);
}

/* glibc's aio_read, aio_write, aio_fsync, lio_listio (LIO_WAIT's wait
 * too) and aio_cancel are no cancellation points; the libc calls they
 * make here (preadv2, send, sigtimedwait, ...) are, and a cancel acting
 * in one left a request in progress for ever, or the engine lock held:
 * they run between uaio__nocancel_begin and _end (core/uaio_core.h).
 * aio_suspend is a cancellation point, as glibc's: its sleep (and only
 * that, so no lock is ever held when it acts) takes a cancel at once. */
static inline int aio__cancel_async(void)
{
	int old = PTHREAD_CANCEL_DEFERRED;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	return old;
}

static inline void aio__cancel_restore(int old)
{
	int was;

	pthread_setcanceltype(old, &was);
}

/* suspend.c */
void aio__suspend_wake(const struct aiocb *cb);
void aio__suspend_fork_child(void);

/* status.c */
bool aio__any_done(const struct aiocb *const list[], int nent);
void aio__seq_bump(void);
/* cb is this thread's newest request: whether it keeps others in flight */
bool aio__caller_queues(const struct aiocb *cb);
int aio__futex_wait_abs(atomic_uint *word, unsigned snap, const struct timespec *deadline);
/*
 * The engine's lock. A request may end while a caller's thread holds it
 * (its own ring reaped in aio_suspend, a cancel, an issue that failed),
 * and its SIGEV_SIGNAL, queued to the process, would run its handler on
 * that very thread right there: a handler that submits would then wait
 * for the lock for ever (glibc's lock is recursive, and its helpers send
 * the signal). So a thread that sends one under the lock blocks its
 * signals until aio__unlock lets the lock go.
 */
void aio__lock(void);
bool aio__trylock(void);
void aio__unlock(void);
bool aio__lock_fork_prepare(void);
bool aio__lock_fork_loop(void);
void aio__lock_fork_parent(void);
void aio__lock_fork_child(void);
void aio__cond_wait(void);
void aio__cond_broadcast(void);
bool aio__signals_hold(void);
bool aio__signals_held_here(void);
void aio__signals_let_go(void);
bool aio__lock_in_call(void);
/* nested.c: what a handler submits in the middle of its thread's call */
bool aio__nested_must_wait(void);
void aio__nested_add(struct aiocb *cb, int kind);
bool aio__nested_waiting(void);
int aio__nested_on(int fd);
void aio__nested_drain(void);
void aio__nested_fork_child(void);
/* Around a submitting call that may write on the caller's thread (see
 * engine.c): SIGXFSZ blocked under a file size limit, and the one such a
 * write raised taken back. */
struct aio_xfsz { sigset_t old; bool hold, pending; };
void aio__xfsz_hold(struct aio_xfsz *x);
void aio__xfsz_release(struct aio_xfsz *x);
bool aio__tty_background(int fd);
void aio__publish(struct aiocb *cb, long res);
bool aio__sev_notifies(const struct sigevent *sev);
bool aio__lone_running_locked(int fd);
void aio__lone_forget(void);
int aio__lone_thread(struct aiocb *cb, int kind, struct aio_lio *g, int err);
int aio__lone_follow(struct aiocb *cb, int kind, struct aio_lio *g);
/* glibc's helper's transfer on fd: pread or pwrite, read or write where
 * the file says ESPIPE (then aio_return says -1 meanwhile) or off < 0;
 * -errno. Whether fd still names the file dev/ino (else: EBADF). */
long aio__glibc_rw(int fd, struct aiocb *cb, int kind, char *buf, size_t len, off_t off);
bool aio__same_file(int fd, dev_t dev, ino_t ino);
bool aio__lone_cancel_locked(int fd, struct aiocb *cb, int *canceled, int *notcanceled);
void aio__complete(struct aiocb *cb, long res);

/* engine.c */
void aio__orphan_queued(struct aiocb *cb);
struct aio_hint *aio__hint_get(int fd);
int aio__hint_flags(int fd, struct aio_hint *h, bool fresh);
bool aio__hint_try(struct aio_hint *h, int kind);
void aio__hint_learn(struct aio_hint *h, int kind, long res);
void *aio__spare_get(struct aio_spares *sp, size_t size);
void aio__spare_put(struct aio_spares *sp, void *rec);
struct aio_req *aio__req_alloc_locked(void);
void aio__req_free_locked(struct aio_req *r);
void aio__lio_ctx_release(struct lio_ctx *pc);
/* r is a blocking call on a worker, by its number (engine.c) */
bool aio__req_blocking(const struct aio_req *r);
/* r holds its file by a pin (RF_PINNED), or not: by its number. A stream's
 * request (fl: fd's status flags) pins the stream's own pin, shared. */
void aio__pin_get_locked(struct aio_req *r, int fd, struct lio_ctx *pc);
void aio__pin_stream_locked(struct aio_req *r, int fd, int fl);
void aio__pin_put_locked(struct aio_req *r);
int aio__engine_start_locked(void);
bool aio__engine_copies(void);

/* thread.c */
int aio__threads_start_locked(void);
void aio__thread_exit_wait(void *arg);
void aio__threads_fork_child(void);
void aio__threads_retire_locked(void);
int aio__own_issue_locked(struct aio_req *r, int fd);
bool aio__own_wait(const struct aiocb *const list[], int nent,
		   const struct timespec *deadline, int *res);

/* queue.c */
struct aio_serial *aio__serial_get_locked(int fd, const struct stat *st, bool create);
void aio__serial_maybe_free_locked(struct aio_serial *s);
void aio__serial_queue_locked(struct aio_serial *s, struct aio_req *r);
/* The reads an O_APPEND write waited for have ended: the FIFO goes on. */
void aio__serial_reads_done_locked(struct aio_serial *s);
int aio__req_issue_locked(struct aio_req *r);
void aio__serial_started(struct aio_req *r);
void aio__req_release_locked(struct aio_req *r, long res);
void aio__req_end_locked(struct aio_req *r, long res);
void aio__leader_end_locked(struct aio_req *r, long res);
void aio__req_cb(uaio_op *op, int res, void *data);

/* fdw.c */
struct aio_fdw *aio__fdw_get_locked(int fd, bool create);
void aio__fdw_maybe_free_locked(struct aio_fdw *w);
void aio__fdw_live_add_locked(struct aio_fdw *w, struct aio_req *r);
bool aio__fdw_meets_locked(const struct aio_fdw *w, const struct aiocb *cb,
			   const struct aio_req *h);
/* r, a regular file's request, ended with res: what waited for it goes */
void aio__req_finish_parallel_locked(struct aio_req *r, long res);
/* The engine thread: issues what a thread's own reaping left it and
 * frees the records it kept. */
void aio__deferred_locked(void);

/* attempt.c */
long aio__attempt(int fd, int kind, struct aiocb *cb, int64_t off, int rwf);
long aio__attempt_stream(int fd, int kind, struct aiocb *cb, int64_t off, int rwf,
			 const struct aio_serial *s);
bool aio__page_write_ok(const struct aiocb *cb, int kind, int fl);
bool aio__attempt_final(struct aiocb *cb, int kind, long res, bool stream, bool nonblock);
int aio__serial_nonblock_try(struct aio_req *r, const struct aio_serial *s, long *res);

/* filekind.c */
bool aio__seekable_reg(int fd, const struct stat *st);
bool aio__positional_file(int fd, const struct stat *st);
int aio__tty_vtime(int fd);
bool aio__span_faults(const struct aiocb *cb, int kind);
bool aio__nonblock_device(int fd, const struct stat *st, struct aio_hint *h);
bool aio__signalfd(int fd, const struct stat *st);

/* calls.c */
int aio__cb_check(struct aiocb *cb, bool prio);
void aio__cb_mark_live(struct aiocb *cb, struct aio_lio *g);
int aio__submit_rw(struct aiocb *cb, int kind, struct lio_ctx *pc, struct aio_lio *g);
int aio__submit_sync(struct aiocb *cb, int kind, struct aio_lio *g);
void aio__submit_nested(struct aiocb *cb, int kind);
/* submit.c: a checked aiocb's request; -errno when refused */
int aio__submit_rw_live(struct aiocb *cb, int kind, struct lio_ctx *pc, struct aio_lio *g);
int aio__submit_sync_live(struct aiocb *cb, int kind, struct aio_lio *g);
/* glibc's own opcodes for aio_fsync requests, which its lio_listio takes
 * too (after LIO_NOP; not in <aio.h>). */
#define LIO_DSYNC_GLIBC	(LIO_NOP + 1)
#define LIO_SYNC_GLIBC	(LIO_NOP + 2)
void aio__batch_flush(struct lio_ctx *pc);
void aio__batch_add_locked(struct lio_ctx *pc, struct aio_req *r);

/* lio.c */
void aio__lio_put_locked(struct aio_lio *g, bool pending);

#endif
