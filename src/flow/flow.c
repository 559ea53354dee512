/* SPDX-License-Identifier: MIT */
/*
 * A flow's life: its endpoints classified, a method chosen from the
 * mode's chain (see docs/flows.md for the table), steps allowed by pause,
 * rate and length, progress reported, a fallback to the next method when
 * the kernel refuses one, and the end, reported once.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "flow/engine.h"

static const struct flow_method *const methods[M_COUNT] = {
	[M_CLONE] = &flow__clone,
	[M_CFR] = &flow__cfr,
	[M_SENDFILE] = &flow__sendfile,
	[M_SPLICE] = &flow__splice,
	[M_PIPELINE] = &flow__pipeline,
};

/* Each mode's methods, tried in this order (the first that fits starts;
 * a refusal the next one may cure moves on along the chain). */
static const uint8_t chain_auto[] = { M_CLONE, M_CFR, M_SENDFILE, M_SPLICE, M_PIPELINE };
static const uint8_t chain_kbuf[] = { M_PIPELINE };
static const uint8_t chain_pagecache[] = { M_CLONE, M_CFR, M_SENDFILE, M_SPLICE };
static const uint8_t chain_mmap[] = { M_PIPELINE };

static const struct {
	const char *name;
	const uint8_t *chain;
	unsigned n;
} modes[] = {
	[UAIO_FLOW_AUTO] = { "auto", chain_auto, sizeof(chain_auto) },
	[UAIO_FLOW_KBUF] = { "kbuf", chain_kbuf, sizeof(chain_kbuf) },
	[UAIO_FLOW_PAGECACHE] = { "pagecache", chain_pagecache, sizeof(chain_pagecache) },
	[UAIO_FLOW_MMAP] = { "mmap", chain_mmap, sizeof(chain_mmap) },
};
#define NMODES (sizeof(modes) / sizeof(modes[0]))

UAIO_API const char *uaio_flow_mode_name(int mode)
{
	return mode >= 0 && (unsigned)mode < NMODES ? modes[mode].name : NULL;
}

UAIO_API int uaio_flow_mode_parse(const char *s)
{
	for (unsigned i = 0; s && i < NMODES; i++)
		if (!strcmp(s, modes[i].name))
			return (int)i;
	return -EINVAL;
}

/* ------------------------------------------------------------ endpoints */

