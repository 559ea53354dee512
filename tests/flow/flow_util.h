/* SPDX-License-Identifier: MIT */
/* Endpoints for flow tests: files, pipes, Unix and TCP sockets, devices
 * and memory, each with a peer thread that feeds or drains the far end,
 * and a runner that waits for a flow's end. */
#ifndef UAIO_TEST_FLOW_UTIL_H
#define UAIO_TEST_FLOW_UTIL_H
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uaio/flow.h>
#include <uaio/loop.h>

#include "test.h"

enum { E_FILE, E_PIPE, E_UNIX, E_TCP, E_MEM, E_DEV, E_COUNT };
static const char *const e_names[E_COUNT] = { "file", "pipe", "unix", "tcp", "mem", "dev" };

struct end {
	int kind;
	int fd;			/* the flow's side */
	int peer;		/* the thread's side */
	char *buf;		/* feed: the data; drain: what arrived */
	size_t n, cap, got;
	pthread_t th;
	bool has_th;
};

static inline void t_fill(char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (char)(x >> 16);
	}
}

static inline int t_tmpfile(const char *dir)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/uaio-flow-XXXXXX", dir);
	fd = mkstemp(path);
	CHECK(fd >= 0);
	unlink(path);
	return fd;
}

/* A connected TCP pair over loopback; sv[0]'s send buffer and sv[1]'s
 * receive buffer set before the connection when not 0 (a window once
 * offered is never taken back). */
static inline void t_tcp_pair_bufs(int sv[2], int sndbuf, int rcvbuf)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(ls >= 0);
	if (rcvbuf)	/* the accepted socket inherits it */
		CHECK(setsockopt(ls, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) == 0);
	CHECK(bind(ls, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(ls, 1) == 0);
	CHECK(getsockname(ls, (struct sockaddr *)&a, &al) == 0);
	sv[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(sv[0] >= 0);
	if (sndbuf)
		CHECK(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) == 0);
	CHECK(connect(sv[0], (struct sockaddr *)&a, sizeof(a)) == 0);
	sv[1] = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	CHECK(sv[1] >= 0);
	close(ls);
}

/* A connected TCP pair over loopback. */
static inline void t_tcp_pair(int sv[2])
{
	t_tcp_pair_bufs(sv, 0, 0);
}

static void *feeder(void *arg)
{
	struct end *e = arg;
	size_t off = 0;

	while (off < e->n) {
		ssize_t w = write(e->peer, e->buf + off, e->n - off);

		if (w <= 0)
			break;		/* the flow went away early */
		off += (size_t)w;
	}
	close(e->peer);
	return NULL;
}

/* Reads until the n bytes expected have come (and then what else is
 * there at once), or EOF. Not EOF alone: on io_uring a splice's request
 * may hold the pipe's write end a moment after the flow is done (see
 * docs/flows.md, limits), so the last close is not the end for sure. */
static void *drainer(void *arg)
{
	struct end *e = arg;

	for (;;) {
		if (e->got >= e->n)
			fcntl(e->peer, F_SETFL, fcntl(e->peer, F_GETFL) | O_NONBLOCK);
		ssize_t r;

		if (e->got == e->cap) {
			e->cap = e->cap ? e->cap * 2 : 65536;
			e->buf = realloc(e->buf, e->cap);
		}
		r = read(e->peer, e->buf + e->got, e->cap - e->got);
		if (r <= 0)
			break;
		e->got += (size_t)r;
	}
	return NULL;
}

static inline void t_stream(struct end *e, bool src)
{
	int sv[2];

	if (e->kind == E_PIPE) {
		CHECK(pipe2(sv, O_CLOEXEC) == 0);
		e->fd = src ? sv[0] : sv[1];
		e->peer = src ? sv[1] : sv[0];
		return;
	}
	if (e->kind == E_UNIX)
		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	else
		t_tcp_pair(sv);
	e->fd = sv[0];
	e->peer = sv[1];
}

/* A source of kind holding data[0..n) ("dev": /dev/zero, n zeros). */
static inline void t_src(struct end *e, int kind, const char *data, size_t n, const char *dir)
{
	*e = (struct end){ .kind = kind, .fd = -1, .peer = -1, .n = n };
	e->buf = malloc(n ? n : 1);
	memcpy(e->buf, data, n);
	switch (kind) {
	case E_FILE:
		e->fd = t_tmpfile(dir);
		CHECK_EQ(pwrite(e->fd, data, n, 0), (ssize_t)n);
		break;
	case E_MEM:
		break;
	case E_DEV:
		memset(e->buf, 0, n);
		e->fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
		break;
	default:
		t_stream(e, true);
		CHECK(pthread_create(&e->th, NULL, feeder, e) == 0);
		e->has_th = true;
	}
}

