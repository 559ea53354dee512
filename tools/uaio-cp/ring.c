/* SPDX-License-Identifier: MIT */
/*
 * A job through the ring: the slot's registered buffer read and written
 * by io_uring ops (files that take no whole-file copy: --sparse work,
 * devices, fifos, the uring small-file strategy), and larger files as one
 * flow.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "job.h"

/* -------------------------------------------------------- buffer path */

/* A short read that reached the size fstat gave is the end: one read(2)
 * fewer per small file (a file still growing is copied as it was when its
 * copy began). Files that report no size (/proc, pipes, devices without
 * -R) are read until read(2) says 0. */
bool cp_short_end(const struct cp_job *j, size_t got, uint64_t pos)
{
	return got < SMALL_MAX && j->st.st_size > 0 &&
	       S_ISREG(j->st.st_mode) && pos >= (uint64_t)j->st.st_size;
}

/* Bytes of hole at pos (an aligned block of zeros, or the zero tail of
 * the file, which the final ftruncate makes a hole as cp does), else 0. */
static uint64_t hole_at(const struct cp_job *j, uint64_t pos, uint64_t end)
{
	uint64_t n = end - pos < j->hole ? end - pos : j->hole;
	const uint8_t *p = j->buf + (pos - j->base);

	if (pos % j->hole || !n)
		return 0;
	if (n < j->hole && end < (uint64_t)j->st.st_size)
		return 0;
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return n;
}

static void on_write(uaio_op *op, int res, void *data);

/* The bytes skipped as a hole since the data before are made one, as cp
 * 9.1 punches them (all under --sparse=always; under auto, the zero runs
 * in the source's data: cp_buf_read): a file system that allocates ahead
 * of the writes (XFS's speculative preallocation) kept them allocated,
 * as data to SEEK_DATA. Where nothing is allocated it changes nothing; where
 * punching is not supported it is skipped, and any other failure fails
 * the file with cp's "error deallocating" (false). */
bool cp_hole_punch(struct cp_job *j, uint64_t to)
{
	uint64_t from = j->wend;

	j->wend = to > j->wend ? to : j->wend;
	if (to > from &&
	    fallocate(j->dfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)from, (off_t)(to - from)) < 0 &&
	    errno != EOPNOTSUPP && errno != ENOSYS) {
		cp_err(j->r, errno, _("error deallocating %s"), q(j->r, j->dst));
		return false;
	}
	return true;
}

/* Writes the next run of [wpos, base + fill); with zero_holes whole zero
 * blocks are skipped, to become holes. */
static void buf_write(struct cp_job *j)
{
	struct cp_run *r = j->r;
	uint64_t end = j->base + j->fill, run_end = end;
	int ret;

	if (j->zero_holes) {
		uint64_t h;

		while (j->wpos < end && (h = hole_at(j, j->wpos, end)))
			j->wpos += h;
		for (uint64_t b = (j->wpos / j->hole + 1) * j->hole; b < end;
		     b += j->hole)
			if (hole_at(j, b, end)) {
				run_end = b;
				break;
			}
	}
	if (j->wpos >= end) {
		cp_buf_read(j);
		return;
	}
	if (j->zero_holes && !cp_hole_punch(j, j->wpos)) {
		j->failed = true;
		cp_job_end(j);
		return;
	}
	if (r->buf_index >= 0)
		ret = uaio_op_write_fixed(r->l, &j->op, j->dfd,
					  j->buf + (j->wpos - j->base),
					  (size_t)(run_end - j->wpos), (int64_t)j->wpos,
					  r->buf_index, on_write, j);
	else
		ret = uaio_op_write(r->l, &j->op, j->dfd, j->buf + (j->wpos - j->base),
				    (size_t)(run_end - j->wpos), (int64_t)j->wpos,
				    on_write, j);
	if (ret < 0)
		cp_job_fail(j, ret, false);
}

static void on_write(uaio_op *op, int res, void *data)
{
	struct cp_job *j = data;

	(void)op;
	if (res < 0) {
		cp_job_fail(j, res, false);
		return;
	}
	if (res == 0) {		/* took nothing: full, as cp's full_write says */
		cp_job_fail(j, -ENOSPC, false);
		return;
	}
	j->wpos += (unsigned)res;
	j->wend = j->wpos;
	cp_job_count(j, (unsigned)res);
	buf_write(j);
}

static void on_read(uaio_op *op, int res, void *data)
{
	struct cp_job *j = data;

	(void)op;
	if (res < 0) {
		cp_job_fail(j, res, true);
		return;
	}
	j->fill = (unsigned)res;
	if (res == 0) {
		if (j->zero_holes)
			j->final_size = (int64_t)j->base;
		cp_job_end(j);
		return;
	}
	j->wpos = j->base;
	buf_write(j);
}

