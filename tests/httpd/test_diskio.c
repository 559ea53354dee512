/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd's three --disk-io modes (laio, blocking, threads), each
 * spelled a different way on the command line, pass the same core
 * checks: GET small and 5 MiB files, HEAD, single and multipart ranges,
 * 416, 304 by ETag and by date, 404, and a tiny open-file cache (--cache
 * 1) evicting a file that is still being sent.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client.h"

#define BIG (5 * 1024 * 1024)
#define NF 6
static struct ht_server srv;
static char *root;
static unsigned char *big, *f[NF];
static size_t fsz[NF];
static const char *mode;

static void setup(void)
{
	char n[32];
	root = ht_mkdir("root");
	big = ht_random(BIG, 21);
	ht_put(root, "big.bin", big, BIG);
	for (int i = 0; i < NF; i++) {
		fsz[i] = (size_t)(1000 + 3000 * i);
		f[i] = ht_random(fsz[i], 30 + i);
		snprintf(n, sizeof(n), "f%d.bin", i);
		ht_put(root, n, f[i], fsz[i]);
	}
	ht_put(root, "index.html", "<p>index</p>\n", 13);
}

static int get_ok(const char *path, const unsigned char *d, size_t n, const char *extra)
{
	struct ht_resp r;
	int ok;
	ht_get(srv.port, path, extra, &r);
	ok = r.rc == HT_OK && r.status == 200 && r.body_len == n && !memcmp(r.body, d, n);
	EXPECT_R(&r, ok, "--disk-io %s: GET %s: 200 with %zu exact bytes", mode, path, n);
	ht_resp_free(&r);
	return ok;
}

static void core(void)
{
	struct ht_resp r;
	struct ht_part p[2];
	char h[512];

	get_ok("/f0.bin", f[0], fsz[0], NULL);
	get_ok("/big.bin", big, BIG, NULL);
	get_ok("/", (const unsigned char *)"<p>index</p>\n", 13, NULL);

	ht_request(srv.port, "HEAD /big.bin HTTP/1.1\r\nHost: t\r\n\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.clen == BIG, "--disk-io %s: HEAD", mode);
	ht_resp_free(&r);

	ht_get(srv.port, "/big.bin", "Range: bytes=4000000-4000099\r\n", &r);
	int n = r.status == 206 ? ht_check_206(&r, big, BIG, p, 1) : -1;
	EXPECT_R(&r, n == 1 && p[0].first == 4000000 && p[0].last == 4000099,
		 "--disk-io %s: Range 4000000-4000099", mode);
	ht_resp_free(&r);
	ht_get(srv.port, "/big.bin", "Range: bytes=-10\r\n", &r);
	n = r.status == 206 ? ht_check_206(&r, big, BIG, p, 1) : -1;
	EXPECT_R(&r, n == 1 && p[0].first == BIG - 10, "--disk-io %s: Range -10", mode);
	ht_resp_free(&r);
	ht_get(srv.port, "/big.bin", "Range: bytes=0-9,5000000-\r\n", &r);
	n = r.status == 206 ? ht_check_206(&r, big, BIG, p, 2) : -1;
	EXPECT_R(&r, n == 2 && p[1].first == 5000000 && p[1].last == BIG - 1,
		 "--disk-io %s: two ranges (multipart)", mode);
	ht_resp_free(&r);
	ht_get(srv.port, "/big.bin", "Range: bytes=6000000-\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 416 && ht_hdr(&r, "Content-Range") &&
		 !strcmp(ht_hdr(&r, "Content-Range"), "bytes */5242880"), "--disk-io %s: 416", mode);
	ht_resp_free(&r);

	ht_get(srv.port, "/f1.bin", NULL, &r);
	FATAL(r.rc == HT_OK && ht_hdr(&r, "ETag") && ht_hdr(&r, "Last-Modified"), "validators");
	snprintf(h, sizeof(h), "If-None-Match: %s\r\n", ht_hdr(&r, "ETag"));
	struct ht_resp c;
	ht_get(srv.port, "/f1.bin", h, &c);
	EXPECT_R(&c, c.rc == HT_OK && c.status == 304 && c.body_len == 0,
		 "--disk-io %s: If-None-Match: 304", mode);
	ht_resp_free(&c);
	snprintf(h, sizeof(h), "If-Modified-Since: %s\r\n", ht_hdr(&r, "Last-Modified"));
	ht_get(srv.port, "/f1.bin", h, &c);
	EXPECT_R(&c, c.rc == HT_OK && c.status == 304, "--disk-io %s: If-Modified-Since: 304", mode);
	ht_resp_free(&c);
	ht_resp_free(&r);

	ht_get(srv.port, "/nope.bin", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 404, "--disk-io %s: 404", mode);
	ht_resp_free(&r);
}

/* With --cache 1, other files evict big.bin while it is being sent:
 * the response in flight must not lose its file. */
static void eviction(void)
{
	struct ht_conn *c = ht_connect_opt(srv.port, 65536);
	struct ht_resp r;

	ht_sends(c, "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read_head(c, &r, 0);
	ht_read_body(c, &r, 512 * 1024);
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < NF; i++) {
			char path[32];
			snprintf(path, sizeof(path), "/f%d.bin", i);
			get_ok(path, f[i], fsz[i], NULL);
		}
	ht_read_body(c, &r, (size_t)-1);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == BIG && !memcmp(r.body, big, BIG),
		 "--disk-io %s --cache 1: big.bin evicted from the cache mid-send: exact body expected", mode);
	ht_resp_free(&r);
	ht_close(c);
	/* many files through one entry, in a pipeline */
	c = ht_connect(srv.port);
	for (int i = 0; i < 3 * NF; i++)
		ht_sendf(c, "GET /f%d.bin HTTP/1.1\r\nHost: t\r\n\r\n", i % NF);
	for (int i = 0; i < 3 * NF; i++) {
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == fsz[i % NF] &&
			 !memcmp(r.body, f[i % NF], fsz[i % NF]), "--disk-io %s --cache 1: pipelined GET %d",
			 mode, i);
		ht_resp_free(&r);
	}
	ht_close(c);
}

int main(void)
{
	static const char *const spell[][3] = {
		{ "laio", "-d", "laio" },
		{ "blocking", "--disk-io=blocking", NULL },
		{ "threads", "--disk-io", "threads" },
	};
	ht_init("httpd/test_diskio", 170);
	setup();
	for (int i = 0; i < 3; i++) {
		const char *o[6] = { spell[i][1], spell[i][2] };
		mode = spell[i][0];
		fprintf(stderr, "  --disk-io %s ...\n", mode);
		ht_startv(&srv, root, o);
		core();
		ht_stop(&srv);
		int k = spell[i][2] ? 2 : 1;
		o[k] = "--cache";
		o[k + 1] = "1";
		fprintf(stderr, "  --disk-io %s --cache 1 ...\n", mode);
		ht_startv(&srv, root, o);
		core();
		eviction();
		ht_stop(&srv);
	}
	return ht_finish();
}
