/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A socket or pipe -> file flow (kbuf or splice, at the file's position)
 * cancelled while a peer sends: the file holds a prefix of the stream,
 * and the stream the rest, so that a program going on from the file's
 * position (as uaio-flow's users do) loses no byte. A chunk received, or
 * being received, when the cancel came was dropped with what it had
 * taken from the socket (32 KiB lost in 15-25 of 30 runs), the splice
 * method dropped what sat in its pipe, and kbuf dropped a pipe's chunks
 * (a randomized stress found it). The cancel comes at spread moments;
 * what is checked is only the bytes. */
#include <signal.h>
#include <sys/resource.h>

#include "flow/flow_util.h"

#define SENT	(8u << 20)

struct feed {
	int fd;
	const char *buf;
	bool pipe;		/* its end is closed after the last byte: EOF */
};

/* 4 KiB writes with short naps: the flow has chunks part-filled often */
static void *feed_slow(void *arg)
{
	struct feed *fe = arg;
	size_t off = 0;

	while (off < SENT) {
		ssize_t w = write(fe->fd, fe->buf + off, SENT - off < 4096 ? SENT - off : 4096);

		if (w <= 0)
			break;
		off += (size_t)w;
		if ((off / 4096) % 8 == 0)
			usleep(50);
	}
	if (fe->pipe)
		close(fe->fd);
	else
		shutdown(fe->fd, SHUT_WR);
	return NULL;
}

enum { SRC_UNIX, SRC_TCP, SRC_PIPE };

static void one(uaio_loop *l, const char *src, char *out, unsigned at_ms, int kind, int mode)
{
	struct t_result r = { 0 };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = mode,
				      .done = t_on_done, .data = &r };
	int sv[2], file = t_tmpfile("/var/tmp");
	struct feed fe;
	size_t have;
	ssize_t k;
	pthread_t th;
	uaio_flow *f;
	uint64_t until;

	if (kind == SRC_TCP)
		t_tcp_pair(sv);
	else if (kind == SRC_PIPE)
		CHECK(pipe2(sv, O_CLOEXEC) == 0);
	else
		CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	fe = (struct feed){ sv[1], src, kind == SRC_PIPE };
	CHECK(pthread_create(&th, NULL, feed_slow, &fe) == 0);
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = file, .off = -1 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	CHECK(!strcmp(uaio_flow_method(f), mode == UAIO_FLOW_KBUF ? "pipeline" : "splice"));
	until = uaio_loop_now(l) + (uint64_t)at_ms * 1000000;
	while (!r.done && uaio_loop_now(l) < until)
		uaio_loop_run_once(l, 1000000);
	if (!r.done)
		CHECK_OK(uaio_flow_cancel(f));
	T_RUN_UNTIL(l, r.done, 10000000);
	/* go on from the file's position with what the socket still has */
	have = (size_t)lseek(file, 0, SEEK_CUR);
	CHECK(pread(file, out, have, 0) == (ssize_t)have);
	while (have < SENT && (k = read(sv[0], out + have, SENT - have)) > 0)
		have += (size_t)k;
	CHECK(pthread_join(th, NULL) == 0);
	CHECK_EQ(have, SENT);
	CHECK(!memcmp(out, src, SENT));
	CHECK_EQ(uaio_loop_inflight(l), 0);
	close(sv[0]);
	if (kind != SRC_PIPE)	/* the feeder closed a pipe's */
		close(sv[1]);
	close(file);
}

/* The file takes no more than FSIZE_CAP (RLIMIT_FSIZE) and the flow is
 * cancelled just before it: the bytes the flow holds then may not all
 * fit. Whatever was lost, the end must say so (EFBIG from the sink), not
 * -ECANCELED: the cancel's writes failed silently, and the caller took
 * the file as holding all the flow had taken. */
#define FSIZE_CAP	(1u << 20)

struct capped {
	struct t_result r;
	bool cancelled;
};

static void cap_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	struct capped *c = data;

	if (!c->cancelled && bytes >= FSIZE_CAP - 8192) {
		int r = uaio_flow_cancel(f);

		c->cancelled = true;
		CHECK(r == 0 || r == -EALREADY);	/* or it failed on the cap first */
	}
}

