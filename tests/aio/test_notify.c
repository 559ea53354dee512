/* SPDX-License-Identifier: MIT */
/*
 * Notification: SIGEV_SIGNAL queued with SI_ASYNCIO and the caller's
 * sigev_value, SIGEV_THREAD on a thread started only when first needed,
 * both arriving while the program sleeps (sigsuspend, sem_wait) without
 * calling into the library; lio_listio's own sigevent plus each request's.
 */
#include "aio/aio_util.h"
#include <pthread.h>
#include <semaphore.h>

static int SIG_A, SIG_B, SIG_C;

struct writer {
	int fd;
	const char *msg;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	CHECK(write(w->fd, w->msg, strlen(w->msg)) == (ssize_t)strlen(w->msg));
	return NULL;
}

static pthread_t start_writer(struct writer *w)
{
	pthread_t t;

	CHECK(pthread_create(&t, NULL, writer_main, w) == 0);
	return t;
}

/* ---- SIGEV_SIGNAL while sleeping in sigsuspend ---- */

static volatile sig_atomic_t got_sig, got_code, got_val, status_in_handler = -2;
static struct aiocb *handler_cb;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	got_sig = sig;
	got_code = si->si_code;
	got_val = si->si_value.sival_int;
	/* aio_error is async-signal-safe; the status is final already. */
	status_in_handler = uaio_error(handler_cb);
}

static void signal_while_sleeping(void)
{
	struct sigaction sa = { 0 };
	sigset_t block, old;
	int p[2], err;
	char b[16];

	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO;
	CHECK(sigaction(SIG_A, &sa, NULL) == 0);
	sigemptyset(&block);
	sigaddset(&block, SIG_A);
	CHECK(pthread_sigmask(SIG_BLOCK, &block, &old) == 0);

	CHECK(pipe(p) == 0);
	struct aiocb cb = t_cb(p[0], b, sizeof(b), 0);
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIG_A;
	cb.aio_sigevent.sigev_value.sival_int = 0x1234;
	handler_cb = &cb;
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(uaio_error(&cb), EINPROGRESS);
	struct writer w = { p[1], "wake" };
	pthread_t t = start_writer(&w);
	sigset_t wait = old;
	sigdelset(&wait, SIG_A);
	while (!got_sig)
		sigsuspend(&wait);
	CHECK_EQ(got_sig, SIG_A);
	CHECK_EQ(got_code, SI_ASYNCIO);
	CHECK_EQ(got_val, 0x1234);
	CHECK_EQ(status_in_handler, 0);
	CHECK_EQ(t_wait(&cb, &err), 4);
	pthread_join(t, NULL);
	CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
	close(p[0]);
	close(p[1]);
}

/* ---- SIGEV_SIGNAL for a request that finishes inside the call ---- */

static void signal_inline(void)
{
	int fd = t_tmpfile(), err;
	char b[8];
	sigset_t set;
	siginfo_t si;

	sigemptyset(&set);
	sigaddset(&set, SIG_B);
	CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
	CHECK(pwrite(fd, "cached!!", 8, 0) == 8);
	struct aiocb cb = t_cb(fd, b, 8, 0);
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIG_B;
	cb.aio_sigevent.sigev_value.sival_ptr = &cb;
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(sigwaitinfo(&set, &si), SIG_B);
	CHECK_EQ(si.si_code, SI_ASYNCIO);
	CHECK(si.si_value.sival_ptr == &cb);
	CHECK_EQ(si.si_pid, getpid());
	CHECK_EQ(t_wait(&cb, &err), 8);
	close(fd);
}

/* ---- a worker's request that finishes inside its call: the signal
 * goes to the main thread, which does not block it, as glibc's helper
 * thread's does (queued to the process, the worker, unblocking it after,
 * took it itself: a main thread waiting for it in sigsuspend slept on) ---- */

static volatile sig_atomic_t c_runs;
static volatile pid_t c_tid;

static void on_c(int sig)
{
	c_runs++;
	c_tid = gettid();
}

struct inline_worker {
	sem_t go;	/* pthread_create blocks the main thread's signals */
	int fd;
	char b[8];
	struct aiocb cb;
};

