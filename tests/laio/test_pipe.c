/* SPDX-License-Identifier: MIT */
/* Pipes: inline when data/room is there, background when it would block. */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <pthread.h>
#include <sys/uio.h>

static void read_inline_and_background(void)
{
	int p[2];
	char b[8] = {0};
	void *h;
	struct laio_completion c;

	CHECK(pipe(p) == 0);
	/* Data there: inline, no handle. */
	CHECK(write(p[1], "ab", 2) == 2);
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], b, 1)), 1);
	CHECK_EQ(b[0], 'a');
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], b, 8)), 1);
	CHECK_EQ(b[0], 'b');
	/* Empty: background, completes once data arrives. */
	h = BG(laio_syscall(SYS_read, p[0], b, 8));
	CHECK(write(p[1], "xyz", 3) == 3);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 3);
	CHECK_EQ(c.laio_errno, 0);
	CHECK(memcmp(b, "xyz", 3) == 0);
	/* A later inline call clears the thread's handle. */
	CHECK(write(p[1], "q", 1) == 1);
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], b, 8)), 1);
	/* EOF while in the background. */
	h = BG(laio_syscall(SYS_read, p[0], b, 8));
	close(p[1]);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 0);
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], b, 8)), 0);
	close(p[0]);
}

static void readv_writev(void)
{
	int p[2];
	char a[3], b[4];
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct iovec wv[2] = { { "hel", 3 }, { "lo!x", 4 } };
	struct laio_completion c;
	void *h;

	CHECK(pipe(p) == 0);
	h = BG(laio_syscall(SYS_readv, p[0], iov, 2));
	CHECK_EQ(INL(laio_syscall(SYS_writev, p[1], wv, 2)), 7);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 7);
	CHECK(memcmp(a, "hel", 3) == 0 && memcmp(b, "lo!x", 4) == 0);
	close(p[0]);
	close(p[1]);
}

/* A blocking write to a full pipe continues in the background and, like
 * write(2) on a blocking pipe, completes with everything written. */
static void write_full_pipe(void)
{
	int p[2];
	size_t cap, big = 300000, got = 0;
	char *buf = malloc(big), *rd = malloc(big);
	struct laio_completion c;
	void *h;
	int one = 1;
	long r;

	CHECK(pipe(p) == 0);
	cap = (size_t)fcntl(p[1], F_GETPIPE_SZ);
	for (size_t i = 0; i < big; i++)
		buf[i] = (char)(i * 7);
	/* Fill it exactly: the next write would block. */
	memset(rd, 0, cap);
	CHECK_EQ(INL(laio_syscall(SYS_write, p[1], rd, cap)), (long)cap);
	h = BG(laio_syscall(SYS_write, p[1], &one, 1));
	CHECK_EQ(read(p[0], rd, cap), (long)cap);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 1);
	CHECK_EQ(read(p[0], rd, 8), 1);
	/* More than fits: partly inline, the rest in the background. */
	errno = 0;
	r = laio_syscall(SYS_write, p[1], buf, big);
	CHECK(r == -1 && errno == EINPROGRESS);
	h = laio_gethandle();
	while (got < big) {
		ssize_t n = read(p[0], rd + got, big - got);
		CHECK(n > 0);
		got += (size_t)n;
		struct laio_completion cc;
		struct timespec z = { 0, 0 };
		if (laio_poll(&cc, 1, &z) == 1) {
			CHECK(cc.laio_handle == h);
			CHECK_EQ(cc.laio_return_value, (long)big);
			h = NULL;
		}
	}
	CHECK(memcmp(buf, rd, big) == 0);
	if (h) {
		c = wait_one(h);
		CHECK_EQ(c.laio_return_value, (long)big);
	}
	close(p[0]);
	close(p[1]);
	free(buf);
	free(rd);
}

/* The caller's O_NONBLOCK is respected (and never changed by laio). */
static void nonblocking_fd(void)
{
	int p[2];
	char b;

	CHECK(pipe2(p, O_NONBLOCK) == 0);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], &b, 1)), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK(fcntl(p[0], F_GETFL) & O_NONBLOCK);
	close(p[0]);
	close(p[1]);
	/* And a blocking fd stays blocking after background calls. */
	CHECK(pipe(p) == 0);
	void *h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	CHECK(!(fcntl(p[0], F_GETFL) & O_NONBLOCK));
	CHECK(write(p[1], "z", 1) == 1);
	CHECK_EQ(wait_one(h).laio_return_value, 1);
	CHECK(!(fcntl(p[0], F_GETFL) & O_NONBLOCK));
	close(p[0]);
	close(p[1]);
}

static void bad_fd(void)
{
	char b;

	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_read, 987, &b, 1)), -1);
	CHECK_EQ(errno, EBADF);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_write, -1, &b, 1)), -1);
	CHECK_EQ(errno, EBADF);
	int p[2];
	CHECK(pipe(p) == 0);
	CHECK(write(p[1], "x", 1) == 1);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], (void *)8, 1)), -1);
	CHECK_EQ(errno, EFAULT);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_pread64, p[0], &b, 1, 0)), -1);
	CHECK_EQ(errno, ESPIPE);
	/* a count past the address space: the kernel's EFAULT (it checks the
	 * span before cutting the count), not preadv2's EINVAL */
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], &b, -1L)), -1);
	CHECK_EQ(errno, EFAULT);
	/* a large count within it is cut: the byte there */
	static char big[8192];
	CHECK_EQ(INL(laio_syscall(SYS_read, p[0], big, 1L << 40)), 1);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	RUN_MECHS(read_inline_and_background);
	RUN_MECHS(readv_writev);
	RUN_MECHS(write_full_pipe);
	RUN_MECHS(nonblocking_fd);
	RUN(bad_fd);
	return T_EXIT_PASS;
}
