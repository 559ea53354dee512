/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd under load: 1000 concurrent keep-alive connections doing
 * two rounds of requests each; thousands of short connections without a
 * descriptor leak; --threads 2; --max-conns 4 (the fifth connection gets
 * 503 + Connection: close, the first four keep working, a freed slot is
 * reused, refused connections do not use slots up).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client.h"

#ifndef NCONN
#define NCONN 1000
#endif
#define NFILE 10
static struct ht_server srv;
static char *root;
static unsigned char *files[NFILE];
static size_t sizes[NFILE];

static void setup(void)
{
	root = ht_mkdir("root");
	for (int i = 0; i < NFILE; i++) {
		char n[32];
		sizes[i] = (size_t)(i * i * 1000 + 17);	/* 17 bytes .. 81 KB */
		files[i] = ht_random(sizes[i], 100 + i);
		snprintf(n, sizeof(n), "f%d.bin", i);
		ht_put(root, n, files[i], sizes[i]);
	}
}

static int body_ok(struct ht_resp *r, int f)
{
	return r->rc == HT_OK && r->status == 200 && r->body_len == sizes[f] &&
	       !memcmp(r->body, files[f], sizes[f]);
}

/* The server's descriptors settle back to at most base + slack. */
static void fds_settle(int base, const char *after)
{
	int n = -1;
	for (int i = 0; i < 100; i++) {	/* closes are noticed asynchronously */
		n = ht_count_fds(srv.pid);
		if (n <= base + 16)
			return;
		usleep(100000);
	}
	EXPECT(0, "server holds %d descriptors after %s (%d before): a leak", n, after, base);
}

static void t_thousand(void)
{
	static struct ht_conn *c[NCONN];
	int bad = 0, base = ht_count_fds(srv.pid);

	for (int i = 0; i < NCONN; i++) {
		c[i] = ht_connect_opt(srv.port, 0);
		FATAL(c[i], "connection %d of %d: %s", i + 1, NCONN, strerror(errno));
	}
	fprintf(stderr, "    %d connections open, server has %d descriptors\n", NCONN,
		ht_count_fds(srv.pid));
	for (int round = 0; round < 2 && bad < 5; round++) {
		for (int i = 0; i < NCONN; i++)
			EXPECT(ht_sendf(c[i], "GET /f%d.bin HTTP/1.1\r\nHost: t\r\n\r\n",
					(i + round) % NFILE) == 0, "round %d, connection %d: send", round, i);
		for (int i = 0; i < NCONN; i++) {
			struct ht_resp r;
			ht_read(c[i], &r, 0);
			if (!body_ok(&r, (i + round) % NFILE) && bad++ < 5)
				EXPECT_R(&r, 0, "round %d, connection %d of %d: wrong response", round + 1,
					 i + 1, NCONN);
			ht_resp_free(&r);
			if (r.rc == HT_ETIMEOUT)
				ht_timeout_ms = 5000;	/* one hang is enough to know */
		}
	}
	ht_timeout_ms = 30000;
	/* a third round, pipelined: HEAD + GET in one write on each */
	for (int i = 0; i < NCONN && bad < 5; i++)
		ht_sendf(c[i], "HEAD /f%d.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /f%d.bin HTTP/1.1\r\n"
			 "Host: t\r\n\r\n", i % NFILE, (i + 5) % NFILE);
	for (int i = 0; i < NCONN && bad < 5; i++) {
		struct ht_resp h, g;
		ht_read(c[i], &h, 1);
		ht_read(c[i], &g, 0);
		if ((h.rc != HT_OK || h.status != 200 || h.clen != (long long)sizes[i % NFILE] ||
		     !body_ok(&g, (i + 5) % NFILE)) && bad++ < 5)
			EXPECT_R(&g, 0, "round 3 (HEAD+GET pipelined), connection %d: HEAD %d/%lld, GET wrong",
				 i + 1, h.status, h.clen);
		ht_resp_free(&h);
		ht_resp_free(&g);
	}
	EXPECT(bad == 0, "%d wrong responses over %d connections", bad, NCONN);
	for (int i = 0; i < NCONN; i++)
		ht_close(c[i]);
	fds_settle(base, "1000 connections closed");
}

