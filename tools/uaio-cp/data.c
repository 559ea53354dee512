/* SPDX-License-Identifier: MIT */
/*
 * File data: one job per regular file, up to -j at a time on the loop.
 *
 * Small files (the common case in a tree) are copied whole on the loop's
 * workers, in batches (whole.c). Other files go through the job's own
 * registered buffer or a flow (ring.c): the destination is created by an
 * io_uring openat (on a kernel worker, so creation overlaps with the
 * walk), then fixed reads and writes, or a flow (flow.h: FICLONE or
 * copy_file_range where the file systems allow, splice or registered-
 * buffer chunks otherwise). --sparse=always needs to look at the bytes,
 * so it takes the buffer path whatever the size; so does a source with
 * holes under --sparse=auto, whose data cp 9.1 also scans for zero blocks
 * to punch (its holes are skipped with SEEK_DATA, not read).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "job.h"

/* Registers the job buffers, once: for files read from disk through the
 * ring, where each fixed read then skips pinning its pages. Else (-1,
 * or RLIMIT_MEMLOCK refused it) plain reads and writes do. */
static void buf_want(struct cp_run *r)
{
	if (r->buf_index == BUF_UNREGISTERED) {
		int i = uaio_buf_register(r->l, r->bufs, (size_t)r->o.jobs * SMALL_MAX);

		r->buf_index = i < 0 ? -1 : i;
	}
}

int cp_data_init(struct cp_run *r)
{
	size_t len = (size_t)r->o.jobs * SMALL_MAX;

	r->bufs = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->bufs == MAP_FAILED) {
		r->bufs = NULL;
		return -errno;
	}
	/* Registered once a file is read from disk (buf_want): pinning
	 * them cost about 0.6 ms of every run (docs/cp.md), which a copy of
	 * cached files (whole on workers, or by flow) never earns back. */
	r->buf_index = BUF_UNREGISTERED;
	if (r->small == SMALL_URING)
		buf_want(r);
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
	r->clone_dev = r->clone_ddev = (dev_t)-1;
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

/* One turn of the loop; files still gathering in a batch go out first,
 * or the wait could be for them. */
static int run_once(struct cp_run *r)
{
	if (r->pending)
		cp_batch_flush(r);
	return uaio_loop_run_once(r->l, -1);
}

void cp_drain(struct cp_run *r, unsigned want)
{
	while (r->running >= want && r->running > 0)
		if (run_once(r) < 0)
			break;
}

bool cp_fd_wait(struct cp_run *r, int err)
{
	unsigned n = r->running;

	if ((err != EMFILE && err != ENFILE) || !n)
		return false;
	cp_drain(r, n);
	errno = err;		/* the open's, for its message if this was all */
	return r->running < n;
}

static bool writing(const struct cp_run *r, const char *dst)
{
	for (unsigned i = 0; r->running && i < r->o.jobs; i++)
		if (r->jobs[i].dst && strcmp(r->jobs[i].dst, dst) == 0)
			return true;
	return false;
}

/* Whether a running job makes files in the directory st names: read
 * now, it would miss them (cp -r . sub, where sub is the destination and
 * inside the source; -L with a link back to the destination), where cp,
 * one file after the other, finds them there. */
