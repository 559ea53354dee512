/* SPDX-License-Identifier: MIT */
/*
 * The splice method of the pagecache mode: directly when one end is a
 * pipe, otherwise through a pipe of the flow's own, filled and drained at
 * once; file to file, both halves of a step on one loop worker.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/sock_diag.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "flow/engine.h"

#define PIPE_BYTES	(1u << 20)	/* the flow's own pipe */
/* File to file, each drain is one write into the sink's page cache, and
 * ext4 (6.16+) gives a write that large a folio of its size. On this VM,
 * which reports free memory to its host, large folios come mostly from
 * blocks the host took back, so every first touch faults there; which
 * sizes suffer moves with the VM's state (1 MiB always, 256 KiB at
 * times), 64-128 KiB never did (docs/flows.md). */
#define FILE_PIPE_BYTES	(128u << 10)

/* --------------------------------------------------------------- splice */

/* in: source -> pipe (or -> sink when direct); out: pipe -> sink. A side
 * whose descriptor is non-blocking and not ready waits in a poll first. */
struct splice_run {
	uaio_op in, out;
	int pfd[2];		/* ours, or -1 when one end is a pipe already */
	uint64_t inpipe;	/* bytes in our pipe */
	uint64_t asked;		/* the in step's length */
	uint32_t pipesz;
	bool in_poll, out_poll;	/* the op is a readiness wait */
	bool in_ready, out_ready;	/* its poll found the side ready (gate) */
	bool full;		/* the fill found our pipe full: it waits for the drain */
	/* The sink refused splice while a fill was in flight: the error the
	 * flow fails with (to fall back) once that fill is back. */
	int refused;
	bool sink_failed;	/* a drain failed: what is left stays */
	/* File to file, a worker's step: what it took and gave, and the
	 * side that failed. */
	uint64_t step_in, step_out;
	int side;
};

static bool splice_fits(const uaio_flow *f)
{
	bool streams = !f->src.seek || !f->dst.seek;

	if (!flow__no_user_side(f) || f->dst.append)
		return false;
	/* The fallback backend runs splice on its workers, blocking: in AUTO
	 * a socket or pipe end goes through kbuf there (readiness, no thread
	 * held while a peer is silent). */
	return !(streams && f->mode == UAIO_FLOW_AUTO &&
		 uaio_loop_backend(f->l) != UAIO_BACKEND_URING);
}

static bool files_only(const uaio_flow *f)
{
	return f->src.seek && f->dst.seek;
}

static bool direct(const uaio_flow *f)
{
	return f->src.kind == EK_PIPE || f->dst.kind == EK_PIPE;
}

static void splice_teardown(uaio_flow *f);
static void splice_out_done(uaio_op *op, int res, void *data);
static void salvage(uaio_flow *f);
static unsigned splice_flags(const uaio_flow *f);

/* Pseudo file systems, whose files may have a write but no write_iter
 * (procfs's /proc/PID/comm): no splice. Files of disk file systems all
 * splice, and are not asked: the question takes the file system's
 * freeze lock, and would wait on the loop's thread while it is frozen. */
