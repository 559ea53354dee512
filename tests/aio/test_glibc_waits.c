/* SPDX-License-Identifier: MIT */
/*
 * Waiting and thread cancellation as glibc does them (found by running the
 * same programs under glibc and the drop-in):
 *  - aio_read, aio_write, aio_fsync, lio_listio and aio_cancel are no
 *    cancellation points: a thread with a cancel pending submits, and is
 *    cancelled at its next cancellation point after (the libc calls made
 *    inside acted on it: the request stayed in progress for ever, and a
 *    cancel under the engine lock hung every later call);
 *  - aio_suspend wakes for the requests it waits on only: another
 *    request's signal, handled by the waiting thread, ends it with EINTR
 *    (every completion woke it, and the handler that ran as it woke was
 *    missed: it slept on, for ever without a timeout);
 *  - a request that completes while aio_suspend waits on it ends the
 *    wait, even if a handler has submitted its aiocb anew meanwhile (the
 *    wait looked at the aiocb again, found it in progress, and slept on);
 *  - aio_cancel(fd, NULL) runs a cancelled request's handler before it
 *    sends the next one's signal: once per request (held to the end,
 *    three SIGUSR1s merged into one); and it cancels the requests waiting
 *    when it began, not those a handler submits meanwhile (a handler
 *    that submitted its aiocb anew kept it cancelling for ever).
 */
#define _GNU_SOURCE
#include "aio/aio_util.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>

static int p_pend[2], file_fd;
static char fbuf[8], pbuf[1];
static struct aiocb fcb, pcb, lcb[2], wcb, ycb;
static volatile int r_read = -9, r_write = -9, r_fsync = -9, r_lio = -9, r_cancel = -9;

static void *cancelled_submitter(void *arg)
{
	struct aiocb *list[2] = { &lcb[0], &lcb[1] };
	static char w[2] = "zz";

	(void)arg;
	CHECK_EQ(pthread_cancel(pthread_self()), 0);	/* deferred: pending */
	fcb = t_cb(file_fd, fbuf, 4, 0);
	r_read = uaio_read(&fcb);
	wcb = t_cb(file_fd, w, 2, 4096);
	r_write = uaio_write(&wcb);
	ycb = t_cb(file_fd, fbuf, 0, 0);
	r_fsync = uaio_fsync(O_SYNC, &ycb) == 0 ? 0 : -errno;
	lcb[0] = t_cb(file_fd, fbuf + 4, 4, 0);
	lcb[0].aio_lio_opcode = LIO_READ;
	lcb[1] = t_cb(file_fd, fbuf, 0, 0);
	lcb[1].aio_lio_opcode = LIO_NOP;
	r_lio = ulio_listio(LIO_WAIT, list, 2, NULL);
	r_cancel = uaio_cancel(p_pend[0], NULL);
	pthread_testcancel();
	return NULL;
}

static void no_cancellation_points(void)
{
	char data[8] = "abcdefgh";
	pthread_t th;
	void *res;
	int err;

	file_fd = t_tmpfile();
	CHECK_EQ(pwrite(file_fd, data, 8, 0), 8);
	CHECK_EQ(pipe(p_pend), 0);
	pcb = t_cb(p_pend[0], pbuf, 1, 0);	/* a stream request pending */
	CHECK_EQ(uaio_read(&pcb), 0);
	CHECK_EQ(pthread_create(&th, NULL, cancelled_submitter, NULL), 0);
	CHECK_EQ(pthread_join(th, &res), 0);
	CHECK(res == PTHREAD_CANCELED);
	CHECK_EQ(r_read, 0);
	CHECK_EQ(r_write, 0);
	CHECK_EQ(r_fsync, 0);
	CHECK_EQ(r_lio, 0);
	CHECK_EQ(r_cancel, AIO_NOTCANCELED);	/* the read under way goes on */
	CHECK_EQ(t_wait(&fcb, &err), 4);
	CHECK_EQ(memcmp(fbuf, "abcd", 4), 0);
	CHECK_EQ(t_wait(&wcb, &err), 2);
	CHECK_EQ(t_wait(&ycb, &err), 0);
	CHECK_EQ(uaio_error(&lcb[0]), 0);
	CHECK_EQ(uaio_return(&lcb[0]), 4);
	CHECK_EQ(write(p_pend[1], "x", 1), 1);
	CHECK_EQ(t_wait(&pcb, &err), 1);
	/* and the engine is free for the next caller */
	pcb = t_cb(p_pend[1], "y", 1, 0);
	CHECK_EQ(uaio_write(&pcb), 0);
	CHECK_EQ(t_wait(&pcb, &err), 1);
	close(p_pend[0]);
	close(p_pend[1]);
	close(file_fd);
}

