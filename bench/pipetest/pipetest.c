/* SPDX-License-Identifier: MIT */
/*
 * pipetest: token passing around a ring of pipes, after the experiment in
 * LaHaise's "An AIO implementation and its behaviour" (OLS 2002).
 *
 * P pipes form a ring; T tokens of S bytes are injected, and each hop reads
 * a token from pipe i and writes it to pipe i+1. With T much smaller than
 * P most descriptors sit idle, which is what separates O(n) readiness
 * interfaces from O(ready) ones. One run measures one mode for a fixed
 * time after a warm-up and prints one key=value line.
 *
 *   pipetest --mode epoll -P 1000 -S 12 -T 1 [--time 0.3] [--warmup 0.05]
 *   pipetest --nop uring|uaio|uaio-epoll [--batch 32] [--time 0.3]
 *   pipetest --memory [--count 100000]
 *   pipetest --list
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#ifndef PIPETEST_NO_UAIO
#include <uaio/loop.h>
#endif

#define SCRATCH_SIZE (64 * 1024)	/* >= a pipe's default capacity: one read drains it */
#define CHECK_EVERY 16			/* passes between clock reads */

/* The whole benchmark's state; one measurement per process. */
static struct pipetest {
	int P, S, T;
	int *rfd, *wfd;
	char *bufs;		/* P * S: one buffer per in-flight read */
	char *scratch;		/* readiness modes read into this */
	double warmup_s, time_s;

	int phase;		/* 0 warm-up, 1 measuring */
	int done;
	uint64_t passes, next_check;
	uint64_t warm_end, warm_cap, end, t0, t1, p0, p1;

	const char *ring_flags;	/* what the raw io_uring peer got */
#ifndef PIPETEST_NO_UAIO
	uaio_loop *loop;
#endif
} pt;

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "pipetest: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void timing_start(void)
{
	uint64_t now = now_ns();

	pt.phase = 0;
	pt.done = 0;
	pt.passes = 0;
	pt.next_check = CHECK_EVERY;
	pt.warm_end = now + (uint64_t)(pt.warmup_s * 1e9);
	pt.warm_cap = pt.warm_end + 1000000000ull;
	if (pt.warmup_s <= 0) {
		pt.phase = 1;
		pt.t0 = now;
		pt.p0 = 0;
		pt.end = now + (uint64_t)(pt.time_s * 1e9);
	}
}

static void check_clock(void)
{
	uint64_t now = now_ns();

	/* Warm-up lasts its time and one lap of the ring (capped), so every
	 * pipe has carried a token before measuring starts. */
	if (pt.phase == 0 && now >= pt.warm_end &&
	    (pt.passes >= (uint64_t)pt.P || now >= pt.warm_cap)) {
		pt.phase = 1;
		pt.t0 = now;
		pt.p0 = pt.passes;
		pt.end = now + (uint64_t)(pt.time_s * 1e9);
	} else if (pt.phase == 1 && now >= pt.end) {
		pt.t1 = now;
		pt.p1 = pt.passes;
		pt.done = 1;
	}
	pt.next_check = pt.passes + CHECK_EVERY;
}

static inline void count_pass(void)
{
	if (++pt.passes >= pt.next_check)
		check_clock();
}

static double rate(void)
{
	double secs = (pt.t1 - pt.t0) / 1e9;

	return secs > 0 ? (pt.p1 - pt.p0) / secs : 0;
}

/* ------------------------------------------------------------- the ring */

static int raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	/* Try to go past the hard limit: works for a privileged user. */
	struct rlimit want = { 1 << 20, 1 << 20 };
	FILE *f = fopen("/proc/sys/fs/nr_open", "r");
	unsigned long nr_open;

	if (f) {
		if (fscanf(f, "%lu", &nr_open) == 1 && nr_open < want.rlim_max)
			want.rlim_cur = want.rlim_max = nr_open;
		fclose(f);
	}
	if (want.rlim_max > rl.rlim_max && setrlimit(RLIMIT_NOFILE, &want) == 0)
		rl = want;
	return rl.rlim_cur > (1u << 30) ? (1 << 30) : (int)rl.rlim_cur;
}

