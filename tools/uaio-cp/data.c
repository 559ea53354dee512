/* SPDX-License-Identifier: MIT */
/*
 * File data: one job per regular file, up to -j at a time on the loop.
 *
 * Small files (the common case in a tree) go through the job's own
 * registered buffer: the destination is created by an io_uring openat
 * (on a kernel worker, so creation overlaps with the walk), then fixed
 * reads and writes. Larger files are flows (flow.h: FICLONE or
 * copy_file_range where the file systems allow, registered-buffer chunks
 * otherwise). --sparse=always needs to look at the bytes, so it takes the
 * buffer path whatever the size; so does a source with holes under
 * --sparse=auto, whose data cp 9.1 also scans for zero blocks to punch
 * (its holes are skipped with SEEK_DATA, not read).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "cp.h"

#define SMALL_MAX	(128u << 10)	/* bytes: the buffer path's size, and one slot */
#define HOLE_BLOCK	4096u		/* --sparse=always: zero runs this aligned become holes */

struct cp_job {
	struct cp_job *next;
	struct cp_run *r;
	struct cp_dir *dir;
	char *src, *dst;
	int sfd, dfd;
	struct stat st;
	mode_t omitted, create_mode;
	bool is_new, failed;
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
	uint64_t cursor;	/* flow path: 1 once the flow started */
	bool by_extent;		/* the source has holes to keep */
	/* whole zero blocks become holes: --sparse=always, and auto on a
	 * source with holes (cp 9.1 punches those too) */
	bool zero_holes;
	uint64_t counted;	/* bytes given to the progress bar */
	uint64_t flow_seen;	/* the current flow's bytes counted */
	int stage;		/* whole-file path: what failed (STAGE_*) */
	int close_err;		/* whole-file path: close(2) of the destination */
	struct cp_notes notes;	/* whole-file path: the metadata's failures */
	long res;		/* whole-file path, batched: whole_copy's result */
};

enum { STAGE_CREATE, STAGE_READ, STAGE_WRITE };

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

int cp_data_init(struct cp_run *r)
{
	size_t len = (size_t)r->o.jobs * SMALL_MAX;

	r->bufs = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->bufs == MAP_FAILED) {
		r->bufs = NULL;
		return -errno;
	}
	/* Without a registration (RLIMIT_MEMLOCK) plain reads and writes do. */
	r->buf_index = uaio_buf_register(r->l, r->bufs, len);
	r->jobs = calloc(r->o.jobs, sizeof(*r->jobs));
	r->batches = calloc(r->o.jobs, sizeof(*r->batches));
	if (!r->jobs || !r->batches)
		return -ENOMEM;
	for (unsigned i = 0; i < r->o.jobs; i++) {
		r->batches[i].next = r->free_batches;
		r->free_batches = &r->batches[i];
	}
	/* A quarter of the slots: measured on 20 000 small files, 2 CPUs,
	 * against 1/16 and 1/2 (docs/benchmarks.md, cp) */
	r->batch_max = r->o.jobs / 4 ? r->o.jobs / 4 : 1;
	for (unsigned i = 0; i < r->o.jobs; i++) {
		struct cp_job *j = &r->jobs[i];

		j->r = r;
		j->buf = r->bufs + (size_t)i * SMALL_MAX;
		j->next = r->free_jobs;
		r->free_jobs = j;
	}
	r->clone_dev = (dev_t)-1;
	return 0;
}

void cp_data_fini(struct cp_run *r)
{
	free(r->batches);
	r->batches = r->free_batches = NULL;
	free(r->jobs);
	r->jobs = NULL;
	r->free_jobs = NULL;
	if (r->bufs) {
		if (r->buf_index >= 0)
			uaio_buf_unregister(r->l, r->buf_index);
		munmap(r->bufs, (size_t)r->o.jobs * SMALL_MAX);
	}
}

static void batch_flush(struct cp_run *r);

