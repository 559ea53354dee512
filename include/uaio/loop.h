/* SPDX-License-Identifier: MIT */
/*
 * uaio core loop: one loop per thread, both a Reactor (fd readiness
 * handlers) and a Proactor (submit an operation, get a completion
 * callback), with timers, cancellation and cross-thread posting.
 *
 * Conventions (liburing style): every function that can fail returns 0 or
 * a non-negative value on success and a negative errno on failure.
 * Completion results are passed the same way: >= 0 is the syscall's
 * result, < 0 is -errno.
 *
 * Memory: watches, timers and ops are owned by the caller and must stay
 * valid until their final callback (handle_close for a watch, the op
 * callback for an op, or uaio_timer_stop() for a timer). A watch or an op
 * starts zero-filled (memset, "= {0}" or static storage): one whose memory
 * holds garbage reads as in use, and the call returns -EBUSY; a timer
 * starts with uaio_timer_init(). The loop keeps
 * no memory per op. What grows with the number of descriptors and timers
 * (the descriptor table, the timer heap, the fallback's per-descriptor
 * queues) grows geometrically on first need and is kept, so a loop in a
 * steady state allocates nothing; uaio_loop_post() allocates a node.
 */
#ifndef UAIO_LOOP_H
#define UAIO_LOOP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <uaio/version.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uaio_loop uaio_loop;
typedef struct uaio_op uaio_op;
typedef struct uaio_watch uaio_watch;
typedef struct uaio_timer uaio_timer;

/* ------------------------------------------------------------------ loop */

enum uaio_backend_kind {
	UAIO_BACKEND_AUTO = 0,	/* never returned: names uaio_loop_new's choice (io_uring if usable, else epoll; env UAIO_BACKEND overrides) */
	UAIO_BACKEND_URING = 1,
	UAIO_BACKEND_EPOLL = 2	/* epoll + small worker pool */
};

/* uaio_loop_new() flags */
#define UAIO_LOOP_FORCE_EPOLL	(1u << 0)	/* the epoll backend, whatever UAIO_BACKEND says */
#define UAIO_LOOP_FORCE_URING	(1u << 1)	/* fail with the ring's error instead of falling back */
#define UAIO_LOOP_SQPOLL	(1u << 2)	/* ask for a kernel SQ polling thread */
/*
 * Thread-safe submission: uaio_op_*() may be called from any thread; the
 * loop submits to the kernel at once (or at uaio_loop_unlock()), except on
 * io_uring from a thread that does not drive it: the driver, woken, does
 * (uaio_loop_lock(3)). Watches
 * and timers stay owner-thread only. Used by the POSIX AIO and LAIO
 * engines; an ordinary loop skips all locking.
 */
#define UAIO_LOOP_THREADSAFE	(1u << 3)

struct uaio_loop_params {
	unsigned flags;
	unsigned entries;	/* submission queue size, 0 = 256 */
	unsigned workers;	/* fallback worker threads, 0 = 4 */
};

/* Returns NULL and sets errno on failure. params may be NULL. */
uaio_loop *uaio_loop_new(const struct uaio_loop_params *params);
/* Frees the loop; ops still in flight are cancelled without callbacks,
 * watches end without handle_close, timers without firing. */
void uaio_loop_free(uaio_loop *l);

/* Runs until no watch, timer or op is pending, or uaio_loop_stop().
 * Returns 0, or 1 if stopped with work still pending, or -errno. */
int uaio_loop_run(uaio_loop *l);
/* One iteration. timeout_ns < 0 waits until something happens, 0 polls.
 * Returns the number of callbacks run, or -errno. */
int uaio_loop_run_once(uaio_loop *l, int64_t timeout_ns);
/* Makes uaio_loop_run() return after the current callback. */
void uaio_loop_stop(uaio_loop *l);

