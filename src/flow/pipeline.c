/* SPDX-License-Identifier: MIT */
/*
 * The buffered methods: a ring of depth chunks, each read (kbuf: into a
 * registered buffer of the flow's, or straight into the sink's memory;
 * mmap: a window of the source mapped), tapped in source order, then
 * written (straight from the source's memory when the source is memory).
 * Seekable sources have every free chunk reading at once; a stream has
 * one read at a time. Seekable sinks take chunks as they come; streams
 * and O_APPEND files in order, one write at a time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flow/engine.h"

#define KBUF_CHUNK	(256u << 10)
#define MMAP_CHUNK	(1u << 20)

enum { S_FREE, S_READ, S_FILLED, S_TAPPED, S_WRITE };

struct slot {
	uaio_op op;
	char *buf;		/* where the chunk's bytes are */
	uint64_t pos;		/* flow position of its first byte */
	uint32_t asked, got, wdone;
	uint8_t st;
	bool mapped;		/* buf is a mapping (mmap mode) */
	uint32_t map_delta;	/* buf - the mapping's start */
};

struct pipe_run {
	char *mem;		/* depth * chunk, ours (kbuf with no memory end) */
	int idx;		/* mem's registered buffer, or -1 */
	uint32_t chunk;
	uint64_t next_pos;	/* flow position of the next read */
	uint64_t eof_pos;	/* the source ended here (UINT64_MAX: not yet) */
	uint32_t rseq, tseq, wseq;	/* next to read, tap, write (ordered sinks) */
	uint64_t hole;		/* the first byte a failed chunk left unwritten */
	unsigned reading;
	bool writing;		/* ordered sinks: a write in flight */
	bool map;		/* mmap mode, and the source has a size to map */
	struct slot s[];
};

#define RUN(f)	((struct pipe_run *)(f)->run)

/* Written one chunk after another, in order: a stream or O_APPEND sink,
 * and the source's own file in mmap mode (the flow starts only a sink
 * behind its source there). A mapped chunk's bytes are read by its
 * write: a later chunk written first would overwrite the tail of an
 * earlier one's source before that one was written (memmove(3) order). */
static bool ordered_sink(const uaio_flow *f)
{
	return f->dst.kind != EK_MEM &&
	       (!f->dst.seek || f->dst.append ||
		(f->cur == UAIO_FLOW_MMAP && flow__same_file(f)));
}

static bool pipeline_fits(const uaio_flow *f)
{
	if (f->cur == UAIO_FLOW_MMAP || f->mode == UAIO_FLOW_MMAP)
		return (f->src.kind == EK_FILE || f->src.kind == EK_BLK) &&
		       f->dst.kind != EK_MEM;
	return true;
}

static uint64_t source_size(const uaio_flow *f)
{
	struct stat st;
	uint64_t sz = 0;

	if (f->src.kind == EK_BLK)
		ioctl(f->src.fd, BLKGETSIZE64, &sz);
	else if (fstat(f->src.fd, &st) == 0)
		sz = (uint64_t)st.st_size;
	return sz > (uint64_t)f->src.off ? sz - (uint64_t)f->src.off : 0;
}

/* A file whose size is no promise of a mapping (sysfs says 4096 and
 * refuses mmap with ENODEV): read, as kbuf reads it. */
static bool mappable(const uaio_flow *f, uint64_t pos)
{
	long pg = sysconf(_SC_PAGESIZE);
	int64_t off = f->src.off + (int64_t)pos;
	void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_SHARED, f->src.fd, off - off % pg);

	if (m == MAP_FAILED)
		return false;
	munmap(m, (size_t)pg);
	return true;
}

static int pipeline_setup(uaio_flow *f)
{
	bool mm = f->cur == UAIO_FLOW_MMAP;
	uint32_t chunk = f->chunk ? f->chunk : mm ? MMAP_CHUNK : KBUF_CHUNK;
	struct pipe_run *r = calloc(1, sizeof(*r) + f->depth * sizeof(struct slot));
	size_t bytes = (size_t)chunk * f->depth;

	if (!r)
		return -ENOMEM;
	r->idx = -1;
	r->chunk = chunk;
	r->eof_pos = UINT64_MAX;
	r->hole = UINT64_MAX;
	/* The flow goes on from where another method stopped. */
	r->next_pos = f->taken;
	if (mm) {
		/* Mapping past the end of the file would fault: the flow ends
		 * where the source ends now. A file that says size 0 may still
		 * have bytes (/proc, sysfs): it is read, as kbuf reads it. */
		uint64_t size = source_size(f);

		r->map = size > 0 && mappable(f, r->next_pos);
		if (r->map && f->want > size)
			f->want = size;
	}
	if (!r->map && f->src.kind != EK_MEM && f->dst.kind != EK_MEM) {
		r->mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r->mem == MAP_FAILED) {
			free(r);
			return -ENOMEM;
		}
		/* Without the right to pin pages (RLIMIT_MEMLOCK) the same
		 * buffer serves plain reads and writes. */
		r->idx = uaio_buf_register(f->l, r->mem, bytes);
		if (r->idx < 0)
			r->idx = -1;
	}
	f->run = r;
	return 0;
}

