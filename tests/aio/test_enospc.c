/* SPDX-License-Identifier: MIT */
/*
 * A full file system: writes to a 64 KiB tmpfs report ENOSPC (or a short
 * count at the boundary) through aio_error/aio_return, and every byte a
 * write reports as written is there, untorn. Needs a private mount
 * namespace (root); skipped otherwise.
 */
#include "aio/aio_util.h"
#include <sched.h>
#include <sys/mount.h>

enum { N = 8, SZ = 16 * 1024 };

static void full_tmpfs(void)
{
	char dir[] = "/tmp/uaio-enospc-XXXXXX", path[64];
	char *w = malloc(N * SZ), *r = malloc(SZ);
	struct aiocb cbs[N], *l[N];
	int fd, err, nospc = 0;
	long written = 0;

	T_PRIVATE_TMPFS(dir, "size=64k");
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	CHECK(fd >= 0);
	t_fill(w, N * SZ, 31);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(fd, w + i * SZ, SZ, (off_t)i * SZ);
		cbs[i].aio_lio_opcode = LIO_WRITE;
		l[i] = &cbs[i];
	}
	ERRNO_IS(ulio_listio(LIO_WAIT, l, N, NULL), EIO);
	for (int i = 0; i < N; i++) {
		ssize_t n = t_wait(&cbs[i], &err);
		if (n < 0) {
			CHECK_EQ(err, ENOSPC);
			nospc++;
			continue;
		}
		CHECK(n > 0 && n <= SZ);
		written += n;
		/* What it says it wrote is there. */
		CHECK(pread(fd, r, (size_t)n, (off_t)i * SZ) == n);
		CHECK(!memcmp(r, w + i * SZ, (size_t)n));
	}
	fprintf(stderr, "    %ld bytes written, %d writes refused with ENOSPC\n",
		written, nospc);
	CHECK(nospc > 0);
	CHECK(written <= 64 * 1024);
	close(fd);
	umount(dir);
	rmdir(dir);
	free(w);
	free(r);
}

int main(void)
{
	t_watchdog(60);
	RUN(full_tmpfs);
	return T_EXIT_PASS;
}
