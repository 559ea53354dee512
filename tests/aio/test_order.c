/* SPDX-License-Identifier: MIT */
/*
 * Ordering: uaio_fsync completes only after the writes to its descriptor
 * queued before it; requests on one non-seekable descriptor (a stream
 * socketpair with a small buffer, a pipe) run one at a time in
 * submission order, lower aio_reqprio first among those still waiting,
 * and a real-time thread's before an ordinary one's (glibc's priority);
 * writes to an O_APPEND file append in the order of the calls (POSIX),
 * whatever their sizes, leave the file position alone (glibc's pwrite),
 * and an fsync after them covers them all.
 */
#include "aio/aio_util.h"
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/socket.h>

enum { NW = 64, WSZ = 64 * 1024 };


struct fsync_check {
	struct aiocb *writes;
	int n, still_running;
	sem_t sem;
};

static void on_fsync(union sigval v)
{
	struct fsync_check *f = v.sival_ptr;

	for (int i = 0; i < f->n; i++)
		if (uaio_error(&f->writes[i]) == EINPROGRESS)
			f->still_running++;
	sem_post(&f->sem);
}

static void fsync_after_writes(void)
{
	int fd = t_tmpfile(), err;
	char *w = malloc((size_t)NW * WSZ);
	struct aiocb *cbs = calloc(NW, sizeof(*cbs)), fs;
	struct fsync_check f = { .writes = cbs, .n = NW };

	t_fill(w, (size_t)NW * WSZ, 5);
	CHECK(sem_init(&f.sem, 0, 0) == 0);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < NW; i++) {
			cbs[i] = t_cb(fd, w + (size_t)i * WSZ, WSZ, (off_t)i * WSZ);
			CHECK_EQ(uaio_write(&cbs[i]), 0);
		}
		fs = t_cb(fd, NULL, 0, 0);
		fs.aio_sigevent.sigev_notify = SIGEV_THREAD;
		fs.aio_sigevent.sigev_notify_function = on_fsync;
		fs.aio_sigevent.sigev_value.sival_ptr = &f;
		CHECK_EQ(uaio_fsync(round ? O_DSYNC : O_SYNC, &fs), 0);
		while (sem_wait(&f.sem) < 0)
			CHECK(errno == EINTR);
		CHECK_EQ(f.still_running, 0);
		CHECK_EQ(t_wait(&fs, &err), 0);
		CHECK_EQ(err, 0);
		for (int i = 0; i < NW; i++)
			CHECK_EQ(t_wait(&cbs[i], &err), WSZ);
	}
	/* An fsync with nothing before it. */
	fs = t_cb(fd, NULL, 0, 0);
	CHECK_EQ(uaio_fsync(O_SYNC, &fs), 0);
	CHECK_EQ(t_wait(&fs, &err), 0);
	sem_destroy(&f.sem);
	free(w);
	free(cbs);
	close(fd);
}

/* A write called after an fsync ends after it (glibc runs a descriptor's
 * requests one after another): a journal's commit record never overtakes
 * the fsync of its data. Before, the small write went at once, beside
 * the fsync that waited for the big one. Reads and fsyncs behind a write
 * end in call order. */
struct after_fsync {
	struct aiocb *fs;
	int fsync_running;
	sem_t *sem;
};

static void on_commit(union sigval v)
{
	struct after_fsync *a = v.sival_ptr;

	if (uaio_error(a->fs) == EINPROGRESS)
		a->fsync_running++;
	sem_post(a->sem);
}

