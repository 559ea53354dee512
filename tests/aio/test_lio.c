/* SPDX-License-Identifier: MIT */
/*
 * ulio_listio: LIO_WAIT and LIO_NOWAIT with mixed good and failing
 * entries (bad descriptor, bad opcode, LIO_NOP, NULL), per-entry status,
 * EIO, EINVAL for a bad mode or list, EAGAIN beyond AIO_MAX, EINTR when
 * a signal interrupts LIO_WAIT (a restart under SA_RESTART), a large
 * list of small writes, and entries submitted anew by their handler or
 * notification.
 */
#include <stdatomic.h>

#include "aio/aio_util.h"

static void wait_mixed(void)
{
	int fd = t_tmpfile(), err;
	char a[8], b[8], w[8] = "written!";
	struct aiocb ca, cw, cbad, cop, cnop;

	CHECK(pwrite(fd, "readme!!", 8, 0) == 8);
	ca = t_cb(fd, a, 8, 0);
	ca.aio_lio_opcode = LIO_READ;
	cw = t_cb(fd, w, 8, 100);
	cw.aio_lio_opcode = LIO_WRITE;
	struct aiocb *good[3] = { &ca, NULL, &cw };
	CHECK_EQ(ulio_listio(LIO_WAIT, good, 3, NULL), 0);
	/* LIO_WAIT: all done on return. */
	CHECK_EQ(uaio_error(&ca), 0);
	CHECK_EQ(uaio_error(&cw), 0);
	CHECK_EQ(uaio_return(&ca), 8);
	CHECK_EQ(uaio_return(&cw), 8);
	CHECK(!memcmp(a, "readme!!", 8));
	CHECK(pread(fd, b, 8, 100) == 8 && !memcmp(b, "written!", 8));

	ca = t_cb(fd, a, 8, 0);
	ca.aio_lio_opcode = LIO_READ;
	cbad = t_cb(9999, b, 8, 0);
	cbad.aio_lio_opcode = LIO_READ;
	cop = t_cb(fd, b, 8, 0);
	cop.aio_lio_opcode = 77;
	cnop = t_cb(fd, b, 8, 0);
	cnop.aio_lio_opcode = LIO_NOP;
	struct aiocb *mixed[4] = { &cbad, &ca, &cop, &cnop };
	ERRNO_IS(ulio_listio(LIO_WAIT, mixed, 4, NULL), EIO);
	CHECK_EQ(uaio_error(&cbad), EBADF);
	CHECK_EQ(uaio_return(&cbad), -1);
	CHECK_EQ(uaio_error(&cop), EINVAL);
	CHECK_EQ(t_wait(&ca, &err), 8);
	CHECK_EQ(err, 0);
	/* LIO_NOP entries are not requests. */
	ERRNO_IS(uaio_error(&cnop), EINVAL);

	/* An operation that fails in the kernel also makes it EIO. */
	struct aiocb cf = t_cb(fd, NULL, 8, 0);
	cf.aio_lio_opcode = LIO_READ;
	struct aiocb *fault[1] = { &cf };
	ERRNO_IS(ulio_listio(LIO_WAIT, fault, 1, NULL), EIO);
	CHECK_EQ(uaio_error(&cf), EFAULT);

	/* LIO_NOWAIT: an entry that fails as it runs is accepted (0, as
	 * glibc); one refused at submission makes it -1 with its errno. */
	ca = t_cb(fd, a, 8, 0);
	ca.aio_lio_opcode = LIO_READ;
	cbad = t_cb(-5, b, 8, 0);
	cbad.aio_lio_opcode = LIO_WRITE;
	struct aiocb *nw[2] = { &ca, &cbad };
	CHECK_EQ(ulio_listio(LIO_NOWAIT, nw, 2, NULL), 0);
	CHECK_EQ(t_wait(&cbad, &err), -1);
	CHECK_EQ(err, EBADF);
	CHECK_EQ(t_wait(&ca, &err), 8);
	ca = t_cb(fd, a, 8, 0);
	ca.aio_lio_opcode = LIO_READ;
	cbad = t_cb(fd, b, 8, 0);
	cbad.aio_lio_opcode = LIO_READ;
	cbad.aio_reqprio = -3;
	ERRNO_IS(ulio_listio(LIO_NOWAIT, nw, 2, NULL), EINVAL);
	CHECK_EQ(uaio_error(&cbad), EINVAL);
	CHECK_EQ(t_wait(&ca, &err), 8);

	/* Nothing to do. */
	CHECK_EQ(ulio_listio(LIO_WAIT, NULL, 0, NULL), 0);
	CHECK_EQ(ulio_listio(LIO_NOWAIT, good, 0, NULL), 0);
	close(fd);
}