/* One turn of the loop; files still gathering in a batch go out first,
 * or the wait could be for them. */
static int run_once(struct cp_run *r)
{
	if (r->pending)
		batch_flush(r);
	return uaio_loop_run_once(r->l, -1);
}

void cp_drain(struct cp_run *r, unsigned want)
{
	while (r->running >= want && r->running > 0)
		if (run_once(r) < 0)
			break;
}

static bool writing(const struct cp_run *r, const char *dst)
{
	for (unsigned i = 0; r->running && i < r->o.jobs; i++)
		if (r->jobs[i].dst && strcmp(r->jobs[i].dst, dst) == 0)
			return true;
	return false;
}

bool cp_reading(const struct cp_run *r, dev_t dev, ino_t ino)
{
	for (unsigned i = 0; r->running && i < r->o.jobs; i++)
		if (r->jobs[i].src && r->jobs[i].st.st_dev == dev && r->jobs[i].st.st_ino == ino)
			return true;
	return false;
}

/*
 * A source that is another name of a destination a job is still writing
 * (a hard link from the source tree into the one being overwritten) is
 * read once that job is done, as cp, copying one file after the other,
 * reads it. true when it waited: the source's size may have changed.
 */
bool cp_wait_writer(struct cp_run *r, const struct stat *st)
{
	bool waited = false;

	for (unsigned i = 0; r->running && i < r->o.jobs; i++) {
		const struct cp_job *j = &r->jobs[i];

		while (j->dst && j->dst_ino == st->st_ino && j->dst_dev == st->st_dev &&
		       run_once(r) >= 0)
			waited = true;
	}
	return waited;
}

/* The other way: before an existing destination is truncated, the jobs
 * reading it (as another name of their source) are let finish. */
void cp_wait_reader(struct cp_run *r, const char *dst)
{
	struct stat ds;

	if (!r->running || stat(dst, &ds) < 0)
		return;
	while (cp_reading(r, ds.st_dev, ds.st_ino))
		if (run_once(r) < 0)
			break;
}

void cp_wait_file(struct cp_run *r, const char *dst)
{
	while (writing(r, dst))
		if (run_once(r) < 0)
			break;
}

static void count(struct cp_job *j, uint64_t n)
{
	j->r->bytes_done += n;
	j->counted += n;
	cp_bar_tick(j->r);
}

/* ---------------------------------------------------------------- end */

static void job_release(struct cp_job *j);

/* A new file that failed keeps the mode cp made it with: under -p's
 * owner, without group and other bits, which a file made already ours
 * (CP_HAS_OWNER) was given at once. Any thread. */
static void failed_mode(const struct cp_job *j)
{
	if (j->is_new && (j->has & CP_HAS_OWNER) && (j->create_mode & 077))
		(void)!fchmod(j->dfd, j->create_mode & ~(mode_t)077 & ~j->r->umask);
}

static void job_end(struct cp_job *j)
{
	struct cp_run *r = j->r;

	if (!j->failed && j->final_size >= 0 &&
	    ftruncate(j->dfd, j->final_size) < 0) {
		cp_err(r, errno, "failed to extend %s", q(r, j->dst));
		j->failed = true;
	}
	if (j->failed) {
		/* Never a destination that looks whole but is not: with
		 * several chunks in flight the written part need not be a
		 * prefix, so none of it is kept. */
		(void)!ftruncate(j->dfd, 0);
		failed_mode(j);
	} else {
		cp_meta_apply(r, j->sfd, j->src, j->dfd, j->dst, &j->st, j->is_new,
			      j->omitted, -1, j->has, &j->notes);
		cp_notes_report(r, &j->notes, j->dst);
	}
	if (close(j->dfd) < 0 && !j->failed)
		cp_err(r, errno, "failed to close %s", q(r, j->dst));
	job_release(j);
}

/* The slot back, the directory's reference dropped. A file that failed
 * is forgotten, as cp forgets it, so the source's other names are
 * copied anew rather than linked to it. */
