/* SPDX-License-Identifier: MIT */
/*
 * --progress: one line on a terminal, redrawn at most ten times a second
 * from wherever bytes are counted (no timer keeps the loop awake): bytes
 * and files done out of those found so far, the rate and an ETA. The
 * totals grow while the walk goes on, so the ETA is a lower bound until
 * it ends. Nothing at all when stderr is not a terminal.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
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

/* The bar on one row of the terminal, however wide: a longer line wraps,
 * and \r goes back to its last row only, leaving the others behind. */
static int columns(void)
{
	struct winsize ws;

	return ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
}

static void draw(struct cp_run *r, uint64_t now)
{
	double secs = (double)(now - r->t0_ns) / 1e9;
	double rate = secs > 0 ? (double)r->bytes_done / secs : 0;
	/* of the bytes found so far, else of the files (empty ones, or a
	 * FIFO's, which count no size until read) */
	uint64_t all = r->bytes_total > r->bytes_done ? r->bytes_total : r->bytes_done;
	double frac = r->bytes_total ? (double)r->bytes_done / (double)r->bytes_total :
		      r->files_total ? (double)r->files_done / (double)r->files_total : 0;
	char done[32], total[32], rb[32], eta[32] = "--:--", line[256];
	int width = 24, fill, n, cols = columns();

	if (frac > 1)
		frac = 1;
	fill = (int)(frac * width);
	if (rate > 0 && r->bytes_total >= r->bytes_done) {
		unsigned long s = (unsigned long)((double)(r->bytes_total - r->bytes_done) / rate);

		snprintf(eta, sizeof(eta), "%lu:%02lu", s / 60, s % 60);
	}
	n = snprintf(line, sizeof(line), "[%.*s%*s] %3d%% %s / %s  %llu/%llu files  %s/s  ETA %s",
		     fill, "========================", width - fill, "", (int)(frac * 100),
		     human(done, sizeof(done), (double)r->bytes_done),
		     human(total, sizeof(total), (double)all),
		     (unsigned long long)r->files_done, (unsigned long long)r->files_total,
		     human(rb, sizeof(rb), rate), eta);
	if (n > cols - 1)
		n = cols > 1 ? cols - 1 : 0;
	fprintf(stderr, "\r%.*s\033[K", n, line);
	fflush(stderr);
	r->bar_drawn = true;
	r->shown_ns = now;
}

/* A signal that ends the program takes the bar with it: the shell's next
 * line does not start after it. Its default action then, as cp's. */
static void bar_signal(int sig)
{
	static const char erase[] = "\r\033[K";

	(void)!write(STDERR_FILENO, erase, sizeof(erase) - 1);
	raise(sig);	/* delivered as the handler returns, reset to default */
}

void cp_bar_start(struct cp_run *r)
{
	static const int ends[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct sigaction sa = { .sa_handler = bar_signal, .sa_flags = SA_RESETHAND }, old;

	r->t0_ns = cp_now_ns();
	r->bar_on = r->o.progress && isatty(STDERR_FILENO);
	for (unsigned i = 0; r->bar_on && i < sizeof(ends) / sizeof(ends[0]); i++)
		if (sigaction(ends[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
			sigaction(ends[i], &sa, NULL);
}

/* Before a line of its own (-v, an error): the bar goes, and comes back
 * at the next redraw. */
void cp_bar_hide(struct cp_run *r)
{
	if (r->bar_drawn) {
		fputs("\r\033[K", stderr);
		r->bar_drawn = false;
	}
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
	/* nothing found (an operand refused): no bar at all */
	if (!r->bar_on || (!r->bar_drawn && !r->files_total && !r->bytes_done))
		return;
	draw(r, cp_now_ns());
	fputc('\n', stderr);
	r->bar_drawn = false;
}
