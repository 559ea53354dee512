/* SPDX-License-Identifier: MIT */
/* Plumbing the layers share; see plumb.h. */
#define _GNU_SOURCE
#include "util/plumb.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/uio.h>

int uaio__grow_upto(void **arr, unsigned *cap, size_t need, size_t limit, size_t elem)
{
	size_t n = *cap ? *cap : 64;
	void *a;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	if (limit >= need && n > limit)
		n = limit;
	if (n > UINT32_MAX || !(a = realloc(*arr, n * elem)))
		return -ENOMEM;
	memset((char *)a + (size_t)*cap * elem, 0, (n - *cap) * elem);
	*arr = a;
	*cap = (unsigned)n;
	return 0;
}

static void **link_of(const struct uaio__slab *s, void *p)
{
	return (void **)((char *)p + s->link_off);
}

void uaio__slab_init(struct uaio__slab *s, size_t size, size_t link_off,
		     unsigned per)
{
	*s = (struct uaio__slab){ .size = size, .link_off = link_off, .per = per };
}

void *uaio__slab_get(struct uaio__slab *s)
{
	void *p;

	if (!s->free) {
		struct uaio__slab_chunk *c = calloc(1, sizeof(*c) + s->per * s->size);

		if (!c)
			return NULL;
		c->next = s->chunks;
		s->chunks = c;
		for (unsigned i = s->per; i-- > 0;) {
			p = (char *)c->recs + i * s->size;
			*link_of(s, p) = s->free;
			s->free = p;
		}
	}
	p = s->free;
	s->free = *link_of(s, p);
	*link_of(s, p) = NULL;
	return p;
}

void uaio__slab_put(struct uaio__slab *s, void *p)
{
	*link_of(s, p) = s->free;
	s->free = p;
}

bool uaio__slab_owns(const struct uaio__slab *s, const void *p)
{
	for (const struct uaio__slab_chunk *c = s->chunks; c; c = c->next) {
		const char *b = (const char *)c->recs;

		if ((const char *)p >= b && (const char *)p < b + s->per * s->size)
			return ((const char *)p - b) % s->size == 0;
	}
	return false;
}

void uaio__slab_destroy(struct uaio__slab *s)
{
	struct uaio__slab_chunk *c, *next;

	for (c = s->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	s->chunks = NULL;
	s->free = NULL;
}

int64_t uaio__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uaio__ts_ns(&ts);
}

bool uaio__ts_valid(const struct timespec *t)
{
	return t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1000000000;
}

long uaio__sysret(long r)
{
	/* only -1 says errno: syscall(2) passes on a result below -4095 as
	 * it is (fcntl F_GETOWN of a process group, lseek past 2^63) */
	return r == -1 ? -errno : r;
}

long uaio__rw(int fd, bool write, const struct iovec *iov, int cnt, int64_t off,
	      int rwf)
{
	return uaio__sysret(write ? pwritev2(fd, iov, cnt, off, rwf) :
				    preadv2(fd, iov, cnt, off, rwf));
}

int uaio__iov_skip(struct iovec *iov, int cnt, size_t n)
{
	int i = 0;

	while (i < cnt && n >= iov[i].iov_len)
		n -= iov[i++].iov_len;
	if (i < cnt) {
		iov[i].iov_base = (char *)iov[i].iov_base + n;
		iov[i].iov_len -= n;
	}
	return i;
}

int uaio__atfork_once(bool *done, void (*prepare)(void), void (*parent)(void),
		      void (*child)(void))
{
	if (*done)
		return 0;
	if (pthread_atfork(prepare, parent, child))
		return -ENOMEM;
	*done = true;
	return 0;
}

/* ------------------------------------------------ the library's own fds */

struct uaio_owned_fds uaio__owned_fds;

/* Where the library's descriptors go: well above what a program opens
 * first, under RLIMIT_NOFILE and under 1024 (select's FD_SETSIZE, and a
 * small descriptor table). */
static int fd_floor(void)
{
	struct rlimit rl;
	rlim_t top = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
		top = rl.rlim_cur;
	return (int)(top - top / 4);
}

int uaio__fd_own(int fd)
{
	int floor = fd_floor(), high;

	if (fd < 0)
		return fd;
	if (fd < floor && (high = fcntl(fd, F_DUPFD_CLOEXEC, floor)) >= 0) {
		close(fd);
		fd = high;
	}
	if ((fd < floor || fd >= UAIO_OWNED_MAX) &&
	    __atomic_load_n(&uaio__owned_fds.strict, __ATOMIC_RELAXED)) {
		/* low, or beyond the set: the drop-in's close() and
		 * closefrom() could not tell it from the program's own */
		close(fd);
		errno = EMFILE;
		return -1;
	}
	if (fd < UAIO_OWNED_MAX)
		__atomic_fetch_or(&uaio__owned_fds.bits[fd / 64], 1ull << (fd % 64),
				  __ATOMIC_RELAXED);
	return fd;
}

/* Duplicates are many (one per file in flight on the fallback backend).
 * Where the table reaches past FD_SETSIZE they go there, from three
 * quarters of the way up it (as far as the set of owned numbers reaches),
 * and never below FD_SETSIZE: a select() program's own numbers stay
 * below it, as under glibc, which holds none; with no room left there
 * the pin fails (EMFILE) and its caller does without. A table of
 * FD_SETSIZE or less has no such room: they go where the engine's own
 * do. */
static int dup_floor(void)
{
	struct rlimit rl;
	rlim_t top;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur <= FD_SETSIZE)
		return -1;
	top = rl.rlim_cur < UAIO_OWNED_MAX ? rl.rlim_cur : UAIO_OWNED_MAX;
	return top - top / 4 > FD_SETSIZE ? (int)(top - top / 4) : FD_SETSIZE;
}

int uaio__fd_dup_own(int fd)
{
	int floor = dup_floor(), d;

	if (floor < 0)
		d = fcntl(fd, F_DUPFD_CLOEXEC, fd_floor());
	else if ((d = fcntl(fd, F_DUPFD_CLOEXEC, floor)) < 0 && floor > FD_SETSIZE)
		d = fcntl(fd, F_DUPFD_CLOEXEC, FD_SETSIZE);
	if (d < 0 || (d = uaio__fd_own(d)) < 0)
		return -errno;
	return d;
}

void uaio__fd_disown(int fd)
{
	if (fd >= 0 && fd < UAIO_OWNED_MAX)
		__atomic_fetch_and(&uaio__owned_fds.bits[fd / 64], ~(1ull << (fd % 64)),
				   __ATOMIC_RELAXED);
}

int uaio__fd_close(int fd)
{
	uaio__fd_disown(fd);
	return close(fd);
}

/* ------------------------------------------------------------ signals */

void uaio__sig_take_back(int sig)
{
	sigset_t set;
	siginfo_t si;

	sigemptyset(&set);
	sigaddset(&set, sig);
	if (syscall(SYS_rt_sigtimedwait, &set, &si, &(struct timespec){ 0, 0 },
		    _NSIG / 8) != sig || (si.si_code == SI_USER && si.si_pid == getpid()))
		return;
	/* kill()'s codes go back to this thread only: the kernel lets no
	 * one else pass them off as its own */
	if (si.si_code < 0 && si.si_code != SI_TKILL)
		syscall(SYS_rt_sigqueueinfo, getpid(), sig, &si);
	else
		syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, &si);
}