static void job_release(struct cp_job *j)
{
	struct cp_run *r = j->r;

	if (j->failed && j->tracked)
		seen_forget(&r->links, j->st.st_dev, j->st.st_ino, j->dst);

	if (j->sfd >= 0)
		close(j->sfd);
	r->files_done++;
	if ((uint64_t)j->st.st_size > j->counted)
		r->bytes_done += (uint64_t)j->st.st_size - j->counted;
	cp_bar_tick(r);
	cp_dir_put(r, j->dir);
	free(j->src);
	free(j->dst);
	j->src = j->dst = NULL;
	j->next = r->free_jobs;
	r->free_jobs = j;
	r->running--;
}

static void job_fail(struct cp_job *j, int err, bool reading)
{
	cp_err(j->r, -err, reading ? "error reading %s" : "error writing %s",
	       q(j->r, reading ? j->src : j->dst));
	j->failed = true;
	job_end(j);
}

/* -------------------------------------------------------- buffer path */

/* A short read that reached the size fstat gave is the end: one read(2)
 * fewer per small file (a file still growing is copied as it was when its
 * copy began). Files that report no size (/proc, pipes, devices without
 * -R) are read until read(2) says 0. */
static bool short_end(const struct cp_job *j, size_t got, uint64_t pos)
{
	return got < SMALL_MAX && j->st.st_size > 0 &&
	       S_ISREG(j->st.st_mode) && pos >= (uint64_t)j->st.st_size;
}

static void buf_read(struct cp_job *j);

/* Bytes of hole at pos (an aligned block of zeros, or the zero tail of
 * the file, which the final ftruncate makes a hole as cp does), else 0. */
static uint64_t hole_at(const struct cp_job *j, uint64_t pos, uint64_t end)
{
	uint64_t n = end - pos < HOLE_BLOCK ? end - pos : HOLE_BLOCK;
	const uint8_t *p = j->buf + (pos - j->base);

	if (pos % HOLE_BLOCK || !n)
		return 0;
	if (n < HOLE_BLOCK && end < (uint64_t)j->st.st_size)
		return 0;
	for (uint64_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return n;
}

static void on_write(uaio_op *op, int res, void *data);

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
		for (uint64_t b = (j->wpos / HOLE_BLOCK + 1) * HOLE_BLOCK; b < end;
		     b += HOLE_BLOCK)
			if (hole_at(j, b, end)) {
				run_end = b;
				break;
			}
	}
	if (j->wpos >= end) {
		buf_read(j);
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
		job_fail(j, ret, false);
}

static void on_write(uaio_op *op, int res, void *data)
{
	struct cp_job *j = data;

	(void)op;
	if (res < 0) {
		job_fail(j, res, false);
		return;
	}
	if (res == 0) {
		job_fail(j, -EIO, false);
		return;
	}
	j->wpos += (unsigned)res;
	count(j, (unsigned)res);
	buf_write(j);
}

static void on_read(uaio_op *op, int res, void *data)
{
	struct cp_job *j = data;

	(void)op;
	if (res < 0) {
		job_fail(j, res, true);
		return;
	}
	j->fill = (unsigned)res;
	if (res == 0) {
		if (j->zero_holes)
			j->final_size = (int64_t)j->base;
		job_end(j);
		return;
	}
	j->wpos = j->base;
	buf_write(j);
}

