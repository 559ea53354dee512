/* SPDX-License-Identifier: MIT */
/* Plumbing the layers share: growable arrays, FIFOs, a slab of fixed-size
 * records, clocks and timeouts, syscall results, fork handlers. Nothing
 * here knows about loops, requests or calls; every layer may include it. */
#ifndef UAIO_UTIL_PLUMB_H
#define UAIO_UTIL_PLUMB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ------------------------------------------------------ thread-local */

/* The library's thread-local state sits at a fixed offset from the thread
 * pointer (initial-exec), never behind __tls_get_addr, which allocates on a
 * thread's first access in a dlopened library and reallocates after any
 * later dlopen: aio_error, aio_return and aio_suspend are async-signal-safe,
 * and a handler that interrupted malloc would deadlock in there. It takes
 * its few hundred bytes from the static TLS that glibc keeps for dlopen. */
#define UAIO_TLS __thread __attribute__((tls_model("initial-exec")))

/* ------------------------------------------------------------ arrays */

/* Makes arr hold at least need elements: the capacity doubles from 64,
 * but not past limit where need is within it (0: no limit), and the new
 * tail is zeroed. 0 or -ENOMEM (arr and cap unchanged). */
int uaio__grow_upto(void **arr, unsigned *cap, size_t need, size_t limit, size_t elem);
#define UAIO_GROW(arr, cap, need) \
	uaio__grow_upto((void **)&(arr), &(cap), (need), 0, sizeof(*(arr)))
#define UAIO_GROW_UPTO(arr, cap, need, limit) \
	uaio__grow_upto((void **)&(arr), &(cap), (need), (limit), sizeof(*(arr)))

/* ------------------------------------------------------------- FIFOs */

/* Singly linked through ->next, with a head and a tail pointer. */
#define UAIO_FIFO_PUSH(head, tail, n) do {		\
		(n)->next = NULL;			\
		if (tail)				\
			(tail)->next = (n);		\
		else					\
			(head) = (n);			\
		(tail) = (n);				\
	} while (0)

#define UAIO_FIFO_POP(head, tail, out) do {		\
		(out) = (head);				\
		if (out) {				\
			(head) = (out)->next;		\
			if (!(head))			\
				(tail) = NULL;		\
		}					\
	} while (0)

/* -------------------------------------------------------------- slab */

/* Fixed-size records carved from chunks that live until the slab is
 * destroyed, so a stale pointer still points into one of them (handles are
 * checked with uaio__slab_owns). A free record's link sits at link_off, so
 * its other fields (a magic number) keep their values. Not locked. */
struct uaio__slab_chunk {
	struct uaio__slab_chunk *next;
	max_align_t recs[];
};

struct uaio__slab {
	size_t size, link_off;
	unsigned per;			/* records per chunk */
	void *free;
	struct uaio__slab_chunk *chunks;
};

/* Every record ever carved, free or not (fork handlers, cancel-all). */
#define UAIO_SLAB_FOREACH(s, p)						\
	for (struct uaio__slab_chunk *c__ = (s)->chunks; c__; c__ = c__->next) \
		for (unsigned i__ = 0; i__ < (s)->per &&			\
		     ((p) = (void *)((char *)c__->recs + i__ * (s)->size), 1); i__++)

void uaio__slab_init(struct uaio__slab *s, size_t size, size_t link_off,
		     unsigned per);
void *uaio__slab_get(struct uaio__slab *s);	/* zeroed when first carved */
void uaio__slab_put(struct uaio__slab *s, void *p);
bool uaio__slab_owns(const struct uaio__slab *s, const void *p);
void uaio__slab_destroy(struct uaio__slab *s);

/* ------------------------------------------------------ clocks, times */

int64_t uaio__now_ns(void);			/* CLOCK_MONOTONIC */
/* A duration as POSIX accepts one: tv_sec >= 0, 0 <= tv_nsec < 1e9. */
bool uaio__ts_valid(const struct timespec *t);
/* In ns, saturated: a deadline centuries away must not wrap round. */
static inline int64_t uaio__ts_ns(const struct timespec *t)
{
	if (t->tv_sec >= INT64_MAX / 1000000000)
		return INT64_MAX;
	if (t->tv_sec <= INT64_MIN / 1000000000)
		return INT64_MIN;
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* ----------------------------------------------------- syscall results */

/* A libc call's -1/errno as liburing's -errno; any other result, also
 * a negative one, as it is. */
long uaio__sysret(long r);

/* preadv2/pwritev2 at off (-1: the file position) with rwf (RWF_NOWAIT
 * for a non-blocking try): bytes or -errno. */
struct iovec;
long uaio__rw(int fd, bool write, const struct iovec *iov, int cnt, int64_t off,
	      int rwf);
/* Drops the first n bytes of iov[0..cnt) in place (a short write's
 * continuation): returns the index of the first iovec left. */
int uaio__iov_skip(struct iovec *iov, int cnt, size_t n);

/* ------------------------------------------------ the library's own fds */

/*
 * Descriptors the library holds for itself (rings, eventfds, epoll sets,
 * duplicates of pinned files). Each is moved above the low numbers a
 * program counts on getting from open(2) (glibc's AIO holds none) and
 * marked, so that libuaio-posix.so's close() can keep a program that
 * closes every descriptor from closing them under the engine, and then
 * having their numbers reused for files the engine would write into.
 * One process-wide set, for descriptors below UAIO_OWNED_MAX.
 */
#define UAIO_OWNED_MAX	65536
struct uaio_owned_fds {
	_Atomic uint64_t bits[UAIO_OWNED_MAX / 64];
	/* Set by libuaio-posix.so: a descriptor that cannot be moved up is
	 * given back (EMFILE) rather than kept at a number the program
	 * would have got from open(2); the engine then does not start, and
	 * requests run as glibc runs them. */
	bool strict;			/* __atomic_* access */
};
extern struct uaio_owned_fds uaio__owned_fds;

/* fd moved high (the low number closed) and marked; as it was when it
 * cannot be moved (strict: closed, -1 with EMFILE); a negative fd is
 * returned as it is. */
int uaio__fd_own(int fd);
/* A duplicate of fd for the library itself, high and marked; -errno. */
int uaio__fd_dup_own(int fd);
/* The library closes a descriptor of its own: unmarked, then closed. */
int uaio__fd_close(int fd);
/* Unmarked only, before something else closes it (io_uring_queue_exit). */
void uaio__fd_disown(int fd);
static inline bool uaio__fd_owned(int fd)
{
	return fd >= 0 && fd < UAIO_OWNED_MAX &&
	       (__atomic_load_n(&uaio__owned_fds.bits[fd / 64], __ATOMIC_RELAXED) >>
		(fd % 64) & 1);
}

/* After a call made with sig blocked that may have raised it at this
 * thread (the kernel's SIGPIPE or SIGXFSZ, sent as kill() from the
 * process itself): takes one pending sig, the thread's own first; one
 * from anyone else is put back. */
void uaio__sig_take_back(int sig);

/* pthread_atfork once per *done (callers serialise): 0 or -ENOMEM. */
int uaio__atfork_once(bool *done, void (*prepare)(void), void (*parent)(void),
		      void (*child)(void));

#endif