static int classify(struct flow_ep *e, const struct uaio_flow_ep *u, bool src)
{
	struct stat st;
	int fl;

	e->mem_idx = -1;
	e->fd = -1;
	if (u->type == UAIO_FLOW_MEM) {
		if (!u->mem || !u->mem_len)
			return -EINVAL;
		e->kind = EK_MEM;
		e->mem = u->mem;
		e->mem_len = u->mem_len;
		e->mem_idx = u->buf_index;
		return 0;
	}
	if (u->type != UAIO_FLOW_FD || u->off < -1)
		return -EINVAL;
	if (u->fd < 0 || fstat(u->fd, &st) < 0 || (fl = fcntl(u->fd, F_GETFL)) < 0)
		return -EBADF;
	if ((fl & O_ACCMODE) == (src ? O_WRONLY : O_RDONLY))
		return -EBADF;
	e->fd = u->fd;
	e->nonblock = fl & O_NONBLOCK;
	e->size = (uint64_t)st.st_size;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	switch (st.st_mode & S_IFMT) {
	case S_IFREG: e->kind = EK_FILE; break;
	case S_IFBLK: e->kind = EK_BLK; break;
	case S_IFIFO: e->kind = EK_PIPE; break;
	case S_IFSOCK: e->kind = EK_SOCK; break;
	case S_IFCHR: e->kind = EK_CHR; break;
	default: return -EINVAL;		/* a directory */
	}
	/* A flow moves a byte stream: a datagram or record socket would cut
	 * a message longer than the room a receive gives it, and drop the
	 * rest without a word (3 MB of 60 kB records into a file came out
	 * short, "done"). */
	if (e->kind == EK_SOCK) {
		int type;
		socklen_t len = sizeof(type);

		if (getsockopt(u->fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
		    type != SOCK_STREAM)
			return -EINVAL;
	}
	e->seek = e->kind == EK_FILE || e->kind == EK_BLK;
	if (!e->seek)
		return u->off == -1 ? 0 : -ESPIPE;
	e->append = !src && (fl & O_APPEND);
	e->off = u->off;
	if (u->off == -1) {
		e->set_pos = true;
		if ((e->off = lseek(u->fd, 0, SEEK_CUR)) < 0)
			return -errno;
	}
	return 0;
}

/* One file at both ends, the destination starting inside the source's
 * range after its start (an O_APPEND one at the file's end): every
 * method copies forward, over bytes not read yet, and one appending
 * reads its own writes for ever. copy_file_range refuses such ranges
 * (EINVAL); so does the flow, rather than copy them wrong. A destination
 * before its source is copied right, forward. */
static bool overlaps_ahead(const uaio_flow *f)
{
	uint64_t s, d;

	if (!flow__same_file(f))
		return false;
	s = (uint64_t)f->src.off;
	d = f->dst.append ? f->dst.size : (uint64_t)f->dst.off;
	return d > s && (f->want == UAIO_FLOW_EOF || d - s < f->want);
}

/* ------------------------------------------------------------- methods */

/* The chain position after method m (m = M_COUNT: from the start) of the
 * first method that fits, or -1. */
static int next_method(const uaio_flow *f, int after)
{
	const uint8_t *c = modes[f->mode].chain;
	unsigned i = 0, n = modes[f->mode].n;

	if (after != M_COUNT) {
		while (i < n && c[i] != after)
			i++;
		i++;
	}
	for (; i < n; i++)
		if (methods[c[i]]->fits(f) && !flow__refused(f, c[i]))
			return c[i];
	return -1;
}

static int use_method(uaio_flow *f, int m)
{
	int err;

	for (;;) {
		f->method = (uint8_t)m;
		f->cur = methods[m]->mode == UAIO_FLOW_AUTO ?
			 (f->mode == UAIO_FLOW_MMAP ? UAIO_FLOW_MMAP : UAIO_FLOW_KBUF) :
			 methods[m]->mode;
		err = methods[m]->setup(f);
		/* Out of descriptors (splice's pipe), or an end that refuses
		 * the method (a device without splice): a later method (the
		 * pipeline's buffers) does the job. */
		if ((err != -EMFILE && err != -ENFILE && !flow__fallback_err(err)) ||
		    (m = next_method(f, m)) < 0)
			return err;
	}
}

/* -------------------------------------------------------------- the end */

static void finish(uaio_flow *f)
{
	int64_t res;
	uint64_t upto;

	/* The last progress call, while the flow is still the caller's to
	 * pause or cancel (a cancel there makes the end -ECANCELED); should
	 * that set anything going, the end waits for it. */
	if (f->progress && f->moved != f->last_progress) {
		f->last_progress = f->moved;
		f->progress(f, f->moved, f->data);
		if (f->inflight)
			return;
	}
	res = f->err ? f->err : (int64_t)f->moved;
	/* Positions go past what the sink has whole from the start: bytes
	 * read ahead, or written past a chunk that failed, are moved again
	 * by whoever goes on from them (a cancel, an error). */
	upto = f->run && methods[f->method]->done_upto ? methods[f->method]->done_upto(f) :
							 f->moved;
	f->flags |= FF_DONE;
	uaio_timer_stop(f->l, &f->timer);
	if (f->run)
		methods[f->method]->teardown(f);
	if (f->src.set_pos)
		lseek(f->src.fd, f->src.off + (int64_t)upto, SEEK_SET);
	if (f->dst.set_pos && !f->dst.append)
		lseek(f->dst.fd, f->dst.off + (int64_t)upto, SEEK_SET);
	f->done(f, res, f->err ? f->err_side : UAIO_FLOW_SIDE_NONE, f->data);
	free(f);
}

static bool all_moved(const uaio_flow *f)
{
	return (f->flags & FF_EOF || f->taken == f->want) && f->moved == f->taken;
}

/* Called where nothing of the flow runs below on the stack. */
static void step(uaio_flow *f)
{
	if (!(f->flags & FF_DONE) && (!(f->flags & FF_ENDING) || flow__flushing(f)))
		methods[f->method]->kick(f);
	if (f->inflight || (f->flags & FF_DONE))
		return;
	if (f->err || all_moved(f))
		finish(f);
}

void flow__step_done(uaio_flow *f)
{
	step(f);
}

static void on_timer(uaio_timer *t)
{
	uaio_flow *f = t->data;

	f->flags &= (uint8_t)~FF_TIMER;
	step(f);
}

/* Runs step() at the next iteration. */
static void later(uaio_flow *f, uint64_t ns)
{
	uaio_timer_start(f->l, &f->timer, ns, 0);
}

void flow__again(uaio_flow *f)
{
	later(f, 0);
}

/* The flush ends (a cancel; the sink or the tap failed meanwhile): the
 * rest is dropped as a cancel drops it, and the end still says the
 * source's error, the first. */
static void flush_stop(uaio_flow *f)
{
	f->flags &= (uint8_t)~FF_FLUSH;
	if (f->run)
		methods[f->method]->cancel(f);
}

void flow__fail(uaio_flow *f, int err, int side)
{
	int m;

	if (flow__flushing(f))
		flush_stop(f);
	if (f->err || (f->flags & FF_DONE))
		return;
	flow__refusal(f, f->method, err);
	/* A refusal another method may cure, before anything is in flight
	 * or held by this one. */
	if (flow__fallback_err(err) && !f->inflight && !(f->flags & FF_ENDING) &&
	    methods[f->method]->can_leave(f) &&
	    (m = next_method(f, f->method)) >= 0) {
		methods[f->method]->teardown(f);
		if ((err = use_method(f, m)) == 0)
			return;		/* the caller's step_done kicks it */
		side = UAIO_FLOW_SIDE_NONE;
	}
	if (err == -ENODATA) {		/* "nothing here" with no one left to ask */
		flow__eof(f);
		return;
	}
	flow__abort(f, err, side);
}

void flow__abort(uaio_flow *f, int err, int side)
{
	if (flow__flushing(f))
		flush_stop(f);
	if (f->err || (f->flags & FF_DONE))
		return;
	f->err = err;
	f->err_side = (uint8_t)side;
	f->flags |= FF_ENDING;
	/* A stream source failed: nothing of it is in flight (one read at
	 * a time), and what it gave before goes on to the sink. (Memory is
	 * no stream: its -EFAULT is a hole, and nothing after it goes.) */
	if (err != -ECANCELED && side == UAIO_FLOW_SIDE_SRC && !f->src.seek &&
	    f->src.kind != EK_MEM && f->dst.kind != EK_MEM) {
		f->flags |= FF_FLUSH;
		return;
	}
	if (f->run)
		methods[f->method]->cancel(f);
}

/* Bytes the flow took from a stream were lost while it ended (a write
 * of them after a cancel failed): the end says that error, not the
 * cancel, so the caller knows the sink lacks them. */
void flow__lost(uaio_flow *f, int err, int side)
{
	if (f->err == -ECANCELED && err != -ECANCELED && !(f->flags & FF_DONE)) {
		f->err = err;
		f->err_side = (uint8_t)side;
	}
}

void flow__eof(uaio_flow *f)
{
	f->flags |= FF_EOF;
}

/* ------------------------------------------------------ steps, counters */

bool flow__src_hung_up(const uaio_flow *f)
{
	struct pollfd pf = { f->src.fd, POLLIN, 0 };
	struct termios t;

	/* a terminal only (a hung-up one answers tcgetattr with EIO, not
	 * ENOTTY): another device gone (an unplugged hidraw says POLLHUP
	 * and EIO too) has lost bytes, which is no end */
	return f->src.kind == EK_CHR && poll(&pf, 1, 0) == 1 && (pf.revents & POLLHUP) &&
	       (tcgetattr(f->src.fd, &t) == 0 || errno == EIO);
}

int flow__side_of(const uaio_flow *f, int err)
{
	int fl;

	if (err == -EBADF) {
		fl = fcntl(f->dst.fd, F_GETFL);
		return fl < 0 || (fl & O_ACCMODE) == O_RDONLY ? UAIO_FLOW_SIDE_DST
							     : UAIO_FLOW_SIDE_SRC;
	}
	/* A pipe fails only when its reader is gone (EPIPE): the rest is
	 * the other end's (a direct splice). */
	if (f->src.kind == EK_PIPE)
		return UAIO_FLOW_SIDE_DST;
	if (f->dst.kind == EK_PIPE)
		return err == -EPIPE ? UAIO_FLOW_SIDE_DST : UAIO_FLOW_SIDE_SRC;
	/* A reset, a timeout or an unreachable peer: the socket's when it
	 * is down (POLLHUP or POLLERR), else the other end's, a network
	 * file system's (FUSE's ENOTCONN once its server is gone). */
	if ((err == -ECONNRESET || err == -ETIMEDOUT || err == -EHOSTUNREACH ||
	     err == -ENETUNREACH || err == -ENETDOWN || err == -EHOSTDOWN ||
	     err == -ECONNABORTED || err == -ECONNREFUSED || err == -ENOTCONN) &&
	    (f->dst.kind == EK_SOCK || f->src.kind == EK_SOCK)) {
		bool dst = f->dst.kind == EK_SOCK;
		struct pollfd pf = { dst ? f->dst.fd : f->src.fd, POLLOUT, 0 };
		bool down = poll(&pf, 1, 0) == 1 && (pf.revents & (POLLHUP | POLLERR));

		return dst == down ? UAIO_FLOW_SIDE_DST : UAIO_FLOW_SIDE_SRC;
	}
	return err == -ENOSPC || err == -EDQUOT || err == -EFBIG || err == -EPIPE ?
	       UAIO_FLOW_SIDE_DST : UAIO_FLOW_SIDE_SRC;
}

uint64_t flow__allow(uaio_flow *f, uint64_t max, uint64_t outstanding)
{
	uint64_t left = max, now, earned;

	if (f->flags & (FF_PAUSED | FF_ENDING | FF_EOF | FF_DONE))
		return 0;
	if (f->want != UAIO_FLOW_EOF) {
		if (f->taken + outstanding >= f->want) {
			f->flags |= f->taken >= f->want ? FF_EOF : 0;
			return 0;
		}
		if (left > f->want - f->taken - outstanding)
			left = f->want - f->taken - outstanding;
	}
	if (f->rate) {
		/* and a step is at most a second's bytes (a page at least):
		 * the burst a chunk of 4 MiB gave at 1 KiB/s was an hour's */
		uint64_t second = f->rate > 4096 ? f->rate : 4096;

		if (left > second)
			left = second;
		now = uaio_loop_now(f->l);
		/* One step of burst: a step starts once the bytes before it
		 * are earned, so the flow is never more than that step ahead
		 * (with the step added to the budget it could start a step
		 * ahead already, and end two ahead). */
		earned = (uint64_t)((__uint128_t)f->rate * (now - f->t0) / 1000000000u);
		if (f->taken + outstanding > earned) {
			uint64_t need = f->taken + outstanding - earned;

			if (!(f->flags & FF_TIMER)) {
				f->flags |= FF_TIMER;
				later(f, (uint64_t)((__uint128_t)need * 1000000000u / f->rate) + 1);
			}
			return 0;
		}
	}
	return left;
}

void flow__taken(uaio_flow *f, uint64_t n)
{
	f->taken += n;
	if (f->want != UAIO_FLOW_EOF && f->taken >= f->want)
		f->flags |= FF_EOF;
}

void flow__moved(uaio_flow *f, uint64_t n)
{
	uint64_t now;

	f->moved += n;
	if (!f->progress)
		return;
	now = f->progress_ns ? uaio_loop_now(f->l) : 0;
	if (!f->progress_ns || now >= f->last_progress_ns + f->progress_ns) {
		f->last_progress_ns = now;
		f->last_progress = f->moved;
		f->progress(f, f->moved, f->data);
	}
}

/* The flow ends only after its cancels: nothing of it is left in the loop. */
static void cancel_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;

	free(op);
	f->inflight--;
	flow__step_done(f);
}