static void buf_read(struct cp_job *j)
{
	struct cp_run *r = j->r;
	int ret;

	j->base += j->fill;
	if (j->fill && short_end(j, j->fill, j->base)) {
		j->fill = 0;
		on_read(&j->op, 0, j);
		return;
	}
	j->fill = 0;
	if (j->by_extent) {
		/* The source's holes are not read: the next data, or the end
		 * (the final ftruncate makes the rest a hole). */
		off_t d = lseek(j->sfd, (off_t)j->base, SEEK_DATA);

		if (d < 0 && errno == ENXIO) {
			d = lseek(j->sfd, 0, SEEK_END);
			if (d > (off_t)j->base)
				j->base = (uint64_t)d;
			on_read(&j->op, 0, j);
			return;
		}
		if (d > (off_t)j->base)
			j->base = (uint64_t)d;
	}
	if (r->buf_index >= 0)
		ret = uaio_op_read_fixed(r->l, &j->op, j->sfd, j->buf, SMALL_MAX,
					 (int64_t)j->base, r->buf_index, on_read, j);
	else
		ret = uaio_op_read(r->l, &j->op, j->sfd, j->buf, SMALL_MAX,
				   (int64_t)j->base, on_read, j);
	if (ret < 0)
		job_fail(j, ret, true);
}

/* ---------------------------------------------------------- flow path */

/* A large file with no hole to keep goes as one flow (FICLONE or
 * copy_file_range where they apply); cursor says it has been started. */

static void next_extent(struct cp_job *j);

static void on_flow_progress(uaio_flow *f, uint64_t bytes, void *data)
{
	struct cp_job *j = data;

	(void)f;
	if (bytes > j->flow_seen) {
		count(j, bytes - j->flow_seen);
		j->flow_seen = bytes;
	}
}

static void on_flow_done(uaio_flow *f, int64_t res, int side, void *data)
{
	struct cp_job *j = data;

	(void)f;
	if (res < 0) {
		job_fail(j, (int)res, side == UAIO_FLOW_SIDE_SRC);
		return;
	}
	on_flow_progress(f, (uint64_t)res, j);
	next_extent(j);
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
		job_fail(j, ret, false);
}

static void next_extent(struct cp_job *j)
{
	if (j->cursor == 0) {
		j->cursor = 1;
		start_flow(j, 0, UAIO_FLOW_EOF);
	} else {
		job_end(j);
	}
}

/* ---------------------------------------------------- whole-file path */

/* create, read, write */
static long whole_data(struct cp_job *j)
{
	uint64_t pos = 0;

	j->stage = STAGE_CREATE;
	if (j->dfd < 0) {
		const char *name;
		int at = cp_at(j->dir, true, j->dst, &name);

		j->dfd = openat(at, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				j->create_mode);
		if (j->dfd < 0)
			return -errno;
	}
	for (;;) {
		ssize_t n, w;

		j->stage = STAGE_READ;
		n = S_ISREG(j->st.st_mode) ? pread(j->sfd, j->buf, SMALL_MAX, (off_t)pos) :
					     read(j->sfd, j->buf, SMALL_MAX);
		if (n <= 0)
			return n < 0 ? -errno : 0;
		j->stage = STAGE_WRITE;
		for (ssize_t off = 0; off < n; off += w) {
			w = j->stream_dst ? write(j->dfd, j->buf + off, (size_t)(n - off)) :
					    pwrite(j->dfd, j->buf + off, (size_t)(n - off),
						   (off_t)pos + off);
			if (w < 0)
				return -errno;
			if (w == 0)
				return -EIO;
		}
		pos += (uint64_t)n;
		if (short_end(j, (size_t)n, pos))
			return 0;
	}
}

/* A small file start to end in one call: the data, then what job_end
 * does (the metadata, a failed copy emptied, both descriptors closed), so
 * a file costs one hand-off and the loop's thread, which walks the tree,
 * keeps only the walk. Runs on a worker (SMALL_WORK) or on the loop's
 * thread (SMALL_INLINE); touches only the job, and reads r's options. */
static long whole_copy(void *arg)
{
	struct cp_job *j = arg;
	long ret = whole_data(j);

	if (j->dfd >= 0) {
		if (ret < 0 && !j->stream_dst) {
			(void)!ftruncate(j->dfd, 0);
			failed_mode(j);
		} else
			cp_meta_apply(j->r, j->sfd, j->src, j->dfd, j->dst, &j->st,
				      j->is_new, j->omitted, -1, j->has, &j->notes);
		if (close(j->dfd) < 0 && ret >= 0)
			j->close_err = errno;
		j->dfd = -1;
	}
	close(j->sfd);
	j->sfd = -1;
	return ret;
}

