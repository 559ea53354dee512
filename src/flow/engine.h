/* SPDX-License-Identifier: MIT */
/*
 * Flows' private header. A flow is its endpoints, its counters and one
 * method at a time, chosen from a table (flow.c picks; methods.c,
 * splice.c and sendfile.c hold the in-kernel methods, pipeline.c the
 * buffered ones):
 *
 *   clone     FICLONE, the whole file at once (file -> file)
 *   cfr       copy_file_range steps (file -> file)
 *   sendfile  sendfile, inline when cachestat finds the range cached, else
 *             on a loop worker (file -> non-blocking socket)
 *   splice    splice, directly when one end is a pipe, else through a
 *             pipe of the flow's own (any descriptor pair)
 *   pipeline  chunks read into registered buffers (kbuf) or mapped from
 *             the source (mmap), tapped in order, then written
 *
 * flow.c owns the life cycle: start, the rate limit, progress, pause,
 * cancel, falling back to the next method, and the end. A method issues
 * steps with the loop's public ops only, counts them in f->inflight, and
 * reports through flow__moved(), flow__eof() and flow__fail().
 */
#ifndef UAIO_FLOW_ENGINE_H
#define UAIO_FLOW_ENGINE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uaio/flow.h>
#include <uaio/loop.h>

#include "core/uaio_core.h"

enum ep_kind { EK_FILE, EK_BLK, EK_CHR, EK_PIPE, EK_SOCK, EK_MEM };

struct flow_ep {
	int fd;
	uint8_t kind;
	bool seek;		/* positional I/O: a file or block device */
	bool set_pos;		/* off was -1: leave the file position after us */
	bool append;		/* O_APPEND: written in order, never at offsets */
	bool nonblock;		/* O_NONBLOCK */
	uint64_t size;		/* st_size when the flow started */
	dev_t dev;		/* st_dev (refused.c) */
	ino_t ino;		/* st_ino: the same file at both ends? */
	int64_t off;		/* where the flow starts (seek only) */
	char *mem;
	size_t mem_len;
	int mem_idx;		/* registered buffer, or -1 */
};

enum method { M_CLONE, M_CFR, M_SENDFILE, M_SPLICE, M_PIPELINE, M_COUNT };

/* Flow flags. */
#define FF_PAUSED	0x01
#define FF_ENDING	0x02	/* no new steps: error, cancel, EOF or all moved */
#define FF_EOF		0x04	/* the source ended (or want is reached) */
#define FF_STARTED	0x08
#define FF_TIMER	0x10	/* the timer waits for the rate limit */
#define FF_DONE		0x20	/* done is running or has run */
/* Ending with its stream source's error: what the flow took before it
 * still goes to the sink (steps that write only), as a read/write loop
 * would have written it; a stream cannot give it again. */
#define FF_FLUSH	0x40

struct uaio_flow {
	uaio_loop *l;
	struct flow_ep src, dst;
	uint64_t want;		/* bytes, or UAIO_FLOW_EOF */
	uint64_t taken;		/* bytes the source has given */
	uint64_t moved;		/* bytes the sink has taken */
	uint64_t rate, progress_ns;
	uint64_t t0;		/* the rate limit's origin */
	uint64_t paused_at;	/* loop time of the pause (FF_PAUSED) */
	uint64_t last_progress, last_progress_ns;	/* bytes, loop time */
	uint32_t chunk;
	uint16_t depth;
	uint8_t mode;		/* as asked */
	uint8_t cur;		/* the mode in use */
	uint8_t method;
	uint8_t flags;
	uint8_t err_side;
	int err;
	unsigned inflight;	/* ops of ours the loop still has */
	void *run;		/* the method's state */
	uaio_timer timer;	/* first kick, rate-limit waits */
	void (*progress)(uaio_flow *f, uint64_t bytes, void *data);
	void (*done)(uaio_flow *f, int64_t res, int side, void *data);
	int (*tap)(uaio_flow *f, const void *buf, size_t len, uint64_t pos,
		   void *data);
	void *data;
};

struct flow_method {
	const char *name;
	uint8_t mode;		/* the enum uaio_flow_mode it serves */
	/* Can this method move src -> dst at all? */
	bool (*fits)(const uaio_flow *f);
	int (*setup)(uaio_flow *f);	/* allocate f->run: 0 or -errno */
	void (*kick)(uaio_flow *f);	/* issue what may go now */
	void (*cancel)(uaio_flow *f);	/* cancel the steps in flight */
	void (*teardown)(uaio_flow *f);	/* free f->run; nothing in flight */
	/* May another method take over now, with nothing lost? */
	bool (*can_leave)(const uaio_flow *f);
	/* At the end: bytes from the start that are all at the sink (NULL:
	 * moved; a method that writes out of order can leave holes). */
	uint64_t (*done_upto)(const uaio_flow *f);
};

#define FLOW_PAGECACHE_CHUNK	(4u << 20)	/* bytes per copy_file_range or files step */

