/* SPDX-License-Identifier: MIT */
/*
 * A signal handler that runs on a thread in the middle of an AIO call
 * may itself submit (the "resubmit from the SIGEV_SIGNAL handler"
 * pattern) or fork (async-signal-safe), as under glibc, whose request
 * lock is recursive and whose steady-state submission calls no malloc.
 * Before: the handler waited for the lock its own thread held (or, in
 * fork, for the malloc lock the interrupted calloc held): a hang, which
 * the watchdog turns into a failure. Counts, not time, bound each case.
 * And writes under a timer storm end as written, never ECANCELED.
 */
#include "aio/aio_util.h"
#include <pthread.h>
#include <sys/time.h>
#include <sys/wait.h>

static int A[2], B[2];
static volatile sig_atomic_t nsig, stop, forks;

static void on_read_signal(int s, siginfo_t *si, void *u)
{
	struct aiocb *cb = si->si_value.sival_ptr;
	int e = errno;

	(void)s;
	(void)u;
	if (uaio_error(cb) == 0 && uaio_return(cb) == 1)
		nsig++;
	if (!stop && uaio_read(cb) != 0)
		_exit(3);
	errno = e;
}

static void *drain(void *arg)
{
	char b[4096];

	(void)arg;
	while (read(A[0], b, sizeof(b)) > 0)
		;
	return NULL;
}

static void *feed(void *arg)
{
	(void)arg;
	while (!stop) {
		if (write(B[1], "x", 1) != 1)
			break;
		usleep(50);
	}
	return NULL;
}

/* A one-shot timer of signal signo, its handler sa, armed ns from now;
 * a handler re-arms it (tick_again) a while after it ends, so a slow one
 * (a fork under ASan) is never outrun. */
static void tick_start(timer_t *t, int signo, const struct sigaction *sa, long ns)
{
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = signo };
	struct itimerspec its = { { 0, 0 }, { 0, ns } };

	CHECK(sigaction(signo, sa, NULL) == 0);
	CHECK(timer_create(CLOCK_MONOTONIC, &sev, t) == 0);
	CHECK(timer_settime(*t, 0, &its, NULL) == 0);
}

static void tick_again(timer_t t, long ns)
{
	struct itimerspec next = { { 0, 0 }, { 0, ns } };

	timer_settime(t, 0, &next, NULL);
}

static void tick_stop(timer_t t, int signo)
{
	struct itimerspec none = { { 0, 0 }, { 0, 0 } };

	CHECK(timer_settime(t, 0, &none, NULL) == 0);
	CHECK(timer_delete(t) == 0);
	signal(signo, SIG_IGN);
}

/* One write at a time on a pipe, waited for with uaio_suspend. */
static void write_one(int fd, off_t off, const void *buf, size_t n)
{
	struct aiocb w = t_cb(fd, (void *)buf, n, off);
	const struct aiocb *l[1] = { &w };

	CHECK_EQ(uaio_write(&w), 0);
	while (uaio_error(&w) == EINPROGRESS)
		uaio_suspend(l, 1, NULL);
	CHECK_EQ(uaio_return(&w), (ssize_t)n);
}

