/* SPDX-License-Identifier: MIT */
/* Worker results and cross-thread posts reach a loop that sleeps with
 * watches registered (on io_uring: in epoll_wait, with the wake eventfd
 * in the epoll set), also when the first watch arrives after the loop
 * has already run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

static uaio_loop *L;
static uaio_op op;
static int works, posts;

static long slow(void *arg)
{
	usleep(200);
	return 7;
}

static void work_done(uaio_op *o, int res, void *data)
{
	CHECK_EQ(res, 7);
	if (++works < 200)
		CHECK_OK(uaio_op_work(L, &op, slow, NULL, work_done, NULL));
}

static int on_input(uaio_watch *w)
{
	return 0;
}

static const struct uaio_handler idle = { .handle_input = on_input };

static void on_post(void *data)
{
	posts++;
}

static void *poster(void *arg)
{
	for (int i = 0; i < 100; i++) {
		usleep(100);
		CHECK_OK(uaio_loop_post(L, on_post, NULL));
	}
	return NULL;
}

static void run(bool run_first)
{
	int p[2];
	uaio_watch w = { 0 };
	pthread_t th;

	works = posts = 0;
	L = t_loop_new(0);
	CHECK(pipe(p) == 0);
	if (run_first)
		CHECK(uaio_loop_run_once(L, 0) >= 0);
	CHECK_OK(uaio_watch_start(L, &w, p[0], UAIO_READABLE, &idle, NULL));
	CHECK_OK(uaio_op_work(L, &op, slow, NULL, work_done, NULL));
	CHECK(pthread_create(&th, NULL, poster, NULL) == 0);
	T_RUN_UNTIL(L, works == 200 && posts == 100, 100000);
	pthread_join(th, NULL);
	uaio_watch_stop(L, &w);
	uaio_loop_run_once(L, 0);
	uaio_loop_free(L);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_wake");
	run(false);
	run(true);
	return T_EXIT_PASS;
}
