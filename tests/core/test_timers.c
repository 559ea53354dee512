/* SPDX-License-Identifier: MIT */
/*
 * Timers: deadline order, repeating timers, stop and restart, and 100 000
 * pending timers that each fire exactly once in deadline order.
 */
#include <stdlib.h>
#include <uaio/loop.h>

#include "test.h"

static uaio_loop *L;
static uint64_t last_when;
static int fired, out_of_order, *seen;

static void on_fire(uaio_timer *t)
{
	if (t->when < last_when)
		out_of_order++;
	last_when = t->when;
	fired++;
	if (seen)
		seen[(intptr_t)t->data]++;
}

static void order(void)
{
	enum { N = 50 };
	uaio_timer t[N];

	L = t_loop_new(0);
	fired = out_of_order = 0;
	last_when = 0;
	/* Started latest-deadline first. */
	for (int i = 0; i < N; i++) {
		uaio_timer_init(&t[i], on_fire, (void *)(intptr_t)i);
		CHECK_OK(uaio_timer_start(L, &t[i], (uint64_t)(N - i) * 200000, 0));
		CHECK(uaio_timer_pending(&t[i]));
	}
	CHECK_EQ(uaio_loop_run(L), 0);
	CHECK_EQ(fired, N);
	CHECK_EQ(out_of_order, 0);
	for (int i = 0; i < N; i++)
		CHECK(!uaio_timer_pending(&t[i]));
	uaio_loop_free(L);
}

static int reps;
static void on_repeat(uaio_timer *t)
{
	if (++reps == 5)
		CHECK_OK(uaio_timer_stop(L, t));
}

static void repeat_stop_restart(void)
{
	uaio_timer r, a, b;

	L = t_loop_new(0);
	uaio_timer_init(&r, on_repeat, NULL);
	CHECK_OK(uaio_timer_start(L, &r, 100000, 100000));
	CHECK_EQ(uaio_loop_run(L), 0);
	CHECK_EQ(reps, 5);
	CHECK(!uaio_timer_pending(&r));
	/* Stop before it fires: never called; stopping twice: -ENOENT. */
	fired = 0;
	seen = NULL;
	uaio_timer_init(&a, on_fire, NULL);
	CHECK_OK(uaio_timer_start(L, &a, 1000000, 0));
	CHECK_OK(uaio_timer_stop(L, &a));
	CHECK_EQ(uaio_timer_stop(L, &a), -ENOENT);
	/* Restarting a pending timer reschedules it: one call. */
	uaio_timer_init(&b, on_fire, NULL);
	CHECK_OK(uaio_timer_start(L, &b, 60000000000ull, 0));
	CHECK_OK(uaio_timer_start(L, &b, 100000, 0));
	CHECK_EQ(uaio_loop_run(L), 0);
	CHECK_EQ(fired, 1);
	CHECK_EQ(uaio_timer_start(L, NULL, 1, 0), -EINVAL);
	uaio_loop_free(L);
}

static void many(void)
{
	enum { N = 100000 };
	uaio_timer *t = calloc(N, sizeof(*t));
	uint64_t x = 88172645463325252ull;

	CHECK(t);
	seen = calloc(N, sizeof(*seen));
	L = t_loop_new(0);
	fired = out_of_order = 0;
	last_when = 0;
	for (int i = 0; i < N; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		uaio_timer_init(&t[i], on_fire, (void *)(intptr_t)i);
		CHECK_OK(uaio_timer_start(L, &t[i], x % 20000000, 0));
	}
	/* Every third one is cancelled again. */
	for (int i = 0; i < N; i += 3)
		CHECK_OK(uaio_timer_stop(L, &t[i]));
	CHECK_EQ(uaio_loop_run(L), 0);
	CHECK_EQ(out_of_order, 0);
	for (int i = 0; i < N; i++)
		CHECK_EQ(seen[i], i % 3 ? 1 : 0);
	CHECK_EQ(fired, N - (N + 2) / 3);
	free(seen);
	seen = NULL;
	free(t);
	uaio_loop_free(L);
}

/* A timer pending on one loop, stopped or restarted through another:
 * refused, and neither loop's timers change (the stop took out the other
 * loop's timer at that index, or crashed on an empty heap). */
static void other_loop(void)
{
	uaio_loop *a = t_loop_new(0), *b = t_loop_new(0), *c = t_loop_new(0);
	uaio_timer ta, tb;

	fired = out_of_order = 0;
	last_when = 0;
	uaio_timer_init(&ta, on_fire, NULL);
	uaio_timer_init(&tb, on_fire, NULL);
	CHECK_OK(uaio_timer_start(a, &ta, 1000000, 0));
	CHECK_OK(uaio_timer_start(b, &tb, 2000000, 0));
	CHECK_EQ(uaio_timer_stop(b, &ta), -ENOENT);
	CHECK_EQ(uaio_timer_stop(c, &ta), -ENOENT);	/* an empty heap */
	CHECK_EQ(uaio_timer_start(b, &ta, 1000, 0), -EBUSY);
	CHECK(uaio_timer_pending(&ta) && uaio_timer_pending(&tb));
	CHECK_EQ(uaio_loop_run(b), 0);
	CHECK_EQ(fired, 1);
	CHECK_EQ(uaio_loop_run(a), 0);
	CHECK_EQ(fired, 2);
	CHECK_EQ(uaio_timer_stop(a, &ta), -ENOENT);
	uaio_loop_free(a);
	uaio_loop_free(b);
	uaio_loop_free(c);
}

/* A timer still pending when its loop is freed ends there unseen: not
 * pending, and another loop takes it (it read as pending: -EBUSY). */
static void after_free(void)
{
	uaio_loop *a = t_loop_new(0), *b = t_loop_new(0);
	uaio_timer t;

	fired = out_of_order = 0;
	last_when = 0;
	uaio_timer_init(&t, on_fire, NULL);
	CHECK_OK(uaio_timer_start(a, &t, 60000000000ull, 0));
	uaio_loop_free(a);
	CHECK(!uaio_timer_pending(&t));
	CHECK_OK(uaio_timer_start(b, &t, 1000, 0));
	CHECK_EQ(uaio_loop_run(b), 0);
	CHECK_EQ(fired, 1);
	uaio_loop_free(b);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_timers");
	RUN(order);
	RUN(repeat_stop_restart);
	RUN(many);
	RUN(other_loop);
	RUN(after_free);
	return T_EXIT_PASS;
}
