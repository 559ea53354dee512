/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A stream source that fails after it gave bytes (a TCP peer that sends,
 * then resets): what the flow took before the error reaches a stream
 * sink (a socket here), as a read/write loop would have written it, and only then does
 * the flow end with the source's error. The sink here takes a few KiB
 * and then waits for its reader, so most of those bytes are still held
 * (a kbuf chunk, the splice method's pipe) when the error comes; before,
 * the error ended the flow at once and they were dropped. A cancel while
 * the flow waits to send them stops that; the end still says the
 * source's error. Into a file, kbuf dropped the chunk the stream had
 * part-filled when its next receive met the reset. */
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "flow/flow_util.h"

#define SENT	(48u << 10)	/* within loopback's first window: all of it arrives */

static char sent[SENT];

/* Sends everything, waits until the peer's kernel has it all (acked),
 * then resets the connection (SO_LINGER 0). */
static void *send_then_reset(void *arg)
{
	struct linger lg = { 1, 0 };
	int fd = *(int *)arg, outq = 1;
	size_t off = 0;

	while (off < sizeof(sent)) {
		ssize_t n = write(fd, sent + off, sizeof(sent) - off);

		CHECK(n > 0);
		off += (size_t)n;
	}
	for (int i = 0; i < 10000 && outq; i++) {
		CHECK(ioctl(fd, SIOCOUTQ, &outq) == 0);
		if (outq)
			usleep(1000);
	}
	CHECK_EQ(outq, 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	close(fd);			/* RST */
	return NULL;
}

/* The reset has reached fd's side. */
static void wait_reset(int fd)
{
	struct tcp_info ti;
	socklen_t len;

	for (int i = 0; i < 10000; i++) {
		len = sizeof(ti);
		CHECK(getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0);
		if (ti.tcpi_state == TCP_CLOSE)
			return;
		usleep(1000);
	}
	CHECK(!"the reset never arrived");
}

struct reader {
	int fd;
	char *buf;
	size_t got;
};

static void *read_all(void *arg)
{
	struct reader *rd = arg;
	ssize_t n;

	while ((n = read(rd->fd, rd->buf + rd->got, SENT + 1 - rd->got)) > 0)
		rd->got += (size_t)n;
	return NULL;
}

enum sink { TO_SOCKET, TO_SOCKET_CANCEL, TO_FILE };
static const char *const sink_names[] = { "a socket", "a socket, cancelled", "a file" };

/* After the flow's end: what the sink got, into rd. */
static void sink_got(int sink, int k[2], struct reader *rd, pthread_t *th)
{
	if (sink == TO_FILE) {
		ssize_t n = pread(k[0], rd->buf, SENT + 1, 0);

		CHECK(n >= 0);
		rd->got = (size_t)n;
		return;
	}
	close(k[0]);		/* the reader's end of file */
	if (sink == TO_SOCKET)
		CHECK(pthread_join(*th, NULL) == 0);
	else
		read_all(rd);
}

static void one(uaio_loop *l, int mode, int sink)
{
	struct t_result r = { 0 };
	struct uaio_flow_params p = { .len = UAIO_FLOW_EOF, .mode = mode,
				      .done = t_on_done, .data = &r };
	struct reader rd = { .buf = malloc(SENT + 1) };
	int sv[2], k[2] = { -1, -1 };
	pthread_t th;
	uaio_flow *f;

	CHECK(rd.buf);
	t_tcp_pair(sv);
	if (sink == TO_FILE)
		k[0] = t_tmpfile("/var/tmp");
	else
		t_tcp_pair_bufs(k, 4096, 4096);	/* a few KiB, then it waits */
	rd.fd = k[1];
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = sv[0], .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = k[0],
				       .off = sink == TO_FILE ? 0 : -1 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	CHECK(pthread_create(&th, NULL, send_then_reset, &sv[1]) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	wait_reset(sv[0]);
	/* The flow takes all it can and meets the reset; a socket sink is
	 * full by then. */
	for (int i = 0; i < 50 && !r.done; i++)
		CHECK(uaio_loop_run_once(l, 10 * 1000000) >= 0);	/* 10 ms */
	if (sink == TO_SOCKET_CANCEL) {
		CHECK_EQ(r.done, 0);		/* it waits for the sink's reader */
		CHECK_OK(uaio_flow_cancel(f));
		CHECK_EQ(uaio_flow_cancel(f), -EALREADY);
	} else if (sink == TO_SOCKET) {
		CHECK(pthread_create(&th, NULL, read_all, &rd) == 0);
	}
	T_RUN_UNTIL(l, r.done, 10000000);
	sink_got(sink, k, &rd, &th);
	fprintf(stderr, "    %s into %s: done %lld, side %d; the sink got %zu of %u\n",
		uaio_flow_mode_name(mode), sink_names[sink], (long long)r.res, r.side,
		rd.got, SENT);
	CHECK_EQ(r.done, 1);
	if (sink == TO_SOCKET_CANCEL) {
		CHECK(rd.got < SENT);
		/* Through splice on io_uring the fill waits for the pipe's
		 * lock, which the drain blocked on the sink holds: the error
		 * is met only once the sink takes more, after the cancel. */
		if (r.res == -ECANCELED) {
			CHECK_EQ(r.side, UAIO_FLOW_SIDE_NONE);
			r.res = -ECONNRESET;
			r.side = UAIO_FLOW_SIDE_SRC;
		}
	} else {
		CHECK_EQ(rd.got, SENT);
	}
	CHECK_EQ(r.res, -ECONNRESET);
	CHECK_EQ(r.side, UAIO_FLOW_SIDE_SRC);
	CHECK(memcmp(rd.buf, sent, rd.got) == 0);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	close(sv[0]);
	if (sink == TO_FILE)
		close(k[0]);
	else
		close(k[1]);
	free(rd.buf);
}

/* Memory is no stream: a source page that cannot be read (EFAULT) is a
 * hole, and the stream sink gets nothing after it (the flush once sent
 * the chunks behind it). */
static void memory_hole(uaio_loop *l)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *mem = mmap(NULL, 3 * (size_t)pg, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), buf[4 * 65536];
	struct t_result r = { 0 };
	struct uaio_flow_params p = { .len = 3 * (uint64_t)pg, .mode = UAIO_FLOW_KBUF,
				      .chunk = (size_t)pg, .done = t_on_done, .data = &r };
	size_t got = 0;
	ssize_t n;
	int k[2];
	uaio_flow *f;

	CHECK(mem != MAP_FAILED && pg <= 65536);
	t_fill(mem, 3 * (size_t)pg, 12);
	CHECK(mprotect(mem + pg, (size_t)pg, PROT_NONE) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, k) == 0);
	p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_MEM, .mem = mem,
				       .mem_len = 3 * (size_t)pg, .buf_index = -1, .off = -1 };
	p.dst = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = k[0], .off = -1 };
	CHECK_OK(uaio_flow_start(l, &p, &f));
	T_RUN_UNTIL(l, r.done, 10000000);
	close(k[0]);
	while ((n = read(k[1], buf + got, sizeof(buf) - got)) > 0)
		got += (size_t)n;
	fprintf(stderr, "    memory with a hole into a socket: done %lld, side %d; the sink got %zu\n",
		(long long)r.res, r.side, got);
	CHECK_EQ(r.res, -EFAULT);
	CHECK_EQ(r.side, UAIO_FLOW_SIDE_SRC);
	CHECK_EQ(got, (size_t)pg);
	CHECK(memcmp(buf, mem, (size_t)pg) == 0);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	close(k[1]);
	munmap(mem, 3 * (size_t)pg);
}

int main(void)
{
	uaio_loop *l;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(120);
	t_banner("test_source_error");
	t_fill(sent, sizeof(sent), 11);
	l = t_loop_new(0);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_PAGECACHE; mode++)
		for (int sink = TO_SOCKET; sink <= TO_FILE; sink++)
			one(l, mode, sink);
	memory_hole(l);
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
