/* SPDX-License-Identifier: MIT */
/*
 * In-kernel data flows (FlexIO): a program names a source, a sink and a
 * length, and the loop moves the bytes, in the kernel wherever it can:
 * file <-> file, file <-> socket, socket <-> socket, pipes, devices, and
 * memory the program registered. Many flows run on one loop at once, each
 * independent. See docs/flows.md for the modes and the decision table.
 *
 * Flows belong to the loop's thread: start, pause, resume and cancel them
 * there (from callbacks, or between uaio_loop_run_once calls).
 */
#ifndef UAIO_FLOW_H
#define UAIO_FLOW_H

#include <stddef.h>
#include <stdint.h>
#include <uaio/loop.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uaio_flow uaio_flow;

/* How the bytes move (the seed's names). */
enum uaio_flow_mode {
	UAIO_FLOW_AUTO = 0,	/* pick per endpoint pair, fall back at run time */
	UAIO_FLOW_KBUF,		/* through registered buffers, several chunks in flight */
	UAIO_FLOW_PAGECACHE,	/* no buffer of ours: FICLONE, copy_file_range, sendfile, splice */
	UAIO_FLOW_MMAP		/* the source mapped, written from the mapping */
};

/* An endpoint: a descriptor (its type decides how it is used) or memory. */
enum uaio_flow_ep_type {
	UAIO_FLOW_FD = 0,	/* file, block or character device, pipe, socket */
	UAIO_FLOW_MEM		/* [mem, mem + mem_len) of the program's memory */
};

struct uaio_flow_ep {
	int type;		/* UAIO_FLOW_FD or UAIO_FLOW_MEM */
	int fd;
	/* Files and block devices: where to start; -1: the file position,
	 * which the flow then advances as read(2)/write(2) would. Others: -1. */
	int64_t off;
	void *mem;		/* UAIO_FLOW_MEM */
	size_t mem_len;
	/* UAIO_FLOW_MEM: the uaio_buf_register index covering mem, or -1. */
	int buf_index;
};

/* Which side an error came from (the done callback's side). */
#define UAIO_FLOW_SIDE_NONE	0
#define UAIO_FLOW_SIDE_SRC	1
#define UAIO_FLOW_SIDE_DST	2

#define UAIO_FLOW_EOF	UINT64_MAX	/* len: until the source ends */

struct uaio_flow_params {
	struct uaio_flow_ep src, dst;
	uint64_t len;		/* bytes, or UAIO_FLOW_EOF */
	int mode;		/* enum uaio_flow_mode */
	size_t chunk;		/* bytes per step; 0: the method's own (kbuf 256 KiB,
				 * mmap, sendfile and splice 1 MiB, copy_file_range
				 * and splice file to file 4 MiB) */
	unsigned depth;		/* kbuf, mmap: chunks in flight; 0: 4 */
	uint64_t rate;		/* bytes per second at most; 0: no limit */
	uint64_t progress_ns;	/* at most one progress call per this; 0: each step */

	/* Bytes the sink has taken so far (optional). */
	void (*progress)(uaio_flow *f, uint64_t bytes, void *data);
	/* The flow is over: res is the bytes moved (less than len when the
	 * source ended first) or -errno (-ECANCELED after uaio_flow_cancel),
	 * side says which end failed. A stream source's error comes after
	 * the bytes it gave reached the sink, and stays the result whatever
	 * ends that (a cancel, the sink, the tap). The flow is freed when
	 * this returns. */
	void (*done)(uaio_flow *f, int64_t res, int side, void *data);
	/* Optional: sees each chunk in place, in source order, before the
	 * sink gets it (no copy). A negative return ends the flow with that
	 * error. A tap makes AUTO choose kbuf; PAGECACHE refuses one. */
	int (*tap)(uaio_flow *f, const void *buf, size_t len, uint64_t pos,
		   void *data);
	void *data;
};

/* Starts a flow: 0 and *out, or -errno (-EINVAL: bad parameters or a mode
 * the endpoints cannot use; -EBADF; -ESPIPE: an offset on a stream;
 * -ENOMEM; -EMFILE / -ENFILE: no descriptors for splice's pipe; -ECHILD:
 * a parent's loop, in a forked child, as for the next three). The done
 * callback runs later, never from inside this call. */
int uaio_flow_start(uaio_loop *l, const struct uaio_flow_params *p,
		    uaio_flow **out);
/* Pause stops taking from the source (steps in flight finish, and what
 * the flow holds still goes to the sink); resume goes on. */
int uaio_flow_pause(uaio_flow *f);
int uaio_flow_resume(uaio_flow *f);
/* Ends the flow: steps in flight are cancelled, then done(-ECANCELED);
 * or, while it sends what a failed stream source gave, that sending
 * stops and done says the source's error. */
int uaio_flow_cancel(uaio_flow *f);
/* Bytes the sink has taken so far. */
uint64_t uaio_flow_bytes(const uaio_flow *f);
/* The mode in use now (AUTO resolved; changes when a fallback happens). */
int uaio_flow_mode(const uaio_flow *f);
/* The method moving the bytes now: "clone" (FICLONE), "copy_file_range",
 * "sendfile", "splice" or "pipeline" (kbuf or mmap chunks). */
const char *uaio_flow_method(const uaio_flow *f);
/* "auto", "kbuf", "pagecache", "mmap"; NULL for others. */
const char *uaio_flow_mode_name(int mode);
/* The mode named s, or -EINVAL. */
int uaio_flow_mode_parse(const char *s);

/* 1 when every page of the bytes [off, off + len) of file fd is in the
 * page cache (a read or send of them would not wait for the disk), 0 when
 * not, -errno on failure (-ENOSYS before Linux 6.5). Pages past the end
 * of the file are never cached: clip len at the size first. */
int uaio_file_cached(int fd, uint64_t off, uint64_t len);

#ifdef __cplusplus
}
#endif
#endif
