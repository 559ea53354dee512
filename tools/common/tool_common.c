/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "tool_common.h"

int tool_close_stdout(const char *prog)
{
	bool pending = __fpending(stdout) != 0, failed = ferror(stdout) != 0;
	int err = fclose(stdout) != 0 ? errno : 0;

	if (!failed && (!err || (!pending && err == EBADF)))
		return tool_stderr_failed();
	fprintf(stderr, "%s: write error", prog);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	return 1;
}

/* As gnulib's close_stdout: a message that could not be written (stderr
 * full or closed) fails the run, with nowhere left to say so. */
int tool_stderr_failed(void)
{
	fflush(stderr);
	return ferror(stderr) ? 1 : 0;
}

/* Descriptor fd (the lowest free number) made an O_PATH descriptor of
 * an unbound socket, or -1: reading and writing it fail with EBADF, and
 * a name that leads to it (/dev/stdin, /dev/fd/1, /proc/self/fd/2)
 * cannot be opened (ENXIO), where /dev/null behind it would be reopened
 * and read as empty or written to as a sink. Needs /proc, as those names
 * do; without it they lead nowhere anyway. */
static int stand_in(int fd)
{
	char self[32];
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), o;

	if (s != fd) {
		if (s >= 0)
			close(s);
		return -1;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", s);
	o = open(self, O_PATH | O_CLOEXEC);
	if (o < 0 || dup2(o, fd) != fd) {	/* the socket's number, in its place */
		if (o >= 0)
			close(o);
		close(s);
		return -1;
	}
	close(o);
	return fd;
}

static int hold_std_fds(int n, bool failing)
{
	int mask = 0;

	for (int fd = 0; fd < n; fd++) {
		int got;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* the lowest free number: fd, as those below it are open */
		got = failing ? stand_in(fd) : -1;
		if (got < 0)
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

int tool_stand_in_std_fds(int n)
{
	return hold_std_fds(n, true);
}
