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

/* The line of the last check made: a crash report names it (line 0:
 * after main returned). */
static volatile int last_line = 1;

#define OK(c) do { last_line = __LINE__; if (!(c)) { fprintf(stderr, "dropin_prog:%d: %s\n", __LINE__, #c); exit(1); } } while (0)

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


static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 2;
}

static ssize_t wait_for(struct aiocb *cb)
{
	const struct aiocb *l[1] = { cb };

	while (aio_error(cb) == EINPROGRESS)
		aio_suspend(l, 1, NULL);
	return aio_return(cb);
}

static void cb_init(struct aiocb *cb, int fd, void *buf, size_t n, off_t off)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = fd;
	cb->aio_buf = buf;
	cb->aio_nbytes = n;
	cb->aio_offset = off;
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
static int stream_order(const int p[2])
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

/* Requests made with the descriptor table full, before anything of the
 * library's could be opened: glibc needs no descriptor, so they run. In a
 * new process (glibc's AIO does not survive fork with threads idle). */
static int table_full_child(void)
{
	char path[] = "/var/tmp/uaio-dropin-XXXXXX", b[4];
	struct rlimit rl = { 16, 16 };
	struct aiocb r, w, s;
	int p[2], f = mkstemp(path);

	unlink(path);
	if (f < 0 || pipe(p) < 0 || setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 2;
	while (dup(0) >= 0)
		;
	cb_init(&r, p[0], b, 4, 0);
	cb_init(&w, f, (char *)"full", 4, 0);
	cb_init(&s, f, NULL, 0, 0);
	if (aio_read(&r) || aio_write(&w))
		return 3;
	/* The pipe's read is under way (on a thread of its own): never
	 * AIO_ALLDONE before it is. */
	if (aio_cancel(p[0], NULL) != AIO_NOTCANCELED || aio_error(&r) != EINPROGRESS)
		return 9;
	if (write(p[1], "data", 4) != 4)
		return 3;
	if (wait_for(&r) != 4 || memcmp(b, "data", 4) || wait_for(&w) != 4)
		return 4;
	if (aio_fsync(O_SYNC, &s) || wait_for(&s) != 0)
		return 5;
	if (stream_order(p))
		return 10;
	/* A list, waited for, and one that says it is done with a signal. */
	struct aiocb *l[2] = { &r, &w };
	sigset_t set;
	siginfo_t si;
	struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2 };

	cb_init(&r, p[0], b, 4, 0);
	cb_init(&w, f, (char *)"list", 4, 4);
	r.aio_lio_opcode = LIO_READ;
	w.aio_lio_opcode = LIO_WRITE;
	if (write(p[1], "more", 4) != 4 || lio_listio(LIO_WAIT, l, 2, NULL) ||
	    aio_return(&r) != 4 || memcmp(b, "more", 4) || aio_return(&w) != 4)
		return 7;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	cb_init(&r, f, b, 4, 4);
	r.aio_lio_opcode = LIO_READ;
	if (lio_listio(LIO_NOWAIT, l, 1, &sev) || sigwaitinfo(&set, &si) != SIGUSR2 ||
	    aio_return(&r) != 4 || memcmp(b, "list", 4))
		return 8;
	return 0;
}

/* A small descriptor table (RLIMIT_NOFILE 8): the engine keeps its
 * descriptors above three quarters of it or takes none, so the program's
 * next open(2) gets the number it gets under glibc, which takes none. */
static int small_table_child(void)
{
	struct rlimit rl = { 8, 8 };
	struct aiocb r;
	int p[2], lowest, fd;
	char b[4];

	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || pipe(p) < 0)
		return 2;
	if ((lowest = dup(0)) < 0)
		return 3;
	close(lowest);
	cb_init(&r, p[0], b, 4, 0);
	if (aio_read(&r))
		return 4;
	fd = open("/dev/null", O_RDONLY);
	if (fd != lowest)
		return 5;
	if (write(p[1], "tiny", 4) != 4 || wait_for(&r) != 4 || memcmp(b, "tiny", 4))
		return 6;
	return 0;
}

