/* SPDX-License-Identifier: MIT */
/*
 * The far end goes away, or the caller closes its own descriptor, while a
 * call waits in the background (laio_syscall(3), docs/laio.md):
 * - a write to a pipe or socket whose reader is gone ends with what it
 *   wrote, or EPIPE, and raises no SIGPIPE (default action here: the test
 *   would die of it), whichever thread runs the loop, and leaves none
 *   pending for a thread that blocks the signal;
 * - a read whose descriptor the caller closes goes on with the file, as a
 *   plain read blocked in it does: the peer can still write to it, and the
 *   call ends with the bytes, on either backend, never waits for ever.
 */
#include "laio/laio_util.h"
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

static char big[1 << 20];

/* A blocking write of 1 MiB goes to the background after the room the
 * pipe or socket had; then the reader is closed. */
static void write_then_reader_gone(long nr, bool sock, bool blocked)
{
	int p[2], w, rd;
	sigset_t set, pend;
	struct laio_completion c;
	void *h;

	if (sock)
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0);
	else
		CHECK(pipe(p) == 0);
	w = sock ? p[0] : p[1];
	rd = sock ? p[1] : p[0];
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	CHECK(pthread_sigmask(blocked ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL) == 0);
	if (nr == SYS_sendto)
		h = BG(laio_syscall(SYS_sendto, w, big, sizeof(big), 0, 0, 0));
	else
		h = BG(laio_syscall(SYS_write, w, big, sizeof(big)));
	CHECK(close(rd) == 0);
	c = wait_one(h);
	/* what the room took before, or nothing and EPIPE */
	CHECK((c.laio_return_value > 0 && c.laio_return_value < (long)sizeof(big)) ||
	      (c.laio_return_value == -1 && c.laio_errno == EPIPE));
	CHECK(sigpending(&pend) == 0);
	CHECK(!sigismember(&pend, SIGPIPE));
	/* the plain call raises it, as the caller's own write does */
	if (blocked) {
		CHECK(write(w, "x", 1) == -1 && errno == EPIPE);
		CHECK(sigpending(&pend) == 0 && sigismember(&pend, SIGPIPE));
		CHECK(sigwaitinfo(&set, NULL) == SIGPIPE);
		CHECK(pthread_sigmask(SIG_UNBLOCK, &set, NULL) == 0);
	}
	close(w);
}

static void no_sigpipe(void)
{
	CHECK(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
	for (int blocked = 0; blocked < 2; blocked++) {
		write_then_reader_gone(SYS_write, false, blocked);
		write_then_reader_gone(SYS_write, true, blocked);
		write_then_reader_gone(SYS_sendto, true, blocked);
	}
}

/* The caller closes the descriptor its background read waits on. */
static void read_after_close(void)
{
	int sv[2], p[2];
	char b[8] = { 0 }, o[8];
	struct laio_completion c;
	void *h;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	h = BG(laio_syscall(SYS_read, sv[0], b, 5));
	CHECK(close(sv[0]) == 0);
	/* the number again, for another file that becomes readable first:
	 * the call neither reads it nor ends for it */
	CHECK(pipe(p) == 0);
	if (p[0] != sv[0]) {
		CHECK(dup2(p[0], sv[0]) == sv[0]);
		close(p[0]);
		p[0] = sv[0];
	}
	CHECK_EQ(write(p[1], "other", 5), 5);
	usleep(20000);
	/* the socket is still open for the call: no EPIPE here */
	CHECK_EQ(write(sv[1], "hello", 5), 5);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 5);
	CHECK(!memcmp(b, "hello", 5));
	CHECK_EQ(read(p[0], o, sizeof(o)), 5);
	CHECK(!memcmp(o, "other", 5));
	close(p[0]);
	close(p[1]);
	/* the call's hold is gone with it: the peer sees the close now */
	CHECK(send(sv[1], "x", 1, MSG_NOSIGNAL) == -1 && errno == EPIPE);
	close(sv[1]);
}

/* A background call on an eventfd, then its number reused for a file
 * epoll cannot watch (a memfd): the next call there completes (on the
 * epoll backend the stale registration's EPERM lost it: done by a
 * worker, never reported). */
static void reused_unpollable(void)
{
	uint64_t v = 0;
	char b[16];
	struct laio_completion c;
	int efd, m;
	void *h;

	CHECK((efd = eventfd(0, EFD_CLOEXEC)) >= 0);
	h = BG(laio_syscall(SYS_read, efd, &v, sizeof(v)));
	v = 7;
	CHECK_EQ(write(efd, &v, sizeof(v)), 8);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 8);
	CHECK(close(efd) == 0);
	CHECK((m = memfd_create("reused", MFD_CLOEXEC)) >= 0);
	if (m != efd) {
		CHECK(dup2(m, efd) == efd);
		close(m);
		m = efd;
	}
	CHECK_EQ(write(m, "abcdef", 6), 6);
	for (int i = 0; i < 2; i++) {
		struct any_res a = ANY(laio_syscall(SYS_pread64, m, b, sizeof(b), 0));

		CHECK_EQ(a.ret, 6);
		CHECK(!memcmp(b, "abcdef", 6));
	}
	close(m);
}

/* More calls waiting than the epoll backend's pin budget (a quarter of
 * RLIMIT_NOFILE): the last one still holds its socket open when the
 * caller closes its descriptor (a draft left it without a duplicate
 * past the budget: the peer's write got EPIPE), and ends with the bytes
 * or, past the budget on epoll, EBADF. */
#define MANY 1050
static void many_held(void)
{
	struct rlimit rl = { 4096, 4096 };
	static int sv[MANY][2];
	static char b[MANY][8];
	static void *h[MANY];
	static struct laio_completion c[MANY];
	struct timespec ts = { 10, 0 };
	int got = 0;

	/* 1024 pins, then plain duplicates */
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		fprintf(stderr, "    skipped: RLIMIT_NOFILE 4096 not allowed\n");
		return;
	}
	for (int i = 0; i < MANY; i++) {
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]) == 0);
		memset(b[i], 0, sizeof(b[i]));
		h[i] = BG(laio_syscall(SYS_read, sv[i][0], b[i], 5));
	}
	CHECK(close(sv[MANY - 1][0]) == 0);
	for (int i = 0; i < MANY; i++)
		CHECK_EQ(send(sv[i][1], "hello", 5, MSG_NOSIGNAL), 5);
	while (got < MANY) {
		int n = laio_poll(c, MANY, &ts);

		CHECK(n > 0);
		for (int k = 0; k < n; k++) {
			int i = handle_index(h, MANY, &c[k]);

			CHECK((c[k].laio_return_value == 5 && !memcmp(b[i], "hello", 5)) ||
			      (i == MANY - 1 && !strcmp(laio__backend_name(), "epoll") &&
			       c[k].laio_return_value == -1 && c[k].laio_errno == EBADF));
		}
		got += n;
	}
	for (int i = 0; i < MANY; i++) {
		if (i < MANY - 1)
			close(sv[i][0]);
		close(sv[i][1]);
	}
}

static void all(void)
{
	RUN(no_sigpipe);
	RUN(read_after_close);
	RUN(reused_unpollable);
}

int main(void)
{
	alarm(120);	/* a hang is a failure */
	RUN_MECHS(all);
	RUN_MECHS(many_held);
	return T_EXIT_PASS;
}
