/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd byte ranges: single ranges (first-last, suffix, open, end
 * past EOF), multipart/byteranges (parsed part by part), 416 with
 * Content-Range: bytes * /SIZE, malformed Range ignored, If-Range with
 * the ETag, the date, a stale or weak tag. Every response is followed by
 * another request on the same connection, so a wrong Content-Length shows.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"

#define SIZE 10000
static struct ht_server srv;
static char *root;
static unsigned char *data;
static const char small[] = "small file\n";
static char etag[256], lastmod[64];

static void setup(void)
{
	root = ht_mkdir("root");
	data = ht_random(SIZE, 7);
	ht_put(root, "data.bin", data, SIZE);
	ht_put(root, "small.txt", small, strlen(small));
	ht_put(root, "empty.bin", "", 0);
}

/* GET (or HEAD) path with hdrs, then GET /small.txt on the same
 * connection (checks the framing of the first response). */
static void req(const char *method, const char *path, const char *hdrs, struct ht_resp *r)
{
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp n;

	ht_sendf(c, "%s %s HTTP/1.1\r\nHost: t\r\n%s\r\nGET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n",
		 method, path, hdrs);
	ht_read(c, r, !strcmp(method, "HEAD"));
	if (r->rc == HT_OK) {
		ht_read(c, &n, 0);
		if (n.rc != HT_ECLOSED || n.head)
			EXPECT_R(&n, n.rc == HT_OK && n.status == 200 && n.body_len == strlen(small),
				 "the request after '%s %s' + '%.60s' on the same connection "
				 "(was the first response's length right?)", method, path, hdrs);
		ht_resp_free(&n);
	}
	ht_close(c);
}

static void range(const char *spec, long long first, long long last)
{
	struct ht_resp r;
	struct ht_part p[1];
	char h[256];

	snprintf(h, sizeof(h), "Range: %s\r\n", spec);
	req("GET", "/data.bin", h, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206, "Range: %s: 206 expected", spec);
	if (r.status == 206) {
		int n = ht_check_206(&r, data, SIZE, p, 1);
		EXPECT_R(&r, n == 1, "Range: %s: one valid part expected", spec);
		EXPECT_R(&r, n != 1 || (p[0].first == first && p[0].last == last),
			 "Range: %s: Content-Range bytes %lld-%lld/%d expected", spec, first, last, SIZE);
		EXPECT_R(&r, r.clen == last - first + 1, "Range: %s: Content-Length %lld expected",
			 spec, last - first + 1);
		EXPECT_R(&r, ht_hdr(&r, "ETag") && ht_hdr(&r, "Last-Modified"),
			 "Range: %s: 206 without ETag/Last-Modified", spec);
	}
	ht_resp_free(&r);
}

static void t_single(void)
{
	range("bytes=0-99", 0, 99);
	range("bytes=-100", SIZE - 100, SIZE - 1);
	range("bytes=100-", 100, SIZE - 1);
	range("bytes=9990-20000", 9990, SIZE - 1);
	range("bytes=0-0", 0, 0);
	range("bytes=9999-9999", 9999, 9999);
	range("bytes=-1", 9999, 9999);
	range("bytes=-20000", 0, SIZE - 1);
	range("bytes=0-9999", 0, SIZE - 1);
	range("bytes=1234-5678", 1234, 5678);
	/* header names are case-insensitive */
	struct ht_resp r;
	req("GET", "/data.bin", "range: bytes=10-19\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206 && r.body_len == 10 && !memcmp(r.body, data + 10, 10),
		 "lower-case 'range:' header: 206 expected");
	ht_resp_free(&r);
}