static void *inline_worker_main(void *arg)
{
	struct inline_worker *w = arg;

	while (sem_wait(&w->go) < 0)
		CHECK_EQ(errno, EINTR);
	w->cb = t_cb(w->fd, w->b, 8, 0);
	w->cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	w->cb.aio_sigevent.sigev_signo = SIG_C;
	CHECK_EQ(uaio_read(&w->cb), 0);
	CHECK_EQ(uaio_error(&w->cb), 0);	/* cached: done inside the call */
	return NULL;
}

static void signal_inline_other_thread(void)
{
	struct sigaction sa = { .sa_handler = on_c }, old_sa;
	struct inline_worker w = { .fd = t_tmpfile() };
	sigset_t set, old;
	int on_main = 0;

	CHECK(pwrite(w.fd, "cached!!", 8, 0) == 8);
	CHECK(sem_init(&w.go, 0, 0) == 0);
	CHECK(sigaction(SIG_C, &sa, &old_sa) == 0);
	sigemptyset(&set);
	sigaddset(&set, SIG_C);
	/* neither thread blocks it: the kernel's choice, then, is the main
	 * thread (it sleeps in pthread_join meanwhile) */
	CHECK(pthread_sigmask(SIG_UNBLOCK, &set, &old) == 0);
	for (int i = 0; i < 100; i++) {
		pthread_t t;

		c_runs = 0;
		c_tid = 0;
		CHECK(pthread_create(&t, NULL, inline_worker_main, &w) == 0);
		CHECK(sem_post(&w.go) == 0);
		CHECK(pthread_join(t, NULL) == 0);
		CHECK_EQ(c_runs, 1);
		on_main += c_tid == gettid();
	}
	CHECK_EQ(on_main, 100);
	CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
	CHECK(sigaction(SIG_C, &old_sa, NULL) == 0);
	sem_destroy(&w.go);
	close(w.fd);
}

/* ---- the calling thread's own handler, run before the call returns
 * for the request that finished inside it: it finds it done, takes its
 * result and submits it again ---- */

static struct aiocb *own_cb;
static volatile sig_atomic_t own_runs, own_err = -2, own_susp = -2, own_ret = -2,
			     own_again = -2;

static void on_own(int sig)
{
	const struct aiocb *list[1] = { own_cb };

	if (own_runs++)
		return;		/* the second request's */
	own_err = uaio_error(own_cb);
	own_susp = uaio_suspend(list, 1, NULL);
	own_ret = (sig_atomic_t)uaio_return(own_cb);
	own_cb->aio_offset = 4;
	own_again = uaio_read(own_cb);
}

static void signal_inline_own_handler(void)
{
	struct sigaction sa = { .sa_handler = on_own }, old_sa;
	int fd = t_tmpfile(), err;
	char b[8];
	sigset_t set, old;

	CHECK(pwrite(fd, "cached!!", 8, 0) == 8);
	CHECK(sigaction(SIG_C, &sa, &old_sa) == 0);
	sigemptyset(&set);
	sigaddset(&set, SIG_C);
	CHECK(pthread_sigmask(SIG_UNBLOCK, &set, &old) == 0);
	struct aiocb cb = t_cb(fd, b, 8, 0);
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIG_C;
	own_cb = &cb;
	CHECK_EQ(uaio_read(&cb), 0);
	/* the only thread that takes it: its handler ran in the call */
	CHECK(own_runs >= 1);
	CHECK_EQ(own_err, 0);
	CHECK_EQ(own_susp, 0);
	CHECK_EQ(own_ret, 8);
	CHECK_EQ(own_again, 0);
	CHECK_EQ(t_wait(&cb, &err), 4);	/* the second read, from offset 4 */
	CHECK(!memcmp(b, "ed!!", 4));
	/* its signal was pending once it was done: taken at the next return
	 * from the kernel */
	getppid();
	CHECK_EQ(own_runs, 2);
	CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
	CHECK(sigaction(SIG_C, &old_sa, NULL) == 0);
	close(fd);
}

/* ---- the signal is pending once aio_suspend returns ---- */

struct late_writer {
	sem_t go;
	int fd, n;
	bool poll;		/* the waiter polls aio_error: no nap */
};