static void handler_resubmits(void)
{
	static struct aiocb rcb;
	static char rb[1];
	struct sigaction sa = { .sa_sigaction = on_read_signal,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	pthread_t t1, t2;
	long n = 0;

	CHECK(pipe(A) == 0 && pipe(B) == 0);
	CHECK(sigaction(SIGRTMIN, &sa, NULL) == 0);
	rcb = t_cb(B[0], rb, 1, 0);
	rcb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	rcb.aio_sigevent.sigev_signo = SIGRTMIN;
	rcb.aio_sigevent.sigev_value.sival_ptr = &rcb;
	CHECK(pthread_create(&t1, NULL, drain, NULL) == 0);
	CHECK(pthread_create(&t2, NULL, feed, NULL) == 0);
	CHECK_EQ(uaio_read(&rcb), 0);
	while (nsig < 2000 || n < 2000)
		write_one(A[1], 0, "y", 1), n++;
	stop = 1;
	CHECK(pthread_join(t2, NULL) == 0);
	close(A[1]);
	CHECK(pthread_join(t1, NULL) == 0);
	signal(SIGRTMIN, SIG_IGN);
	close(B[1]);
	/* The last resubmitted read ends at end of file. */
	const struct aiocb *l[1] = { &rcb };
	while (uaio_error(&rcb) == EINPROGRESS)
		uaio_suspend(l, 1, NULL);
	close(A[0]);
	close(B[0]);
}

static timer_t tick_timer;
static volatile sig_atomic_t ticking;

/* The next tick is armed from here, a millisecond after this one ends: a
 * periodic timer outran a fork slower than its period (under ASan), and
 * the thread holding the library's lock never left its handler. */
static void on_tick(int s)
{
	int e = errno;
	pid_t c;

	(void)s;
	c = fork();
	if (c == 0)
		_exit(0);
	if (c > 0 && waitpid(c, NULL, 0) == c)
		forks++;
	if (ticking)
		tick_again(tick_timer, 1000000);
	errno = e;
}

/* A fork from a handler, a millisecond after the last one, on a file and
 * on a pipe. */
static void handler_forks(void)
{
	struct sigaction sa = { .sa_handler = on_tick, .sa_flags = SA_RESTART };
	int fd = t_tmpfile(), p[2];
	pthread_t t;
	long n = 0;

	CHECK(pipe(p) == 0);
	A[0] = p[0];
	CHECK(pthread_create(&t, NULL, drain, NULL) == 0);
	ticking = 1;
	tick_start(&tick_timer, SIGRTMIN + 1, &sa, 1000000);
	while (forks < 600 || n < 2000) {
		write_one(fd, (n % 256) * 16, "0123456789abcdef", 16);
		write_one(p[1], 0, "z", 1);
		n++;
	}
	ticking = 0;
	tick_stop(tick_timer, SIGRTMIN + 1);
	close(p[1]);
	CHECK(pthread_join(t, NULL) == 0);
	close(p[0]);
	close(fd);
}

/* A handler that waits in aio_suspend for a SIGEV_THREAD request while
 * the code it interrupted is inside malloc. The thread had waited in
 * aio_suspend before, so its small O_DIRECT requests went on its own
 * ring, and the handler's aio_suspend ended them there: the
 * notification's malloc and pthread_create, in the handler, waited for
 * the malloc lock the interrupted code held, for ever. */
static struct aiocb sus_cb;
static volatile sig_atomic_t sus_waits, sus_ticks;
static pthread_t sus_thread;

static void on_sus_tick(int s)
{
	const struct aiocb *l[1] = { &sus_cb };
	int e = errno;

	(void)s;
	/* The case is the test's thread, interrupted in malloc. The tick
	 * may land on a notification thread (their masks are empty, as
	 * glibc's): one ending, inside the sanitizer's thread registry,
	 * waited here for the request whose notification thread the
	 * engine could not make without that registry, tick after tick. */
	if (!pthread_equal(pthread_self(), sus_thread))
		return;
	sus_ticks++;
	if (uaio_error(&sus_cb) == EINPROGRESS) {
		sus_waits++;
		uaio_suspend(l, 1, &(struct timespec){ 1, 0 });
	}
	errno = e;
}

static void on_note(union sigval v)
{
	(void)v;
}

static void handler_suspends(void)
{
	static char buf[4096] __attribute__((aligned(4096)));
	const struct aiocb *l[1] = { &sus_cb };
	struct sigaction sa = { .sa_handler = on_sus_tick, .sa_flags = SA_RESTART };
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 2 };
	struct itimerspec its = { { 0, 200000 }, { 0, 200000 } };
	timer_t tm;
	sigset_t al;
	int fd = t_direct_file();
	long reqs = 0;

	memset(buf, 'd', sizeof(buf));
	for (int i = 0; i < 64; i++)
		CHECK_EQ(pwrite(fd, buf, sizeof(buf), (off_t)i * 4096), 4096);
	sus_cb = (struct aiocb){ .aio_fildes = fd, .aio_buf = buf, .aio_nbytes = 4096 };
	sus_cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	sus_cb.aio_sigevent.sigev_notify_function = on_note;
	CHECK_EQ(uaio_read(&sus_cb), 0);	/* waits in aio_suspend once */
	while (uaio_error(&sus_cb) == EINPROGRESS)
		uaio_suspend(l, 1, NULL);
	CHECK_EQ(uaio_return(&sus_cb), 4096);
	sigemptyset(&al);
	sigaddset(&al, SIGRTMIN + 2);
	sus_thread = pthread_self();
	CHECK(sigaction(SIGRTMIN + 2, &sa, NULL) == 0);
	CHECK(timer_create(CLOCK_MONOTONIC, &sev, &tm) == 0);
	CHECK(timer_settime(tm, 0, &its, NULL) == 0);
	/* counts bound it: enough requests, and enough of them waited for
	 * by the handler (the disk decides how many it finds in flight) */
	while (reqs < 3000 || (sus_waits < 200 && reqs < 200000)) {
		sus_cb.aio_offset = (off_t)(reqs % 64) * 4096;
		pthread_sigmask(SIG_BLOCK, &al, NULL);
		CHECK_EQ(uaio_read(&sus_cb), 0);
		pthread_sigmask(SIG_UNBLOCK, &al, NULL);
		reqs++;
		for (;;) {
			void *p[8];
			int busy;

			pthread_sigmask(SIG_BLOCK, &al, NULL);
			busy = uaio_error(&sus_cb) == EINPROGRESS;
			pthread_sigmask(SIG_UNBLOCK, &al, NULL);
			if (!busy)
				break;
			for (int i = 0; i < 8; i++) {
				p[i] = malloc(20000 + (size_t)i * 1000);
				CHECK(p[i]);
				memset(p[i], 1, 64);
			}
			for (int i = 0; i < 8; i++)
				free(p[i]);
		}
		CHECK_EQ(uaio_return(&sus_cb), 4096);
	}
	CHECK(timer_delete(tm) == 0);
	signal(SIGRTMIN + 2, SIG_IGN);
	fprintf(stderr, "    %ld requests, %d ticks, %d waits in the handler\n", reqs,
		(int)sus_ticks, (int)sus_waits);
	close(fd);
}