/* ------------------------------------------------ aio_suspend's wakes */

static atomic_int hits;
static pid_t main_tid;

/* Until thread tid sleeps in a futex wait (aio_suspend's): no sleep of a
 * guessed length, which a loaded machine may outlast. */
static void until_asleep(pid_t tid)
{
	char path[64], line[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	for (;;) {
		FILE *f = fopen(path, "r");
		int nr = -1;

		CHECK(f);
		if (fgets(line, sizeof(line), f))
			nr = atoi(line);
		fclose(f);
		if (nr == SYS_futex)
			return;
		usleep(1000);
	}
}
static int sp[2], op[2];
static char sbuf[1], obuf[1];
static struct aiocb scb, ocb;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&hits, 1);
}

/* Completes ocb (its own signal: SIGUSR1) from another thread a little
 * after the main thread went to sleep on scb. */
static void *complete_other(void *arg)
{
	(void)arg;
	until_asleep(main_tid);
	CHECK_EQ(write(op[1], "o", 1), 1);
	return NULL;
}

static void other_signal_interrupts(int timed)
{
	const struct aiocb *list[1] = { &scb };
	struct timespec ts = { 20, 0 };
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigset_t block;
	pthread_t th;
	int r, err;

	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);	/* no SA_RESTART */
	CHECK_EQ(pipe(sp), 0);
	CHECK_EQ(pipe(op), 0);
	atomic_store(&hits, 0);
	scb = t_cb(sp[0], sbuf, 1, 0);
	ocb = t_cb(op[0], obuf, 1, 0);
	ocb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	ocb.aio_sigevent.sigev_signo = SIGUSR1;
	CHECK_EQ(uaio_read(&scb), 0);
	CHECK_EQ(uaio_read(&ocb), 0);
	/* only this thread takes the signal */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	CHECK_EQ(pthread_sigmask(SIG_BLOCK, &block, NULL), 0);
	CHECK_EQ(pthread_create(&th, NULL, complete_other, NULL), 0);
	CHECK_EQ(pthread_sigmask(SIG_UNBLOCK, &block, NULL), 0);
	r = uaio_suspend(list, 1, timed ? &ts : NULL);
	err = errno;
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(r, -1);
	CHECK_EQ(err, EINTR);
	CHECK_EQ(atomic_load(&hits), 1);
	CHECK_EQ(t_wait(&ocb, &err), 1);
	CHECK_EQ(uaio_error(&scb), EINPROGRESS);
	CHECK_EQ(write(sp[1], "s", 1), 1);
	CHECK_EQ(t_wait(&scb, &err), 1);
	for (int i = 0; i < 2; i++) {
		close(sp[i]);
		close(op[i]);
	}
}

static void other_signal_untimed(void)
{
	other_signal_interrupts(0);
}

static void other_signal_timed(void)
{
	other_signal_interrupts(1);
}

/* The handler of scb's own completion takes its status and submits the
 * aiocb anew (a read of the same pipe): the wait on it still ends, 0. */
