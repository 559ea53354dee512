/* SPDX-License-Identifier: MIT */
/*
 * laio_syscall: the table of calls. One row per system call says how its
 * arguments are rewritten to the *at form the ring knows (normalisation),
 * which class of treatment it gets, and which io_uring op continues it in
 * the background (those forms are in forms.c). The classes are described
 * once, here, and docs/laio.md's class table is generated from this table
 * (tests/laio/test_classes.c checks that it is). A call this build knows that has no row runs on the
 * helper pool; an unknown number runs inline (ENOSYS).
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <sys/wait.h>

#include "laio/engine.h"

/* ---------------------------------------------------------- classes */

struct laio_row;
typedef long (*laio_run_fn)(const struct laio_row *row, long nr, long *a);

struct laio_row {
	long nr;
	const char *name;
	uint8_t cls;			/* C_* */
	void (*norm)(long *a);		/* to the *at form, or NULL */
	int (*ring)(struct laio_call *r);	/* the background io_uring op */
};

static long pool_call(long nr, const long *a);

/*
 * The cached-lookup try of an open. A cached lookup can still block in
 * the open itself (a FIFO waiting for its other end, a lease being
 * broken): tried with O_NONBLOCK, as io_uring tries it, and the caller's
 * flags put back. -EAGAIN: the ring decides. *wait: a FIFO without a
 * reader (ENXIO), which the plain call waits for and io_uring's own try
 * refuses with ENXIO: only the pool makes that call.
 */
static long open_cached(int dfd, const char *path, const struct open_how *how,
			bool *wait)
{
	struct open_how h = *how;
	/* (O_PATH opens nothing that could wait, and takes no O_NONBLOCK) */
	bool added = !(h.flags & (O_NONBLOCK | O_PATH));
	int err = errno;
	long fd;

	if (added)
		h.flags |= O_NONBLOCK;
	h.resolve |= RESOLVE_CACHED;
	fd = syscall(SYS_openat2, dfd, path, &h, sizeof(h));
	if (fd < 0) {
		*wait = errno == ENXIO && added;
		fd = *wait ? -EAGAIN : -errno;
		errno = err;
		return fd;
	}
	/* F_SETFL takes only its own flags from these: what open set. Not
	 * O_ASYNC, which open(2) ignores and F_SETFL would turn on. */
	if (added && fcntl((int)fd, F_SETFL, (int)(how->flags & ~(uint64_t)O_ASYNC)) < 0) {
		close((int)fd);
		errno = err;
		return -EAGAIN;
	}
	return fd;
}

static long open_call(long nr, long *a)
{
	/* Cached lookups complete in the caller (what io_uring tries too). */
	if (!((int)a[2] & (O_CREAT | O_TRUNC | O_TMPFILE))) {
		struct open_how how = { .flags = (uint64_t)(unsigned)a[2] };
		bool wait = false;
		long fd = open_cached((int)a[0], (const char *)a[1], &how, &wait);

		if (wait)	/* a[] is openat's now, whatever nr was */
			return pool_call(SYS_openat, a);
		if (fd != -EAGAIN && fd != -EINVAL && fd != -ENOSYS && fd != -E2BIG)
			return laio__ret_inline(fd);
	}
	return laio__try_ring(nr, a, laio__s_openat);
}

/* openat2's answer for how alone: -EFAULT, -EINVAL, or 0 (then the
 * empty name's ENOENT). */
static long how_refused(const struct open_how *how)
{
	int err = errno;
	long r = syscall(SYS_openat2, -1, "", how, sizeof(*how));

	if (r >= 0) {		/* a kernel that opened "": not the question */
		close((int)r);
		r = 0;
	} else {
		r = errno == EFAULT || errno == EINVAL ? -errno : 0;
	}
	errno = err;
	return r;
}

