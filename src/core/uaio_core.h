/* SPDX-License-Identifier: MIT */
/*
 * What the layers above the core (src/aio, src/laio) may use beyond the
 * public <uaio/loop.h>: only this. Everything else of the core is private
 * to src/core (internal.h).
 */
#ifndef UAIO_CORE_H
#define UAIO_CORE_H

#include <pthread.h>
#include <stdint.h>

#define UAIO_LIKELY(x) __builtin_expect(!!(x), 1)
#define UAIO_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Everything else is hidden, in the static library too, so that the
 * installed libuaio.a can make the internal names local. */
#define UAIO_API __attribute__((visibility("default")))

/* pthread_create() for the library's own threads (workers, the AIO engine
 * and SIGEV_THREAD notification threads): they start with every signal blocked, so that
 * the program's signals go to its own threads. 0 or -errno. */
int uaio__thread_start(pthread_t *t, const pthread_attr_t *attr,
		       void *(*fn)(void *), void *arg);
/* The same, joinable, with want bytes of stack for fn: glibc carves the
 * thread's static TLS (every module's __thread blocks, its own surplus)
 * out of the stack it is given, so that is added as glibc counts it; 8 MiB
 * at least for much TLS or TLS aligned beyond a page (workers.c). */
int uaio__thread_start_stack(pthread_t *t, size_t want, void *(*fn)(void *), void *arg);

/* Cancellation off for a stretch that holds a lock across calls that are
 * cancellation points (read, write, close, send...): a cancel acting in
 * one would leave the lock held for good. Returns the state to give back
 * with uaio__nocancel_end; a cancel that came meanwhile acts at the
 * thread's next cancellation point. */
static inline int uaio__nocancel_begin(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void uaio__nocancel_end(int old)
{
	int was;

	pthread_setcancelstate(old, &was);
}

/* The calling thread's token: nonzero, and never another thread's, even
 * one that reuses an exited thread's pthread_t (thread_token.c). */
uint64_t uaio__thread_token(void);

/*
 * In a fork child, a loop some thread of the parent was inside (its
 * lists and locks may be mid-update): closes its descriptors, reading
 * nothing but their numbers, and leaks the rest. The child then holds
 * none of the parent's rings, eventfds or epoll sets.
 */
struct uaio_loop;
void uaio__loop_forsake(struct uaio_loop *l);

#endif
