/* SPDX-License-Identifier: MIT */
/*
 * The epoll backend's private header: its state and what its files
 * share (epoll.c: the backend's entry points; epoll_fdq.c: the ops
 * queued per descriptor and the one epoll registration each has;
 * epoll_pos.c: the ops that run on the pool in their turn).
 */
#ifndef UAIO_CORE_EPOLL_H
#define UAIO_CORE_EPOLL_H

#include <sys/epoll.h>

#include "core/internal.h"

#define WAKE_KEY	UINT64_MAX
/* A blocking call on a worker: the caller's flag, or the backend's */
#define OX_EP_BLOCKING	(OX_BLOCKING | OX_WORKCALL)
#define MAX_EVENTS	256

struct uaio_fdq {
	uaio_op *rh, *rt;	/* read-side ops, FIFO */
	uaio_op *wh, *wt;	/* write-side ops, FIFO */
	uint32_t reg;		/* events registered with epoll */
	bool idle_marked;	/* on idle[]: maybe deregister next round */
	/* Per side: wake-ups in a row whose first op answered EAGAIN, and
	 * (bit 1 << side) the sides epoll does not watch until es->muted
	 * says: readiness that no call can use (epoll_fdq.c, mute_side). */
	uint8_t dry[2];
	uint8_t muted;
	/* A regular file at its position (off -1), per side (0 read, 1
	 * write): the op on a worker, and the ops held behind it (OS_HELD),
	 * which go one at a time, as io_uring keeps a stream's order. */
	uaio_op *pbusy[2];
	uaio_op *ph[2], *pt[2];
};

struct epoll_state {
	int epfd;
	uaio_watch **always;	/* regular-file watches: always ready */
	unsigned nalways, capalways;
	int *idle;		/* fds whose queue emptied this round */
	unsigned nidle, capidle;
	unsigned npinned, pin_budget;	/* uaio_file_pin duplicates */
	struct epoll_event evs[MAX_EVENTS];
	/* Sides muted after fruitless wake-ups, each with the time epoll
	 * watches it again: one timer, for the earliest. */
	struct ep_muted { uint64_t when; int fd; uint8_t side; } *muted;
	unsigned nmuted, capmuted;
	uaio_timer mute_timer;
	/* evs[next..nevs) came from epoll but found l->fired full: an
	 * edge-triggered watch would never hear of them again. */
	int next, nevs;
};

#define E(l) ((struct epoll_state *)(l)->bs)

static inline void uaio__ep_q_push(uaio_op **h, uaio_op **t, uaio_op *op)
{
	op->next = NULL;
	if (*t)
		(*t)->next = op;
	else
		*h = op;
	*t = op;
}

/* epoll_fdq.c */
struct uaio_fdq *uaio__ep_fdq(uaio_loop *l, int fd);
int uaio__ep_update_reg(uaio_loop *l, int fd);
void uaio__ep_flush_idle(uaio_loop *l);
bool uaio__ep_q_unlink(uaio_op **h, uaio_op **t, uaio_op *op);
bool uaio__ep_is_rw(const uaio_op *op);
bool uaio__ep_dontwait(const uaio_op *op);
long uaio__ep_attempt(uaio_op *op);
bool uaio__ep_blocks_on_disk(int fd);
bool uaio__ep_is_fifo(int fd);
bool uaio__ep_go_plain(uaio_op *op);
bool uaio__ep_moved_part(const uaio_op *op, long r);
void uaio__ep_rest_at_pos(uaio_op *op, long done);
int uaio__ep_enqueue(uaio_loop *l, uaio_op *op);
int uaio__ep_cancel_fd_ops(uaio_loop *l, int fd);
void uaio__ep_handle_fd(uaio_loop *l, int fd, uint32_t events);
void uaio__ep_unmute(uaio_timer *t);
/* epoll_pos.c */
bool uaio__ep_pos_held(uaio_loop *l, uaio_op *op);
int uaio__ep_pos_worker(uaio_loop *l, uaio_op *op);
void uaio__ep_pos_next(uaio_loop *l, uaio_op *done);
bool uaio__ep_pos_cancel(uaio_loop *l, uaio_op *op);
int uaio__ep_work(uaio_loop *l, uaio_op *op, bool counted);
void uaio__ep_hold_behind(uaio_loop *l, uaio_op **t, uaio_op **pp, uaio_op *prev,
			  uaio_op *op);
/* epoll.c */
int uaio__ep_close(uaio_loop *l, uaio_op *op);

#endif
