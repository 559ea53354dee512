/* SPDX-License-Identifier: MIT */
/* uaio_file_cached: written pages are cached, pages dropped with
 * POSIX_FADV_DONTNEED are not (until read again), a range is cached only
 * when all of it is, and bad arguments give the errors the page promises. */
#include "flow/flow_util.h"
#include <string.h>

#define PG	4096
#define N	(64 * PG)

int main(void)
{
	static char buf[N];
	int fd, r, p;

	fd = t_tmpfile("/var/tmp");
	memset(buf, 'x', sizeof(buf));
	CHECK_EQ(pwrite(fd, buf, N, 0), N);
	r = uaio_file_cached(fd, 0, N);
	if (r == -ENOSYS)
		SKIP("no cachestat(2) (Linux 6.5)");
	CHECK_EQ(r, 1);				/* just written */
	CHECK_EQ(uaio_file_cached(fd, 5, 1), 1);
	CHECK_EQ(uaio_file_cached(fd, 123, 0), 1);	/* nothing asked */

	/* Dropped: clean pages go (written back first). */
	CHECK_EQ(fdatasync(fd), 0);
	CHECK_EQ(posix_fadvise(fd, 0, N, POSIX_FADV_DONTNEED), 0);
	if (uaio_file_cached(fd, 0, PG) == 1)
		SKIP("POSIX_FADV_DONTNEED kept the pages (file system keeps them)");
	CHECK_EQ(uaio_file_cached(fd, 0, N), 0);

	/* One page read back: that page is cached; a range that also holds
	 * a dropped page is not, down to one byte of it. The read is
	 * O_DIRECT-free and may pull readahead, so the far end is checked
	 * after dropping it again. */
	CHECK_EQ(posix_fadvise(fd, 0, N, POSIX_FADV_RANDOM), 0);
	CHECK_EQ(pread(fd, buf, PG, 8 * PG), PG);
	CHECK_EQ(uaio_file_cached(fd, 8 * PG, PG), 1);
	CHECK_EQ(uaio_file_cached(fd, 8 * PG + 100, 200), 1);
	CHECK_EQ(posix_fadvise(fd, 9 * PG, N - 9 * PG, POSIX_FADV_DONTNEED), 0);
	CHECK_EQ(posix_fadvise(fd, 0, 8 * PG, POSIX_FADV_DONTNEED), 0);
	CHECK_EQ(uaio_file_cached(fd, 8 * PG, PG + 1), 0);	/* one byte into page 9 */
	CHECK_EQ(uaio_file_cached(fd, 8 * PG - 1, 2), 0);	/* one byte of page 7 */
	CHECK_EQ(uaio_file_cached(fd, 8 * PG, PG), 1);
	/* a length up to the top of the range: past the end of the file,
	 * where nothing is cached (the page count wrapped to 0: "cached") */
	CHECK_EQ(uaio_file_cached(fd, 0, UINT64_MAX - 10), 0);
	CHECK_EQ(uaio_file_cached(fd, 8 * PG, UINT64_MAX - 8 * PG), 0);

	/* tmpfs: its pages are the page cache. */
	p = t_tmpfile("/dev/shm");
	CHECK_EQ(pwrite(p, buf, PG, 0), PG);
	CHECK_EQ(uaio_file_cached(p, 0, PG), 1);
	close(p);

	/* Errors. */
	CHECK_EQ(uaio_file_cached(-1, 0, PG), -EBADF);
	CHECK_EQ(uaio_file_cached(fd, UINT64_MAX - 10, 100), -EINVAL);
	{
		int pfd[2];

		CHECK_EQ(pipe(pfd), 0);
		r = uaio_file_cached(pfd[0], 0, PG);
		CHECK(r <= 0);		/* never "cached": no page cache behind it */
		close(pfd[0]);
		close(pfd[1]);
	}
	close(fd);
	return T_EXIT_PASS;
}
