/* SPDX-License-Identifier: MIT */
/* Embedding: another event loop drives this one by polling
 * uaio_loop_fd() with uaio_loop_timeout() and calling
 * uaio_loop_run_once(l, 0) when either says so (libuv's uv_backend_fd and
 * uv_backend_timeout). An op started from a callback or between
 * iterations completes, a timer fires at its time, and a loop with
 * nothing to do says so (-1). */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

static int got = -1000, fired;

static void on_read(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)data;
	got = res;
}

static void on_timer(uaio_timer *t)
{
	(void)t;
	fired++;
}

/* Runs what uaio_loop_timeout() calls due (the io_uring backend may have
 * queued a submission in the last iteration: the next hands it over),
 * then returns what it says. */
static int64_t settled(uaio_loop *l)
{
	for (int i = 0; i < 64 && uaio_loop_timeout(l) == 0; i++)
		CHECK(uaio_loop_run_once(l, 0) >= 0);
	return uaio_loop_timeout(l);
}

static void *late_writer(void *arg)
{
	usleep(20000);
	CHECK_EQ(write(*(int *)arg, "x", 1), 1);
	return NULL;
}

/* One turn of the embedding loop: poll the descriptor for exactly as
 * long as uaio_loop_timeout() says (-1: until it fires; a loop that hid
 * work from both would hang here, and the watchdog fails the test), then
 * run what is ready. */
static int turn(uaio_loop *l)
{
	struct pollfd p = { .fd = uaio_loop_fd(l), .events = POLLIN };
	int64_t ns = uaio_loop_timeout(l);
	int ms = ns < 0 ? -1 : ns / 1000000 >= INT_MAX ? INT_MAX :
		 (int)(ns / 1000000 + (ns % 1000000 != 0));

	CHECK(p.fd >= 0);
	CHECK(poll(&p, 1, ms) >= 0);
	return uaio_loop_run_once(l, 0);
}

static void op_between_iterations(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op = { 0 };
	char c;
	int fds[2];
	pthread_t th;

	CHECK(pipe(fds) == 0);
	CHECK_EQ(uaio_loop_timeout(l), -1);	/* nothing to wait for */
	got = -1000;
	CHECK_OK(uaio_op_read(l, &op, fds[0], &c, 1, -1, on_read, NULL));
	CHECK(pthread_create(&th, NULL, late_writer, &fds[1]) == 0);
	/* The read must be in the kernel's hands once the caller polls:
	 * the descriptor turns readable when the writer writes. */
	while (got == -1000)
		turn(l);
	CHECK_EQ(got, 1);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_EQ(settled(l), -1);
	close(fds[0]);
	close(fds[1]);
	uaio_loop_free(l);
}

static void timer_on_time(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_timer t;
	int64_t ns;
	int turns = 0;

	uaio_timer_init(&t, on_timer, NULL);
	fired = 0;
	CHECK_OK(uaio_timer_start(l, &t, 30 * 1000000ull, 0));
	ns = uaio_loop_timeout(l);
	CHECK(ns > 0 && ns <= 30 * 1000000ll);
	/* The descriptor alone never fires for a timer: the timeout does. */
	while (!fired && turns++ < 20)
		turn(l);
	CHECK_EQ(fired, 1);
	CHECK(turns <= 3);
	CHECK_EQ(settled(l), -1);
	/* Due now: 0, at once. */
	CHECK_OK(uaio_timer_start(l, &t, 0, 0));
	CHECK_EQ(uaio_loop_timeout(l), 0);
	CHECK(uaio_loop_run_once(l, 0) >= 1);
	CHECK_EQ(fired, 2);
	uaio_loop_free(l);
}

static void post_fn(void *arg)
{
	(*(int *)arg)++;
}

/* A post is work now; once it ran, nothing is left: the loop's own
 * re-armed read of its wake eventfd is no work of the caller's. On a
 * plain loop, before and after uaio_loop_fd() exists, and on a
 * thread-safe one. */
static void posted_is_due(void)
{
	static const unsigned flags[] = { 0, 0, UAIO_LOOP_THREADSAFE };

	for (int i = 0; i < 3; i++) {
		uaio_loop *l = t_loop_new(flags[i]);
		int n = 0;

		if (i > 0)
			CHECK(uaio_loop_fd(l) >= 0);
		for (int k = 1; k <= 3; k++) {
			CHECK_OK(uaio_loop_post(l, post_fn, &n));
			CHECK_EQ(uaio_loop_timeout(l), 0);
			CHECK(uaio_loop_run_once(l, 0) >= 1);
			CHECK_EQ(n, k);
			CHECK_EQ(uaio_loop_timeout(l), -1);
		}
		uaio_loop_free(l);
	}
	CHECK_EQ(uaio_loop_timeout(NULL), -EINVAL);
}

static int hits;

static int on_input(uaio_watch *w)
{
	(void)w;
	hits++;
	return 0;
}

static const struct uaio_handler counting = { .handle_input = on_input };

/* Ready watches the descriptor cannot show: a regular file (epoll refuses
 * it; always readable), and more edge-triggered events than one
 * iteration dispatches (the rest wait in the backend, and an edge does
 * not come again). A loop that answered -1 here would sleep for ever. */
static void ready_without_edges(void)
{
	enum { N = 300 };
	uaio_loop *l = t_loop_new(0);
	static uaio_watch w[N];
	static int sp[N][2];
	uaio_watch fw = { 0 };
	char path[] = "/tmp/uaio-embed-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	hits = 0;
	CHECK_OK(uaio_watch_start(l, &fw, fd, UAIO_READABLE, &counting, NULL));
	for (int i = 0; i < 3; i++)
		turn(l);
	CHECK(hits >= 3);
	uaio_watch_stop(l, &fw);
	CHECK_EQ(settled(l), -1);

	if (t_raise_nofile(2 * N + 64) < 2 * N + 64) {
		fprintf(stderr, "    (RLIMIT_NOFILE below %d: edges not run)\n", 2 * N + 64);
	} else {
		hits = 0;
		for (int i = 0; i < N; i++) {
			CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
					 sp[i]) == 0);
			CHECK_OK(uaio_watch_start(l, &w[i], sp[i][0], UAIO_READABLE | UAIO_EDGE,
						  &counting, NULL));
		}
		CHECK(uaio_loop_run_once(l, 0) >= 0);
		for (int i = 0; i < N; i++)
			CHECK_EQ(write(sp[i][1], "x", 1), 1);
		while (hits < N)
			turn(l);
		CHECK_EQ(hits, N);
		for (int i = 0; i < N; i++) {
			uaio_watch_stop(l, &w[i]);
			close(sp[i][0]);
			close(sp[i][1]);
		}
	}
	CHECK_EQ(settled(l), -1);
	close(fd);
	uaio_loop_free(l);
}

int main(int argc, char **argv)
{
	(void)argc;
	t_watchdog(30);
	t_banner(argv[0]);
	RUN(op_between_iterations);
	RUN(timer_on_time);
	RUN(posted_is_due);
	RUN(ready_without_edges);
	return T_EXIT_PASS;
}
