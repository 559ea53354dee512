/* SPDX-License-Identifier: MIT */
/*
 * The same answers on both backends, sockets (run under each by the
 * suite): MSG_WAITALL, a UDP socket shut for reading, connects on
 * blocking sockets. The rest: test_parity.c.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include "core/parity.h"

/* MSG_WAITALL on a stream socket: the op completes with all of it, or
 * with the part it has at EOF, an error or a cancel (io_uring retries a
 * short stream receive or send itself; epoll's one try returned the
 * part). */
static void waitall(void)
{
	uaio_op op = { 0 }, c = { 0 };
	struct res r = { 0 }, rc = { 0 };
	static char big[1 << 20], back[1 << 20];
	int sv[2];
	char b[8];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK_OK(uaio_op_recv(L, &op, sv[0], b, sizeof(b), MSG_WAITALL, on_res, &r));
	CHECK(write(sv[1], "abc", 3) == 3);
	for (int i = 0; i < 5; i++)
		uaio_loop_run_once(L, 1000000);
	CHECK_EQ(r.n, 0);
	CHECK(write(sv[1], "defgh", 5) == 5);
	CHECK_EQ(result(&r), 8);
	CHECK(!memcmp(b, "abcdefgh", 8));
	/* the part, at a cancel */
	r = (struct res){ 0 };
	CHECK_OK(uaio_op_recv(L, &op, sv[0], b, sizeof(b), MSG_WAITALL, on_res, &r));
	CHECK(write(sv[1], "ij", 2) == 2);
	for (int i = 0; i < 5; i++)
		uaio_loop_run_once(L, 1000000);
	CHECK_EQ(r.n, 0);
	CHECK_OK(uaio_op_cancel(L, &c, &op, on_res, &rc));
	CHECK_EQ(result(&r), 2);
	CHECK(!memcmp(b, "ij", 2));
	(void)result(&rc);
	/* the part, at EOF */
	r = (struct res){ 0 };
	CHECK_OK(uaio_op_recv(L, &op, sv[0], b, sizeof(b), MSG_WAITALL, on_res, &r));
	CHECK(write(sv[1], "klm", 3) == 3);
	uaio_loop_run_once(L, 1000000);
	CHECK(shutdown(sv[1], SHUT_WR) == 0);
	CHECK_EQ(result(&r), 3);
	CHECK(!memcmp(b, "klm", 3));
	close(sv[0]);
	close(sv[1]);
	/* recvmsg: the rest goes on across the iovec */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	char b1[3], b2[5];
	struct iovec iv[2] = { { b1, sizeof(b1) }, { b2, sizeof(b2) } };
	struct msghdr mh = { .msg_iov = iv, .msg_iovlen = 2 };
	r = (struct res){ 0 };
	CHECK_OK(uaio_op_recvmsg(L, &op, sv[0], &mh, MSG_WAITALL, on_res, &r));
	CHECK(write(sv[1], "ABCD", 4) == 4);
	for (int i = 0; i < 5; i++)
		uaio_loop_run_once(L, 1000000);
	CHECK_EQ(r.n, 0);
	CHECK(write(sv[1], "EFGH", 4) == 4);
	CHECK_EQ(result(&r), 8);
	CHECK(!memcmp(b1, "ABC", 3) && !memcmp(b2, "DEFGH", 5));
	/* with room for ancillary data, the first part is the answer (as
	 * io_uring's io_recvmsg: its min_ret is 0 then) */
	union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(int))]; } cm;
	mh.msg_control = cm.b;
	mh.msg_controllen = sizeof(cm.b);
	r = (struct res){ 0 };
	CHECK(write(sv[1], "IJKL", 4) == 4);
	CHECK_OK(uaio_op_recvmsg(L, &op, sv[0], &mh, MSG_WAITALL, on_res, &r));
	CHECK_EQ(result(&r), 4);
	CHECK(!memcmp(b1, "IJK", 3) && b2[0] == 'L');
	close(sv[0]);
	close(sv[1]);
	/* a send bigger than the socket's buffer, whole */
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7 + i / 4096);
	r = (struct res){ 0 };
	CHECK_OK(uaio_op_send(L, &op, sv[0], big, sizeof(big), MSG_WAITALL, on_res, &r));
	size_t got = 0;
	for (int i = 0; i < 10000 && got < sizeof(back); i++) {
		uaio_loop_run_once(L, 0);
		ssize_t n = recv(sv[1], back + got, sizeof(back) - got, MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
		if (r.n)
			CHECK_EQ(r.res, (int)sizeof(big));
	}
	CHECK_EQ(result(&r), (int)sizeof(big));
	CHECK_EQ(got, sizeof(back));
	CHECK(!memcmp(big, back, sizeof(big)));
	close(sv[0]);
	close(sv[1]);
}

/* A receive on a connected UDP socket shut for reading answers 0, as the
 * blocking call (epoll saw it readable, RDHUP, and the non-blocking try
 * said EAGAIN for ever: the op never completed, the loop spun). */
