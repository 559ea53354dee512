/* SPDX-License-Identifier: MIT */
/* The sendfile method: a file to a non-blocking socket (and, at the end,
 * file to file elsewhere: splice steps on a worker). Cached ranges go
 * inline, uncached ones through a worker, a full socket waits for room;
 * every byte arrives once and in order, short files end short, a closed
 * peer is a sink error, a cancel ends the flow, and a blocking socket is
 * left to splice (a send there could wait for the peer for ever). */
#include "flow/flow_util.h"
#include <signal.h>
#include <string.h>

static uaio_loop *L;
static const char *dir = "/var/tmp";

#define BIG	(12u << 20)	/* several socket buffers' worth */

static char *data;

static int src_file(size_t n)
{
	int fd = t_tmpfile(dir);

	CHECK_EQ(pwrite(fd, data, n, 0), (ssize_t)n);
	return fd;
}

/* Starts a flow of len bytes of file fd from off to a socket of kind
 * (non-blocking unless blocking), drained by a thread that expects
 * expect bytes. */
static uaio_flow *start_x(int fd, int64_t off, uint64_t len, size_t expect, int kind,
			  bool blocking, struct end *dst, struct t_sync *s)
{
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = fd, .off = off },
		.dst = { .type = UAIO_FLOW_FD, .off = -1 },
		.len = len, .mode = UAIO_FLOW_AUTO, .done = t_sync_done, .data = s,
	};
	uaio_flow *f;

	t_dst(dst, kind, expect, dir);
	if (!blocking)
		t_set_nonblock(dst->fd);
	p.dst.fd = dst->fd;
	CHECK_EQ(uaio_flow_start(L, &p, &f), 0);
	return f;
}

static uaio_flow *start(int fd, int64_t off, uint64_t len, int kind, bool blocking,
			struct end *dst, struct t_sync *s)
{
	return start_x(fd, off, len, len, kind, blocking, dst, s);
}

static void expect_bytes(struct end *dst, const char *want, size_t n)
{
	t_dst_finish(dst);
	CHECK_EQ(dst->got, n);
	CHECK(memcmp(dst->buf, want, n) == 0);
	free(dst->buf);
}

/* Cached, bigger than the socket buffer, from an offset: inline sends
 * and waits for room, every byte in order. */
static void test_cached(void)
{
	for (int kind = E_UNIX; kind <= E_TCP; kind++) {
		int fd = src_file(BIG);
		struct t_sync s = { 0 };
		struct end dst;
		uaio_flow *f = start(fd, 12345, BIG - 12345 - 7, kind, false, &dst, &s);

		CHECK_EQ(strcmp(uaio_flow_method(f), "sendfile"), 0);
		T_RUN_UNTIL(L, s.r.done, 10000000);
		CHECK_EQ(s.r.res, (int64_t)(BIG - 12345 - 7));
		CHECK_EQ(s.r.side, UAIO_FLOW_SIDE_NONE);
		CHECK_EQ(strcmp(s.method, "sendfile"), 0);
		expect_bytes(&dst, data + 12345, BIG - 12345 - 7);
		/* A positioned flow leaves the file position alone. */
		CHECK_EQ(lseek(fd, 0, SEEK_CUR), 0);
		close(fd);
	}
}

/* Pages dropped from the cache first: the sends that find them missing
 * go through a worker. The bytes are the same. */
static void test_uncached(void)
{
	int fd = src_file(BIG);
	struct t_sync s = { 0 };
	struct end dst;

	CHECK(fdatasync(fd) == 0);
	CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
	start(fd, 0, BIG, E_TCP, false, &dst, &s);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	CHECK_EQ(s.r.res, (int64_t)BIG);
	expect_bytes(&dst, data, BIG);
	close(fd);
}

/* Asked for more than the file holds: the flow ends at the end of the
 * file, short, without an error; until EOF, exactly the file. */
static void test_short_and_eof(void)
{
	size_t n = (3u << 20) + 5;
	int fd = src_file(n);
	struct t_sync s = { 0 };
	struct end dst;

	start_x(fd, 0, n + 4096, n, E_TCP, false, &dst, &s);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	CHECK_EQ(s.r.res, (int64_t)n);
	CHECK_EQ(s.r.side, UAIO_FLOW_SIDE_NONE);
	expect_bytes(&dst, data, n);

	memset(&s, 0, sizeof(s));
	start_x(fd, 0, UAIO_FLOW_EOF, n, E_UNIX, false, &dst, &s);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	CHECK_EQ(s.r.res, (int64_t)n);
	expect_bytes(&dst, data, n);
	close(fd);
}

