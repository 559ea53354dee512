/* SPDX-License-Identifier: MIT */
/*
 * Limits: 65 536 requests in flight at once (reads waiting on pipes),
 * EAGAIN (never a crash, drop or hang) beyond the limit, uaio_init()
 * moving the limit, and the library's memory per request in flight.
 */
#include "aio/aio_util.h"
#include <sys/resource.h>

enum { NPIPES = 64, PER = 1024, N = NPIPES * PER };

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	CHECK(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void full_house(void)
{
	struct aiocb *cbs = calloc(N + 1, sizeof(*cbs));
	char *buf = calloc(N, 1);
	int p[NPIPES][2], err;
	long before, after;

	CHECK(cbs && buf);
	/* Touch our own arrays now: only the library's growth is measured. */
	memset(cbs, 0xff, (N + 1) * sizeof(*cbs));
	memset(buf, 0xff, N);
	for (int i = 0; i < NPIPES; i++)
		CHECK(pipe(p[i]) == 0);
	/* Warm the engine so that its start-up is not counted. */
	struct aiocb warm = t_cb(p[0][0], buf, 1, 0);
	CHECK_EQ(uaio_read(&warm), 0);
	/* In the kernel already: glibc's "being performed". */
	CHECK_EQ(uaio_cancel(p[0][0], &warm), AIO_NOTCANCELED);
	CHECK(write(p[0][1], "w", 1) == 1);
	CHECK_EQ(t_wait(&warm, &err), 1);
	before = rss_kb();
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(p[i % NPIPES][0], buf + i, 1, 0);
		if (uaio_read(&cbs[i]) != 0) {
			fprintf(stderr, "request %d: %s\n", i, strerror(errno));
			exit(T_EXIT_FAIL);
		}
	}
	after = rss_kb();
	fprintf(stderr, "    %d in flight; RSS +%ld kB = %.0f B per request\n", N,
		after - before, (after - before) * 1024.0 / N);
	/* Generous bound (allocator slack, page granularity): a record per
	 * request is 120 B by construction. */
	CHECK((after - before) * 1024 / N <= 256);
	/* One more is refused, and nothing breaks. */
	cbs[N] = t_cb(p[0][0], buf, 1, 0);
	ERRNO_IS(uaio_read(&cbs[N]), EAGAIN);
	CHECK_EQ(uaio_error(&cbs[N]), EAGAIN);
	struct aiocb *l[1] = { &cbs[N] };
	cbs[N].aio_lio_opcode = LIO_READ;
	ERRNO_IS(ulio_listio(LIO_NOWAIT, l, 1, NULL), EAGAIN);
	/* Feed every pipe: each request gets exactly its byte, in order. */
	char data[PER];
	for (int i = 0; i < NPIPES; i++) {
		for (int k = 0; k < PER; k++)
			data[k] = (char)(k * NPIPES + i);
		CHECK(write(p[i][1], data, PER) == PER);
	}
	for (int i = 0; i < N; i++) {
		CHECK_EQ(t_wait(&cbs[i], &err), 1);
		CHECK_EQ(buf[i], (char)i);
	}
	for (int i = 0; i < NPIPES; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	free(cbs);
	free(buf);
}

static void tuned_limit(void)
{
	struct aioinit in = { 0 };
	struct aiocb cbs[11];
	char b[11];
	int p[2], err;

	in.aio_num = 10;
	uaio_init(&in);
	CHECK_EQ(uaio_sysconf(_SC_AIO_MAX), 10);
	CHECK(pipe(p) == 0);
	for (int i = 0; i < 10; i++) {
		cbs[i] = t_cb(p[0], &b[i], 1, 0);
		CHECK_EQ(uaio_read(&cbs[i]), 0);
	}
	cbs[10] = t_cb(p[0], &b[10], 1, 0);
	ERRNO_IS(uaio_read(&cbs[10]), EAGAIN);
	/* A list that would not fit is refused whole. */
	struct aiocb *l[1] = { &cbs[10] };
	cbs[10].aio_lio_opcode = LIO_READ;
	ERRNO_IS(ulio_listio(LIO_WAIT, l, 1, NULL), EAGAIN);
	CHECK(write(p[1], "0123456789", 10) == 10);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(t_wait(&cbs[i], &err), 1);
	/* Room again. */
	CHECK(write(p[1], "x", 1) == 1);
	CHECK_EQ(uaio_read(&cbs[10]), 0);
	CHECK_EQ(t_wait(&cbs[10], &err), 1);
	in.aio_num = UAIO_AIO_MAX_DEFAULT;
	uaio_init(&in);
	CHECK_EQ(uaio_sysconf(_SC_AIO_MAX), UAIO_AIO_MAX_DEFAULT);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	struct rlimit rl;

	t_watchdog(240);
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < 2 * NPIPES + 64)
		SKIP("RLIMIT_NOFILE too low");
	RUN(full_house);
	RUN(tuned_limit);
	return T_EXIT_PASS;
}