static bool pseudo_fs_file(int fd)
{
	static const unsigned long types[] = {
		PROC_SUPER_MAGIC, SYSFS_MAGIC, DEBUGFS_MAGIC, TRACEFS_MAGIC,
		SECURITYFS_MAGIC, EFIVARFS_MAGIC, PSTOREFS_MAGIC, BPF_FS_MAGIC,
		CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC,
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return false;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((unsigned long)sf.f_type == types[i])
			return true;
	return false;
}

/* A character device may have no splice (/dev/full, most drivers), nor
 * may a pseudo file system's file, and the kernel says so only once
 * bytes sit in the pipe, where a stream's cannot go back and no other
 * method can take over. So it is asked first, from an empty pipe (pfd,
 * or one of its own), at an offset for a file (its position untouched):
 * EINVAL is the refusal, EAGAIN a sink that takes splice. */
static int sink_refuses_splice(const uaio_flow *f, const int pfd[2])
{
	int tmp[2] = { -1, -1 }, err = 0;
	const int *p = pfd;
	loff_t at = 0;

	if (f->dst.kind != EK_CHR && (f->dst.kind != EK_FILE || !pseudo_fs_file(f->dst.fd)))
		return 0;
	if (p[0] < 0) {
		if (pipe2(tmp, O_CLOEXEC) < 0)
			return -errno;
		p = tmp;
	}
	if (splice(p[0], NULL, f->dst.fd, f->dst.kind == EK_FILE ? &at : NULL, 1,
		   SPLICE_F_NONBLOCK) < 0 &&
	    flow__fallback_err(-errno))
		err = -errno;
	if (tmp[0] >= 0) {
		close(tmp[0]);
		close(tmp[1]);
	}
	return err;
}

static int splice_setup(uaio_flow *f)
{
	struct splice_run *r = calloc(1, sizeof(*r));
	int sz, err;

	if (!r)
		return -ENOMEM;
	r->pfd[0] = r->pfd[1] = -1;
	if (!direct(f)) {
		if (pipe2(r->pfd, O_CLOEXEC) < 0) {
			free(r);
			return -errno;
		}
		/* Past pipe-max-size (unprivileged) the default 64 KiB stays. */
		sz = fcntl(r->pfd[1], F_SETPIPE_SZ,
			   (int)flow__step_len(f, files_only(f) ? FILE_PIPE_BYTES : PIPE_BYTES));
		if (sz < 0)
			sz = fcntl(r->pfd[1], F_GETPIPE_SZ);
		r->pipesz = sz > 0 ? (uint32_t)sz : 65536;
	}
	f->run = r;
	if ((err = sink_refuses_splice(f, r->pfd)) < 0) {
		splice_teardown(f);
		return err;
	}
	return 0;
}

static void splice_teardown(uaio_flow *f)
{
	struct splice_run *r = f->run;

	if (r->pfd[0] >= 0) {
		close(r->pfd[0]);
		close(r->pfd[1]);
	}
	free(r);
	f->run = NULL;
}

/* Bytes a stream (socket, character device) gave the flow's pipe, for a
 * file: out of the stream, and a file's write does not wait for a peer,
 * so they are written as kbuf writes its chunks (pipeline_cancel), not
 * dropped. */
static bool salvages(const uaio_flow *f)
{
	return !f->src.seek && !direct(f) && f->dst.seek && !f->dst.append;
}

/* n bytes of the flow's pipe to the sink, at its place. */
static int drain(uaio_flow *f, uint64_t n)
{
	struct splice_run *r = f->run;

	return uaio_op_splice(f->l, &r->out, r->pfd[0], -1, f->dst.fd,
			      flow__dst_off(f, f->moved), n, splice_flags(f), splice_out_done, f);
}

/* The flow is ending: what the pipe holds goes to the file, once the
 * fill that may add to it is back. */
static void salvage(uaio_flow *f)
{
	struct splice_run *r = f->run;

	if (!f->err || !salvages(f) || r->sink_failed || !r->inpipe ||
	    uaio_op_pending(&r->in) || uaio_op_pending(&r->out))
		return;
	if (drain(f, r->inpipe) == 0)
		f->inflight++;
}

static void splice_cancel(uaio_flow *f)
{
	struct splice_run *r = f->run;

	flow__cancel_op(f, &r->in);
	if (salvages(f))
		salvage(f);
	else
		flow__cancel_op(f, &r->out);
}

static bool splice_can_leave(const uaio_flow *f)
{
	const struct splice_run *r = f->run;

	return !r->inpipe && !uaio_op_pending(&r->in) && !uaio_op_pending(&r->out);
}

/* On the fallback, stream ends are spliced without blocking
 * (SPLICE_F_NONBLOCK) and a side that is not ready waits in a poll: a pool
 * thread blocked on a silent peer could not be cancelled. io_uring's
 * workers can be (a cancel interrupts the wait), and a splice that waits
 * there in the kernel costs one completion instead of a poll and a retry
 * per refusal. Descriptors the program made non-blocking still answer
 * EAGAIN, and then poll. */
static unsigned splice_flags(const uaio_flow *f)
{
	bool streams = !f->src.seek || !f->dst.seek;

	return SPLICE_F_MOVE |
	       (streams && uaio_loop_backend(f->l) != UAIO_BACKEND_URING ? SPLICE_F_NONBLOCK : 0);
}

static void poll_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;
	struct splice_run *r = f->run;

	f->inflight--;
	if (op == &r->in) {
		r->in_poll = false;
		r->in_ready = res > 0;
	} else {
		r->out_poll = false;
		r->out_ready = res > 0;
	}
	if (res < 0)
		flow__fail(f, res, op == &r->in ? UAIO_FLOW_SIDE_SRC : UAIO_FLOW_SIDE_DST);
	salvage(f);
	flow__step_done(f);
}

