/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Taps and memory: taps in source order before the sink, a tap that
 * fails or cancels its flow, a memory sink at every depth, a mapped
 * source cut short while its flow is paused. */
#include <signal.h>

#include "flow/flow_util.h"
#include "flow/ctl.h"

struct tapper {
	struct ctl c;
	uint64_t next, hash;
	int dst, fail_at, fail_err, calls;
	bool early;		/* the sink had the chunk before its tap */
	int cancel_at;		/* the tap cancels its flow at this call */
	uaio_flow *f;
};

static int tap(uaio_flow *f, const void *buf, size_t len, uint64_t pos, void *data)
{
	struct tapper *t = data;
	const unsigned char *p = buf;
	struct stat st;

	if (pos != t->next)
		return -EPROTO;
	if (t->dst >= 0 && fstat(t->dst, &st) == 0 && (uint64_t)st.st_size > pos)
		t->early = true;
	for (size_t i = 0; i < len; i++)
		t->hash = (t->hash ^ p[i]) * 1099511628211ull;
	t->next += len;
	if (++t->calls == t->cancel_at)
		CHECK_OK(uaio_flow_cancel(t->f));
	return t->calls == t->fail_at ? t->fail_err : 0;
}

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

static void test_tap(void)
{
	size_t n = (8u << 20) + 333;
	char *data = malloc(n);

	t_fill(data, n, 5);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		if (mode == UAIO_FLOW_PAGECACHE)
			continue;
		/* A tap's error ends the flow with it, whatever it is: -ENODATA
		 * too, which a method would say for "nothing here". */
		for (int fail = 0; fail <= 2; fail++) {
			int a = t_tmpfile(dir), b = t_tmpfile(dir);
			struct tapper t = { .hash = 1469598103934665603ull, .dst = b,
					    .fail_at = fail ? 3 : 0,
					    .fail_err = fail == 2 ? -ENODATA : -EIO };
			struct uaio_flow_params p = { .src = fd_ep(a, 0), .dst = fd_ep(b, 0),
						      .len = UAIO_FLOW_EOF, .mode = mode,
						      .chunk = 16u << 10, .depth = 8,
						      .tap = tap };
			uaio_flow *f;

			CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
			p.done = ctl_done;
			p.data = &t;
			CHECK_OK(uaio_flow_start(L, &p, &f));
			CHECK_EQ(uaio_flow_mode(f), mode == UAIO_FLOW_AUTO ? UAIO_FLOW_KBUF : mode);
			T_RUN_UNTIL(L, t.c.r.done, 1000000);
			CHECK(!t.early);
			if (fail) {
				CHECK_EQ(t.c.r.res, t.fail_err);
				CHECK_EQ(t.c.r.side, UAIO_FLOW_SIDE_NONE);
				CHECK_EQ(t.calls, 3);
			} else {
				CHECK_EQ(t.c.r.res, (int64_t)n);
				CHECK_EQ(t.next, n);
				CHECK(t.hash == fnv(data, n));
				check_file(b, data, n);
			}
			close(a);
			close(b);
		}
	}
	/* A tap that cancels its flow hears of no chunk after (it was
	 * called for the chunks filled beside it: mmap, 4 calls). */
	for (int mode = UAIO_FLOW_KBUF; mode <= UAIO_FLOW_MMAP; mode++) {
		if (mode == UAIO_FLOW_PAGECACHE)
			continue;
		int a = t_tmpfile(dir), b = t_tmpfile(dir);
		struct tapper t = { .hash = 1469598103934665603ull, .dst = -1, .cancel_at = 1 };
		struct uaio_flow_params p = { .src = fd_ep(a, 0), .dst = fd_ep(b, 0),
					      .len = UAIO_FLOW_EOF, .mode = mode,
					      .chunk = 16u << 10, .depth = 8, .tap = tap,
					      .done = ctl_done, .data = &t };

		CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
		CHECK_OK(uaio_flow_start(L, &p, &t.f));
		T_RUN_UNTIL(L, t.c.r.done, 1000000);
		CHECK_EQ(t.c.r.res, -ECANCELED);
		CHECK_EQ(t.calls, 1);
		close(a);
		close(b);
	}
	/* The pagecache mode has no buffer to show. */
	{
		struct uaio_flow_params p = { .src = fd_ep(0, -1), .dst = fd_ep(1, -1),
					      .mode = UAIO_FLOW_PAGECACHE, .tap = tap,
					      .done = ctl_done };
		int a = t_tmpfile(dir), b = t_tmpfile(dir);
		uaio_flow *f;

		p.src.fd = a;
		p.dst.fd = b;
		CHECK_EQ(uaio_flow_start(L, &p, &f), -EINVAL);
		close(a);
		close(b);
	}
	free(data);
}