static void on_whole(uaio_op *op, int res, void *data)
{
	struct cp_job *j = data;
	struct cp_run *r = j->r;

	(void)op;
	j->failed = res < 0;
	if (res < 0 && j->stage == STAGE_CREATE)
		cp_create_failed(r, -res, j->dst);
	else if (res < 0)
		cp_err(r, -res, j->stage == STAGE_READ ? "error reading %s" : "error writing %s",
		       q(r, j->stage == STAGE_READ ? j->src : j->dst));
	cp_notes_report(r, &j->notes, j->dst);
	if (j->close_err)
		cp_err(r, j->close_err, "failed to close %s", q(r, j->dst));
	job_release(j);
}

static long batch_copy(void *arg)
{
	struct cp_batch *b = arg;

	for (struct cp_job *j = b->head; j; j = j->next)
		j->res = whole_copy(j);
	return 0;
}

static void on_batch(uaio_op *op, int res, void *data)
{
	struct cp_batch *b = data;
	struct cp_run *r = b->head->r;
	struct cp_job *j = b->head, *next;

	(void)op;
	(void)res;
	b->head = b->tail = NULL;
	b->n = 0;
	b->next = r->free_batches;
	r->free_batches = b;
	r->batches_out--;
	for (; j; j = next) {
		next = j->next;	/* on_whole gives the slot back */
		on_whole(&j->op, (int)j->res, j);
	}
}

static void batch_flush(struct cp_run *r)
{
	struct cp_batch *b = r->pending;

	r->pending = NULL;
	r->batches_out++;
	if (uaio_op_work(r->l, &b->op, batch_copy, b, on_batch, b) < 0) {
		batch_copy(b);	/* no worker: here */
		on_batch(&b->op, 0, b);
	}
}

/* j joins the batch being gathered, which goes out once full, or at once
 * while the workers have none (nothing to wait for then). */
static void batch_add(struct cp_run *r, struct cp_job *j)
{
	struct cp_batch *b = r->pending;

	if (!b) {
		b = r->pending = r->free_batches;
		r->free_batches = b->next;
		b->head = b->tail = NULL;
		b->n = 0;
	}
	j->next = NULL;
	if (b->tail)
		b->tail->next = j;
	else
		b->head = j;
	b->tail = j;
	if (++b->n >= r->batch_max || !r->batches_out)
		batch_flush(r);
}

/* Whether FICLONE is not to be tried: not asked for, not a regular file
 * (but --reflink=always tries, and fails, as cp 9.1 does), or (under
 * auto) this source device refused it before. */
static bool no_clone(const struct cp_job *j)
{
	const struct cp_run *r = j->r;

	if (r->o.reflink == REFLINK_ALWAYS)
		return false;
	return r->o.reflink == REFLINK_NEVER || r->o.sparse != SPARSE_AUTO ||
	       !S_ISREG(j->st.st_mode) || j->stream_dst ||
	       (r->o.reflink == REFLINK_AUTO && r->clone_dev == j->st.st_dev &&
		!r->clone_ok);
}

/* -------------------------------------------------------------- start */

/* cp's "crude heuristic" for --sparse=auto: fewer blocks than the size
 * needs, so the holes are found with SEEK_DATA / SEEK_HOLE and kept. */
static bool looks_sparse(const struct cp_job *j)
{
	/* cp 9.1's test (ST_NBLOCKS < st_size / ST_NBLOCKSIZE), whole
	 * blocks: a file under 512 bytes never looks sparse */
	return j->r->o.sparse == SPARSE_AUTO && S_ISREG(j->st.st_mode) &&
	       (uint64_t)j->st.st_blocks < (uint64_t)j->st.st_size / 512;
}

