/* SPDX-License-Identifier: MIT */
/*
 * A server's shutdown: a read in flight on each of twice as many pipes as
 * the ring's completion budget (3968 by default), then uaio_op_close of
 * every read end. Every close completes and every read ends with
 * -ECANCELED, on both backends; the descriptors are all gone after. On
 * io_uring the closes of reads that had waited for room queued behind the
 * last of those reads, which waited for room only their cancels would
 * free: they never completed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <uaio/loop.h>

#include "test.h"

enum { N = 8000 };

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int main(void)
{
	uaio_loop *l;
	uaio_op *rd = calloc(N, sizeof(*rd)), *cl = calloc(N, sizeof(*cl));
	struct t_rec *r = calloc(N, sizeof(*r)), *rc = calloc(N, sizeof(*rc));
	int (*p)[2] = calloc(N, sizeof(*p)), fds0;
	char (*buf)[4] = calloc(N, sizeof(*buf));

	t_watchdog(60);
	CHECK(rd && cl && r && rc && p && buf);
	if (t_raise_nofile(2 * N + 64) < 2 * N + 64)
		SKIP("RLIMIT_NOFILE's hard limit is below 2 descriptors per pipe");
	t_banner("test_close_all_busy");
	fds0 = count_fds();
	l = t_loop_new(0);
	for (int i = 0; i < N; i++) {
		CHECK(pipe2(p[i], O_CLOEXEC) == 0);
		CHECK_OK(uaio_op_read(l, &rd[i], p[i][0], buf[i], sizeof(buf[i]), -1, t_rec_op, &r[i]));
	}
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	for (int i = 0; i < N; i++)
		CHECK_OK(uaio_op_close(l, &cl[i], p[i][0], t_rec_op, &rc[i]));
	CHECK_EQ(uaio_loop_run(l), 0);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(rc[i].calls, 1);
		CHECK_EQ(rc[i].res, 0);
		CHECK_EQ(r[i].calls, 1);
		CHECK_EQ(r[i].res, -ECANCELED);
		CHECK(fcntl(p[i][0], F_GETFD) == -1);
		close(p[i][1]);
	}
	uaio_loop_free(l);
	CHECK_EQ(count_fds(), fds0);
	free(rd);
	free(cl);
	free(r);
	free(rc);
	free(p);
	free(buf);
	return T_EXIT_PASS;
}