/* Writes to a file, each waited for in uaio_suspend (so they go on the
 * thread's own ring), under a timer firing every 50 us, in fresh
 * processes (the kernel starts its io-wq workers then): none ends with
 * ECANCELED. Before, the worker the kernel starts from the submitting
 * thread failed to start while a signal was pending, and the kernel
 * cancelled the write: about one process in four had one. */
static void on_alarm(int s)
{
	(void)s;
}

static int storm_child(void)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	int fd = t_tmpfile(), bad = 0;
	char buf[512];

	memset(buf, 'w', sizeof(buf));
	if (sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &it, NULL) < 0)
		return 2;
	for (int i = 0; i < 300; i++) {
		struct aiocb cb = t_cb(fd, buf, sizeof(buf), (off_t)i * 700);
		const struct aiocb *l[1] = { &cb };

		if (uaio_write(&cb) != 0)
			return 2;
		while (uaio_error(&cb) == EINPROGRESS)
			uaio_suspend(l, 1, NULL);
		if (uaio_error(&cb) != 0 || uaio_return(&cb) != (ssize_t)sizeof(buf))
			bad = 1;
	}
	return bad;
}

static void timer_storm(void)
{
	int bad = 0;

	for (int r = 0; r < 40; r++) {
		pid_t p = fork();
		int st;

		CHECK(p >= 0);
		if (p == 0)
			_exit(storm_child());
		CHECK_EQ(waitpid(p, &st, 0), p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 2);
		bad += WEXITSTATUS(st);
	}
	CHECK_EQ(bad, 0);
}

