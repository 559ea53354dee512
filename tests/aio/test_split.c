/* SPDX-License-Identifier: MIT */
/*
 * Large cached reads of a caller that keeps several in flight: one is
 * handed to the engine thread, which copies it on the other core while
 * the caller copies the next inline (engine.h, SPLIT_MIN). A caller that
 * waits for each request in turn keeps every copy inline, and so does
 * one whose reads are small. Every byte arrives either way, and the
 * process keeps its record locks on the file (the fallback backend's pin
 * is a duplicate descriptor, whose close would drop them: no hand-off
 * there).
 */
#include "aio/aio_util.h"

enum { BIG = 128 * 1024, NBIG = 16 };

struct file {
	int fd;
	char *src, *dst;
};

static struct file cached_file(void)
{
	struct file f = { t_tmpfile(), malloc((size_t)NBIG * BIG), malloc((size_t)NBIG * BIG) };

	CHECK(f.src && f.dst);
	t_fill(f.src, (size_t)NBIG * BIG, 5);
	CHECK(pwrite(f.fd, f.src, (size_t)NBIG * BIG, 0) == (ssize_t)NBIG * BIG);
	CHECK(pread(f.fd, f.dst, (size_t)NBIG * BIG, 0) == (ssize_t)NBIG * BIG);
	memset(f.dst, 0, (size_t)NBIG * BIG);
	return f;
}

static void file_done(struct file *f)
{
	CHECK(!memcmp(f->src, f->dst, (size_t)NBIG * BIG));
	close(f->fd);
	free(f->src);
	free(f->dst);
}

static void reap(struct aiocb *cb, size_t n)
{
	int err;

	CHECK_EQ(t_wait(cb, &err), (ssize_t)n);
	CHECK_EQ(err, 0);
}

/* Submit, ask, return, next: the caller waits for each; all inline. */
static void one_at_a_time_inline(void)
{
	struct file f = cached_file();
	unsigned long long before = uaio__aio_inline_bytes();

	for (int i = 0; i < NBIG; i++) {
		struct aiocb cb = t_cb(f.fd, f.dst + (size_t)i * BIG, BIG, (off_t)i * BIG);

		CHECK_EQ(uaio_read(&cb), 0);
		CHECK_EQ(uaio_error(&cb), 0);
		CHECK_EQ(uaio_return(&cb), BIG);
	}
	CHECK_EQ(uaio__aio_inline_bytes() - before, (unsigned long long)NBIG * BIG);
	file_done(&f);
}

/*
 * A queue: two submitted, the older asked for, a third submitted with
 * nothing in the engine's hands: on io_uring the third goes to the engine
 * (it is not among the bytes copied inline), and arrives whole.
 */
static void queue_hands_one_over(void)
{
	struct file f = cached_file();
	struct aiocb cb[NBIG];
	unsigned long long before;

	for (int i = 0; i < NBIG; i++)
		cb[i] = t_cb(f.fd, f.dst + (size_t)i * BIG, BIG, (off_t)i * BIG);
	before = uaio__aio_inline_bytes();
	CHECK_EQ(uaio_read(&cb[0]), 0);
	CHECK_EQ(uaio_read(&cb[1]), 0);
	CHECK_EQ(uaio__aio_inline_bytes() - before, 2ull * BIG);
	CHECK_EQ(uaio_error(&cb[0]), 0);
	CHECK_EQ(uaio_read(&cb[2]), 0);
	/* the engine runs now: on the fallback, no hand-off */
	CHECK_EQ(uaio__aio_inline_bytes() - before,
		 (strcmp(uaio__aio_backend_name(), "io_uring") ? 3ull : 2ull) * BIG);
	/* the rest as a queue would: each goes one way or the other */
	for (int i = 3; i < NBIG; i++) {
		reap(&cb[i - 3], BIG);
		CHECK_EQ(uaio_read(&cb[i]), 0);
	}
	for (int i = NBIG - 3; i < NBIG; i++)
		reap(&cb[i], BIG);
	file_done(&f);
}

/* Small reads of a queue: a hand-off would cost more than the copy. */
static void small_reads_stay_inline(void)
{
	struct file f = cached_file();
	enum { SMALL = 16 * 1024, N = 32 };
	struct aiocb cb[N];
	unsigned long long before = uaio__aio_inline_bytes();

	for (int i = 0; i < N; i++) {
		cb[i] = t_cb(f.fd, f.dst + (size_t)i * SMALL, SMALL, (off_t)i * SMALL);
		CHECK_EQ(uaio_read(&cb[i]), 0);
		if (i)
			CHECK_EQ(uaio_error(&cb[i - 1]), 0);
	}
	for (int i = 0; i < N; i++)
		reap(&cb[i], SMALL);
	CHECK_EQ(uaio__aio_inline_bytes() - before, (unsigned long long)N * SMALL);
	memcpy(f.dst + (size_t)N * SMALL, f.src + (size_t)N * SMALL,
	       (size_t)NBIG * BIG - (size_t)N * SMALL);
	file_done(&f);
}

/* A hand-off that meets a file not cached reads it from the disk alike:
 * a queue of reads over a file whose pages were dropped. */
static void queue_of_uncached_reads(void)
{
	struct file f = cached_file();
	struct aiocb cb[NBIG];

	CHECK(fdatasync(f.fd) == 0);
	(void)posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
	for (int i = 0; i < NBIG; i++) {
		cb[i] = t_cb(f.fd, f.dst + (size_t)i * BIG, BIG, (off_t)i * BIG);
		CHECK_EQ(uaio_read(&cb[i]), 0);
		if (i)
			(void)uaio_error(&cb[i - 1]);
	}
	for (int i = 0; i < NBIG; i++)
		reap(&cb[i], BIG);
	file_done(&f);
}

/* The queue of queue_hands_one_over under a write lock: a child still
 * sees the lock once every read has ended. */
static void hand_off_keeps_locks(void)
{
	struct file f = cached_file();
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct aiocb cb[3];
	pid_t pid;

	CHECK(fcntl(f.fd, F_SETLK, &fl) == 0);
	for (int i = 0; i < 3; i++)
		cb[i] = t_cb(f.fd, f.dst + (size_t)i * BIG, BIG, (off_t)i * BIG);
	CHECK_EQ(uaio_read(&cb[0]), 0);
	CHECK_EQ(uaio_read(&cb[1]), 0);
	(void)uaio_error(&cb[0]);	/* the guess says "a queue" by now */
	CHECK_EQ(uaio_read(&cb[2]), 0);
	for (int i = 0; i < 3; i++)
		reap(&cb[i], BIG);
	CHECK((pid = fork()) >= 0);
	if (pid == 0) {
		struct flock q = { .l_type = F_RDLCK, .l_whence = SEEK_SET };

		_exit(fcntl(f.fd, F_GETLK, &q) == 0 && q.l_type == F_WRLCK &&
		      q.l_pid == getppid() ? 0 : 1);
	}
	t_child_exit(pid, 0);
	memcpy(f.dst + 3 * BIG, f.src + 3 * BIG, (size_t)(NBIG - 3) * BIG);
	file_done(&f);
}

int main(void)
{
	t_watchdog(60);
	RUN(one_at_a_time_inline);
	RUN(queue_hands_one_over);
	RUN(small_reads_stay_inline);
	/* before the uncached reads: their refused tries tell the number's
	 * next file to skip its own (a hint), and a request the fallback
	 * hands to its loop drops the locks (uaio_posix(7)) */
	RUN(hand_off_keeps_locks);
	RUN(queue_of_uncached_reads);
	return T_EXIT_PASS;
}
