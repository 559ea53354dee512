/* SPDX-License-Identifier: MIT */
/*
 * The status of a request, in the caller's aiocb: publication at the end,
 * the completion counter waiters sleep on, and aio_error and aio_return,
 * which read it without locks (async-signal-safe, as POSIX asks; so is
 * aio_suspend, in suspend.c).
 */
#define _GNU_SOURCE
#include "aio/engine.h"

void aio__seq_bump(void)
{
	atomic_fetch_add(&E->seq, 1);
	if (atomic_load(&E->waiters))
		syscall(SYS_futex, &E->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Sleeps while *word == snap, until deadline (CLOCK_MONOTONIC; NULL:
 * none). A handled signal ends it as it ends glibc's waits: a timed one
 * always (-EINTR), an untimed one unless the handler has SA_RESTART, when
 * the kernel restarts it. Returns 0, -ETIMEDOUT or -EINTR. */
int aio__futex_wait_abs(atomic_uint *word, unsigned snap,
			  const struct timespec *deadline)
{
	long r;

	r = syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, snap, deadline,
		    NULL, FUTEX_BITSET_MATCH_ANY);
	if (r < 0 && (errno == ETIMEDOUT || errno == EINTR))
		return -errno;
	return 0;
}

static int seq_wait(unsigned snap, const struct timespec *deadline)
{
	return aio__futex_wait_abs(&E->seq, snap, deadline);
}

/* The final status, for aio_error/aio_return: nothing touches cb after
 * this, the caller may reuse it at once. */
void aio__publish(struct aiocb *cb, long res)
{
	cb->__return_value = res < 0 ? -1 : res;
	atomic_store_explicit(&priv(cb)->state, tag(cb, ST_DONE), memory_order_release);
	__atomic_store_n(&cb->__error_code, res < 0 ? (int)-res : 0, __ATOMIC_RELEASE);
}

/* Whether sev delivers anything: not SIGEV_SIGNAL with signal 0, nor a
 * sigevent that is no good (glibc takes any, and sends nothing). */
bool aio__sev_notifies(const struct sigevent *sev)
{
	return uaio__sigevent_check(sev) == 0 &&
	       (sev->sigev_notify == SIGEV_THREAD ||
		(sev->sigev_notify == SIGEV_SIGNAL && sev->sigev_signo));
}

/* Blocks this thread's signals, so that a handler cannot run (or leave by
 * longjmp) between a request's signal and the waking of its waiters:
 * under the engine lock until aio__unlock (false), else until the caller
 * puts *old back (true). */
static bool signals_block(sigset_t *old)
{
	sigset_t all;

	if (aio__signals_hold())
		return false;
	sigfillset(&all);
	return pthread_sigmask(SIG_BLOCK, &all, old) == 0;
}

/*
 * The thread a request's signal goes to, when it ends inside the call of
 * a thread other than the main one that lets the signal through (old, its
 * mask): the main thread (its tid), when that lets it through too, else 0
 * (to the process). glibc's helper thread, which blocks every signal,
 * queues it to the process, and the kernel gives it to the main thread
 * first. Queued to the process here, under the full mask aio__complete
 * holds, the kernel woke the main thread, but the caller's unblocking
 * took the signal first: a main thread waiting for it in sigsuspend, while
 * a worker submitted, slept on. Asked of /proc (only then): unknown, 0.
 */
static pid_t signal_target(int sig, const sigset_t *old)
{
	pid_t pid;
	char path[48] = "/proc/self/task/", digits[16], buf[2048], *p;
	unsigned long long blocked = 0;
	size_t at = strlen(path), k = 0;
	ssize_t n;
	int fd;

	if (sigismember(old, sig) || gettid() == (pid = getpid()))
		return 0;
	/* no stdio: this may run where only async-signal-safe calls may */
	for (unsigned v = (unsigned)pid; v || !k; v /= 10)
		digits[k++] = (char)('0' + v % 10);
	while (k)
		path[at++] = digits[--k];
	memcpy(path + at, "/status", sizeof("/status"));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* an exiting or exited main thread takes nothing */
	if (!(p = strstr(buf, "\nState:\t")) || p[8] == 'Z' || p[8] == 'X' ||
	    !(p = strstr(buf, "\nSigBlk:\t")))
		return 0;
	for (p += 9; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
		blocked = blocked << 4 | (unsigned)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	return blocked >> (sig - 1) & 1 ? 0 : pid;
}

/*
 * A request's end, in glibc's order as a program can see it: its signal
 * queued before its status is out (ST_ENDING meanwhile, which aio_error
 * and aio_return wait through, as glibc's wait for the lock held across
 * both), then its waiters; a SIGEV_THREAD function starts after the
 * status is out. A program that sees the request done (aio_error,
 * aio_suspend, a LIO_WAIT lio_listio) finds its signal pending already,
 * and a handler that runs at once finds its status out.
 */
void aio__complete(struct aiocb *cb, long res)
{
	struct aio_lio *g = priv(cb)->lio;	/* before cb may be reused */
	struct sigevent sev;
	struct uaio_note *held = NULL;
	bool notify = aio__sev_notifies(&cb->aio_sigevent), restore = false;
	sigset_t old;
	int e;

	/* glibc: a signal that cannot be queued becomes the status. */
	if (cb->aio_sigevent.sigev_notify == SIGEV_SIGNAL && !notify &&
	    cb->aio_sigevent.sigev_signo)
		res = -EINVAL;
	/* Whatever the notification needs of the caller's (the sigevent,
	 * the thread attributes it points to) is read before the status
	 * says done: after that the caller may reuse or destroy it. A
	 * SIGEV_THREAD with no attributes needs nothing more than the copy,
	 * and its thread is made after the status, as glibc makes it: made
	 * before, an aio_suspend in a handler that interrupted malloc waited
	 * on a pthread_create that waited (through an exiting thread's
	 * stack) for that malloc's lock. */
	if (notify) {
		sev = cb->aio_sigevent;
		if (sev.sigev_notify != SIGEV_THREAD || sev.sigev_notify_attributes)
			uaio__notify_begin(&sev, &held);
	}
	if (notify && sev.sigev_notify == SIGEV_SIGNAL) {
		uint64_t want = tag(cb, ST_ENDING);

		/* no handler of this thread's may wait on it meanwhile */
		restore = signals_block(&old);
		atomic_fetch_add(&E->ending, 1);
		atomic_store_explicit(&priv(cb)->state, want, memory_order_release);
		/* The status goes into the aiocb before the signal, as glibc
		 * writes it: a handler may set the aiocb up anew at once, and
		 * nothing here writes it after, but for the state word, and
		 * that only if it was not set up anew. */
		cb->__return_value = res < 0 ? -1 : res;
		__atomic_store_n(&cb->__error_code, res < 0 ? (int)-res : 0, __ATOMIC_RELEASE);
		/* glibc: a signal that cannot be queued (a full queue)
		 * becomes the request's status (no handler ran) */
		if ((e = uaio__notify_end_to(&sev, held, restore ?
					     signal_target(sev.sigev_signo, &old) : 0)) < 0) {
			res = e;
			cb->__return_value = -1;
			__atomic_store_n(&cb->__error_code, -e, __ATOMIC_RELEASE);
		}
		atomic_compare_exchange_strong(&priv(cb)->state, &want, tag(cb, ST_DONE));
		atomic_fetch_sub(&E->ending, 1);
	} else {
		aio__publish(cb, res);
		if (notify && sev.sigev_notify == SIGEV_THREAD && !held &&
		    !sev.sigev_notify_attributes)
			uaio__notify_begin(&sev, &held);
		/* after the status: the function may read it at once */
		if (notify && (e = uaio__notify_end(&sev, held)) < 0) {
			cb->__return_value = -1;
			__atomic_store_n(&cb->__error_code, -e, __ATOMIC_RELEASE);
			res = e;
		}
	}
	/* read by LIO_WAIT's waiter once the list is done: the list's own
	 * put (under the lock, or on the submitting thread) comes after */
	if (g && res < 0)
		atomic_store_explicit(&g->failed, true, memory_order_relaxed);
	aio__seq_bump();
	aio__suspend_wake(cb);
	if (restore)
		pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ------------------------------------------- error, return, suspend */

/*
 * Whether this thread keeps several requests in flight: it asked for the
 * status of a request older than its newest since it last submitted (a
 * queue, as fio's posixaio at depth 16), or only of the newest (one at a
 * time: it waits for each). Only a guess, which decides where a large
 * cached read is copied (submit.c): nothing else depends on it, so a
 * signal handler's status call meanwhile does no harm.
 */
static UAIO_TLS struct {
	const struct aiocb *newest;
	uint8_t asked;		/* since the last submission: ASKED_* */
	bool queues;
} depth_guess;
enum { ASKED_NONE, ASKED_NEWEST, ASKED_OLDER };

void aio__status_asked(const struct aiocb *cb)
{
	if (depth_guess.asked != ASKED_OLDER)
		depth_guess.asked = cb == depth_guess.newest ? ASKED_NEWEST : ASKED_OLDER;
}

bool aio__caller_queues(const struct aiocb *cb)
{
	if (depth_guess.asked != ASKED_NONE)
		depth_guess.queues = depth_guess.asked == ASKED_OLDER;
	depth_guess.asked = ASKED_NONE;
	depth_guess.newest = cb;
	return depth_guess.queues;
}

/* cb's state once past ST_ENDING (a wait of a syscall's length), and in
 * *code (may be NULL) its error code as of then. aio__complete writes the
 * code while ST_ENDING: loaded before the state, a new code means the
 * state is ST_ENDING or later, so the code is never one whose signal is
 * not queued yet. */
unsigned long long aio__settled(const struct aiocb *cb, int *code)
{
	uint64_t st, want;
	int ec;

	for (;;) {
		unsigned snap = atomic_load(&E->seq);

		ec = __atomic_load_n(&cb->__error_code, __ATOMIC_ACQUIRE);
		if ((st = cb_state(cb)) != ST_ENDING)
			break;

		/* in a child of fork: the thread that was ending it is not
		 * here, and the request stays in progress, as an orphan */
		if (!atomic_load(&E->ending)) {
			want = tag(cb, ST_ENDING);
			atomic_compare_exchange_strong(&priv(cb)->state, &want,
						       tag(cb, ST_ORPHAN));
			continue;
		}

		atomic_fetch_add(&E->waiters, 1);
		if (cb_state(cb) == ST_ENDING) {
			/* aio_error and aio_return, called from signal
			 * handlers, never touch errno (glibc's do not) */
			int e = errno;

			seq_wait(snap, NULL);
			errno = e;
		}
		atomic_fetch_sub(&E->waiters, 1);
	}
	if (code)
		*code = ec;
	return st;
}

UAIO_API int uaio_error(const struct aiocb *cb)
{
	uint64_t st;
	int ec;

	if (!cb)
		return posix_ret(-EINVAL);
	aio__status_asked(cb);
	st = aio__settled(cb, &ec);
	if (st != ST_LIVE && st != ST_DONE && st != ST_RETURNED && st != ST_ORPHAN)
		return posix_ret(-EINVAL);
	return ec;
}

UAIO_API ssize_t uaio_return(struct aiocb *cb)
{
	uint64_t want;

	if (!cb)
		return posix_ret(-EINVAL);
	aio__status_asked(cb);
	aio__settled(cb, NULL);
	want = tag(cb, ST_DONE);
	/* Exactly once, even when threads race for it. */
	if (atomic_compare_exchange_strong(&priv(cb)->state, &want,
					   tag(cb, ST_RETURNED)))
		return cb->__return_value;
	return posix_ret(cb_state(cb) == ST_LIVE || cb_state(cb) == ST_ORPHAN ?
			 -EINPROGRESS : -EINVAL);
}

bool aio__any_done(const struct aiocb *const list[], int nent)
{
	for (int i = 0; i < nent; i++) {
		const struct aiocb *cb = list[i];

		uint64_t st;
		int ec;

		if (!cb)
			continue;
		/* the code first: a new one means the state read next is
		 * ST_ENDING or later (aio__complete writes them so) */
		ec = __atomic_load_n(&cb->__error_code, __ATOMIC_ACQUIRE);
		if ((st = cb_state(cb)) == ST_ENDING)	/* its status is not out */
			continue;
		if ((st != ST_LIVE && st != ST_ORPHAN) || ec != EINPROGRESS)
			return true;
	}
	return false;
}
