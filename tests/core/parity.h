/* SPDX-License-Identifier: MIT */
/* What the parity tests share (test_parity.c, test_parity_sock.c): one
 * loop, results kept by a callback, a listening socket, and
 * PARITY_ONLY=name to run one case (to see each fail alone). */
#ifndef UAIO_TEST_PARITY_H
#define UAIO_TEST_PARITY_H
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <uaio/loop.h>
#include "test.h"

static uaio_loop *L;

struct res {
	int n, res;
	bool more;
};

static inline void on_res(uaio_op *op, int res, void *data)
{
	struct res *r = data;

	r->n++;
	r->res = res;
	r->more = uaio_op_more(op);
}

/* Runs the loop until r has a result (bounded: a hang fails). */
static inline int result(struct res *r)
{
	for (int i = 0; i < 500 && !r->n; i++)
		uaio_loop_run_once(L, 10 * 1000000);
	CHECK_EQ(r->n, 1);
	return r->res;
}

static inline int listener(struct sockaddr_in *a)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	socklen_t al = sizeof(*a);

	*a = (struct sockaddr_in){ .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK(s >= 0 && bind(s, (struct sockaddr *)a, sizeof(*a)) == 0);
	CHECK(listen(s, 64) == 0 && getsockname(s, (struct sockaddr *)a, &al) == 0);
	return s;
}

#define ONE(fn) do { const char *o = getenv("PARITY_ONLY"); \
	if (!o || !strcmp(o, #fn)) RUN(fn); } while (0)

#endif