static void rearm_in_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code != SI_ASYNCIO || si->si_value.sival_ptr != &scb)
		return;
	atomic_fetch_add(&hits, 1);
	if (atomic_load(&hits) == 1) {
		CHECK_EQ(uaio_return(&scb), 1);
		CHECK_EQ(uaio_read(&scb), 0);
	}
}

static void *feed_one(void *arg)
{
	(void)arg;
	until_asleep(main_tid);
	CHECK_EQ(write(sp[1], "s", 1), 1);
	return NULL;
}

static void resubmitted_in_handler(void)
{
	const struct aiocb *list[1] = { &scb };
	struct timespec ts = { 20, 0 };
	struct sigaction sa = { .sa_sigaction = rearm_in_handler,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	pthread_t th;
	int err;

	CHECK_EQ(sigaction(SIGUSR2, &sa, NULL), 0);
	CHECK_EQ(pipe(sp), 0);
	atomic_store(&hits, 0);
	scb = t_cb(sp[0], sbuf, 1, 0);
	scb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	scb.aio_sigevent.sigev_signo = SIGUSR2;
	scb.aio_sigevent.sigev_value.sival_ptr = &scb;
	CHECK_EQ(uaio_read(&scb), 0);
	CHECK_EQ(pthread_create(&th, NULL, feed_one, NULL), 0);
	CHECK_EQ(uaio_suspend(list, 1, &ts), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(atomic_load(&hits), 1);
	CHECK_EQ(uaio_error(&scb), EINPROGRESS);	/* the new read */
	CHECK_EQ(write(sp[1], "t", 1), 1);
	CHECK_EQ(t_wait(&scb, &err), 1);
	close(sp[0]);
	close(sp[1]);
}

/* Four one-byte reads of fd, each signalling SIGUSR1 with its own aiocb
 * as the value: the first runs, three wait behind it. */
static void queue_signalled_reads(struct aiocb c[4], char b[4][1], int fd)
{
	for (int i = 0; i < 4; i++) {
		c[i] = t_cb(fd, b[i], 1, 0);
		c[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		c[i].aio_sigevent.sigev_signo = SIGUSR1;
		c[i].aio_sigevent.sigev_value.sival_ptr = &c[i];
		CHECK_EQ(uaio_read(&c[i]), 0);
	}
}

static void cancel_signals_each(void)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct aiocb c[4];
	char b[4][1];
	int p[2], err, at_return;

	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ(pipe(p), 0);
	atomic_store(&hits, 0);
	queue_signalled_reads(c, b, p[0]);
	/* c[0] is under way: AIO_NOTCANCELED, the three behind it cancelled */
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);
	at_return = atomic_load(&hits);
	for (int i = 1; i < 4; i++)
		CHECK_EQ(uaio_error(&c[i]), ECANCELED);
	CHECK_EQ(at_return, 3);
	CHECK_EQ(write(p[1], "x", 1), 1);
	CHECK_EQ(t_wait(&c[0], &err), 1);
	for (int i = 1; i < 4; i++)
		CHECK_EQ(uaio_return(&c[i]), -1);
	close(p[0]);
	close(p[1]);
}

static struct aiocb rc[4];

static void rearm_cancelled(int sig, siginfo_t *si, void *uc)
{
	struct aiocb *cb = si->si_value.sival_ptr;

	(void)sig;
	(void)uc;
	atomic_fetch_add(&hits, 1);
	if (uaio_error(cb) == ECANCELED) {
		CHECK_EQ(uaio_return(cb), -1);
		CHECK_EQ(uaio_read(cb), 0);	/* at the queue's end again */
	}
}

static void cancel_with_rearming_handler(void)
{
	struct sigaction sa = { .sa_sigaction = rearm_cancelled,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	char b[4][1];
	int p[2], err;

	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ(pipe(p), 0);
	atomic_store(&hits, 0);
	queue_signalled_reads(rc, b, p[0]);
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);
	CHECK_EQ(atomic_load(&hits), 3);
	for (int i = 1; i < 4; i++)
		CHECK_EQ(uaio_error(&rc[i]), EINPROGRESS);	/* submitted anew */
	CHECK_EQ(write(p[1], "abcd", 4), 4);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(t_wait(&rc[i], &err), 1);
	close(p[0]);
	close(p[1]);
}

/* A cancelled request's handler cancels another descriptor's requests:
 * the outer aio_cancel still cancels all it began with (the inner one's
 * marking wiped the outer's: two requests left to run, AIO_CANCELED). */
static int other_fd = -1;

static void cancel_other(int sig)
{
	(void)sig;
	atomic_fetch_add(&hits, 1);
	(void)uaio_cancel(other_fd, NULL);
}

static void cancel_nested_other_fd(void)
{
	struct sigaction sa = { .sa_handler = cancel_other, .sa_flags = SA_RESTART };
	struct aiocb c[4], o;
	char b[4][1], ob[1];
	int p[2], q[2], err;

	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(pipe(q), 0);
	other_fd = q[0];
	atomic_store(&hits, 0);
	o = t_cb(q[0], ob, 1, 0);
	CHECK_EQ(uaio_read(&o), 0);
	queue_signalled_reads(c, b, p[0]);
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);
	for (int i = 1; i < 4; i++)
		CHECK_EQ(uaio_error(&c[i]), ECANCELED);
	CHECK_EQ(atomic_load(&hits), 3);
	CHECK_EQ(write(p[1], "x", 1), 1);
	CHECK_EQ(t_wait(&c[0], &err), 1);
	CHECK_EQ(write(q[1], "y", 1), 1);
	CHECK_EQ(t_wait(&o, &err), 1);
	for (int i = 0; i < 2; i++) {
		close(p[i]);
		close(q[i]);
	}
}

