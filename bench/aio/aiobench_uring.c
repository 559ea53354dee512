/* SPDX-License-Identifier: MIT */
/*
 * The raw liburing peer of aiobench.c (same experiments, options and
 * output): what io_uring itself does with no library between, the
 * practical limit for any AIO library on top of it. Rings are set up with
 * SINGLE_ISSUER | DEFER_TASKRUN when the kernel has them; submissions are
 * batched and completions reaped in batches, as a tuned program would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, "aiobench_uring: " __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static const char *opt_file;
static long opt_mb = 64, opt_n = 1, opt_k = 1, opt_reads = 200, opt_depth = 1;
static long opt_chunks = 64, opt_chunk_kb = 1024, opt_work_us = 1000;
static double opt_secs = 1.0;
static int opt_cold, opt_direct;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t xrand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void *xalloc(size_t n)
{
	void *p;

	if (posix_memalign(&p, 4096, n ? n : 4096))
		DIE("out of memory");
	memset(p, 0x5a, n);
	return p;
}

static void ring_init(struct io_uring *r, unsigned sq, unsigned cq)
{
	struct io_uring_params p;

	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	p.cq_entries = cq;
	if (io_uring_queue_init_params(sq, r, &p) == 0)
		return;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = cq;
	int e = io_uring_queue_init_params(sq, r, &p);
	if (e < 0)
		DIE("io_uring_queue_init: %s", strerror(-e));
}

static struct io_uring_sqe *sqe_get(struct io_uring *r)
{
	struct io_uring_sqe *s = io_uring_get_sqe(r);

	if (!s) {
		io_uring_submit(r);
		s = io_uring_get_sqe(r);
	}
	if (!s)
		DIE("no sqe");
	return s;
}

static struct io_uring_cqe *wait1(struct io_uring *r)
{
	struct io_uring_cqe *c;
	int e;

	while ((e = io_uring_wait_cqe(r, &c)) == -EINTR)
		;
	if (e < 0)
		DIE("wait_cqe: %s", strerror(-e));
	return c;
}

static void drop_cache(int fd)
{
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static void exp_write1(void)
{
	size_t n = (size_t)opt_mb << 20;
	char *buf = xalloc(n);
	int fd = open(opt_file, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	struct io_uring r;
	double t0, t1;

	if (fd < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	ring_init(&r, 8, 16);
	t0 = now();
	for (size_t done = 0; done < n;) {
		io_uring_prep_write(sqe_get(&r), fd, buf + done, (unsigned)(n - done), done);
		io_uring_submit(&r);
		struct io_uring_cqe *c = wait1(&r);
		if (c->res <= 0)
			DIE("write: %s", strerror(-c->res));
		done += (size_t)c->res;
		io_uring_cqe_seen(&r, c);
	}
	t1 = now();
	printf("exp=write1 api=liburing mb=%ld secs=%.6f mbps=%.1f\n", opt_mb, t1 - t0,
	       opt_mb / (t1 - t0));
	close(fd);
}

static void exp_lio(void)
{
	size_t total = (size_t)opt_mb << 20, per = total / (size_t)opt_n;
	char *buf = xalloc(total);
	int fd = open(opt_file, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	struct io_uring r;
	long sent = 0, got = 0, inflight = 0, cap = 8192;
	double t0, t1;

	if (fd < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	ring_init(&r, 4096, (unsigned)cap);
	t0 = now();
	while (got < opt_n) {
		while (sent < opt_n && inflight < cap) {
			io_uring_prep_write(sqe_get(&r), fd, buf + sent * per, (unsigned)per,
					    (uint64_t)(sent * per));
			sent++;
			inflight++;
		}
		io_uring_submit_and_wait(&r, 1);
		unsigned head, n = 0;
		struct io_uring_cqe *c;
		io_uring_for_each_cqe(&r, head, c) {
			if (c->res != (int)per)
				DIE("write: %d", c->res);
			n++;
		}
		io_uring_cq_advance(&r, n);
		got += n;
		inflight -= n;
	}
	t1 = now();
	printf("exp=lio api=liburing n=%ld mb=%ld secs=%.6f mbps=%.1f\n", opt_n, opt_mb, t1 - t0,
	       (double)(per * opt_n) / (1 << 20) / (t1 - t0));
	close(fd);
}

static void procs_child(int idx, off_t size)
{
	int fd = open(opt_file, O_RDONLY);
	char *buf = xalloc((size_t)opt_reads * 4096);
	struct io_uring r;
	off_t blocks = size / 4096;

	rng += (uint64_t)idx * 0x9e3779b97f4a7c15ull;
	if (fd < 0)
		_exit(2);
	ring_init(&r, 256, 512);
	for (long i = 0; i < opt_reads; i++)
		io_uring_prep_read(sqe_get(&r), fd, buf + i * 4096, 4096,
				   (uint64_t)(xrand() % (uint64_t)blocks) * 4096);
	io_uring_submit(&r);
	for (long got = 0; got < opt_reads;) {
		struct io_uring_cqe *c = wait1(&r);
		if (c->res != 4096)
			_exit(3);
		io_uring_cqe_seen(&r, c);
		got++;
	}
	_exit(0);
}

static void exp_procs(void)
{
	struct stat st;
	int fd = open(opt_file, O_RDONLY), status, bad = 0;
	double t0, t1;

	if (fd < 0 || fstat(fd, &st) < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	if (opt_cold)
		drop_cache(fd);
	fflush(NULL);
	t0 = now();
	for (long k = 0; k < opt_k; k++) {
		pid_t p = fork();
		if (p < 0)
			DIE("fork");
		if (p == 0)
			procs_child((int)k, st.st_size);
	}
	for (long k = 0; k < opt_k; k++) {
		if (wait(&status) < 0)
			DIE("wait");
		bad += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	t1 = now();
	if (bad)
		DIE("%d children failed", bad);
	printf("exp=procs api=liburing k=%ld reads=%ld cold=%d secs=%.6f rps=%.0f\n", opt_k,
	       opt_reads, opt_cold, t1 - t0, opt_k * opt_reads / (t1 - t0));
	close(fd);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void exp_qd(void)
{
	int fd = open(opt_file, O_RDONLY | (opt_direct ? O_DIRECT : 0));
	struct stat st;
	long m = opt_depth, done = 0, nlat = 0, maxlat = 4000000, inflight = 0;
	double *t_sub, *lat, t0, t_end, t;
	struct io_uring r;
	char *buf;
	off_t blocks;

	if (fd < 0 || fstat(fd, &st) < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	blocks = st.st_size / 4096;
	buf = xalloc((size_t)m * 4096);
	t_sub = calloc((size_t)m, sizeof(*t_sub));
	lat = malloc((size_t)maxlat * sizeof(*lat));
	ring_init(&r, m < 4096 ? (unsigned)m : 4096, (unsigned)(2 * m));
	t0 = now();
	t_end = t0 + opt_secs;
	for (long i = 0; i < m; i++) {
		struct io_uring_sqe *s = sqe_get(&r);
		io_uring_prep_read(s, fd, buf + i * 4096, 4096,
				   (uint64_t)(xrand() % (uint64_t)blocks) * 4096);
		s->user_data = (uint64_t)i;
		t_sub[i] = now();
		inflight++;
	}
	io_uring_submit(&r);
	while (inflight) {
		unsigned head, n = 0;
		struct io_uring_cqe *c;

		wait1(&r);
		t = now();
		io_uring_for_each_cqe(&r, head, c) {
			long i = (long)c->user_data;
			if (c->res != 4096)
				DIE("read: %d", c->res);
			n++;
			inflight--;
			if (nlat < maxlat)
				lat[nlat++] = t - t_sub[i];
			done++;
			if (t >= t_end)
				continue;
			struct io_uring_sqe *s = sqe_get(&r);
			io_uring_prep_read(s, fd, buf + i * 4096, 4096,
					   (uint64_t)(xrand() % (uint64_t)blocks) * 4096);
			s->user_data = (uint64_t)i;
			t_sub[i] = t;
			inflight++;
		}
		io_uring_cq_advance(&r, n);
		io_uring_submit(&r);
	}
	qsort(lat, (size_t)nlat, sizeof(*lat), cmp_double);
	printf("exp=qd api=liburing depth=%ld direct=%d secs=%.6f rps=%.0f p50_us=%.1f p99_us=%.1f\n",
	       m, opt_direct, now() - t0, done / (t_end - t0), nlat ? lat[nlat / 2] * 1e6 : 0,
	       nlat ? lat[(nlat * 99) / 100] * 1e6 : 0);
	close(fd);
}


/* Chunk i of the pass: a fixed permutation (a stride coprime with n), so
 * that kernel readahead cannot do the overlapping for the program. */