static long openat2_call(long nr, long *a)
{
	struct open_how *how = (struct open_how *)a[2];
	long e;

	/* No how: the kernel refuses before any lookup (EINVAL or EFAULT). */
	if (!how)
		return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3])));
	if ((size_t)a[3] != sizeof(struct open_how))
		goto pool;
	/* how is read here: the kernel copies it, and checks its flags,
	 * before it reads the name, so a call with an empty one tells,
	 * without faulting, what the plain call would answer for an address
	 * it cannot read (EFAULT) or flags it refuses (EINVAL). */
	if ((e = how_refused(how)) < 0)
		return laio__ret_inline(e);
	if (!(how->flags & (O_CREAT | O_TRUNC | O_TMPFILE))) {
		bool wait = false;
		long fd = open_cached((int)a[0], (const char *)a[1], how, &wait);

		if (wait)	/* a FIFO: RESOLVE_CACHED does not stop that wait */
			goto pool;
		/* asked with RESOLVE_CACHED: EAGAIN is the answer */
		if (fd != -EAGAIN || (how->resolve & RESOLVE_CACHED))
			return laio__ret_inline(fd);
	} else if (how->resolve & RESOLVE_CACHED) {
		return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3])));
	}
	return laio__try_ring(nr, a, laio__s_openat2);
pool: {
		struct laio_call *r;

		if (laio__engine_get() < 0 || !(r = laio__call_new(nr, a)))
			return laio__ret_inline(-EAGAIN);
		return laio__go_background(r, laio__submit_work);
	}
}

static long pool_call(long nr, const long *a)
{
	struct laio_call *r;

	if (laio__engine_get() < 0 || !(r = laio__call_new(nr, a)))
		return laio__ret_inline(-EAGAIN);
	return laio__go_background(r, laio__submit_work);
}

static long c_rw(const struct laio_row *row, long nr, long *a)
{
	return laio__rw_call(nr, a);
}

/* io_uring waits even on the caller's O_NONBLOCK socket, where the
 * syscall itself cannot block: run it here. */
static long c_conn(const struct laio_row *row, long nr, long *a)
{
	int fl = fcntl((int)a[0], F_GETFL);

	if (fl < 0 || (fl & O_NONBLOCK))
		return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3])));
	/* a timeout (connect: SO_SNDTIMEO, accept: SO_RCVTIMEO) the ring
	 * would not keep: the plain call, on the helper pool */
	if (laio__sock_timeout((int)a[0], nr == SYS_connect))
		return pool_call(nr, a);
	return laio__try_ring(nr, a, row->ring);
}

static long c_open(const struct laio_row *row, long nr, long *a)
{
	return nr == SYS_openat2 ? openat2_call(nr, a) : open_call(nr, a);
}

static long c_ring(const struct laio_row *row, long nr, long *a)
{
	/* statx(fd, NULL, AT_EMPTY_PATH): the ring's op wants a path; the
	 * kernel's answer (0 since Linux 6.11, EFAULT before) is the plain
	 * call's, on the helper pool */
	if (nr == SYS_statx && !a[1] && (a[2] & AT_EMPTY_PATH))
		return pool_call(nr, a);
	return laio__try_ring(nr, a, row->ring);
}

/* io_uring does not update the caller's offsets: with offsets, the pool. */
static long c_splice(const struct laio_row *row, long nr, long *a)
{
	if (a[1] || a[3])
		return pool_call(nr, a);
	return laio__try_ring(nr, a, row->ring);
}

/* Calls that give the calling thread a context of its own, which a
 * call made by another thread would not have: credentials (the raw
 * syscalls are per thread; glibc's wrappers change every thread but
 * setfsuid's), a seccomp filter, a Landlock domain, namespaces, a working
 * directory or descriptor table unshared, capability bounds. */
static bool sets_own_context(long nr, const long *a)
{
	switch (nr) {
	case SYS_setuid: case SYS_setgid: case SYS_setreuid: case SYS_setregid:
	case SYS_setresuid: case SYS_setresgid: case SYS_setfsuid: case SYS_setfsgid:
	case SYS_setgroups: case SYS_capset: case SYS_seccomp: case SYS_unshare:
	case SYS_setns:
#ifdef SYS_landlock_restrict_self
	case SYS_landlock_restrict_self:
#endif
		return true;
	case SYS_prctl:
		return a[0] == PR_SET_SECCOMP || a[0] == PR_CAPBSET_DROP ||
		       a[0] == PR_SET_SECUREBITS || a[0] == PR_CAP_AMBIENT;
	}
	return false;
}