static void writes_after_fsync(void)
{
	enum { BIG = 4 << 20 };
	int fd = t_tmpfile(), err;
	char *big = malloc(BIG);
	static char rb[4][16];
	static sem_t sem;
	struct after_fsync a;

	t_fill(big, BIG, 7);
	CHECK(sem_init(&sem, 0, 0) == 0);
	for (int round = 0; round < 8; round++) {
		struct aiocb data = t_cb(fd, big, BIG, 0), fs = t_cb(fd, NULL, 0, 0);
		struct aiocb commit = t_cb(fd, (void *)"COMMIT", 6, BIG), r[4];
		struct aiocb *l[1] = { &data };

		a = (struct after_fsync){ .fs = &fs, .sem = &sem };
		if (round % 2) {
			data.aio_lio_opcode = LIO_WRITE;
			CHECK_EQ(ulio_listio(LIO_NOWAIT, l, 1, NULL), 0);
		} else {
			CHECK_EQ(uaio_write(&data), 0);
		}
		for (int i = 0; i < 2; i++) {
			r[i] = t_cb(fd, rb[i], 16, (off_t)i * 16);
			CHECK_EQ(uaio_read(&r[i]), 0);
		}
		CHECK_EQ(uaio_fsync(round % 4 < 2 ? O_SYNC : O_DSYNC, &fs), 0);
		commit.aio_sigevent.sigev_notify = SIGEV_THREAD;
		commit.aio_sigevent.sigev_notify_function = on_commit;
		commit.aio_sigevent.sigev_value.sival_ptr = &a;
		CHECK_EQ(uaio_write(&commit), 0);
		for (int i = 2; i < 4; i++) {
			r[i] = t_cb(fd, rb[i], 16, (off_t)i * 16);
			CHECK_EQ(uaio_read(&r[i]), 0);
		}
		while (sem_wait(&sem) < 0)
			CHECK(errno == EINTR);
		CHECK_EQ(a.fsync_running, 0);
		CHECK_EQ(t_wait(&data, &err), BIG);
		CHECK_EQ(t_wait(&fs, &err), 0);
		CHECK_EQ(t_wait(&commit, &err), 6);
		for (int i = 0; i < 4; i++) {
			CHECK_EQ(t_wait(&r[i], &err), 16);
			CHECK(!memcmp(rb[i], big + i * 16, 16));
		}
	}
	/* one cancelled while it waits for the fsync: the next still goes */
	{
		struct aiocb data = t_cb(fd, big, BIG, 0), fs = t_cb(fd, NULL, 0, 0);
		struct aiocb c1 = t_cb(fd, (void *)"one", 3, BIG), c2 = t_cb(fd, (void *)"two", 3, BIG + 3);

		CHECK_EQ(uaio_write(&data), 0);
		CHECK_EQ(uaio_fsync(O_SYNC, &fs), 0);
		CHECK_EQ(uaio_write(&c1), 0);
		CHECK_EQ(uaio_write(&c2), 0);
		int rc = uaio_cancel(fd, &c1);
		CHECK(rc == AIO_CANCELED || rc == AIO_ALLDONE);
		CHECK_EQ(t_wait(&c2, &err), 3);
		CHECK_EQ(t_wait(&fs, &err), 0);
		CHECK_EQ(t_wait(&data, &err), BIG);
		CHECK_EQ(t_wait(&c1, &err), rc == AIO_CANCELED ? -1 : 3);
	}
	sem_destroy(&sem);
	free(big);
	close(fd);
}

/* Writes to one end and reads from the other, all queued at once: the
 * bytes come out in submission order. */
enum { SN = 48, SCH = 16 * 1024 };

struct drain {
	int fd;
	struct aiocb *rc;
	char *r, *all;
	size_t got;
};

/* Collects the reads in order, then reads the rest to EOF. */
static void *drain_main(void *arg)
{
	struct drain *d = arg;
	int err;

	for (int i = 0; i < SN; i++) {
		ssize_t n = t_wait(&d->rc[i], &err);
		CHECK(n >= 0);
		memcpy(d->all + d->got, d->r + (size_t)i * SCH * 2, (size_t)n);
		d->got += (size_t)n;
	}
	for (ssize_t n; (n = read(d->fd, d->all + d->got, (size_t)SN * SCH - d->got)) > 0;)
		d->got += (size_t)n;
	return NULL;
}

