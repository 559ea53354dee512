/* SPDX-License-Identifier: MIT */
/*
 * Loop life cycle: creation and backend choice, run / run_once / stop
 * return values, inflight accounting, uaio_op_pending(), nop results,
 * and freeing a loop with work still in flight.
 */
#include <pthread.h>
#include <sys/socket.h>
#include <stdint.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

static int ncb;
static int last_res;
static void *last_data;
static int pending_in_cb = -1;
static uaio_loop *gl;

static void count_cb(uaio_op *op, int res, void *data)
{
	ncb++;
	last_res = res;
	last_data = data;
	pending_in_cb = uaio_op_pending(op);
}

static void test_backend_choice(void)
{
	const char *env = getenv("UAIO_BACKEND");
	uaio_loop *l = t_loop_new(0);
	const char *name = uaio_loop_backend_name(l);

	CHECK(name && *name);
	CHECK(uaio_loop_backend(l) == UAIO_BACKEND_URING ||
	      uaio_loop_backend(l) == UAIO_BACKEND_EPOLL);
	if (env && !strcmp(env, "epoll"))
		CHECK_EQ(uaio_loop_backend(l), UAIO_BACKEND_EPOLL);
	if (env && !strcmp(env, "uring"))
		CHECK_EQ(uaio_loop_backend(l), UAIO_BACKEND_URING);
	fprintf(stderr, "    features %#x\n", uaio_loop_features(l));
	uaio_loop_free(l);

	/* The flag wins whatever the environment says. */
	l = t_loop_new(UAIO_LOOP_FORCE_EPOLL);
	CHECK_EQ(uaio_loop_backend(l), UAIO_BACKEND_EPOLL);
	CHECK(strcmp(uaio_loop_backend_name(l), "") != 0);
	uaio_loop_free(l);

	struct uaio_loop_params p = { .flags = UAIO_LOOP_FORCE_URING };
	l = uaio_loop_new(&p);
	if (l) {
		CHECK_EQ(uaio_loop_backend(l), UAIO_BACKEND_URING);
		CHECK(strcmp(uaio_loop_backend_name(l),
			     "") != 0);
		uaio_loop_free(l);
	} else {
		fprintf(stderr, "    io_uring unavailable: %s\n", strerror(errno));
	}

	/* A flag it does not know, or two that contradict, are refused. */
	p.flags = 1u << 20;
	errno = 0;
	CHECK(uaio_loop_new(&p) == NULL);
	CHECK_EQ(errno, EINVAL);
	p.flags = UAIO_LOOP_FORCE_EPOLL | UAIO_LOOP_FORCE_URING;
	errno = 0;
	CHECK(uaio_loop_new(&p) == NULL);
	CHECK_EQ(errno, EINVAL);

}

static void test_empty_loop(void)
{
	uaio_loop *l = t_loop_new(0);

	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	CHECK_EQ(uaio_loop_run(NULL), -EINVAL);
	uaio_loop_free(l);
}

static void test_nop(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op[5] = {{0}};
	int total = 0;

	ncb = 0;
	CHECK_OK(uaio_op_nop(l, &op[0], count_cb, (void *)0x1234));
	CHECK_EQ(uaio_op_pending(&op[0]), 1);
	CHECK_EQ(uaio_loop_inflight(l), 1);
	/* Never from inside the submitting call. */
	CHECK_EQ(ncb, 0);
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ncb, 1);
	CHECK_EQ(last_res, 0);
	CHECK(last_data == (void *)0x1234);
	CHECK_EQ(pending_in_cb, 0);
	CHECK_EQ(uaio_op_pending(&op[0]), 0);
	CHECK_EQ(uaio_loop_inflight(l), 0);

	/* run_once counts callbacks: five nops give five, in total. */
	ncb = 0;
	for (int i = 0; i < 5; i++)
		CHECK_OK(uaio_op_nop(l, &op[i], count_cb, NULL));
	CHECK_EQ(uaio_loop_inflight(l), 5);
	for (int it = 0; total < 5 && it < 100; it++) {
		int r = uaio_loop_run_once(l, -1);
		CHECK(r >= 0);
		total += r;
	}
	CHECK_EQ(total, 5);
	CHECK_EQ(ncb, 5);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);

	/* An op can be reused once its callback ran. */
	ncb = 0;
	CHECK_OK(uaio_op_nop(l, &op[0], count_cb, NULL));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ncb, 1);
	uaio_loop_free(l);
}

