/* SPDX-License-Identifier: MIT */
/*
 * uaio-flow's legs: one flow per direction of data, run on the tool's
 * loop to their end, with the progress line, the signals that cancel
 * them and what each leg's end says.
 */
#define _GNU_SOURCE
#include "tool.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uaio/flow.h>
#include <uaio/loop.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void show_progress(struct tool *t, bool last)
{
	uint64_t b = 0;
	double s;

	if (!t->o.progress || !t->tty)
		return;
	for (int i = 0; i < t->nlegs; i++)
		b += t->legs[i].f ? t->legs[i].sum + uaio_flow_bytes(t->legs[i].f) :
				    t->legs[i].bytes;
	s = now_s() - ((double)t->t0.tv_sec + t->t0.tv_nsec / 1e9);
	fprintf(stderr, "\r%s: %llu bytes, %.1f s, %.1f MB/s%s", ME, (unsigned long long)b,
		s, s > 0 ? b / s / 1e6 : 0.0, last ? "\n" : "   ");
}

static void on_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	show_progress(data, false);
}

static struct leg *leg_of(struct tool *t, uaio_flow *f)
{
	for (int i = 0; i < t->nlegs; i++)
		if (t->legs[i].f == f)
			return &t->legs[i];
	return NULL;
}

static void on_done(uaio_flow *f, int64_t res, int side, void *data);

/* The next data extent of a sparse source, from g->pos, as a flow to the
 * same offset of DST: 1 when started, 0 when only a hole is left (DST
 * then gets SRC's size), or -errno with g->side set. */
static int extent_next(struct tool *t, struct leg *g)
{
	off_t d = lseek(g->src, g->pos, SEEK_DATA), h = -1;
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = g->src, .off = d },
		.dst = { .type = UAIO_FLOW_FD, .fd = g->dst, .off = d },
		.mode = t->o.mode, .chunk = t->o.chunk,
		.rate = t->o.rate, .progress_ns = 100 * 1000000,
		.progress = t->o.progress && t->tty ? on_progress : NULL,
		.done = on_done, .data = t,
	};
	int r;

	g->side = UAIO_FLOW_SIDE_SRC;
	if ((d < 0 && errno != ENXIO) || (d >= 0 && (h = lseek(g->src, d, SEEK_HOLE)) < 0))
		return -errno;
	if (d < 0 || d >= g->size) {	/* past the last data: a hole */
		g->side = UAIO_FLOW_SIDE_DST;
		return ftruncate(g->dst, g->size) < 0 ? -errno : 0;
	}
	p.len = (uint64_t)((h < g->size ? h : g->size) - d);
	g->want = p.len;
	g->pos = d + (off_t)p.len;
	g->side = UAIO_FLOW_SIDE_NONE;
	return (r = uaio_flow_start(t->l, &p, &g->f)) < 0 ? r : 1;
}

static void on_done(uaio_flow *f, int64_t res, int side, void *data)
{
	struct tool *t = data;
	struct leg *g = leg_of(t, f);
	const char *m = uaio_flow_method(f);

	if (g->by_extent && res >= 0) {
		int r;

		g->sum += (uint64_t)res;
		snprintf(g->method, sizeof(g->method), "%s/%s",
			 uaio_flow_mode_name(uaio_flow_mode(f)), m);
		g->f = NULL;
		/* SRC ended before its size (a /sys file says 4096): there,
		 * as cp stops */
		if ((uint64_t)res < g->want)
			r = 0;
		else if ((r = extent_next(t, g)) > 0)
			return;
		g->res = r < 0 ? r : (int64_t)g->sum;
		if (r == 0)
			g->side = side;
		g->bytes = g->sum;
		g->running = false;
		t->running--;
		return;
	}
	g->res = res;
	g->side = side;
	g->bytes = g->sum + uaio_flow_bytes(f);
	g->running = false;
	snprintf(g->method, sizeof(g->method), "%s/%s",
		 uaio_flow_mode_name(uaio_flow_mode(f)), m);
	g->f = NULL;
	t->running--;
	/* A relay passes the end of one direction on to the other peer. */
	if (res >= 0 && g->shut_fd >= 0)
		shutdown(g->shut_fd, SHUT_WR);
	/* One direction failing ends the other. */
	if (res < 0)
		for (int i = 0; i < t->nlegs; i++)
			if (t->legs[i].running)
				uaio_flow_cancel(t->legs[i].f);
}

static int on_signal(uaio_watch *w)
{
	struct tool *t = w->data;
	struct signalfd_siginfo si;

	while (read(t->sigfd, &si, sizeof(si)) == sizeof(si))
		t->interrupted = (int)si.ssi_signo;
	for (int i = 0; i < t->nlegs; i++)
		if (t->legs[i].running)
			uaio_flow_cancel(t->legs[i].f);
	return 0;
}

