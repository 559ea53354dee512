/* SPDX-License-Identifier: MIT */
/*
 * An event-driven echo server on libevent that makes its I/O through
 * laio_syscall(), as the LAIO paper's servers did: every call is written
 * as if it were blocking; the few that would block finish in the
 * background and libevent learns of them through laio_fd().
 *
 *   example_laio_server_libevent [--port N] [--conns K] [--selftest]
 *
 * Listens on 127.0.0.1 (port 0 = ephemeral), prints "port N", and exits
 * after K connections have been served (0 = never). --selftest runs a
 * client thread against itself and exits 0 when every echo came back.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uaio/laio.h>

enum { ST_ACCEPT, ST_READ, ST_WRITE };

struct conn {
	int fd;
	int state;
	void *pending;			/* laio handle of the background call */
	long len, off;
	char buf[4096];
	struct conn *next;
};

static struct server {
	struct event_base *base;
	int ls;
	struct conn acceptor;		/* fd = -1: the accept "connection" */
	struct conn *conns;		/* with a background call */
	long served, max_conns;
	int failed;
} srv;

#define PENDING LONG_MIN

/* Issues c's next call: its result (or -errno), or PENDING when it went
 * to the background (c is then on srv.conns until its completion). */
static long conn_issue(struct conn *c)
{
	long r;

	switch (c->state) {
	case ST_ACCEPT:
		r = laio_syscall(SYS_accept4, srv.ls, NULL, NULL, SOCK_CLOEXEC);
		break;
	case ST_READ:
		r = laio_syscall(SYS_read, c->fd, c->buf, sizeof(c->buf));
		break;
	default:
		r = laio_syscall(SYS_write, c->fd, c->buf + c->off, c->len - c->off);
		break;
	}
	if (r == -1 && errno == EINPROGRESS && laio_gethandle()) {
		c->pending = laio_gethandle();
		c->next = srv.conns;
		srv.conns = c;
		return PENDING;
	}
	return r == -1 ? -errno : r;
}

static void conn_close(struct conn *c)
{
	close(c->fd);
	free(c);
	if (srv.max_conns && ++srv.served >= srv.max_conns)
		event_base_loopexit(srv.base, NULL);
}

/* r: the call's result or -errno. */
static void conn_step(struct conn *c, long r)
{
	for (;;) {
		switch (c->state) {
		case ST_ACCEPT:
			if (r >= 0) {
				struct conn *n = calloc(1, sizeof(*n));
				if (!n) {
					close((int)r);
					break;
				}
				long nr;

				n->fd = (int)r;
				n->state = ST_READ;
				if ((nr = conn_issue(n)) != PENDING)
					conn_step(n, nr);
			} else if (r != -EAGAIN && r != -ECONNABORTED) {
				fprintf(stderr, "accept: %s\n", strerror((int)-r));
				srv.failed = 1;
				event_base_loopexit(srv.base, NULL);
				return;
			}
			break;	/* accept the next one */
		case ST_READ:
			if (r <= 0) {
				conn_close(c);
				return;
			}
			c->len = r;
			c->off = 0;
			c->state = ST_WRITE;
			break;
		case ST_WRITE:
			if (r < 0) {
				conn_close(c);
				return;
			}
			c->off += r;
			if (c->off == c->len)
				c->state = ST_READ;
			break;
		}
		/* the next call; loop here while calls complete inline */
		if ((r = conn_issue(c)) == PENDING)
			return;
	}
}

/* laio_fd() is readable: collect completions and resume their conns. */
static void on_laio(evutil_socket_t fd, short what, void *arg)
{
	struct laio_completion cs[64];
	struct timespec zero = { 0, 0 };
	int n;

	while ((n = laio_poll(cs, 64, &zero)) > 0) {
		for (int i = 0; i < n; i++) {
			struct conn **pp = &srv.conns, *c;

			while ((c = *pp) && c->pending != cs[i].laio_handle)
				pp = &c->next;
			if (!c)
				continue;
			*pp = c->next;
			c->pending = NULL;
			conn_step(c, cs[i].laio_return_value == -1 ?
				  -cs[i].laio_errno : cs[i].laio_return_value);
		}
	}
}

/* ----------------------------------------------------------- self-test */

struct client_args { int port, conns, msgs, ok; };

static void *client(void *arg)
{
	struct client_args *a = arg;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(a->port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	a->ok = 1;
	for (int c = 0; c < a->conns && a->ok; c++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			a->ok = 0;
			break;
		}
		for (int m = 0; m < a->msgs && a->ok; m++) {
			char out[64], in[64];
			int len = snprintf(out, sizeof(out), "conn %d msg %d", c, m), got = 0;
			if (write(s, out, len) != len)
				a->ok = 0;
			while (a->ok && got < len) {
				ssize_t k = read(s, in + got, sizeof(in) - got);
				if (k <= 0)
					a->ok = 0;
				else
					got += (int)k;
			}
			if (a->ok && (got != len || memcmp(in, out, len)))
				a->ok = 0;
		}
		close(s);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int port = 0, selftest = 0, one = 1;
	struct event *ev;
	pthread_t th;
	struct client_args ca = { .conns = 8, .msgs = 50 };
	long r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--conns") && i + 1 < argc)
			srv.max_conns = atol(argv[++i]);
		else if (!strcmp(argv[i], "--selftest"))
			selftest = 1;
		else {
			fprintf(stderr, "usage: %s [--port N] [--conns K] [--selftest]\n", argv[0]);
			return 2;
		}
	}
	if (selftest)
		srv.max_conns = ca.conns;
	srv.ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_port = htons(port);
	setsockopt(srv.ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (srv.ls < 0 || bind(srv.ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(srv.ls, 64) < 0 || getsockname(srv.ls, (struct sockaddr *)&sa, &sl) < 0) {
		perror("listen");
		return 1;
	}
	printf("port %d\n", ntohs(sa.sin_port));
	fflush(stdout);
	srv.base = event_base_new();
	ev = event_new(srv.base, laio_fd(), EV_READ | EV_PERSIST, on_laio, NULL);
	if (!srv.base || !ev || event_add(ev, NULL) < 0) {
		fprintf(stderr, "libevent setup failed\n");
		return 1;
	}
	srv.acceptor.fd = -1;
	srv.acceptor.state = ST_ACCEPT;
	if ((r = conn_issue(&srv.acceptor)) != PENDING)
		conn_step(&srv.acceptor, r);
	if (selftest) {
		ca.port = ntohs(sa.sin_port);
		pthread_create(&th, NULL, client, &ca);
	}
	event_base_dispatch(srv.base);
	if (selftest) {
		pthread_join(th, NULL);
		printf("selftest: %s\n", ca.ok && !srv.failed ? "ok" : "FAILED");
		return ca.ok && !srv.failed ? 0 : 1;
	}
	return srv.failed;
}
