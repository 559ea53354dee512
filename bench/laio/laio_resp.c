/* SPDX-License-Identifier: MIT */
/*
 * Responsiveness: a uaio loop with a 1 ms repeating timer while an event
 * handler reads random 4 KiB blocks of a cold file (its cache dropped at
 * start, readahead off, so every read misses). Every --period ms a round
 * of --reads reads falls due; the handler does --burst of them per loop
 * iteration (a request that needs --burst blocks), so both variants offer
 * the same load and differ only in how they wait:
 *   --variant laio:  laio_syscall(SYS_pread64); a round's reads are all
 *                    outstanding at once, completions come through a watch
 *                    on laio_fd()
 *   --variant block: pread(2), blocking the loop
 *   --variant none:  no reads (the timer alone: the machine's own noise)
 * Timer lateness = callback time - its deadline on the 1 ms grid.
 * Prints one line: variant=... ticks=... reads_done=... background=...
 * p50_us=... p99_us=... max_us=...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uaio/laio.h>
#include <uaio/loop.h>

static struct {
	uaio_loop *loop;
	int fd, variant;	/* 0 none, 1 laio, 2 block */
	long pages, reads, burst, inflight, done, bg, issued;
	uint64_t period;
	uint64_t start, next_deadline, end;
	double *late;
	long nlate, caplate;
	uint64_t x;
	char (*bufs)[4096];
	long *freebuf, nfree;
	void **handle_buf;	/* laio handle -> buffer index, by scan */
	long *handle_idx;
	uaio_op nop;
	uaio_timer round;
	uaio_watch w;
} b;

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long rnd_off(void)
{
	b.x ^= b.x << 13; b.x ^= b.x >> 7; b.x ^= b.x << 17;
	return (long)(b.x % (uint64_t)b.pages) * 4096;
}

static void tick(uaio_timer *t)
{
	uint64_t now = mono();

	if (b.nlate == b.caplate) {
		b.caplate = b.caplate ? b.caplate * 2 : 4096;
		b.late = realloc(b.late, sizeof(double) * (size_t)b.caplate);
	}
	b.late[b.nlate++] = now > b.next_deadline ? (now - b.next_deadline) / 1e3 : 0;
	/* next deadline on the 1 ms grid (skipped ticks are not counted) */
	while (b.next_deadline <= now)
		b.next_deadline += 1000000;
	if (now >= b.end) {
		uaio_timer_stop(b.loop, t);
		uaio_loop_stop(b.loop);
	}
}

/* Completed laio reads give their buffer back. */
static void put_buf(void *h)
{
	for (long i = 0; i < b.reads; i++)
		if (b.handle_buf[i] == h) {
			b.handle_buf[i] = NULL;
			b.freebuf[b.nfree++] = i;
			return;
		}
	fprintf(stderr, "unknown laio handle\n");
	exit(1);
}

static int on_laio(uaio_watch *w)
{
	struct laio_completion c[256];
	int n;

	while ((n = laio_poll(c, 256, &(struct timespec){ 0, 0 })) > 0)
		for (int i = 0; i < n; i++) {
			if (c[i].laio_return_value != 4096) {
				fprintf(stderr, "read failed: %s\n", strerror(c[i].laio_errno));
				exit(1);
			}
			put_buf(c[i].laio_handle);
			b.inflight--;
			b.done++;
		}
	return 0;
}

/* One loop iteration's share of the work that is due, then again at the
 * next iteration (or the next round). */
static void step(uaio_op *op, int res, void *data)
{
	uint64_t now = mono();
	long due = b.reads * (long)((now - b.start) / b.period + 1);

	if (now >= b.end)
		return;
	for (long k = 0; k < b.burst && b.issued < due; k++, b.issued++) {
		if (b.variant == 2) {
			if (pread(b.fd, b.bufs[0], 4096, rnd_off()) != 4096) {
				perror("pread");
				exit(1);
			}
			b.done++;
			continue;
		}
		if (!b.nfree)
			break;
		long i = b.freebuf[--b.nfree];
		long r = laio_syscall(SYS_pread64, b.fd, b.bufs[i], 4096L, rnd_off());
		if (r == -1 && errno == EINPROGRESS) {
			b.handle_buf[i] = laio_gethandle();
			b.inflight++;
			b.bg++;
		} else if (r == 4096) {
			b.freebuf[b.nfree++] = i;
			b.done++;
		} else {
			perror("laio pread");
			exit(1);
		}
	}
	if (b.issued < due)
		uaio_op_nop(b.loop, &b.nop, step, NULL);
	else
		uaio_timer_start(b.loop, &b.round, b.start + (uint64_t)(due / b.reads) * b.period - now, 0);
}

