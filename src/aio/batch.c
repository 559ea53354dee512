/* SPDX-License-Identifier: MIT */
/*
 * A list's adjacent entries (same kind, file and aio_reqprio, each
 * starting where the last ended) gathered into one readv/writev led by
 * the first; the leader's end shares the count out (queue.c).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include "aio/engine.h"

/* Sends out the entries gathered in pc: alone, or as one readv/writev
 * led by the first. */
static void batch_flush_locked(struct lio_ctx *pc)
{
	struct aio_req *lead = pc->mhead, *m;
	struct iovec *iov = NULL;
	unsigned i = 0;
	int ret;

	pc->mhead = pc->mtail = NULL;
	if (!lead)
		return;
	if (pc->mcount > 1)
		iov = malloc(pc->mcount * sizeof(*iov));
	if (!iov) {		/* one entry, or no memory: one by one */
		for (m = lead; m; m = lead) {
			lead = m->next;
			m->next = NULL;
			if ((ret = aio__req_issue_locked(m)) < 0)
				aio__req_finish_parallel_locked(m, ret);
		}
		return;
	}
	for (m = lead; m; m = m->next, i++) {
		iov[i].iov_base = (void *)req_cb(m)->aio_buf;
		iov[i].iov_len = cb_len(req_cb(m));
		m->flags |= m == lead ? RF_LEADER : RF_MEMBER;
		m->state = RS_LOOP;
	}
	lead->u.iov = iov;
	if (lead->kind == K_READ)
		ret = uaio_op_readv(E->loop, &lead->op, lead->fd, iov, (int)i,
				    req_cb(lead)->aio_offset, aio__req_cb, req_cb(lead));
	else
		ret = uaio_op_writev(E->loop, &lead->op, lead->fd, iov, (int)i,
				     req_cb(lead)->aio_offset, aio__req_cb, req_cb(lead));
	if (ret < 0)
		aio__leader_end_locked(lead, ret);
}

void aio__batch_flush(struct lio_ctx *pc)
{
	if (!pc->mhead)
		return;
	aio__lock();
	batch_flush_locked(pc);
	aio__unlock();
}

/* Whether r extends pc's gathered entries: same kind, same file, next
 * offset, and room left in one readv/writev. */
static bool batch_fits(const struct lio_ctx *pc, const struct aio_req *r)
{
	const struct aio_req *t = pc->mtail;

	return t && t->kind == r->kind && t->fd == r->fd && t->prio == r->prio &&
	       req_cb(r)->aio_offset == pc->mnext && pc->mcount < IOV_MAX &&
	       pc->mbytes + cb_len(req_cb(r)) <= RW_MAX;
}

/* r joins the entries gathered in pc, or starts a new gathering once
 * those are sent out. */
void aio__batch_add_locked(struct lio_ctx *pc, struct aio_req *r)
{
	if (!batch_fits(pc, r)) {
		batch_flush_locked(pc);
		pc->mhead = r;
		pc->mcount = 0;
		pc->mbytes = 0;
	} else {
		pc->mtail->next = r;
	}
	pc->mtail = r;
	pc->mcount++;
	pc->mbytes += cb_len(req_cb(r));
	pc->mnext = req_cb(r)->aio_offset + (int64_t)cb_len(req_cb(r));
	r->state = RS_LOOP;
}
