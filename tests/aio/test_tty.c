/* SPDX-License-Identifier: MIT */
/*
 * Job control on the controlling terminal, as under glibc, whose helper
 * threads read and write with every signal blocked: a background process
 * group's read fails with EIO at once (uaio waited for input that the
 * foreground got, or, on an O_NONBLOCK terminal, the caller's read raised
 * SIGTTIN and stopped the process), and its write with TOSTOP set goes
 * through (on an O_NONBLOCK terminal SIGTTOU stopped it). The foreground
 * reads as before, and a pty master is no controlling terminal. A raw
 * terminal with VMIN 0 answers 0 after VTIME, as read(2) does.
 */
#include "aio/aio_util.h"
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <termios.h>

static int master;
static char slave[64];

/* A request's end within 2 s: its result, *err its status. */
static ssize_t wait_2s(struct aiocb *cb, int *err)
{
	const struct aiocb *l[1] = { cb };
	struct timespec to = { 2, 0 };

	while ((*err = uaio_error(cb)) == EINPROGRESS)
		if (uaio_suspend(l, 1, &to) < 0 && errno == EAGAIN)
			return -2;	/* still in progress */
	return uaio_return(cb);
}

static void background_child(int tty, bool nonblock)
{
	struct aiocb cb;
	char b[8];
	int err;

	CHECK(setpgid(0, 0) == 0);
	signal(SIGTTIN, SIG_DFL);
	signal(SIGTTOU, SIG_DFL);
	if (nonblock)
		CHECK(fcntl(tty, F_SETFL, O_RDWR | O_NONBLOCK) == 0);
	cb = t_cb(tty, b, sizeof(b), 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(wait_2s(&cb, &err), -1);
	CHECK_EQ(err, EIO);
	cb = t_cb(tty, "bg\n", 3, 0);
	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(wait_2s(&cb, &err), 3);
	_exit(0);
}

/* The session's leader, with the slave as its controlling terminal. */
static void session(bool nonblock)
{
	struct termios tio;
	struct aiocb cb;
	char b[8];
	int tty, err, st;
	pid_t bg;

	CHECK(setsid() > 0);
	close(master);
	tty = open(slave, O_RDWR);
	CHECK(tty >= 0 && ioctl(tty, TIOCSCTTY, 0) == 0);
	CHECK(tcgetattr(tty, &tio) == 0);
	tio.c_lflag |= TOSTOP;
	CHECK(tcsetattr(tty, TCSANOW, &tio) == 0);
	bg = fork();
	CHECK(bg >= 0);
	if (bg == 0)
		background_child(tty, nonblock);
	CHECK(waitpid(bg, &st, WUNTRACED) == bg);
	if (WIFSTOPPED(st)) {
		fprintf(stderr, "    background child stopped by signal %d\n", WSTOPSIG(st));
		kill(bg, SIGKILL);
		waitpid(bg, &st, 0);
		_exit(1);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The foreground reads what is typed (blocking again: the child's
	 * O_NONBLOCK was set on the file they share). */
	CHECK(fcntl(tty, F_SETFL, O_RDWR) == 0);
	cb = t_cb(tty, b, sizeof(b), 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK(write(tty, "?", 1) == 1);	/* the parent's cue */
	CHECK(wait_2s(&cb, &err) > 0 && err == 0);
	CHECK(!memcmp(b, "fg", 2));
	_exit(0);
}

static void run(bool nonblock)
{
	struct aiocb cb;
	char b[64];
	int err;
	size_t got = 0;
	pid_t pid;

	CHECK(openpty(&master, &(int){ 0 }, slave, NULL, NULL) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		t_watchdog(20);
		session(nonblock);
	}
	/* This process reads the master: no job control there, though the
	 * slave's foreground group is not ours. What the session wrote
	 * ("bg\r\n", then the cue) arrives; then the foreground's input. */
	while (!memchr(b, '?', got)) {
		cb = t_cb(master, b + got, sizeof(b) - got, 0);
		CHECK_EQ(uaio_read(&cb), 0);
		ssize_t n = wait_2s(&cb, &err);
		CHECK(n > 0);
		got += (size_t)n;
	}
	CHECK(memmem(b, got, "bg", 2));
	CHECK(write(master, "fg\n", 3) == 3);
	t_child_exit(pid, 0);
	close(master);
}

static void blocking(void) { run(false); }
static void nonblocking(void) { run(true); }

/* A raw terminal with VMIN 0: a read returns what came, or 0 once VTIME
 * passes without input (at once for VTIME 0), as glibc's blocking read.
 * uaio waited for readiness that never comes without input: for ever. */
static void vmin_zero(void)
{
	int m, s, err;
	struct termios t;
	char b[16];

	CHECK(openpty(&m, &s, NULL, NULL, NULL) == 0);
	CHECK(tcgetattr(s, &t) == 0);
	cfmakeraw(&t);
	for (int vtime = 0; vtime <= 2; vtime += 2) {
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = (cc_t)vtime;
		CHECK(tcsetattr(s, TCSANOW, &t) == 0);
		/* nothing there: 0 */
		struct aiocb cb = t_cb(s, b, sizeof(b), 0);
		CHECK_EQ(uaio_read(&cb), 0);
		CHECK_EQ(wait_2s(&cb, &err), 0);
		CHECK_EQ(err, 0);
		/* behind another read: 0 too */
		struct aiocb c1 = t_cb(s, b, sizeof(b), 0), c2 = t_cb(s, b + 8, 8, 0);
		CHECK_EQ(uaio_read(&c1), 0);
		CHECK_EQ(uaio_read(&c2), 0);
		CHECK_EQ(wait_2s(&c1, &err), 0);
		CHECK_EQ(wait_2s(&c2, &err), 0);
		/* input there (the pty says so): it, never 0 (the 1 us clock
		 * a VTIME 0 read once had could end it first, on epoll) */
		for (int round = 0; round < 1000; round++) {
			struct pollfd pf = { .fd = s, .events = POLLIN };

			CHECK(write(m, "ab", 2) == 2);
			CHECK(poll(&pf, 1, 5000) == 1);
			cb = t_cb(s, b, sizeof(b), 0);
			CHECK_EQ(uaio_read(&cb), 0);
			CHECK_EQ(wait_2s(&cb, &err), 2);
			CHECK(!memcmp(b, "ab", 2));
		}
	}
	close(m);
	close(s);
}

int main(void)
{
	int m, s;

	t_watchdog(60);
	if (openpty(&m, &s, NULL, NULL, NULL) < 0)
		SKIP("no pseudo-terminals");
	close(m);
	close(s);
	RUN(blocking);
	RUN(nonblocking);
	RUN(vmin_zero);
	return T_EXIT_PASS;
}
