/* SPDX-License-Identifier: MIT */
/*
 * glibc's choices where POSIX allows more than one (man 7 uaio_posix):
 * descriptor errors come later, through the status and the notification;
 * aio_fsync reads only aio_fildes and aio_sigevent; a LIO_NOWAIT list
 * with a bad entry between good ones is accepted, each entry and the list
 * notifying exactly once; submission copies at most one small request's
 * worth inline and leaves larger work to the background.
 */
#include "aio/aio_util.h"

#include <sys/mman.h>
#include <sys/resource.h>

/* Exactly n notifications: no more arrive. */
static void notes_wait(int n)
{
	t_notes_wait(n);
	usleep(20000);
	CHECK(sem_trywait(t_notes()) < 0 && errno == EAGAIN);
}

/* Accepted (0), then EBADF / -1 and a notification, as for any end. */
static void expect_late_ebadf(struct aiocb *cb, int (*submit)(struct aiocb *))
{
	int err;

	t_note_by_thread(cb);
	CHECK_EQ(submit(cb), 0);
	CHECK_EQ(t_wait(cb, &err), -1);
	CHECK_EQ(err, EBADF);
	notes_wait(1);
}

static void bad_descriptors(void)
{
	int ro = open("/proc/self/exe", O_RDONLY), wo = open("/dev/null", O_WRONLY);
	int closed = dup(0), p[2];
	char b[8];
	struct aiocb cb;

	CHECK(ro >= 0 && wo >= 0 && closed >= 0 && pipe(p) == 0);
	close(closed);
	cb = t_cb(-1, b, 8, 0);
	expect_late_ebadf(&cb, uaio_read);
	cb = t_cb(-1, b, 8, 0);
	expect_late_ebadf(&cb, uaio_write);
	cb = t_cb(closed, b, 8, 0);
	expect_late_ebadf(&cb, uaio_read);
	cb = t_cb(ro, b, 8, 0);			/* write on O_RDONLY */
	expect_late_ebadf(&cb, uaio_write);
	cb = t_cb(wo, b, 8, 0);			/* read on O_WRONLY */
	expect_late_ebadf(&cb, uaio_read);
	cb = t_cb(p[0], b, 8, 0);		/* streams too */
	expect_late_ebadf(&cb, uaio_write);
	cb = t_cb(p[1], b, 8, 0);
	expect_late_ebadf(&cb, uaio_read);

	/* The same in lists, whatever the mode. */
	struct aiocb e[3];
	struct aiocb *l[3] = { &e[0], &e[1], &e[2] };
	int err;

	e[0] = t_cb(-1, b, 8, 0);
	e[0].aio_lio_opcode = LIO_READ;
	e[1] = t_cb(ro, b, 8, 0);
	e[1].aio_lio_opcode = LIO_WRITE;
	e[2] = t_cb(wo, b, 8, 0);
	e[2].aio_lio_opcode = LIO_READ;
	for (int i = 0; i < 3; i++)
		t_note_by_thread(&e[i]);
	CHECK_EQ(ulio_listio(LIO_NOWAIT, l, 3, NULL), 0);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(t_wait(&e[i], &err), -1);
		CHECK_EQ(err, EBADF);
	}
	notes_wait(3);
	ERRNO_IS(ulio_listio(LIO_WAIT, l, 3, NULL), EIO);
	for (int i = 0; i < 3; i++) {
		CHECK_EQ(uaio_error(&e[i]), EBADF);
		CHECK_EQ(uaio_return(&e[i]), -1);
	}
	notes_wait(3);

	/* aio_fsync keeps glibc's check at the call. */
	cb = t_cb(-1, b, 8, 0);
	ERRNO_IS(uaio_fsync(O_SYNC, &cb), EBADF);
	cb = t_cb(closed, b, 8, 0);
	ERRNO_IS(uaio_fsync(O_DSYNC, &cb), EBADF);
	close(ro);
	close(wo);
	close(p[0]);
	close(p[1]);
}

