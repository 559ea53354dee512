/* SPDX-License-Identifier: MIT */
/*
 * What to answer. A response is a list of segments: memory (the head,
 * multipart part headers, a listing) and file ranges, sent by send.c. A
 * file range's first HTTPD_BODY_BUF bytes are read by the --disk-io mode
 * and go out with the head in one sendmsg; the rest of a larger range
 * goes by flow (sendfile or splice in the kernel, never through this
 * process). In laio mode a larger range the page cache holds goes by flow
 * whole: sendfile, inline, without the copy a read makes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include "httpd.h"

const char *const resp_reason[600] = {
	[200] = "OK", [206] = "Partial Content", [301] = "Moved Permanently",
	[304] = "Not Modified", [400] = "Bad Request", [403] = "Forbidden",
	[404] = "Not Found", [405] = "Method Not Allowed",
	[408] = "Request Timeout", [412] = "Precondition Failed",
	[414] = "URI Too Long",
	[416] = "Range Not Satisfiable", [421] = "Misdirected Request",
	[431] = "Request Header Fields Too Large",
	[500] = "Internal Server Error", [501] = "Not Implemented",
	[503] = "Service Unavailable",
	[505] = "HTTP Version Not Supported",
};

static void on_opened(struct conn *c, struct file *f, int err);

static struct resp *resp_get(struct conn *c)
{
	struct server *s = c->srv;
	struct resp *r = s->resp_pool;

	if (r) {
		s->resp_pool = r->next_free;
		s->nresp_pool--;
	} else {
		if (!(r = malloc(sizeof(*r))))
			return NULL;
		/* idle before its first use (uaio_op_work says EBUSY to an
		 * op that is not); back to idle after each */
		memset(&r->op, 0, sizeof(r->op));
	}
	/* Only the fields read before being written are reset. */
	r->status = 0;
	r->f = NULL;
	r->slash = r->index = false;
	r->head_len = 0;
	r->body = NULL;
	r->body_used = 0;
	r->extra = NULL;
	r->nseg = r->cur = r->iovcnt = 0;
	r->flow_next = false;
	r->bytes = r->batch_base = 0;
	r->logged = false;
	r->flow = NULL;
	c->resp = r;
	return r;
}

bool resp_idle(const struct conn *c)
{
	return !c->resp || !c->resp->flow;
}

/* The connection closes under its response (a send timeout, a
 * stop): the log still gets its line, with what was sent, as nginx's. */
void resp_cancel(struct conn *c)
{
	struct resp *r = c->resp;

	if (r && r->status && !r->logged) {
		r->logged = true;
		log_request(c->srv, c, r->status, resp_bytes_sent(r));
	}
	if (r && r->flow)
		uaio_flow_cancel(r->flow);
}

void resp_free(struct conn *c)
{
	struct resp *r = c->resp;
	struct server *s = c->srv;

	if (!r)
		return;
	if (r->f)
		file_put(s, r->f);
	if (r->body)
		server_buf_put(s, r->body, true);
	free(r->extra);
	c->resp = NULL;
	if (s->nresp_pool >= HTTPD_POOL_KEEP) {	/* past a burst: back to malloc */
		free(r);
		return;
	}
	r->next_free = s->resp_pool;
	s->resp_pool = r;
	s->nresp_pool++;
}

void resp_finish(struct conn *c, bool ok)
{
	struct resp *r = c->resp;

	if (!r->logged) {
		r->logged = true;
		log_request(c->srv, c, r->status, ok ? r->bytes : resp_bytes_sent(r));
	}
	conn_response_done(c, ok);
}

/* ------------------------------------------------------------- heads */

static void add(struct resp *r, const char *fmt, ...)
{
	size_t room = sizeof(r->head) - r->head_len;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(r->head + r->head_len, room, fmt, ap);
	va_end(ap);
	r->head_len += n < 0 ? 0 : (size_t)n < room ? (size_t)n : room - 1;
}

/* A fixed line: the per-response ones need no vsnprintf. */
#define add_lit(r, lit) add_bytes(r, lit, sizeof(lit) - 1)

static void add_bytes(struct resp *r, const char *p, size_t n)
{
	size_t room = sizeof(r->head) - r->head_len;

	if (n >= room)
		n = room - 1;
	memcpy(r->head + r->head_len, p, n);
	r->head_len += n;
}

