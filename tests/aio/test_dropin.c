/* SPDX-License-Identifier: MIT */
/*
 * libuaio-posix.so takes over glibc's versioned aio_* symbols: the same
 * glibc-built binary answers as glibc on its own, and as uaio under
 * LD_PRELOAD and when linked with the library ahead of libc; in each case
 * its own checks (lio_listio, read, *64 names, fsync, cancel, signal
 * notification) must pass.
 */
#include "aio/aio_util.h"

static void run(const char *what, const char *preload, const char *prog,
		const char *want_impl)
{
	char cmd[4096], out[256] = { 0 };
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "%s%s%s '%s'", preload ? "LD_PRELOAD='" : "",
		 preload ? preload : "", preload ? "' " : "", prog);
	f = popen(cmd, "r");
	CHECK(f);
	if (!fgets(out, sizeof(out), f))
		out[0] = 0;
	st = pclose(f);
	fprintf(stderr, "    %-24s %s", what, out[0] ? out : "(no output)\n");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	char want[64];
	snprintf(want, sizeof(want), "impl=%s ", want_impl);
	CHECK(!strncmp(out, want, strlen(want)));
	if (!strcmp(want_impl, "uaio")) {
		/* Cached reads finished inline: no helper thread appeared. */
		int before, after;
		CHECK(sscanf(out, "impl=uaio threads_before=%d threads_after_cached=%d",
			     &before, &after) == 2);
		CHECK_EQ(after, before);
	}
}

static void dropin(void)
{
	run("glibc alone", NULL, DROPIN_PROG, "glibc");
	run("LD_PRELOAD", DROPIN_LIB, DROPIN_PROG, "uaio");
	run("linked ahead of libc", NULL, DROPIN_LINKED, "uaio");
}

int main(void)
{
	t_watchdog(60);
	RUN(dropin);
	return T_EXIT_PASS;
}