/* A thread's ids, to tell a credential call that changed nothing (a
 * setresuid(-1, -1, -1), a setgroups of the groups it has) from one that
 * gave it credentials of its own. More groups than are kept here: taken
 * as changed. */
struct ids {
	long uid[3], gid[3], fsuid, fsgid, ngroups;
	gid_t groups[32];
};

static bool id_call(long nr)
{
	switch (nr) {
	case SYS_setuid: case SYS_setgid: case SYS_setreuid: case SYS_setregid:
	case SYS_setresuid: case SYS_setresgid: case SYS_setfsuid: case SYS_setfsgid:
	case SYS_setgroups:
		return true;
	}
	return false;
}

static void ids_of_thread(struct ids *d)
{
	uid_t u[3];
	gid_t g[3];

	memset(d, 0, sizeof(*d));
	syscall(SYS_getresuid, &u[0], &u[1], &u[2]);
	syscall(SYS_getresgid, &g[0], &g[1], &g[2]);
	for (int i = 0; i < 3; i++) {
		d->uid[i] = u[i];
		d->gid[i] = g[i];
	}
	/* an id of -1 changes nothing, and the answer is the current one */
	d->fsuid = syscall(SYS_setfsuid, -1);
	d->fsgid = syscall(SYS_setfsgid, -1);
	d->ngroups = syscall(SYS_getgroups, 32, d->groups);
}

static long c_inline(const struct laio_row *row, long nr, long *a)
{
	/* fork(3): its handlers leave the child none of the parent's calls;
	 * so for a clone that is a fork (an exit signal and no other flag,
	 * no new stack) */
	if (nr == SYS_fork || (nr == SYS_clone && (a[0] & ~(long)CSIGNAL) == 0 &&
			       (a[0] & CSIGNAL) == SIGCHLD && !a[1]))
		return laio__ret_inline(uaio__sysret(fork()));
	/* From now on this thread's calls are its own: a background call
	 * runs on another thread, with that thread's credentials, filter
	 * and namespaces (io_uring's ops pass no seccomp filter at all). */
	struct ids before, after;
	bool ids = id_call(nr) && !laio__own_context;
	long ret;

	if (ids)
		ids_of_thread(&before);
	ret = uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
	if (ret >= 0 && sets_own_context(nr, a)) {
		if (ids)
			ids_of_thread(&after);
		if (!ids || before.ngroups < 0 || memcmp(&before, &after, sizeof(before)))
			laio__own_context = true;
	}
	return laio__ret_inline(ret);
}

/* A PI futex belongs to the thread that locks it, and a wake cannot
 * block: in the caller. A wait goes to the helper pool. */
static long c_futex(const struct laio_row *row, long nr, long *a)
{
	switch ((int)a[1] & FUTEX_CMD_MASK) {
	case FUTEX_WAIT: case FUTEX_WAIT_BITSET:
		return pool_call(nr, a);
	}
	return c_inline(row, nr, a);
}

/* A wait for the calling thread's own children only (__WNOTHREAD): the
 * helper pool's thread has none. */
static long c_wait(const struct laio_row *row, long nr, long *a)
{
	long options = nr == SYS_wait4 ? a[2] : a[3];

	if (options & (__WNOTHREAD | WNOHANG))
		return c_inline(row, nr, a);
	return pool_call(nr, a);
}

enum { C_RW, C_CONN, C_OPEN, C_RING, C_SPLICE, C_FUTEX, C_WAIT, C_INLINE, C_COUNT };

/* What each class does; docs/laio.md's table is made of these and the
 * rows (laio__class_table). */