static void bad_calls(void)
{
	struct aiocb *l[1] = { NULL };
	struct sigevent sev = { 0 };

	ERRNO_IS(ulio_listio(7, l, 1, NULL), EINVAL);
	ERRNO_IS(ulio_listio(LIO_WAIT, l, -1, NULL), EINVAL);
	ERRNO_IS(ulio_listio(LIO_WAIT, NULL, 1, NULL), EINVAL);
	ERRNO_IS(ulio_listio(LIO_WAIT, l, (int)uaio_sysconf(_SC_AIO_LISTIO_MAX) + 1, NULL),
		 EINVAL);
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = 999;
	/* glibc takes any sigevent; one that cannot be sent is not sent. */
	CHECK_EQ(ulio_listio(LIO_NOWAIT, l, 1, &sev), 0);
	/* LIO_WAIT ignores sig. */
	CHECK_EQ(ulio_listio(LIO_WAIT, l, 1, &sev), 0);
}

static volatile sig_atomic_t n_signals;

static void on_signal(int sig) { (void)sig; n_signals++; }

/* A child that signals us every 2 ms: for ever, or, given a descriptor,
 * 20 times and then writes "late" there. */
static pid_t signaller(int wfd)
{
	pid_t me = getpid(), kid = fork();

	CHECK(kid >= 0);
	if (kid == 0) {
		for (int i = 0; i < (wfd < 0 ? 100000 : 20); i++) {
			kill(me, SIGUSR1);
			usleep(2000);
		}
		if (wfd >= 0)
			CHECK(write(wfd, "late", 4) == 4);
		_exit(0);
	}
	return kid;
}

/*
 * As glibc's: a handled signal ends LIO_WAIT's wait and aio_suspend's
 * untimed one with EINTR, unless its handler has SA_RESTART; then the
 * kernel restarts the wait, which ends when the request does.
 */
