/* SPDX-License-Identifier: MIT */
/*
 * uaio_watch_peer_closed: an edge-triggered watch hears of data and the
 * peer's end of sending in one event; the flag keeps the second, so a
 * handler that stops at a short read still learns of the end of file.
 * It stays set until the watch starts again, in handle_close too.
 */
#include <uaio/loop.h>
#include "test.h"
#include <stdbool.h>
#include <sys/socket.h>

static int inputs, closed_seen, closes, closed_in_close, close_reason;

static int on_in(uaio_watch *w)
{
	inputs++;
	closed_seen = uaio_watch_peer_closed(w);
	return 0;
}

static void on_close(uaio_watch *w, int reason)
{
	close_reason = reason;
	closes++;
	closed_in_close = uaio_watch_peer_closed(w);
}

static const struct uaio_handler h = { .handle_input = on_in, .handle_close = on_close };

static void run(bool shut)
{
	uaio_loop *l = t_loop_new(0);
	uaio_watch w = { 0 };
	int sv[2];
	char b[8];

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	inputs = closed_seen = 0;
	CHECK_OK(uaio_watch_start(l, &w, sv[0], UAIO_READABLE | UAIO_EDGE, &h, NULL));
	CHECK_EQ(uaio_watch_peer_closed(&w), 0);
	CHECK_EQ(write(sv[1], "data", 4), 4);
	if (shut)
		CHECK_EQ(shutdown(sv[1], SHUT_WR), 0);
	T_RUN_UNTIL(l, inputs > 0, 100);
	CHECK_EQ(closed_seen, shut);
	CHECK_EQ(recv(sv[0], b, sizeof(b), MSG_DONTWAIT), 4);
	if (shut) {
		CHECK_EQ(recv(sv[0], b, sizeof(b), MSG_DONTWAIT), 0);
	} else {
		/* the peer goes later: a new event, and the flag with it */
		CHECK_EQ(shutdown(sv[1], SHUT_WR), 0);
		T_RUN_UNTIL(l, inputs > 1, 100);
		CHECK_EQ(uaio_watch_peer_closed(&w), 1);
	}
	closes = closed_in_close = 0;
	close_reason = 1;
	CHECK_OK(uaio_watch_stop(l, &w));
	T_RUN_UNTIL(l, closes > 0, 100);
	/* it stays set until the watch starts again: in handle_close too
	 * (the watch's state was cleared before that call), and it is no
	 * part of the reason, which shares the state word (stopped: 0) */
	CHECK_EQ(closed_in_close, 1);
	CHECK_EQ(uaio_watch_peer_closed(&w), 1);
	CHECK_EQ(close_reason, 0);
	close(sv[0]);
	close(sv[1]);
	uaio_loop_free(l);
}

static void with_data(void)
{
	run(true);
}

static void later(void)
{
	run(false);
}

int main(int argc, char **argv)
{
	(void)argc;
	t_watchdog(30);
	t_banner(argv[0]);
	CHECK_EQ(uaio_watch_peer_closed(NULL), 0);
	RUN(with_data);
	RUN(later);
	return T_EXIT_PASS;
}
