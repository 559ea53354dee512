/* SPDX-License-Identifier: MIT */
/*
 * The engine's lock (recursive for its thread, a futex word holding the
 * owner's id), its part in fork(), and the signals held on the caller's
 * thread: while it holds the lock and sends a notification, and around
 * what it does there that glibc's helpers, which block every signal, do
 * on theirs (SIGXFSZ from a write past RLIMIT_FSIZE; a background read of
 * the controlling terminal).
 */
#define _GNU_SOURCE
#include "aio/engine.h"

#include <sys/ioctl.h>
#include <sys/resource.h>
#include <termios.h>

/* This thread's part in the engine's lock: its thread id (cached), how
 * many times over it holds the lock (a signal handler that interrupted it
 * there and submits, or forks), and the signal mask to put back when it
 * lets go (engine.h, aio__lock). */
static UAIO_TLS struct {
	unsigned tid;
	bool held, fork_loop;
	unsigned depth, held_depth;
	unsigned open;		/* depth + 1 of aio__signals_let_go's window */
	sigset_t old;
} lock_self;

/*
 * The engine lock is a futex word holding its owner's thread id (and
 * LOCK_WAITERS when someone sleeps on it), taken by one compare-and-swap:
 * whether this thread holds it is one exact read, at any instruction a
 * signal handler may interrupt. (glibc's mutex writes its owner a few
 * instructions after taking its word and clears it a few before letting
 * go; judging by that left windows where a handler waited for its own
 * thread, or took another thread's hold for its own.)
 */
#define LOCK_WAITERS	0x80000000u

static unsigned self_tid(void)
{
	if (!lock_self.tid)
		lock_self.tid = (unsigned)gettid();
	return lock_self.tid;
}

static bool self_holds(void)
{
	return (atomic_load_explicit(&E->lock, memory_order_relaxed) & ~LOCK_WAITERS) == self_tid();
}