/* How many pipes fit: 2 fds each, leaving room for stdio, epoll, rings. */
static int max_pipes(int limit)
{
	return (limit - 24) / 2;
}

static void set_nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0)
		die("fcntl: %s", strerror(errno));
}

/*
 * Read ends are non-blocking for the readiness modes and blocking for the
 * async-read modes (io_uring returns -EAGAIN at once on an O_NONBLOCK file
 * instead of waiting). Write ends are non-blocking so that a full pipe is
 * reported instead of deadlocking this single thread.
 */
static void ring_open(int nonblock_reads)
{
	pt.rfd = calloc(pt.P, sizeof(int));
	pt.wfd = calloc(pt.P, sizeof(int));
	pt.bufs = calloc((size_t)pt.P, pt.S);
	pt.scratch = malloc(SCRATCH_SIZE);
	if (!pt.rfd || !pt.wfd || !pt.bufs || !pt.scratch)
		die("out of memory");
	memset(pt.scratch, 'x', SCRATCH_SIZE);
	for (int i = 0; i < pt.P; i++) {
		int p[2];

		if (pipe2(p, O_CLOEXEC) < 0)
			die("pipe %d of %d: %s", i, pt.P, strerror(errno));
		pt.rfd[i] = p[0];
		pt.wfd[i] = p[1];
		/* Prime: the pipe keeps the freed buffer page for reuse, so
		 * the first lap does not pay for page allocation. */
		if (write(p[1], pt.scratch, pt.S) != pt.S ||
		    read(p[0], pt.scratch, SCRATCH_SIZE) != pt.S)
			die("priming pipe %d: %s", i, strerror(errno));
		set_nonblock(p[0], nonblock_reads);
		set_nonblock(p[1], 1);
	}
}

static inline int next_pipe(int i)
{
	return i + 1 == pt.P ? 0 : i + 1;
}

static inline void write_token(int j, const char *tok)
{
	ssize_t n = write(pt.wfd[j], tok, pt.S);

	if (n != pt.S)
		die("write to pipe %d: %s", j, n < 0 ? strerror(errno) : "short write");
}

static void inject_tokens(void)
{
	char tok[4096];

	memset(tok, 'x', sizeof(tok));
	/* Spread the tokens evenly so they do not queue behind each other. */
	for (int k = 0; k < pt.T; k++)
		write_token((int)((long)k * pt.P / pt.T), tok);
}

/*
 * One readiness event on pipe i: drain it with one read (tokens are whole:
 * writes of S <= PIPE_BUF bytes are atomic) and forward each token with its
 * own write. Draining keeps the edge-like multishot poll correct and costs
 * the level-triggered modes nothing when a pipe holds one token.
 */
static void hop_ready(int i)
{
	ssize_t n = read(pt.rfd[i], pt.scratch, SCRATCH_SIZE);
	int j = next_pipe(i);

	if (n < 0) {
		if (errno == EAGAIN)
			return;
		die("read pipe %d: %s", i, strerror(errno));
	}
	if (n == 0 || n % pt.S)
		die("read pipe %d: %zd bytes, not whole tokens", i, n);
	for (ssize_t off = 0; off < n; off += pt.S) {
		write_token(j, pt.scratch + off);
		count_pass();
	}
}

/* ------------------------------------------------------- poll and epoll */

