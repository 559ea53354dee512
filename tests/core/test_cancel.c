/* SPDX-License-Identifier: MIT */
/*
 * Cancellation: one op, every op on an fd, ops already done, and
 * cancellation racing completion; each op's callback runs exactly once.
 * A callback may free its own op.
 */
#include <stdlib.h>
#include <uaio/loop.h>

#include "test.h"

static void one_op(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op rd = { 0 }, can = { 0 }, can2 = { 0 };
	struct t_rec r = { 0 }, rc = { 0 }, rc2 = { 0 };
	char b[4];
	int p[2];

	CHECK(pipe(p) == 0);
	CHECK_OK(uaio_op_read(l, &rd, p[0], b, sizeof(b), -1, t_rec_op, &r));
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK_OK(uaio_op_cancel(l, &can, &rd, t_rec_op, &rc));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.calls, 1);
	CHECK_EQ(r.res, -ECANCELED);
	CHECK_EQ(rc.calls, 1);
	CHECK_EQ(rc.res, 0);
	/* Nothing in flight any more. */
	CHECK_OK(uaio_op_cancel(l, &can2, &rd, t_rec_op, &rc2));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rc2.res, -ENOENT);
	CHECK_EQ(r.calls, 1);
	/* Two cancels of one op in one batch: the first cancels it, the
	 * second finds nothing to cancel (io_uring's kernel said 0 to both). */
	r = rc = rc2 = (struct t_rec){ 0 };
	CHECK_OK(uaio_op_read(l, &rd, p[0], b, sizeof(b), -1, t_rec_op, &r));
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK_OK(uaio_op_cancel(l, &can, &rd, t_rec_op, &rc));
	CHECK_OK(uaio_op_cancel(l, &can2, &rd, t_rec_op, &rc2));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.res, -ECANCELED);
	CHECK_EQ(rc.res, 0);
	CHECK_EQ(rc2.res, -ENOENT);
	CHECK_EQ(r.calls + rc.calls + rc2.calls, 3);
	/* Bad input. */
	CHECK_EQ(uaio_op_cancel(l, &can2, NULL, t_rec_op, &rc2), -EINVAL);
	CHECK_EQ(uaio_op_cancel(l, &can2, &can2, t_rec_op, &rc2), -EINVAL);
	CHECK_EQ(uaio_op_cancel_fd(l, &can2, -1, t_rec_op, &rc2), -EBADF);
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

static void whole_fd(void)
{
	enum { N = 10 };
	uaio_loop *l = t_loop_new(0);
	uaio_op ops[N] = { { 0 } }, other = { 0 }, can = { 0 };
	struct t_rec r[N] = { { 0 } }, ro = { 0 }, rc = { 0 };
	char b[N], c;
	int p[2], q[2];

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	for (int i = 0; i < N; i++)
		CHECK_OK(uaio_op_read(l, &ops[i], p[0], &b[i], 1, -1, t_rec_op, &r[i]));
	CHECK_OK(uaio_op_read(l, &other, q[0], &c, 1, -1, t_rec_op, &ro));
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK_OK(uaio_op_cancel_fd(l, &can, p[0], t_rec_op, &rc));
	while (rc.calls == 0 || uaio_loop_inflight(l) > 1)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(rc.res, N);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(r[i].calls, 1);
		CHECK_EQ(r[i].res, -ECANCELED);
	}
	/* The other pipe's read is untouched. */
	CHECK_EQ(ro.calls, 0);
	CHECK(write(q[1], "z", 1) == 1);
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ro.res, 1);
	CHECK_EQ(c, 'z');
	close(p[0]); close(p[1]); close(q[0]); close(q[1]);
	uaio_loop_free(l);
}

static int watch_inputs;

static int on_watch_in(uaio_watch *w)
{
	char b[64];

	while (read(w->fd, b, sizeof(b)) > 0)
		;
	watch_inputs++;
	return 0;
}

/* cancel_fd counts the caller's ops only: not the poll the loop keeps
 * for a watch on the descriptor (io_uring counted it, edge-triggered or
 * on a thread-safe loop), and the watch goes on. */