/* FICLONE for a small file, where this source device took one before. */
static int try_clone(struct cp_job *j)
{
	struct cp_run *r = j->r;

	if (no_clone(j))
		return -1;
	if (ioctl(j->dfd, FICLONE, j->sfd) == 0) {
		r->clone_dev = j->st.st_dev;
		r->clone_ok = true;
		return 0;
	}
	if (r->o.reflink == REFLINK_ALWAYS) {
		cp_err(r, errno, "failed to clone %s from %s", q(r, j->dst), q(r, j->src));
		j->failed = true;
		return 1;
	}
	r->clone_dev = j->st.st_dev;
	r->clone_ok = false;
	return -1;
}

static void begin_data(struct cp_job *j)
{
	struct cp_run *r = j->r;
	int c = try_clone(j);

	if (c >= 0) {
		job_end(j);
		return;
	}
	j->by_extent = looks_sparse(j);
	j->zero_holes = r->o.sparse == SPARSE_ALWAYS || j->by_extent;
	if ((uint64_t)j->st.st_size <= SMALL_MAX || j->zero_holes ||
	    !S_ISREG(j->st.st_mode)) {
		j->base = j->fill = 0;
		buf_read(j);
		return;
	}
	next_extent(j);
}

static void on_open(uaio_op *op, int res, void *data)
{
	struct cp_job *j = data;

	(void)op;
	if (res < 0) {
		cp_create_failed(j->r, -res, j->dst);
		j->failed = true;
		job_release(j);
		return;
	}
	j->dfd = res;
	begin_data(j);
}

int cp_file(struct cp_run *r, struct cp_dir *dir, const char *src,
	    const char *dst, int src_fd, const struct stat *st, int dst_fd,
	    bool is_new, mode_t create_mode, mode_t omitted, unsigned has,
	    bool tracked)
{
	struct cp_job *j;
	int ret;

	cp_drain(r, r->o.jobs);
	j = r->free_jobs;
	r->free_jobs = j->next;
	r->running++;
	j->dir = dir;
	if (dir)
		dir->refs++;
	j->src = strdup(src);
	j->dst = strdup(dst);
	j->sfd = src_fd;
	j->dfd = dst_fd;
	j->st = *st;
	j->omitted = omitted;
	j->is_new = is_new;
	j->has = has;
	j->tracked = tracked;
	j->stream_dst = false;
	j->dst_dev = 0;
	j->dst_ino = 0;
	if (dst_fd >= 0) {
		struct stat ds;

		/* cp writes a device or FIFO as a stream: every byte, in order */
		if (fstat(dst_fd, &ds) == 0) {
			j->stream_dst = !S_ISREG(ds.st_mode);
			j->dst_dev = ds.st_dev;
			j->dst_ino = ds.st_ino;
		}
	}
	j->failed = j->by_extent = j->zero_holes = false;
	j->final_size = -1;
	j->close_err = 0;
	j->cursor = j->counted = 0;
	j->create_mode = create_mode;
	/* pread(2) cannot read a fifo or a device: those take the ring path. */
	if ((j->stream_dst && r->o.reflink != REFLINK_ALWAYS) ||
	    ((uint64_t)st->st_size <= SMALL_MAX && r->small != SMALL_URING &&
	     S_ISREG(st->st_mode) &&
	     r->o.sparse != SPARSE_ALWAYS && !looks_sparse(j) && no_clone(j))) {
		if (r->small == SMALL_INLINE)
			on_whole(&j->op, (int)whole_copy(j), j);
		else
			batch_add(r, j);
		return 0;
	}
	if (dst_fd >= 0) {
		begin_data(j);
		return 0;
	}
	{
		const char *name;
		int at = cp_at(j->dir, true, j->dst, &name);

		ret = uaio_op_openat(r->l, &j->op, at, name,
				     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, create_mode,
				     on_open, j);
	}
	if (ret < 0)
		on_open(&j->op, ret, j);
	return 0;
}
