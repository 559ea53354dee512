/* SPDX-License-Identifier: MIT */
/*
 * A submitting thread's own ring. A single small request on a regular file
 * (or an O_DIRECT one) goes to the kernel from the thread that makes it,
 * on a ring of that thread's: nothing needs pinning, and no other thread
 * has to wake up to issue it.
 *
 * Why a ring of its own: io_uring completes a request as task work of the
 * thread that issued it, and that work wakes the thread. On a ring this
 * thread sleeps on (aio_suspend), that one wake-up ends the sleep, and the
 * thread reaps and publishes the completion itself: one wake-up per
 * request, where a helper (glibc's, or the engine's loop) needs two, the
 * helper's and then the caller's. When the thread is not waiting there,
 * its ring's eventfd wakes the engine thread, which reaps it instead; so
 * aio_error polling and notifications work as for any request.
 * docs/design.md, POSIX AIO.
 */
#define _GNU_SOURCE
#include "aio/engine.h"

#include <signal.h>
#include <sys/eventfd.h>

static UAIO_TLS struct aio_thread *aio_self;

/* ------------------------------------------------------ reaping */

/* Wakes the engine's reaping of the rings (own_input). */
static void own_kick(void)
{
	uint64_t one = 1;

	if (write(E->own_evfd, &one, sizeof(one)) < 0)
		(void)0;	/* a count already there wakes it too */
}

/* Ends the requests whose completions t's ring holds; by: 0 its own
 * thread, 1 the engine's. */
static void own_reap_locked(struct aio_thread *t, int by)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	bool was = E->own_reaping;

	/* Its own thread may be in a handler's aio_suspend: what the ends
	 * release goes to the engine (fdw.c, issue_released_locked) */
	E->own_reaping = by == 0;
	io_uring_for_each_cqe(&t->ring, head, cqe) {
		struct aio_req *r = io_uring_cqe_get_data(cqe);

		n++;
		if (r)		/* NULL: a submission that failed (own_issue) */
			aio__req_end_locked(r, cqe->res);
	}
	io_uring_cq_advance(&t->ring, n);
	E->own_reaping = was;
	if (n)
		atomic_fetch_add_explicit(&E->own_reaped[by], n, memory_order_relaxed);
	if (by == 0 && (E->deferq || E->spare_over))
		own_kick();
}

void uaio__aio_own_reaped(unsigned long *by_thread, unsigned long *by_engine)
{
	*by_thread = atomic_load(&E->own_reaped[0]);
	*by_engine = atomic_load(&E->own_reaped[1]);
}

/* The engine thread: some ring has completions; reap those whose thread
 * is not reaping them itself. */