static void run_poll(void)
{
	struct pollfd *pfd = calloc(pt.P, sizeof(*pfd));

	if (!pfd)
		die("out of memory");
	while (!pt.done) {
		/* Rebuilt every time, as a poll() server without state must. */
		for (int i = 0; i < pt.P; i++) {
			pfd[i].fd = pt.rfd[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		int n = poll(pfd, pt.P, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		for (int i = 0; i < pt.P && n > 0; i++) {
			if (pfd[i].revents) {
				n--;
				hop_ready(i);
			}
		}
	}
	free(pfd);
}

/* et: edge-triggered (EPOLLET); hop_ready() drains the pipe in one read. */
static void run_epoll(int et)
{
	struct epoll_event evs[256];
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0)
		die("epoll_create1: %s", strerror(errno));
	for (int i = 0; i < pt.P; i++) {
		struct epoll_event ev = { .events = EPOLLIN | (et ? EPOLLET : 0),
					  .data.u32 = i };

		if (epoll_ctl(ep, EPOLL_CTL_ADD, pt.rfd[i], &ev) < 0)
			die("epoll_ctl: %s", strerror(errno));
	}
	while (!pt.done) {
		int n = epoll_wait(ep, evs, 256, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait: %s", strerror(errno));
		}
		for (int k = 0; k < n; k++)
			hop_ready(evs[k].data.u32);
	}
	close(ep);
}

/* ------------------------------------------------------- raw io_uring */

/*
 * The honest peer: best setup flags the kernel takes, registered ring fd,
 * one io_uring_submit_and_wait() per loop that also flushes every re-arm,
 * and all available CQEs reaped per loop.
 */
static void uring_init(struct io_uring *r, unsigned sq, unsigned cq)
{
	static const struct {
		unsigned flags;
		const char *name;
	} tries[] = {
		{ IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		  "single_issuer+defer_taskrun" },
		{ IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		  "coop_taskrun" },
		{ 0, "none" },
	};
	int ret = -EINVAL;

	for (size_t k = 0; k < sizeof(tries) / sizeof(tries[0]); k++) {
		struct io_uring_params p = { 0 };

		p.flags = tries[k].flags | IORING_SETUP_CQSIZE;
		p.cq_entries = cq;
		ret = io_uring_queue_init_params(sq, r, &p);
		if (ret == 0) {
			pt.ring_flags = tries[k].name;
			break;
		}
		if (ret != -EINVAL)
			break;
	}
	if (ret < 0)
		die("io_uring_queue_init: %s", strerror(-ret));
	/* Best effort: saves an fdget per io_uring_enter. */
	io_uring_register_ring_fd(r);
}

static struct io_uring_sqe *get_sqe(struct io_uring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(r);

	if (!sqe) {
		io_uring_submit(r);
		sqe = io_uring_get_sqe(r);
		if (!sqe)
			die("no SQE after submit");
	}
	return sqe;
}

static unsigned cq_size_for(unsigned inflight)
{
	unsigned n = 64;

	while (n < 2 * inflight && n < 65536)
		n <<= 1;
	return n;
}

enum { U_POLL, U_MPOLL, U_READ };

static void uring_arm(struct io_uring *r, int kind, int i)
{
	struct io_uring_sqe *sqe = get_sqe(r);

	if (kind == U_POLL)
		io_uring_prep_poll_add(sqe, pt.rfd[i], POLLIN);
	else if (kind == U_MPOLL)
		io_uring_prep_poll_multishot(sqe, pt.rfd[i], POLLIN);
	else
		io_uring_prep_read(sqe, pt.rfd[i], pt.bufs + (size_t)i * pt.S,
				   pt.S, -1);
	io_uring_sqe_set_data64(sqe, (uint64_t)i);
}

static void run_uring(int kind)
{
	struct io_uring r;

	uring_init(&r, 1024, cq_size_for(pt.P + pt.T + 1024));
	for (int i = 0; i < pt.P; i++)
		uring_arm(&r, kind, i);
	io_uring_submit(&r);
	inject_tokens();
	timing_start();
	while (!pt.done) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		int ret = io_uring_submit_and_wait(&r, 1);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			die("io_uring_submit_and_wait: %s", strerror(-ret));
		io_uring_for_each_cqe(&r, head, cqe) {
			int i = (int)cqe->user_data;

			seen++;
			if (cqe->res < 0)
				die("cqe on pipe %d: %s", i, strerror(-cqe->res));
			if (kind == U_READ) {
				if (cqe->res != pt.S)
					die("read pipe %d: %d bytes", i, cqe->res);
				write_token(next_pipe(i), pt.bufs + (size_t)i * pt.S);
				count_pass();
				uring_arm(&r, kind, i);
			} else {
				hop_ready(i);
				if (kind == U_POLL || !(cqe->flags & IORING_CQE_F_MORE))
					uring_arm(&r, kind, i);
			}
		}
		io_uring_cq_advance(&r, seen);
	}
	io_uring_queue_exit(&r);
}

/* Nop round trips: B nops in flight, each re-posted from its completion. */
static void nop_uring(int batch)
{
	struct io_uring r;

	unsigned sq = batch < 64 ? 64 : batch;

	uring_init(&r, sq, cq_size_for(sq + batch));
	for (int k = 0; k < batch; k++)
		io_uring_prep_nop(get_sqe(&r));
	timing_start();
	while (!pt.done) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		int ret = io_uring_submit_and_wait(&r, 1);

		if (ret < 0 && ret != -EINTR)
			die("io_uring_submit_and_wait: %s", strerror(-ret));
		io_uring_for_each_cqe(&r, head, cqe) {
			seen++;
			count_pass();
			io_uring_prep_nop(get_sqe(&r));
		}
		io_uring_cq_advance(&r, seen);
	}
	io_uring_queue_exit(&r);
}

