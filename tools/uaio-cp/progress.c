/* SPDX-License-Identifier: MIT */
/*
 * --progress: one line on a terminal, redrawn at most ten times a second
 * from wherever bytes are counted (no timer keeps the loop awake): bytes
 * and files done out of those found so far, the rate and an ETA. The
 * totals grow while the walk goes on, so the ETA is a lower bound until
 * it ends. Nothing at all when stderr is not a terminal.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "cp.h"

#define REDRAW_NS	100000000ull

uint64_t cp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *human(char *buf, size_t n, double v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

static void draw(struct cp_run *r, uint64_t now)
{
	double secs = (double)(now - r->t0_ns) / 1e9;
	double rate = secs > 0 ? (double)r->bytes_done / secs : 0;
	double frac = r->bytes_total ? (double)r->bytes_done / (double)r->bytes_total : 0;
	char done[32], total[32], rb[32], eta[32] = "--:--";
	int width = 24, fill;

	if (frac > 1)
		frac = 1;
	fill = (int)(frac * width);
	if (rate > 0 && r->bytes_total >= r->bytes_done) {
		unsigned long s = (unsigned long)((double)(r->bytes_total - r->bytes_done) / rate);

		snprintf(eta, sizeof(eta), "%lu:%02lu", s / 60, s % 60);
	}
	fprintf(stderr, "\r[%.*s%*s] %3d%% %s / %s  %llu/%llu files  %s/s  ETA %s\033[K",
		fill, "========================", width - fill, "", (int)(frac * 100),
		human(done, sizeof(done), (double)r->bytes_done),
		human(total, sizeof(total), (double)r->bytes_total),
		(unsigned long long)r->files_done, (unsigned long long)r->files_total,
		human(rb, sizeof(rb), rate), eta);
	fflush(stderr);
	r->bar_drawn = true;
	r->shown_ns = now;
}

void cp_bar_start(struct cp_run *r)
{
	r->t0_ns = cp_now_ns();
	r->bar_on = r->o.progress && isatty(STDERR_FILENO);
}

void cp_bar_tick(struct cp_run *r)
{
	uint64_t now;

	if (!r->bar_on)
		return;
	now = cp_now_ns();
	if (now - r->shown_ns >= REDRAW_NS)
		draw(r, now);
}

void cp_bar_stop(struct cp_run *r)
{
	if (!r->bar_on)
		return;
	draw(r, cp_now_ns());
	fputc('\n', stderr);
	r->bar_drawn = false;
}
