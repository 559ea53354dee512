/* SPDX-License-Identifier: MIT */
/*
 * The sendfile method (file -> non-blocking socket): no pipe and no
 * buffer of ours. A range the page cache already holds, as cachestat(2)
 * says, is sent inline on the loop thread, as nginx and lighttpd send it;
 * any other range goes to a loop worker, where sendfile may wait for the
 * disk. A full socket waits for POLLOUT. Evicted between the look and the
 * send, a page is read on the loop thread: a narrow window, accepted as
 * the price of a syscall where splice through io_uring costs a pipe and
 * two io-wq hand-offs per step (docs/flows.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flow/engine.h"

/* One turn: the most a flow sends inline (whatever its chunk) before the
 * loop's other work (other flows) gets the thread, as lighttpd sends
 * 256 KiB per connection and turn. A socket fed more at once queues what
 * the window does not admit, and sends it later from ACK processing:
 * serving 64 clients over loopback, 1 MiB turns cost 1.8x the CPU per
 * response of 256 KiB ones (docs/flows.md). An uncached step goes to a
 * worker whole: SF_CHUNK, or the flow's chunk. */
#define SF_TURN		(256u << 10)
#define SF_CHUNK	(1u << 20)

struct sf_run {
	uaio_op op;		/* first: flow__one_cancel/teardown */
	int64_t off;		/* the worker's send: where, how much */
	uint64_t len;
	int64_t resident_end;	/* source bytes before this were found cached */
};

static bool sf_fits(const uaio_flow *f)
{
	/* A blocking socket could hold the loop thread, or a worker no
	 * cancel reaches, for as long as the peer is silent: splice's. */
	return f->src.kind == EK_FILE && f->dst.kind == EK_SOCK && f->dst.nonblock &&
	       !f->tap && (f->mode == UAIO_FLOW_AUTO || f->mode == UAIO_FLOW_PAGECACHE);
}

static int sf_setup(uaio_flow *f)
{
	struct sf_run *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->resident_end = -1;
	f->run = r;
	return 0;
}

static bool sf_can_leave(const uaio_flow *f)
{
	return !uaio_op_pending(&((const struct sf_run *)f->run)->op);
}

/* Whether every page of [off, off + n) that lies inside the file is in
 * the page cache. Without cachestat (before Linux 6.5) nothing is. */
static bool resident(uaio_flow *f, int64_t off, uint64_t n)
{
	struct sf_run *r = f->run;
	uint64_t end = (uint64_t)off + n;

	if ((int64_t)end <= r->resident_end)	/* offsets only grow */
		return true;
	if (end > f->src.size)
		end = f->src.size;
	if ((uint64_t)off >= end)
		return false;		/* past the size at the start: the file grew, or ends here */
	if (uaio_file_cached(f->src.fd, (uint64_t)off, end - (uint64_t)off) != 1)
		return false;
	r->resident_end = (int64_t)end;
	return true;
}

static void poll_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;

	f->inflight--;
	if (res < 0)
		flow__fail(f, res, UAIO_FLOW_SIDE_DST);
	flow__step_done(f);
}

static void wait_room(uaio_flow *f)
{
	struct sf_run *r = f->run;
	int ret = uaio_op_poll(f->l, &r->op, f->dst.fd, POLLOUT, poll_done, f);

	if (ret < 0) {
		flow__fail(f, ret, UAIO_FLOW_SIDE_DST);
		return;
	}
	f->inflight++;
}

/* What one send came to; false when the flow must not step on now (a
 * wait, the end, or another method). */
static bool sent(uaio_flow *f, long res, uint64_t asked)
{
	if (res > 0) {
		flow__taken(f, (uint64_t)res);
		flow__moved(f, (uint64_t)res);
		/* Ending (progress may have cancelled): no wait for room,
		 * which no cancel would reach. */
		if (f->err)
			return false;
		/* Short: the file ended (the next send would say so; no
		 * wait for room a peer that waits for the end never makes),
		 * or the socket is full. */
		if ((uint64_t)res < asked && !(f->flags & FF_EOF)) {
			struct stat st;

			if (fstat(f->src.fd, &st) == 0 && S_ISREG(st.st_mode) &&
			    flow__src_off(f, f->taken) >= st.st_size) {
				flow__eof(f);
				return false;
			}
			wait_room(f);
		}
		return (uint64_t)res == asked;
	}
	if (res == 0) {
		/* Nothing at the start may be a file that only looks empty
		 * (/proc): a reading method decides. Later, the file ended. */
		if (!f->taken)
			flow__fail(f, -ENODATA, UAIO_FLOW_SIDE_SRC);
		else
			flow__eof(f);
	} else if (res == -EAGAIN) {
		if (!f->err)	/* ending: no wait, which no cancel would reach */
			wait_room(f);
	} else {
		flow__fail(f, (int)res, flow__side_of(f, (int)res));
	}
	return false;
}

static long do_send(void *arg)
{
	uaio_flow *f = arg;
	struct sf_run *r = f->run;
	off_t o = r->off;
	ssize_t n = sendfile(f->dst.fd, f->src.fd, &o, r->len);

	return n < 0 ? -errno : n;
}

static void work_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;

	f->inflight--;
	/* A step is at most 1 GiB (uaio_flow_params.chunk): res is whole. */
	sent(f, res, ((struct sf_run *)f->run)->len);
	flow__step_done(f);
}

static void sf_kick(uaio_flow *f)
{
	struct sf_run *r = f->run;
	uint64_t n, done = 0;
	uint8_t m = f->method;
	int64_t off;
	ssize_t got;
	int ret;

	while (!uaio_op_pending(&r->op) && done < SF_TURN &&
	       (n = flow__allow(f, f->chunk ? f->chunk : SF_CHUNK, 0))) {
		off = flow__src_off(f, f->taken);
		if (!resident(f, off, n)) {
			r->off = off;
			r->len = n;
			ret = uaio_op_work(f->l, &r->op, do_send, f, work_done, f);
			if (ret < 0)
				flow__fail(f, ret, UAIO_FLOW_SIDE_NONE);
			else
				f->inflight++;
			return;
		}
		if (n > SF_TURN - done)
			n = SF_TURN - done;
		got = sendfile(f->dst.fd, f->src.fd, &(off_t){ off }, n);
		if (!sent(f, got < 0 ? -errno : got, n)) {
			/* Fallen back to another method: it starts from the loop. */
			if (f->method != m && !f->err)
				flow__again(f);
			return;
		}
		done += (uint64_t)got;
	}
	/* The inline budget is spent with more to send: the rest goes on
	 * at the next iteration, after the loop's other work. */
	if (done >= SF_TURN && !uaio_op_pending(&r->op) && !(f->flags & (FF_EOF | FF_ENDING)))
		flow__again(f);
}

const struct flow_method flow__sendfile = {
	.name = "sendfile", .mode = UAIO_FLOW_PAGECACHE, .fits = sf_fits,
	.setup = sf_setup, .kick = sf_kick, .cancel = flow__one_cancel,
	.teardown = flow__one_teardown, .can_leave = sf_can_leave,
};
