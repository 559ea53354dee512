/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd protocol basics: GET/HEAD and their headers (Content-Length,
 * Last-Modified, strong ETag, Accept-Ranges, Content-Type from
 * /etc/mime.types, Date), 405 with Allow, keep-alive, pipelining,
 * HTTP/1.0 and Connection: close, Host required in 1.1, 431 for heads over
 * 8 KB, 400 for garbage, percent-decoded paths.
 */
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

static struct ht_server srv;
static char *root;
static unsigned char *blob;	/* data.bin */
#define BLOB 20000

struct file { const char *name; const char *mime; const char *text; size_t len; };
static struct file files[] = {
	{ "index.html", "text/html", "<html><body>hello</body></html>\n", 0 },
	{ "page.htm", "text/html", "<p>htm</p>\n", 0 },
	{ "style.css", "text/css", "body { color: red }\n", 0 },
	{ "img.png", "image/png", NULL, 3000 },
	{ "plain.txt", "text/plain", "just text\n", 0 },
	{ "blob.zzqx", "application/octet-stream", "unknown extension\n", 0 },
	{ "noext", "application/octet-stream", "no extension\n", 0 },
	{ "empty.txt", "text/plain", "", 0 },
	{ "sp ace.txt", "text/plain", "space in the name\n", 0 },
};
#define NFILES (sizeof(files) / sizeof(files[0]))

static const unsigned char *fdata(struct file *f)
{
	return f->text ? (const unsigned char *)f->text : blob;
}

static size_t flen(struct file *f)
{
	return f->text ? strlen(f->text) : f->len;
}

static char *fpath(const char *name)
{
	return ht_join(root, name);
}

static void setup(void)
{
	root = ht_mkdir("root");
	blob = ht_random(BLOB, 1);
	for (size_t i = 0; i < NFILES; i++) {
		char *p = fpath(files[i].name);
		ht_write(p, fdata(&files[i]), flen(&files[i]));
		free(p);
	}
	char *p = fpath("data.bin");
	ht_write(p, blob, BLOB);
	free(p);
}

static time_t mtime_of(const char *name)
{
	char *p = fpath(name);
	time_t t = ht_mtime(p);
	free(p);
	return t;
}

/* URL path of a file name (only spaces need escaping here). */
static void url(char *out, size_t n, const char *name)
{
	size_t o = 0;
	out[o++] = '/';
	for (; *name && o + 4 < n; name++) {
		if (*name == ' ') {
			memcpy(out + o, "%20", 3);
			o += 3;
		} else {
			out[o++] = *name;
		}
	}
	out[o] = 0;
}

static void t_get_headers(void)
{
	int have_types = access("/etc/mime.types", R_OK) == 0;

	if (!have_types)
		fprintf(stderr, "    no /etc/mime.types: Content-Type not checked\n");
	for (size_t i = 0; i < NFILES; i++) {
		struct ht_resp r;
		char u[256];
		url(u, sizeof(u), files[i].name);
		ht_get(srv.port, u, NULL, &r);
		CHECK_200(&r, fdata(&files[i]), flen(&files[i]),
			  have_types ? files[i].mime : NULL, mtime_of(files[i].name));
		EXPECT_R(&r, ht_hdr_count(&r, "Date") == 1 && ht_hdr_count(&r, "ETag") == 1 &&
			 ht_hdr_count(&r, "Content-Type") == 1, "Date, ETag, Content-Type once each");
		EXPECT_R(&r, r.minor == 1, "HTTP/1.1 response to an HTTP/1.1 request");
		ht_resp_free(&r);
	}
}

/* HEAD has GET's headers and no body: checked by what follows on the
 * same connection (a body after HEAD would be read as the next head). */
