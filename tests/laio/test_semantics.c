/* SPDX-License-Identifier: MIT */
/*
 * A call made lazily gives what the plain call gives, where the first
 * review found it did not: close(2) leaves another call on the same file
 * alone; a socket's SO_RCVTIMEO / SO_SNDTIMEO end a call that went to the
 * background; MSG_PEEK | MSG_WAITALL peeks the bytes once; a regular
 * file's read is short only at its end (both backends); madvise over 4 GiB
 * or more covers all of it; close_range(CLOSE_RANGE_UNSHARE), a wait for
 * the thread's own children (__WNOTHREAD) and statx(fd, NULL,
 * AT_EMPTY_PATH) act as in the caller; a clone(2) that is a fork starts
 * its child with none of the parent's calls; a thread that gave itself
 * other credentials has its calls made with them.
 */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdbool.h>

/* The call's result, inline or from its completion: ret, and *err. */
static long result_at(long r, int *err, int line)
{
	struct laio_completion c;

	*err = r == -1 ? errno : 0;
	if (r != -1 || errno != EINPROGRESS)
		return r;
	c = wait_one_at(laio_gethandle(), line);
	*err = c.laio_errno;
	return c.laio_return_value;
}
#define RESULT(call, err) result_at((call), (err), __LINE__)

/* The call in flight goes on with the old file: io_uring holds it for
 * its op; where the call waits for readiness and tries again (LAIO_BG=poll,
 * the epoll backend) its retries use the engine's duplicate. */
static void close_leaves_others(void)
{
	int p[2], q[2], keep, err;
	char b = 0;
	void *h;

	CHECK(pipe(p) == 0);
	keep = dup(p[0]);		/* the pipe stays open through it */
	h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	CHECK_EQ(INL(laio_syscall(SYS_close, p[0])), 0);
	CHECK(pipe(q) == 0);		/* takes the number p[0] had */
	CHECK(write(q[1], "Q", 1) == 1 && write(p[1], "P", 1) == 1);
	struct laio_completion c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 1);
	CHECK_EQ(b, 'P');		/* from the old pipe, as a blocked read(2) */
	(void)err;
	close(keep);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

