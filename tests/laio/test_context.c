/* SPDX-License-Identifier: MIT */
/*
 * What a thread makes its own through laio_syscall holds for its later
 * calls, none of which may be made by another thread: a seccomp filter
 * (io_uring's ops pass none), a working directory unshared (CLONE_FS).
 * A thread with credentials of its own that waits in laio_poll does not
 * make other threads' calls with them. A thread cancelled while it waits
 * in laio_poll leaves the engine usable. openat2 with the caller's
 * RESOLVE_CACHED on a FIFO without a writer does not block the caller.
 * A timerfd read whose clock was set ends with ECANCELED, as read(2).
 * Errors come in the kernel's order (EINVAL, ENOENT, EBADF before a
 * buffer's EFAULT).
 */
#include "laio/laio_util.h"
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

/* The call's result, inline or from its completion: ret, and *err. */
static long result(long r, int *err)
{
	struct laio_completion c;

	*err = r == -1 ? errno : 0;
	if (r != -1 || errno != EINPROGRESS)
		return r;
	c = wait_one(laio_gethandle());
	*err = c.laio_errno;
	return c.laio_return_value;
}

static char dir[64];

/* unlink and unlinkat fail with EPERM in the thread that installs it */
static void *filtered(void *arg)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlinkat, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unlink, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	char path[96];
	long *res = arg;
	int err;

	CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHECK_EQ(laio_syscall(SYS_seccomp, (long)SECCOMP_SET_MODE_FILTER, 0L, (long)&prog), 0);
	snprintf(path, sizeof(path), "%s/victim", dir);
	res[0] = result(laio_syscall(SYS_unlinkat, (long)AT_FDCWD, (long)path, 0L), &err);
	res[1] = err;
	return NULL;
}

