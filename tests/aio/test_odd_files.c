/* SPDX-License-Identifier: MIT */
/*
 * Requests on devices and other odd files, as glibc makes them, and what
 * the engine holds for them: a device that never says POLLOUT
 * (/dev/kmsg); a request of 0 bytes, which glibc's pread/pwrite put to
 * the file (and a file may refuse even that), at once, on a thread, or
 * behind the requests before it on a stream; the descriptors a stream's
 * requests hold (one for them all; none left in a fork's child); the
 * process's record locks, which a duplicate's close would drop; a
 * signalfd, read by a thread that is not the caller's; a device that
 * seeks (/dev/zero), read whole.
 */
#define _GNU_SOURCE
#include "aio/aio_util.h"
#include <dirent.h>
#include <uaio/loop.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

/* /dev/kmsg takes every write at once but never says POLLOUT, and has no
 * RWF_NOWAIT: a write that waited for readiness (the loop's, or the
 * kernel's io_uring poll) never ended. glibc's helper just writes. */
static void device_never_writable(void)
{
	char line[] = "uaio test_glibc_more: device_never_writable\n";
	struct aiocb c1, c2;
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("  (/dev/kmsg: %s; not run)\n", strerror(errno));
		return;
	}
	c1 = t_cb(fd, line, strlen(line), 0);
	c2 = t_cb(fd, line, strlen(line), 0);
	CHECK_EQ(uaio_write(&c1), 0);
	CHECK_EQ(uaio_write(&c2), 0);
	CHECK_EQ(t_wait(&c1, NULL), (long)strlen(line));
	CHECK_EQ(t_wait(&c2, NULL), (long)strlen(line));
	close(fd);
}

/* A request of 0 bytes: glibc's pread/pwrite ask the file, which may
 * refuse even that; preadv2 would answer 0 without asking. */
static void zero_length_asks_file(void)
{
	struct { const char *path; int flags, kind; long ret; int err; } c[] = {
		{ "/dev/full", O_WRONLY, LIO_WRITE, -1, ENOSPC },
		{ "/dev/null", O_RDWR, LIO_WRITE, 0, 0 },
		{ "/", O_RDONLY | O_DIRECTORY, LIO_READ, -1, EISDIR },
		{ NULL, 0, LIO_READ, -1, EINVAL },	/* an eventfd */
		{ "/proc/self/status", O_RDONLY, LIO_READ, 0, 0 },
		/* a regular file of procfs answers itself */
		{ "/proc/self/oom_score_adj", O_WRONLY, LIO_WRITE, -1, EINVAL },
	};
	char buf[1];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int fd = c[i].path ? open(c[i].path, c[i].flags | O_CLOEXEC) :
				     eventfd(0, EFD_CLOEXEC);
		struct aiocb cb;
		int err;

		CHECK(fd >= 0);
		cb = t_cb(fd, buf, 0, 0);
		CHECK_EQ(c[i].kind == LIO_READ ? uaio_read(&cb) : uaio_write(&cb), 0);
		CHECK_EQ(t_wait(&cb, &err), c[i].ret);
		CHECK_EQ(err, c[i].err);
		close(fd);
	}
}

/* A zero-length read behind a read in flight on the same eventfd: the
 * file is asked when its turn comes (the engine's readv would answer 0). */
static void zero_length_behind(void)
{
	uint64_t v = 0, one = 5;
	char buf[1];
	struct aiocb a, z;
	int fd = eventfd(0, EFD_CLOEXEC), err;

	CHECK(fd >= 0);
	a = t_cb(fd, &v, sizeof(v), 0);
	z = t_cb(fd, buf, 0, 0);
	CHECK_EQ(uaio_read(&a), 0);
	CHECK_EQ(uaio_read(&z), 0);
	CHECK_EQ(uaio_error(&a), EINPROGRESS);
	CHECK_EQ(write(fd, &one, sizeof(one)), (long)sizeof(one));
	CHECK_EQ(t_wait(&a, NULL), (long)sizeof(v));
	CHECK_EQ(v, 5);
	CHECK_EQ(t_wait(&z, &err), -1);
	CHECK_EQ(err, EINVAL);
	close(fd);
}

/* The descriptors open now, as a set (below 4096). */
static void fd_set_now(unsigned char *set, size_t n)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	CHECK(d);
	memset(set, 0, n);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atol(e->d_name) < (long)n &&
		    atol(e->d_name) != dirfd(d))
			set[atol(e->d_name)] = 1;
	closedir(d);
}

/* A fork's child gets no descriptor the requests made: the duplicate a
 * stream's blocking requests hold (here zero-length reads behind a read
 * that waits) is closed there too. */
