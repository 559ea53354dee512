/* SPDX-License-Identifier: MIT */
/*
 * Lazy asynchronous syscalls (see include/uaio/laio.h, docs/laio.md): the
 * engine shared by the files of src/laio/.
 *
 * One engine per process owns a thread-safe uaio loop. A call is first
 * tried without blocking in the caller (RWF_NOWAIT, MSG_DONTWAIT, openat2
 * RESOLVE_CACHED, or an io_uring submission whose completion is already
 * there); only when it would block does it get a record (the handle) and
 * continue on the loop. Nobody runs the loop in the background: the
 * thread in laio_poll() drives it, and op callbacks queue the records on
 * the engine's completion queue.
 *
 * Files: calls.c (the table of calls, laio_syscall), forms.c (each call's
 * *at form and ring op), attempt.c (tries in
 * the caller, going on after a part), background.c (what continues on the loop), engine.c (the
 * engine, records, laio_poll / laio_fd / laio_gethandle / laio_cancel).
 */
#ifndef UAIO_LAIO_ENGINE_H
#define UAIO_LAIO_ENGINE_H

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
#include "util/plumb.h"

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
#define CF_PIPELIKE	0x20	/* ... and a pipe, FIFO or socket: a write
				 * there raises SIGPIPE (with CF_NOTREG) */
#define CF_OWNCANCEL	0x40	/* ... or a timerfd (or a file /proc cannot
				 * name): ECANCELED may be its read's own */


/* A socket call continued by a msghdr of ours: recvfrom/sendto with an
 * address (the ring's form of them), or what is left of a sendmsg or a
 * MSG_WAITALL recvmsg. */
struct laio_msg {
	struct msghdr h;
	struct iovec iov1;
};

struct laio_call {
	uaio_op op;
	uaio_op cop;			/* the cancel op */
	struct laio_call *next;		/* free list / completion queue */
	long nr;
	long a[6];
	long ret;			/* result or -errno */
	size_t done;			/* bytes its earlier parts moved */
	struct iovec *iov;		/* continuation: the remaining iovs */
	struct laio_msg *msg;		/* or NULL */
	/* Issues the current op again: io_uring cancels a request when the
	 * thread that issued it (whichever ran the loop) exits. */
	int (*submit)(struct laio_call *r);
	int iovcnt;
	/* A duplicate of a[0] (a pipe's or socket's) the call goes on with
	 * when it waits for readiness (background.c), or 0: the file stays
	 * open for it, as for a plain call blocked in it. Closed when the
	 * call ends, under mu; hold_pin: it is the loop's pin (epoll). */
	int hold;
	bool hold_pin;
	/* A regular file's position when a read at its position went to
	 * io_uring, or -1 (position_after_ring in background.c). */
	int64_t pos0;
	uint32_t magic;
	uint8_t phase;
	uint8_t kind;
	uint8_t flags;			/* CF_CANCEL_*, CF_RELEASE: under mu */
	uint8_t ftype;			/* CF_ISREG / CF_NOTREG (| CF_PIPELIKE): owner only */
	uint8_t retries;
	uint8_t unasked;		/* -ECANCELED nobody asked for, resubmitted */
	bool no_nowait;			/* a try said EOPNOTSUPP: never RWF_NOWAIT */
	uint8_t timeo;			/* socket timeout: 0 unknown, 1 none, 2 set */
	unsigned gen;			/* driver_exits when its op was submitted */
	/* recvmsg MSG_WAITALL: the caller's msg_controllen before the
	 * kernel wrote what it used (0: not known) */
	size_t ctl_cap;
};

struct laio_engine {
	pthread_mutex_t init_mu;
	atomic_bool ready;
	uaio_loop *loop;
	int mech;			/* LAIO_MECH_OP or LAIO_MECH_POLL */
	bool atfork;			/* fork handlers registered (at load) */

	pthread_mutex_t mu;		/* everything below */
	pthread_cond_t cv;		/* completions queued / driver gone */
	struct laio_call *cq_head, *cq_tail;
	unsigned long ncq;
	unsigned long outstanding;	/* background, not yet returned */
	bool driving;			/* a thread is inside run_once */
	uint64_t driver;		/* the last thread that ran the loop (its token), or 0 */
	unsigned waiters;
	struct uaio__slab calls;	/* laio_call records */
	/* Threads that ran the loop and exited since the start: io_uring
	 * cancels what such a thread submitted, which background.c tells
	 * from a call's own ECANCELED by this count (laio_call.gen). */
	atomic_uint driver_exits;
	pthread_key_t driver_key;
	bool key_made;

