/* SPDX-License-Identifier: MIT */
/* Many threads submit, several poll: every completion arrives exactly once,
 * to whichever thread polls, with per-thread handles. */
#include "laio/laio_util.h"
#include <pthread.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

enum { T = 4, M = 1500, HBITS = 16 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { void *h; int slot; } map[1 << HBITS];
static unsigned char done[T * M], buf[T * M];
static atomic_int ncomp, stop;

static unsigned hslot(void *h)
{
	return (unsigned)(((uintptr_t)h >> 4) * 2654435761u) >> (32 - HBITS);
}

static void map_put(void *h, int slot)
{
	pthread_mutex_lock(&mu);
	unsigned i = hslot(h);
	/* h may still be here: a poller got its previous call's completion
	 * but has not taken it out yet. Probing finds the older one first. */
	while (map[i].h)
		i = (i + 1) & ((1 << HBITS) - 1);
	map[i].h = h;
	map[i].slot = slot;
	pthread_mutex_unlock(&mu);
}

static int map_take(void *h)
{
	int slot = -1;

	pthread_mutex_lock(&mu);
	unsigned i = hslot(h);
	while (map[i].h && map[i].h != h)
		i = (i + 1) & ((1 << HBITS) - 1);
	CHECK(map[i].h == h);	/* a completion for no outstanding call */
	slot = map[i].slot;
	/* backward-shift delete */
	unsigned j = i;
	for (;;) {
		j = (j + 1) & ((1 << HBITS) - 1);
		if (!map[j].h)
			break;
		unsigned k = hslot(map[j].h);
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			map[i] = map[j];
			i = j;
		}
	}
	map[i].h = NULL;
	pthread_mutex_unlock(&mu);
	return slot;
}

static void handle(struct laio_completion *c, int n)
{
	for (int i = 0; i < n; i++) {
		int s = map_take(c[i].laio_handle);
		CHECK_EQ(c[i].laio_return_value, 1);
		CHECK_EQ(buf[s], (unsigned char)(s * 7 + 1));
		CHECK_EQ(done[s], 0);
		done[s] = 1;
		atomic_fetch_add(&ncomp, 1);
	}
}

static void *submitter(void *arg)
{
	int t = (int)(intptr_t)arg, p[2];
	struct laio_completion c[8];
	struct timespec z = { 0, 0 };

	CHECK(pipe(p) == 0);
	for (int i = 0; i < M; i++) {
		int s = t * M + i;
		void *h = BG(laio_syscall(SYS_read, p[0], &buf[s], 1));
		CHECK(laio_gethandle() == h);	/* per thread */
		map_put(h, s);
		unsigned char v = (unsigned char)(s * 7 + 1);
		/* wait for the previous read to be done before the next byte
		 * could be taken by the wrong read */
		CHECK(write(p[1], &v, 1) == 1);
		while (!done[s]) {
			int n = laio_poll(c, 8, &z);
			CHECK(n >= 0);
			handle(c, n);
			if (!n)
				sched_yield();
		}
	}
	close(p[0]);
	close(p[1]);
	return NULL;
}

static void *poller(void *arg)
{
	struct laio_completion c[16];
	int k = 0;

	while (!atomic_load(&stop)) {
		struct timespec ms = { 0, 1000000 }, z = { 0, 0 };
		const struct timespec *t = k % 3 == 0 ? &ms : k % 3 == 1 ? &z : NULL;
		int n;

		/* NULL only while something is surely outstanding */
		if (!t && atomic_load(&ncomp) >= T * M - T)
			t = &ms;
		n = laio_poll(c, (k % 16) + 1, t);
		CHECK(n >= 0);
		handle(c, n);
		k++;
	}
	return NULL;
}

static void many_threads(void)
{
	pthread_t s[T], p[2];

	memset(done, 0, sizeof(done));
	atomic_store(&ncomp, 0);
	atomic_store(&stop, 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&p[i], NULL, poller, NULL) == 0);
	for (int i = 0; i < T; i++)
		CHECK(pthread_create(&s[i], NULL, submitter, (void *)(intptr_t)i) == 0);
	for (int i = 0; i < T; i++)
		pthread_join(s[i], NULL);
	atomic_store(&stop, 1);
	/* a poller in laio_poll(NULL) returns once nothing is outstanding */
	for (int i = 0; i < 2; i++)
		pthread_join(p[i], NULL);
	CHECK_EQ(atomic_load(&ncomp), T * M);
	for (int i = 0; i < T * M; i++)
		CHECK_EQ(done[i], 1);
	struct laio_completion c;
	struct timespec z = { 0, 0 };
	CHECK_EQ(laio_poll(&c, 1, &z), 0);
}

