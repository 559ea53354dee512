/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A request goes through at once, not when the next one comes: a flow
 * from a blocking socket (TCP, Unix) to another socket (through the
 * flow's pipe) or to a pipe (direct), each request answered before the
 * next is sent. On io_uring a splice that read the socket held its sink
 * pipe's lock while it waited for the peer, so the drain (or the pipe's
 * reader) waited with it: the first request reached the far end only
 * with the second, and uaio-flow forward stalled every request/reply
 * protocol (docs/flows.md). */
#include <poll.h>
#include <signal.h>

#include "flow/flow_util.h"

enum { TCP_TO_TCP, UNIX_TO_UNIX, TCP_TO_PIPE, UNIX_TO_PIPE, NCASES };
static const char *const names[NCASES] = {
	"tcp -> tcp", "unix -> unix", "tcp -> pipe", "unix -> pipe",
};

static void sock_pair(bool tcp, int sv[2])
{
	if (tcp)
		t_tcp_pair(sv);
	else
		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
}

static void one(uaio_loop *l, int mode, int c)
{
	struct t_result r = { 0 };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = mode,
				      .done = t_on_done, .data = &r };
	bool tcp = c == TCP_TO_TCP || c == TCP_TO_PIPE;
	int in[2], out[2], i;
	int64_t total = 0;
	uaio_flow *f;

	sock_pair(tcp, in);	/* in[1]: the client writes; in[0]: the source */
	if (c == TCP_TO_PIPE || c == UNIX_TO_PIPE) {
		int pv[2];

		CHECK(pipe2(pv, O_CLOEXEC) == 0);
		out[0] = pv[1];		/* the sink */
		out[1] = pv[0];		/* the far end reads */
	} else {
		sock_pair(tcp, out);
	}
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = in[0], .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = out[0], .off = -1 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	fprintf(stderr, "    %s: %s (%s)\n", uaio_flow_mode_name(mode), names[c],
		uaio_flow_method(f));
	for (int req = 0; req < 4; req++) {
		char msg[32], got[32];
		struct pollfd pf = { out[1], POLLIN, 0 };
		int len = snprintf(msg, sizeof(msg), "request %d\n", req);
		ssize_t n;

		CHECK_EQ(write(in[1], msg, (size_t)len), len);
		/* bounded: 1000 rounds of up to 10 ms; a stall is a failure */
		for (i = 0; i < 1000 && poll(&pf, 1, 0) == 0; i++)
			CHECK(uaio_loop_run_once(l, 10000000) >= 0);
		CHECK(pf.revents & POLLIN);
		n = read(out[1], got, sizeof(got));
		CHECK_EQ(n, len);
		CHECK(!memcmp(got, msg, (size_t)len));
		CHECK_EQ(r.done, 0);
		total += len;
	}
	CHECK(shutdown(in[1], SHUT_WR) == 0);
	for (i = 0; i < 1000 && !r.done; i++)
		CHECK(uaio_loop_run_once(l, 10000000) >= 0);
	CHECK_EQ(r.done, 1);
	CHECK_EQ(r.res, total);
	for (i = 0; i < 2; i++) {
		close(in[i]);
		close(out[i]);
	}
}

int main(void)
{
	uaio_loop *l;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	t_banner("test_request_reply");
	l = t_loop_new(0);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_PAGECACHE; mode++)
		for (int c = 0; c < NCASES; c++)
			one(l, mode, c);
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