static void t_head(void)
{
	static const char *same[] = { "Content-Length", "Content-Type", "ETag",
				      "Last-Modified", "Accept-Ranges" };
	for (size_t i = 0; i < NFILES; i++) {
		struct ht_conn *c = ht_connect(srv.port);
		struct ht_resp h, g, h2;
		char u[256];
		size_t extra = 0;

		url(u, sizeof(u), files[i].name);
		ht_sendf(c, "HEAD %s HTTP/1.1\r\nHost: t\r\n\r\n", u);
		ht_read(c, &h, 1);
		ht_sendf(c, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", u);
		ht_read(c, &g, 0);
		ht_sendf(c, "HEAD %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", u);
		ht_read(c, &h2, 1);
		EXPECT_R(&h, h.rc == HT_OK && h.status == 200, "HEAD %s: 200", u);
		CHECK_200(&h, fdata(&files[i]), flen(&files[i]), NULL, mtime_of(files[i].name));
		CHECK_200(&g, fdata(&files[i]), flen(&files[i]), NULL, mtime_of(files[i].name));
		EXPECT_R(&h2, h2.rc == HT_OK && h2.status == 200,
			 "HEAD after GET on one connection (HEAD must not send a body)");
		for (size_t k = 0; k < sizeof(same) / sizeof(same[0]); k++) {
			const char *a = ht_hdr(&h, same[k]), *b = ht_hdr(&g, same[k]);
			EXPECT_R(&h, a && b && !strcmp(a, b), "HEAD %s: %s '%s', GET has '%s'",
				 u, same[k], a ? a : "(none)", b ? b : "(none)");
		}
		EXPECT(ht_wait_close(c, 10000, &extra) && extra == 0,
		       "HEAD %s + Connection: close: expected EOF and no body bytes, got %zu bytes", u, extra);
		ht_resp_free(&h);
		ht_resp_free(&g);
		ht_resp_free(&h2);
		ht_close(c);
	}
}

static void t_methods(void)
{
	static const char *m[] = { "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE" };
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		struct ht_resp r;
		char req[256];
		snprintf(req, sizeof(req), "%s /index.html HTTP/1.1\r\nHost: t\r\n\r\n", m[i]);
		ht_request(srv.port, req, &r);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 405, "%s: 405 expected", m[i]);
		EXPECT_R(&r, ht_hdr_has_token(&r, "Allow", "GET") && ht_hdr_has_token(&r, "Allow", "HEAD") &&
			 !ht_hdr_has_token(&r, "Allow", m[i]), "%s: Allow: GET, HEAD expected", m[i]);
		ht_resp_free(&r);
	}
	/* A POST body must not be taken for the next request: either the
	 * connection ends after the 405 or the next request is served. */
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp r, g;
	ht_sends(c, "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\nhello=world"
		    "GET /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 405, "POST with a body: 405");
	if (ht_read(c, &g, 0) != HT_ECLOSED || g.head) {
		EXPECT_R(&g, g.rc == HT_OK && g.status == 200 && g.body_len == strlen(files[4].text),
			 "GET pipelined after a POST with a 11-byte body: 200 (or the connection closed)");
	}
	ht_resp_free(&r);
	ht_resp_free(&g);
	ht_close(c);

	/* A 405 for a POST whose 4 MB body follows at once: the server
	 * reads and drops the body (lingering close) rather than closing on
	 * unread bytes, whose reset would cut the body's send short and could
	 * destroy the 405 before it is read (RFC 9112 9.6). */
	size_t big = 4u << 20;
	char *body = malloc(big);
	memset(body, 'x', big);
	c = ht_connect(srv.port);
	ht_sendf(c, "POST /index.html HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n", big);
	EXPECT(ht_send(c, body, big) == 0, "POST with a 4 MB body: the body is all taken (send: %s)",
	       strerror(errno));
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 405 && ht_hdr_has_token(&r, "Connection", "close"),
		 "POST with a 4 MB body: 405 with Connection: close, read whole");
	EXPECT(ht_wait_close(c, 5000, NULL) == 1, "POST with a 4 MB body: the connection then ends");
	ht_resp_free(&r);
	ht_close(c);
	free(body);

	/* What follows a CONNECT is a tunnel's bytes: the 405 says
	 * Connection: close and the connection ends. */
	c = ht_connect(srv.port);
	ht_sends(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 405 && ht_hdr_has_token(&r, "Connection", "close"),
		 "CONNECT: 405 with Connection: close");
	EXPECT(ht_wait_close(c, 5000, NULL) == 1, "CONNECT: the connection closes after the 405");
	ht_resp_free(&r);
	ht_close(c);
}

static void t_keepalive(void)
{
	struct ht_conn *c = ht_connect(srv.port);
	size_t extra = 0;

	for (int i = 0; i < 10; i++) {
		struct ht_resp r;
		struct file *f = &files[i % 5];
		if (i == 5)
			sleep(2);	/* far below the default idle timeout (60 s) */
		EXPECT(ht_sendf(c, "GET /%s HTTP/1.1\r\nHost: t\r\n\r\n", f->name) == 0,
		       "request %d on a keep-alive connection: send failed", i + 1);
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == flen(f) &&
			 !memcmp(r.body, fdata(f), flen(f)), "request %d on one keep-alive connection", i + 1);
		EXPECT_R(&r, !ht_hdr_has_token(&r, "Connection", "close"),
			 "HTTP/1.1 keep-alive response says Connection: close");
		ht_resp_free(&r);
	}
	/* header names and the close token are case-insensitive */
	struct ht_resp r;
	ht_sends(c, "GET /plain.txt HTTP/1.1\r\nhost: t\r\nCONNECTION: Close\r\n\r\n");
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "lower-case host:, CONNECTION: Close");
	EXPECT(ht_wait_close(c, 10000, &extra) && extra == 0,
	       "Connection: Close: the server must close after the response (%zu extra bytes)", extra);
	ht_resp_free(&r);
	ht_close(c);
}

