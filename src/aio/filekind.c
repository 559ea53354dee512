/* SPDX-License-Identifier: MIT */
/*
 * What kind of file a request is on, as glibc's pread and pwrite see it:
 * whether it takes an offset, a terminal's read clock, a span the kernel
 * refuses, a device made O_NONBLOCK (submit.c asks).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <termios.h>
#include "aio/engine.h"

/* A regular file that takes an offset: not one opened as a stream
 * (tracefs's trace_pipe and trace_marker, FUSE's FOPEN_STREAM and
 * FOPEN_NONSEEKABLE), where pread fails with ESPIPE and glibc reads and
 * writes at the file's position instead. */
bool aio__seekable_reg(int fd, const struct stat *st)
{
	return S_ISREG(st->st_mode) && (lseek(fd, 0, SEEK_CUR) >= 0 || errno != ESPIPE);
}

/* A signalfd reads the signals pending for the thread that reads it and
 * for the process: a read made on the caller's thread would take that
 * thread's own (a pthread_kill, a fault's), which glibc's helper thread
 * never sees. An anonymous inode (no file type), named by procfs. */
bool aio__signalfd(int fd, const struct stat *st)
{
	static const char name[] = "anon_inode:[signalfd]";
	char path[32], link[sizeof(name)];
	int e = errno;
	ssize_t n;

	if (st->st_mode & S_IFMT)
		return false;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link));
	errno = e;
	return n == (ssize_t)sizeof(name) - 1 && !memcmp(link, name, sizeof(name) - 1);
}

/* A non-canonical terminal read with VMIN 0 returns what came, or 0 once
 * VTIME tenths of a second pass without input, as glibc's blocking
 * read(2) does: the VTIME (>= 0) of such a terminal, else -1. With VTIME
 * 0 the plain read never waits: it is made as the request starts. Else
 * the kernel never says the terminal is readable without input, so the
 * request runs on the serial clock (as a socket's SO_RCVTIMEO) and the
 * clock's end answers 0 (RF_TTY_TIME; with tmo_us 0: read at once). */
int aio__tty_vtime(int fd)
{
	struct termios t;

	if (tcgetattr(fd, &t) == 0 && !(t.c_lflag & ICANON) && t.c_cc[VMIN] == 0)
		return t.c_cc[VTIME];
	return -1;
}

/* Files read and written at aio_offset: regular files, block devices, and
 * character devices the kernel lets pread (/dev/zero, not a tty). */
bool aio__positional_file(int fd, const struct stat *st)
{
	return S_ISBLK(st->st_mode) || aio__seekable_reg(fd, st) ||
	       (S_ISCHR(st->st_mode) && lseek(fd, 0, SEEK_CUR) >= 0);
}

/*
 * glibc transfers with pread/pwrite (read/write when the kernel says
 * ESPIPE), so the kernel's access check covers the whole aio_nbytes
 * before any count is clamped to RW_MAX: a span that leaves the address
 * space is EFAULT, and nothing is written past the buffer. /dev/null
 * makes the same check and moves nothing; asked only for a count above
 * RW_MAX, which cb_len() clamps.
 */
bool aio__span_faults(const struct aiocb *cb, int kind)
{
	int e = errno, fd;
	ssize_t n;

	if (cb->aio_nbytes <= RW_MAX ||
	    (fd = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		return false;
	n = kind == K_READ ? pread(fd, (void *)cb->aio_buf, cb->aio_nbytes, 0) :
			     pwrite(fd, (const void *)cb->aio_buf, cb->aio_nbytes, 0);
	n = n < 0 ? -errno : n;
	close(fd);
	errno = e;
	return n == -EFAULT;
}

/* A device that seeks (/dev/kmsg) made O_NONBLOCK: glibc's pread answers
 * EAGAIN at once where the engine would wait for it; the serial path
 * makes the plain non-blocking call (its "now"). */
bool aio__nonblock_device(int fd, const struct stat *st, struct aio_hint *h)
{
	int fl;

	return S_ISCHR(st->st_mode) && (fl = aio__hint_flags(fd, h, true)) >= 0 &&
	       (fl & O_NONBLOCK);
}
