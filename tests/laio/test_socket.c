/* SPDX-License-Identifier: MIT */
/* Sockets: recv/send inline when data/room is there, background when not;
 * accept/connect/shutdown through io_uring opcodes. Loopback only. */
#include "laio/laio_util.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

static void stream_pair(void)
{
	int s[2];
	char b[16] = {0};
	void *h;
	struct laio_completion c;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
	h = BG(laio_syscall(SYS_recvfrom, s[0], b, sizeof(b), 0, NULL, NULL));
	CHECK_EQ(INL(laio_syscall(SYS_sendto, s[1], "ping", 4, 0, NULL, 0)), 4);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 4);
	CHECK(!memcmp(b, "ping", 4));
	/* data already there: inline */
	CHECK(send(s[1], "pong", 4, 0) == 4);
	CHECK_EQ(INL(laio_syscall(SYS_recvfrom, s[0], b, sizeof(b), 0, NULL, NULL)), 4);
	/* caller's MSG_DONTWAIT: EAGAIN inline */
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_recvfrom, s[0], b, sizeof(b), MSG_DONTWAIT, NULL, NULL)), -1);
	CHECK_EQ(errno, EAGAIN);
	/* recvmsg / sendmsg */
	struct iovec iov = { b, sizeof(b) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	h = BG(laio_syscall(SYS_recvmsg, s[0], &mh, 0));
	struct iovec siov = { "msg!", 4 };
	struct msghdr smh = { .msg_iov = &siov, .msg_iovlen = 1 };
	CHECK_EQ(INL(laio_syscall(SYS_sendmsg, s[1], &smh, 0)), 4);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 4);
	CHECK(!memcmp(b, "msg!", 4));
	/* peer closes while a recv is in the background */
	h = BG(laio_syscall(SYS_read, s[0], b, sizeof(b)));
	close(s[1]);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 0);
	close(s[0]);
	/* errors inline */
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_recvfrom, 12345, b, 1, 0, NULL, NULL)), -1);
	CHECK_EQ(errno, EBADF);
	int p[2];
	CHECK(pipe(p) == 0);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_recvfrom, p[0], b, 1, 0, NULL, NULL)), -1);
	CHECK_EQ(errno, ENOTSOCK);
	close(p[0]);
	close(p[1]);
}

/* A blocking send larger than the socket buffer sends everything. */
static void big_send(void)
{
	int s[2];
	size_t big = 4 << 20, got = 0;
	char *w = malloc(big), *r = malloc(big);
	void *h;
	int done = 0;

	for (size_t i = 0; i < big; i++)
		w[i] = (char)(i * 31 + 7);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
	h = BG(laio_syscall(SYS_sendto, s[1], w, big, 0, NULL, 0));
	while (got < big) {
		ssize_t n = recv(s[0], r + got, big - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
		struct laio_completion c;
		struct timespec t = { 0, 1000000 };
		int k = laio_poll(&c, 1, &t);
		CHECK(k >= 0);
		if (k) {
			CHECK(c.laio_handle == h);
			CHECK_EQ(c.laio_return_value, (long)big);
			done = 1;
		}
	}
	CHECK(!memcmp(w, r, big));
	if (!done)
		CHECK_EQ(wait_one(h).laio_return_value, (long)big);
	close(s[0]);
	close(s[1]);
	free(w);
	free(r);
}

/* A send waiting for room when its AF_UNIX peer closes with data unread
 * ends as the plain blocked call does: ECONNRESET, taken from the socket
 * (a retry alone would meet the peer's shutdown first: EPIPE). */
static void peer_reset(void)
{
	static char w[256 << 10];
	struct laio_completion c;
	int s[2], e = -1;
	socklen_t n = sizeof(e);
	void *h;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
	CHECK(fcntl(s[1], F_SETFL, O_NONBLOCK) == 0);
	while (write(s[1], w, 4096) > 0)
		;
	CHECK(fcntl(s[1], F_SETFL, 0) == 0);
	h = BG(laio_syscall(SYS_sendto, s[1], w, sizeof(w), 0, NULL, 0));
	close(s[0]);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, -1);
	CHECK_EQ(c.laio_errno, ECONNRESET);
	CHECK(getsockopt(s[1], SOL_SOCKET, SO_ERROR, &e, &n) == 0);
	CHECK_EQ(e, 0);
	/* a send made after the close is answered inline, as the plain one:
	 * EPIPE (no error pending any more) */
	errno = 0;
	CHECK_EQ(laio_syscall(SYS_sendto, s[1], w, 1, MSG_NOSIGNAL, NULL, 0), -1);
	CHECK_EQ(errno, EPIPE);
	close(s[1]);
}

