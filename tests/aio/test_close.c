/* SPDX-License-Identifier: MIT */
/*
 * close() with requests in flight: they finish as if the descriptor were
 * still open (POSIX close()), on the file they were made for, and a new
 * file that gets the same descriptor number is not touched by them.
 */
#include "aio/aio_util.h"

static void pipe_reused_number(void)
{
	int p[2], q[2], err;
	char b[4] = { 0 }, c[4] = { 0 };

	CHECK(pipe(p) == 0);
	struct aiocb cb = t_cb(p[0], b, 1, 0), cb2 = t_cb(p[0], b + 1, 1, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(uaio_read(&cb2), 0);	/* waits in line behind cb */
	int num = p[0];
	close(p[0]);
	t_pipe_at(q, num);	/* the new pipe takes that number */
	CHECK(write(q[1], "Q", 1) == 1);
	CHECK(write(p[1], "PR", 2) == 2);
	CHECK_EQ(t_wait(&cb, &err), 1);
	CHECK_EQ(t_wait(&cb2, &err), 1);
	CHECK(b[0] == 'P' && b[1] == 'R');
	/* The new pipe's byte is still there for its reader. */
	CHECK(read(q[0], c, 1) == 1 && c[0] == 'Q');
	close(q[0]);
	close(q[1]);
	close(p[1]);
}

static void file_reused_number(void)
{
	enum { N = 32, SZ = 8192 };
	int a = t_tmpfile(), keep = dup(a), err;
	char *w = malloc(N * SZ), *r = malloc(N * SZ);
	struct aiocb cbs[N];

	t_fill(w, N * SZ, 21);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(a, w + i * SZ, SZ, (off_t)i * SZ);
		CHECK_EQ(uaio_write(&cbs[i]), 0);
	}
	int num = a;
	close(a);
	int b = t_tmpfile();
	if (b != num) {
		CHECK(dup2(b, num) == num);
		close(b);
		b = num;
	}
	CHECK(pwrite(b, "B-file", 6, 0) == 6);
	for (int i = 0; i < N; i++) {
		ssize_t n = t_wait(&cbs[i], &err);
		CHECK(n == SZ || (n == -1 && err == EBADF));
	}
	/* B holds only its own six bytes. */
	struct stat st;
	CHECK(fstat(b, &st) == 0);
	CHECK_EQ(st.st_size, 6);
	CHECK(pread(b, r, 6, 0) == 6 && !memcmp(r, "B-file", 6));
	/* A got what was written to it. */
	CHECK(pread(keep, r, N * SZ, 0) == N * SZ);
	CHECK(!memcmp(r, w, N * SZ));
	close(b);
	close(keep);
	free(w);
	free(r);
}

int main(void)
{
	t_watchdog(60);
	RUN(pipe_reused_number);
	RUN(file_reused_number);
	return T_EXIT_PASS;
}