void flow__cancel_op(uaio_flow *f, uaio_op *target)
{
	uaio_op *c;

	if (!uaio_op_pending(target) || !(c = calloc(1, sizeof(*c))))
		return;
	if (uaio_op_cancel(f->l, c, target, cancel_done, f) < 0)
		free(c);
	else
		f->inflight++;
}

/* ------------------------------------------------------------ public API */

/* A forked child's copy of a parent's loop takes no calls (-ECHILD): a
 * flow on it would never end, and a cancel said done would never come. */
static bool forked(uaio_loop *l)
{
	return uaio_loop_timeout(l) == -ECHILD;
}

UAIO_API int uaio_flow_start(uaio_loop *l, const struct uaio_flow_params *p,
			     uaio_flow **out)
{
	uaio_flow *f;
	int r, m;

	if (!l || !p || !out || !p->done || p->mode < 0 || (unsigned)p->mode >= NMODES ||
	    p->chunk > (1u << 30) || p->depth > 64)
		return -EINVAL;
	if (forked(l))
		return -ECHILD;
	if (!(f = calloc(1, sizeof(*f))))
		return -ENOMEM;
	f->l = l;
	f->want = p->len;
	f->mode = (uint8_t)p->mode;
	f->chunk = (uint32_t)p->chunk;
	f->depth = (uint16_t)(p->depth ? p->depth : 4);
	f->rate = p->rate;
	f->progress_ns = p->progress_ns;
	f->progress = p->progress;
	f->done = p->done;
	f->tap = p->tap;
	f->data = p->data;
	if ((r = classify(&f->src, &p->src, true)) < 0 ||
	    (r = classify(&f->dst, &p->dst, false)) < 0)
		goto fail;
	r = -EINVAL;
	if (f->src.kind == EK_MEM && f->dst.kind == EK_MEM)
		goto fail;
	if (overlaps_ahead(f))
		goto fail;
	if (f->src.kind == EK_MEM && f->want > f->src.mem_len)
		f->want = f->src.mem_len;	/* memory ends where it ends */
	if (f->dst.kind == EK_MEM && (f->want == UAIO_FLOW_EOF || f->want > f->dst.mem_len))
		f->want = f->dst.mem_len;
	if ((m = next_method(f, M_COUNT)) < 0 || (r = use_method(f, m)) < 0)
		goto fail;
	f->t0 = uaio_loop_now(l);
	uaio_timer_init(&f->timer, on_timer, f);
	if (!f->want)
		f->flags |= FF_EOF;
	later(f, 0);
	*out = f;
	return 0;
fail:
	free(f);
	return r;
}