static void unmap_slot(struct slot *s)
{
	if (s->mapped) {
		munmap(s->buf - s->map_delta, s->map_delta + s->asked);
		s->mapped = false;
	}
}

static void pipeline_teardown(uaio_flow *f)
{
	struct pipe_run *r = RUN(f);

	for (unsigned i = 0; i < f->depth; i++)
		unmap_slot(&r->s[i]);
	if (r->idx >= 0)
		uaio_buf_unregister(f->l, r->idx);
	if (r->mem)
		munmap(r->mem, (size_t)r->chunk * f->depth);
	free(r);
	f->run = NULL;
}

static bool fills(const uaio_flow *f);
static bool salvages(const uaio_flow *f);
static int issue_write(uaio_flow *f, struct slot *s);
static void salvage(uaio_flow *f, struct slot *s);

/* Bytes a stream gave a file's chunk are written, not dropped (salvages):
 * a write of them is left to finish, a chunk filled is written (untapped:
 * the tap hears nothing after the end), and a socket's receive that
 * filled part of one (MSG_DONTWAIT, at once) is left to end and then
 * written. */
static void pipeline_cancel(uaio_flow *f)
{
	struct pipe_run *r = RUN(f);

	for (unsigned i = 0; i < f->depth; i++) {
		struct slot *s = &r->s[i];

		if (salvages(f) && (s->st == S_WRITE || (s->st == S_READ && s->got)))
			continue;
		if (salvages(f) && (s->st == S_FILLED || s->st == S_TAPPED) && s->got)
			salvage(f, s);
		else
			flow__cancel_op(f, &s->op);
	}
}

static bool pipeline_can_leave(const uaio_flow *f)
{
	return false;		/* the last method of every chain */
}

/* --------------------------------------------------------------- steps */

/* Chunk s leaves the flow before all of it was written (a failed read or
 * write, a cancel): a seekable sink may have later chunks already, so
 * the first byte it left unwritten is kept (pipeline_done_upto). */
static void lost_chunk(uaio_flow *f, struct slot *s)
{
	struct pipe_run *r = RUN(f);

	if (s->pos + s->wdone < r->hole)
		r->hole = s->pos + s->wdone;
}

static void chunk_written(uaio_flow *f, struct slot *s);

/* A read goes into a memory sink and a write comes from a memory source
 * or a window of the mapped source: their -EFAULT (a wrong buf_index,
 * memory not mapped, a source file cut short under its mapping) is that
 * end's. */
static int read_side(const uaio_flow *f, int err)
{
	return err == -EFAULT && f->dst.kind == EK_MEM ? UAIO_FLOW_SIDE_DST : UAIO_FLOW_SIDE_SRC;
}

static int write_side(const uaio_flow *f, const struct slot *s, int err)
{
	return err == -EFAULT && (f->src.kind == EK_MEM || s->mapped) ?
	       UAIO_FLOW_SIDE_SRC : UAIO_FLOW_SIDE_DST;
}

/* Chunk s, which a socket filled, is written as it is: the flow is
 * ending (pipeline_cancel). */
static void salvage(uaio_flow *f, struct slot *s)
{
	int err;

	s->st = S_WRITE;
	if ((err = issue_write(f, s)) < 0) {
		flow__lost(f, err, UAIO_FLOW_SIDE_DST);
		lost_chunk(f, s);
		chunk_written(f, s);
		return;
	}
	f->inflight++;
}

static void read_failed(uaio_flow *f, struct slot *s, int err)
{
	lost_chunk(f, s);
	s->st = S_FREE;
	flow__fail(f, err, read_side(f, err));
}

static void write_failed(uaio_flow *f, struct slot *s, int err)
{
	int side = write_side(f, s, err);	/* before the slot is freed */

	if (salvages(f))		/* a stream's bytes, written after a cancel */
		flow__lost(f, err, side);

	lost_chunk(f, s);
	chunk_written(f, s);
	flow__fail(f, err, side);
}

