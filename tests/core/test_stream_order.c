/* SPDX-License-Identifier: MIT */
/*
 * Ops queued together on one side of a stream (a pipe, a socket, a file
 * at its position) take and give its bytes in the order they were made,
 * on both backends: io_uring wakes the newest waiter first, so without
 * the loop's ordering queued reads took the bytes in reverse and writes
 * queued on a full pipe interleaved. Cancels and close still reach the
 * ops waiting behind another.
 */
#include <uaio/loop.h>
#include "../test.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <stdbool.h>
#include <sys/uio.h>

#define N 4
#define WLEN 65536

/* Each op's index travels in a struct of its own. */
struct tagged {
	uaio_op op;
	int i, res;
	int *seq, *nseq;
};

static void on_tagged(uaio_op *op, int res, void *data)
{
	struct tagged *t = data;

	(void)op;
	t->res = res;
	t->seq[(*t->nseq)++] = t->i;
}

/* Fills fd (non-blocking for the fill only) and returns the bytes put. */
static size_t fill(int fd)
{
	static char junk[1 << 16];
	size_t put = 0;
	ssize_t w;

	t_set_nonblock(fd);
	memset(junk, 'z', sizeof(junk));
	while ((w = write(fd, junk, sizeof(junk))) > 0)
		put += (size_t)w;
	CHECK(errno == EAGAIN);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return put;
}

/* Reads exactly len bytes from fd, turning the loop meanwhile. */
static void drain(uaio_loop *l, int fd, char *out, size_t len)
{
	size_t got = 0;

	t_set_nonblock(fd);
	while (got < len) {
		ssize_t r = read(fd, out + got, len - got);

		if (r > 0)
			got += (size_t)r;
		else
			CHECK(r < 0 && errno == EAGAIN);
		uaio_loop_run_once(l, 0);
	}
}

/* Reads what fd gives until *n reaches want and nothing is left: the
 * byte count. */
static size_t drain_until(uaio_loop *l, int fd, char *out, size_t cap, const int *n, int want)
{
	size_t got = 0;

	t_set_nonblock(fd);
	for (;;) {
		ssize_t r = got < cap ? read(fd, out + got, cap - got) : -1;

		if (r > 0) {
			got += (size_t)r;
			continue;
		}
		CHECK(got == cap || errno == EAGAIN);
		if (*n == want)
			return got;
		uaio_loop_run_once(l, 0);
	}
}

/* Reads queued on an empty stream, then bytes one by one. */
static void reads_in_order(int rd, int wr, bool sock)
{
	uaio_loop *l = t_loop_new(0);
	struct tagged t[N];
	char got[N];
	int seq[N], nseq = 0;

	for (int i = 0; i < N; i++) {
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		got[i] = 0;
		if (sock)
			CHECK_OK(uaio_op_recv(l, &t[i].op, rd, &got[i], 1, 0, on_tagged, &t[i]));
		else
			CHECK_OK(uaio_op_read(l, &t[i].op, rd, &got[i], 1, -1, on_tagged, &t[i]));
	}
	uaio_loop_run_once(l, 0);	/* all of them waiting for data now */
	for (int i = 0; i < N; i++) {
		CHECK_EQ(write(wr, "ABCD" + i, 1), 1);
		T_RUN_UNTIL(l, nseq > i, 1000);
	}
	for (int i = 0; i < N; i++) {
		CHECK_EQ(t[i].res, 1);
		CHECK_EQ(got[i], "ABCD"[i]);
		CHECK_EQ(seq[i], i);
	}
	uaio_loop_free(l);
}

/* Writes queued on a full stream arrive in order, each op's bytes in one
 * run (a send may move less than asked: what it says it moved). */
static void writes_in_order(int rd, int wr, bool sock)
{
	uaio_loop *l = t_loop_new(0);
	static char bufs[N][WLEN], out[N * WLEN], junk[8 << 20];
	struct tagged t[N];
	int seq[N], nseq = 0;
	size_t filled = fill(wr), got, at = 0;

	CHECK(filled <= sizeof(junk));
	for (int i = 0; i < N; i++) {
		memset(bufs[i], 'A' + i, WLEN);
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		if (sock)
			CHECK_OK(uaio_op_send(l, &t[i].op, wr, bufs[i], WLEN, 0, on_tagged, &t[i]));
		else
			CHECK_OK(uaio_op_write(l, &t[i].op, wr, bufs[i], WLEN, -1, on_tagged, &t[i]));
	}
	uaio_loop_run_once(l, 0);
	drain(l, rd, junk, filled);
	got = drain_until(l, rd, out, sizeof(out), &nseq, N);
	for (int k = 0; k < N; k++) {
		int i = seq[k];

		CHECK_EQ(i, k);
		CHECK(t[i].res > 0 && t[i].res <= WLEN);
		for (int b = 0; b < t[i].res; b++)
			if (out[at + (size_t)b] != 'A' + i) {
				fprintf(stderr, "write %d's byte %d is '%c'\n", i, b, out[at + (size_t)b]);
				exit(T_EXIT_FAIL);
			}
		at += (size_t)t[i].res;
	}
	CHECK_EQ(at, got);
	uaio_loop_free(l);
}