	/* laio_fd(): epoll over the loop's fd and efd, which is kept
	 * readable while the completion queue is not empty. */
	int efd, epfd;
	bool efd_set;
};




extern struct laio_engine laio__engine;
/* The calling thread's last call that went to the background (its
 * handle, for laio_gethandle), or NULL. */
extern UAIO_TLS struct laio_call *laio__last;
/* This thread gave itself credentials, a filter, namespaces or another
 * context of its own through laio_syscall (calls.c): its calls all run
 * inline from then on, and it does not run the loop (engine.c). */
extern UAIO_TLS bool laio__own_context;

/* engine.c */
int laio__engine_get(void);
struct laio_call *laio__call_new(long nr, const long *a);
void laio__call_release_locked(struct laio_call *r);
void laio__call_finish(struct laio_call *r, long res);
void laio__call_free_parts(struct laio_call *r);
void laio__outstanding_dec_locked(void);
void laio__efd_sync_locked(void);
/* The public calls run with cancellation off (uaio__nocancel_begin): mu
 * is held across read(), write() and close(). laio_poll's wait is the
 * one cancellation point, with a handler that lets mu go. */
void laio__drive_locked(int64_t timeout_ns);

/* attempt.c */
long laio__ret_inline(long res);
long laio__ret_background(struct laio_call *r);
bool laio__is_write_nr(long nr);
const struct iovec *laio__call_iov(struct laio_call *r, struct iovec *iov1, int *cnt);
long laio__try_nowait(struct laio_call *r);
bool laio__fd_isreg(struct laio_call *r);
bool laio__fd_pipelike(struct laio_call *r);
static inline int laio__call_fd(const struct laio_call *r)
{
	return r->hold > 0 ? r->hold : (int)r->a[0];
}
int laio__iov_advance(struct laio_call *r, size_t n);
/* forms.c: a call's *at form (normalisation) and its ring op */
int laio__s_accept(struct laio_call *r);
int laio__s_connect(struct laio_call *r);
int laio__s_openat(struct laio_call *r);
int laio__s_openat2(struct laio_call *r);
int laio__s_statx(struct laio_call *r);
int laio__s_fsync(struct laio_call *r);
int laio__s_fallocate(struct laio_call *r);
int laio__s_unlinkat(struct laio_call *r);
int laio__s_renameat(struct laio_call *r);
int laio__s_mkdirat(struct laio_call *r);
int laio__s_symlinkat(struct laio_call *r);
int laio__s_linkat(struct laio_call *r);
int laio__s_fadvise(struct laio_call *r);
int laio__s_madvise(struct laio_call *r);
int laio__s_splice(struct laio_call *r);
int laio__s_tee(struct laio_call *r);
int laio__s_shutdown(struct laio_call *r);
void laio__n_open(long *a);
void laio__n_creat(long *a);
void laio__n_unlink(long *a);
void laio__n_rmdir(long *a);
void laio__n_renameat(long *a);
void laio__n_rename(long *a);
void laio__n_mkdir(long *a);
void laio__n_symlink(long *a);
void laio__n_link(long *a);
bool laio__continue(struct laio_call *r, long res, bool first_try);
bool laio__peek_waitall(const struct laio_call *r);
bool laio__whole(struct laio_call *r, long res);
bool laio__sock_timeout(int fd, bool write);
int64_t laio__call_off(const struct laio_call *r);
struct msghdr *laio__call_msg(struct laio_call *r);
bool laio__is_read_nr(long nr);
bool laio__nonblocking(int fd);
bool laio__fd_isdir(int fd);
/* What one call may move, as the kernel counts (MAX_RW_COUNT; sockets
 * INT_MAX): larger counts are cut to it, not refused. */
#define LAIO_RW_MAX	(INT_MAX & ~4095L)


/* background.c */
int laio__submit_work(struct laio_call *r);
int laio__submit_rw_bg(struct laio_call *r);
void laio__op_cb(uaio_op *op, int res, void *data);
long laio__go_background(struct laio_call *r, int (*submit)(struct laio_call *));
long laio__try_ring(long nr, const long *a, int (*submit)(struct laio_call *));
void laio__tmp_init(struct laio_call *tmp, long nr, const long *a);
long laio__rw_after_try(struct laio_call *tmp, long res);
long laio__rw_call(long nr, long *a);

#endif