static void read_done(uaio_op *op, int res, void *data);
static void write_done(uaio_op *op, int res, void *data);

static struct slot *slot_of(uaio_op *op)
{
	return (struct slot *)op;	/* op is the first member */
}

static uaio_flow *flow_of(uaio_op *op)
{
	return op->data;
}

/*
 * Into a file, a socket's chunk takes what the socket holds: one write
 * per chunk, not per segment; a stream sink gets what arrived at once.
 * After the first receive the chunk is filled by receives that do not
 * wait (MSG_DONTWAIT): when the socket is empty, what arrived is written
 * at once, so it counts, and a cancel while the peer is quiet finds no
 * bytes taken from the socket and not written. Not one MSG_WAITALL
 * receive: that one, stopped by a reset after a part, returns the part,
 * and the reset is gone (the next receive says 0, a clean end), so a cut
 * transfer would have passed for a whole one.
 */
static bool fills(const uaio_flow *f)
{
	return f->src.kind == EK_SOCK && f->dst.seek && !f->dst.append;
}

/* Bytes a stream (socket, pipe, character device) gave a file are
 * written, not dropped, when the flow ends (a cancel): they are out of
 * the stream, and a file's write does not wait for a peer. */
static bool salvages(const uaio_flow *f)
{
	return !f->src.seek && f->src.kind != EK_MEM && f->dst.seek && !f->dst.append &&
	       f->dst.kind != EK_MEM;
}

/* Reads the rest of s (asked - got). */
static int issue_read(uaio_flow *f, struct slot *s)
{
	struct pipe_run *r = RUN(f);
	char *buf = s->buf + s->got;
	uint32_t len = s->asked - s->got;
	int fd = f->src.fd, idx = r->idx;
	int64_t off = flow__src_off(f, s->pos + s->got);

	if (f->dst.kind == EK_MEM)
		idx = f->dst.mem_idx;
	if (f->src.kind == EK_SOCK)
		return uaio_op_recv(f->l, &s->op, fd, buf, len, s->got ? MSG_DONTWAIT : 0,
				    read_done, f);
	if (idx >= 0)
		return uaio_op_read_fixed(f->l, &s->op, fd, buf, len, off, idx, read_done, f);
	return uaio_op_read(f->l, &s->op, fd, buf, len, off, read_done, f);
}

static int issue_write(uaio_flow *f, struct slot *s)
{
	struct pipe_run *r = RUN(f);
	const char *buf = s->buf + s->wdone;
	uint32_t len = s->got - s->wdone;
	int fd = f->dst.fd, idx = r->idx;
	int64_t off = flow__dst_off(f, s->pos + s->wdone);

	if (f->src.kind == EK_MEM)
		idx = f->src.mem_idx;
	if (f->dst.kind == EK_SOCK)	/* a closed peer is -EPIPE, not SIGPIPE */
		return uaio_op_send(f->l, &s->op, fd, buf, len, MSG_NOSIGNAL, write_done, f);
	if (idx >= 0 && !s->mapped)
		return uaio_op_write_fixed(f->l, &s->op, fd, buf, len, off, idx, write_done, f);
	return uaio_op_write(f->l, &s->op, fd, buf, len, off, write_done, f);
}

/* The source side of chunk s, n bytes at the flow's next position. 0, or
 * -errno for the flow to fail with. */
static int start_chunk(uaio_flow *f, struct slot *s, uint32_t n)
{
	struct pipe_run *r = RUN(f);
	uint64_t pos = r->next_pos;
	int ret;

	*s = (struct slot){ .pos = pos, .asked = n, .st = S_READ };
	if (f->src.kind == EK_MEM) {
		s->buf = f->src.mem + pos;
		s->got = n;
		s->st = S_FILLED;
	} else if (r->map) {
		int64_t off = f->src.off + (int64_t)pos;
		long pg = sysconf(_SC_PAGESIZE);
		uint32_t delta = (uint32_t)(off % pg);
		void *m = mmap(NULL, delta + n, PROT_READ, MAP_SHARED, f->src.fd, off - delta);

		if (m == MAP_FAILED) {
			s->st = S_FREE;
			return -errno;
		}
		s->buf = (char *)m + delta;
		s->map_delta = delta;
		s->mapped = true;
		s->got = n;
		s->st = S_FILLED;
	} else {
		s->buf = f->dst.kind == EK_MEM ? f->dst.mem + pos :
			 r->mem + (size_t)(r->rseq % f->depth) * r->chunk;
		if ((ret = issue_read(f, s)) < 0) {
			s->st = S_FREE;
			return ret;
		}
		f->inflight++;
		r->reading++;
	}
	r->next_pos += n;
	r->rseq++;
	return 0;
}

