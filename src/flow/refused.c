/* SPDX-License-Identifier: MIT */
/*
 * What pairs of file systems refused: FICLONE and copy_file_range between
 * two devices either work or never do (EXDEV: not one file system;
 * EOPNOTSUPP: no reflinks there), so once one flow has been refused, the
 * next flows between the same two devices start at the method that
 * worked instead of paying a futile attempt each (for clone, a trip to a
 * worker and back). A small table, process-wide since it records facts
 * about the kernel's file systems, not about a loop; most recent first.
 * A device number reused by another file system later (a loop device
 * re-attached) only costs that pair the faster method until the entry
 * ages out; never a wrong copy.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/types.h>

#include "flow/engine.h"

#define PAIRS	16

static struct flow_refusals {
	pthread_mutex_t mu;
	unsigned n;
	struct {
		dev_t src, dst;
		uint8_t refused;	/* 1 << M_CLONE | 1 << M_CFR */
	} pair[PAIRS];
} flow__refusals = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* fork(): the table is held across it, so the child's copy is whole and
 * its lock free. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&flow__refusals.mu);
}

static void fork_done(void)
{
	pthread_mutex_unlock(&flow__refusals.mu);
}

static void at_fork(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

static void lock(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, at_fork);
	pthread_mutex_lock(&flow__refusals.mu);
}

static bool remembered(int m)
{
	return m == M_CLONE || m == M_CFR;
}

/* Index of the pair, or -1; under mu. */
static int find(dev_t src, dev_t dst)
{
	for (unsigned i = 0; i < flow__refusals.n; i++)
		if (flow__refusals.pair[i].src == src && flow__refusals.pair[i].dst == dst)
			return (int)i;
	return -1;
}

bool flow__refused(const uaio_flow *f, int m)
{
	struct flow_refusals *t = &flow__refusals;
	bool ret = false;
	int i;

	if (!remembered(m) || f->src.kind != EK_FILE || f->dst.kind != EK_FILE)
		return false;
	lock();
	if ((i = find(f->src.dev, f->dst.dev)) >= 0)
		ret = t->pair[i].refused & (1u << m);
	pthread_mutex_unlock(&t->mu);
	return ret;
}

void flow__refusal(const uaio_flow *f, int m, int err)
{
	struct flow_refusals *t = &flow__refusals;
	uint8_t bit = (uint8_t)(1u << m);
	int i;

	if (!remembered(m) || f->src.kind != EK_FILE || f->dst.kind != EK_FILE ||
	    !(err == -EXDEV || (m == M_CLONE && err == -EOPNOTSUPP)))
		return;
	lock();
	if ((i = find(f->src.dev, f->dst.dev)) >= 0) {
		bit |= t->pair[i].refused;
	} else {
		i = (int)(t->n < PAIRS ? t->n++ : PAIRS - 1);	/* the oldest goes */
	}
	memmove(&t->pair[1], &t->pair[0], (size_t)i * sizeof(t->pair[0]));
	t->pair[0].src = f->src.dev;
	t->pair[0].dst = f->dst.dev;
	t->pair[0].refused = bit;
	pthread_mutex_unlock(&t->mu);
}
