/* SPDX-License-Identifier: MIT */
/*
 * libuaio-posix.so: the standard aio_* names, so that an unmodified
 * program built against glibc's <aio.h> runs on uaio when LD_PRELOADed or
 * linked ahead of libc (man 7 uaio_posix).
 *
 * Each name is exported under the versions glibc gives it (GLIBC_2.2.5
 * from librt, GLIBC_2.4 for lio_listio, GLIBC_2.34 since libc took them
 * over), so the references of a glibc-built binary, which carry those
 * versions, bind here first. Everything else in this library is hidden.
 */
#define _GNU_SOURCE
#include <aio.h>
#include <dlfcn.h>
#include <sys/resource.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <unistd.h>
#include <linux/close_range.h>

#include <uaio/aio.h>
#include "aio/aio_internal.h"
#include "util/plumb.h"
#include <sys/syscall.h>

_Static_assert(sizeof(struct aiocb) == sizeof(struct aiocb64) &&
	       offsetof(struct aiocb, aio_offset) == offsetof(struct aiocb64, aio_offset),
	       "aiocb64 differs from aiocb on this ABI");

void uaio__init_hint(const struct aioinit *init);

#define EXPORT __attribute__((visibility("default"), used))

/* One definition per exported version: name@VER binds to name_tag. */
#define VERSIONED(ret, name, params, call, tag, ver)			\
	EXPORT ret name##_##tag params { return call; }			\
	__asm__(".symver " #name "_" #tag ", " #name ver)

/* glibc's calls leave errno alone when they succeed; ours may make
 * syscalls that fail on the way (an inline try told EAGAIN). */
#define KEEP_ERRNO(call) ({ int e_ = errno; __typeof__(call) r_ = (call);	\
			    if (r_ >= 0) errno = e_; r_; })

#define ALL(ret, name, params, call)					\
	VERSIONED(ret, name, params, call, v2_2_5, "@GLIBC_2.2.5");	\
	VERSIONED(ret, name, params, call, v2_34, "@@GLIBC_2.34")

ALL(int, aio_read, (struct aiocb *cb), KEEP_ERRNO(uaio_read(cb)));
ALL(int, aio_read64, (struct aiocb64 *cb), KEEP_ERRNO(uaio_read((struct aiocb *)cb)));
ALL(int, aio_write, (struct aiocb *cb), KEEP_ERRNO(uaio_write(cb)));
ALL(int, aio_write64, (struct aiocb64 *cb), KEEP_ERRNO(uaio_write((struct aiocb *)cb)));
ALL(int, aio_fsync, (int op, struct aiocb *cb), KEEP_ERRNO(uaio_fsync(op, cb)));
ALL(int, aio_fsync64, (int op, struct aiocb64 *cb), KEEP_ERRNO(uaio_fsync(op, (struct aiocb *)cb)));
/*
 * glibc's aio_error and aio_return read the status the aiocb holds, and
 * nothing else: any number of times, and on an aiocb never submitted too
 * (whatever it holds: 0 when zeroed). uaio_error and uaio_return are
 * stricter (EINVAL for those, aio_return once); a drop-in answers as
 * glibc. The engine keeps the status in the same fields, published in the
 * same order (return value, then error code). NULL, on which glibc would
 * crash, is EINVAL.
 */
static int error_glibc(const struct aiocb *cb)
{
	if (!cb) {
		errno = EINVAL;
		return -1;
	}
	int ec;

	aio__status_asked(cb);
	aio__settled(cb, &ec);
	return ec;
}

static ssize_t return_glibc(const struct aiocb *cb)
{
	if (!cb) {
		errno = EINVAL;
		return -1;
	}
	aio__status_asked(cb);
	aio__settled(cb, NULL);	/* the error code, then the state */
	return cb->__return_value;
}