static void wait_interrupted(void)
{
	int p[2], err;
	char b[4];
	struct sigaction sa = { 0 };
	pid_t kid;

	sa.sa_handler = on_signal;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	CHECK(pipe(p) == 0);
	struct aiocb cb = t_cb(p[0], b, 4, 0);
	cb.aio_lio_opcode = LIO_READ;
	struct aiocb *l[1] = { &cb };
	kid = signaller(-1);
	ERRNO_IS(ulio_listio(LIO_WAIT, l, 1, NULL), EINTR);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	/* The request goes on after the interrupted wait. */
	CHECK_EQ(uaio_error(&cb), EINPROGRESS);
	CHECK(write(p[1], "late", 4) == 4);
	CHECK_EQ(t_wait(&cb, &err), 4);
	CHECK(!memcmp(b, "late", 4));

	/* aio_suspend too. */
	cb = t_cb(p[0], b, 4, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	kid = signaller(-1);
	const struct aiocb *cl[1] = { &cb };
	ERRNO_IS(uaio_suspend(cl, 1, NULL), EINTR);
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
	CHECK(write(p[1], "more", 4) == 4);
	CHECK_EQ(t_wait(&cb, &err), 4);

	/* SA_RESTART: the waits go on through the signals. */
	sa.sa_flags = SA_RESTART;
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
	cb = t_cb(p[0], b, 4, 0);
	cb.aio_lio_opcode = LIO_READ;
	n_signals = 0;
	kid = signaller(p[1]);
	CHECK_EQ(ulio_listio(LIO_WAIT, l, 1, NULL), 0);
	CHECK(waitpid(kid, NULL, 0) == kid);
	CHECK(n_signals > 0);
	CHECK_EQ(uaio_return(&cb), 4);
	CHECK(!memcmp(b, "late", 4));

	cb = t_cb(p[0], b, 4, 0);
	CHECK_EQ(uaio_read(&cb), 0);
	n_signals = 0;
	kid = signaller(p[1]);
	CHECK_EQ(uaio_suspend(cl, 1, NULL), 0);
	CHECK(waitpid(kid, NULL, 0) == kid);
	CHECK(n_signals > 0);
	CHECK_EQ(uaio_return(&cb), 4);
	close(p[0]);
	close(p[1]);
	signal(SIGUSR1, SIG_DFL);
}

/* 20 000 small writes in one list: every byte lands where it should. */
static void many_small_writes(void)
{
	enum { N = 20000, SZ = 1000 };
	int fd = t_tmpfile(), err;
	char *w = malloc((size_t)N * SZ), *r = malloc((size_t)N * SZ);
	struct aiocb *cbs = calloc(N, sizeof(*cbs)), **l = calloc(N, sizeof(*l));

	t_fill(w, (size_t)N * SZ, 9);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(fd, w + (size_t)i * SZ, SZ, (off_t)i * SZ);
		cbs[i].aio_lio_opcode = LIO_WRITE;
		l[i] = &cbs[i];
	}
	CHECK_EQ(ulio_listio(LIO_WAIT, l, N, NULL), 0);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(uaio_error(&cbs[i]), 0);
		CHECK_EQ(uaio_return(&cbs[i]), SZ);
	}
	CHECK(pread(fd, r, (size_t)N * SZ, 0) == (ssize_t)N * SZ);
	CHECK(!memcmp(r, w, (size_t)N * SZ));
	/* And read back the same way, after dropping the cache. */
	t_evict(fd);
	memset(r, 0, (size_t)N * SZ);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(fd, r + (size_t)i * SZ, SZ, (off_t)i * SZ);
		cbs[i].aio_lio_opcode = LIO_READ;
	}
	CHECK_EQ(ulio_listio(LIO_WAIT, l, N, NULL), 0);
	for (int i = 0; i < N; i++)
		CHECK_EQ(t_wait(&cbs[i], &err), SZ);
	CHECK(!memcmp(r, w, (size_t)N * SZ));
	free(w);
	free(r);
	free(cbs);
	free(l);
	close(fd);
}

/* Adjacent entries travel as one readv/writev: each still gets its own
 * result when the transfer stops short inside the list. */
static void adjacent_entries(void)
{
	enum { N = 6, SZ = 4096 };
	int fd = t_tmpfile(), err;
	char *w = malloc(N * SZ), *r = malloc(N * SZ);
	struct aiocb cbs[N], *l[N];

	t_fill(w, N * SZ, 17);
	/* Writes with a bad buffer in the middle: only that one fails. */
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(fd, i == 3 ? NULL : w + i * SZ, SZ, (off_t)i * SZ);
		cbs[i].aio_lio_opcode = LIO_WRITE;
		l[i] = &cbs[i];
	}
	ERRNO_IS(ulio_listio(LIO_WAIT, l, N, NULL), EIO);
	for (int i = 0; i < N; i++) {
		ssize_t n = t_wait(&cbs[i], &err);
		if (i == 3) {
			CHECK_EQ(n, -1);
			CHECK_EQ(err, EFAULT);
		} else {
			CHECK_EQ(n, SZ);
			CHECK(pread(fd, r, SZ, (off_t)i * SZ) == SZ && !memcmp(r, w + i * SZ, SZ));
		}
	}
	/* Reads across the end of a 2.5-block file, cache dropped: full,
	 * full, short, then EOF for the rest. */
	CHECK(ftruncate(fd, 2 * SZ + SZ / 2) == 0);
	CHECK(pwrite(fd, w, 2 * SZ + SZ / 2, 0) == 2 * SZ + SZ / 2);
	t_evict(fd);
	for (int i = 0; i < N; i++) {
		cbs[i] = t_cb(fd, r + i * SZ, SZ, (off_t)i * SZ);
		cbs[i].aio_lio_opcode = LIO_READ;
	}
	CHECK_EQ(ulio_listio(LIO_WAIT, l, N, NULL), 0);
	static const ssize_t want[N] = { SZ, SZ, SZ / 2, 0, 0, 0 };
	for (int i = 0; i < N; i++)
		CHECK_EQ(t_wait(&cbs[i], &err), want[i]);
	CHECK(!memcmp(r, w, 2 * SZ + SZ / 2));
	free(w);
	free(r);
	close(fd);
}