static inline bool flow__is_file(const struct flow_ep *e)
{
	return e->kind == EK_FILE;
}

/* One seekable file at both ends (its overlaps: flow.c, pipeline.c). */
static inline bool flow__same_file(const uaio_flow *f)
{
	return f->src.seek && f->dst.seek && f->src.dev == f->dst.dev &&
	       f->src.ino == f->dst.ino;
}

/* No end is the caller's memory, and no tap looks at the bytes. */
static inline bool flow__no_user_side(const uaio_flow *f)
{
	return f->src.kind != EK_MEM && f->dst.kind != EK_MEM && !f->tap;
}

static inline uint64_t flow__step_len(const uaio_flow *f, uint64_t dflt)
{
	return f->chunk ? f->chunk : dflt;
}

/* flow.c: what methods report and ask. */
/* Bytes the next step may take from the source, with outstanding bytes
 * asked for and not yet given (0: none now; the flow steps again by
 * itself when pause, rate or the end allow). */
uint64_t flow__allow(uaio_flow *f, uint64_t max, uint64_t outstanding);
void flow__taken(uaio_flow *f, uint64_t n);	/* the source gave n */
void flow__moved(uaio_flow *f, uint64_t n);	/* the sink took n */
void flow__eof(uaio_flow *f);			/* the source has ended */
/* A step failed: falls back when err allows it and the method can leave,
 * else ends the flow with err. */
void flow__fail(uaio_flow *f, int err, int side);
/* Ends the flow with err as given (a cancel, the tap's error): never read
 * as a method's refusal, nor -ENODATA as the source's end. */
void flow__abort(uaio_flow *f, int err, int side);
/* Ending while it flushes (FF_FLUSH): true, and the method may write. */
static inline bool flow__flushing(const uaio_flow *f)
{
	return f->flags & FF_FLUSH;
}
/* Whether the method may still write what it holds: the flow runs, or
 * it flushes a failed stream's bytes (not after a cancel or another
 * error). */
static inline bool flow__writes(const uaio_flow *f)
{
	return !f->err || flow__flushing(f);
}
/* A cancelled flow's write of bytes it took from a stream failed: the
 * end says err (from side), not -ECANCELED. */
void flow__lost(uaio_flow *f, int err, int side);
/* An op of the flow finished (after its counts): ends or goes on. */
void flow__step_done(uaio_flow *f);
/* Steps again at the loop's next iteration: for a kick that must not
 * step itself (a method changed under it, a budget spent). */
void flow__again(uaio_flow *f);
/* Cancels op in flight (the cancel's own op is allocated and freed). */
void flow__cancel_op(uaio_flow *f, uaio_op *op);
/* Source position of byte n of the flow (seekable endpoints). Summed
 * unsigned: past INT64_MAX it goes negative, which the kernel refuses
 * (EINVAL, as pread(2) near the largest offset), not undefined. */
static inline int64_t flow__src_off(const uaio_flow *f, uint64_t n)
{
	return f->src.seek ? (int64_t)((uint64_t)f->src.off + n) : -1;
}
static inline int64_t flow__dst_off(const uaio_flow *f, uint64_t n)
{
	return f->dst.seek && !f->dst.append ? (int64_t)((uint64_t)f->dst.off + n) : -1;
}
/* The errors a method change may cure (copy_file_range across file
 * systems, splice on files without splice support, and the like). */
static inline bool flow__fallback_err(int err)
{
	return err == -EXDEV || err == -EINVAL || err == -ENOSYS ||
	       err == -EOPNOTSUPP || err == -EPERM || err == -ENOTTY ||
	       err == -ENODATA;	/* a method's "nothing here" (copy_file_range's 0 on /proc) */
}

/* refused.c: whether method m was refused between these two file
 * systems before (and so is not tried), and noting a refusal. */
bool flow__refused(const uaio_flow *f, int m);
void flow__refusal(const uaio_flow *f, int m, int err);

/* Which side an error of a step that both reads and writes belongs to
 * (copy_file_range, sendfile, a direct splice): EBADF is the sink's when
 * its descriptor is closed or no longer open for writing (the program's
 * close or dup2 meanwhile), else the source's; the rest by the error. */
int flow__side_of(const uaio_flow *f, int err);
/* A tty source whose other end went away (a pty's master closed, or its
 * slaves) has no read or splice left: a read gives EIO (a pty) or 0, a
 * splice EINVAL, or EIO when the hang-up found it waiting (io_uring).
 * That is its end, for every method, and what it gave before goes on
 * to the sink. */
bool flow__src_hung_up(const uaio_flow *f);

/* methods.c, splice.c */
extern const struct flow_method flow__clone, flow__cfr, flow__splice;
/* Cancel and teardown of a method whose state is one allocation that
 * begins with its one op (clone, copy_file_range, sendfile). */
void flow__one_cancel(uaio_flow *f);
void flow__one_teardown(uaio_flow *f);
/* sendfile.c */
extern const struct flow_method flow__sendfile;
/* pipeline.c */
extern const struct flow_method flow__pipeline;

#endif