static void t_short_conns(void)
{
	int bad = 0, base;
	struct ht_resp r;

	ht_get(srv.port, "/f1.bin", NULL, &r);	/* warm the file cache */
	ht_resp_free(&r);
	base = ht_count_fds(srv.pid);
	for (int i = 0; i < 3000; i++) {
		int f = i % NFILE;
		struct ht_conn *c = ht_connect(srv.port);
		if (i % 3 == 0) {	/* the server closes */
			ht_sendf(c, "GET /f%d.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", f);
		} else if (i % 3 == 1) {	/* the client closes after the response */
			ht_sendf(c, "GET /f%d.bin HTTP/1.1\r\nHost: t\r\n\r\n", f);
		} else {	/* the client leaves without waiting */
			ht_sendf(c, "GET /f%d.bin HTTP/1.1\r\nHost: t\r\n\r\n", f);
			ht_abort(c);
			continue;
		}
		ht_read(c, &r, 0);
		if (!body_ok(&r, f) && bad++ < 3)
			EXPECT_R(&r, 0, "short connection %d", i);
		ht_resp_free(&r);
		ht_close(c);
	}
	EXPECT(bad == 0, "%d of 3000 short connections got a wrong response", bad);
	fds_settle(base, "3000 short connections");
}

static void t_threads(void)
{
	struct ht_conn *c[200];
	int bad = 0;

	ht_start(&srv, root, "--threads", "2", NULL);
	for (int i = 0; i < 200; i++)
		c[i] = ht_connect(srv.port);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 200; i++)
			ht_sendf(c[i], "GET /f%d.bin HTTP/1.1\r\nHost: t\r\n\r\n", (i + round) % NFILE);
		for (int i = 0; i < 200; i++) {
			struct ht_resp r;
			ht_read(c[i], &r, 0);
			if (!body_ok(&r, (i + round) % NFILE) && bad++ < 3)
				EXPECT_R(&r, 0, "--threads 2: connection %d, round %d", i, round + 1);
			ht_resp_free(&r);
		}
	}
	for (int i = 0; i < 200; i++)
		ht_close(c[i]);
	/* ranges and validators work the same in every loop */
	for (int i = 0; i < 20; i++) {
		struct ht_resp r;
		ht_get(srv.port, "/f9.bin", "Range: bytes=10-19\r\n", &r);
		if (!(r.rc == HT_OK && r.status == 206 && r.body_len == 10 &&
		      !memcmp(r.body, files[9] + 10, 10)) && bad++ < 3)
			EXPECT_R(&r, 0, "--threads 2: range request %d", i);
		ht_resp_free(&r);
	}
	EXPECT(bad == 0, "--threads 2: %d wrong responses", bad);
	ht_stop(&srv);
}

/* The answer to a connection over the limit: 503 and Connection: close,
 * then the end of the connection. The 503 may come before any request. */