/* ----------------------------------------------------------------- uaio */

#ifndef PIPETEST_NO_UAIO
static uaio_loop *uaio_open(int force_epoll)
{
	struct uaio_loop_params p = { 0 };

	p.flags = force_epoll ? UAIO_LOOP_FORCE_EPOLL : 0;
	uaio_loop *l = uaio_loop_new(&p);

	if (!l)
		die("uaio_loop_new: %s", strerror(errno));
	return l;
}

static void uaio_spin(uaio_loop *l)
{
	while (!pt.done) {
		int ret = uaio_loop_run_once(l, -1);

		if (ret < 0 && ret != -EINTR)
			die("uaio_loop_run_once: %s", strerror(-ret));
	}
}

static uaio_watch *watches;
static uaio_op *ops;

static int on_input(uaio_watch *w)
{
	hop_ready((int)(w - watches));
	return 0;
}

static const struct uaio_handler reactor_handler = { .handle_input = on_input };

static void run_uaio_reactor(int force_epoll, int edge)
{
	uaio_loop *l = pt.loop = uaio_open(force_epoll);

	watches = calloc(pt.P, sizeof(*watches));
	if (!watches)
		die("out of memory");
	for (int i = 0; i < pt.P; i++) {
		int ret = uaio_watch_start(l, &watches[i], pt.rfd[i],
					   UAIO_READABLE | (edge ? UAIO_EDGE : 0),
					   &reactor_handler, NULL);
		if (ret < 0)
			die("uaio_watch_start: %s", strerror(-ret));
	}
	inject_tokens();
	timing_start();
	uaio_spin(l);
}

static void on_read(uaio_op *op, int res, void *data)
{
	int i = (int)(op - ops);
	char *buf = pt.bufs + (size_t)i * pt.S;

	if (res != pt.S)
		die("uaio read pipe %d: %d (%s)", i, res, res < 0 ? strerror(-res) : "short");
	write_token(next_pipe(i), buf);
	count_pass();
	int ret = uaio_op_read(pt.loop, op, pt.rfd[i], buf, pt.S, -1, on_read, NULL);

	if (ret < 0)
		die("uaio_op_read: %s", strerror(-ret));
}

