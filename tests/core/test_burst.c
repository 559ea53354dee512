/* SPDX-License-Identifier: MIT */
/*
 * A burst of 100 000 operations submitted at once (far more than the
 * completion queue holds): every one completes exactly once with the
 * right result, none is lost.
 */
#include <stdlib.h>
#include <uaio/loop.h>

#include "test.h"

enum { N = 100000 };

static int *calls, bad;
static char *buf;

static void on_nop(uaio_op *op, int res, void *data)
{
	calls[(intptr_t)data]++;
	bad += res != 0;
}

static void on_read(uaio_op *op, int res, void *data)
{
	intptr_t i = (intptr_t)data;

	calls[i]++;
	bad += res != 8 || buf[i * 8] != (char)(i & 0x7f);
}

static void burst(void (*cb)(uaio_op *, int, void *), int fd)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op *ops = calloc(N, sizeof(*ops));

	CHECK(ops);
	memset(calls, 0, N * sizeof(*calls));
	bad = 0;
	for (intptr_t i = 0; i < N; i++) {
		if (fd < 0)
			CHECK_OK(uaio_op_nop(l, &ops[i], cb, (void *)i));
		else
			CHECK_OK(uaio_op_read(l, &ops[i], fd, buf + i * 8, 8, i * 8, cb, (void *)i));
	}
	CHECK_EQ(uaio_loop_inflight(l), N);
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	CHECK_EQ(bad, 0);
	for (int i = 0; i < N; i++)
		CHECK_EQ(calls[i], 1);
	free(ops);
	uaio_loop_free(l);
}

static void nops(void)
{
	burst(on_nop, -1);
}

static void reads(void)
{
	char path[] = "/tmp/uaio-burst-XXXXXX", *w = malloc(N * 8);
	int fd = mkstemp(path);

	CHECK(fd >= 0 && w);
	unlink(path);
	for (int i = 0; i < N; i++)
		memset(w + i * 8, i & 0x7f, 8);
	CHECK(pwrite(fd, w, N * 8, 0) == N * 8);
	burst(on_read, fd);
	free(w);
	close(fd);
}

int main(void)
{
	t_watchdog(120);
	t_banner("test_burst");
	calls = calloc(N, sizeof(*calls));
	buf = calloc(N, 8);
	RUN(nops);
	RUN(reads);
	free(calls);
	free(buf);
	return T_EXIT_PASS;
}
