/* SPDX-License-Identifier: MIT */
/* fork(): the child starts with no background calls and a working engine. */
#include "laio/laio_util.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <stdbool.h>
#include <string.h>
#include "engine_fds.h"

static void fork_with(bool raw)
{
	int p[2], q[2];
	char b = 0, cb = 0;
	void *h;

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	fflush(NULL);
	/* laio_syscall(SYS_fork) is fork(3): the engine's handlers run */
	pid_t pid = raw ? (pid_t)laio_syscall(SYS_fork) : fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct laio_completion c;
		struct timespec z = { 0, 0 };

		alarm(20);	/* a child that kept the parent's call waits for ever */
		CHECK(laio_gethandle() == NULL);
		CHECK_EQ(laio_poll(&c, 1, &z), 0);
		CHECK_EQ(laio_poll(&c, 1, NULL), 0);	/* nothing outstanding */
		errno = 0;
		CHECK_EQ(laio_cancel(h), -1);
		/* a fresh engine works */
		void *hc = BG(laio_syscall(SYS_read, q[0], &cb, 1));
		CHECK(write(q[1], "c", 1) == 1);
		c = wait_one(hc);
		CHECK_EQ(c.laio_return_value, 1);
		CHECK_EQ(cb, 'c');
		CHECK(laio_fd() >= 0);
		_exit(0);
	}
	t_wait_ok(pid);
	/* the parent's call is still there */
	CHECK(write(p[1], "p", 1) == 1);
	struct laio_completion c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 1);
	CHECK_EQ(b, 'p');
	close(p[0]); close(p[1]); close(q[0]); close(q[1]);
}

static void fork_outstanding(void)
{
	fork_with(false);
}

static void fork_by_laio(void)
{
	fork_with(true);
}

static struct laio_completion poller_got;
static pid_t poller_tid;

static void *poller(void *arg)
{
	(void)arg;
	__atomic_store_n(&poller_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	CHECK_EQ(laio_poll(&poller_got, 1, NULL), 1);
	return NULL;
}

/* Whether thread tid sleeps (in laio_poll, driving the loop). */
static bool sleeping(pid_t tid)
{
	char path[64], buf[256], *p;
	FILE *f;
	bool s = false;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if (!(f = fopen(path, "r")))
		return false;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		s = p[2] == 'S';
	fclose(f);
	return s;
}

/* A fork while another thread drives the engine's loop in laio_poll: the
 * child leaks that loop (it may be mid-update) but keeps none of its
 * descriptors. */
static void fork_while_polling(void)
{
	int p[2];
	char b = 0;
	pthread_t t;
	pid_t tid;
	void *h;

	CHECK(pipe(p) == 0);
	h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	CHECK(engine_fds() > 0);
	CHECK(pthread_create(&t, NULL, poller, NULL) == 0);
	while (!(tid = __atomic_load_n(&poller_tid, __ATOMIC_ACQUIRE)) || !sleeping(tid))
		usleep(1000);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		struct laio_completion c;
		struct timespec z = { 0, 0 };
		int q[2];
		char cb = 0;

		alarm(20);
		CHECK_EQ(engine_fds(), 0);
		CHECK_EQ(laio_poll(&c, 1, &z), 0);
		/* a fresh engine works */
		CHECK(pipe(q) == 0);
		void *hc = BG(laio_syscall(SYS_read, q[0], &cb, 1));
		CHECK(write(q[1], "c", 1) == 1);
		c = wait_one(hc);
		CHECK_EQ(c.laio_return_value, 1);
		CHECK_EQ(cb, 'c');
		_exit(0);
	}
	t_wait_ok(pid);
	CHECK(write(p[1], "p", 1) == 1);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(poller_got.laio_handle == h);
	CHECK_EQ(poller_got.laio_return_value, 1);
	CHECK_EQ(b, 'p');
	close(p[0]);
	close(p[1]);
}

/* A fork while another thread's call starts the process's engine: the
 * child's first call must not wait for ever (the fork copied the
 * engine's start lock locked, and the child ran no handler of ours: they
 * were registered while that lock was held, and pthread_atfork waits for
 * a fork under way). The program's own prepare handler lets the other
 * thread start the engine while the fork is under way: old code hung 4
 * times in 5. Each round in a process whose engine never started. */
static atomic_int go_first;

static void hold_fork(void)
{
	atomic_store(&go_first, 1);
	usleep(5000);
}

static void *first_call(void *arg)
{
	int *p = arg;
	char b;

	while (!atomic_load(&go_first))
		;
	(void)laio_syscall(SYS_read, p[0], &b, 1);	/* empty: the engine starts */
	return NULL;
}

static void fork_first_round(void)
{
	int p[2];
	pthread_t t;

	CHECK(pipe(p) == 0);
	CHECK(pthread_atfork(hold_fork, NULL, NULL) == 0);
	CHECK(pthread_create(&t, NULL, first_call, p) == 0);
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		int q[2];
		char cb = 0;

		alarm(10);	/* the hang */
		CHECK(pipe(q) == 0);
		void *hc = BG(laio_syscall(SYS_read, q[0], &cb, 1));
		CHECK(write(q[1], "c", 1) == 1);
		CHECK_EQ(wait_one(hc).laio_return_value, 1);
		CHECK_EQ(cb, 'c');
		_exit(0);
	}
	t_wait_ok(pid);
	CHECK(write(p[1], "p", 1) == 1);
	CHECK(pthread_join(t, NULL) == 0);
	_exit(0);
}

static void fork_during_first_call(void)
{
	/* Not under AddressSanitizer: its allocator's lock, held by the
	 * thread that starts the engine, reaches the child locked (GCC 12's
	 * libasan takes no atfork lock), and the child's first malloc
	 * waits. */
#ifdef __SANITIZE_ADDRESS__
	fprintf(stderr, "    not under AddressSanitizer\n");
	return;
#endif
	for (int i = 0; i < 5; i++) {
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			fork_first_round();
		t_wait_ok(pid);
	}
}

int main(void)
{
	/* first: before this process starts its engine */
	fprintf(stderr, "  fork_during_first_call ...\n");
	fork_during_first_call();
	RUN_MECHS(fork_outstanding);
	RUN_MECHS(fork_by_laio);
	RUN_MECHS(fork_while_polling);
	return T_EXIT_PASS;
}