static bool lock_take(unsigned from, unsigned to)
{
	return atomic_compare_exchange_weak_explicit(&E->lock, &from, to, memory_order_acquire,
						     memory_order_relaxed);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Recursive for this thread, as glibc's __aio_requests_mutex is: a
 * handler that runs on a thread holding the lock may call aio_read,
 * aio_error or fork() (async-signal-safe), and must not wait for itself.
 * Like glibc's, such a nested call sees the structures as the code it
 * interrupted left them; what it submits waits for that code to let go
 * (nested.c).
 * A short spin first, as the adaptive mutex it replaces did: holds are
 * short, and the other core usually lets go.
 */
void aio__lock(void)
{
	unsigned me = self_tid(), w;

	if (self_holds()) {
		lock_self.depth++;
		return;
	}
	/* The word is read before each try: a failing CAS would take the
	 * line from the core that holds the lock. */
	for (int i = 0; i < 100; i++) {
		if (atomic_load_explicit(&E->lock, memory_order_relaxed) == 0 && lock_take(0, me))
			return;
		cpu_relax();
	}
	for (;;) {
		w = atomic_load_explicit(&E->lock, memory_order_relaxed);
		if (w == 0) {
			/* Taken after a wait: others may sleep still. */
			if (lock_take(0, me | LOCK_WAITERS))
				return;
		} else if ((w & LOCK_WAITERS) || lock_take(w, w | LOCK_WAITERS)) {
			aio__futex_wait_abs(&E->lock, w | LOCK_WAITERS, NULL);
		}
	}
}

/* Fails where this thread holds the lock already: its caller (a wait)
 * must not go on as if nobody were in the middle of a change. */
bool aio__trylock(void)
{
	return !self_holds() && atomic_load_explicit(&E->lock, memory_order_relaxed) == 0 &&
	       lock_take(0, self_tid());
}

void aio__unlock(void)
{
	bool restore = lock_self.held && lock_self.held_depth == lock_self.depth;
	bool outer = !lock_self.depth;

	if (restore)
		lock_self.held = false;
	if (!outer)
		lock_self.depth--;
	else if (atomic_exchange_explicit(&E->lock, 0, memory_order_release) & LOCK_WAITERS)
		syscall(SYS_futex, &E->lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	if (restore)
		pthread_sigmask(SIG_SETMASK, &lock_self.old, NULL);
	/* what handlers submitted meanwhile (nested.c) */
	if (outer && aio__nested_waiting())
		aio__nested_drain();
}

/* Whether a handler running now interrupted an AIO call of this thread
 * that holds the lock, where its changes may be half made (but for
 * aio__signals_let_go's window): what it submits waits (nested.c). */
bool aio__lock_in_call(void)
{
	return self_holds() && lock_self.open != lock_self.depth + 1;
}

/* Never nested (a thread's exit): waits, without the lock, until
 * aio__cond_broadcast. */
void aio__cond_wait(void)
{
	unsigned gen = atomic_load(&E->thread_gen);

	aio__unlock();
	aio__futex_wait_abs(&E->thread_gen, gen, NULL);
	aio__lock();
}

void aio__cond_broadcast(void)
{
	atomic_fetch_add(&E->thread_gen, 1);
	syscall(SYS_futex, &E->thread_gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* A signal is about to be queued to the process: under the lock, this
 * thread takes none until the matching aio__unlock. Whether this thread
 * holds the lock. */
bool aio__signals_hold(void)
{
	sigset_t all;

	if (!self_holds())
		return false;
	if (lock_self.held)
		return true;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &lock_self.old);
	lock_self.held = true;
	lock_self.held_depth = lock_self.depth;
	return true;
}

/* Whether this thread holds its signals for this level of the lock: a
 * notification sent under it since the matching aio__lock. */
bool aio__signals_held_here(void)
{
	return self_holds() && lock_self.held && lock_self.held_depth == lock_self.depth;
}

/* Lets the signals held at this level go while keeping the lock: one
 * pending is delivered now, and its handler runs here (on the recursive
 * lock, as glibc's run under its recursive mutex). For a caller between
 * two notifications, whose state holds no half-made change. */
void aio__signals_let_go(void)
{
	unsigned was = lock_self.open;

	if (!aio__signals_held_here())
		return;
	lock_self.held = false;
	lock_self.open = lock_self.depth + 1;
	pthread_sigmask(SIG_SETMASK, &lock_self.old, NULL);
	lock_self.open = was;
}

/*
 * A write at or past RLIMIT_FSIZE raises SIGXFSZ at the thread that makes
 * it, and its default action kills the process. glibc writes from helper
 * threads that block every signal: a program sees EFBIG, never the
 * signal. uaio writes on the caller's thread too (an inline try, the
 * thread's own ring, the fallback backend's try), so under a limit a
 * submitting call blocks SIGXFSZ and takes back one raised meanwhile (the
 * kernel's: SI_USER from this process); any other is put back, a
 * request's own SIGEV_SIGNAL of that number (SI_ASYNCIO) and one sent from
 * outside (it was dropped).
 */
/* The limit is looked up every FSIZE_USES submissions, not at each (a
 * system call more per 4 KiB write: 3 % of fio's randwrite rate): a
 * setrlimit is seen within that many. */
#define FSIZE_USES	64

static bool fsize_limited(void)
{
	unsigned left = atomic_load_explicit(&E->fsize_left, memory_order_relaxed);
	struct rlimit rl;
	bool lim;

	if (left) {
		atomic_store_explicit(&E->fsize_left, left - 1, memory_order_relaxed);
		return atomic_load_explicit(&E->fsize_limited, memory_order_relaxed);
	}
	lim = getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
	atomic_store_explicit(&E->fsize_limited, lim, memory_order_relaxed);
	atomic_store_explicit(&E->fsize_left, FSIZE_USES, memory_order_relaxed);
	return lim;
}

void uaio__aio_fsize_changed(void)
{
	atomic_store_explicit(&E->fsize_left, 0, memory_order_relaxed);
}

void aio__xfsz_hold(struct aio_xfsz *x)
{
	sigset_t set, pend;

	x->hold = fsize_limited();
	if (!x->hold)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &set, &x->old);
	x->pending = sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ);
}

void aio__xfsz_release(struct aio_xfsz *x)
{
	sigset_t pend;

	if (!x->hold)
		return;
	if (!x->pending && sigpending(&pend) == 0 && sigismember(&pend, SIGXFSZ))
		uaio__sig_take_back(SIGXFSZ);
	pthread_sigmask(SIG_SETMASK, &x->old, NULL);
}

/*
 * Whether fd is the controlling terminal of a process in the background
 * (TIOCGPGRP is ENOTTY for another terminal; a pty master, which job
 * control leaves alone, answers TIOCGPTN). glibc's helper reads it with
 * SIGTTIN blocked, and the kernel fails that read with EIO at once; uaio
 * would wait for input first, which may never come.
 */
bool aio__tty_background(int fd)
{
	pid_t fg = tcgetpgrp(fd);
	unsigned n;

	return fg > 0 && fg != getpgrp() && ioctl(fd, TIOCGPTN, &n) < 0;
}

/* ------------------------------------------------------ fork */

/* fork() takes the lock first; the loop's lock too, unless this thread
 * holds the engine's already (a handler's fork, depth > 0: the code it
 * interrupted may hold the loop's). Whether it is to take the loop's. */
bool aio__lock_fork_prepare(void)
{
	aio__lock();
	lock_self.fork_loop = E->loop && !lock_self.depth;
	return lock_self.fork_loop;
}

/* Whether fork_prepare took the loop's lock. */
bool aio__lock_fork_loop(void)
{
	return lock_self.fork_loop;
}

void aio__lock_fork_parent(void)
{
	lock_self.fork_loop = false;
	aio__unlock();
}

void aio__lock_fork_child(void)
{
	/* The child's thread has an id of its own. Forked by a handler that
	 * interrupted this thread under the lock: the code it returns to
	 * still holds it (fork_prepare's hold goes); else it is free. */
	lock_self.fork_loop = false;
	lock_self.tid = 0;
	if (lock_self.depth) {
		lock_self.depth--;
		atomic_store(&E->lock, self_tid());
	} else {
		atomic_store(&E->lock, 0);
	}
	if (lock_self.held) {
		lock_self.held = false;
		pthread_sigmask(SIG_SETMASK, &lock_self.old, NULL);
	}
	aio__nested_fork_child();
}
