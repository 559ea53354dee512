/* SPDX-License-Identifier: MIT */
/*
 * Whether a file range is in the page cache, by cachestat(2): what lets a
 * flow (and a server deciding how to send a file) make a call inline that
 * would otherwise wait for the disk.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flow/engine.h"

#ifndef __NR_cachestat
#define __NR_cachestat	451	/* Linux 6.5; one number on every architecture */
#endif

struct cs_range { uint64_t off, len; };
struct cs_stat { uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted,
		 nr_recently_evicted; };

UAIO_API int uaio_file_cached(int fd, uint64_t off, uint64_t len)
{
	uint64_t page = (uint64_t)getpagesize();	/* cachestat counts these */
	struct cs_range rg = { off, len };
	struct cs_stat cs;
	uint64_t pages;

	if (!len)
		return 1;
	if (off + len < off)
		return -EINVAL;
	pages = (off + len - 1) / page - off / page + 1;	/* no wrap near 2^64 */
	if (syscall(__NR_cachestat, fd, &rg, &cs, 0) < 0)
		return -errno;
	return cs.nr_cache >= pages;
}