static void cap_done(uaio_flow *f, int64_t res, int side, void *data)
{
	t_on_done(f, res, side, &((struct capped *)data)->r);
}

static void *feed_fast(void *arg)
{
	struct feed *fe = arg;
	size_t off = 0;
	ssize_t w;

	while (off < SENT && (w = write(fe->fd, fe->buf + off, SENT - off)) > 0)
		off += (size_t)w;
	shutdown(fe->fd, SHUT_WR);
	return NULL;
}

static void capped(uaio_loop *l, const char *src, char *out, int mode)
{
	struct capped c = { 0 };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = mode,
				      .progress = cap_progress, .done = cap_done, .data = &c };
	struct rlimit rl, cap;
	int sv[2], file = t_tmpfile("/var/tmp");
	struct feed fe;
	pthread_t th;
	uaio_flow *f;
	size_t have;
	ssize_t k;
	bool whole;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0);
	cap = (struct rlimit){ FSIZE_CAP, rl.rlim_max };
	CHECK(setrlimit(RLIMIT_FSIZE, &cap) == 0);
	fe = (struct feed){ sv[1], src, false };
	CHECK(pthread_create(&th, NULL, feed_fast, &fe) == 0);
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = file, .off = -1 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	T_RUN_UNTIL(l, c.r.done, 10000000);
	CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	have = (size_t)lseek(file, 0, SEEK_CUR);
	CHECK(pread(file, out, have, 0) == (ssize_t)have);
	while (have < SENT && (k = read(sv[0], out + have, SENT - have)) > 0)
		have += (size_t)k;
	CHECK(pthread_join(th, NULL) == 0);
	whole = have == SENT && !memcmp(out, src, SENT);
	if (!whole && (c.r.res != -EFBIG || c.r.side != UAIO_FLOW_SIDE_DST))
		fprintf(stderr, "mode %d: %zu of %u bytes, res %lld side %d, file %lld\n", mode,
			have, SENT, (long long)c.r.res, c.r.side, (long long)lseek(file, 0, SEEK_END));
	if (!whole)
		CHECK(c.r.res == -EFBIG && c.r.side == UAIO_FLOW_SIDE_DST);
	else
		CHECK(c.r.res == -ECANCELED || c.r.res == -EFBIG);
	close(sv[0]);
	close(sv[1]);
	close(file);
}

/* A pipe -> file flow through kbuf cancelled from its tap, at its second
 * chunk: the chunk the tap saw is out of the pipe, and is written; the
 * file and what the pipe still holds make the stream. kbuf dropped it
 * (it kept only a socket's). */
struct tapped {
	struct t_result r;
	int chunks;
	bool refuse;		/* the tap refuses the second chunk instead */
};

static int cancel_at_second(uaio_flow *f, const void *buf, size_t len, uint64_t pos,
			    void *data)
{
	struct tapped *t = data;

	(void)buf;
	(void)len;
	(void)pos;
	if (++t->chunks == 2 && t->refuse)
		return -EPROTO;
	if (t->chunks == 2)
		CHECK_OK(uaio_flow_cancel(f));
	return 0;
}

static void tapped_done(uaio_flow *f, int64_t res, int side, void *data)
{
	t_on_done(f, res, side, &((struct tapped *)data)->r);
}

/* ... and a chunk the tap refuses is never the sink's: the end wrote it
 * as a stream's chunk held (review of the above). */
