/* SPDX-License-Identifier: MIT */
/*
 * write() at the file position on a file system that fills up part-way:
 * the call returns the part, and the position moves by it, as a plain
 * write's does, so that the next write() appends instead of overwriting
 * it. io_uring at the position leaves the position where it was after
 * such a part (its retry of the rest fails), so the engine makes such
 * writes as plain calls on a worker (UAIO_OPF_BLOCKING).
 * Needs a private mount namespace for a 1088 KiB tmpfs (root); skipped
 * otherwise. Two writes in flight at once: the second starts where the
 * first ended, and the position ends after both.
 */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

enum { BIG = 2 << 20, FS_KIB = 1088 };
static char dir[] = "/tmp/uaio-laio-full-XXXXXX";

static void partial_write(void)
{
	char path[64], *big = malloc(BIG), *back = malloc(BIG);
	struct stat st;
	long n;
	int fd;

	snprintf(path, sizeof(path), "%s/f", dir);
	CHECK((fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600)) >= 0);
	CHECK_EQ(write(fd, "head:", 5), 5);
	memset(big, 'z', BIG);
	n = ANY_OK(laio_syscall(SYS_write, fd, big, BIG));
	CHECK(n > 0 && n < BIG);
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 5 + n);
	CHECK_EQ(fstat(fd, &st), 0);
	CHECK_EQ(st.st_size, 5 + n);
	/* the file is full: the next write() is refused, and overwrote
	 * nothing on the way */
	CHECK(write(fd, "tail", 4) == -1 && errno == ENOSPC);
	CHECK_EQ(pread(fd, back, BIG, 0), 5 + n);
	CHECK(!memcmp(back, "head:", 5));
	for (long i = 0; i < n; i++)
		if (back[5 + i] != 'z')
			CHECK(!"the part written is there");
	close(fd);
	unlink(path);
	free(big);
	free(back);
}

static void two_in_flight(void)
{
	enum { ONE = 1 << 20 };
	char path[64], *b1 = malloc(ONE), *b2 = malloc(ONE), *back = malloc(2 * ONE);
	struct laio_completion c[2];
	long r1, r2;
	void *h1 = NULL, *h2 = NULL;
	int fd, got = 0;

	snprintf(path, sizeof(path), "%s/two", dir);
	CHECK((fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600)) >= 0);
	memset(b1, '1', ONE);
	memset(b2, '2', ONE);
	r1 = laio_syscall(SYS_write, fd, b1, ONE);
	if (r1 == -1 && errno == EINPROGRESS)
		h1 = laio_gethandle();
	r2 = laio_syscall(SYS_write, fd, b2, ONE);
	if (r2 == -1 && errno == EINPROGRESS)
		h2 = laio_gethandle();
	while (got < !!h1 + !!h2) {
		int n = laio_poll(c + got, 2 - got, NULL);

		CHECK(n > 0);
		got += n;
	}
	for (int i = 0; i < got; i++) {
		long v = c[i].laio_return_value < 0 ? -c[i].laio_errno : c[i].laio_return_value;

		if (c[i].laio_handle == h1)
			r1 = v;
		else if (c[i].laio_handle == h2)
			r2 = v;
		else
			CHECK(!"a completion of this test");
	}
	CHECK_EQ(r1, ONE);
	CHECK(r2 > 0 && r2 < ONE);	/* the file system is full after a part */
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), ONE + r2);
	CHECK(write(fd, "tail", 4) == -1 && errno == ENOSPC);
	CHECK_EQ(pread(fd, back, 2 * ONE, 0), ONE + r2);
	CHECK(!memcmp(back, b1, ONE) && !memcmp(back + ONE, b2, (size_t)r2));
	close(fd);
	unlink(path);
	free(b1);
	free(b2);
	free(back);
}

int main(void)
{
	alarm(120);
	T_PRIVATE_TMPFS(dir, "size=1088k");
	for_each_mech(partial_write, "partial_write");
	for_each_mech(two_in_flight, "two_in_flight");
	umount(dir);
	rmdir(dir);
	return T_EXIT_PASS;
}
