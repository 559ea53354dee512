/* SPDX-License-Identifier: MIT */
/*
 * Completion notification for POSIX AIO: queued signals with SI_ASYNCIO,
 * and SIGEV_THREAD callbacks, each on a thread of its own, as glibc runs
 * them and as POSIX says ("as if" a new thread): a callback may block,
 * wait for another callback, or keep thread-local state, and its thread's
 * TLS destructors run when it returns.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "aio/aio_internal.h"
#include "core/uaio_core.h"

struct uaio_note {
	void (*fn)(union sigval);
	union sigval val;
	atomic_uint go;		/* futex: the request's status is out */
};

/* Notification threads started so far (tests): the one piece of mutable
 * state in this file. */
static atomic_uint notify_started;

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

/* As glibc's notification threads, the callback runs with no signal
 * blocked (the thread starts with all of them blocked, as ours do). It
 * waits until the request it tells of is done. */
static void *note_main(void *arg)
{
	struct uaio_note *np = arg;
	struct uaio_note n;
	sigset_t none;

	while (!atomic_load(&np->go))
		syscall(SYS_futex, &np->go, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	n = *np;
	free(np);
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	n.fn(n.val);
	return NULL;
}

/* glibc: the caller's attributes as given (a joinable thread stays
 * joinable), else a detached thread. glibc tests pthread_create's result
 * for < 0, so a thread that cannot be made goes unnoticed: the request
 * keeps its own status (and nothing is notified). */
static struct uaio_note *notify_thread(const struct sigevent *sev)
{
	pthread_attr_t def, *attr = sev->sigev_notify_attributes;
	struct uaio_note *n = malloc(sizeof(*n));
	pthread_t t;
	int r;

	if (!n)
		return NULL;
	n->fn = sev->sigev_notify_function;
	n->val = sev->sigev_value;
	atomic_init(&n->go, 0);
	if (!attr) {
		pthread_attr_init(&def);
		pthread_attr_setdetachstate(&def, PTHREAD_CREATE_DETACHED);
		attr = &def;
	}
	r = uaio__thread_start(&t, attr, note_main, n);
	if (attr == &def)
		pthread_attr_destroy(&def);
	if (r < 0) {
		free(n);
		return NULL;
	}
	atomic_fetch_add(&notify_started, 1);
	return n;
}

static void note_go(struct uaio_note *n)
{
	atomic_store(&n->go, 1);
	/* n may be freed by now: a wake on a stale address wakes no one
	 * (or a note that checks its own flag and sleeps again). */
	syscall(SYS_futex, &n->go, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void uaio__notify_begin(const struct sigevent *sev, struct uaio_note **held)
{
	*held = sev->sigev_notify == SIGEV_THREAD ? notify_thread(sev) : NULL;
}

int uaio__notify_end(const struct sigevent *sev, struct uaio_note *held)
{
	return uaio__notify_end_to(sev, held, 0);
}

int uaio__notify_end_to(const struct sigevent *sev, struct uaio_note *held, pid_t tid)
{
	siginfo_t si;

	switch (sev->sigev_notify) {
	case SIGEV_SIGNAL:
		if (!sev->sigev_signo)
			return 0;
		memset(&si, 0, sizeof(si));
		si.si_signo = sev->sigev_signo;
		si.si_code = SI_ASYNCIO;
		si.si_value = sev->sigev_value;
		si.si_pid = getpid();
		si.si_uid = getuid();
		/* A process may queue any si_code to itself; EAGAIN when the
		 * queue is full (RLIMIT_SIGPENDING). */
		if (tid)
			return syscall(SYS_rt_tgsigqueueinfo, si.si_pid, tid, si.si_signo, &si) < 0 ?
			       -errno : 0;
		return syscall(SYS_rt_sigqueueinfo, si.si_pid, si.si_signo, &si) < 0 ? -errno : 0;
	case SIGEV_THREAD:
		if (held)
			note_go(held);
		return 0;
	}
	return 0;
}

int uaio__notify(const struct sigevent *sev)
{
	struct uaio_note *held;

	uaio__notify_begin(sev, &held);
	return uaio__notify_end(sev, held);
}

unsigned uaio__notify_threads(void)
{
	return atomic_load(&notify_started);
}
