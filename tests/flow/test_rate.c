/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* The rate limit keeps a flow at most one step ahead of rate x time
 * since its start (docs/flows.md, "Rate limit"), in every mode: the bytes
 * the sink has taken never exceed that, and the whole flow takes at
 * least the time the rate gives all but its first step. */
#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include "flow/flow_util.h"

#define RATE	(1u << 20)	/* bytes per second */
#define CHUNK	(64u << 10)
#define BYTES	(512u << 10)

struct rt {
	struct t_result r;
	uint64_t t0;		/* ns, taken before uaio_flow_start */
	uint64_t worst;		/* the most bytes ahead of the rate seen */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void rt_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	struct rt *t = data;
	uint64_t earned = (uint64_t)((__uint128_t)RATE * (now_ns() - t->t0) / 1000000000u);

	if (bytes > earned && bytes - earned > t->worst)
		t->worst = bytes - earned;
}

static uint64_t first_step;

static void first_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	(void)f;
	(void)data;
	if (!first_step)
		first_step = bytes;
}

static void rt_done(uaio_flow *f, int64_t res, int side, void *data)
{
	t_on_done(f, res, side, &((struct rt *)data)->r);
}

/* BYTES from file a to file b, both from 0, at rate. */
static struct uaio_flow_params files_at_rate(int a, int b, int mode, uint32_t chunk,
					     uint64_t rate,
					     void (*progress)(uaio_flow *, uint64_t, void *),
					     struct rt *t)
{
	return (struct uaio_flow_params){
		.src = { .type = UAIO_FLOW_FD, .fd = a, .off = 0 },
		.dst = { .type = UAIO_FLOW_FD, .fd = b, .off = 0 },
		.len = BYTES, .mode = mode, .chunk = chunk, .rate = rate,
		.progress = progress, .done = rt_done, .data = t,
	};
}

int main(void)
{
	char *data = malloc(BYTES);
	uaio_loop *l;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	t_banner("test_rate");
	l = t_loop_new(0);
	t_fill(data, BYTES, 11);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int a = t_tmpfile("/var/tmp"), b = t_tmpfile("/var/tmp");
		struct rt t = { 0 };
		struct uaio_flow_params p = files_at_rate(a, b, mode, CHUNK, RATE, rt_progress, &t);
		uaio_flow *f;
		uint64_t took;

		CHECK_EQ(pwrite(a, data, BYTES, 0), BYTES);
		t.t0 = now_ns();
		CHECK_OK(uaio_flow_start(l, &p, &f));
		T_RUN_UNTIL(l, t.r.done, 1000000);
		took = now_ns() - t.t0;
		fprintf(stderr, "    %s: %.3f s, at most %llu bytes ahead of the rate\n",
			uaio_flow_mode_name(mode), took / 1e9, (unsigned long long)t.worst);
		CHECK_EQ(t.r.res, BYTES);
		/* One step of burst, and no more (1 KiB for rounding). */
		CHECK(t.worst <= CHUNK + 1024);
		CHECK(took >= (uint64_t)(BYTES - CHUNK) * 1000000000u / RATE);
		close(a);
		close(b);
	}
	/* Paused and resumed again and again: a pause forgives no debt.
	 * Each resume let a flow a step ahead take a step more (11 MiB in
	 * 1.3 s at 1000 B/s over 10 pauses). */
	{
		int a = t_tmpfile("/var/tmp"), b = open("/dev/null", O_WRONLY);
		struct rt t = { 0 };
		struct uaio_flow_params p = {
			.src = { .type = UAIO_FLOW_FD, .fd = a, .off = 0 },
			.dst = { .type = UAIO_FLOW_FD, .fd = b, .off = -1 },
			.len = BYTES, .mode = UAIO_FLOW_KBUF, .chunk = CHUNK, .rate = 1000,
			.done = rt_done, .data = &t,
		};
		uaio_flow *f;
		uint64_t took;

		CHECK_EQ(pwrite(a, data, BYTES, 0), BYTES);
		t.t0 = now_ns();
		CHECK_OK(uaio_flow_start(l, &p, &f));
		for (int i = 0; i < 10; i++) {
			for (int k = 0; k < 5; k++)
				uaio_loop_run_once(l, 2 * 1000000);
			CHECK_OK(uaio_flow_pause(f));
			uaio_loop_run_once(l, 2 * 1000000);
			CHECK_OK(uaio_flow_resume(f));
		}
		uaio_loop_run_once(l, 2 * 1000000);
		took = now_ns() - t.t0;
		uint64_t moved = uaio_flow_bytes(f);

		fprintf(stderr, "    10 pauses at 1000 B/s: %llu bytes in %.3f s\n",
			(unsigned long long)moved, took / 1e9);
		/* one step, and what the time gave */
		CHECK(moved <= CHUNK + (uint64_t)((__uint128_t)1000 * took / 1000000000u));
		CHECK_OK(uaio_flow_cancel(f));
		T_RUN_UNTIL(l, t.r.done, 1000000);
		close(a);
		close(b);
	}
	/* The method's own chunk (up to 4 MiB) at 1000 B/s: a step is a
	 * second's bytes, a page at least, not a chunk (an hour's). */
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int a = t_tmpfile("/var/tmp"), b = t_tmpfile("/var/tmp");
		struct rt t = { 0 };
		struct uaio_flow_params p = files_at_rate(a, b, mode, 0, 1000, first_progress, &t);
		uaio_flow *f;

		CHECK_EQ(pwrite(a, data, BYTES, 0), BYTES);
		first_step = 0;
		CHECK_OK(uaio_flow_start(l, &p, &f));
		T_RUN_UNTIL(l, first_step, 1000000);
		fprintf(stderr, "    %s at 1000 B/s, default chunk: first step %llu bytes\n",
			uaio_flow_mode_name(mode), (unsigned long long)first_step);
		CHECK(first_step <= 4096);
		CHECK_OK(uaio_flow_cancel(f));
		T_RUN_UNTIL(l, t.r.done, 1000000);
		close(a);
		close(b);
	}
	CHECK_EQ(uaio_loop_inflight(l), 0);
	uaio_loop_free(l);
	free(data);
	return T_EXIT_PASS;
}