static void head_start(struct conn *c, int status)
{
	struct resp *r = c->resp;

	r->status = status;
	r->head_len = 0;
	if (status == 200) {
		const char *h = server_head200(c->srv, &r->head_len);

		memcpy(r->head, h, r->head_len);
		return;
	}
	add(r, "HTTP/1.1 %d %s\r\nServer: " HTTPD_NAME "\r\nDate: %s\r\n",
	    status, resp_reason[status], server_date(c->srv));
}

static void head_end(struct conn *c)
{
	struct resp *r = c->resp;

	if (c->close_after)
		add_lit(r, "Connection: close\r\n");
	else if (c->req && c->req->minor == 0)	/* HTTP/1.0 asked to keep it */
		add_lit(r, "Connection: keep-alive\r\n");
	add_lit(r, "\r\n");
	r->seg[0] = (struct seg){ .mem = r->head, .len = r->head_len };
	r->nseg = 1;
}

static void mem_seg(struct resp *r, const char *p, size_t n)
{
	r->seg[r->nseg++] = (struct seg){ .mem = p, .len = n };
}

static void file_seg(struct resp *r, uint64_t off, uint64_t len)
{
	r->seg[r->nseg++] = (struct seg){ .file = true, .off = off, .len = len };
}

static bool is_head(const struct conn *c)
{
	return c->req->method_known && c->req->method == HTTP_HEAD;
}

/* The send timeout runs from here, not only from a send that moved
 * bytes: a response whose first send finds the socket full (the one
 * before it left the buffer over its size) would wait for room with no
 * deadline, holding its slot, and a SIGTERM's drain, for ever. */
static void start_send(struct conn *c)
{
	c->state = C_SEND;
	conn_send_clock(c);
	resp_continue(c);
}

/* An error page; extra is a header line (or ""). */
static void error_page(struct conn *c, int status, const char *extra)
{
	struct resp *r = c->resp;
	char body[256];
	int n;

	n = snprintf(body, sizeof(body),
		     "<html><head><title>%d %s</title></head><body><h1>%d %s</h1></body></html>\n",
		     status, resp_reason[status], status, resp_reason[status]);
	if (status >= 500 || status == 400 || status == 414 || status == 431)
		c->close_after = true;
	head_start(c, status);
	add(r, "%sContent-Type: text/html\r\nContent-Length: %d\r\n", extra, n);
	head_end(c);
	if (!is_head(c)) {
		add(r, "%s", body);
		r->seg[0].len = r->head_len;
		r->bytes = (uint64_t)n;	/* the body rides in the head's segment */
	}
	start_send(c);
}

void respond_error(struct conn *c, int status)
{
	if (c->resp)
		resp_free(c);
	if (!resp_get(c)) {
		conn_close(c);
		return;
	}
	c->deadline_ms = 0;
	error_page(c, status, status == 405 ? "Allow: GET, HEAD\r\n" : "");
}

/* ----------------------------------------------------------- choosing */

void respond(struct conn *c)
{
	struct request *q = c->req;
	struct resp *r;
	int st;

	if (!resp_get(c)) {
		conn_close(c);
		return;
	}
	r = c->resp;
	c->state = C_WORK;
	c->deadline_ms = 0;
	/* llhttp keeps an HTTP/1.0 connection alive only when it asked */
	if (!q->keep_alive || q->major != 1 || c->srv->draining)
		c->close_after = true;
	if ((st = proto_verdict(q)) != 0) {
		error_page(c, st, st == 405 ? "Allow: GET, HEAD\r\n" : "");
		return;
	}
	st = proto_path(q->target, r->path, sizeof(r->path) - 16, &r->slash);
	if (st) {
		error_page(c, st, "");
		return;
	}
	st = files_open(c, &r->f, on_opened);
	if (st != -EINPROGRESS)
		on_opened(c, r->f, st);
}

static int status_of(int err)
{
	switch (err) {
	case -ENOENT: case -ENOTDIR: case -ENAMETOOLONG:
		return 404;
	case -EACCES: case -EPERM: case -EXDEV: case -ELOOP: case -ENXIO:
		return 403;
	case -EMFILE: case -ENFILE: case -ENOMEM:
	case -EAGAIN:	/* a lease holder asked to let go (files.c, REOPEN_FLAGS) */
		return 503;
	default:
		return 500;
	}
}

static bool url_plain(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || (ch && strchr("/-._~", ch));
}

