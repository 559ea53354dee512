/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A splice flow from a file to a slow Unix socket reader: the flow's pipe
 * fills by its slots (partial pages) before its bytes, and the fill's
 * EAGAIN must wait for the drain. It polled the file instead, which is
 * always ready: on the epoll fallback the loop spun, some 40000
 * iterations and a busy worker for 32 MiB. Exact bytes, and a loop that
 * wakes about once per drain. */
#include <signal.h>

#include "flow/flow_util.h"

struct slow {
	int fd;
	char *buf;
	size_t got, cap;
};

static void *slow_reader(void *arg)
{
	struct slow *s = arg;
	ssize_t r;

	while (s->got < s->cap &&
	       (r = read(s->fd, s->buf + s->got, s->cap - s->got < 65536 ? s->cap - s->got : 65536)) > 0) {
		s->got += (size_t)r;
		usleep(500);
	}
	return NULL;
}

int main(void)
{
	size_t n = 16u << 20;
	char *data = malloc(n);
	struct t_result r = { 0 };
	struct slow s = { .buf = malloc(n), .cap = n };
	int a, sv[2], iters = 0;
	pthread_t th;
	uaio_flow *f;
	uaio_loop *l;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	t_banner("test_splice_full_pipe");
	l = t_loop_new(0);
	t_fill(data, n, 33);
	a = t_tmpfile("/var/tmp");
	CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	s.fd = sv[1];
	CHECK(pthread_create(&th, NULL, slow_reader, &s) == 0);

	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = a, .off = 0 },
		.dst = { .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 },
		.len = UAIO_FLOW_EOF, .mode = UAIO_FLOW_PAGECACHE,
		.done = t_on_done, .data = &r,
	};
	CHECK_OK(uaio_flow_start(l, &p, &f));
	fprintf(stderr, "    %s\n", uaio_flow_method(f));
	while (!r.done) {
		CHECK(uaio_loop_run_once(l, -1) >= 0);
		iters++;
	}
	pthread_join(th, NULL);
	fprintf(stderr, "    %d loop iterations\n", iters);
	CHECK_EQ(r.res, (int64_t)n);
	CHECK_EQ(s.got, n);
	CHECK(memcmp(s.buf, data, n) == 0);
	/* About one wake-up per drain (some 300 here on epoll), not the
	 * thousands of the spin. */
	CHECK(iters < (int)(n / 16384));
	close(sv[0]);
	close(sv[1]);
	close(a);
	uaio_loop_free(l);
	free(s.buf);
	free(data);
	return T_EXIT_PASS;
}
