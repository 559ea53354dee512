/* SPDX-License-Identifier: MIT */
/*
 * Request handling without I/O: llhttp's callbacks record spans into the
 * connection's buffer (no copies, no allocation), and the helpers below
 * turn a target into a safe relative path and judge the request; the
 * header values (ranges, dates, validators) are read in fields.c. This is
 * the code the fuzz target drives.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "httpd.h"

static void extend(struct span *s, const char *at, size_t n)
{
	/* llhttp splits a span only across execute() calls, and the buffer
	 * only grows between them, so the pieces are adjacent. */
	if (!s->p)
		*s = (struct span){ at, n };
	else
		s->n = (size_t)(at + n - s->p);
}

/* The head's size is known only from the spans' ends: the request line
 * and headers end 4 bytes (CRLF CRLF) after the last of them. */
static int too_big(struct request *r, const char *end)
{
	if (r->start && (size_t)(end - r->start) + 4 > HTTPD_HEAD_MAX) {
		r->too_big = true;
		return -1;
	}
	return 0;
}

/* Known from here: a HEAD refused before its head ends (431, 414, a
 * 400 for a byte its target may not hold) still gets no body (RFC 9110
 * 9.3.2). */
static int on_method_done(llhttp_t *p)
{
	struct request *r = p->data;

	r->method = (uint8_t)llhttp_get_method(p);
	r->method_known = true;
	return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t n)
{
	struct request *r = p->data;

	extend(&r->target, at, n);
	return too_big(r, at + n);
}

static int on_version(llhttp_t *p, const char *at, size_t n)
{
	(void)at;
	(void)n;
	((struct request *)p->data)->version_seen = true;
	return 0;
}

static int on_field(llhttp_t *p, const char *at, size_t n)
{
	struct request *r = p->data;

	/* The first name starts 2 bytes (CRLF) after the line: the line and
	 * the head's last CRLF alone over the limit are a 414, not a 431. */
	if (!r->line_done && too_big(r, at - 2))
		return -1;
	r->line_done = true;
	extend(&r->field, at, n);
	return too_big(r, at + n);
}

static int on_value(llhttp_t *p, const char *at, size_t n)
{
	struct request *r = p->data;

	extend(&r->val, at, n);
	return too_big(r, at + n);
}

static const struct { const char *name; int h; } known[] = {
	{ "host", H_HOST }, { "range", H_RANGE },
	{ "transfer-encoding", H_TRANSFER_ENCODING },
	{ "if-none-match", H_IF_NONE_MATCH },
	{ "if-modified-since", H_IF_MODIFIED_SINCE },
	{ "if-range", H_IF_RANGE }, { "if-match", H_IF_MATCH },
	{ "if-unmodified-since", H_IF_UNMODIFIED_SINCE },
};

static int on_field_done(llhttp_t *p)
{
	struct request *r = p->data;

	if (!r->field.p || r->field.n == 0)
		return -1;	/* a header needs a name (RFC 9110 5.1) */
	/* Whitespace between name and colon: 400 (RFC 9112 5.1). */
	for (size_t i = 0; i < r->field.n; i++)
		if (r->field.p[i] == ' ' || r->field.p[i] == '\t')
			r->bad_head = true;
	r->cur = H_OTHER;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].name) == r->field.n &&
		    !strncasecmp(known[i].name, r->field.p, r->field.n)) {
			r->cur = known[i].h;
			break;
		}
	r->field = (struct span){ 0 };
	return 0;
}

