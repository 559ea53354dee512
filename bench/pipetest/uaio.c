/* SPDX-License-Identifier: MIT */
/* pipetest: uaio's reactor, proactor and nops, and its memory (pipetest.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipetest.h"

static uaio_loop *uaio_open(int force_epoll)
{
	struct uaio_loop_params p = { 0 };

	p.flags = force_epoll ? UAIO_LOOP_FORCE_EPOLL : 0;
	uaio_loop *l = uaio_loop_new(&p);

	if (!l)
		die("uaio_loop_new: %s", strerror(errno));
	return l;
}

static void uaio_spin(uaio_loop *l)
{
	while (!pt.done) {
		int ret = uaio_loop_run_once(l, -1);

		if (ret < 0 && ret != -EINTR)
			die("uaio_loop_run_once: %s", strerror(-ret));
	}
}

static int on_input(uaio_watch *w)
{
	hop_ready((int)(w - pt.watches));
	return 0;
}

static const struct uaio_handler reactor_handler = { .handle_input = on_input };

void run_uaio_reactor(int force_epoll, int edge)
{
	uaio_loop *l = pt.loop = uaio_open(force_epoll);

	pt.watches = calloc(pt.P, sizeof(*pt.watches));
	if (!pt.watches)
		die("out of memory");
	for (int i = 0; i < pt.P; i++) {
		int ret = uaio_watch_start(l, &pt.watches[i], pt.rfd[i],
					   UAIO_READABLE | (edge ? UAIO_EDGE : 0),
					   &reactor_handler, NULL);
		if (ret < 0)
			die("uaio_watch_start: %s", strerror(-ret));
	}
	inject_tokens();
	timing_start();
	uaio_spin(l);
}

static void on_read(uaio_op *op, int res, void *data)
{
	int i = (int)(op - pt.ops);
	char *buf = pt.bufs + (size_t)i * pt.S;

	if (res != pt.S)
		die("uaio read pipe %d: %d (%s)", i, res, res < 0 ? strerror(-res) : "short");
	write_token(next_pipe(i), buf);
	count_pass();
	int ret = uaio_op_read(pt.loop, op, pt.rfd[i], buf, pt.S, -1, on_read, NULL);

	if (ret < 0)
		die("uaio_op_read: %s", strerror(-ret));
}

void run_uaio_proactor(int force_epoll)
{
	uaio_loop *l = pt.loop = uaio_open(force_epoll);

	pt.ops = calloc(pt.P, sizeof(*pt.ops));
	if (!pt.ops)
		die("out of memory");
	for (int i = 0; i < pt.P; i++) {
		int ret = uaio_op_read(l, &pt.ops[i], pt.rfd[i],
				       pt.bufs + (size_t)i * pt.S, pt.S, -1,
				       on_read, NULL);
		if (ret < 0)
			die("uaio_op_read: %s", strerror(-ret));
	}
	/* Hand the reads to the kernel before any token exists. */
	if (uaio_loop_run_once(l, 0) < 0)
		die("uaio_loop_run_once failed");
	inject_tokens();
	timing_start();
	uaio_spin(l);
}

static void on_nop(uaio_op *op, int res, void *data)
{
	if (res != 0)
		die("nop: %d", res);
	count_pass();
	int ret = uaio_op_nop(pt.loop, op, on_nop, NULL);

	if (ret < 0)
		die("uaio_op_nop: %s", strerror(-ret));
}

void nop_uaio(int batch, int force_epoll)
{
	uaio_loop *l = pt.loop = uaio_open(force_epoll);

	pt.ops = calloc(batch, sizeof(*pt.ops));
	if (!pt.ops)
		die("out of memory");
	for (int k = 0; k < batch; k++)
		if (uaio_op_nop(l, &pt.ops[k], on_nop, NULL) < 0)
			die("uaio_op_nop failed");
	timing_start();
	uaio_spin(l);
}

const char *uaio_desc(void)
{
	static char buf[160];
	unsigned f = uaio_loop_features(pt.loop);

	snprintf(buf, sizeof(buf), "backend=%s uaio_feat=%s%s%s%s%s",
		 uaio_loop_backend_name(pt.loop),
		 f & UAIO_FEAT_SINGLE_ISSUER ? "single_issuer," : "",
		 f & UAIO_FEAT_DEFER_TASKRUN ? "defer_taskrun," : "",
		 f & UAIO_FEAT_COOP_TASKRUN ? "coop_taskrun," : "",
		 f & UAIO_FEAT_REG_RING_FD ? "reg_ring_fd," : "",
		 f ? "" : "none");
	return buf;
}