static void with_watch(void)
{
	static const struct uaio_handler h = { .handle_input = on_watch_in };

	for (int k = 0; k < 3; k++) {
		uaio_loop *l = t_loop_new(k == 2 ? UAIO_LOOP_THREADSAFE : 0);
		uaio_watch w = { 0 };
		uaio_op rd = { 0 }, can = { 0 };
		struct t_rec rr = { 0 }, rc = { 0 };
		int sv[2];
		char b;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
		watch_inputs = 0;
		CHECK_OK(uaio_watch_start(l, &w, sv[0], UAIO_READABLE | (k == 0 ? UAIO_EDGE : 0),
					  &h, NULL));
		if (k == 1)	/* and one op of the caller's */
			CHECK_OK(uaio_op_recv(l, &rd, sv[0], &b, 1, 0, t_rec_op, &rr));
		CHECK(uaio_loop_run_once(l, 0) >= 0);
		CHECK_OK(uaio_op_cancel_fd(l, &can, sv[0], t_rec_op, &rc));
		T_RUN_UNTIL(l, rc.calls && (k != 1 || rr.calls), 100);
		CHECK_EQ(rc.res, k == 1 ? 1 : 0);
		if (k == 1)
			CHECK_EQ(rr.res, -ECANCELED);
		CHECK(write(sv[1], "x", 1) == 1);
		T_RUN_UNTIL(l, watch_inputs, 100);
		uaio_watch_stop(l, &w);
		CHECK(uaio_loop_run_once(l, 0) >= 0);
		uaio_loop_free(l);
		close(sv[0]);
		close(sv[1]);
	}
}

/* A cancel made on one loop of another loop's op: not in flight there
 * (-ENOENT), and the op goes on (epoll took the index into the other
 * loop's timer heap for one in its own, and crashed). */
static void other_loops_op(void)
{
	uaio_loop *a = t_loop_new(0), *b = t_loop_new(0);
	uaio_op t = { 0 }, c = { 0 };
	struct t_rec rt = { 0 }, rc = { 0 };

	CHECK_OK(uaio_op_timeout(b, &t, 20000000, t_rec_op, &rt));
	CHECK(uaio_loop_run_once(b, 0) >= 0);
	CHECK_OK(uaio_op_cancel(a, &c, &t, t_rec_op, &rc));
	T_RUN_UNTIL(a, rc.calls, 100);
	CHECK_EQ(rc.res, -ENOENT);
	T_RUN_UNTIL(b, rt.calls, 1000);
	CHECK_EQ(rt.res, -ETIME);
	/* The wrong loop's cancel leaves the op as it was: its own loop's
	 * cancel then ends it (io_uring's first marked it as being
	 * cancelled, and the right one answered -ENOENT for ever). */
	uaio_op rd = { 0 }, c2 = { 0 };
	struct t_rec rr = { 0 }, rc2 = { 0 };
	char buf[4];
	int p[2];

	CHECK(pipe(p) == 0);
	rc = (struct t_rec){ 0 };
	CHECK_OK(uaio_op_read(b, &rd, p[0], buf, sizeof(buf), -1, t_rec_op, &rr));
	CHECK(uaio_loop_run_once(b, 0) >= 0);
	CHECK_OK(uaio_op_cancel(a, &c, &rd, t_rec_op, &rc));
	T_RUN_UNTIL(a, rc.calls, 100);
	CHECK_EQ(rc.res, -ENOENT);
	CHECK_OK(uaio_op_cancel(b, &c2, &rd, t_rec_op, &rc2));
	T_RUN_UNTIL(b, rc2.calls, 100);
	CHECK_EQ(rc2.res, 0);
	T_RUN_UNTIL(b, rr.calls, 100);
	CHECK_EQ(rr.res, -ECANCELED);
	close(p[0]);
	close(p[1]);
	uaio_loop_free(a);
	uaio_loop_free(b);
}

/* cancel_fd on a number already given up by close(2), with one read in
 * the kernel and one held behind it (io_uring) or two queued (epoll):
 * the result is how many the loop cancelled, never the kernel's -EBADF
 * added to that count (io_uring said -EBADF + 1 = -8). */
static void after_plain_close(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op rd[2] = { { 0 } }, can = { 0 };
	struct t_rec r[2] = { { 0 } }, rc = { 0 };
	char b[2];
	int p[2], fd, cancelled = 0;

	CHECK(pipe(p) == 0);
	for (int i = 0; i < 2; i++)
		CHECK_OK(uaio_op_read(l, &rd[i], p[0], &b[i], 1, -1, t_rec_op, &r[i]));
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	fd = p[0];
	close(p[0]);
	CHECK_OK(uaio_op_cancel_fd(l, &can, fd, t_rec_op, &rc));
	T_RUN_UNTIL(l, rc.calls, 100);
	/* io_uring's read keeps the old pipe: data ends it (epoll's left
	 * none: the write fails, EPIPE) */
	signal(SIGPIPE, SIG_IGN);
	CHECK(write(p[1], "x", 1) == 1 || errno == EPIPE);
	CHECK_EQ(uaio_loop_run(l), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(r[i].calls, 1);
		cancelled += r[i].res == -ECANCELED;
	}
	CHECK(cancelled >= 1);
	CHECK_EQ(rc.res, cancelled);
	close(p[1]);
	uaio_loop_free(l);
}

