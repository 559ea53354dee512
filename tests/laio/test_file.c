/* SPDX-License-Identifier: MIT */
/* Regular files (page cache hit inline, miss in the background) and the
 * calls that go through io_uring opcodes. */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define FSIZE (4u << 20)
static char dir[64], path[128];

static void make_file(void)
{
	char *b = malloc(FSIZE);
	int fd;

	for (unsigned i = 0; i < FSIZE; i++)
		b[i] = (char)(i * 13 + (i >> 12));
	snprintf(path, sizeof(path), "%s/data", dir);
	fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, b, FSIZE), FSIZE);
	CHECK(fsync(fd) == 0);
	close(fd);
	free(b);
}

static int expect_byte(unsigned i)
{
	return (char)(i * 13 + (i >> 12));
}

/* Drops the file from the page cache; 1 if it took (checked with mincore). */
static int evict(int fd)
{
	void *m;
	unsigned char vec[FSIZE / 4096];
	int resident = 0;

	CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
	m = mmap(NULL, FSIZE, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(m != MAP_FAILED);
	CHECK(mincore(m, FSIZE, vec) == 0);
	for (unsigned i = 0; i < FSIZE / 4096; i++)
		resident += vec[i] & 1;
	munmap(m, FSIZE);
	return resident == 0;
}

static void cached_reads(void)
{
	int fd = open(path, O_RDONLY);
	char b[4096], c[100];
	struct iovec iov[2] = { { b, 100 }, { c, 100 } };

	CHECK(fd >= 0);
	CHECK_EQ(pread(fd, b, 4096, 0), 4096);	/* warm */
	CHECK_EQ(INL(laio_syscall(SYS_pread64, fd, b, 4096, 0)), 4096);
	CHECK_EQ(b[4095], expect_byte(4095));
	CHECK_EQ(INL(laio_syscall(SYS_read, fd, b, 100)), 100);
	CHECK_EQ(INL(laio_syscall(SYS_readv, fd, iov, 2)), 200);
	CHECK_EQ(c[0], expect_byte(200));
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 300);
	CHECK_EQ(INL(laio_syscall(SYS_preadv, fd, iov, 2, 10)), 200);
	CHECK_EQ(b[0], expect_byte(10));
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_pread64, fd, b, 10, -5L)), -1);
	CHECK_EQ(errno, EINVAL);
	/* at EOF */
	CHECK_EQ(INL(laio_syscall(SYS_pread64, fd, b, 10, FSIZE)), 0);
	close(fd);
}

static void evicted_reads(void)
{
	int fd = open(path, O_RDONLY);
	static char b[65536];
	struct laio_completion c;
	void *h;

	CHECK(fd >= 0);
	if (!evict(fd)) {
		fprintf(stderr, "    (page cache eviction did not take: background read not tested)\n");
		close(fd);
		return;
	}
	/* The non-blocking try itself starts the read of a missing page; on
	 * a loaded machine that read can finish before the try looks again,
	 * and the call is then rightly inline. Evict and try again then. */
	long r;
	for (int tries = 0;; tries++) {
		errno = 0;
		r = laio_syscall(SYS_pread64, fd, b, 4096, 1 << 20);
		if (r == -1 && errno == EINPROGRESS)
			break;
		CHECK_EQ(r, 4096);
		/* A loaded machine (other tests writing gigabytes) may refuse
		 * the eviction or finish the read first every time: that is a
		 * machine state, not a wrong answer. */
		if (tries >= 50 || !evict(fd)) {
			fprintf(stderr, "    (no background read under this load: not tested)\n");
			close(fd);
			return;
		}
	}
	h = laio_gethandle();
	CHECK(h != NULL);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 4096);
	CHECK_EQ(b[17], expect_byte((1 << 20) + 17));
	/* read() with the file position */
	for (int tries = 0;; tries++) {
		if (tries >= 50 || !evict(fd)) {
			fprintf(stderr, "    (no background read() under this load: not tested)\n");
			close(fd);
			return;
		}
		CHECK(lseek(fd, 2 << 20, SEEK_SET) == 2 << 20);
		errno = 0;
		r = laio_syscall(SYS_read, fd, b, sizeof(b));
		if (r == -1 && errno == EINPROGRESS)
			break;
		CHECK(r > 0);
	}
	h = laio_gethandle();
	CHECK(h != NULL);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, (long)sizeof(b));
	CHECK_EQ(b[5], expect_byte((2 << 20) + 5));
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), (2 << 20) + (long)sizeof(b));
	close(fd);
}

