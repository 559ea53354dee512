/* SPDX-License-Identifier: MIT */
/*
 * fork(): the child builds and runs its own loop (and may free its copy
 * of the parent's), while the parent's loop, with an op in flight, keeps
 * working. A child that calls on the parent's loop gets -ECHILD, and the
 * parent's loop is untouched (its ring, epoll set and eventfd are shared).
 */
#include <fcntl.h>
#include <sys/wait.h>
#include <uaio/loop.h>

#include "test.h"

static int res = 1, calls;

static void on_op(uaio_op *op, int r, void *data)
{
	res = r;
	calls++;
}

/* A loop with a read of a pipe in flight, forked: in_child runs in the
 * child (which frees its copy of the loop and exits 0 if it returns);
 * then the parent's read takes the parent's bytes, its one callback. */
static void fork_around_read(void (*in_child)(uaio_loop *parent, const int p[2]))
{
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
		in_child(parent, p);
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

/* The child builds and runs a loop of its own. */
static void own_loop(uaio_loop *parent, const int p[2])
{
	uaio_loop *mine = t_loop_new(0);
	uaio_op nop = { 0 }, r2 = { 0 };
	int q[2];
	char c;

	(void)parent;
	(void)p;
	CHECK_OK(uaio_op_nop(mine, &nop, on_op, NULL));
	CHECK(pipe(q) == 0);
	CHECK(write(q[1], "k", 1) == 1);
	CHECK_OK(uaio_op_read(mine, &r2, q[0], &c, 1, -1, on_op, NULL));
	CHECK_EQ(uaio_loop_run(mine), 0);
	CHECK_EQ(calls, 2);
	CHECK_EQ(c, 'k');
	uaio_loop_free(mine);
}

static void child_loop(void)
{
	fork_around_read(own_loop);
}

static int on_watch(uaio_watch *w)
{
	(void)w;
	calls += 100;
	return 0;
}

static void on_timer(uaio_timer *t)
{
	(void)t;
	calls += 10000;
}

static void on_post(void *data)
{
	(void)data;
	calls += 1000;
}

/* The child calls on the parent's loop: -ECHILD, nothing reaches it. */
static void calls_parents(uaio_loop *parent, const int p[2])
{
	static const struct uaio_handler h = { .handle_input = on_watch };
	uaio_op nop = { 0 }, rd2 = { 0 };
	uaio_watch w = { 0 };
	uaio_timer t;
	char c;
	int q[2];

	uaio_timer_init(&t, on_timer, NULL);
	CHECK(pipe(q) == 0 && write(q[1], "c", 1) == 1);
	CHECK_EQ(uaio_op_nop(parent, &nop, on_op, NULL), -ECHILD);
	CHECK_EQ(uaio_op_read(parent, &rd2, p[0], &c, 1, -1, on_op, NULL), -ECHILD);
	CHECK_EQ(uaio_watch_start(parent, &w, q[0], UAIO_READABLE, &h, NULL), -ECHILD);
	CHECK_EQ(uaio_file_pin(parent, q[0]), -ECHILD);
	CHECK_EQ(uaio_loop_post(parent, on_post, NULL), -ECHILD);
	CHECK_EQ(uaio_loop_run_once(parent, 0), -ECHILD);
	CHECK_EQ(uaio_loop_run(parent), -ECHILD);
	CHECK_EQ(uaio_loop_fd(parent), -ECHILD);	/* not the parent's ring or epoll set */
	CHECK_EQ(uaio_loop_timeout(parent), -ECHILD);
	uaio_loop_lock(parent);		/* nothing: a parent's thread may hold it */
	uaio_loop_unlock(parent);
	CHECK_EQ(uaio_timer_start(parent, &t, 0, 0), -ECHILD);
	CHECK_EQ(uaio_timer_stop(parent, &t), -ECHILD);
	CHECK_EQ(calls, 0);
}

static void parents_loop_refused(void)
{
	fork_around_read(calls_parents);
}

/* uaio_loop_free in the parent while a child still holds the ring's
 * descriptor (forked, not yet exec'd or exited): the ops in flight are
 * cancelled then and there, not when the last copy closes, so a read
 * never writes into the buffer the parent frees next. */
static void freed_while_child_holds(unsigned flags)
{
	uaio_loop *l = t_loop_new(flags);
	uaio_op rd = { 0 };
	char b[8], got[8];
	int p[2], sync[2], st;

	calls = 0;
	memset(b, 'A', sizeof(b));
	CHECK(pipe(p) == 0 && pipe(sync) == 0);
	CHECK_OK(uaio_op_read(l, &rd, p[0], b, sizeof(b), -1, on_op, NULL));
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		char c;

		close(sync[1]);
		(void)!read(sync[0], &c, 1);	/* until the parent is done */
		_exit(0);
	}
	close(sync[0]);
	uaio_loop_free(l);
	CHECK(write(p[1], "parent", 6) == 6);
	/* the bytes stay in the pipe, the buffer untouched, no callback */
	CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
	CHECK_EQ(read(p[0], got, sizeof(got)), 6);
	CHECK(!memcmp(got, "parent", 6));
	for (size_t i = 0; i < sizeof(b); i++)
		CHECK_EQ(b[i], 'A');
	CHECK_EQ(calls, 0);
	close(sync[1]);
	CHECK(waitpid(kid, &st, 0) == kid);
	close(p[0]);
	close(p[1]);
}

static void freed_while_child_holds_plain(void)
{
	freed_while_child_holds(0);
}

static void freed_while_child_holds_threadsafe(void)
{
	freed_while_child_holds(UAIO_LOOP_THREADSAFE);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_fork");
	RUN(child_loop);
	RUN(parents_loop_refused);
	RUN(freed_while_child_holds_plain);
	RUN(freed_while_child_holds_threadsafe);
	return T_EXIT_PASS;
}
