/* SPDX-License-Identifier: MIT */
/*
 * One server per thread, each with its own loop and listening socket
 * (SO_REUSEPORT spreads connections over them): accepting, the sweep
 * that enforces timeouts and flushes the log, buffer pools, and the
 * graceful stop on SIGTERM.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <uaio/laio.h>
#include "httpd.h"


static void arm_accept(struct server *s);

uint64_t server_now_ms(struct server *s)
{
	return uaio_loop_now(s->loop) / 1000000u;
}

const char *server_date(struct server *s)
{
	time_t now = time(NULL);

	if (now != s->date_sec) {
		s->date_sec = now;
		proto_date(now, s->date);
		s->head200_len = (size_t)snprintf(s->head200, sizeof(s->head200),
						  "HTTP/1.1 200 OK\r\nServer: " HTTPD_NAME
						  "\r\nDate: %s\r\n", s->date);
	}
	return s->date;
}

const char *server_head200(struct server *s, size_t *len)
{
	server_date(s);
	*len = s->head200_len;
	return s->head200;
}

/* Pools of read buffers and body buffers: the first word links them. */
char *server_buf(struct server *s, bool body)
{
	char **pool = body ? &s->body_pool : &s->pool;
	char *b = *pool;

	if (b) {
		*pool = *(char **)b;
		body ? s->nbody_pool-- : s->npool--;
		return b;
	}
	return malloc(body ? HTTPD_BODY_BUF : sizeof(struct request) + HTTPD_RBUF);
}

void server_buf_put(struct server *s, char *b, bool body)
{
	unsigned *n = body ? &s->nbody_pool : &s->npool;
	char **pool = body ? &s->body_pool : &s->pool;

	if (*n >= HTTPD_POOL_KEEP) {
		free(b);
		return;
	}
	*(char **)b = *pool;
	*pool = b;
	++*n;
}

static void on_accept(uaio_op *op, int res, void *data)
{
	struct server *s = data;

	if (res >= 0) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int one = 1;

		setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (s->log && getpeername(res, (struct sockaddr *)&ss, &sl) == 0)
			conn_accepted(s, res, (struct sockaddr *)&ss);
		else
			conn_accepted(s, res, NULL);
	}
	if (uaio_op_more(op))
		return;
	s->accept_live = false;
	if (!s->accepting) {
		server_maybe_stop(s);
		return;
	}
	if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM)
		uaio_timer_start(s->loop, &s->retry, 100000000ull, 0);	/* let some close */
	else
		arm_accept(s);
}

static void arm_accept(struct server *s)
{
	if (!s->accepting)
		return;
	if (uaio_op_accept_multishot(s->loop, &s->accept_op, s->lfd, SOCK_CLOEXEC | SOCK_NONBLOCK,
				     on_accept, s) < 0)
		uaio_timer_start(s->loop, &s->retry, 100000000ull, 0);
	else
		s->accept_live = true;
}

static void on_retry(uaio_timer *t)
{
	arm_accept(t->data);
}

static void on_sweep(uaio_timer *t)
{
	struct server *s = t->data;

	conn_sweep(s, server_now_ms(s));
	files_sweep(s->files);
	if (s->log)
		log_flush(s);
	/* Stopping: a log write that does not come back (a FIFO nobody
	 * reads) holds the stop no longer than a lingering close may. */
	if (s->draining && s->log && !log_idle(s->log))
		log_give_up(s->log);
}

static int on_laio(uaio_watch *w)
{
	hub_poll(w->data);
	return 0;
}

static const struct uaio_handler laio_handler = { .handle_input = on_laio };

int server_init(struct server *s, const struct httpd_config *cfg, int lfd)
{
	unsigned shortest = cfg->idle_timeout_ms, period;

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->lfd = lfd;
	if (!(s->loop = uaio_loop_new(NULL)))
		return -errno;
	proto_settings(&s->settings);
	if (!(s->files = files_new(s)))
		return -ENOMEM;
	if (cfg->log_fd >= 0 && !(s->log = log_new(s, cfg->log_fd)))
		return -ENOMEM;
	/* The sweep runs often enough to honour the shortest timeout within
	 * a quarter of it, and at least once a second for the log. */
	if (cfg->header_timeout_ms < shortest)
		shortest = cfg->header_timeout_ms;
	if (cfg->send_timeout_ms < shortest)
		shortest = cfg->send_timeout_ms;
	period = shortest / 4;
	period = period < 50 ? 50 : period > 1000 ? 1000 : period;
	uaio_timer_init(&s->sweep, on_sweep, s);
	uaio_timer_init(&s->retry, on_retry, s);
	uaio_timer_init(&s->resume, conn_resume, s);
	uaio_timer_start(s->loop, &s->sweep, period * 1000000ull, period * 1000000ull);
	if (cfg->disk_io == DISK_LAIO) {
		int fd = laio_fd();

		if (fd < 0)
			return -errno;
		if (uaio_watch_start(s->loop, &s->laio_watch, fd, UAIO_READABLE,
				     &laio_handler, s) == 0)
			s->laio_watching = true;
	}
	s->accepting = true;
	s->lfd_open = true;
	arm_accept(s);
	return 0;
}

int server_run(struct server *s)
{
	int r = uaio_loop_run(s->loop);

	return r < 0 ? r : 0;
}

static void lfd_closed(uaio_op *op, int res, void *data)
{
	struct server *s = data;

	(void)op;
	(void)res;
	s->lfd_open = false;
	server_maybe_stop(s);
}

/* SIGTERM: stop accepting, close idle connections, let the others finish
 * their response (each closes after it), then stop. */
void server_drain(void *arg)
{
	struct server *s = arg;

	if (s->draining)
		return;
	s->draining = true;
	s->accepting = false;
	uaio_timer_stop(s->loop, &s->retry);
	if (uaio_op_close(s->loop, &s->close_op, s->lfd, lfd_closed, s) < 0) {
		shutdown(s->lfd, SHUT_RDWR);	/* ends the accept, which holds the socket */
		close(s->lfd);
		s->lfd_open = false;
	}
	conn_sweep(s, server_now_ms(s));
	server_maybe_stop(s);
}

void server_maybe_stop(struct server *s)
{
	if (!s->draining || s->nconns || s->stopped || s->accept_live || s->lfd_open)
		return;
	if (s->log) {
		log_flush(s);
		if (!log_idle(s->log))
			return;	/* the write's completion calls back here */
	}
	s->stopped = true;
	uaio_timer_stop(s->loop, &s->sweep);
	if (s->laio_watching)
		uaio_watch_stop(s->loop, &s->laio_watch);
	uaio_loop_stop(s->loop);
}

void server_fini(struct server *s)
{
	files_free(s->files);
	if (s->loop)
		uaio_loop_free(s->loop);
	log_free(s->log);
	while (s->pool) {
		char *b = s->pool;

		s->pool = *(char **)b;
		free(b);
	}
	while (s->body_pool) {
		char *b = s->body_pool;

		s->body_pool = *(char **)b;
		free(b);
	}
	while (s->resp_pool) {
		struct resp *r = s->resp_pool;

		s->resp_pool = r->next_free;
		free(r);
	}
}
