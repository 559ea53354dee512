/* SPDX-License-Identifier: MIT */
/*
 * More of glibc's behaviour a program can see (found by running the same
 * programs under glibc and the drop-in): an async write to a pipe or
 * socket whose reader is gone gives EPIPE, never SIGPIPE; every
 * SIGEV_THREAD callback runs on a new thread (callbacks may wait for one
 * another; thread-local state and TLS destructors are per callback); a
 * notification that cannot be delivered becomes the request's status;
 * lio_listio takes glibc's LIO_DSYNC / LIO_SYNC opcodes; a child of
 * fork() sees the parent's requests in progress for ever; the kernel's
 * pread checks come in pread's order (negative offset, bad descriptor, a
 * span out of the address space); aio_return of a stream request under
 * way is -1; socket timeouts end requests as they end blocking calls.
 */
#define _GNU_SOURCE
#include "aio/aio_util.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

/* A write to fd, whose reader is gone: EPIPE, and the process lives. */
static void expect_epipe(int fd)
{
	char b[8] = "pipe!!!";
	struct aiocb cb = t_cb(fd, b, sizeof(b), 0);
	int err;

	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EPIPE);
	close(fd);
}

/* SIGPIPE left at its default: the process would die of it. */
static void no_sigpipe(void)
{
	int p[2], sv[2];

	CHECK(signal(SIGPIPE, SIG_DFL) != SIG_ERR);
	CHECK_EQ(pipe(p), 0);
	close(p[0]);
	expect_epipe(p[1]);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	expect_epipe(sv[0]);

	/* A SIGPIPE someone else left pending is not taken away. */
	{
		sigset_t s, pend;

		sigemptyset(&s);
		sigaddset(&s, SIGPIPE);
		CHECK_EQ(pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
		CHECK_EQ(raise(SIGPIPE), 0);
		CHECK_EQ(pipe(p), 0);
		close(p[0]);
		expect_epipe(p[1]);
		CHECK_EQ(sigpending(&pend), 0);
		CHECK(sigismember(&pend, SIGPIPE));
		CHECK_EQ(sigwaitinfo(&s, NULL), SIGPIPE);
		CHECK_EQ(pthread_sigmask(SIG_UNBLOCK, &s, NULL), 0);
	}
}

/* ------------------------------------------------------ SIGEV_THREAD */

#define NCB 24	/* more than any pool of threads we ever had (16) */

static pthread_barrier_t barrier;
static sem_t passed;
static __thread int tls_mark;
static pthread_key_t key;
static atomic_int dtors;

static void key_dtor(void *p)
{
	(void)p;
	atomic_fetch_add(&dtors, 1);
}

/* Waits for all NCB callbacks to be running at once. */
static void on_barrier(union sigval v)
{
	(void)v;
	CHECK_EQ(tls_mark, 0);		/* a new thread: fresh TLS */
	tls_mark = 100;
	CHECK_EQ(pthread_setspecific(key, &tls_mark), 0);
	pthread_barrier_wait(&barrier);
	sem_post(&passed);
}

static void thread_per_callback(void)
{
	static char buf[NCB][4];
	struct aiocb cbs[NCB];
	int fd = t_tmpfile();
	struct timespec dl;

	CHECK_EQ(pwrite(fd, "abcd", 4, 0), 4);
	CHECK_EQ(pthread_barrier_init(&barrier, NULL, NCB), 0);
	CHECK_EQ(sem_init(&passed, 0, 0), 0);
	CHECK_EQ(pthread_key_create(&key, key_dtor), 0);
	for (int i = 0; i < NCB; i++) {
		cbs[i] = t_cb(fd, buf[i], 4, 0);
		cbs[i].aio_sigevent.sigev_notify = SIGEV_THREAD;
		cbs[i].aio_sigevent.sigev_notify_function = on_barrier;
		CHECK_EQ(uaio_read(&cbs[i]), 0);
	}
	/* A pool would hold all its threads at the barrier: a hang. */
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 30;
	for (int i = 0; i < NCB; i++)
		CHECK_EQ(sem_timedwait(&passed, &dl), 0);
	for (int i = 0; i < 200 && atomic_load(&dtors) < NCB; i++)
		usleep(10000);	/* the threads end after their callbacks */
	CHECK_EQ(atomic_load(&dtors), NCB);
	CHECK(uaio__notify_threads() >= NCB);
	close(fd);
}

/* A joinable attribute gives a joinable thread, as glibc's. */
static pthread_t joinable_tid;
static sem_t joinable_ran;

static void on_joinable(union sigval v)
{
	(void)v;
	joinable_tid = pthread_self();
	sem_post(&joinable_ran);
}

static void thread_attributes(void)
{
	pthread_attr_t attr;
	char b[4];
	int fd = t_tmpfile();
	struct aiocb cb = t_cb(fd, b, 4, 0);

	CHECK_EQ(pwrite(fd, "abcd", 4, 0), 4);
	CHECK_EQ(sem_init(&joinable_ran, 0, 0), 0);
	CHECK_EQ(pthread_attr_init(&attr), 0);
	CHECK_EQ(pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE), 0);
	cb.aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb.aio_sigevent.sigev_notify_function = on_joinable;
	cb.aio_sigevent.sigev_notify_attributes = &attr;
	CHECK_EQ(uaio_read(&cb), 0);
	while (sem_wait(&joinable_ran) < 0)
		CHECK(errno == EINTR);
	CHECK_EQ(pthread_join(joinable_tid, NULL), 0);
	pthread_attr_destroy(&attr);
	close(fd);
}