static void *late_writer_main(void *arg)
{
	struct late_writer *w = arg;

	for (int i = 0; i < w->n; i++) {
		while (sem_wait(&w->go) < 0)
			CHECK(errno == EINTR);
		if (!w->poll)
			usleep(50);	/* the waiter is asleep in aio_suspend by now */
		CHECK(write(w->fd, "x", 1) == 1);
	}
	return NULL;
}

/* glibc queues a request's signal before it wakes the request's waiters,
 * and before aio_error can tell it done (its lock is held across both):
 * a program may take the signal (sigtimedwait, no timeout) as soon as its
 * aio_suspend returned, or aio_error said done. A race where that order
 * is wrong: many rounds. */
static void signal_before_done(bool poll)
{
	struct late_writer w = { .n = poll ? 5000 : 1000, .poll = poll };
	struct timespec zero = { 0, 0 };
	sigset_t set, old;
	int p[2], missed = 0;
	pthread_t t;
	char b;

	sigemptyset(&set);
	sigaddset(&set, SIG_B);
	CHECK(pthread_sigmask(SIG_BLOCK, &set, &old) == 0);
	CHECK(pipe(p) == 0);
	CHECK(sem_init(&w.go, 0, 0) == 0);
	w.fd = p[1];
	CHECK(pthread_create(&t, NULL, late_writer_main, &w) == 0);
	for (int i = 0; i < w.n; i++) {
		struct aiocb cb = t_cb(p[0], &b, 1, 0);
		const struct aiocb *l[1] = { &cb };

		cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		cb.aio_sigevent.sigev_signo = SIG_B;
		CHECK_EQ(uaio_read(&cb), 0);
		sem_post(&w.go);
		while (uaio_error(&cb) == EINPROGRESS)
			CHECK(poll || uaio_suspend(l, 1, NULL) == 0 || errno == EINTR);
		if (sigtimedwait(&set, NULL, &zero) != SIG_B) {
			missed++;
			CHECK(sigwaitinfo(&set, NULL) == SIG_B);
		}
		CHECK_EQ(uaio_return(&cb), 1);
	}
	CHECK_EQ(missed, 0);
	pthread_join(t, NULL);
	sem_destroy(&w.go);
	CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
	close(p[0]);
	close(p[1]);
}

static void signal_before_waiters(void)
{
	signal_before_done(false);
}

static void signal_before_status(void)
{
	signal_before_done(true);
}

/* ---- SIGEV_THREAD while the caller waits on a semaphore ---- */

struct tnote {
	sem_t sem;
	struct aiocb *cb;
	pthread_t main;
	int err;
	ssize_t ret;
	int other_thread;
	int blocked;		/* signals the callback ran with blocked */
};

static void on_thread(union sigval v)
{
	struct tnote *n = v.sival_ptr;

	sigset_t cur;

	n->other_thread = !pthread_equal(pthread_self(), n->main);
	/* glibc runs the callback with an empty signal mask. */
	CHECK(pthread_sigmask(SIG_SETMASK, NULL, &cur) == 0);
	n->blocked = 0;
	for (int s = 1; s < NSIG; s++)
		n->blocked += sigismember(&cur, s) == 1;
	n->err = uaio_error(n->cb);
	n->ret = uaio_return(n->cb);
	sem_post(&n->sem);
}

