/* SPDX-License-Identifier: MIT */
/*
 * A connection's life. Idle connections hold no buffer: the read buffer
 * comes from the server's pool when bytes arrive and goes back when the
 * last pipelined request is answered. Readiness is edge-triggered (one
 * multishot poll per connection on io_uring); maybe_more remembers an
 * edge that was not drained because a response was under way.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "httpd.h"

static int on_input(uaio_watch *w);
static int on_output(uaio_watch *w);
static void on_close(uaio_watch *w, int reason);
static const struct uaio_handler handler = { on_input, on_output, on_close };

static void conn_read(struct conn *c);
static void conn_parse(struct conn *c);
static void conn_drain(struct conn *c);

static void set_deadline(struct conn *c, unsigned ms)
{
	c->deadline_ms = ms ? server_now_ms(c->srv) + ms : 0;
}

/* A response starts sending, or its bytes moved: the send timeout runs
 * from now. */
void conn_send_clock(struct conn *c)
{
	set_deadline(c, c->srv->cfg->send_timeout_ms);
}

static void peer_name(struct conn *c, const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
			  c->peer, sizeof(c->peer));
	else if (sa->sa_family == AF_INET6 &&
		 IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)sa)->sin6_addr))
		/* an IPv4 client of the dual-stack socket: as IPv4 */
		inet_ntop(AF_INET, &((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr[12],
			  c->peer, sizeof(c->peer));
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr,
			  c->peer, sizeof(c->peer));
	else
		strcpy(c->peer, "-");
}

void conn_accepted(struct server *s, int fd, const struct sockaddr *sa)
{
	static const char busy[] =
		"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
		"Connection: close\r\n\r\n";
	struct conn *c;

	/* (Stopping, one the kernel had accepted already is served: the
	 * request that came with it is answered, and the connection then
	 * closed, as nginx serves what it accepted; a 503 would be an
	 * error to the client, where a close before any answer is retried.) */
	if (s->nconns >= s->cfg->max_conns || !(c = calloc(1, sizeof(*c)))) {
		/* Refused cleanly: a fresh socket always has room for this.
		 * The request that came already is read and dropped: closing
		 * with it unread would answer with a reset, which can destroy
		 * the 503 before the client reads it. */
		struct conn refused = { .srv = s };
		char junk[4096];

		(void)!send(fd, busy, sizeof(busy) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (sa)
			peer_name(&refused, sa);
		log_request(s, &refused, 503, 0);	/* request unread: "-" */
		shutdown(fd, SHUT_WR);
		for (int i = 0; i < 16 &&	/* a head's worth, no more */
		     recv(fd, junk, sizeof(junk), MSG_DONTWAIT) > 0; i++)
			;
		close(fd);
		return;
	}
	c->srv = s;
	c->fd = fd;
	c->state = C_IDLE;
	if (sa)
		peer_name(c, sa);
	proto_parser_init(&c->parser, &s->settings);
	if (uaio_watch_start(s->loop, &c->watch, fd, UAIO_READABLE | UAIO_EDGE,
			     &handler, c) < 0) {
		close(fd);
		free(c);
		return;
	}
	c->watching = true;
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->nconns++;
	/* A new connection owes its first request head within the header
	 * timeout, as nginx's client_header_timeout: a silent one must not
	 * hold a slot for the idle timeout. */
	set_deadline(c, s->cfg->header_timeout_ms);
}

/* Frees the connection once nothing refers to it any more: the watch has
 * said goodbye and no disk call or flow is owed a callback. */
static void conn_try_free(struct conn *c)
{
	struct server *s = c->srv;

	if (c->state != C_CLOSING || c->watching || c->waiting || c->deferred ||
	    (c->resp && !resp_idle(c)))
		return;
	resp_free(c);
	if (c->close_after)
		shutdown(c->fd, SHUT_WR);
	close(c->fd);
	if (c->rbuf)
		server_buf_put(s, (char *)c->req, false);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->nconns--;
	free(c);
	server_maybe_stop(s);
}

void conn_close(struct conn *c)
{
	if (c->state == C_CLOSING)
		return;
	c->state = C_CLOSING;
	c->deadline_ms = 0;
	if (c->resp)
		resp_cancel(c);
	if (c->watching)
		uaio_watch_stop(c->srv->loop, &c->watch);
	conn_try_free(c);
}

void conn_released(struct conn *c)
{
	conn_try_free(c);
}

static void on_close(uaio_watch *w, int reason)
{
	struct conn *c = w->data;

	c->watching = false;
	if (c->state != C_CLOSING)
		conn_close(c);
	else
		conn_try_free(c);
}

static int on_input(uaio_watch *w)
{
	struct conn *c = w->data;

	c->maybe_more = true;
	if (c->deferred)	/* its next turn reads this too */
		return 0;
	c->turn = 0;
	if (c->state == C_IDLE || c->state == C_HEAD)
		conn_read(c);
	else if (c->state == C_LINGER)
		conn_drain(c);
	return 0;
}

static int on_output(uaio_watch *w)
{
	struct conn *c = w->data;

	if (!c->send_wait)
		return 0;
	c->send_wait = false;
	uaio_watch_modify(c->srv->loop, &c->watch, UAIO_READABLE | UAIO_EDGE);
	resp_continue(c);
	return 0;
}

void conn_want_write(struct conn *c)
{
	c->send_wait = true;
	uaio_watch_modify(c->srv->loop, &c->watch,
			  UAIO_READABLE | UAIO_WRITABLE | UAIO_EDGE);
}

int conn_send(struct conn *c, struct iovec *iov, int *iovcnt, bool more)
{
	struct msghdr mh = { 0 };
	ssize_t n;

	while (*iovcnt > 0) {
		mh.msg_iov = iov;
		mh.msg_iovlen = (size_t)*iovcnt;
		n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -errno;
		}
		conn_send_clock(c);
		while (*iovcnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			memmove(iov, iov + 1, (size_t)--*iovcnt * sizeof(*iov));
		}
		if (*iovcnt > 0 && n > 0) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
			return 0;	/* short: the socket is full */
		}
	}
	return 1;
}

