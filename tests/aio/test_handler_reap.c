/* SPDX-License-Identifier: MIT */
/*
 * aio_suspend is async-signal-safe, so a handler may call it while its
 * thread sleeps in aio_suspend on its own ring (src/aio/thread.c), and
 * the handler's wait then reaps that ring. The ends it runs there must
 * not allocate or free (the handler may have interrupted malloc): not
 * the descriptor record freed past the 16 kept, nor the write that
 * waited behind the fsync which ended, whose issue may allocate; the
 * engine does those. This program's malloc and free count the calls made
 * while its handler runs (not under ASan, whose allocator is its own),
 * and the write released that way must still land.
 */
#include "aio/aio_util.h"
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

enum { NF = 18, BIG = 1 << 20 };

#ifndef __SANITIZE_ADDRESS__
extern void *__libc_malloc(size_t), *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static _Thread_local volatile int in_handler;
static volatile int in_handler_calls;

#define COUNT() do { if (in_handler) in_handler_calls++; } while (0)
void *malloc(size_t n) { COUNT(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { COUNT(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { COUNT(); return __libc_realloc(p, n); }
void free(void *p) { if (p) COUNT(); __libc_free(p); }
#define IN_HANDLER(v)	(in_handler = (v))
#else
static volatile int in_handler_calls;
#define IN_HANDLER(v)	((void)0)
#endif

static struct aiocb fs0, wr0;
static volatile sig_atomic_t h_ran, h_res = 99;
static atomic_int armed, stop;
static pid_t main_tid;

static void on_sig(int sig)
{
	const struct aiocb *l[1] = { &fs0 };
	struct timespec to = { 5, 0 };
	int e = errno;

	(void)sig;
	IN_HANDLER(1);
	if (uaio_error(&fs0) == EINPROGRESS) {
		h_ran = 1;
		h_res = uaio_suspend(l, 1, &to);
	}
	IN_HANDLER(0);
	errno = e;
}

/* Signals the main thread once it sleeps (io_uring_enter, or a futex). */
static void *kicker(void *arg)
{
	char path[64], line[64];

	(void)arg;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", main_tid);
	while (!atomic_load(&armed) && !atomic_load(&stop))
		usleep(20);
	while (!atomic_load(&stop)) {
		FILE *f = fopen(path, "r");
		long n = f && fgets(line, sizeof(line), f) ? atol(line) : -1;

		if (f)
			fclose(f);
		if (n == SYS_io_uring_enter || n == SYS_futex) {
			syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
			break;
		}
	}
	return NULL;
}

static void fsync_now(int fd)
{
	struct aiocb cb = t_cb(fd, NULL, 0, 0);
	int err;

	CHECK_EQ(uaio_fsync(O_SYNC, &cb), 0);
	CHECK_EQ(t_wait(&cb, &err), 0);
}

/* held: a write waits behind the fsync, and its end releases it (the
 * descriptor's record stays); else the end frees the record */
static void handler_reaps(bool held)
{
	struct sigaction sa = { .sa_handler = on_sig };
	struct aiocb cbs[NF];
	static char big[BIG], got[4], done[4] = "done";
	int fds[NF], err;
	pthread_t k;

	main_tid = gettid();
	h_ran = 0;
	h_res = 99;
	in_handler_calls = 0;
	atomic_store(&armed, 0);
	atomic_store(&stop, 0);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	/* the others on tmpfs: their fsyncs end at once, and commit no
	 * journal that would write fds[0]'s pages for its fsync */
	for (int i = 0; i < NF; i++) {
		fds[i] = i ? t_tmpfile_in("/dev/shm") : t_tmpfile();
		fsync_now(fds[i]);	/* and the thread has waited: its own ring */
	}
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 32; i++)
		CHECK(pwrite(fds[0], big, sizeof(big), (off_t)i * BIG) == BIG);
	fs0 = t_cb(fds[0], NULL, 0, 0);
	CHECK_EQ(uaio_fsync(O_SYNC, &fs0), 0);
	/* held behind the fsync: released by its end */
	wr0 = t_cb(fds[0], done, 4, 0);
	if (held)
		CHECK_EQ(uaio_write(&wr0), 0);
	/* 17 other descriptors get records and let them go: 16 are kept,
	 * so fds[0]'s, freed at the fsync's end, is one too many */
	for (int i = 1; i < NF; i++) {
		cbs[i] = t_cb(fds[i], NULL, 0, 0);
		CHECK_EQ(uaio_fsync(O_SYNC, &cbs[i]), 0);
	}
	for (int i = 1; i < NF; i++)
		CHECK_EQ(t_wait(&cbs[i], &err), 0);
	CHECK(pthread_create(&k, NULL, kicker, NULL) == 0);
	atomic_store(&armed, 1);
	CHECK_EQ(t_wait(&fs0, &err), 0);
	atomic_store(&stop, 1);
	pthread_join(k, NULL);
	if (held) {
		CHECK_EQ(t_wait(&wr0, &err), 4);
		CHECK(pread(fds[0], got, 4, 0) == 4 && !memcmp(got, "done", 4));
	}
	fprintf(stderr, "    the handler waited: %s; allocator calls in it: %d\n",
		h_ran ? "yes" : "no (the fsync was over)", in_handler_calls);
	if (h_ran)
		CHECK_EQ(h_res, 0);
	CHECK_EQ(in_handler_calls, 0);
	signal(SIGUSR1, SIG_DFL);
	for (int i = 0; i < NF; i++)
		close(fds[i]);
}

int main(void)
{
	t_watchdog(120);
	for (int i = 0; i < 3; i++) {
		fprintf(stderr, "  record freed ...\n");
		handler_reaps(false);
		fprintf(stderr, "  write released ...\n");
		handler_reaps(true);
	}
	return T_EXIT_PASS;
}