/* Opcodes as glibc's helper reads them: the low 7 bits for reads and
 * writes (bit 7 marks its 64-bit calls), its syncs (3, 4) with
 * aio_reqprio reset to 0, and an unknown one refused at once for a bad
 * aio_reqprio, else failed with EINVAL as it runs. */
static void glibc_opcodes(void)
{
	int fd = t_tmpfile(), err;
	char w[8] = "opcodes", r[8] = { 0 };
	struct aiocb a, *l[1] = { &a };

	a = t_cb(fd, w, 8, 0);
	a.aio_lio_opcode = 128 | LIO_WRITE;
	CHECK_EQ(ulio_listio(LIO_WAIT, l, 1, NULL), 0);
	CHECK_EQ(t_wait(&a, &err), 8);
	a = t_cb(fd, r, 8, 0);
	a.aio_lio_opcode = 128 | LIO_READ;
	CHECK_EQ(ulio_listio(LIO_WAIT, l, 1, NULL), 0);
	CHECK_EQ(t_wait(&a, &err), 8);
	CHECK(!memcmp(r, "opcodes", 8));
	a = t_cb(fd, NULL, 0, 0);
	a.aio_lio_opcode = 3;		/* glibc's LIO_DSYNC */
	a.aio_reqprio = 5;
	CHECK_EQ(ulio_listio(LIO_WAIT, l, 1, NULL), 0);
	CHECK_EQ(t_wait(&a, &err), 0);
	CHECK_EQ(a.aio_reqprio, 0);
	a = t_cb(fd, r, 8, 0);
	a.aio_lio_opcode = 7;
	a.aio_reqprio = 25;
	ERRNO_IS(ulio_listio(LIO_WAIT, l, 1, NULL), EINVAL);
	CHECK_EQ(uaio_error(&a), EINVAL);
	a = t_cb(fd, r, 8, 0);
	a.aio_lio_opcode = 7;
	ERRNO_IS(ulio_listio(LIO_WAIT, l, 1, NULL), EIO);
	CHECK_EQ(t_wait(&a, &err), -1);
	CHECK_EQ(err, EINVAL);
	close(fd);
}

/* Adjacent O_DIRECT entries, the second's buffer misaligned: their one
 * writev fails as a whole (EINVAL), and each is then made alone, so the
 * good one is written and only the bad one fails, as with glibc's one
 * call per entry. */
static void direct_entry_error(void)
{
	int fd = t_direct_file(), err;
	char *buf, *back;
	struct aiocb a, b, *l[2] = { &a, &b };

	CHECK(posix_memalign((void **)&buf, 4096, 4 * 4096) == 0);
	CHECK(posix_memalign((void **)&back, 4096, 4096) == 0);
	t_fill(buf, 4 * 4096, 5);
	a = t_cb(fd, buf, 4096, 0);
	b = t_cb(fd, buf + 8193, 4096, 4096);
	a.aio_lio_opcode = b.aio_lio_opcode = LIO_WRITE;
	ERRNO_IS(ulio_listio(LIO_WAIT, l, 2, NULL), EIO);
	CHECK_EQ(t_wait(&a, &err), 4096);
	CHECK_EQ(t_wait(&b, &err), -1);
	CHECK_EQ(err, EINVAL);
	CHECK(pread(fd, back, 4096, 0) == 4096 && !memcmp(back, buf, 4096));
	free(buf);
	free(back);
	close(fd);
}

