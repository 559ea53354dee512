/* SPDX-License-Identifier: MIT */
/*
 * What aiobench.c (POSIX AIO) and aiobench_uring.c (its raw liburing peer)
 * share: options, clock, random offsets, buffers, the stand-in computation
 * and the command line, so that both run the very same experiments.
 */
#ifndef AIOBENCH_H
#define AIOBENCH_H
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIE(...) do { fprintf(stderr, "%s: ", prog); fprintf(stderr, __VA_ARGS__); \
	fputc('\n', stderr); exit(1); } while (0)

static const char *prog;
static const char *opt_file;
static long opt_mb = 64, opt_n = 1, opt_k = 1, opt_reads = 200, opt_depth = 1;
static long opt_chunks = 64, opt_chunk_kb = 1024, opt_work_us = 1000;
static double opt_secs = 1.0;
static int opt_cold, opt_direct, opt_sync, opt_overwrite;

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

static void drop_cache(int fd)
{
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* (d)'s line: reads per second (the done reads, reaped up to secs after
 * the start), and latency percentiles from the nlat samples in lat
 * (seconds). */
static void qd_report(const char *api, long depth, double secs, long done,
		      double *lat, long nlat)
{
	qsort(lat, (size_t)nlat, sizeof(*lat), cmp_double);
	printf("exp=qd api=%s depth=%ld direct=%d secs=%.6f rps=%.0f p50_us=%.1f p99_us=%.1f\n",
	       api, depth, opt_direct, secs, done / secs, nlat ? lat[nlat / 2] * 1e6 : 0,
	       nlat ? lat[(nlat * 99) / 100] * 1e6 : 0);
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

/* Stand-in computation: a checksum pass over the chunk, repeated until
 * opt_work_us of CPU time have gone by. */
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

/* The file written by (a) and (b). With --overwrite, it is first written
 * whole, untimed, so that the timed writes land on page-cache pages that
 * already exist: on a VM that hands freed memory back to its host, the
 * first touch of fresh page-cache memory costs more, and would otherwise
 * be charged to whichever variant happens to run after a large free. */
/* A buffer to write whose every 8 bytes say where they belong, so that a
 * write that lands in the wrong place (or not at all) is seen. */
static char *xalloc_pattern(size_t n)
{
	char *p = xalloc(n);

	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint64_t v = (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
		memcpy(p + i, &v, 8);
	}
	return p;
}

/* The output file; with --overwrite, first written whole (with zeros,
 * not the data: the timed write must be seen to have happened). */
static int open_out(size_t n)
{
	int fd = open(opt_file, O_CREAT | O_TRUNC | O_RDWR, 0644);
	static char zeros[1 << 20];

	if (fd < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	for (size_t done = 0; opt_overwrite && done < n;) {
		size_t k = n - done < sizeof(zeros) ? n - done : sizeof(zeros);
		ssize_t r = pwrite(fd, zeros, k, (off_t)done);
		if (r <= 0)
			DIE("pwrite: %s", strerror(errno));
		done += (size_t)r;
	}
	return fd;
}

/* After the clock stops: the file must hold buf's n bytes, or the run
 * fails (a wrong result is never counted as a fast one). */
static void verify_out(int fd, const char *buf, size_t n)
{
	static char got[1 << 20];

	for (size_t done = 0; done < n;) {
		size_t k = n - done < sizeof(got) ? n - done : sizeof(got);
		ssize_t r = pread(fd, got, k, (off_t)done);
		if (r <= 0)
			DIE("verify: read at %zu: %s", done, r ? strerror(errno) : "end of file");
		if (memcmp(got, buf + done, (size_t)r))
			DIE("verify: the file differs from what was written near byte %zu", done);
		done += (size_t)r;
	}
}

/* (c) Forks opt_k children running child(index, file size) at once and
 * reports the reads per second over all of them. */
static void procs_run(void (*child)(int idx, off_t size), const char *api)
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
			DIE("fork: %s", strerror(errno));
		if (p == 0)
			child((int)k, st.st_size);
	}
	for (long k = 0; k < opt_k; k++) {
		if (wait(&status) < 0)
			DIE("wait: %s", strerror(errno));
		bad += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	t1 = now();
	if (bad)
		DIE("%d children failed", bad);
	printf("exp=procs api=%s k=%ld reads=%ld cold=%d secs=%.6f rps=%.0f\n", api, opt_k,
	       opt_reads, opt_cold, t1 - t0, opt_k * opt_reads / (t1 - t0));
	close(fd);
}

struct experiment {
	const char *name;
	void (*run)(void);
};

/* argv: EXPERIMENT [--option value | --flag]...; runs the experiment. */
static int aiobench_main(int argc, char **argv, const struct experiment *exps)
{
	prog = argv[0];
	if (argc < 2)
		DIE("usage: %s write1|lio|procs|qd|overlap [options] (see aiobench.c)", prog);
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
#undef OPT
		if (!strcmp(a, "--api") && v) {
			opt_sync = !strcmp(v, "sync");
			i++;
			continue;
		}
		if (!strcmp(a, "--cold")) { opt_cold = 1; continue; }
		if (!strcmp(a, "--direct")) { opt_direct = 1; continue; }
		if (!strcmp(a, "--overwrite")) { opt_overwrite = 1; continue; }
		DIE("unknown option %s", a);
	}
	if (!opt_file)
		DIE("--file is required");
	for (; exps->name; exps++)
		if (!strcmp(argv[1], exps->name)) {
			exps->run();
			return 0;
		}
	DIE("unknown experiment %s", argv[1]);
}

#endif
