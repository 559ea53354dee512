/* SPDX-License-Identifier: MIT */
/*
 * Completion notification for POSIX AIO: queued signals with SI_ASYNCIO,
 * and SIGEV_THREAD callbacks on a small pool that starts its first thread
 * only when the first such notification arrives (glibc starts a thread
 * per notification). The pool grows while every thread is busy, so one
 * slow callback does not hold up the others.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "aio/aio_internal.h"
#include "core/uaio_core.h"
#include "util/plumb.h"

#define POOL_MAX	16

struct note {
	struct note *next;
	void (*fn)(union sigval);
	union sigval val;
};

/* The notification pool: the one piece of mutable state in this file. */
static struct notify_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct note *head, *tail;
	unsigned nthreads, idle;
} notify_pool = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

int uaio__sigevent_check(const struct sigevent *sev)
{
	switch (sev->sigev_notify) {
	case SIGEV_NONE:
		return 0;
	case SIGEV_SIGNAL:
		/* SIGEV_SIGNAL is 0: a zeroed aiocb asks for "signal" 0, the
		 * null signal, which glibc accepts and sends nothing for. */
		return sev->sigev_signo >= 0 && sev->sigev_signo < NSIG ? 0 : -EINVAL;
	case SIGEV_THREAD:
		return sev->sigev_notify_function ? 0 : -EINVAL;
	}
	return -EINVAL;
}

/* A detached thread of ours (it takes no signals). */
static int spawn(pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	pthread_t t;
	int r = uaio__thread_start(&t, attr, fn, arg);

	if (r == 0)
		pthread_detach(t);
	return r;
}

/* As glibc's notification threads, the callback runs with no signal
 * blocked; the pool's threads block them all again between callbacks. */
static void run_note(struct note *n)
{
	sigset_t none;

	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	n->fn(n->val);
	free(n);
}

static void *pool_main(void *arg)
{
	struct notify_pool *p = &notify_pool;
	sigset_t all;

	sigfillset(&all);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct note *n;

		while (!p->head) {
			p->idle++;
			pthread_cond_wait(&p->cv, &p->mu);
			p->idle--;
		}
		n = p->head;
		p->head = n->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->mu);
		run_note(n);
		pthread_sigmask(SIG_SETMASK, &all, NULL);
		pthread_mutex_lock(&p->mu);
	}
	return arg;
}

/* A callback that asked for thread attributes gets a thread of its own. */
static void *own_main(void *arg)
{
	run_note(arg);
	return NULL;
}

static void notify_thread(const struct sigevent *sev)
{
	struct notify_pool *p = &notify_pool;
	struct note *n = malloc(sizeof(*n));

	if (!n)
		return;
	n->next = NULL;
	n->fn = sev->sigev_notify_function;
	n->val = sev->sigev_value;
	if (sev->sigev_notify_attributes) {
		if (spawn(sev->sigev_notify_attributes, own_main, n) < 0)
			free(n);
		return;
	}
	pthread_mutex_lock(&p->mu);
	UAIO_FIFO_PUSH(p->head, p->tail, n);
	if (!p->idle && p->nthreads < POOL_MAX) {
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		if (spawn(&attr, pool_main, NULL) == 0)
			p->nthreads++;
		pthread_attr_destroy(&attr);
	}
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void uaio__notify(const struct sigevent *sev)
{
	siginfo_t si;

	switch (sev->sigev_notify) {
	case SIGEV_SIGNAL:
		if (!sev->sigev_signo)
			break;
		memset(&si, 0, sizeof(si));
		si.si_signo = sev->sigev_signo;
		si.si_code = SI_ASYNCIO;
		si.si_value = sev->sigev_value;
		si.si_pid = getpid();
		si.si_uid = getuid();
		/* A process may queue any si_code to itself. */
		syscall(SYS_rt_sigqueueinfo, si.si_pid, si.si_signo, &si);
		break;
	case SIGEV_THREAD:
		notify_thread(sev);
		break;
	}
}

void uaio__notify_fork_prepare(void)
{
	pthread_mutex_lock(&notify_pool.mu);
}

void uaio__notify_fork_parent(void)
{
	pthread_mutex_unlock(&notify_pool.mu);
}

/* Notifications still queued belonged to the parent's requests. */
void uaio__notify_fork_child(void)
{
	struct notify_pool *p = &notify_pool;
	struct note *n, *next;

	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	for (n = p->head; n; n = next) {
		next = n->next;
		free(n);
	}
	p->head = p->tail = NULL;
	p->nthreads = p->idle = 0;
}

unsigned uaio__notify_threads(void)
{
	unsigned n;

	pthread_mutex_lock(&notify_pool.mu);
	n = notify_pool.nthreads;
	pthread_mutex_unlock(&notify_pool.mu);
	return n;
}