static int wait_ready(uaio_flow *f, uaio_op *op, int fd, short ev)
{
	struct splice_run *r = f->run;
	int ret = uaio_op_poll(f->l, op, fd, ev, poll_done, f);

	if (ret == 0) {
		*(op == &r->in ? &r->in_poll : &r->out_poll) = true;
		f->inflight++;
	}
	return ret;
}

/* A blocking socket is polled before a splice that reads it (POLLIN),
 * and on the fallback before one that writes it too, as is a character
 * device there.
 * - Reading, the splice holds its sink pipe's lock while it waits for the
 *   peer (splice_file_to_pipe()): the pipe's reader (the flow's drain, or
 *   the program's reader of its own pipe) would wait with it, and a
 *   request would reach its server only when the next one came.
 * - On the fallback SPLICE_F_NONBLOCK reaches only a pipe: the splice
 *   would wait for its peer on a pool thread, where no cancel reaches it;
 *   io_uring's workers can be interrupted. */
static bool waits_for_peer(const uaio_flow *f, const struct flow_ep *e, short ev)
{
	bool uring = uaio_loop_backend(f->l) == UAIO_BACKEND_URING;

	if (e->nonblock)
		return false;
	/* a character device (a tty, a pty) waits for its peer as a socket
	 * does, and on the fallback's pool no cancel reaches that wait */
	return e->kind == EK_SOCK ? ev == POLLIN || !uring : e->kind == EK_CHR && !uring;
}

/* Bytes a socket's send buffer takes now without a wait (UINT64_MAX: no
 * answer, as before the gate). */
static uint64_t sock_room(int fd)
{
	uint32_t mi[SK_MEMINFO_VARS], used;
	socklen_t len = sizeof(mi);

	if (getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mi, &len) < 0)
		return UINT64_MAX;
	used = mi[SK_MEMINFO_WMEM_QUEUED] > mi[SK_MEMINFO_WMEM_ALLOC] ?
	       mi[SK_MEMINFO_WMEM_QUEUED] : mi[SK_MEMINFO_WMEM_ALLOC];
	return mi[SK_MEMINFO_SNDBUF] > used ? mi[SK_MEMINFO_SNDBUF] - used : 0;
}

/* Before a splice that reads (POLLIN) or writes (POLLOUT) endpoint e: a
 * blocking socket there is polled first, and a sink is given no more
 * than its send buffer takes. 0: splice *n bytes now; 1: a poll waits;
 * -errno. */
static int gate(uaio_flow *f, uaio_op *op, bool *ready, const struct flow_ep *e,
		short ev, uint64_t *n)
{
	uint64_t room;
	int ret;

	if (!waits_for_peer(f, e, ev))
		return 0;
	room = ev == POLLOUT ? sock_room(e->fd) : UINT64_MAX;
	if (!*ready || !room)
		return (ret = wait_ready(f, op, e->fd, ev)) < 0 ? ret : 1;
	*ready = false;
	if (*n > room)
		*n = room;
	return 0;
}

/* A seekable source is read at explicit offsets: what sits in the flow's
 * pipe, taken but not moved, is read again by the next method. */
static void give_back(uaio_flow *f)
{
	struct splice_run *r = f->run;

	r->inpipe = 0;
	f->taken = f->moved;
	f->flags &= ~FF_EOF;
}

