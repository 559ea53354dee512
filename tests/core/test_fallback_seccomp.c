/* SPDX-License-Identifier: MIT */
/*
 * Automatic fallback: in a child whose seccomp filter makes io_uring_setup
 * fail (EPERM like a container profile, ENOSYS like an old kernel),
 * uaio_loop_new() must still succeed, on epoll, and the loop must work;
 * with UAIO_LOOP_FORCE_URING it must fail with that errno instead.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uaio/loop.h>

#include "test.h"

static int deny_io_uring_setup(int err)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static int got;
static void on_read(uaio_op *op, int res, void *data)
{
	got = res;
}

/* Runs in the child: exit code 0 = behaved. */
static int child(int err)
{
	struct uaio_loop_params forced = { .flags = UAIO_LOOP_FORCE_URING };
	char buf[8] = { 0 };
	uaio_op op = { 0 };
	uaio_loop *l;
	int p[2];

	unsetenv("UAIO_BACKEND");
	if (deny_io_uring_setup(err) < 0)
		return 77;
	errno = 0;
	l = uaio_loop_new(&forced);
	if (l || errno != err) {
		fprintf(stderr, "forced uring: loop %p errno %d, want NULL/%d\n",
			(void *)l, errno, err);
		return 1;
	}
	l = uaio_loop_new(NULL);
	if (!l || uaio_loop_backend(l) != UAIO_BACKEND_EPOLL) {
		fprintf(stderr, "auto: loop %p backend %s\n", (void *)l,
			l ? uaio_loop_backend_name(l) : "-");
		return 1;
	}
	if (pipe(p) < 0 || write(p[1], "fallbk", 6) != 6)
		return 1;
	if (uaio_op_read(l, &op, p[0], buf, sizeof(buf), -1, on_read, NULL) < 0)
		return 1;
	uaio_loop_run(l);
	uaio_loop_free(l);
	return got == 6 && !memcmp(buf, "fallbk", 6) ? 0 : 1;
}

int main(void)
{
	int errs[] = { EPERM, ENOSYS };

	for (unsigned i = 0; i < 2; i++) {
		int st;
		pid_t pid = fork();

		CHECK(pid >= 0);
		if (pid == 0)
			_exit(child(errs[i]));
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st));
		if (WEXITSTATUS(st) == 77)
			SKIP("seccomp unavailable");
		CHECK_EQ(WEXITSTATUS(st), 0);
	}
	return T_EXIT_PASS;
}