static int on_value_done(llhttp_t *p)
{
	struct request *r = p->data;

	struct span v = r->val.p ? r->val : (struct span){ "", 0 };

	/* A folded line (obs-fold) is refused (RFC 9112 5.2), and the
	 * trailing whitespace llhttp leaves is not part of the value. */
	if (memchr(v.p, '\r', v.n) || memchr(v.p, '\n', v.n))
		r->bad_head = true;
	while (v.n && (v.p[v.n - 1] == ' ' || v.p[v.n - 1] == '\t'))
		v.n--;
	if (r->cur != H_OTHER && !r->dup[r->cur])
		r->hdr[r->cur] = v;
	/* every line of an entity-tag list: fields.c reads them as one */
	if ((r->cur == H_IF_NONE_MATCH || r->cur == H_IF_MATCH) &&
	    r->dup[r->cur] < HTTPD_LIST_LINES)
		r->tags[r->cur == H_IF_MATCH][r->dup[r->cur]] = v;
	/* The count stops at its top: wrapped, 256 Host lines were none
	 * repeated and 257 one. */
	if (r->cur != H_OTHER && r->dup[r->cur] < UINT8_MAX)
		r->dup[r->cur]++;
	r->val = (struct span){ 0 };
	r->cur = H_OTHER;
	return 0;
}

static int on_headers_done(llhttp_t *p)
{
	struct request *r = p->data;

	r->method = (uint8_t)llhttp_get_method(p);
	r->method_known = true;
	r->major = llhttp_get_http_major(p);
	r->minor = llhttp_get_http_minor(p);
	/* llhttp looks at "close" only in HTTP/1.1: a 1.0 request saying
	 * "keep-alive, close" is closed too (RFC 9112 9.6) */
	r->keep_alive = llhttp_should_keep_alive(p) && !(p->flags & F_CONNECTION_CLOSE);
	r->head_done = true;
	/* A fragment is never sent (RFC 9110 7.1): what follows a '#' is
	 * not part of the path or the query. */
	if (r->target.p) {
		const char *h = memchr(r->target.p, '#', r->target.n);

		if (h)
			r->target.n = (size_t)(h - r->target.p);
	}
	/* An Upgrade this server does not take is ignored (RFC 9110 7.8):
	 * the connection goes on as HTTP/1.1. What follows a CONNECT is
	 * a tunnel's bytes, not requests: its 405 closes the connection. */
	if (r->method != HTTP_CONNECT)
		p->upgrade = 0;
	else
		r->keep_alive = false;
	/* A body is never read: the response goes out now and the
	 * connection closes after it. */
	if ((p->flags & F_CHUNKED) || p->content_length > 0) {
		r->has_body = true;
		return HPE_PAUSED;
	}
	return 0;
}

static int on_message_done(llhttp_t *p)
{
	((struct request *)p->data)->done = true;
	/* Stop here: the response goes out before the next pipelined
	 * request is parsed. */
	return HPE_PAUSED;
}

void proto_settings(llhttp_settings_t *s)
{
	llhttp_settings_init(s);
	s->on_method_complete = on_method_done;
	s->on_url = on_url;
	s->on_version = on_version;
	s->on_header_field = on_field;
	s->on_header_value = on_value;
	s->on_header_field_complete = on_field_done;
	s->on_header_value_complete = on_value_done;
	s->on_headers_complete = on_headers_done;
	s->on_message_complete = on_message_done;
}

void proto_parser_init(llhttp_t *p, const llhttp_settings_t *s)
{
	llhttp_init(p, HTTP_REQUEST, s);
	/* llhttp refuses versions it does not know; RFC 9110 2.5 has a
	 * higher 1.x served as 1.1 and proto_verdict answers 2 and up. */
	p->lenient_flags |= LENIENT_VERSION;
}

bool proto_unversioned(const struct request *r, const char *end)
{
	return r->target.p && !r->version_seen && !r->line_done &&
	       memchr(r->target.p, '\n', (size_t)(end - r->target.p));
}

void proto_reset(struct request *r, const char *start)
{
	memset(r, 0, offsetof(struct request, tags));
	r->start = start;
}

/* ------------------------------------------------------------- paths */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i], need, min, cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			need = 1, min = 0x80, cp = c & 0x1f;
		else if ((c & 0xf0) == 0xe0)
			need = 2, min = 0x800, cp = c & 0x0f;
		else if ((c & 0xf8) == 0xf0)
			need = 3, min = 0x10000, cp = c & 0x07;
		else
			return false;
		if (i + need >= n)
			return false;
		for (unsigned k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
}

