/* SPDX-License-Identifier: MIT */
/*
 * Proactor socket ops over socketpairs and TCP loopback: recv, send,
 * recvmsg, sendmsg (with SCM_RIGHTS), accept (address, flags), multishot
 * accept (one callback per connection, uaio_op_more()), connect (and a
 * refused one), shutdown, and send to a closed peer.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

struct res {
	int n, res, more, pending;
};

static void rec(uaio_op *op, int res, void *data)
{
	struct res *r = data;

	r->n++;
	r->res = res;
	r->more = uaio_op_more(op);
	r->pending = uaio_op_pending(op);
}

static void test_send_recv(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op a = { 0 }, b = { 0 };
	struct res ra = { 0 }, rb = { 0 };
	char buf[16] = { 0 };
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	/* recv posted first, waits for the send. */
	CHECK_OK(uaio_op_recv(l, &a, sv[1], buf, sizeof(buf), 0, rec, &ra));
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	CHECK_EQ(ra.n, 0);
	CHECK_OK(uaio_op_send(l, &b, sv[0], "ping", 4, 0, rec, &rb));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rb.n, 1);
	CHECK_EQ(rb.res, 4);
	CHECK_EQ(ra.n, 1);
	CHECK_EQ(ra.res, 4);
	CHECK(!memcmp(buf, "ping", 4));

	/* MSG_PEEK leaves the data for the next recv. */
	CHECK_EQ(write(sv[0], "peek", 4), 4);
	memset(buf, 0, sizeof(buf));
	CHECK_OK(uaio_op_recv(l, &a, sv[1], buf, 2, MSG_PEEK, rec, &ra));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ra.res, 2);
	CHECK(!memcmp(buf, "pe", 2));
	memset(buf, 0, sizeof(buf));
	CHECK_OK(uaio_op_recv(l, &a, sv[1], buf, sizeof(buf), 0, rec, &ra));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ra.res, 4);
	CHECK(!memcmp(buf, "peek", 4));

	/* shutdown(SHUT_WR): the peer reads EOF. */
	CHECK_OK(uaio_op_shutdown(l, &b, sv[0], SHUT_WR, rec, &rb));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rb.res, 0);
	CHECK_OK(uaio_op_recv(l, &a, sv[1], buf, sizeof(buf), 0, rec, &ra));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ra.res, 0);
	CHECK_EQ(ra.n, 4);
	CHECK_EQ(rb.n, 2);

	/* send to a closed peer: -EPIPE (no signal with MSG_NOSIGNAL). */
	close(sv[1]);
	CHECK_OK(uaio_op_send(l, &b, sv[0], "x", 1,
			      MSG_NOSIGNAL, rec, &rb));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rb.res, -EPIPE);
	close(sv[0]);
	uaio_loop_free(l);
}

static void test_msg(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op a = { 0 }, b = { 0 };
	struct res ra = { 0 }, rb = { 0 };
	int sv[2], p[2];

	CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
	CHECK(pipe(p) == 0);

	/* Two iovecs and a pipe's read end as SCM_RIGHTS. */
	struct iovec wv[2] = { { "head-", 5 }, { "tail", 4 } };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } wc, rc;
	struct msghdr wm = { .msg_iov = wv, .msg_iovlen = 2,
			     .msg_control = wc.buf, .msg_controllen = sizeof(wc.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&wm);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &p[0], sizeof(int));

	char x[5] = { 0 }, y[8] = { 0 };
	struct iovec rv[2] = { { x, 5 }, { y, 8 } };
	memset(&rc, 0, sizeof(rc));
	struct msghdr rm = { .msg_iov = rv, .msg_iovlen = 2,
			     .msg_control = rc.buf, .msg_controllen = sizeof(rc.buf) };

	CHECK_OK(uaio_op_recvmsg(l, &a, sv[1], &rm, 0, rec, &ra));
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	CHECK_OK(uaio_op_sendmsg(l, &b, sv[0], &wm, 0, rec, &rb));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rb.res, 9);
	CHECK_EQ(ra.res, 9);
	CHECK(!memcmp(x, "head-", 5));
	CHECK(!memcmp(y, "tail", 4));
	CHECK_EQ(rm.msg_flags & (MSG_TRUNC | MSG_CTRUNC), 0);
	cm = CMSG_FIRSTHDR(&rm);
	CHECK(cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS);
	int got;
	memcpy(&got, CMSG_DATA(cm), sizeof(int));
	CHECK(got >= 0 && got != p[0]);
	/* The passed fd is the same pipe. */
	CHECK_EQ(write(p[1], "Q", 1), 1);
	char q;
	CHECK_EQ(read(got, &q, 1), 1);
	CHECK_EQ(q, 'Q');
	close(got);

	/* A datagram bigger than the buffers: MSG_TRUNC in msg_flags. */
	char small[3];
	struct iovec sv1 = { small, 3 };
	struct msghdr tm = { .msg_iov = &sv1, .msg_iovlen = 1 };
	CHECK_EQ(send(sv[0], "0123456789", 10, 0), 10);
	CHECK_OK(uaio_op_recvmsg(l, &a, sv[1], &tm, 0, rec, &ra));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(ra.res, 3);
	CHECK(tm.msg_flags & MSG_TRUNC);
	CHECK(!memcmp(small, "012", 3));
	CHECK_EQ(ra.n, 2);
	close(sv[0]); close(sv[1]); close(p[0]); close(p[1]);
	uaio_loop_free(l);
}