/* ------------------------------------------------------------ stop */

static int stop_at;
static void stop_cb(uaio_op *op, int res, void *data)
{
	ncb++;
	if (ncb == stop_at)
		uaio_loop_stop(gl);
}

static void timer_noop(uaio_timer *t)
{
	(*(int *)t->data)++;
}

static void test_stop(void)
{
	uaio_loop *l = gl = t_loop_new(0);
	uaio_op op[3] = {{0}};
	uaio_timer t;
	int fired = 0;

	/* Stop with a timer still pending: run returns 1, work is kept. */
	uaio_timer_init(&t, timer_noop, &fired);
	CHECK_OK(uaio_timer_start(l, &t, 20 * 1000000ull, 0));
	ncb = 0;
	stop_at = 1;
	CHECK_OK(uaio_op_nop(l, &op[0], stop_cb, NULL));
	CHECK_EQ(uaio_loop_run(l), 1);
	CHECK_EQ(ncb, 1);
	CHECK_EQ(fired, 0);
	CHECK_EQ(uaio_timer_pending(&t), 1);
	/* The next run picks up where it stopped. */
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(fired, 1);

	/* Stop from the last callback with nothing pending: 0. */
	ncb = 0;
	stop_at = 1;
	CHECK_OK(uaio_op_nop(l, &op[0], stop_cb, NULL));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ncb, 1);

	/* A stale stop from before run does not end the next run early. */
	uaio_loop_stop(l);
	ncb = 0;
	stop_at = 0;
	CHECK_OK(uaio_op_nop(l, &op[0], stop_cb, NULL));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ncb, 1);
	uaio_loop_free(l);
}

/* Header: "Makes uaio_loop_run() return after the current callback."
 * With three completions ready at once, the first one stops the loop:
 * the other two must still be pending when run returns. */
static void test_stop_mid_batch(void)
{
	uaio_loop *l = gl = t_loop_new(0);
	uaio_op op[3] = {{0}};

	ncb = 0;
	stop_at = 1;
	for (int i = 0; i < 3; i++)
		CHECK_OK(uaio_op_nop(l, &op[i], stop_cb, NULL));
	int r = uaio_loop_run(l);
	fprintf(stderr, "    run -> %d after %d of 3 callbacks\n", r, ncb);
	CHECK_EQ(ncb, 1);
	CHECK_EQ(r, 1);
	CHECK_EQ(uaio_loop_inflight(l), 2);
	stop_at = 0;
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ncb, 3);
	uaio_loop_free(l);
}

/* A watch's input handler that stops the loop: its output handler for
 * the same readiness waits for the next iteration ("returns after the
 * current callback"), and then runs, edge-triggered too. */
static int stop_ins, stop_outs;

static int stop_in(uaio_watch *w)
{
	char b[8];

	while (read(w->fd, b, sizeof(b)) > 0)
		;
	if (++stop_ins == 1)
		uaio_loop_stop(w->data);
	return 0;
}

static int count_out(uaio_watch *w)
{
	(void)w;
	stop_outs++;
	return 0;
}

