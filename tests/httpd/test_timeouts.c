/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd timeouts. Only that a connection is closed eventually (with
 * a generous bound) or is not closed while in use; never how fast.
 *   --header-timeout: a stalled partial request, a request head dripped
 *     a line at a time (the limit is for the whole head), a connection
 *     that never sends anything;
 *   --idle-timeout (also a decimal, 0.5): an idle keep-alive connection;
 *     not while a long response is being read slowly, and not while the
 *     client keeps sending requests;
 *   --send-timeout: a client that stops reading a 64 MiB response (and
 *     its log line), not one that reads slowly all the time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

#define BIG (64 * 1024 * 1024)
static struct ht_server srv;
static char *root;
static unsigned char *big;
static const char small[] = "small file\n";

static void setup(void)
{
	root = ht_mkdir("root");
	big = ht_random(BIG, 11);
	ht_put(root, "big.bin", big, BIG);
	ht_put(root, "small.txt", small, strlen(small));
}

/* Whether the server ends c within ms (a 408 before the end is fine). */
static int closed_within(struct ht_conn *c, int ms)
{
	size_t extra = 0;
	return ht_wait_close(c, ms, &extra);
}

/* A head that never ends gets its 408 logged, with the request unknown
 * ("-"), as nginx logs it. */
static void t_header_timeout_logged(void)
{
	char *logf = ht_join(ht_scratch(), "t408.log"), *text;
	struct ht_conn *c;

	unlink(logf);
	ht_start(&srv, root, "--header-timeout", "1", "--log", logf, NULL);
	c = ht_connect(srv.port);
	ht_sends(c, "GET /sma");
	EXPECT(closed_within(c, 10000), "--header-timeout 1: still open after 10 s");
	ht_close(c);
	ht_stop(&srv);
	text = ht_slurp(logf, NULL);
	EXPECT(text && strstr(text, "127.0.0.1 - - [") && strstr(text, "] \"-\" 408 0\n"),
	       "the 408 in the log: '%.200s'", text ? text : "");
	free(text);
}

static void t_header_timeout(void)
{
	struct ht_conn *c;

	ht_start(&srv, root, "--header-timeout", "1", NULL);
	/* half a request line, then nothing */
	c = ht_connect(srv.port);
	ht_sends(c, "GET /sma");
	EXPECT(closed_within(c, 10000), "--header-timeout 1: a stalled partial request line is "
	       "still open after 10 s");
	ht_close(c);
	/* a complete request line and half the headers */
	c = ht_connect(srv.port);
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: t\r\nX-Half");
	EXPECT(closed_within(c, 10000), "--header-timeout 1: a stalled partial head is still open "
	       "after 10 s");
	ht_close(c);
	/* connected, nothing sent */
	c = ht_connect(srv.port);
	EXPECT(closed_within(c, 10000), "--header-timeout 1: a connection that sends nothing is "
	       "still open after 10 s");
	ht_close(c);

	/* slowloris: a header line every 200 ms, forever; the limit is for the
	 * whole head, so the server must end it though bytes keep coming */
	c = ht_connect(srv.port);
	int closed = 0;
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: t\r\n");
	for (int i = 0; i < 75 && !closed; i++) {	/* 15 s */
		struct pollfd p = { c->fd, POLLIN, 0 };
		if (poll(&p, 1, 200) > 0) {
			closed = closed_within(c, 2000);
			break;
		}
		if (ht_sendf(c, "X-Drip-%d: x\r\n", i) < 0)
			closed = 1;	/* EPIPE / ECONNRESET: it is gone */
	}
	EXPECT(closed, "--header-timeout 1: a head dripped one line per 200 ms is still accepted "
	       "after 15 s (the timeout must cover the whole head, not each read)");
	ht_close(c);
	ht_expect_serving(&srv, "/small.txt", "header timeouts");

	/* the header timeout does not apply to a request that is complete:
	 * a response read slowly over several seconds still completes */
	c = ht_connect_opt(srv.port, 65536);
	struct ht_resp r;
	ht_sends(c, "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read_head(c, &r, 0);
	for (size_t got = 0; r.rc == HT_OK && got < 24 << 20; got += 1 << 20) {
		ht_read_body(c, &r, got + (1 << 20));
		usleep(150000);	/* ~3.6 s over the first 24 MiB */
	}
	ht_read_body(c, &r, (size_t)-1);
	EXPECT_R(&r, r.rc == HT_OK && r.body_len == BIG && !memcmp(r.body, big, BIG),
		 "--header-timeout 1: a 64 MiB response read slowly (~4 s) must complete");
	ht_resp_free(&r);
	ht_close(c);
	ht_stop(&srv);
}

static void idle_case(const char *secs)
{
	struct ht_conn *c;
	struct ht_resp r;
	size_t extra = 0;

	ht_start(&srv, root, "--idle-timeout", secs, NULL);
	c = ht_connect(srv.port);
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "--idle-timeout %s: first request", secs);
	ht_resp_free(&r);
	EXPECT(ht_wait_close(c, 10000, &extra), "--idle-timeout %s: an idle keep-alive connection is "
	       "still open after 10 s", secs);
	EXPECT(extra == 0 || extra > 12, "--idle-timeout %s: %zu stray bytes before the close", secs,
	       extra);
	ht_close(c);
	ht_expect_serving(&srv, "/small.txt", "an idle timeout");
	ht_stop(&srv);
}