/* aio_fsync reads aio_fildes and aio_sigevent only. */
static void fsync_ignores_junk(void)
{
	int fd = t_tmpfile(), err;
	char w[4096];
	struct aiocb wr = t_cb(fd, w, sizeof(w), 0), fs;

	memset(w, 'f', sizeof(w));
	CHECK_EQ(uaio_write(&wr), 0);
	memset(&fs, 0, sizeof(fs));
	fs.aio_fildes = fd;
	fs.aio_reqprio = -1;
	fs.aio_offset = -12345;
	fs.aio_nbytes = (size_t)-1;
	fs.aio_buf = (void *)1;
	t_note_by_thread(&fs);
	CHECK_EQ(uaio_fsync(O_SYNC, &fs), 0);
	CHECK_EQ(fs.aio_reqprio, 0);	/* glibc resets it */
	CHECK_EQ(t_wait(&fs, &err), 0);
	CHECK_EQ(err, 0);
	CHECK_EQ(t_wait(&wr, &err), (ssize_t)sizeof(w));
	notes_wait(1);
	fs.aio_reqprio = 1000;
	CHECK_EQ(uaio_fsync(O_DSYNC, &fs), 0);
	CHECK_EQ(t_wait(&fs, &err), 0);
	notes_wait(1);
	close(fd);
}

static void lio_bad_between_good(void)
{
	enum { N = 5 };
	int fd = t_tmpfile(), err;
	char data[N][512], got[N][512];
	struct aiocb e[N], *l[N];
	struct sigevent lsev = { 0 };
	struct timespec zero = { 0, 0 };
	sigset_t block, entry, list, old;
	siginfo_t si;
	int entry_sigs = 0;

	for (int i = 0; i < N; i++)
		memset(data[i], 'A' + i, sizeof(data[i]));
	CHECK(pwrite(fd, data, sizeof(data), 0) == (ssize_t)sizeof(data));
	sigemptyset(&entry);
	sigaddset(&entry, SIGRTMIN);
	sigemptyset(&list);
	sigaddset(&list, SIGRTMIN + 1);
	sigemptyset(&block);
	sigaddset(&block, SIGRTMIN);
	sigaddset(&block, SIGRTMIN + 1);
	/* Blocked: queued, then taken with sigwaitinfo and counted. */
	CHECK(sigprocmask(SIG_BLOCK, &block, &old) == 0);
	for (int i = 0; i < N; i++) {
		e[i] = t_cb(i == 2 ? -1 : fd, got[i], sizeof(got[i]), (off_t)i * 512);
		e[i].aio_lio_opcode = LIO_READ;
		e[i].aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		e[i].aio_sigevent.sigev_signo = SIGRTMIN;
		l[i] = &e[i];
	}
	lsev.sigev_notify = SIGEV_SIGNAL;
	lsev.sigev_signo = SIGRTMIN + 1;
	lsev.sigev_value.sival_int = 77;
	CHECK_EQ(ulio_listio(LIO_NOWAIT, l, N, &lsev), 0);
	for (int i = 0; i < N; i++) {
		ssize_t n = t_wait(&e[i], &err);
		if (i == 2) {
			CHECK_EQ(n, -1);
			CHECK_EQ(err, EBADF);
		} else {
			CHECK_EQ(n, 512);
			CHECK(!memcmp(got[i], data[i], 512));
		}
	}
	/* The list's signal follows every entry's own: once it is here,
	 * all N entry signals are queued, and no second list signal. */
	CHECK_EQ(sigwaitinfo(&list, &si), SIGRTMIN + 1);
	CHECK_EQ(si.si_code, SI_ASYNCIO);
	CHECK_EQ(si.si_value.sival_int, 77);
	while (sigtimedwait(&entry, &si, &zero) == SIGRTMIN) {
		CHECK_EQ(si.si_code, SI_ASYNCIO);
		entry_sigs++;
	}
	CHECK_EQ(entry_sigs, N);
	CHECK(sigtimedwait(&list, &si, &zero) < 0 && errno == EAGAIN);
	CHECK(sigprocmask(SIG_SETMASK, &old, NULL) == 0);
	close(fd);
}

