/* SPDX-License-Identifier: MIT */
/* Descriptors without RWF_NOWAIT (ttys, inotify): the caller's O_NONBLOCK
 * still means EAGAIN inline, as read(2) gives it, never a background call
 * that waits for data; a blocking one still goes to the background. */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <termios.h>

static void pty_pair(int *m, int *s, int sflags)
{
	struct termios t;

	*m = posix_openpt(O_RDWR | O_NOCTTY);
	if (*m < 0 || grantpt(*m) < 0 || unlockpt(*m) < 0)
		SKIP("no pseudo-terminals");
	*s = open(ptsname(*m), O_RDWR | O_NOCTTY | sflags);
	CHECK(*s >= 0);
	CHECK(tcgetattr(*s, &t) == 0);
	cfmakeraw(&t);
	CHECK(tcsetattr(*s, TCSANOW, &t) == 0);
}

static void nonblocking_tty(void)
{
	int m, s;
	char b[8];
	struct iovec iov = { b, sizeof(b) };

	pty_pair(&m, &s, O_NONBLOCK);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_read, s, b, sizeof(b))), -1);
	CHECK_EQ(errno, EAGAIN);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_readv, s, &iov, 1)), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK(fcntl(s, F_GETFL) & O_NONBLOCK);
	/* With data there: the data, inline. */
	CHECK(write(m, "ab", 2) == 2);
	for (int i = 0; i < 100; i++) {
		struct pollfd pf = { s, POLLIN, 0 };
		if (poll(&pf, 1, 10) == 1)
			break;
	}
	CHECK_EQ(INL(laio_syscall(SYS_read, s, b, sizeof(b))), 2);
	CHECK(memcmp(b, "ab", 2) == 0);
	close(s);
	close(m);
}

static void nonblocking_inotify(void)
{
	int fd = inotify_init1(IN_NONBLOCK);
	char b[256];

	CHECK(fd >= 0);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_read, fd, b, sizeof(b))), -1);
	CHECK_EQ(errno, EAGAIN);
	close(fd);
}

static void blocking_tty(void)
{
	int m, s;
	char b[8];
	void *h;

	pty_pair(&m, &s, 0);
	h = BG(laio_syscall(SYS_read, s, b, sizeof(b)));
	CHECK(write(m, "z", 1) == 1);
	CHECK_EQ(wait_one(h).laio_return_value, 1);
	CHECK_EQ(b[0], 'z');
	close(s);
	close(m);
}

int main(void)
{
	alarm(60);
	RUN_MECHS(nonblocking_tty);
	RUN_MECHS(nonblocking_inotify);
	RUN_MECHS(blocking_tty);
	return T_EXIT_PASS;
}