static void stream_in_order(void)
{
	int s[2], buf = 4096, err;
	char *w = malloc((size_t)SN * SCH);
	struct aiocb *wc = calloc(SN, sizeof(*wc)), *rc = calloc(SN, sizeof(*rc));
	struct drain d = { .rc = rc, .r = malloc((size_t)SN * SCH * 2),
			   .all = malloc((size_t)SN * SCH) };
	pthread_t t;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, s) == 0);
	CHECK(setsockopt(s[1], SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf)) == 0);
	CHECK(setsockopt(s[0], SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf)) == 0);
	d.fd = s[0];
	t_fill(w, (size_t)SN * SCH, 6);
	for (int i = 0; i < SN; i++) {
		wc[i] = t_cb(s[1], w + (size_t)i * SCH, SCH, 0);
		CHECK_EQ(uaio_write(&wc[i]), 0);
		rc[i] = t_cb(s[0], d.r + (size_t)i * SCH * 2, SCH * 2, 0);
		CHECK_EQ(uaio_read(&rc[i]), 0);
	}
	CHECK(pthread_create(&t, NULL, drain_main, &d) == 0);
	/* Every write completes in full: a blocking write to a socket. */
	for (int i = 0; i < SN; i++) {
		CHECK_EQ(t_wait(&wc[i], &err), SCH);
		CHECK_EQ(err, 0);
	}
	shutdown(s[1], SHUT_WR);
	pthread_join(t, NULL);
	CHECK_EQ(d.got, (size_t)SN * SCH);
	CHECK(!memcmp(d.all, w, d.got));
	free(d.all);
	free(d.r);
	free(w);
	free(wc);
	free(rc);
	close(s[0]);
	close(s[1]);
}

static void pipe_priority(void)
{
	int p[2], err;
	char b[4][4];
	struct aiocb c[4];
	static const int prio[4] = { 0, 5, 0, 5 };

	CHECK(pipe(p) == 0);
	for (int i = 0; i < 4; i++) {
		c[i] = t_cb(p[0], b[i], 1, 0);
		c[i].aio_reqprio = prio[i];
		CHECK_EQ(uaio_read(&c[i]), 0);
	}
	/* c0 is already waiting in the kernel; then c2, c1, c3. */
	static const int expect[4] = { 0, 2, 1, 3 };
	for (int k = 0; k < 4; k++) {
		char ch = (char)('a' + k);
		CHECK(write(p[1], &ch, 1) == 1);
		CHECK_EQ(t_wait(&c[expect[k]], &err), 1);
		CHECK_EQ(b[expect[k]][0], ch);
		for (int j = k + 1; j < 4; j++)
			CHECK_EQ(uaio_error(&c[expect[j]]), EINPROGRESS);
	}
	close(p[0]);
	close(p[1]);
}

/* One list, entries on one descriptor: the first runs at once, the rest
 * by aio_reqprio, ties in list order, as glibc's lio_listio queues them
 * (they ran in list order). A pipe read in a stream of one byte each:
 * a (p0), b (p10), c (p0) take the bytes in the order a, c, b; on a
 * file, a read (p0) listed after writes (p0, p10) of one offset sees
 * the first write, and the p10 write lands last. */
static void list_priority(void)
{
	int p[2], fd = t_tmpfile(), err;
	char b[3][2] = { { 0 } }, rb[5] = { 0 };
	struct aiocb c[3], f[3];
	struct aiocb *l[3] = { &c[0], &c[1], &c[2] }, *lf[3] = { &f[0], &f[1], &f[2] };
	static const int prio[3] = { 0, 10, 0 };

	CHECK(pipe(p) == 0);
	CHECK(write(p[1], "123", 3) == 3);
	for (int i = 0; i < 3; i++) {
		c[i] = t_cb(p[0], b[i], 1, 0);
		c[i].aio_reqprio = prio[i];
		c[i].aio_lio_opcode = LIO_READ;
	}
	CHECK_EQ(ulio_listio(LIO_WAIT, l, 3, NULL), 0);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(t_wait(&c[i], &err), 1);
	CHECK_EQ(b[0][0], '1');
	CHECK_EQ(b[2][0], '2');
	CHECK_EQ(b[1][0], '3');

	f[0] = t_cb(fd, (void *)"CCCC", 4, 0);
	f[1] = t_cb(fd, (void *)"DDDD", 4, 0);
	f[1].aio_reqprio = 10;
	f[2] = t_cb(fd, rb, 4, 0);
	f[0].aio_lio_opcode = f[1].aio_lio_opcode = LIO_WRITE;
	f[2].aio_lio_opcode = LIO_READ;
	CHECK_EQ(ulio_listio(LIO_WAIT, lf, 3, NULL), 0);
	CHECK_EQ(t_wait(&f[2], &err), 4);
	CHECK(!memcmp(rb, "CCCC", 4));
	CHECK(pread(fd, rb, 4, 0) == 4 && !memcmp(rb, "DDDD", 4));
	/* an entry refused at submission (a bad aio_reqprio, INT_MIN: no
	 * overflow in the order) takes no first turn: the next valid one
	 * runs first, as glibc never queues the refused one */
	CHECK(pwrite(fd, "old!", 4, 0) == 4);
	f[0] = t_cb(fd, (void *)"XXXX", 4, 0);
	f[0].aio_reqprio = INT_MIN;
	f[1] = t_cb(fd, (void *)"NEW!", 4, 0);
	f[1].aio_reqprio = 5;
	f[2] = t_cb(fd, rb, 4, 0);
	f[0].aio_lio_opcode = f[1].aio_lio_opcode = LIO_WRITE;
	f[2].aio_lio_opcode = LIO_READ;
	errno = 0;
	CHECK_EQ(ulio_listio(LIO_WAIT, lf, 3, NULL), -1);
	CHECK_EQ(errno, EIO);
	CHECK_EQ(uaio_error(&f[0]), EINVAL);
	CHECK_EQ(t_wait(&f[1], &err), 4);
	CHECK_EQ(t_wait(&f[2], &err), 4);
	CHECK(!memcmp(rb, "NEW!", 4));
	close(p[0]);
	close(p[1]);
	close(fd);
}

