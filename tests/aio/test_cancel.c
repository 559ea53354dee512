/* SPDX-License-Identifier: MIT */
/*
 * uaio_cancel, with glibc's choices: a request still queued behind
 * another on a pipe is cancelled; one already being performed (in the
 * kernel) is AIO_NOTCANCELED and finishes normally; one already done is
 * AIO_ALLDONE; all requests of a descriptor at once; cancelled requests
 * report ECANCELED and still notify; a socket write blocked on a full
 * buffer keeps going while those behind it are cancelled; bad descriptor
 * and mismatched aiocb; a cancelled request's signal handler may make
 * a request of its own (glibc's lock is recursive: no deadlock there).
 */
#include "aio/aio_util.h"
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

static void cancel_one(void)
{
	int p[2], err;
	char a[4], b[4];

	CHECK(pipe(p) == 0);
	struct aiocb first = t_cb(p[0], a, 4, 0), second = t_cb(p[0], b, 4, 0);
	t_note_by_thread(&first);
	t_note_by_thread(&second);
	CHECK_EQ(uaio_read(&first), 0);
	CHECK_EQ(uaio_read(&second), 0);
	/* second waits behind first: it never reached the kernel. */
	CHECK_EQ(uaio_cancel(p[0], &second), AIO_CANCELED);
	CHECK_EQ(uaio_error(&second), ECANCELED);
	CHECK_EQ(uaio_return(&second), -1);
	t_notes_wait(1);		/* cancelled requests notify too */
	/* first is being performed: it stays, and finishes normally. */
	CHECK_EQ(uaio_cancel(p[0], &first), AIO_NOTCANCELED);
	CHECK_EQ(uaio_error(&first), EINPROGRESS);
	CHECK(write(p[1], "1st!", 4) == 4);
	CHECK_EQ(t_wait(&first, &err), 4);
	CHECK(!memcmp(a, "1st!", 4));
	t_notes_wait(1);
	/* Done already. */
	CHECK(write(p[1], "done", 4) == 4);
	struct aiocb third = t_cb(p[0], a, 4, 0);
	CHECK_EQ(uaio_read(&third), 0);
	CHECK_EQ(t_wait(&third, &err), 4);
	CHECK_EQ(uaio_cancel(p[0], &third), AIO_ALLDONE);
	/* Never submitted, or nothing on the fd. */
	struct aiocb none = t_cb(p[0], a, 4, 0);
	CHECK_EQ(uaio_cancel(p[0], &none), AIO_ALLDONE);
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_ALLDONE);
	/* Bad input. */
	ERRNO_IS(uaio_cancel(-1, NULL), EBADF);
	ERRNO_IS(uaio_cancel(4321, &none), EBADF);
	ERRNO_IS(uaio_cancel(p[1], &none), EINVAL);
	/* The pipe still works after all that. */
	CHECK(write(p[1], "next", 4) == 4);
	struct aiocb fourth = t_cb(p[0], a, 4, 0);
	CHECK_EQ(uaio_read(&fourth), 0);
	CHECK_EQ(t_wait(&fourth, &err), 4);
	CHECK(!memcmp(a, "next", 4));
	close(p[0]);
	close(p[1]);
}

