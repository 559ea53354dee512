/* SPDX-License-Identifier: MIT */
/*
 * uaio_loop_lock on one thread-safe loop while submitting to another:
 * the held lock stays the loop's, so ops on the first still go through
 * (they locked it again and hung) and uaio_loop_unlock releases it (it
 * was a no-op, leaving the loop locked for every other thread).
 */
#include <pthread.h>
#include <uaio/loop.h>

#include "test.h"

static uaio_loop *A, *B;
static int done;

static void on_done(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)data;
	CHECK_EQ(res, 0);
	done++;
}

/* Another thread can take a's lock once the first let it go. */
static void *other(void *arg)
{
	static uaio_op o;

	(void)arg;
	uaio_loop_lock(A);
	CHECK_OK(uaio_op_nop(A, &o, on_done, NULL));
	uaio_loop_unlock(A);
	return NULL;
}

static void two_loops(void)
{
	uaio_op x = { 0 }, y = { 0 }, z = { 0 }, w = { 0 };
	pthread_t t;

	A = t_loop_new(UAIO_LOOP_THREADSAFE);
	B = t_loop_new(UAIO_LOOP_THREADSAFE);
	uaio_loop_lock(A);
	CHECK_OK(uaio_op_nop(A, &x, on_done, NULL));
	CHECK_OK(uaio_op_nop(B, &y, on_done, NULL));
	CHECK_OK(uaio_op_nop(A, &z, on_done, NULL));	/* hung here */
	uaio_loop_lock(B);				/* both held, unlocked out of order */
	CHECK_OK(uaio_op_nop(B, &w, on_done, NULL));
	uaio_loop_unlock(A);
	uaio_loop_unlock(B);
	CHECK(pthread_create(&t, NULL, other, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	while (done < 5) {
		CHECK(uaio_loop_run_once(A, 0) >= 0);
		CHECK(uaio_loop_run_once(B, 0) >= 0);
	}
	CHECK_EQ(done, 5);
	uaio_loop_free(A);
	uaio_loop_free(B);
}

int main(void)
{
	t_watchdog(30);
	t_banner("test_lock_nested");
	RUN(two_loops);
	return T_EXIT_PASS;
}
