/* SPDX-License-Identifier: MIT */
/*
 * uaio_cancel: a request still queued behind another on a pipe, one
 * waiting in the kernel, one already done, all requests of a descriptor
 * at once; cancelled requests report ECANCELED and still notify; bad
 * descriptor and mismatched aiocb.
 */
#include "aio/aio_util.h"
#include <pthread.h>
#include <semaphore.h>

static sem_t notes;

static void on_note(union sigval v)
{
	(void)v;
	sem_post(&notes);
}

static void set_thread_note(struct aiocb *cb)
{
	cb->aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb->aio_sigevent.sigev_notify_function = on_note;
}

static void sem_wait_n(int n)
{
	for (int i = 0; i < n; i++)
		while (sem_wait(&notes) < 0)
			CHECK(errno == EINTR);
}

static void cancel_one(void)
{
	int p[2], err;
	char a[4], b[4];

	CHECK(pipe(p) == 0);
	struct aiocb first = t_cb(p[0], a, 4, 0), second = t_cb(p[0], b, 4, 0);
	set_thread_note(&first);
	set_thread_note(&second);
	CHECK_EQ(uaio_read(&first), 0);
	CHECK_EQ(uaio_read(&second), 0);
	/* second waits behind first: it never reached the kernel. */
	CHECK_EQ(uaio_cancel(p[0], &second), AIO_CANCELED);
	CHECK_EQ(uaio_error(&second), ECANCELED);
	CHECK_EQ(uaio_return(&second), -1);
	sem_wait_n(1);		/* cancelled requests notify too */
	/* first waits in the kernel (or the fallback's fd queue). */
	CHECK_EQ(uaio_cancel(p[0], &first), AIO_CANCELED);
	CHECK_EQ(uaio_error(&first), ECANCELED);
	sem_wait_n(1);
	/* Done already. */
	CHECK(write(p[1], "done", 4) == 4);
	struct aiocb third = t_cb(p[0], a, 4, 0);
	CHECK_EQ(uaio_read(&third), 0);
	CHECK_EQ(t_wait(&third, &err), 4);
	CHECK_EQ(uaio_cancel(p[0], &third), AIO_ALLDONE);
	/* Never submitted, or nothing on the fd. */
	struct aiocb none = t_cb(p[0], a, 4, 0);
	CHECK_EQ(uaio_cancel(p[0], &none), AIO_ALLDONE);
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_ALLDONE);
	/* Bad input. */
	ERRNO_IS(uaio_cancel(-1, NULL), EBADF);
	ERRNO_IS(uaio_cancel(4321, &none), EBADF);
	ERRNO_IS(uaio_cancel(p[1], &none), EINVAL);
	/* The pipe still works after all that. */
	CHECK(write(p[1], "next", 4) == 4);
	struct aiocb fourth = t_cb(p[0], a, 4, 0);
	CHECK_EQ(uaio_read(&fourth), 0);
	CHECK_EQ(t_wait(&fourth, &err), 4);
	CHECK(!memcmp(a, "next", 4));
	close(p[0]);
	close(p[1]);
}

static void cancel_all_on_fd(void)
{
	enum { N = 100 };
	int p[2], q[2], err;
	char b[N][2], c[2];
	struct aiocb cbs[N], other;

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(p[0], b[i], 1, 0);
		CHECK_EQ(uaio_read(&cbs[i]), 0);
	}
	other = t_cb(q[0], c, 1, 0);
	CHECK_EQ(uaio_read(&other), 0);
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_CANCELED);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(uaio_error(&cbs[i]), ECANCELED);
		CHECK_EQ(uaio_return(&cbs[i]), -1);
	}
	/* The other descriptor's request is untouched. */
	CHECK_EQ(uaio_error(&other), EINPROGRESS);
	CHECK(write(q[1], "x", 1) == 1);
	CHECK_EQ(t_wait(&other, &err), 1);
	CHECK_EQ(c[0], 'x');
	/* Nothing was consumed by the cancelled reads. */
	CHECK(write(p[1], "y", 1) == 1);
	CHECK(read(p[0], c, 1) == 1 && c[0] == 'y');
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* Cancellation racing completion: whatever aio_cancel says must match
 * the final status, and each request ends exactly once. */
static void cancel_races_completion(void)
{
	enum { N = 200 };
	int p[2], err;
	char b[N];
	struct aiocb cbs[N];
	int canceled = 0, done = 0;

	CHECK(pipe(p) == 0);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(p[0], &b[i], 1, 0);
		CHECK_EQ(uaio_read(&cbs[i]), 0);
	}
	char data[N / 2];
	memset(data, 'z', sizeof(data));
	CHECK(write(p[1], data, sizeof(data)) == (ssize_t)sizeof(data));
	for (int i = N - 1; i >= 0; i--) {
		int r = uaio_cancel(p[0], &cbs[i]);
		CHECK(r == AIO_CANCELED || r == AIO_ALLDONE || r == AIO_NOTCANCELED);
		if (r == AIO_CANCELED)
			CHECK_EQ(uaio_error(&cbs[i]), ECANCELED);
	}
	for (int i = 0; i < N; i++) {
		ssize_t n = t_wait(&cbs[i], &err);
		if (err == ECANCELED) {
			CHECK_EQ(n, -1);
			canceled++;
		} else {
			CHECK_EQ(err, 0);
			CHECK_EQ(n, 1);
			done++;
		}
	}
	fprintf(stderr, "    %d read, %d cancelled\n", done, canceled);
	CHECK_EQ(done + canceled, N);
	/* Bytes read + bytes left = bytes written. */
	char rest[N];
	CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
	ssize_t left = read(p[0], rest, sizeof(rest));
	CHECK_EQ(done + (left > 0 ? left : 0), N / 2);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	t_watchdog(60);
	CHECK(sem_init(&notes, 0, 0) == 0);
	RUN(cancel_one);
	RUN(cancel_all_on_fd);
	RUN(cancel_races_completion);
	return T_EXIT_PASS;
}
