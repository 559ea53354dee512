/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* uaio_flow_cancel from the progress callback of a send that the socket
 * took only in part (its peer is silent, the buffer full): the flow must
 * not send the rest after the cancel, where nothing cancels it, but end
 * with done(-ECANCELED) at once, in every mode (docs/flows.md, "Pause,
 * resume, cancel"). */
#include <signal.h>

#include "flow/flow_util.h"

struct cp {
	struct t_result r;
	int calls;
};

static void cp_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	struct cp *c = data;

	if (c->calls++ == 0)
		CHECK_OK(uaio_flow_cancel(f));
}

static void cp_done(uaio_flow *f, int64_t res, int side, void *data)
{
	t_on_done(f, res, side, &((struct cp *)data)->r);
}

int main(void)
{
	size_t n = 4u << 20;
	char *data = malloc(n);
	uaio_loop *l;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	t_banner("test_cancel_progress");
	l = t_loop_new(0);
	t_fill(data, n, 12);
	/* Non-blocking sockets, for a short send (a splice to a blocking
	 * one waits for all of it and reports nothing before). */
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int a = t_tmpfile("/var/tmp"), sv[2], sz = 32768, i;
		struct cp c = { 0 };
		struct uaio_flow_params p = {
			.src = { .type = UAIO_FLOW_FD, .fd = a, .off = 0 },
			.dst = { .type = UAIO_FLOW_FD, .off = -1 },
			.len = UAIO_FLOW_EOF, .mode = mode,
			.progress = cp_progress, .done = cp_done, .data = &c,
		};
		uaio_flow *f;

		CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
		/* A small buffer: the first send is taken only in part. */
		CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)) == 0);
		p.dst.fd = sv[0];
		CHECK_OK(uaio_flow_start(l, &p, &f));
		fprintf(stderr, "    %s (%s)\n", uaio_flow_mode_name(mode), uaio_flow_method(f));
		/* The peer never reads: only a cancel that holds ends it. */
		for (i = 0; i < 500 && !c.r.done; i++)
			CHECK(uaio_loop_run_once(l, 10000000) >= 0);
		CHECK_EQ(c.calls, 1);
		t_expect_cancelled(l, &c.r);
		close(sv[0]);
		close(sv[1]);
		close(a);
	}
	uaio_loop_free(l);
	free(data);
	return T_EXIT_PASS;
}