/* Priority is the submitting thread's scheduling priority less
 * aio_reqprio (glibc's __abs_prio): a read from a SCHED_FIFO thread passes
 * those of this ordinary thread waiting before it, even one with
 * aio_reqprio 0 against its 20 (they ran in call order). Skips the check
 * where no real-time thread can be made (not root, or an RT limit). */
static struct aiocb rt_cb;

static void *rt_submit(void *arg)
{
	(void)arg;
	CHECK_EQ(uaio_read(&rt_cb), 0);
	return NULL;
}

static void thread_priority(void)
{
	struct sched_param sp = { .sched_priority = 10 };
	pthread_attr_t at;
	pthread_t th;
	int p[2], err;
	char b[3][2], rb[2];
	struct aiocb c[2];

	CHECK(pipe(p) == 0);
	c[0] = t_cb(p[0], b[0], 2, 0);
	CHECK_EQ(uaio_read(&c[0]), 0);		/* under way */
	c[1] = t_cb(p[0], b[1], 2, 0);
	CHECK_EQ(uaio_read(&c[1]), 0);		/* waits: priority 0 */
	rt_cb = t_cb(p[0], rb, 2, 0);
	rt_cb.aio_reqprio = 9;			/* 10 - 9 = 1 */
	CHECK_EQ(pthread_attr_init(&at), 0);
	CHECK_EQ(pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED), 0);
	CHECK_EQ(pthread_attr_setschedpolicy(&at, SCHED_FIFO), 0);
	CHECK_EQ(pthread_attr_setschedparam(&at, &sp), 0);
	if (pthread_create(&th, &at, rt_submit, NULL) != 0) {
		fprintf(stderr, "    no SCHED_FIFO thread here: skipped\n");
		CHECK_EQ(uaio_cancel(p[0], &c[1]), AIO_CANCELED);
		CHECK_EQ(write(p[1], "AA", 2), 2);
		CHECK_EQ(t_wait(&c[0], &err), 2);
		close(p[0]);
		close(p[1]);
		return;
	}
	CHECK_EQ(pthread_join(th, NULL), 0);
	pthread_attr_destroy(&at);
	CHECK_EQ(write(p[1], "AABBCC", 6), 6);
	CHECK_EQ(t_wait(&c[0], &err), 2);
	CHECK_EQ(t_wait(&rt_cb, &err), 2);
	CHECK_EQ(t_wait(&c[1], &err), 2);
	CHECK_EQ(memcmp(b[0], "AA", 2), 0);
	CHECK_EQ(memcmp(rb, "BB", 2), 0);
	CHECK_EQ(memcmp(b[1], "CC", 2), 0);
	close(p[0]);
	close(p[1]);
}

/* Writes of very different sizes (a big one goes to the engine, a small
 * one to the thread's own ring or inline): each lands after the one
 * called before it. */