/* Whether byte i of the n of s goes out as it is: url_plain or in keep
 * (a kept '%' only where it begins an escape). */
static bool url_as_is(const char *s, size_t i, size_t n, const char *keep)
{
	unsigned char ch = (unsigned char)s[i];

	if (url_plain(ch))
		return true;
	return ch == '%' ? strchr(keep, '%') && proto_pct_at(s + i, s + n) :
			   ch && strchr(keep, ch);
}

/* Bytes url_encode_keep() writes for n bytes of s. */
static size_t url_encoded_len(const char *s, size_t n, const char *keep)
{
	size_t len = 0;

	for (size_t i = 0; i < n; i++)
		len += url_as_is(s, i, n, keep) ? 1 : 3;
	return len;
}

/* n bytes of s, those that are not url_plain nor in keep escaped. */
static void url_encode_keep(struct resp *r, const char *s, size_t n, const char *keep)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (url_as_is(s, i, n, keep))
			add(r, "%c", ch);
		else
			add(r, "%%%c%c", hex[ch >> 4], hex[ch & 15]);
	}
}

static void url_encode(struct resp *r, const char *s)
{
	url_encode_keep(r, s, strlen(s), "");
}

#define QUERY_KEEP	"!$&'()*+,;=:@?%"

static void redirect(struct conn *c)
{
	struct resp *r = c->resp;
	struct span t = c->req->target;
	const char *qm = memchr(t.p, '?', t.n);
	size_t qlen = qm ? (size_t)(t.p + t.n - qm) : 0;

	/* A Location whose escaped form would not fit the head: refused
	 * whole rather than cut short. */
	if (url_encoded_len(r->path, strlen(r->path), "") +
	    url_encoded_len(qm, qlen, QUERY_KEEP) + 512 > sizeof(r->head)) {
		error_page(c, 414, "");
		return;
	}
	head_start(c, 301);
	add(r, "Location: /");
	url_encode(r, r->path);
	add(r, "/");
	if (qm)		/* as it came, but for bytes a URI cannot hold; its escapes stay */
		url_encode_keep(r, qm, qlen, QUERY_KEEP);
	add(r, "\r\nContent-Length: 0\r\n");
	head_end(c);
	start_send(c);
}

static void on_listed(struct conn *c, ssize_t res)
{
	struct resp *r = c->resp;

	if (res < 0) {
		error_page(c, status_of((int)res), "");
		return;
	}
	switch (proto_preconditions(c->req, NULL, 0)) {
	case 412:
		error_page(c, 412, "");
		return;
	case 304:
		head_start(c, 304);
		head_end(c);
		start_send(c);
		return;
	}
	head_start(c, 200);
	add(r, "Content-Type: text/html; charset=utf-8\r\nContent-Length: %zu\r\n",
	    (size_t)res);
	head_end(c);
	if (!is_head(c))
		mem_seg(r, r->extra, (size_t)res);
	start_send(c);
}

static void serve_file(struct conn *c);

static void on_opened(struct conn *c, struct file *f, int err)
{
	struct resp *r = c->resp;
	ssize_t n;

	r->f = err ? NULL : f;
	if (err) {
		if (r->index && (err == -ENOENT || err == -ENOTDIR) &&
		    c->srv->cfg->list) {
			r->path[r->dirlen] = 0;
			n = files_list(c, on_listed);
			if (n != -EINPROGRESS)
				on_listed(c, n);
			return;
		}
		error_page(c, status_of(err), "");
		return;
	}
	if (!f->dir) {
		/* "file/" (or "file/."): a file is no directory. */
		if (r->slash && !r->index && r->path[0]) {
			error_page(c, 404, "");
			return;
		}
		serve_file(c);
		return;
	}
	if (r->index) {
		error_page(c, 403, "");
		return;
	}
	if (!r->slash && r->path[0]) {
		redirect(c);
		return;
	}
	file_put(c->srv, f);
	r->f = NULL;
	r->index = true;
	r->dirlen = strlen(r->path);
	strcpy(r->path + r->dirlen, r->dirlen ? "/index.html" : "index.html");
	err = files_open(c, &r->f, on_opened);
	if (err != -EINPROGRESS)
		on_opened(c, r->f, err);
}

static void entity_headers(struct conn *c)
{
	struct resp *r = c->resp;

	add(r, "Last-Modified: %s\r\nETag: %s\r\nAccept-Ranges: bytes\r\n",
	    r->f->lastmod, r->f->etag);
}

