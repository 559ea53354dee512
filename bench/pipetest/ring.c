/* SPDX-License-Identifier: MIT */
/* pipetest: the ring of pipes, the tokens, and the clock (pipetest.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "pipetest.h"

struct pipetest pt;

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "pipetest: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void timing_start(void)
{
	uint64_t now = now_ns();

	pt.phase = 0;
	pt.done = 0;
	pt.passes = 0;
	pt.next_check = CHECK_EVERY;
	pt.warm_end = now + (uint64_t)(pt.warmup_s * 1e9);
	pt.warm_cap = pt.warm_end + 1000000000ull;
	if (pt.warmup_s <= 0) {
		pt.phase = 1;
		pt.t0 = now;
		pt.p0 = 0;
		pt.end = now + (uint64_t)(pt.time_s * 1e9);
	}
}

void check_clock(void)
{
	uint64_t now = now_ns();

	/* Warm-up lasts its time and one lap of the ring (capped), so every
	 * pipe has carried a token before measuring starts. */
	if (pt.phase == 0 && now >= pt.warm_end &&
	    (pt.passes >= (uint64_t)pt.P || now >= pt.warm_cap)) {
		pt.phase = 1;
		pt.t0 = now;
		pt.p0 = pt.passes;
		pt.end = now + (uint64_t)(pt.time_s * 1e9);
	} else if (pt.phase == 1 && now >= pt.end) {
		pt.t1 = now;
		pt.p1 = pt.passes;
		pt.done = 1;
	}
	pt.next_check = pt.passes + CHECK_EVERY;
}

double rate(void)
{
	double secs = (pt.t1 - pt.t0) / 1e9;

	return secs > 0 ? (pt.p1 - pt.p0) / secs : 0;
}

int raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Try to go past the hard limit: works for a privileged user. */
	struct rlimit want = { 1 << 20, 1 << 20 };
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");
	unsigned long nr_open;

	if (f) {
		if (fscanf(f, "%lu", &nr_open) == 1 && nr_open < want.rlim_max)
			want.rlim_cur = want.rlim_max = nr_open;
		fclose(f);
	}
	if (want.rlim_max > rl.rlim_max && setrlimit(RLIMIT_NOFILE, &want) == 0)
		rl = want;
	return rl.rlim_cur > (1u << 30) ? (1 << 30) : (int)rl.rlim_cur;
}

/* How many pipes fit: 2 fds each, leaving room for stdio, epoll, rings. */
int max_pipes(int limit)
{
	return (limit - 24) / 2;
}

static void set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
}

/*
 * Read ends are non-blocking for the readiness modes and blocking for the
 * async-read modes (io_uring returns -EAGAIN at once on an O_NONBLOCK file
 * instead of waiting). Write ends are non-blocking so that a full pipe is
 * reported instead of deadlocking this single thread.
 */
void ring_open(int nonblock_reads)
{
	pt.rfd = calloc(pt.P, sizeof(int));
	pt.wfd = calloc(pt.P, sizeof(int));
	pt.bufs = calloc((size_t)pt.P, pt.S);
	pt.scratch = malloc(SCRATCH_SIZE);
	if (!pt.rfd || !pt.wfd || !pt.bufs || !pt.scratch)
		die("out of memory");
	memset(pt.scratch, 'x', SCRATCH_SIZE);
	for (int i = 0; i < pt.P; i++) {
		int p[2];

		if (pipe2(p, O_CLOEXEC) < 0)
			die("pipe %d of %d: %s", i, pt.P, strerror(errno));
		pt.rfd[i] = p[0];
		pt.wfd[i] = p[1];
		/* Prime: the pipe keeps the freed buffer page for reuse, so
		 * the first lap does not pay for page allocation. */
		if (write(p[1], pt.scratch, pt.S) != pt.S ||
		    read(p[0], pt.scratch, SCRATCH_SIZE) != pt.S)
			die("priming pipe %d: %s", i, strerror(errno));
		set_nonblock(p[0], nonblock_reads);
		set_nonblock(p[1], 1);
	}
}

void write_token(int j, const char *tok)
{
	ssize_t n = write(pt.wfd[j], tok, pt.S);

	if (n != pt.S)
		die("write to pipe %d: %s", j, n < 0 ? strerror(errno) : "short write");
}

void inject_tokens(void)
{
	char tok[4096];

	memset(tok, 'x', sizeof(tok));
	/* Spread the tokens evenly so they do not queue behind each other. */
	for (int k = 0; k < pt.T; k++)
		write_token((int)((long)k * pt.P / pt.T), tok);
}

/*
 * One readiness event on pipe i: drain it with one read (tokens are whole:
 * writes of S <= PIPE_BUF bytes are atomic) and forward each token with its
 * own write. Draining keeps the edge-like multishot poll correct and costs
 * the level-triggered modes nothing when a pipe holds one token.
 */
void hop_ready(int i)
{
	ssize_t n = read(pt.rfd[i], pt.scratch, SCRATCH_SIZE);
	int j = next_pipe(i);

	if (n < 0) {
		if (errno == EAGAIN)
			return;
		die("read pipe %d: %s", i, strerror(errno));
	}
	if (n == 0 || n % pt.S)
		die("read pipe %d: %zd bytes, not whole tokens", i, n);
	for (ssize_t off = 0; off < n; off += pt.S) {
		write_token(j, pt.scratch + off);
		count_pass();
	}
}
