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
#include <string.h>
#include <time.h>
#include <sys/socket.h>

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

/* The driver's own timers, started again from their callbacks, while
 * other threads submit timeout ops: on the epoll backend both live in
 * the loop's heap, which the driver changed without the lock (a timeout
 * op was lost: a hang). Every op ends -ETIME. */
static uaio_timer own[4];
static atomic_int heap_done, heap_bad;

static void on_own(uaio_timer *t)
{
	uaio_timer_start(L, t, 1000 + (uint64_t)(t - own) * 700, 0);
}

static void on_tmo(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)data;
	if (res != -ETIME)
		atomic_fetch_add(&heap_bad, 1);
	atomic_fetch_add(&heap_done, 1);
}

static void *heap_driver(void *arg)
{
	(void)arg;
	for (int i = 0; i < 4; i++) {
		uaio_timer_init(&own[i], on_own, NULL);
		uaio_timer_start(L, &own[i], 1000 * (uint64_t)i, i & 1 ? 1500 : 0);
	}
	while (!atomic_load(&stop))
		uaio_loop_run_once(L, -1);
	for (int i = 0; i < 4; i++)
		uaio_timer_stop(L, &own[i]);
	return NULL;
}

#define HEAP_OPS 64

static void *heap_submitter(void *arg)
{
	uaio_op *ops = arg;

	for (int r = 0; r < 20; r++) {
		int pend = 1;

		memset(ops, 0, HEAP_OPS * sizeof(*ops));
		for (int i = 0; i < HEAP_OPS; i++)
			CHECK_OK(uaio_op_timeout(L, &ops[i], 1000 * (uint64_t)(i % 13) + 1000,
						 on_tmo, NULL));
		for (int k = 0; k < 20000 && pend; k++) {
			pend = 0;
			for (int i = 0; i < HEAP_OPS; i++)
				pend += uaio_op_pending(&ops[i]);
			if (pend)
				usleep(500);
		}
		CHECK_EQ(pend, 0);
	}
	return NULL;
}

static void timers_beside_other_threads(void)
{
	static uaio_op ops[2][HEAP_OPS], nop;
	static atomic_int nop_res = 1;
	pthread_t d, s[2];

	atomic_store(&stop, false);
	L = t_loop_new(UAIO_LOOP_THREADSAFE);
	CHECK(pthread_create(&d, NULL, heap_driver, NULL) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&s[i], NULL, heap_submitter, ops[i]) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(s[i], NULL) == 0);
	CHECK_EQ(atomic_load(&heap_done), 2 * 20 * HEAP_OPS);
	CHECK_EQ(atomic_load(&heap_bad), 0);
	atomic_store(&stop, true);
	CHECK_OK(uaio_op_nop(L, &nop, on, &nop_res));
	CHECK(pthread_join(d, NULL) == 0);
	uaio_loop_free(L);
}

/* A thread made after the driver was joined gets its pthread_t from glibc;
 * it is not the driver all the same. Its op goes to whoever drives next,
 * not into the kernel as its own, which its exit would cancel (old: the
 * read ended with -ECANCELED on io_uring). */
static uaio_op seq_op;
static char seq_buf[8];
static int seq_fd[2];

static void *run_once_and_leave(void *arg)
{
	(void)arg;
	CHECK(uaio_loop_run_once(L, 0) >= 0);
	return NULL;
}

static void *read_and_leave(void *arg)
{
	CHECK_EQ(uaio_op_read(L, &seq_op, seq_fd[0], seq_buf, sizeof(seq_buf), -1, on, arg), 0);
	return NULL;
}

