/* SPDX-License-Identifier: MIT */
/*
 * A loop freed by another thread than the one that ran it (a worker's
 * loop freed after the join), or by a fork's child, leaves the freeing
 * thread's own loop working: on io_uring the runner's registered ring fd
 * is a slot in the runner's table, and the same slot number in the
 * freeing thread's table may be its own loop's.
 */
#include <uaio/loop.h>
#include "test.h"
#include <pthread.h>
#include <sys/wait.h>

static int ran;

static void on_nop(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	(void)data;
	ran++;
}

static void *run_it(void *arg)
{
	uaio_loop *l = arg;
	uaio_op op = { 0 };

	CHECK_OK(uaio_op_nop(l, &op, on_nop, NULL));
	CHECK(uaio_loop_run(l) >= 0);
	return NULL;
}

/* A nop through m, run to its end: the loop still works. */
static void still_works(uaio_loop *m, const char *what)
{
	uaio_op op = { 0 };
	int r;

	ran = 0;
	CHECK_OK(uaio_op_nop(m, &op, on_nop, NULL));
	r = uaio_loop_run(m);
	if (r < 0 || ran != 1)
		fprintf(stderr, "    %s: run %d, nops run %d, in flight %u\n", what, r, ran,
			uaio_loop_inflight(m));
	CHECK(r >= 0 && ran == 1);
}

/* A loop for another thread: SQPOLL rings are not single-issuer, so the
 * kernel does not refuse the foreign unregister; plain ones too. */
static uaio_loop *other_loop(unsigned flags)
{
	struct uaio_loop_params p = { .flags = flags };
	uaio_loop *l = uaio_loop_new(&p);

	return l ? l : t_loop_new(0);
}

int main(void)
{
	uaio_loop *m = t_loop_new(0), *l;
	pthread_t t;
	pid_t pid;

	t_banner("test_free_elsewhere");
	still_works(m, "before");
	for (int k = 0; k < 2; k++) {
		l = other_loop(k ? 0 : UAIO_LOOP_SQPOLL);
		CHECK(pthread_create(&t, NULL, run_it, l) == 0);
		CHECK(pthread_join(t, NULL) == 0);
		uaio_loop_free(l);
		still_works(m, k ? "after freeing a worker's loop" :
				   "after freeing a worker's SQPOLL loop");
	}
	/* a fork's child with a loop of its own frees the parent's */
	l = other_loop(UAIO_LOOP_SQPOLL);
	CHECK(pthread_create(&t, NULL, run_it, l) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		uaio_loop *c = t_loop_new(0);

		still_works(c, "the child's loop");
		uaio_loop_free(l);
		uaio_loop_free(m);
		still_works(c, "the child's loop after freeing the parent's");
		_exit(0);
	}
	{
		int st;

		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	uaio_loop_free(l);
	still_works(m, "the parent's loop after the child");
	uaio_loop_free(m);
	return T_EXIT_PASS;
}
