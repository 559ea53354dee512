/* SPDX-License-Identifier: MIT */
/*
 * UAIO_OPF_BLOCKING: a read or write that cannot complete at once is made
 * as a blocking call on the worker pool. /dev/kmsg takes every write at
 * once but never says POLLOUT and has no RWF_NOWAIT: without the flag a
 * write there waits for readiness for ever, on both backends (io_uring
 * arms its own poll). With it, the write is done. The flag keeps a
 * stream's bytes in order, and a registered-slot pin, which no worker can
 * write through, still works (the ring takes it). A flagged write is
 * made whole (a blocking call), never cut to the room a try found; an
 * unflagged op behind a flagged one waits as it would have (cancellable);
 * a close cancels a flagged op still waiting for a worker.
 */
#include <pthread.h>
#include <semaphore.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <dirent.h>
#include <stdint.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

static void run_until(uaio_loop *l, const struct t_rec *r, int calls)
{
	while (r->calls < calls)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
}

static void kmsg_write(void)
{
	char line[] = "uaio test_op_blocking: kmsg_write\n";
	uaio_loop *l = t_loop_new(0);
	struct t_rec r = { 0 };
	uaio_op op = { 0 };
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "  (/dev/kmsg: %s; not run)\n", strerror(errno));
		uaio_loop_free(l);
		return;
	}
	uaio_op_set_flags(&op, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_write(l, &op, fd, line, sizeof(line) - 1, -1, t_rec_op, &r));
	run_until(l, &r, 1);
	CHECK_EQ(r.res, sizeof(line) - 1);
	/* at an offset, as pwrite (which the device ignores) */
	CHECK_OK(uaio_op_write(l, &op, fd, line, sizeof(line) - 1, 0, t_rec_op, &r));
	run_until(l, &r, 2);
	CHECK_EQ(r.res, sizeof(line) - 1);
	close(fd);
	uaio_loop_free(l);
}

/* A pipe: reads that wait for the writer, then many writes and reads in
 * a row, all flagged: the bytes arrive whole and in order. */