/* Any outcome of a call: inline or its completion. */
static long result_of(long r)
{
	if (r == -1 && errno == EINPROGRESS)
		return wait_one(laio_gethandle()).laio_return_value;
	return r;
}

/* A read of a file whose first half is cached: the whole count, as
 * read(2) gives (a file's read is short only at its end), whether the
 * rest comes inline or in the background. */
static void half_cached_reads(void)
{
	int fd = open(path, O_RDONLY);
	size_t len = 1 << 20;
	char *b = malloc(len), *half = malloc(len / 2);
	struct iovec iov[2] = { { b, len / 2 }, { b + len / 2, len / 2 } };

	CHECK(fd >= 0);
	CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0);	/* no readahead */
	for (int k = 0; k < 4; k++) {
		if (!evict(fd)) {
			fprintf(stderr, "    (page cache eviction did not take: not tested)\n");
			break;
		}
		CHECK_EQ(pread(fd, half, len / 2, 0), (long)(len / 2));
		memset(b, 0, len);
		errno = 0;
		if (k == 0) {
			CHECK_EQ(result_of(laio_syscall(SYS_pread64, fd, b, len, 0)), (long)len);
		} else if (k == 1) {
			CHECK(lseek(fd, 0, SEEK_SET) == 0);
			CHECK_EQ(result_of(laio_syscall(SYS_read, fd, b, len)), (long)len);
			CHECK_EQ(lseek(fd, 0, SEEK_CUR), (long)len);
		} else if (k == 2) {
			CHECK_EQ(result_of(laio_syscall(SYS_preadv, fd, iov, 2, 0)), (long)len);
		} else {
			/* flags the ring's op cannot carry: the rest on the pool,
			 * from where the first part stopped (it started over) */
			CHECK(lseek(fd, 0, SEEK_SET) == 0);
			CHECK_EQ(result_of(laio_syscall(SYS_preadv2, fd, iov, 2, -1L, 0L, RWF_DSYNC)),
				 (long)len);
			CHECK_EQ(lseek(fd, 0, SEEK_CUR), (long)len);
		}
		for (size_t i = 0; i < len; i += 4093)
			CHECK_EQ(b[i], expect_byte((unsigned)i));
	}
	/* short at the end only */
	CHECK_EQ(result_of(laio_syscall(SYS_pread64, fd, b, 4096, FSIZE - 100)), 100);
	CHECK(lseek(fd, FSIZE - 10, SEEK_SET) == FSIZE - 10);
	CHECK_EQ(result_of(laio_syscall(SYS_read, fd, b, 4096)), 10);
	close(fd);
	free(b);
	free(half);
}