ALL(int, aio_error, (const struct aiocb *cb), error_glibc(cb));
ALL(int, aio_error64, (const struct aiocb64 *cb), error_glibc((const struct aiocb *)cb));
ALL(ssize_t, aio_return, (struct aiocb *cb), return_glibc(cb));
ALL(ssize_t, aio_return64, (struct aiocb64 *cb), return_glibc((struct aiocb *)cb));
ALL(int, aio_cancel, (int fd, struct aiocb *cb), KEEP_ERRNO(uaio_cancel(fd, cb)));
ALL(int, aio_cancel64, (int fd, struct aiocb64 *cb), KEEP_ERRNO(uaio_cancel(fd, (struct aiocb *)cb)));
ALL(int, aio_suspend, (const struct aiocb *const l[], int n, const struct timespec *t),
    KEEP_ERRNO(uaio_suspend(l, n, t)));
ALL(int, aio_suspend64, (const struct aiocb64 *const l[], int n, const struct timespec *t),
    KEEP_ERRNO(uaio_suspend((const struct aiocb *const *)l, n, t)));

#define LIO(name, type)							\
	ALL(int, name, (int mode, type *const l[], int n, struct sigevent *s), \
	    KEEP_ERRNO(aio__lio_listio(mode, (struct aiocb *const *)l, n, s))); \
	VERSIONED(int, name, (int mode, type *const l[], int n, struct sigevent *s), \
		  KEEP_ERRNO(aio__lio_listio(mode, (struct aiocb *const *)l, n, s)), v2_4, "@GLIBC_2.4")
LIO(lio_listio, struct aiocb);
LIO(lio_listio64, struct aiocb64);

#define INIT(tag, ver)							\
	EXPORT void aio_init_##tag(const struct aioinit *init) { int e = errno; uaio__init_hint(init); errno = e; } \
	__asm__(".symver aio_init_" #tag ", aio_init" ver)
INIT(v2_2_5, "@GLIBC_2.2.5");
INIT(v2_34, "@@GLIBC_2.34");

/*
 * The engine's own descriptors (rings, eventfds; util/plumb.h) live above
 * the numbers a program opens first, and a program that closes every
 * descriptor (a daemon's first steps; close_range, closefrom) must not
 * close them: glibc's AIO holds none, and a number the engine still uses
 * would go to the program's next file, which the engine would then write
 * into. Such a close is reported done and the descriptor kept. libc's own
 * functions do the rest; they are looked up once, at load.
 */
static struct {
	int (*close)(int);
	int (*close_range)(unsigned, unsigned, int);
	void (*closefrom)(int);
	int (*setrlimit)(int, const struct rlimit *);
	int (*prlimit)(pid_t, int, const struct rlimit *, struct rlimit *);
} libc;

__attribute__((constructor)) static void dropin_init(void)
{
	libc.close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	libc.close_range = (int (*)(unsigned, unsigned, int))dlsym(RTLD_NEXT, "close_range");
	libc.closefrom = (void (*)(int))dlsym(RTLD_NEXT, "closefrom");
	libc.setrlimit = (int (*)(int, const struct rlimit *))dlsym(RTLD_NEXT, "setrlimit");
	libc.prlimit = (int (*)(pid_t, int, const struct rlimit *, struct rlimit *))
		dlsym(RTLD_NEXT, "prlimit");
	/* glibc's AIO takes no descriptor: one the engine cannot keep above
	 * the program's numbers is not taken at all */
	__atomic_store_n(&uaio__owned_fds.strict, true, __ATOMIC_RELAXED);
}

/* The engine's descriptors are no program's: to it they are numbers not
 * open, as under glibc (EBADF), and stay the engine's. */
static int close_glibc(int fd)
{
	if (uaio__fd_owned(fd)) {
		errno = EBADF;
		return -1;
	}
	return libc.close ? libc.close(fd) : (int)syscall(SYS_close, fd);
}

/* [first, last] less the engine's descriptors, in pieces. */
static int close_range_glibc(unsigned first, unsigned last, int flags)
{
	unsigned lo = first;

	/* the kernel's checks first: a range of only the engine's numbers,
	 * which no call here reaches, still fails as close_range would */
	if (first > last || (flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC))) {
		errno = EINVAL;
		return -1;
	}
	for (unsigned fd = first; fd <= last && fd < UAIO_OWNED_MAX; fd++) {
		if (!uaio__fd_owned((int)fd))
			continue;
		if (fd > lo && (libc.close_range ? libc.close_range(lo, fd - 1, flags) :
				(int)syscall(SYS_close_range, lo, fd - 1, flags)) < 0)
			return -1;
		lo = fd + 1;
	}
	if (lo <= last)
		return libc.close_range ? libc.close_range(lo, last, flags) :
					  (int)syscall(SYS_close_range, lo, last, flags);
	return 0;
}