static void t_pipeline(void)
{
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp r[6];
	size_t extra = 0;

	ht_sends(c, "GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n"
		    "HEAD /style.css HTTP/1.1\r\nHost: t\r\n\r\n"
		    "GET /img.png HTTP/1.1\r\nHost: t\r\n\r\n"
		    "GET /missing.txt HTTP/1.1\r\nHost: t\r\n\r\n"
		    "GET /data.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=100-199\r\n\r\n"
		    "GET /plain.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	ht_read(c, &r[0], 0);
	ht_read(c, &r[1], 1);
	ht_read(c, &r[2], 0);
	ht_read(c, &r[3], 0);
	ht_read(c, &r[4], 0);
	ht_read(c, &r[5], 0);
	EXPECT_R(&r[0], r[0].status == 200 && r[0].body_len == flen(&files[0]) &&
		 !memcmp(r[0].body, files[0].text, flen(&files[0])), "pipelined #1 GET /index.html");
	EXPECT_R(&r[1], r[1].rc == HT_OK && r[1].status == 200 &&
		 r[1].clen == (long long)flen(&files[2]), "pipelined #2 HEAD /style.css");
	EXPECT_R(&r[2], r[2].rc == HT_OK && r[2].status == 200 && r[2].body_len == 3000 &&
		 !memcmp(r[2].body, blob, 3000), "pipelined #3 GET /img.png");
	EXPECT_R(&r[3], r[3].rc == HT_OK && r[3].status == 404, "pipelined #4 GET /missing.txt: 404");
	EXPECT_R(&r[4], r[4].rc == HT_OK && r[4].status == 206 && r[4].body_len == 100 &&
		 !memcmp(r[4].body, blob + 100, 100), "pipelined #5 Range 100-199");
	EXPECT_R(&r[5], r[5].rc == HT_OK && r[5].status == 200 && r[5].body_len == flen(&files[4]),
		 "pipelined #6 GET /plain.txt with Connection: close");
	EXPECT(ht_wait_close(c, 10000, &extra) && extra == 0,
	       "after the pipelined Connection: close: EOF expected (%zu extra bytes)", extra);
	for (int i = 0; i < 6; i++)
		ht_resp_free(&r[i]);
	ht_close(c);

	/* 64 requests in one write, 20000 bytes each: the server must keep
	 * reading while its writes wait for the client */
	char *many = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&many, &n);
	for (int i = 0; i < 64; i++)
		fprintf(m, "GET /data.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	fclose(m);
	c = ht_connect(srv.port);
	ht_send(c, many, n);
	for (int i = 0; i < 64; i++) {
		struct ht_resp q;
		ht_read(c, &q, 0);
		EXPECT_R(&q, q.rc == HT_OK && q.status == 200 && q.body_len == BLOB &&
			 !memcmp(q.body, blob, BLOB), "pipelined GET %d of 64", i + 1);
		int bad = q.rc != HT_OK;
		ht_resp_free(&q);
		if (bad)
			break;
	}
	ht_close(c);
	free(many);
}

static void t_http10(void)
{
	static const char *reqs[] = {
		"GET /index.html HTTP/1.0\r\n\r\n",
		"GET /index.html HTTP/1.0\r\nHost: t\r\n\r\n",
		"HEAD /index.html HTTP/1.0\r\n\r\n",
	};
	for (size_t i = 0; i < 3; i++) {
		struct ht_conn *c = ht_connect(srv.port);
		struct ht_resp r;
		size_t extra = 0;
		int head = i == 2;
		ht_sends(c, reqs[i]);
		ht_read(c, &r, head);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "HTTP/1.0 request served");
		if (!head)
			EXPECT_R(&r, r.body_len == flen(&files[0]) &&
				 !memcmp(r.body, files[0].text, r.body_len), "HTTP/1.0 body");
		EXPECT(ht_wait_close(c, 10000, &extra) && extra == 0,
		       "HTTP/1.0 '%.20s...': the server must close after the response (%zu extra bytes)",
		       reqs[i], extra);
		ht_resp_free(&r);
		ht_close(c);
	}
	/* Connection: keep-alive asks to keep it, as nginx does: the answer
	 * says so, and the next request is served on it. */
	{
		struct ht_conn *c = ht_connect(srv.port);
		struct ht_resp r;
		size_t extra = 0;

		ht_sends(c, "GET /index.html HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
			    "GET /index.html HTTP/1.0\r\n\r\n");
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 200 &&
			 ht_hdr_has_token(&r, "Connection", "keep-alive"),
			 "HTTP/1.0 keep-alive: 200 with Connection: keep-alive");
		ht_resp_free(&r);
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == flen(&files[0]),
			 "HTTP/1.0 keep-alive: the next request served");
		ht_resp_free(&r);
		EXPECT(ht_wait_close(c, 10000, &extra) && extra == 0,
		       "HTTP/1.0 without keep-alive: closed after (%zu extra bytes)", extra);
		ht_close(c);
	}
}