/* LIO_WAIT's result comes from its entries' ends, not from their aiocbs
 * read after the wait: a handler notified of an entry may submit that
 * aiocb anew (glibc's lio_listio keeps a waitlist of its own). */
static struct aiocb rearm_cb;
static int rearm_pipe[2];
static char rearm_byte;
static volatile sig_atomic_t rearmed;

static void rearm(int sig)
{
	(void)sig;
	rearm_cb = t_cb(rearm_pipe[0], &rearm_byte, 1, 0);
	rearmed = uaio_read(&rearm_cb) == 0 ? 1 : -1;
}

static void rearmed_by_handler(void)
{
	struct sigaction sa = { .sa_handler = rearm, .sa_flags = SA_RESTART }, old;
	struct aiocb *list[1] = { &rearm_cb };
	int fd = t_tmpfile(), err;
	char a[8];

	CHECK(pipe(rearm_pipe) == 0);
	CHECK(pwrite(fd, "readme!!", 8, 0) == 8);
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
	rearm_cb = t_cb(fd, a, 8, 0);
	rearm_cb.aio_lio_opcode = LIO_READ;
	rearm_cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
	rearm_cb.aio_sigevent.sigev_signo = SIGUSR1;
	CHECK_EQ(ulio_listio(LIO_WAIT, list, 1, NULL), 0);
	CHECK(!memcmp(a, "readme!!", 8));
	/* the signal came before the list was done; the read it made waits
	 * for the pipe */
	CHECK_EQ(rearmed, 1);
	CHECK_EQ(uaio_error(&rearm_cb), EINPROGRESS);
	CHECK(write(rearm_pipe[1], "x", 1) == 1);
	CHECK_EQ(t_wait(&rearm_cb, &err), 1);
	CHECK_EQ(err, 0);
	CHECK_EQ(rearm_byte, 'x');
	CHECK(sigaction(SIGUSR1, &old, NULL) == 0);
	close(rearm_pipe[0]);
	close(rearm_pipe[1]);
	close(fd);
}

/* Each entry's SIGEV_THREAD notification submits its aiocb anew, alone,
 * while the list may still run: the list's own notification (it is the
 * list's record, read from the aiocb) still comes once, after every
 * entry, whether the entries were batched, held behind a write they
 * overlap, waited behind earlier writes, or a pipe's. */
#define RESUB_N 24
static struct aiocb resub_cb[RESUB_N];
static char resub_buf[RESUB_N][4096];
static int resub_pipe[2];
static atomic_int resub_again[RESUB_N], resub_early, resub_lists;
static sem_t resub_entries, resub_list;

static void resub_entry(union sigval v)
{
	struct aiocb *cb = v.sival_ptr;

	if (cb->aio_fildes != resub_pipe[0] && cb->aio_fildes != resub_pipe[1]) {
		cb->aio_sigevent.sigev_notify = SIGEV_NONE;
		atomic_store(&resub_again[cb - resub_cb], 1);
		if (uaio_read(cb) != 0)
			atomic_store(&resub_again[cb - resub_cb], 2);
	}
	sem_post(&resub_entries);
}

static void resub_list_done(union sigval v)
{
	(void)v;
	for (int i = 0; i < RESUB_N; i++)
		if (!atomic_load(&resub_again[i]) && uaio_error(&resub_cb[i]) == EINPROGRESS)
			atomic_fetch_add(&resub_early, 1);
	atomic_fetch_add(&resub_lists, 1);
	sem_post(&resub_list);
}