static void timeouts(void)
{
	struct timeval tv = { 0, 20000 };
	static char big[1 << 16];
	int sv[2], ls, err;
	char b[8];

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	CHECK_EQ(RESULT(laio_syscall(SYS_read, sv[0], b, sizeof(b)), &err), -1);
	CHECK_EQ(err, EAGAIN);
	CHECK_EQ(RESULT(laio_syscall(SYS_recvfrom, sv[0], b, sizeof(b), 0, NULL, NULL), &err), -1);
	CHECK_EQ(err, EAGAIN);
	/* a full socket: the write gives up after SO_SNDTIMEO */
	CHECK(setsockopt(sv[1], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0);
	CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
	while (write(sv[1], big, sizeof(big)) > 0)
		;
	CHECK(fcntl(sv[1], F_SETFL, 0) == 0);
	CHECK_EQ(RESULT(laio_syscall(SYS_write, sv[1], big, 4096), &err), -1);
	CHECK_EQ(err, EAGAIN);
	/* accept */
	struct sockaddr_un ua = { .sun_family = AF_UNIX };
	ls = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(ls >= 0);
	CHECK(bind(ls, (struct sockaddr *)&ua, sizeof(sa_family_t)) == 0);	/* autobind */
	CHECK(listen(ls, 1) == 0);
	CHECK(setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	CHECK_EQ(RESULT(laio_syscall(SYS_accept, ls, NULL, NULL), &err), -1);
	CHECK_EQ(err, EAGAIN);
	close(ls);
	close(sv[0]);
	close(sv[1]);
}

static int peek_fd;
static void *write_later(void *arg)
{
	struct timespec d = { 0, 30 * 1000000 };

	(void)arg;
	nanosleep(&d, NULL);
	CHECK(write(peek_fd, "def", 3) == 3);
	return NULL;
}

/* A connected stream pair: AF_UNIX, or TCP over loopback. */
static void stream_pair(bool tcp, int sv[2])
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int ls;

	if (!tcp) {
		CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
		return;
	}
	ls = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(ls >= 0 && bind(ls, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(ls, 1) == 0 && getsockname(ls, (struct sockaddr *)&sa, &sl) == 0);
	sv[1] = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(sv[1] >= 0 && connect(sv[1], (struct sockaddr *)&sa, sizeof(sa)) == 0);
	sv[0] = accept(ls, NULL, NULL);
	CHECK(sv[0] >= 0);
	close(ls);
}

/* What recv(MSG_PEEK | MSG_WAITALL) of 6 gives with "abc" queued and
 * "def" coming: the plain call, or laio's; the queue is left whole. */
static long peek_once(bool tcp, bool lazy, char b[7])
{
	int sv[2], err = 0;
	pthread_t t;
	long n;
	char all[6];

	stream_pair(tcp, sv);
	peek_fd = sv[1];
	memset(b, 0, 7);
	CHECK(write(sv[1], "abc", 3) == 3);
	CHECK(pthread_create(&t, NULL, write_later, NULL) == 0);
	n = lazy ? RESULT(laio_syscall(SYS_recvfrom, sv[0], b, 6, MSG_PEEK | MSG_WAITALL,
				       NULL, NULL), &err) :
		   recv(sv[0], b, 6, MSG_PEEK | MSG_WAITALL);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(recv(sv[0], all, 6, MSG_WAITALL), 6);	/* nothing taken */
	CHECK(!memcmp(all, "abcdef", 6));
	close(sv[0]);
	close(sv[1]);
	return n;
}

static void peek_waitall(void)
{
	for (int tcp = 0; tcp < 2; tcp++) {
		char plain[7], lazy[7];
		long n = peek_once(tcp, false, plain);

		CHECK(n >= 3);
		CHECK_EQ(peek_once(tcp, true, lazy), n);
		CHECK(!memcmp(lazy, plain, (size_t)n));	/* the bytes once each */
	}
}

/* A file not in the page cache, read whole in one call. */
static void file_read_whole(void)
{
	const size_t size = 8 << 20;
	char path[] = "/var/tmp/laio-semXXXXXX";
	char *w = malloc(size), *r = malloc(size);
	int fd = mkstemp(path), err;

	CHECK(fd >= 0 && w && r);
	unlink(path);
	for (size_t i = 0; i < size; i++)
		w[i] = (char)(i * 7 + i / 4096);
	CHECK_EQ(pwrite(fd, w, size, 0), (ssize_t)size);
	CHECK(fdatasync(fd) == 0);
	for (int round = 0; round < 4; round++) {
		CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
		/* part of it cached: the try stops where the cache does */
		if (round & 1)
			CHECK_EQ(pread(fd, r, 4096 * 3, 4096 * 5), 4096 * 3);
		memset(r, 0, size);
		CHECK_EQ(RESULT(laio_syscall(SYS_pread64, fd, r, size, 0L), &err), (long)size);
		CHECK(!memcmp(r, w, size));
	}
	close(fd);
	free(w);
	free(r);
}

static void madvise_big(void)
{
	size_t len = (4ul << 30) + 8192;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int err;

	if (p == MAP_FAILED) {
		fprintf(stderr, "  (no 4 GiB of address space: not checked)\n");
		return;
	}
	p[0] = 1;
	p[(4ul << 30) + 4096] = 1;
	CHECK_EQ(RESULT(laio_syscall(SYS_madvise, p, len, MADV_DONTNEED), &err), 0);
	CHECK_EQ(p[0], 0);
	CHECK_EQ(p[(4ul << 30) + 4096], 0);	/* past 4 GiB too */
	munmap(p, len);
}

static void thread_bound(void)
{
	int fd = open("/dev/null", O_RDONLY), err, st;
	struct statx sx;
	pid_t pid;

	/* close_range with CLOSE_RANGE_UNSHARE: the caller's table (in a
	 * child, whose table may be split from its pool's without harm) */
	CHECK(fd >= 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK_EQ(INL(laio_syscall(SYS_close_range, fd, fd, CLOSE_RANGE_UNSHARE)), 0);
		CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF);
		_exit(0);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(fcntl(fd, F_GETFD) >= 0);		/* the parent's is open */
	CHECK_EQ(RESULT(laio_syscall(SYS_fstat, fd, &(struct stat){ 0 }), &err), 0);
	/* statx(fd, NULL, AT_EMPTY_PATH), as the kernel answers it */
	long plain = syscall(SYS_statx, fd, NULL, AT_EMPTY_PATH, STATX_TYPE, &sx);
	int plain_err = plain < 0 ? errno : 0;
	CHECK_EQ(RESULT(laio_syscall(SYS_statx, fd, NULL, AT_EMPTY_PATH, STATX_TYPE, &sx), &err),
		 plain);
	CHECK_EQ(err, plain_err);
	close(fd);
	/* a wait for this thread's own children */
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(3);
	CHECK_EQ(RESULT(laio_syscall(SYS_wait4, pid, &st, __WNOTHREAD, NULL), &err), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 3);
}

/* clone(SIGCHLD) is fork: the child has none of the parent's calls, and
 * the parent's call still ends in the parent. */
static void clone_fork(void)
{
	int p[2], st;
	char b = 0;
	void *h;
	long pid;

	CHECK(pipe(p) == 0);
	h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	fflush(NULL);
	pid = laio_syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	CHECK(pid >= 0);
	if (pid == 0) {
		struct laio_completion c;
		struct timespec z = { 0, 0 };

		_exit(laio_poll(&c, 1, &z) == 0 ? 0 : 1);
	}
	CHECK(waitpid((pid_t)pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(write(p[1], "x", 1) == 1);
	struct laio_completion c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 1);
	CHECK_EQ(b, 'x');
	close(p[0]);
	close(p[1]);
}

/* A thread that drops its own credentials (the raw call, per thread) and
 * then makes a call the root's would pass: refused, as the plain call. */
static char creds_dir[64];
static long creds_res;
static int creds_err;
static void *as_nobody(void *arg)
{
	char sub[96];

	(void)arg;
	if (laio_syscall(SYS_setresuid, 65534L, 65534L, 65534L) != 0) {
		creds_err = -1;
		return NULL;
	}
	snprintf(sub, sizeof(sub), "%s/sub", creds_dir);
	creds_res = RESULT(laio_syscall(SYS_mkdir, sub, 0700L), &creds_err);
	return NULL;
}

static void own_credentials(void)
{
	pthread_t t;
	struct stat st;
	char sub[96];

	if (geteuid() != 0) {
		fprintf(stderr, "  (not root: not checked)\n");
		return;
	}
	/* the helper pool running first, with root's credentials */
	CHECK_EQ(RESULT(laio_syscall(SYS_getcwd, sub, sizeof(sub)), &creds_err) > 0, 1);
	snprintf(creds_dir, sizeof(creds_dir), "/var/tmp/laio-credsXXXXXX");
	CHECK(mkdtemp(creds_dir) != NULL);
	CHECK(chmod(creds_dir, 0700) == 0);
	CHECK(pthread_create(&t, NULL, as_nobody, NULL) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(creds_res, -1);
	CHECK_EQ(creds_err, EACCES);
	snprintf(sub, sizeof(sub), "%s/sub", creds_dir);
	CHECK(stat(sub, &st) == -1 && errno == ENOENT);
	CHECK(rmdir(creds_dir) == 0);
	CHECK(getuid() == 0);		/* the process kept its own */
}

/* A credential call that changes nothing gives the thread no context of
 * its own: it goes on running the engine, and a call it made before
 * completes (it was left to other threads' polls, which a
 * single-threaded program has none of: a hang). In a thread of its own,
 * which is the only one polling meanwhile. */
static void *noop_ids(void *arg)
{
	int p[2];
	char b = 0;
	gid_t g[64];
	int ng = getgroups(64, g);
	struct laio_completion c;
	struct timespec ts = { 5, 0 };
	void **h = arg;
	long got;

	CHECK(pipe(p) == 0);
	*h = BG(laio_syscall(SYS_read, p[0], &b, 1));
	CHECK_EQ(INL(laio_syscall(SYS_setresuid, -1L, -1L, -1L)), 0);
	CHECK_EQ(INL(laio_syscall(SYS_setresgid, -1L, -1L, -1L)), 0);
	CHECK_EQ(INL(laio_syscall(SYS_setfsuid, -1L)), (long)getuid());
	if (geteuid() == 0 && ng >= 0)
		CHECK_EQ(INL(laio_syscall(SYS_setgroups, (long)ng, g)), 0);
	CHECK(write(p[1], "N", 1) == 1);
	got = laio_poll(&c, 1, &ts);
	if (got == 1) {
		CHECK(c.laio_handle == *h && c.laio_return_value == 1 && b == 'N');
		*h = NULL;
	}
	/* else the test's thread takes it, and fails */
	close(p[0]);
	close(p[1]);
	return NULL;
}

static void noop_credentials(void)
{
	pthread_t t;
	void *h = NULL;

	CHECK(pthread_create(&t, NULL, noop_ids, &h) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	if (h)
		wait_one(h);
	CHECK(h == NULL);
}

static void all(void)
{
	RUN(close_leaves_others);
	RUN(timeouts);
	RUN(peek_waitall);
	RUN(file_read_whole);
	RUN(madvise_big);
	RUN(thread_bound);
	RUN(clone_fork);
	RUN(own_credentials);
	RUN(noop_credentials);
}

int main(void)
{
	alarm(120);	/* a hang is a failure */
	RUN_MECHS(all);
	return T_EXIT_PASS;
}
