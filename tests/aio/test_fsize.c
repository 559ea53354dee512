/* SPDX-License-Identifier: MIT */
/*
 * Writes past RLIMIT_FSIZE end with EFBIG and raise no SIGXFSZ in the
 * program, as under glibc, whose helper threads block every signal (the
 * kernel sends SIGXFSZ to the writing thread; its default action kills
 * the process). uaio writes on the caller's thread: an inline try (a
 * page-cache copy of whole pages), the thread's own ring (O_DIRECT after
 * an aio_suspend), the fallback backend's try, a lio_listio's gathered
 * entries. Each case runs in a child with the signal's default action.
 * A request's own SIGEV_SIGNAL numbered SIGXFSZ still arrives.
 */
#include "aio/aio_util.h"
#include <sys/resource.h>

enum { LIMIT = 8192, PG = 4096 };

static char *buf;

static void limit_fsize(void)
{
	struct rlimit rl = { LIMIT, LIMIT };

	CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	signal(SIGXFSZ, SIG_DFL);
}

static void write_at(int fd, off_t off, size_t n, long want, int want_err)
{
	struct aiocb cb = t_cb(fd, buf, n, off);
	int err;

	CHECK_EQ(uaio_write(&cb), 0);
	CHECK_EQ(t_wait(&cb, &err), want);
	CHECK_EQ(err, want_err);
}

/* Runs fn in a child under the limit: it must exit 0, not die. */
static void in_child(void (*fn)(void))
{
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		t_watchdog(20);
		limit_fsize();
		fn();
		_exit(0);
	}
	t_child_exit(pid, 0);
}

static void buffered_case(void)
{
	int fd = t_tmpfile();

	/* The first writes teach the engine that RWF_NOWAIT is refused (ext4);
	 * later whole pages are copied inline. */
	for (int i = 0; i < 3; i++)
		write_at(fd, 0, 2 * PG, 2 * PG, 0);
	for (int i = 0; i < 3; i++)
		write_at(fd, LIMIT + i * PG, PG, -1, EFBIG);
	write_at(fd, PG, 2 * PG, PG, 0);	/* short at the limit */
	close(fd);
}

static void direct_case(void)
{
	int fd = t_direct_file();

	/* An aio_suspend gives the thread its own ring. */
	for (int i = 0; i < 3; i++)
		write_at(fd, 0, PG, PG, 0);
	for (int i = 0; i < 3; i++)
		write_at(fd, LIMIT + i * PG, PG, -1, EFBIG);
	close(fd);
}

static void append_case(void)
{
	char path[] = "/var/tmp/uaio-test-XXXXXX";
	int tmp = mkstemp(path), fd = open(path, O_RDWR | O_APPEND);

	CHECK(tmp >= 0 && fd >= 0);
	unlink(path);
	close(tmp);
	write_at(fd, 0, LIMIT, LIMIT, 0);
	for (int i = 0; i < 3; i++)
		write_at(fd, 0, PG, -1, EFBIG);
	close(fd);
}

static void list_case(void)
{
	struct aiocb cbs[4], *l[4];
	int fd = t_tmpfile(), err;

	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 4; i++) {
			cbs[i] = t_cb(fd, buf + i * PG, PG, LIMIT + i * PG);
			cbs[i].aio_lio_opcode = LIO_WRITE;
			l[i] = &cbs[i];
		}
		if (round == 0)
			ERRNO_IS(ulio_listio(LIO_WAIT, l, 4, NULL), EIO);
		else
			CHECK_EQ(ulio_listio(LIO_NOWAIT, l, 4, NULL), 0);
		for (int i = 0; i < 4; i++) {
			CHECK_EQ(t_wait(&cbs[i], &err), -1);
			CHECK_EQ(err, EFBIG);
		}
	}
	close(fd);
}

static volatile sig_atomic_t notes;

static void on_xfsz(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	notes += si->si_code == SI_ASYNCIO ? 1 : 1000;
}

/* Taking back the kernel's SIGXFSZ must leave the request's own. */
static void notification_case(void)
{
	struct sigaction sa = { .sa_sigaction = on_xfsz, .sa_flags = SA_SIGINFO };
	int fd = t_tmpfile(), err;

	CHECK(sigaction(SIGXFSZ, &sa, NULL) == 0);
	for (int i = 0; i < 4; i++) {
		struct aiocb cb = t_cb(fd, buf, PG, i < 2 ? 0 : LIMIT);

		cb.aio_sigevent.sigev_notify = SIGEV_SIGNAL;
		cb.aio_sigevent.sigev_signo = SIGXFSZ;
		CHECK_EQ(uaio_write(&cb), 0);
		CHECK_EQ(t_wait(&cb, &err), i < 2 ? PG : -1);
		for (int ms = 0; notes < i + 1 && ms < 2000; ms++)
			usleep(1000);
		CHECK_EQ(notes, i + 1);
	}
	close(fd);
}

static void buffered(void) { in_child(buffered_case); }
static void direct(void)
{
	close(t_direct_file());		/* skips the test without O_DIRECT */
	in_child(direct_case);
}
static void append(void) { in_child(append_case); }
static void list(void) { in_child(list_case); }
static void notification(void) { in_child(notification_case); }

int main(void)
{
	t_watchdog(120);
	buf = aligned_alloc(PG, 4 * PG);
	CHECK(buf);
	memset(buf, 'x', 4 * PG);
	RUN(buffered);
	RUN(append);
	RUN(list);
	RUN(notification);
	RUN(direct);
	return T_EXIT_PASS;
}
