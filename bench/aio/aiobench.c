/* SPDX-License-Identifier: MIT */
/*
 * POSIX AIO experiments after the UAIO thesis (ch. 5), written against
 * <aio.h> only. Built twice from this file:
 *   aiobench         the standard names: glibc, or uaio when run with
 *                    LD_PRELOAD=libuaio-posix.so
 *   aiobench_native  -DUAIO_NATIVE: the same code on uaio_* names
 * --api sync runs the plain pread/pwrite peer of each experiment.
 *
 *   aiobench write1  --file F --mb N             (a) one aio_write of N MB
 *   aiobench lio     --file F --mb N --n R       (b) N MB as R requests, lio_listio(LIO_WAIT)
 *   aiobench procs   --file F --k K --reads R [--cold]
 *                                                (c) K processes, lio_listio of R reads each
 *   aiobench qd      --file F --depth M --secs S [--direct]
 *                                                (d) M random 4 KiB reads in flight
 *   aiobench overlap --file F --chunks C --chunk-kb KB --work-us W [--cold]
 *                                                (e) reads overlapped with computation
 *   aiobench mem     --file F --n R              memory per request in flight
 * Output: one line of key=value pairs.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aiobench.h"

#ifdef UAIO_NATIVE
#include <uaio/aio.h>
#define aio_read uaio_read
#define aio_write uaio_write
#define aio_error uaio_error
#define aio_return uaio_return
#define aio_suspend uaio_suspend
#define lio_listio ulio_listio
#define API_NAME "native"
#else
#define API_NAME "posix"
#endif

static void aio_wait_one(struct aiocb *cb)
{
	const struct aiocb *l[1] = { cb };

	while (aio_error(cb) == EINPROGRESS)
		aio_suspend(l, 1, NULL);
}

static struct aiocb mkcb(int fd, void *buf, size_t n, off_t off, int op)
{
	struct aiocb cb;

	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = fd;
	cb.aio_buf = buf;
	cb.aio_nbytes = n;
	cb.aio_offset = off;
	cb.aio_lio_opcode = op;
	cb.aio_sigevent.sigev_notify = SIGEV_NONE;
	return cb;
}

/* (a) One write of the whole buffer. */
static void exp_write1(void)
{
	size_t n = (size_t)opt_mb << 20;
	char *buf = xalloc_pattern(n);
	int fd = open_out(n);
	double t0, t1;

	if (fd < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	t0 = now();
	if (opt_sync) {
		for (size_t done = 0; done < n;) {
			ssize_t r = pwrite(fd, buf + done, n - done, (off_t)done);
			if (r <= 0)
				DIE("pwrite: %s", strerror(errno));
			done += (size_t)r;
		}
	} else {
		struct aiocb cb = mkcb(fd, buf, n, 0, LIO_WRITE);
		if (aio_write(&cb))
			DIE("aio_write: %s", strerror(errno));
		aio_wait_one(&cb);
		if (aio_return(&cb) != (ssize_t)n)
			DIE("short write");
	}
	t1 = now();
	verify_out(fd, buf, n);
	printf("exp=write1 api=%s mb=%ld secs=%.6f mbps=%.1f\n", opt_sync ? "sync" : API_NAME,
	       opt_mb, t1 - t0, opt_mb / (t1 - t0));
	close(fd);
}

/* (b) The same bytes as opt_n requests in one lio_listio(LIO_WAIT). */
static void exp_lio(void)
{
	size_t total = (size_t)opt_mb << 20, per = total / (size_t)opt_n;
	char *buf = xalloc_pattern(total);
	struct aiocb *cbs = calloc((size_t)opt_n, sizeof(*cbs));
	struct aiocb **l = calloc((size_t)opt_n, sizeof(*l));
	int fd = open_out(total);
	double t0, t1;

	if (fd < 0 || !cbs || !l)
		DIE("setup: %s", strerror(errno));
	for (long i = 0; i < opt_n; i++) {
		cbs[i] = mkcb(fd, buf + i * per, per, (off_t)(i * per), LIO_WRITE);
		l[i] = &cbs[i];
	}
	t0 = now();
	if (opt_sync) {
		for (long i = 0; i < opt_n; i++)
			if (pwrite(fd, buf + i * per, per, (off_t)(i * per)) != (ssize_t)per)
				DIE("pwrite: %s", strerror(errno));
	} else {
		if (lio_listio(LIO_WAIT, l, (int)opt_n, NULL))
			DIE("lio_listio: %s", strerror(errno));
		for (long i = 0; i < opt_n; i++)
			if (aio_return(&cbs[i]) != (ssize_t)per)
				DIE("request %ld failed", i);
	}
	t1 = now();
	verify_out(fd, buf, per * (size_t)opt_n);
	printf("exp=lio api=%s n=%ld mb=%ld secs=%.6f mbps=%.1f\n", opt_sync ? "sync" : API_NAME,
	       opt_n, opt_mb, t1 - t0, (double)(per * opt_n) / (1 << 20) / (t1 - t0));
	close(fd);
}

/* (c) One of K processes: opt_reads random 4 KiB reads in one list. */
static void procs_child(int idx, off_t size)
{
	int fd = open(opt_file, O_RDONLY);
	char *buf = xalloc((size_t)opt_reads * 4096);
	struct aiocb *cbs = calloc((size_t)opt_reads, sizeof(*cbs));
	struct aiocb **l = calloc((size_t)opt_reads, sizeof(*l));
	off_t blocks = size / 4096;

	rng += (uint64_t)idx * 0x9e3779b97f4a7c15ull;
	if (fd < 0)
		_exit(2);
	for (long i = 0; i < opt_reads; i++) {
		off_t off = (off_t)(xrand() % (uint64_t)blocks) * 4096;
		cbs[i] = mkcb(fd, buf + i * 4096, 4096, off, LIO_READ);
		l[i] = &cbs[i];
	}
	if (opt_sync) {
		for (long i = 0; i < opt_reads; i++)
			if (pread(fd, buf + i * 4096, 4096, cbs[i].aio_offset) != 4096)
				_exit(3);
	} else {
		if (lio_listio(LIO_WAIT, l, (int)opt_reads, NULL))
			_exit(4);
		for (long i = 0; i < opt_reads; i++)
			if (aio_return(&cbs[i]) != 4096)
				_exit(5);
	}
	_exit(0);
}

static void exp_procs(void)
{
	procs_run(procs_child, opt_sync ? "sync" : API_NAME);
}

/* (d) opt_depth random 4 KiB reads kept in flight for opt_secs. */
static void exp_qd(void)
{
	int fd = open(opt_file, O_RDONLY | (opt_direct ? O_DIRECT : 0));
	struct stat st;
	long m = opt_sync ? 1 : opt_depth, done = 0, nlat = 0, maxlat = 4000000;
	char *buf;
	struct aiocb *cbs;
	const struct aiocb **l;
	double *t_sub, *lat, t0, t_end, t;
	off_t blocks;

	if (fd < 0 || fstat(fd, &st) < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	blocks = st.st_size / 4096;
	buf = xalloc((size_t)m * 4096);
	cbs = calloc((size_t)m, sizeof(*cbs));
	l = calloc((size_t)m, sizeof(*l));
	t_sub = calloc((size_t)m, sizeof(*t_sub));
	lat = malloc((size_t)maxlat * sizeof(*lat));
	t0 = now();
	t_end = t0 + opt_secs;
	if (opt_sync) {
		while ((t = now()) < t_end) {
			off_t off = (off_t)(xrand() % (uint64_t)blocks) * 4096;
			if (pread(fd, buf, 4096, off) != 4096)
				DIE("pread: %s", strerror(errno));
			double t2 = now();
			if (nlat < maxlat)
				lat[nlat++] = t2 - t;
			done++;
		}
	} else {
		for (long i = 0; i < m; i++) {
			cbs[i] = mkcb(fd, buf + i * 4096, 4096,
				      (off_t)(xrand() % (uint64_t)blocks) * 4096, LIO_READ);
			l[i] = &cbs[i];
			t_sub[i] = now();
			if (aio_read(&cbs[i]))
				DIE("aio_read: %s", strerror(errno));
		}
		for (;;) {
			aio_suspend(l, (int)m, NULL);
			t = now();
			for (long i = 0; i < m; i++) {
				int e = aio_error(&cbs[i]);
				if (e == EINPROGRESS)
					continue;
				if (e || aio_return(&cbs[i]) != 4096)
					DIE("read failed: %s", strerror(e));
				if (nlat < maxlat)
					lat[nlat++] = t - t_sub[i];
				done++;
				if (t >= t_end)
					continue;
				cbs[i].aio_offset = (off_t)(xrand() % (uint64_t)blocks) * 4096;
				t_sub[i] = t;
				if (aio_read(&cbs[i]))
					DIE("aio_read: %s", strerror(errno));
			}
			/* What is still in flight is left to exit(): at depth
			 * 4096, glibc would take seconds to drain it. */
			if (t >= t_end)
				break;
		}
	}
	t = now();
	qd_report(opt_sync ? "sync" : API_NAME, m, t - t0, done, lat, nlat);
	close(fd);
}

/* (e) Read chunk i+1 while computing on chunk i. */
static void exp_overlap(void)
{
	size_t cs = (size_t)opt_chunk_kb << 10;
	int fd = open(opt_file, O_RDONLY);
	char *buf[2] = { xalloc(cs), xalloc(cs) };
	double t0, t1;

	if (fd < 0)
		DIE("open %s: %s", opt_file, strerror(errno));
	if (opt_cold)
		drop_cache(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
	t0 = now();
	if (opt_sync) {
		for (long i = 0; i < opt_chunks; i++) {
			if (pread(fd, buf[0], cs, chunk_at(i, opt_chunks, cs)) != (ssize_t)cs)
				DIE("pread: %s", strerror(errno));
			compute(buf[0], cs);
		}
	} else {
		struct aiocb cb[2];
		cb[0] = mkcb(fd, buf[0], cs, chunk_at(0, opt_chunks, cs), LIO_READ);
		if (aio_read(&cb[0]))
			DIE("aio_read: %s", strerror(errno));
		for (long i = 0; i < opt_chunks; i++) {
			int cur = (int)(i & 1), nxt = cur ^ 1;
			aio_wait_one(&cb[cur]);
			if (aio_return(&cb[cur]) != (ssize_t)cs)
				DIE("short read");
			if (i + 1 < opt_chunks) {
				cb[nxt] = mkcb(fd, buf[nxt], cs, chunk_at(i + 1, opt_chunks, cs),
					       LIO_READ);
				if (aio_read(&cb[nxt]))
					DIE("aio_read: %s", strerror(errno));
			}
			compute(buf[cur], cs);
		}
	}
	t1 = now();
	printf("exp=overlap api=%s chunks=%ld chunk_kb=%ld work_us=%ld cold=%d secs=%.6f\n",
	       opt_sync ? "sync" : API_NAME, opt_chunks, opt_chunk_kb, opt_work_us, opt_cold,
	       t1 - t0);
	close(fd);
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* Memory: opt_n reads waiting on 64 empty pipes; RSS growth per request
 * (the aiocbs and buffers are the program's and touched before). The
 * requests are left in flight for exit(). */
static void exp_mem(void)
{
	enum { NP = 64 };
	struct aiocb *cbs = calloc((size_t)opt_n, sizeof(*cbs));
	char *buf = malloc((size_t)opt_n);
	int p[NP][2];
	long before, after;

	if (!cbs || !buf)
		DIE("out of memory");
	/* Touch them now (not with zeros: a compiler may drop a memset of
	 * calloc'd memory to zero). */
	memset(cbs, 0xff, (size_t)opt_n * sizeof(*cbs));
	memset(buf, 0xff, (size_t)opt_n);
	for (int i = 0; i < NP; i++)
		if (pipe(p[i]))
			DIE("pipe: %s", strerror(errno));
	/* One request first, so that start-up costs are not counted. */
	cbs[0] = mkcb(p[0][0], buf, 1, 0, LIO_READ);
	if (aio_read(&cbs[0]))
		DIE("aio_read: %s", strerror(errno));
	usleep(100000);
	before = rss_kb();
	for (long i = 1; i < opt_n; i++) {
		cbs[i] = mkcb(p[i % NP][0], buf + i, 1, 0, LIO_READ);
		if (aio_read(&cbs[i]))
			DIE("aio_read %ld: %s", i, strerror(errno));
	}
	usleep(100000);
	after = rss_kb();
	printf("exp=mem api=%s n=%ld rss_kb=%ld bytes_per_req=%.1f\n", API_NAME, opt_n,
	       after - before, (after - before) * 1024.0 / (double)(opt_n - 1));
	fflush(stdout);
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct experiment exps[] = {
		{ "write1", exp_write1 }, { "lio", exp_lio }, { "procs", exp_procs },
		{ "qd", exp_qd }, { "overlap", exp_overlap }, { "mem", exp_mem },
		{ NULL, NULL },
	};

	return aiobench_main(argc, argv, exps);
}
