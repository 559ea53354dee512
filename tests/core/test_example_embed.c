/* SPDX-License-Identifier: MIT */
/* Runs examples/loop_in_libevent.c: a uaio loop driven by libevent
 * through uaio_loop_fd() and uaio_loop_timeout() gets its timer ticks,
 * its read and a post from another thread (exit 0), before libevent's own
 * 5 s deadline (exit 1). Skips when the example was not built (no
 * libevent). */
#include <libgen.h>
#include <signal.h>
#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

int main(void)
{
	char self[PATH_MAX], bin[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int st;
	pid_t pid;

	CHECK(n > 0);
	self[n] = 0;
	snprintf(bin, sizeof(bin), "%s/examples/example_loop_in_libevent", dirname(dirname(self)));
	if (access(bin, X_OK))
		SKIP("examples/loop_in_libevent.c not built (no libevent)");
	t_watchdog(60);
	t_banner("test_example_embed");
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	return T_EXIT_PASS;
}
