/* SPDX-License-Identifier: MIT */
/* POSIX AIO layer internals: shared by the engine (engine.h), notify.c and
 * the tests. */
#ifndef UAIO_AIO_INTERNAL_H
#define UAIO_AIO_INTERNAL_H

#include <aio.h>
#include <signal.h>
#include <stdbool.h>

struct uaio_note;

/* Checks a sigevent as the submission functions must: 0 or -EINVAL. */
int uaio__sigevent_check(const struct sigevent *sev);
/*
 * Delivers sev: SIGEV_SIGNAL queues sigev_signo with si_code SI_ASYNCIO
 * and si_value = sigev_value; SIGEV_THREAD runs sigev_notify_function on
 * a new thread (sigev_notify_attributes, else detached). 0, or -errno when
 * it could not be delivered (a full signal queue, no thread: EAGAIN).
 * Callable with any lock held.
 */
int uaio__notify(const struct sigevent *sev);
/*
 * The same in two steps around a request's publication, so that nothing
 * the caller owns is read once the caller may see the request done (and
 * reuse its aiocb, or destroy the thread attributes it named): begin makes
 * a SIGEV_THREAD's thread, held; end lets it run, or queues the signal.
 * *held is NULL when there is no thread to let go.
 */
void uaio__notify_begin(const struct sigevent *sev, struct uaio_note **held);
int uaio__notify_end(const struct sigevent *sev, struct uaio_note *held);
/* The same, a SIGEV_SIGNAL queued to thread tid of this process (0: to
 * the process, as uaio__notify_end queues it). */
int uaio__notify_end_to(const struct sigevent *sev, struct uaio_note *held, pid_t tid);
/* Waits while cb's request is between its status and its signal (as
 * glibc's aio_error waits for the lock its completion holds); returns
 * cb's state word (engine.h's ST_*) and, in *code if not NULL, the error
 * code as of then. For the drop-in's aio_error and aio_return too, which
 * read the aiocb's fields as glibc's do. */
unsigned long long aio__settled(const struct aiocb *cb, int *code);
/* The caller asks cb's status (aio_error, aio_return; the drop-in's
 * too): a clue to how many requests it keeps in flight (status.c). */
void aio__status_asked(const struct aiocb *cb);
/* lio_listio with glibc's checks of nent (none but AIO_MAX): the
 * drop-in's; ulio_listio adds POSIX's AIO_LISTIO_MAX. */
int aio__lio_listio(int mode, struct aiocb *const list[], int nent,
		    struct sigevent *sig);
/* SIGEV_THREAD threads started so far (tests). */
unsigned uaio__notify_threads(void);

/* The most one submitting call copies inline (a request or a whole
 * lio_listio), and the bytes copied inline so far (tests). */
#define UAIO__AIO_INLINE_MAX	(128 * 1024)
unsigned long long uaio__aio_inline_bytes(void);

/* Whether the engine thread and its loop exist (tests), its backend. */
bool uaio__aio_engine_started(void);
const char *uaio__aio_backend_name(void);
/* Completions of requests on the submitting threads' own rings, reaped
 * by the thread itself in aio_suspend and by the engine thread (tests). */
void uaio__aio_own_reaped(unsigned long *by_thread, unsigned long *by_engine);
/* RLIMIT_FSIZE changed (the drop-in's setrlimit, prlimit): the next
 * submission looks it up again. */
void uaio__aio_fsize_changed(void);

#endif