static void udp_addr(void)
{
	int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in from;
	socklen_t sl = sizeof(sa), fl = sizeof(from);
	char buf[32] = {0};
	void *h;

	CHECK(a >= 0 && b >= 0);
	CHECK(bind(a, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(getsockname(a, (struct sockaddr *)&sa, &sl) == 0);
	h = BG(laio_syscall(SYS_recvfrom, a, buf, sizeof(buf), 0, &from, &fl));
	CHECK_EQ(INL(laio_syscall(SYS_sendto, b, "dgram", 5, 0, &sa, sizeof(sa))), 5);
	CHECK_EQ(wait_one(h).laio_return_value, 5);
	CHECK(!memcmp(buf, "dgram", 5));
	CHECK_EQ(from.sin_family, AF_INET);
	struct sockaddr_in bsa;
	socklen_t bl = sizeof(bsa);
	CHECK(getsockname(b, (struct sockaddr *)&bsa, &bl) == 0);
	CHECK_EQ(from.sin_port, bsa.sin_port);
	close(a);
	close(b);
}

static void tcp_accept_connect(void)
{
	int ls = socket(AF_INET, SOCK_STREAM, 0), cs = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	struct laio_completion c[2];
	struct timespec t = { 10, 0 };
	void *ha, *hc = NULL;
	long as = -1;
	char b[8];

	CHECK(ls >= 0 && cs >= 0);
	CHECK(bind(ls, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(ls, 8) == 0);
	CHECK(getsockname(ls, (struct sockaddr *)&sa, &sl) == 0);
	/* no client yet: accept goes to the background */
	ha = BG(laio_syscall(SYS_accept4, ls, NULL, NULL, SOCK_CLOEXEC));
	errno = 0;
	long r = laio_syscall(SYS_connect, cs, &sa, sizeof(sa));
	if (r == -1 && errno == EINPROGRESS)
		hc = laio_gethandle();
	else
		CHECK_EQ(r, 0);
	int want = hc ? 2 : 1, seen = 0;
	while (seen < want) {
		int n = laio_poll(c, 2, &t);
		if (n <= 0)
			fprintf(stderr, "    laio_poll = %d, seen %d of %d\n", n, seen, want);
		CHECK(n > 0);
		for (int i = 0; i < n; i++, seen++) {
			if (c[i].laio_handle == ha) {
				as = c[i].laio_return_value;
				CHECK(as >= 0);
			} else {
				CHECK(c[i].laio_handle == hc);
				CHECK_EQ(c[i].laio_return_value, 0);
			}
		}
	}
	CHECK(as >= 0);
	CHECK(fcntl((int)as, F_GETFD) & FD_CLOEXEC);
	CHECK_EQ(INL(laio_syscall(SYS_write, cs, "tcp", 3)), 3);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_read, (int)as, b, 8)), 3);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_shutdown, cs, SHUT_WR)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_read, (int)as, b, 8)), 0);
	/* a pending client: accept may complete inline */
	int cs2 = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(connect(cs2, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	long as2 = ANY_OK(laio_syscall(SYS_accept, ls, NULL, NULL));
	CHECK(as2 >= 0);
	/* O_NONBLOCK listener with nobody waiting: EAGAIN */
	CHECK(fcntl(ls, F_SETFL, O_NONBLOCK) == 0);
	ANY_ERR(laio_syscall(SYS_accept, ls, NULL, NULL), EAGAIN);
	ANY_ERR(laio_syscall(SYS_shutdown, 4321, SHUT_RD), EBADF);
	close((int)as2); close(cs2);
	close((int)as); close(cs); close(ls);
}

/* MSG_WAITALL on a blocking stream: the whole count, as recv(2) waits
 * for it; with part of it buffered the call goes on in the background. */
static void waitall(void)
{
	int s[2];
	char buf[100];
	struct msghdr m = { 0 };
	struct iovec iov[2] = { { buf, 60 }, { buf + 60, 40 } };
	void *h;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
	for (int k = 0; k < 2; k++) {
		memset(buf, 0, sizeof(buf));
		CHECK(write(s[1], "0123456789", 10) == 10);
		if (k == 0) {
			h = BG(laio_syscall(SYS_recvfrom, s[0], buf, 100, MSG_WAITALL, NULL, NULL));
		} else {
			m.msg_iov = iov;
			m.msg_iovlen = 2;
			h = BG(laio_syscall(SYS_recvmsg, s[0], &m, MSG_WAITALL));
		}
		for (int i = 1; i < 10; i++)
			CHECK(write(s[1], "0123456789", 10) == 10);
		CHECK_EQ(wait_one(h).laio_return_value, 100);
		for (int i = 0; i < 100; i++)
			CHECK_EQ(buf[i], '0' + i % 10);
	}
	/* with room for ancillary data: a part that brought none goes on,
	 * as recvmsg(2) waits on; the kernel stops after a part with
	 * descriptors, and so does the call (they are in the caller's
	 * control buffer, none lost) */
	{
		int p[2], got = -1;
		struct laio_completion c;
		void *hd;
		union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } cm, rc;
		struct iovec one = { buf, 10 };
		struct msghdr rm = { .msg_iov = &one, .msg_iovlen = 1, .msg_control = rc.b,
				     .msg_controllen = sizeof(rc.b) };
		struct iovec sv = { "cd", 2 };
		struct msghdr sm = { .msg_iov = &sv, .msg_iovlen = 1, .msg_control = cm.b,
				     .msg_controllen = sizeof(cm.b) };
		struct cmsghdr *h;

		CHECK(pipe(p) == 0);
		CHECK(write(s[1], "0123", 4) == 4);
		hd = BG(laio_syscall(SYS_recvmsg, s[0], &rm, MSG_WAITALL));
		CHECK(write(s[1], "456789", 6) == 6);
		c = wait_one(hd);
		CHECK_EQ(c.laio_return_value, 10);
		CHECK(!memcmp(buf, "0123456789", 10) && rm.msg_controllen == 0);
		rm.msg_controllen = sizeof(rc.b);
		CHECK(write(s[1], "ab", 2) == 2);
		hd = BG(laio_syscall(SYS_recvmsg, s[0], &rm, MSG_WAITALL));
		h = CMSG_FIRSTHDR(&sm);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(h), &p[0], sizeof(int));
		CHECK(sendmsg(s[1], &sm, 0) == 2);
		c = wait_one(hd);
		CHECK_EQ(c.laio_return_value, 4);
		CHECK(!memcmp(buf, "abcd", 4));
		h = CMSG_FIRSTHDR(&rm);
		CHECK(h && h->cmsg_type == SCM_RIGHTS);
		memcpy(&got, CMSG_DATA(h), sizeof(int));
		CHECK(got >= 0);
		close(got);
		close(p[0]);
		close(p[1]);
	}
	/* a datagram socket's MSG_WAITALL is one datagram */
	close(s[0]);
	close(s[1]);
	CHECK(socketpair(AF_UNIX, SOCK_DGRAM, 0, s) == 0);
	CHECK(write(s[1], "dgram", 5) == 5);
	CHECK_EQ(INL(laio_syscall(SYS_recvfrom, s[0], buf, 100, MSG_WAITALL, NULL, NULL)), 5);
	close(s[0]);
	close(s[1]);
}