static void fork_leaves_no_dup(void)
{
	static unsigned char before[4096], after[4096];
	struct aiocb a, z[4];
	char buf[64], nb[1];
	int in = inotify_init1(IN_CLOEXEC), st;
	pid_t pid;

	char dir[] = "/tmp/uaio-forkdup-XXXXXX", path[64];

	CHECK(in >= 0);
	CHECK(mkdtemp(dir));
	CHECK(inotify_add_watch(in, dir, IN_CREATE) >= 0);
	fd_set_now(before, sizeof(before));
	a = t_cb(in, buf, sizeof(buf), 0);
	CHECK_EQ(uaio_read(&a), 0);
	for (int i = 0; i < 4; i++) {
		z[i] = t_cb(in, nb, 0, 0);
		CHECK_EQ(uaio_read(&z[i]), 0);
	}
	fflush(NULL);
	CHECK((pid = fork()) >= 0);
	if (pid == 0) {
		fd_set_now(after, sizeof(after));
		for (size_t i = 0; i < sizeof(after); i++)
			if (after[i] && !before[i])
				_exit(1);
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* the zero-length ones wait behind the read: cancelled; the read
	 * is under way and ends with the event */
	CHECK_EQ(uaio_cancel(in, NULL), AIO_NOTCANCELED);
	for (int i = 0; i < 4; i++)
		CHECK_EQ(uaio_error(&z[i]), ECANCELED);
	snprintf(path, sizeof(path), "%s/f", dir);
	close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	CHECK(t_wait(&a, NULL) > 0);
	unlink(path);
	rmdir(dir);
	close(in);
}

/* Whether another process sees a write lock on path. */
static int locked_elsewhere(const char *path)
{
	pid_t pid;
	int st;

	fflush(NULL);
	CHECK((pid = fork()) >= 0);
	if (pid == 0) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(path, O_RDWR);

		_exit(fd >= 0 && fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? 0 : 1);
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A zero-length write behind a big one on an O_APPEND file: no duplicate
 * of the file is made and closed for it (a close drops the process's
 * record locks on the file). The fallback backend's pins are duplicates
 * (uaio_posix(7)): there a request's end drops them anyway. */
static void zero_length_keeps_locks(void)
{
	enum { BIG = 32 << 20 };
	char path[] = "/var/tmp/uaio-lock-XXXXXX", *buf = calloc(1, BIG);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct aiocb a, z;
	int fd = mkstemp(path);
	uaio_loop *l = uaio_loop_new(NULL);	/* which backend the engine picks */
	bool fallback = !l || uaio_loop_backend(l) == UAIO_BACKEND_EPOLL;

	CHECK(fd >= 0 && buf);
	close(fd);
	CHECK((fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC)) >= 0);
	CHECK_EQ(fcntl(fd, F_SETLK, &fl), 0);
	CHECK(locked_elsewhere(path));
	a = t_cb(fd, buf, BIG, 0);
	z = t_cb(fd, buf, 0, 0);
	CHECK_EQ(uaio_write(&a), 0);
	CHECK_EQ(uaio_write(&z), 0);
	CHECK_EQ(t_wait(&a, NULL), BIG);
	CHECK_EQ(t_wait(&z, NULL), 0);
	if (!fallback)
		CHECK(locked_elsewhere(path));
	if (l)
		uaio_loop_free(l);
	close(fd);
	unlink(path);
	free(buf);
}

/* Descriptors free for the program: opened until EMFILE, then closed. */
static int free_fds(void)
{
	int fds[128], n = 0;

	while (n < 128 && (fds[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return n;
}

/* Requests queued on one stream share its pin: on epoll a pin is a
 * duplicate descriptor, and one per request took a quarter of a small
 * RLIMIT_NOFILE from the program (glibc takes none). In a child, whose
 * engine starts afresh under the lower limit. */
static void queued_share_a_pin(void)
{
	enum { N = 40 };
	pid_t pid;
	int st;

	fflush(NULL);
	CHECK((pid = fork()) >= 0);
	if (pid == 0) {
		struct rlimit rl = { 64, 64 };
		static char fill[1 << 16], msg[N][100];
		struct aiocb cb[N];
		int p[2], fl, before, during;

		CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
		CHECK_EQ(pipe(p), 0);
		fl = fcntl(p[1], F_GETFL);
		CHECK_EQ(fcntl(p[1], F_SETFL, fl | O_NONBLOCK), 0);
		while (write(p[1], fill, sizeof(fill)) > 0)
			;
		CHECK_EQ(fcntl(p[1], F_SETFL, fl), 0);
		before = free_fds();
		for (int i = 0; i < N; i++) {
			cb[i] = t_cb(p[1], msg[i], sizeof(msg[i]), 0);
			CHECK_EQ(uaio_write(&cb[i]), 0);
		}
		during = free_fds();
		for (ssize_t n; (n = read(p[0], fill, sizeof(fill))) == sizeof(fill);)
			if (uaio_error(&cb[N - 1]) != EINPROGRESS)
				break;
		for (int i = 0; i < N; i++)
			CHECK_EQ(t_wait(&cb[i], NULL), (long)sizeof(msg[i]));
		/* the engine's own (a ring or epoll, an eventfd) and one pin */
		_exit(before - during <= 5 ? 0 : (fprintf(stderr, "%d -> %d\n", before, during), 1));
	}
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A zero-length read that blocks (an inotify descriptor with no event
 * waits, as glibc's helper does), on its helper thread: requests on other
 * descriptors still complete inline meanwhile. The event ends it: the
 * kernel's EINVAL (no room for it). */
static void zero_length_blocked(void)
{
	char dir[] = "/tmp/uaio-inotify-XXXXXX", path[64], buf[16], data[4096];
	struct aiocb zr, rd;
	int in, fd, err;

	CHECK(mkdtemp(dir));
	CHECK((in = inotify_init1(IN_CLOEXEC)) >= 0);
	CHECK(inotify_add_watch(in, dir, IN_CREATE) >= 0);
	zr = t_cb(in, buf, 0, 0);
	CHECK_EQ(uaio_read(&zr), 0);
	fd = t_tmpfile();
	memset(data, 'd', sizeof(data));
	CHECK_EQ(pwrite(fd, data, sizeof(data), 0), (long)sizeof(data));
	rd = t_cb(fd, data, sizeof(data), 0);
	CHECK_EQ(uaio_read(&rd), 0);
	CHECK_EQ(uaio_error(&rd), 0);		/* inline, from the cache */
	CHECK_EQ(uaio_return(&rd), (long)sizeof(data));
	CHECK_EQ(uaio_error(&zr), EINPROGRESS);
	snprintf(path, sizeof(path), "%s/f", dir);
	close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	CHECK_EQ(t_wait(&zr, &err), -1);
	CHECK_EQ(err, EINVAL);
	unlink(path);
	rmdir(dir);
	close(fd);
	close(in);
}

/* A device that seeks, made O_NONBLOCK, with nothing to read: EAGAIN at
 * once, as glibc's pread answers (the engine waited for input). */
static void nonblock_device_read(void)
{
	char buf[8192];
	struct aiocb cb;
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC), err = 0;
	ssize_t n = 1;

	if (fd < 0) {
		printf("  (/dev/kmsg: %s; not run)\n", strerror(errno));
		return;
	}
	/* a record logged meanwhile is read instead: past it, again */
	for (int i = 0; i < 5 && n > 0; i++) {
		CHECK(lseek(fd, 0, SEEK_END) >= 0);
		cb = t_cb(fd, buf, sizeof(buf), 0);
		CHECK_EQ(uaio_read(&cb), 0);
		n = t_wait(&cb, &err);
	}
	CHECK_EQ(n, -1);
	CHECK_EQ(err, EAGAIN);
	close(fd);
}

/* A zero-length write to /proc/self/loginuid: only the thread it names
 * may write it, so glibc's helper thread gets EPERM (the main thread
 * itself would get EINVAL for the empty number). */
static void zero_length_procfs_thread(void)
{
	char buf[1];
	struct aiocb cb;
	int fd = open("/proc/self/loginuid", O_WRONLY | O_CLOEXEC), err;

	if (fd < 0) {
		printf("  (/proc/self/loginuid: %s; not run)\n", strerror(errno));
		return;
	}
	cb = t_cb(fd, buf, 0, 0);
	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EPERM);
	close(fd);
}

/*
 * A signalfd gives the signals pending for the thread that reads it and
 * for the process. glibc reads it on its helper thread: a signal sent to
 * the caller's own thread stays pending there and the read waits (and is
 * in progress: aio_cancel cannot cancel it) until one comes to the
 * process. A read made on the caller's thread took its own.
 */
/* SIGUSR1 and SIGUSR2 blocked (the old mask in *old), a signalfd for
 * them, and SIGUSR1 sent to this thread alone. */
static int signalfd_own_signal(sigset_t *set, sigset_t *old, int flags)
{
	int fd;

	sigemptyset(set);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGUSR2);
	CHECK(pthread_sigmask(SIG_BLOCK, set, old) == 0);
	CHECK((fd = signalfd(-1, set, SFD_CLOEXEC | flags)) >= 0);
	CHECK(pthread_kill(pthread_self(), SIGUSR1) == 0);
	return fd;
}

static void signalfd_not_callers(void)
{
	struct signalfd_siginfo si;
	sigset_t set, old, pend;
	struct aiocb cb;
	int fd, err;

	fd = signalfd_own_signal(&set, &old, 0);
	cb = t_cb(fd, &si, sizeof(si), 0);
	CHECK_EQ(uaio_read(&cb), 0);
	const struct aiocb *l[1] = { &cb };
	struct timespec ms100 = { 0, 100000000 };

	CHECK(uaio_suspend(l, 1, &ms100) < 0 && errno == EAGAIN);
	CHECK_EQ(uaio_error(&cb), EINPROGRESS);
	CHECK_EQ(uaio_cancel(fd, &cb), AIO_NOTCANCELED);
	CHECK(kill(getpid(), SIGUSR2) == 0);
	CHECK_EQ(t_wait(&cb, &err), (ssize_t)sizeof(si));
	CHECK_EQ(err, 0);
	CHECK_EQ(si.ssi_signo, SIGUSR2);
	CHECK(sigpending(&pend) == 0 && sigismember(&pend, SIGUSR1));
	CHECK(sigwaitinfo(&set, NULL) == SIGUSR1);
	close(fd);
	CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
}

/* The same made O_NONBLOCK: EAGAIN at once (the caller's own signal is
 * not the worker's), then the process's signal. */
static void signalfd_nonblock(void)
{
	struct signalfd_siginfo si;
	sigset_t set, old;
	struct aiocb cb;
	int fd, err;

	fd = signalfd_own_signal(&set, &old, SFD_NONBLOCK);
	cb = t_cb(fd, &si, sizeof(si), 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), -1);
	CHECK_EQ(err, EAGAIN);
	CHECK(kill(getpid(), SIGUSR2) == 0);
	cb = t_cb(fd, &si, sizeof(si), 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), (ssize_t)sizeof(si));
	CHECK_EQ(si.ssi_signo, SIGUSR2);
	CHECK(sigwaitinfo(&set, NULL) == SIGUSR1);
	close(fd);
	CHECK(pthread_sigmask(SIG_SETMASK, &old, NULL) == 0);
}

/* A device that seeks reads whole, as glibc's pread: /dev/zero's read
 * stops early when the reader is due to reschedule if it was asked not
 * to wait (RWF_NOWAIT, io_uring's first try), which gave short counts;
 * /dev/urandom's likewise. A spinning thread on the same CPU makes the
 * reader due often. One at a time and a list of them. */
static atomic_int spin_stop;

static void *spin(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&spin_stop, memory_order_relaxed))
		;
	return NULL;
}

