/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A TCP source whose peer sends a part and then resets the connection
 * (SO_LINGER 0): the flow into a file fails (ECONNRESET, the source's
 * side), in every mode, whatever part it took. Into a file, kbuf filled
 * a chunk with one MSG_WAITALL receive; stopped by the reset after a
 * part, that receive returned the part and the reset was gone, so the
 * flow ended as if the peer had closed cleanly: a cut file passed for a
 * whole one (uaio-flow recv kept it). */
#include <signal.h>

#include "flow/flow_util.h"

#define SENT	(1u << 20)

static void *send_then_reset(void *arg)
{
	static char buf[SENT];
	struct linger lg = { 1, 0 };
	int fd = *(int *)arg;
	size_t off = 0;

	t_fill(buf, sizeof(buf), 5);
	while (off < sizeof(buf)) {
		ssize_t n = write(fd, buf + off, sizeof(buf) - off);

		if (n <= 0)
			break;
		off += (size_t)n;
	}
	CHECK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	close(fd);			/* RST */
	return NULL;
}

static void *drain(void *arg)
{
	char b[65536];

	while (read(*(int *)arg, b, sizeof(b)) > 0)
		;
	return NULL;
}

/* Into a file, or into a pipe a thread drains (a direct splice there
 * said the reset was the pipe's, the sink's). */
static void one(uaio_loop *l, int mode, size_t chunk, bool to_pipe)
{
	struct t_result r = { 0 };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = mode, .chunk = chunk,
				      .done = t_on_done, .data = &r };
	int sv[2], pp[2] = { -1, -1 }, file = to_pipe ? -1 : t_tmpfile("/var/tmp");
	pthread_t th, dr;
	uaio_flow *f;
	struct stat st = { 0 };

	t_tcp_pair(sv);
	if (to_pipe) {
		CHECK(pipe2(pp, O_CLOEXEC) == 0);
		CHECK(pthread_create(&dr, NULL, drain, &pp[0]) == 0);
	}
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = to_pipe ? pp[1] : file,
				       .off = to_pipe ? -1 : 0 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	CHECK(pthread_create(&th, NULL, send_then_reset, &sv[1]) == 0);
	T_RUN_UNTIL(l, r.done, 10000000);
	/* A flow that ended before the reset leaves the sender blocked in
	 * its write: it is let go, and the checks below say why */
	if (r.res != -ECONNRESET)
		shutdown(sv[0], SHUT_RDWR);
	CHECK(pthread_join(th, NULL) == 0);
	if (to_pipe) {
		close(pp[1]);
		CHECK(pthread_join(dr, NULL) == 0);
		close(pp[0]);
	} else {
		CHECK(fstat(file, &st) == 0);
	}
	fprintf(stderr, "    %s, chunk %zu, into a %s: done %lld, side %d, %lld bytes in the file\n",
		uaio_flow_mode_name(mode), chunk, to_pipe ? "pipe" : "file", (long long)r.res,
		r.side, (long long)st.st_size);
	CHECK_EQ(r.done, 1);
	CHECK_EQ(r.res, -ECONNRESET);
	CHECK_EQ(r.side, UAIO_FLOW_SIDE_SRC);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	close(sv[0]);
	if (file >= 0)
		close(file);
}

int main(void)
{
	uaio_loop *l;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	t_banner("test_peer_reset");
	l = t_loop_new(0);
	for (int round = 0; round < 3; round++)
		for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_PAGECACHE; mode++)
			one(l, mode, round == 2 ? (size_t)SENT * 4 : 0, round == 1);
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
