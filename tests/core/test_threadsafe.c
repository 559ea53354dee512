/* SPDX-License-Identifier: MIT */
/*
 * A thread-safe loop asleep in uaio_loop_run_once(l, -1) on its driving
 * thread, and ops submitted from another thread: a timeout op fires (the
 * fallback backend keeps timeouts in the loop's own heap, so the sleeper
 * must wake to wait for it), a cancel ends an op that waits for data, and
 * the timeout does not fire early. The POSIX AIO engine relies on both
 * (socket SO_RCVTIMEO / SO_SNDTIMEO clocks).
 */
#define _GNU_SOURCE
#include <uaio/loop.h>
#include "test.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

static uaio_loop *L;
static atomic_bool stop;
static atomic_int tmo_res = 1, rd_res = 1, cancel_res = 1;

static void *driver(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		uaio_loop_run_once(L, -1);
	return NULL;
}

static void on(uaio_op *op, int res, void *data)
{
	(void)op;
	atomic_store((atomic_int *)data, res);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits up to 10 s for *v to leave 1. */
static int wait_res(atomic_int *v)
{
	for (int i = 0; i < 10000 && atomic_load(v) == 1; i++)
		usleep(1000);
	return atomic_load(v);
}

static void from_another_thread(void)
{
	static uaio_op tmo, rd, cancel, nop;
	static atomic_int nop_res = 1;
	pthread_t t;
	int p[2];
	char b[8];
	uint64_t t0;

	L = t_loop_new(UAIO_LOOP_THREADSAFE);
	CHECK(pthread_create(&t, NULL, driver, NULL) == 0);
	usleep(20000);		/* the driver is asleep with nothing to do */

	t0 = mono_ns();
	CHECK_OK(uaio_op_timeout(L, &tmo, 50 * 1000000ull, on, &tmo_res));
	CHECK_EQ(wait_res(&tmo_res), -ETIME);
	CHECK(mono_ns() - t0 >= 50 * 1000000ull);	/* not early */

	CHECK_EQ(pipe(p), 0);
	CHECK_OK(uaio_op_read(L, &rd, p[0], b, sizeof(b), -1, on, &rd_res));
	usleep(20000);
	CHECK_EQ(atomic_load(&rd_res), 1);	/* no data: still waiting */
	CHECK_OK(uaio_op_cancel(L, &cancel, &rd, on, &cancel_res));
	CHECK_EQ(wait_res(&rd_res), -ECANCELED);
	CHECK_EQ(wait_res(&cancel_res), 0);

	atomic_store(&stop, true);
	CHECK_OK(uaio_op_nop(L, &nop, on, &nop_res));
	CHECK(pthread_join(t, NULL) == 0);
	close(p[0]);
	close(p[1]);
	uaio_loop_free(L);
}

int main(int argc, char **argv)
{
	(void)argc;
	t_watchdog(60);
	t_banner(argv[0]);
	RUN(from_another_thread);
	return T_EXIT_PASS;
}