static void test_stop_in_watch(void)
{
	static const struct uaio_handler h = { .handle_input = stop_in,
					       .handle_output = count_out };

	for (int edge = 0; edge < 2; edge++) {
		uaio_loop *l = t_loop_new(0);
		uaio_watch w = { 0 };
		int sv[2];

		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
		CHECK(write(sv[1], "x", 1) == 1);
		stop_ins = stop_outs = 0;
		CHECK_OK(uaio_watch_start(l, &w, sv[0], UAIO_READABLE | UAIO_WRITABLE |
					  (edge ? UAIO_EDGE : 0), &h, l));
		CHECK_EQ(uaio_loop_run(l), 1);
		CHECK_EQ(stop_ins, 1);
		CHECK_EQ(stop_outs, 0);
		for (int i = 0; i < 10 && !stop_outs; i++)
			CHECK(uaio_loop_run_once(l, 10000000) >= 0);
		CHECK(stop_outs >= 1);
		uaio_watch_stop(l, &w);
		CHECK(uaio_loop_run_once(l, 0) >= 0);
		uaio_loop_free(l);
		close(sv[0]);
		close(sv[1]);
	}
}

/* ------------------------------------------------------- now / free */

static void test_now(void)
{
	uaio_loop *l = t_loop_new(0);
	uint64_t a = uaio_loop_now(l);

	CHECK(a > 0);
	usleep(2000);
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	uint64_t b = uaio_loop_now(l);
	CHECK(b > a);
	uaio_loop_free(l);
}

static int never_called;
static void never_cb(uaio_op *op, int res, void *data)
{
	never_called++;
}

static void test_free_with_inflight(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op[4] = {{0}};
	char buf[4][8];
	int p[2];

	CHECK(pipe(p) == 0);
	never_called = 0;
	for (int i = 0; i < 4; i++)
		CHECK_OK(uaio_op_read(l, &op[i], p[0], buf[i], 8, -1, never_cb, NULL));
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	CHECK_EQ(uaio_loop_inflight(l), 4);
	uaio_loop_free(l);
	CHECK_EQ(never_called, 0);
	/* Nothing may still be reading from our pipe. */
	CHECK_EQ(write(p[1], "abc", 3), 3);
	char b[3];
	CHECK_EQ(read(p[0], b, 3), 3);
	CHECK(!memcmp(b, "abc", 3));
	close(p[0]);
	close(p[1]);
}

/* Many loops, each owned by its own thread, side by side. */
static void thread_cb(uaio_op *op, int res, void *data)
{
	if (res == 0)
		(*(int *)data)++;
}

static void *loop_thread(void *arg)
{
	uaio_loop *l = uaio_loop_new(NULL);
	uaio_op op[64] = {{0}};
	int n = 0;

	if (!l)
		return (void *)1;
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 64; i++)
			if (uaio_op_nop(l, &op[i], thread_cb, &n) < 0)
				return (void *)2;
		if (uaio_loop_run(l) != 0)
			return (void *)3;
	}
	uaio_loop_free(l);
	return n == 50 * 64 ? NULL : (void *)4;
}

static void test_loops_per_thread(void)
{
	pthread_t th[4];

	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, loop_thread, NULL) == 0);
	for (int i = 0; i < 4; i++) {
		void *ret;
		CHECK(pthread_join(th[i], &ret) == 0);
		CHECK(ret == NULL);
	}
}

/* Made and filled on one thread, run on another (uaio_loop_new(3)):
 * also with more ops queued first than the submission queue holds (the
 * ring then took the first thread for its issuer, and the run on the
 * other failed with EINVAL, for ever). */
static void *run_elsewhere(void *arg)
{
	return (void *)(intptr_t)uaio_loop_run(arg);
}

static void test_run_on_another_thread(void)
{
	enum { N = 600 };
	static uaio_op op[N];
	struct uaio_loop_params p = { .entries = 64 };
	uaio_loop *l = uaio_loop_new(&p);
	pthread_t th;
	void *ret;
	int n = 0;

	CHECK(l);
	for (int i = 0; i < N; i++)
		CHECK_OK(uaio_op_nop(l, &op[i], thread_cb, &n));
	CHECK(pthread_create(&th, NULL, run_elsewhere, l) == 0);
	CHECK(pthread_join(th, &ret) == 0);
	CHECK_EQ((int)(intptr_t)ret, 0);
	CHECK_EQ(n, N);
	uaio_loop_free(l);
}