static void splice_in_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;
	struct splice_run *r = f->run;

	f->inflight--;
	r->asked = 0;
	if (r->refused) {
		res = r->refused;
		r->refused = 0;
		give_back(f);
		flow__fail(f, res, UAIO_FLOW_SIDE_DST);
		flow__step_done(f);
		return;
	}
	if (res > 0) {
		flow__taken(f, (uint64_t)res);
		if (direct(f))
			flow__moved(f, (uint64_t)res);
		else
			r->inpipe += (uint64_t)res;
	} else if (res == 0 || ((res == -EINVAL || res == -EIO) && flow__src_hung_up(f))) {
		flow__eof(f);
	} else if (res == -EAGAIN && f->err) {
		/* Ending (a cancel found it running): no wait, which no
		 * cancel would reach. */
	} else if (res == -EAGAIN && !direct(f) && r->inpipe) {
		/* Our pipe's slots are full (partial pages) though it has bytes
		 * to spare: the drain's completion lets the fill go on. A poll
		 * of a file source would find it ready at once, a busy loop. */
		r->full = true;
	} else if (res == -EAGAIN) {
		/* Direct, either end may be the one not ready. */
		struct pollfd pf[2] = { { f->src.fd, POLLIN, 0 }, { f->dst.fd, POLLOUT, 0 } };
		bool src = !direct(f) || poll(pf, 2, 0) < 0 || !pf[0].revents;

		res = src ? wait_ready(f, &r->in, f->src.fd, POLLIN) :
			    wait_ready(f, &r->in, f->dst.fd, POLLOUT);
		if (res < 0)
			flow__fail(f, res, src ? UAIO_FLOW_SIDE_SRC : UAIO_FLOW_SIDE_DST);
	} else {
		flow__fail(f, res, direct(f) ? flow__side_of(f, res) : UAIO_FLOW_SIDE_SRC);
	}
	salvage(f);
	flow__step_done(f);
}

static void splice_out_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;
	struct splice_run *r = f->run;

	f->inflight--;
	if (res > 0) {
		r->inpipe -= (uint64_t)res;
		r->full = false;
		flow__moved(f, (uint64_t)res);
	} else if (res == -EAGAIN) {
		if (flow__writes(f) && (res = wait_ready(f, &r->out, f->dst.fd, POLLOUT)) < 0)
			flow__fail(f, res, UAIO_FLOW_SIDE_DST);
	} else if (!flow__writes(f)) {
		r->sink_failed = true;	/* ending: a drain of what was left failed */
		if (salvages(f))	/* (others' drains are cancelled) */
			flow__lost(f, res ? res : -ENOSPC, UAIO_FLOW_SIDE_DST);
	} else if (flow__fallback_err(res) && f->src.seek && !direct(f)) {
		/* A sink without splice support (/dev/full and most character
		 * devices): the bytes go back, and kbuf takes over. */
		if (uaio_op_pending(&r->in)) {	/* a fill: a file is never polled */
			r->refused = res;
			flow__cancel_op(f, &r->in);
		} else {
			give_back(f);
			flow__fail(f, res, UAIO_FLOW_SIDE_DST);
		}
	} else {
		r->sink_failed = true;
		flow__fail(f, res ? res : -ENOSPC, UAIO_FLOW_SIDE_DST);
	}
	salvage(f);
	flow__step_done(f);
}

/* File to file (copy_file_range refused: another file system, a /proc
 * file): both halves of a step on one loop worker, through the flow's
 * pipe, where io_uring would run each half on io-wq as an op of its own.
 * 1 GiB warm onto a second ext4: 0.27 s of CPU against 0.42 s as io_uring
 * ops and 0.37-0.49 s through kbuf (docs/flows.md). */
static long do_files_step(void *arg)
{
	uaio_flow *f = arg;
	struct splice_run *r = f->run;
	loff_t in = flow__src_off(f, f->taken), out = flow__dst_off(f, f->moved);
	ssize_t n;

	for (;;) {
		/* Drained first: a step that failed on the sink left bytes. */
		while (r->inpipe) {
			if ((n = splice(r->pfd[0], NULL, f->dst.fd, &out, r->inpipe,
					SPLICE_F_MOVE)) <= 0) {
				r->side = UAIO_FLOW_SIDE_DST;
				return n < 0 ? -errno : -ENOSPC;
			}
			r->inpipe -= (uint64_t)n;
			r->step_out += (uint64_t)n;
		}
		if (r->step_in >= r->asked)
			return 0;
		n = splice(f->src.fd, &in, r->pfd[1], NULL,
			   r->asked - r->step_in < r->pipesz ? r->asked - r->step_in : r->pipesz,
			   SPLICE_F_MOVE);
		if (n <= 0) {
			r->side = UAIO_FLOW_SIDE_SRC;
			return n < 0 ? -errno : 0;
		}
		r->inpipe = (uint64_t)n;
		r->step_in += (uint64_t)n;
	}
}

