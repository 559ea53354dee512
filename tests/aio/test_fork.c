/* SPDX-License-Identifier: MIT */
/*
 * fork(): the child inherits no requests (its copies of the parent's
 * aiocbs stay in progress for ever, as under glibc, whose child has no
 * helper thread to finish them; those that were waiting their turn can be
 * cancelled, as there) and uses AIO afresh, notification included,
 * while the parent's requests carry on; exit() with requests in flight
 * does not hang.
 */
#include "aio/aio_util.h"
#include <pthread.h>
#include <semaphore.h>
#include <sys/mman.h>

static void on_child_note(union sigval v)
{
	sem_post(v.sival_ptr);
}

static void child_afresh(void)
{
	int p[2], q[2], err;
	char b[8], c[8];

	CHECK(pipe(p) == 0);
	struct aiocb parent = t_cb(p[0], b, 6, 0);
	CHECK_EQ(uaio_read(&parent), 0);
	CHECK_EQ(uaio_error(&parent), EINPROGRESS);
	sem_t *sem = mmap(NULL, sizeof(sem_t), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(sem != MAP_FAILED && sem_init(sem, 1, 0) == 0);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		/* Nothing inherited: the parent's request never ends here. */
		CHECK_EQ(uaio_error(&parent), EINPROGRESS);
		ERRNO_IS(uaio_return(&parent), EINPROGRESS);
		CHECK_EQ(uaio_cancel(p[0], &parent), AIO_NOTCANCELED);
		/* Everything works afresh: background, inline, notification. */
		CHECK(pipe(q) == 0);
		struct aiocb mine = t_cb(q[0], c, 5, 0);
		mine.aio_sigevent.sigev_notify = SIGEV_THREAD;
		mine.aio_sigevent.sigev_notify_function = on_child_note;
		mine.aio_sigevent.sigev_value.sival_ptr = sem;
		CHECK_EQ(uaio_read(&mine), 0);
		CHECK(write(q[1], "child", 5) == 5);
		while (sem_wait(sem) < 0)
			CHECK(errno == EINTR);
		CHECK_EQ(t_wait(&mine, &err), 5);
		CHECK(!memcmp(c, "child", 5));
		int fd = t_tmpfile();
		struct aiocb w = t_cb(fd, "forked", 6, 0);
		CHECK_EQ(uaio_write(&w), 0);
		CHECK_EQ(t_wait(&w, &err), 6);
		_exit(0);
	}
	t_child_exit(kid, 0);
	/* The parent's request was not disturbed by the child. */
	CHECK_EQ(uaio_error(&parent), EINPROGRESS);
	CHECK(write(p[1], "parent", 6) == 6);
	CHECK_EQ(t_wait(&parent, &err), 6);
	CHECK(!memcmp(b, "parent", 6));
	munmap(sem, sizeof(sem_t));
	close(p[0]);
	close(p[1]);
}

/* glibc's child keeps its parent's lists: a request that was waiting its
 * turn is cancelled there (ECANCELED, notified), one that was running
 * never ends, and aio_cancel of its descriptor number says
 * AIO_NOTCANCELED, even once the number is another file's. */
static void child_cancel(void)
{
	int p[2], err;
	char b[8], c[8];
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
	CHECK(pipe(p) == 0);
	struct aiocb running = t_cb(p[0], b, 4, 0), queued = t_cb(p[0], c, 4, 0);
	queued.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	queued.aio_sigevent.sigev_signo = SIGRTMIN;
	CHECK_EQ(uaio_read(&running), 0);
	CHECK_EQ(uaio_read(&queued), 0);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		struct timespec zero = { 0, 0 };

		CHECK_EQ(uaio_cancel(p[0], &queued), AIO_CANCELED);
		CHECK_EQ(uaio_error(&queued), ECANCELED);
		CHECK_EQ(uaio_return(&queued), -1);
		CHECK_EQ(sigtimedwait(&set, NULL, &zero), SIGRTMIN);
		CHECK_EQ(uaio_cancel(p[0], &running), AIO_NOTCANCELED);
		CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);
		int fd = t_tmpfile();
		CHECK(dup2(fd, p[0]) == p[0]);
		CHECK_EQ(uaio_cancel(p[0], NULL), AIO_NOTCANCELED);
		CHECK_EQ(uaio_cancel(fd, NULL), AIO_ALLDONE);
		CHECK_EQ(uaio_error(&running), EINPROGRESS);
		_exit(0);
	}
	t_child_exit(kid, 0);
	CHECK(write(p[1], "12345678", 8) == 8);
	CHECK_EQ(t_wait(&running, &err), 4);
	CHECK_EQ(t_wait(&queued, &err), 4);
	CHECK(!memcmp(b, "1234", 4) && !memcmp(c, "5678", 4));
	CHECK_EQ(sigwaitinfo(&set, NULL), SIGRTMIN);
	close(p[0]);
	close(p[1]);
}

/* LeakSanitizer's exit-time check stops every thread with ptrace; the
 * kernel's io_uring workers, busy here with the write, cannot be stopped
 * and the check may hang (a sanitizer limitation, not this library's).
 * The child that exits with requests in flight turns it off. */
static int lsan_off;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return lsan_off;
}

static void exit_in_flight(void)
{
	for (int how = 0; how < 2; how++) {
		fflush(NULL);
		pid_t kid = fork();
		CHECK(kid >= 0);
		if (kid == 0) {
			static char b[16], big[1 << 20];
			static struct aiocb r, w;
			int p[2], fd = t_tmpfile();

			lsan_off = 1;
			CHECK(pipe(p) == 0);
			r = t_cb(p[0], b, sizeof(b), 0);
			CHECK_EQ(uaio_read(&r), 0);	/* never completes */
			w = t_cb(fd, big, sizeof(big), 0);
			CHECK_EQ(uaio_write(&w), 0);
			if (how)
				exit(3);
			_exit(3);
		}
		t_child_exit(kid, 3);
	}
}

/* The forking thread's cancellation state in the child is what it was:
 * the engine's fork handler takes its loop's lock, which disables
 * cancellation while held; the child's unlock of a loop that is the
 * parent's gave nothing back (it stayed disabled for good). */
static void child_cancel_state(void)
{
	static char b[4];
	static struct aiocb r;
	int p[2], old;

	CHECK(pipe(p) == 0);
	r = t_cb(p[0], b, 1, 0);
	CHECK_EQ(uaio_read(&r), 0);	/* the engine is alive */
	CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
	CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);
	fflush(NULL);
	pid_t kid = fork();
	CHECK(kid >= 0);
	if (kid == 0) {
		lsan_off = 1;
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
		_exit(old == PTHREAD_CANCEL_ENABLE ? 0 : 1);
	}
	t_child_exit(kid, 0);
	CHECK_EQ(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), 0);
	CHECK_EQ(old, PTHREAD_CANCEL_ENABLE);
	CHECK(write(p[1], "x", 1) == 1);
	CHECK_EQ(t_wait(&r, &old), 1);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	t_watchdog(60);
	RUN(child_afresh);
	RUN(child_cancel);
	RUN(exit_in_flight);
	RUN(child_cancel_state);
	return T_EXIT_PASS;
}
