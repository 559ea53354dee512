/* SPDX-License-Identifier: MIT */
/*
 * Thousands of edge-triggered watches whose peers all hang up at once,
 * each stopped from its own handler: every watch must still get its
 * handle_close. More sockets are ready than one epoll_wait returns and
 * than l->fired holds; the epoll backend used to drop the events that
 * found no room, which a level-triggered watch hears again but an
 * edge-triggered one never does. On io_uring it is thousands of poll
 * removes at once while hang-ups are delivered, with a level-triggered
 * watch beside them (the loop sleeps in epoll then).
 */
#define _GNU_SOURCE 1
#include <uaio/loop.h>
#include "test.h"
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#define N 3000

static unsigned closed, stopped;

static int on_input(uaio_watch *w)
{
	char b[16];
	ssize_t n = recv(w->fd, b, sizeof(b), MSG_DONTWAIT);

	if (n == 0 && uaio_watch_stop(w->data, w) == 0)	/* hung up: stop once */
		stopped++;
	return 0;
}

static void on_close(uaio_watch *w, int reason)
{
	closed++;
	close(w->fd);
}

static const struct uaio_handler edge = { .handle_input = on_input,
					  .handle_close = on_close };

static int level_input(uaio_watch *w)
{
	return 0;
}

static const struct uaio_handler level = { .handle_input = level_input };

int main(void)
{
	static uaio_watch w[N];
	static int peer[N];
	uaio_watch lw;
	struct rlimit rl;
	int lp[2];
	uaio_loop *l;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2 * N + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < 2 * N + 64)
			SKIP("RLIMIT_NOFILE too low for 6000 descriptors");
	}
	l = uaio_loop_new(NULL);
	CHECK(l);
	/* A level-triggered watch that never fires (an empty pipe). */
	CHECK(pipe(lp) == 0);
	CHECK_OK(uaio_watch_start(l, &lw, lp[0], UAIO_READABLE, &level, l));
	/* TCP over loopback: a peer's close wakes the socket more than once
	 * (the FIN's data-ready, then its state change), which is what
	 * catches a remove while an event is in delivery. */
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(lfd >= 0);
	CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(lfd, 4096) == 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&sa, &sl) == 0);
	for (int i = 0; i < N; i++) {
		int fd;

		peer[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		CHECK(peer[i] >= 0);
		CHECK(connect(peer[i], (struct sockaddr *)&sa, sizeof(sa)) == 0);
		CHECK((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0);
		CHECK_OK(uaio_watch_start(l, &w[i], fd, UAIO_READABLE | UAIO_EDGE,
					  &edge, l));
	}
	close(lfd);
	CHECK(uaio_loop_run_once(l, 0) >= 0);	/* arm them all */
	for (int i = 0; i < N; i++)
		close(peer[i]);
	/* Until all are closed, or 200 iterations in a row bring nothing
	 * (each waits 50 ms at most): a lost handle_close never comes. */
	for (int idle = 0; closed < N && idle < 200;) {
		unsigned before = closed;

		CHECK(uaio_loop_run_once(l, 50000000) >= 0);
		idle = closed == before ? idle + 1 : 0;
	}
	CHECK_EQ(stopped, N);
	CHECK_EQ(closed, N);
	uaio_watch_stop(l, &lw);
	uaio_loop_run_once(l, 0);
	uaio_loop_free(l);
	close(lp[0]);
	close(lp[1]);
	return T_EXIT_PASS;
}