static void run_uaio_proactor(int force_epoll)
{
	uaio_loop *l = pt.loop = uaio_open(force_epoll);

	ops = calloc(pt.P, sizeof(*ops));
	if (!ops)
		die("out of memory");
	for (int i = 0; i < pt.P; i++) {
		int ret = uaio_op_read(l, &ops[i], pt.rfd[i],
				       pt.bufs + (size_t)i * pt.S, pt.S, -1,
				       on_read, NULL);
		if (ret < 0)
			die("uaio_op_read: %s", strerror(-ret));
	}
	/* Hand the reads to the kernel before any token exists. */
	if (uaio_loop_run_once(l, 0) < 0)
		die("uaio_loop_run_once failed");
	inject_tokens();
	timing_start();
	uaio_spin(l);
}

static void on_nop(uaio_op *op, int res, void *data)
{
	if (res != 0)
		die("nop: %d", res);
	count_pass();
	int ret = uaio_op_nop(pt.loop, op, on_nop, NULL);

	if (ret < 0)
		die("uaio_op_nop: %s", strerror(-ret));
}

static void nop_uaio(int batch, int force_epoll)
{
	uaio_loop *l = pt.loop = uaio_open(force_epoll);

	ops = calloc(batch, sizeof(*ops));
	if (!ops)
		die("out of memory");
	for (int k = 0; k < batch; k++)
		if (uaio_op_nop(l, &ops[k], on_nop, NULL) < 0)
			die("uaio_op_nop failed");
	timing_start();
	uaio_spin(l);
}

static const char *uaio_desc(void)
{
	static char buf[160];
	unsigned f = uaio_loop_features(pt.loop);

	snprintf(buf, sizeof(buf), "backend=%s uaio_feat=%s%s%s%s%s",
		 uaio_loop_backend_name(pt.loop),
		 f & UAIO_FEAT_SINGLE_ISSUER ? "single_issuer," : "",
		 f & UAIO_FEAT_DEFER_TASKRUN ? "defer_taskrun," : "",
		 f & UAIO_FEAT_COOP_TASKRUN ? "coop_taskrun," : "",
		 f & UAIO_FEAT_REG_RING_FD ? "reg_ring_fd," : "",
		 f ? "" : "none");
	return buf;
}

/* ---------------------------------------------------------------- memory */

static long rss_bytes(void)
{
	long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2)
		die("cannot read /proc/self/statm");
	fclose(f);
	return resident * sysconf(_SC_PAGESIZE);
}

/* Faults the pages in (calloc + memset(0) would be folded into calloc). */
static void touch(void *p, size_t len)
{
	volatile char *c = p;

	for (size_t k = 0; k < len; k += 4096)
		c[k] = 1;
	memset(p, 0, len);
}

static void on_nothing(uaio_op *op, int res, void *data)
{
}