static int own_input(uaio_watch *w)
{
	uint64_t v;

	if (read(w->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -1;
	aio__lock();
	for (struct aio_thread *t = E->threads; t; t = t->next)
		if (!t->reaping)
			own_reap_locked(t, 1);
	aio__deferred_locked();
	aio__unlock();
	return 0;
}

static const struct uaio_handler own_handler = { .handle_input = own_input };

/* With the engine's loop: the eventfd every thread's ring signals. */
int aio__threads_start_locked(void)
{
	int r;

	/* A new engine keeps the eventfd of rings that outlived the last
	 * one (their threads were waiting on them when it retired). */
	if (E->own_evfd < 0 &&
	    (E->own_evfd = uaio__fd_own(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))) < 0)
		return -errno;
	memset(&E->own_watch, 0, sizeof(E->own_watch));
	r = uaio_watch_start(E->loop, &E->own_watch, E->own_evfd, UAIO_READABLE,
			     &own_handler, NULL);
	if (r < 0 && !E->threads) {
		uaio__fd_close(E->own_evfd);
		E->own_evfd = -1;
	}
	return r;
}

/* ------------------------------------------------------ threads */

static struct aio_thread *thread_self_locked(void)
{
	if (!aio_self && (aio_self = calloc(1, sizeof(*aio_self))) &&
	    pthread_setspecific(E->thread_key, aio_self)) {
		free(aio_self);
		aio_self = NULL;
	}
	return aio_self;
}

static int ring_setup_locked(struct aio_thread *t)
{
	if (t->ring_ok)
		return 0;
	if (io_uring_queue_init(OWN_ENTRIES, &t->ring, 0) < 0)
		return -EAGAIN;
	t->ring.ring_fd = t->ring.enter_ring_fd = uaio__fd_own(t->ring.ring_fd);
	if (t->ring.ring_fd < 0) {
		io_uring_queue_exit(&t->ring);
		return -EAGAIN;
	}
	if (io_uring_register_eventfd(&t->ring, E->own_evfd) < 0) {
		uaio__fd_disown(t->ring.ring_fd);
		io_uring_queue_exit(&t->ring);
		return -EAGAIN;
	}
	t->ring_ok = true;
	t->next = E->threads;
	E->threads = t;
	return 0;
}

static void ring_drop_locked(struct aio_thread *t)
{
	struct aio_thread **pp;

	if (!t->ring_ok)
		return;
	for (pp = &E->threads; *pp && *pp != t; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = t->next;
	t->ring_ok = false;
	uaio__fd_disown(t->ring.ring_fd);
	io_uring_queue_exit(&t->ring);
}

/* The engine retires (no request anywhere): the threads' rings and their
 * eventfd go too, as glibc's idle helpers leave nothing behind; a thread
 * makes its ring anew on its next direct request. One still inside
 * aio_suspend's wait (reaping) keeps its ring, and the eventfd with it. */
void aio__threads_retire_locked(void)
{
	struct aio_thread *t, *next;

	for (t = E->threads; t; t = next) {
		next = t->next;
		if (!t->reaping && !t->direct)
			ring_drop_locked(t);
	}
	if (!E->threads && E->own_evfd >= 0) {
		uaio__fd_close(E->own_evfd);
		E->own_evfd = -1;
	}
}

/* pthread key destructor: the exiting thread waits until the kernel has
 * finished the requests it issued (the engine thread reaps them), then
 * lets its ring go. */
void aio__thread_exit_wait(void *arg)
{
	struct aio_thread *t = arg;

	aio__lock();
	t->exiting = true;
	while (t->direct)
		aio__cond_wait();
	ring_drop_locked(t);
	aio_self = NULL;
	aio__unlock();
	free(t);
}

/* The child has only the forking thread, and no requests: every ring goes
 * (its memory is shared with the parent's), the thread's own with them. */
void aio__threads_fork_child(void)
{
	struct aio_thread *t, *next;

	for (t = E->threads; t; t = next) {
		next = t->next;
		t->ring_ok = false;
		uaio__fd_disown(t->ring.ring_fd);
		io_uring_queue_exit(&t->ring);	/* unmaps and closes: ours only */
		if (t != aio_self)
			free(t);	/* its thread is not in the child */
	}
	E->threads = NULL;
	if (aio_self) {
		aio_self->direct = 0;
		aio_self->reaping = false;	/* a handler forked in its sleep */
	}
	if (E->own_evfd >= 0)
		uaio__fd_close(E->own_evfd);
	E->own_evfd = -1;
	memset(&E->own_watch, 0, sizeof(E->own_watch));
}

/* ------------------------------------------------------ issue */

/*
 * r on the calling thread's ring, by descriptor fd: the kernel takes its
 * file reference before this returns. -EAGAIN when the ring cannot take
 * it (none, full), or the thread has never waited in aio_suspend: the
 * caller hands r to the loop instead.
 *
 * Why only a thread that waits in aio_suspend: the task work that ends
 * its requests interrupts whatever the thread sleeps in, and some sleeps
 * (sigtimedwait, epoll_wait) then return EINTR where glibc's would not; a
 * thread that waits for its requests in aio_suspend is woken there.
 */
int aio__own_issue_locked(struct aio_req *r, int fd)
{
	struct req_span sp = req_span(r);
	struct io_uring_sqe *sqe;
	struct aio_thread *t;
	int ret;

	/* The thread reaps its ring in aio_suspend, which a signal handler
	 * may call: the end of a request whose notification allocates and
	 * makes a thread (SIGEV_THREAD), or of a list entry (its list's
	 * notification, its record freed), would then run malloc in the
	 * handler, over the interrupted code's lock. Those go to the
	 * engine, as glibc's aio_suspend only waits. */
	if (priv(req_cb(r))->lio || req_cb(r)->aio_sigevent.sigev_notify == SIGEV_THREAD)
		return -EAGAIN;
	/* The thread's record is made here, not in aio_suspend, which must
	 * not allocate (it is async-signal-safe). */
	if (E->own_evfd < 0 || !(t = thread_self_locked()) || !t->waits || t->exiting || ring_setup_locked(t) < 0 ||
	    t->direct >= OWN_ENTRIES ||
	    !(sqe = io_uring_get_sqe(&t->ring)))
		return -EAGAIN;
	switch (r->kind) {
	case K_READ:
		io_uring_prep_read(sqe, fd, sp.buf, (unsigned)sp.len, (uint64_t)sp.off);
		break;
	case K_WRITE:
		io_uring_prep_write(sqe, fd, sp.buf, (unsigned)sp.len, (uint64_t)sp.off);
		break;
	default:
		io_uring_prep_fsync(sqe, fd, r->kind == K_DSYNC ? IORING_FSYNC_DATASYNC : 0);
	}
	io_uring_sqe_set_data(sqe, r);
	/* With every signal blocked: a request the kernel hands to io-wq
	 * starts a worker thread from this one, and that creation fails
	 * while a signal is pending here; after a few tries the kernel
	 * cancels the request (a write ended with ECANCELED under a fast
	 * timer, nobody having cancelled it). glibc's helpers block all
	 * signals too. */
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	ret = io_uring_submit(&t->ring);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 1) {
		/* Left in the queue: it goes with the next submission as a
		 * no-op that nobody waits for. */
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data(sqe, NULL);
		return -EAGAIN;
	}
	r->fd = fd;
	r->u.thr = t;
	r->flags |= RF_DIRECT;
	r->state = RS_LOOP;
	t->direct++;
	return 0;
}

/* ------------------------------------------------------ waiting */

/* Whether every live aiocb of list is a request of t's ring: then only
 * its completions can end the wait (aio_cancel leaves them be). */
static bool list_is_own_locked(struct aio_thread *t, const struct aiocb *const list[],
			       int nent)
{
	for (int i = 0; i < nent; i++) {
		const struct aiocb *cb = list[i];
		struct aio_req *r;

		if (!cb)
			continue;
		if (cb_state(cb) != ST_LIVE)
			return false;
		r = priv(cb)->req;
		if (!r || req_cb(r) != cb || !(r->flags & RF_DIRECT) || r->u.thr != t)
			return false;
	}
	return true;
}

/* Sleeps until a completion is posted, with the signal mask mask for the
 * sleep only (the caller blocks all signals around its checks): a
 * handler's own aio_suspend cannot reap, between the caller's last look
 * and this sleep, the completion the sleep would wait for. */
static int ring_wait(struct aio_thread *t, const struct timespec *deadline,
		     const sigset_t *mask)
{
	struct __kernel_timespec ts;
	struct io_uring_getevents_arg arg = {
		.sigmask = (uint64_t)(uintptr_t)mask, .sigmask_sz = _NSIG / 8,
	};
	long r;

	if (deadline) {
		int64_t left = uaio__ts_ns(deadline) - uaio__now_ns();

		if (left <= 0)
			return -ETIME;
		ts.tv_sec = left / 1000000000;
		ts.tv_nsec = left % 1000000000;
		arg.ts = (uint64_t)(uintptr_t)&ts;
	}
	/* Runs this thread's task work, which posts its completions; any
	 * signal ends it with EINTR, SA_RESTART or not (wait_restarts). */
	r = syscall(__NR_io_uring_enter, t->ring.ring_fd, 0, 1,
		    IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));
	return r < 0 ? -errno : 0;
}

