/* SPDX-License-Identifier: MIT */
/*
 * When an op is free again, as uaio_op_pending(3) and uaio_loop_run(3)
 * say it, seen from other threads and from inside a callback:
 *
 * - On a thread-safe loop, other threads submit nops, timeouts and
 *   cancels on a few ops each, and submit one anew as soon as
 *   uaio_op_pending() says 0. Each submission's callback must run once,
 *   with that submission's data. (The loop made the op idle before it
 *   read the callback and data, and a refill on io_uring made it idle
 *   while still queued: old results reached new data, twice, and
 *   submits failed with EBUSY.)
 * - A callback that runs the loop (uaio_loop_run) while its siblings'
 *   results wait: the nested run runs them and returns. (On epoll they
 *   waited where the nested run could not see them, and it slept for
 *   ever.)
 */
#define _GNU_SOURCE
#include <uaio/loop.h>
#include "test.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/socket.h>

enum { NT = 4, NI = 20000, SLOTS = 4 };

struct slot {
	uaio_op op, cancel;
};

static uaio_loop *L;
static struct slot slots[NT][SLOTS];
static atomic_uchar hits[NT][NI];
static atomic_long ended, doubled, cancels, refused;

static void on_op(uaio_op *op, int res, void *data)
{
	unsigned tok = (unsigned)(uintptr_t)data;

	(void)op;
	(void)res;
	if (atomic_fetch_add(&hits[tok / NI][tok % NI], 1))
		atomic_fetch_add(&doubled, 1);
	atomic_fetch_add(&ended, 1);
}

static void on_cancel(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	(void)data;
	atomic_fetch_add(&cancels, 1);
}

static void *submitter(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (int i = 0; i < NI; i++) {
		struct slot *s = &slots[id][i % SLOTS];
		void *tok = (void *)(uintptr_t)(id * NI + i);
		int r;

		while (uaio_op_pending(&s->op) || uaio_op_pending(&s->cancel))
			sched_yield();
		if (i & 8)	/* some under the caller's lock, as loop.h allows */
			uaio_loop_lock(L);
		r = (i & 1) ? uaio_op_timeout(L, &s->op, 50000 * (i % 5), on_op, tok) :
			      uaio_op_nop(L, &s->op, on_op, tok);
		if (r < 0) {
			atomic_fetch_add(&refused, 1);
			hits[id][i] = 1;
			atomic_fetch_add(&ended, 1);
		} else if (i % 3 == 0 &&
			   uaio_op_cancel(L, &s->cancel, &s->op, on_cancel, NULL) < 0) {
			atomic_fetch_add(&refused, 1);
			atomic_fetch_add(&cancels, 1);
		}
		if (i & 8)
			uaio_loop_unlock(L);
	}
	return NULL;
}

static void reuse_when_not_pending(void)
{
	struct uaio_loop_params p = { .flags = UAIO_LOOP_THREADSAFE };
	long want_cancels = 0, missing = 0;
	pthread_t t[NT];

	for (int i = 0; i < NI; i++)
		want_cancels += i % 3 == 0;
	want_cancels *= NT;
	CHECK((L = uaio_loop_new(&p)) != NULL);
	CHECK_OK(uaio_loop_run_once(L, 0));	/* this thread drives it */
	for (int i = 0; i < NT; i++)
		CHECK(pthread_create(&t[i], NULL, submitter, (void *)(intptr_t)i) == 0);
	while (atomic_load(&ended) < (long)NT * NI || atomic_load(&cancels) < want_cancels)
		CHECK_OK(uaio_loop_run_once(L, 10000000));
	for (int i = 0; i < NT; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	for (int i = 0; i < NT; i++)
		for (int j = 0; j < NI; j++)
			missing += !hits[i][j];
	CHECK_EQ(atomic_load(&refused), 0);
	CHECK_EQ(atomic_load(&doubled), 0);
	CHECK_EQ(missing, 0);
	CHECK_EQ(uaio_loop_inflight(L), 0);
	uaio_loop_free(L);
}

static int nested_calls, nested_depth, nested_ret = 1;

static void on_nested(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	(void)data;
	nested_calls++;
	if (!nested_depth++)
		nested_ret = uaio_loop_run(L);
	nested_depth--;
}

static void on_nothing(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	(void)data;
}

static void run_inside_callback(void)
{
	static uaio_op a, b, c;
	char x[4], y[4];
	int sv[2];

	CHECK((L = uaio_loop_new(NULL)) != NULL);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	/* two reads that wait for data, both ended by one cancel_fd: their
	 * results come together */
	CHECK_OK(uaio_op_read(L, &a, sv[0], x, sizeof(x), -1, on_nested, NULL));
	CHECK_OK(uaio_op_read(L, &b, sv[0], y, sizeof(y), -1, on_nested, NULL));
	CHECK_OK(uaio_op_cancel_fd(L, &c, sv[0], on_nothing, NULL));
	CHECK_EQ(uaio_loop_run(L), 0);
	CHECK_EQ(nested_ret, 0);
	CHECK_EQ(nested_calls, 2);
	CHECK_EQ(uaio_loop_inflight(L), 0);
	uaio_loop_free(L);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	t_watchdog(120);
	RUN(reuse_when_not_pending);
	RUN(run_inside_callback);
	return T_EXIT_PASS;
}