static const struct laio_class {
	const char *title, *tried, *blocked;
	laio_run_fn run;
} laio_classes[C_COUNT] = {
	[C_RW] = { "data: files, pipes, sockets, ttys",
		   "`preadv2/pwritev2(RWF_NOWAIT)` (files: the page cache; buffered writes only where the file system takes `RWF_NOWAIT`: XFS, btrfs, not ext4 or tmpfs), `MSG_DONTWAIT`; a receive from the error queue of a socket that has one (`MSG_ERRQUEUE`: IPv4, IPv6, packet, vsock, CAN, RDS, Bluetooth; it never waits there) is the plain call",
		   "files: an io_uring read or write; on the io_uring backend a `write` or `writev` at a regular file's position is the plain call on the loop's worker threads, in call order (`UAIO_OPF_BLOCKING`: io_uring leaves the position unmoved after a part and an error, such as ENOSPC part-way), and a read's position is moved after such a part. Pipes and sockets: the call as an io_uring op (`LAIO_BG=op`, the default), or an io_uring poll then a non-blocking retry (`LAIO_BG=poll`, and a plain `write`, `writev` or `pwrite*`, whose retry blocks `SIGPIPE`); with an address, `recvfrom` and `sendto` as ring `recvmsg`/`sendmsg`. A call goes on from where it stopped as the plain call would: a blocking write (`sendmsg` too) writes everything; a file's read that the cache answered in part reads the rest (a file's read is short only at its end); a blocking stream socket's `MSG_WAITALL` receive waits for all of it (a `recvmsg` with room for ancillary data stops after a part that brought some, as the kernel stops after passed descriptors). The helper pool makes the plain call on a socket with a timeout for the call's direction (`SO_RCVTIMEO`, `SO_SNDTIMEO`), which the ring would not keep, and for a blocking `MSG_PEEK` with `MSG_WAITALL` not answered whole (it peeks from the start each time). On a descriptor the caller made `O_NONBLOCK`, `EAGAIN` is returned inline",
		   c_rw },
	[C_CONN] = { "connections",
		     "on an `O_NONBLOCK` socket the call itself (it cannot block)",
		     "io_uring op, returned inline if the kernel completes it during submission; on a socket with a timeout (`SO_SNDTIMEO` for `connect`, `SO_RCVTIMEO` for `accept`), which the ring would not keep, the helper pool",
		     c_conn },
	[C_OPEN] = { "opens",
		     "`openat2` with `RESOLVE_CACHED` and `O_NONBLOCK`, as io_uring tries it (no `O_CREAT`, `O_TRUNC`, `O_TMPFILE`; a FIFO opened for reading does not wait for a writer; one opened for writing with no reader goes to the helper pool)",
		     "io_uring op, returned inline if the kernel completes it during submission",
		     c_open },
	[C_RING] = { "calls with an io_uring opcode",
		     "submitted to the ring; inline when the kernel completes it during submission",
		     "stays on the ring",
		     c_ring },
	[C_SPLICE] = { "splice",
		       "without offsets: submitted to the ring (io_uring does not update the caller's offsets)",
		       "without offsets: stays on the ring; with offsets: the helper pool",
		       c_splice },
	[C_FUTEX] = { "futex",
		      "all but the waits: the PI operations (the lock's owner is the calling thread), wakes, requeues",
		      "`FUTEX_WAIT`, `FUTEX_WAIT_BITSET`: the helper pool",
		      c_futex },
	[C_WAIT] = { "waits for children",
		     "with `WNOHANG` (cannot block) or `__WNOTHREAD` (the calling thread's children only): the call itself",
		     "the helper pool",
		     c_wait },
	[C_INLINE] = { "always inline",
		       "the call itself",
		       "— (it cannot block, or only makes sense in the calling thread; `fork` is fork(3), so the child starts with none of the parent's calls)",
		       c_inline },
};

#define ROW(n, c, nm, rg)	{ SYS_##n, #n, c, nm, rg },
#define INLINE(n)		ROW(n, C_INLINE, NULL, NULL)

