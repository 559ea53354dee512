/* SPDX-License-Identifier: MIT */
/* Minimal test harness: exit 0 pass, 77 skip, 1 fail (liburing style). */
#ifndef UAIO_TEST_H
#define UAIO_TEST_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T_EXIT_PASS 0
#define T_EXIT_SKIP 77
#define T_EXIT_FAIL 1

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "%s:%d: CHECK failed: %s (errno %d %s)\n", \
		__FILE__, __LINE__, #cond, errno, strerror(errno)); \
	exit(T_EXIT_FAIL); } } while (0)

#define CHECK_EQ(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
	if (_a != _b) { fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %lld, %s = %lld\n", \
		__FILE__, __LINE__, #a, _a, #b, _b); exit(T_EXIT_FAIL); } } while (0)

#define SKIP(msg) do { fprintf(stderr, "skip: %s\n", msg); exit(T_EXIT_SKIP); } while (0)

/* A small tmpfs (opts: "size=64k") on a new directory made from the
 * mkdtemp template dir, in a private mount namespace of this process;
 * skips (exit 77) where that needs what the test lacks (root). */
#define T_PRIVATE_TMPFS(dir, opts) do { \
	CHECK(mkdtemp(dir)); \
	if (unshare(CLONE_NEWNS) < 0 || \
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || \
	    mount("tmpfs", (dir), "tmpfs", 0, (opts)) < 0) { \
		rmdir(dir); \
		SKIP("cannot mount a tmpfs here"); \
	} } while (0)

/* Runs one named sub-test and reports it. */
#define RUN(fn) do { fprintf(stderr, "  %s ...\n", #fn); fn(); } while (0)

/* ------------------------------------------------------------------ *
 * Helpers shared by the core loop tests. Only defined when
 * <uaio/loop.h> was included before this header.
 * ------------------------------------------------------------------ */
#ifdef UAIO_LOOP_H
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

/* Checks that an API call returning 0 / -errno succeeded. */
#define CHECK_OK(expr) do { long _r = (long)(expr); if (_r < 0) { \
	fprintf(stderr, "%s:%d: %s failed: %ld (%s)\n", __FILE__, __LINE__, \
		#expr, _r, strerror((int)-_r)); exit(T_EXIT_FAIL); } } while (0)

/* A hang is a failure, not a ctest timeout five minutes later. */
static inline void t_watchdog(unsigned secs)
{
	signal(SIGALRM, SIG_DFL);
	alarm(secs);
}

/* Creates a loop (backend from UAIO_BACKEND unless flags force one) and
 * says which backend the test runs on. */
static inline uaio_loop *t_loop_new_p(unsigned flags, unsigned entries,
				      unsigned workers)
{
	struct uaio_loop_params p = { .flags = flags, .entries = entries,
				      .workers = workers };
	uaio_loop *l = uaio_loop_new(&p);

	if (!l) {
		fprintf(stderr, "uaio_loop_new(flags %#x): %s\n", flags,
			strerror(errno));
		exit(T_EXIT_FAIL);
	}
	return l;
}

static inline uaio_loop *t_loop_new(unsigned flags)
{
	return t_loop_new_p(flags, 0, 0);
}

static inline void t_banner(const char *prog)
{
	uaio_loop *l = t_loop_new(0);
	const char *env = getenv("UAIO_BACKEND");

	fprintf(stderr, "%s: backend %s (UAIO_BACKEND=%s)\n", prog,
		uaio_loop_backend_name(l), env ? env : "");
	uaio_loop_free(l);
}

/* Runs iterations until *flag becomes nonzero; fails after max_iter. */
#define T_RUN_UNTIL(l, cond, max_iter) do { int _i = 0; \
	while (!(cond)) { int _r = uaio_loop_run_once((l), -1); \
		if (_r < 0 || ++_i > (max_iter)) { \
			fprintf(stderr, "%s:%d: loop never reached %s (run_once %d, %d iterations)\n", \
				__FILE__, __LINE__, #cond, _r, _i); \
			exit(T_EXIT_FAIL); } } } while (0)

/* Raises RLIMIT_NOFILE to at least want; returns the limit now in force. */
static inline rlim_t t_raise_nofile(rlim_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur >= want)
		return rl.rlim_cur;
	rl.rlim_cur = want;
	if (rl.rlim_max < want)
		rl.rlim_max = want;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

static inline int t_is_epoll(void)
{
	const char *e = getenv("UAIO_BACKEND");
	return e && (!strcmp(e, "epoll") || !strcmp(e, "fallback"));
}

static inline void t_set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* What an op's callbacks made of it: how many ran, the last result. Pass
 * t_rec_op as the callback and a struct t_rec as its data. */
struct t_rec {
	int calls, res;
};

static inline void t_rec_op(uaio_op *op, int res, void *data)
{
	struct t_rec *r = data;

	(void)op;
	r->calls++;
	r->res = res;
}

/* One uaio_op_work of fn on l, run to its end: the result its callback
 * got. */
static inline int t_work(uaio_loop *l, long (*fn)(void *))
{
	uaio_op op = { 0 };
	struct t_rec r = { 0 };

	CHECK_OK(uaio_op_work(l, &op, fn, NULL, t_rec_op, &r));
	T_RUN_UNTIL(l, r.calls, 10000);
	return r.res;
}
#endif /* UAIO_LOOP_H */

#include <sys/wait.h>
#include <unistd.h>
/* Waits for the child pid, which must exit 0. */
static inline void t_wait_ok(pid_t pid)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st))
		fprintf(stderr, "  child %d: killed by signal %d\n", (int)pid, WTERMSIG(st));
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* This test once more, in a child started afresh with GLIBC_TUNABLES set
 * to tunables (glibc reads them at start only): it must pass. Nothing in
 * that child (which has them set). */
static inline void t_rerun_tuned(const char *tunables)
{
	pid_t kid;
	int st;

	if (getenv("GLIBC_TUNABLES"))
		return;
	CHECK((kid = fork()) >= 0);
	if (kid == 0) {
		setenv("GLIBC_TUNABLES", tunables, 1);
		execl("/proc/self/exe", "rerun", (char *)NULL);
		_exit(T_EXIT_FAIL);
	}
	CHECK(waitpid(kid, &st, 0) == kid);
	if (!WIFEXITED(st))
		fprintf(stderr, "  under %s: killed by signal %d\n", tunables, WTERMSIG(st));
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), T_EXIT_PASS);
}

#endif