static void multi(const char *spec, int nparts, const long long (*want)[2])
{
	struct ht_resp r;
	struct ht_part p[8];
	char h[256], m[64];

	snprintf(h, sizeof(h), "Range: %s\r\n", spec);
	req("GET", "/data.bin", h, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206, "Range: %s: 206 expected", spec);
	if (r.status != 206) {
		ht_resp_free(&r);
		return;
	}
	EXPECT_R(&r, !strcmp(ht_mime(&r, m, sizeof(m)), "multipart/byteranges"),
		 "Range: %s: multipart/byteranges expected", spec);
	int n = ht_check_206(&r, data, SIZE, p, 8);
	EXPECT_R(&r, n == nparts, "Range: %s: %d valid parts expected (got %d)", spec, nparts, n);
	for (int i = 0; i < n && i < nparts; i++) {
		EXPECT_R(&r, p[i].first == want[i][0] && p[i].last == want[i][1],
			 "Range: %s: part %d should be bytes %lld-%lld, is %lld-%lld", spec, i + 1,
			 want[i][0], want[i][1], p[i].first, p[i].last);
		EXPECT_R(&r, strstr(p[i].ctype, "application/octet-stream") != NULL,
			 "Range: %s: part %d Content-Type '%s' (application/octet-stream expected)",
			 spec, i + 1, p[i].ctype);
	}
	ht_resp_free(&r);
}

static void t_multi(void)
{
	static const long long a[][2] = { { 0, 9 }, { 20, 29 } };
	static const long long b[][2] = { { 0, 0 }, { 9999, 9999 }, { 5000, 5009 } };
	static const long long c[][2] = { { 100, 199 }, { 9000, 9999 } };
	multi("bytes=0-9,20-29", 2, a);
	multi("bytes=0-9, 20-29", 2, a);
	multi("bytes=0-0,-1,5000-5009", 3, b);
	multi("bytes=100-199,9000-", 2, c);

	/* the boundary is not to be foreseen (a file could hold it): two
	 * answers to one request have different ones */
	struct ht_resp r, r2;
	req("GET", "/data.bin", "Range: bytes=0-9,20-29\r\n", &r);
	req("GET", "/data.bin", "Range: bytes=0-9,20-29\r\n", &r2);
	const char *t1 = ht_hdr(&r, "Content-Type"), *t2 = ht_hdr(&r2, "Content-Type");
	EXPECT_R(&r2, t1 && t2 && strstr(t1, "boundary=") && strcmp(t1, t2),
		 "one multipart request twice: the same boundary (%s)", t1 ? t1 : "none");
	ht_resp_free(&r);
	ht_resp_free(&r2);

	/* overlapping ranges: merged or not, every part must be right */
	req("GET", "/data.bin", "Range: bytes=0-9,5-14\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206 && ht_check_206(&r, data, SIZE, NULL, 0) > 0,
		 "overlapping ranges: a valid 206 expected");
	ht_resp_free(&r);
	/* one satisfiable range and one past the end: just the first */
	struct ht_part p[2];
	req("GET", "/data.bin", "Range: bytes=0-9,20000-\r\n", &r);
	int n = r.status == 206 ? ht_check_206(&r, data, SIZE, p, 2) : -1;
	EXPECT_R(&r, n == 1 && p[0].first == 0 && p[0].last == 9,
		 "Range 0-9,20000-: 206 with bytes 0-9 only expected");
	ht_resp_free(&r);
}

static void unsat(const char *path, const char *spec, long long size)
{
	struct ht_resp r;
	char h[256], want[64];

	snprintf(h, sizeof(h), "Range: %s\r\n", spec);
	snprintf(want, sizeof(want), "bytes */%lld", size);
	req("GET", path, h, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 416, "%s Range: %s: 416 expected", path, spec);
	EXPECT_R(&r, r.status != 416 || (ht_hdr(&r, "Content-Range") &&
					 !strcmp(ht_hdr(&r, "Content-Range"), want)),
		 "%s Range: %s: Content-Range: %s expected", path, spec, want);
	ht_resp_free(&r);
}

