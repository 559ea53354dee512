/* SPDX-License-Identifier: MIT */
/*
 * Signals arriving at the calling thread do not end a background call
 * (laio_syscall(3)): on io_uring, a call its workers (io-wq) make, here a
 * blocking eventfd write, used to end with ECANCELED now and then, since
 * io-wq gives up starting a worker while a signal is pending at the
 * thread that issued it and cancels the call unstarted (5 rounds in 20).
 * Each round in a fresh process, whose io-wq has no worker yet.
 */
#include "laio/laio_util.h"
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/eventfd.h>

enum { ROUNDS = 20, CALLS = 64 };

static atomic_bool stop;
static atomic_long nsig;
static pthread_t target;

static void on_sig(int s)
{
	(void)s;
	atomic_fetch_add(&nsig, 1);
}

static void *storm(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_kill(target, SIGUSR1);
		usleep(20);
	}
	return NULL;
}

static void round_in_child(void)
{
	struct sigaction sa = { .sa_handler = on_sig };	/* no SA_RESTART */
	static uint64_t one[CALLS];
	struct laio_completion c[CALLS];
	struct timespec ts = { 10, 0 };
	int efd = eventfd(0, EFD_CLOEXEC), bg = 0, got = 0;
	pthread_t t;

	alarm(30);
	CHECK(efd >= 0);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	target = pthread_self();
	CHECK(pthread_create(&t, NULL, storm, NULL) == 0);
	for (int i = 0; i < CALLS; i++) {
		long r;

		one[i] = 1;
		r = laio_syscall(SYS_write, efd, &one[i], 8L);
		if (laio_gethandle())
			bg++;
		else
			CHECK_EQ(r, 8);
	}
	while (got < bg) {
		int k = laio_poll(c, CALLS, &ts);

		CHECK(k > 0);
		for (int i = 0; i < k; i++, got++) {
			if (c[i].laio_return_value != 8)
				fprintf(stderr, "    a background write ended %ld, errno %d\n",
					(long)c[i].laio_return_value, c[i].laio_errno);
			CHECK_EQ(c[i].laio_return_value, 8);
		}
	}
	atomic_store(&stop, true);
	CHECK(pthread_join(t, NULL) == 0);
	_exit(0);
}

int main(void)
{
	for (int i = 0; i < ROUNDS; i++) {
		fflush(NULL);
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0)
			round_in_child();
		t_wait_ok(pid);
	}
	return T_EXIT_PASS;
}
