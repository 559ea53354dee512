/* SPDX-License-Identifier: MIT */
/*
 * Proactor read/write family on files and pipes: read, write, readv,
 * writev, explicit offsets and off = -1 (file position), EOF, many
 * submissions then one run, pending reads on an empty pipe, poll and
 * timeout ops.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

struct res {
	int n;		/* callbacks */
	int res;
	void *data;
};

static void rec(uaio_op *op, int res, void *data)
{
	struct res *r = data;

	r->n++;
	r->res = res;
}

static int tmpfile_fd(void)
{
	char path[] = "/tmp/uaio-rw-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	return fd;
}

static void test_write_read_offsets(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op = { 0 };
	struct res r = { 0 };
	char buf[32] = { 0 };
	int fd = tmpfile_fd();

	CHECK_OK(uaio_op_write(l, &op, fd, "hello world", 11, 0, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.n, 1);
	CHECK_EQ(r.res, 11);
	/* Explicit offsets leave the file position alone. */
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 0);

	r.n = 0;
	CHECK_OK(uaio_op_read(l, &op, fd, buf, 5, 6, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.n, 1);
	CHECK_EQ(r.res, 5);
	CHECK(!memcmp(buf, "world", 5));

	/* Short read at the end, 0 past it. */
	r.n = 0;
	memset(buf, 0, sizeof(buf));
	CHECK_OK(uaio_op_read(l, &op, fd, buf, sizeof(buf), 8, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 3);
	CHECK(!memcmp(buf, "rld", 3));
	CHECK_OK(uaio_op_read(l, &op, fd, buf, sizeof(buf), 4096, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 0);
	CHECK_EQ(r.n, 2);

	/* Overwrite in the middle. */
	CHECK_OK(uaio_op_write(l, &op, fd, "W", 1, 6, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 1);
	CHECK_EQ(pread(fd, buf, 11, 0), 11);
	CHECK(!memcmp(buf, "hello World", 11));
	close(fd);
	uaio_loop_free(l);
}

/* off = -1: the file position is used and advanced. */
static void test_file_position(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op = { 0 };
	struct res r = { 0 };
	char buf[16] = { 0 };
	int fd = tmpfile_fd();

	CHECK_OK(uaio_op_write(l, &op, fd, "abc", 3, -1, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 3);
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 3);
	CHECK_OK(uaio_op_write(l, &op, fd, "def", 3, -1, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 3);
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 6);
	CHECK_EQ(pread(fd, buf, 16, 0), 6);
	CHECK(!memcmp(buf, "abcdef", 6));

	CHECK_EQ(lseek(fd, 2, SEEK_SET), 2);
	memset(buf, 0, sizeof(buf));
	CHECK_OK(uaio_op_read(l, &op, fd, buf, 2, -1, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 2);
	CHECK(!memcmp(buf, "cd", 2));
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 4);

	struct iovec iov[2] = { { buf, 1 }, { buf + 8, 4 } };
	CHECK_OK(uaio_op_readv(l, &op, fd, iov, 2, -1, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 2);
	CHECK_EQ(buf[0], 'e');
	CHECK_EQ(buf[8], 'f');
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 6);
	CHECK_EQ(r.n, 4);
	close(fd);
	uaio_loop_free(l);
}

/* A read at the file position of a file whose head alone is cached
 * (/var/tmp: a disk, not tmpfs): all of it, as read(2), on both backends
 * (epoll's non-blocking try moved the cached part and answered that,
 * short of EOF), its bytes in order, the position past them; a readv
 * whose part ends inside its second buffer too. */
static void test_position_part_cached(void)
{
	enum { SZ = 8 << 20 };
	char path[] = "/var/tmp/uaio-rw-XXXXXX";
	uaio_loop *l = t_loop_new(0);
	uaio_op op = { 0 };
	struct res r = { 0 };
	unsigned char *src = malloc(SZ), *dst = malloc(SZ);
	int fd = mkstemp(path);

	CHECK(fd >= 0 && src && dst);
	unlink(path);
	for (size_t i = 0; i < SZ; i++)
		src[i] = (unsigned char)(i * 7 + i / 4096);
	CHECK_EQ(write(fd, src, SZ), SZ);
	CHECK_EQ(fsync(fd), 0);
	for (int v = 0; v < 2; v++) {
		struct iovec iov[3] = { { dst, 5000 }, { dst + 5000, 3 << 20 },
					{ dst + 5000 + (3 << 20), SZ - 5000 - (3 << 20) } };

		memset(dst, 0, SZ);
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		CHECK_EQ(pread(fd, dst, 100, 8192), 100);	/* its head cached */
		CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
		if (v)
			CHECK_OK(uaio_op_readv(l, &op, fd, iov, 3, -1, rec, &r));
		else
			CHECK_OK(uaio_op_read(l, &op, fd, dst, SZ, -1, rec, &r));
		CHECK_EQ(uaio_loop_run(l), 0);
		CHECK_EQ(r.res, SZ);
		CHECK(!memcmp(src, dst, SZ));
		CHECK_EQ(lseek(fd, 0, SEEK_CUR), SZ);
	}
	free(src);
	free(dst);
	close(fd);
	uaio_loop_free(l);
}

static void test_vectored(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op = { 0 };
	struct res r = { 0 };
	int fd = tmpfile_fd();
	char a[] = "one-", b[] = "two-", c[] = "three";
	struct iovec wv[3] = { { a, 4 }, { b, 4 }, { c, 5 } };
	char x[6] = { 0 }, y[7] = { 0 };
	struct iovec rv[2] = { { x, 5 }, { y, 6 } };

	CHECK_OK(uaio_op_writev(l, &op, fd, wv, 3, 100, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 13);
	char all[14] = { 0 };
	CHECK_EQ(pread(fd, all, 13, 100), 13);
	CHECK(!strcmp(all, "one-two-three"));
	/* The hole before offset 100 reads as zeros. */
	CHECK_EQ(pread(fd, all, 1, 50), 1);
	CHECK_EQ(all[0], 0);

	CHECK_OK(uaio_op_readv(l, &op, fd, rv, 2, 102, rec, &r));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, 11);
	CHECK(!strcmp(x, "e-two"));
	CHECK(!strcmp(y, "-three"));
	CHECK_EQ(r.n, 2);
	close(fd);
	uaio_loop_free(l);
}

/* 64 reads of distinct blocks submitted together, one run. */
#define NBLK 64
#define BLK 4096
static int blk_ok[NBLK], blk_calls[NBLK];
static unsigned char (*blk_buf)[BLK];

static void blk_cb(uaio_op *op, int res, void *data)
{
	int i = (int)(intptr_t)data;

	blk_calls[i]++;
	if (res != BLK)
		return;
	for (int j = 0; j < BLK; j++)
		if (blk_buf[i][j] != (unsigned char)(i * 7 + j))
			return;
	blk_ok[i] = 1;
}

static void test_many_then_run(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op ops[NBLK] = { { 0 } };
	unsigned char *src = malloc(NBLK * BLK);
	int fd = tmpfile_fd();

	blk_buf = calloc(NBLK, BLK);
	CHECK(src && blk_buf);
	for (int i = 0; i < NBLK; i++)
		for (int j = 0; j < BLK; j++)
			src[i * BLK + j] = (unsigned char)(i * 7 + j);
	CHECK_EQ(pwrite(fd, src, NBLK * BLK, 0), NBLK * BLK);
	/* Reverse order, so offsets and callbacks cannot line up by luck. */
	for (int i = NBLK - 1; i >= 0; i--)
		CHECK_OK(uaio_op_read(l, &ops[i], fd, blk_buf[i], BLK,
				      (int64_t)i * BLK, blk_cb, (void *)(intptr_t)i));
	CHECK_EQ(uaio_loop_inflight(l), NBLK);
	CHECK_EQ(uaio_loop_run(l), 0);
	for (int i = 0; i < NBLK; i++) {
		CHECK_EQ(blk_calls[i], 1);
		CHECK_EQ(blk_ok[i], 1);
	}
	CHECK_EQ(uaio_loop_inflight(l), 0);
	free(src);
	free(blk_buf);
	close(fd);
	uaio_loop_free(l);
}

/* A read on an empty pipe waits; data written later completes it. */
static void test_pipe(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op rd = { 0 }, wr = { 0 };
	struct res rr = { 0 }, wrr = { 0 };
	char buf[16] = { 0 };
	int p[2];

	CHECK(pipe(p) == 0);
	CHECK_OK(uaio_op_read(l, &rd, p[0], buf, sizeof(buf), -1, rec, &rr));
	for (int i = 0; i < 3; i++)
		CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	CHECK_EQ(rr.n, 0);
	CHECK_EQ(uaio_op_pending(&rd), 1);
	CHECK_EQ(uaio_loop_inflight(l), 1);
	CHECK_OK(uaio_op_write(l, &wr, p[1], "pipe!", 5, -1, rec, &wrr));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rr.n, 1);
	CHECK_EQ(rr.res, 5);
	CHECK(!memcmp(buf, "pipe!", 5));
	CHECK_EQ(wrr.n, 1);
	CHECK_EQ(wrr.res, 5);

	/* writev into the pipe, readv out of it. */
	struct iovec wv[2] = { { "ab", 2 }, { "cde", 3 } };
	char x[3] = { 0 }, y[3] = { 0 };
	struct iovec rv[2] = { { x, 2 }, { y, 3 } };
	CHECK_OK(uaio_op_readv(l, &rd, p[0], rv, 2, -1, rec, &rr));
	CHECK_OK(uaio_op_writev(l, &wr, p[1], wv, 2, -1, rec, &wrr));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(wrr.res, 5);
	CHECK_EQ(rr.res, 5);
	CHECK(!memcmp(x, "ab", 2) && !memcmp(y, "cde", 3));

	/* EOF once the writer is gone. */
	close(p[1]);
	CHECK_OK(uaio_op_read(l, &rd, p[0], buf, sizeof(buf), -1, rec, &rr));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rr.res, 0);
	CHECK_EQ(rr.n, 3);
	close(p[0]);
	uaio_loop_free(l);
}

/* A read of nothing on a stream whose read side epoll still watches (a
 * read waited there just before, and took all the data): read(2) answers
 * 0 at once, as io_uring does; the epoll backend waited for data that
 * never came (old code: hung). A pipe and a socket, read and readv (of
 * no vectors: one of 0 bytes waits there, its vectors not read at the
 * submission). */
static void test_read_nothing(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op rd = { 0 };
	struct res rr = { 0 };
	char buf[16];
	struct iovec none = { buf, 0 };
	int p[2];

	for (int kind = 0; kind < 2; kind++) {
		CHECK(kind ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0 : pipe(p) == 0);
		for (int vec = 0; vec < 2; vec++) {
			rr = (struct res){ 0 };
			CHECK_OK(uaio_op_read(l, &rd, p[0], buf, sizeof(buf), -1, rec, &rr));
			CHECK_EQ(uaio_loop_run_once(l, 0), 0);
			CHECK_EQ(write(p[1], "12345", 5), 5);
			CHECK_EQ(uaio_loop_run(l), 0);
			CHECK_EQ(rr.res, 5);
			if (vec)
				CHECK_OK(uaio_op_readv(l, &rd, p[0], &none, 0, -1, rec, &rr));
			else
				CHECK_OK(uaio_op_read(l, &rd, p[0], buf, 0, -1, rec, &rr));
			CHECK_EQ(uaio_loop_run(l), 0);
			CHECK_EQ(rr.n, 2);
			CHECK_EQ(rr.res, 0);
		}
		close(p[0]);
		close(p[1]);
	}
	uaio_loop_free(l);
}

/* A full pipe, one page read out, a byte written into the freed slot:
 * every slot is in use, so poll says no room, yet the last page takes
 * another small write, as write(2) finds. The next byte is written at
 * once (epoll watched the write side still, and waited for an event no
 * reader would bring: old code hung). */
static void test_pipe_last_page(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op w0 = { 0 }, w1 = { 0 };
	struct res r0 = { 0 }, r1 = { 0 };
	char page[4096] = { 0 }, got[2];
	struct pollfd pfd;
	int p[2];

	CHECK(pipe2(p, O_NONBLOCK) == 0);
	while (write(p[1], page, sizeof(page)) == (ssize_t)sizeof(page))
		;
	CHECK(fcntl(p[1], F_SETFL, 0) == 0);
	CHECK_OK(uaio_op_write(l, &w0, p[1], "a", 1, -1, rec, &r0));
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	CHECK_EQ(r0.n, 0);	/* no room */
	CHECK_EQ(read(p[0], page, sizeof(page)), (ssize_t)sizeof(page));
	while (!r0.n)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(r0.res, 1);
	pfd = (struct pollfd){ .fd = p[1], .events = POLLOUT };
	CHECK_EQ(poll(&pfd, 1, 0), 0);	/* the premise: poll says no room */
	CHECK_OK(uaio_op_write(l, &w1, p[1], "b", 1, -1, rec, &r1));
	while (!r1.n)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(r1.res, 1);
	/* the bytes in order after the 15 pages left */
	for (int i = 0; i < 15; i++)
		CHECK_EQ(read(p[0], page, sizeof(page)), (ssize_t)sizeof(page));
	CHECK_EQ(read(p[0], got, 2), 2);
	CHECK(!memcmp(got, "ab", 2));
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

/* Several reads queued on one pipe are served in submission order. */
static char order_seen[8];
static int order_n;
static char order_buf[8];
static void order_cb(uaio_op *op, int res, void *data)
{
	CHECK_EQ(res, 1);
	order_seen[order_n++] = *(char *)data;
}

static void test_pipe_order(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op ops[8] = { { 0 } };
	int p[2];

	CHECK(pipe(p) == 0);
	for (int i = 0; i < 8; i++) {
		CHECK_OK(uaio_op_read(l, &ops[i], p[0], &order_buf[i], 1, -1,
				      order_cb, &order_buf[i]));
		/* One at a time into the kernel, so order is defined. */
		CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	}
	CHECK_EQ(write(p[1], "01234567", 8), 8);
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(order_n, 8);
	/* Every byte arrived exactly once, whatever the order. */
	int seen[8] = { 0 };
	for (int i = 0; i < 8; i++) {
		CHECK(order_seen[i] >= '0' && order_seen[i] <= '7');
		seen[order_seen[i] - '0']++;
	}
	for (int i = 0; i < 8; i++)
		CHECK_EQ(seen[i], 1);
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

static void test_poll_op(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op = { 0 }, op2 = { 0 };
	struct res r = { 0 }, r2 = { 0 };
	int p[2];

	CHECK(pipe(p) == 0);
	/* Writable at once. */
	CHECK_OK(uaio_op_poll(l, &op, p[1], POLLOUT, rec, &r));
	/* Readable only after a write. */
	CHECK_OK(uaio_op_poll(l, &op2, p[0], POLLIN, rec, &r2));
	T_RUN_UNTIL(l, r.n, 20);
	CHECK(r.res > 0 && (r.res & POLLOUT));
	for (int i = 0; i < 3; i++)
		CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK_EQ(r2.n, 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r2.n, 1);
	CHECK(r2.res & POLLIN);
	/* One-shot: the data is still there, nothing was consumed. */
	char c;
	CHECK_EQ(read(p[0], &c, 1), 1);
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

static void test_timeout_op(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op op = { 0 }, op2 = { 0 };
	struct res r = { 0 }, r2 = { 0 };

	/* Read before asking: io_uring starts the timer when the op is
	 * submitted, so a t0 read after that (late, on a loaded machine)
	 * could make a timeout that was on time look early. */
	uint64_t t0 = uaio_loop_now(l);

	CHECK_OK(uaio_op_timeout(l, &op, 1000000, rec, &r));
	CHECK_OK(uaio_op_timeout(l, &op2, 0, rec, &r2));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.n, 1);
	CHECK_EQ(r.res, -ETIME);
	CHECK_EQ(r2.n, 1);
	CHECK_EQ(r2.res, -ETIME);
	/* Never early. */
	CHECK(uaio_loop_now(l) >= t0 + 1000000);
	uaio_loop_free(l);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_proactor_rw");
	RUN(test_write_read_offsets);
	RUN(test_file_position);
	RUN(test_position_part_cached);
	RUN(test_vectored);
	RUN(test_many_then_run);
	RUN(test_pipe);
	RUN(test_pipe_order);
	RUN(test_read_nothing);
	RUN(test_pipe_last_page);
	RUN(test_poll_op);
	RUN(test_timeout_op);
	return T_EXIT_PASS;
}