static void memory_report(int count, int limit)
{
	printf("mem sizeof_uaio_op=%zu sizeof_uaio_watch=%zu sizeof_uaio_timer=%zu "
	       "fd_table_bytes_per_slot=16\n",
	       sizeof(uaio_op), sizeof(uaio_watch), sizeof(uaio_timer));

	/* Watched fds: as many pipe ends as RLIMIT_NOFILE allows. */
	int npipes = max_pipes(limit);

	if (npipes > count / 2)
		npipes = count / 2;
	pt.P = npipes;
	pt.S = 1;
	ring_open(1);
	int nfd = 2 * npipes;

	for (int force_epoll = 0; force_epoll <= 1; force_epoll++) {
		uaio_loop *l = pt.loop = uaio_open(force_epoll);
		uaio_watch *w = calloc(nfd, sizeof(*w));

		if (!w)
			die("out of memory");
		touch(w, nfd * sizeof(*w));	/* caller's memory: not counted */
		uaio_loop_run_once(l, 0);
		long before = rss_bytes();
		int started = 0;

		for (int k = 0; k < nfd; k++) {
			int fd = k & 1 ? pt.wfd[k / 2] : pt.rfd[k / 2];

			/* Write ends never become readable: idle watches. */
			if (uaio_watch_start(l, &w[k], fd, UAIO_READABLE,
					     &reactor_handler, NULL) < 0)
				break;
			started++;
		}
		uaio_loop_run_once(l, 0);
		uaio_loop_run_once(l, 0);
		long after = rss_bytes();

		printf("mem kind=watch %s watched=%d rss_delta_bytes=%ld "
		       "bytes_per_item=%.1f rss_per_100k_bytes=%.0f\n",
		       uaio_desc(), started, after - before,
		       started ? (double)(after - before) / started : 0,
		       started ? (double)(after - before) / started * 100000 : 0);
		fflush(stdout);
		uaio_loop_free(l);
		free(w);
	}
	for (int i = 0; i < npipes; i++) {
		close(pt.rfd[i]);
		close(pt.wfd[i]);
	}

	/* In-flight ops: long timeouts need no descriptor each. */
	for (int force_epoll = 0; force_epoll <= 1; force_epoll++) {
		uaio_loop *l = pt.loop = uaio_open(force_epoll);
		uaio_op *o = calloc(count, sizeof(*o));

		if (!o)
			die("out of memory");
		touch(o, count * sizeof(*o));
		uaio_loop_run_once(l, 0);
		long before = rss_bytes();
		int started = 0, err = 0;

		for (int k = 0; k < count; k++) {
			err = uaio_op_timeout(l, &o[k], 3600ull * 1000000000ull,
					      on_nothing, NULL);
			if (err < 0)
				break;
			started++;
		}
		uaio_loop_run_once(l, 0);
		uaio_loop_run_once(l, 0);
		long after = rss_bytes();

		printf("mem kind=op %s submitted=%d inflight=%u rss_delta_bytes=%ld "
		       "bytes_per_item=%.1f rss_per_100k_bytes=%.0f%s%s\n",
		       uaio_desc(), started, uaio_loop_inflight(l), after - before,
		       started ? (double)(after - before) / started : 0,
		       started ? (double)(after - before) / started * 100000 : 0,
		       err < 0 ? " stopped_by=" : "", err < 0 ? strerror(-err) : "");
		fflush(stdout);
		uaio_loop_free(l);
		free(o);
	}
}
#endif /* PIPETEST_NO_UAIO */

/* ------------------------------------------------------------------ main */

