/* SPDX-License-Identifier: MIT */
/*
 * POSIX asynchronous I/O without helper threads (IEEE Std 1003.1-2017
 * aio_read, aio_write, lio_listio, aio_fsync, aio_suspend, aio_cancel,
 * aio_error, aio_return; glibc's aio_init) on the standard struct aiocb.
 *
 * The kernel does the I/O (io_uring; epoll plus a small worker pool where
 * io_uring is unavailable). A read or write that can finish without
 * blocking (page cache, room in a pipe) finishes inside the submitting
 * call; everything else is handed to one engine thread that only submits
 * and reaps. Notifications, aio_error() and aio_return() behave exactly
 * as if every request had completed later.
 *
 * These functions follow POSIX: -1 and errno on failure. aio_error(),
 * aio_return() and aio_suspend() are async-signal-safe, as POSIX asks.
 * libuaio-posix.so exports the same functions under the standard names
 * (man 7 uaio_posix); this header gives them uaio_ names for programs
 * that want both implementations side by side.
 */
#ifndef UAIO_AIO_H
#define UAIO_AIO_H

#include <aio.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

struct aioinit;	/* glibc's, from <aio.h> with _GNU_SOURCE */

int uaio_read(struct aiocb *cb);
int uaio_write(struct aiocb *cb);
int ulio_listio(int mode, struct aiocb *const list[], int nent,
		struct sigevent *sig);
/* op is O_SYNC or O_DSYNC. Completes after every write to the same file
 * that was queued before it. */
int uaio_fsync(int op, struct aiocb *cb);
int uaio_suspend(const struct aiocb *const list[], int nent,
		 const struct timespec *timeout);
int uaio_cancel(int fd, struct aiocb *cb);
int uaio_error(const struct aiocb *cb);
ssize_t uaio_return(struct aiocb *cb);
/*
 * Tuning, like glibc's aio_init(): aio_num (when > 0) sets the limit of
 * requests in flight per process (default UAIO_AIO_MAX_DEFAULT; beyond it
 * submissions fail with EAGAIN); aio_threads (when > 0) sets the worker
 * pool size of the fallback backend, if called before the first request;
 * aio_idle_time (when > 0) how many seconds the engine thread stays after
 * the last request ends (default 1). The other fields are ignored.
 */
void uaio_init(const struct aioinit *init);

/* Default limit of requests in flight (AIO_MAX); also the most entries
 * one ulio_listio() takes (AIO_LISTIO_MAX) unless uaio_init() changes it. */
#define UAIO_AIO_MAX_DEFAULT	65536
/* aio_reqprio may lower a request's priority by 0 ... this much. */
#define UAIO_AIO_PRIO_DELTA_MAX	20

/* sysconf() for _SC_AIO_MAX, _SC_AIO_LISTIO_MAX and _SC_AIO_PRIO_DELTA_MAX
 * as this library implements them; -1 / EINVAL for any other name. */
long uaio_sysconf(int name);

#ifdef __cplusplus
}
#endif
#endif
