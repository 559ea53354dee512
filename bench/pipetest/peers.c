/* SPDX-License-Identifier: MIT */
/* pipetest: the peers, poll, epoll and raw io_uring (pipetest.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <liburing.h>

#include "pipetest.h"

void run_poll(void)
{
	struct pollfd *pfd = calloc(pt.P, sizeof(*pfd));

	if (!pfd)
		die("out of memory");
	while (!pt.done) {
		/* Rebuilt every time, as a poll() server without state must. */
		for (int i = 0; i < pt.P; i++) {
			pfd[i].fd = pt.rfd[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		int n = poll(pfd, pt.P, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("poll: %s", strerror(errno));
		}
		for (int i = 0; i < pt.P && n > 0; i++) {
			if (pfd[i].revents) {
				n--;
				hop_ready(i);
			}
		}
	}
	free(pfd);
}

/* et: edge-triggered (EPOLLET); hop_ready() drains the pipe in one read. */
void run_epoll(int et)
{
	struct epoll_event evs[256];
	int ep = epoll_create1(EPOLL_CLOEXEC);

	if (ep < 0)
		die("epoll_create1: %s", strerror(errno));
	for (int i = 0; i < pt.P; i++) {
		struct epoll_event ev = { .events = EPOLLIN | (et ? EPOLLET : 0),
					  .data.u32 = i };

		if (epoll_ctl(ep, EPOLL_CTL_ADD, pt.rfd[i], &ev) < 0)
			die("epoll_ctl: %s", strerror(errno));
	}
	while (!pt.done) {
		int n = epoll_wait(ep, evs, 256, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait: %s", strerror(errno));
		}
		for (int k = 0; k < n; k++)
			hop_ready(evs[k].data.u32);
	}
	close(ep);
}

/* Raw io_uring. */

/*
 * The honest peer: best setup flags the kernel takes, registered ring fd,
 * one io_uring_submit_and_wait() per loop that also flushes every re-arm,
 * and all available CQEs reaped per loop.
 */
static void uring_init(struct io_uring *r, unsigned sq, unsigned cq)
{
	static const struct {
		unsigned flags;
		const char *name;
	} tries[] = {
		{ IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		  "single_issuer+defer_taskrun" },
		{ IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG,
		  "coop_taskrun" },
		{ 0, "none" },
	};
	int ret = -EINVAL;

	for (size_t k = 0; k < sizeof(tries) / sizeof(tries[0]); k++) {
		struct io_uring_params p = { 0 };

		p.flags = tries[k].flags | IORING_SETUP_CQSIZE;
		p.cq_entries = cq;
		ret = io_uring_queue_init_params(sq, r, &p);
		if (ret == 0) {
			pt.ring_flags = tries[k].name;
			break;
		}
		if (ret != -EINVAL)
			break;
	}
	if (ret < 0)
		die("io_uring_queue_init: %s", strerror(-ret));
	/* Best effort: saves an fdget per io_uring_enter. */
	io_uring_register_ring_fd(r);
}

static struct io_uring_sqe *get_sqe(struct io_uring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(r);

	if (!sqe) {
		io_uring_submit(r);
		sqe = io_uring_get_sqe(r);
		if (!sqe)
			die("no SQE after submit");
	}
	return sqe;
}

static unsigned cq_size_for(unsigned inflight)
{
	unsigned n = 64;

	while (n < 2 * inflight && n < 65536)
		n <<= 1;
	return n;
}

static void uring_arm(struct io_uring *r, int kind, int i)
{
	struct io_uring_sqe *sqe = get_sqe(r);

	if (kind == U_POLL)
		io_uring_prep_poll_add(sqe, pt.rfd[i], POLLIN);
	else if (kind == U_MPOLL)
		io_uring_prep_poll_multishot(sqe, pt.rfd[i], POLLIN);
	else
		io_uring_prep_read(sqe, pt.rfd[i], pt.bufs + (size_t)i * pt.S,
				   pt.S, -1);
	io_uring_sqe_set_data64(sqe, (uint64_t)i);
}

void run_uring(int kind)
{
	struct io_uring r;

	uring_init(&r, 1024, cq_size_for(pt.P + pt.T + 1024));
	for (int i = 0; i < pt.P; i++)
		uring_arm(&r, kind, i);
	io_uring_submit(&r);
	inject_tokens();
	timing_start();
	while (!pt.done) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		int ret = io_uring_submit_and_wait(&r, 1);

		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			die("io_uring_submit_and_wait: %s", strerror(-ret));
		io_uring_for_each_cqe(&r, head, cqe) {
			int i = (int)cqe->user_data;

			seen++;
			if (cqe->res < 0)
				die("cqe on pipe %d: %s", i, strerror(-cqe->res));
			if (kind == U_READ) {
				if (cqe->res != pt.S)
					die("read pipe %d: %d bytes", i, cqe->res);
				write_token(next_pipe(i), pt.bufs + (size_t)i * pt.S);
				count_pass();
				uring_arm(&r, kind, i);
			} else {
				hop_ready(i);
				if (kind == U_POLL || !(cqe->flags & IORING_CQE_F_MORE))
					uring_arm(&r, kind, i);
			}
		}
		io_uring_cq_advance(&r, seen);
	}
	io_uring_queue_exit(&r);
}

/* Nop round trips: B nops in flight, each re-posted from its completion. */
void nop_uring(int batch)
{
	struct io_uring r;

	unsigned sq = batch < 64 ? 64 : batch;

	uring_init(&r, sq, cq_size_for(sq + batch));
	for (int k = 0; k < batch; k++)
		io_uring_prep_nop(get_sqe(&r));
	timing_start();
	while (!pt.done) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		int ret = io_uring_submit_and_wait(&r, 1);

		if (ret < 0 && ret != -EINTR)
			die("io_uring_submit_and_wait: %s", strerror(-ret));
		io_uring_for_each_cqe(&r, head, cqe) {
			seen++;
			count_pass();
			io_uring_prep_nop(get_sqe(&r));
		}
		io_uring_cq_advance(&r, seen);
	}
	io_uring_queue_exit(&r);
}
