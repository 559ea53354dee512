/* SPDX-License-Identifier: MIT */
/* Helpers shared by the POSIX AIO tests. */
#ifndef AIO_TEST_UTIL_H
#define AIO_TEST_UTIL_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uaio/aio.h>
#include "test.h"
#include "aio/aio_internal.h"

/* A hang is a failure, not a ctest timeout five minutes later. */
static inline void t_watchdog(unsigned secs)
{
	signal(SIGALRM, SIG_DFL);
	alarm(secs);
}

/* An unlinked scratch file in dir. */
static inline int t_tmpfile_in(const char *dir)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/uaio-test-XXXXXX", dir);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	return fd;
}

/* One on a disk-backed file system (O_DIRECT works there, unlike on
 * tmpfs). */
static inline int t_tmpfile(void)
{
	return t_tmpfile_in("/var/tmp");
}

/* An unlinked scratch file opened O_DIRECT on /var/tmp; the test skips
 * (exit 77) where that file system has no O_DIRECT. */
static inline int t_direct_file(void)
{
	char path[] = "/var/tmp/uaio-test-XXXXXX";
	int fd = mkstemp(path), dfd;

	CHECK(fd >= 0);
	dfd = open(path, O_RDWR | O_DIRECT);
	unlink(path);
	close(fd);
	if (dfd < 0)
		SKIP("no O_DIRECT on /var/tmp");
	return dfd;
}

/* Drops fd's pages from the page cache so that reads must wait for the
 * disk (the request cannot finish inline). */
static inline void t_evict(int fd)
{
	CHECK(fdatasync(fd) == 0);
	CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
}

static inline void t_fill(char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (char)((i * 131 + seed * 7 + (i >> 9)) & 0xff);
}

static inline struct aiocb t_cb(int fd, void *buf, size_t n, off_t off)
{
	struct aiocb cb;

	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = buf;
	cb.aio_nbytes = n;
	cb.aio_offset = off;
	cb.aio_sigevent.sigev_notify = SIGEV_NONE;
	return cb;
}

/* Waits for the child pid and checks that it exited with status want. */
static inline void t_child_exit(pid_t pid, int want)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st))
		fprintf(stderr, "    child killed by signal %d\n", WTERMSIG(st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == want);
}

/* A new pipe whose read end takes the number num (just closed). */
static inline void t_pipe_at(int q[2], int num)
{
	CHECK(pipe(q) == 0);
	if (q[0] != num) {
		CHECK(dup2(q[0], num) == num);
		close(q[0]);
		q[0] = num;
	}
}

/* Waits for cb (aio_suspend, retrying on EINTR) and returns aio_return;
 * *err gets aio_error. */
static inline ssize_t t_wait(struct aiocb *cb, int *err)
{
	const struct aiocb *l[1] = { cb };
	int e;

	while ((e = uaio_error(cb)) == EINPROGRESS) {
		int r = uaio_suspend(l, 1, NULL);
		CHECK(r == 0 || errno == EINTR);
	}
	CHECK(e >= 0);
	if (err)
		*err = e;
	return uaio_return(cb);
}

/* Submits a, then b, by their aio_lio_opcode (LIO_READ or LIO_WRITE):
 * as one lio_listio of mode, or as two calls. */
static inline void t_submit_two(struct aiocb *a, struct aiocb *b, int mode, int as_list)
{
	struct aiocb *l[2] = { a, b };

	if (as_list) {
		CHECK(ulio_listio(mode, l, 2, NULL) == 0);
		return;
	}
	CHECK((a->aio_lio_opcode == LIO_READ ? uaio_read(a) : uaio_write(a)) == 0);
	CHECK((b->aio_lio_opcode == LIO_READ ? uaio_read(b) : uaio_write(b)) == 0);
}

/* SIGEV_THREAD notifications counted on a semaphore. */
static inline sem_t *t_notes(void)
{
	static sem_t s;
	static int ready;

	/* First called by the test's own thread (t_note_by_thread). */
	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		CHECK(sem_init(&s, 0, 0) == 0);
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	return &s;
}

static inline void t_note_post(union sigval v)
{
	(void)v;
	sem_post(t_notes());
}

static inline void t_note_by_thread(struct aiocb *cb)
{
	(void)t_notes();
	cb->aio_sigevent.sigev_notify = SIGEV_THREAD;
	cb->aio_sigevent.sigev_notify_function = t_note_post;
}

/* Waits for n notifications. */
static inline void t_notes_wait(int n)
{
	for (int i = 0; i < n; i++)
		while (sem_wait(t_notes()) < 0)
			CHECK(errno == EINTR);
}

#define ERRNO_IS(call, e) do { errno = 0; long _r = (long)(call); \
	if (_r != -1 || errno != (e)) { fprintf(stderr, "%s:%d: %s = %ld errno %d (%s), wanted -1/%s\n", \
		__FILE__, __LINE__, #call, _r, errno, strerror(errno), strerror(e)); \
		exit(T_EXIT_FAIL); } } while (0)

#endif
