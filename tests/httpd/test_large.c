/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd with large files (5 MiB, 64 MiB of random bytes): exact
 * bodies, ranges deep inside, several at once, pipelined; clients that
 * go away mid-body; a file unlinked or truncated while it is being sent
 * (the server keeps serving; a truncated file ends its response early,
 * and never with bytes that were not in the file).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

#define MiB (1024 * 1024)
#define S5 (5 * MiB)
#define S64 (64 * MiB)
static struct ht_server srv;
static char *root;
static unsigned char *d5, *d64;
static const char small[] = "small\n";

static void setup(void)
{
	root = ht_mkdir("root");
	d5 = ht_random(S5, 5);
	d64 = ht_random(S64, 64);
	ht_put(root, "big5.bin", d5, S5);
	ht_put(root, "big64.bin", d64, S64);
	ht_put(root, "small.txt", small, strlen(small));
}

static void small_ok(const char *after)
{
	struct ht_resp r;
	EXPECT(ht_alive(&srv), "server died after %s", after);
	if (!ht_alive(&srv))
		exit(ht_finish());
	ht_get(srv.port, "/small.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == strlen(small),
		 "GET /small.txt after %s", after);
	ht_resp_free(&r);
}

static void whole(const char *path, const unsigned char *d, size_t n)
{
	struct ht_resp r;
	ht_get(srv.port, path, NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.clen == (long long)n &&
		 r.body_len == n && !memcmp(r.body, d, n), "GET %s: %zu exact bytes expected", path, n);
	ht_resp_free(&r);
	char req[128];
	snprintf(req, sizeof(req), "HEAD %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
	ht_request(srv.port, req, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.clen == (long long)n,
		 "HEAD %s: Content-Length %zu expected", path, n);
	ht_resp_free(&r);
}

static void t_whole(void)
{
	whole("/big5.bin", d5, S5);
	whole("/big64.bin", d64, S64);
}

static void one_range(const char *spec, long long f, long long l)
{
	struct ht_resp r;
	struct ht_part p[1];
	char h[128];
	snprintf(h, sizeof(h), "Range: %s\r\n", spec);
	ht_get(srv.port, "/big64.bin", h, &r);
	int n = r.status == 206 ? ht_check_206(&r, d64, S64, p, 1) : -1;
	EXPECT_R(&r, n == 1 && p[0].first == f && p[0].last == l,
		 "64 MiB file, Range: %s: 206 with bytes %lld-%lld expected", spec, f, l);
	ht_resp_free(&r);
}

static void t_ranges(void)
{
	one_range("bytes=33554432-33654431", 33554432, 33654431);
	one_range("bytes=-1000000", S64 - 1000000, S64 - 1);
	one_range("bytes=60000000-", 60000000, S64 - 1);
	one_range("bytes=1-67108862", 1, S64 - 2);
	one_range("bytes=67108863-99999999", S64 - 1, S64 - 1);

	struct ht_resp r;
	struct ht_part p[3];
	ht_get(srv.port, "/big64.bin", "Range: bytes=0-99,40000000-40999999,67000000-67000099\r\n", &r);
	int n = r.status == 206 ? ht_check_206(&r, d64, S64, p, 3) : -1;
	EXPECT_R(&r, n == 3 && p[1].first == 40000000 && p[1].last == 40999999,
		 "64 MiB file, three ranges: multipart with 3 exact parts expected");
	ht_resp_free(&r);
}

static void t_pipelined(void)
{
	struct ht_conn *c = ht_connect(srv.port);
	ht_sends(c, "GET /big5.bin HTTP/1.1\r\nHost: t\r\n\r\n"
		    "GET /big5.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=1000000-\r\n\r\n"
		    "GET /big5.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	for (int i = 0; i < 3; i++) {
		struct ht_resp r;
		ht_read(c, &r, 0);
		if (i == 1)
			EXPECT_R(&r, r.rc == HT_OK && r.status == 206 && r.body_len == S5 - 1000000 &&
				 !memcmp(r.body, d5 + 1000000, r.body_len), "pipelined 5 MiB #2 (range)");
		else
			EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == S5 &&
				 !memcmp(r.body, d5, S5), "pipelined 5 MiB #%d", i + 1);
		ht_resp_free(&r);
	}
	ht_close(c);
}