/* ------------------------------------------- undeliverable signal */

/* Signals queued for this user by any process (the count the limit
 * applies to): "SigQ: queued/limit" in /proc/self/status. */
static unsigned long queued_for_user(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long q = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "SigQ: %lu/", &q) == 1)
			break;
	if (f)
		fclose(f);
	return q;
}

static void full_signal_queue(void)
{
	struct rlimit old, lim = { 4, 4 };
	struct aiocb cbs[12];
	char b[12][4];
	sigset_t s;
	int fd = t_tmpfile(), failed = 0, ok = 0, err;

	CHECK_EQ(pwrite(fd, "abcd", 4, 0), 4);
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN);
	CHECK_EQ(pthread_sigmask(SIG_BLOCK, &s, NULL), 0);
	CHECK_EQ(getrlimit(RLIMIT_SIGPENDING, &old), 0);
	lim.rlim_cur += queued_for_user();	/* the user's other processes' */
	lim.rlim_max = old.rlim_max;	/* the soft limit only: it can come back */
	if (setrlimit(RLIMIT_SIGPENDING, &lim) < 0)
		SKIP("cannot lower RLIMIT_SIGPENDING");
	for (int i = 0; i < 12; i++) {
		cbs[i] = t_cb(fd, b[i], 4, 0);
		cbs[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		cbs[i].aio_sigevent.sigev_signo = SIGRTMIN;
		CHECK_EQ(uaio_read(&cbs[i]), 0);
	}
	for (int i = 0; i < 12; i++) {
		ssize_t r = t_wait(&cbs[i], &err);

		if (r == 4 && err == 0)
			ok++;
		else if (r == -1 && err == EAGAIN)
			failed++;
	}
	CHECK_EQ(ok + failed, 12);
	CHECK(failed > 0 && ok > 0);	/* as many queued as the limit lets */
	CHECK_EQ(setrlimit(RLIMIT_SIGPENDING, &old), 0);
	while (sigtimedwait(&s, NULL, &(struct timespec){ 0, 0 }) > 0)
		ok--;
	CHECK_EQ(ok, 0);		/* a signal for each success, none else */
	CHECK_EQ(pthread_sigmask(SIG_UNBLOCK, &s, NULL), 0);
	close(fd);
}

