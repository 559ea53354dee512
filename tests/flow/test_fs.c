/* SPDX-License-Identifier: MIT */
/* Flows between file systems and odd files: a second file system
 * (copy_file_range's EXDEV, then a fallback), /proc files (which say
 * they are empty), sparse sources, and 128 MiB in every mode. */
#define _GNU_SOURCE
#include "flow/flow_util.h"

static uaio_loop *L;

static void test_exdev(void)
{
	size_t n = (5u << 20) + 3;
	char *data = malloc(n);

	if (access("/dev/shm", W_OK))
		SKIP("no /dev/shm");
	t_fill(data, n, 11);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int a = t_tmpfile("/var/tmp"), b = t_tmpfile("/dev/shm"), side;
		const char *m;

		CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
		CHECK_EQ(t_flow_sync(L, a, b, mode, 0, UAIO_FLOW_EOF, &side, &m), (int64_t)n);
		CHECK(!t_cmp_fds(a, b, n));
		fprintf(stderr, "    %s: %s\n", uaio_flow_mode_name(mode), m);
		/* copy_file_range refuses a second file system here: the
		 * flow must have moved on from it. */
		if (mode <= UAIO_FLOW_PAGECACHE)
			CHECK(strcmp(m, "copy_file_range") != 0);
		close(a);
		close(b);
	}
	free(data);
}

/* One AUTO flow a -> b to its end (checked); returns the method it
 * started with. */
static const char *first_method(int a, int b, size_t n)
{
	struct t_sync s = { 0 };
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = a, .off = 0 },
		.dst = { .type = UAIO_FLOW_FD, .fd = b, .off = 0 },
		.len = UAIO_FLOW_EOF, .mode = UAIO_FLOW_AUTO, .done = t_sync_done, .data = &s,
	};
	const char *m;
	uaio_flow *f;

	CHECK_EQ(uaio_flow_start(L, &p, &f), 0);
	m = uaio_flow_method(f);
	T_RUN_UNTIL(L, s.r.done, 10000000);
	CHECK_EQ(s.r.res, (int64_t)n);
	CHECK(!t_cmp_fds(a, b, n));
	return m;
}

/* Refusals are remembered per pair of devices: after a flow was refused
 * FICLONE (EXDEV across file systems, EOPNOTSUPP on ext4 and tmpfs) and
 * copy_file_range (EXDEV), the next flow between the same two starts at
 * the method that worked. Runs first: each pair is new here. */
static void test_refused(void)
{
	static const char *const dirs[][2] = {
		{ "/dev/shm", "/var/tmp" },	/* another file system */
		{ "/var/tmp", "/var/tmp" },	/* the same: copy_file_range works */
	};
	size_t n = (1u << 20) + 5;
	char *data = malloc(n);

	if (access("/dev/shm", W_OK))
		SKIP("no /dev/shm");
	t_fill(data, n, 3);
	for (unsigned i = 0; i < 2; i++) {
		const char *m[3];

		for (int k = 0; k < 3; k++) {
			int a = t_tmpfile(dirs[i][0]), b = t_tmpfile(dirs[i][1]);

			CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
			m[k] = first_method(a, b, n);
			close(a);
			close(b);
		}
		fprintf(stderr, "    %s -> %s: started with %s, then %s, %s\n",
			dirs[i][0], dirs[i][1], m[0], m[1], m[2]);
		CHECK(strcmp(m[0], "clone") == 0);
		for (int k = 1; k < 3; k++) {
			CHECK(strcmp(m[k], "clone") != 0);
			CHECK(strcmp(m[k], i ? "copy_file_range" : "splice") == 0);
		}
	}
	free(data);
}

static void test_proc(void)
{
	char want[4096], *got = malloc(4096);
	int fd = open("/proc/version", O_RDONLY);
	ssize_t n = read(fd, want, sizeof(want));

	CHECK(n > 0);
	close(fd);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int a = open("/proc/version", O_RDONLY), b = t_tmpfile("/var/tmp");
		const char *m;

		CHECK_EQ(t_flow_sync(L, a, b, mode, 0, UAIO_FLOW_EOF, NULL, &m), n);
		fprintf(stderr, "    %s: %s\n", uaio_flow_mode_name(mode), m);
		CHECK_EQ(pread(b, got, 4096, 0), n);
		CHECK(memcmp(got, want, (size_t)n) == 0);
		close(a);
		close(b);
	}
	free(got);
}

static void test_sparse(void)
{
	size_t n = 8u << 20;
	char blk[70000];

	t_fill(blk, sizeof(blk), 12);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int a = t_tmpfile("/var/tmp"), b = t_tmpfile("/var/tmp");

		CHECK(ftruncate(a, (off_t)n) == 0);
		CHECK_EQ(pwrite(a, blk, sizeof(blk), 1 << 20), (ssize_t)sizeof(blk));
		CHECK_EQ(pwrite(a, blk, sizeof(blk), (6 << 20) + 5), (ssize_t)sizeof(blk));
		CHECK_EQ(t_flow_sync(L, a, b, mode, 0, UAIO_FLOW_EOF, NULL, NULL), (int64_t)n);
		CHECK(!t_cmp_fds(a, b, n));
		close(a);
		close(b);
	}
}

static void test_big(void)
{
	size_t n = (128u << 20) + 4097;
	char *blk = malloc(1 << 20);
	int a = t_tmpfile("/var/tmp");

	for (size_t off = 0; off < n; off += 1 << 20) {
		size_t k = n - off < (1u << 20) ? n - off : (1u << 20);

		t_fill(blk, k, (unsigned)(off >> 20));
		CHECK_EQ(pwrite(a, blk, k, (off_t)off), (ssize_t)k);
	}
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int b = t_tmpfile("/var/tmp");

		CHECK_EQ(t_flow_sync(L, a, b, mode, 0, UAIO_FLOW_EOF, NULL, NULL), (int64_t)n);
		CHECK(!t_cmp_fds(a, b, n));
		close(b);
	}
	close(a);
	free(blk);
}

int main(void)
{
	t_watchdog(300);
	t_banner("test_fs");
	L = t_loop_new(0);
	RUN(test_refused);
	RUN(test_proc);
	RUN(test_sparse);
	RUN(test_big);
	RUN(test_exdev);
	CHECK_EQ(uaio_loop_inflight(L), 0);
	uaio_loop_free(L);
	return T_EXIT_PASS;
}