/* Run by one thread, then by another, with a level-triggered watch made
 * first (the io_uring loop sleeps in its epoll set then): on io_uring the
 * second run fails, as without the set (it slept in epoll_wait for ever,
 * its nop never sent); epoll runs it. */
static int level_in(uaio_watch *w)
{
	(void)w;
	return 0;
}

static void test_second_thread_with_epoll_set(void)
{
	static const struct uaio_handler h = { .handle_input = level_in };
	uaio_loop *l = uaio_loop_new(NULL);
	uaio_watch w = { 0 };
	uaio_op op = { 0 };
	pthread_t th;
	void *ret;
	int p[2], n = 0;

	CHECK(l);
	CHECK(pipe(p) == 0);
	CHECK_OK(uaio_watch_start(l, &w, p[0], UAIO_READABLE, &h, NULL));
	CHECK_OK(uaio_watch_stop(l, &w));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_OK(uaio_op_nop(l, &op, thread_cb, &n));
	CHECK(pthread_create(&th, NULL, run_elsewhere, l) == 0);
	CHECK(pthread_join(th, &ret) == 0);
	if (uaio_loop_backend(l) == UAIO_BACKEND_URING) {
		CHECK((int)(intptr_t)ret == -EINVAL || (int)(intptr_t)ret == -EBADF);
		CHECK_EQ(uaio_loop_run(l), 0);	/* its own thread still can */
	} else {
		CHECK_EQ((int)(intptr_t)ret, 0);
	}
	CHECK_EQ(n, 1);
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

/* More ops queued before the first run than the submission queue holds,
 * idle reads among them: the run still sends them all and sleeps only
 * then (a timeout queued last fired never: the waiting ones went out only
 * after a completion). */
static void test_queued_before_run(void)
{
	enum { N = 150 };
	static uaio_op rd[N];
	static int p[N][2];
	static char b[N];
	struct uaio_loop_params prm = { .entries = 64 };
	uaio_loop *l = uaio_loop_new(&prm);
	uaio_op tmo = { 0 };
	int n = 0, fired = 0;

	CHECK(l);
	for (int i = 0; i < N; i++) {
		CHECK(pipe(p[i]) == 0);
		CHECK_OK(uaio_op_read(l, &rd[i], p[i][0], &b[i], 1, -1, thread_cb, &n));
	}
	CHECK_OK(uaio_op_timeout(l, &tmo, 10000000ull, count_cb, &fired));
	ncb = 0;
	while (!ncb)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(last_res, -ETIME);
	for (int i = 0; i < N; i++)
		close(p[i][1]);
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(n, N);		/* each read: 0, end of file */
	for (int i = 0; i < N; i++)
		close(p[i][0]);
	uaio_loop_free(l);
}

static void test_bad_args(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op = {0};

	CHECK_EQ(uaio_op_nop(l, NULL, count_cb, NULL), -EINVAL);
	CHECK_EQ(uaio_op_nop(l, &op, NULL, NULL), -EINVAL);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	CHECK_EQ(uaio_loop_run(l), 0);
	uaio_loop_free(l);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_loop_basic");
	RUN(test_backend_choice);
	RUN(test_empty_loop);
	RUN(test_nop);
	RUN(test_stop);
	RUN(test_now);
	RUN(test_free_with_inflight);
	RUN(test_loops_per_thread);
	RUN(test_bad_args);
	RUN(test_stop_mid_batch);
	RUN(test_stop_in_watch);
	RUN(test_run_on_another_thread);
	RUN(test_second_thread_with_epoll_set);
	RUN(test_queued_before_run);
	return T_EXIT_PASS;
}