/* ------------------------------------------------- lio opcodes 3, 4 */

static void lio_sync_opcodes(void)
{
	int fd = t_tmpfile(), err;
	char w[4] = "wxyz";
	struct aiocb wr = t_cb(fd, w, 4, 0), ds = t_cb(fd, NULL, 0, 0), fs = t_cb(fd, NULL, 0, 0);
	struct aiocb bad = t_cb(-1, NULL, 0, 0);
	struct aiocb *list[] = { &wr, &ds, &fs };
	struct aiocb *blist[] = { &bad };

	wr.aio_lio_opcode = LIO_WRITE;
	ds.aio_lio_opcode = LIO_NOP + 1;	/* glibc's LIO_DSYNC */
	fs.aio_lio_opcode = LIO_NOP + 2;	/* glibc's LIO_SYNC */
	CHECK_EQ(ulio_listio(LIO_WAIT, list, 3, NULL), 0);
	CHECK_EQ(uaio_return(&wr), 4);
	CHECK_EQ(uaio_error(&ds), 0);
	CHECK_EQ(uaio_return(&ds), 0);
	CHECK_EQ(uaio_return(&fs), 0);
	/* A bad descriptor fails as the entry runs, not the call's check. */
	bad.aio_lio_opcode = LIO_NOP + 2;
	CHECK_EQ(ulio_listio(LIO_NOWAIT, blist, 1, NULL), 0);
	CHECK_EQ(t_wait(&bad, &err), -1);
	CHECK_EQ(err, EBADF);
	close(fd);
}

/* ------------------------------------------------------------ fork */

static void fork_orphans(void)
{
	int p[2], status;
	char b[4];
	struct aiocb cb;
	pid_t pid;

	CHECK_EQ(pipe(p), 0);
	cb = t_cb(p[0], b, sizeof(b), 0);
	CHECK_EQ(uaio_read(&cb), 0);		/* waits: nothing written */
	CHECK_EQ(uaio_error(&cb), EINPROGRESS);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		const struct aiocb *l[] = { &cb };
		struct timespec ten_ms = { 0, 10000000 };

		/* glibc's child has no helper thread: in progress for ever. */
		if (uaio_error(&cb) != EINPROGRESS)
			_exit(2);
		if (uaio_suspend(l, 1, &ten_ms) != -1 || errno != EAGAIN)
			_exit(3);
		if (uaio_cancel(p[0], &cb) != AIO_NOTCANCELED)
			_exit(4);
		if (uaio_return(&cb) != -1 || errno != EINPROGRESS)
			_exit(5);
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	/* The parent's request is its own still. */
	CHECK_EQ(write(p[1], "done", 4), 4);
	CHECK_EQ(t_wait(&cb, NULL), 4);
	CHECK(!memcmp(b, "done", 4));
	close(p[0]);
	close(p[1]);
}

/* The drop-in's lio_listio checks nent as glibc's: none but the requests
 * it holds; ulio_listio keeps POSIX's AIO_LISTIO_MAX. aio_suspend with a
 * negative count: EINVAL, as glibc. */