void cp_buf_read(struct cp_job *j)
{
	struct cp_run *r = j->r;
	size_t len = SMALL_MAX;
	int ret;

	j->base += j->fill;
	if (j->fill && cp_short_end(j, j->fill, j->base)) {
		j->fill = 0;
		on_read(&j->op, 0, j);
		return;
	}
	j->fill = 0;
	if (j->by_extent) {
		/* The source's holes are not read: the next data, or the end
		 * (the final ftruncate makes the rest a hole). */
		off_t d = lseek(j->sfd, (off_t)j->base, SEEK_DATA);
		bool eof = d < 0 && errno == ENXIO;

		if (eof)
			d = lseek(j->sfd, 0, SEEK_END);
		if (d > (off_t)j->base) {
			/* cp 9.1 punches a hole of the source only under
			 * --sparse=always (create_hole); under auto it seeks
			 * over it, and what the file system allocated ahead
			 * there (XFS) stays. The zero run before it is
			 * punched, as cp's sparse_copy punches an extent's. */
			if (r->o.sparse != SPARSE_ALWAYS) {
				if (!cp_hole_punch(j, j->base)) {
					j->failed = true;
					cp_job_end(j);
					return;
				}
				j->wend = (uint64_t)d;
			}
			j->base = (uint64_t)d;
		}
		if (eof) {
			on_read(&j->op, 0, j);
			return;
		}
		/* No further than this data's end, as cp reads an extent:
		 * zeros past it are the source's hole, not a zero run. */
		if (j->base >= j->ext_end) {
			off_t h = lseek(j->sfd, (off_t)j->base, SEEK_HOLE);

			j->ext_end = h > (off_t)j->base ? (uint64_t)h : UINT64_MAX;
		}
		if (j->ext_end - j->base < len)
			len = (size_t)(j->ext_end - j->base);
	}
	if (r->buf_index >= 0)
		ret = uaio_op_read_fixed(r->l, &j->op, j->sfd, j->buf, len,
					 (int64_t)j->base, r->buf_index, on_read, j);
	else
		ret = uaio_op_read(r->l, &j->op, j->sfd, j->buf, len,
				   (int64_t)j->base, on_read, j);
	if (ret < 0)
		cp_job_fail(j, ret, true);
}

/* ---------------------------------------------------------- flow path */

/* A large file with no hole to keep goes as one flow (FICLONE or
 * copy_file_range where they apply); cursor says it has been started. */

static void on_flow_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	struct cp_job *j = data;

	(void)f;
	if (bytes > j->flow_seen) {
		cp_job_count(j, bytes - j->flow_seen);
		j->flow_seen = bytes;
	}
}

static void on_flow_done(uaio_flow *f, int64_t res, int side, void *data)
{
	struct cp_job *j = data;

	if (res < 0 && !strcmp(uaio_flow_method(f), "copy_file_range")) {
		cp_copy_err(j->r, (int)-res, j->src, j->dst);
		j->failed = true;
		cp_job_end(j);
		return;
	}
	if (res < 0) {
		cp_job_fail(j, (int)res, side == UAIO_FLOW_SIDE_SRC);
		return;
	}
	on_flow_progress(f, (uint64_t)res, j);
	cp_flow_next(j);
}

static void start_flow(struct cp_job *j, uint64_t off, uint64_t len)
{
	struct cp_run *r = j->r;
	struct uaio_flow_params p = {
		.src = { .type = UAIO_FLOW_FD, .fd = j->sfd, .off = (int64_t)off, .buf_index = -1 },
		.dst = { .type = UAIO_FLOW_FD, .fd = j->dfd, .off = (int64_t)off, .buf_index = -1 },
		.len = len,
		.mode = r->o.reflink == REFLINK_NEVER || r->o.sparse == SPARSE_NEVER ?
			UAIO_FLOW_KBUF : UAIO_FLOW_AUTO,
		.progress_ns = 100000000,
		.progress = on_flow_progress,
		.done = on_flow_done,
		.data = j,
	};
	uaio_flow *f;
	int ret;

	j->flow_seen = 0;
	ret = uaio_flow_start(r->l, &p, &f);
	if (ret < 0)
		cp_job_fail(j, ret, false);
}

void cp_flow_next(struct cp_job *j)
{
	if (j->cursor == 0) {
		j->cursor = 1;
		start_flow(j, 0, UAIO_FLOW_EOF);
	} else {
		cp_job_end(j);
	}
}
