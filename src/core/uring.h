/* SPDX-License-Identifier: MIT */
/*
 * The io_uring backend's private header: its state, user_data tags, and
 * what its files (uring_submit.c: ops into the ring; uring.c: waiting
 * and reaping; uring_order.c: stream order; uring_rsrc.c: registered
 * files and buffers; uring_watch.c: watches) share.
 */
#ifndef UAIO_CORE_URING_H
#define UAIO_CORE_URING_H

#include <liburing.h>
#include <sys/epoll.h>

#include "core/internal.h"

#define TAG_OP		0u
#define TAG_WATCH	1u
#define TAG_WAKE	2u
#define TAG_IGNORE	3u
#define TAG_WREMOVE	4u	/* a watch's poll remove (pointers are 8-aligned) */
#define TAG_MASK	7u
#define EP_BATCH	256
#define EV_KEY		UINT64_MAX	/* the registered eventfd in the epoll set */
#define EV_WAKE		(UINT64_MAX - 1)	/* the loop's wake eventfd there */

struct uring_state {
	struct io_uring ring;
	unsigned cq_cap;	/* ops allowed in the kernel at once */
	unsigned kops;		/* ops + internal requests in the kernel */
	bool enabled;		/* R_DISABLED ring enabled by its issuer */
	pid_t reg_tid;		/* the thread whose table has the ring's fd registered */
	bool defer;		/* DEFER_TASKRUN: completions need GETEVENTS */
	bool wake_armed;
	unsigned wake_tail;	/* SQ tail just past the wake read's SQE */
	bool cancel_fd;
	/* uaio_op_cancel()s in the kernel (linked by next); addr2 set once
	 * their target ended here. Not a flag on the target: the target may
	 * be another loop's, whose op this loop must not touch. */
	uaio_op *cancels;
	/* Registered-file slots for uaio_file_pin(), registered on first use. */
	int *slot_free;
	unsigned nslots, nfree;
	int files_err;		/* registration failed: -errno */
	/* The kernel lets go of a file only up to a second after its slot
	 * is emptied (before 6.4): pins are duplicate descriptors instead,
	 * at most ndups of them. */
	bool slots_late;
	unsigned ndups;
	bool bufs_ready;	/* the sparse buffer table is registered */
	/* Level-triggered watches (see the top of this file). */
	int epfd, evfd;
	unsigned nep;		/* watches in the epoll set */
	/* Watches whose poll remove found the SQ full (linked by next). */
	uaio_watch *rm_head;
	/* Thread-safe loops' uaio_loop_fd(): the ring and the wake eventfd
	 * (submissions waiting for the driving thread). */
	int tsfd;
	struct epoll_event evs[EP_BATCH];
};

#define U(l) ((struct uring_state *)(l)->bs)

static inline uint64_t ud(const void *p, unsigned tag)
{
	return (uint64_t)(uintptr_t)p | tag;
}

/* uring_setup.c: the ring, made and torn down. */
int uring__init(uaio_loop *l, const struct uaio_loop_params *p);
void uring__fini(uaio_loop *l);
void uring__forsake(uaio_loop *l);

/* uring_submit.c */
void uring__cancels_settle(uaio_loop *l, uaio_op *op);
/* The first submitting thread enables the ring and becomes its issuer. */
int uring__ring_enable(uaio_loop *l);
int uring__ring_submit(uaio_loop *l);
int uring__submit(uaio_loop *l, uaio_op *op);
void uring__flush(uaio_loop *l);
/* Starts op on the issuing thread: 0, or -EAGAIN to wait for room. */
int uring__start(uaio_loop *l, uaio_op *op);
/* Ops that may enter past the completion budget (they end soon). */
bool uring__past_budget(const uaio_op *op);
/* Moves ops waiting for room into the ring while there is room. */
void uring__refill(uaio_loop *l);
/* first .. last (linked by next) wait for room ahead of the others. */
void uring__pending_front(uaio_loop *l, uaio_op *first, uaio_op *last);
/* An SQE, submitting what is queued if the SQ is full. */
struct io_uring_sqe *uring__get_sqe(uaio_loop *l);

/* uring.c */
/* Cancels the ring's read of the wake eventfd (epoll reads it now). */
void uring__cancel_wake(uaio_loop *l);

/* uring_watch.c: queues the poll removes that found no SQE. */
void uring__rm_retry(uaio_loop *l);
/* A poll remove's CQE for watch w. */
void uring__watch_rm_cqe(uaio_loop *l, uaio_watch *w, int res);

/* uring_order.c: one op at a time per side of a stream. */
int uring__order_hold(uaio_loop *l, uaio_op *op);
void uring__order_undo(uaio_loop *l, uaio_op *op);
/* An op's completion (res): the ops held behind it go, or, for an op
 * that returns a descriptor, that number's order is reset. */
bool uring__returns_fd(const uaio_op *op);
void uring__order_after(uaio_loop *l, uaio_op *op, int res);
void uring__order_pool_next(uaio_loop *l, uaio_op *op);
void uring__order_forget_fd(uaio_loop *l, int fd);
int uring__order_cancel(uaio_loop *l, uaio_op *target);
int uring__order_cancel_fd(uaio_loop *l, int fd);
/* Ops that look their descriptors up late (OPF_LATE: io_uring's worker,
 * or the pool's): counted as they go in (late.c), and as they end the
 * closes that waited for them go */
void uring__late_issued(uaio_loop *l, uaio_op *op);
void uring__late_ended(uaio_loop *l, uaio_op *op);

/* uring_rsrc.c */
int uring__pin(uaio_loop *l, int fd);
void uring__unpin(uaio_loop *l, int pinned);
int uring__buf_update(uaio_loop *l, unsigned idx, const struct iovec *iov);

/* uring_watch.c */
int uring__ep_setup(uaio_loop *l);
void uring__ep_leave(uaio_loop *l, uaio_watch *w);
void uring__end_watch_on_close(uaio_loop *l, int fd);
void uring__watch_cqe(uaio_loop *l, uaio_watch *w, int res, unsigned flags);
int uring__watch_arm(uaio_loop *l, uaio_watch *w);
int uring__watch_ring_polls(uaio_loop *l, int fd);
void uring__watch_stop(uaio_loop *l, uaio_watch *w);

#endif