static void writes(void)
{
	char p2[160];
	int fd;
	struct any_res a;

	snprintf(p2, sizeof(p2), "%s/w", dir);
	fd = (int)ANY_OK(laio_syscall(SYS_openat, AT_FDCWD, p2, O_CREAT | O_RDWR | O_TRUNC, 0600));
	/* buffered writes: inline where the fs supports RWF_NOWAIT, else
	 * background; the result is the same */
	a = ANY(laio_syscall(SYS_write, fd, "hello", 5));
	CHECK_EQ(a.ret, 5);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_pwrite64, fd, "J", 1, 0)), 1);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_fsync, fd)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_fdatasync, fd)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_fallocate, fd, 0, 0, 8192)), 0);
	struct stat st;
	CHECK(fstat(fd, &st) == 0);
	CHECK_EQ(st.st_size, 8192);
	char b[6] = {0};
	CHECK_EQ(pread(fd, b, 5, 0), 5);
	CHECK(memcmp(b, "Jello", 5) == 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_fadvise64, fd, 0, 0, POSIX_FADV_DONTNEED)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_close, fd)), 0);
	CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
	ANY_ERR(laio_syscall(SYS_close, fd), EBADF);
	ANY_ERR(laio_syscall(SYS_fsync, 999), EBADF);
	/* What the kernel refuses at once (a negative descriptor, a NULL
	 * argument) is refused at once, as syscall(2) would: never an
	 * EINPROGRESS for an answer that cannot wait. */
	a = ANY(laio_syscall(SYS_close, -1));
	CHECK(a.ret == -1 && a.err == EBADF && !a.bg);
	a = ANY(laio_syscall(SYS_read, -1, b, 1));
	CHECK(a.ret == -1 && a.err == EBADF && !a.bg);
	a = ANY(laio_syscall(SYS_fsync, -3));
	CHECK(a.ret == -1 && a.err == EBADF && !a.bg);
	a = ANY(laio_syscall(SYS_openat2, AT_FDCWD, p2, NULL, 24));
	CHECK(a.ret == -1 && a.err == EFAULT && !a.bg);
	/* an open_how it cannot read, or flags it refuses: the kernel's
	 * answer, not a fault in the caller */
	void *gone = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(gone != MAP_FAILED);
	a = ANY(laio_syscall(SYS_openat2, AT_FDCWD, p2, gone, sizeof(struct open_how)));
	CHECK(a.ret == -1 && a.err == EFAULT && !a.bg);
	a = ANY(laio_syscall(SYS_openat2, AT_FDCWD, p2, (void *)1, sizeof(struct open_how)));
	CHECK(a.ret == -1 && a.err == EFAULT && !a.bg);
	munmap(gone, 4096);
	struct open_how bad = { .flags = O_RDONLY, .resolve = 1ull << 40 };
	a = ANY(laio_syscall(SYS_openat2, AT_FDCWD, p2, &bad, sizeof(bad)));
	CHECK(a.ret == -1 && a.err == EINVAL && !a.bg);
	CHECK(unlink(p2) == 0);
}

static void paths(void)
{
	char a[160], b[160], d[160], l[160];
	struct statx stx;
	int fd;

	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	snprintf(d, sizeof(d), "%s/d", dir);
	snprintf(l, sizeof(l), "%s/l", dir);
	/* cached lookup of an existing file: inline (RESOLVE_CACHED) */
	CHECK(access(path, R_OK) == 0);
	fd = (int)INL(laio_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0));
	CHECK(fd >= 0);
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	fd = (int)INL(laio_syscall(SYS_open, path, O_RDONLY, 0));
	CHECK(fd >= 0);
	close(fd);
	struct open_how how = { .flags = O_RDONLY };
	fd = (int)INL(laio_syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how)));
	CHECK(fd >= 0);
	close(fd);
	/* missing file: ENOENT either way */
	ANY_ERR(laio_syscall(SYS_openat, AT_FDCWD, "/nonexistent/x/y", O_RDONLY, 0), ENOENT);
	ANY_ERR(laio_syscall(SYS_openat2, AT_FDCWD, "/nonexistent/x/y", &how, sizeof(how)), ENOENT);
	fd = (int)ANY_OK(laio_syscall(SYS_creat, a, 0644));
	close(fd);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_statx, AT_FDCWD, a, 0, STATX_SIZE, &stx)), 0);
	CHECK_EQ(stx.stx_size, 0);
	ANY_ERR(laio_syscall(SYS_statx, AT_FDCWD, "/nonexistent", 0, STATX_SIZE, &stx), ENOENT);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_rename, a, b)), 0);
	CHECK(access(a, F_OK) == -1 && access(b, F_OK) == 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_renameat2, AT_FDCWD, b, AT_FDCWD, a, RENAME_NOREPLACE)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_link, a, b)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_symlink, a, l)), 0);
	char t[160] = {0};
	CHECK(readlink(l, t, sizeof(t)) > 0 && !strcmp(t, a));
	CHECK_EQ(ANY_OK(laio_syscall(SYS_unlink, l)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_unlinkat, AT_FDCWD, b, 0)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_mkdir, d, 0755)), 0);
	ANY_ERR(laio_syscall(SYS_mkdirat, AT_FDCWD, d, 0755), EEXIST);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_symlinkat, a, AT_FDCWD, l)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_linkat, AT_FDCWD, a, AT_FDCWD, b, 0)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_renameat, AT_FDCWD, b, AT_FDCWD, path, 0)) , 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_rmdir, d)), 0);
	ANY_ERR(laio_syscall(SYS_rmdir, d), ENOENT);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_unlink, l)), 0);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_unlink, a)), 0);
	/* restore the data file renamed over above */
	make_file();
}

