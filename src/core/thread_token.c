/* SPDX-License-Identifier: MIT */
/*
 * Which thread is which, for "is this the thread that drives the loop":
 * glibc gives a new thread the pthread_t (and the stack, TLS included)
 * of one that was joined, so pthread_equal() takes the newcomer for the
 * thread that left. io_uring cancels a request when the thread that
 * issued it exits, so a newcomer that took itself for the driver issued
 * requests that its own exit then cancelled. A token is never reused.
 */
#include "core/uaio_core.h"
#include "util/plumb.h"

#include <stdatomic.h>

/* The tokens handed out so far (the process's, its fork children's
 * own from the same point on: a child's threads are new, and their
 * tokens are new to it). */
static struct {
	atomic_uint_fast64_t last;
} thread_tokens;

static UAIO_TLS uint64_t my_token;	/* no __tls_get_addr: the drop-in may be dlopened */

uint64_t uaio__thread_token(void)
{
	if (UAIO_UNLIKELY(!__atomic_load_n(&my_token, __ATOMIC_RELAXED))) {
		uint64_t none = 0, t = atomic_fetch_add_explicit(&thread_tokens.last, 1,
								 memory_order_relaxed) + 1;

		/* a signal handler that took one meanwhile keeps it: one
		 * token for the thread's life */
		__atomic_compare_exchange_n(&my_token, &none, t, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&my_token, __ATOMIC_RELAXED);
}