static void conn_read(struct conn *c)
{
	struct server *s = c->srv;

	while (c->maybe_more && !c->deferred && (c->state == C_IDLE || c->state == C_HEAD)) {
		size_t room;
		ssize_t n;

		if (!c->rbuf) {
			/* The request's record shares the buffer's allocation:
			 * an idle connection holds neither. */
			char *b = server_buf(s, false);

			if (!b) {
				conn_close(c);
				return;
			}
			c->req = (struct request *)b;
			c->req->start = NULL;
			c->rbuf = b + sizeof(struct request);
			c->parser.data = c->req;
		}
		room = HTTPD_RBUF - c->rlen;
		if (room == 0)
			break;		/* conn_parse has judged the full buffer */
		n = recv(c->fd, c->rbuf + c->rlen, room, MSG_DONTWAIT);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				c->maybe_more = false;
				break;
			}
			conn_close(c);	/* closed by the peer, or reset */
			return;
		}
		/* A short read drained the socket; a later byte is a new edge.
		 * Not so the end of file queued behind it, of which the edge
		 * already told: it is read, so a half-closed or vanished client
		 * ends when its last request is answered. */
		if ((size_t)n < room && !uaio_watch_peer_closed(&c->watch))
			c->maybe_more = false;
		if (c->state == C_IDLE) {
			c->state = C_HEAD;
			set_deadline(c, s->cfg->header_timeout_ms);
		}
		c->rlen += (uint32_t)n;
		conn_parse(c);
	}
	if (c->rbuf && c->rlen == 0 && c->state == C_IDLE) {
		server_buf_put(s, (char *)c->req, false);
		c->rbuf = NULL;
		c->req = NULL;
	}
}

static void request_begin(struct conn *c)
{
	proto_reset(c->req, c->rbuf + c->rparsed);
}