/* A flow of all of file fd into a non-blocking TCP socket whose peer
 * (sv[1]) nobody reads. */
static uaio_flow *start_unread(int fd, int sv[2], struct t_sync *s)
{
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = fd, .off = 0 },
		.dst = { .type = UAIO_FLOW_FD, .off = -1 },
		.len = BIG, .mode = UAIO_FLOW_AUTO, .done = t_sync_done, .data = s,
	};
	uaio_flow *f;

	t_tcp_pair(sv);
	t_set_nonblock(sv[0]);
	p.dst.fd = sv[0];
	CHECK_EQ(uaio_flow_start(L, &p, &f), 0);
	return f;
}

/* The peer closes its end after reading nothing: the flow ends with the
 * socket's error, on the sink's side, never with SIGPIPE's death. */
static void test_peer_gone(void)
{
	int fd = src_file(BIG), sv[2];
	struct t_sync s = { 0 };

	start_unread(fd, sv, &s);
	close(sv[1]);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	CHECK(s.r.res == -EPIPE || s.r.res == -ECONNRESET);
	CHECK_EQ(s.r.side, UAIO_FLOW_SIDE_DST);
	close(sv[0]);
	close(fd);
}

/* Cancelled while the socket is full and no one reads: ECANCELED, once,
 * and nothing of the flow left in the loop. */
static void test_cancel_full(void)
{
	int fd = src_file(BIG), sv[2];
	struct t_sync s = { 0 };
	uaio_flow *f = start_unread(fd, sv, &s);

	/* Run until the socket is full and the flow waits for room. */
	for (int i = 0; i < 50 && !s.r.done; i++)
		uaio_loop_run_once(L, 0);
	CHECK_EQ(s.r.done, 0);
	CHECK(uaio_flow_bytes(f) > 0 && uaio_flow_bytes(f) < BIG);
	CHECK_EQ(uaio_flow_cancel(f), 0);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	t_expect_cancelled(L, &s.r);
	close(sv[0]);
	close(sv[1]);
	close(fd);
}

/* Many flows on one loop take turns: a flow sends at most 256 KiB inline
 * (one sendfile) before the loop's other work, the next flow's included,
 * gets the thread. Turns keep each socket's queue short: on loopback a
 * megabyte queued at once cost twice the CPU per byte (docs/flows.md).
 * The sockets' buffers are raised so that a longer turn would fit, and the
 * first flow asks for steps of 4 MiB. */
struct turn {
	uaio_flow *f[2];
	uint64_t moved[2];
	uint64_t other_at_first[2];	/* the other flow's bytes at this one's first */
	bool seen[2];
};

static struct turn *turns;

static void turn_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	int i = f == turns->f[1];

	if (!turns->seen[i]) {
		turns->seen[i] = true;
		turns->other_at_first[i] = turns->moved[!i];
	}
	turns->moved[i] = bytes;
}

static void test_turns(void)
{
	const size_t n = 4u << 20;
	int fd = src_file(n), big = 8 << 20;
	struct turn t = { 0 };
	struct t_sync s[2] = { 0 };
	struct end dst[2];

	turns = &t;
	for (int i = 0; i < 2; i++) {
		struct uaio_flow_params p = {
			.src = { .type = UAIO_FLOW_FD, .fd = fd, .off = 0 },
			.dst = { .type = UAIO_FLOW_FD, .off = -1 },
			.len = n, .mode = UAIO_FLOW_AUTO, .progress = turn_progress,
			/* A large chunk is a worker's step, never a longer turn. */
			.chunk = i == 0 ? 4u << 20 : 0,
			.done = t_sync_done, .data = &s[i],
		};

		t_dst(&dst[i], E_TCP, n, dir);
		t_set_nonblock(dst[i].fd);
		CHECK(setsockopt(dst[i].fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)) == 0);
		p.dst.fd = dst[i].fd;
		CHECK_EQ(uaio_flow_start(L, &p, &t.f[i]), 0);
		CHECK_EQ(strcmp(uaio_flow_method(t.f[i]), "sendfile"), 0);
	}
	T_RUN_UNTIL(L, s[0].r.done && s[1].r.done, 10000000);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(s[i].r.res, (int64_t)n);
		expect_bytes(&dst[i], data, n);
	}
	/* The second flow's first bytes went after one turn of the first. */
	CHECK(t.seen[1]);
	CHECK(t.other_at_first[1] > 0 && t.other_at_first[1] <= 256u << 10);
	turns = NULL;
	close(fd);
}

