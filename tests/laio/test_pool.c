/* SPDX-License-Identifier: MIT */
/* Calls without a non-blocking form go to the helper pool; thread-bound
 * calls run inline; unknown numbers give ENOSYS inline. */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

static void pool_calls(void)
{
	struct timespec d = { 0, 5 * 1000000 };
	struct laio_completion c;
	void *h;

	h = BG(laio_syscall(SYS_nanosleep, &d, NULL));
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 0);
	CHECK_EQ(c.laio_errno, 0);
	/* full long results (an address) and the syscall's errno */
	h = BG(laio_syscall(SYS_mmap, NULL, 8192L, (long)(PROT_READ | PROT_WRITE),
			    (long)(MAP_PRIVATE | MAP_ANONYMOUS), -1L, 0L));
	c = wait_one(h);
	CHECK(c.laio_return_value != -1);
	char *m = (char *)c.laio_return_value;
	m[0] = 1;
	m[8191] = 2;
	CHECK(munmap(m, 8192) == 0);
	h = BG(laio_syscall(SYS_fstat, 9999, &(struct stat){0}));
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, -1);
	CHECK_EQ(c.laio_errno, EBADF);
	/* wait4 in the background for a child */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		nanosleep(&d, NULL);
		_exit(7);
	}
	int st = 0;
	h = BG(laio_syscall(SYS_wait4, (long)pid, &st, 0L, NULL));
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

static void inline_calls(void)
{
	sigset_t set, old;
	struct rlimit rl;

	CHECK_EQ(INL(laio_syscall(SYS_getpid)), getpid());
	CHECK_EQ(INL(laio_syscall(SYS_gettid)), gettid());
	CHECK_EQ(INL(laio_syscall(SYS_getuid)), getuid());
	/* the calling thread's signal mask changes, not a helper's */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	CHECK_EQ(INL(laio_syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, &old, 8L)), 0);
	CHECK(pthread_sigmask(SIG_SETMASK, NULL, &old) == 0);
	CHECK(sigismember(&old, SIGUSR1));
	CHECK_EQ(INL(laio_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &set, NULL, 8L)), 0);
	CHECK_EQ(INL(laio_syscall(SYS_prlimit64, 0L, (long)RLIMIT_NOFILE, NULL, &rl)), 0);
	CHECK(rl.rlim_cur > 0);
	struct timespec ts;
	CHECK_EQ(INL(laio_syscall(SYS_clock_gettime, (long)CLOCK_MONOTONIC, &ts)), 0);
	/* exit in a child: runs in the calling thread */
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		laio_syscall(SYS_exit_group, 3L);
		_exit(99);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
}

static void unknown_numbers(void)
{
	long bad[] = { -1, -1000, 100000, 1L << 40, 0x40000000L + 5000 };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		CHECK_EQ(INL(laio_syscall(bad[i], 0L, 0L, 0L)), -1);
		CHECK_EQ(errno, ENOSYS);
	}
#ifdef SYS_tuxcall
	errno = 0;
	CHECK_EQ(INL(laio_syscall(SYS_tuxcall)), -1);
	CHECK_EQ(errno, ENOSYS);
#endif
#ifdef __x86_64__
	/* the gap between the x86-64 table and the shared numbers */
	errno = 0;
	CHECK_EQ(INL(laio_syscall(400L)), -1);
	CHECK_EQ(errno, ENOSYS);
#endif
}

static void all(void)
{
	RUN(pool_calls);
	RUN(inline_calls);
	RUN(unknown_numbers);
}

int main(void)
{
	RUN_MECHS(all);
	return T_EXIT_PASS;
}