static void t_unsatisfiable(void)
{
	unsat("/data.bin", "bytes=10000-", SIZE);
	unsat("/data.bin", "bytes=20000-30000", SIZE);
	unsat("/data.bin", "bytes=10000-10000,20000-", SIZE);
	/* an empty file has no satisfiable range: 416, or the whole (empty) file */
	struct ht_resp r;
	req("GET", "/empty.bin", "Range: bytes=0-0\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && ((r.status == 416 && ht_hdr(&r, "Content-Range") &&
					!strcmp(ht_hdr(&r, "Content-Range"), "bytes */0")) ||
				       (r.status == 200 && r.body_len == 0)),
		 "empty file, Range 0-0: 416 with bytes */0 (or 200 empty) expected");
	ht_resp_free(&r);
	/* a suffix of an empty file is all of it, nothing (RFC 9110 14.1.1) */
	req("GET", "/empty.bin", "Range: bytes=-5\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == 0 && r.clen == 0,
		 "empty file, Range -5: 200 with Content-Length 0 expected");
	ht_resp_free(&r);
	req("GET", "/missing.bin", "Range: bytes=0-9\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 404, "Range on a missing file: 404");
	ht_resp_free(&r);
}

static void full(const char *hdrs, const char *what, int also416)
{
	struct ht_resp r;
	req("GET", "/data.bin", hdrs, &r);
	if (also416 && r.status == 416)
		EXPECT_R(&r, r.rc == HT_OK, "%s", what);
	else
		EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == SIZE &&
			 !memcmp(r.body, data, SIZE), "%s: 200 with the whole file expected", what);
	ht_resp_free(&r);
}

static void t_malformed(void)
{
	full("Range: items=0-1\r\n", "Range: items=0-1", 0);
	/* more bytes than the file holds: the file once, not three times */
	full("Range: bytes=0-,0-,0-\r\n", "Range: bytes=0-,0-,0- (overlapping, over the size)", 0);
	full("Range: bytes=abc\r\n", "Range: bytes=abc", 0);
	full("Range: bytes=\r\n", "Range: bytes=", 0);
	full("Range: bytes=-\r\n", "Range: bytes=-", 0);
	full("Range: bytes=1-2-3\r\n", "Range: bytes=1-2-3", 0);
	full("Range: bytes=--5\r\n", "Range: bytes=--5", 0);
	full("Range: bytes 0-1\r\n", "Range: bytes 0-1 (no '=')", 0);
	full("Range: bytes=0x10-20\r\n", "Range: bytes=0x10-20", 0);
	full("Range: bytes=5-2\r\n", "Range: bytes=5-2 (last < first; 200 or 416)", 1);
	full("Range: bytes=-0\r\n", "Range: bytes=-0 (200 or 416)", 1);
	/* Range is no list: two lines are one invalid value (the first
	 * was served) */
	full("Range: bytes=0-1\r\nRange: bytes=3-4\r\n", "two Range lines", 0);

	/* numbers past any size: a first-pos is unsatisfiable (416, as
	 * nginx), a last-pos or a suffix means to the end of the file */
	struct ht_resp r;
	struct ht_part p[1];
	req("GET", "/data.bin", "Range: bytes=10-99999999999999999999999999\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206 &&
		 ht_check_206(&r, data, SIZE, p, 1) == 1 && p[0].first == 10 && p[0].last == SIZE - 1,
		 "Range with an overflowing last-pos: 206 of bytes 10- expected");
	ht_resp_free(&r);
	unsat("/data.bin", "bytes=99999999999999999999999999-", SIZE);
	unsat("/data.bin", "bytes=18446744073709551615-", SIZE);
	/* numbers that fit are exact: a last-pos below its first-pos, both
	 * near 2^64, is a malformed range, ignored (it was taken for 2^64 - 1
	 * twice: 416) */
	full("Range: bytes=18446744073709551615-18446744073709551613\r\n",
	     "a last-pos below its first-pos near 2^64", 0);
	req("GET", "/data.bin", "Range: bytes=-99999999999999999999999999\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206 &&
		 ht_check_206(&r, data, SIZE, p, 1) == 1 && p[0].first == 0 && p[0].last == SIZE - 1,
		 "Range with an overflowing suffix: 206 of the whole file expected");
	ht_resp_free(&r);

	/* 600 ranges: refused or served, never wrong */
	char *h = malloc(8000);
	size_t o = (size_t)sprintf(h, "Range: bytes=0-0");
	for (int i = 1; i < 600; i++)
		o += (size_t)sprintf(h + o, ",%d-%d", i * 10, i * 10);
	strcpy(h + o, "\r\n");
	req("GET", "/data.bin", h, &r);
	EXPECT_R(&r, r.rc == HT_OK && (r.status == 200 || r.status == 416 || r.status == 400 ||
				       (r.status == 206 && ht_check_206(&r, data, SIZE, NULL, 0) > 0)),
		 "600 ranges: 200, 206 (valid), 400 or 416");
	ht_resp_free(&r);
	free(h);
	EXPECT(ht_alive(&srv), "server died on odd Range headers");
}