/* A handler that interrupts this thread's wait forks: in the child the
 * wait goes on as the parent's (the child's reset of the parent's records
 * closed this thread's own, and its wait returned 0, nothing done). */
static pid_t forked = -1;

static void fork_in_handler(int sig)
{
	(void)sig;
	forked = fork();
}

static void *kick_main(void *arg)
{
	(void)arg;
	until_asleep(main_tid);
	CHECK_EQ(syscall(SYS_tgkill, getpid(), main_tid, SIGUSR2), 0);
	return NULL;
}

static void fork_during_wait(void)
{
	const struct aiocb *list[1] = { &scb };
	struct timespec ts = { 20, 0 };
	struct sigaction sa = { .sa_handler = fork_in_handler };
	pthread_t th;
	int r, err, status;

	CHECK_EQ(sigaction(SIGUSR2, &sa, NULL), 0);
	CHECK_EQ(pipe(sp), 0);
	scb = t_cb(sp[0], sbuf, 1, 0);
	CHECK_EQ(uaio_read(&scb), 0);
	CHECK_EQ(pthread_create(&th, NULL, kick_main, NULL), 0);
	r = uaio_suspend(list, 1, &ts);
	err = errno;
	if (forked == 0)	/* the child: as the parent, interrupted */
		_exit(r == -1 && err == EINTR && uaio_error(&scb) == EINPROGRESS ? 0 : 3);
	CHECK(forked > 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_EQ(r, -1);
	CHECK_EQ(err, EINTR);
	CHECK_EQ(waitpid(forked, &status, 0), forked);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	CHECK_EQ(write(sp[1], "s", 1), 1);
	CHECK_EQ(t_wait(&scb, &err), 1);
	close(sp[0]);
	close(sp[1]);
}

int main(void)
{
	main_tid = gettid();
	t_watchdog(60);
	RUN(no_cancellation_points);
	RUN(other_signal_untimed);
	RUN(other_signal_timed);
	RUN(resubmitted_in_handler);
	RUN(cancel_signals_each);
	RUN(cancel_with_rearming_handler);
	RUN(cancel_nested_other_fd);
	RUN(fork_during_wait);
	return T_EXIT_PASS;
}