/* sendmsg on a blocking stream sends everything, as sendmsg(2) does;
 * the ancillary data goes once, with the first part. */
static void big_sendmsg(void)
{
	int s[2], passed = -1;
	size_t big = 1 << 20, got = 0;
	char *w = malloc(big), *r = malloc(big);
	struct iovec iov[2] = { { w, big / 4 }, { w + big / 4, big - big / 4 } };
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } cm;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2, .msg_control = cm.b,
			    .msg_controllen = sizeof(cm.b) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	void *h;
	long res = -1;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &(int){ 0 }, sizeof(int));
	for (size_t i = 0; i < big; i++)
		w[i] = (char)(i * 13 + 5);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
	errno = 0;
	res = laio_syscall(SYS_sendmsg, s[1], &m, 0);
	h = res == -1 && errno == EINPROGRESS ? laio_gethandle() : NULL;
	if (!h)
		CHECK_EQ(res, (long)big);
	while (got < big) {
		union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } rc;
		struct iovec ri = { r + got, big - got };
		struct msghdr rm = { .msg_iov = &ri, .msg_iovlen = 1, .msg_control = rc.b,
				     .msg_controllen = sizeof(rc.b) };
		ssize_t n = recvmsg(s[0], &rm, MSG_DONTWAIT);

		if (n > 0) {
			struct cmsghdr *rh = CMSG_FIRSTHDR(&rm);

			if (rh && rh->cmsg_type == SCM_RIGHTS) {
				CHECK_EQ(passed, -1);	/* once */
				memcpy(&passed, CMSG_DATA(rh), sizeof(int));
				CHECK(passed >= 0);
			}
			got += (size_t)n;
		}
		struct laio_completion lc;
		struct timespec t = { 0, 1000000 };
		if (h && laio_poll(&lc, 1, &t) == 1) {
			CHECK(lc.laio_handle == h);
			CHECK_EQ(lc.laio_return_value, (long)big);
			h = NULL;
		}
	}
	CHECK(!memcmp(w, r, big));
	if (h)
		CHECK_EQ(wait_one(h).laio_return_value, (long)big);
	CHECK(passed >= 0);
	close(passed);
	close(s[0]);
	close(s[1]);
	free(w);
	free(r);
}

