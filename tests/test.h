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

/* Runs one named sub-test and reports it. */
#define RUN(fn) do { fprintf(stderr, "  %s ...\n", #fn); fn(); } while (0)

#endif