static void expect_400(const char *req, const char *what)
{
	struct ht_resp r;
	ht_request(srv.port, req, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 400, "%s: 400 expected", what);
	ht_resp_free(&r);
}

static void expect_alive(const char *after)
{
	struct ht_resp r;
	EXPECT(ht_alive(&srv), "server died after %s", after);
	if (!ht_alive(&srv))
		exit(ht_finish());
	ht_get(srv.port, "/plain.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "server still serves after %s", after);
	ht_resp_free(&r);
}

static void t_errors(void)
{
	struct ht_resp r;

	ht_get(srv.port, "/no-such-file.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 404, "missing file: 404");
	ht_resp_free(&r);
	ht_get(srv.port, "/no/such/dir/file.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 404, "missing directory: 404");
	ht_resp_free(&r);
	ht_get(srv.port, "/index.html/x", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && (r.status == 404 || r.status == 400 || r.status == 403),
		 "a file used as a directory: 404");
	ht_resp_free(&r);

	expect_400("GET /index.html HTTP/1.1\r\n\r\n", "HTTP/1.1 without Host");
	expect_400("GET /index.html HTTP/1.1\r\nUser-Agent: x\r\n\r\n", "HTTP/1.1 without Host");
	expect_400("\x01\x02\x03 garbage \xff\xfe\r\n\r\n", "binary garbage");
	expect_400("hello\r\n\r\n", "one word");
	expect_400("GET\r\n\r\n", "method only");
	expect_400("GET /index.html FOO/1.1\r\nHost: t\r\n\r\n", "bad protocol name");
	expect_400("GET index.html HTTP/1.1\r\nHost: t\r\n\r\n", "target without a leading slash");
	expect_400("GET /index.html HTTP/1.1\r\nHost t\r\n\r\n", "header line without a colon");
	expect_400("GET /index.html HTTP/1.1\r\nHost: t\r\n: empty-name\r\n\r\n", "empty header name");
	expect_alive("garbage requests");

	/* a 404 on a keep-alive connection is framed: the next request works */
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp a, b;
	ht_sends(c, "GET /nope HTTP/1.1\r\nHost: t\r\n\r\nGET /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &a, 0);
	EXPECT_R(&a, a.rc == HT_OK && a.status == 404, "404 (with Content-Length or close)");
	if (ht_read(c, &b, 0) != HT_ECLOSED || b.head)
		EXPECT_R(&b, b.rc == HT_OK && b.status == 200 && b.body_len == flen(&files[4]),
			 "GET after a 404 on the same connection");
	ht_resp_free(&a);
	ht_resp_free(&b);
	ht_close(c);
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
};

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
	/* HTTP/1.0 has no transfer codings: its framing is faulty (6.1) */
	expect_status("GET /plain.txt HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		      400, "Transfer-Encoding in HTTP/1.0");
	expect_status("FOO /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 501, "an unknown method");
	expect_status("G@T /plain.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400, "a method that is no token");
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
	expect_alive("the RFC cases");
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
	expect_alive("a 9 KB head");

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
	expect_alive("12 KB of headers");

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
	expect_alive("an endless header");
	free(pad);
}

static void t_escapes(void)
{
	struct ht_resp r;

	ht_get(srv.port, "/sp%20ace.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && ht_body_has(&r, "space in the name"),
		 "%%20 decodes to a space");
	ht_resp_free(&r);
	ht_get(srv.port, "/%69ndex.%68tml", NULL, &r);	/* %69 = i, %68 = h */
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && ht_body_has(&r, "hello"),
		 "percent-encoded plain letters decode");
	ht_resp_free(&r);
	ht_get(srv.port, "/./index.html", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && ht_body_has(&r, "hello"), "/./index.html");
	ht_resp_free(&r);
}

int main(void)
{
	ht_init("httpd/test_protocol", 170);
	setup();
	ht_start(&srv, root, NULL);
	RUN(t_get_headers);
	RUN(t_head);
	RUN(t_methods);
	RUN(t_keepalive);
	RUN(t_pipeline);
	RUN(t_http10);
	RUN(t_errors);
	RUN(t_rfc);
	RUN(t_big_head);
	RUN(t_escapes);
	ht_stop(&srv);
	return ht_finish();
}