static void pipe_in_order(void)
{
	enum { N = 64, SZ = 1000 };
	static char out[N * SZ], in[N * SZ];
	uaio_loop *l = t_loop_new(0);
	struct t_rec rr = { 0 }, wr = { 0 };
	uaio_op rop = { 0 }, wop[N];
	int p[2];
	size_t got = 0;

	for (size_t i = 0; i < sizeof(out); i++)
		out[i] = (char)(i * 7 + i / 251);
	CHECK_EQ(pipe(p), 0);
	memset(wop, 0, sizeof(wop));
	uaio_op_set_flags(&rop, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_read(l, &rop, p[0], in, sizeof(in), -1, t_rec_op, &rr));
	for (int i = 0; i < N; i++) {
		uaio_op_set_flags(&wop[i], UAIO_OPF_BLOCKING);
		CHECK_OK(uaio_op_write(l, &wop[i], p[1], out + i * SZ, SZ, -1, t_rec_op, &wr));
	}
	while (got < sizeof(in)) {
		int calls = rr.calls;

		run_until(l, &rr, calls + 1);
		CHECK(rr.res > 0);
		got += (size_t)rr.res;
		if (got < sizeof(in))
			CHECK_OK(uaio_op_read(l, &rop, p[0], in + got, sizeof(in) - got, -1,
					      t_rec_op, &rr));
	}
	run_until(l, &wr, N);
	CHECK_EQ(wr.res, SZ);
	CHECK(!memcmp(in, out, sizeof(in)));
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

/* Through a pin: on io_uring a registered slot, which the flag leaves to
 * the ring. */
static void pinned_file(void)
{
	char path[] = "/tmp/uaio-opblk-XXXXXX", back[6] = { 0 };
	uaio_loop *l = t_loop_new(0);
	struct t_rec r = { 0 };
	uaio_op op = { 0 };
	int fd = mkstemp(path), h;

	CHECK(fd >= 0);
	unlink(path);
	CHECK((h = uaio_file_pin(l, fd)) >= 0);
	uaio_op_set_flags(&op, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_write(l, &op, h, "pinned", 6, 0, t_rec_op, &r));
	run_until(l, &r, 1);
	CHECK_EQ(r.res, 6);
	CHECK_OK(uaio_op_read(l, &op, h, back, 6, 0, t_rec_op, &r));
	run_until(l, &r, 2);
	CHECK_EQ(r.res, 6);
	CHECK(!memcmp(back, "pinned", 6));
	uaio_file_unpin(l, h);
	close(fd);
	uaio_loop_free(l);
}

/* Drains the pipe in small steps while the writes wait for room. */
struct drain {
	int fd;
	size_t want, got;
	char *buf;
};

static void *drainer(void *arg)
{
	struct drain *d = arg;

	while (d->got < d->want) {
		size_t n = d->want - d->got < 4096 ? d->want - d->got : 4096;
		ssize_t r = read(d->fd, d->buf + d->got, n);

		if (r <= 0)
			break;
		d->got += (size_t)r;
		usleep(200);
	}
	return NULL;
}

static void whole_writes(void)
{
	enum { N = 3, SZ = 40000, FILL = 65536 };
	static char fill[FILL], out[N][SZ], in[FILL + N * SZ];
	uaio_loop *l = t_loop_new(0);
	struct t_rec r[N] = { 0 };
	uaio_op op[N];
	struct drain d;
	pthread_t th;
	int p[2], fl;

	CHECK_EQ(pipe(p), 0);
	fl = fcntl(p[1], F_GETFL);
	CHECK_EQ(fcntl(p[1], F_SETFL, fl | O_NONBLOCK), 0);
	CHECK_EQ(write(p[1], fill, FILL), FILL);	/* full: no room for a try */
	CHECK_EQ(fcntl(p[1], F_SETFL, fl), 0);
	memset(op, 0, sizeof(op));
	for (int i = 0; i < N; i++) {
		memset(out[i], 'a' + i, SZ);
		uaio_op_set_flags(&op[i], UAIO_OPF_BLOCKING);
		CHECK_OK(uaio_op_write(l, &op[i], p[1], out[i], SZ, -1, t_rec_op, &r[i]));
	}
	d = (struct drain){ p[0], sizeof(in), 0, in };
	CHECK_EQ(pthread_create(&th, NULL, drainer, &d), 0);
	for (int i = 0; i < N; i++) {
		run_until(l, &r[i], 1);
		CHECK_EQ(r[i].res, SZ);
	}
	pthread_join(th, NULL);
	CHECK_EQ(d.got, sizeof(in));
	for (int i = 0; i < N; i++)
		CHECK(!memcmp(in + FILL + i * SZ, out[i], SZ));
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

static void unflagged_behind(void)
{
	uaio_loop *l = t_loop_new(0);
	struct t_rec r1 = { 0 }, r2 = { 0 }, rc = { 0 };
	uaio_op o1 = { 0 }, o2 = { 0 }, c = { 0 };
	char b1[8], b2[8];
	int p[2];

	CHECK_EQ(pipe(p), 0);
	uaio_op_set_flags(&o1, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_read(l, &o1, p[0], b1, sizeof(b1), -1, t_rec_op, &r1));
	CHECK_OK(uaio_op_read(l, &o2, p[0], b2, sizeof(b2), -1, t_rec_op, &r2));
	CHECK_EQ(write(p[1], "x", 1), 1);
	run_until(l, &r1, 1);
	CHECK_EQ(r1.res, 1);
	CHECK_EQ(r2.calls, 0);
	CHECK_OK(uaio_op_cancel(l, &c, &o2, t_rec_op, &rc));
	run_until(l, &rc, 1);
	run_until(l, &r2, 1);
	CHECK_EQ(rc.res, 0);
	CHECK_EQ(r2.res, -ECANCELED);
	close(p[0]);
	close(p[1]);
	uaio_loop_free(l);
}

static sem_t go;

static long wait_go(void *arg)
{
	(void)arg;
	sem_wait(&go);
	return 0;
}

/* One worker, busy: the flagged read waits for it; the loop's close of
 * its descriptor cancels it, before the number is reused. */
static void close_cancels_queued(void)
{
	uaio_loop *l = t_loop_new_p(0, 0, 1);
	struct t_rec rw = { 0 }, rr = { 0 }, rcl = { 0 };
	uaio_op w = { 0 }, rd = { 0 }, cl = { 0 };
	char buf[8];
	int a[2], b[2];

	sem_init(&go, 0, 0);
	CHECK_OK(uaio_op_work(l, &w, wait_go, NULL, t_rec_op, &rw));
	CHECK_EQ(pipe(a), 0);
	uaio_op_set_flags(&rd, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_read(l, &rd, a[0], buf, sizeof(buf), -1, t_rec_op, &rr));
	CHECK_OK(uaio_op_close(l, &cl, a[0], t_rec_op, &rcl));
	run_until(l, &rcl, 1);
	CHECK_EQ(rcl.res, 0);
	CHECK_EQ(pipe(b), 0);			/* takes a[0]'s number */
	CHECK_EQ(write(b[1], "FROM-B", 6), 6);
	sem_post(&go);
	run_until(l, &rw, 1);
	run_until(l, &rr, 1);
	CHECK_EQ(rr.res, -ECANCELED);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	uaio_loop_free(l);
	sem_destroy(&go);
}

/* Whether some thread of this process sits in a read of fd (read,
 * readv, preadv2). */
static int a_thread_reads(int fd)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], line[128];
	int found = 0;

	CHECK(d);
	while (!found && (e = readdir(d))) {
		long nr, arg0;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/syscall", e->d_name);
		if ((f = fopen(path, "r"))) {
			found = fgets(line, sizeof(line), f) &&
				sscanf(line, "%ld %lx", &nr, &arg0) == 2 && arg0 == fd &&
				(nr == SYS_read || nr == SYS_readv || nr == SYS_preadv2);
			fclose(f);
		}
	}
	closedir(d);
	return found;
}