/* Which backend this loop runs on (UAIO_BACKEND_URING or _EPOLL). */
int uaio_loop_backend(const uaio_loop *l);
const char *uaio_loop_backend_name(const uaio_loop *l);
/* Feature bits (UAIO_FEAT_*), for tests and bench: detected at creation,
 * except REG_RING_FD, at the first run. */
unsigned uaio_loop_features(const uaio_loop *l);
#define UAIO_FEAT_SINGLE_ISSUER	(1u << 0)
#define UAIO_FEAT_DEFER_TASKRUN	(1u << 1)
#define UAIO_FEAT_COOP_TASKRUN	(1u << 2)
#define UAIO_FEAT_REG_RING_FD	(1u << 3)
#define UAIO_FEAT_MULTISHOT	(1u << 4)
#define UAIO_FEAT_CANCEL_FD	(1u << 5)
#define UAIO_FEAT_SQPOLL	(1u << 6)

/*
 * A descriptor that polls readable when the loop has completions or
 * events to process, so another event loop can drive this one by calling
 * uaio_loop_run_once(l, 0) when it fires (like uv_backend_fd). On a
 * thread-safe loop it also polls readable while other threads' submissions
 * wait for the driving thread. -errno if it cannot be made.
 */
int uaio_loop_fd(const uaio_loop *l);

/*
 * How long an embedding loop may sleep on uaio_loop_fd() before it calls
 * uaio_loop_run_once(l, 0): 0 when there is work now (due timers, posted
 * functions, completions already in, submissions not yet in the kernel),
 * the ns until the next timer, or -1 when only the descriptor can bring
 * work (like uv_backend_timeout). -EINVAL for a NULL loop, -ECHILD in a
 * forked child.
 */
int64_t uaio_loop_timeout(uaio_loop *l);

/* Monotonic clock in ns, cached per iteration. */
uint64_t uaio_loop_now(uaio_loop *l);

/* Number of ops submitted and not yet completed. */
unsigned uaio_loop_inflight(const uaio_loop *l);

/* Thread-safe loops only: group several submissions into one syscall. */
void uaio_loop_lock(uaio_loop *l);
void uaio_loop_unlock(uaio_loop *l);

/* Cross-thread post: runs fn(data) on the loop's thread and wakes it.
 * Safe from any thread and from signal-free contexts; allocates a node.
 * Returns 0, -EINVAL (no loop or fn), -ENOMEM, or -ECHILD in a forked
 * child. */
int uaio_loop_post(uaio_loop *l, void (*fn)(void *data), void *data);

/* --------------------------------------------------------------- Reactor */

#define UAIO_READABLE	0x1u
#define UAIO_WRITABLE	0x2u
/*
 * Edge-triggered (like EPOLLET): handlers run when readiness arrives
 * (new data, new room), not again for data left unread. Cheaper on
 * io_uring (one multishot poll instead of a re-armed one-shot poll); the
 * handler must then drain the fd until EAGAIN.
 */
#define UAIO_EDGE	0x4u

/*
 * The Reactor's event handler (ACE style). Level-triggered: while the fd
 * stays ready and the handler stays registered for it, the callback runs
 * again on each iteration. A handler returning < 0 removes the watch.
 *   handle_input:  readable, or hang-up / error (read to find out which)
 *   handle_output: writable, or error
 *   handle_close:  the watch is over; called exactly once (none once the
 *                  loop is freed), after which the loop no longer touches w. reason is 0 (stopped by the
 *                  caller or a handler returned < 0), -EBADF (fd invalid
 *                  or closed through uaio_op_close) or -EPIPE (hang-up or
 *                  error with no registered handler to report it to).
 * Any callback may be NULL.
 */
struct uaio_handler {
	int (*handle_input)(uaio_watch *w);
	int (*handle_output)(uaio_watch *w);
	void (*handle_close)(uaio_watch *w, int reason);
};

struct uaio_watch {
	const struct uaio_handler *handler;
	void *data;
	int fd;
	uint32_t events;	/* wanted UAIO_READABLE | UAIO_WRITABLE */
	uint32_t state;		/* private */
	uint32_t armed;		/* private: mask the backend is watching */
	struct uaio_watch *next;	/* private */
};