static void cancel_all_on_fd(void)
{
	enum { N = 100 };
	int p[2], q[2], err;
	char b[N][2], c[2];
	struct aiocb cbs[N], other;

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(p[0], b[i], 1, 0);
		CHECK_EQ(uaio_read(&cbs[i]), 0);
	}
	other = t_cb(q[0], c, 1, 0);
	CHECK_EQ(uaio_read(&other), 0);
	/* The first is being performed; the 99 behind it go. */
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);
	CHECK_EQ(uaio_error(&cbs[0]), EINPROGRESS);
	for (int i = 1; i < N; i++) {
		CHECK_EQ(uaio_error(&cbs[i]), ECANCELED);
		CHECK_EQ(uaio_return(&cbs[i]), -1);
	}
	/* Nothing left to cancel but the one in progress. */
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);
	/* The other descriptor's request is untouched. */
	CHECK_EQ(uaio_error(&other), EINPROGRESS);
	CHECK(write(q[1], "x", 1) == 1);
	CHECK_EQ(t_wait(&other, &err), 1);
	CHECK_EQ(c[0], 'x');
	/* The one in progress gets the first byte; the cancelled ones
	 * consumed nothing. */
	CHECK(write(p[1], "wy", 2) == 2);
	CHECK_EQ(t_wait(&cbs[0], &err), 1);
	CHECK_EQ(b[0][0], 'w');
	CHECK(read(p[0], c, 1) == 1 && c[0] == 'y');
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* All of a descriptor's waiting requests are cancelled, and notified, in
 * their queue's order, as glibc's list has them; before, in the order of
 * the records' slots, which earlier requests had shuffled. (The signal
 * may reach any thread, a notification thread of an earlier case too:
 * the handler records it wherever it runs.) */
static int order[16];
static volatile int norder;

static void on_order(int sig, siginfo_t *si, void *u)
{
	int i = __atomic_fetch_add(&norder, 1, __ATOMIC_SEQ_CST);

	(void)sig;
	(void)u;
	if (i < 16)
		order[i] = si->si_value.sival_int;
}

static void wait_order(int n)
{
	for (int i = 0; i < 20000 && __atomic_load_n(&norder, __ATOMIC_SEQ_CST) < n; i++)
		usleep(500);
	CHECK_EQ(__atomic_load_n(&norder, __ATOMIC_SEQ_CST), n);
}

static void cancel_all_in_order(void)
{
	struct sigaction sa = { .sa_sigaction = on_order, .sa_flags = SA_SIGINFO | SA_RESTART };

	CHECK(sigaction(SIGRTMIN, &sa, NULL) == 0);
	for (int churn = 0; churn <= 12; churn += 4) {
		int p[2], q[2], err;
		char junk[16], b[8];
		struct aiocb jc[16], c[8];

		CHECK(pipe(p) == 0 && pipe(q) == 0);
		/* earlier requests, ended out of order: their slots freed so */
		for (int i = 0; i < churn; i++) {
			jc[i] = t_cb(q[0], &junk[i], 1, 0);
			CHECK_EQ(uaio_read(&jc[i]), 0);
		}
		for (int i = churn - 1; i >= 0; i--)
			CHECK_EQ(uaio_cancel(q[0], &jc[i]), i ? AIO_CANCELED : AIO_NOTCANCELED);
		if (churn) {
			CHECK(write(q[1], "j", 1) == 1);
			CHECK_EQ(t_wait(&jc[0], &err), 1);
		}
		norder = 0;
		for (int i = 0; i < 8; i++) {
			c[i] = t_cb(p[0], &b[i], 1, 0);
			c[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
			c[i].aio_sigevent.sigev_signo = SIGRTMIN;
			c[i].aio_sigevent.sigev_value.sival_int = i;
			CHECK_EQ(uaio_read(&c[i]), 0);
		}
		CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);
		wait_order(7);
		for (int i = 0; i < 7; i++)
			CHECK_EQ(order[i], i + 1);
		CHECK(write(p[1], "z", 1) == 1);
		CHECK_EQ(t_wait(&c[0], &err), 1);
		wait_order(8);
		close(p[0]);
		close(p[1]);
		close(q[0]);
		close(q[1]);
	}
	signal(SIGRTMIN, SIG_IGN);
}

/* aio_cancel(fd, NULL) with an fsync running, a write held behind it, an
 * fsync waiting for that write and a write behind both: all three
 * waiting are cancelled. Cancelling the first write ended the second
 * fsync's wait, which then started and ran (NOTCANCELED for it). */