/* Calls that belong to the calling thread run in it: a PI futex's owner
 * is the thread that locked it, and only that one may unlock it. */
static void thread_bound(void)
{
	static uint32_t word;
	pid_t tid = (pid_t)syscall(SYS_gettid);

	CHECK_EQ(INL(laio_syscall(SYS_futex, &word, FUTEX_LOCK_PI, 0, NULL, NULL, 0)), 0);
	CHECK_EQ(word & FUTEX_TID_MASK, (uint32_t)tid);
	CHECK_EQ(INL(laio_syscall(SYS_futex, &word, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0)), 0);
	CHECK_EQ(word, 0);
	/* a wake cannot block; a wait goes to the pool (EAGAIN: value moved) */
	CHECK_EQ(INL(laio_syscall(SYS_futex, &word, FUTEX_WAKE, 1, NULL, NULL, 0)), 0);
	void *h = BG(laio_syscall(SYS_futex, &word, FUTEX_WAIT, 1, NULL, NULL, 0));
	struct laio_completion c = wait_one(h);
	CHECK_EQ(c.laio_return_value, -1);
	CHECK_EQ(c.laio_errno, EAGAIN);
}

/* Threads made and joined one after another, each leaving a read on an
 * empty pipe or socket in the background: glibc gives each the pthread_t
 * of the one before. Each exit is a thread leaving its io_uring requests
 * to be cancelled; every call still ends with its own bytes. (A newcomer
 * taken for the exited driver issued its requests itself, and its exit
 * cancelled them: 15 of 16 ended with ECANCELED.) */
enum { SEQ = 16 };
static int seq_fd[SEQ][2];
static char seq_buf[SEQ][8];
static void *seq_h[SEQ];

static void *seq_caller(void *arg)
{
	long i = (long)arg;

	seq_h[i] = BG(i & 1 ? laio_syscall(SYS_recvfrom, seq_fd[i][0], seq_buf[i], 8, 0, NULL, NULL)
			    : laio_syscall(SYS_read, seq_fd[i][0], seq_buf[i], 8));
	if (i % 4 == 3)
		pthread_exit(NULL);
	return NULL;
}

static void callers_one_after_another(void)
{
	struct laio_completion c[SEQ];
	struct timespec ts = { 10, 0 };
	pthread_t t;
	int got = 0;

	for (long i = 0; i < SEQ; i++) {
		CHECK_EQ(i & 1 ? socketpair(AF_UNIX, SOCK_STREAM, 0, seq_fd[i]) : pipe(seq_fd[i]), 0);
		CHECK_EQ(pthread_create(&t, NULL, seq_caller, (void *)i), 0);
		CHECK_EQ(pthread_join(t, NULL), 0);
	}
	for (int i = 0; i < SEQ; i++)
		CHECK_EQ(write(seq_fd[i][1], "hello", 5), 5);
	while (got < SEQ) {
		int n = laio_poll(c, SEQ, &ts);

		CHECK(n > 0);
		for (int k = 0; k < n; k++) {
			int i = handle_index(seq_h, SEQ, &c[k]);

			if (c[k].laio_return_value != 5)
				fprintf(stderr, "call %d: %ld (%s)\n", i, c[k].laio_return_value,
					strerror(c[k].laio_errno));
			CHECK_EQ(c[k].laio_return_value, 5);
			CHECK(!memcmp(seq_buf[i], "hello", 5));
			seq_h[i] = NULL;
		}
		got += n;
	}
	for (int i = 0; i < SEQ; i++) {
		close(seq_fd[i][0]);
		close(seq_fd[i][1]);
	}
}

int main(void)
{
	RUN_MECHS(many_threads);
	RUN_MECHS(callers_one_after_another);
	RUN(thread_bound);
	return T_EXIT_PASS;
}
