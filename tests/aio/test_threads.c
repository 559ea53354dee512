/* SPDX-License-Identifier: MIT */
/*
 * Many threads at once: each submits writes and reads of its own region
 * of one file, waits with aio_suspend and reaps with aio_return, while
 * others wait on requests they did not submit; a thread that submits and
 * exits at once does not take its requests with it (io_uring would
 * cancel them if that thread had issued them).
 */
#include "aio/aio_util.h"
#include <pthread.h>

enum { T = 8, PER = 400, SZ = 4096 };

static int file_fd;
static char *expect;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg, err;
	struct aiocb *cbs = calloc(PER, sizeof(*cbs));
	char *rb = malloc((size_t)PER * SZ);

	for (int i = 0; i < PER; i++) {
		off_t off = ((off_t)id * PER + i) * SZ;
		cbs[i] = t_cb(file_fd, expect + off, SZ, off);
		CHECK_EQ(uaio_write(&cbs[i]), 0);
	}
	/* Wait for any of them, many times over, then reap all. */
	for (int done = 0; done < PER;) {
		const struct aiocb *l[PER];
		int n = 0;
		for (int i = 0; i < PER; i++)
			if (uaio_error(&cbs[i]) == EINPROGRESS)
				l[n++] = &cbs[i];
		if (n && uaio_suspend(l, n, NULL) < 0)
			CHECK(errno == EINTR);
		done = PER - n;
	}
	for (int i = 0; i < PER; i++) {
		CHECK_EQ(uaio_error(&cbs[i]), 0);
		CHECK_EQ(uaio_return(&cbs[i]), SZ);
	}
	for (int i = 0; i < PER; i++) {
		off_t off = ((off_t)id * PER + i) * SZ;
		cbs[i] = t_cb(file_fd, rb + (size_t)i * SZ, SZ, off);
		CHECK_EQ(uaio_read(&cbs[i]), 0);
	}
	for (int i = 0; i < PER; i++) {
		CHECK_EQ(t_wait(&cbs[i], &err), SZ);
		CHECK(!memcmp(rb + (size_t)i * SZ, expect + ((size_t)id * PER + i) * SZ, SZ));
	}
	free(cbs);
	free(rb);
	return NULL;
}

static void many_threads(void)
{
	pthread_t t[T];
	size_t total = (size_t)T * PER * SZ;
	char *r = malloc(total);

	file_fd = t_tmpfile();
	expect = malloc(total);
	t_fill(expect, total, 11);
	for (int i = 0; i < T; i++)
		CHECK(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < T; i++)
		pthread_join(t[i], NULL);
	CHECK(pread(file_fd, r, total, 0) == (ssize_t)total);
	CHECK(!memcmp(r, expect, total));
	close(file_fd);
	free(expect);
	free(r);
}

/* ---- requests outlive the thread that made them ---- */

static struct aiocb orphan_cb[3];
static char orphan_buf[3][8];
static int orphan_pipe[2], orphan_file;

static void *submit_and_exit(void *arg)
{
	orphan_cb[0] = t_cb(orphan_pipe[0], orphan_buf[0], 5, 0);
	CHECK_EQ(uaio_read(&orphan_cb[0]), 0);
	orphan_cb[1] = t_cb(orphan_file, "orphans!", 8, 4096);
	CHECK_EQ(uaio_write(&orphan_cb[1]), 0);
	orphan_cb[2] = t_cb(orphan_file, NULL, 0, 0);
	CHECK_EQ(uaio_fsync(O_SYNC, &orphan_cb[2]), 0);
	return arg;
}

static void thread_exit(void)
{
	pthread_t t;
	int err;
	char b[8];

	CHECK(pipe(orphan_pipe) == 0);
	orphan_file = t_tmpfile();
	CHECK(pthread_create(&t, NULL, submit_and_exit, NULL) == 0);
	pthread_join(t, NULL);
	/* The submitter is gone; the pipe read must still be waiting. */
	CHECK_EQ(uaio_error(&orphan_cb[0]), EINPROGRESS);
	CHECK(write(orphan_pipe[1], "alive", 5) == 5);
	CHECK_EQ(t_wait(&orphan_cb[0], &err), 5);
	CHECK_EQ(err, 0);
	CHECK(!memcmp(orphan_buf[0], "alive", 5));
	CHECK_EQ(t_wait(&orphan_cb[1], &err), 8);
	CHECK_EQ(t_wait(&orphan_cb[2], &err), 0);
	CHECK(pread(orphan_file, b, 8, 4096) == 8 && !memcmp(b, "orphans!", 8));
	close(orphan_pipe[0]);
	close(orphan_pipe[1]);
	close(orphan_file);
}

/* ---- reaping someone else's requests ---- */

static struct aiocb shared_cb[64];

static void *reaper(void *arg)
{
	int got = 0, err;

	for (int i = (int)(intptr_t)arg; i < 64; i += 2) {
		CHECK_EQ(t_wait(&shared_cb[i], &err), 1);
		got++;
	}
	return (void *)(intptr_t)got;
}

static void cross_thread_reap(void)
{
	int p[2];
	char b[64];
	pthread_t t[2];
	void *got[2];

	CHECK(pipe(p) == 0);
	for (int i = 0; i < 64; i++) {
		shared_cb[i] = t_cb(p[0], &b[i], 1, 0);
		CHECK_EQ(uaio_read(&shared_cb[i]), 0);
	}
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, reaper, (void *)(intptr_t)i) == 0);
	char data[64];
	for (int i = 0; i < 64; i++)
		data[i] = (char)i;
	CHECK(write(p[1], data, 64) == 64);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], &got[i]);
	CHECK_EQ((intptr_t)got[0] + (intptr_t)got[1], 64);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(b[i], (char)i);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	t_watchdog(180);
	RUN(many_threads);
	RUN(thread_exit);
	RUN(cross_thread_reap);
	return T_EXIT_PASS;
}