static void append_in_order(void)
{
	enum { ROUNDS = 12, K = 6 };
	static const size_t sz[K] = { 1 << 20, 16, 200000, 1, 4096, 65536 };
	int fd = t_tmpfile(), err;
	size_t total = 0, off = 0;
	char *bufs[K];
	struct aiocb cbs[K];
	const struct aiocb *l[1];

	CHECK(fcntl(fd, F_SETFL, O_APPEND) == 0);
	/* glibc writes with pwrite: the kernel appends, and the file
	 * position, which a write(2) would move, stays at 3 */
	CHECK(write(fd, "abc", 3) == 3 && lseek(fd, 3, SEEK_SET) == 3);
	total = 3;
	off = 3;
	for (int k = 0; k < K; k++) {
		bufs[k] = malloc(sz[k]);
		memset(bufs[k], 'A' + k, sz[k]);
	}
	for (int r = 0; r < ROUNDS; r++) {
		for (int k = 0; k < K; k++) {
			/* the offset is ignored under O_APPEND */
			cbs[k] = t_cb(fd, bufs[k], sz[k], 0);
			CHECK_EQ(uaio_write(&cbs[k]), 0);
			total += sz[k];
		}
		if (r % 2) {	/* half the rounds: an fsync covers them */
			struct aiocb f = t_cb(fd, NULL, 0, 0);
			CHECK_EQ(uaio_fsync(O_SYNC, &f), 0);
			l[0] = &f;
			while (uaio_error(&f) == EINPROGRESS)
				uaio_suspend(l, 1, NULL);
			for (int k = 0; k < K; k++)
				CHECK_EQ(uaio_error(&cbs[k]), 0);
			CHECK_EQ(t_wait(&f, &err), 0);
		}
		for (int k = 0; k < K; k++)
			CHECK_EQ(t_wait(&cbs[k], &err), (ssize_t)sz[k]);
	}
	struct stat st;
	CHECK(fstat(fd, &st) == 0 && (size_t)st.st_size == total);
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), (off_t)3);
	char *all = malloc(total);
	CHECK(pread(fd, all, total, 0) == (ssize_t)total);
	for (int r = 0; r < ROUNDS; r++)
		for (int k = 0; k < K; k++) {
			for (size_t i = 0; i < sz[k]; i++)
				if (all[off + i] != 'A' + k)
					CHECK(!"an O_APPEND write landed out of call order");
			off += sz[k];
		}
	free(all);
	for (int k = 0; k < K; k++)
		free(bufs[k]);
	close(fd);
}

/* O_APPEND set after the descriptor's flags were seen (fcntl), or its
 * number reused for a file opened O_APPEND: the appends still keep the
 * order of the calls (a stale flag hint let a page-aligned write land
 * first, 19 rounds of 20). */
static void append_set_later(void)
{
	static char a[100], b[4096];
	char path[] = "/var/tmp/uaio-test-XXXXXX";
	int fd = mkstemp(path), err;

	CHECK(fd >= 0);
	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	for (int how = 0; how < 2; how++) {
		struct aiocb w1 = t_cb(fd, a, sizeof(a), 0), w2;

		CHECK_EQ(uaio_write(&w1), 0);	/* the flags seen without O_APPEND */
		CHECK_EQ(t_wait(&w1, &err), (ssize_t)sizeof(a));
		if (how == 0) {
			CHECK(fcntl(fd, F_SETFL, O_APPEND) == 0);
		} else {
			int f2;

			CHECK(fcntl(fd, F_SETFL, 0) == 0);
			CHECK_EQ(uaio_write(&w1), 0);
			CHECK_EQ(t_wait(&w1, &err), (ssize_t)sizeof(a));
			close(fd);
			f2 = open(path, O_RDWR | O_APPEND);
			CHECK(f2 >= 0);
			if (f2 != fd) {
				CHECK(dup2(f2, fd) == fd);
				close(f2);
			}
		}
		for (int round = 0; round < 20; round++) {
			char first;

			CHECK(ftruncate(fd, 0) == 0);
			w1 = t_cb(fd, a, sizeof(a), 0);
			w2 = t_cb(fd, b, sizeof(b), 0);
			CHECK_EQ(uaio_write(&w1), 0);
			CHECK_EQ(uaio_write(&w2), 0);
			CHECK_EQ(t_wait(&w1, &err), (ssize_t)sizeof(a));
			CHECK_EQ(t_wait(&w2, &err), (ssize_t)sizeof(b));
			CHECK(pread(fd, &first, 1, 0) == 1);
			CHECK_EQ(first, 'A');
		}
	}
	unlink(path);
	close(fd);
}