static void device_reads_whole(void)
{
	static const char *const devs[] = { "/dev/zero", "/dev/urandom" };
	size_t n = 4u << 20;
	char *buf = malloc(4 * n);
	cpu_set_t one, all;
	pthread_t t;
	int err;

	CHECK(buf != NULL);
	CHECK(sched_getaffinity(0, sizeof(all), &all) == 0);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
	atomic_store(&spin_stop, 0);
	CHECK(pthread_create(&t, NULL, spin, NULL) == 0);
	for (unsigned d = 0; d < 2; d++) {
		int fd = open(devs[d], O_RDONLY | O_CLOEXEC);

		CHECK(fd >= 0);
		for (int i = 0; i < 16; i++) {
			struct aiocb cb = t_cb(fd, buf, n, 0);

			CHECK_EQ(uaio_read(&cb), 0);
			CHECK_EQ(t_wait(&cb, &err), (ssize_t)n);
			CHECK_EQ(err, 0);
		}
		for (int i = 0; i < 12; i++) {
			struct aiocb cbs[4], *list[4];

			for (int k = 0; k < 4; k++) {
				cbs[k] = t_cb(fd, buf + (size_t)k * n, n, (off_t)k * (off_t)n);
				cbs[k].aio_lio_opcode = LIO_READ;
				list[k] = &cbs[k];
			}
			CHECK_EQ(ulio_listio(LIO_WAIT, list, 4, NULL), 0);
			for (int k = 0; k < 4; k++)
				CHECK_EQ(uaio_return(&cbs[k]), (ssize_t)n);
		}
		close(fd);
	}
	atomic_store(&spin_stop, 1);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(sched_setaffinity(0, sizeof(all), &all) == 0);
	free(buf);
}

int main(void)
{
	t_watchdog(90);
	RUN(signalfd_not_callers);	/* first: a helper thread left by another may read it */
	RUN(signalfd_nonblock);
	RUN(device_never_writable);
	RUN(zero_length_asks_file);
	RUN(zero_length_blocked);
	RUN(zero_length_behind);
	RUN(fork_leaves_no_dup);
	RUN(queued_share_a_pin);
	RUN(zero_length_keeps_locks);
	RUN(nonblock_device_read);
	RUN(device_reads_whole);
	RUN(zero_length_procfs_thread);
	return T_EXIT_PASS;
}