UAIO_API int uaio_flow_pause(uaio_flow *f)
{
	if (!f || (f->flags & FF_DONE))
		return -EINVAL;
	if (forked(f->l))
		return -ECHILD;
	if (!(f->flags & FF_PAUSED))
		f->paused_at = uaio_loop_now(f->l);
	f->flags |= FF_PAUSED;
	return 0;
}

UAIO_API int uaio_flow_resume(uaio_flow *f)
{
	if (!f || (f->flags & FF_DONE))
		return -EINVAL;
	if (forked(f->l))
		return -ECHILD;
	if (f->flags & FF_PAUSED) {
		f->flags &= (uint8_t)~FF_PAUSED;
		/* A pause earns no credit, and forgives no debt: the origin
		 * moves by the pause, and no earlier than if the bytes so far
		 * had taken exactly their time (a flow a step ahead of its
		 * rate when paused was let a step more each time). */
		if (f->rate) {
			uint64_t now = uaio_loop_now(f->l), t0 = f->t0 + (now - f->paused_at),
				 span = (uint64_t)((__uint128_t)f->taken * 1000000000u / f->rate),
				 even = now > span ? now - span : 0;

			f->t0 = t0 > even ? t0 : even;
		}
		later(f, 0);
	}
	return 0;
}

UAIO_API int uaio_flow_cancel(uaio_flow *f)
{
	if (!f || (f->flags & FF_DONE))
		return -EINVAL;
	if (forked(f->l))
		return -ECHILD;
	if (f->err && !flow__flushing(f))
		return -EALREADY;
	f->flags &= (uint8_t)~FF_PAUSED;
	if (f->err) {		/* a sink that never takes the rest */
		flush_stop(f);
		later(f, 0);
		return 0;
	}
	flow__abort(f, -ECANCELED, UAIO_FLOW_SIDE_NONE);
	later(f, 0);		/* the end comes from the loop, never from here */
	return 0;
}

UAIO_API uint64_t uaio_flow_bytes(const uaio_flow *f)
{
	return f ? f->moved : 0;
}

UAIO_API const char *uaio_flow_method(const uaio_flow *f)
{
	return f ? methods[f->method]->name : NULL;
}

UAIO_API int uaio_flow_mode(const uaio_flow *f)
{
	return f ? f->cur : -EINVAL;
}
