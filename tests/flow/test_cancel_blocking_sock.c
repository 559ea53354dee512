/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Cancel of a flow whose blocking socket's peer is silent: a TCP source
 * that never sends, a TCP or Unix sink that never reads, through the
 * flow's pipe and directly to or from a pipe. SPLICE_F_NONBLOCK does not
 * reach a blocking socket, so on the epoll fallback a splice there waited
 * on a pool thread no cancel reaches, and done never came
 * (docs/flows.md, "Pause, resume, cancel"). */
#include <signal.h>
#include <string.h>

#include "flow/flow_util.h"

enum { SILENT_SRC, DEAF_TCP, DEAF_UNIX, SILENT_TO_PIPE, PIPE_TO_DEAF, NCASES };
static const char *const names[NCASES] = {
	"silent tcp -> file", "file -> deaf tcp", "file -> deaf unix",
	"silent tcp -> pipe", "pipe -> deaf tcp",
};

/* Keeps the pipe full until its reader goes. */
static void *pipe_feeder(void *arg)
{
	static char buf[65536];
	int fd = *(int *)arg;

	while (write(fd, buf, sizeof(buf)) > 0)
		;
	return NULL;
}

static void one(uaio_loop *l, int mode, int c, int file)
{
	struct t_result r = { 0 };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = mode,
				      .done = t_on_done, .data = &r };
	int sv[2], pv[2] = { -1, -1 }, i;
	pthread_t th;
	uaio_flow *f;

	if (c == DEAF_UNIX)
		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	else
		t_tcp_pair(sv);		/* both blocking */
	if (c == SILENT_TO_PIPE || c == PIPE_TO_DEAF)
		CHECK(pipe2(pv, O_CLOEXEC) == 0);
	switch (c) {
	case SILENT_SRC:
		p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
		p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = file, .off = 0 };
		break;
	case DEAF_TCP:
	case DEAF_UNIX:
		p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = file, .off = 0 };
		p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
		break;
	case SILENT_TO_PIPE:
		p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
		p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = pv[1], .off = -1 };
		break;
	case PIPE_TO_DEAF:
		CHECK(pthread_create(&th, NULL, pipe_feeder, &pv[1]) == 0);
		p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = pv[0], .off = -1 };
		p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
		break;
	}
	CHECK_OK(uaio_flow_start(l, &p, &f));
	fprintf(stderr, "    %s: %s (%s)\n", uaio_flow_mode_name(mode), names[c],
		uaio_flow_method(f));
	/* Long enough to fill what the sink's buffers take, and to wait. */
	for (i = 0; i < 50 && !r.done; i++)
		CHECK(uaio_loop_run_once(l, 10000000) >= 0);
	CHECK_EQ(r.done, 0);
	CHECK_OK(uaio_flow_cancel(f));
	for (i = 0; i < 300 && !r.done; i++)
		CHECK(uaio_loop_run_once(l, 10000000) >= 0);
	t_expect_cancelled(l, &r);
	if (c == PIPE_TO_DEAF) {
		close(pv[0]);		/* the feeder's write fails: it ends */
		pthread_join(th, NULL);
		close(pv[1]);
	} else if (pv[0] >= 0) {
		close(pv[0]);
		close(pv[1]);
	}
	close(sv[0]);
	close(sv[1]);
}

/* A peer that sent 100 000 bytes and went quiet: what arrived reaches
 * the file while the flow waits (it sat in a chunk waiting to fill, on
 * the epoll fallback and in kbuf mode), and the cancel then drops none
 * of what was taken from the socket. */
static void quiet_after_data(uaio_loop *l, int mode, const char *data)
{
	enum { N = 100000 };
	struct t_result r = { 0 };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = mode,
				      .done = t_on_done, .data = &r };
	int sv[2], file = t_tmpfile("/var/tmp"), i;
	char *back = malloc(N + 1);
	uaio_flow *f;

	t_tcp_pair(sv);
	CHECK_EQ(write(sv[1], data, N), (ssize_t)N);
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = file, .off = 0 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	fprintf(stderr, "    %s: quiet tcp after data -> file (%s)\n",
		uaio_flow_mode_name(mode), uaio_flow_method(f));
	for (i = 0; i < 500 && uaio_flow_bytes(f) < N; i++)
		CHECK(uaio_loop_run_once(l, 10000000) >= 0);
	CHECK_EQ(uaio_flow_bytes(f), (uint64_t)N);
	CHECK_OK(uaio_flow_cancel(f));
	for (i = 0; i < 300 && !r.done; i++)
		CHECK(uaio_loop_run_once(l, 10000000) >= 0);
	t_expect_cancelled(l, &r);
	CHECK_EQ(pread(file, back, N + 1, 0), (ssize_t)N);
	CHECK(memcmp(back, data, N) == 0);
	free(back);
	close(file);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	size_t n = 64u << 20;
	char *data = malloc(n);
	uaio_loop *l;
	int src;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	t_banner("test_cancel_blocking_sock");
	l = t_loop_new(0);
	t_fill(data, n, 21);
	src = t_tmpfile("/var/tmp");
	CHECK_EQ(pwrite(src, data, n, 0), (ssize_t)n);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_PAGECACHE; mode++) {
		quiet_after_data(l, mode, data);
		for (int c = 0; c < NCASES; c++) {
			int file = c == SILENT_SRC ? t_tmpfile("/var/tmp") : src;

			one(l, mode, c, file);
			if (file != src)
				close(file);
		}
	}
	close(src);
	uaio_loop_free(l);
	free(data);
	return T_EXIT_PASS;
}
