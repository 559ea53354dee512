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
	pthread_mutex_lock(&t->mu);
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
	pthread_mutex_lock(&t->mu);
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
