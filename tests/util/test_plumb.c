/* SPDX-License-Identifier: MIT */
/* The shared plumbing: arrays grow zeroed, FIFOs keep order, slab records
 * are reused and recognised, iovec skipping, times, non-blocking tries. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "test.h"
#include "util/plumb.h"

struct rec {
	unsigned magic;
	struct rec *next;
	char pad[40];
};

static void test_grow(void)
{
	int *a = NULL;
	unsigned cap = 0;

	CHECK_EQ(UAIO_GROW(a, cap, 1), 0);
	CHECK_EQ(cap, 64);
	a[63] = 7;
	CHECK_EQ(UAIO_GROW(a, cap, 1000), 0);
	CHECK_EQ(cap, 1024);
	CHECK_EQ(a[63], 7);
	for (unsigned i = 64; i < cap; i++)
		CHECK_EQ(a[i], 0);
	CHECK_EQ(UAIO_GROW(a, cap, 10), 0);	/* never shrinks */
	CHECK_EQ(cap, 1024);
	free(a);
}

static void test_fifo(void)
{
	struct rec r[3], *head = NULL, *tail = NULL, *out;

	for (int i = 0; i < 3; i++) {
		r[i].magic = (unsigned)i;
		UAIO_FIFO_PUSH(head, tail, &r[i]);
	}
	for (int i = 0; i < 3; i++) {
		UAIO_FIFO_POP(head, tail, out);
		CHECK(out == &r[i]);
	}
	UAIO_FIFO_POP(head, tail, out);
	CHECK(!out && !head && !tail);
}

static void test_slab(void)
{
	struct uaio__slab s;
	struct rec *p[100], *q, x;
	unsigned n = 0;

	uaio__slab_init(&s, sizeof(struct rec), offsetof(struct rec, next), 16);
	for (int i = 0; i < 100; i++) {
		CHECK(p[i] = uaio__slab_get(&s));
		CHECK(!p[i]->next);
		CHECK(uaio__slab_owns(&s, p[i]));
		p[i]->magic = 0xabc0u + (unsigned)i;
	}
	for (int i = 0; i < 100; i++)
		for (int j = i + 1; j < 100; j++)
			CHECK(p[i] != p[j]);
	CHECK(!uaio__slab_owns(&s, &x));
	CHECK(!uaio__slab_owns(&s, (char *)p[5] + 1));
	uaio__slab_put(&s, p[42]);
	CHECK_EQ(p[42]->magic, 0xabc0u + 42);	/* the link sits elsewhere */
	CHECK(uaio__slab_get(&s) == p[42]);
	UAIO_SLAB_FOREACH(&s, q)
		n += q != NULL;
	CHECK_EQ(n, 112);			/* 7 chunks of 16 */
	uaio__slab_destroy(&s);
	CHECK(!uaio__slab_owns(&s, p[0]));
}

static void test_iov(void)
{
	char a[4], b[6], c[3];
	struct iovec v[3] = { { a, 4 }, { b, 6 }, { c, 3 } };
	int i;

	CHECK_EQ(uaio__iov_skip(v, 3, 0), 0);
	CHECK_EQ(uaio__iov_skip(v, 3, 2), 0);
	CHECK(v[0].iov_base == a + 2 && v[0].iov_len == 2);
	i = uaio__iov_skip(v, 3, 2 + 5);
	CHECK_EQ(i, 1);
	CHECK(v[1].iov_base == b + 5 && v[1].iov_len == 1);
	CHECK_EQ(uaio__iov_skip(v + 1, 2, 4), 2);	/* all gone */
}

static void test_time(void)
{
	struct timespec bad[] = { { -1, 0 }, { 0, -1 }, { 0, 1000000000 } };
	int64_t t0 = uaio__now_ns();

	for (unsigned i = 0; i < 3; i++)
		CHECK(!uaio__ts_valid(&bad[i]));
	CHECK(uaio__ts_valid(&(struct timespec){ 0, 999999999 }));
	CHECK(uaio__ts_ns(&(struct timespec){ 1, 5 }) == 1000000005);
	/* centuries away or back: saturated, never wrapped round */
	CHECK(uaio__ts_ns(&(struct timespec){ 10000000000, 0 }) == INT64_MAX);
	CHECK(uaio__ts_ns(&(struct timespec){ -10000000000, 0 }) == INT64_MIN);
	CHECK(uaio__now_ns() >= t0);
}

static void test_rw(void)
{
	int p[2];
	char buf[8];
	struct iovec v = { buf, sizeof(buf) };

	CHECK(pipe2(p, O_NONBLOCK) == 0);
	CHECK_EQ(uaio__rw(p[0], false, &v, 1, -1, 0), -EAGAIN);
	CHECK_EQ(write(p[1], "abc", 3), 3);
	CHECK_EQ(uaio__rw(p[0], false, &v, 1, -1, 0), 3);
	CHECK_EQ(uaio__rw(-1, true, &v, 1, -1, 0), -EBADF);
	CHECK_EQ(uaio__sysret(-1), -errno);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	RUN(test_grow);
	RUN(test_fifo);
	RUN(test_slab);
	RUN(test_iov);
	RUN(test_time);
	RUN(test_rw);
	return T_EXIT_PASS;
}