/* A sink of kind for n bytes ("dev": /dev/null). */
static inline void t_dst(struct end *e, int kind, size_t n, const char *dir)
{
	*e = (struct end){ .kind = kind, .fd = -1, .peer = -1, .n = n };
	switch (kind) {
	case E_FILE:
		e->fd = t_tmpfile(dir);
		break;
	case E_MEM:
		e->cap = n ? n : 1;
		e->buf = calloc(1, e->cap);
		break;
	case E_DEV:
		e->fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		break;
	default:
		t_stream(e, false);
		CHECK(pthread_create(&e->th, NULL, drainer, e) == 0);
		e->has_th = true;
	}
}

static inline struct uaio_flow_ep t_ep(const struct end *e)
{
	if (e->kind == E_MEM)
		return (struct uaio_flow_ep){ .type = UAIO_FLOW_MEM, .mem = e->buf,
					      .mem_len = e->cap ? e->cap : (e->n ? e->n : 1),
					      .buf_index = -1 };
	return (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = e->fd,
				      .off = e->kind == E_FILE ? 0 : -1 };
}

/* Closes the flow's side (a drainer then sees EOF) and gathers what the
 * sink holds into e->buf / e->got. */
static inline void t_dst_finish(struct end *e)
{
	struct stat st;

	switch (e->kind) {
	case E_FILE:
		CHECK(fstat(e->fd, &st) == 0);
		e->got = (size_t)st.st_size;
		e->buf = malloc(e->got ? e->got : 1);
		CHECK_EQ(pread(e->fd, e->buf, e->got, 0), (ssize_t)e->got);
		close(e->fd);
		break;
	case E_MEM:
		e->got = e->n;
		break;
	case E_DEV:
		close(e->fd);
		break;
	default:
		if (e->kind != E_PIPE)
			shutdown(e->fd, SHUT_WR);	/* exact, whoever holds the socket */
		close(e->fd);
		pthread_join(e->th, NULL);
		close(e->peer);
	}
}

static inline void t_src_finish(struct end *e)
{
	if (e->fd >= 0)
		close(e->fd);
	if (e->has_th)
		pthread_join(e->th, NULL);
	free(e->buf);
}

struct t_result {
	int done;
	int64_t res;
	int side;
};

static inline void t_on_done(uaio_flow *f, int64_t res, int side, void *data)
{
	struct t_result *r = data;

	r->done++;
	r->res = res;
	r->side = side;
}

/* A cancelled flow: done once, with -ECANCELED, and nothing of it left
 * in the loop. */
static inline void t_expect_cancelled(uaio_loop *l, const struct t_result *r)
{
	CHECK_EQ(r->done, 1);
	CHECK_EQ(r->res, -ECANCELED);
	CHECK_EQ(uaio_loop_inflight(l), 0);
}

struct t_sync {
	struct t_result r;
	const char *method;
};

static inline void t_sync_done(uaio_flow *f, int64_t res, int side, void *data)
{
	struct t_sync *s = data;

	s->method = uaio_flow_method(f);
	t_on_done(f, res, side, &s->r);
}

/* Runs one flow fd -> fd (files from offset 0) to its end: res, and side
 * and method when asked. */
static inline int64_t t_flow_sync(uaio_loop *l, int src, int dst, int mode, size_t chunk,
				  uint64_t len, int *side, const char **method)
{
	struct t_sync s = { 0 };
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = src, .off = 0 },
		.dst = { .type = UAIO_FLOW_FD, .fd = dst, .off = 0 },
		.len = len, .mode = mode, .chunk = chunk, .done = t_sync_done, .data = &s,
	};
	uaio_flow *f;
	struct stat st;
	int r;

	/* Offsets only where there are offsets. */
	if (fstat(src, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		p.src.off = -1;
	if (fstat(dst, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		p.dst.off = -1;
	if ((r = uaio_flow_start(l, &p, &f)) < 0)
		return r;
	T_RUN_UNTIL(l, s.r.done, 10000000);
	if (side)
		*side = s.r.side;
	if (method)
		*method = s.method;
	return s.r.res;
}

static inline int t_cmp_fds(int a, int b, size_t n)
{
	char *x = malloc(1 << 20), *y = malloc(1 << 20);
	int diff = 0;

	for (size_t off = 0; off < n && !diff; off += 1 << 20) {
		size_t k = n - off < (1u << 20) ? n - off : (1u << 20);

		if (pread(a, x, k, (off_t)off) != (ssize_t)k ||
		    pread(b, y, k, (off_t)off) != (ssize_t)k || memcmp(x, y, k))
			diff = 1;
	}
	free(x);
	free(y);
	return diff;
}

#endif
