/* SPDX-License-Identifier: MIT */
/* Helpers shared by the LAIO tests. */
#ifndef LAIO_TEST_UTIL_H
#define LAIO_TEST_UTIL_H
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uaio/laio.h>
#include "test.h"
#include "laio/laio_internal.h"

/* Expects laio_syscall()'s -1/EINPROGRESS; returns the handle. */
#define BG(call) ({ errno = 0; long _r = (call); \
	if (_r != -1 || errno != EINPROGRESS) { \
		fprintf(stderr, "%s:%d: %s = %ld errno %d (%s), wanted EINPROGRESS\n", \
			__FILE__, __LINE__, #call, _r, errno, strerror(errno)); \
		exit(T_EXIT_FAIL); } \
	void *_h = laio_gethandle(); CHECK(_h != NULL); _h; })

/* Expects an inline result. */
#define INL(call) ({ errno = 0; long _r = (call); \
	if (_r == -1 && errno == EINPROGRESS) { \
		fprintf(stderr, "%s:%d: %s went to the background\n", \
			__FILE__, __LINE__, #call); exit(T_EXIT_FAIL); } \
	CHECK(laio_gethandle() == NULL); _r; })

/* Waits (bounded) for the completion of h; no other call may be pending. */
static inline struct laio_completion wait_one_at(void *h, int line)
{
	struct laio_completion c[4];
	struct timespec ts = { 10, 0 };
	int n = laio_poll(c, 4, &ts);

	if (n != 1) {
		fprintf(stderr, "line %d: wait_one: laio_poll = %d (errno %d)\n", line, n, errno);
		exit(T_EXIT_FAIL);
	}
	CHECK(c[0].laio_handle == h);
	return c[0];
}

#define wait_one(h) wait_one_at(h, __LINE__)

/* Which of the n calls in h a completion's handle is (it must be one). */
static inline int handle_index(void *const *h, int n, const struct laio_completion *c)
{
	int i = 0;

	while (i < n && h[i] != c->laio_handle)
		i++;
	CHECK(i < n);
	return i;
}

/* Runs fn in a child per background mechanism (the engine reads
 * LAIO_BG when it starts; a forked child starts afresh). */
static inline void for_each_mech(void (*fn)(void), const char *name)
{
	static const char *mechs[] = { "op", "poll" };

	for (int i = 0; i < 2; i++) {
		pid_t pid;
		int st;

		fflush(NULL);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			setenv("LAIO_BG", mechs[i], 1);
			CHECK_EQ(laio__mechanism(), i == 0 ? LAIO_MECH_OP : LAIO_MECH_POLL);
			fprintf(stderr, "  %s [LAIO_BG=%s, %s]\n", name, mechs[i],
				laio__backend_name());
			fn();
			fflush(NULL);
			_exit(0);
		}
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "%s [LAIO_BG=%s] failed (status %#x)\n", name, mechs[i], st);
			exit(T_EXIT_FAIL);
		}
	}
}
#define RUN_MECHS(fn) for_each_mech(fn, #fn)

#endif

/* Either way: the call's result as syscall(2) would give it, waiting for
 * the completion if it went to the background. *bg tells which. */
struct any_res { long ret; int err; int bg; };
#define ANY(call) ({ struct any_res _a = { 0, 0, 0 }; errno = 0; \
	long _r = (call); \
	if (_r == -1 && errno == EINPROGRESS) { \
		void *_h = laio_gethandle(); CHECK(_h != NULL); \
		struct laio_completion _c = wait_one(_h); \
		_a.ret = _c.laio_return_value; _a.err = _c.laio_errno; _a.bg = 1; \
	} else { CHECK(laio_gethandle() == NULL); \
		_a.ret = _r; _a.err = _r == -1 ? errno : 0; } \
	_a; })
#define ANY_OK(call) ({ struct any_res _x = ANY(call); \
	if (_x.ret < 0) { fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, \
		__LINE__, #call, strerror(_x.err)); exit(T_EXIT_FAIL); } _x.ret; })
#define ANY_ERR(call, e) do { struct any_res _x = ANY(call); \
	if (_x.ret != -1 || _x.err != (e)) { fprintf(stderr, "%s:%d: %s = %ld (%s), wanted %s\n", \
		__FILE__, __LINE__, #call, _x.ret, strerror(_x.err), strerror(e)); \
		exit(T_EXIT_FAIL); } } while (0)
