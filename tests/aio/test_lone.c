/* SPDX-License-Identifier: MIT */
/*
 * Requests made while the engine can have no descriptor (EMFILE): they
 * run on helper threads, one per descriptor (src/aio/lone.c). A request
 * waiting there still completes only on the file it was made for, and
 * requests made once descriptors are back do not overtake it; aio_cancel
 * cancels the requests still waiting, in a fork's child too. Each case
 * in a child of its own, whose descriptor table is full from the start.
 */
#include "aio/aio_util.h"
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>

static int dups[16], ndups;

/* A table of 16 with every number taken, the free ones by dups of 0. */
static void fill_table(void)
{
	struct rlimit rl = { 16, 16 };
	int fd;

	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	while ((fd = dup(0)) >= 0)
		dups[ndups++] = fd;
	CHECK(errno == EMFILE);
}

/* n numbers free again */
static void free_dups(int n)
{
	while (n-- > 0 && ndups > 0)
		close(dups[--ndups]);
}

/* Whether a thread of this process sleeps in a pipe read (its wchan). */
static bool in_pipe_read(void)
{
	char path[300], w[64];
	bool found = false;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	while (d && !found && (e = readdir(d))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/wchan", e->d_name);
		if (e->d_name[0] == '.' || !(f = fopen(path, "r")))
			continue;
		found = fgets(w, sizeof(w), f) && strstr(w, "pipe_read");
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* The first read sleeps in the pipe, the second waits behind it; then the
 * pipe's number is closed and given to another pipe. The waiting read
 * fails (EBADF) rather than take the other pipe's byte. */
static void reused_number(void)
{
	int p[2], q[2], num, err;
	char b[2] = { 0 }, c = 0;

	CHECK(pipe(p) == 0);
	fill_table();
	struct aiocb cb = t_cb(p[0], b, 1, 0), cb2 = t_cb(p[0], b + 1, 1, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	CHECK_EQ(uaio_read(&cb2), 0);
	/* the descriptors a /proc look needs, and a bound, not a timing */
	free_dups(2);
	for (int i = 0; !in_pipe_read(); i++) {
		CHECK(i < 3000);
		usleep(1000);
	}
	num = p[0];
	close(p[0]);
	free_dups(1);		/* room for the second pipe */
	t_pipe_at(q, num);	/* the new pipe takes that number */
	CHECK(write(q[1], "Q", 1) == 1);
	CHECK(write(p[1], "P", 1) == 1);
	CHECK_EQ(t_wait(&cb, &err), 1);
	CHECK(b[0] == 'P');
	CHECK_EQ(t_wait(&cb2, &err), -1);
	CHECK_EQ(err, EBADF);
	CHECK(read(q[0], &c, 1) == 1 && c == 'Q');
}

/* A write larger than the pipe waits for the reader, a small one waits
 * behind it on the helper thread; descriptors come back, and a write
 * made then (by the engine) lands after both, never inside the first. */
static void engine_behind(void)
{
	enum { BIG = 256 * 1024 };
	static char big[BIG], got[BIG + 8];
	int p[2], err;
	size_t have = 0;

	memset(big, 'A', BIG);
	CHECK(pipe(p) == 0);
	fill_table();
	struct aiocb w1 = t_cb(p[1], big, BIG, 0), w2 = t_cb(p[1], "X1X1", 4, 0),
		     w3 = t_cb(p[1], "Y2Y2", 4, 0);
	CHECK_EQ(uaio_write(&w1), 0);
	CHECK_EQ(uaio_write(&w2), 0);
	free_dups(8);		/* the engine can start now */
	CHECK_EQ(uaio_write(&w3), 0);
	/* read a page at a time: room comes in many small windows */
	while (have < sizeof(got)) {
		size_t want = sizeof(got) - have < 4096 ? sizeof(got) - have : 4096;
		ssize_t n = read(p[0], got + have, want);

		CHECK(n > 0);
		have += (size_t)n;
	}
	CHECK_EQ(t_wait(&w1, &err), BIG);
	CHECK_EQ(t_wait(&w2, &err), 4);
	CHECK_EQ(t_wait(&w3, &err), 4);
	CHECK(!memcmp(got, big, BIG));
	CHECK(!memcmp(got + BIG, "X1X1Y2Y2", 8));
}

/* aio_cancel: the requests waiting behind another are cancelled, as glibc
 * cancels those still in its queue; the one its thread runs is not. */
static void cancel_queued(void)
{
	int p[2], err;
	char b[3] = { 0 };

	CHECK(pipe(p) == 0);
	fill_table();
	struct aiocb r1 = t_cb(p[0], b, 1, 0), r2 = t_cb(p[0], b + 1, 1, 0),
		     r3 = t_cb(p[0], b + 2, 1, 0);
	CHECK_EQ(uaio_read(&r1), 0);
	CHECK_EQ(uaio_read(&r2), 0);
	CHECK_EQ(uaio_read(&r3), 0);
	CHECK_EQ(uaio_cancel(p[0], &r3), AIO_CANCELED);
	CHECK_EQ(uaio_error(&r3), ECANCELED);
	CHECK_EQ(uaio_cancel(p[0], &r1), AIO_NOTCANCELED);
	CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);	/* r1 runs; r2 goes */
	CHECK_EQ(t_wait(&r2, &err), -1);
	CHECK_EQ(err, ECANCELED);
	CHECK(write(p[1], "A", 1) == 1);
	CHECK_EQ(t_wait(&r1, &err), 1);
	CHECK(b[0] == 'A');
}

/* A fork's child: the parent's waiting request can be cancelled there,
 * the running one cannot (it never ends in the child), as glibc's child. */
static void fork_orphans(void)
{
	int p[2], err;
	char b[2] = { 0 };
	pid_t pid;

	CHECK(pipe(p) == 0);
	fill_table();
	struct aiocb r1 = t_cb(p[0], b, 1, 0), r2 = t_cb(p[0], b + 1, 1, 0);
	CHECK_EQ(uaio_read(&r1), 0);
	CHECK_EQ(uaio_read(&r2), 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK_EQ(uaio_cancel(p[0], &r2), AIO_CANCELED);
		CHECK_EQ(uaio_error(&r2), ECANCELED);
		CHECK_EQ(uaio_cancel(p[0], &r1), AIO_NOTCANCELED);
		CHECK_EQ(uaio_error(&r1), EINPROGRESS);
		_exit(0);
	}
	t_child_exit(pid, 0);
	/* the parent's go on */
	CHECK(write(p[1], "AB", 2) == 2);
	CHECK_EQ(t_wait(&r1, &err), 1);
	CHECK_EQ(t_wait(&r2, &err), 1);
	CHECK(b[0] == 'A' && b[1] == 'B');
}

static void in_child(void (*fn)(void), const char *name)
{
	pid_t pid;

	fprintf(stderr, "  %s ...\n", name);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	t_child_exit(pid, 0);
}

int main(void)
{
	t_watchdog(60);
	in_child(reused_number, "reused_number");
	in_child(engine_behind, "engine_behind");
	in_child(cancel_queued, "cancel_queued");
	in_child(fork_orphans, "fork_orphans");
	return T_EXIT_PASS;
}