/* A flagged read a worker runs (no cancel reaches it), its descriptor
 * closed by the loop and the number reused for a new pipe: the new
 * pipe's read is not held behind the old one. */
static void close_while_running(void)
{
	uaio_loop *l = t_loop_new(0);
	struct t_rec rf = { 0 }, rc = { 0 }, rn = { 0 };
	uaio_op f = { 0 }, c = { 0 }, n = { 0 };
	char b1[8], b2[8];
	int a[2], b[2], old;

	CHECK_EQ(pipe(a), 0);
	old = a[0];
	uaio_op_set_flags(&f, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_read(l, &f, a[0], b1, sizeof(b1), -1, t_rec_op, &rf));
	while (!a_thread_reads(a[0])) {
		CHECK(uaio_loop_run_once(l, 0) >= 0);
		usleep(1000);
	}
	CHECK_OK(uaio_op_close(l, &c, a[0], t_rec_op, &rc));
	run_until(l, &rc, 1);
	CHECK_EQ(pipe(b), 0);
	CHECK_EQ(b[0], old);
	CHECK_EQ(write(b[1], "new", 3), 3);
	CHECK_OK(uaio_op_read(l, &n, b[0], b2, sizeof(b2), -1, t_rec_op, &rn));
	run_until(l, &rn, 1);
	CHECK_EQ(rn.res, 3);
	CHECK_EQ(rf.calls, 0);
	CHECK_EQ(write(a[1], "x", 1), 1);	/* the old read ends */
	run_until(l, &rf, 1);
	CHECK_EQ(rf.res, 1);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	uaio_loop_free(l);
}

/* A send after a flagged write on a full stream socket waits for it:
 * its bytes come after all of the write's. */
static void send_waits(void)
{
	enum { W = 1 << 18 };
	static char wbuf[W], fill[1 << 16];
	uaio_loop *l = t_loop_new(0);
	struct t_rec rw = { 0 }, rs = { 0 };
	uaio_op w = { 0 }, so = { 0 };
	struct drain d;
	size_t filled = 0;
	pthread_t th;
	ssize_t k;
	int sv[2], fl;

	CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fl = fcntl(sv[0], F_GETFL);
	CHECK_EQ(fcntl(sv[0], F_SETFL, fl | O_NONBLOCK), 0);
	while ((k = write(sv[0], fill, sizeof(fill))) > 0)
		filled += (size_t)k;
	CHECK_EQ(fcntl(sv[0], F_SETFL, fl), 0);
	memset(wbuf, 'a', W);
	uaio_op_set_flags(&w, UAIO_OPF_BLOCKING);
	CHECK_OK(uaio_op_write(l, &w, sv[0], wbuf, W, -1, t_rec_op, &rw));
	CHECK_OK(uaio_op_send(l, &so, sv[0], "bbbbbbbbbb", 10, 0, t_rec_op, &rs));
	d = (struct drain){ sv[1], filled + W + 10, 0, malloc(filled + W + 10) };
	CHECK_EQ(pthread_create(&th, NULL, drainer, &d), 0);
	run_until(l, &rw, 1);
	run_until(l, &rs, 1);
	pthread_join(th, NULL);
	CHECK_EQ(rw.res, W);
	CHECK_EQ(rs.res, 10);
	CHECK_EQ(d.got, filled + W + 10);
	CHECK(!memcmp(d.buf + filled, wbuf, W));
	CHECK(!memcmp(d.buf + filled + W, "bbbbbbbbbb", 10));
	free(d.buf);
	close(sv[0]);
	close(sv[1]);
	uaio_loop_free(l);
}

int main(void)
{
	t_watchdog(60);
	t_banner("test_op_blocking");
	RUN(kmsg_write);
	RUN(pipe_in_order);
	RUN(pinned_file);
	RUN(whole_writes);
	RUN(unflagged_behind);
	RUN(close_cancels_queued);
	RUN(close_while_running);
	RUN(send_waits);
	return T_EXIT_PASS;
}
