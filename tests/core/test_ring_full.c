/* SPDX-License-Identifier: MIT */
/*
 * More idle ops than the ring's completion budget (a server's reads on
 * idle connections): a timeout still fires on time, on both backends (on
 * io_uring past about 3 968 ops in flight it never fired), and a close
 * of a busy pipe completes while reads still wait for room (it waited
 * behind them for ever). Once the reads that waited for room are in, a
 * close of a busy pipe cancels its read, and a nop completes; every read
 * then ends as its writer closes.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <uaio/loop.h>

#include "test.h"

enum { N = 4200 };

int main(void)
{
	struct rlimit rl;
	uaio_loop *l;
	uaio_op *rd = calloc(N, sizeof(*rd)), tmo = { 0 }, nop = { 0 }, cl = { 0 }, cl1 = { 0 };
	struct t_rec *r = calloc(N, sizeof(*r)), rt = { 0 }, rn = { 0 }, rcl = { 0 }, rcl1 = { 0 };
	int (*p)[2] = calloc(N, sizeof(*p));
	char (*buf)[4] = calloc(N, sizeof(*buf));

	t_watchdog(60);
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 2 * N + 64)
		SKIP("RLIMIT_NOFILE's hard limit is below 2 descriptors per pipe");
	rl.rlim_cur = 2 * N + 64;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	t_banner("test_ring_full");
	l = t_loop_new(0);
	for (int i = 0; i < N; i++) {
		CHECK(pipe2(p[i], O_CLOEXEC) == 0);
		CHECK_OK(uaio_op_read(l, &rd[i], p[i][0], buf[i], sizeof(buf[i]), -1, t_rec_op, &r[i]));
	}
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK_OK(uaio_op_timeout(l, &tmo, 10000000ull, t_rec_op, &rt));
	while (!rt.calls)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(rt.res, -ETIME);
	/* reads still wait for room (io_uring): the close goes ahead */
	CHECK_OK(uaio_op_close(l, &cl1, p[1][0], t_rec_op, &rcl1));
	while (!rcl1.calls || !r[1].calls)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(rcl1.res, 0);
	CHECK_EQ(r[1].res, -ECANCELED);
	close(p[1][1]);
	/* the last 400 end (their writers close): the waiting reads go in */
	for (int i = N - 400; i < N; i++)
		close(p[i][1]);
	for (int i = N - 400; i < N; i++)
		while (!r[i].calls)
			CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_OK(uaio_op_nop(l, &nop, t_rec_op, &rn));
	CHECK_OK(uaio_op_close(l, &cl, p[0][0], t_rec_op, &rcl));
	while (!rn.calls || !rcl.calls)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(rn.res, 0);
	CHECK_EQ(rcl.res, 0);
	while (!r[0].calls)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(r[0].res, -ECANCELED);
	/* the rest end as their pipes' writers close, those that waited
	 * for room (io_uring) as the first make it */
	close(p[0][1]);
	for (int i = 2; i < N - 400; i++)
		close(p[i][1]);
	CHECK_EQ(uaio_loop_run(l), 0);
	for (int i = 2; i < N; i++)
		CHECK_EQ(r[i].res, 0);
	for (int i = 2; i < N; i++)
		close(p[i][0]);
	uaio_loop_free(l);
	free(rd);
	free(r);
	free(p);
	free(buf);
	return T_EXIT_PASS;
}
