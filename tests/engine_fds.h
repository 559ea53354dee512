/* SPDX-License-Identifier: MIT */
/* Header-only, system headers only (dropin_prog.c is a plain glibc
 * program): the descriptors of the kinds an I/O engine holds. */
#ifndef UAIO_TEST_ENGINE_FDS_H
#define UAIO_TEST_ENGINE_FDS_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Rings, eventfds and epoll sets this process holds; -1 without /proc. */
static inline int engine_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	char path[300], target[64];
	int n = 0;
	ssize_t len;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		if ((len = readlink(path, target, sizeof(target) - 1)) < 0)
			continue;
		target[len] = 0;
		n += !strcmp(target, "anon_inode:[io_uring]") ||
		     !strcmp(target, "anon_inode:[eventfd]") ||
		     !strcmp(target, "anon_inode:[eventpoll]");
	}
	closedir(d);
	return n;
}

#endif