static void list_counts(void)
{
	static struct aiocb *big[100000];
	int fd = t_tmpfile();
	char b[4];
	struct aiocb cb = t_cb(fd, b, 4, 0);
	const struct aiocb *l[1] = { &cb };

	CHECK_EQ(pwrite(fd, "abcd", 4, 0), 4);
	CHECK_EQ(aio__lio_listio(LIO_WAIT, big, -1, NULL), 0);
	cb.aio_lio_opcode = LIO_READ;
	big[99999] = &cb;
	CHECK_EQ(aio__lio_listio(LIO_WAIT, big, 100000, NULL), 0);
	CHECK_EQ(uaio_return(&cb), 4);
	ERRNO_IS(ulio_listio(LIO_WAIT, big, 100000, NULL), EINVAL);
	ERRNO_IS(ulio_listio(LIO_WAIT, big, -1, NULL), EINVAL);
	ERRNO_IS(uaio_suspend(l, -1, NULL), EINVAL);
	/* More reads than AIO_MAX leaves records for, LIO_WAIT: all done,
	 * as glibc (no limit); it was -1/EAGAIN with nothing done. The
	 * limit as seen here is the library's default (65536). */
	static char rb[70000][4];
	for (int i = 0; i < 70000; i++) {
		big[i] = calloc(1, sizeof(struct aiocb));
		*big[i] = t_cb(fd, rb[i], 4, 0);
		big[i]->aio_lio_opcode = LIO_READ;
	}
	CHECK_EQ(aio__lio_listio(LIO_WAIT, big, 70000, NULL), 0);
	for (int i = 0; i < 70000; i++) {
		CHECK_EQ(uaio_return(big[i]), 4);
		CHECK(!memcmp(rb[i], "abcd", 4));
	}
	/* ... and with a slice whose every entry is refused (a bad
	 * aio_reqprio): the others are still done, and the list says EIO
	 * (it stopped at that slice, the rest never made) */
	for (int i = 0; i < 70000; i++) {
		*big[i] = t_cb(fd, rb[i], 4, 0);
		big[i]->aio_lio_opcode = LIO_READ;
		big[i]->aio_reqprio = i < 65536 ? 1000 : 0;
		memset(rb[i], 0, 4);
	}
	ERRNO_IS(aio__lio_listio(LIO_WAIT, big, 70000, NULL), EIO);
	for (int i = 65536; i < 70000; i++) {
		CHECK_EQ(uaio_return(big[i]), 4);
		CHECK(!memcmp(rb[i], "abcd", 4));
	}
	for (int i = 0; i < 70000; i++) {
		free(big[i]);
		big[i] = NULL;
	}
	close(fd);
}

/* glibc reads and writes with pread/pwrite (read/write after ESPIPE),
 * so the kernel's checks come in pread's order: a negative offset is
 * EINVAL on any file, a bad descriptor included; an aio_nbytes whose span
 * leaves the address space is EFAULT, and nothing is written past the
 * buffer (the drop-in clamped it and read on until it faulted). */
static void pread_checks(void)
{
	static char mem[8192];
	char *b = mem + 4096 - 16;
	int p[2], sv[2], zero = open("/dev/zero", O_RDONLY), fd = t_tmpfile();
	struct aiocb cb;
	int err;

	CHECK(zero >= 0);
	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_EQ(write(p[1], "abcdefgh", 8), 8);
	CHECK_EQ(write(sv[1], "abcdefgh", 8), 8);
	int rd[] = { p[0], sv[0], zero, fd, -1, 9999 };
	for (size_t i = 0; i < sizeof(rd) / sizeof(rd[0]); i++) {
		cb = t_cb(rd[i], b, 8, -1);
		CHECK_EQ(uaio_read(&cb), 0);
		CHECK_EQ(t_wait(&cb, &err), -1);
		CHECK_EQ(err, EINVAL);
	}
	cb = t_cb(p[1], b, 8, -5);
	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EINVAL);
	/* the data is still there for a good request */
	cb = t_cb(p[0], b, 8, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, NULL), 8);
	CHECK(!memcmp(b, "abcdefgh", 8));

	size_t huge[] = { SIZE_MAX, (size_t)1 << 62 };
	for (size_t i = 0; i < 2; i++) {
		memset(mem, 'x', sizeof(mem));
		cb = t_cb(zero, b, 16, 0);
		cb.aio_nbytes = huge[i];
		CHECK_EQ(uaio_read(&cb), 0);
		CHECK_EQ(t_wait(&cb, &err), -1);
		CHECK_EQ(err, EFAULT);
		for (size_t k = 0; k < sizeof(mem); k++)
			CHECK(mem[k] == 'x');
		cb = t_cb(fd, b, 16, 0);
		cb.aio_nbytes = huge[i];
		CHECK_EQ(uaio_write(&cb), 0);
		CHECK_EQ(t_wait(&cb, &err), -1);
		CHECK_EQ(err, EFAULT);
	}
	/* a seekable character device is read as pread reads it */
	cb = t_cb(zero, b, 16, 1 << 20);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, NULL), 16);
	CHECK(!memcmp(b, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16));
	close(zero);
	close(fd);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