/* A fault the thread makes itself, never one that reaches a sleeping
 * thread: its handler (a sanitizer's, a crash reporter's) has no say. */
static bool fault_signal(int s)
{
	return s == SIGSEGV || s == SIGBUS || s == SIGFPE || s == SIGILL ||
	       s == SIGTRAP || s == SIGSYS;
}

/*
 * io_uring's wait ends with EINTR whatever the signal, where the kernel
 * restarts glibc's futex wait: untimed, after a handler with SA_RESTART;
 * timed or not, after a stop and continue (no handler ran). Which signal
 * it was is not known: the wait goes on when every signal this thread
 * could have taken would have restarted it.
 */
static bool wait_restarts(bool timed, const sigset_t *mask)
{
	struct sigaction sa;

	for (int s = 1; s < NSIG; s++) {
		if (sigismember(mask, s) == 1 || fault_signal(s) ||
		    sigaction(s, NULL, &sa) < 0 ||
		    sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN)
			continue;
		if (timed || !(sa.sa_flags & SA_RESTART))
			return false;
	}
	return true;
}

/* The engine reaps t's ring from now (its eventfd on), as for a thread
 * that does not sleep there; kick: and what was posted already, which
 * this thread leaves (else it reaps that itself, after this). */
static void ring_to_engine_locked(struct aio_thread *t, bool kick)
{
	t->reaping = false;
	io_uring_cq_eventfd_toggle(&t->ring, true);
	if (kick)
		own_kick();
}

struct own_sleep {
	struct aio_thread *t;	/* NULL: a nested wait, which changed nothing */
	const sigset_t *mask;	/* the caller's */
};