static off_t chunk_at(long i, long n, size_t cs)
{
	long s = 5, a, b;

	for (;; s++) {
		for (a = s, b = n; b;) {
			long t = a % b;
			a = b;
			b = t;
		}
		if (a == 1)
			break;
	}
	return (off_t)((i * s) % n) * (off_t)cs;
}

static volatile uint64_t sink;
static void compute(const char *p, size_t n)
{
	double until = now() + opt_work_us * 1e-6;
	uint64_t h = 0;

	do {
		for (size_t i = 0; i < n; i += 64)
			h = h * 31 + (uint8_t)p[i];
	} while (now() < until);
	sink += h;
}

static void exp_overlap(void)
{
	size_t cs = (size_t)opt_chunk_kb << 10;
	int fd = open(opt_file, O_RDONLY);
	char *buf[2] = { xalloc(cs), xalloc(cs) };
	struct io_uring r;
	double t0, t1;

	if (fd < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	if (opt_cold)
		drop_cache(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	ring_init(&r, 8, 16);
	t0 = now();
	io_uring_prep_read(sqe_get(&r), fd, buf[0], (unsigned)cs, (uint64_t)chunk_at(0, opt_chunks, cs));
	io_uring_submit(&r);
	for (long i = 0; i < opt_chunks; i++) {
		int cur = (int)(i & 1);
		struct io_uring_cqe *c = wait1(&r);
		if (c->res != (int)cs)
			DIE("read: %d", c->res);
		io_uring_cqe_seen(&r, c);
		if (i + 1 < opt_chunks) {
			io_uring_prep_read(sqe_get(&r), fd, buf[cur ^ 1], (unsigned)cs,
					   (uint64_t)chunk_at(i + 1, opt_chunks, cs));
			io_uring_submit(&r);
		}
		compute(buf[cur], cs);
	}
	t1 = now();
	printf("exp=overlap api=liburing chunks=%ld chunk_kb=%ld work_us=%ld cold=%d secs=%.6f\n",
	       opt_chunks, opt_chunk_kb, opt_work_us, opt_cold, t1 - t0);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *exp;

	if (argc < 2)
		DIE("usage: aiobench_uring write1|lio|procs|qd|overlap [options]");
	exp = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name, var, conv) if (!strcmp(a, name)) { if (!v) DIE("%s needs a value", a); var = conv(v); i++; continue; }
		OPT("--file", opt_file, (const char *));
		OPT("--mb", opt_mb, atol);
		OPT("--n", opt_n, atol);
		OPT("--k", opt_k, atol);
		OPT("--reads", opt_reads, atol);
		OPT("--depth", opt_depth, atol);
		OPT("--secs", opt_secs, atof);
		OPT("--chunks", opt_chunks, atol);
		OPT("--chunk-kb", opt_chunk_kb, atol);
		OPT("--work-us", opt_work_us, atol);
		if (!strcmp(a, "--cold")) { opt_cold = 1; continue; }
		if (!strcmp(a, "--direct")) { opt_direct = 1; continue; }
		if (!strcmp(a, "--api")) { i++; continue; }
		DIE("unknown option %s", a);
	}
	if (!opt_file)
		DIE("--file is required");
	if (!strcmp(exp, "write1"))
		exp_write1();
	else if (!strcmp(exp, "lio"))
		exp_lio();
	else if (!strcmp(exp, "procs"))
		exp_procs();
	else if (!strcmp(exp, "qd"))
		exp_qd();
	else if (!strcmp(exp, "overlap"))
		exp_overlap();
	else
		DIE("unknown experiment %s", exp);
	return 0;
}