static void cancel_all_behind_fsync(void)
{
	enum { DIRTY = 64 << 20 };
	int fd = t_tmpfile(), err;
	char *big = malloc(1 << 20);
	static char b[2] = "ab";
	struct aiocb s1, w1, s2, w2;

	memset(big, 'd', 1 << 20);
	for (int i = 0; i < DIRTY >> 20; i++)	/* an fsync that takes a while */
		CHECK_EQ(pwrite(fd, big, 1 << 20, (off_t)i << 20), 1 << 20);
	s1 = t_cb(fd, NULL, 0, 0);
	w1 = t_cb(fd, b, 1, 0);
	s2 = t_cb(fd, NULL, 0, 0);
	w2 = t_cb(fd, b + 1, 1, 1);
	CHECK_EQ(uaio_fsync(O_SYNC, &s1), 0);
	CHECK_EQ(uaio_write(&w1), 0);
	CHECK_EQ(uaio_fsync(O_SYNC, &s2), 0);
	CHECK_EQ(uaio_write(&w2), 0);
	int r = uaio_cancel(fd, NULL);
	if (uaio_error(&s1) == EINPROGRESS) {	/* the usual case: it is slow */
		CHECK_EQ(r, AIO_NOTCANCELED);
		CHECK_EQ(uaio_error(&w1), ECANCELED);
		CHECK_EQ(uaio_error(&s2), ECANCELED);
		CHECK_EQ(uaio_error(&w2), ECANCELED);
	} else {
		fprintf(stderr, "    (the fsync ended before the cancel: not checked)\n");
	}
	CHECK_EQ(t_wait(&s1, &err), 0);
	(void)t_wait(&w1, &err);
	(void)t_wait(&s2, &err);
	(void)t_wait(&w2, &err);
	free(big);
	close(fd);
}

/* Cancellation racing completion: whatever aio_cancel says must match
 * the final status, and each request ends exactly once. */
static void cancel_races_completion(void)
{
	enum { N = 200 };
	int p[2], err;
	char b[N];
	struct aiocb cbs[N];
	int canceled = 0, done = 0;

	CHECK(pipe(p) == 0);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(p[0], &b[i], 1, 0);
		CHECK_EQ(uaio_read(&cbs[i]), 0);
	}
	char data[N / 2];
	memset(data, 'z', sizeof(data));
	CHECK(write(p[1], data, sizeof(data)) == (ssize_t)sizeof(data));
	for (int i = N - 1; i >= 0; i--) {
		int r = uaio_cancel(p[0], &cbs[i]);
		CHECK(r == AIO_CANCELED || r == AIO_ALLDONE || r == AIO_NOTCANCELED);
		if (r == AIO_CANCELED)
			CHECK_EQ(uaio_error(&cbs[i]), ECANCELED);
	}
	/* Whatever was being performed finishes: feed it. */
	CHECK(write(p[1], data, sizeof(data)) == (ssize_t)sizeof(data));
	for (int i = 0; i < N; i++) {
		ssize_t n = t_wait(&cbs[i], &err);
		if (err == ECANCELED) {
			CHECK_EQ(n, -1);
			canceled++;
		} else {
			CHECK_EQ(err, 0);
			CHECK_EQ(n, 1);
			done++;
		}
	}
	fprintf(stderr, "    %d read, %d cancelled\n", done, canceled);
	CHECK_EQ(done + canceled, N);
	/* Bytes read + bytes left = bytes written. */
	char rest[N];
	CHECK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
	ssize_t left = read(p[0], rest, sizeof(rest));
	CHECK_EQ(done + (left > 0 ? left : 0), N);
	close(p[0]);
	close(p[1]);
}

/*
 * A socket whose buffer is full: the first write waits in the kernel for
 * room (being performed), the later ones queue behind it. aio_cancel on
 * the descriptor cancels the queued ones (with their notifications) and
 * says AIO_NOTCANCELED; the first completes in full once the reader
 * drains, and its bytes arrive intact and alone.
 */
