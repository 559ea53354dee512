/* SPDX-License-Identifier: MIT */
/* Shared by dropin_prog.c and dropin_children.c: plain glibc <aio.h>. */
#ifndef DROPIN_PROG_H
#define DROPIN_PROG_H
#define _GNU_SOURCE
#include <aio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern volatile int last_line;

#define OK(c) do { last_line = __LINE__; if (!(c)) { fprintf(stderr, "dropin_prog:%d: %s\n", __LINE__, #c); exit(1); } } while (0)

static inline int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 2;
}

static inline ssize_t wait_for(struct aiocb *cb)
{
	const struct aiocb *l[1] = { cb };

	while (aio_error(cb) == EINPROGRESS)
		aio_suspend(l, 1, NULL);
	return aio_return(cb);
}

static inline void cb_init(struct aiocb *cb, int fd, void *buf, size_t n, off_t off)
{
	memset(cb, 0, sizeof(*cb));
	cb->aio_fildes = fd;
	cb->aio_buf = buf;
	cb->aio_nbytes = n;
	cb->aio_offset = off;
}

/* The scenarios run in a fresh process (dropin_children.c): 0 when every
 * check held, else which one failed. */
int stream_order(const int p[2]);
int table_full_child(void);
int small_table_child(void);
int select_safe_child(void);
int idle_child(void);
int idle_negative_child(void);
int fsize_late_child(void);

#endif