/* recvfrom with an address goes on the ring (as recvmsg), so a cancel
 * ends it at once and no pool thread waits. */
static void recvfrom_addr_cancel(void)
{
	int a = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in from[12];
	socklen_t fl[12];
	char buf[12][8];
	void *h[12];

	CHECK(a >= 0 && bind(a, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	/* more than the pool has threads: a pool call behind them would wait */
	for (int i = 0; i < 12; i++) {
		fl[i] = sizeof(from[i]);
		h[i] = BG(laio_syscall(SYS_recvfrom, a, buf[i], 8, 0, &from[i], &fl[i]));
	}
	void *hs = BG(laio_syscall(SYS_nanosleep, &(struct timespec){ 0, 1000000 }, NULL));
	CHECK_EQ(wait_one(hs).laio_return_value, 0);
	for (int i = 0; i < 12; i++) {
		CHECK_EQ(laio_cancel(h[i]), 0);
		struct laio_completion c = wait_one(h[i]);
		CHECK_EQ(c.laio_return_value, -1);
		CHECK_EQ(c.laio_errno, ECANCELED);
	}
	close(a);
}

/* A receive from an empty error queue is EAGAIN at once, as the kernel
 * never waits there (it went to the background, waited for data, and
 * never ended). */
static void errqueue_empty(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char b[16], ctl[64];
	struct iovec iov = { b, sizeof(b) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
			    .msg_controllen = sizeof(ctl) };
	int u = socket(AF_INET, SOCK_DGRAM, 0);

	CHECK(u >= 0 && bind(u, (struct sockaddr *)&a, sizeof(a)) == 0);
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_recvmsg, u, &m, MSG_ERRQUEUE)), -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(INL(laio_syscall(SYS_recvfrom, u, b, sizeof(b), MSG_ERRQUEUE, NULL, NULL)), -1);
	CHECK_EQ(errno, EAGAIN);
	close(u);
	/* vsock has one too (where the kernel has vsock: it waited for ever) */
	if ((u = socket(AF_VSOCK, SOCK_STREAM, 0)) >= 0) {
		CHECK_EQ(INL(laio_syscall(SYS_recvmsg, u, &m, MSG_ERRQUEUE)), -1);
		CHECK_EQ(errno, EAGAIN);
		close(u);
	}
	/* a Unix socket has none and ignores the flag: a receive that
	 * waits for data, in the background (not on the caller's thread) */
	{
		int s[2];
		void *h;
		struct laio_completion c;

		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
		h = BG(laio_syscall(SYS_recvmsg, s[0], &m, MSG_ERRQUEUE));
		CHECK_EQ(write(s[1], "data", 4), 4);
		c = wait_one(h);
		CHECK_EQ(c.laio_return_value, 4);
		CHECK(!memcmp(b, "data", 4));
		close(s[0]);
		close(s[1]);
	}
}

static void all(void)
{
	if (getenv("ONLY_TCP")) { RUN(tcp_accept_connect); return; }
	RUN(stream_pair);
	RUN(big_send);
	RUN(peer_reset);
	RUN(udp_addr);
	RUN(tcp_accept_connect);
	RUN(waitall);
	RUN(big_sendmsg);
	RUN(recvfrom_addr_cancel);
	RUN(errqueue_empty);
}

int main(void)
{
	RUN_MECHS(all);
	return T_EXIT_PASS;
}