/* A handler that submits reads bigger than an inline try takes, on a
 * file of its own, while the code it interrupted is inside an AIO call
 * of its thread that hands requests to the engine's loop (lists and
 * single reads, each too big to finish inline). Before, the nested call
 * went into the loop's state (its registered file table, its lock) that
 * the interrupted call was changing: a crash, a hang, or a read of the
 * wrong file. Now it waits, queued, for the interrupted call's end.
 * Every read, the handler's and the lists', is checked byte for byte. */
#define NEST_LEN	(128 * 1024)
#define NEST_FILE	(16 * NEST_LEN)

static struct aiocb nest_cb;
static char *nest_buf, *nest_img;
static timer_t nest_timer;
static volatile sig_atomic_t nest_subs, nest_bad, nest_on;

static void on_nest_tick(int s)
{
	int e = errno;

	(void)s;
	if (uaio_error(&nest_cb) != EINPROGRESS) {
		if (nest_subs && (uaio_return(&nest_cb) != NEST_LEN ||
				  memcmp(nest_buf, nest_img + nest_cb.aio_offset, NEST_LEN)))
			nest_bad++;
		memset(nest_buf, 0, NEST_LEN);
		nest_cb.aio_offset = (off_t)(nest_subs % 16) * NEST_LEN;
		if (uaio_read(&nest_cb) != 0)
			nest_bad++;
		nest_subs++;
	}
	if (nest_on)
		tick_again(nest_timer, 100000);
	errno = e;
}

static void handler_submits_to_loop(void)
{
	struct sigaction sa = { .sa_handler = on_nest_tick, .sa_flags = SA_RESTART };
	static struct aiocb cbs[8];
	struct aiocb *list[8];
	char *img = malloc(NEST_FILE), *bufs = malloc(8 * NEST_LEN);
	int hfd = t_tmpfile(), fd = t_tmpfile();
	long rounds = 0;

	nest_img = malloc(NEST_FILE);
	nest_buf = malloc(NEST_LEN);
	CHECK(img && bufs && nest_img && nest_buf);
	t_fill(img, NEST_FILE, 1);
	t_fill(nest_img, NEST_FILE, 2);
	CHECK_EQ(pwrite(fd, img, NEST_FILE, 0), NEST_FILE);
	CHECK_EQ(pwrite(hfd, nest_img, NEST_FILE, 0), NEST_FILE);
	nest_cb = t_cb(hfd, nest_buf, NEST_LEN, 0);
	nest_on = 1;
	tick_start(&nest_timer, SIGRTMIN + 3, &sa, 100000);
	while ((nest_subs < 1500 || rounds < 1500) && rounds < 200000) {
		for (int i = 0; i < 8; i++) {
			cbs[i] = t_cb(fd, bufs + (size_t)i * NEST_LEN, NEST_LEN,
				      (off_t)((rounds + i) % 16) * NEST_LEN);
			cbs[i].aio_lio_opcode = LIO_READ;
			list[i] = &cbs[i];
		}
		if (rounds % 2) {
			CHECK_EQ(ulio_listio(LIO_NOWAIT, list, 8, NULL), 0);
		} else {
			for (int i = 0; i < 8; i++)
				CHECK_EQ(uaio_read(&cbs[i]), 0);
		}
		for (int i = 0; i < 8; i++) {
			CHECK_EQ(t_wait(&cbs[i], NULL), NEST_LEN);
			CHECK(!memcmp(bufs + (size_t)i * NEST_LEN,
				      img + cbs[i].aio_offset, NEST_LEN));
		}
		rounds++;
	}
	nest_on = 0;
	tick_stop(nest_timer, SIGRTMIN + 3);
	CHECK_EQ(t_wait(&nest_cb, NULL), NEST_LEN);
	CHECK(!memcmp(nest_buf, nest_img + nest_cb.aio_offset, NEST_LEN));
	CHECK_EQ(nest_bad, 0);
	fprintf(stderr, "    %ld rounds, %d reads from the handler\n", rounds, (int)nest_subs);
	close(fd);
	close(hfd);
	free(img);
	free(bufs);
	free(nest_img);
	free(nest_buf);
}

