/* SPDX-License-Identifier: MIT */
/* laio_cancel(): one completion per call, ECANCELED when in time. */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>

static void cancel_blocked_read(void)
{
	int p[2];
	char b;
	struct laio_completion c;
	void *h;

	CHECK(pipe(p) == 0);
	for (int i = 0; i < 20; i++) {
		h = BG(laio_syscall(SYS_read, p[0], &b, 1));
		CHECK_EQ(laio_cancel(h), 0);
		c = wait_one(h);
		CHECK_EQ(c.laio_return_value, -1);
		CHECK_EQ(c.laio_errno, ECANCELED);
		/* returned: no longer a handle */
		errno = 0;
		CHECK_EQ(laio_cancel(h), -1);
		CHECK_EQ(errno, EINVAL);
	}
	/* the pipe still works and nothing else completes */
	struct timespec z = { 0, 0 };
	CHECK_EQ(laio_poll(&c, 1, &z), 0);
	CHECK(write(p[1], "k", 1) == 1);
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], &b, 1)), 1);
	close(p[0]);
	close(p[1]);
}

/* Forms of a read the core has no op for (a NULL buffer, preadv2's
 * flags) on an empty pipe: a cancel still ends them. On io_uring they
 * went to a helper blocked in the read, which no cancel reaches, and
 * ended only when data came. */
static void cancel_odd_forms(void)
{
	int p[2];
	char b[4];
	struct iovec iov = { b, sizeof(b) };
	struct laio_completion c;
	void *h[2];

	CHECK(pipe(p) == 0);
	h[0] = BG(laio_syscall(SYS_read, p[0], NULL, 4L));
	h[1] = BG(laio_syscall(SYS_preadv2, p[0], &iov, 1L, -1L, 0L, (long)RWF_HIPRI));
	/* the engine run a while: both calls are under way, not queued */
	struct timespec t = { 0, 50 * 1000000 };
	CHECK_EQ(laio_poll(&c, 1, &t), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(laio_cancel(h[i]), 0);
		c = wait_one(h[i]);
		CHECK_EQ(c.laio_return_value, -1);
		CHECK_EQ(c.laio_errno, ECANCELED);
	}
	/* Readiness taken by another reader five times before the call's
	 * try (its tries refused): it still waits where a cancel reaches
	 * it (after four it went to a helper blocked in the read). */
	for (int form = 0; form < 2; form++) {
		h[0] = form ? BG(laio_syscall(SYS_preadv2, p[0], &iov, 1L, -1L, 0L, (long)RWF_HIPRI))
			    : BG(laio_syscall(SYS_read, p[0], NULL, 4L));
		CHECK_EQ(laio_poll(&c, 1, &t), 0);
		for (int i = 0; i < 5; i++) {
			CHECK(write(p[1], "x", 1) == 1);
			usleep(20000);		/* the poll's completion comes */
			CHECK(read(p[0], b, 1) == 1);
			CHECK_EQ(laio_poll(&c, 1, &t), 0);
		}
		CHECK_EQ(laio_cancel(h[0]), 0);
		c = wait_one(h[0]);
		CHECK_EQ(c.laio_return_value, -1);
		CHECK_EQ(c.laio_errno, ECANCELED);
	}
	/* Flags the kernel refuses: EOPNOTSUPP, as the plain call gives at
	 * once, not tries for ever (a write, always ready, spun a core) */
	for (int wr = 0; wr < 2; wr++) {
		long nr = wr ? SYS_pwritev2 : SYS_preadv2, r;

		CHECK_EQ(syscall(nr, p[wr], &iov, 1L, -1L, 0L, 0x40000000L), -1);
		CHECK_EQ(errno, EOPNOTSUPP);
		if (!wr)
			CHECK(write(p[1], "xy", 2) == 2);	/* ready to read */
		errno = 0;
		r = laio_syscall(nr, p[wr], &iov, 1L, -1L, 0L, 0x40000000L);
		if (r == -1 && errno == EINPROGRESS) {
			c = wait_one(laio_gethandle());
			r = c.laio_return_value;
			errno = c.laio_errno;
		}
		CHECK_EQ(r, -1);
		CHECK_EQ(errno, EOPNOTSUPP);
		if (!wr)
			CHECK(read(p[0], b, 2) == 2);
	}
	/* and without a cancel they end as the plain calls do */
	h[0] = BG(laio_syscall(SYS_read, p[0], NULL, 4L));
	CHECK(write(p[1], "abcd", 4) == 4);
	c = wait_one(h[0]);
	CHECK_EQ(c.laio_return_value, -1);
	CHECK_EQ(c.laio_errno, EFAULT);
	close(p[0]);
	close(p[1]);
}

static void cancel_finished(void)
{
	int p[2];
	char b;
	struct laio_completion c;
	void *h;
	struct timespec t = { 0, 1000000 };

	CHECK(pipe(p) == 0);
	h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	CHECK(write(p[1], "x", 1) == 1);
	/* let the engine collect the completion without returning it */
	for (int i = 0; i < 2000; i++) {
		errno = 0;
		int r = laio_cancel(h);
		if (r == -1) {
			CHECK_EQ(errno, EALREADY);
			break;
		}
		/* cancel raced with the data: either outcome is fine */
		break;
	}
	(void)t;
	c = wait_one(h);
	CHECK(c.laio_return_value == 1 || c.laio_errno == ECANCELED);
	errno = 0;
	CHECK_EQ(laio_cancel(NULL), -1);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK_EQ(laio_cancel(&c), -1);
	CHECK_EQ(errno, EINVAL);
	close(p[0]);
	close(p[1]);
}

