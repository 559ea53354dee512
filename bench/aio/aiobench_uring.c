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

#include "aiobench.h"

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

static void exp_write1(void)
{
	size_t n = (size_t)opt_mb << 20;
	char *buf = xalloc_pattern(n);
	int fd = open_out(n);
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
	verify_out(fd, buf, n);
	printf("exp=write1 api=liburing mb=%ld secs=%.6f mbps=%.1f\n", opt_mb, t1 - t0,
	       opt_mb / (t1 - t0));
	close(fd);
}

static void exp_lio(void)
{
	size_t total = (size_t)opt_mb << 20, per = total / (size_t)opt_n;
	char *buf = xalloc_pattern(total);
	int fd = open_out(total);
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
	verify_out(fd, buf, per * (size_t)opt_n);
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
	procs_run(procs_child, "liburing");
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
		/* As aiobench.c: the first reap past the end ends the count;
		 * what is still in flight is left to exit(). */
		if (t >= t_end)
			break;
		io_uring_submit(&r);
	}
	qd_report("liburing", m, now() - t0, done, lat, nlat);
	close(fd);
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
	static const struct experiment exps[] = {
		{ "write1", exp_write1 }, { "lio", exp_lio }, { "procs", exp_procs },
		{ "qd", exp_qd }, { "overlap", exp_overlap }, { NULL, NULL },
	};

	return aiobench_main(argc, argv, exps);
}