static void t_idle_timeout(void)
{
	idle_case("1");
	idle_case("0.5");

	/* in use is not idle: a response read slowly, requests every 0.5 s */
	struct ht_conn *c;
	struct ht_resp r;
	ht_start(&srv, root, "--idle-timeout", "1", NULL);
	c = ht_connect_opt(srv.port, 65536);
	ht_sends(c, "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read_head(c, &r, 0);
	for (size_t got = 0; r.rc == HT_OK && got < 24 << 20; got += 1 << 20) {
		ht_read_body(c, &r, got + (1 << 20));
		usleep(150000);
	}
	ht_read_body(c, &r, (size_t)-1);
	EXPECT_R(&r, r.rc == HT_OK && r.body_len == BIG && !memcmp(r.body, big, BIG),
		 "--idle-timeout 1: a 64 MiB response read slowly (~4 s) must complete");
	ht_resp_free(&r);
	ht_close(c);
	ht_stop(&srv);

	/* requests every 0.5 s for 5 s with a 3 s idle timeout: the timer
	 * restarts with each request (2.5 s of margin) */
	ht_start(&srv, root, "--idle-timeout", "3", NULL);
	c = ht_connect(srv.port);
	for (int i = 0; i < 10; i++) {
		int ok;
		ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n");
		ht_read(c, &r, 0);
		ok = r.rc == HT_OK && r.status == 200;
		if (!ok)
			EXPECT_R(&r, ok, "--idle-timeout 3: request %d of 10, 0.5 s apart, on one connection",
				 i + 1);
		ht_resp_free(&r);
		if (!ok)
			break;
		usleep(500000);
	}
	ht_close(c);
	ht_stop(&srv);
}

static void t_send_timeout(void)
{
	struct ht_conn *c;
	struct ht_resp r;

	ht_start(&srv, root, "--send-timeout", "1", NULL);
	c = ht_connect_opt(srv.port, 65536);
	ht_sends(c, "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read_head(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "GET /big.bin");
	sleep(8);	/* not reading: the server cannot send for 8 s */
	ht_read_body(c, &r, (size_t)-1);
	EXPECT_R(&r, r.rc == HT_EBODY && r.body_len < BIG,
		 "--send-timeout 1: a client that read nothing for 8 s still got the whole response "
		 "(%zu bytes)", r.body_len);
	EXPECT_R(&r, !memcmp(r.body, big, r.body_len), "--send-timeout: wrong bytes before the end");
	ht_resp_free(&r);
	ht_close(c);
	ht_expect_serving(&srv, "/small.txt", "a send timeout");
	ht_stop(&srv);
}

/* A send timeout shorter than a second, and a client that reads all the
 * time, slowly: the response is not cut (the flow reported progress once
 * a second, and the clock ran out between reports). */
static void t_send_timeout_short(void)
{
	enum { WANT = 8 * 1024 * 1024 };
	struct ht_conn *c;
	struct ht_resp r;

	ht_start(&srv, root, "--send-timeout", "0.8", NULL);
	c = ht_connect_opt(srv.port, 65536);
	ht_sendf(c, "GET /big.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=0-%d\r\n\r\n", WANT - 1);
	ht_read_head(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206, "GET /big.bin, 8 MiB range");
	while (r.rc == HT_OK && r.body_len < WANT) {
		ht_read_body(c, &r, r.body_len + 256 * 1024);
		usleep(60000);		/* about 4 MB/s */
	}
	EXPECT_R(&r, r.rc == HT_OK && r.body_len == WANT && !memcmp(r.body, big, WANT),
		 "--send-timeout 0.8, a client reading 4 MB/s: %zu of %d bytes", r.body_len, WANT);
	ht_resp_free(&r);
	ht_close(c);
	ht_stop(&srv);
}

/* A response the send timeout ends is in the log, with the bytes that
 * went (nginx logs every request; it had no line). */
static void t_send_timeout_logged(void)
{
	char *logf = ht_join(ht_scratch(), "tsend.log"), *text, *at;
	struct ht_conn *c;
	long long sent = -1;

	unlink(logf);
	ht_start(&srv, root, "--send-timeout", "1", "--log", logf, NULL);
	c = ht_connect_opt(srv.port, 4096);
	ht_sends(c, "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	/* reading nothing (a wait for the close would read), until the
	 * line is written (the log is flushed once a second) */
	for (int i = 0; i < 200; i++) {
		text = ht_slurp(logf, NULL);
		at = text ? strstr(text, "/big.bin") : NULL;
		free(text);
		if (at)
			break;
		usleep(100000);
	}
	ht_close(c);
	ht_stop(&srv);
	text = ht_slurp(logf, NULL);
	at = text ? strstr(text, "\"GET /big.bin HTTP/1.1\" 200 ") : NULL;
	if (at)
		sent = atoll(at + strlen("\"GET /big.bin HTTP/1.1\" 200 "));
	EXPECT(sent >= 0 && sent < BIG, "no log line with the bytes sent for a response the "
	       "send timeout ended: '%.300s'", text ? text : "(no log)");
	free(text);
}

int main(void)
{
	ht_init("httpd/test_timeouts", 170);
	setup();
	RUN(t_header_timeout);
	RUN(t_header_timeout_logged);
	RUN(t_idle_timeout);
	RUN(t_send_timeout);
	RUN(t_send_timeout_short);
	RUN(t_send_timeout_logged);
	return ht_finish();
}
