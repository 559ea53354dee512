/* SPDX-License-Identifier: MIT */
/*
 * A small file start to end in one call on a loop worker, and the batches
 * that hand several of them over at once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "job.h"

/* create, read, write */
static long whole_data(struct cp_job *j)
{
	uint64_t pos = 0;

	j->stage = STAGE_CREATE;
	if (j->dfd < 0) {
		const char *name;
		int at = cp_dst_at_dir(j->r, j->dir, j->dst, &name);

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
			if (w == 0)	/* full, as cp's full_write says */
				return -ENOSPC;
		}
		pos += (uint64_t)n;
		if (cp_short_end(j, (size_t)n, pos))
			return 0;
	}
}

/* A small file start to end in one call: the data, then what cp_job_end
 * does (the metadata, a failed copy emptied, both descriptors closed), so
 * a file costs one hand-off and the loop's thread, which walks the tree,
 * keeps only the walk. Runs on a worker (SMALL_WORK) or on the loop's
 * thread (SMALL_INLINE); touches only the job, and reads r's options. */
long cp_whole_copy(void *arg)
{
	struct cp_job *j = arg;
	long ret = whole_data(j);

	if (ret < 0 && j->stage != STAGE_CREATE && cp_by_cfr(j))
		j->stage = STAGE_COPY;
	if (j->dfd >= 0) {
		/* a failed copy gets no metadata: not a device or fifo it
		 * was written to either (cp leaves /dev/full's mode alone) */
		if (ret < 0) {
			if (!j->stream_dst) {
				(void)!ftruncate(j->dfd, 0);
				cp_failed_mode(j);
			}
		} else {
			j->meta_failed = !cp_meta_apply(j->r, j->sfd, j->src, j->dfd, j->dst,
							&j->st, j->is_new, j->omitted, -1,
							j->has, &j->notes);
		}
		if (close(j->dfd) < 0 && ret >= 0)
			j->close_err = errno;
		j->dfd = -1;
	}
	close(j->sfd);
	j->sfd = -1;
	return ret;
}

void cp_whole_done(uaio_op *op, int res, void *data)
{
	struct cp_job *j = data;
	struct cp_run *r = j->r;

	(void)op;
	j->failed = res < 0;
	if (res < 0 && j->stage == STAGE_CREATE)
		cp_create_failed(r, -res, j->dst);
	else if (res < 0 && j->stage == STAGE_COPY)
		cp_copy_err(r, -res, j->src, j->dst);
	else if (res < 0 && j->stage == STAGE_READ)
		cp_err(r, -res, _("error reading %s"), q(r, j->src));
	else if (res < 0)
		cp_write_err(r, -res, q(r, j->dst));
	cp_notes_report(r, &j->notes, j->dst);
	if (j->close_err)
		cp_err(r, j->close_err, _("failed to close %s"), q(r, j->dst));
	cp_job_release(j);
}

static long batch_copy(void *arg)
{
	struct cp_batch *b = arg;

	for (struct cp_job *j = b->head; j; j = j->next)
		j->res = cp_whole_copy(j);
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
		next = j->next;	/* cp_whole_done gives the slot back */
		cp_whole_done(&j->op, (int)j->res, j);
	}
}

void cp_batch_flush(struct cp_run *r)
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
void cp_batch_add(struct cp_run *r, struct cp_job *j)
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
		cp_batch_flush(r);
}

/* Whether FICLONE is not to be tried: not asked for, not a regular file
 * (but --reflink=always tries, and fails, as cp 9.1 does), or (under
 * auto) this source device refused it before. */
