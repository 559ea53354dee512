/* SPDX-License-Identifier: MIT */
/* Test client for uaio-httpd (see client.h), the checks: HTTP dates,
 * Content-Range, 206 bodies (single and multipart/byteranges) and the
 * headers every 200 has. */
#define _GNU_SOURCE
#include "client.h"

#include <string.h>
#include <strings.h>
#include <time.h>

/* --- content checks ---------------------------------------------------- */

time_t ht_parse_date(const char *s)
{
	static const char *wd[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	struct tm tm = { 0 }, chk;
	const char *e;
	time_t t;

	if (!s || strlen(s) != 29)
		return -1;
	e = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!e || *e || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
	    s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25] != ' ')
		return -1;
	t = timegm(&tm);
	gmtime_r(&t, &chk);
	if (strncmp(s, wd[chk.tm_wday], 3) || chk.tm_mday != tm.tm_mday)
		return -1;
	return t;
}

void ht_fmt_date(time_t t, char out[30])
{
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 30, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

int ht_parse_crange(const char *v, long long *f, long long *l, long long *t)
{
	int n = 0;
	if (!v || sscanf(v, "bytes %lld-%lld/%lld%n", f, l, t, &n) != 3 || v[n])
		return -1;
	return 0;
}

static int check_part(struct ht_resp *r, struct ht_part *p, const unsigned char *file, size_t size)
{
	if (p->total != (long long)size || p->first < 0 || p->first > p->last ||
	    p->last >= (long long)size) {
		snprintf(r->why, sizeof(r->why), "Content-Range bytes %lld-%lld/%lld for a %zu-byte file",
			 p->first, p->last, p->total, size);
		return -1;
	}
	if (p->len != (size_t)(p->last - p->first + 1)) {
		snprintf(r->why, sizeof(r->why), "part %lld-%lld has %zu bytes", p->first, p->last, p->len);
		return -1;
	}
	if (memcmp(p->data, file + p->first, p->len)) {
		snprintf(r->why, sizeof(r->why), "part %lld-%lld differs from the file", p->first, p->last);
		return -1;
	}
	return 0;
}

int ht_check_206(struct ht_resp *r, const unsigned char *file, size_t size,
		 struct ht_part *parts, int max)
{
	char mime[128], bnd[128], delim[140];
	const char *ct = ht_hdr(r, "Content-Type"), *b, *p, *end;
	int n = 0;

	if (r->status != 206 || r->rc != HT_OK) {
		snprintf(r->why, sizeof(r->why), "not a complete 206");
		return -1;
	}
	if (strcmp(ht_mime(r, mime, sizeof(mime)), "multipart/byteranges")) {
		struct ht_part one = { 0 };
		if (ht_parse_crange(ht_hdr(r, "Content-Range"), &one.first, &one.last, &one.total)) {
			snprintf(r->why, sizeof(r->why), "single-part 206 without a valid Content-Range");
			return -1;
		}
		one.data = (unsigned char *)r->body;
		one.len = r->body_len;
		snprintf(one.ctype, sizeof(one.ctype), "%s", ct ? ct : "");
		if (check_part(r, &one, file, size))
			return -1;
		if (max > 0)
			parts[0] = one;
		return 1;
	}
	if (ht_hdr(r, "Content-Range")) {
		snprintf(r->why, sizeof(r->why), "multipart 206 with a top-level Content-Range");
		return -1;
	}
	b = strcasestr(ct, "boundary=");
	if (!b || sscanf(b + 9, "%127[^; \t]", bnd) != 1) {
		snprintf(r->why, sizeof(r->why), "multipart/byteranges without boundary");
		return -1;
	}
	if (bnd[0] == '"') {	/* quoted-string */
		memmove(bnd, bnd + 1, strlen(bnd));
		if (bnd[0] && bnd[strlen(bnd) - 1] == '"')
			bnd[strlen(bnd) - 1] = 0;
	}
	snprintf(delim, sizeof(delim), "--%s", bnd);
	p = r->body;
	end = r->body + r->body_len;
	p = memmem(p, (size_t)(end - p), delim, strlen(delim));	/* preamble allowed */
	while (p) {
		struct ht_part part = { 0 };
		const char *h, *he;
		p += strlen(delim);
		if (end - p >= 2 && !memcmp(p, "--", 2))
			break;	/* close delimiter */
		if (end - p < 2 || memcmp(p, "\r\n", 2))
			goto broken;
		h = p + 2;
		he = memmem(h, (size_t)(end - h), "\r\n\r\n", 4);
		if (!he)
			goto broken;
		part.first = -1;
		for (const char *l = h; l < he + 2;) {
			const char *le = memmem(l, (size_t)(he + 2 - l), "\r\n", 2);
			char line[256];
			snprintf(line, sizeof(line), "%.*s", (int)(le - l), l);
			if (!strncasecmp(line, "Content-Range:", 14)) {
				const char *v = line + 14;
				while (*v == ' ')
					v++;
				if (ht_parse_crange(v, &part.first, &part.last, &part.total))
					goto broken;
			} else if (!strncasecmp(line, "Content-Type:", 13)) {
				snprintf(part.ctype, sizeof(part.ctype), "%s", line + 13 + (line[13] == ' '));
			}
			l = le + 2;
		}
		if (part.first < 0 || part.last < part.first ||
		    part.last - part.first + 1 > end - (he + 4)) {
			snprintf(r->why, sizeof(r->why), "part %d: no usable Content-Range", n + 1);
			return -1;
		}
		part.data = (const unsigned char *)he + 4;
		part.len = (size_t)(part.last - part.first + 1);
		if (check_part(r, &part, file, size))
			return -1;
		if (n < max)
			parts[n] = part;
		n++;
		p = (const char *)part.data + part.len;
		if (end - p < 2 + (long)strlen(delim) || memcmp(p, "\r\n", 2) ||
		    memcmp(p + 2, delim, strlen(delim)))
			goto broken;
		p += 2;
	}
	if (!p)
		goto broken;
	if (n == 0) {
		snprintf(r->why, sizeof(r->why), "multipart/byteranges with no parts");
		return -1;
	}
	return n;
broken:
	snprintf(r->why, sizeof(r->why), "malformed multipart body after %d part(s)", n);
	return -1;
}

int ht_check_200(const char *file, int line, struct ht_resp *r,
		 const unsigned char *data, size_t size, const char *mime,
		 time_t mtime)
{
	int before = ht_failures;
	const char *et = ht_hdr(r, "ETag"), *lm = ht_hdr(r, "Last-Modified");
	char m[128], msg[256];

#define C200(cond, ...) do { if (!(cond)) { snprintf(msg, sizeof(msg), __VA_ARGS__); \
	ht_fail(file, line, #cond, msg, r); } } while (0)
	C200(r->rc == HT_OK && r->status == 200, "complete 200 expected");
	if (r->rc != HT_OK || r->status != 200)
		return -1;
	C200(ht_hdr_count(r, "Content-Length") == 1 && r->clen == (long long)size,
	     "one Content-Length: %zu expected", size);
	if (!r->no_body)
		C200(r->body_len == size && (!size || !memcmp(r->body, data, size)),
		     "body differs from the file (%zu bytes, %zu expected)", r->body_len, size);
	C200(lm && ht_parse_date(lm) == mtime, "Last-Modified (IMF-fixdate) = file mtime %lld expected",
	     (long long)mtime);
	C200(et && strlen(et) >= 3 && et[0] == '"' && strchr(et + 1, '"') == et + strlen(et) - 1,
	     "strong quoted ETag (\"...\", not W/) expected");
	C200(ht_hdr_has_token(r, "Accept-Ranges", "bytes"), "Accept-Ranges: bytes expected");
	C200(ht_parse_date(ht_hdr(r, "Date")) > 0, "Date (IMF-fixdate) expected");
	if (mime)
		C200(!strcmp(ht_mime(r, m, sizeof(m)), mime), "Content-Type %s expected", mime);
#undef C200
	return ht_failures == before ? 0 : -1;
}

int ht_body_has(const struct ht_resp *r, const char *needle)
{
	return r->body && memmem(r->body, r->body_len, needle, strlen(needle)) != NULL;
}

void ht_expect_serving(struct ht_server *s, const char *path, const char *after)
{
	struct ht_resp r;

	EXPECT(ht_alive(s), "server died after %s", after);
	if (!ht_alive(s))
		exit(ht_finish());
	ht_get(s->port, path, NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "GET %s after %s: 200", path, after);
	ht_resp_free(&r);
}
