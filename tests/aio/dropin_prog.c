/* SPDX-License-Identifier: MIT */
/*
 * A plain POSIX AIO program, built against glibc's <aio.h> only (no uaio
 * header): test_dropin runs it as is, under LD_PRELOAD=libuaio-posix.so,
 * and linked with libuaio-posix ahead of libc. It prints which
 * implementation answered and exits 0 when every check held.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dirent.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../engine_fds.h"
#include "dropin_prog.h"

/* The line of the last check made: a crash report names it (line 0:
 * after main returned). */
volatile int last_line = 1;

/* A crash says where it happened (CI saw one SIGSEGV that no local run
 * repeats). A fault in one of the library's threads, which block every
 * signal, kills the process without coming here: that says something too. */
static void on_fault(int sig, siginfo_t *si, void *uc)
{
	char msg[160];
	void *bt[64];
	int n = snprintf(msg, sizeof(msg), "dropin_prog: signal %d (address %p) in thread %ld after the check at line %d\n",
			 sig, si->si_addr, (long)gettid(), last_line);

	(void)uc;
	(void)!write(2, msg, (size_t)n);
	n = backtrace(bt, 64);
	backtrace_symbols_fd(bt, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_faults(void)
{
	static char alt[65536];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct sigaction sa = { .sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK };
	void *warm[1];

	backtrace(warm, 1);	/* loads libgcc_s now, not in the handler */
	sigaltstack(&ss, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
}


/* Found by running the same programs under both (stop 23's review). */
static void glibc_details(int fd)
{
	char b1[8], b2[8];
	struct aiocb r, w, c, *l[1];
	int p[2];

	/* A stream's requests queue per descriptor: a read blocked on a
	 * pipe's read end does not hold up a write to its other end. */
	OK(pipe(p) == 0);
	cb_init(&r, p[0], b1, 5, 0);
	cb_init(&w, p[1], (char *)"hello", 5, 0);
	errno = 1234;
	OK(aio_read(&r) == 0 && errno == 1234);	/* errno kept on success */
	OK(aio_write(&w) == 0 && errno == 1234);
	OK(wait_for(&w) == 5);
	OK(wait_for(&r) == 5 && !memcmp(b1, "hello", 5));
	close(p[0]);
	close(p[1]);

	errno = 1234;
	cb_init(&w, fd, (char *)"ab", 2, 0);
	OK(aio_write(&w) == 0 && errno == 1234);
	OK(wait_for(&w) == 2);

	/* A stream request that waited its turn runs as glibc's helper runs
	 * it: on a descriptor made non-blocking meanwhile, EAGAIN. */
	OK(pipe(p) == 0);
	cb_init(&r, p[0], b1, 4, 0);
	cb_init(&c, p[0], b2, 4, 0);
	OK(aio_read(&r) == 0 && aio_read(&c) == 0);
	usleep(20000);		/* glibc: its helper is in the first read */
	OK(fcntl(p[0], F_SETFL, O_NONBLOCK) == 0);
	OK(write(p[1], "x", 1) == 1);
	OK(wait_for(&r) == 1 && b1[0] == 'x');
	OK(wait_for(&c) == -1 && aio_error(&c) == EAGAIN);
	close(p[0]);
	close(p[1]);

	/* A request refused at submission keeps the caller's opcode; a
	 * LIO_WAIT list none of whose entries was taken fails with the
	 * refusal's errno, not EIO. */
	cb_init(&r, fd, b2, 2, 0);
	r.aio_reqprio = 99;
	r.aio_lio_opcode = 77;
	OK(aio_read(&r) == -1 && errno == EINVAL && r.aio_lio_opcode == 77);
	r.aio_lio_opcode = LIO_READ;
	l[0] = &r;
	OK(lio_listio(LIO_WAIT, l, 1, NULL) == -1 && errno == EINVAL);

	/* aio_cancel of a copy of an aiocb in progress: not a request glibc
	 * knows, so EINVAL. */
	OK(pipe(p) == 0);
	cb_init(&r, p[0], b1, 4, 0);
	OK(aio_read(&r) == 0);
	c = r;
	OK(aio_cancel(p[0], &c) == -1 && errno == EINVAL);
	OK(write(p[1], "done", 4) == 4);
	OK(wait_for(&r) == 4);
	close(p[0]);
	close(p[1]);

	/* A SIGEV_THREAD whose thread cannot be made: the request keeps its
	 * own result (glibc never sees pthread_create fail). */
	pthread_attr_t a;
	OK(pthread_attr_init(&a) == 0);
	OK(pthread_attr_setstacksize(&a, (size_t)1 << 46) == 0);
	cb_init(&w, fd, (char *)"cd", 2, 2);
	w.aio_sigevent.sigev_notify = SIGEV_THREAD;
	w.aio_sigevent.sigev_notify_function = (void (*)(union sigval))abort;
	w.aio_sigevent.sigev_notify_attributes = &a;
	OK(aio_write(&w) == 0);
	OK(wait_for(&w) == 2 && aio_error(&w) == 0);
	pthread_attr_destroy(&a);
}

/* A program that closes every descriptor it does not know of (a daemon,
 * or closefrom) while requests run, and then opens files: they get the
 * numbers glibc would give, the requests complete, and nothing is
 * written into the new files (the engine's own descriptors are kept). */
static void close_everything(void)
{
	char path[] = "/var/tmp/uaio-dropin-XXXXXX", b[8];
	struct aiocb r;
	int p[2], q[2], f;

	OK(pipe(p) == 0);
	cb_init(&r, p[0], b, 4, 0);
	OK(aio_read(&r) == 0);		/* the engine runs, the read waits */
	for (int i = 3; i < 1024; i++)
		if (i != p[0] && i != p[1])
			close(i);
	OK(write(p[1], "ping", 4) == 4);
	OK(wait_for(&r) == 4 && !memcmp(b, "ping", 4));
	closefrom(3);
	/* only the engine's numbers are left there: bad flags on one still
	 * fail (no call reached the kernel: 0) */
	for (int e = 3; e < 1024; e++)
		if (fcntl(e, F_GETFD) >= 0) {
			OK(close_range((unsigned)e, (unsigned)e, 0x80000) == -1 && errno == EINVAL);
			/* and a close of one is of a number not open to it,
			 * as under glibc (it said 0) */
			OK(close(e) == -1 && errno == EBADF);
			OK(fcntl(e, F_GETFD) >= 0);	/* still the engine's */
			break;
		}
	f = mkstemp(path);
	OK(f == 3);			/* the lowest number, as under glibc */
	unlink(path);
	OK(write(f, "ORIGINALCONTENT\n", 16) == 16);
	OK(pipe(q) == 0);
	cb_init(&r, q[0], b, 4, 0);
	OK(aio_read(&r) == 0);
	OK(write(q[1], "pong", 4) == 4);
	OK(wait_for(&r) == 4 && !memcmp(b, "pong", 4));
	cb_init(&r, f, b, 8, 0);
	OK(aio_read(&r) == 0);
	OK(wait_for(&r) == 8 && !memcmp(b, "ORIGINAL", 8));
	OK(lseek(f, 0, SEEK_CUR) == 16 && lseek(f, 0, SEEK_END) == 16);
	close(f);
	close(q[0]);
	close(q[1]);
}

/* Writes to one pipe land in the order they were made, as glibc's helper
 * runs a descriptor's requests one after another: a first write larger
 * than the pipe, which has to wait for the reader, then small ones. */
int stream_order(const int p[2])
{
	enum { BIG = 256 * 1024, SMALL = 12 };
	static char big[BIG], got[BIG + SMALL * 4];
	struct aiocb w[1 + SMALL];
	char tags[SMALL][4];
	size_t have = 0;

	memset(big, 'A', BIG);
	cb_init(&w[0], p[1], big, BIG, 0);
	if (aio_write(&w[0]))
		return 1;
	for (int i = 0; i < SMALL; i++) {
		memcpy(tags[i], (char[4]){ 'b', (char)('a' + i), 'c', 'd' }, 4);
		cb_init(&w[1 + i], p[1], tags[i], 4, 0);
		if (aio_write(&w[1 + i]))
			return 2;
	}
	while (have < sizeof(got)) {
		ssize_t n = read(p[0], got + have, sizeof(got) - have);

		if (n <= 0)
			return 3;
		have += (size_t)n;
	}
	for (int i = 0; i <= SMALL; i++)
		if (wait_for(&w[i]) != (i ? 4 : BIG))
			return 4;
	if (memcmp(got, big, BIG))
		return 5;
	for (int i = 0; i < SMALL; i++)
		if (memcmp(got + BIG + 4 * i, tags[i], 4))
			return 6;
	return 0;
}

/* lio_listio is no cancellation point, as glibc's (it turns cancellation
 * off): a thread with a cancel pending lists a pipe write; the call
 * returns 0, the data arrives, and the thread dies at its next
 * cancellation point (uaio's drop-in acted on it inside: the call never
 * returned and the write stayed in progress). */
static struct aiocb lio_w;
static volatile int lio_ret = -9;

static void *lio_cancelled(void *arg)
{
	struct aiocb *l[1] = { &lio_w };

	(void)arg;
	pthread_cancel(pthread_self());
	lio_ret = lio_listio(LIO_WAIT, l, 1, NULL);
	pthread_testcancel();
	return NULL;
}

static void lio_no_cancellation_point(void)
{
	pthread_t th;
	void *res;
	char b[4];
	int p[2];

	OK(pipe(p) == 0);
	cb_init(&lio_w, p[1], "lio!", 4, 0);
	lio_w.aio_lio_opcode = LIO_WRITE;
	OK(pthread_create(&th, NULL, lio_cancelled, NULL) == 0);
	OK(pthread_join(th, &res) == 0);
	OK(res == PTHREAD_CANCELED && lio_ret == 0);
	OK(aio_error(&lio_w) == 0 && aio_return(&lio_w) == 4);
	OK(read(p[0], b, 4) == 4 && !memcmp(b, "lio!", 4));
	close(p[0]);
	close(p[1]);
}

static void in_child(const char *what)
{
	pid_t pid = fork();
	int status;

	OK(pid >= 0);
	if (pid == 0) {
		execl("/proc/self/exe", "dropin_prog", what, (char *)NULL);
		_exit(9);
	}
	OK(waitpid(pid, &status, 0) == pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "dropin_prog %s: %s %d\n", what,
			WIFEXITED(status) ? "exit" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	OK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(int argc, char **argv)
{
	catch_faults();
	if (argc > 1 && !strcmp(argv[1], "table-full"))
		return table_full_child();
	if (argc > 1 && !strcmp(argv[1], "small-table"))
		return small_table_child();
	if (argc > 1 && !strcmp(argv[1], "select-safe"))
		return select_safe_child();
	if (argc > 1 && !strcmp(argv[1], "idle"))
		return idle_child();
	if (argc > 1 && !strcmp(argv[1], "idle-negative"))
		return idle_negative_child();
	if (argc > 1 && !strcmp(argv[1], "fsize-late"))
		return fsize_late_child();
	char path[] = "/var/tmp/uaio-dropin-XXXXXX", buf[64];
	int fd = mkstemp(path), p[2];
	struct aiocb z, cb, w[3], *list[3];
	sigset_t set;
	siginfo_t si;

	OK(fd >= 0);
	unlink(path);
	/* Which implementation: the library aio_error comes from. */
	Dl_info dl;
	OK(dladdr((void *)aio_error, &dl) && dl.dli_fname);
	const char *impl = strstr(dl.dli_fname, "uaio-posix") ? "uaio" :
			   strstr(dl.dli_fname, "libc.so") ? "glibc" : "?";
	int t0 = threads();

	/* glibc's aio_error and aio_return read what the aiocb holds: 0 for
	 * one never submitted (zeroed), and the result as often as asked. */
	memset(&z, 0, sizeof(z));
	errno = 0;
	OK(aio_error(&z) == 0 && aio_return(&z) == 0 && errno == 0);

	/* A read from the page cache: uaio finishes it inline, no thread. */
	OK(pwrite(fd, "cached", 6, 200) == 6);
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = buf;
	cb.aio_nbytes = 6;
	cb.aio_offset = 200;
	OK(aio_read(&cb) == 0);
	OK(wait_for(&cb) == 6 && !memcmp(buf, "cached", 6));
	int t_cached = threads();
	OK(aio_return(&cb) == 6 && aio_return(&cb) == 6 && aio_error(&cb) == 0);

	/* lio_listio(LIO_WAIT) of writes, then aio_read of the result. */
	for (int i = 0; i < 3; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].aio_fildes = fd;
		w[i].aio_buf = (char *)"0123456789abcdefghij" + i * 5;
		w[i].aio_nbytes = 5;
		w[i].aio_offset = i * 5;
		w[i].aio_lio_opcode = LIO_WRITE;
		list[i] = &w[i];
	}
	OK(lio_listio(LIO_WAIT, list, 3, NULL) == 0);
	for (int i = 0; i < 3; i++)
		OK(aio_error(&w[i]) == 0 && aio_return(&w[i]) == 5);
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = buf;
	cb.aio_nbytes = 15;
	OK(aio_read(&cb) == 0);
	OK(wait_for(&cb) == 15 && !memcmp(buf, "0123456789abcde", 15));

	/* aio_fsync, aio_write through the *64 names. */
	struct aiocb64 w64;
	memset(&w64, 0, sizeof(w64));
	w64.aio_fildes = fd;
	w64.aio_buf = (char *)"XYZ";
	w64.aio_nbytes = 3;
	w64.aio_offset = 100;
	OK(aio_write64(&w64) == 0);
	memset(&z, 0, sizeof(z));
	z.aio_fildes = fd;
	OK(aio_fsync(O_DSYNC, &z) == 0);
	while (aio_error64(&w64) == EINPROGRESS)
		usleep(100);
	OK(aio_return64(&w64) == 3);
	OK(wait_for(&z) == 0);

	/* A pipe read already running is not cancelled (glibc's helper
	 * thread is in read(2); uaio's is in the kernel); another completes
	 * with a signal. */
	OK(pipe(p) == 0);
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = p[0];
	cb.aio_buf = buf;
	cb.aio_nbytes = 4;
	cb.aio_sigevent.sigev_notify = SIGEV_NONE;
	OK(aio_read(&cb) == 0);
	OK(aio_error(&cb) == EINPROGRESS);
	usleep(20000);		/* glibc: let its helper thread start the read */
	OK(aio_cancel(p[0], &cb) == AIO_NOTCANCELED);
	OK(aio_error(&cb) == EINPROGRESS);
	OK(write(p[1], "xxxx", 4) == 4);
	OK(wait_for(&cb) == 4);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = p[0];
	cb.aio_buf = buf;
	cb.aio_nbytes = 4;
	cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	cb.aio_sigevent.sigev_signo = SIGUSR1;
	cb.aio_sigevent.sigev_value.sival_int = 42;
	OK(aio_read(&cb) == 0);
	OK(write(p[1], "ping", 4) == 4);
	OK(sigwaitinfo(&set, &si) == SIGUSR1);
	OK(si.si_code == SI_ASYNCIO && si.si_value.sival_int == 42);
	OK(aio_error(&cb) == 0 && aio_return(&cb) == 4 && !memcmp(buf, "ping", 4));

	/* lio_listio: a signal per entry (a real-time one: queued, each
	 * counts). */
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < 3; i++) {
		w[i].aio_offset = 300 + i * 5;
		w[i].aio_sigevent.sigev_signo = SIGRTMIN;
	}
	for (int i = 0; i < 3; i++)
		w[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	OK(lio_listio(LIO_WAIT, list, 3, NULL) == 0);
	OK(pread(fd, buf, 15, 300) == 15 && !memcmp(buf, "0123456789abcde", 15));
	struct timespec zero = { 0, 0 }, two = { 2, 0 };
	int got = 0;
	while (sigtimedwait(&set, &si, got < 3 ? &two : &zero) == SIGRTMIN)
		got++;
	OK(got == 3);

	glibc_details(fd);

	close_everything();
	lio_no_cancellation_point();
	in_child("table-full");
	in_child("small-table");
	in_child("select-safe");
	in_child("idle");
	in_child("idle-negative");
	in_child("fsize-late");

	/* aio_init is accepted (a hint). */
	struct aioinit in = { .aio_threads = 4, .aio_num = 64 };
	aio_init(&in);
	printf("impl=%s threads_before=%d threads_after_cached=%d\n", impl, t0, t_cached);
	last_line = 0;
	return 0;
}