static void closefrom_glibc(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	/* glibc's closefrom is close_range, or one close per descriptor
	 * where the kernel has no close_range */
	if (close_range_glibc((unsigned)lowfd, UINT_MAX, 0) == 0)
		return;
	for (long fd = lowfd, max = sysconf(_SC_OPEN_MAX); fd < max; fd++)
		close_glibc((int)fd);
}

VERSIONED(int, close, (int fd), close_glibc(fd), v2_2_5, "@@GLIBC_2.2.5");
VERSIONED(int, close_range, (unsigned first, unsigned last, int flags),
	  close_range_glibc(first, last, flags), v2_34, "@@GLIBC_2.34");
EXPORT void closefrom_v2_34(int lowfd) { closefrom_glibc(lowfd); }
__asm__(".symver closefrom_v2_34, closefrom@@GLIBC_2.34");

/*
 * RLIMIT_FSIZE is looked up every few submissions (aio__fsize_changed):
 * a program that lowers it after using AIO, then writes past it, would
 * have an inline write raise SIGXFSZ at its thread and die of it, where
 * glibc's helper gets EFBIG. So a change of that limit is seen at once.
 * (x86-64: rlimit and rlimit64 are one type, and setrlimit64, prlimit64
 * glibc's aliases of the same functions.)
 */
static int setrlimit_glibc(int res, const struct rlimit *rl)
{
	int r = libc.setrlimit ? libc.setrlimit(res, rl) :
				 (int)syscall(SYS_prlimit64, 0, res, rl, NULL);

	if (res == RLIMIT_FSIZE)
		uaio__aio_fsize_changed();
	return r;
}

static int prlimit_glibc(pid_t pid, int res, const struct rlimit *rl, struct rlimit *old)
{
	int r = libc.prlimit ? libc.prlimit(pid, res, rl, old) :
			       (int)syscall(SYS_prlimit64, pid, res, rl, old);

	if (res == RLIMIT_FSIZE && rl)
		uaio__aio_fsize_changed();
	return r;
}

VERSIONED(int, setrlimit, (__rlimit_resource_t res, const struct rlimit *rl),
	  setrlimit_glibc((int)res, rl), v2_2_5, "@@GLIBC_2.2.5");
VERSIONED(int, setrlimit64, (__rlimit_resource_t res, const struct rlimit64 *rl),
	  setrlimit_glibc((int)res, (const struct rlimit *)rl), v2_2_5, "@@GLIBC_2.2.5");
VERSIONED(int, prlimit, (pid_t pid, __rlimit_resource_t res, const struct rlimit *rl,
			 struct rlimit *old),
	  prlimit_glibc(pid, (int)res, rl, old), v2_13, "@@GLIBC_2.13");
VERSIONED(int, prlimit64, (pid_t pid, __rlimit_resource_t res, const struct rlimit64 *rl,
			   struct rlimit64 *old),
	  prlimit_glibc(pid, (int)res, (const struct rlimit *)rl, (struct rlimit *)old),
	  v2_13, "@@GLIBC_2.13");
