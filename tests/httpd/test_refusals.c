/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd refuses what RFC 9110/9112 settle and a lenient parser lets
 * through (Host syntax, versions, Transfer-Encoding, methods, absolute
 * targets, obsolete line folding, a bare CR), whatever the method, and
 * heads over 8 KB (431), and keeps serving after each. The basics:
 * test_protocol.c.
 */
#define _GNU_SOURCE
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

static struct ht_server srv;
static char *root;

static void setup(void)
{
	root = ht_mkdir("root");
	ht_put(root, "plain.txt", "just text\n", 10);
	ht_put(root, "index.html", "<html><body>hello</body></html>\n", 32);
}

/* What RFC 9110/9112 settle that a lenient parser lets through. */
static void expect_status(const char *req, int want, const char *what)
{
	struct ht_resp r;

	ht_request(srv.port, req, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == want, "%s: %d expected", what, want);
	ht_resp_free(&r);
}

static const struct { const char *value; int want; } hosts[] = {
	{ " a b", 400 }, { " a/b", 400 }, { " t:abc", 400 }, { " a:b:c", 400 },
	{ " [::1", 400 }, { " :80", 400 }, { " []", 400 },
	{ " [::1]:8080", 200 }, { " t:8080", 200 }, { " t:", 200 }, { "", 200 },
	{ " a%zz", 400 }, { " a%4", 400 }, { " a%", 400 }, { " a%41b", 200 },
};

/* One request whose head must be refused: a 400, then the connection
 * closed with nothing more sent (no answer to what followed it). */
static void expect_refused_alone(const char *req, const char *what)
{
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp r;
	size_t extra = 0;

	ht_sends(c, req);
	ht_read(c, &r, !strncmp(req, "HEAD ", 5));
	EXPECT_R(&r, r.rc == HT_OK && r.status == 400, "%s: 400 expected", what);
	EXPECT(ht_wait_close(c, 10000, &extra) && extra == 0,
	       "%s: the connection still open, or %zu more bytes sent, after the 400", what, extra);
	ht_resp_free(&r);
	ht_close(c);
}

