/* SPDX-License-Identifier: MIT */
/*
 * Lazy asynchronous I/O (LAIO): any system call, made as usual, that turns
 * asynchronous only if it would block. After Elmeleegy, Chanda, Cox and
 * Zwaenepoel, "Lazy Asynchronous I/O For Event-Driven Servers" (USENIX ATC
 * 2004); the API and field names are the paper's.
 *
 *   long r = laio_syscall(SYS_read, fd, buf, len);
 *   void *h = laio_gethandle();   // NULL: r is the result, as syscall(2)'s
 *   if (h) {                      // (a non-blocking connect's own
 *           ...                   //  EINPROGRESS has no handle)
 *           struct laio_completion c[16];
 *           int n = laio_poll(c, 16, NULL); // c[i].laio_handle == h ...
 *   }
 *
 * Pointer arguments (buffers, paths, iovecs, msghdrs, sockaddrs, their
 * lengths) must stay valid and untouched until the background call's
 * completion has been returned by laio_poll(). See docs/laio.md for which
 * calls run inline, which go to io_uring and which to the helper pool.
 */
#ifndef UAIO_LAIO_H
#define UAIO_LAIO_H

#include <time.h>

/* <time.h> declares it only for POSIX or GNU sources, not under -std=c99. */
struct timespec;

#ifdef __cplusplus
extern "C" {
#endif

struct laio_completion {
	void *laio_handle;		/* laio_gethandle() of the call */
	long laio_return_value;		/* the syscall's result, or -1 */
	int laio_errno;			/* 0, or the errno when it failed */
};

/*
 * Performs system call `number`. If it completes without blocking, returns
 * its result and sets errno exactly as syscall(2) would. If it would block,
 * returns -1 with errno EINPROGRESS and the call continues in the
 * background: exactly one completion for it will be returned by laio_poll().
 * A call that itself fails with EINPROGRESS (connect on an O_NONBLOCK
 * socket) looks the same: tell them apart with laio_gethandle().
 */
long laio_syscall(long number, ...);

/* The handle of the calling thread's last laio_syscall() if it went to the
 * background; NULL if that call completed inline (or there was none). */
void *laio_gethandle(void);

/*
 * Waits up to *timeout (NULL = until one completes, {0,0} = do not wait)
 * for background calls to finish and fills up to n completions. Returns
 * the number filled (0 on timeout, and at once when the process has no
 * background call outstanding), or -1 with errno EINVAL (c == NULL,
 * n <= 0, or a bad timespec). Each handle is returned exactly once; after
 * that it may be reused by a later call. Signal handlers do not end the
 * wait (no EINTR): to act on signals, use a timeout or laio_fd().
 */
int laio_poll(struct laio_completion *c, int n, const struct timespec *timeout);

/*
 * A descriptor that polls readable while completions are pending (or the
 * engine has kernel completions to collect), for use from another event
 * loop: when it fires, call laio_poll() with a zero timeout. Do not read
 * from or close it. Returns -1 and sets errno on failure.
 */
int laio_fd(void);

/*
 * Best-effort cancellation of a background call. Returns 0 when a
 * cancellation was requested: the call still produces exactly one
 * completion, with laio_errno ECANCELED if it was stopped in time and
 * its ordinary result otherwise. Returns -1 with errno EALREADY if the
 * call has already finished (its completion is waiting in laio_poll), or
 * EINVAL if handle is not an outstanding background call.
 */
int laio_cancel(void *handle);

#ifdef __cplusplus
}
#endif
#endif