/* Starts watching fd for events (UAIO_READABLE | UAIO_WRITABLE, optionally
 * | UAIO_EDGE). Returns 0, -EBADF, -EINVAL, -EEXIST (fd already watched by
 * this loop), -EBUSY (w in use), -ENOMEM, or as uaio_watch_start(3) says
 * (-ECHILD, -EMFILE, -ENFILE, -EAGAIN). */
int uaio_watch_start(uaio_loop *l, uaio_watch *w, int fd, uint32_t events,
		     const struct uaio_handler *h, void *data);
/* Changes the wanted events; 0 keeps the watch registered but idle. */
int uaio_watch_modify(uaio_loop *l, uaio_watch *w, uint32_t events);
/* Ends the watch; handle_close(w, 0) follows at the loop's next dispatch
 * point, never from inside this call. -EALREADY if already stopping. */
int uaio_watch_stop(uaio_loop *l, uaio_watch *w);
/* 1 once an event on w has said the peer will send nothing more (its
 * write side shut, POLLRDHUP or POLLHUP): end of file waits behind any
 * data left, and an edge-triggered watch will not say so again. 0
 * otherwise. For the handlers, from the loop's thread. */
int uaio_watch_peer_closed(const uaio_watch *w);

/* ---------------------------------------------------------------- timers */

typedef void (*uaio_timer_cb)(uaio_timer *t);

struct uaio_timer {
	uint64_t when;		/* absolute uaio_loop_now() deadline */
	uint64_t period;	/* 0 = one-shot */
	uaio_timer_cb cb;
	void *data;
	uint32_t heap_index;	/* private; UINT32_MAX when not pending */
	uint32_t seq;		/* private: FIFO order among equal deadlines */
};

void uaio_timer_init(uaio_timer *t, uaio_timer_cb cb, void *data);
/* Fires after timeout_ns, then every period_ns if period_ns > 0.
 * Restarting a pending timer reschedules it. */
int uaio_timer_start(uaio_loop *l, uaio_timer *t, uint64_t timeout_ns,
		     uint64_t period_ns);
/* Returns 0, or -ENOENT if it was not pending here; -EINVAL, -ECHILD as
 * uaio_timer_start(3). Never calls cb. */
int uaio_timer_stop(uaio_loop *l, uaio_timer *t);
int uaio_timer_pending(const uaio_timer *t);

/* -------------------------------------------------------------- Proactor */

/*
 * An operation's completion callback. res is the syscall's result or
 * -errno (-ECANCELED when cancelled). For multishot ops,
 * uaio_op_more(op) tells whether more completions will follow.
 */
typedef void (*uaio_op_cb)(uaio_op *op, int res, void *data);

struct uaio_op {
	uaio_op_cb cb;
	void *data;
	struct uaio_op *next;	/* private: pending and fallback queues */
	uint64_t off;		/* private from here on: the op's arguments */
	uint64_t addr;
	uint64_t addr2;
	uint32_t len;
	int32_t fd;
	uint32_t rw_flags;
	uint8_t opcode;
	uint8_t state;
	uint16_t xflags;
};

/* Op submission: returns 0 if queued, else -errno and cb is never called.
 * Ops are handed to the kernel in batches at the next loop iteration (on
 * thread-safe loops at once, except another thread's op on io_uring, which
 * the woken driver hands over). off = -1 means "current file position". */
int uaio_op_nop(uaio_loop *l, uaio_op *op, uaio_op_cb cb, void *data);
int uaio_op_read(uaio_loop *l, uaio_op *op, int fd, void *buf, size_t len,
		 int64_t off, uaio_op_cb cb, void *data);
int uaio_op_write(uaio_loop *l, uaio_op *op, int fd, const void *buf,
		  size_t len, int64_t off, uaio_op_cb cb, void *data);