static const char *const modes[] = {
	"poll", "epoll", "epoll-et", "uring-poll", "uring-mpoll", "uring-read",
#ifndef PIPETEST_NO_UAIO
	"uaio-reactor", "uaio-reactor-et", "uaio-proactor", "uaio-reactor-epoll",
	"uaio-proactor-epoll",
#endif
};

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: pipetest --mode MODE [-P pipes] [-S bytes] [-T tokens]\n"
		"                [--time secs] [--warmup secs]\n"
		"       pipetest --nop uring|uaio|uaio-epoll [--batch N] [--time secs]\n"
		"       pipetest --memory [--count N]\n"
		"       pipetest --list\n"
		"Prints one key=value line per measurement (passes_per_sec,\n"
		"roundtrips_per_sec, or mem ... lines).\n");
	exit(code);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "pipes", required_argument, NULL, 'P' },
		{ "size", required_argument, NULL, 'S' },
		{ "tokens", required_argument, NULL, 'T' },
		{ "time", required_argument, NULL, 't' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "nop", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "memory", no_argument, NULL, 'M' },
		{ "count", required_argument, NULL, 'c' },
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *mode = NULL, *nop = NULL;
	int batch = 1, memory = 0, count = 100000, c;

	pt.P = 1;
	pt.S = 12;
	pt.T = 1;
	pt.time_s = 0.3;
	pt.warmup_s = 0.05;
	while ((c = getopt_long(argc, argv, "m:P:S:T:t:w:n:b:Mc:lh", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mode = optarg; break;
		case 'P': pt.P = atoi(optarg); break;
		case 'S': pt.S = atoi(optarg); break;
		case 'T': pt.T = atoi(optarg); break;
		case 't': pt.time_s = atof(optarg); break;
		case 'w': pt.warmup_s = atof(optarg); break;
		case 'n': nop = optarg; break;
		case 'b': batch = atoi(optarg); break;
		case 'M': memory = 1; break;
		case 'c': count = atoi(optarg); break;
		case 'l':
			for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++)
				printf("%s\n", modes[k]);
			return 0;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc || (!mode && !nop && !memory))
		usage(2);
	if (pt.P < 1 || pt.T < 1 || pt.S < 1 || pt.S > 4096 || batch < 1 ||
	    pt.time_s <= 0 || count < 1)
		die("bad arguments: need P,T >= 1, 1 <= S <= 4096, batch >= 1, time > 0");

	int limit = raise_nofile();

	if (memory) {
#ifdef PIPETEST_NO_UAIO
		die("built without uaio");
#else
		memory_report(count, limit);
		return 0;
#endif
	}

	if (nop) {
		const char *desc = "";

		if (!strcmp(nop, "uring")) {
			nop_uring(batch);
		}
#ifndef PIPETEST_NO_UAIO
		else if (!strcmp(nop, "uaio") || !strcmp(nop, "uaio-epoll")) {
			nop_uaio(batch, !strcmp(nop, "uaio-epoll"));
			desc = uaio_desc();
		}
#endif
		else {
			die("unknown --nop %s", nop);
		}
		printf("nop=%s batch=%d roundtrips=%llu secs=%.4f roundtrips_per_sec=%.0f "
		       "ring_flags=%s %s\n", nop, batch,
		       (unsigned long long)(pt.p1 - pt.p0), (pt.t1 - pt.t0) / 1e9,
		       rate(), pt.ring_flags ? pt.ring_flags : "-", desc);
		return 0;
	}

	int requested = pt.P;

	if (pt.P > max_pipes(limit))
		pt.P = max_pipes(limit);
	/* More tokens than a pipe can hold would block a writer. */
	if ((long)((pt.T + pt.P - 1) / pt.P) * pt.S > 32768)
		die("T=%d tokens of S=%d bytes do not fit in P=%d pipes", pt.T, pt.S, pt.P);

	int readiness = !strstr(mode, "read") && !strstr(mode, "proactor");
	const char *desc = "";

	ring_open(readiness);
	if (!strcmp(mode, "poll") || !strcmp(mode, "epoll") || !strcmp(mode, "epoll-et")) {
		inject_tokens();
		timing_start();
		if (mode[0] == 'p')
			run_poll();
		else
			run_epoll(strstr(mode, "-et") != NULL);
	} else if (!strcmp(mode, "uring-poll")) {
		run_uring(U_POLL);
	} else if (!strcmp(mode, "uring-mpoll")) {
		run_uring(U_MPOLL);
	} else if (!strcmp(mode, "uring-read")) {
		run_uring(U_READ);
	}
#ifndef PIPETEST_NO_UAIO
	else if (!strcmp(mode, "uaio-reactor") || !strcmp(mode, "uaio-reactor-epoll") ||
		 !strcmp(mode, "uaio-reactor-et") || !strcmp(mode, "uaio-reactor-et-epoll")) {
		run_uaio_reactor(strstr(mode, "epoll") != NULL, strstr(mode, "-et") != NULL);
		desc = uaio_desc();
	} else if (!strcmp(mode, "uaio-proactor") || !strcmp(mode, "uaio-proactor-epoll")) {
		run_uaio_proactor(strstr(mode, "epoll") != NULL);
		desc = uaio_desc();
	}
#endif
	else {
		die("unknown mode %s (see --list)", mode);
	}
	printf("mode=%s P=%d S=%d T=%d passes=%llu laps=%.1f secs=%.4f "
	       "passes_per_sec=%.0f P_requested=%d nofile_limit=%d ring_flags=%s %s\n",
	       mode, pt.P, pt.S, pt.T, (unsigned long long)(pt.p1 - pt.p0),
	       (double)(pt.p1 - pt.p0) / pt.P, (pt.t1 - pt.t0) / 1e9, rate(),
	       requested, limit, pt.ring_flags ? pt.ring_flags : "-", desc);
	return 0;
}
