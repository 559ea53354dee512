/* SPDX-License-Identifier: MIT */
/*
 * Requests a signal handler makes while the code it interrupted is in the
 * middle of an AIO call of the same thread (the engine's lock held).
 *
 * glibc's aio_read there queues the request for its helpers under its
 * recursive lock, and goes on. Ours would go further: into the engine's
 * records and the loop's state (its registered file table, its lock, the
 * thread's own ring), which the interrupted call may be changing: a
 * crash, a hang, or a request on the wrong file. So such a request is
 * accepted (in progress) and waits on a list of the thread's until the
 * interrupted call lets the lock go; aio__unlock then submits the list in
 * call order, as if the handler had run just after. What such a handler
 * waits for in aio_suspend therefore ends only after it returns (its
 * timeout ends the wait), as glibc's, whose helpers wait for the lock
 * the interrupted call holds; a LIO_WAIT list there is refused (lio.c).
 */
#define _GNU_SOURCE
#include "aio/engine.h"

/* A waiting request is linked through its priv()->done (unused until it
 * runs), which keeps its kind in the low bits. */
_Static_assert(_Alignof(struct aiocb) >= 8, "aiocb too loosely aligned to tag");
#define KIND_BITS	7u

static struct aiocb *next_of(const struct aiocb *cb)
{
	return (struct aiocb *)(uintptr_t)(priv(cb)->done & ~(uint64_t)KIND_BITS);
}

static void link_to(struct aiocb *cb, struct aiocb *next)
{
	priv(cb)->done = (uint64_t)(uintptr_t)next | (priv(cb)->done & KIND_BITS);
}

/* This thread's waiting requests: added by handlers (newest first, by a
 * compare-and-swap that a handler of a handler may interrupt), and the
 * run, in call order, that the thread is submitting now (draining:
 * requests made meanwhile wait too, so none overtakes an earlier one). */
static UAIO_TLS struct {
	struct aiocb *_Atomic added;
	struct aiocb *run;
	bool draining;
} nested_self;

/* Also while requests wait on the list with the lock free (the outermost
 * unlock let it go and has not begun to drain; aio__signals_let_go's
 * window): one made now must not overtake them. */
bool aio__nested_must_wait(void)
{
	return nested_self.draining || aio__lock_in_call() || aio__nested_waiting();
}

/* cb passed aio__cb_check and is marked in progress; its list, if any,
 * counts it as pending until it has run. */
void aio__nested_add(struct aiocb *cb, int kind)
{
	struct aio_lio *g = priv(cb)->lio;
	struct aiocb *head;

	if (g) {
		aio__lock();	/* g is the handler's own, made by this call */
		g->pending++;
		g->refs++;
		aio__unlock();
	}
	head = atomic_load_explicit(&nested_self.added, memory_order_relaxed);
	do
		priv(cb)->done = (uint64_t)(uintptr_t)head | (unsigned)kind;
	while (!atomic_compare_exchange_weak_explicit(&nested_self.added, &head, cb,
						      memory_order_relaxed, memory_order_relaxed));
}

bool aio__nested_waiting(void)
{
	return atomic_load_explicit(&nested_self.added, memory_order_relaxed) || nested_self.run;
}

/* How many of this thread's waiting requests are on fd: a cancel cannot
 * take them back (they run once the interrupted call ends). */
int aio__nested_on(int fd)
{
	int n = 0;

	for (struct aiocb *cb = atomic_load(&nested_self.added); cb; cb = next_of(cb))
		n += cb->aio_fildes == fd;
	for (struct aiocb *cb = nested_self.run; cb; cb = next_of(cb))
		n += cb->aio_fildes == fd;
	return n;
}

/* What was added becomes the run, in call order. Signals are held
 * meanwhile: a fork in a handler must find every request on one of the
 * two lists. */
static bool take_added(void)
{
	struct aiocb *l, *rev = NULL, *next;
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	l = atomic_exchange(&nested_self.added, NULL);
	for (; l; l = next) {
		next = next_of(l);
		link_to(l, rev);
		rev = l;
	}
	nested_self.run = rev;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rev != NULL;
}

/* From aio__unlock, the lock let go by the outermost call. */
void aio__nested_drain(void)
{
	if (nested_self.draining)
		return;
	nested_self.draining = true;
	while (nested_self.run || take_added()) {
		struct aiocb *cb = nested_self.run, *next = next_of(cb);
		int kind = (int)(priv(cb)->done & KIND_BITS);

		/* Off the run only once submitted: a fork in a handler finds
		 * it there. An orphan: a fork took it meanwhile (below). Its
		 * successor was read first: once submitted, cb may be the
		 * program's again. */
		if (cb_state(cb) == ST_LIVE)
			aio__submit_nested(cb, kind);
		nested_self.run = next;
	}
	nested_self.draining = false;
	/* one added after the last take, before draining ended */
	if (atomic_load(&nested_self.added))
		aio__nested_drain();
}

/* In a child forked by a handler: the waiting requests are the parent's,
 * orphans there that never started, as the parent's queued ones
 * (engine.c): in progress, and cancellable. (Those on another thread's
 * list, which the child lacks, stay in progress for ever.) */
void aio__nested_fork_child(void)
{
	struct aiocb *cb, *next;

	for (cb = atomic_exchange(&nested_self.added, NULL); cb; cb = next) {
		next = next_of(cb);
		aio__orphan_queued(cb);
	}
	for (cb = nested_self.run; cb; cb = next) {
		next = next_of(cb);
		aio__orphan_queued(cb);
	}
	nested_self.run = NULL;
}