/* A read after a write to the same bytes, neither waited for (one
 * lio_listio, or two calls): the read sees the write, as under glibc,
 * which runs a descriptor's requests in order (the read came from the
 * page cache at once while the write was still in the kernel). */
static void read_after_write(void)
{
	static char rb[9];
	int fd = t_tmpfile(), err;

	for (int round = 0; round < 20; round++) {
		struct aiocb w = t_cb(fd, (void *)"NEW!", 4, 0), r = t_cb(fd, rb, 8, 0);

		CHECK(pwrite(fd, "old-data", 8, 0) == 8);
		memset(rb, 0, sizeof(rb));
		w.aio_lio_opcode = LIO_WRITE;
		r.aio_lio_opcode = LIO_READ;
		t_submit_two(&w, &r, LIO_WAIT, round % 2);
		CHECK_EQ(t_wait(&w, &err), 4);
		CHECK_EQ(t_wait(&r, &err), 8);
		CHECK(!memcmp(rb, "NEW!data", 8));
	}
	/* and behind O_APPEND writes, which queue in call order */
	CHECK(fcntl(fd, F_SETFL, O_APPEND) == 0);
	for (int round = 0; round < 10; round++) {
		struct aiocb w = t_cb(fd, (void *)"MORE", 4, 0), r = t_cb(fd, rb, 4, 8);

		CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, "old-data", 8, 0) == 8);
		memset(rb, 0, sizeof(rb));
		CHECK_EQ(uaio_write(&w), 0);
		CHECK_EQ(uaio_read(&r), 0);
		CHECK_EQ(t_wait(&w, &err), 4);
		CHECK_EQ(t_wait(&r, &err), 4);
		CHECK(!memcmp(rb, "MORE", 4));
	}
	close(fd);
}

/* A regular file that cannot be read or written at an offset (opened as a
 * stream: tracefs's trace_marker): at the file's position, as glibc falls
 * back to write(2) on ESPIPE, with or without other stream requests
 * queued. */
static void stream_regular_file(void)
{
	static const char *const paths[] = { "/sys/kernel/tracing/trace_marker",
					     "/sys/kernel/debug/tracing/trace_marker" };
	char msg[] = "uaio test_order stream_regular_file\n", c;
	int fd = -1, p[2], err;
	struct stat st;

	for (int i = 0; i < 2 && fd < 0; i++)
		fd = open(paths[i], O_WRONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    pwrite(fd, msg, 1, 0) >= 0 || errno != ESPIPE) {
		fprintf(stderr, "    (no tracefs trace_marker to write: not checked)\n");
		if (fd >= 0)
			close(fd);
		return;
	}
	for (int queued = 0; queued < 2; queued++) {
		struct aiocb w = t_cb(fd, msg, sizeof(msg) - 1, 123), rd;

		if (queued) {	/* a read waiting on a pipe: stream requests exist */
			CHECK(pipe(p) == 0);
			rd = t_cb(p[0], &c, 1, 0);
			CHECK_EQ(uaio_read(&rd), 0);
		}
		CHECK_EQ(uaio_write(&w), 0);
		CHECK_EQ(t_wait(&w, &err), (ssize_t)(sizeof(msg) - 1));
		if (queued) {
			CHECK(write(p[1], "x", 1) == 1);
			CHECK_EQ(t_wait(&rd, &err), 1);
			close(p[0]);
			close(p[1]);
		}
	}
	close(fd);
}

int main(void)
{
	t_watchdog(120);
	RUN(fsync_after_writes);
	RUN(writes_after_fsync);
	RUN(stream_in_order);
	RUN(pipe_priority);
	RUN(list_priority);
	RUN(thread_priority);
	RUN(append_in_order);
	RUN(append_set_later);
	RUN(read_after_write);
	RUN(stream_regular_file);
	return T_EXIT_PASS;
}
