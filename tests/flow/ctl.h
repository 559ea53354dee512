/* SPDX-License-Identifier: MIT */
/* What the flow control tests share (test_control.c, test_taps.c): one
 * loop, a flow's results and the pause or cancel its progress asks for,
 * file endpoints, a file's contents checked. */
#ifndef UAIO_TEST_FLOW_CTL_H
#define UAIO_TEST_FLOW_CTL_H
#include "flow/flow_util.h"

static const char *dir = "/var/tmp";

static uaio_loop *L;

struct ctl {
	struct t_result r;
	uint64_t pause_at, cancel_at, last;
	int progress_calls;
	bool backwards;
	uaio_flow *f;
	const char *method;
};

static inline void ctl_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	struct ctl *c = data;

	c->progress_calls++;
	if (bytes < c->last)
		c->backwards = true;
	c->last = bytes;
	if (c->pause_at && bytes >= c->pause_at) {
		c->pause_at = 0;
		CHECK_OK(uaio_flow_pause(f));
	}
	if (c->cancel_at && bytes >= c->cancel_at) {
		c->cancel_at = 0;
		CHECK_OK(uaio_flow_cancel(f));
		CHECK_EQ(uaio_flow_cancel(f), -EALREADY);
	}
}

static inline void ctl_done(uaio_flow *f, int64_t res, int side, void *data)
{
	struct ctl *c = data;

	c->method = uaio_flow_method(f);
	t_on_done(f, res, side, &c->r);
}

static inline uaio_flow *start(struct uaio_flow_params *p, struct ctl *c)
{
	uaio_flow *f;

	p->progress = ctl_progress;
	p->done = ctl_done;
	p->data = c;
	CHECK_OK(uaio_flow_start(L, p, &f));
	c->f = f;
	return f;
}

static inline struct uaio_flow_ep fd_ep(int fd, int64_t off)
{
	return (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = fd, .off = off };
}

static inline void check_file(int fd, const char *want, size_t n)
{
	char *got = malloc(n + 1);
	struct stat st;

	CHECK(fstat(fd, &st) == 0);
	CHECK_EQ(st.st_size, (long long)n);
	CHECK_EQ(pread(fd, got, n, 0), (ssize_t)n);
	CHECK(memcmp(got, want, n) == 0);
	free(got);
}

#endif