static void serve_file(struct conn *c)
{
	struct request *q = c->req;
	struct resp *r = c->resp;
	struct file *f = r->f;
	int n = 0;

	switch (proto_preconditions(q, f->etag, f->mtime)) {
	case 412:
		error_page(c, 412, "");
		return;
	case 304:
		head_start(c, 304);
		add(r, "Last-Modified: %s\r\nETag: %s\r\n", f->lastmod, f->etag);
		head_end(c);
		start_send(c);
		return;
	}
	/* Ranges are defined for GET only; HEAD ignores them and describes
	 * the 200 a GET without one gets (RFC 9110 14.2). */
	/* Range is no list: two lines make one invalid value, ignored
	 * (RFC 9110 5.3, 14.2), as a hop keeping either would differ */
	if (q->method == HTTP_GET && q->hdr[H_RANGE].p && q->dup[H_RANGE] == 1 &&
	    proto_if_range(q, f->etag, f->mtime))
		n = proto_ranges(q->hdr[H_RANGE], f->size, r->ranges, HTTPD_RANGES_MAX);
	if (n < 0) {
		char cr[64];

		snprintf(cr, sizeof(cr), "Content-Range: bytes */%llu\r\n",
			 (unsigned long long)f->size);
		error_page(c, 416, cr);
		return;
	}
	if (n == 0) {
		head_start(c, 200);
		if (f->hdr_len && f->hdr_len < sizeof(r->head) - r->head_len) {
			memcpy(r->head + r->head_len, f->hdr, f->hdr_len);
			r->head_len += f->hdr_len;
		} else {
			add(r, "Content-Type: %s\r\nContent-Length: %llu\r\n", f->type,
			    (unsigned long long)f->size);
			entity_headers(c);
		}
		head_end(c);
		if (!is_head(c))
			file_seg(r, 0, f->size);
	} else if (n == 1) {
		struct range g = r->ranges[0];

		head_start(c, 206);
		add(r, "Content-Type: %s\r\nContent-Length: %llu\r\n"
		    "Content-Range: bytes %llu-%llu/%llu\r\n", f->type,
		    (unsigned long long)(g.last - g.first + 1),
		    (unsigned long long)g.first, (unsigned long long)g.last,
		    (unsigned long long)f->size);
		entity_headers(c);
		head_end(c);
		if (!is_head(c))
			file_seg(r, g.first, g.last - g.first + 1);
	} else {
		/* multipart/byteranges: the part heads are built first, as the
		 * total length goes in the head. */
		unsigned long long total = 0;
		char b[24];
		int len[HTTPD_RANGES_MAX + 1];

		/* random: a boundary anyone can foresee can be planted in a
		 * file to break its parts (RFC 2046 5.1.1) */
		unsigned long long x;

		if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x))
			x = c->srv->requests * 2654435761u ^ f->ino;
		snprintf(b, sizeof(b), "%016llx", x);
		for (int i = 0; i < n; i++) {
			struct range g = r->ranges[i];

			len[i] = snprintf(r->parts[i], sizeof(r->parts[i]),
					  "\r\n--%s\r\nContent-Type: %s\r\n"
					  "Content-Range: bytes %llu-%llu/%llu\r\n\r\n",
					  b, f->type, (unsigned long long)g.first,
					  (unsigned long long)g.last,
					  (unsigned long long)f->size);
			/* cannot happen: mime.c keeps types under HTTPD_TYPE_MAX */
			if (len[i] >= (int)sizeof(r->parts[i])) {
				error_page(c, 500, "");
				return;
			}
			total += (unsigned)len[i] + g.last - g.first + 1;
		}
		len[n] = snprintf(r->parts[n], sizeof(r->parts[n]), "\r\n--%s--\r\n", b);
		total += (unsigned)len[n];
		head_start(c, 206);
		add(r, "Content-Type: multipart/byteranges; boundary=%s\r\n"
		    "Content-Length: %llu\r\n", b, total);
		entity_headers(c);
		head_end(c);
		if (!is_head(c)) {
			for (int i = 0; i < n; i++) {
				mem_seg(r, r->parts[i], (size_t)len[i]);
				file_seg(r, r->ranges[i].first,
					 r->ranges[i].last - r->ranges[i].first + 1);
			}
			mem_seg(r, r->parts[n], (size_t)len[n]);
		}
	}
	start_send(c);
}