static void thread_notification(void)
{
	int p[2];
	char b[16];
	struct tnote n = { .main = pthread_self() };

	CHECK_EQ(uaio__notify_threads(), 0);
	CHECK(sem_init(&n.sem, 0, 0) == 0);
	CHECK(pipe(p) == 0);
	struct aiocb cb = t_cb(p[0], b, sizeof(b), 0);
	cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb.aio_sigevent.sigev_notify_function = on_thread;
	cb.aio_sigevent.sigev_value.sival_ptr = &n;
	n.cb = &cb;
	CHECK_EQ(uaio_read(&cb), 0);
	/* No notification yet: no thread yet. */
	CHECK_EQ(uaio__notify_threads(), 0);
	struct writer w = { p[1], "thread" };
	pthread_t t = start_writer(&w);
	while (sem_wait(&n.sem) < 0)
		CHECK(errno == EINTR);
	CHECK(n.other_thread);
	CHECK_EQ(n.blocked, 0);
	CHECK_EQ(n.err, 0);
	CHECK_EQ(n.ret, 6);
	CHECK(!memcmp(b, "thread", 6));
	CHECK(uaio__notify_threads() >= 1);
	pthread_join(t, NULL);

	/* With thread attributes: a thread of its own, detached. */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1 << 20);
	cb = t_cb(p[0], b, sizeof(b), 0);
	cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb.aio_sigevent.sigev_notify_function = on_thread;
	cb.aio_sigevent.sigev_notify_attributes = &attr;
	cb.aio_sigevent.sigev_value.sival_ptr = &n;
	CHECK_EQ(uaio_read(&cb), 0);
	w.msg = "attr";
	t = start_writer(&w);
	while (sem_wait(&n.sem) < 0)
		CHECK(errno == EINTR);
	CHECK_EQ(n.ret, 4);
	CHECK_EQ(n.blocked, 0);
	pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
	sem_destroy(&n.sem);
	close(p[0]);
	close(p[1]);
}

/* ---- SIGEV_THREAD: the caller's memory is its own once done ---- */

static sem_t reuse_sem;

static void on_reuse(union sigval v)
{
	CHECK_EQ(v.sival_int, 7);
	sem_post(&reuse_sem);
}

/* Lets the read end, spins until it is seen done, then destroys, scribbles
 * over and frees what the program owns. */
static void done_then_scribble(int wfd, struct aiocb *cb, pthread_attr_t *attr)
{
	CHECK(write(wfd, "x", 1) == 1);
	while (uaio_error(cb) == EINPROGRESS)
		;
	CHECK_EQ(uaio_return(cb), 1);
	pthread_attr_destroy(attr);
	memset(attr, 0xa5, sizeof(*attr));
	memset(cb, 0xa5, sizeof(*cb));
	free(attr);
	free(cb);
}

/* The aiocb and the thread attributes its sigevent names may be destroyed
 * and reused the moment the request is seen done (aio_error): nothing of
 * them is read after that. The program spins on aio_error, so it sees the
 * end at once, while the completing thread would still be on its way to
 * making the notification thread (with attributes scribbled over: a crash,
 * a lost notification, or under ASan a use after free). */
static void thread_attrs_reused(void)
{
	enum { N = 300 };
	int p[2];

	CHECK(sem_init(&reuse_sem, 0, 0) == 0);
	CHECK(pipe(p) == 0);
	for (int i = 0; i < N; i++) {
		struct aiocb *cb = malloc(sizeof(*cb));
		pthread_attr_t *attr = malloc(sizeof(*attr));
		static char b[1];

		CHECK(cb && attr);
		pthread_attr_init(attr);
		pthread_attr_setdetachstate(attr, PTHREAD_CREATE_DETACHED);
		*cb = t_cb(p[0], b, 1, 0);
		cb->aio_sigevent.sigev_notify = SIGEV_THREAD;
		cb->aio_sigevent.sigev_notify_function = on_reuse;
		cb->aio_sigevent.sigev_notify_attributes = attr;
		cb->aio_sigevent.sigev_value.sival_int = 7;
		CHECK_EQ(uaio_read(cb), 0);
		done_then_scribble(p[1], cb, attr);
	}
	/* The same for a LIO_NOWAIT list's own sigevent: its thread is made
	 * before the last entry is seen done. */
	for (int i = 0; i < N; i++) {
		struct aiocb *cb = malloc(sizeof(*cb));
		struct sigevent *sev = malloc(sizeof(*sev));
		pthread_attr_t *attr = malloc(sizeof(*attr));
		static char b[1];

		CHECK(cb && sev && attr);
		pthread_attr_init(attr);
		pthread_attr_setdetachstate(attr, PTHREAD_CREATE_DETACHED);
		*cb = t_cb(p[0], b, 1, 0);
		cb->aio_lio_opcode = LIO_READ;
		cb->aio_sigevent.sigev_notify = SIGEV_NONE;
		memset(sev, 0, sizeof(*sev));
		sev->sigev_notify = SIGEV_THREAD;
		sev->sigev_notify_function = on_reuse;
		sev->sigev_notify_attributes = attr;
		sev->sigev_value.sival_int = 7;
		CHECK_EQ(ulio_listio(LIO_NOWAIT, &cb, 1, sev), 0);
		memset(sev, 0xa5, sizeof(*sev));	/* copied by the call */
		free(sev);
		done_then_scribble(p[1], cb, attr);
	}
	for (int i = 0; i < 2 * N; i++)
		while (sem_wait(&reuse_sem) < 0)
			CHECK(errno == EINTR);
	sem_destroy(&reuse_sem);
	close(p[0]);
	close(p[1]);
}

