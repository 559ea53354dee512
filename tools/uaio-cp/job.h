/* SPDX-License-Identifier: MIT */
/*
 * A file's job, shared by the files that move its data: data.c (the
 * slots, the start and the end of a job), ring.c (the slot's registered
 * buffer through io_uring, and flows) and whole.c (a small file start to
 * end on a worker, in batches).
 */
#ifndef UAIO_CP_JOB_H
#define UAIO_CP_JOB_H

#include "cp.h"

#define SMALL_MAX	(128u << 10)	/* bytes: the buffer path's size, and one slot */

struct cp_job {
	struct cp_job *next;
	struct cp_run *r;
	struct cp_dir *dir;
	char *src, *dst;
	int sfd, dfd;
	struct stat st;
	mode_t omitted, create_mode;
	bool is_new, failed;
	bool meta_failed;	/* -p's metadata stopped (cp_meta_apply): no link to it */
	bool tracked;		/* later names link to dst: forgotten if it fails */
	/* dst is an existing device or FIFO: written from start to end,
	 * holes and all, by write(2), with nothing to seek or extend */
	bool stream_dst;
	/* an existing destination's inode, which a later source may be
	 * another name of (cp_wait_writer); 0: a new file */
	dev_t dst_dev;
	ino_t dst_ino;
	unsigned has;		/* CP_HAS_*: what the new file already has */
	int64_t final_size;	/* >= 0: ftruncate the destination to this */
	uaio_op op;
	uint8_t *buf;		/* this slot's SMALL_MAX bytes */
	uint64_t base, fill;	/* buffer path: the buffer holds [base, base + fill) */
	uint64_t wpos;		/* buffer path: next byte to write */
	uint64_t wend;		/* zero_holes: end of the data written so far */
	uint64_t ext_end;	/* by_extent: end of the source's data at base */
	uint64_t cursor;	/* flow path: 1 once the flow started */
	bool by_extent;		/* the source has holes to keep */
	/* whole zero blocks become holes: --sparse=always, and auto on a
	 * source with holes (cp 9.1 punches those too) */
	bool zero_holes;
	/* the size of those blocks: the destination's st_blksize, as cp's
	 * hole_size (at most SMALL_MAX, the buffer they are found in) */
	uint32_t hole;
	uint64_t counted;	/* bytes given to the progress bar */
	uint64_t flow_seen;	/* the current flow's bytes counted */
	int stage;		/* whole-file path: what failed (STAGE_*) */
	int close_err;		/* whole-file path: close(2) of the destination */
	struct cp_notes notes;	/* whole-file path: the metadata's failures */
	long res;		/* whole-file path, batched: whole_copy's result */
};

/* STAGE_COPY: a read or write that failed where cp would have been in
 * copy_file_range (cp_by_cfr) */
enum { STAGE_CREATE, STAGE_READ, STAGE_WRITE, STAGE_COPY };

/*
 * Small files handed to the loop's workers together: one hand-off (and
 * the futex wake-ups it costs) per batch, not per file, and files of one
 * directory copied one after the other by one worker, where workers side
 * by side would queue on that directory's lock to create them.
 */
struct cp_batch {
	struct cp_batch *next;
	struct cp_job *head, *tail;
	unsigned n;
	uaio_op op;
};

/* data.c: the job's end (metadata, descriptors closed, the slot back) */
void cp_job_end(struct cp_job *j);
void cp_job_release(struct cp_job *j);
void cp_job_fail(struct cp_job *j, int err, bool reading);
void cp_failed_mode(const struct cp_job *j);
void cp_job_count(struct cp_job *j, uint64_t n);
bool cp_by_cfr(const struct cp_job *j);

/* ring.c */
bool cp_short_end(const struct cp_job *j, size_t got, uint64_t pos);
void cp_buf_read(struct cp_job *j);
bool cp_hole_punch(struct cp_job *j, uint64_t to);
void cp_flow_next(struct cp_job *j);

/* whole.c */
long cp_whole_copy(void *arg);
void cp_whole_done(uaio_op *op, int res, void *data);
void cp_batch_add(struct cp_run *r, struct cp_job *j);
void cp_batch_flush(struct cp_run *r);

#endif