/* Several ranges of a large file with a long media type (if the
 * system's mime.types names one for .pptx): every part head whole. */
static void t_multipart_long_type(void)
{
	char *f = ht_join(root, "deck.pptx"), want[160];
	struct ht_resp r;
	int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	EXPECT(fd >= 0 && ftruncate(fd, 3000000000LL) == 0, "a sparse 3 GB file");
	close(fd);
	req("GET", "/deck.pptx", "Range: bytes=2000000000-2000000004,2999999990-2999999999\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206, "two ranges: 206");
	snprintf(want, sizeof(want), "Content-Range: bytes 2999999990-2999999999/3000000000\r\n\r\n");
	EXPECT_R(&r, r.status != 206 || ht_body_has(&r, want),
		 "each part's head ends with its blank line (type %s)", ht_hdr(&r, "Content-Type") ?
		 ht_hdr(&r, "Content-Type") : "?");
	ht_resp_free(&r);
	unlink(f);
}

static void t_head_range(void)
{
	struct ht_resp r;
	/* RFC 9110 14.2: Range is defined for GET only, so HEAD ignores it
	 * and describes the whole file (nginx answers 206 here). */
	req("HEAD", "/data.bin", "Range: bytes=0-99\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.clen == SIZE,
		 "HEAD with Range: 200 and the whole file's Content-Length, no body");
	ht_resp_free(&r);
	req("HEAD", "/data.bin", "Range: bytes=999999999-\r\n", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.clen == SIZE,
		 "HEAD with an unsatisfiable Range: 200, not 416");
	ht_resp_free(&r);
}

static void t_if_range(void)
{
	struct ht_resp r;
	char h[512], d[30];
	int ok_date;

	ht_get(srv.port, "/data.bin", NULL, &r);
	FATAL(r.rc == HT_OK && r.status == 200 && ht_hdr(&r, "ETag") && ht_hdr(&r, "Last-Modified"),
	      "GET /data.bin with ETag and Last-Modified needed");
	snprintf(etag, sizeof(etag), "%s", ht_hdr(&r, "ETag"));
	snprintf(lastmod, sizeof(lastmod), "%s", ht_hdr(&r, "Last-Modified"));
	ht_resp_free(&r);

	snprintf(h, sizeof(h), "If-Range: %s\r\nRange: bytes=0-99\r\n", etag);
	req("GET", "/data.bin", h, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 206 && r.body_len == 100 && !memcmp(r.body, data, 100),
		 "If-Range with the current ETag: 206 expected");
	ht_resp_free(&r);
	/* data.bin was written just now: its date may cover two versions
	 * (RFC 9110 8.8.2.2), so it is weak, and a weak If-Range fails */
	FATAL(time(NULL) - ht_parse_date(lastmod) < 50, "data.bin written less than 50 s ago");
	snprintf(h, sizeof(h), "Range: bytes=0-99\r\nIf-Range: %s\r\n", lastmod);
	full(h, "If-Range with the Last-Modified date of a file written this minute", 0);

	full("If-Range: \"stale-tag\"\r\nRange: bytes=0-99\r\n", "If-Range with a stale ETag", 0);
	snprintf(h, sizeof(h), "If-Range: W/%s\r\nRange: bytes=0-99\r\n", etag);
	full(h, "If-Range with W/<etag> (weak never matches in If-Range)", 0);
	ht_fmt_date(ht_parse_date(lastmod) - 1, d);
	snprintf(h, sizeof(h), "If-Range: %s\r\nRange: bytes=0-99\r\n", d);
	full(h, "If-Range with a date other than Last-Modified", 0);
	snprintf(h, sizeof(h), "If-Range: %s\r\n", etag);
	full(h, "If-Range without Range", 0);
	/* given twice: which validator holds? the whole file (it was 400) */
	{
		char h2[640];

		snprintf(h2, sizeof(h2), "If-Range: %s\r\nIf-Range: %s\r\nRange: bytes=0-99\r\n",
			 etag, etag);
		full(h2, "If-Range twice", 0);
	}

	/* A date whose day starts with W is still a date (RFC 9110 13.1.5:
	 * an entity-tag has a '"' in its first three characters). */
	{
		char *w = ht_join(root, "wed.bin");
		struct timespec wts[2] = { { 1445412480, 0 }, { 1445412480, 0 } };	/* a Wednesday */

		ht_write(w, data, SIZE);
		FATAL(utimensat(AT_FDCWD, w, wts, 0) == 0, "utimensat wed.bin");
		req("GET", "/wed.bin", "Range: bytes=0-3\r\nIf-Range: Wed, 21 Oct 2015 07:28:00 GMT \r\n", &r);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 206 && r.body_len == 4,
			 "If-Range: Wed, 21 Oct 2015 07:28:00 GMT (its Last-Modified): 206 expected");
		ht_resp_free(&r);
		/* a minute old and more: the exact date is strong */
		wts[0].tv_sec = wts[1].tv_sec = time(NULL) - 61;
		FATAL(utimensat(AT_FDCWD, w, wts, 0) == 0, "utimensat wed.bin");
		ht_fmt_date(wts[1].tv_sec, d);
		snprintf(h, sizeof(h), "Range: bytes=0-99\r\nIf-Range: %s\r\n", d);
		ok_date = 0;
		for (int i = 0; i < 15 && !ok_date; i++) {	/* the cache may take a moment */
			req("GET", "/wed.bin", h, &r);
			ok_date = r.rc == HT_OK && r.status == 206 && r.body_len == 100;
			if (!ok_date && i == 14)
				EXPECT_R(&r, ok_date, "If-Range with the exact date of a file modified 61 s ago: 206 expected");
			ht_resp_free(&r);
			if (!ok_date)
				usleep(100000);
		}
		free(w);
	}

	/* the file changes: the old tag is stale now */
	unsigned char *d2 = ht_random(SIZE, 99);
	char *p = ht_join(root, "data.bin"), *tmp = ht_join(ht_scratch(), "data.tmp");
	struct timespec ts[2] = { { time(NULL) - 100, 0 }, { time(NULL) - 100, 0 } };
	ht_write(tmp, d2, SIZE);
	FATAL(utimensat(AT_FDCWD, tmp, ts, 0) == 0 && rename(tmp, p) == 0, "replace data.bin");
	snprintf(h, sizeof(h), "If-Range: %s\r\nRange: bytes=0-99\r\n", etag);
	int ok = 0;
	for (int i = 0; i < 15 && !ok; i++) {	/* a cache may take a moment */
		req("GET", "/data.bin", h, &r);
		ok = r.rc == HT_OK && r.status == 200 && r.body_len == SIZE && !memcmp(r.body, d2, SIZE);
		if (!ok && i == 14)
			EXPECT_R(&r, ok, "If-Range with the ETag of the replaced file: 200 with the new file");
		ht_resp_free(&r);
		if (!ok)
			usleep(200000);
	}
	free(d2);
	free(p);
	free(tmp);
}

int main(void)
{
	ht_init("httpd/test_ranges", 170);
	setup();
	ht_start(&srv, root, NULL);
	RUN(t_single);
	RUN(t_multi);
	RUN(t_unsatisfiable);
	RUN(t_malformed);
	RUN(t_head_range);
	RUN(t_multipart_long_type);
	RUN(t_if_range);
	ht_stop(&srv);
	return ht_finish();
}
