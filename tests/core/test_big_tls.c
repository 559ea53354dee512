/* SPDX-License-Identifier: MIT */
/*
 * A program with much thread-local storage: glibc carves a thread's
 * static TLS out of the stack it is given, and refused the worker pool's
 * fixed 64 KiB stacks, so uaio_op_work (and every op the fallback hands a
 * worker) failed with -EAGAIN. The work runs, on a thread of the pool
 * with the program's TLS of its own, and its stack has room.
 */
#include <uaio/loop.h>

#include "test.h"

/* More than any fixed stack the library used; touched, so it is real */
static __thread char big[1024 * 1024];

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
	l = t_loop_new(0);
	big[0] = 0;
	CHECK_OK(uaio_op_work(l, &op, on_worker, NULL, on_done, NULL));
	T_RUN_UNTIL(l, got != -1, 10000);
	CHECK_EQ(got, 42);
	CHECK_EQ(big[sizeof(big) - 1], 0);	/* the worker's TLS was its own */
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
