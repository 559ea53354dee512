/* SPDX-License-Identifier: MIT */
/*
 * A close made in the same batch as an fsync, a fallocate or an fadvise
 * of its descriptor. io_uring sends those straight to its worker, which
 * looks the descriptor up only as it starts: the close ran first and the
 * op failed with EBADF (a cancel by descriptor found nothing to match),
 * or, had a file been opened on the number meanwhile, hit that file. The
 * op must end as made on the file it named (done, or cancelled before it
 * started: -ECANCELED), never EBADF, and before the close's callback.
 * The fallback's workers look the number up as their call starts too: a
 * close there cancelled the queued ones and left one a worker had taken
 * to run after it (EBADF). And a copy_file_range queued on the worker
 * pool, whose output is closed: cancelled, not written into the file
 * that takes the number next. Closes held for one op go in the order
 * they were made.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <uaio/loop.h>

#include "test.h"

enum { SZ = 256 * 1024, NSYNC = 8 };

struct rec {
	int res[NSYNC + 3];
	int order[NSYNC + 3], n;
	struct slot {
		struct rec *r;
		int i;
	} slot[NSYNC + 3];
};

static void note(uaio_op *op, int res, void *data)
{
	struct slot *s = data;

	(void)op;
	s->r->res[s->i] = res;
	s->r->order[s->r->n++] = s->i;
}

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < NSYNC + 3; i++)
		r->slot[i] = (struct slot){ r, i };
}

static void store(uaio_op *op, int res, void *data)
{
	(void)op;
	*(int *)data = res;
}

static int file_with(const char *path, char c)
{
	static char buf[SZ];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	CHECK(fd >= 0);
	memset(buf, c, SZ);
	CHECK(pwrite(fd, buf, SZ, 0) == SZ);
	return fd;
}

/* All of A, or none of it, is a hole now. */
static bool all_zero(const char *path, bool *none)
{
	static char buf[SZ];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool zero = true;

	CHECK(fd >= 0);
	CHECK(pread(fd, buf, SZ, 0) == SZ);
	*none = true;
	for (int i = 0; i < SZ; i++) {
		zero &= buf[i] == 0;
		*none &= buf[i] == 'A';
	}
	close(fd);
	return zero;
}

/*
 * fsyncs (work ahead of the others on the ring's worker), a hole punched
 * over the whole file, an fadvise, then the close, in one batch; a file B
 * opened on the number the moment the close has called back, and
 * written. B keeps every byte; each op ended before the close, on A.
 */
static void late_ops_then_close(const char *dir)
{
	char a[256], b[256];
	static char want[SZ], got[SZ];
	uaio_loop *l = t_loop_new(0);
	uaio_op ops[NSYNC + 3];
	static struct rec r;
	int fa, fb, close_i = NSYNC + 2;
	bool none;

	snprintf(a, sizeof(a), "%s/A", dir);
	snprintf(b, sizeof(b), "%s/B", dir);
	fa = file_with(a, 'A');
	memset(ops, 0, sizeof(ops));
	rec_init(&r);
	for (int i = 0; i < NSYNC; i++)
		CHECK_OK(uaio_op_fsync(l, &ops[i], fa, 0, note, &r.slot[i]));
	CHECK_OK(uaio_op_fallocate(l, &ops[NSYNC], fa, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				   0, SZ, note, &r.slot[NSYNC]));
	CHECK_OK(uaio_op_fadvise(l, &ops[NSYNC + 1], fa, 0, SZ, POSIX_FADV_DONTNEED, note, &r.slot[NSYNC + 1]));
	CHECK_OK(uaio_op_close(l, &ops[close_i], fa, note, &r.slot[close_i]));
	while (!r.n || r.order[r.n - 1] != close_i)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	fb = file_with(b, 'B');
	CHECK_EQ(fb, fa);	/* the number is B's now */
	while (uaio_loop_inflight(l))
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(r.n, NSYNC + 3);
	CHECK_EQ(r.order[NSYNC + 2], close_i);	/* the close waited for them */
	CHECK_EQ(r.res[close_i], 0);
	for (int i = 0; i < NSYNC + 2; i++)
		if (r.res[i] != 0 && r.res[i] != -ECANCELED) {
			fprintf(stderr, "op %d: %d\n", i, r.res[i]);
			CHECK(0);
		}
	/* the hole: on A if the fallocate ran, nowhere if it was cancelled */
	if (r.res[NSYNC] == 0)
		CHECK(all_zero(a, &none));
	else
		CHECK(!all_zero(a, &none) && none);
	memset(want, 'B', SZ);
	CHECK(pread(fb, got, SZ, 0) == SZ);
	CHECK(!memcmp(want, got, SZ));
	close(fb);
	unlink(a);
	unlink(b);
	uaio_loop_free(l);
}