static void entries_resubmitted(void)
{
	int fd = t_tmpfile(), err;
	size_t big = 8u << 20;
	char *w0buf = malloc(big);

	CHECK(w0buf && pipe(resub_pipe) == 0);
	CHECK(sem_init(&resub_entries, 0, 0) == 0 && sem_init(&resub_list, 0, 0) == 0);
	memset(w0buf, 'w', big);
	for (int round = 0; round < 6; round++) {
		int mode = round % 2 ? LIO_WAIT : LIO_NOWAIT;
		struct sigevent sev = { .sigev_notify = SIGEV_THREAD };
		struct aiocb w0 = t_cb(fd, w0buf, big, 1 << 20), *list[RESUB_N];

		sev.sigev_notify_function = resub_list_done;
		atomic_store(&resub_early, 0);
		atomic_store(&resub_lists, 0);
		CHECK_EQ(uaio_write(&w0), 0);
		for (int i = 0; i < RESUB_N; i++) {
			struct aiocb *cb = &resub_cb[i];

			atomic_store(&resub_again[i], 0);
			switch (i % 6) {
			case 0: case 1:		/* adjacent writes: one pwritev */
				*cb = t_cb(fd, resub_buf[i], 4096, (off_t)i * 4096);
				cb->aio_lio_opcode = LIO_WRITE;
				break;
			case 2:			/* over w0's bytes: held */
				*cb = t_cb(fd, resub_buf[i], 4096, (1 << 20) + 4096);
				cb->aio_lio_opcode = LIO_WRITE;
				break;
			case 3:			/* behind the writes before it */
				*cb = t_cb(fd, resub_buf[i], 4096, (off_t)(i - 2) * 4096);
				cb->aio_lio_opcode = LIO_READ;
				break;
			case 4:
				*cb = t_cb(resub_pipe[1], resub_buf[i], 16, 0);
				cb->aio_lio_opcode = LIO_WRITE;
				break;
			default:
				*cb = t_cb(resub_pipe[0], resub_buf[i], 16, 0);
				cb->aio_lio_opcode = LIO_READ;
			}
			cb->aio_sigevent.sigev_notify = SIGEV_THREAD;
			cb->aio_sigevent.sigev_notify_function = resub_entry;
			cb->aio_sigevent.sigev_value.sival_ptr = cb;
			list[i] = cb;
		}
		CHECK_EQ(ulio_listio(mode, list, RESUB_N, mode == LIO_NOWAIT ? &sev : NULL), 0);
		CHECK_EQ(t_wait(&w0, &err), (ssize_t)big);
		for (int i = 0; i < RESUB_N; i++)
			while (sem_wait(&resub_entries) < 0)
				CHECK(errno == EINTR);
		if (mode == LIO_NOWAIT)
			while (sem_wait(&resub_list) < 0)
				CHECK(errno == EINTR);
		for (int i = 0; i < RESUB_N; i++) {
			if (!atomic_load(&resub_again[i]))
				continue;
			CHECK_EQ(atomic_load(&resub_again[i]), 1);
			CHECK_EQ(t_wait(&resub_cb[i], &err), 4096);
			CHECK_EQ(err, 0);
		}
		CHECK_EQ(atomic_load(&resub_early), 0);
		CHECK_EQ(atomic_load(&resub_lists), mode == LIO_NOWAIT ? 1 : 0);
	}
	sem_destroy(&resub_entries);
	sem_destroy(&resub_list);
	close(resub_pipe[0]);
	close(resub_pipe[1]);
	close(fd);
	free(w0buf);
}

int main(void)
{
	t_watchdog(120);
	RUN(wait_mixed);
	RUN(bad_calls);
	RUN(wait_interrupted);
	RUN(many_small_writes);
	RUN(adjacent_entries);
	RUN(glibc_opcodes);
	RUN(rearmed_by_handler);
	RUN(entries_resubmitted);
	RUN(direct_entry_error);	/* last: skips where /var/tmp has no O_DIRECT */
	return T_EXIT_PASS;
}
