/* SPDX-License-Identifier: MIT */
/* Test client for uaio-httpd (see client.h), the HTTP half:
 * connections, reading and parsing responses. */
#define _GNU_SOURCE
#include "client.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* Response buffers stay reachable from here until ht_resp_free(), so a
 * response a test did not free is not a leak for LeakSanitizer. */
static void **tracked;
static size_t ntracked, captracked;
static pthread_mutex_t track_lock = PTHREAD_MUTEX_INITIALIZER;

static void *track(void *p)
{
	if (!p)
		return p;
	pthread_mutex_lock(&track_lock);
	if (ntracked == captracked) {
		captracked = captracked ? captracked * 2 : 256;
		tracked = realloc(tracked, captracked * sizeof(*tracked));
	}
	tracked[ntracked++] = p;
	pthread_mutex_unlock(&track_lock);
	return p;
}

static void untrack(void *p)
{
	pthread_mutex_lock(&track_lock);
	for (size_t i = ntracked; p && i-- > 0;)
		if (tracked[i] == p) {
			tracked[i] = tracked[--ntracked];
			break;
		}
	pthread_mutex_unlock(&track_lock);
}

static void retrack(void *old, void *p)
{
	untrack(old);
	track(p);
}

/* --- connections ------------------------------------------------------- */

struct ht_conn *ht_connect_opt(int port, int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct ht_conn *c;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return NULL;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	c->fd = fd;
	c->port = port;
	return c;
}

struct ht_conn *ht_connect(int port)
{
	struct ht_conn *c = ht_connect_opt(port, 0);
	FATAL(c, "connect to 127.0.0.1:%d: %s", port, strerror(errno));
	return c;
}

void ht_close(struct ht_conn *c)
{
	if (!c)
		return;
	close(c->fd);
	free(c->buf);
	free(c);
}

void ht_abort(struct ht_conn *c)
{
	struct linger l = { 1, 0 };
	setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	ht_close(c);
}

