/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A file -> file splice step is a job for the loop's workers; cancelled
 * while it waits for one (every worker busy), it ran nothing. Its end
 * counted the step before it again: uaio_flow_bytes and the positions
 * (off = -1) went one step past what the sink holds, so a program going
 * on from them skipped a step's bytes. Found by a randomized stress of
 * many flows on one loop. */
#include "flow/flow_util.h"

#define SZ	(1u << 20)
#define CHUNK	65536u
#define BUSY	16		/* more sleepers than the pool has workers */

struct run {
	bool paused, done;
	int64_t res;
	uint64_t bytes;
	off_t spos, dpos;
	int s, d;
};

static long sleeper(void *arg)
{
	(void)arg;
	usleep(100000);
	return 0;
}

static void slept(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	(void)data;
}

static void progress(uaio_flow *f, uint64_t bytes, void *data)
{
	struct run *r = data;

	(void)bytes;
	if (!r->paused) {
		r->paused = true;
		CHECK_OK(uaio_flow_pause(f));
	}
}

static void done(uaio_flow *f, int64_t res, int side, void *data)
{
	struct run *r = data;

	(void)side;
	r->done = true;
	r->res = res;
	r->bytes = uaio_flow_bytes(f);
	r->spos = lseek(r->s, 0, SEEK_CUR);
	r->dpos = lseek(r->d, 0, SEEK_CUR);
}

int main(void)
{
	static char data[SZ], got[SZ];
	static uaio_op busy[BUSY];
	struct run r = { .s = t_tmpfile("/var/tmp"), .d = t_tmpfile("/dev/shm") };
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = r.s, .off = -1 },
		.dst = { .type = UAIO_FLOW_FD, .fd = r.d, .off = -1 },
		.len = UAIO_FLOW_EOF, .mode = UAIO_FLOW_PAGECACHE, .chunk = CHUNK,
		.progress = progress, .done = done, .data = &r,
	};
	uaio_loop *l;
	uaio_flow *f;
	off_t size;

	t_watchdog(60);
	t_banner("test_cancel_queued_step");
	l = t_loop_new(0);
	t_fill(data, sizeof(data), 13);
	CHECK(pwrite(r.s, data, sizeof(data), 0) == (ssize_t)sizeof(data));
	CHECK_OK(uaio_flow_start(l, &p, &f));
	/* one step, then paused with nothing in flight */
	T_RUN_UNTIL(l, r.paused && !uaio_loop_inflight(l), 1000000);
	CHECK(!r.done);
	CHECK_EQ(uaio_flow_bytes(f), (uint64_t)CHUNK);
	CHECK(!strcmp(uaio_flow_method(f), "splice"));
	for (int i = 0; i < BUSY; i++)
		CHECK_OK(uaio_op_work(l, &busy[i], sleeper, NULL, slept, NULL));
	CHECK_OK(uaio_flow_resume(f));
	/* the next step's job goes out, and waits behind the sleepers */
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK_OK(uaio_flow_cancel(f));
	T_RUN_UNTIL(l, r.done, 1000000);
	T_RUN_UNTIL(l, !uaio_loop_inflight(l), 1000000);
	size = lseek(r.d, 0, SEEK_END);
	fprintf(stderr, "    done %lld: bytes %llu, positions %lld and %lld, the sink holds %lld\n",
		(long long)r.res, (unsigned long long)r.bytes, (long long)r.spos,
		(long long)r.dpos, (long long)size);
	CHECK_EQ(r.res, -ECANCELED);
	CHECK_EQ(r.bytes, (uint64_t)size);
	CHECK_EQ(r.spos, size);
	CHECK_EQ(r.dpos, size);
	CHECK(pread(r.d, got, (size_t)size, 0) == size);
	CHECK(!memcmp(got, data, (size_t)size));
	uaio_loop_free(l);
	close(r.s);
	close(r.d);
	return T_EXIT_PASS;
}