static int threads_now(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* Two O_DIRECT reads, waited for in aio_suspend: the second goes on the
 * thread's own ring under uaio. 0, or why not (no O_DIRECT here: 0). */
static int direct_reads(void)
{
	char path[] = "/var/tmp/uaio-idle-XXXXXX";
	int fd = mkstemp(path), dfd;
	void *buf = NULL;
	struct aiocb r;
	int ret = 0;

	if (fd < 0 || posix_memalign(&buf, 4096, 4096) || ftruncate(fd, 8192))
		return 5;
	dfd = open(path, O_RDONLY | O_DIRECT);
	unlink(path);
	close(fd);
	for (int k = 0; dfd >= 0 && k < 2 && !ret; k++) {
		cb_init(&r, dfd, buf, 4096, 4096 * k);
		if (aio_read(&r) || wait_for(&r) != 4096)
			ret = 6;
	}
	if (dfd >= 0)
		close(dfd);
	free(buf);
	return ret;
}

/* Done with AIO for aio_idle_time (1 s), a program is single-threaded
 * again, as glibc's helper threads end (unshare(2) of a user namespace
 * wants that), and holds no descriptor of the engine's; a request after
 * that is served as any other. */
static int idle_child(void)
{
	struct aioinit init = { .aio_threads = 4, .aio_num = 64, .aio_idle_time = 1 };
	struct aiocb r;
	int p[2], ret;
	char b[4];

	aio_init(&init);
	for (int round = 0; round < 2; round++) {
		if (pipe(p) < 0)
			return 2;
		cb_init(&r, p[0], b, 4, 0);
		if (aio_read(&r) || write(p[1], "idle", 4) != 4 || wait_for(&r) != 4 ||
		    memcmp(b, "idle", 4))
			return 3;
		close(p[0]);
		close(p[1]);
		if ((ret = direct_reads()))
			return ret;
		/* a bound, not a timing: up to 60 s for what takes 1 */
		for (int i = 0; threads_now() != 1; i++) {
			if (i == 600)
				return 4;
			usleep(100000);
		}
		if (engine_fds() != 0)
			return 7;
	}
	return 0;
}

/* A program that lowers RLIMIT_FSIZE after it has used AIO, then writes
 * past it: EFBIG, and it goes on (glibc's helper blocks SIGXFSZ). The
 * drop-in looked the limit up every 64 submissions: an inline write
 * raised SIGXFSZ at the caller, whose default action killed it. */
static int fsize_late_child(void)
{
	char path[] = "/var/tmp/uaio-dropin-XXXXXX";
	static char page[4096];
	struct rlimit rl = { 65536, RLIM_INFINITY };
	struct aiocb cb;
	int fd = mkstemp(path);

	if (fd < 0)
		return 2;
	unlink(path);
	memset(page, 'p', sizeof(page));
	signal(SIGXFSZ, SIG_DFL);
	for (int i = 0; i < 8; i++) {
		cb_init(&cb, fd, page, sizeof(page), (off_t)i * 4096);
		if (aio_write(&cb) != 0 || wait_for(&cb) != (ssize_t)sizeof(page))
			return 3;
	}
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		return 4;
	for (int i = 0; i < 3; i++) {
		cb_init(&cb, fd, page, sizeof(page), (off_t)(1 << 20) + i * 4096);
		if (aio_write(&cb) != 0 || wait_for(&cb) != -1 || aio_error(&cb) != EFBIG)
			return 5;
	}
	/* and through prlimit */
	rl.rlim_cur = RLIM_INFINITY;
	if (prlimit(0, RLIMIT_FSIZE, &rl, NULL) < 0)
		return 6;
	cb_init(&cb, fd, page, sizeof(page), 1 << 20);
	if (aio_write(&cb) != 0 || wait_for(&cb) != (ssize_t)sizeof(page))
		return 7;
	rl.rlim_cur = 65536;
	if (prlimit(0, RLIMIT_FSIZE, &rl, NULL) < 0)
		return 8;
	cb_init(&cb, fd, page, sizeof(page), 2 << 20);
	if (aio_write(&cb) != 0 || wait_for(&cb) != -1 || aio_error(&cb) != EFBIG)
		return 9;
	return 0;
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
	if (argc > 1 && !strcmp(argv[1], "idle"))
		return idle_child();
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
	in_child("table-full");
	in_child("small-table");
	in_child("idle");
	in_child("fsize-late");

	/* aio_init is accepted (a hint). */
	struct aioinit in = { .aio_threads = 4, .aio_num = 64 };
	aio_init(&in);
	printf("impl=%s threads_before=%d threads_after_cached=%d\n", impl, t0, t_cached);
	last_line = 0;
	return 0;
}