int ht_send(struct ht_conn *c, const void *data, size_t len)
{
	const char *p = data;
	size_t n = len < sizeof(c->sent) - 1 ? len : sizeof(c->sent) - 1;

	memcpy(c->sent, data, n);
	c->sent[n] = 0;
	while (len) {
		struct pollfd pfd = { c->fd, POLLOUT, 0 };
		ssize_t w;
		if (poll(&pfd, 1, ht_timeout_ms) <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		w = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int ht_sends(struct ht_conn *c, const char *s) { return ht_send(c, s, strlen(s)); }

int ht_sendf(struct ht_conn *c, const char *fmt, ...)
{
	char *s;
	int r;
	va_list ap;

	va_start(ap, fmt);
	FATAL(vasprintf(&s, fmt, ap) >= 0, "vasprintf");
	va_end(ap);
	r = ht_sends(c, s);
	free(s);
	return r;
}

/* Reads more into c->buf: >0 bytes, 0 EOF/reset, HT_ETIMEOUT. */
static int fill(struct ht_conn *c, int ms)
{
	struct pollfd pfd = { c->fd, POLLIN, 0 };
	ssize_t r;

	if (c->eof)
		return 0;
	if (c->cap - c->len < 65536) {
		c->cap = c->cap ? c->cap * 2 : 131072;
		c->buf = realloc(c->buf, c->cap + 1);
	}
	for (;;) {
		int p = poll(&pfd, 1, ms);
		if (p < 0 && errno == EINTR)
			continue;
		if (p <= 0)
			return HT_ETIMEOUT;
		r = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0) {
			c->eof = 1;
			c->err = r < 0 ? errno : 0;
			return 0;
		}
		c->len += (size_t)r;
		return (int)r;
	}
}

static void consume(struct ht_conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

static int bad(struct ht_resp *r, const char *why)
{
	snprintf(r->why, sizeof(r->why), "%s", why);
	return r->rc = HT_EPARSE;
}

static int parse_head(struct ht_resp *r, char *head, int no_body)
{
	char *line = head, *next, *end;
	long long cl = -1;

	next = strstr(line, "\r\n");
	*next = 0;
	if (strncmp(line, "HTTP/1.", 7) || !isdigit((unsigned char)line[7]) || line[8] != ' ' ||
	    !isdigit((unsigned char)line[9]) || !isdigit((unsigned char)line[10]) ||
	    !isdigit((unsigned char)line[11]) || (line[12] != ' ' && line[12] != 0))
		return bad(r, "bad status line");
	r->minor = line[7] - '0';
	r->status = atoi(line + 9);
	snprintf(r->reason, sizeof(r->reason), "%s", line[12] ? line + 13 : "");
	for (line = next + 2; strncmp(line, "\r\n", 2); line = next + 2) {
		char *colon, *v, *e;
		next = strstr(line, "\r\n");
		*next = 0;
		colon = strchr(line, ':');
		if (!colon || colon == line || r->nh == 64)
			return bad(r, "bad header line (or more than 64)");
		for (char *q = line; q < colon; q++)
			if (*q <= ' ' || *q >= 127)
				return bad(r, "bad header name");
		*colon = 0;
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		e = v + strlen(v);
		while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = 0;
		r->h[r->nh].name = line;
		r->h[r->nh++].value = v;
	}
	if (no_body || (r->status >= 100 && r->status < 200) || r->status == 204 ||
	    r->status == 304)
		r->no_body = 1;
	if (ht_hdr(r, "Transfer-Encoding"))
		return bad(r, "Transfer-Encoding in a response (Content-Length expected)");
	for (int i = 0; i < r->nh; i++) {
		long long v;
		if (strcasecmp(r->h[i].name, "Content-Length"))
			continue;
		v = strtoll(r->h[i].value, &end, 10);
		if (!isdigit((unsigned char)r->h[i].value[0]) || *end || (cl >= 0 && v != cl))
			return bad(r, "bad or conflicting Content-Length");
		cl = v;
	}
	r->clen = cl;
	return HT_OK;
}

int ht_read_head(struct ht_conn *c, struct ht_resp *r, int no_body)
{
	char *e;
	size_t n;

	memset(r, 0, sizeof(*r));
	snprintf(r->req, sizeof(r->req), "%s", c->sent);
	r->clen = -1;
	for (;;) {
		int f;
		if (c->len) {
			if ((e = memmem(c->buf, c->len, "\r\n\r\n", 4))) {
				if (memchr(c->buf, 0, (size_t)(e - c->buf)))
					return bad(r, "NUL byte in the response head");
				break;
			}
			if (c->len > 65536)
				return bad(r, "response head over 64 KiB");
		}
		f = fill(c, ht_timeout_ms);
		if (f == HT_ETIMEOUT) {
			snprintf(r->why, sizeof(r->why), "no complete response head in %d s",
				 ht_timeout_ms / 1000);
			return r->rc = HT_ETIMEOUT;
		}
		if (f == 0) {
			snprintf(r->why, sizeof(r->why), "connection %s before a complete head (%zu bytes)",
				 c->err ? strerror(c->err) : "closed", c->len);
			if (c->len)
				r->head = track(strndup(c->buf, c->len));
			return r->rc = HT_ECLOSED;
		}
	}
	n = (size_t)(e - c->buf) + 4;
	r->head = track(strndup(c->buf, n));
	r->hbuf = track(strndup(c->buf, n));	/* parse_head cuts this one up */
	consume(c, n);
	if (parse_head(r, r->hbuf, no_body))
		return r->rc;
	return r->rc = HT_OK;
}

int ht_read_body(struct ht_conn *c, struct ht_resp *r, size_t upto)
{
	size_t want;

	if (r->rc != HT_OK || r->no_body)
		return r->rc;
	want = r->clen >= 0 && (size_t)r->clen < upto ? (size_t)r->clen : upto;
	if (r->clen >= 0 && !r->body)
		FATAL(r->body = track(malloc((size_t)r->clen + 1)), "malloc %lld", r->clen);
	while (r->body_len < want) {
		size_t take;
		if (!c->len) {
			int f = fill(c, ht_timeout_ms);
			if (f == HT_ETIMEOUT) {
				snprintf(r->why, sizeof(r->why), "body stalled at %zu of %lld bytes",
					 r->body_len, r->clen);
				return r->rc = HT_ETIMEOUT;
			}
			if (f == 0) {
				if (r->clen < 0)
					break;	/* close-delimited: done */
				snprintf(r->why, sizeof(r->why), "connection %s at %zu of %lld body bytes",
					 c->err ? strerror(c->err) : "closed", r->body_len, r->clen);
				return r->rc = HT_EBODY;
			}
		}
		take = c->len < want - r->body_len ? c->len : want - r->body_len;
		if (r->clen < 0) {
			void *nb = realloc(r->body, r->body_len + take + 1);
			retrack(r->body, nb);
			r->body = nb;
		}
		memcpy(r->body + r->body_len, c->buf, take);
		r->body_len += take;
		consume(c, take);
	}
	if (r->body)
		r->body[r->body_len] = 0;
	return r->rc;
}

int ht_read(struct ht_conn *c, struct ht_resp *r, int no_body)
{
	if (ht_read_head(c, r, no_body) == HT_OK)
		ht_read_body(c, r, (size_t)-1);
	return r->rc;
}

void ht_resp_free(struct ht_resp *r)
{
	untrack(r->head);
	untrack(r->hbuf);
	untrack(r->body);
	free(r->head);
	free(r->hbuf);
	free(r->body);
	r->head = r->hbuf = r->body = NULL;
	r->body_len = 0;
	r->nh = 0;
}

const char *ht_hdr(const struct ht_resp *r, const char *name)
{
	for (int i = 0; i < r->nh; i++)
		if (!strcasecmp(r->h[i].name, name))
			return r->h[i].value;
	return NULL;
}

int ht_hdr_count(const struct ht_resp *r, const char *name)
{
	int n = 0;
	for (int i = 0; i < r->nh; i++)
		n += !strcasecmp(r->h[i].name, name);
	return n;
}

int ht_hdr_has_token(const struct ht_resp *r, const char *name, const char *tok)
{
	size_t tl = strlen(tok);
	for (int i = 0; i < r->nh; i++) {
		const char *p = r->h[i].value;
		if (strcasecmp(r->h[i].name, name))
			continue;
		while (*p) {
			while (*p == ' ' || *p == ',' || *p == '\t')
				p++;
			if (!strncasecmp(p, tok, tl) && (!p[tl] || p[tl] == ',' || p[tl] == ' '))
				return 1;
			while (*p && *p != ',')
				p++;
		}
	}
	return 0;
}

const char *ht_mime(const struct ht_resp *r, char *buf, size_t n)
{
	const char *v = ht_hdr(r, "Content-Type");
	size_t i = 0;

	if (!v)
		v = "";
	for (; v[i] && v[i] != ';' && v[i] != ' ' && i + 1 < n; i++)
		buf[i] = (char)tolower((unsigned char)v[i]);
	buf[i] = 0;
	return buf;
}

int ht_wait_close(struct ht_conn *c, int ms, size_t *extra)
{
	size_t before = c->len, got = c->len;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		int left, f;
		clock_gettime(CLOCK_MONOTONIC, &t);
		left = ms - (int)((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left < 0)
			left = 0;
		f = fill(c, left);
		if (f > 0) {	/* only counted */
			got += c->len - before;
			c->len = before;
		}
		if (f <= 0) {
			if (extra)
				*extra = got;
			return f == 0;
		}
	}
}

int ht_request(int port, const char *req, struct ht_resp *r)
{
	struct ht_conn *c = ht_connect(port);
	int rc;

	if (ht_sends(c, req) < 0) {
		memset(r, 0, sizeof(*r));
		snprintf(r->req, sizeof(r->req), "%s", req);
		snprintf(r->why, sizeof(r->why), "send: %s", strerror(errno));
		r->rc = HT_ECLOSED;
		/* the server may have answered and closed: read what is there */
	}
	rc = ht_read(c, r, !strncmp(req, "HEAD ", 5));
	ht_close(c);
	return rc;
}

int ht_get(int port, const char *path, const char *extra, struct ht_resp *r)
{
	char req[8192];
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n%s\r\n", path, extra ? extra : "");
	return ht_request(port, req, r);
}

int ht_still_serving(int port)
{
	struct ht_conn *c = ht_connect_opt(port, 0);
	struct ht_resp r;
	int save = ht_timeout_ms, served;

	if (!c)
		return 0;
	ht_timeout_ms = 2000;
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &r, 0);
	ht_timeout_ms = save;
	served = r.rc == HT_OK && r.status == 200;
	ht_resp_free(&r);
	ht_close(c);
	return served;
}

int ht_serving(struct ht_server *s, int port)
{
	for (int i = 0; i < 300; i++) {
		if (ht_still_serving(port))
			return 1;
		if (!ht_alive(s))
			return 0;
		usleep(100000);
	}
	return 0;
}
