/* SPDX-License-Identifier: MIT */
/*
 * UAIO_OPF_BLOCKING: a read or write that cannot complete at once is made
 * as a blocking call on the worker pool. /dev/kmsg takes every write at
 * once but never says POLLOUT and has no RWF_NOWAIT: without the flag a
 * write there waits for readiness for ever, on both backends (io_uring
 * arms its own poll). With it, the write is done. The flag keeps a
 * stream's bytes in order, and a registered-slot pin, which no worker can
 * write through, still works (the ring takes it).
 */
#include <stdint.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

static void run_until(uaio_loop *l, const struct t_rec *r, int calls)
{
	while (r->calls < calls)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
}

static void kmsg_write(void)
{
	char line[] = "uaio test_op_blocking: kmsg_write\n";
	uaio_loop *l = t_loop_new(0);
	struct t_rec r = { 0 };
	uaio_op op = { 0 };
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "  (/dev/kmsg: %s; not run)\n", strerror(errno));
		uaio_loop_free(l);
		return;
	}
	uaio_op_set_flags(&op, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_write(l, &op, fd, line, sizeof(line) - 1, -1, t_rec_op, &r));
	run_until(l, &r, 1);
	CHECK_EQ(r.res, sizeof(line) - 1);
	/* at an offset, as pwrite (which the device ignores) */
	CHECK_OK(uaio_op_write(l, &op, fd, line, sizeof(line) - 1, 0, t_rec_op, &r));
	run_until(l, &r, 2);
	CHECK_EQ(r.res, sizeof(line) - 1);
	close(fd);
	uaio_loop_free(l);
}

/* A pipe: reads that wait for the writer, then many writes and reads in
 * a row, all flagged: the bytes arrive whole and in order. */
static void pipe_in_order(void)
{
	enum { N = 64, SZ = 1000 };
	static char out[N * SZ], in[N * SZ];
	uaio_loop *l = t_loop_new(0);
	struct t_rec rr = { 0 }, wr = { 0 };
	uaio_op rop = { 0 }, wop[N];
	int p[2];
	size_t got = 0;

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 7 + i / 251);
	CHECK_EQ(pipe(p), 0);
	memset(wop, 0, sizeof(wop));
	uaio_op_set_flags(&rop, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_read(l, &rop, p[0], in, sizeof(in), -1, t_rec_op, &rr));
	for (int i = 0; i < N; i++) {
		uaio_op_set_flags(&wop[i], UAIO_OPF_BLOCKING);
		CHECK_OK(uaio_op_write(l, &wop[i], p[1], out + i * SZ, SZ, -1, t_rec_op, &wr));
	}
	while (got < sizeof(in)) {
		int calls = rr.calls;

		run_until(l, &rr, calls + 1);
		CHECK(rr.res > 0);
		got += (size_t)rr.res;
		if (got < sizeof(in))
			CHECK_OK(uaio_op_read(l, &rop, p[0], in + got, sizeof(in) - got, -1,
					      t_rec_op, &rr));
	}
	run_until(l, &wr, N);
	CHECK_EQ(wr.res, SZ);
	CHECK(!memcmp(in, out, sizeof(in)));
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

/* Through a pin: on io_uring a registered slot, which the flag leaves to
 * the ring. */
static void pinned_file(void)
{
	char path[] = "/tmp/uaio-opblk-XXXXXX", back[6] = { 0 };
	uaio_loop *l = t_loop_new(0);
	struct t_rec r = { 0 };
	uaio_op op = { 0 };
	int fd = mkstemp(path), h;

	CHECK(fd >= 0);
	unlink(path);
	CHECK((h = uaio_file_pin(l, fd)) >= 0);
	uaio_op_set_flags(&op, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_write(l, &op, h, "pinned", 6, 0, t_rec_op, &r));
	run_until(l, &r, 1);
	CHECK_EQ(r.res, 6);
	CHECK_OK(uaio_op_read(l, &op, h, back, 6, 0, t_rec_op, &r));
	run_until(l, &r, 2);
	CHECK_EQ(r.res, 6);
	CHECK(!memcmp(back, "pinned", 6));
	uaio_file_unpin(l, h);
	close(fd);
	uaio_loop_free(l);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_op_blocking");
	RUN(kmsg_write);
	RUN(pipe_in_order);
	RUN(pinned_file);
	return T_EXIT_PASS;
}