static void splice_tee_madvise(void)
{
	int p[2], q[2];
	char b[8] = {0};
	void *m;

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	CHECK(write(p[1], "splice", 6) == 6);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_tee, p[0], q[1], 6, 0)), 6);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_splice, p[0], NULL, q[1], NULL, 6, 0)), 6);
	CHECK_EQ(read(q[0], b, 8), 8);
	CHECK(memcmp(b, "splicesp", 8) == 0);
	/* offsets given: the helper pool updates them like splice(2) */
	int fd = open(path, O_RDONLY);
	loff_t off = 4096;
	CHECK_EQ(ANY_OK(laio_syscall(SYS_splice, fd, &off, p[1], NULL, 3, 0)), 3);
	CHECK_EQ(off, 4099);
	close(fd);
	m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK_EQ(ANY_OK(laio_syscall(SYS_madvise, m, 65536, MADV_DONTNEED)), 0);
	ANY_ERR(laio_syscall(SYS_madvise, (char *)m + 1, 4096, MADV_DONTNEED), EINVAL);
	munmap(m, 65536);
	close(p[0]); close(p[1]); close(q[0]); close(q[1]);
}

/* A call whose success is a number below -4095 (syscall(2) passes it on
 * as it is, errno untouched) is that number, not an error or 0: lseek of
 * /proc/self/mem past 2^63, F_GETOWN of a process group. */
static void negative_results(void)
{
	int m = open("/proc/self/mem", O_RDONLY | O_CLOEXEC), s;
	struct any_res r;

	CHECK(m >= 0);
	errno = 0;
	r = ANY(laio_syscall(SYS_lseek, m, -8192L, SEEK_SET));
	CHECK_EQ(r.ret, -8192L);
	close(m);
	if (getpgrp() <= 4095)
		fprintf(stderr, "    process group %d: F_GETOWN's result is not below -4095, "
			"not checked\n", (int)getpgrp());
	else {
		CHECK((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
		CHECK(fcntl(s, F_SETOWN, -getpgrp()) == 0);
		errno = 0;
		r = ANY(laio_syscall(SYS_fcntl, s, F_GETOWN));
		CHECK_EQ(r.ret, (long)-getpgrp());
		close(s);
	}
}

/* A directory's read cannot block: EISDIR inline, as read(2) gives it
 * (the kernel refuses RWF_NOWAIT first, which sent it to the background);
 * and a call that only asks about the calling thread stays in it. */
static void never_blocking(void)
{
	int d = open("/var/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char b[16];
	struct timespec ts;

	CHECK(d >= 0);
	CHECK_EQ(INL(laio_syscall(SYS_read, d, b, sizeof(b))), -1);
	CHECK_EQ(errno, EISDIR);
	CHECK_EQ(INL(laio_syscall(SYS_pread64, d, b, sizeof(b), 0L)), -1);
	CHECK_EQ(errno, EISDIR);
	close(d);
	CHECK_EQ(INL(laio_syscall(SYS_sched_rr_get_interval, 0L, &ts)), 0);
}

static void all(void)
{
	RUN(cached_reads);
	RUN(evicted_reads);
	RUN(half_cached_reads);
	RUN(writes);
	RUN(paths);
	RUN(splice_tee_madvise);
	RUN(negative_results);
	RUN(never_blocking);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/var/tmp/laio-test-XXXXXX");
	CHECK(mkdtemp(dir));
	make_file();
	RUN_MECHS(all);
	unlink(path);
	rmdir(dir);
	return T_EXIT_PASS;
}