struct dl { int ok; char why[400]; };

static void *download(void *arg)
{
	struct dl *d = arg;
	struct ht_conn *c = ht_connect_opt(srv.port, 0);
	struct ht_resp r;

	if (!c) {
		snprintf(d->why, sizeof(d->why), "connect failed");
		return NULL;
	}
	ht_sends(c, "GET /big64.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &r, 0);
	d->ok = r.rc == HT_OK && r.status == 200 && r.body_len == S64 && !memcmp(r.body, d64, S64);
	snprintf(d->why, sizeof(d->why), "status %d, rc %d, %zu bytes %s", r.status, r.rc, r.body_len,
		 r.why);
	ht_resp_free(&r);
	ht_close(c);
	return NULL;
}

static void t_concurrent(void)
{
	pthread_t t[4];
	struct dl d[4] = { 0 };
	for (int i = 0; i < 4; i++)
		FATAL(pthread_create(&t[i], NULL, download, &d[i]) == 0, "pthread_create");
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT(d[i].ok, "concurrent 64 MiB download %d of 4: %s", i + 1, d[i].why);
	}
}

/* Reads the head and the first `upto` body bytes of path. */
static struct ht_conn *start_download(const char *path, size_t upto, int rcvbuf, struct ht_resp *r)
{
	struct ht_conn *c = ht_connect_opt(srv.port, rcvbuf);
	FATAL(c, "connect");
	ht_sendf(c, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
	ht_read_head(c, r, 0);
	FATAL(r->rc == HT_OK && r->status == 200, "GET %s: 200 needed (status %d, rc %d)", path,
	      r->status, r->rc);
	ht_read_body(c, r, upto);
	FATAL(r->rc == HT_OK && r->body_len == upto, "GET %s: first %zu bytes needed", path, upto);
	return c;
}

static void t_disconnect(void)
{
	for (int i = 0; i < 12; i++) {
		struct ht_resp r;
		struct ht_conn *c = start_download(i & 1 ? "/big64.bin" : "/big5.bin", MiB,
						   i % 3 ? 0 : 65536, &r);
		EXPECT(!memcmp(r.body, i & 1 ? d64 : d5, MiB), "first MiB differs");
		if (i & 2)
			ht_abort(c);	/* RST */
		else
			ht_close(c);	/* FIN with unread data: RST as well */
		ht_resp_free(&r);
	}
	/* half-close: the client sends its request then shuts down writing;
	 * the response must still come */
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp r;
	ht_sends(c, "GET /big5.bin HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
	shutdown(c->fd, SHUT_WR);
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == S5 && !memcmp(r.body, d5, S5),
		 "request then shutdown(SHUT_WR): the whole response expected");
	ht_resp_free(&r);
	ht_close(c);
	small_ok("12 clients that left mid-body");
	whole("/big5.bin", d5, S5);
}

static void t_unlink(void)
{
	char *p = ht_join(root, "victim.bin");
	struct ht_resp r;
	ht_write(p, d64, S64);
	struct ht_conn *c = start_download("/victim.bin", MiB, 65536, &r);
	FATAL(unlink(p) == 0, "unlink");
	ht_read_body(c, &r, (size_t)-1);
	EXPECT_R(&r, r.rc == HT_OK || r.rc == HT_EBODY, "file unlinked mid-body: the response must "
		 "complete or the connection end (not hang)");
	EXPECT_R(&r, r.body_len <= S64 && !memcmp(r.body, d64, r.body_len),
		 "file unlinked mid-body: bytes that were not in the file were sent");
	fprintf(stderr, "    unlinked mid-body: %zu of %d bytes\n", r.body_len, S64);
	ht_resp_free(&r);
	ht_close(c);
	small_ok("a file unlinked mid-body");
	/* an open-file cache may trust what it knows for a moment (3 s here) */
	for (int i = 0; i < 15; i++) {
		ht_get(srv.port, "/victim.bin", NULL, &r);
		int ok = r.rc == HT_OK && r.status == 404;
		if (ok || i == 14)
			EXPECT_R(&r, ok, "the unlinked file, 3 s later: 404");
		ht_resp_free(&r);
		if (ok)
			break;
		usleep(200000);
	}
	free(p);
}

static void t_truncate(void)
{
	char *p = ht_join(root, "victim2.bin");
	struct ht_resp r;
	ht_write(p, d64, S64);
	struct ht_conn *c = start_download("/victim2.bin", MiB, 65536, &r);
	FATAL(truncate(p, 2 * MiB) == 0, "truncate");
	ht_read_body(c, &r, (size_t)-1);
	EXPECT_R(&r, r.rc == HT_EBODY && r.body_len < S64,
		 "file truncated from 64 MiB to 2 MiB mid-body: the connection must end before "
		 "Content-Length (got %zu of %d bytes)", r.body_len, S64);
	EXPECT_R(&r, !memcmp(r.body, d64, r.body_len),
		 "file truncated mid-body: bytes that were never in the file were sent (%zu bytes)",
		 r.body_len);
	fprintf(stderr, "    truncated mid-body: %zu of %d bytes\n", r.body_len, S64);
	ht_resp_free(&r);
	ht_close(c);
	small_ok("a file truncated mid-body");
	for (int i = 0; i < 15; i++) {	/* as above: a cache may lag */
		ht_get(srv.port, "/victim2.bin", NULL, &r);
		int ok = r.rc == HT_OK && r.status == 200 && r.body_len == 2 * MiB &&
			 !memcmp(r.body, d64, 2 * MiB);
		if (!ok)
			EXPECT_R(&r, r.rc == HT_OK || (r.rc == HT_EBODY && !memcmp(r.body, d64, r.body_len)),
				 "the truncated file afterwards: never bytes that are not in it");
		if (ok || i == 14)
			EXPECT_R(&r, ok, "the truncated file, 3 s later: 200 with its 2 MiB");
		ht_resp_free(&r);
		if (ok)
			break;
		usleep(200000);
	}

	/* truncated to nothing while a ranged read is going (another name:
	 * a cache may still know victim2.bin's 2 MiB) */
	free(p);
	p = ht_join(root, "victim3.bin");
	ht_write(p, d64, S64);
	struct ht_resp q;
	c = ht_connect_opt(srv.port, 65536);
	ht_sends(c, "GET /victim3.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=10000000-\r\n\r\n");
	ht_read_head(c, &q, 0);
	EXPECT_R(&q, q.rc == HT_OK && q.status == 206, "Range 10000000- of 64 MiB: 206");
	ht_read_body(c, &q, MiB);
	FATAL(truncate(p, 0) == 0, "truncate");
	ht_read_body(c, &q, (size_t)-1);
	EXPECT_R(&q, q.rc == HT_EBODY && !memcmp(q.body, d64 + 10000000, q.body_len),
		 "ranged read of a file truncated to 0: early end, only the file's bytes");
	ht_resp_free(&q);
	ht_close(c);
	small_ok("a file truncated to 0 during a range");
	free(p);
}

int main(void)
{
	ht_init("httpd/test_large", 850);
	setup();
	ht_start(&srv, root, NULL);
	RUN(t_whole);
	RUN(t_ranges);
	RUN(t_pipelined);
	RUN(t_concurrent);
	RUN(t_disconnect);
	RUN(t_unlink);
	RUN(t_truncate);
	ht_stop(&srv);
	/* the other file back ends with the big files */
	static const char *modes[] = { "blocking", "threads" };
	for (int i = 0; i < 2; i++) {
		fprintf(stderr, "  --disk-io %s ...\n", modes[i]);
		ht_start(&srv, root, "--disk-io", modes[i], NULL);
		t_whole();
		t_concurrent();
		t_disconnect();
		t_truncate();
		ht_stop(&srv);
	}
	return ht_finish();
}
