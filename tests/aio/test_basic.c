/* SPDX-License-Identifier: MIT */
/*
 * uaio_read / uaio_write / uaio_error / uaio_return / uaio_suspend on real
 * files and pipes: inline (cached) and background (evicted, O_DIRECT,
 * empty pipe) paths, exact errno for bad input, status semantics.
 */
#include "aio/aio_util.h"
#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define SZ (256 * 1024)

static void cached_read_inline(void)
{
	int fd = t_tmpfile();
	char *w = malloc(SZ), r[4096];

	t_fill(w, SZ, 1);
	CHECK(pwrite(fd, w, SZ, 0) == SZ);
	struct aiocb cb = t_cb(fd, r, sizeof(r), 8192);
	CHECK_EQ(uaio_read(&cb), 0);
	/* From the page cache it finishes inside the call. */
	CHECK_EQ(uaio_error(&cb), 0);
	CHECK_EQ(uaio_return(&cb), 4096);
	CHECK(!memcmp(r, w + 8192, 4096));
	fprintf(stderr, "    engine started after a cached read: %d\n",
		uaio__aio_engine_started());
	CHECK(!uaio__aio_engine_started());
	close(fd);
	free(w);
}

static void evicted_read_background(void)
{
	int fd = t_tmpfile(), err;
	char *w = malloc(SZ), *r = malloc(SZ);

	t_fill(w, SZ, 2);
	CHECK(pwrite(fd, w, SZ, 0) == SZ);
	t_evict(fd);
	struct aiocb cb = t_cb(fd, r, SZ, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK(uaio__aio_engine_started());
	CHECK_EQ(t_wait(&cb, &err), SZ);
	CHECK_EQ(err, 0);
	CHECK(!memcmp(r, w, SZ));
	close(fd);
	free(w);
	free(r);
}

static void writes_then_read_back(void)
{
	int fd = t_tmpfile(), err;
	char *w = malloc(SZ), *r = malloc(SZ);
	struct aiocb cb[4];

	t_fill(w, SZ, 3);
	for (int i = 0; i < 4; i++) {
		cb[i] = t_cb(fd, w + i * (SZ / 4), SZ / 4, i * (SZ / 4));
		CHECK_EQ(uaio_write(&cb[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(t_wait(&cb[i], &err), SZ / 4);
		CHECK_EQ(err, 0);
	}
	CHECK(pread(fd, r, SZ, 0) == SZ);
	CHECK(!memcmp(r, w, SZ));
	/* Read past the end: 0, like pread. */
	struct aiocb e = t_cb(fd, r, 100, SZ + 4096);
	CHECK_EQ(uaio_read(&e), 0);
	CHECK_EQ(t_wait(&e, &err), 0);
	/* Zero bytes. */
	e = t_cb(fd, r, 0, 0);
	CHECK_EQ(uaio_read(&e), 0);
	CHECK_EQ(t_wait(&e, &err), 0);
	close(fd);
	free(w);
	free(r);
}

static void odirect(void)
{
	int dfd = t_direct_file(), err;
	void *w, *r;

	CHECK(posix_memalign(&w, 4096, 65536) == 0 && posix_memalign(&r, 4096, 65536) == 0);
	t_fill(w, 65536, 4);
	struct aiocb cb = t_cb(dfd, w, 65536, 0);
	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 65536);
	cb = t_cb(dfd, r, 65536, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 65536);
	CHECK(!memcmp(r, w, 65536));
	/* A misaligned O_DIRECT offset: the kernel's EINVAL, through
	 * aio_error. */
	cb = t_cb(dfd, r, 512, 100);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EINVAL);
	close(dfd);
	free(w);
	free(r);
}

static void pipe_paths(void)
{
	int p[2], err;
	char b[16] = { 0 };

	CHECK(pipe(p) == 0);
	/* Data waiting: inline. */
	CHECK(write(p[1], "abc", 3) == 3);
	struct aiocb cb = t_cb(p[0], b, sizeof(b), 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(uaio_error(&cb), 0);
	CHECK_EQ(uaio_return(&cb), 3);
	CHECK(!memcmp(b, "abc", 3));
	/* Empty: in progress until a writer comes. */
	cb = t_cb(p[0], b, sizeof(b), 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(uaio_error(&cb), EINPROGRESS);
	ERRNO_IS(uaio_return(&cb), EINPROGRESS);
	/* The same aiocb again while in flight. */
	ERRNO_IS(uaio_read(&cb), EINVAL);
	const struct aiocb *l[1] = { &cb };
	struct timespec zero = { 0, 0 }, ms = { 0, 20000000 };
	ERRNO_IS(uaio_suspend(l, 1, &zero), EAGAIN);
	ERRNO_IS(uaio_suspend(l, 1, &ms), EAGAIN);
	CHECK(write(p[1], "hello", 5) == 5);
	CHECK_EQ(t_wait(&cb, &err), 5);
	CHECK_EQ(err, 0);
	CHECK(!memcmp(b, "hello", 5));
	/* Writer gone: EOF. */
	close(p[1]);
	cb = t_cb(p[0], b, sizeof(b), 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 0);
	close(p[0]);
}

/* A read of 0 bytes queued behind a read that takes all the data: 0 at
 * its turn, as glibc's read(2) gives (the epoll backend waited for the
 * descriptor's next event: EINPROGRESS for ever). A socket and a pipe. */
static void zero_read_behind(void)
{
	for (int sock = 0; sock < 2; sock++) {
		int p[2], err;
		static char b1[3028], b0[1];

		CHECK(sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0 : pipe(p) == 0);
		struct aiocb a = t_cb(p[0], b1, sizeof(b1), 0), z = t_cb(p[0], b0, 0, 0);

		CHECK_EQ(uaio_read(&a), 0);
		CHECK_EQ(uaio_read(&z), 0);
		CHECK(write(p[1], b1, 672) == 672);
		CHECK_EQ(t_wait(&a, &err), 672);
		CHECK_EQ(t_wait(&z, &err), 0);	/* (the watchdog: a hang) */
		CHECK_EQ(err, 0);
		close(p[0]);
		close(p[1]);
	}
}

static void status_semantics(void)
{
	struct aiocb z;
	char b[8];
	int fd = t_tmpfile(), err;

	memset(&z, 0, sizeof(z));
	/* Never submitted. */
	ERRNO_IS(uaio_error(&z), EINVAL);
	ERRNO_IS(uaio_return(&z), EINVAL);
	ERRNO_IS(uaio_error(NULL), EINVAL);
	ERRNO_IS(uaio_return(NULL), EINVAL);
	CHECK(pwrite(fd, "12345678", 8, 0) == 8);
	struct aiocb cb = t_cb(fd, b, 8, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 8);
	/* Once only; the error status stays readable. */
	ERRNO_IS(uaio_return(&cb), EINVAL);
	CHECK_EQ(uaio_error(&cb), 0);
	/* A copy of a submitted aiocb is not that request. */
	struct aiocb copy = cb;
	ERRNO_IS(uaio_error(&copy), EINVAL);
	/* The aiocb may be reused after aio_return. */
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 8);
	close(fd);
}

static void bad_input(void)
{
	int fd = t_tmpfile(), ro, wo, err;
	char b[16];
	struct aiocb cb;

	CHECK(pwrite(fd, "0123456789abcdef", 16, 0) == 16);
	ERRNO_IS(uaio_read(NULL), EINVAL);
	ERRNO_IS(uaio_write(NULL), EINVAL);
	/* As glibc: a bad descriptor is accepted and fails as it runs. */
	cb = t_cb(-1, b, 4, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EBADF);
	cb = t_cb(9999, b, 4, 0);
	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EBADF);

	/* So is one not open for that direction. */
	ro = open("/proc/self/exe", O_RDONLY);
	wo = open("/dev/null", O_WRONLY);
	CHECK(ro >= 0 && wo >= 0);
	cb = t_cb(ro, b, 4, 0);
	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EBADF);
	cb = t_cb(wo, b, 4, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EBADF);
	/* A negative offset on a file, likewise (EINVAL from the read). */
	cb = t_cb(fd, b, 4, -4096);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EINVAL);

	/* A bad aio_reqprio is refused at once, and, as in glibc, the
	 * aiocb tells why afterwards. */
	cb = t_cb(fd, b, 4, 0);
	cb.aio_reqprio = -1;
	ERRNO_IS(uaio_read(&cb), EINVAL);
	CHECK_EQ(uaio_error(&cb), EINVAL);
	CHECK_EQ(uaio_return(&cb), -1);
	cb.aio_reqprio = UAIO_AIO_PRIO_DELTA_MAX + 1;
	ERRNO_IS(uaio_read(&cb), EINVAL);
	cb.aio_reqprio = UAIO_AIO_PRIO_DELTA_MAX;	/* the edge is fine */
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 4);

	/* glibc takes any sigevent: an unknown kind notifies nothing, and a
	 * signal that cannot be queued makes the request fail with EINVAL. */
	cb = t_cb(fd, b, 4, 0);
	cb.aio_sigevent.sigev_notify = 12345;
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 4);
	cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb.aio_sigevent.sigev_notify_function = NULL;
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 4);
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = 4096;
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EINVAL);

	/* Faults are the operation's error, not the call's. */
	cb = t_cb(fd, NULL, 8, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EFAULT);

	cb = t_cb(fd, b, 4, 0);
	ERRNO_IS(uaio_fsync(0, &cb), EINVAL);
	ERRNO_IS(uaio_fsync(O_RDWR, &cb), EINVAL);
	ERRNO_IS(uaio_fsync(O_SYNC, NULL), EINVAL);
	cb.aio_fildes = -1;
	ERRNO_IS(uaio_fsync(O_SYNC, &cb), EBADF);

	const struct aiocb *l[1] = { &cb };
	struct timespec bad = { 0, 3000000000 };
	/* As glibc: nothing to wait for is no wait. A timeout is added to
	 * the clock, its nanoseconds carried once: what lands in the past has
	 * expired, and so has a sum past the largest second (glibc's wraps);
	 * nanoseconds still out of range are EINVAL (glibc fails an
	 * assertion and aborts). */
	CHECK_EQ(uaio_suspend(l, 0, NULL), 0);
	const struct aiocb *nulls[2] = { NULL, NULL };
	CHECK_EQ(uaio_suspend(nulls, 2, NULL), 0);
	int pp[2];
	CHECK(pipe(pp) == 0);
	cb = t_cb(pp[0], b, 4, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(cb.aio_lio_opcode, LIO_READ);
	ERRNO_IS(uaio_suspend(l, 1, &bad), EINVAL);	/* glibc aborts */
	bad.tv_nsec = -2000000000;
	ERRNO_IS(uaio_suspend(l, 1, &bad), EINVAL);
	bad.tv_sec = -1;
	bad.tv_nsec = 0;
	ERRNO_IS(uaio_suspend(l, 1, &bad), EAGAIN);
	bad.tv_nsec = 1000000000;	/* a second back, a second carried */
	ERRNO_IS(uaio_suspend(l, 1, &bad), EAGAIN);
	bad.tv_sec = LONG_MAX;
	bad.tv_nsec = 0;
	ERRNO_IS(uaio_suspend(l, 1, &bad), EAGAIN);
	CHECK(write(pp[1], "four", 4) == 4);
	CHECK_EQ(t_wait(&cb, &err), 4);
	/* A timeout centuries away waits for the request (its count of
	 * nanoseconds must not wrap round to the past), also once the
	 * thread issues small writes on a ring of its own. */
	bad.tv_sec = 10000000000;
	static char hundred[100];
	for (int i = 0, tf = t_tmpfile(); i < 3; i++) {
		cb = t_cb(tf, hundred, 100, i * 100);
		CHECK_EQ(uaio_write(&cb), 0);
		CHECK_EQ(uaio_suspend(l, 1, &bad), 0);
		CHECK_EQ(t_wait(&cb, &err), 100);
		if (i == 2)
			close(tf);
	}
	close(pp[0]);
	close(pp[1]);
	close(ro);
	close(wo);
	close(fd);
}

static void limits(void)
{
	CHECK_EQ(uaio_sysconf(_SC_AIO_MAX), UAIO_AIO_MAX_DEFAULT);
	CHECK_EQ(uaio_sysconf(_SC_AIO_LISTIO_MAX), UAIO_AIO_MAX_DEFAULT);
	CHECK_EQ(uaio_sysconf(_SC_AIO_PRIO_DELTA_MAX), UAIO_AIO_PRIO_DELTA_MAX);
	ERRNO_IS(uaio_sysconf(_SC_OPEN_MAX), EINVAL);
}

int main(void)
{
	t_watchdog(60);
	RUN(cached_read_inline);
	RUN(evicted_read_background);
	fprintf(stderr, "    engine backend: %s\n", uaio__aio_backend_name());
	RUN(writes_then_read_back);
	RUN(odirect);
	RUN(pipe_paths);
	RUN(zero_read_behind);
	RUN(status_semantics);
	RUN(bad_input);
	RUN(limits);
	return T_EXIT_PASS;
}
