/* SPDX-License-Identifier: MIT */
/* An open whose lookup is cached but which would wait in the open itself
 * (a FIFO without its other end) must not block the caller; and the
 * caller's file status flags stay what it asked for. */
#include "laio_util.h"
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static long finish(long r)
{
	if (r == -1 && errno == EINPROGRESS) {
		struct laio_completion c = wait_one(laio_gethandle());

		return c.laio_return_value == -1 ? -c.laio_errno : c.laio_return_value;
	}
	return r == -1 ? -errno : r;
}

/* r: a writer's laio open of fifo, which has no reader. It must have
 * gone to the background, and end once a reader opens, blocking. */
static void writer_waits(long r, const char *fifo)
{
	struct laio_completion c;
	void *h;
	int rd;

	CHECK(r == -1 && errno == EINPROGRESS);
	h = laio_gethandle();
	rd = open(fifo, O_RDONLY | O_NONBLOCK);
	CHECK(rd >= 0);
	c = wait_one(h);
	CHECK(c.laio_return_value >= 0);
	CHECK(!(fcntl((int)c.laio_return_value, F_GETFL) & O_NONBLOCK));
	close((int)c.laio_return_value);
	close(rd);
}

int main(void)
{
	char path[] = "/tmp/laio-fifo-XXXXXX";
	char fifo[64];
	struct open_how how = { .flags = O_WRONLY };
	long r, w;

	CHECK(mkdtemp(path) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/f", path);
	CHECK(mkfifo(fifo, 0600) == 0);
	CHECK(open(fifo, O_PATH) >= 0);	/* the lookup is now cached */
	alarm(10);	/* the defect: blocked here for good */

	/* No writer: the plain call waits; laio must not, in the caller. */
	r = finish(laio_syscall(SYS_openat, AT_FDCWD, fifo, O_RDONLY, 0));
	CHECK(r >= 0);
	CHECK(!(fcntl((int)r, F_GETFL) & O_NONBLOCK));
	/* With a reader, a writer's open does not wait. */
	w = finish(laio_syscall(SYS_openat2, AT_FDCWD, fifo, &how, sizeof(how)));
	CHECK(w >= 0);
	CHECK(!(fcntl((int)w, F_GETFL) & O_NONBLOCK));
	close((int)w);
	close((int)r);

	/* No reader: a writer's open waits in the background, not here;
	 * the same through open(2), which the table rewrites to openat. */
	writer_waits(laio_syscall(SYS_openat2, AT_FDCWD, fifo, &how, sizeof(how)), fifo);
	writer_waits(laio_syscall(SYS_open, fifo, O_WRONLY, 0), fifo);

	/* Flags the caller asked for are kept; O_PATH still opens inline. */
	r = INL(laio_syscall(SYS_openat, AT_FDCWD, fifo, O_RDONLY | O_NONBLOCK, 0));
	CHECK(r >= 0 && (fcntl((int)r, F_GETFL) & O_NONBLOCK));
	close((int)r);
	how.flags = O_PATH;
	r = INL(laio_syscall(SYS_openat2, AT_FDCWD, fifo, &how, sizeof(how)));
	CHECK(r >= 0);
	close((int)r);
	/* (its name looked up first: the inline try is a RESOLVE_CACHED
	 * open, which goes to the background for a name a busy machine has
	 * dropped from the dentry cache; CI's epoll run met that once) */
	CHECK(access("/dev/null", W_OK) == 0);
	r = INL(laio_syscall(SYS_openat, AT_FDCWD, "/dev/null", O_WRONLY | O_APPEND, 0));
	CHECK(r >= 0 && (fcntl((int)r, F_GETFL) & (O_NONBLOCK | O_APPEND)) == O_APPEND);
	close((int)r);

	unlink(fifo);
	rmdir(path);
	return T_EXIT_PASS;
}
