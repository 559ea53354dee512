/* SPDX-License-Identifier: MIT */
/*
 * A watch the loop ends itself (a hang-up no handler of it hears of:
 * handle_close with -EPIPE) is taken out of the kernel as uaio_watch_stop
 * takes it out. Before, it was only unlinked: its epoll registration
 * stayed (the descriptor, ready for ever, could not be watched again:
 * -EEXIST, and the loop's wait returned at once), and on io_uring an
 * edge-triggered watch's multishot poll stayed armed with the program's
 * watch, which the loop wrote to after handle_close (a later close's
 * cancel walked it as a list: a crash).
 * And a watch is ended only by its own loop: stopped or modified through
 * another, -ENOENT (the other loop ran its handle_close, and its count of
 * watches wrapped: its run never returned).
 */
#include <uaio/loop.h>
#include "test.h"
#include <sys/socket.h>

static int closes, reason, inputs;

static void on_close(uaio_watch *w, int why)
{
	(void)w;
	closes++;
	reason = why;
}

static int on_input(uaio_watch *w)
{
	(void)w;
	inputs++;
	return 0;
}

static const struct uaio_handler no_input = { .handle_close = on_close };
static const struct uaio_handler with_input = { .handle_input = on_input,
						 .handle_close = on_close };

static union {
	uaio_watch w;
	unsigned char b[sizeof(uaio_watch)];
} mem;

static void op_done(uaio_op *op, int res, void *data)
{
	(void)op;
	*(int *)data = res;
}

static void ended(unsigned edge)
{
	uaio_loop *l = t_loop_new(0);
	uaio_watch again = { 0 };
	uaio_op op = { 0 };
	int sv[2], res = 1 << 30, changed = 0;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	closes = inputs = 0;
	memset(&mem, 0, sizeof(mem));
	CHECK_OK(uaio_watch_start(l, &mem.w, sv[0], UAIO_READABLE | edge, &no_input, NULL));
	uaio_loop_run_once(l, 0);
	close(sv[1]);				/* a hang-up, no handler for it */
	T_RUN_UNTIL(l, closes > 0, 1000);
	CHECK_EQ(closes, 1);
	CHECK_EQ(reason, -EPIPE);
	/* the watch is over: the program reuses its memory */
	memset(mem.b, 0xAA, sizeof(mem.b));
	/* the descriptor can be watched again, and is ready */
	CHECK_OK(uaio_watch_start(l, &again, sv[0], UAIO_READABLE, &with_input, NULL));
	T_RUN_UNTIL(l, inputs > 0, 1000);
	CHECK_OK(uaio_watch_stop(l, &again));
	T_RUN_UNTIL(l, closes > 1, 1000);
	/* a close op on it (its cancel of what is in flight) */
	CHECK_OK(uaio_op_close(l, &op, sv[0], op_done, &res));
	T_RUN_UNTIL(l, res != 1 << 30, 1000);
	CHECK_EQ(res, 0);
	for (int i = 0; i < 5; i++)
		uaio_loop_run_once(l, 1000000);
	for (size_t i = 0; i < sizeof(mem.b); i++)
		changed += mem.b[i] != 0xAA;
	CHECK_EQ(changed, 0);			/* nothing written to it after */
	CHECK_EQ(closes, 2);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	uaio_loop_free(l);
}

static void level(void)
{
	ended(0);
}

static void edge(void)
{
	ended(UAIO_EDGE);
}

/* w, started on l over pipe p, stopped there: handle_close once, at the
 * run; the pipe closed. */
static void stop_on(uaio_loop *l, uaio_watch *w, int p[2])
{
	CHECK_OK(uaio_watch_stop(l, w));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(closes, 1);
	close(p[0]);
	close(p[1]);
}

/* Loops a and b, and w watching p[0] (readable) on a. */
static void watch_on_a(uaio_loop **a, uaio_loop **b, uaio_watch *w, int p[2])
{
	*a = t_loop_new(0);
	*b = t_loop_new(0);
	*w = (uaio_watch){ 0 };
	CHECK_EQ(pipe(p), 0);
	closes = 0;
	CHECK_OK(uaio_watch_start(*a, w, p[0], UAIO_READABLE, &with_input, NULL));
}

static void other_loop(void)
{
	uaio_loop *a, *b;
	uaio_watch w;
	int p[2];

	watch_on_a(&a, &b, &w, p);
	CHECK_EQ(uaio_watch_stop(b, &w), -ENOENT);
	CHECK_EQ(uaio_watch_modify(b, &w, UAIO_WRITABLE), -ENOENT);
	CHECK_EQ(w.events, UAIO_READABLE);
	CHECK_EQ(uaio_loop_run(b), 0);		/* nothing of its own: returns */
	CHECK_EQ(closes, 0);
	stop_on(a, &w, p);
	uaio_loop_free(a);
	uaio_loop_free(b);
}

/* A watch still active when its loop is freed ends there without
 * handle_close, and another loop takes it (it was refused: -EBUSY). */
static void after_free(void)
{
	uaio_loop *a, *b;
	uaio_watch w;
	int p[2];

	watch_on_a(&a, &b, &w, p);
	uaio_loop_free(a);
	CHECK_EQ(closes, 0);
	CHECK_OK(uaio_watch_start(b, &w, p[0], UAIO_READABLE, &with_input, NULL));
	stop_on(b, &w, p);
	uaio_loop_free(b);
}

int main(int argc, char **argv)
{
	(void)argc;
	t_watchdog(30);
	t_banner(argv[0]);
	RUN(level);
	RUN(edge);
	RUN(other_loop);
	RUN(after_free);
	return T_EXIT_PASS;
}