/* A cancel took the thread out of its ring's sleep: the engine hears of
 * its completions again, and the cleanup handlers after this one run
 * with the caller's signal mask. */
static void own_wait_cancelled(void *arg)
{
	struct own_sleep *c = arg;

	if (c->t) {
		aio__lock();
		if (c->t->ring_ok) {
			ring_to_engine_locked(c->t, false);
			own_reap_locked(c->t, 0);
		}
		aio__unlock();
	}
	pthread_sigmask(SIG_SETMASK, c->mask, NULL);
}

static int ring_wait_cancelable(struct aio_thread *t, const struct timespec *deadline,
				bool nested, const sigset_t *mask)
{
	struct own_sleep c = { nested ? NULL : t, mask };
	volatile int r;
	int ct;

	/* pushed first: a cancel already pending acts as the type turns
	 * asynchronous */
	pthread_cleanup_push(own_wait_cancelled, &c);
	ct = aio__cancel_async();
	r = ring_wait(t, deadline, mask);
	aio__cancel_restore(ct);
	pthread_cleanup_pop(0);
	return r;
}

/*
 * aio_suspend's wait when the calling thread issued every request of the
 * list on its ring: it sleeps there and reaps them itself. false if it
 * does not apply (the futex wait then); else *res is 0, -EAGAIN (the
 * deadline passed) or -EINTR.
 */
bool aio__own_wait(const struct aiocb *const list[], int nent,
		   const struct timespec *deadline, int *res)
{
	struct aio_thread *t = aio_self;
	bool lost = false, nested;
	sigset_t all, old;
	int r = 0;

	if (!t)
		return false;
	t->waits = true;	/* this thread's own field */
	if (!__atomic_load_n(&t->direct, __ATOMIC_RELAXED))
		return false;
	/* aio_suspend is a cancellation point: one pending acts here, where
	 * nothing is to be put back yet */
	pthread_testcancel();
	/* aio_suspend is async-signal-safe: a handler that interrupted this
	 * thread while it held the lock waits on the futex instead. */
	if (!aio__trylock())
		return false;
	if (!t->ring_ok || !list_is_own_locked(t, list, nent)) {
		/* A handler run while this thread slept on its ring, which
		 * reaps nothing meanwhile, waiting for others' requests too:
		 * the engine reaps the ring for it, as for a thread that does
		 * not wait there (what was posted already, at the kick). The
		 * sleep it interrupted takes the ring back. */
		if (t->reaping && t->ring_ok)
			ring_to_engine_locked(t, true);
		aio__unlock();
		return false;
	}
	/* Reaping already: a handler run while this thread slept here. It
	 * reaps too (the sleep it interrupted reaps nothing meanwhile) and
	 * leaves the eventfd and the flag as it found them. */
	nested = t->reaping;
	t->reaping = true;
	/* The engine need not hear of completions we wait for. */
	io_uring_cq_eventfd_toggle(&t->ring, false);
	/* Handlers run only in the sleep (ring_wait), with the caller's mask. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (;;) {
		own_reap_locked(t, 0);
		if (aio__any_done(list, nent) || r < 0)
			break;
		aio__unlock();
		r = ring_wait_cancelable(t, deadline, nested, &old);
		if (r == -EINTR && wait_restarts(deadline != NULL, &old))
			r = 0;
		aio__lock();
		/* A handler forked: this child has no ring any more. Its
		 * signal ends the wait as any would; one that goes on goes on
		 * the futex (the parent's requests never end here) */
		if (!t->ring_ok) {
			lost = r == 0;
			break;
		}
		/* A handler's wait for others' requests too gave the ring to
		 * the engine (above): this sleep takes it back. */
		if (!t->reaping) {
			t->reaping = true;
			io_uring_cq_eventfd_toggle(&t->ring, false);
		}
		if (r == -ETIME || r == -EINTR)
			continue;	/* reap once more, then stop */
		if (r < 0) {	/* not expected: the futex wait takes over */
			lost = true;
			continue;
		}
	}
	/* The outer wait gives the ring back; so does a nested one that
	 * leaves for the futex, where nobody would reap it. */
	if (t->ring_ok && !nested) {
		ring_to_engine_locked(t, false);
		own_reap_locked(t, 0);	/* one posted before the eventfd was back */
	} else if (t->ring_ok && lost) {
		ring_to_engine_locked(t, true);
	}
	aio__unlock();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (aio__any_done(list, nent))
		*res = 0;
	else if (lost)
		return false;
	else
		*res = r == -ETIME ? -EAGAIN : -EINTR;
	return true;
}