/* Requests a handler makes keep the order of its calls, whether they
 * wait for the call it interrupted or not: a timer's handler appends its
 * count to an O_APPEND file, its writes' completions (SIGEV_SIGNAL) run
 * it too, while the thread reads and writes a file and waits. Before, a
 * handler that ran after the interrupted call let the lock go, but
 * before that call submitted what waited, went first. */
#define ORD_POOL	256

static struct aiocb ord_cb[ORD_POOL];
static unsigned ord_rec[ORD_POOL];
static volatile sig_atomic_t ord_seq, ord_bad, ord_on;
static timer_t ord_timer;
static int ord_fd;

static void on_ord(int s, siginfo_t *si, void *u)
{
	struct aiocb *cb = &ord_cb[ord_seq % ORD_POOL];
	int e = errno;

	(void)s;
	(void)u;
	if (ord_on && uaio_error(cb) != EINPROGRESS) {
		uaio_return(cb);
		ord_rec[ord_seq % ORD_POOL] = (unsigned)ord_seq;
		*cb = t_cb(ord_fd, &ord_rec[ord_seq % ORD_POOL], sizeof(unsigned), 0);
		cb->aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		cb->aio_sigevent.sigev_signo = SIGRTMIN + 5;
		if (uaio_write(cb) == 0)
			ord_seq++;
		else
			ord_bad++;
	}
	if (ord_on && si->si_code == SI_TIMER)
		tick_again(ord_timer, 100000);
	errno = e;
}

static void handler_keeps_order(void)
{
	struct sigaction sa = { .sa_sigaction = on_ord, .sa_flags = SA_RESTART | SA_SIGINFO };
	static char buf[8][4096];
	int fd = t_tmpfile();
	unsigned *v;
	off_t size;

	ord_fd = t_tmpfile();
	CHECK(fcntl(ord_fd, F_SETFL, O_APPEND) == 0);
	sigfillset(&sa.sa_mask);	/* one handler at a time: its count is plain */
	CHECK(sigaction(SIGRTMIN + 5, &sa, NULL) == 0);	/* the writes' own */
	ord_on = 1;
	tick_start(&ord_timer, SIGRTMIN + 4, &sa, 100000);
	for (long round = 0; ord_seq < 1500 && round < 100000; round++) {
		struct aiocb cbs[8];

		for (int i = 0; i < 8; i++) {
			cbs[i] = t_cb(fd, buf[i], sizeof(buf[i]), (off_t)i * 4096);
			cbs[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
			cbs[i].aio_sigevent.sigev_signo = SIGRTMIN + 5;
			CHECK_EQ((round & 1) ? uaio_write(&cbs[i]) : uaio_read(&cbs[i]), 0);
		}
		for (int i = 0; i < 8; i++)
			t_wait(&cbs[i], NULL);
	}
	ord_on = 0;
	tick_stop(ord_timer, SIGRTMIN + 4);
	for (int i = 0; i < ORD_POOL; i++)
		if (ord_cb[i].aio_fildes == ord_fd)
			t_wait(&ord_cb[i], NULL);
	signal(SIGRTMIN + 5, SIG_IGN);
	CHECK_EQ(ord_bad, 0);
	size = lseek(ord_fd, 0, SEEK_END);
	CHECK_EQ(size, (off_t)ord_seq * (off_t)sizeof(unsigned));
	v = malloc((size_t)size);
	CHECK(v && pread(ord_fd, v, (size_t)size, 0) == size);
	for (long i = 0; i < size / (off_t)sizeof(unsigned); i++)
		if (v[i] != (unsigned)i) {
			fprintf(stderr, "    at %ld: %u\n", i, v[i]);
			CHECK(!"the handler's writes out of the order of its calls");
		}
	free(v);
	close(fd);
	close(ord_fd);
}

int main(void)
{
	t_watchdog(120);
	RUN(handler_resubmits);
	RUN(handler_forks);
	RUN(handler_suspends);
	RUN(timer_storm);
	RUN(handler_submits_to_loop);
	RUN(handler_keeps_order);
	return T_EXIT_PASS;
}