static void read_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = flow_of(op);
	struct pipe_run *r = RUN(f);
	struct slot *s = slot_of(op);

	f->inflight--;
	r->reading--;
	if (res == -EIO && flow__src_hung_up(f))
		res = 0;	/* a tty's end, as splice takes it */
	/* Ending: what the socket gave this file's chunk is written, and
	 * nothing more is asked of the socket. */
	if (f->err && salvages(f) && (s->got || res > 0)) {
		s->got += res > 0 ? (uint32_t)res : 0;
		salvage(f, s);
	} else if (res == -EAGAIN && fills(f) && s->got) {
		s->st = S_FILLED;	/* the socket is empty for now */
		r->next_pos = s->pos + s->got;
	} else if (res < 0 && !f->src.seek && s->got) {
		/* What the stream gave the chunk before it failed is the
		 * sink's (the flow flushes it, flow__abort). */
		s->st = S_FILLED;
		r->next_pos = s->pos + s->got;
		flow__fail(f, res, read_side(f, res));
	} else if (res < 0) {
		read_failed(f, s, res);
	} else if (res == 0 || (!f->src.seek && !fills(f))) {
		/* A stream's chunk is what one read gave; 0 ends the source. */
		s->got += (uint32_t)res;
		s->st = S_FILLED;
		if (!f->src.seek)
			r->next_pos = s->pos + s->got;
		if (res == 0 && s->pos + s->got < r->eof_pos)
			r->eof_pos = s->pos + s->got;
	} else if ((s->got += (uint32_t)res) < s->asked) {
		/* A short read of a file, or of a socket that fills its chunk:
		 * the rest, or 0 at its end, or the error that stopped it. */
		if ((res = issue_read(f, s)) < 0) {
			read_failed(f, s, res);
		} else {
			f->inflight++;
			r->reading++;
		}
	} else {
		s->st = S_FILLED;
	}
	/* Ending (a cancel came after the receive was done): what a stream
	 * gave a memory sink is there, and counts (untapped: the tap hears
	 * nothing after the end). Not counted, it was out of the stream and
	 * reported nowhere. */
	if (!flow__writes(f) && f->dst.kind == EK_MEM && !f->src.seek &&
	    s->st == S_FILLED && r->tseq % f->depth == (uint32_t)(s - r->s)) {
		flow__taken(f, s->got);
		flow__moved(f, s->got);
		s->st = S_FREE;
		r->tseq++;
	}
	flow__step_done(f);
}

static void chunk_written(uaio_flow *f, struct slot *s)
{
	struct pipe_run *r = RUN(f);

	unmap_slot(s);
	s->st = S_FREE;
	if (ordered_sink(f)) {
		r->writing = false;
		r->wseq++;
	}
}

static void write_done(uaio_op *op, int res, void *data)
{
	uaio_flow *f = flow_of(op);
	struct slot *s = slot_of(op);

	f->inflight--;
	if (res <= 0) {
		write_failed(f, s, res ? res : -ENOSPC);	/* took nothing: full (GNU full_write) */
	} else {
		s->wdone += (uint32_t)res;
		flow__moved(f, (uint64_t)res);
		if (s->wdone < s->got && !flow__writes(f) && !salvages(f)) {
			/* Ending (progress may have cancelled): the rest is not
			 * sent, where no cancel would reach its wait. A file's
			 * rest is (pipeline_cancel): no peer to wait for. */
			lost_chunk(f, s);
			chunk_written(f, s);
		} else if (s->wdone < s->got) {		/* a short write: the rest */
			s->st = S_WRITE;
			if ((res = issue_write(f, s)) < 0) {
				write_failed(f, s, res);
			} else {
				f->inflight++;
			}
		} else {
			chunk_written(f, s);
		}
	}
	flow__step_done(f);
}

