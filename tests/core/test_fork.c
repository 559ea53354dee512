/* SPDX-License-Identifier: MIT */
/*
 * fork(): the child builds and runs its own loop (and may free its copy
 * of the parent's), while the parent's loop, with an op in flight, keeps
 * working. A child that calls on the parent's loop gets -ECHILD, and the
 * parent's loop is untouched (its ring, epoll set and eventfd are shared).
 */
#include <sys/wait.h>
#include <uaio/loop.h>

#include "test.h"

static int res = 1, calls;

static void on_op(uaio_op *op, int r, void *data)
{
	res = r;
	calls++;
}

static void child_loop(void)
{
	uaio_loop *parent = t_loop_new(0);
	uaio_op rd = { 0 };
	char b[8];
	int p[2], st;

	CHECK(pipe(p) == 0);
	CHECK_OK(uaio_op_read(parent, &rd, p[0], b, sizeof(b), -1, on_op, NULL));
	CHECK(uaio_loop_run_once(parent, 0) >= 0);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		uaio_loop *mine = t_loop_new(0);
		uaio_op nop = { 0 }, r2 = { 0 };
		int q[2];
		char c;

		calls = 0;
		CHECK_OK(uaio_op_nop(mine, &nop, on_op, NULL));
		CHECK(pipe(q) == 0);
		CHECK(write(q[1], "k", 1) == 1);
		CHECK_OK(uaio_op_read(mine, &r2, q[0], &c, 1, -1, on_op, NULL));
		CHECK_EQ(uaio_loop_run(mine), 0);
		CHECK_EQ(calls, 2);
		CHECK_EQ(c, 'k');
		uaio_loop_free(mine);
		uaio_loop_free(parent);	/* the child's copy: memory only */
		_exit(0);
	}
	CHECK(waitpid(kid, &st, 0) == kid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(calls, 0);
	CHECK(write(p[1], "parent", 6) == 6);
	CHECK_EQ(uaio_loop_run(parent), 0);
	CHECK_EQ(calls, 1);
	CHECK_EQ(res, 6);
	CHECK(!memcmp(b, "parent", 6));
	close(p[0]);
	close(p[1]);
	uaio_loop_free(parent);
}

static int on_watch(uaio_watch *w)
{
	(void)w;
	calls += 100;
	return 0;
}

static void on_post(void *data)
{
	(void)data;
	calls += 1000;
}

static void parents_loop_refused(void)
{
	static const struct uaio_handler h = { .handle_input = on_watch };
	uaio_loop *parent = t_loop_new(0);
	uaio_op rd = { 0 };
	char b[8];
	int p[2], st;

	calls = 0;
	res = 1;
	CHECK(pipe(p) == 0);
	CHECK_OK(uaio_op_read(parent, &rd, p[0], b, sizeof(b), -1, on_op, NULL));
	CHECK(uaio_loop_run_once(parent, 0) >= 0);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		uaio_op nop = { 0 }, rd2 = { 0 };
		uaio_watch w = { 0 };
		char c;
		int q[2];

		CHECK(pipe(q) == 0 && write(q[1], "c", 1) == 1);
		CHECK_EQ(uaio_op_nop(parent, &nop, on_op, NULL), -ECHILD);
		CHECK_EQ(uaio_op_read(parent, &rd2, p[0], &c, 1, -1, on_op, NULL), -ECHILD);
		CHECK_EQ(uaio_watch_start(parent, &w, q[0], UAIO_READABLE, &h, NULL), -ECHILD);
		CHECK_EQ(uaio_file_pin(parent, q[0]), -ECHILD);
		CHECK_EQ(uaio_loop_post(parent, on_post, NULL), -ECHILD);
		CHECK_EQ(uaio_loop_run_once(parent, 0), -ECHILD);
		CHECK_EQ(uaio_loop_run(parent), -ECHILD);
		CHECK_EQ(calls, 0);
		uaio_loop_free(parent);	/* the child's copy: memory only */
		_exit(0);
	}
	CHECK(waitpid(kid, &st, 0) == kid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* the parent's read alone, with the parent's bytes */
	CHECK(write(p[1], "parent", 6) == 6);
	CHECK_EQ(uaio_loop_run(parent), 0);
	CHECK_EQ(calls, 1);
	CHECK_EQ(res, 6);
	CHECK(!memcmp(b, "parent", 6));
	close(p[0]);
	close(p[1]);
	uaio_loop_free(parent);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_fork");
	RUN(child_loop);
	RUN(parents_loop_refused);
	return T_EXIT_PASS;
}
