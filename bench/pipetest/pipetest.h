/* SPDX-License-Identifier: MIT */
/*
 * pipetest: token passing around a ring of pipes, after the experiment in
 * LaHaise's "An AIO implementation and its behaviour" (OLS 2002).
 *
 * P pipes form a ring; T tokens of S bytes are injected, and each hop reads
 * a token from pipe i and writes it to pipe i+1. With T much smaller than
 * P most descriptors sit idle, which is what separates O(n) readiness
 * interfaces from O(ready) ones. One run measures one mode for a fixed
 * time after a warm-up and prints one key=value line.
 *
 * Files: ring.c (the pipes, the tokens, the clock), peers.c (poll, epoll
 * and raw io_uring), uaio.c (uaio's reactor, proactor and nops; memory
 * per watch and per op), main.c (modes and options).
 */
#ifndef PIPETEST_H
#define PIPETEST_H

#include <stdint.h>

#include <uaio/loop.h>

#define SCRATCH_SIZE (64 * 1024)	/* >= a pipe's default capacity: one read drains it */
#define CHECK_EVERY 16			/* passes between clock reads */

/* The whole benchmark's state; one measurement per process. */
struct pipetest {
	int P, S, T;
	int *rfd, *wfd;
	char *bufs;		/* P * S: one buffer per in-flight read */
	char *scratch;		/* readiness modes read into this */
	double warmup_s, time_s;

	int phase;		/* 0 warm-up, 1 measuring */
	int done;
	uint64_t passes, next_check;
	uint64_t warm_end, warm_cap, end, t0, t1, p0, p1;

	const char *ring_flags;	/* what the raw io_uring peer got */
	uaio_loop *loop;
	uaio_watch *watches;	/* uaio reactor: one per pipe */
	uaio_op *ops;		/* uaio proactor: one read per pipe; nops */
};

extern struct pipetest pt;

/* ring.c */
__attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...);
void timing_start(void);
void check_clock(void);
double rate(void);
int raise_nofile(void);
int max_pipes(int limit);
void ring_open(int nonblock_reads);
void write_token(int j, const char *tok);
void inject_tokens(void);
void hop_ready(int i);

static inline void count_pass(void)
{
	if (++pt.passes >= pt.next_check)
		check_clock();
}

static inline int next_pipe(int i)
{
	return i + 1 == pt.P ? 0 : i + 1;
}

/* peers.c */
enum { U_POLL, U_MPOLL, U_READ };
void run_poll(void);
void run_epoll(int et);
void run_uring(int kind);
void nop_uring(int batch);

/* uaio.c */
void run_uaio_reactor(int force_epoll, int edge);
void run_uaio_proactor(int force_epoll);
void nop_uaio(int batch, int force_epoll);
const char *uaio_desc(void);
void memory_report(int count, int limit);

#endif