static void cancel_blocked_socket_write(void)
{
	enum { BIG = 1 << 20, LATER = 4 };
	int sv[2], err, sndbuf = 4096;
	char *big = malloc(BIG), *got = malloc(BIG), small[LATER][64];
	struct aiocb first, later[LATER];
	size_t have = 0;

	CHECK(big && got);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) == 0);
	t_fill(big, BIG, 5);
	first = t_cb(sv[0], big, BIG, 0);
	CHECK_EQ(uaio_write(&first), 0);
	for (int i = 0; i < LATER; i++) {
		memset(small[i], 'a' + i, sizeof(small[i]));
		later[i] = t_cb(sv[0], small[i], sizeof(small[i]), 0);
		t_note_by_thread(&later[i]);
		CHECK_EQ(uaio_write(&later[i]), 0);
	}
	CHECK_EQ(uaio_error(&first), EINPROGRESS);
	CHECK_EQ(uaio_cancel(sv[0], NULL), AIO_NOTCANCELED);
	for (int i = 0; i < LATER; i++) {
		CHECK_EQ(uaio_error(&later[i]), ECANCELED);
		CHECK_EQ(uaio_return(&later[i]), -1);
	}
	t_notes_wait(LATER);
	CHECK_EQ(uaio_error(&first), EINPROGRESS);
	/* Drain: exactly the first write's bytes, then nothing more. */
	while (have < BIG) {
		ssize_t n = read(sv[1], got + have, BIG - have);
		CHECK(n > 0);
		have += (size_t)n;
	}
	CHECK_EQ(t_wait(&first, &err), BIG);
	CHECK_EQ(err, 0);
	CHECK(!memcmp(got, big, BIG));
	CHECK(shutdown(sv[0], SHUT_WR) == 0);
	CHECK_EQ(read(sv[1], got, 1), 0);
	close(sv[0]);
	close(sv[1]);
	free(big);
	free(got);
}

static struct aiocb in_handler;
static volatile sig_atomic_t handled;

static void submit_in_handler(int sig)
{
	(void)sig;
	handled = uaio_read(&in_handler) == 0 ? 1 : -1;
}

/* The cancelled request's SIGEV_SIGNAL runs a handler that submits: it
 * must not find the engine's lock held by the aio_cancel it interrupts
 * (the watchdog ends a deadlock). */
static void cancel_signal_submits(void)
{
	int p[2], q[2], err;
	char a[4], b[4], c[4];
	struct sigaction sa = { .sa_handler = submit_in_handler };

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	struct aiocb first = t_cb(p[0], a, 4, 0), second = t_cb(p[0], b, 4, 0);
	second.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	second.aio_sigevent.sigev_signo = SIGUSR1;
	in_handler = t_cb(q[0], c, 4, 0);
	CHECK_EQ(uaio_read(&first), 0);
	CHECK_EQ(uaio_read(&second), 0);
	CHECK_EQ(uaio_cancel(p[0], &second), AIO_CANCELED);
	while (!handled)	/* delivered by now, or soon to another thread */
		usleep(1000);
	CHECK_EQ(handled, 1);
	CHECK_EQ(uaio_error(&second), ECANCELED);
	CHECK(write(q[1], "hand", 4) == 4 && write(p[1], "1st!", 4) == 4);
	CHECK_EQ(t_wait(&in_handler, &err), 4);
	CHECK_EQ(t_wait(&first, &err), 4);
	CHECK(!memcmp(c, "hand", 4));
	signal(SIGUSR1, SIG_DFL);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

int main(void)
{
	t_watchdog(60);
	RUN(cancel_one);
	RUN(cancel_all_on_fd);
	RUN(cancel_all_in_order);
	RUN(cancel_all_behind_fsync);
	RUN(cancel_races_completion);
	RUN(cancel_blocked_socket_write);
	RUN(cancel_signal_submits);
	return T_EXIT_PASS;
}
