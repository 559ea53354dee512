/* SPDX-License-Identifier: MIT */
/*
 * The same answers on both backends (run under each by the suite): the
 * cases a backend-differential review found the epoll fallback answering
 * otherwise than io_uring. MSG_WAITALL, UDP, blocking connects:
 * test_parity_sock.c.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <uaio/loop.h>
#include "test.h"
#include "core/parity.h"

/* A multishot accept cancelled from its own callback, with more
 * connections in the same batch: its last callback says so (more 0),
 * and nothing follows it. */
static int ms_more, ms_final, ms_after;
static uaio_op ms_cancel;

static void on_accept(uaio_op *op, int res, void *data)
{
	static struct res cr;

	if (ms_final)
		ms_after++;
	if (res >= 0)
		close(res);
	if (!uaio_op_more(op)) {
		ms_final++;
		CHECK_EQ(res, -ECANCELED);
		return;
	}
	if (ms_more++ == 0)
		CHECK_OK(uaio_op_cancel(L, &ms_cancel, op, on_res, &cr));
}

static void multishot_cancel_in_callback(void)
{
	struct sockaddr_in a;
	int s = listener(&a), c[10];
	uaio_op op = { 0 };

	CHECK_OK(uaio_op_accept_multishot(L, &op, s, 0, on_accept, NULL));
	uaio_loop_run_once(L, 0);
	for (int i = 0; i < 10; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(connect(c[i], (struct sockaddr *)&a, sizeof(a)) == 0);
	}
	for (int i = 0; i < 500 && !ms_final; i++)
		uaio_loop_run_once(L, 10 * 1000000);
	uaio_loop_run_once(L, 0);
	CHECK_EQ(ms_final, 1);
	CHECK_EQ(ms_after, 0);
	CHECK(ms_more >= 1);
	for (int i = 0; i < 10; i++)
		close(c[i]);
	close(s);
}

/* Two edge-triggered watches ready in one wait, the first handler stops
 * the loop: the second edge is dispatched by the next iteration (an edge
 * is not reported again). */
static int edge_hits[2];
static uaio_watch edge_w[2];

static int on_edge(uaio_watch *w)
{
	char b[16];

	while (read(w->fd, b, sizeof(b)) > 0)
		;
	edge_hits[w == &edge_w[1]]++;
	uaio_loop_stop(L);
	return 0;
}

static void edge_after_stop(void)
{
	static const struct uaio_handler h = { .handle_input = on_edge };
	int p[2][2];

	for (int i = 0; i < 2; i++) {
		CHECK(pipe2(p[i], O_NONBLOCK) == 0);
		CHECK_OK(uaio_watch_start(L, &edge_w[i], p[i][0], UAIO_READABLE | UAIO_EDGE,
					  &h, NULL));
	}
	uaio_loop_run_once(L, 0);
	CHECK(write(p[0][1], "a", 1) == 1 && write(p[1][1], "b", 1) == 1);
	for (int k = 0; k < 50 && edge_hits[0] + edge_hits[1] < 2; k++)
		uaio_loop_run_once(L, 100 * 1000000);
	CHECK_EQ(edge_hits[0], 1);
	CHECK_EQ(edge_hits[1], 1);
	for (int i = 0; i < 2; i++) {
		uaio_watch_stop(L, &edge_w[i]);
		uaio_loop_run_once(L, 0);
		close(p[i][0]);
		close(p[i][1]);
	}
}