static int listener(struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(bind(fd, (struct sockaddr *)sa, sizeof(*sa)) == 0);
	CHECK(listen(fd, 64) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)sa, &len) == 0);
	return fd;
}

static void test_tcp(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op acc = { 0 }, con = { 0 }, s = { 0 }, r = { 0 };
	struct res racc = { 0 }, rcon = { 0 }, rs = { 0 }, rr = { 0 };
	struct sockaddr_in sa, peer, local;
	socklen_t plen = sizeof(peer), llen = sizeof(local);
	int lfd = listener(&sa);
	int cfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	CHECK(cfd >= 0);
	memset(&peer, 0, sizeof(peer));
	CHECK_OK(uaio_op_accept(l, &acc, lfd, (struct sockaddr *)&peer, &plen,
				SOCK_CLOEXEC | SOCK_NONBLOCK, rec, &racc));
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	CHECK_EQ(racc.n, 0);
	CHECK_OK(uaio_op_connect(l, &con, cfd, (struct sockaddr *)&sa,
				 sizeof(sa), rec, &rcon));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rcon.n, 1);
	CHECK_EQ(rcon.res, 0);
	CHECK_EQ(racc.n, 1);
	CHECK(racc.res >= 0);
	int afd = racc.res;
	CHECK_EQ(plen, sizeof(struct sockaddr_in));
	CHECK_EQ(peer.sin_family, AF_INET);
	CHECK_EQ(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	CHECK(getsockname(cfd, (struct sockaddr *)&local, &llen) == 0);
	CHECK_EQ(peer.sin_port, local.sin_port);
	CHECK(fcntl(afd, F_GETFD) & FD_CLOEXEC);
	CHECK(fcntl(afd, F_GETFL) & O_NONBLOCK);

	/* Data both ways over the accepted connection. */
	char buf[8] = { 0 };
	CHECK_OK(uaio_op_recv(l, &r, afd, buf, sizeof(buf), 0, rec, &rr));
	CHECK_OK(uaio_op_send(l, &s, cfd, "tcp-1", 5, 0, rec, &rs));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rs.res, 5);
	CHECK_EQ(rr.res, 5);
	CHECK(!memcmp(buf, "tcp-1", 5));
	memset(buf, 0, sizeof(buf));
	CHECK_OK(uaio_op_recv(l, &r, cfd, buf, sizeof(buf), 0, rec, &rr));
	CHECK_OK(uaio_op_send(l, &s, afd, "back", 4, 0, rec, &rs));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rr.res, 4);
	CHECK(!memcmp(buf, "back", 4));

	/* accept with NULL address: the fd only. */
	int c2 = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(c2, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK_OK(uaio_op_accept(l, &acc, lfd, NULL, NULL, 0, rec, &racc));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK(racc.res >= 0);
	CHECK_EQ(fcntl(racc.res, F_GETFD) & FD_CLOEXEC, 0);
	CHECK_EQ(racc.n, 2);
	close(racc.res);
	close(c2);
	close(afd);
	close(cfd);

	/* Connect to a port nobody listens on: -ECONNREFUSED. Both a
	 * blocking and a non-blocking socket. */
	close(lfd);
	for (int nb = 0; nb < 2; nb++) {
		int fd = socket(AF_INET, SOCK_STREAM | (nb ? SOCK_NONBLOCK : 0), 0);
		CHECK_OK(uaio_op_connect(l, &con, fd, (struct sockaddr *)&sa,
					 sizeof(sa), rec, &rcon));
		CHECK_EQ(uaio_loop_run(l), 0);
		CHECK_EQ(rcon.res, -ECONNREFUSED);
		close(fd);
	}
	CHECK_EQ(rcon.n, 3);
	uaio_loop_free(l);
}

/* Blocking client socket connecting through the loop. */
static void test_connect_blocking(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op con = { 0 };
	struct res rcon = { 0 };
	struct sockaddr_in sa;
	int lfd = listener(&sa);
	int cfd = socket(AF_INET, SOCK_STREAM, 0);

	CHECK_OK(uaio_op_connect(l, &con, cfd, (struct sockaddr *)&sa,
				 sizeof(sa), rec, &rcon));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rcon.n, 1);
	CHECK_EQ(rcon.res, 0);
	int afd = accept(lfd, NULL, NULL);
	CHECK(afd >= 0);
	CHECK_EQ(write(cfd, "b", 1), 1);
	char c;
	CHECK_EQ(read(afd, &c, 1), 1);
	close(afd); close(cfd); close(lfd);
	uaio_loop_free(l);
}