static const struct laio_row laio_rows[] = {
	ROW(read, C_RW, NULL, NULL) ROW(write, C_RW, NULL, NULL)
	ROW(readv, C_RW, NULL, NULL) ROW(writev, C_RW, NULL, NULL)
	ROW(pread64, C_RW, NULL, NULL) ROW(pwrite64, C_RW, NULL, NULL)
	ROW(preadv, C_RW, NULL, NULL) ROW(pwritev, C_RW, NULL, NULL)
	ROW(preadv2, C_RW, NULL, NULL) ROW(pwritev2, C_RW, NULL, NULL)
	ROW(recvfrom, C_RW, NULL, NULL) ROW(sendto, C_RW, NULL, NULL)
	ROW(recvmsg, C_RW, NULL, NULL) ROW(sendmsg, C_RW, NULL, NULL)
	ROW(accept, C_CONN, NULL, laio__s_accept) ROW(accept4, C_CONN, NULL, laio__s_accept)
	ROW(connect, C_CONN, NULL, laio__s_connect)
#ifdef SYS_open
	ROW(open, C_OPEN, laio__n_open, laio__s_openat)
#endif
#ifdef SYS_creat
	ROW(creat, C_OPEN, laio__n_creat, laio__s_openat)
#endif
	ROW(openat, C_OPEN, NULL, laio__s_openat)
	ROW(openat2, C_OPEN, NULL, laio__s_openat2)
	ROW(statx, C_RING, NULL, laio__s_statx)
	ROW(fsync, C_RING, NULL, laio__s_fsync) ROW(fdatasync, C_RING, NULL, laio__s_fsync)
	ROW(fallocate, C_RING, NULL, laio__s_fallocate)
	ROW(unlinkat, C_RING, NULL, laio__s_unlinkat)
#ifdef SYS_unlink
	ROW(unlink, C_RING, laio__n_unlink, laio__s_unlinkat) ROW(rmdir, C_RING, laio__n_rmdir, laio__s_unlinkat)
#endif
	ROW(renameat, C_RING, laio__n_renameat, laio__s_renameat)
	ROW(renameat2, C_RING, NULL, laio__s_renameat)
#ifdef SYS_rename
	ROW(rename, C_RING, laio__n_rename, laio__s_renameat)
#endif
	ROW(mkdirat, C_RING, NULL, laio__s_mkdirat)
#ifdef SYS_mkdir
	ROW(mkdir, C_RING, laio__n_mkdir, laio__s_mkdirat)
#endif
	ROW(symlinkat, C_RING, NULL, laio__s_symlinkat)
#ifdef SYS_symlink
	ROW(symlink, C_RING, laio__n_symlink, laio__s_symlinkat)
#endif
	ROW(linkat, C_RING, NULL, laio__s_linkat)
#ifdef SYS_link
	ROW(link, C_RING, laio__n_link, laio__s_linkat)
#endif
#ifdef SYS_fadvise64
	ROW(fadvise64, C_RING, NULL, laio__s_fadvise)
#endif
	ROW(madvise, C_RING, NULL, laio__s_madvise)
	ROW(tee, C_RING, NULL, laio__s_tee) ROW(shutdown, C_RING, NULL, laio__s_shutdown)
	ROW(splice, C_SPLICE, NULL, laio__s_splice)
	ROW(futex, C_FUTEX, NULL, NULL)
	ROW(wait4, C_WAIT, NULL, NULL) ROW(waitid, C_WAIT, NULL, NULL)
	/* descriptors: close(2) leaves the calls in flight on the file alone,
	 * where the ring's close would cancel them first */
	INLINE(close)
#ifdef SYS_close_range
	INLINE(close_range)	/* CLOSE_RANGE_UNSHARE: the caller's table */
#endif
	/* process and thread lifecycle */
	INLINE(exit) INLINE(exit_group) INLINE(fork) INLINE(vfork) INLINE(clone)
	INLINE(execve) INLINE(execveat)
#ifdef SYS_clone3
	INLINE(clone3)
#endif
	INLINE(set_tid_address) INLINE(set_robust_list) INLINE(get_robust_list)
	INLINE(restart_syscall)
#ifdef SYS_rseq
	INLINE(rseq)
#endif
#ifdef SYS_arch_prctl
	INLINE(arch_prctl)
#endif
	INLINE(prctl) INLINE(personality) INLINE(seccomp) INLINE(unshare) INLINE(setns)
#ifdef SYS_landlock_restrict_self
	INLINE(landlock_restrict_self)
#endif
	/* bound to the calling thread (perf_event_open pid 0) or task (a
	 * ring's submitter) */
	INLINE(perf_event_open) INLINE(io_uring_setup) INLINE(io_uring_register)
	INLINE(io_uring_enter) INLINE(ptrace) INLINE(timer_create)
	/* signal state of the calling thread */
	INLINE(rt_sigprocmask) INLINE(rt_sigaction) INLINE(rt_sigreturn)
	INLINE(sigaltstack) INLINE(rt_sigpending) INLINE(rt_sigsuspend)
	INLINE(rt_sigtimedwait)
#ifdef SYS_pause
	INLINE(pause)
#endif
	/* identity, credentials (per thread at the syscall level), limits */
	INLINE(getpid) INLINE(getppid) INLINE(gettid) INLINE(getuid) INLINE(geteuid)
	INLINE(getgid) INLINE(getegid) INLINE(getresuid) INLINE(getresgid)
	INLINE(getgroups) INLINE(setuid) INLINE(setgid) INLINE(setreuid)
	INLINE(setregid) INLINE(setresuid) INLINE(setresgid) INLINE(setfsuid)
	INLINE(setfsgid) INLINE(setgroups) INLINE(capget) INLINE(capset)
	INLINE(getpgid) INLINE(setpgid) INLINE(getsid) INLINE(setsid)
#ifdef SYS_getpgrp
	INLINE(getpgrp)
#endif
#ifdef SYS_getrlimit
	INLINE(getrlimit)
#endif
	INLINE(setrlimit) INLINE(prlimit64) INLINE(getrusage) INLINE(umask) INLINE(times)
	/* scheduling of the calling thread */
	INLINE(sched_yield) INLINE(sched_getaffinity) INLINE(sched_setaffinity)
	INLINE(sched_getparam) INLINE(sched_setparam) INLINE(sched_getscheduler)
	INLINE(sched_setscheduler) INLINE(sched_getattr) INLINE(sched_setattr)
	INLINE(sched_rr_get_interval)
	INLINE(getpriority) INLINE(setpriority) INLINE(ioprio_get) INLINE(ioprio_set)
	INLINE(getcpu) INLINE(set_mempolicy) INLINE(get_mempolicy)
#ifdef SYS_modify_ldt
	INLINE(modify_ldt)
#endif
#ifdef SYS_ioperm
	INLINE(ioperm) INLINE(iopl)
#endif
	/* clocks and fixed facts: cannot block */
	INLINE(clock_gettime) INLINE(clock_getres) INLINE(gettimeofday) INLINE(uname)
#ifdef SYS_time
	INLINE(time)
#endif
	/* not implemented on x86-64: the kernel answers ENOSYS at once */
#ifdef SYS_afs_syscall
	INLINE(afs_syscall) INLINE(tuxcall) INLINE(security) INLINE(vserver)
	INLINE(getpmsg) INLINE(putpmsg) INLINE(create_module) INLINE(get_kernel_syms)
	INLINE(query_module) INLINE(nfsservctl) INLINE(_sysctl)
	INLINE(set_thread_area) INLINE(get_thread_area) INLINE(lookup_dcookie)
	INLINE(uselib)
#endif
};