static bool tchar(char ch)
{
	return isalnum((unsigned char)ch) || (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* What a request llhttp refused gets: 501 for a method it does not
 * know that is still a method token (RFC 9110 9.1), else 400 (a version
 * that is not DIGIT.DIGIT among them: known ones reach proto_verdict). */
static int parse_status(struct conn *c, llhttp_errno_t e)
{
	const char *p = c->req->start, *end = c->rbuf + c->rlen;
	const char *sp;

	while (p && p < end && (*p == '\r' || *p == '\n'))	/* empty lines before it */
		p++;
	if (e != HPE_INVALID_METHOD || !p || !(sp = memchr(p, ' ', (size_t)(end - p))) ||
	    sp == p)
		return 400;
	for (; p < sp; p++)
		if (!tchar(*p))
			return 400;
	return 501;
}

/* A method llhttp refused before the space after it came, a token so
 * far: 501 or 400 is told by the rest (the answer must not depend on
 * how the bytes were cut into segments). */
static bool method_unfinished(const struct conn *c, llhttp_errno_t e)
{
	const char *p = c->req->start, *end = c->rbuf + c->rlen;

	if (e != HPE_INVALID_METHOD || !p || end - p >= HTTPD_HEAD_MAX)
		return false;
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	for (; p < end; p++)
		if (!tchar(*p))
			return false;
	return true;
}

/* A head past HTTPD_HEAD_MAX: 414 when the request line alone is (its
 * target, as nginx), else 431. */
static int too_big_status(const struct conn *c)
{
	return c->req->line_done || c->req->head_done ? 431 : 414;
}

/* c's turn is over with requests left: the next comes at the next
 * iteration, after the other connections' and the log's. */
static void conn_defer(struct conn *c)
{
	struct server *s = c->srv;

	c->deferred = true;
	c->defer_next = s->deferred;	/* each is resumed in the next pass */
	s->deferred = c;
	if (!uaio_timer_pending(&s->resume))
		uaio_timer_start(s->loop, &s->resume, 0, 0);
}

void conn_resume(uaio_timer *t)
{
	struct server *s = t->data;
	struct conn *c = s->deferred, *n;

	s->deferred = NULL;
	for (; c; c = n) {
		n = c->defer_next;
		c->deferred = false;
		c->turn = 0;
		if (c->state == C_CLOSING) {
			conn_try_free(c);
			continue;
		}
		if (c->state == C_LINGER) {
			conn_drain(c);
			continue;
		}
		conn_parse(c);
		if (!c->deferred && (c->state == C_IDLE || c->state == C_HEAD))
			conn_read(c);
	}
}

/* Whether a head ends a line with LF alone; the empty lines before it
 * are none of its lines (RFC 9112 2.2 has them ignored). */
static bool bare_lf(const char *p, const char *end)
{
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))); q++)
		if (q == p || q[-1] != '\r')
			return true;
	return false;
}

/* Feeds llhttp what it has not seen; answers each complete request. */
static void conn_parse(struct conn *c)
{
	c->in_parse = true;
	while (c->state == C_HEAD && c->rparsed < c->rlen) {
		const char *from = c->rbuf + c->rparsed;
		llhttp_errno_t e;

		if (!c->req->start) {
			if (c->turn >= HTTPD_TURN) {
				conn_defer(c);
				break;
			}
			c->turn++;
			request_begin(c);
		}
		e = llhttp_execute(&c->parser, from, c->rlen - c->rparsed);
		if (e == HPE_OK) {
			c->rparsed = c->rlen;
			if (!c->req->head_done &&
			    c->rlen - (uint32_t)(c->req->start - c->rbuf) >= HTTPD_HEAD_MAX) {
				c->close_after = true;
				respond_error(c, too_big_status(c));
			} else if (proto_unversioned(c->req, c->rbuf + c->rlen)) {
				c->close_after = true;	/* not after the timeout */
				respond_error(c, 400);
			}
			break;
		}
		c->rparsed = (uint32_t)(llhttp_get_error_pos(&c->parser) - c->rbuf);
		/* (paused where the head ends: the message's end, or the
		 * head of one with a body, which is never read) */
		if (e == HPE_PAUSED && c->req->head_done &&
		    (c->rbuf[c->rparsed - 1] != '\n' ||
		     bare_lf(c->req->start, c->rbuf + c->rparsed))) {
			/* llhttp 8.1.0 (bookworm's), built loose, takes any
			 * byte after the head's last CR for its LF (fixed in
			 * 8.1.1): a bare CR ends no head (RFC 9112 2.2), and
			 * a hop that reads it otherwise sees other requests.
			 * A bare LF ends no line of it either: llhttp took
			 * one after some lines and not after others, and one
			 * rule leaves other hops less to read otherwise. */
			c->close_after = true;
			respond_error(c, 400);
			continue;
		}
		if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE) {
			if (e == HPE_PAUSED_UPGRADE || c->req->has_body)
				c->close_after = true;
			respond(c);	/* may finish at once: the loop goes on */
			continue;
		}
		if (method_unfinished(c, e)) {	/* parsed again with more */
			llhttp_reset(&c->parser);
			c->rparsed = (uint32_t)(c->req->start - c->rbuf);
			c->req->start = NULL;
			break;
		}
		c->close_after = true;
		respond_error(c, c->req->too_big ? too_big_status(c) : parse_status(c, e));
	}
	c->in_parse = false;
}

/* The next pipelined request, or idle: the buffer's rest moves to its
 * start (llhttp holds no pointer into it between messages). */
static void conn_linger(struct conn *c);