static void udp_shut_rd(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	uaio_op op = { 0 };
	struct res r = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	char b[8];

	CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(getsockname(s, (struct sockaddr *)&a, &al) == 0);
	CHECK(connect(s, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(shutdown(s, SHUT_RD) == 0);
	CHECK_OK(uaio_op_recv(L, &op, s, b, sizeof(b), 0, on_res, &r));
	CHECK_EQ(result(&r), 0);
	close(s);
}

/* A connect on a blocking socket to a peer that never answers (a full
 * backlog drops the SYN) is cancelled by a cancel, cancel_fd or close op,
 * and holds nothing up meanwhile. On epoll it went to a worker, whose
 * blocking connect nothing ended: the cancel said -EALREADY, and four of
 * them held every file op until the kernel gave up (minutes). */
static void blocking_connect(void)
{
	struct sockaddr_in a;
	int ls = listener(&a), fill[8], nf = 0;

	CHECK(listen(ls, 0) == 0);
	/* fill the backlog, then a SYN more is dropped */
	for (int i = 0; i < 8; i++) {
		fill[nf] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		CHECK(fill[nf] >= 0);
		(void)connect(fill[nf], (struct sockaddr *)&a, sizeof(a));
		nf++;
	}
	for (int k = 0; k < 3; k++) {
		uaio_op op = { 0 }, c = { 0 };
		struct res r = { 0 }, rc = { 0 };
		int s = socket(AF_INET, SOCK_STREAM, 0);	/* blocking */

		CHECK(s >= 0);
		CHECK_OK(uaio_op_connect(L, &op, s, (struct sockaddr *)&a, sizeof(a), on_res, &r));
		for (int i = 0; i < 3; i++)
			uaio_loop_run_once(L, 10 * 1000000);
		CHECK_EQ(r.n, 0);	/* still trying */
		if (k == 0)
			CHECK_OK(uaio_op_cancel(L, &c, &op, on_res, &rc));
		else if (k == 1)
			CHECK_OK(uaio_op_cancel_fd(L, &c, s, on_res, &rc));
		else
			CHECK_OK(uaio_op_close(L, &c, s, on_res, &rc));
		CHECK_EQ(result(&r), -ECANCELED);
		CHECK(result(&rc) >= 0);
		if (k < 2) {
			/* the socket is as the caller made it: blocking */
			CHECK_EQ(fcntl(s, F_GETFL) & O_NONBLOCK, 0);
			close(s);
		}
	}
	/* four waiting connects hold no file op up */
	{
		uaio_op op[4], o = { 0 };
		struct res r[4], ro = { 0 };
		int s[4];

		for (int i = 0; i < 4; i++) {
			op[i] = (uaio_op){ 0 };
			r[i] = (struct res){ 0 };
			s[i] = socket(AF_INET, SOCK_STREAM, 0);
			CHECK_OK(uaio_op_connect(L, &op[i], s[i], (struct sockaddr *)&a, sizeof(a),
						 on_res, &r[i]));
		}
		CHECK_OK(uaio_op_openat(L, &o, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC, 0,
					on_res, &ro));
		int fd = result(&ro);
		CHECK(fd >= 0);
		close(fd);
		for (int i = 0; i < 4; i++) {
			uaio_op c = { 0 };
			struct res rc = { 0 };

			CHECK_OK(uaio_op_close(L, &c, s[i], on_res, &rc));
			CHECK_EQ(result(&r[i]), -ECANCELED);
			(void)result(&rc);
		}
	}
	for (int i = 0; i < nf; i++)
		close(fill[i]);
	close(ls);
	/* AF_UNIX, backlog full: the non-blocking connect says EAGAIN, not
	 * EINPROGRESS, and the blocking one waits for room (it was -EAGAIN
	 * at once on epoll) */
	{
		struct sockaddr_un u = { .sun_family = AF_UNIX };
		int l2 = socket(AF_UNIX, SOCK_STREAM, 0), f2, s2, a2;
		uaio_op op = { 0 };
		struct res r = { 0 };

		snprintf(u.sun_path, sizeof(u.sun_path), "/tmp/uaio-parity-%d", (int)getpid());
		unlink(u.sun_path);
		CHECK(l2 >= 0 && bind(l2, (struct sockaddr *)&u, sizeof(u)) == 0 && listen(l2, 0) == 0);
		f2 = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		CHECK(connect(f2, (struct sockaddr *)&u, sizeof(u)) == 0);
		s2 = socket(AF_UNIX, SOCK_STREAM, 0);	/* blocking */
		CHECK_OK(uaio_op_connect(L, &op, s2, (struct sockaddr *)&u, sizeof(u), on_res, &r));
		for (int i = 0; i < 3; i++)
			uaio_loop_run_once(L, 10 * 1000000);
		CHECK_EQ(r.n, 0);	/* waiting for room */
		a2 = accept(l2, NULL, NULL);
		CHECK(a2 >= 0);
		CHECK_EQ(result(&r), 0);
		close(a2);
		close(f2);
		close(s2);
		close(l2);
		unlink(u.sun_path);
	}
}

int main(void)
{
	t_watchdog(120);
	t_banner("test_parity_sock");
	L = t_loop_new(0);
	ONE(waitall);
	ONE(udp_shut_rd);
	ONE(blocking_connect);
	uaio_loop_free(L);
	return T_EXIT_PASS;
}