bool proto_name_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return utf8_ok((const unsigned char *)s, n);
}

int proto_path(struct span t, char *out, size_t outsz, bool *slash)
{
	const char *p = t.p, *end = t.p + t.n;
	size_t len = 0, seg;

	if (t.n >= 7 && !strncasecmp(p, "http://", 7))
		p += 7;
	else if (t.n >= 8 && !strncasecmp(p, "https://", 8))
		return 421;	/* not on this plain connection (RFC 9110 7.4) */
	if (p != t.p) {		/* absolute-form: the authority is a host */
		const char *a = p;

		while (p < end && *p != '/' && *p != '?' && *p != '#')
			p++;
		if (!proto_host_ok((struct span){ a, (size_t)(p - a) }) || p == a)
			return 400;	/* userinfo, no host (RFC 9110 4.2.1, 4.2.4) */
		if (p == end || *p == '?' || *p == '#')	/* empty path: the root */
			return *slash = true, out[0] = 0, 0;
	}
	if (p == end || *p != '/')
		return 400;
	for (const char *q = p; q < end; q++)
		if (*q == '?' || *q == '#') {
			end = q;
			break;
		}
	*slash = end[-1] == '/';
	/* Decode segment by segment; '.' and '..' are judged after decoding,
	 * so %2e%2e is '..' too. */
	while (p < end) {
		while (p < end && *p == '/')
			p++;
		seg = len;
		while (p < end && *p != '/') {
			int c = (unsigned char)*p++;

			if (c == '%') {
				int hi = end - p >= 2 ? hexval(p[0]) : -1;
				int lo = hi >= 0 ? hexval(p[1]) : -1;

				if (lo < 0)
					return 400;
				c = hi << 4 | lo;
				p += 2;
				if (c == '/' || c == 0)
					return 400;
			}
			if (c < 0x20 || c == 0x7f)
				return 400;
			if (len + 2 >= outsz)
				return 414;
			out[len++] = (char)c;
		}
		*slash = true;		/* unless a name follows */
		if (len - seg == 1 && out[seg] == '.') {
			len = seg;
		} else if (len - seg == 2 && out[seg] == '.' && out[seg + 1] == '.') {
			if (seg == 0)
				return 400;	/* above the root */
			len = seg - 1;	/* drop the '/' before it too */
			while (len > 0 && out[len - 1] != '/')
				len--;
			if (len > 0)
				len--;
		} else if (len > seg) {
			if (!utf8_ok((unsigned char *)out + seg, len - seg))
				return 400;
			out[len++] = '/';
			*slash = p < end;	/* "name/" or "name" at the end */
			continue;
		}
		if (len > 0 && out[len - 1] != '/')
			out[len++] = '/';
	}
	while (len > 0 && out[len - 1] == '/')
		len--;
	out[len] = 0;
	return 0;
}

/* How many codings a Transfer-Encoding list names, empty elements
 * ignored (RFC 9110 5.6.1.2); *chunked_only: just "chunked". */
static int te_codings(struct span v, bool *chunked_only)
{
	const char *p = v.p, *end = v.p + v.n;
	int n = 0;

	*chunked_only = false;
	while (p < end) {
		const char *e = memchr(p, ',', (size_t)(end - p)), *t;

		if (!e)
			e = end;
		while (p < e && (*p == ' ' || *p == '\t'))
			p++;
		for (t = e; t > p && (t[-1] == ' ' || t[-1] == '\t'); t--)
			;
		if (t > p) {
			n++;
			*chunked_only = n == 1 && t - p == 7 && !strncasecmp(p, "chunked", 7);
		}
		p = e + 1;
	}
	if (n != 1)
		*chunked_only = false;
	return n;
}

