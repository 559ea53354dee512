/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd protocol basics: GET/HEAD and their headers (Content-Length,
 * Last-Modified, strong ETag, Accept-Ranges, Content-Type from
 * /etc/mime.types, Date), 405 with Allow, keep-alive, pipelining,
 * HTTP/1.0 and Connection: close, Host required in 1.1, 400 for garbage,
 * percent-decoded paths. What the RFCs refuse: test_refusals.c.
 */
#define _GNU_SOURCE
#include <string.h>
#include <strings.h>
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
	/* ... and "close" beside it wins (RFC 9112 9.6; llhttp looks at
	 * "close" only in 1.1), on one line or two */
	static const char *both[] = { "Connection: keep-alive, close\r\n",
				      "Connection: keep-alive\r\nConnection: close\r\n" };
	for (size_t i = 0; i < 2; i++) {
		struct ht_conn *c = ht_connect(srv.port);
		struct ht_resp r;
		size_t extra = 0;

		ht_sendf(c, "GET /index.html HTTP/1.0\r\n%s\r\n", both[i]);
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 200 &&
			 !ht_hdr_has_token(&r, "Connection", "keep-alive"),
			 "HTTP/1.0 with keep-alive and close: 200, not kept alive");
		EXPECT(ht_wait_close(c, 10000, &extra) && extra == 0,
		       "HTTP/1.0 with keep-alive and close: closed after (%zu extra bytes)", extra);
		ht_resp_free(&r);
		ht_close(c);
	}
}

/* A HEAD refused before its head ends gets no body either (RFC 9110
 * 9.3.2): a bad header line (400), one over the head's size (431), a
 * target over it (414). */
static void t_head_refused(void)
{
	static char big[9000];
	char *reqs[3];

	memset(big, 'a', sizeof(big) - 1);
	reqs[0] = strdup("HEAD /noext HTTP/1.1\r\nHost: x\r\nX\001: y\r\n\r\n");
	if (asprintf(&reqs[1], "HEAD /noext HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", big) < 0 ||
	    asprintf(&reqs[2], "HEAD /%s HTTP/1.1\r\nHost: x\r\n\r\n", big) < 0)
		FATAL(0, "asprintf");
	for (int i = 0; i < 3; i++) {
		struct ht_conn *c = ht_connect(srv.port);
		struct ht_resp r;
		size_t extra = 0;

		ht_sends(c, reqs[i]);
		ht_read(c, &r, 1);
		EXPECT_R(&r, r.rc == HT_OK && r.status >= 400, "refused HEAD: an error status");
		EXPECT(ht_wait_close(c, 10000, &extra) && extra == 0,
		       "refused HEAD (%d): %zu body bytes after the head", r.status, extra);
		ht_resp_free(&r);
		ht_close(c);
		free(reqs[i]);
	}
}

/* An https target cannot be this plain connection's (RFC 9110 7.4): 421. */
static void t_https_target(void)
{
	struct ht_resp r;

	ht_request(srv.port, "GET https://t/index.html HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 421, "https:// absolute-form: 421 expected");
	ht_resp_free(&r);
	ht_request(srv.port, "GET http://t/index.html HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "http:// absolute-form: 200 expected");
	ht_resp_free(&r);
}

static void expect_400(const char *req, const char *what)
{
	struct ht_resp r;
	ht_request(srv.port, req, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 400, "%s: 400 expected", what);
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
	ht_expect_serving(&srv, "/plain.txt", "garbage requests");

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
	RUN(t_head_refused);
	RUN(t_https_target);
	RUN(t_errors);
	RUN(t_escapes);
	ht_stop(&srv);
	return ht_finish();
}