static void submitter_after_driver_left(void)
{
	static atomic_int res = 1;
	pthread_t t;

	L = t_loop_new(UAIO_LOOP_THREADSAFE);
	CHECK_EQ(pipe(seq_fd), 0);
	CHECK_EQ(pthread_create(&t, NULL, run_once_and_leave, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(pthread_create(&t, NULL, read_and_leave, &res), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(write(seq_fd[1], "hello", 5), 5);
	while (atomic_load(&res) == 1)
		CHECK(uaio_loop_run_once(L, -1) >= 0);
	CHECK_EQ(atomic_load(&res), 5);
	CHECK(!memcmp(seq_buf, "hello", 5));
	close(seq_fd[0]);
	close(seq_fd[1]);
	uaio_loop_free(L);
}

/* A thread with a cancel pending submits (epoll tries the send at once,
 * with the loop's lock held) or posts (the wake-up's write): neither
 * acts on the cancel, which ends the thread at its next cancellation
 * point. (The send's left the lock held: every later op hung; the post's
 * left the wake-up marked and never written: no post woke the loop
 * again.) */
static pthread_barrier_t cp_bar;
static int cp_sv[2];
static uaio_op cp_op;
static atomic_int cp_res = 1, cp_posts;

static void cp_post(void *data)
{
	(void)data;
	atomic_fetch_add(&cp_posts, 1);
}

static void *cancelled_submitter(void *arg)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_barrier_wait(&cp_bar);	/* main cancels us: pending */
	pthread_barrier_wait(&cp_bar);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	if (arg)
		CHECK_EQ(uaio_loop_post(L, cp_post, NULL), 0);
	else
		CHECK_EQ(uaio_op_send(L, &cp_op, cp_sv[0], "hi", 2, 0, on, &cp_res), 0);
	pthread_testcancel();
	return NULL;
}

static void cancel_pending_submitter(void)
{
	static uaio_op op2;
	static atomic_int res2 = 1;
	pthread_t t, d;
	void *ret;
	char buf[8];

	L = t_loop_new(UAIO_LOOP_THREADSAFE);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, cp_sv), 0);
	CHECK_EQ(pthread_barrier_init(&cp_bar, NULL, 2), 0);
	/* a send: main drives */
	CHECK_EQ(pthread_create(&t, NULL, cancelled_submitter, NULL), 0);
	pthread_barrier_wait(&cp_bar);
	CHECK_EQ(pthread_cancel(t), 0);
	pthread_barrier_wait(&cp_bar);
	CHECK_EQ(pthread_join(t, &ret), 0);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(uaio_op_send(L, &op2, cp_sv[0], "yo", 2, 0, on, &res2), 0);
	while (atomic_load(&res2) == 1 || atomic_load(&cp_res) == 1)
		CHECK(uaio_loop_run_once(L, -1) >= 0);
	CHECK_EQ(atomic_load(&cp_res), 2);
	CHECK_EQ(atomic_load(&res2), 2);
	CHECK_EQ(read(cp_sv[1], buf, sizeof(buf)), 4);
	/* a post: another thread drives, asleep */
	atomic_store(&stop, false);
	CHECK_EQ(pthread_create(&d, NULL, driver, NULL), 0);
	CHECK_EQ(pthread_create(&t, NULL, cancelled_submitter, (void *)1), 0);
	pthread_barrier_wait(&cp_bar);
	CHECK_EQ(pthread_cancel(t), 0);
	pthread_barrier_wait(&cp_bar);
	CHECK_EQ(pthread_join(t, &ret), 0);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(uaio_loop_post(L, cp_post, NULL), 0);
	while (atomic_load(&cp_posts) < 2)	/* a lost wake-up: the watchdog */
		usleep(1000);
	atomic_store(&stop, true);
	uaio_loop_post(L, cp_post, NULL);	/* wakes the driver to see stop */
	CHECK_EQ(pthread_join(d, NULL), 0);
	pthread_barrier_destroy(&cp_bar);
	close(cp_sv[0]);
	close(cp_sv[1]);
	uaio_loop_free(L);
}

int main(int argc, char **argv)
{
	(void)argc;
	t_watchdog(120);
	t_banner(argv[0]);
	RUN(from_another_thread);
	RUN(timers_beside_other_threads);
	RUN(submitter_after_driver_left);
	RUN(cancel_pending_submitter);
	return T_EXIT_PASS;
}