/* accept(2)'s own answers, never a wait that cannot end. */
static void accept_not_listening(void)
{
	int u = socket(AF_INET, SOCK_DGRAM, 0), sv[2];
	struct res r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
	uaio_op op1 = { 0 }, op2 = { 0 }, op3 = { 0 };

	CHECK(u >= 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK_OK(uaio_op_accept(L, &op1, u, NULL, NULL, 0, on_res, &r1));
	CHECK_EQ(result(&r1), -EOPNOTSUPP);
	CHECK_OK(uaio_op_accept_multishot(L, &op2, u, 0, on_res, &r2));
	CHECK_EQ(result(&r2), -EOPNOTSUPP);
	CHECK(!r2.more);
	CHECK_OK(uaio_op_accept(L, &op3, sv[0], NULL, NULL, 0, on_res, &r3));
	CHECK_EQ(result(&r3), -EINVAL);
	close(u);
	close(sv[0]);
	close(sv[1]);
}

/* A closed descriptor: EBADF through the callback, as io_uring's. */
static void closed_fd(void)
{
	int p[2];
	struct res r1 = { 0 }, r2 = { 0 }, r3 = { 0 };
	uaio_op op1 = { 0 }, op2 = { 0 }, op3 = { 0 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(9) };

	CHECK(pipe(p) == 0);
	close(p[0]);
	close(p[1]);
	CHECK_OK(uaio_op_poll(L, &op1, p[0], POLLIN, on_res, &r1));
	CHECK_EQ(result(&r1), -EBADF);
	CHECK_OK(uaio_op_connect(L, &op2, p[0], (struct sockaddr *)&a, sizeof(a), on_res, &r2));
	CHECK_EQ(result(&r2), -EBADF);
	CHECK_OK(uaio_op_cancel_fd(L, &op3, p[0], on_res, &r3));
	CHECK_EQ(result(&r3), -EBADF);
}

/* A finished connect leaves the socket connected: connecting again is
 * EISCONN. */
static void connect_again(void)
{
	struct sockaddr_in a;
	int s = listener(&a), c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct res r1 = { 0 }, r2 = { 0 };
	uaio_op op1 = { 0 }, op2 = { 0 };

	CHECK(c >= 0);
	CHECK_OK(uaio_op_connect(L, &op1, c, (struct sockaddr *)&a, sizeof(a), on_res, &r1));
	CHECK_EQ(result(&r1), 0);
	CHECK_OK(uaio_op_connect(L, &op2, c, (struct sockaddr *)&a, sizeof(a), on_res, &r2));
	CHECK_EQ(result(&r2), -EISCONN);
	close(c);
	close(s);
}

/* Deadlines past the clock's range never come (they wrapped to the
 * past and fired at once). */
static int far_fired;

static void on_far(uaio_timer *t)
{
	far_fired++;
}

static void far_deadlines(void)
{
	uaio_timer t[3];
	uint64_t far[3] = { UINT64_MAX, (uint64_t)-1000000000, (1ull << 63) + (1ull << 30) };
	struct res r = { 0 };
	uaio_op op = { 0 };

	for (int i = 0; i < 3; i++) {
		uaio_timer_init(&t[i], on_far, NULL);
		CHECK_OK(uaio_timer_start(L, &t[i], far[i], 0));
	}
	CHECK_OK(uaio_op_timeout(L, &op, UINT64_MAX, on_res, &r));
	for (int i = 0; i < 5; i++)
		uaio_loop_run_once(L, 1000000);
	CHECK_EQ(far_fired, 0);
	CHECK_EQ(r.n, 0);
	for (int i = 0; i < 3; i++)
		CHECK_OK(uaio_timer_stop(L, &t[i]));
	uaio_op c = { 0 };
	struct res cr = { 0 };
	CHECK_OK(uaio_op_cancel(L, &c, &op, on_res, &cr));
	CHECK_EQ(result(&r), -ECANCELED);
}

/* A read left on a descriptor the caller closed with close(2), and a
 * read on the next file to get that number: the new file's data reaches
 * the new read, never the old one's buffer. (epoll ends the old read
 * with EBADF when the new one is queued; io_uring keeps the old file
 * open for it, and the new read, on that number's read side, waits
 * behind it until it ends: uaio_loop(7).) */
static void closed_and_reused(void)
{
	int p[2], q[2];
	char old[4] = { 0 }, nw[4] = { 0 };
	struct res r1 = { 0 }, r2 = { 0 };
	uaio_op op1 = { 0 }, op2 = { 0 };

	CHECK(pipe(p) == 0);
	CHECK_OK(uaio_op_read(L, &op1, p[0], old, sizeof(old), -1, on_res, &r1));
	uaio_loop_run_once(L, 0);
	close(p[0]);
	CHECK(pipe(q) == 0);
	CHECK_EQ(q[0], p[0]);	/* the number came back */
	CHECK_OK(uaio_op_read(L, &op2, q[0], nw, sizeof(nw), -1, on_res, &r2));
	CHECK(write(q[1], "new", 3) == 3);
	close(p[1]);		/* the old read's end, if it is still waiting */
	CHECK_EQ(result(&r2), 3);
	CHECK(!memcmp(nw, "new", 3));
	CHECK(result(&r1) == 0 || r1.res == -EBADF);
	CHECK_EQ(old[0], 0);
	close(q[0]);
	close(q[1]);
}

/* uaio_loop_free with an op stuck in a blocking call (a worker opening a
 * FIFO that has no writer): the loop goes, the call with it, no callback.
 * (io_uring's worker completes such an open when the ring goes, with a
 * descriptor nobody reaps: uaio_loop(7).) */
static void free_with_blocked_call(void)
{
	char path[64];
	uaio_loop *l2 = t_loop_new(0);
	struct res r = { 0 };
	uaio_op op = { 0 };

	snprintf(path, sizeof(path), "/tmp/uaio-parity-fifo.%d", (int)getpid());
	CHECK(mkfifo(path, 0600) == 0);
	CHECK_OK(uaio_op_openat(l2, &op, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0, on_res, &r));
	for (int i = 0; i < 5 && !r.n; i++)
		uaio_loop_run_once(l2, 10 * 1000000);
	uaio_loop_free(l2);	/* hung for ever on the epoll backend */
	if (r.n && r.res >= 0)
		close(r.res);
	unlink(path);
}

/* A named FIFO (it refuses RWF_NOWAIT) whose reader has stopped: a
 * write waits for room without holding the loop (the epoll backend's
 * plain write after readiness wrote all it was given, blocking), and an
 * op queued behind another on it is not failed with EOPNOTSUPP. */
static void fifo_writes(void)
{
	char path[64], sink[65536];
	static char big[128 << 10];
	struct res r1 = { 0 }, r2 = { 0 };
	uaio_op op1 = { 0 }, op2 = { 0 };
	int rd, wr, fl;
	ssize_t n;

	snprintf(path, sizeof(path), "/tmp/uaio-parity-wfifo.%d", (int)getpid());
	CHECK(mkfifo(path, 0600) == 0);
	CHECK((rd = open(path, O_RDWR | O_CLOEXEC)) >= 0);	/* never reads, yet */
	CHECK((wr = open(path, O_WRONLY | O_CLOEXEC)) >= 0);
	CHECK_OK(uaio_op_write(L, &op1, wr, big, sizeof(big), -1, on_res, &r1));
	CHECK_OK(uaio_op_write(L, &op2, wr, big, 100, -1, on_res, &r2));
	for (int i = 0; i < 5; i++)
		uaio_loop_run_once(L, 1000000);	/* hung on the epoll backend */
	CHECK(r1.n == 0 || r1.res > 0);
	CHECK(r2.n == 0 || r2.res > 0);
	fl = fcntl(rd, F_GETFL);
	CHECK(fcntl(rd, F_SETFL, fl | O_NONBLOCK) == 0);
	for (int i = 0; i < 2000 && (!r1.n || !r2.n); i++) {
		while ((n = read(rd, sink, sizeof(sink))) > 0)
			;
		uaio_loop_run_once(L, 1000000);
	}
	CHECK_EQ(r1.n, 1);
	CHECK(r1.res > 0);
	CHECK_EQ(r2.n, 1);
	CHECK_EQ(r2.res, 100);
	close(rd);
	close(wr);
	unlink(path);
}

/* A read of a non-blocking named FIFO that never had a writer: 0 (end of
 * file), as read(2) and io_uring give it; on the epoll backend it waited
 * for a readiness poll never shows until a writer comes. */
static void fifo_no_writer_yet(void)
{
	char path[64], b[8];
	struct res r = { 0 };
	uaio_op op = { 0 };
	int rd;

	snprintf(path, sizeof(path), "/tmp/uaio-parity-nwfifo.%d", (int)getpid());
	CHECK(mkfifo(path, 0600) == 0);
	CHECK((rd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) >= 0);
	CHECK_EQ(read(rd, b, sizeof(b)), 0);
	CHECK_OK(uaio_op_read(L, &op, rd, b, sizeof(b), -1, on_res, &r));
	for (int i = 0; i < 20 && !r.n; i++)
		uaio_loop_run_once(L, 10 * 1000000);
	CHECK_EQ(r.n, 1);
	CHECK_EQ(r.res, 0);
	close(rd);
	unlink(path);
}

/* More long timeouts in flight than the ring has room for, then a cancel
 * of each: every one ends (a cancel waited behind ops waiting for room,
 * for ever, on io_uring). */
#define FULL_N 4100

static void cancel_when_full(void)
{
	static uaio_op t[FULL_N], c[FULL_N];
	static struct res tr[FULL_N], cr[FULL_N];
	int done = 0;

	memset(tr, 0, sizeof(tr));
	memset(cr, 0, sizeof(cr));
	for (int i = 0; i < FULL_N; i++)
		CHECK_OK(uaio_op_timeout(L, &t[i], 60 * 1000000000ull, on_res, &tr[i]));
	uaio_loop_run_once(L, 0);
	for (int i = 0; i < FULL_N; i++)
		CHECK_OK(uaio_op_cancel(L, &c[i], &t[i], on_res, &cr[i]));
	for (int k = 0; k < 1000 && done < 2 * FULL_N; k++) {
		uaio_loop_run_once(L, 10 * 1000000);
		done = 0;
		for (int i = 0; i < FULL_N; i++)
			done += tr[i].n + cr[i].n;
	}
	CHECK_EQ(done, 2 * FULL_N);
	for (int i = 0; i < FULL_N; i++)
		CHECK_EQ(tr[i].res, -ECANCELED);
}

/* A handle unpinned with a read still queued on it (misuse, but): the
 * read ends, instead of waiting on a descriptor the epoll backend closed. */
static void unpin_with_op(void)
{
	int p[2], h;
	char b[4];
	struct res r = { 0 };
	uaio_op op = { 0 };

	CHECK(pipe(p) == 0);
	CHECK((h = uaio_file_pin(L, p[0])) >= 0);
	CHECK_OK(uaio_op_read(L, &op, h, b, sizeof(b), -1, on_res, &r));
	uaio_loop_run_once(L, 0);
	uaio_file_unpin(L, h);
	CHECK(write(p[1], "x", 1) == 1);
	close(p[1]);
	CHECK(result(&r) == 1 || r.res == -ECANCELED);
	close(p[0]);
}

/* The caller's MSG_DONTWAIT on an empty socket: -EAGAIN at once, as
 * io_uring answers (the epoll backend queued it for readiness). */
static void dontwait(void)
{
	struct msghdr mh = { 0 };
	struct iovec iov;
	uaio_op op = { 0 };
	struct res r = { 0 };
	int sv[2];
	char b[8];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK_OK(uaio_op_recv(L, &op, sv[0], b, sizeof(b), MSG_DONTWAIT, on_res, &r));
	CHECK_EQ(result(&r), -EAGAIN);
	iov = (struct iovec){ b, sizeof(b) };
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	r = (struct res){ 0 };
	CHECK_OK(uaio_op_recvmsg(L, &op, sv[0], &mh, MSG_DONTWAIT, on_res, &r));
	CHECK_EQ(result(&r), -EAGAIN);
	/* right after a recv that waited: its side still registered */
	r = (struct res){ 0 };
	CHECK_OK(uaio_op_recv(L, &op, sv[0], b, sizeof(b), 0, on_res, &r));
	uaio_loop_run_once(L, 0);
	CHECK(write(sv[1], "x", 1) == 1);
	CHECK_EQ(result(&r), 1);
	r = (struct res){ 0 };
	CHECK_OK(uaio_op_recv(L, &op, sv[0], b, sizeof(b), MSG_DONTWAIT, on_res, &r));
	CHECK_EQ(result(&r), -EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

/* A poll waits for readiness, not behind the recv waiting on the same
 * socket (epoll queued it there: its POLLOUT never came, and a POLLIN
 * poll behind the recv missed the byte the recv took). */
static void poll_beside_recv(void)
{
	uaio_op rd = { 0 }, po = { 0 };
	struct res rr = { 0 }, rp = { 0 };
	int sv[2];
	char b[16];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK_OK(uaio_op_recv(L, &rd, sv[0], b, sizeof(b), 0, on_res, &rr));
	uaio_loop_run_once(L, 0);
	CHECK_OK(uaio_op_poll(L, &po, sv[0], POLLIN | POLLOUT, on_res, &rp));
	CHECK_EQ(result(&rp), POLLOUT);
	rp = (struct res){ 0 };
	CHECK_OK(uaio_op_poll(L, &po, sv[0], POLLIN, on_res, &rp));
	uaio_loop_run_once(L, 0);
	CHECK(write(sv[1], "x", 1) == 1);
	CHECK_EQ(result(&rr), 1);
	CHECK_EQ(result(&rp) & POLLIN, POLLIN);
	close(sv[0]);
	close(sv[1]);
}

/* The result is poll(2)'s revents: the bits asked for and POLLERR,
 * POLLHUP, POLLNVAL. io_uring's poll also said POLLRDHUP of a peer that
 * closed (0x2011 where poll(2) and the epoll backend say 0x11). */
static void poll_revents_as_poll(void)
{
	uaio_op po = { 0 };
	struct res rp = { 0 };
	struct pollfd pf;
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	close(sv[1]);
	pf = (struct pollfd){ .fd = sv[0], .events = POLLIN };
	CHECK_EQ(poll(&pf, 1, 0), 1);
	CHECK_OK(uaio_op_poll(L, &po, sv[0], POLLIN, on_res, &rp));
	CHECK_EQ(result(&rp), pf.revents);
	CHECK(!(rp.res & POLLRDHUP));
	close(sv[0]);
}

/* A file that seeks but has no pwrite or pread (procfs's seq_file
 * entries answer ESPIPE to an offset) is written and read at its
 * position, as io_uring does (the epoll backend's workers gave ESPIPE). */
static void seq_file_offset(void)
{
	char name[16], back[32] = { 0 };
	struct res w = { 0 }, rd = { 0 };
	uaio_op op = { 0 };
	int fd;

	CHECK(prctl(PR_GET_NAME, name) == 0);
	CHECK((fd = open("/proc/self/comm", O_RDWR | O_CLOEXEC)) >= 0);
	CHECK(pwrite(fd, "x", 1, 0) == -1 && errno == ESPIPE);
	CHECK_OK(uaio_op_write(L, &op, fd, "parity-comm", 11, 0, on_res, &w));
	CHECK_EQ(result(&w), 11);
	close(fd);
	CHECK((fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC)) >= 0);
	CHECK_OK(uaio_op_read(L, &op, fd, back, sizeof(back) - 1, 0, on_res, &rd));
	CHECK_EQ(result(&rd), 12);
	CHECK(!strcmp(back, "parity-comm\n"));
	close(fd);
	CHECK(prctl(PR_SET_NAME, name) == 0);
}

int main(void)
{
	t_watchdog(120);
	t_banner("test_parity");
	L = t_loop_new(0);
	ONE(multishot_cancel_in_callback);
	ONE(edge_after_stop);
	ONE(accept_not_listening);
	ONE(closed_fd);
	ONE(connect_again);
	ONE(far_deadlines);
	ONE(closed_and_reused);
	ONE(free_with_blocked_call);
	ONE(fifo_writes);
	ONE(fifo_no_writer_yet);
	ONE(cancel_when_full);
	ONE(unpin_with_op);
	ONE(dontwait);
	ONE(poll_beside_recv);
	ONE(poll_revents_as_poll);
	ONE(seq_file_offset);
	uaio_loop_free(L);
	return T_EXIT_PASS;
}