/* A close held for a late op can itself be cancelled: the descriptor
 * stays open, the fsync ends on it. */
static void held_close_cancelled(const char *dir)
{
	char a[256];
	uaio_loop *l = t_loop_new(0);
	uaio_op ops[3], cancel = { 0 };
	static struct rec r;
	int fa, cres = 1;

	snprintf(a, sizeof(a), "%s/A", dir);
	fa = file_with(a, 'A');
	memset(ops, 0, sizeof(ops));
	rec_init(&r);
	CHECK_OK(uaio_op_fsync(l, &ops[0], fa, 0, note, &r.slot[0]));
	CHECK_OK(uaio_op_fsync(l, &ops[1], fa, 1, note, &r.slot[1]));
	CHECK_OK(uaio_op_close(l, &ops[2], fa, note, &r.slot[2]));
	CHECK_OK(uaio_op_cancel(l, &cancel, &ops[2], store, &cres));
	while (uaio_loop_inflight(l))
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(r.n, 3);
	CHECK(r.res[0] == 0 || r.res[0] == -ECANCELED);
	CHECK(r.res[1] == 0 || r.res[1] == -ECANCELED);
	/* On io_uring the fsyncs are in the kernel, which a close leaves
	 * alone, and end only as the loop reaps them: the close was held
	 * and the cancel takes it back. On epoll the close cancels the
	 * fsyncs still queued for a worker, and waits only for one a worker
	 * took: held and cancelled (fd open), or closed at once. */
	if (r.res[2] == -ECANCELED || !strcmp(uaio_loop_backend_name(l), "io_uring")) {
		CHECK_EQ(r.res[2], -ECANCELED);
		CHECK_EQ(cres, 0);
		CHECK(fcntl(fa, F_GETFD) >= 0);
		close(fa);
	} else {
		CHECK_EQ(r.res[2], 0);
		CHECK(cres == -ENOENT || cres == -EALREADY);
		CHECK(fcntl(fa, F_GETFD) < 0 && errno == EBADF);
	}
	unlink(a);
	uaio_loop_free(l);
}

static atomic_int go;

static long hold_worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&go))
		usleep(1000);
	return 0;
}