/* Taps the filled chunks in source order. false: the flow failed. */
static bool tap_in_order(uaio_flow *f)
{
	struct pipe_run *r = RUN(f);

	for (;;) {
		struct slot *s = &r->s[r->tseq % f->depth];
		int ret;

		/* ended (a cancel, a failure): its tap hears nothing more,
		 * but for what a failed stream gave before (the flush) */
		if (!flow__writes(f))
			return true;
		if (r->tseq == r->rseq || s->st != S_FILLED)
			return true;
		/* Past the source's end: a file that grew under a later read
		 * gives nothing the flow will use. */
		if (s->pos >= r->eof_pos) {
			s->got = 0;
		} else if (s->pos + s->got > r->eof_pos) {
			s->got = (uint32_t)(r->eof_pos - s->pos);
		}
		if (s->got && f->tap &&
		    (ret = f->tap(f, s->buf, s->got, s->pos, f->data)) < 0) {
			/* refused: never the sink's, not even a stream's
			 * chunk the end would write (salvages) */
			lost_chunk(f, s);
			unmap_slot(s);
			s->st = S_FREE;
			flow__abort(f, ret, UAIO_FLOW_SIDE_NONE);
			return false;
		}
		flow__taken(f, s->got);
		if (r->eof_pos != UINT64_MAX && s->pos + s->got >= r->eof_pos)
			flow__eof(f);
		r->tseq++;
		s->st = S_TAPPED;
		if (f->dst.kind == EK_MEM || (!s->got && !ordered_sink(f))) {
			/* Already where the sink wants it, or nothing to write
			 * (an ordered sink passes empty chunks in its turn). */
			flow__moved(f, s->got);
			s->st = S_FREE;
			unmap_slot(s);
		}
	}
}

/* Reads may go side by side, each at its offset: memory, block devices
 * (whose st_size is 0), and files with a size. A file that says 0
 * (/proc, sysfs: a seq_file) is read one chunk after the other, in
 * order: a read at another offset makes its kernel side start over from
 * the beginning (/proc/kallsyms took 35 s of CPU, cat 0.07 s). */
static bool side_by_side(const uaio_flow *f)
{
	return f->src.kind == EK_MEM || f->src.kind == EK_BLK ||
	       (f->src.kind == EK_FILE && f->src.size);
}

static void pipeline_kick(uaio_flow *f)
{
	struct pipe_run *r = RUN(f);
	uint64_t n;
	int ret;

	for (;;) {
		uint64_t tapped = r->tseq;

		/* Reads, into free chunks in ring order. */
		while (r->s[r->rseq % f->depth].st == S_FREE &&
		       (side_by_side(f) || !r->reading) &&
		       r->eof_pos == UINT64_MAX) {
			if (!(n = flow__allow(f, r->chunk, r->next_pos - f->taken)))
				break;
			if ((ret = start_chunk(f, &r->s[r->rseq % f->depth], (uint32_t)n)) < 0) {
				flow__fail(f, ret, read_side(f, ret));
				if (!flow__flushing(f))
					return;
				break;	/* what the stream gave before still goes */
			}
		}
		if (!tap_in_order(f))
			return;
		/* A memory sink frees its chunks as they are tapped, and no
		 * write's end comes to kick the flow again: read into them
		 * now (else, the last read in flight done, the flow stood
		 * still for ever). */
		if (f->dst.kind != EK_MEM || r->tseq == tapped || f->err)
			break;
	}
	/* Writes: any tapped chunk to a seekable sink; the next in order,
	 * one at a time, to a stream. */
	for (unsigned i = 0; i < f->depth && flow__writes(f); i++) {
		struct slot *s = ordered_sink(f) ? &r->s[r->wseq % f->depth] : &r->s[i];

		if (ordered_sink(f) && (r->writing || r->wseq == r->tseq))
			break;
		if (s->st != S_TAPPED)
			continue;
		if (!s->got) {
			chunk_written(f, s);
			continue;
		}
		s->st = S_WRITE;
		if ((ret = issue_write(f, s)) < 0) {
			write_failed(f, s, ret);
			return;
		}
		f->inflight++;
		r->writing = ordered_sink(f);
	}
}

/* A seekable sink takes chunks as they come: the bytes whole from the
 * start end at the first chunk lost or still held, if any. */
static uint64_t pipeline_done_upto(const uaio_flow *f)
{
	const struct pipe_run *r = RUN(f);
	uint64_t upto = f->moved < r->hole ? f->moved : r->hole;

	for (unsigned i = 0; i < f->depth; i++) {
		const struct slot *s = &r->s[i];

		if (s->st != S_FREE && s->pos + s->wdone < upto)
			upto = s->pos + s->wdone;
	}
	return upto;
}

const struct flow_method flow__pipeline = {
	.name = "pipeline", .mode = UAIO_FLOW_AUTO, .fits = pipeline_fits,
	.setup = pipeline_setup, .kick = pipeline_kick, .cancel = pipeline_cancel,
	.teardown = pipeline_teardown, .can_leave = pipeline_can_leave,
	.done_upto = pipeline_done_upto,
};
