/* SPDX-License-Identifier: MIT */
/*
 * uaio_op_work: works queued together run side by side while the pool
 * has threads to spare. A work that waits for a later one finishes,
 * even when an idle thread was already there for the first of them
 * (it used to take both, one after the other: the wait ran out).
 */
#include <semaphore.h>
#include <stdint.h>
#include <time.h>
#include <uaio/loop.h>

#include "test.h"

static sem_t go;
static int done, res[3];

static long quick(void *arg)
{
	(void)arg;
	return 1;
}

/* 1 if the other work posted go, 0 if it never came (bounded wait). */
static long wait_other(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	return sem_timedwait(&go, &ts) == 0;
}

static long post_go(void *arg)
{
	(void)arg;
	sem_post(&go);
	return 2;
}

static void on_done(uaio_op *op, int r, void *data)
{
	(void)op;
	res[(intptr_t)data] = r;
	done++;
}

static void waiter_and_poster(unsigned workers)
{
	uaio_loop *l = t_loop_new_p(0, 0, workers);
	uaio_op a = { 0 }, b = { 0 }, c = { 0 };

	sem_init(&go, 0, 0);
	done = 0;
	/* One thread exists and goes idle first (not timed: the bug needs
	 * it idle, the test passes either way once fixed). */
	CHECK_OK(uaio_op_work(l, &a, quick, NULL, on_done, (void *)0));
	while (done < 1)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	usleep(20000);
	CHECK_OK(uaio_op_work(l, &b, wait_other, NULL, on_done, (void *)1));
	CHECK_OK(uaio_op_work(l, &c, post_go, NULL, on_done, (void *)2));
	while (done < 3)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(res[0], 1);
	CHECK_EQ(res[1], 1);	/* 0: the two ran on one thread */
	CHECK_EQ(res[2], 2);
	uaio_loop_free(l);
	sem_destroy(&go);
}

static void two_workers(void)
{
	waiter_and_poster(2);
}

static void default_workers(void)
{
	waiter_and_poster(0);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_work_pool");
	RUN(two_workers);
	RUN(default_workers);
	return T_EXIT_PASS;
}