static void copy_out_closed(const char *dir)
{
	struct uaio_loop_params p = { .workers = 1 };
	uaio_loop *l = uaio_loop_new(&p);
	uaio_op w = { 0 }, cp = { 0 }, cl = { 0 };
	int rw = 1, rcp = 1, rcl = 1, fa, fb, fc;
	char a[256], b[256], c[256], got[16];

	CHECK(l);
	snprintf(a, sizeof(a), "%s/A", dir);
	snprintf(b, sizeof(b), "%s/B", dir);
	snprintf(c, sizeof(c), "%s/C", dir);
	fa = file_with(a, 'A');
	fb = file_with(b, 'B');
	CHECK(ftruncate(fb, 0) == 0);
	atomic_store(&go, 0);
	CHECK_OK(uaio_op_work(l, &w, hold_worker, NULL, store, &rw));
	CHECK_OK(uaio_op_copy_file_range(l, &cp, fa, 0, fb, 0, SZ, store, &rcp));
	CHECK_OK(uaio_op_close(l, &cl, fb, store, &rcl));
	while (rcl == 1)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(rcl, 0);
	fc = open(c, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK_EQ(fc, fb);
	atomic_store(&go, 1);
	while (uaio_loop_inflight(l))
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(rcp, -ECANCELED);
	CHECK_EQ(pread(fc, got, sizeof(got), 0), 0);	/* C untouched */
	close(fa);
	close(fc);
	unlink(a);
	unlink(b);
	unlink(c);
	uaio_loop_free(l);
}

struct at {
	int *res, *at, *order;
};

/* The result, and the place among the callbacks. */
static void cb_at(uaio_op *op, int res, void *data)
{
	struct at *p = data;

	(void)op;
	*p->res = res;
	*p->at = ++*p->order;
}

/*
 * A copy and a close of one of its ends in one batch; a file on the
 * number the moment the close calls back. A worker may have taken the
 * copy off its queue (no cancel reaches it) but not yet begun: the close
 * waits for it, so the copy ends first, on the old files, and the new
 * file keeps its bytes. Racy by nature: many rounds.
 */
static void copy_then_close(const char *dir, bool close_out)
{
	enum { LEN = 64 * 1024 };
	uaio_loop *l = t_loop_new(0);
	uaio_op cp = { 0 }, cl = { 0 };
	int rcp = 1, rcl = 1, fa, fb, fc, order = 0, cp_at = 0, cl_at = 0;
	char a[256], b[256], c[256];
	static char want[LEN], got[LEN];
	struct at pa = { &rcp, &cp_at, &order }, pb = { &rcl, &cl_at, &order };

	snprintf(a, sizeof(a), "%s/A", dir);
	snprintf(b, sizeof(b), "%s/B", dir);
	snprintf(c, sizeof(c), "%s/C", dir);
	fa = file_with(a, 'A');
	fb = file_with(b, 'B');
	CHECK_OK(uaio_op_copy_file_range(l, &cp, fa, 0, fb, 0, LEN, cb_at, &pa));
	CHECK_OK(uaio_op_close(l, &cl, close_out ? fb : fa, cb_at, &pb));
	while (rcl == 1)
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	fc = file_with(c, 'C');
	CHECK_EQ(fc, close_out ? fb : fa);
	while (uaio_loop_inflight(l))
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK_EQ(rcl, 0);
	CHECK(rcp == LEN || rcp == -ECANCELED);
	CHECK(cp_at < cl_at);
	memset(want, 'C', LEN);
	CHECK(pread(fc, got, LEN, 0) == LEN);
	CHECK(!memcmp(want, got, LEN));
	close(fc);
	close(close_out ? fa : fb);
	unlink(a);
	unlink(b);
	unlink(c);
	uaio_loop_free(l);
}

/*
 * A copy a worker runs, and closes of its output, then its input: both
 * wait for the copy, and call back in the order they were made. The
 * worker takes the copy while this thread sleeps a little (when it has
 * not, the first close cancels the copy, and the order holds too).
 */
static void closes_keep_order(const char *dir)
{
	enum { LEN = 16 << 20 };
	uaio_loop *l = t_loop_new(0);
	uaio_op cp = { 0 }, cy = { 0 }, cx = { 0 };
	int rcp = 1, ry = 1, rx = 1, fx, fy, order = 0, cp_at = 0, y_at = 0, x_at = 0;
	struct at pc = { &rcp, &cp_at, &order }, py = { &ry, &y_at, &order },
		  px = { &rx, &x_at, &order };
	char x[256], y[256];

	snprintf(x, sizeof(x), "%s/X", dir);
	snprintf(y, sizeof(y), "%s/Y", dir);
	fx = file_with(x, 'X');
	CHECK(ftruncate(fx, LEN) == 0);
	fy = open(y, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fy >= 0);
	CHECK_OK(uaio_op_copy_file_range(l, &cp, fx, 0, fy, 0, LEN, cb_at, &pc));
	CHECK(uaio_loop_run_once(l, 0) >= 0);
	usleep(1000);
	CHECK_OK(uaio_op_close(l, &cy, fy, cb_at, &py));
	CHECK_OK(uaio_op_close(l, &cx, fx, cb_at, &px));
	while (uaio_loop_inflight(l))
		CHECK(uaio_loop_run_once(l, -1) >= 0);
	CHECK(rcp == LEN || rcp == -ECANCELED);
	CHECK_EQ(ry, 0);
	CHECK_EQ(rx, 0);
	CHECK(y_at < x_at);
	CHECK(rcp == -ECANCELED || cp_at < y_at);
	unlink(x);
	unlink(y);
	uaio_loop_free(l);
}

int main(void)
{
	char dir[] = "/var/tmp/uaio-close-late-XXXXXX";

	CHECK(mkdtemp(dir));
	for (int i = 0; i < 20; i++)
		late_ops_then_close(dir);
	for (int i = 0; i < 20; i++)
		held_close_cancelled(dir);
	copy_out_closed(dir);
	for (int i = 0; i < 200; i++)
		copy_then_close(dir, i & 1);
	for (int i = 0; i < 10; i++)
		closes_keep_order(dir);
	rmdir(dir);
	return T_EXIT_PASS;
}
