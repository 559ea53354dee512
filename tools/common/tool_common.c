/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <unistd.h>
#include "tool_common.h"

int tool_close_stdout(const char *prog)
{
	bool pending = __fpending(stdout) != 0, failed = ferror(stdout) != 0;
	int err = fclose(stdout) != 0 ? errno : 0;

	if (!failed && (!err || (!pending && err == EBADF)))
		return 0;
	fprintf(stderr, "%s: write error", prog);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	return 1;
}

static int hold_std_fds(int n, bool failing)
{
	int mask = 0;

	for (int fd = 0; fd < n; fd++) {
		int got;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* the lowest free number: fd, as those below it are open */
		got = open("/dev/null", (fd != 0) == failing ? O_RDONLY : O_WRONLY);
		if (got != fd) {
			if (got >= 0) {
				close(got);
				errno = EBADF;
			}
			return -1;
		}
		mask |= 1 << fd;
	}
	return mask;
}

int tool_hold_std_fds(int n)
{
	return hold_std_fds(n, false);
}

int tool_stand_in_std_fds(void)
{
	return hold_std_fds(3, true);
}