const struct uaio_handler legs_sig_handler = { .handle_input = on_signal };

void leg_start(struct tool *t, int src, int dst, char *sname, char *dname, int shut_fd)
{
	struct leg *g = &t->legs[t->nlegs++];
	struct stat st;
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = src, .off = -1 },
		.dst = { .type = UAIO_FLOW_FD, .fd = dst, .off = -1 },
		.len = UAIO_FLOW_EOF, .mode = t->o.mode, .chunk = t->o.chunk,
		.rate = t->o.rate, .progress_ns = 100 * 1000000,
		.progress = t->o.progress && t->tty ? on_progress : NULL,
		.done = on_done, .data = t,
	};
	int r;

	*g = (struct leg){ .src_name = sname, .dst_name = dname, .shut_fd = shut_fd };
	g->dst_pipe = fstat(dst, &st) == 0 && S_ISFIFO(st.st_mode);
	if ((r = uaio_flow_start(t->l, &p, &g->f)) < 0) {
		if (r == -EINVAL && t->o.mode != UAIO_FLOW_AUTO)
			fprintf(stderr, "%s: mode %s cannot move %s to %s\n", ME,
				uaio_flow_mode_name(t->o.mode), sname, dname);
		else
			fprintf(stderr, "%s: %s -> %s: %s\n", ME, sname, dname, strerror(-r));
		exit(1);
	}
	g->running = true;
	t->running++;
}

/* A sparse SRC into an empty regular DST (see struct leg): holes are
 * skipped, as cp --sparse=auto keeps them. */
void leg_start_sparse(struct tool *t, int src, int dst, char *sname, char *dname, off_t size)
{
	struct leg *g = &t->legs[t->nlegs++];
	int r;

	*g = (struct leg){ .src_name = sname, .dst_name = dname, .shut_fd = -1,
			   .by_extent = true, .src = src, .dst = dst, .size = size };
	snprintf(g->method, sizeof(g->method), "%s/holes",
		 uaio_flow_mode_name(t->o.mode));
	if ((r = extent_next(t, g)) > 0) {
		g->running = true;
		t->running++;
	} else {
		g->res = r;	/* legs_run says why */
	}
}

static const char *verb(int side)
{
	return side == UAIO_FLOW_SIDE_DST ? "write" : "read";
}

bool legs_run(struct tool *t)
{
	struct rusage ru;
	uint64_t total = 0;
	bool ok = true;
	double secs;

	while (t->running) {
		int r = uaio_loop_run_once(t->l, -1);

		if (r < 0 && r != -EINTR) {
			/* the loop failed: the legs still running never end,
			 * and nothing of them is kept */
			fprintf(stderr, "%s: %s\n", ME, strerror(-r));
			return false;
		}
	}
	show_progress(t, true);
	secs = now_s() - ((double)t->t0.tv_sec + t->t0.tv_nsec / 1e9);
	for (int i = 0; i < t->nlegs; i++) {
		struct leg *g = &t->legs[i];

		/* what moved, a failed leg's too (--stats) */
		total += g->res >= 0 ? (uint64_t)g->res : g->bytes;
		if (g->res >= 0)
			continue;
		ok = false;
		/* the flow ignored SIGPIPE for the write; a pipe's reader is
		 * gone, not a peer's connection */
		if (g->res == -EPIPE && g->side == UAIO_FLOW_SIDE_DST && g->dst_pipe &&
		    t->sigpipe_kills)
			die_by(SIGPIPE, false);
		if (t->interrupted && g->res == -ECANCELED)
			continue;
		if (g->res == -ECANCELED)	/* ended because the other leg failed */
			continue;
		if (g->side == UAIO_FLOW_SIDE_NONE)
			fprintf(stderr, "%s: %s -> %s: %s\n", ME, g->src_name, g->dst_name,
				strerror((int)-g->res));
		else
			fprintf(stderr, "%s: %s: %s: %s\n", ME,
				g->side == UAIO_FLOW_SIDE_DST ? g->dst_name : g->src_name,
				verb(g->side), strerror((int)-g->res));
	}
	if (t->o.stats) {
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "%s: %llu bytes in %.3f s, %.1f MB/s, CPU %.3f s "
			"(user %.3f, sys %.3f), %s\n", ME,
			(unsigned long long)total, secs, secs > 0 ? total / secs / 1e6 : 0.0,
			ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
			ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
			ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6, t->legs[0].method);
	}
	return ok;
}