/* Minor faults of the calling thread so far: a copy into fresh pages
 * faults them in on the thread that makes it (no timing involved). */
static long thread_faults(void)
{
	struct rusage ru;

	CHECK(getrusage(RUSAGE_THREAD, &ru) == 0);
	return ru.ru_minflt;
}

/* Fresh anonymous pages, 4 KiB each (no huge page takes a fault for 512). */
static char *fresh(size_t n)
{
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	madvise(p, n, MADV_NOHUGEPAGE);
	return p;
}

/*
 * 10 x 1 MiB from a cached file: lio_listio(LIO_NOWAIT) copies no more
 * than one small request's worth itself and returns; the rest is done in
 * the background (seed 000, 5.2.4), and every byte arrives. So does a
 * single 1 MiB aio_read. On io_uring the caller's thread faults in none
 * of the fresh pages it reads into: the engine's thread copies them. The
 * fallback backend's loop tries the read on the caller's thread, which
 * copies it all there (uaio_posix(7); LTP's aio_suspend 9-1 sees it).
 */
static void big_list_goes_to_background(void)
{
	enum { N = 10, SZ = 1 << 20 };
	int fd = t_tmpfile(), err;
	char *src = malloc((size_t)N * SZ), *dst = fresh((size_t)N * SZ);
	struct aiocb e[N], *l[N];
	unsigned long long before;
	long faults;

	CHECK(src);
	t_fill(src, (size_t)N * SZ, 9);
	CHECK(pwrite(fd, src, (size_t)N * SZ, 0) == (ssize_t)N * SZ);
	CHECK(pread(fd, src, (size_t)N * SZ, 0) == (ssize_t)N * SZ);	/* cached */
	for (int i = 0; i < N; i++) {
		e[i] = t_cb(fd, dst + (size_t)i * SZ, SZ, (off_t)i * SZ);
		e[i].aio_lio_opcode = LIO_READ;
		l[i] = &e[i];
	}
	before = uaio__aio_inline_bytes();
	faults = thread_faults();
	CHECK_EQ(ulio_listio(LIO_NOWAIT, l, N, NULL), 0);
	faults = thread_faults() - faults;
	CHECK(uaio__aio_inline_bytes() - before <= UAIO__AIO_INLINE_MAX);
	fprintf(stderr, "    lio_listio: %ld faults on the caller's thread (%s)\n", faults,
		uaio__aio_backend_name());
	if (!strcmp(uaio__aio_backend_name(), "io_uring"))
		CHECK(faults < SZ / 4096);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(t_wait(&e[i], &err), SZ);
		CHECK_EQ(err, 0);
	}
	CHECK(!memcmp(src, dst, (size_t)N * SZ));
	munmap(dst, (size_t)N * SZ);

	dst = fresh(SZ);
	e[0] = t_cb(fd, dst, SZ, SZ);
	faults = thread_faults();
	CHECK_EQ(uaio_read(&e[0]), 0);
	faults = thread_faults() - faults;
	fprintf(stderr, "    aio_read: %ld faults on the caller's thread\n", faults);
	if (!strcmp(uaio__aio_backend_name(), "io_uring"))
		CHECK(faults < SZ / 4096);
	CHECK_EQ(t_wait(&e[0], &err), SZ);
	CHECK_EQ(err, 0);
	CHECK(!memcmp(src + SZ, dst, SZ));

	/* A small single request still finishes inline. */
	struct aiocb one = t_cb(fd, dst, 4096, 0);
	before = uaio__aio_inline_bytes();
	CHECK_EQ(uaio_read(&one), 0);
	CHECK_EQ(uaio_error(&one), 0);
	CHECK_EQ(uaio__aio_inline_bytes() - before, 4096);
	CHECK_EQ(uaio_return(&one), 4096);
	munmap(dst, SZ);
	close(fd);
	free(src);
}

int main(void)
{
	t_watchdog(60);
	RUN(bad_descriptors);
	RUN(fsync_ignores_junk);
	RUN(lio_bad_between_good);
	RUN(big_list_goes_to_background);
	return T_EXIT_PASS;
}
