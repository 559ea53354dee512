/* SPDX-License-Identifier: MIT */
/* 100 000 background calls outstanding at once, none lost or duplicated. */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <sys/resource.h>

enum { PIPES = 500, PER = 200, N = PIPES * PER };

static int cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static void hundred_thousand(void)
{
	static int p[PIPES][2];
	static unsigned char buf[N];
	static void *h[N];
	static unsigned char seen[N];
	static struct laio_completion c[4096];
	char w[PER];
	long total = 0;
	int got = 0;

	for (int i = 0; i < PIPES; i++)
		CHECK(pipe(p[i]) == 0);
	for (int i = 0; i < N; i++)
		h[i] = BG(laio_syscall(SYS_read, p[i % PIPES][0], &buf[i], 1));
	qsort(h, N, sizeof(h[0]), cmp);
	for (int i = 1; i < N; i++)
		CHECK(h[i] != h[i - 1]);
	memset(w, 1, sizeof(w));
	for (int i = 0; i < PIPES; i++)
		CHECK_EQ(write(p[i][1], w, PER), PER);
	while (got < N) {
		int n = laio_poll(c, 4096, &(struct timespec){ 30, 0 });
		CHECK(n > 0);
		for (int i = 0; i < n; i++) {
			void **f = bsearch(&c[i].laio_handle, h, N, sizeof(h[0]), cmp);
			CHECK(f != NULL);
			CHECK(!seen[f - h]);	/* never twice */
			seen[f - h] = 1;
			CHECK_EQ(c[i].laio_return_value, 1);
			total += c[i].laio_return_value;
		}
		got += n;
	}
	CHECK_EQ(got, N);
	CHECK_EQ(total, N);
	for (int i = 0; i < N; i++)
		CHECK_EQ(buf[i], 1);
	CHECK_EQ(laio_poll(c, 1, &(struct timespec){ 0, 0 }), 0);
	for (int i = 0; i < PIPES; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
}

int main(void)
{
	struct rlimit rl;

	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_cur < 2 * PIPES + 64) {
		rl.rlim_cur = rl.rlim_max;
		if (rl.rlim_cur < 2 * PIPES + 64 || setrlimit(RLIMIT_NOFILE, &rl))
			SKIP("not enough file descriptors");
	}
	RUN_MECHS(hundred_thousand);
	return T_EXIT_PASS;
}