int proto_verdict(const struct request *q)
{
	bool chunked;

	/* HTTP/0.9 has no headers to answer with; 2 and later are not
	 * spoken here (RFC 9110 15.6.6). */
	if (q->major != 1)
		return q->major ? 505 : 400;
	/* Transfer-Encoding in HTTP/1.0 is faulty framing (RFC 9112 6.1,
	 * 6.3): 400, as nginx, whatever the method. */
	if (q->minor == 0 && q->hdr[H_TRANSFER_ENCODING].p)
		return 400;
	/* Host: required in 1.1, once, well formed (RFC 9112 3.2), and the
	 * head's own faults, whatever the method: a 405 keeps the
	 * connection, and a folded line (which llhttp joins) may hide a
	 * Content-Length another hop reads, leaving a "body" here to be
	 * parsed as the next request. */
	/* llhttp lets a TAB or other control byte through in a query: a
	 * target has none (RFC 9112 3.2), and a Location copied from it
	 * would carry it. */
	for (size_t i = 0; i < q->target.n; i++)
		if ((unsigned char)q->target.p[i] <= ' ' || q->target.p[i] == 0x7f)
			return 400;
	if (q->bad_head || (q->minor >= 1 && !q->hdr[H_HOST].p) || q->dup[H_HOST] > 1 ||
	    (q->hdr[H_HOST].p && !proto_host_ok(q->hdr[H_HOST])))
		return 400;
	if (q->method != HTTP_GET && q->method != HTTP_HEAD)
		return 405;
	/* An entity-tag list on several lines is one list (fields.c), on
	 * more than are kept a 400; the dates and If-Range given twice are
	 * ignored (fields.c) */
	if (q->dup[H_IF_NONE_MATCH] > HTTPD_LIST_LINES ||
	    q->dup[H_IF_MATCH] > HTTPD_LIST_LINES)
		return 400;
	/* llhttp refuses (400) a body whose last coding is not chunked; one
	 * that adds a coding before it is not understood here: 501 (RFC 9112
	 * 6.1), rather than a response as if the body had been read. */
	if (!q->hdr[H_TRANSFER_ENCODING].p)
		return 0;
	if (!te_codings(q->hdr[H_TRANSFER_ENCODING], &chunked))
		return 400;	/* no coding at all: a syntax error (RFC 9112 6.1) */
	return q->dup[H_TRANSFER_ENCODING] > 1 || !chunked ? 501 : 0;
}

bool proto_pct_at(const char *p, const char *end)
{
	return end - p >= 3 && p[0] == '%' && isxdigit((unsigned char)p[1]) &&
	       isxdigit((unsigned char)p[2]);
}

/* uri-host [ ":" port ] (RFC 9112 3.2, RFC 3986 3.2.2): an IP-literal in
 * brackets, or a reg-name / IPv4 address, never empty (RFC 9110 4.2.1);
 * the port all digits. A Host with no value at all is allowed (HTTP/1.1's
 * for a target with no authority). */
bool proto_host_ok(struct span h)
{
	const char *p = h.p, *end = h.p + h.n, *host;

	if (!h.n)
		return true;
	if (*p == '[') {
		for (host = ++p; p < end && *p != ']'; p++)
			if (!*p || (!isalnum((unsigned char)*p) &&
				    !strchr("-._~!$&'()*+,;=:", *p)))
				return false;
		if (p == end || p++ == host)
			return false;
	} else {
		for (host = p; p < end && *p != ':'; p++)
			if (*p == '%') {
				if (!proto_pct_at(p, end))
					return false;
				p += 2;
			} else if (!*p || (!isalnum((unsigned char)*p) &&
					   !strchr("-._~!$&'()*+,;=", *p))) {
				return false;
			}
		if (p == host)
			return false;
	}
	if (p == end)
		return true;
	if (*p++ != ':')
		return false;
	for (; p < end; p++)
		if (!isdigit((unsigned char)*p))
			return false;
	return true;
}