/* Multishot accept: one callback per connection with more == 1, then a
 * final one (here from cancel) with more == 0. */
#define NCONN 8
static int ms_fds[NCONN + 4], ms_n, ms_final, ms_final_res, ms_bad;
static void ms_cb(uaio_op *op, int res, void *data)
{
	if (uaio_op_more(op)) {
		if (res < 0 || !uaio_op_pending(op) || ms_final)
			ms_bad++;
		else
			ms_fds[ms_n++] = res;
	} else {
		ms_final++;
		ms_final_res = res;
		if (uaio_op_pending(op))
			ms_bad++;
		/* The last one may carry a connection too (not here). */
		if (res >= 0)
			ms_fds[ms_n++] = res;
	}
}

static void test_accept_multishot(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op acc = { 0 }, can = { 0 };
	struct res rcan = { 0 };
	struct sockaddr_in sa, local;
	int lfd = listener(&sa);
	int c[NCONN];

	CHECK_OK(uaio_op_accept_multishot(l, &acc, lfd, SOCK_CLOEXEC, ms_cb, NULL));
	CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	for (int i = 0; i < NCONN; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(connect(c[i], (struct sockaddr *)&sa, sizeof(sa)) == 0);
		/* Half the connections arrive while the loop waits. */
		if (i % 2)
			T_RUN_UNTIL(l, ms_n >= i + 1, 50);
	}
	T_RUN_UNTIL(l, ms_n >= NCONN, 100);
	for (int i = 0; i < 3; i++)
		CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK_EQ(ms_n, NCONN);
	CHECK_EQ(ms_final, 0);
	CHECK_EQ(ms_bad, 0);
	CHECK_EQ(uaio_op_pending(&acc), 1);

	/* Each accepted fd is a distinct connection to one of our clients. */
	int matched[NCONN] = { 0 };
	for (int i = 0; i < NCONN; i++) {
		struct sockaddr_in pr;
		socklen_t pl = sizeof(pr);
		CHECK(getpeername(ms_fds[i], (struct sockaddr *)&pr, &pl) == 0);
		CHECK(fcntl(ms_fds[i], F_GETFD) & FD_CLOEXEC);
		int hit = 0;
		for (int j = 0; j < NCONN; j++) {
			socklen_t ll = sizeof(local);
			CHECK(getsockname(c[j], (struct sockaddr *)&local, &ll) == 0);
			if (local.sin_port == pr.sin_port) {
				matched[j]++;
				hit++;
			}
		}
		CHECK_EQ(hit, 1);
	}
	for (int j = 0; j < NCONN; j++)
		CHECK_EQ(matched[j], 1);

	CHECK_OK(uaio_op_cancel(l, &can, &acc, rec, &rcan));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rcan.n, 1);
	CHECK_EQ(rcan.res, 0);
	CHECK_EQ(ms_final, 1);
	CHECK_EQ(ms_final_res, -ECANCELED);
	CHECK_EQ(ms_bad, 0);
	CHECK_EQ(ms_n, NCONN);
	CHECK_EQ(uaio_op_pending(&acc), 0);

	/* Nothing accepts any more: a new client stays in the backlog. */
	int late = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(late, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(uaio_loop_run_once(l, 0), 0);
	CHECK_EQ(ms_n, NCONN);
	int a = accept(lfd, NULL, NULL);
	CHECK(a >= 0);
	close(a);
	close(late);
	for (int i = 0; i < NCONN; i++) {
		close(ms_fds[i]);
		close(c[i]);
	}
	close(lfd);
	uaio_loop_free(l);
}

/* Multishot accept ends by itself on an error: closing the listener via
 * uaio_op_close gives a final callback with more == 0. */
static void test_accept_multishot_close(void)
{
	uaio_loop *l = t_loop_new(0);
	uaio_op acc = { 0 }, cl = { 0 };
	struct res rcl = { 0 };
	struct sockaddr_in sa;
	int lfd = listener(&sa);

	ms_n = ms_final = ms_bad = 0;
	CHECK_OK(uaio_op_accept_multishot(l, &acc, lfd, 0, ms_cb, NULL));
	int c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	T_RUN_UNTIL(l, ms_n >= 1, 50);
	CHECK_OK(uaio_op_close(l, &cl, lfd, rec, &rcl));
	CHECK_EQ(uaio_loop_run(l), 0);
	CHECK_EQ(rcl.res, 0);
	CHECK_EQ(ms_final, 1);
	CHECK(ms_final_res < 0);
	CHECK_EQ(ms_bad, 0);
	CHECK_EQ(ms_n, 1);
	close(ms_fds[0]);
	close(c);
	uaio_loop_free(l);
}

int main(void)
{
	t_watchdog(60);
	signal(SIGPIPE, SIG_IGN);
	t_banner("test_proactor_net");
	RUN(test_send_recv);
	RUN(test_msg);
	RUN(test_tcp);
	RUN(test_connect_blocking);
	RUN(test_accept_multishot);
	RUN(test_accept_multishot_close);
	return T_EXIT_PASS;
}