#undef ROW
#undef INLINE

/* Row by number (0: none), and the numbers this build knows at all. */
#define NR_MAX	1024
static uint16_t laio_row_of[NR_MAX];
static uint64_t laio_known[NR_MAX / 64];
static pthread_once_t laio_table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	static const long nums[] = {
#define LAIO_SYS(name) SYS_##name,
#include "laio/sysnums.h"
#undef LAIO_SYS
	};

	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (nums[i] >= 0 && nums[i] < NR_MAX)
			laio_known[nums[i] / 64] |= 1ull << (nums[i] % 64);
	for (size_t i = 0; i < sizeof(laio_rows) / sizeof(laio_rows[0]); i++)
		if (laio_rows[i].nr >= 0 && laio_rows[i].nr < NR_MAX)
			laio_row_of[laio_rows[i].nr] = (uint16_t)(i + 1);
}

static long dispatch_rows(long nr, long *a)
{
	const struct laio_row *row;

	pthread_once(&laio_table_once, table_init);
	if (nr < NR_MAX && laio_row_of[nr]) {
		row = &laio_rows[laio_row_of[nr] - 1];
		if (row->norm)
			row->norm(a);
		return laio_classes[row->cls].run(row, nr, a);
	}
	if (nr < NR_MAX && (laio_known[nr / 64] >> (nr % 64) & 1))
		return pool_call(nr, a);
	return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5])));
}