static void cancel_in_tap(uaio_loop *l, const char *src, char *out, bool refuse)
{
	enum { N = 300000 };
	struct tapped t = { .refuse = refuse };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = UAIO_FLOW_KBUF,
				      .chunk = 65536, .depth = 1, .tap = cancel_at_second,
				      .done = tapped_done, .data = &t };
	int pp[2], file = t_tmpfile("/var/tmp");
	size_t have;
	ssize_t k;
	uaio_flow *f;

	CHECK(pipe2(pp, O_CLOEXEC) == 0);
	CHECK(fcntl(pp[1], F_SETPIPE_SZ, 1 << 20) >= N);
	CHECK(write(pp[1], src, N) == N);
	close(pp[1]);
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = pp[0], .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = file, .off = -1 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	T_RUN_UNTIL(l, t.r.done, 10000000);
	CHECK_EQ(t.r.res, refuse ? -EPROTO : -ECANCELED);
	have = (size_t)lseek(file, 0, SEEK_CUR);
	fprintf(stderr, "    %s in the tap: %zu bytes in the file\n",
		refuse ? "refused" : "cancelled", have);
	/* the first chunk only, when the second was refused; else both, and
	 * the pipe holds the rest */
	CHECK(refuse ? have == 65536 : have >= 2 * 65536);
	CHECK_EQ(lseek(file, 0, SEEK_END), (off_t)have);
	CHECK(pread(file, out, have, 0) == (ssize_t)have);
	CHECK(!memcmp(out, src, have));
	if (!refuse) {
		while (have < N && (k = read(pp[0], out + have, N - have)) > 0)
			have += (size_t)k;
		CHECK_EQ(have, (size_t)N);
		CHECK(!memcmp(out, src, N));
	}
	CHECK_EQ(uaio_loop_inflight(l), 0);
	close(pp[0]);
	close(file);
}

/* A socket -> memory flow cancelled with bytes waiting in the socket:
 * what uaio_flow_bytes counts and what the socket still holds make the
 * stream. A receive that ends with bytes after the cancel came (one the
 * cancel could not stop) left them in the memory, counted nowhere; this
 * case mostly sees the receive cancelled, and the race itself was met by
 * a randomized stress of many flows (its seed 416, /var/tmp/rev115-t). */
struct mem_end {
	struct t_result r;
	uint64_t bytes;
};

static void mem_done(uaio_flow *f, int64_t res, int side, void *data)
{
	struct mem_end *m = data;

	m->bytes = uaio_flow_bytes(f);
	t_on_done(f, res, side, &m->r);
}

static void cancel_into_memory(uaio_loop *l, const char *src)
{
	enum { N = 4096 };
	static char mem[1 << 20];
	char rest[N];
	struct mem_end m = { 0 };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = UAIO_FLOW_KBUF,
				      .chunk = 65536, .done = mem_done, .data = &m };
	int sv[2];
	ssize_t k;
	size_t left = 0;
	uaio_flow *f;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_MEM, .mem = mem, .mem_len = sizeof(mem),
				       .buf_index = -1 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	for (int i = 0; i < 3; i++)	/* its receive goes out, and waits */
		CHECK(uaio_loop_run_once(l, 0) >= 0);
	CHECK_EQ(write(sv[1], src, N), N);
	usleep(20000);			/* (the kernel's receive ends meanwhile) */
	CHECK_OK(uaio_flow_cancel(f));
	T_RUN_UNTIL(l, m.r.done, 10000000);
	CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
	while ((k = read(sv[0], rest + left, sizeof(rest) - left)) > 0)
		left += (size_t)k;
	fprintf(stderr, "    cancelled into memory: %llu bytes counted, %zu left in the socket\n",
		(unsigned long long)m.bytes, left);
	CHECK_EQ(m.bytes + left, (uint64_t)N);
	CHECK(!memcmp(mem, src, m.bytes));
	CHECK(!memcmp(rest, src + m.bytes, left));
	CHECK_EQ(uaio_loop_inflight(l), 0);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	static char src[SENT], out[SENT];
	uaio_loop *l;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	t_banner("test_cancel_stream");
	t_fill(src, SENT, 21);
	l = t_loop_new(0);
	for (unsigned i = 0; i < 36; i++)
		one(l, src, out, 1 + i * 3 % 37, (int)(i % 3), UAIO_FLOW_KBUF);
	/* the splice method: the bytes in the flow's pipe */
	for (unsigned i = 0; i < 36; i++)
		one(l, src, out, 1 + i * 3 % 37, (int)(i % 3), UAIO_FLOW_PAGECACHE);
	cancel_in_tap(l, src, out, false);
	cancel_in_tap(l, src, out, true);
	for (int i = 0; i < 5; i++)
		cancel_into_memory(l, src);
	signal(SIGXFSZ, SIG_IGN);
	for (unsigned i = 0; i < 6; i++)
		capped(l, src, out, i % 2 ? UAIO_FLOW_PAGECACHE : UAIO_FLOW_KBUF);
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