/* ---- lio_listio(LIO_NOWAIT) with its own sigevent ---- */

static void lio_nowait_signal(void)
{
	int fd = t_tmpfile(), p[2], err;
	char a[4], b[4], c[8];
	sigset_t set;
	siginfo_t si;
	int seen_a = 0, seen_b = 0;

	sigemptyset(&set);
	sigaddset(&set, SIG_A);
	sigaddset(&set, SIG_B);
	CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
	CHECK(pwrite(fd, "AAAABBBB", 8, 0) == 8);
	CHECK(pipe(p) == 0);
	struct aiocb ca = t_cb(fd, a, 4, 0), cbb = t_cb(fd, b, 4, 4),
		     cp = t_cb(p[0], c, sizeof(c), 0);
	ca.aio_lio_opcode = cbb.aio_lio_opcode = cp.aio_lio_opcode = LIO_READ;
	/* One entry also asks for its own signal. */
	cp.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cp.aio_sigevent.sigev_signo = SIG_B;
	cp.aio_sigevent.sigev_value.sival_int = 7;
	struct aiocb *list[4] = { &ca, NULL, &cbb, &cp };
	struct sigevent sev = { 0 };
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIG_A;
	sev.sigev_value.sival_int = 99;
	CHECK_EQ(ulio_listio(LIO_NOWAIT, list, 4, &sev), 0);
	/* The pipe read holds the list back: no list signal yet. */
	struct timespec zero = { 0, 0 };
	CHECK_EQ(sigtimedwait(&set, &si, &zero), -1);
	CHECK_EQ(uaio_error(&cp), EINPROGRESS);
	struct writer w = { p[1], "pipe" };
	pthread_t t = start_writer(&w);
	while (!seen_a || !seen_b) {
		int s = sigwaitinfo(&set, &si);
		CHECK(s == SIG_A || s == SIG_B);
		CHECK_EQ(si.si_code, SI_ASYNCIO);
		if (s == SIG_A) {
			CHECK_EQ(si.si_value.sival_int, 99);
			/* The list is done only when all of it is. */
			CHECK_EQ(uaio_error(&cp), 0);
			seen_a++;
		} else {
			CHECK_EQ(si.si_value.sival_int, 7);
			seen_b++;
		}
	}
	CHECK_EQ(seen_a, 1);
	CHECK_EQ(t_wait(&ca, &err), 4);
	CHECK_EQ(t_wait(&cbb, &err), 4);
	CHECK_EQ(t_wait(&cp, &err), 4);
	CHECK(!memcmp(a, "AAAA", 4) && !memcmp(b, "BBBB", 4) && !memcmp(c, "pipe", 4));
	pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);
	close(fd);
}

int main(void)
{
	t_watchdog(60);
	SIG_A = SIGRTMIN + 1;
	SIG_B = SIGRTMIN + 2;
	SIG_C = SIGRTMIN + 3;
	/* the signals first: a SIGEV_THREAD callback's thread runs with no
	 * signal blocked (as glibc's), and one still exiting could take a
	 * later test's signal, whose default action ends the process */
	RUN(signal_while_sleeping);
	RUN(signal_inline);
	RUN(signal_inline_other_thread);
	RUN(signal_inline_own_handler);
	RUN(signal_before_waiters);
	RUN(signal_before_status);
	RUN(lio_nowait_signal);
	RUN(thread_notification);
	RUN(thread_attrs_reused);
	return T_EXIT_PASS;
}