static void files_step_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = data;
	struct splice_run *r = f->run;
	bool short_step = r->step_in < r->asked;

	f->inflight--;
	r->asked = 0;
	flow__taken(f, r->step_in);
	flow__moved(f, r->step_out);
	/* A fail may change the method: r is not touched after it. */
	if (res < 0)
		flow__fail(f, res, r->side);
	else if (short_step && !f->taken)	/* "nothing here" (/proc) */
		flow__fail(f, -ENODATA, UAIO_FLOW_SIDE_SRC);
	else if (short_step)			/* the source ended */
		flow__eof(f);
	flow__step_done(f);
}

static void files_kick(uaio_flow *f)
{
	struct splice_run *r = f->run;
	uint64_t n;
	int ret;

	if (uaio_op_pending(&r->in) || !(n = flow__allow(f, flow__step_len(f, FLOW_PAGECACHE_CHUNK), 0)))
		return;
	r->asked = n;
	/* Here, not in the job: one cancelled before a worker ran it would
	 * count the last step's bytes again (and the positions past them). */
	r->step_in = r->step_out = 0;
	r->side = UAIO_FLOW_SIDE_NONE;
	if ((ret = uaio_op_work(f->l, &r->in, do_files_step, f, files_step_done, f)) < 0) {
		flow__fail(f, ret, UAIO_FLOW_SIDE_NONE);
		return;
	}
	f->inflight++;
}

static void splice_kick(uaio_flow *f)
{
	struct splice_run *r = f->run;
	uint64_t room, n;
	int ret;

	if (files_only(f)) {
		files_kick(f);
		return;
	}

	if (!uaio_op_pending(&r->in) && !r->full) {
		room = direct(f) ? flow__step_len(f, PIPE_BYTES) : r->pipesz - r->inpipe;
		if (room && (n = flow__allow(f, room, 0))) {
			/* Direct from a pipe, the socket is the sink. */
			bool to_sock = direct(f) && f->src.kind == EK_PIPE;

			ret = gate(f, &r->in, &r->in_ready, to_sock ? &f->dst : &f->src,
				   to_sock ? POLLOUT : POLLIN, &n);
			if (ret == 0)
				ret = uaio_op_splice(f->l, &r->in, f->src.fd,
						     flow__src_off(f, f->taken),
						     direct(f) ? f->dst.fd : r->pfd[1],
						     direct(f) ? flow__dst_off(f, f->moved) : -1,
						     n, splice_flags(f), splice_in_done, f);
			if (ret < 0) {
				flow__fail(f, ret, UAIO_FLOW_SIDE_NONE);
				return;
			}
			if (ret == 0) {
				r->asked = n;
				f->inflight++;
			}
		}
	}
	/* Drained only as far as it is known to hold: never a wait on an
	 * empty pipe. Errors end the flow without draining, but for a
	 * failed stream's bytes (the flush). */
	if (!direct(f) && r->inpipe && !uaio_op_pending(&r->out) && flow__writes(f)) {
		n = r->inpipe;
		ret = gate(f, &r->out, &r->out_ready, &f->dst, POLLOUT, &n);
		if (ret == 0)
			ret = drain(f, n);
		if (ret < 0) {
			flow__fail(f, ret, UAIO_FLOW_SIDE_NONE);
			return;
		}
		if (ret == 0)
			f->inflight++;
	}
}

const struct flow_method flow__splice = {
	.name = "splice", .mode = UAIO_FLOW_PAGECACHE, .fits = splice_fits,
	.setup = splice_setup, .kick = splice_kick, .cancel = splice_cancel,
	.teardown = splice_teardown, .can_leave = splice_can_leave,
};
