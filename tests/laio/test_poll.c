/* SPDX-License-Identifier: MIT */
/* laio_poll() timeouts and arguments; laio_fd() readiness. */
#include "laio/laio_util.h"
#include <poll.h>
#include <pthread.h>

static void bad_args(void)
{
	struct laio_completion c[2];
	struct timespec bad = { 0, 1000000000 }, neg = { -1, 0 };

	errno = 0;
	CHECK_EQ(laio_poll(NULL, 1, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(laio_poll(c, 0, NULL), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(laio_poll(c, 2, &bad), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(laio_poll(c, 2, &neg), -1);
	CHECK_EQ(errno, EINVAL);
	/* Nothing outstanding: even "forever" returns 0 at once. */
	CHECK_EQ(laio_poll(c, 2, NULL), 0);
}

static void *late_writer(void *arg)
{
	int fd = *(int *)arg;
	struct timespec d = { 0, 50 * 1000000 };

	nanosleep(&d, NULL);
	CHECK(write(fd, "w", 1) == 1);
	return NULL;
}

static void timeouts(void)
{
	int p[2];
	char b;
	struct laio_completion c[2];
	struct timespec zero = { 0, 0 }, t20 = { 0, 20 * 1000000 };
	void *h;
	pthread_t th;

	CHECK(pipe(p) == 0);
	h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	/* zero: does not wait */
	CHECK_EQ(laio_poll(c, 2, &zero), 0);
	/* finite: times out with nothing */
	CHECK_EQ(laio_poll(c, 2, &t20), 0);
	/* NULL: waits until the writer thread's byte arrives */
	CHECK(pthread_create(&th, NULL, late_writer, &p[1]) == 0);
	CHECK_EQ(laio_poll(c, 2, NULL), 1);
	CHECK(c[0].laio_handle == h);
	CHECK_EQ(c[0].laio_return_value, 1);
	pthread_join(th, NULL);
	/* finite: returns early when something completes */
	h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	CHECK(pthread_create(&th, NULL, late_writer, &p[1]) == 0);
	struct timespec t10s = { 10, 0 };
	CHECK_EQ(laio_poll(c, 2, &t10s), 1);
	CHECK(c[0].laio_handle == h);
	pthread_join(th, NULL);
	/* a timeout past what the clock counts waits as NULL does (it
	 * wrapped to a deadline in the past: 0 at once) */
	for (int k = 0; k < 2; k++) {
		struct timespec huge = { k ? 18446744073L : 9223372036L, 0 };

		h = BG(laio_syscall(SYS_read, p[0], &b, 1));
		CHECK(pthread_create(&th, NULL, late_writer, &p[1]) == 0);
		CHECK_EQ(laio_poll(c, 2, &huge), 1);
		CHECK(c[0].laio_handle == h);
		pthread_join(th, NULL);
	}
	/* n smaller than what is ready: the rest waits for the next call */
	void *h1 = BG(laio_syscall(SYS_read, p[0], &b, 1));
	char b2;
	int q[2];
	CHECK(pipe(q) == 0);
	void *h2 = BG(laio_syscall(SYS_read, q[0], &b2, 1));
	CHECK(write(p[1], "1", 1) == 1 && write(q[1], "2", 1) == 1);
	int seen = 0;
	for (int i = 0; i < 1000 && seen < 2; i++) {
		int n = laio_poll(c, 1, &t20);
		CHECK(n >= 0 && n <= 1);
		if (n) {
			CHECK(c[0].laio_handle == h1 || c[0].laio_handle == h2);
			seen++;
		}
	}
	CHECK_EQ(seen, 2);
	CHECK_EQ(laio_poll(c, 2, &zero), 0);
	close(p[0]); close(p[1]); close(q[0]); close(q[1]);
}

static int readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int n = poll(&pfd, 1, ms);

	CHECK(n >= 0);
	return n == 1 && (pfd.revents & POLLIN);
}

/* laio_fd() must wake another event loop for every kind of completion. */
static void fd_readiness(void)
{
	int lfd = laio_fd(), p[2];
	char b;
	struct laio_completion c[4];
	struct timespec zero = { 0, 0 }, d = { 0, 30 * 1000000 };
	void *h;

	CHECK(lfd >= 0);
	CHECK_EQ(laio_fd(), lfd);
	CHECK(pipe(p) == 0);
	for (int round = 0; round < 3; round++) {
		/* a pipe read (io_uring op, readiness poll or epoll queue) */
		h = BG(laio_syscall(SYS_read, p[0], &b, 1));
		/* (it may fire while the engine has submissions to issue) */
		CHECK_EQ(laio_poll(c, 4, &zero), 0);
		CHECK(!readable(lfd, 0));
		CHECK(write(p[1], "r", 1) == 1);
		CHECK(readable(lfd, 5000));
		int n = 0;
		for (int i = 0; i < 100 && n == 0; i++) {
			n = laio_poll(c, 4, &zero);
			if (!n)
				CHECK(readable(lfd, 5000));
		}
		CHECK_EQ(n, 1);
		CHECK(c[0].laio_handle == h);
		CHECK(!readable(lfd, 0));
		/* a helper-pool call (nanosleep) */
		h = BG(laio_syscall(SYS_nanosleep, &d, NULL));
		CHECK(readable(lfd, 5000));
		n = 0;
		for (int i = 0; i < 100 && n == 0; i++) {
			n = laio_poll(c, 4, &zero);
			if (!n)
				CHECK(readable(lfd, 5000));
		}
		CHECK_EQ(n, 1);
		CHECK(c[0].laio_handle == h);
		CHECK_EQ(c[0].laio_return_value, 0);
		CHECK(!readable(lfd, 0));
	}
	/* Completions left behind (n too small) keep it readable. */
	void *h1 = BG(laio_syscall(SYS_nanosleep, &d, NULL));
	void *h2 = BG(laio_syscall(SYS_nanosleep, &d, NULL));
	int got = 0;
	while (got < 2) {
		CHECK(readable(lfd, 5000));
		int n = laio_poll(c, 1, &zero);
		CHECK(n >= 0);
		if (n)
			CHECK(c[0].laio_handle == h1 || c[0].laio_handle == h2);
		got += n;
	}
	CHECK(!readable(lfd, 0));
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	RUN(bad_args);
	RUN_MECHS(timeouts);
	RUN_MECHS(fd_readiness);
	return T_EXIT_PASS;
}
