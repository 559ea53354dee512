/* SPDX-License-Identifier: MIT */
/* Registered buffers (uaio_buf_register, read/write_fixed) on files and
 * pipes, their bounds, slot reuse; uaio_op_copy_file_range. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

struct res {
	int n, res;
};

static void on_done(uaio_op *op, int res, void *data)
{
	struct res *r = data;

	r->n++;
	r->res = res;
}

static int tmpfile_fd(void)
{
	char path[] = "/var/tmp/uaio-fixed-XXXXXX";
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	return fd;
}

static int run_op(uaio_loop *l, int ret, struct res *r)
{
	CHECK_OK(ret);
	T_RUN_UNTIL(l, r->n == 1, 1000);
	return r->res;
}

static void test_file(void)
{
	uaio_loop *l = t_loop_new(0);
	size_t sz = 1 << 20;
	char *buf = aligned_alloc(4096, sz), *back = malloc(sz);
	uaio_op op = { 0 };
	struct res r = { 0 };
	int fd = tmpfile_fd(), idx;

	for (size_t i = 0; i < sz; i++)
		buf[i] = (char)(i * 7 + 3);
	idx = uaio_buf_register(l, buf, sz);
	CHECK_OK(idx);
	/* Write the second half at offset 100, read it back through the
	 * first half of the same buffer. */
	CHECK_EQ(run_op(l, uaio_op_write_fixed(l, &op, fd, buf + sz / 2, sz / 2, 100, idx,
					       on_done, &r), &r), sz / 2);
	memset(buf, 0, sz / 2);
	r.n = 0;
	CHECK_EQ(run_op(l, uaio_op_read_fixed(l, &op, fd, buf, sz / 2, 100, idx,
					      on_done, &r), &r), sz / 2);
	CHECK(memcmp(buf, buf + sz / 2, sz / 2) == 0);
	CHECK_EQ(pread(fd, back, 10, 100), 10);
	CHECK(memcmp(back, buf + sz / 2, 10) == 0);
	/* Out of the buffer, or not a registered one. */
	CHECK_EQ(uaio_op_read_fixed(l, &op, fd, buf + 1, sz, 0, idx, on_done, &r), -EFAULT);
	CHECK_EQ(uaio_op_read_fixed(l, &op, fd, back, 10, 0, idx, on_done, &r), -EFAULT);
	CHECK_EQ(uaio_op_read_fixed(l, &op, fd, buf, 10, 0, idx + 1, on_done, &r), -EFAULT);
	CHECK_EQ(uaio_op_read_fixed(l, &op, fd, buf, 10, 0, -1, on_done, &r), -EFAULT);
	CHECK_OK(uaio_buf_unregister(l, idx));
	CHECK_EQ(uaio_buf_unregister(l, idx), -ENOENT);
	CHECK_EQ(uaio_op_read_fixed(l, &op, fd, buf, 10, 0, idx, on_done, &r), -EFAULT);
	/* The slot is free again. */
	CHECK_EQ(uaio_buf_register(l, back, sz), idx);
	CHECK_EQ(uaio_buf_register(l, NULL, 1), -EFAULT);
	CHECK_EQ(uaio_buf_register(l, back, 0), -EINVAL);
	CHECK_EQ(uaio_buf_register(l, back, (size_t)2 << 30), -EOVERFLOW);
	uaio_loop_free(l);
	close(fd);
	free(buf);
	free(back);
}

static void test_pipe(void)
{
	uaio_loop *l = t_loop_new(0);
	char buf[4096];
	uaio_op op = { 0 };
	struct res r = { 0 };
	int p[2], idx;

	CHECK(pipe(p) == 0);
	idx = uaio_buf_register(l, buf, sizeof(buf));
	CHECK_OK(idx);
	memcpy(buf, "hello, pipe", 11);
	CHECK_EQ(run_op(l, uaio_op_write_fixed(l, &op, p[1], buf, 11, -1, idx,
					       on_done, &r), &r), 11);
	memset(buf, 0, sizeof(buf));
	r.n = 0;
	/* A stream read waits for data. */
	CHECK_OK(uaio_op_read_fixed(l, &op, p[0], buf + 100, 50, -1, idx, on_done, &r));
	T_RUN_UNTIL(l, r.n == 1, 1000);
	CHECK_EQ(r.res, 11);
	CHECK(memcmp(buf + 100, "hello, pipe", 11) == 0);
	r.n = 0;
	CHECK_OK(uaio_op_read_fixed(l, &op, p[0], buf, 50, -1, idx, on_done, &r));
	CHECK_EQ(uaio_loop_run_once(l, 0) >= 0, 1);
	CHECK_EQ(r.n, 0);
	close(p[1]);
	T_RUN_UNTIL(l, r.n == 1, 1000);
	CHECK_EQ(r.res, 0);			/* EOF */
	uaio_loop_free(l);
	close(p[0]);
}

static void test_many_slots(void)
{
	uaio_loop *l = t_loop_new(0);
	static char page[64][256];
	int idx[64];

	for (int i = 0; i < 64; i++) {
		idx[i] = uaio_buf_register(l, page[i], sizeof(page[i]));
		CHECK_OK(idx[i]);
		for (int j = 0; j < i; j++)
			CHECK(idx[i] != idx[j]);
	}
	for (int i = 0; i < 64; i += 2)
		CHECK_OK(uaio_buf_unregister(l, idx[i]));
	uaio_loop_free(l);	/* with slots still registered */
}

static void test_copy_range(void)
{
	uaio_loop *l = t_loop_new(0);
	int a = tmpfile_fd(), b = tmpfile_fd();
	size_t sz = 3 << 20;
	char *x = malloc(sz), *y = malloc(sz);
	uaio_op op = { 0 };
	struct res r = { 0 };

	for (size_t i = 0; i < sz; i++)
		x[i] = (char)(i ^ (i >> 9));
	CHECK_EQ(pwrite(a, x, sz, 0), (ssize_t)sz);
	CHECK_EQ(run_op(l, uaio_op_copy_file_range(l, &op, a, 4096, b, 0, sz, on_done, &r),
			&r), sz - 4096);
	CHECK_EQ(pread(b, y, sz, 0), (ssize_t)(sz - 4096));
	CHECK(memcmp(x + 4096, y, sz - 4096) == 0);
	r.n = 0;
	CHECK_EQ(run_op(l, uaio_op_copy_file_range(l, &op, a, (int64_t)sz, b, 0, 10, on_done,
						   &r), &r), 0);
	r.n = 0;
	CHECK_EQ(run_op(l, uaio_op_copy_file_range(l, &op, a, 0, 12345, 0, 10, on_done, &r),
			&r), -EBADF);
	CHECK_EQ(uaio_op_copy_file_range(l, &op, -1, 0, b, 0, 10, on_done, &r), -EBADF);
	uaio_loop_free(l);
	close(a);
	close(b);
	free(x);
	free(y);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_fixed");
	RUN(test_file);
	RUN(test_pipe);
	RUN(test_many_slots);
	RUN(test_copy_range);
	return T_EXIT_PASS;
}