static void conn_next(struct conn *c)
{
	struct server *s = c->srv;
	uint32_t rest = c->rlen - c->rparsed;

	if (rest && c->rparsed)
		memmove(c->rbuf, c->rbuf + c->rparsed, rest);
	c->rlen = rest;
	c->rparsed = 0;
	c->req->start = NULL;
	llhttp_resume(&c->parser);
	if (rest) {
		c->state = C_HEAD;
		set_deadline(c, s->cfg->header_timeout_ms);
	} else {
		c->state = C_IDLE;
		set_deadline(c, s->cfg->idle_timeout_ms);
		if (s->draining) {
			/* a pipelined request may be in the socket: a
			 * plain close would reset the response's tail */
			conn_linger(c);
			return;
		}
	}
	if (!c->in_parse) {	/* a response that ended later: a new turn */
		c->turn = 0;
		conn_parse(c);
		if (c->state == C_IDLE || c->state == C_HEAD)
			conn_read(c);
	}
}

/* Reads and drops what a lingering client still sends, until it closes
 * or goes quiet; a turn's worth at a time (HTTPD_LINGER_TURN reads), as a
 * client that keeps sending would otherwise hold the loop. */
static void conn_drain(struct conn *c)
{
	uint64_t now = server_now_ms(c->srv);
	char junk[16384];
	ssize_t n;

	for (int reads = 0;; reads++) {
		if (reads == HTTPD_LINGER_TURN) {
			conn_defer(c);	/* the rest at its next turn */
			return;
		}
		n = recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT);
		if (n > 0) {
			c->deadline_ms = now + HTTPD_LINGER_MS < c->linger_end_ms ?
					 now + HTTPD_LINGER_MS : c->linger_end_ms;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		conn_close(c);		/* the client closed, or reset */
		return;
	}
}

/* A connection that ends after its response while the client may still
 * be sending (an unread body, the rest of a head refused before its end,
 * pipelined requests, bytes in the socket):
 * closing with unread bytes makes the kernel answer with a reset, which
 * can destroy the response before the client has read it (RFC 9112 9.6).
 * So the write side closes first, and what comes is read and dropped
 * until the client closes or goes quiet, as nginx's lingering close. */
static void conn_linger(struct conn *c)
{
	struct server *s = c->srv;
	int unread = 0;

	if (!(c->req && (!c->req->head_done || c->req->has_body ||
			 c->rparsed < c->rlen)) &&
	    !(ioctl(c->fd, FIONREAD, &unread) == 0 && unread > 0)) {
		conn_close(c);
		return;
	}
	resp_free(c);
	shutdown(c->fd, SHUT_WR);
	c->close_after = false;
	if (c->rbuf) {
		server_buf_put(s, (char *)c->req, false);
		c->rbuf = NULL;
		c->req = NULL;
		c->rlen = c->rparsed = 0;
	}
	c->state = C_LINGER;
	c->linger_end_ms = server_now_ms(s) + HTTPD_LINGER_MAX_MS;
	set_deadline(c, HTTPD_LINGER_MS);
	conn_drain(c);
}

void conn_response_done(struct conn *c, bool ok)
{
	struct server *s = c->srv;

	s->requests++;
	if (!ok) {
		conn_close(c);
		return;
	}
	if (c->close_after) {
		conn_linger(c);
		return;
	}
	resp_free(c);
	conn_next(c);
	/* In conn_parse's loop the next request is taken there; data that
	 * arrived meanwhile is read when the loop unwinds to conn_read. */
}

void conn_sweep(struct server *s, uint64_t now_ms)
{
	for (struct conn *c = s->conns, *n; c; c = n) {
		n = c->next;
		if (c->state == C_CLOSING)
			continue;
		if (s->draining && c->state == C_IDLE) {
			conn_linger(c);
			continue;
		}
		/* Stopping: a lingering client holds the server one quiet
		 * period at most, however it trickles. */
		if (s->draining && c->state == C_LINGER &&
		    c->linger_end_ms > now_ms + HTTPD_LINGER_MS) {
			c->linger_end_ms = now_ms + HTTPD_LINGER_MS;
			if (c->deadline_ms > c->linger_end_ms)
				c->deadline_ms = c->linger_end_ms;
		}
		if (c->deadline_ms && now_ms >= c->deadline_ms) {
			/* A slow request head gets 408 if the socket has room. */
			if (c->state == C_HEAD && !c->resp) {
				char t[160];
				int n = snprintf(t, sizeof(t),
					"HTTP/1.1 408 Request Timeout\r\nServer: " HTTPD_NAME
					"\r\nDate: %s\r\nContent-Length: 0\r\n"
					"Connection: close\r\n\r\n", server_date(s));

				(void)!send(c->fd, t, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
				log_request(s, c, 408, 0);	/* as nginx logs it */
			}
			c->close_after = false;
			conn_close(c);
		}
	}
}
