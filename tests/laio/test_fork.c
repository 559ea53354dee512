/* SPDX-License-Identifier: MIT */
/* fork(): the child starts with no background calls and a working engine. */
#include "laio/laio_util.h"
#include <stdbool.h>

static void fork_with(bool raw)
{
	int p[2], q[2];
	char b = 0, cb = 0;
	void *h;

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	fflush(NULL);
	/* laio_syscall(SYS_fork) is fork(3): the engine's handlers run */
	pid_t pid = raw ? (pid_t)laio_syscall(SYS_fork) : fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct laio_completion c;
		struct timespec z = { 0, 0 };

		alarm(20);	/* a child that kept the parent's call waits for ever */
		CHECK(laio_gethandle() == NULL);
		CHECK_EQ(laio_poll(&c, 1, &z), 0);
		CHECK_EQ(laio_poll(&c, 1, NULL), 0);	/* nothing outstanding */
		errno = 0;
		CHECK_EQ(laio_cancel(h), -1);
		/* a fresh engine works */
		void *hc = BG(laio_syscall(SYS_read, q[0], &cb, 1));
		CHECK(write(q[1], "c", 1) == 1);
		c = wait_one(hc);
		CHECK_EQ(c.laio_return_value, 1);
		CHECK_EQ(cb, 'c');
		CHECK(laio_fd() >= 0);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* the parent's call is still there */
	CHECK(write(p[1], "p", 1) == 1);
	struct laio_completion c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 1);
	CHECK_EQ(b, 'p');
	close(p[0]); close(p[1]); close(q[0]); close(q[1]);
}

static void fork_outstanding(void)
{
	fork_with(false);
}

static void fork_by_laio(void)
{
	fork_with(true);
}

int main(void)
{
	RUN_MECHS(fork_outstanding);
	RUN_MECHS(fork_by_laio);
	return T_EXIT_PASS;
}