static int refused_503(const char *what)
{
	struct ht_conn *c = ht_connect_opt(srv.port, 0);
	struct ht_resp r;
	struct pollfd p;
	size_t extra = 0;
	int ok;

	if (!c)
		return errno == ECONNREFUSED ? -1 : -2;
	p = (struct pollfd){ c->fd, POLLIN, 0 };
	if (poll(&p, 1, 1000) == 0)	/* nothing yet: ask */
		ht_sends(c, "GET /f0.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &r, 0);
	snprintf(r.req, sizeof(r.req), "%s", "(connection over the limit, GET /f0.bin)");
	ok = r.rc == HT_OK && r.status == 503;
	EXPECT_R(&r, ok, "%s: 503 expected", what);
	if (ok) {
		EXPECT_R(&r, ht_hdr_has_token(&r, "Connection", "close"), "%s: 503 without Connection: close",
			 what);
		EXPECT(ht_wait_close(c, 10000, &extra), "%s: the server kept the connection after its 503",
		       what);
	}
	ht_resp_free(&r);
	ht_close(c);
	return ok;
}

static int get_on(struct ht_conn *c, int f)
{
	struct ht_resp r;
	int ok;
	ht_sendf(c, "GET /f%d.bin HTTP/1.1\r\nHost: t\r\n\r\n", f);
	ht_read(c, &r, 0);
	ok = body_ok(&r, f);
	if (!ok)
		EXPECT_R(&r, ok, "request on one of the connections under the limit");
	ht_resp_free(&r);
	return ok;
}

static void t_max_conns(void)
{
	struct ht_conn *c[4];

	char *logf = ht_join(ht_scratch(), "maxconns.log"), *text;

	unlink(logf);
	ht_start(&srv, root, "--max-conns", "4", "--log", logf, NULL);
	for (int i = 0; i < 4; i++) {
		c[i] = ht_connect(srv.port);
		get_on(c[i], i);	/* accepted and counted for sure */
	}
	refused_503("5th connection with --max-conns 4");
	for (int i = 0; i < 4; i++)
		EXPECT(get_on(c[i], i + 1), "--max-conns 4: connection %d stopped working after a 503", i + 1);
	for (int i = 0; i < 20; i++)
		refused_503("another connection over the limit");
	for (int i = 0; i < 4; i++)
		EXPECT(get_on(c[i], i + 2), "--max-conns 4: connection %d after 20 refusals", i + 1);

	/* a slot freed by a close is given to the next connection */
	ht_close(c[3]);
	int ok = 0;
	for (int i = 0; i < 50 && !ok; i++) {
		struct ht_conn *n = ht_connect(srv.port);
		struct ht_resp r;
		ht_sends(n, "GET /f3.bin HTTP/1.1\r\nHost: t\r\n\r\n");
		ht_read(n, &r, 0);
		ok = body_ok(&r, 3);
		if (ok)
			c[3] = n;
		else
			ht_close(n);
		ht_resp_free(&r);
		if (!ok)
			usleep(200000);
	}
	EXPECT(ok, "--max-conns 4: after one of 4 connections closed, new connections still get 503");
	if (!ok)
		c[3] = NULL;
	/* all closed: four new ones fit again (the refused ones left no trace) */
	for (int i = 0; i < 4; i++)
		ht_close(c[i]);
	usleep(500000);
	for (int tries = 0; tries < 20; tries++) {
		int good = 0;
		for (int i = 0; i < 4; i++) {
			struct ht_resp r;
			c[i] = ht_connect(srv.port);
			ht_sends(c[i], "GET /f1.bin HTTP/1.1\r\nHost: t\r\n\r\n");
			ht_read(c[i], &r, 0);
			good += body_ok(&r, 1);
			ht_resp_free(&r);
		}
		for (int i = 0; i < 4; i++)
			ht_close(c[i]);
		if (good == 4) {
			ok = 1;
			break;
		}
		ok = 0;
		usleep(250000);
	}
	EXPECT(ok, "--max-conns 4: with every connection closed, 4 new ones do not all fit");
	ht_stop(&srv);
	/* each refusal is in the access log, its request unread ("-") */
	text = ht_slurp(logf, NULL);
	EXPECT(text && strstr(text, "127.0.0.1 - - [") && strstr(text, "] \"-\" 503 0\n"),
	       "the 503s in the log: '%.200s'", text ? text : "");
	free(text);
}

int main(void)
{
	ht_init("httpd/test_load", 850);
	long lim = ht_raise_nofile(NCONN * 2 + 200);
	if (lim < NCONN + 100) {
		fprintf(stderr, "skip: RLIMIT_NOFILE %ld, need %d\n", lim, NCONN + 100);
		return T_EXIT_SKIP;
	}
	setup();
	ht_start(&srv, root, NULL);	/* inherits the raised limit */
	RUN(t_thousand);
	RUN(t_short_conns);
	ht_stop(&srv);
	RUN(t_threads);
	RUN(t_max_conns);
	return ht_finish();
}