/* A file that seeks but refuses pwrite (ESPIPE: procfs's comm): glibc's
 * helper writes it at its position then (its read/write after pread's
 * ESPIPE); the request succeeds (the drop-in ended it with ESPIPE). A
 * large one too, which takes no inline try. */
static void pwrite_refused(void)
{
	static char big[200000];
	char name[16], back[32] = { 0 };
	struct aiocb cb;
	int fd;

	CHECK_EQ(prctl(PR_GET_NAME, name), 0);
	CHECK((fd = open("/proc/self/comm", O_RDWR | O_CLOEXEC)) >= 0);
	CHECK(pwrite(fd, "x", 1, 0) == -1 && errno == ESPIPE);
	cb = t_cb(fd, "aio-comm", 8, 0);
	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, NULL), 8);
	CHECK(pread(fd, back, sizeof(back) - 1, 0) == 9 && !strcmp(back, "aio-comm\n"));
	memset(big, 'b', sizeof(big));
	cb = t_cb(fd, big, sizeof(big), 4096);
	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, NULL), (long)sizeof(big));
	close(fd);
	/* O_APPEND: its writes queue in call order, at aio_offset as glibc's
	 * pwrite, which the file refuses as well; a read behind them */
	CHECK((fd = open("/proc/self/comm", O_RDWR | O_APPEND | O_CLOEXEC)) >= 0);
	{
		struct aiocb w1 = t_cb(fd, "app-one", 7, 0), w2 = t_cb(fd, "app-two", 7, 0);
		struct aiocb rd;

		memset(back, 0, sizeof(back));
		rd = t_cb(fd, back, sizeof(back) - 1, 0);
		CHECK_EQ(uaio_write(&w1), 0);
		CHECK_EQ(uaio_write(&w2), 0);
		CHECK_EQ(uaio_read(&rd), 0);
		CHECK_EQ(t_wait(&w1, NULL), 7);
		CHECK_EQ(t_wait(&w2, NULL), 7);
		CHECK_EQ(t_wait(&rd, NULL), 8);
		CHECK(!strcmp(back, "app-two\n"));
	}
	close(fd);
	CHECK_EQ(prctl(PR_SET_NAME, name), 0);
}

/* aio_return of a stream request under way: glibc's helper holds the -1
 * of its pread try (ESPIPE) while it blocks in read; one waiting behind
 * it holds 0. */
static void stream_return_in_progress(void)
{
	char b1[4], b2[4];
	int p[2];
	struct aiocb c1, c2;

	CHECK_EQ(pipe(p), 0);
	c1 = t_cb(p[0], b1, 4, 0);
	c2 = t_cb(p[0], b2, 4, 0);
	CHECK_EQ(uaio_read(&c1), 0);
	CHECK_EQ(uaio_read(&c2), 0);
	CHECK_EQ(uaio_error(&c1), EINPROGRESS);
	CHECK_EQ(c1.__return_value, -1);
	CHECK_EQ(c2.__return_value, 0);
	CHECK_EQ(write(p[1], "abcdefgh", 8), 8);
	CHECK_EQ(t_wait(&c1, NULL), 4);
	CHECK_EQ(t_wait(&c2, NULL), 4);
	CHECK(!memcmp(b1, "abcd", 4) && !memcmp(b2, "efgh", 4));
	close(p[0]);
	close(p[1]);
}

/* A socket's SO_RCVTIMEO / SO_SNDTIMEO end a request as they end glibc's
 * blocking read and write: EAGAIN, or the count written so far; the one
 * queued behind gets its own time; what was written arrives whole. */
