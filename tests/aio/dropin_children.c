/* SPDX-License-Identifier: MIT */
/*
 * dropin_prog's scenarios that need a process of their own (a full or
 * small descriptor table, an idle engine, a limit lowered late), each
 * started by exec from dropin_prog's main.
 */
#include "dropin_prog.h"
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include "../engine_fds.h"

/* Requests made with the descriptor table full, before anything of the
 * library's could be opened: glibc needs no descriptor, so they run. In a
 * new process (glibc's AIO does not survive fork with threads idle). */
int table_full_child(void)
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
int small_table_child(void)
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

/* A select() program: it never holds more than 1000 descriptors, so
 * under glibc every number open(2) gives it is below FD_SETSIZE, with 300
 * pipe reads in flight too. The fallback backend's duplicates of those
 * pipes took 768 up first (232 of its numbers came out at 1024 and over,
 * past its fd_set): with RLIMIT_NOFILE over 1024 they go above 1024. */
int select_safe_child(void)
{
	enum { NP = 300 };
	static int p[NP][2];
	static struct aiocb r[NP];
	static char b[NP];
	struct rlimit rl;
	int held = 3 + 2 * NP, fd;

	closefrom(3);		/* what the test's runner left open is not counted */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 2;
	rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
	if (rl.rlim_cur <= 2048)
		return 0;	/* no room above FD_SETSIZE to keep them: not checked */
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 3;
	for (int i = 0; i < NP; i++) {
		if (pipe(p[i]) < 0)
			return 4;
		cb_init(&r[i], p[i][0], &b[i], 1, 0);
		if (aio_read(&r[i]))
			return 5;
	}
	while (held < 1000) {
		if ((fd = open("/dev/null", O_RDONLY)) < 0)
			return 6;
		if (fd >= FD_SETSIZE)
			return 7;
		held++;
	}
	for (int i = 0; i < NP; i++)
		if (write(p[i][1], "s", 1) != 1 || wait_for(&r[i]) != 1)
			return 8;
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

/* One pipe read through AIO, then the wait (bounded, not timed: up to
 * 60 s) until the helpers have ended and left no descriptor. 0, or the
 * child's exit status for what failed. */
static int read_then_idle(void)
{
	struct aiocb r;
	int p[2];
	char b[4];

	if (pipe(p) < 0)
		return 2;
	cb_init(&r, p[0], b, 4, 0);
	if (aio_read(&r) || write(p[1], "idle", 4) != 4 || wait_for(&r) != 4 ||
	    memcmp(b, "idle", 4))
		return 3;
	close(p[0]);
	close(p[1]);
	for (int i = 0; threads_now() != 1; i++) {
		if (i == 600)
			return 4;
		usleep(100000);
	}
	return engine_fds() != 0 ? 7 : 0;
}

/* Done with AIO for aio_idle_time (1 s), a program is single-threaded
 * again, as glibc's helper threads end (unshare(2) of a user namespace
 * wants that), and holds no descriptor of the engine's; a request after
 * that is served as any other. */
int idle_child(void)
{
	struct aioinit init = { .aio_threads = 4, .aio_num = 64, .aio_idle_time = 1 };
	int ret;

	aio_init(&init);
	for (int round = 0; round < 2; round++) {
		if ((ret = direct_reads()) || (ret = read_then_idle()))
			return ret;
	}
	return 0;
}

/* A negative aio_idle_time ends the helpers as soon as they are idle, as
 * glibc's: set after 600 s, it replaces it (the drop-in ignored it and
 * kept the engine 600 s). */
int idle_negative_child(void)
{
	struct aioinit init = { .aio_threads = 4, .aio_num = 64, .aio_idle_time = 600 };

	aio_init(&init);
	init.aio_idle_time = -1;
	aio_init(&init);
	return read_then_idle();
}

/* A program that lowers RLIMIT_FSIZE after it has used AIO, then writes
 * past it: EFBIG, and it goes on (glibc's helper blocks SIGXFSZ). The
 * drop-in looked the limit up every 64 submissions: an inline write
 * raised SIGXFSZ at the caller, whose default action killed it. */
int fsize_late_child(void)
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