bool cp_jobs_write_into(struct cp_run *r, const struct stat *st)
{
	for (unsigned i = 0; r->running && i < r->o.jobs; i++) {
		struct cp_dir *d = r->jobs[i].dst ? r->jobs[i].dir : NULL;
		struct stat ds;

		if (!d)
			continue;
		if (!d->dst_known && cp_dst_stat(r, d->dst, &ds, AT_SYMLINK_NOFOLLOW) == 0) {
			d->dst_dev = ds.st_dev;
			d->dst_ino = ds.st_ino;
			d->dst_known = true;
		}
		if (d->dst_known && d->dst_dev == st->st_dev && d->dst_ino == st->st_ino)
			return true;
	}
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

	if (!r->running || cp_dst_stat(r, dst, &ds, 0) < 0)
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

void cp_job_count(struct cp_job *j, uint64_t n)
{
	j->r->bytes_done += n;
	j->counted += n;
	cp_bar_tick(j->r);
}

/* ---------------------------------------------------------------- end */

/* A new file that failed keeps the mode cp made it with: under -p's
 * owner, without group and other bits, which a file made already ours
 * (CP_HAS_OWNER) was given at once. Any thread. */
void cp_failed_mode(const struct cp_job *j)
{
	if (j->is_new && (j->has & CP_HAS_OWNER) && (j->create_mode & 077))
		(void)!fchmod(j->dfd, j->create_mode & ~(mode_t)077 & ~j->r->umask);
}

void cp_job_end(struct cp_job *j)
{
	struct cp_run *r = j->r;

	if (!j->failed && j->final_size >= 0 &&
	    ftruncate(j->dfd, j->final_size) < 0) {
		cp_err(r, errno, _("failed to extend %s"), q(r, j->dst));
		j->failed = true;
	}
	if (!j->failed && j->zero_holes && j->final_size >= 0 &&
	    !cp_hole_punch(j, (uint64_t)j->final_size))	/* the tail */
		j->failed = true;
	if (j->failed) {
		/* Never a destination that looks whole but is not: with
		 * several chunks in flight the written part need not be a
		 * prefix, so none of it is kept. */
		(void)!ftruncate(j->dfd, 0);
		cp_failed_mode(j);
	} else {
		j->meta_failed = !cp_meta_apply(r, j->sfd, j->src, j->dfd, j->dst, &j->st,
						j->is_new, j->omitted, -1, j->has, &j->notes);
		cp_notes_report(r, &j->notes, j->dst);
	}
	if (close(j->dfd) < 0 && !j->failed)
		cp_err(r, errno, _("failed to close %s"), q(r, j->dst));
	cp_job_release(j);
}

/* The slot back, the directory's reference dropped. A file that failed
 * is forgotten, as cp forgets it, so the source's other names are
 * copied anew rather than linked to it. */
void cp_job_release(struct cp_job *j)
{
	struct cp_run *r = j->r;

	if ((j->failed || j->meta_failed) && j->tracked)
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

/*
 * Whether cp 9.1 would have moved this file's data with copy_file_range,
 * whose failure, read or write, it reports as "error copying": no holes
 * to make (--sparse=always, or a sparse source under auto), cloning
 * allowed, and a pair of files the kernel takes (one file system, both
 * regular; asked with a copy of 0 bytes, which makes the same checks).
 * Any thread: reads only r's options.
 */
bool cp_by_cfr(const struct cp_job *j)
{
	loff_t in = 0, out = 0;

	return j->r->o.reflink != REFLINK_NEVER && j->r->o.sparse != SPARSE_ALWAYS &&
	       !j->by_extent && S_ISREG(j->st.st_mode) &&
	       !j->stream_dst && j->sfd >= 0 && j->dfd >= 0 &&
	       copy_file_range(j->sfd, &in, j->dfd, &out, 0, 0) == 0;
}

void cp_job_fail(struct cp_job *j, int err, bool reading)
{
	if (cp_by_cfr(j))
		cp_copy_err(j->r, -err, j->src, j->dst);
	else if (reading)
		cp_err(j->r, -err, _("error reading %s"), q(j->r, j->src));
	else
		cp_write_err(j->r, -err, q(j->r, j->dst));
	j->failed = true;
	cp_job_end(j);
}

/* The device a job writes on: its existing destination's, else its
 * directory's (looked up once per directory), else none known. */
static dev_t dst_dev_of(const struct cp_job *j)
{
	struct cp_dir *d = j->dir;
	struct stat ds;

	if (j->dst_dev)
		return j->dst_dev;
	if (d && !d->dst_known && cp_dst_stat(j->r, d->dst, &ds, AT_SYMLINK_NOFOLLOW) == 0) {
		d->dst_dev = ds.st_dev;
		d->dst_ino = ds.st_ino;
		d->dst_known = true;
	}
	return d && d->dst_known ? d->dst_dev : (dev_t)-1;
}

/* A refused clone is remembered for its pair of devices: a tree whose
 * parts go to different file systems (a mount inside the destination)
 * tries each pair, as cp tries every file. */
static bool no_clone(const struct cp_job *j)
{
	const struct cp_run *r = j->r;

	if (r->o.reflink == REFLINK_ALWAYS)
		return false;
	/* cp 9.1 clones under any --sparse (later cp's --sparse=never
	 * turns --reflink=auto off) */
	return r->o.reflink == REFLINK_NEVER ||
	       !S_ISREG(j->st.st_mode) || j->stream_dst ||
	       (r->o.reflink == REFLINK_AUTO && r->clone_dev == j->st.st_dev &&
		r->clone_ddev == dst_dev_of(j) && !r->clone_ok);
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
	r->clone_dev = j->st.st_dev;
	r->clone_ddev = dst_dev_of(j);
	if (ioctl(j->dfd, FICLONE, j->sfd) == 0) {
		r->clone_ok = true;
		return 0;
	}
	if (r->o.reflink == REFLINK_ALWAYS) {
		cp_err(r, errno, _("failed to clone %s from %s"), q(r, j->dst), q(r, j->src));
		j->failed = true;
		return 1;
	}
	r->clone_ok = false;
	return -1;
}

static void begin_data(struct cp_job *j)
{
	struct cp_run *r = j->r;
	int c = try_clone(j);

	if (c >= 0) {
		cp_job_end(j);
		return;
	}
	j->by_extent = looks_sparse(j);
	j->zero_holes = r->o.sparse == SPARSE_ALWAYS || j->by_extent;
	j->wend = j->ext_end = 0;
	if (j->zero_holes) {
		struct stat ds;

		/* cp's ST_BLKSIZE: 512 where the size given is none */
		j->hole = fstat(j->dfd, &ds) == 0 && ds.st_blksize > 0 ?
			  (uint32_t)(ds.st_blksize < SMALL_MAX ? ds.st_blksize : SMALL_MAX) : 512;
	}
	if ((uint64_t)j->st.st_size <= SMALL_MAX || j->zero_holes ||
	    !S_ISREG(j->st.st_mode)) {
		j->base = j->fill = 0;
		cp_buf_read(j);
		return;
	}
	cp_flow_next(j);
}

static void on_open(uaio_op *op, int res, void *data)
{
	struct cp_job *j = data;

	(void)op;
	if (res < 0) {
		cp_create_failed(j->r, -res, j->dst);
		j->failed = true;
		cp_job_release(j);
		return;
	}
	j->dfd = res;
	begin_data(j);
}

/*
 * A small file goes whole to a worker when its data is cached, and by
 * io_uring otherwise: the workers are one per CPU, while io_uring keeps a
 * read of every job in flight (-j), which a disk serves together. Asked of the
 * first small file with data in each directory (cachestat(2)), as a
 * directory's files are mostly cached or not together; where cachestat
 * cannot tell (before Linux 6.5), as cached.
 */
static bool small_cached(struct cp_run *r, struct cp_dir *dir, const struct cp_job *j)
{
	int c;

	if (r->small != SMALL_AUTO)
		return true;
	if (dir && dir->small_cached >= 0)
		return dir->small_cached;
	if (!j->st.st_size)
		return true;
	c = uaio_file_cached(j->sfd, 0, (uint64_t)j->st.st_size) != 0;
	if (dir)
		dir->small_cached = c;
	if (!c)
		buf_want(r);
	return c;
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
	j->failed = j->meta_failed = j->by_extent = j->zero_holes = false;
	j->final_size = -1;
	j->close_err = 0;
	j->cursor = j->counted = 0;
	j->create_mode = create_mode;
	/* pread(2) cannot read a fifo or a device: those take the ring path. */
	if ((j->stream_dst && r->o.reflink != REFLINK_ALWAYS) ||
	    ((uint64_t)st->st_size <= SMALL_MAX && r->small != SMALL_URING &&
	     S_ISREG(st->st_mode) &&
	     r->o.sparse != SPARSE_ALWAYS && !looks_sparse(j) && no_clone(j) &&
	     small_cached(r, dir, j))) {
		if (r->small == SMALL_INLINE)
			cp_whole_done(&j->op, (int)cp_whole_copy(j), j);
		else
			cp_batch_add(r, j);
		return 0;
	}
	if (dst_fd >= 0) {
		begin_data(j);
		return 0;
	}
	{
		const char *name;
		int at = cp_dst_at_dir(r, j->dir, j->dst, &name);

		ret = uaio_op_openat(r->l, &j->op, at, name,
				     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, create_mode,
				     on_open, j);
	}
	if (ret < 0)
		on_open(&j->op, ret, j);
	return 0;
}
