/* SPDX-License-Identifier: MIT */
/*
 * The echo server of laio_server_libevent.c on the native uaio loop: the
 * same accept / read / write cycle, but every call is a uaio op and its
 * completion arrives as a callback (the Proactor form of the same
 * program; compare the two to see what LAIO's "call it as usual" buys).
 *
 *   example_laio_server_uaio [--port N] [--conns K] [--selftest]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uaio/loop.h>

struct conn {
	uaio_op op;
	int fd;
	long len, off;
	char buf[4096];
};

static struct server {
	uaio_loop *loop;
	int ls;
	uaio_op accept_op;
	long served, max_conns;
	int failed;
} srv;

static void on_read(uaio_op *op, int res, void *data);

static void conn_close(struct conn *c)
{
	close(c->fd);
	free(c);
	if (srv.max_conns && ++srv.served >= srv.max_conns)
		uaio_loop_stop(srv.loop);
}

static void conn_read(struct conn *c)
{
	if (uaio_op_recv(srv.loop, &c->op, c->fd, c->buf, sizeof(c->buf), 0,
			 on_read, c) < 0)
		conn_close(c);
}

static void on_write(uaio_op *op, int res, void *data)
{
	struct conn *c = data;

	if (res < 0) {
		conn_close(c);
		return;
	}
	c->off += res;
	if (c->off < c->len) {
		if (uaio_op_send(srv.loop, &c->op, c->fd, c->buf + c->off,
				 (size_t)(c->len - c->off), 0, on_write, c) < 0)
			conn_close(c);
		return;
	}
	conn_read(c);
}

static void on_read(uaio_op *op, int res, void *data)
{
	struct conn *c = data;

	if (res <= 0) {
		conn_close(c);
		return;
	}
	c->len = res;
	c->off = 0;
	if (uaio_op_send(srv.loop, &c->op, c->fd, c->buf, (size_t)res, 0,
			 on_write, c) < 0)
		conn_close(c);
}

static void on_accept(uaio_op *op, int res, void *data)
{
	if (res >= 0) {
		struct conn *c = calloc(1, sizeof(*c));

		if (!c) {
			close(res);
		} else {
			c->fd = res;
			conn_read(c);
		}
	} else if (res != -ECONNABORTED) {
		fprintf(stderr, "accept: %s\n", strerror(-res));
		srv.failed = 1;
		uaio_loop_stop(srv.loop);
		return;
	}
	if (uaio_op_accept(srv.loop, &srv.accept_op, srv.ls, NULL, NULL,
			   SOCK_CLOEXEC, on_accept, NULL) < 0) {
		srv.failed = 1;
		uaio_loop_stop(srv.loop);
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
	pthread_t th;
	struct client_args ca = { .conns = 8, .msgs = 50 };

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
	srv.loop = uaio_loop_new(NULL);
	if (!srv.loop || uaio_op_accept(srv.loop, &srv.accept_op, srv.ls, NULL, NULL,
					SOCK_CLOEXEC, on_accept, NULL) < 0) {
		perror("uaio");
		return 1;
	}
	if (selftest) {
		ca.port = ntohs(sa.sin_port);
		pthread_create(&th, NULL, client, &ca);
	}
	uaio_loop_run(srv.loop);
	/* Stopped with the accept still in flight: freeing the loop drops it. */
	uaio_loop_free(srv.loop);
	close(srv.ls);
	if (selftest) {
		pthread_join(th, NULL);
		printf("selftest: %s\n", ca.ok && !srv.failed ? "ok" : "FAILED");
		return ca.ok && !srv.failed ? 0 : 1;
	}
	return srv.failed;
}
