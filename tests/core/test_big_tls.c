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
#include <sys/wait.h>

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

static int got = -1;

static void on_done(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)data;
	got = res;
}

int main(void)
{
	uaio_loop *l;
	uaio_op op = { 0 };

	t_banner("test_big_tls");
#ifndef __SANITIZE_ADDRESS__
	/* (not under AddressSanitizer: its own start of a thread whose
	 * stack such TLS nearly fills overflows it, library or not) */
	if (!getenv("GLIBC_TUNABLES")) {
		pid_t kid = fork();
		int st;

		CHECK(kid >= 0);
		if (kid == 0) {
			setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=4000000", 1);
			execl("/proc/self/exe", "test_big_tls", (char *)NULL);
			_exit(T_EXIT_FAIL);
		}
		CHECK(waitpid(kid, &st, 0) == kid);
		CHECK(WIFEXITED(st));
		CHECK_EQ(WEXITSTATUS(st), T_EXIT_PASS);
	}
#endif
	l = t_loop_new(0);
	big[0] = 0;
	CHECK_OK(uaio_op_work(l, &op, on_worker, NULL, on_done, NULL));
	T_RUN_UNTIL(l, got != -1, 10000);
	CHECK_EQ(got, 42);
	CHECK_EQ(big[sizeof(big) - 1], 0);	/* the worker's TLS was its own */
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