static void t_rfc(void)
{
	struct ht_conn *c;
	struct ht_resp a, b;

	/* An Upgrade nobody takes: the connection goes on as HTTP/1.1. */
	c = ht_connect(srv.port);
	ht_sends(c, "GET /plain.txt HTTP/1.1\r\nHost: t\r\nConnection: upgrade\r\n"
		    "Upgrade: websocket\r\n\r\nGET /index.html HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &a, 0);
	ht_read(c, &b, 0);
	EXPECT_R(&a, a.rc == HT_OK && a.status == 200, "GET with an Upgrade header: 200");
	EXPECT_R(&b, b.rc == HT_OK && b.status == 200 && ht_body_has(&b, "hello"),
		 "the request after an ignored Upgrade: 200 with index.html");
	ht_resp_free(&a);
	ht_resp_free(&b);
	ht_close(c);

	expect_status("GET /plain.txt/ HTTP/1.1\r\nHost: t\r\n\r\n", 404, "a file with a trailing slash");
	expect_status("GET /plain.txt/. HTTP/1.1\r\nHost: t\r\n\r\n", 404, "a file followed by /.");
	expect_status("GET /plain.txt// HTTP/1.1\r\nHost: t\r\n\r\n", 404, "a file followed by //");
	expect_status("GET /./ HTTP/1.1\r\nHost: t\r\n\r\n", 200, "/./ (the root's index)");
	expect_status("GET /plain.txt HTTP/1.1\r\nHost: t\r\nX-Foo : y\r\n\r\n", 400,
		      "whitespace between a header name and its colon");
	expect_status("GET /plain.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1,\r\n 3-4\r\n\r\n", 400,
		      "a folded header line (obs-fold)");
	/* A head's faults are 400s whatever the method, not a 405 that
	 * keeps the connection (RFC 9112 3.2, 5.2) */
	expect_status("POST /plain.txt HTTP/1.1\r\n\r\n", 400, "POST without Host");
	expect_status("OPTIONS /plain.txt HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n", 400,
		      "OPTIONS with Host twice");
	expect_status("DELETE /plain.txt HTTP/1.1\r\nHost: a b\r\n\r\n", 400,
		      "DELETE with a bad Host");
	/* A folded line hiding a Content-Length from this server (llhttp
	 * joins it to X-A) but not from a hop that reads it: what looks
	 * like a body must not be answered as a request */
	expect_refused_alone("POST /plain.txt HTTP/1.1\r\nHost: t\r\nX-A: a\r\n Content-Length: 38\r\n"
			     "\r\nGET /index.html HTTP/1.1\r\nHost: t\r\n\r\n",
			     "POST with a folded Content-Length");
	/* A bare CR where the head's last CRLF goes (RFC 9112 2.2); loose
	 * llhttp 8.1.0 took the byte after it for the LF */
	expect_refused_alone("GET /plain.txt HTTP/1.1\r\nHost: t\r\n\rXGET /index.html HTTP/1.1\r\n"
			     "Host: t\r\n\r\n", "a bare CR ending the head");
	expect_refused_alone("HEAD /plain.txt HTTP/1.1\r\nHost: t\r\n\r\r", "CR CR ending the head");
	/* a HEAD refused inside its target: the head of the 400 alone (the
	 * method was known only once the target ended: the page followed) */
	expect_refused_alone("HEAD /\x7f HTTP/1.1\r\nHost: t\r\n\r\n", "HEAD with a DEL in its target");
	expect_refused_alone("HEAD /a\x01 HTTP/1.1\r\nHost: t\r\n\r\n", "HEAD with a control byte in its target");
	/* and a bare LF there, as a bare LF ending any other line of the
	 * head (llhttp took this one alone) */
	expect_refused_alone("GET /plain.txt HTTP/1.1\r\nHost: t\r\n\nGET /index.html HTTP/1.1\r\n"
			     "Host: t\r\n\r\n", "a bare LF ending the head");
	expect_status("GET /plain.txt HTTP/1.1\nHost: t\r\n\r\n", 400, "a bare LF ending the request line");
	expect_status("GET /plain.txt HTTP/1.1\nHost: t\r\nContent-Length: 1\r\n\r\nA", 400,
		      "a bare LF in the head of a request with a body");
	expect_status("\nGET /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 200,
		      "an empty line before the request line");
	/* Host: uri-host [":" port] (RFC 9112 3.2), the host not empty
	 * (RFC 9110 4.2.1) unless the whole value is */
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		char req[160], what[80];

		snprintf(req, sizeof(req), "GET /plain.txt HTTP/1.1\r\nHost:%s\r\n\r\n",
			 hosts[i].value);
		snprintf(what, sizeof(what), "Host:%s", hosts[i].value);
		expect_status(req, hosts[i].want, what);
	}
	/* Host on 256 or 257 lines is as repeated as on two (a count of
	 * lines that wrapped took them for one) */
	for (int n = 256; n <= 257; n++) {
		char req[4096], what[40];
		size_t len = (size_t)snprintf(req, sizeof(req), "GET /plain.txt HTTP/1.1\r\n");

		for (int i = 0; i < n; i++)
			len += (size_t)snprintf(req + len, sizeof(req) - len, "Host: t\r\n");
		snprintf(req + len, sizeof(req) - len, "\r\n");
		snprintf(what, sizeof(what), "Host on %d lines", n);
		expect_status(req, 400, what);
	}
	expect_status("GET /plain.txt HTTP/2.0\r\nHost: t\r\n\r\n", 505, "HTTP/2.0 on this port");
	expect_status("GET /plain.txt HTTP/3.0\r\nHost: t\r\n\r\n", 505, "HTTP/3.0");
	expect_status("GET /plain.txt HTTP/0.9\r\nHost: t\r\n\r\n", 400, "HTTP/0.9 with headers");
	/* HTTP/0.9's one line, nothing after it: answered now, not after
	 * the header timeout (llhttp waits for one more byte) */
	{
		int saved = ht_timeout_ms;

		ht_timeout_ms = 5000;
		expect_status("GET /plain.txt\r\n", 400, "an HTTP/0.9 line alone");
		ht_timeout_ms = saved;
	}
	/* A higher minor version of 1 is served as 1.1 (RFC 9110 2.5),
	 * keep-alive included; what is not DIGIT.DIGIT is a bad request,
	 * not a version this server lacks. */
	c = ht_connect(srv.port);
	ht_sends(c, "GET /plain.txt HTTP/1.2\r\nHost: t\r\n\r\nGET /index.html HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &a, 0);
	ht_read(c, &b, 0);
	EXPECT_R(&a, a.rc == HT_OK && a.status == 200 && a.minor == 1 && ht_body_has(&a, "just text"),
		 "HTTP/1.2: served as HTTP/1.1 (200)");
	EXPECT_R(&b, b.rc == HT_OK && b.status == 200 && ht_body_has(&b, "hello"),
		 "the request after an HTTP/1.2 one: the connection stays open");
	ht_resp_free(&a);
	ht_resp_free(&b);
	ht_close(c);
	expect_status("GET /plain.txt HTTP/1.9\r\nHost: t\r\n\r\n", 200, "HTTP/1.9 served as 1.1");
	expect_status("GET /plain.txt HTTP/1.2\r\n\r\n", 400, "HTTP/1.2 without Host");
	expect_status("GET /plain.txt HTTP/10.0\r\nHost: t\r\n\r\n", 400, "a two-digit major version");
	expect_status("GET /plain.txt HTTP/1.1 \r\nHost: t\r\n\r\n", 400, "a space after the version");
	/* A transfer coding before chunked: not understood, 501 (RFC 9112
	 * 6.1); chunked not last: the body's end is unknown, 400 (6.3). */
	expect_status("GET /plain.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
		      "0\r\n\r\n", 501, "Transfer-Encoding: gzip, chunked");
	expect_status("GET /plain.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 400,
		      "Transfer-Encoding: gzip (chunked not last)");
	/* empty list elements are none (RFC 9110 5.6.1.2): chunked alone,
	 * the body read past, the connection then closed */
	expect_status("GET /plain.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: , chunked\r\n\r\n"
		      "0\r\n\r\n", 200, "Transfer-Encoding: , chunked");
	expect_status("GET /plain.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: ,\r\n\r\n", 400,
		      "Transfer-Encoding: , (no coding)");
	/* no coding at all: a syntax error, not one not understood */
	expect_status("GET /plain.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding:\r\n\r\n", 400,
		      "an empty Transfer-Encoding");
	/* HTTP/1.0 has no transfer codings: its framing is faulty (6.1) */
	expect_status("GET /plain.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		      400, "Transfer-Encoding in HTTP/1.0");
	expect_status("FOO /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 501, "an unknown method");
	expect_status("\r\nFOO /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 501,
		      "an unknown method after an empty line");
	{	/* the same in pieces: llhttp refuses "QU" before the space
		 * that tells a token (501) from junk (400) has come (400) */
		static const char *const parts[] = { "QU", "ERY", " /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n" };
		struct ht_conn *c = ht_connect(srv.port);
		struct ht_resp r;

		for (int i = 0; i < 3; i++) {
			CHECK(ht_send(c, parts[i], strlen(parts[i])) == 0);
			usleep(50000);	/* each its own segment, most likely */
		}
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 501, "an unknown method in pieces: 501 expected");
		ht_resp_free(&r);
		ht_close(c);
	}
	expect_status("G@T /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400, "a method that is no token");
	{	/* a NUL is no token character either (it was taken for one: 501) */
		static const char req[] = "G\0T /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n";
		struct ht_conn *c = ht_connect(srv.port);
		struct ht_resp r;

		CHECK(ht_send(c, req, sizeof(req) - 1) == 0);
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 400, "a NUL in the method: 400 expected");
		ht_resp_free(&r);
		ht_close(c);
	}
	expect_status("GET http://t?q=1 HTTP/1.1\r\nHost: t\r\n\r\n", 200,
		      "absolute-form with an empty path (the root)");
	/* an absolute-form authority is a host too (RFC 9110 4.2.4 has
	 * userinfo refused) */
	expect_status("GET http://u:p@t/plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400,
		      "absolute-form with userinfo");
	expect_status("GET http:///plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400,
		      "absolute-form without a host");
	expect_status("GET http://:80/plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400,
		      "absolute-form with a port and no host");
	/* a control byte llhttp lets through in the query */
	expect_status("GET /plain.txt?a\tb HTTP/1.1\r\nHost: t\r\n\r\n", 400, "a TAB in the query");
	ht_expect_serving(&srv, "/plain.txt", "the RFC cases");
}

#define HEADER_PAD "GET /plain.txt HTTP/1.1\r\nHost: t\r\nX-Pad: %s\r\n\r\n"
#define LINE_PAD "GET /%s HTTP/1.1\r\nHost: t\r\n\r\n"

/* The request fmt makes around n bytes of ch: its status must be want. */
static void padded(const char *fmt, char ch, size_t n, int want, const char *what)
{
	char *pad = malloc(n + 1), *req = malloc(n + 256);
	struct ht_resp r;

	memset(pad, ch, n);
	pad[n] = 0;
	snprintf(req, n + 256, fmt, pad);
	ht_request(srv.port, req, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == want, "%s: %d expected", what, want);
	ht_resp_free(&r);
	free(pad);
	free(req);
}

static void t_big_head(void)
{
	char *pad = malloc(16000);
	struct ht_resp r;

	padded(HEADER_PAD, 'a', 6000, 200, "6 KB request head");
	padded(HEADER_PAD, 'b', 9000, 431, "9 KB request head, in one write");
	ht_expect_serving(&srv, "/plain.txt", "a 9 KB head");

	/* many small headers summing past 8 KB, sent in pieces */
	struct ht_conn *c = ht_connect(srv.port);
	ht_sends(c, "GET /plain.txt HTTP/1.1\r\nHost: t\r\n");
	for (int i = 0; i < 300; i++)
		if (ht_sendf(c, "X-H%03d: %s\r\n", i, "0123456789012345678901234567890") < 0)
			break;
	ht_sends(c, "\r\n");
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 431, "300 headers (~12 KB) sent in pieces: 431 expected");
	ht_resp_free(&r);
	ht_close(c);
	ht_expect_serving(&srv, "/plain.txt", "12 KB of headers");

	/* A 431 answered before the head's end: the rest of the head, still
	 * on its way, is taken and dropped (lingering close). Closing on it
	 * would answer the rest with a reset, which can destroy the 431
	 * before the client reads it (RFC 9112 9.6). */
	c = ht_connect(srv.port);
	ht_sends(c, "GET /plain.txt HTTP/1.1\r\nHost: t\r\nX-A: ");
	memset(pad, 'e', 8300);
	ht_send(c, pad, 8300);
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 431, "8.3 KB of a head, its end not sent: 431 expected");
	ht_resp_free(&r);
	EXPECT(ht_sends(c, "eeee\r\n") == 0 && ht_sends(c, "X-B: 1\r\n\r\n") == 0,
	       "the rest of a head after its 431: taken (send: %s)", strerror(errno));
	shutdown(c->fd, SHUT_WR);
	EXPECT(ht_wait_close(c, 10000, NULL) == 1 && c->err == 0,
	       "the rest of a head after its 431: the connection then ends without a reset (%s)",
	       c->err ? strerror(c->err) : "still open");
	ht_close(c);

	/* a request line alone past 8 KB: its target is too long, 414 (as
	 * nginx); also one just past the limit with the head's last CRLF (8
	 * KiB in all) whose target is not: still the line's fault */
	padded(LINE_PAD, 'c', 9000, 414, "9 KB request line");
	padded(LINE_PAD, 'c', 8180, 414, "a 8194-byte request line");
	memset(pad, 'c', 9000);
	pad[9000] = 0;
	/* the same line in pieces, its end never sent */
	c = ht_connect(srv.port);
	ht_sends(c, "GET /");
	for (int i = 0; i < 3; i++)
		ht_send(c, pad, 3000);
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 414, "9 KB of a request line in pieces: 414 expected");
	ht_resp_free(&r);
	ht_close(c);
	/* 64 KB of header bytes without an end: refused, not buffered forever */
	c = ht_connect(srv.port);
	ht_sends(c, "GET /plain.txt HTTP/1.1\r\nHost: t\r\nX-Long: ");
	memset(pad, 'd', 15000);
	for (int i = 0; i < 4; i++)
		if (ht_send(c, pad, 15000) < 0)
			break;
	ht_read(c, &r, 0);
	EXPECT_R(&r, (r.rc == HT_OK && r.status == 431) || r.rc == HT_ECLOSED,
		 "60 KB header line without an end: 431 or close expected");
	ht_resp_free(&r);
	ht_close(c);
	ht_expect_serving(&srv, "/plain.txt", "an endless header");
	free(pad);
}

int main(void)
{
	ht_init("httpd/test_refusals", 120);
	setup();
	ht_start(&srv, root, NULL);
	RUN(t_rfc);
	RUN(t_big_head);
	ht_stop(&srv);
	return ht_finish();
}