/* The rest of laio_syscall: never cancelled part way (engine.h). */
static long dispatch(long nr, long *a)
{
	long r;
	int cs;

	/* The kernel would truncate it to an int and run another call. */
	if (nr < 0 || nr > INT_MAX)
		return laio__ret_inline(-ENOSYS);
	cs = uaio__nocancel_begin();
	r = dispatch_rows(nr, a);
	uaio__nocancel_end(cs);
	return r;
}

UAIO_API
long laio_syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);

	/* A thread with a context of its own: every call here, blocking,
	 * so that none is made without it. */
	if (UAIO_UNLIKELY(laio__own_context) && nr != SYS_fork && nr != SYS_clone)
		return laio__ret_inline(uaio__sysret(syscall(nr, a[0], a[1], a[2], a[3],
							     a[4], a[5])));
	/* The hot cases, read(2) and pread(2) that do not block: one raw
	 * syscall (no cancellation-point wrapper), nothing else. */
	if (UAIO_LIKELY((nr == SYS_read || (nr == SYS_pread64 && a[3] >= 0)) &&
			(unsigned long)a[2] <= LAIO_RW_MAX)) {
		struct iovec iov = { (void *)a[1], (size_t)a[2] };
		long r = syscall(SYS_preadv2, a[0], &iov, 1, nr == SYS_read ? -1L : a[3], 0L,
				 RWF_NOWAIT);

		if (r < 0 ? errno != EAGAIN && errno != EOPNOTSUPP : r == 0 || r == a[2]) {
			laio__last = NULL;
			return r;
		}
		/* Part of it: a pipe's or socket's answer, or a file's read
		 * that stopped at a page not cached. */
		if (r > 0) {
			struct laio_call tmp;
			int cs;

			laio__tmp_init(&tmp, nr, a);
			cs = uaio__nocancel_begin();
			r = laio__rw_after_try(&tmp, r);
			uaio__nocancel_end(cs);
			return r;
		}
	}
	return dispatch(nr, a);
}

/* docs/laio.md's class table, in markdown, from the rows. */
size_t laio__class_table(char *buf, size_t len)
{
	size_t n = 0;

#define PUT(...) (n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__))
	PUT("| class | calls | tried inline with | when it would block |\n|---|---|---|---|\n");
	for (int c = 0; c < C_COUNT; c++) {
		bool first = true;

		PUT("| %s | ", laio_classes[c].title);
		for (size_t i = 0; i < sizeof(laio_rows) / sizeof(laio_rows[0]); i++) {
			if (laio_rows[i].cls != c)
				continue;
			PUT("%s`%s`", first ? "" : ", ", laio_rows[i].name);
			first = false;
		}
		PUT(" | %s | %s |\n", laio_classes[c].tried, laio_classes[c].blocked);
	}
	PUT("| everything else this build knows | e.g. `sync`, `getdents64`, `flock`, `nanosleep`, `fstat` | nothing | the helper pool runs it |\n");
	PUT("| unknown numbers | | the kernel, inline: `ENOSYS` | — |\n");
#undef PUT
	return n;
}