int uaio_op_readv(uaio_loop *l, uaio_op *op, int fd, const struct iovec *iov,
		  int iovcnt, int64_t off, uaio_op_cb cb, void *data);
int uaio_op_writev(uaio_loop *l, uaio_op *op, int fd, const struct iovec *iov,
		   int iovcnt, int64_t off, uaio_op_cb cb, void *data);
int uaio_op_recv(uaio_loop *l, uaio_op *op, int fd, void *buf, size_t len,
		 int flags, uaio_op_cb cb, void *data);
int uaio_op_send(uaio_loop *l, uaio_op *op, int fd, const void *buf,
		 size_t len, int flags, uaio_op_cb cb, void *data);
int uaio_op_recvmsg(uaio_loop *l, uaio_op *op, int fd, struct msghdr *msg,
		    int flags, uaio_op_cb cb, void *data);
int uaio_op_sendmsg(uaio_loop *l, uaio_op *op, int fd,
		    const struct msghdr *msg, int flags, uaio_op_cb cb,
		    void *data);
/* addr/addrlen may be NULL. Result: the new fd. */
int uaio_op_accept(uaio_loop *l, uaio_op *op, int fd, struct sockaddr *addr,
		   socklen_t *addrlen, int flags, uaio_op_cb cb, void *data);
/* One callback per accepted connection until an error or cancel; the
 * last callback has uaio_op_more(op) == 0. */
int uaio_op_accept_multishot(uaio_loop *l, uaio_op *op, int fd, int flags,
			     uaio_op_cb cb, void *data);
int uaio_op_connect(uaio_loop *l, uaio_op *op, int fd,
		    const struct sockaddr *addr, socklen_t addrlen,
		    uaio_op_cb cb, void *data);
int uaio_op_openat(uaio_loop *l, uaio_op *op, int dfd, const char *path,
		   int flags, mode_t mode, uaio_op_cb cb, void *data);
/* Cancels every op in flight on fd (they complete with -ECANCELED),
 * ends any watch on it (handle_close(w, -EBADF)), then closes it. This is
 * how to close a descriptor the loop uses: after a plain close(2), ops in
 * the kernel keep the open file (io_uring holds a reference) and finish
 * only when it has data or hangs up, and the epoll backend no longer hears
 * of the fd at all. */
int uaio_op_close(uaio_loop *l, uaio_op *op, int fd, uaio_op_cb cb,
		  void *data);
struct statx;
int uaio_op_statx(uaio_loop *l, uaio_op *op, int dfd, const char *path,
		  int flags, unsigned mask, struct statx *stx, uaio_op_cb cb,
		  void *data);
/* datasync != 0 gives fdatasync. */
int uaio_op_fsync(uaio_loop *l, uaio_op *op, int fd, int datasync,
		  uaio_op_cb cb, void *data);
int uaio_op_fallocate(uaio_loop *l, uaio_op *op, int fd, int mode,
		      int64_t off, int64_t len, uaio_op_cb cb, void *data);
int uaio_op_splice(uaio_loop *l, uaio_op *op, int fd_in, int64_t off_in,
		   int fd_out, int64_t off_out, size_t len, unsigned flags,
		   uaio_op_cb cb, void *data);
/* copy_file_range(2) between two files, in the kernel (a worker runs it
 * on both backends: io_uring has no such op). Offsets -1: the file
 * positions. Result: bytes copied, 0 at the end of fd_in, or -errno. */
int uaio_op_copy_file_range(uaio_loop *l, uaio_op *op, int fd_in,
			    int64_t off_in, int fd_out, int64_t off_out,
			    size_t len, uaio_op_cb cb, void *data);
/* Completes with -ETIME after timeout_ns, or -ECANCELED if cancelled first. */
int uaio_op_timeout(uaio_loop *l, uaio_op *op, uint64_t timeout_ns,
		    uaio_op_cb cb, void *data);
