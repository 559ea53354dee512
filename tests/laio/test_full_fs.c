/* SPDX-License-Identifier: MIT */
/*
 * write() at the file position on a file system that fills up part-way:
 * the call returns the part, and the position moves by it, as a plain
 * write's does, so that the next write() appends instead of overwriting
 * it. io_uring at the position leaves the position where it was after
 * such a part (its retry of the rest fails), so the engine moves it.
 * Needs a private mount namespace for a 64 KiB tmpfs (root); skipped
 * otherwise.
 */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

enum { BIG = 1 << 20 };
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

int main(void)
{
	alarm(120);
	CHECK(mkdtemp(dir));
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", dir, "tmpfs", 0, "size=64k") < 0) {
		rmdir(dir);
		SKIP("cannot mount a tmpfs here");
	}
	for_each_mech(partial_write, "partial_write");
	umount(dir);
	rmdir(dir);
	return T_EXIT_PASS;
}
