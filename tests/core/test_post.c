/* SPDX-License-Identifier: MIT */
/*
 * Cross-thread post: callbacks posted from many threads all run, once
 * each, on the loop's thread, and wake a loop that is asleep; a stop in
 * one returns the run after it.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uaio/loop.h>

#include "test.h"

enum { T = 4, PER = 10000 };

static uaio_loop *L;
static pthread_t loop_thread;
static int ran, wrong_thread;
static atomic_int posted;

static void on_post(void *data)
{
	ran++;
	if (!pthread_equal(pthread_self(), loop_thread))
		wrong_thread++;
	(void)data;
}

static void *poster(void *arg)
{
	for (int i = 0; i < PER; i++) {
		CHECK_OK(uaio_loop_post(L, on_post, arg));
		atomic_fetch_add(&posted, 1);
	}
	return NULL;
}

static void many_threads(void)
{
	pthread_t t[T];

	L = t_loop_new(0);
	loop_thread = pthread_self();
	for (int i = 0; i < T; i++)
		CHECK(pthread_create(&t[i], NULL, poster, NULL) == 0);
	/* Sleep in the loop until every post has run. */
	while (ran < T * PER)
		CHECK(uaio_loop_run_once(L, -1) >= 0);
	for (int i = 0; i < T; i++)
		pthread_join(t[i], NULL);
	CHECK(uaio_loop_run_once(L, 0) >= 0);
	CHECK_EQ(ran, T * PER);
	CHECK_EQ(wrong_thread, 0);
	CHECK_EQ(uaio_loop_post(L, NULL, NULL), -EINVAL);
	uaio_loop_free(L);
}

static void *late_poster(void *arg)
{
	usleep(20000);	/* let the loop fall asleep first (not timed) */
	CHECK_OK(uaio_loop_post(L, on_post, NULL));
	return NULL;
}

static void wakes_sleeper(void)
{
	pthread_t t;

	L = t_loop_new(0);
	ran = 0;
	CHECK(pthread_create(&t, NULL, late_poster, NULL) == 0);
	/* Nothing else pending: only the post can end this wait. */
	while (!ran)
		CHECK(uaio_loop_run_once(L, -1) >= 0);
	pthread_join(t, NULL);
	CHECK_EQ(ran, 1);
	uaio_loop_free(L);
}

/* uaio_loop_stop() in a posted function: the run returns after it, the
 * later posts of the same batch waiting for the next run, in order (all
 * of a batch ran, and the run said 0). */
static int order[10], norder;

/* Every one of n posts ran, in the order they were made. */
static void all_in_order(int n)
{
	CHECK_EQ(norder, n);
	for (int i = 0; i < n; i++)
		CHECK_EQ(order[i], i);
}

/* Posts fn n times, with 0 .. n-1. */
static void post_n(void (*fn)(void *), int n)
{
	for (int i = 0; i < n; i++)
		CHECK_OK(uaio_loop_post(L, fn, (void *)(intptr_t)i));
}

static void stop_post(void *data)
{
	order[norder++] = (int)(intptr_t)data;
	if (data == (void *)(intptr_t)3)
		uaio_loop_stop(L);
}

static void stops_in_post(void)
{
	L = t_loop_new(0);
	norder = 0;
	post_n(stop_post, 10);
	CHECK_EQ(uaio_loop_run(L), 1);
	CHECK_EQ(norder, 4);
	CHECK_EQ(uaio_loop_run(L), 0);
	all_in_order(10);
	uaio_loop_free(L);
}

/* A posted function that runs the loop itself: the nested run runs the
 * posts made before it that the drain had not reached, first and in
 * order (they waited in the drain's list, behind the nested run's newer
 * posts: 0 3 1 2), and a nested run that may wait runs them rather than
 * sleep with them ready (it slept). */
static int nested_ret;

static void nested_post(void *data)
{
	order[norder++] = (int)(intptr_t)data;
	if (data != (void *)(intptr_t)0)
		return;
	CHECK_OK(uaio_loop_post(L, nested_post, (void *)(intptr_t)3));
	nested_ret = uaio_loop_run_once(L, 0);
}

static void waiting_post(void *data)
{
	order[norder++] = (int)(intptr_t)data;
	if (data == (void *)(intptr_t)0)
		nested_ret = uaio_loop_run_once(L, -1);	/* the watchdog: a hang */
}

static int deep_ran;
static bool c_ran;

/* 0 runs the loop once, in which 1 (two posts deep) waits for what 2,
 * posted before it ran, does (a drain at that depth ran no posts: it
 * hung, or spun with the wake-up kept) */
static void waits_for_later(void *data)
{
	switch ((int)(intptr_t)data) {
	case 0:
		CHECK(uaio_loop_run_once(L, 0) >= 0);
		break;
	case 1:
		while (!c_ran)
			CHECK(uaio_loop_run_once(L, -1) >= 0);
		break;
	case 2:
		c_ran = true;
		break;
	}
}

static void deep_post(void *data)
{
	(void)data;
	deep_ran++;
	CHECK(uaio_loop_run_once(L, 0) >= 0);
}

static void nested_in_post(void)
{
	L = t_loop_new(0);
	norder = 0;
	post_n(nested_post, 3);
	CHECK_EQ(uaio_loop_run(L), 0);
	all_in_order(4);
	CHECK(nested_ret >= 3);

	norder = 0;
	post_n(waiting_post, 2);
	CHECK_EQ(uaio_loop_run(L), 0);
	all_in_order(2);
	CHECK(nested_ret >= 1);

	c_ran = false;
	post_n(waits_for_later, 3);
	CHECK_EQ(uaio_loop_run(L), 0);
	CHECK(c_ran);

	/* a queue of posts that each run the loop nests 32 deep at most,
	 * not as deep as the queue is long (200 000: the stack overflowed) */
	deep_ran = 0;
	for (int i = 0; i < 200000; i++)
		CHECK_OK(uaio_loop_post(L, deep_post, NULL));
	CHECK_EQ(uaio_loop_run(L), 0);
	CHECK_EQ(deep_ran, 200000);
	uaio_loop_free(L);
}

static void exit_post(void *data)
{
	order[norder++] = (int)(intptr_t)data;
	if (data == (void *)(intptr_t)2)
		pthread_exit(NULL);
}

static void *run_loop(void *arg)
{
	(void)arg;
	uaio_loop_run(L);
	return NULL;
}

/* A post that leaves its thread (pthread_exit; a cancel alike): the
 * posts behind it run at the loop's next run, in order, where they were
 * lost with the drain's list. On epoll: an io_uring loop answers only
 * the thread that first ran it. */
static void exits_in_post(void)
{
	pthread_t t;

	L = t_loop_new(0);
	if (strcmp(uaio_loop_backend_name(L), "epoll")) {
		fprintf(stderr, "    skipped on %s\n", uaio_loop_backend_name(L));
		uaio_loop_free(L);
		return;
	}
	norder = 0;
	post_n(exit_post, 6);
	CHECK(pthread_create(&t, NULL, run_loop, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(norder, 3);
	CHECK_EQ(uaio_loop_run(L), 0);
	all_in_order(6);
	uaio_loop_free(L);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_post");
	RUN(many_threads);
	RUN(wakes_sleeper);
	RUN(stops_in_post);
	RUN(exits_in_post);
	RUN(nested_in_post);
	return T_EXIT_PASS;
}