/* Cancels target. The cancel op's own result: 0 (found and cancelled),
 * -ENOENT (not in flight) or -EALREADY (running, will complete anyway).
 * target's callback still runs exactly once. */
int uaio_op_cancel(uaio_loop *l, uaio_op *op, uaio_op *target,
		   uaio_op_cb cb, void *data);
/* Cancels all ops in flight on fd; result: how many were cancelled. */
int uaio_op_cancel_fd(uaio_loop *l, uaio_op *op, int fd, uaio_op_cb cb,
		      void *data);

/* One-shot readiness poll; result: the poll(2) revents, or -errno. */
int uaio_op_poll(uaio_loop *l, uaio_op *op, int fd, short events,
		 uaio_op_cb cb, void *data);
struct open_how;
int uaio_op_openat2(uaio_loop *l, uaio_op *op, int dfd, const char *path,
		    struct open_how *how, uaio_op_cb cb, void *data);
int uaio_op_unlinkat(uaio_loop *l, uaio_op *op, int dfd, const char *path,
		     int flags, uaio_op_cb cb, void *data);
int uaio_op_renameat(uaio_loop *l, uaio_op *op, int olddfd,
		     const char *oldpath, int newdfd, const char *newpath,
		     unsigned flags, uaio_op_cb cb, void *data);
int uaio_op_mkdirat(uaio_loop *l, uaio_op *op, int dfd, const char *path,
		    mode_t mode, uaio_op_cb cb, void *data);
int uaio_op_symlinkat(uaio_loop *l, uaio_op *op, const char *target,
		      int newdfd, const char *linkpath, uaio_op_cb cb,
		      void *data);
int uaio_op_linkat(uaio_loop *l, uaio_op *op, int olddfd, const char *oldpath,
		   int newdfd, const char *newpath, int flags, uaio_op_cb cb,
		   void *data);
int uaio_op_fadvise(uaio_loop *l, uaio_op *op, int fd, int64_t off,
		    int64_t len, int advice, uaio_op_cb cb, void *data);
int uaio_op_madvise(uaio_loop *l, uaio_op *op, void *addr, size_t len,
		    int advice, uaio_op_cb cb, void *data);
int uaio_op_shutdown(uaio_loop *l, uaio_op *op, int fd, int how,
		     uaio_op_cb cb, void *data);
int uaio_op_tee(uaio_loop *l, uaio_op *op, int fd_in, int fd_out, size_t len,
		unsigned flags, uaio_op_cb cb, void *data);
/*
 * Runs fn(arg) on the loop's small worker pool (started on first use, on
 * either backend) and completes with its result: blocking work that has
 * no kernel async op (libuv's uv_queue_work). res is the result clamped
 * to int; uaio_op_result_long() gives the full value inside the callback.
 */
int uaio_op_work(uaio_loop *l, uaio_op *op, long (*fn)(void *arg), void *arg,
		 uaio_op_cb cb, void *data);
long uaio_op_result_long(const uaio_op *op);

/* --------------------------------------------------------------- pinning */

/*
 * Pins the open file behind fd: returns a descriptor-like handle that the
 * fd-first ops (read, write, readv, writev, recv, send, recvmsg, sendmsg,
 * fsync, fallocate, poll, ...; not splice, tee or close) accept in place
 * of fd, and that keeps naming the same open file after the caller closes
 * fd or gets its number back for another file. io_uring: a registered-file
 * slot (no descriptor is used, and POSIX record locks are untouched);
 * epoll: a duplicate descriptor. Any thread on a UAIO_LOOP_THREADSAFE loop,
 * else the loop's own thread only. Returns the handle (>= 0), or -EBADF,
 * -ENFILE / -EMFILE when no slot is left, and the rest of
 * uaio_file_pin(3)'s errors (-EINVAL, -ENOMEM, -EEXIST, -ECHILD).
 */