/* A memory sink frees each chunk as it is tapped, with no write's end to
 * go on from: the reads go on into it. At depth 1 the flow stopped after
 * its first chunks, for ever (and at the default depth, now and then). */
static void test_mem_sink(void)
{
	size_t n = (1u << 20) + 77;
	char *data = malloc(n), *mem = malloc(n);

	t_fill(data, n, 9);
	for (unsigned depth = 1; depth <= 4; depth *= 2) {
		for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_KBUF; mode++) {
			int a = t_tmpfile(dir);
			struct ctl c = { 0 };
			struct uaio_flow_params p = {
				.src = fd_ep(a, 0),
				.dst = { .type = UAIO_FLOW_MEM, .mem = mem, .mem_len = n,
					 .buf_index = -1 },
				.len = UAIO_FLOW_EOF, .mode = mode, .depth = depth,
				.chunk = 64u << 10, .done = ctl_done, .data = &c,
			};

			CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
			memset(mem, 0, n);
			start(&p, &c);
			T_RUN_UNTIL(L, c.r.done, 1000000);
			CHECK_EQ(c.r.res, (int64_t)n);
			CHECK(!memcmp(mem, data, n));
			close(a);
		}
	}
	free(data);
	free(mem);
}

/* mmap: a source cut short under its mapping while paused: the next
 * write from the window faults, the source's fault (it was told as the
 * sink's). The bytes moved before are at the sink. */
static void test_mmap_shrink(void)
{
	size_t n = 16u << 20;
	char *data = malloc(n);
	int a = t_tmpfile(dir), b = t_tmpfile(dir);
	struct ctl c = { .pause_at = 1 };
	struct uaio_flow_params p = { .src = fd_ep(a, 0), .dst = fd_ep(b, 0),
				      .len = UAIO_FLOW_EOF, .mode = UAIO_FLOW_MMAP,
				      .chunk = 256u << 10 };
	uint64_t b1;

	t_fill(data, n, 3);
	CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
	start(&p, &c);
	T_RUN_UNTIL(L, !c.pause_at, 100000);
	for (int i = 0; i < 20 && uaio_loop_inflight(L); i++)
		uaio_loop_run_once(L, 50 * 1000000);
	b1 = uaio_flow_bytes(c.f);
	CHECK(b1 < n);
	CHECK(ftruncate(a, (off_t)b1) == 0);	/* the rest is gone */
	CHECK_OK(uaio_flow_resume(c.f));
	T_RUN_UNTIL(L, c.r.done, 1000000);
	if (c.r.res < 0) {
		CHECK_EQ(c.r.res, -EFAULT);
		CHECK_EQ(c.r.side, UAIO_FLOW_SIDE_SRC);
	} else {		/* no window was mapped past the new end */
		CHECK_EQ(c.r.res, (int64_t)b1);
	}
	{	/* what had moved is there */
		char *got = malloc(b1 + 1);

		CHECK_EQ(pread(b, got, b1, 0), (ssize_t)b1);
		CHECK(!memcmp(got, data, b1));
		free(got);
	}
	close(a);
	close(b);
	free(data);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	t_watchdog(300);
	t_banner("test_taps");
	L = t_loop_new(0);
	RUN(test_tap);
	RUN(test_mem_sink);
	RUN(test_mmap_shrink);
	CHECK_EQ(uaio_loop_inflight(L), 0);
	uaio_loop_free(L);
	return T_EXIT_PASS;
}