/* Reads, then writes, on a pipe and on a socketpair. */
static void t_streams(void)
{
	for (int sock = 0; sock < 2; sock++)
		for (int wr = 0; wr < 2; wr++) {
			int p[2];

			fprintf(stderr, "    %s %s\n", sock ? "socketpair" : "pipe",
				wr ? "writes" : "reads");
			CHECK(sock ? socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0 : pipe(p) == 0);
			if (wr)
				writes_in_order(p[0], p[1], sock);
			else
				reads_in_order(p[0], p[1], sock);
			close(p[0]);
			close(p[1]);
		}
}

/* A cancel finds an op waiting behind another; the rest keep order. A
 * cancel of every op on the fd and a close end those still waiting. */
static void t_cancel_waiting(void)
{
	uaio_loop *l = t_loop_new(0);
	struct tagged t[N];
	char got[N];
	int seq[N], nseq = 0, p[2];
	uaio_op c = { 0 };
	struct tagged ct = { .seq = (int[1]){ 0 }, .nseq = (int[1]){ 0 } };

	CHECK(pipe(p) == 0);
	for (int i = 0; i < N; i++) {
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		got[i] = 0;
		CHECK_OK(uaio_op_read(l, &t[i].op, p[0], &got[i], 1, -1, on_tagged, &t[i]));
	}
	uaio_loop_run_once(l, 0);
	CHECK(uaio_op_pending(&t[2].op));
	CHECK_OK(uaio_op_cancel(l, &c, &t[2].op, on_tagged, &ct));
	T_RUN_UNTIL(l, nseq == 1 && *ct.nseq == 1, 1000);
	CHECK_EQ(ct.res, 0);
	CHECK_EQ(t[2].res, -ECANCELED);
	CHECK_EQ(write(p[1], "ab", 2), 2);
	T_RUN_UNTIL(l, nseq == 3, 1000);
	CHECK_EQ(got[0], 'a');
	CHECK_EQ(got[1], 'b');
	CHECK_EQ(seq[1], 0);
	CHECK_EQ(seq[2], 1);
	/* op 3 waits on an empty pipe, alone now: queue two behind it, then
	 * cancel all three by descriptor. */
	t[0] = (struct tagged){ .i = 10, .seq = seq, .nseq = &nseq };
	t[1] = (struct tagged){ .i = 11, .seq = seq, .nseq = &nseq };
	nseq = 0;
	CHECK_OK(uaio_op_read(l, &t[0].op, p[0], &got[0], 1, -1, on_tagged, &t[0]));
	CHECK_OK(uaio_op_read(l, &t[1].op, p[0], &got[1], 1, -1, on_tagged, &t[1]));
	uaio_loop_run_once(l, 0);
	*ct.nseq = 0;
	CHECK_OK(uaio_op_cancel_fd(l, &c, p[0], on_tagged, &ct));
	T_RUN_UNTIL(l, nseq == 3 && *ct.nseq == 1, 1000);
	CHECK_EQ(ct.res, 3);
	CHECK_EQ(t[3].res, -ECANCELED);
	CHECK_EQ(t[0].res, -ECANCELED);
	CHECK_EQ(t[1].res, -ECANCELED);
	/* and a close of the descriptor ends the ones waiting behind */
	nseq = 0;
	for (int i = 0; i < 3; i++) {
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		CHECK_OK(uaio_op_read(l, &t[i].op, p[0], &got[i], 1, -1, on_tagged, &t[i]));
	}
	uaio_loop_run_once(l, 0);
	*ct.nseq = 0;
	CHECK_OK(uaio_op_close(l, &c, p[0], on_tagged, &ct));
	T_RUN_UNTIL(l, nseq == 3 && *ct.nseq == 1, 1000);
	CHECK_EQ(ct.res, 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(t[i].res, -ECANCELED);
	close(p[1]);
	uaio_loop_free(l);
}

/* UAIO_OPF_ISSUE_HERE on a thread-safe loop: the calling thread issues
 * the op itself, at once, outside the loop's stream order (its order is
 * the caller's): a second such read on a busy side goes out too. */
static void t_issue_here(void)
{
	uaio_loop *l = t_loop_new(UAIO_LOOP_THREADSAFE);
	struct tagged t[2];
	char got[2] = { 0 };
	int seq[2], nseq = 0, p[2];

	CHECK(pipe(p) == 0);
	for (int i = 0; i < 2; i++) {
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		uaio_op_set_flags(&t[i].op, UAIO_OPF_ISSUE_HERE);
		CHECK_OK(uaio_op_read(l, &t[i].op, p[0], &got[i], 1, -1, on_tagged, &t[i]));
	}
	CHECK_EQ(write(p[1], "xy", 2), 2);
	T_RUN_UNTIL(l, nseq == 2, 1000);
	CHECK(t[0].res == 1 && t[1].res == 1);
	CHECK((got[0] == 'x' && got[1] == 'y') || (got[0] == 'y' && got[1] == 'x'));
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

static int n_timeouts;

static void on_timeout_op(uaio_op *op, int res, void *data)
{
	(void)op;
	(void)res;
	(void)data;
	n_timeouts++;
}

/* The ring's completion room is spoken for when a held op's turn comes:
 * it waits for room with those behind it, in order, and a cancel of it
 * there lets the next go (that one was left held for ever, and a later
 * read took its bytes). */
static void t_resume_without_room(void)
{
	enum { NT = 4200 };	/* past the completion room of a default ring */
	uaio_loop *l = t_loop_new(0);
	static uaio_op tmo[NT], tc[NT];
	struct tagged t[4];
	char got[4] = { 0 };
	int seq[4], nseq = 0, p[2];
	uaio_op c = { 0 };
	struct tagged ct = { .seq = (int[1]){ 0 }, .nseq = (int[1]){ 0 } };

	CHECK(pipe(p) == 0);
	for (int i = 0; i < 3; i++) {
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		CHECK_OK(uaio_op_read(l, &t[i].op, p[0], &got[i], 1, -1, on_tagged, &t[i]));
	}
	uaio_loop_run_once(l, 0);
	/* long timeouts take the completion room (some wait for it) */
	for (int i = 0; i < NT; i++)
		CHECK_OK(uaio_op_timeout(l, &tmo[i], 60ull * 1000000000, on_timeout_op, NULL));
	uaio_loop_run_once(l, 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	T_RUN_UNTIL(l, nseq == 1, 1000);
	CHECK_EQ(got[0], 'x');
	CHECK(uaio_op_pending(&t[1].op) && uaio_op_pending(&t[2].op));
	CHECK_OK(uaio_op_cancel(l, &c, &t[1].op, on_tagged, &ct));
	T_RUN_UNTIL(l, nseq == 2, 1000);
	CHECK_EQ(t[1].res, -ECANCELED);
	for (int i = 0; i < NT; i++)
		CHECK_OK(uaio_op_cancel(l, &tc[i], &tmo[i], on_timeout_op, NULL));
	T_RUN_UNTIL(l, n_timeouts == 2 * NT, 100000);
	CHECK_EQ(write(p[1], "yz", 2), 2);
	T_RUN_UNTIL(l, nseq == 3, 1000);
	t[3] = (struct tagged){ .i = 3, .seq = seq, .nseq = &nseq };
	CHECK_OK(uaio_op_read(l, &t[3].op, p[0], &got[3], 1, -1, on_tagged, &t[3]));
	T_RUN_UNTIL(l, nseq == 4, 1000);
	CHECK_EQ(got[2], 'y');
	CHECK_EQ(got[3], 'z');
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

static void on_accepted(uaio_op *op, int res, void *data)
{
	(void)op;
	*(int *)data = res < 0 ? res : res + 1;	/* 0: not yet */
}

/* A connection closed with close(2) while a recv waits on it (io_uring
 * keeps that recv in the kernel): the next connection the loop accepts
 * gets the number, and its recv is not held behind the old one. */
static void t_accepted_reuses_number(void)
{
	uaio_loop *l = t_loop_new(0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int ls, c1, c2, got1 = 0, got2 = 0, seq[2], nseq = 0;
	uaio_op acc = { 0 };
	struct tagged t[2];
	char b[2] = { 0 };

	snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/uaio-order-%d.sock", (int)getpid());
	unlink(a.sun_path);
	ls = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(ls >= 0 && bind(ls, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(ls, 4) == 0);
	c1 = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(connect(c1, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK_OK(uaio_op_accept(l, &acc, ls, NULL, NULL, SOCK_CLOEXEC, on_accepted, &got1));
	T_RUN_UNTIL(l, got1 != 0, 1000);
	CHECK(got1 > 0);
	t[0] = (struct tagged){ .i = 0, .seq = seq, .nseq = &nseq };
	CHECK_OK(uaio_op_recv(l, &t[0].op, got1 - 1, &b[0], 1, 0, on_tagged, &t[0]));
	uaio_loop_run_once(l, 0);
	c2 = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(connect(c2, (struct sockaddr *)&a, sizeof(a)) == 0);
	close(got1 - 1);		/* its recv stays in the kernel (io_uring) */
	CHECK_OK(uaio_op_accept(l, &acc, ls, NULL, NULL, SOCK_CLOEXEC, on_accepted, &got2));
	T_RUN_UNTIL(l, got2 != 0, 1000);
	CHECK_EQ(got2, got1);		/* the number came back */
	CHECK_EQ(write(c2, "n", 1), 1);
	t[1] = (struct tagged){ .i = 1, .seq = seq, .nseq = &nseq };
	CHECK_OK(uaio_op_recv(l, &t[1].op, got2 - 1, &b[1], 1, 0, on_tagged, &t[1]));
	T_RUN_UNTIL(l, b[1] == 'n', 1000);
	CHECK_EQ(t[1].res, 1);
	close(c1);			/* the old recv ends (0, or EBADF on epoll) */
	T_RUN_UNTIL(l, nseq == 2, 1000);
	CHECK(t[0].res == 0 || t[0].res == -EBADF);
	close(c2);
	close(got2 - 1);
	close(ls);
	unlink(a.sun_path);
	uaio_loop_free(l);
}

/* Positional reads of one file are not held behind each other: each is
 * answered at its offset, whatever order they end in. */
static void t_file_positions(void)
{
	uaio_loop *l = t_loop_new(0);
	char path[] = "/tmp/uaio-order-XXXXXX", got[N];
	struct tagged t[N];
	int seq[N], nseq = 0, fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	CHECK_EQ(write(fd, "wxyz", 4), 4);
	CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
	for (int i = 0; i < N; i++) {
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		CHECK_OK(uaio_op_read(l, &t[i].op, fd, &got[i], 1, N - 1 - i, on_tagged, &t[i]));
	}
	T_RUN_UNTIL(l, nseq == N, 1000);
	for (int i = 0; i < N; i++)
		CHECK_EQ(got[i], "zyxw"[i]);
	/* at the file position (-1): in order, one byte each */
	nseq = 0;
	for (int i = 0; i < N; i++) {
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		CHECK_OK(uaio_op_read(l, &t[i].op, fd, &got[i], 1, -1, on_tagged, &t[i]));
	}
	T_RUN_UNTIL(l, nseq == N, 1000);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(got[i], "wxyz"[i]);
		CHECK_EQ(seq[i], i);
	}
	close(fd);
	uaio_loop_free(l);
}

/* Reads and writes at a file's position that wait for the disk (ext4
 * refuses non-blocking buffered writes; an evicted file's reads): the
 * epoll fallback ran them side by side on its workers, and the file's
 * bytes came out of order (BACDEFGH). */
static void t_file_positions_disk(void)
{
	enum { M = 8, SZ = 256 * 1024 };
	static char bufs[M][SZ], back[M][SZ];
	uaio_loop *l = t_loop_new(0);
	char path[] = "/var/tmp/uaio-order-XXXXXX", c;
	struct tagged t[M];
	int seq[M], nseq, fd = mkstemp(path);

	CHECK(fd >= 0);
	unlink(path);
	for (int i = 0; i < M; i++)
		memset(bufs[i], 'A' + i, SZ);
	for (int round = 0; round < 3; round++) {
		CHECK_EQ(ftruncate(fd, 0), 0);
		CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
		nseq = 0;
		for (int i = 0; i < M; i++) {
			t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
			CHECK_OK(uaio_op_write(l, &t[i].op, fd, bufs[i], SZ, -1, on_tagged, &t[i]));
		}
		T_RUN_UNTIL(l, nseq == M, 1000);
		for (int i = 0; i < M; i++) {
			CHECK_EQ(t[i].res, SZ);
			CHECK_EQ(seq[i], i);
			CHECK_EQ(pread(fd, &c, 1, (off_t)i * SZ), 1);
			CHECK_EQ(c, 'A' + i);
		}
		CHECK_EQ(fdatasync(fd), 0);
		CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
		CHECK_EQ(lseek(fd, 0, SEEK_SET), 0);
		nseq = 0;
		for (int i = 0; i < M; i++) {
			t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
			CHECK_OK(uaio_op_read(l, &t[i].op, fd, back[i], SZ, -1, on_tagged, &t[i]));
		}
		T_RUN_UNTIL(l, nseq == M, 1000);
		for (int i = 0; i < M; i++) {
			CHECK_EQ(t[i].res, SZ);
			CHECK_EQ(seq[i], i);
			CHECK_EQ(back[i][0], 'A' + i);
			CHECK_EQ(back[i][SZ - 1], 'A' + i);
		}
	}
	close(fd);
	uaio_loop_free(l);
}

/* The op at a file's position that waits for the pool (its two workers
 * held busy) is cancelled there, with ops held behind it: they end, in
 * the order they were made, and a later op at the position goes (on the
 * epoll fallback the file's side stayed marked busy: held for ever). */
static int gate[2];
static void on_done_res(uaio_op *op, int res, void *data)
{
	(void)op;
	*(int *)data = res;
}

static long blocked_work(void *arg)
{
	char c;

	(void)arg;
	return read(gate[0], &c, 1);
}

static void t_file_positions_cancel(void)
{
	enum { M = 3 };
	static char buf[M][4096];
	uaio_loop *l = t_loop_new_p(0, 0, 2);
	char path[] = "/var/tmp/uaio-order-XXXXXX";
	struct tagged t[M], after, wk[2];
	int seq[M + 3], nseq = 0, fd = mkstemp(path);
	uaio_op c = { 0 };
	int cres = 1;

	CHECK(fd >= 0 && pipe(gate) == 0);
	unlink(path);
	for (int i = 0; i < 2; i++) {
		wk[i] = (struct tagged){ .i = M + 1 + i, .seq = seq, .nseq = &nseq };
		CHECK_OK(uaio_op_work(l, &wk[i].op, blocked_work, NULL, on_tagged, &wk[i]));
	}
	for (int i = 0; i < M; i++) {
		t[i] = (struct tagged){ .i = i, .seq = seq, .nseq = &nseq };
		CHECK_OK(uaio_op_write(l, &t[i].op, fd, buf[i], sizeof(buf[i]), -1, on_tagged, &t[i]));
	}
	CHECK_OK(uaio_op_cancel_fd(l, &c, fd, on_done_res, &cres));
	T_RUN_UNTIL(l, nseq >= M || cres != 1, 1000);
	T_RUN_UNTIL(l, cres != 1, 1000);
	/* what was not cancelled ended with its result; what was, in order */
	after = (struct tagged){ .i = M, .seq = seq, .nseq = &nseq };
	CHECK_OK(uaio_op_write(l, &after.op, fd, buf[0], 10, -1, on_tagged, &after));
	CHECK(write(gate[1], "xx", 2) == 2);	/* the workers go */
	T_RUN_UNTIL(l, nseq == M + 3, 1000);
	/* the three writes in order (io_uring ends a busy op's cancel
	 * after those held behind it: uaio_loop(7)) */
	for (int i = 0, last = -1; i < M + 3 && uaio_loop_backend(l) == UAIO_BACKEND_EPOLL; i++)
		if (seq[i] < M) {
			CHECK(seq[i] > last);
			last = seq[i];
		}
	CHECK(after.res == 10);
	close(gate[0]);
	close(gate[1]);
	close(fd);
	uaio_loop_free(l);
}

int main(int argc, char **argv)
{
	(void)argc;
	t_watchdog(60);
	signal(SIGPIPE, SIG_IGN);
	t_banner(argv[0]);
	RUN(t_streams);
	RUN(t_cancel_waiting);
	RUN(t_issue_here);
	RUN(t_resume_without_room);
	RUN(t_accepted_reuses_number);
	RUN(t_file_positions);
	RUN(t_file_positions_disk);
	RUN(t_file_positions_cancel);
	return T_EXIT_PASS;
}