int uaio_file_pin(uaio_loop *l, int fd);
/* Pinning a handle again (uaio_file_pin(l, handle)) takes one more
 * reference to it and returns it; each uaio_file_unpin() drops one, and
 * the last lets the file go. Drop a reference once no op uses it. */
void uaio_file_unpin(uaio_loop *l, int pinned);

/* Registered buffers a loop may hold (io_uring allows 16 384). */
#define UAIO_BUFS_MAX	1024

/*
 * Registered buffers: memory the kernel maps once, so that fixed reads and
 * writes do not pin its pages on every call (io_uring's READ_FIXED and
 * WRITE_FIXED; on the epoll fallback they are plain reads and writes).
 * uaio_buf_register returns the buffer's index (>= 0), or -EINVAL, -EFAULT,
 * -EOVERFLOW (over 1 GiB), -ENOBUFS (all UAIO_BUFS_MAX slots taken) or the
 * kernel's refusal (-ENOMEM past RLIMIT_MEMLOCK without CAP_IPC_LOCK).
 * Unregister once no op uses the buffer. Any thread on a
 * UAIO_LOOP_THREADSAFE loop, else the loop's own thread only.
 */
int uaio_buf_register(uaio_loop *l, void *buf, size_t len);
int uaio_buf_unregister(uaio_loop *l, int buf_index);
/* As uaio_op_read/write, through registered buffer buf_index, which must
 * hold [buf, buf + len) (else -EFAULT at submission). */
int uaio_op_read_fixed(uaio_loop *l, uaio_op *op, int fd, void *buf,
		       size_t len, int64_t off, int buf_index, uaio_op_cb cb,
		       void *data);
int uaio_op_write_fixed(uaio_loop *l, uaio_op *op, int fd, const void *buf,
			size_t len, int64_t off, int buf_index, uaio_op_cb cb,
			void *data);

/*
 * Per-op flags, set before a uaio_op_*() call and kept across submissions
 * of the same op until set again.
 *
 * UAIO_OPF_ISSUE_HERE: on a thread-safe io_uring loop, the calling thread
 * hands the op to the kernel itself before the uaio_op_*() call returns,
 * instead of leaving it to the thread that drives the loop: the kernel
 * resolves the descriptor then, and no wake-up is needed. io_uring cancels
 * a thread's requests when that thread exits, so the caller must outlive
 * the op, and order it with other ops on its stream (it is not held
 * behind them). When the op cannot go out at once (the ring is full) the
 * call fails with -EAGAIN and nothing is queued. Other loops ignore the
 * flag.
 */
#define UAIO_OPF_ISSUE_HERE	(1u << 0)
/*
 * UAIO_OPF_BLOCKING: a read or write (uaio_op_read, _readv, _write,
 * _writev and their _fixed forms) is made as a blocking call on the
 * loop's worker pool, without a non-blocking try or a wait for readiness
 * (on io_uring: for the kernel's poll), in its turn among the ops on its
 * side of the stream; those after it wait for it. A write is made whole,
 * as a blocking write(2) makes it (O_NONBLOCK: as there). The call is by
 * descriptor number, on the shared pool: close the descriptor after the
 * op ends (uaio_op_set_flags(3)). For files whose readiness never comes
 * though the call would not wait (a write to /dev/kmsg), and for the plain
 * call's semantics (LAIO's writes at a file's position). Once running, the
 * op cannot be cancelled (the pool may start a thread more meanwhile);
 * while it waits for a worker, uaio_op_cancel_fd and uaio_op_close cancel
 * it. On io_uring, by a registered-slot pin it goes to the ring as
 * without the flag. Other ops ignore the flag.
 */
#define UAIO_OPF_BLOCKING	(1u << 1)
void uaio_op_set_flags(uaio_op *op, unsigned flags);

/* For multishot ops inside the callback: 1 if more completions follow. */
int uaio_op_more(const uaio_op *op);
/* 1 from submission until the final callback has started. */
int uaio_op_pending(const uaio_op *op);

#ifdef __cplusplus
}
#endif
#endif