static void socket_timeouts(void)
{
	struct timeval tv = { 0, 100000 };
	int sv[2], sndbuf = 4096, err;
	size_t n = 1 << 20, got = 0;
	char b1[8], b2[8], *big = malloc(n), *sink = malloc(n);
	struct aiocb c1, c2, w;
	ssize_t part;

	CHECK(big && sink);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)(i * 7 + 3);
	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_EQ(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	c1 = t_cb(sv[0], b1, 8, 0);
	c2 = t_cb(sv[0], b2, 8, 0);
	CHECK_EQ(uaio_read(&c1), 0);
	CHECK_EQ(uaio_read(&c2), 0);
	CHECK_EQ(t_wait(&c1, &err), -1);
	CHECK_EQ(err, EAGAIN);
	CHECK_EQ(t_wait(&c2, &err), -1);
	CHECK_EQ(err, EAGAIN);
	/* data before the time is up: a plain read */
	c1 = t_cb(sv[0], b1, 8, 0);
	CHECK_EQ(uaio_read(&c1), 0);
	CHECK_EQ(write(sv[1], "in time!", 8), 8);
	CHECK_EQ(t_wait(&c1, NULL), 8);
	CHECK(!memcmp(b1, "in time!", 8));

	CHECK_EQ(setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)), 0);
	CHECK_EQ(setsockopt(sv[1], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), 0);
	w = t_cb(sv[1], big, n, 0);
	CHECK_EQ(uaio_write(&w), 0);
	part = t_wait(&w, &err);
	CHECK(part > 0 && (size_t)part < n);
	CHECK_EQ(err, 0);
	CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	for (ssize_t r; (r = read(sv[0], sink + got, n - got)) > 0;)
		got += (size_t)r;
	CHECK_EQ(got, part);
	CHECK(!memcmp(sink, big, got));
	free(big);
	free(sink);
	close(sv[0]);
	close(sv[1]);
}

/* aio_suspend is a cancellation point, as glibc's: a thread asleep in it
 * is cancelled (its cleanup handlers run), and the request it waited for
 * completes afterwards as any other. */
static struct aiocb cancel_cb;
static atomic_int cancel_cleaned;

static void cancel_cleanup(void *arg)
{
	(void)arg;
	atomic_store(&cancel_cleaned, 1);
}

static void *suspend_forever(void *arg)
{
	const struct aiocb *l[1] = { &cancel_cb };

	(void)arg;
	pthread_cleanup_push(cancel_cleanup, NULL);
	uaio_suspend(l, 1, NULL);
	pthread_cleanup_pop(0);
	return NULL;
}

static void suspend_cancellable(void)
{
	char b[4];
	int p[2];
	pthread_t t;
	void *ret;

	CHECK_EQ(pipe(p), 0);
	cancel_cb = t_cb(p[0], b, 4, 0);
	CHECK_EQ(uaio_read(&cancel_cb), 0);
	CHECK_EQ(pthread_create(&t, NULL, suspend_forever, NULL), 0);
	usleep(50000);		/* asleep, or about to be: either way cancelled */
	CHECK_EQ(pthread_cancel(t), 0);
	CHECK_EQ(pthread_join(t, &ret), 0);
	CHECK(ret == PTHREAD_CANCELED);
	CHECK_EQ(atomic_load(&cancel_cleaned), 1);
	CHECK_EQ(write(p[1], "done", 4), 4);
	CHECK_EQ(t_wait(&cancel_cb, NULL), 4);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	t_watchdog(90);
	RUN(suspend_cancellable);
	RUN(socket_timeouts);
	RUN(pread_checks);
	RUN(stream_return_in_progress);
	RUN(pwrite_refused);
	RUN(no_sigpipe);
	RUN(thread_per_callback);
	RUN(thread_attributes);
	RUN(lio_sync_opcodes);
	RUN(fork_orphans);
	RUN(list_counts);
	RUN(full_signal_queue);
	return T_EXIT_PASS;
}