static void next_round(uaio_timer *t)
{
	step(NULL, 0, NULL);
}

static int cmpd(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;
	return a < c ? -1 : a > c;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *variant = "laio";
	long size = 1024l << 20;
	double secs = 1.0;
	static char wbuf[1 << 16];
	struct stat st;
	uaio_timer t;
	static const struct uaio_handler h = { .handle_input = on_laio };

	b.reads = 1000;
	b.burst = 16;
	b.period = 100000000;
	b.x = 88172645463325252ull;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--file") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--variant") && i + 1 < argc)
			variant = argv[++i];
		else if (!strcmp(argv[i], "--reads") && i + 1 < argc)
			b.reads = atol(argv[++i]);
		else if (!strcmp(argv[i], "--burst") && i + 1 < argc)
			b.burst = atol(argv[++i]);
		else if (!strcmp(argv[i], "--period") && i + 1 < argc)
			b.period = (uint64_t)(atof(argv[++i]) * 1e6);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = atol(argv[++i]);
		else if (!strcmp(argv[i], "--secs") && i + 1 < argc)
			secs = atof(argv[++i]);
		else
			path = NULL, i = argc;
	}
	if (!path) {
		fprintf(stderr, "usage: %s --file PATH --variant laio|block|none [--reads N] "
			"[--burst B] [--period MS] [--size BYTES] [--secs S]\n", argv[0]);
		return 2;
	}
	b.variant = !strcmp(variant, "laio") ? 1 : !strcmp(variant, "block") ? 2 : 0;
	b.fd = open(path, O_RDWR | O_CREAT, 0600);
	if (b.fd < 0 || fstat(b.fd, &st)) {
		perror(path);
		return 1;
	}
	if (st.st_size < size) {
		memset(wbuf, 'r', sizeof(wbuf));
		for (long off = 0; off < size; off += sizeof(wbuf))
			if (pwrite(b.fd, wbuf, sizeof(wbuf), off) != sizeof(wbuf))
				return 1;
	}
	fdatasync(b.fd);
	posix_fadvise(b.fd, 0, 0, POSIX_FADV_DONTNEED);
	posix_fadvise(b.fd, 0, 0, POSIX_FADV_RANDOM);
	b.pages = size / 4096;
	b.bufs = calloc((size_t)b.reads, 4096);
	b.freebuf = calloc((size_t)b.reads, sizeof(long));
	b.handle_buf = calloc((size_t)b.reads, sizeof(void *));
	for (long i = 0; i < b.reads; i++)
		b.freebuf[b.nfree++] = i;
	b.loop = uaio_loop_new(NULL);
	if (!b.loop)
		return 1;
	if (b.variant == 1 &&
	    uaio_watch_start(b.loop, &b.w, laio_fd(), UAIO_READABLE, &h, NULL) < 0)
		return 1;
	uaio_timer_init(&t, tick, NULL);
	uaio_timer_init(&b.round, next_round, NULL);
	b.start = mono();
	b.end = b.start + (uint64_t)(secs * 1e9);
	b.next_deadline = b.start + 1000000;
	uaio_timer_start(b.loop, &t, 1000000, 1000000);
	if (b.variant)
		uaio_op_nop(b.loop, &b.nop, step, NULL);
	while (uaio_loop_run_once(b.loop, -1) >= 0)
		if (!uaio_timer_pending(&t))
			break;
	uaio_timer_stop(b.loop, &b.round);
	/* let laio's outstanding reads finish before exit */
	if (b.variant == 1) {
		struct laio_completion c[256];
		while (laio_poll(c, 256, &(struct timespec){ 5, 0 }) > 0)
			;
	}
	qsort(b.late, (size_t)b.nlate, sizeof(double), cmpd);
	double p50 = b.nlate ? b.late[b.nlate / 2] : 0;
	double p99 = b.nlate ? b.late[(long)(b.nlate * 0.99)] : 0;
	double mx = b.nlate ? b.late[b.nlate - 1] : 0;
	printf("variant=%s ticks=%ld reads_done=%ld background=%ld "
	       "p50_us=%.1f p99_us=%.1f max_us=%.1f\n", variant, b.nlate, b.done, b.bg,
	       p50, p99, mx);
	return 0;
}