/* A blocking socket is not sendfile's: another method moves the bytes. */
static void test_blocking_socket(void)
{
	int fd = src_file(1 << 20);
	struct t_sync s = { 0 };
	struct end dst;
	uaio_flow *f = start(fd, 0, 1 << 20, E_TCP, true, &dst, &s);

	CHECK(strcmp(uaio_flow_method(f), "sendfile") != 0);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	CHECK_EQ(s.r.res, 1 << 20);
	expect_bytes(&dst, data, 1 << 20);
	close(fd);
}

/* File to file on another file system (/dev/shm, tmpfs): copy_file_range
 * refuses, and AUTO goes on with splice steps on a worker, from an offset
 * and in several steps; the sink holds exactly the bytes. */
static void test_files_elsewhere(void)
{
	struct stat a, b;
	int src = src_file(BIG), dst, side = -1;
	const char *m = "?";
	struct t_sync s = { 0 };
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = src, .off = 4097 },
		.dst = { .type = UAIO_FLOW_FD, .off = 3 },
		.len = BIG - 4097, .chunk = 1u << 20, .mode = UAIO_FLOW_AUTO,
		.done = t_sync_done, .data = &s,
	};
	uaio_flow *f;
	char *got = malloc(BIG);

	if (access("/dev/shm", W_OK) || (dst = t_tmpfile("/dev/shm")) < 0 ||
	    fstat(src, &a) || fstat(dst, &b) || a.st_dev == b.st_dev) {
		fprintf(stderr, "    (no second file system at /dev/shm: not run)\n");
		close(src);
		free(got);
		return;
	}
	p.dst.fd = dst;
	CHECK_EQ(uaio_flow_start(L, &p, &f), 0);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	side = s.r.side;
	m = s.method;
	CHECK_EQ(s.r.res, (int64_t)(BIG - 4097));
	CHECK_EQ(side, UAIO_FLOW_SIDE_NONE);
	CHECK_EQ(strcmp(m, "splice"), 0);
	CHECK_EQ(pread(dst, got, BIG, 0), (ssize_t)(BIG - 4097 + 3));
	CHECK(memcmp(got + 3, data + 4097, BIG - 4097) == 0);
	close(dst);
	close(src);
	free(got);
}

/* An empty file: nothing to send, a clean end. */
/* To the end of a file (UAIO_FLOW_EOF) into a socket whose peer reads
 * only after the flow is done: the last, short send is the file's end,
 * not a full socket, and done comes without waiting for the peer (it
 * waited for room the peer made only after reading). */
static void test_eof_no_wait(void)
{
	enum { N = 150000 };
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .off = 0 },
		.dst = { .type = UAIO_FLOW_FD, .off = -1 },
		.len = UAIO_FLOW_EOF, .mode = UAIO_FLOW_PAGECACHE, .done = t_sync_done,
	};
	struct t_sync s = { { 0 } };
	static char got[N];
	uaio_flow *f;
	size_t n = 0;
	int sv[2];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	t_set_nonblock(sv[0]);
	p.src.fd = src_file(N);
	p.dst.fd = sv[0];
	p.data = &s;
	CHECK_EQ(uaio_flow_start(L, &p, &f), 0);
	for (int i = 0; i < 50 && !s.r.done; i++)
		CHECK(uaio_loop_run_once(L, 100000000) >= 0);
	CHECK_EQ(s.r.done, 1);
	CHECK_EQ(s.r.res, N);
	while (n < N) {
		ssize_t r = read(sv[1], got + n, N - n);

		CHECK(r > 0);
		n += (size_t)r;
	}
	CHECK(!memcmp(got, data, N));
	close(p.src.fd);
	close(sv[0]);
	close(sv[1]);
}

static void test_empty(void)
{
	int fd = src_file(0);
	struct t_sync s = { 0 };
	struct end dst;

	start_x(fd, 0, UAIO_FLOW_EOF, 0, E_TCP, false, &dst, &s);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	CHECK_EQ(s.r.res, 0);
	CHECK_EQ(s.r.side, UAIO_FLOW_SIDE_NONE);
	expect_bytes(&dst, data, 0);
	close(fd);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	t_watchdog(300);
	t_banner("test_sendfile");
	L = t_loop_new(0);
	data = malloc(BIG);
	t_fill(data, BIG, 7);
	RUN(test_cached);
	RUN(test_uncached);
	RUN(test_short_and_eof);
	RUN(test_peer_gone);
	RUN(test_cancel_full);
	RUN(test_turns);
	RUN(test_blocking_socket);
	RUN(test_empty);
	RUN(test_eof_no_wait);
	RUN(test_files_elsewhere);
	CHECK_EQ(uaio_loop_inflight(L), 0);
	uaio_loop_free(L);
	free(data);
	return T_EXIT_PASS;
}
