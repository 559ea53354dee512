/* SPDX-License-Identifier: MIT */
/*
 * uaio_loop_free from one of the loop's own callbacks (an op's, a
 * timer's, a posted function, a watch handler, and one inside a nested
 * run): the runs that called the callback still read the loop on their
 * way out, so the outermost frees it as it returns. Nothing else of the
 * loop runs after the free: the nop, the timer and the post queued with
 * it are dropped, as uaio_loop_free drops what it finds. Before, every
 * case read the freed loop (AddressSanitizer: heap-use-after-free in
 * dispatch, run_timers, the inbox's drain).
 */
#include <uaio/loop.h>
#include "test.h"
#include <dirent.h>
#include <stdbool.h>
#include <pthread.h>

enum how { BY_OP, BY_TIMER, BY_POST, BY_WATCH, BY_NESTED, NHOW };

static const char *const names[NHOW] = { "op", "timer", "post", "watch", "nested run" };

struct world {
	uaio_loop *l;
	enum how how;
	int freed, others;
	uaio_op op, more, spare;
	uaio_timer t, t2;
	uaio_watch w;
	int p[2];
};

static struct world W;

static void free_it(void)
{
	CHECK_EQ(W.freed, 0);
	W.freed++;
	uaio_loop_free(W.l);
}

static void on_op(uaio_op *op, int res, void *data)
{
	(void)res;
	(void)data;
	if (op == &W.op && W.how == BY_OP)
		free_it();
	else
		W.others++;
}

static void on_timer(uaio_timer *t)
{
	if (t == &W.t && W.how == BY_TIMER)
		free_it();
	else
		W.others++;
}

static void on_post(void *data)
{
	if (data == &W && W.how == BY_POST)
		free_it();
	else
		W.others++;
}

/* The nested run finds the nop queued with this one and frees there. */
static void on_outer(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	(void)data;
	CHECK(uaio_loop_run_once(W.l, 0) >= 0);
}

static void on_inner(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	(void)data;
	free_it();
}

static int on_input(uaio_watch *w)
{
	(void)w;
	if (W.how == BY_WATCH)
		free_it();
	else
		W.others++;
	return 0;
}

static const struct uaio_handler handler = { .handle_input = on_input };

static void run_case(enum how how)
{
	int r;

	memset(&W, 0, sizeof(W));
	W.how = how;
	W.l = t_loop_new(0);
	CHECK(pipe(W.p) == 0);
	CHECK_EQ(write(W.p[1], "x", 1), 1);
	if (how == BY_NESTED) {
		CHECK_OK(uaio_op_nop(W.l, &W.op, on_outer, NULL));
		CHECK_OK(uaio_op_nop(W.l, &W.spare, on_inner, NULL));
	} else {
		CHECK_OK(uaio_op_nop(W.l, &W.op, on_op, NULL));
	}
	uaio_timer_init(&W.t, on_timer, NULL);
	CHECK_OK(uaio_timer_start(W.l, &W.t, 0, 0));
	CHECK_OK(uaio_loop_post(W.l, on_post, &W));
	CHECK_OK(uaio_watch_start(W.l, &W.w, W.p[0], UAIO_READABLE, &handler, NULL));
	/* what must never run: queued behind the free, or due later */
	uaio_timer_init(&W.t2, on_timer, NULL);
	CHECK_OK(uaio_timer_start(W.l, &W.t2, 3600ull * 1000000000, 0));
	CHECK_OK(uaio_op_timeout(W.l, &W.more, 3600ull * 1000000000, on_op, NULL));
	r = uaio_loop_run(W.l);
	if (W.freed != 1 || r < 0)
		fprintf(stderr, "    %s: run %d, freed %d, others %d\n", names[how], r,
			W.freed, W.others);
	CHECK_EQ(W.freed, 1);
	CHECK(r >= 0);
	/* the hour-long timer and timeout were dropped with the loop */
	CHECK(!uaio_timer_pending(&W.t2));
	close(W.p[0]);
	close(W.p[1]);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	CHECK(d != NULL);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void *run_thread(void *arg)
{
	uaio_loop_run(arg);
	return NULL;
}

static void *free_thread(void *arg)
{
	uaio_loop_free(arg);
	return NULL;
}

static void free_in_nop(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	uaio_loop_free(data);
}

/* A thread cancelled inside uaio_loop_run never returns from it, and is
 * out of the run all the same: a free from a thread made afterwards
 * (which may have the cancelled one's ID) frees at once, and a free
 * from a callback of a later run waits for that run (either was taken
 * for the other: the loop kept for ever, or freed under its run). */
static void cancelled_run(bool then_run)
{
	int before = open_fds(), p[2];
	uaio_loop *l = t_loop_new(0);
	uaio_op nop = { 0 };
	uaio_watch w = { 0 };
	pthread_t t;

	CHECK(pipe(p) == 0);
	CHECK_OK(uaio_watch_start(l, &w, p[0], UAIO_READABLE, &handler, NULL));
	CHECK(pthread_create(&t, NULL, run_thread, l) == 0);
	usleep(50 * 1000);	/* inside its wait, or soon (either is cancelled) */
	CHECK(pthread_cancel(t) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	if (then_run) {
		CHECK_OK(uaio_op_nop(l, &nop, free_in_nop, l));
		CHECK(uaio_loop_run(l) >= 0);
	} else {
		CHECK(pthread_create(&t, NULL, free_thread, l) == 0);
		CHECK(pthread_join(t, NULL) == 0);
	}
	close(p[0]);
	close(p[1]);
	CHECK_EQ(open_fds(), before);
}

static void free_then_exit(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	uaio_loop_free(data);
	pthread_exit(NULL);
}

static void *run_to_exit(void *arg)
{
	static uaio_op nop;

	memset(&nop, 0, sizeof(nop));
	CHECK_OK(uaio_op_nop(arg, &nop, free_then_exit, arg));
	uaio_loop_run(arg);
	return NULL;
}

/* A callback that frees its loop and then leaves its thread
 * (pthread_exit: the runs above it never return): the loop is freed as
 * the thread leaves the outermost run. It stayed, marked, for ever. */
static void free_then_thread_exit(void)
{
	int before = open_fds();
	uaio_loop *l = t_loop_new(0);
	pthread_t t;

	CHECK(pthread_create(&t, NULL, run_to_exit, l) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(open_fds(), before);
}

static void free_after_cancelled_run(void)
{
	uaio_loop *l = t_loop_new(0);
	bool uring = strcmp(uaio_loop_backend_name(l), "epoll") != 0;

	uaio_loop_free(l);
	if (uring) {
		/* io_uring's wait is a raw system call, no cancellation point */
		fprintf(stderr, "    skipped on io_uring\n");
		return;
	}
	cancelled_run(false);
	cancelled_run(true);
}

int main(void)
{
	t_banner("test_free_in_callback");
	for (int how = 0; how < NHOW; how++) {
		fprintf(stderr, "  free from %s ...\n", names[how]);
		run_case((enum how)how);
	}
	fprintf(stderr, "  free after a cancelled run ...\n");
	free_after_cancelled_run();
	fprintf(stderr, "  free, then the thread exits ...\n");
	free_then_thread_exit();
	return T_EXIT_PASS;
}