/* A cancel of a splice blocked in a worker (-EALREADY): the splice then
 * ends with its data or a real errno. io_uring's worker is interrupted
 * and the kernel handed over its internal -ERESTARTSYS (-512) as is. */
static void running_splice(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op sp = { 0 }, can = { 0 };
	struct t_rec r = { 0 }, rc = { 0 };
	int in[2], out[2];

	CHECK(pipe(in) == 0 && pipe(out) == 0);
	CHECK_OK(uaio_op_splice(l, &sp, in[0], -1, out[1], -1, 100, 0, t_rec_op, &r));
	/* into the worker, and blocked there on the empty pipe */
	for (int i = 0; i < 10; i++)
		CHECK(uaio_loop_run_once(l, 5000000) >= 0);
	CHECK_OK(uaio_op_cancel(l, &can, &sp, t_rec_op, &rc));
	T_RUN_UNTIL(l, rc.calls, 100);
	for (int i = 0; i < 10; i++)
		CHECK(uaio_loop_run_once(l, 5000000) >= 0);
	CHECK(write(in[1], "hello", 5) == 5);
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(r.calls, 1);
	fprintf(stderr, "    cancel %d, splice %d\n", rc.res, r.res);
	if (rc.res == 0)
		CHECK_EQ(r.res, -ECANCELED);
	else
		CHECK(r.res == 5 || r.res == -EINTR);
	close(in[0]); close(in[1]); close(out[0]); close(out[1]);
	uaio_loop_free(l);
}

/* Half the reads find data, all are cancelled at once: every op ends
 * exactly once, and the bytes read are the ones written. */
static void racing(void)
{
	enum { N = 200 };
	uaio_loop *l = t_loop_new(0);
	uaio_op *ops = calloc(N, sizeof(*ops)), *cans = calloc(N, sizeof(*cans));
	struct t_rec *r = calloc(N, sizeof(*r)), *rc = calloc(N, sizeof(*rc));
	char b[N], data[N / 2];
	int p[2], done = 0, cancelled = 0;

	CHECK(pipe(p) == 0);
	for (int i = 0; i < N; i++)
		CHECK_OK(uaio_op_read(l, &ops[i], p[0], &b[i], 1, -1, t_rec_op, &r[i]));
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	memset(data, 'd', sizeof(data));
	CHECK(write(p[1], data, sizeof(data)) == (ssize_t)sizeof(data));
	for (int i = N - 1; i >= 0; i--)
		CHECK_OK(uaio_op_cancel(l, &cans[i], &ops[i], t_rec_op, &rc[i]));
	CHECK_EQ(uaio_loop_run(l), 0);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(r[i].calls, 1);
		CHECK_EQ(rc[i].calls, 1);
		if (r[i].res == -ECANCELED) {
			cancelled++;
			CHECK_EQ(rc[i].res, 0);
		} else {
			CHECK_EQ(r[i].res, 1);
			CHECK(rc[i].res == -ENOENT || rc[i].res == -EALREADY);
			done++;
		}
	}
	fprintf(stderr, "    %d read, %d cancelled\n", done, cancelled);
	t_set_nonblock(p[0]);
	ssize_t left = read(p[0], data, sizeof(data));
	CHECK_EQ(done + (left > 0 ? left : 0), N / 2);
	free(ops); free(cans); free(r); free(rc);
	close(p[0]); close(p[1]);
	uaio_loop_free(l);
}

/* A callback frees its own op (heap): the loop must not touch it after
 * (AddressSanitizer would say so). */
static int freed;
static void free_self(uaio_op *op, int res, void *data)
{
	CHECK_EQ(res, 0);
	free(op);
	freed++;
}

static void callback_frees_op(void)
{
	uaio_loop *l = t_loop_new(0);

	for (int i = 0; i < 100; i++) {
		uaio_op *op = calloc(1, sizeof(*op));
		CHECK_OK(uaio_op_nop(l, op, free_self, NULL));
	}
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(freed, 100);
	uaio_loop_free(l);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_cancel");
	RUN(one_op);
	RUN(whole_fd);
	RUN(with_watch);
	RUN(other_loops_op);
	RUN(after_plain_close);
	RUN(running_splice);
	RUN(racing);
	RUN(callback_frees_op);
	return T_EXIT_PASS;
}
