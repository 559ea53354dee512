/* SPDX-License-Identifier: MIT */
/*
 * The in-kernel methods of the pagecache mode, none with a buffer of
 * ours: FICLONE (the whole file, sharing extents where the file system
 * can) and copy_file_range steps; splice is splice.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/sock_diag.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flow/engine.h"


/* The state of a method with one step in flight: its op. */
struct one_run {
	uaio_op op;
};

static int one_setup(uaio_flow *f)
{
	return (f->run = calloc(1, sizeof(struct one_run))) ? 0 : -ENOMEM;
}

void flow__one_cancel(uaio_flow *f)
{
	flow__cancel_op(f, &((struct one_run *)f->run)->op);
}

void flow__one_teardown(uaio_flow *f)
{
	free(f->run);
	f->run = NULL;
}

static bool one_can_leave(const uaio_flow *f)
{
	return true;
}

/* ---------------------------------------------------------------- clone */

static bool clone_fits(const uaio_flow *f)
{
	struct stat st;

	/* The whole file onto an empty one, nothing to watch on the way. */
	return flow__is_file(&f->src) && flow__is_file(&f->dst) && flow__no_user_side(f) &&
	       !f->dst.append && !f->src.off && !f->dst.off &&
	       f->want == UAIO_FLOW_EOF && !f->rate &&
	       fstat(f->dst.fd, &st) == 0 && st.st_size == 0;
}

static long do_clone(void *arg)
{
	uaio_flow *f = arg;
	struct stat st;

	if (ioctl(f->dst.fd, FICLONE, f->src.fd) < 0)
		return -errno;
	/* what was cloned: the sink's size (the source may have grown since) */
	return fstat(f->dst.fd, &st) < 0 ? -errno : (long)st.st_size;
}

static void clone_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;
	long n = uaio_op_result_long(op);

	f->inflight--;
	if (res < 0) {
		flow__fail(f, res, UAIO_FLOW_SIDE_DST);
	} else {
		flow__taken(f, (uint64_t)n);
		flow__moved(f, (uint64_t)n);
		flow__eof(f);
	}
	flow__step_done(f);
}

static void clone_kick(uaio_flow *f)
{
	struct one_run *r = f->run;
	int ret;

	if (f->taken || uaio_op_pending(&r->op) || !flow__allow(f, 1, 0))
		return;
	if ((ret = uaio_op_work(f->l, &r->op, do_clone, f, clone_done, f)) < 0) {
		flow__fail(f, ret, UAIO_FLOW_SIDE_NONE);
		return;
	}
	f->inflight++;
}

const struct flow_method flow__clone = {
	.name = "clone", .mode = UAIO_FLOW_PAGECACHE, .fits = clone_fits,
	.setup = one_setup, .kick = clone_kick, .cancel = flow__one_cancel,
	.teardown = flow__one_teardown, .can_leave = one_can_leave,
};

/* ------------------------------------------------------ copy_file_range */

static bool cfr_fits(const uaio_flow *f)
{
	return flow__is_file(&f->src) && flow__is_file(&f->dst) && flow__no_user_side(f) && !f->dst.append;
}

static void cfr_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;

	f->inflight--;
	if (res > 0) {
		flow__taken(f, (uint64_t)res);
		flow__moved(f, (uint64_t)res);
	} else if (res == 0) {
		/* 0 at the start may be a file that only looks empty (/proc,
		 * sysfs): let a reading method decide. */
		if (!f->taken)
			flow__fail(f, -ENODATA, UAIO_FLOW_SIDE_SRC);
		else
			flow__eof(f);
	} else {
		flow__fail(f, res, flow__side_of(f, res));
	}
	flow__step_done(f);
}

static void cfr_kick(uaio_flow *f)
{
	struct one_run *r = f->run;
	uint64_t n;
	int ret;

	if (uaio_op_pending(&r->op) || !(n = flow__allow(f, flow__step_len(f, FLOW_PAGECACHE_CHUNK), 0)))
		return;
	ret = uaio_op_copy_file_range(f->l, &r->op, f->src.fd, flow__src_off(f, f->taken),
				      f->dst.fd, flow__dst_off(f, f->moved), n, cfr_done, f);
	if (ret < 0) {
		flow__fail(f, ret, UAIO_FLOW_SIDE_NONE);
		return;
	}
	f->inflight++;
}

const struct flow_method flow__cfr = {
	.name = "copy_file_range", .mode = UAIO_FLOW_PAGECACHE, .fits = cfr_fits,
	.setup = one_setup, .kick = cfr_kick, .cancel = flow__one_cancel,
	.teardown = flow__one_teardown, .can_leave = one_can_leave,
};
