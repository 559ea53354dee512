/* SPDX-License-Identifier: MIT */
/*
 * The room uaio_op_work(3) promises a work function (64 KiB of stack)
 * when glibc keeps a larger TLS surplus than its default (the
 * glibc.rtld.optional_static_tls tunable): the surplus lives in every
 * thread's stack, and a stack sized from the modules' TLS alone left the
 * work 60 KiB short (SIGSEGV). Run again under the tunable, and in a
 * program whose own TLS is small.
 */
#include <uaio/loop.h>

#include "test.h"
#include <sys/wait.h>

static long deep_work(void *arg)
{
	volatile char deep[56 * 1024];

	(void)arg;
	memset((char *)deep, 1, sizeof(deep));
	return deep[0] + deep[sizeof(deep) - 1] == 2 ? 42 : -1;
}

static int got = -1;

static void on_done(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)data;
	got = res;
}

int main(void)
{
	uaio_loop *l;
	uaio_op op = { 0 };

	t_banner("test_work_stack");
#ifndef __SANITIZE_ADDRESS__
	/* (AddressSanitizer's frames are bigger than the promise) */
	if (!getenv("GLIBC_TUNABLES")) {
		pid_t kid = fork();
		int st;

		CHECK(kid >= 0);
		if (kid == 0) {
			setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=90000", 1);
			execl("/proc/self/exe", "test_work_stack", (char *)NULL);
			_exit(T_EXIT_FAIL);
		}
		CHECK(waitpid(kid, &st, 0) == kid);
		if (!WIFEXITED(st))
			fprintf(stderr, "  under the tunable: killed by signal %d\n", WTERMSIG(st));
		CHECK(WIFEXITED(st));
		CHECK_EQ(WEXITSTATUS(st), T_EXIT_PASS);
	}
#endif
	l = t_loop_new(0);
	CHECK_OK(uaio_op_work(l, &op, deep_work, NULL, on_done, NULL));
	T_RUN_UNTIL(l, got != -1, 10000);
	CHECK_EQ(got, 42);
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
