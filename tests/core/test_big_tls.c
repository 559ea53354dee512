/* SPDX-License-Identifier: MIT */
/*
 * A program with much thread-local storage: glibc carves a thread's
 * static TLS out of the stack it is given, and refused the worker pool's
 * fixed 64 KiB stacks, so uaio_op_work (and every op the fallback hands a
 * worker) failed with -EAGAIN. The work runs, on a thread of the pool
 * with the program's TLS of its own, and its stack has room. Run again
 * with glibc keeping a large TLS surplus (a tunable), which no reckoning
 * outside glibc sees.
 */
#include <uaio/loop.h>

#include "test.h"

/* More than any fixed stack the library used, aligned as strictly as
 * its size (glibc rounds a stack's size down to the TLS's alignment);
 * touched, so it is real */
static __thread char big[1024 * 1024] __attribute__((aligned(1024 * 1024)));

static long on_worker(void *arg)
{
	volatile char deep[32 * 1024];	/* the room a work may expect */

	(void)arg;
	memset((char *)deep, 1, sizeof(deep));
	big[sizeof(big) - 1] = 7;
	return big[0] == 0 && deep[100] == 1 ? 42 : -1;
}

int main(void)
{
	uaio_loop *l;

	t_banner("test_big_tls");
#ifndef __SANITIZE_ADDRESS__
	/* (not under AddressSanitizer: its own start of a thread whose
	 * stack such TLS nearly fills overflows it, library or not) */
	t_rerun_tuned("glibc.rtld.optional_static_tls=4000000");
#endif
	l = t_loop_new(0);
	big[0] = 0;
	CHECK_EQ(t_work(l, on_worker), 42);
	CHECK_EQ(big[sizeof(big) - 1], 0);	/* the worker's TLS was its own */
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