static void seccomp_filter(void)
{
	char path[96];
	long res[2];
	pthread_t t;
	int fd, err;

	/* the ring and the pool running first, as the process's */
	snprintf(path, sizeof(path), "%s/other", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK_EQ(result(laio_syscall(SYS_unlinkat, (long)AT_FDCWD, (long)path, 0L), &err), 0);
	snprintf(path, sizeof(path), "%s/victim", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK(pthread_create(&t, NULL, filtered, res) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(res[0], -1);
	CHECK_EQ(res[1], EPERM);
	CHECK(access(path, F_OK) == 0);		/* the filter held */
	CHECK(unlink(path) == 0);
}

/* unshare(CLONE_FS), then chdir: the thread's relative paths are its own */
static void *own_cwd(void *arg)
{
	long *res = arg;
	int err;

	CHECK_EQ(laio_syscall(SYS_unshare, (long)CLONE_FS), 0);
	CHECK_EQ(laio_syscall(SYS_chdir, (long)dir), 0);
	res[0] = result(laio_syscall(SYS_openat, (long)AT_FDCWD, (long)"here", (long)O_RDONLY), &err);
	res[1] = err;
	if (res[0] >= 0)
		close((int)res[0]);
	return NULL;
}

static void unshared_cwd(void)
{
	char path[96];
	long res[2];
	pthread_t t;
	int fd;

	snprintf(path, sizeof(path), "%s/here", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	CHECK(fd >= 0);
	close(fd);
	CHECK(access("here", F_OK) != 0);	/* not in the process's cwd */
	CHECK(pthread_create(&t, NULL, own_cwd, res) == 0);
	CHECK(pthread_join(t, NULL) == 0);
	if (res[0] < 0)
		fprintf(stderr, "    open(\"here\") in the thread's own cwd: %s\n",
			strerror((int)res[1]));
	CHECK(res[0] >= 0);
	CHECK(unlink(path) == 0);
}

static volatile int nobody_stop;
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static struct laio_completion seen[64];
static int nseen;

static void keep(const struct laio_completion *c, int n)
{
	pthread_mutex_lock(&seen_mu);
	for (int i = 0; i < n && nseen < 64; i++)
		seen[nseen++] = c[i];
	pthread_mutex_unlock(&seen_mu);
}

/* h's completion, whichever thread's laio_poll took it */
static struct laio_completion taken(void *h)
{
	struct laio_completion c[4];
	struct timespec ts = { 0, 20000000 };

	for (int round = 0; round < 500; round++) {
		int n = laio_poll(c, 4, &ts);

		CHECK(n >= 0);
		keep(c, n);
		pthread_mutex_lock(&seen_mu);
		for (int i = 0; i < nseen; i++)
			if (seen[i].laio_handle == h) {
				struct laio_completion got = seen[i];

				seen[i] = seen[--nseen];
				pthread_mutex_unlock(&seen_mu);
				return got;
			}
		pthread_mutex_unlock(&seen_mu);
	}
	CHECK(!"no completion in 10 s");
	return c[0];
}

/* In laio_poll for others' completions, kept for taken(), until told. */
static void poll_until_stop(void)
{
	struct laio_completion c[4];
	struct timespec ts = { 0, 50000000 };

	while (!nobody_stop) {
		int n = laio_poll(c, 4, &ts);

		CHECK(n >= 0);
		keep(c, n);
	}
}

/* As nobody (its effective uid), in laio_poll for others' completions. */
static void *nobody_polls(void *arg)
{
	(void)arg;
	CHECK_EQ(laio_syscall(SYS_setresuid, -1L, 65534L, -1L), 0);
	poll_until_stop();
	return NULL;
}

static void creds_of_the_caller(void)
{
	char sub[96], priv[80];
	struct laio_completion c;
	struct stat st;
	pthread_t t;
	int p[2], bad = 0;
	long r;
	char b;

	if (geteuid() != 0) {
		fprintf(stderr, "    (not root: not checked)\n");
		return;
	}
	snprintf(priv, sizeof(priv), "%s/priv", dir);
	CHECK(mkdir(priv, 0700) == 0);
	CHECK(pipe(p) == 0);
	nobody_stop = 0;
	nseen = 0;
	CHECK(pthread_create(&t, NULL, nobody_polls, NULL) == 0);
	usleep(100000);
	/* a call in the background keeps the engine busy while nobody polls */
	r = laio_syscall(SYS_read, p[0], &b, 1L);
	CHECK(r == -1 && errno == EINPROGRESS);
	for (int i = 0; i < 20; i++) {
		snprintf(sub, sizeof(sub), "%s/sub%d", priv, i);
		r = laio_syscall(SYS_mkdirat, (long)AT_FDCWD, (long)sub, 0755L);
		if (r == -1 && errno == EINPROGRESS) {
			c = taken(laio_gethandle());
			r = c.laio_return_value;
			errno = c.laio_errno;
		}
		if (r != 0 && bad++ == 0)
			fprintf(stderr, "    mkdir %d as root: %s\n", i, strerror(errno));
		if (r == 0) {
			CHECK(stat(sub, &st) == 0 && st.st_uid == 0);
			CHECK(rmdir(sub) == 0);
		}
		usleep(5000);
	}
	CHECK_EQ(bad, 0);
	CHECK(write(p[1], "x", 1) == 1);
	nobody_stop = 1;
	CHECK(pthread_join(t, NULL) == 0);
	{
		struct timespec ts = { 1, 0 };
		struct laio_completion d[4];

		(void)laio_poll(d, 4, &ts);	/* the read's, if left */
	}
	CHECK(rmdir(priv) == 0);
	close(p[0]);
	close(p[1]);
}

static int unshared_fd = -1;

/* Its own descriptor table, in which the other thread's pipe is closed,
 * while it waits in laio_poll. */
static void *own_table_polls(void *arg)
{
	(void)arg;
	CHECK_EQ(laio_syscall(SYS_unshare, (long)CLONE_FILES), 0);
	CHECK(close(unshared_fd) == 0);
	poll_until_stop();
	return NULL;
}

/* A call in the background is not made in another thread's descriptor
 * table (the epoll backend's loop retried a ready pipe's read in the
 * thread that ran it: EBADF). */
static void table_of_the_caller(void)
{
	struct laio_completion c;
	pthread_t t;
	int p[2];
	void *h;
	char b = 0;

	CHECK(pipe(p) == 0);
	unshared_fd = p[0];
	nobody_stop = 0;
	nseen = 0;
	h = BG(laio_syscall(SYS_read, p[0], &b, 1L));
	CHECK(pthread_create(&t, NULL, own_table_polls, NULL) == 0);
	usleep(200000);
	CHECK(write(p[1], "w", 1) == 1);
	c = taken(h);
	nobody_stop = 1;
	CHECK(pthread_join(t, NULL) == 0);
	CHECK_EQ(c.laio_return_value, 1);
	CHECK_EQ(b, 'w');
	close(p[0]);
	close(p[1]);
}

static void *poller(void *arg)
{
	struct laio_completion c[4];

	(void)arg;
	for (;;) {
		laio_poll(c, 4, NULL);
		pthread_testcancel();
	}
	return NULL;
}

/* Two threads in laio_poll, one running the loop, one waiting for it:
 * both cancelled, the engine serves the next calls (a waiter cancelled
 * kept the engine's lock, and every call after hung). */
static void cancel_poller(void)
{
	struct laio_completion c;
	pthread_t t[2];
	int p[2], q[2];
	void *h;
	char b;

	CHECK(pipe(p) == 0 && pipe(q) == 0);
	h = BG(laio_syscall(SYS_read, p[0], &b, 1L));
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, poller, NULL) == 0);
	usleep(200000);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_cancel(t[i]) == 0);
	usleep(100000);
	CHECK(write(p[1], "y", 1) == 1);	/* ends the drive that waits */
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	{
		struct timespec ts = { 1, 0 };

		(void)laio_poll(&c, 1, &ts);	/* h's, if the pollers left it */
	}
	(void)h;
	h = BG(laio_syscall(SYS_read, q[0], &b, 1L));
	CHECK(write(q[1], "z", 1) == 1);
	c = wait_one(h);
	CHECK_EQ(c.laio_return_value, 1);
	CHECK_EQ(b, 'z');
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* A thread with a cancel pending goes into laio_poll (which empties
 * laio_fd()'s eventfd: a read(), with the engine's lock held), then
 * into laio_syscall, laio_cancel and laio_fd: none acts on the cancel
 * with the lock held. (It did in laio_poll: every later call hung.) The
 * thread ends at its next cancellation point after them. */
static int cp_a[2], cp_b[2];
static pthread_barrier_t cp_bar;

static void *pending_canceller(void *arg)
{
	struct laio_completion c[4];
	struct timespec zero = { 0, 0 };
	char b[4];
	void *h;

	(void)arg;
	CHECK(laio_fd() >= 0);	/* the eventfd polls keep in step */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_barrier_wait(&cp_bar);	/* main cancels us: pending */
	h = BG(laio_syscall(SYS_read, cp_a[0], b, 1L));
	CHECK(write(cp_a[1], "x", 1) == 1);
	pthread_barrier_wait(&cp_bar);	/* main's own call runs the loop: ours queued */
	pthread_barrier_wait(&cp_bar);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	CHECK_EQ(laio_poll(c, 4, &zero), 1);	/* the eventfd emptied */
	CHECK(c[0].laio_handle == h);
	h = BG(laio_syscall(SYS_read, cp_a[0], b, 1L));
	CHECK_EQ(laio_cancel(h), 0);
	CHECK(laio_fd() >= 0);
	pthread_testcancel();
	return NULL;
}

static void cancel_pending(void)
{
	struct laio_completion c[4];
	struct timespec ts = { 10, 0 };
	pthread_t t;
	void *res, *h;
	char b;
	int got = 0;

	alarm(60);	/* a hang is a failure (RUN_MECHS's child has no alarm of main's) */
	CHECK(pipe(cp_a) == 0 && pipe(cp_b) == 0);
	CHECK_EQ(pthread_barrier_init(&cp_bar, NULL, 2), 0);
	CHECK_EQ(pthread_create(&t, NULL, pending_canceller, NULL), 0);
	CHECK_EQ(pthread_cancel(t), 0);
	pthread_barrier_wait(&cp_bar);
	pthread_barrier_wait(&cp_bar);
	h = BG(laio_syscall(SYS_read, cp_b[0], &b, 1L));
	pthread_barrier_wait(&cp_bar);
	CHECK_EQ(pthread_join(t, &res), 0);
	CHECK(res == PTHREAD_CANCELED);
	/* the engine serves on: the cancelled read's end, then ours */
	CHECK(write(cp_b[1], "y", 1) == 1);
	while (got < 2) {
		int n = laio_poll(c, 4, &ts);

		CHECK(n > 0);
		for (int i = 0; i < n; i++)
			if (c[i].laio_handle == h)
				CHECK_EQ(c[i].laio_return_value, 1);
		got += n;
	}
	CHECK_EQ(b, 'y');
	pthread_barrier_destroy(&cp_bar);
	alarm(0);
	close(cp_a[0]);
	close(cp_a[1]);
	close(cp_b[0]);
	close(cp_b[1]);
}

/* The caller's RESOLVE_CACHED: a reader's open of a FIFO without a
 * writer returns at once, as a plain laio open does (it blocked the
 * caller); a writer's without a reader waits in the background. */
static void resolve_cached_fifo(void)
{
	struct open_how how = { .flags = O_RDONLY, .resolve = RESOLVE_CACHED };
	struct laio_completion c;
	char path[96];
	long r, w;
	int err, rd;
	void *h;

	snprintf(path, sizeof(path), "%s/fifo", dir);
	CHECK(mkfifo(path, 0600) == 0);
	CHECK(access(path, F_OK) == 0);		/* its dentry cached */
	r = result(laio_syscall(SYS_openat2, (long)AT_FDCWD, (long)path, (long)&how,
				(long)sizeof(how)), &err);
	CHECK(r >= 0 && !(fcntl((int)r, F_GETFL) & O_NONBLOCK));
	close((int)r);
	how.flags = O_WRONLY;
	h = BG(laio_syscall(SYS_openat2, (long)AT_FDCWD, (long)path, (long)&how,
			    (long)sizeof(how)));
	rd = open(path, O_RDONLY | O_NONBLOCK);
	CHECK(rd >= 0);
	c = wait_one(h);
	w = c.laio_return_value;
	CHECK(w >= 0 && !(fcntl((int)w, F_GETFL) & O_NONBLOCK));
	close((int)w);
	close(rd);
	CHECK(unlink(path) == 0);
}

static void timerfd_clock_set(void)
{
	struct itimerspec its = { .it_value = { 3600, 0 } };
	struct timespec now;
	struct laio_completion c;
	uint64_t v;
	int tfd;
	void *h;

	if (geteuid() != 0) {
		fprintf(stderr, "    (not root: not checked)\n");
		return;
	}
	/* read, readv, preadv2 at the file position: each the plain call's
	 * ECANCELED, never taken for io-wq's and issued again */
	for (int how = 0; how < 3; how++) {
		struct iovec iov = { &v, sizeof(v) };

		tfd = timerfd_create(CLOCK_REALTIME, 0);
		CHECK(tfd >= 0);
		CHECK(clock_gettime(CLOCK_REALTIME, &now) == 0);
		its.it_value.tv_sec = now.tv_sec + 3600;
		CHECK(timerfd_settime(tfd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &its,
				      NULL) == 0);
		if (how == 0)
			h = BG(laio_syscall(SYS_read, tfd, &v, (long)sizeof(v)));
		else if (how == 1)
			h = BG(laio_syscall(SYS_readv, tfd, &iov, 1L));
		else
			h = BG(laio_syscall(SYS_preadv2, tfd, &iov, 1L, -1L, -1L, 0L));
		usleep(100000);
		CHECK(clock_gettime(CLOCK_REALTIME, &now) == 0);
		CHECK(clock_settime(CLOCK_REALTIME, &now) == 0);	/* a step of ~0 */
		c = wait_one(h);
		CHECK_EQ(c.laio_return_value, -1);
		CHECK_EQ(c.laio_errno, ECANCELED);
		close(tfd);
	}
}

/* The errno the plain call gives, where the op or a span check of ours
 * answered first (EFAULT before the kernel's own earlier check). */
static void errno_order(void)
{
	static char buf[16];
	int s = socket(AF_UNIX, SOCK_STREAM, 0), fd = open("/dev/null", O_RDONLY), err;

	CHECK(s >= 0 && fd >= 0);
	CHECK_EQ(result(laio_syscall(SYS_connect, s, 0L, 0L), &err), -1);
	CHECK_EQ(err, EINVAL);
	CHECK_EQ(result(laio_syscall(SYS_statx, (long)AT_FDCWD, (long)"/nonexistent/x", 0L,
				     (long)STATX_BASIC_STATS, 0L), &err), -1);
	CHECK_EQ(err, ENOENT);
	CHECK_EQ(result(laio_syscall(SYS_read, -1L, (long)buf, (long)SIZE_MAX), &err), -1);
	CHECK_EQ(err, EBADF);
	CHECK_EQ(result(laio_syscall(SYS_write, (long)fd, (long)buf, (long)SIZE_MAX), &err), -1);
	CHECK_EQ(err, EBADF);
	close(s);
	close(fd);
}

static void all(void)
{
	RUN(seccomp_filter);
	RUN(unshared_cwd);
	RUN(creds_of_the_caller);
	RUN(table_of_the_caller);
	RUN(cancel_poller);
	RUN(cancel_pending);
	RUN(resolve_cached_fifo);
	RUN(timerfd_clock_set);
	RUN(errno_order);
}

int main(void)
{
	alarm(120);	/* a hang is a failure */
	snprintf(dir, sizeof(dir), "/var/tmp/laio-ctx-XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	CHECK(chmod(dir, 0755) == 0);
	RUN_MECHS(all);
	CHECK(rmdir(dir) == 0);
	return T_EXIT_PASS;
}