/* A completed-but-unpolled call reports EALREADY. */
static void cancel_queued(void)
{
	struct timespec d = { 0, 1000000 }, z = { 0, 0 };
	struct laio_completion c[2];
	int p[2];
	char b;
	void *h1, *h2;

	CHECK(pipe(p) == 0);
	h1 = BG(laio_syscall(SYS_read, p[0], &b, 1));
	h2 = BG(laio_syscall(SYS_nanosleep, &d, NULL));
	CHECK(write(p[1], "x", 1) == 1);
	nanosleep(&(struct timespec){ 0, 20 * 1000000 }, NULL);
	/* collect one; with n = 1 the other may stay queued */
	int got = laio_poll(c, 1, NULL);
	CHECK_EQ(got, 1);
	void *other = c[0].laio_handle == h1 ? h2 : h1;
	CHECK(c[0].laio_handle == h1 || c[0].laio_handle == h2);
	int r = laio_cancel(other);
	CHECK(r == 0 || (r == -1 && errno == EALREADY));
	got = 0;
	for (int i = 0; i < 100 && !got; i++)
		got = laio_poll(c, 2, &(struct timespec){ 0, 50 * 1000000 });
	CHECK_EQ(got, 1);
	CHECK(c[0].laio_handle == other);
	CHECK_EQ(laio_poll(c, 2, &z), 0);
	close(p[0]);
	close(p[1]);
}

/* Pool calls: cancelled if still queued, else they finish normally. */
static void cancel_pool(void)
{
	enum { N = 64 };
	struct timespec d = { 0, 2 * 1000000 };
	void *h[N];
	int cancelled = 0, finished = 0;

	for (int i = 0; i < N; i++)
		h[i] = BG(laio_syscall(SYS_nanosleep, &d, NULL));
	for (int i = N - 1; i >= 0; i--)
		CHECK(laio_cancel(h[i]) == 0 || errno == EALREADY);
	for (int got = 0; got < N;) {
		struct laio_completion c[N];
		int n = laio_poll(c, N, &(struct timespec){ 10, 0 });
		CHECK(n > 0);
		for (int i = 0; i < n; i++) {
			int found = 0;
			for (int j = 0; j < N; j++)
				if (h[j] == c[i].laio_handle) {
					h[j] = NULL;
					found = 1;
				}
			CHECK(found);
			if (c[i].laio_errno == ECANCELED)
				cancelled++;
			else {
				CHECK_EQ(c[i].laio_return_value, 0);
				finished++;
			}
		}
		got += n;
	}
	CHECK_EQ(cancelled + finished, N);
	CHECK(cancelled > 0);
}

/* A write cancelled after part of it moved returns that part, as
 * write(2) interrupted after a partial transfer does. */
static void cancel_partial_write(void)
{
	int p[2];
	size_t big = 256 << 10, in = 0;
	char *w = calloc(1, big), sink[4096];
	struct laio_completion c;
	ssize_t n;
	void *h;

	CHECK(pipe(p) == 0);
	h = BG(laio_syscall(SYS_write, p[1], w, big));
	CHECK_EQ(laio_cancel(h), 0);
	c = wait_one(h);
	CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
	while ((n = read(p[0], sink, sizeof(sink))) > 0)
		in += (size_t)n;
	CHECK(in > 0 && in < big);
	CHECK_EQ(c.laio_return_value, (long)in);
	CHECK_EQ(c.laio_errno, 0);
	close(p[0]);
	close(p[1]);
	free(w);
}

/* A named FIFO refuses RWF_NOWAIT: its calls go on as the core's op from
 * the start. A cancel still ends them (a blocked read: ECANCELED; a
 * write into a full FIFO: what it wrote), where the helper pool, which
 * took them for a while, could not stop its blocking call. */
static void cancel_fifo(void)
{
	char path[] = "/tmp/uaio-laio-fifo-XXXXXX", b[8];
	size_t big = 1 << 20;
	char *w = calloc(1, big);
	struct laio_completion c;
	int rd, wr;
	void *h;

	CHECK(mkdtemp(path) != NULL);
	{
		char fifo[64];

		snprintf(fifo, sizeof(fifo), "%s/fifo", path);
		CHECK(mkfifo(fifo, 0600) == 0);
		rd = open(fifo, O_RDONLY | O_NONBLOCK);
		wr = open(fifo, O_WRONLY);
		CHECK(rd >= 0 && wr >= 0);
		unlink(fifo);
	}
	CHECK(fcntl(rd, F_SETFL, 0) == 0);	/* a blocking read */
	h = BG(laio_syscall(SYS_read, rd, b, sizeof(b)));
	CHECK_EQ(laio_cancel(h), 0);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, -1);
	CHECK_EQ(c.laio_errno, ECANCELED);
	h = BG(laio_syscall(SYS_write, wr, w, big));	/* nobody reads */
	CHECK_EQ(laio_cancel(h), 0);
	c = wait_one(h);
	/* what it wrote before the cancel, or nothing */
	CHECK((c.laio_return_value > 0 && c.laio_return_value < (long)big) ||
	      (c.laio_return_value == -1 && c.laio_errno == ECANCELED));
	close(rd);
	close(wr);
	rmdir(path);
	free(w);
}

static void all(void)
{
	RUN(cancel_blocked_read);
	RUN(cancel_odd_forms);
	RUN(cancel_finished);
	RUN(cancel_queued);
	RUN(cancel_pool);
	RUN(cancel_partial_write);
	RUN(cancel_fifo);
}

int main(void)
{
	RUN_MECHS(all);
	return T_EXIT_PASS;
}
