/* SPDX-License-Identifier: MIT */
/*
 * uaio_file_pin: a pinned handle keeps naming its file after the caller
 * closes the descriptor; pinning the handle again takes a reference, and
 * the file goes only with the last uaio_file_unpin (a pipe's reader end
 * held by a pin keeps its writer from EPIPE until then). Bad input.
 * uaio_loop_fd on a thread-safe loop polls readable while another
 * thread's submission waits for the driver. All of it again with
 * UAIO_PIN=dup: duplicates for handles, as on kernels before 6.4.
 * uaio_op_close refuses a handle: a duplicate's close let its unpin
 * close whatever the number named next.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <uaio/loop.h>

#include "test.h"

static int got_res;
static void on_done(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)data;
	got_res = res;
}

/* Reads up to n bytes through fd (or handle) on l: the op's result. */
static int read_via(uaio_loop *l, int fd, char *buf, size_t n)
{
	uaio_op op = { 0 };

	got_res = 1 << 30;
	CHECK_OK(uaio_op_read(l, &op, fd, buf, n, -1, on_done, NULL));
	T_RUN_UNTIL(l, got_res != 1 << 30, 1000);
	return got_res;
}

static void references(void)
{
	uaio_loop *l = t_loop_new(0);
	int p[2], h, h2;
	char b[8];

	signal(SIGPIPE, SIG_IGN);
	CHECK(pipe(p) == 0);
	h = uaio_file_pin(l, p[0]);
	CHECK(h >= 0);
	if (getenv("UAIO_PIN"))			/* a descriptor, not a slot */
		CHECK(fcntl(h, F_GETFD) >= 0);
	h2 = uaio_file_pin(l, h);		/* a second reference */
	CHECK_EQ(h2, h);
	{	/* not the caller's to close: refused at once (a duplicate),
		 * or by the ring (a slot); the handle still reads after */
		uaio_op c = { 0 };
		int r = uaio_op_close(l, &c, h, on_done, NULL);

		if (r == 0) {
			got_res = 1 << 30;
			T_RUN_UNTIL(l, got_res != 1 << 30, 1000);
			r = got_res;
		}
		CHECK_EQ(r, -EBADF);
	}
	close(p[0]);				/* the handle keeps the file */
	CHECK(write(p[1], "one", 3) == 3);
	CHECK_EQ(read_via(l, h, b, sizeof(b)), 3);
	CHECK(!memcmp(b, "one", 3));
	uaio_file_unpin(l, h);			/* one reference left */
	CHECK(write(p[1], "two", 3) == 3);
	CHECK_EQ(read_via(l, h, b, sizeof(b)), 3);
	CHECK(!memcmp(b, "two", 3));
	uaio_file_unpin(l, h);			/* the last: the reader is gone */
	errno = 0;
	CHECK(write(p[1], "x", 1) == -1 && errno == EPIPE);
	/* A handle with no reference left is no handle. */
	if (!t_is_epoll() && !getenv("UAIO_PIN"))
		CHECK_EQ(uaio_file_pin(l, h), -EBADF);
	CHECK_EQ(uaio_file_pin(l, -1), -EBADF);
	CHECK_EQ(uaio_file_pin(NULL, 0), -EINVAL);
	uaio_file_unpin(l, -1);			/* harmless */
	close(p[1]);
	uaio_loop_free(l);
}

/* Many handles at once, each with its own count. */
static void many(void)
{
	enum { N = 64 };
	uaio_loop *l = t_loop_new(0);
	int p[N][2], h[N];
	char b[4];

	for (int i = 0; i < N; i++) {
		CHECK(pipe(p[i]) == 0);
		h[i] = uaio_file_pin(l, p[i][0]);
		CHECK(h[i] >= 0);
		CHECK_EQ(uaio_file_pin(l, h[i]), h[i]);
		close(p[i][0]);
	}
	for (int i = 0; i < N; i++) {
		uaio_file_unpin(l, h[i]);
		CHECK(write(p[i][1], "k", 1) == 1);
		CHECK_EQ(read_via(l, h[i], b, 1), 1);
		uaio_file_unpin(l, h[i]);
		CHECK(write(p[i][1], "k", 1) == -1 && errno == EPIPE);
		close(p[i][1]);
	}
	uaio_loop_free(l);
}

static uaio_loop *TS;
static uaio_op ts_op;
static int ts_res = 1 << 30;
static void on_ts(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)data;
	ts_res = res;
}

static void *submit_nop(void *arg)
{
	(void)arg;
	CHECK_OK(uaio_op_nop(TS, &ts_op, on_ts, NULL));
	return NULL;
}

static void threadsafe_loop_fd(void)
{
	pthread_t t;
	struct pollfd pfd;

	/* Not driven yet: nothing of the loop's own waits on its wake
	 * eventfd, so only uaio_loop_fd() can tell the submission is there. */
	TS = t_loop_new(UAIO_LOOP_THREADSAFE);
	pfd.fd = uaio_loop_fd(TS);
	CHECK(pfd.fd >= 0);
	pfd.events = POLLIN;
	CHECK(pthread_create(&t, NULL, submit_nop, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	/* The nop waits for the driver (or has completed): either way the
	 * descriptor says there is work. */
	CHECK_EQ(poll(&pfd, 1, 5000), 1);
	T_RUN_UNTIL(TS, ts_res != 1 << 30, 100);
	CHECK_EQ(ts_res, 0);
	uaio_loop_free(TS);
}

/* A pin tried first from a thread that is not the loop's (wrong use of a
 * loop made without UAIO_LOOP_THREADSAFE: on io_uring, which ties the
 * ring to its thread, it fails) must not spoil the loop's own pins: the
 * table's setup failed for that caller only. */
static uaio_loop *WT;
static int wt_fd, wt_res;
static void *pin_elsewhere(void *arg)
{
	(void)arg;
	wt_res = uaio_file_pin(WT, wt_fd);
	return NULL;
}

static void wrong_thread_first(void)
{
	pthread_t t;
	int p[2], h;
	char b[8];

	WT = t_loop_new(0);
	CHECK(pipe(p) == 0);
	CHECK(uaio_loop_run_once(WT, 0) >= 0);	/* the loop's thread is this one */
	wt_fd = p[0];
	CHECK(pthread_create(&t, NULL, pin_elsewhere, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	if (wt_res >= 0)			/* epoll: a duplicate */
		uaio_file_unpin(WT, wt_res);
	else
		CHECK(uaio_loop_backend(WT) == UAIO_BACKEND_URING);
	h = uaio_file_pin(WT, p[0]);
	CHECK(h >= 0);
	CHECK(write(p[1], "abc", 3) == 3);
	CHECK_EQ(read_via(WT, h, b, sizeof(b)), 3);
	uaio_file_unpin(WT, h);
	close(p[0]);
	close(p[1]);
	uaio_loop_free(WT);
}

int main(int argc, char **argv)
{
	(void)argc;
	t_watchdog(60);
	t_banner(argv[0]);
	RUN(references);
	RUN(many);
	RUN(threadsafe_loop_fd);
	RUN(wrong_thread_first);
	/* io_uring with duplicate descriptors for handles, as where the
	 * kernel lets go of a slot's file late (before 6.4): the file still
	 * goes with the last unpin (EPIPE at once) */
	setenv("UAIO_PIN", "dup", 1);
	RUN(references);
	RUN(many);
	unsetenv("UAIO_PIN");
	return T_EXIT_PASS;
}