/* Memory per watch and per op in flight. */

static long rss_bytes(void)
{
	long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2)
		die("cannot read /proc/self/statm");
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

/* Faults the pages in (calloc + memset(0) would be folded into calloc). */
static void touch(void *p, size_t len)
{
	volatile char *c = p;

	for (size_t k = 0; k < len; k += 4096)
		c[k] = 1;
	memset(p, 0, len);
}

static void on_nothing(uaio_op *op, int res, void *data)
{
}

/* The resident set once the loop has taken in what was just started. */
static long settled_rss(uaio_loop *l)
{
	uaio_loop_run_once(l, 0);
	uaio_loop_run_once(l, 0);
	return rss_bytes();
}

static double per_item(long bytes, int n)
{
	return n ? (double)bytes / n : 0;
}

void memory_report(int count, int limit)
{
	printf("mem sizeof_uaio_op=%zu sizeof_uaio_watch=%zu sizeof_uaio_timer=%zu "
	       "fd_table_bytes_per_slot=16\n",
	       sizeof(uaio_op), sizeof(uaio_watch), sizeof(uaio_timer));

	/* Watched fds: as many pipe ends as RLIMIT_NOFILE allows. */
	int npipes = max_pipes(limit);

	if (npipes > count / 2)
		npipes = count / 2;
	pt.P = npipes;
	pt.S = 1;
	ring_open(1);
	int nfd = 2 * npipes;

	for (int force_epoll = 0; force_epoll <= 1; force_epoll++) {
		uaio_loop *l = pt.loop = uaio_open(force_epoll);
		uaio_watch *w = calloc(nfd, sizeof(*w));

		if (!w)
			die("out of memory");
		touch(w, nfd * sizeof(*w));	/* caller's memory: not counted */
		uaio_loop_run_once(l, 0);
		long before = rss_bytes();
		int started = 0;

		for (int k = 0; k < nfd; k++) {
			int fd = k & 1 ? pt.wfd[k / 2] : pt.rfd[k / 2];

			/* Write ends never become readable: idle watches. */
			if (uaio_watch_start(l, &w[k], fd, UAIO_READABLE,
					     &reactor_handler, NULL) < 0)
				break;
			started++;
		}
		long grew = settled_rss(l) - before;

		printf("mem kind=watch %s watched=%d rss_delta_bytes=%ld "
		       "bytes_per_item=%.1f rss_per_100k_bytes=%.0f\n",
		       uaio_desc(), started, grew, per_item(grew, started),
		       per_item(grew, started) * 100000);
		fflush(stdout);
		uaio_loop_free(l);
		free(w);
	}
	for (int i = 0; i < npipes; i++) {
		close(pt.rfd[i]);
		close(pt.wfd[i]);
	}

	/* Ops in flight: long timeouts need no descriptor each. */
	for (int force_epoll = 0; force_epoll <= 1; force_epoll++) {
		uaio_loop *l = pt.loop = uaio_open(force_epoll);
		uaio_op *o = calloc(count, sizeof(*o));

		if (!o)
			die("out of memory");
		touch(o, count * sizeof(*o));
		uaio_loop_run_once(l, 0);
		long before = rss_bytes();
		int started = 0, err = 0;

		for (int k = 0; k < count; k++) {
			err = uaio_op_timeout(l, &o[k], 3600ull * 1000000000ull,
					      on_nothing, NULL);
			if (err < 0)
				break;
			started++;
		}
		long grew = settled_rss(l) - before;

		printf("mem kind=op %s submitted=%d inflight=%u rss_delta_bytes=%ld "
		       "bytes_per_item=%.1f rss_per_100k_bytes=%.0f%s%s\n",
		       uaio_desc(), started, uaio_loop_inflight(l), grew,
		       per_item(grew, started), per_item(grew, started) * 100000,
		       err < 0 ? " stopped_by=" : "", err < 0 ? strerror(-err) : "");
		fflush(stdout);
		uaio_loop_free(l);
		free(o);
	}
}
