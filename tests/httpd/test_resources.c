/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd when resources run short or files change: the open-file
 * cache within a small RLIMIT_NOFILE and at its last descriptor, descriptors
 * of deleted files given back, a file found shorter than its cache entry,
 * a file under a write lease, an access log on a FIFO that has no reader
 * or stops reading, one client's thousands of pipelined requests (every
 * one logged), and a log whose disk fills mid-line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

#define NFILES 100
static char *root;

static void setup(void)
{
	char name[32], body[32];

	root = ht_mkdir("root");
	/* 64 MiB of hole: more than socket buffers hold, read from no disk */
	ht_put_hole(root, "big.bin", 64 << 20);
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof(name), "f%d.txt", i);
		snprintf(body, sizeof(body), "file %d\n", i);
		ht_put(root, name, body, strlen(body));
	}
}

/* With RLIMIT_NOFILE 64 (soft and hard), more distinct files than that
 * are served: the cache keeps to a share of the descriptors. (The cache
 * took them all: 503 for every file past about 48, for ever.) */
/* fn's exit status, run in a child whose RLIMIT_NOFILE is 64 (soft and
 * hard), or -1 if it did not exit. */
static int nofile_64(int (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	FATAL(pid >= 0, "fork");
	if (pid == 0) {
		struct rlimit rl = { 64, 64 };

		/* what the test inherited (from ctest, say) takes none of 64 */
		close_range(3, ~0u, 0);
		_exit(setrlimit(RLIMIT_NOFILE, &rl) < 0 ? 3 : fn());
	}
	FATAL(waitpid(pid, &st, 0) == pid, "waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A small RLIMIT_NOFILE for the server: the default connection limit is
 * one the descriptors can keep, so that clients at once each get an
 * answer, 200 or 503 (under 30 it was at least 16, more than 30
 * descriptors hold beside the loop and the cache: accept failed with
 * EMFILE, and the rest waited in the backlog until they gave up); and
 * never below 16 where they hold 16 (at 87 a draft made it 0: a 503 for
 * every request). */
#define TIGHT_CONNS 40
static void tight_conns(rlim_t nofile, int clients, bool all_200)
{
	struct ht_server s;
	struct ht_conn *c[TIGHT_CONNS];
	int answered = 0, ok = 0, was = ht_timeout_ms;

	ht_spawn_nofile = nofile;
	ht_start(&s, root, NULL);
	ht_spawn_nofile = 0;
	ht_timeout_ms = 10000;
	for (int i = 0; i < clients; i++) {
		c[i] = ht_connect(s.port);
		ht_sends(c[i], "GET /f1.txt HTTP/1.1\r\nHost: x\r\n\r\n");
	}
	for (int i = 0; i < clients; i++) {
		struct ht_resp r;

		if (ht_read_head(c[i], &r, 0) == HT_OK && (r.status == 200 || r.status == 503)) {
			answered++;
			ok += r.status == 200;
		}
		ht_resp_free(&r);
	}
	for (int i = 0; i < clients; i++)
		ht_close(c[i]);
	ht_timeout_ms = was;
	EXPECT(answered == clients && ok >= 1 && (!all_200 || ok == clients),
	       "RLIMIT_NOFILE %d: %d of %d clients at once answered, %d with 200 (%s expected)",
	       (int)nofile, answered, clients, ok, all_200 ? "all" : "at least one");
	ht_stop(&s);
}

static void t_tight_conns(void)
{
	tight_conns(30, TIGHT_CONNS, false);
	tight_conns(87, 12, true);
}

static int small_nofile(void)
{
	struct ht_server s;
	struct ht_resp r;
	int ok = 0;

	ht_start(&s, root, NULL);
	for (int i = 0; i < NFILES; i++) {
		char path[32];

		snprintf(path, sizeof(path), "/f%d.txt", i);
		if (ht_get(s.port, path, "", &r) == HT_OK && r.status == 200)
			ok++;
		else
			fprintf(stderr, "    %s: status %d\n", path, r.status);
		ht_resp_free(&r);
	}
	ht_stop(&s);
	return ok == NFILES ? 0 : 1;
}

static void t_small_nofile(void)
{
	int st = nofile_64(small_nofile);

	EXPECT(st == 0, "RLIMIT_NOFILE 64: every one of %d files served (child status %d)",
	       NFILES, st);
}

/* RLIMIT_NOFILE 64 and --threads 6 to 12: the threads' loops and
 * reserves take about 7 descriptors each, and for one of these counts
 * all of the 64 (8 in a shell). The server must then serve anyway or
 * refuse to start (status 1, a message); it listened, and every
 * connection waited in the backlog for ever (accept: EMFILE). */
static int nofile_threads_n(const char *threads)
{
	const char *a[] = { "", "--port", "0", "--addr", "127.0.0.1", "--threads", threads,
			    root, NULL };
	struct ht_server s;
	struct ht_resp r;
	char *err;
	int port = 0, rc = 1;

	ht_spawn(&s, a);
	for (int i = 0; i < 1000 && !port && !ht_wait(&s, 0); i++) {
		err = ht_slurp(s.err, NULL);
		if (!err || sscanf(err, "uaio-httpd: listening on http://127.0.0.1:%d/", &port) != 1)
			usleep(10000);
		free(err);
	}
	if (s.exited || ht_wait(&s, 0)) {
		err = ht_slurp(s.err, NULL);
		rc = !(WIFEXITED(s.status) && WEXITSTATUS(s.status) == 1 && err &&
		       !strncmp(err, "uaio-httpd: ", 12));
		if (rc)
			fprintf(stderr, "    --threads %s: status %#x, '%.200s'\n", threads,
				s.status, err ? err : "");
		free(err);
		return rc;
	}
	if (port) {
		ht_timeout_ms = 3000;
		rc = !(ht_get(port, "/f1.txt", "", &r) == HT_OK && r.status == 200);
		if (rc)
			fprintf(stderr, "    --threads %s: listening, and no 200 within 3 s\n",
				threads);
		ht_resp_free(&r);
	}
	ht_kill(&s);
	return rc;
}

static int nofile_threads(void)
{
	static const char *const n[] = { "6", "7", "8", "9", "10", "11", "12" };
	int rc = 0;

	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		rc |= nofile_threads_n(n[i]);
	return rc;
}

static void t_nofile_threads(void)
{
	int st = nofile_64(nofile_threads);

	EXPECT(st == 0, "RLIMIT_NOFILE 64, --threads 6 to 12: served or refused to start "
	       "(child status %d)", st);
}

static int deleted_fds(pid_t pid)
{
	char dir[64], p[PATH_MAX], t[PATH_MAX];
	int n = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	for (int fd = 0; fd < 1024; fd++) {
		ssize_t k;

		snprintf(p, sizeof(p), "%s/%d", dir, fd);
		if ((k = readlink(p, t, sizeof(t) - 1)) <= 0)
			continue;
		t[k] = 0;
		n += strstr(t, "(deleted)") != NULL;
	}
	return n;
}

/* A file removed after it was served is not held open by the cache: its
 * space comes back (it was held until the path was asked for again). */
static void t_deleted_released(void)
{
	struct ht_server s;
	struct ht_resp r;
	unsigned char *data = ht_random(1 << 20, 9);
	int held = -1;

	ht_put(root, "gone.bin", data, 1 << 20);
	free(data);
	ht_start(&s, root, NULL);
	EXPECT(ht_get(s.port, "/gone.bin", "", &r) == HT_OK && r.status == 200, "GET");
	ht_resp_free(&r);
	EXPECT(unlink(ht_join(root, "gone.bin")) == 0, "unlink");
	for (int i = 0; i < 100 && (held = deleted_fds(s.pid)); i++)
		usleep(100000);
	EXPECT(held == 0, "a removed file still held open 10 s later (%d)", held);
	ht_stop(&s);
}

/* A file cut to 0 bytes while its cache entry says otherwise: that one
 * response ends early, and the next request sees the file as it is. */
static void t_shrunk_entry(void)
{
	struct ht_server s;
	struct ht_resp r;
	unsigned char *data = ht_random(300000, 10);
	char *path = ht_join(root, "shrink.bin");

	ht_put(root, "shrink.bin", data, 300000);
	free(data);
	ht_start(&s, root, NULL);
	EXPECT(ht_get(s.port, "/shrink.bin", "", &r) == HT_OK && r.status == 200 &&
	       r.body_len == 300000, "first GET");
	ht_resp_free(&r);
	EXPECT(truncate(path, 0) == 0, "truncate");
	ht_get(s.port, "/shrink.bin", "", &r);	/* cut short, or 200 with 0 */
	ht_resp_free(&r);
	EXPECT(ht_get(s.port, "/shrink.bin", "", &r) == HT_OK && r.status == 200 &&
	       r.clen == 0, "the GET after a short one: 200 and 0 bytes, got %d, length %lld",
	       r.status, r.clen);
	ht_resp_free(&r);
	ht_stop(&s);
}

/* --log on a FIFO nobody reads: refused at start (open would wait for
 * a reader, deaf to signals). */
static void t_log_fifo_no_reader(void)
{
	char *fifo = ht_join(ht_scratch(), "noreader.fifo"), *err;
	const char *a[] = { "", "--port", "0", "--addr", "127.0.0.1", "--log", fifo, root, NULL };
	struct ht_server s;

	FATAL(mkfifo(fifo, 0600) == 0, "mkfifo");
	ht_spawn(&s, a);
	if (!ht_wait(&s, 10000)) {
		ht_kill(&s);
		EXPECT(0, "--log FIFO without a reader: still running after 10 s");
		return;
	}
	EXPECT(WIFEXITED(s.status) && WEXITSTATUS(s.status) == 1, "exit status 1 expected");
	err = ht_slurp(s.err, NULL);
	EXPECT(err && strstr(err, "uaio-httpd: cannot open"), "stderr: '%.200s'", err ? err : "");
	free(err);
	unlink(fifo);
}

/* The log's reader stops reading: requests go on being served (lines
 * are dropped), SIGTERM still ends the server, and the dropped lines
 * are counted. Then a reader that goes away: the error is said once. */
static void t_log_fifo_stalled(void)
{
	char *fifo = ht_join(ht_scratch(), "stalled.fifo"), *err, target[2100];
	struct ht_server s;
	struct ht_resp r;
	struct ht_conn *c;
	int rd, ok = 0;

	FATAL(mkfifo(fifo, 0600) == 0, "mkfifo");
	rd = open(fifo, O_RDWR | O_CLOEXEC);	/* a reader that never reads */
	FATAL(rd >= 0, "open fifo");
	ht_start(&s, root, "--log", fifo, NULL);
	memset(target, 'q', sizeof(target));
	memcpy(target, "/f1.txt?", 8);
	target[sizeof(target) - 1] = 0;
	c = ht_connect(s.port);
	/* 2 KiB lines: the FIFO's 64 KiB fill after a few dozen */
	for (int i = 0; i < 300; i++) {
		if (ht_sendf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", target) < 0 ||
		    ht_read(c, &r, 0) != HT_OK)
			break;
		ok += r.status == 200;
		ht_resp_free(&r);
	}
	ht_close(c);
	EXPECT(ok == 300, "served %d of 300 with the log stalled", ok);
	EXPECT(ht_stop(&s) == 0, "SIGTERM with the log's write stalled: exit 0");
	err = ht_slurp(s.err, NULL);
	EXPECT(err && strstr(err, "access log lines dropped"), "stderr: '%.300s'", err ? err : "");
	free(err);
	close(rd);

	/* the reader goes away: EPIPE, said once, though both threads' logs
	 * meet it (8 connections a round: all on one thread 1 time in 128) */
	rd = open(fifo, O_RDWR | O_CLOEXEC);
	ht_start(&s, root, "--log", fifo, "--threads", "2", NULL);
	close(rd);
	for (int i = 0; i < 3; i++) {
		for (int k = 0; k < 8; k++) {
			EXPECT(ht_get(s.port, "/f2.txt", "", &r) == HT_OK && r.status == 200,
			       "GET");
			ht_resp_free(&r);
		}
		usleep(1200000);	/* past a log flush */
	}
	EXPECT(ht_stop(&s) == 0, "exit 0");
	err = ht_slurp(s.err, NULL);
	EXPECT(err && strstr(err, "writing the access log: Broken pipe"),
	       "stderr: '%.300s'", err ? err : "");
	{
		const char *m = err ? strstr(err, "writing the access log") : NULL;

		EXPECT(m && !strstr(m + 1, "writing the access log"),
		       "the error said once: '%.300s'", err ? err : "");
		m = err ? strstr(err, "lines dropped") : NULL;
		EXPECT(m && !strstr(m + 1, "lines dropped"),
		       "the drops said once, in one sum: '%.300s'", err ? err : "");
	}
	free(err);
	unlink(fifo);
}

/* A write lease on a served file: the server's open would wait for the
 * holder to let go (up to lease-break-time, 45 s), and every other client
 * with it; it answers 503 at once and serves the rest meanwhile. */
static void t_lease(const char *mode)
{
	struct ht_server s;
	struct ht_resp r;
	char *path = ht_join(root, "leased.txt");
	int fd, saved = ht_timeout_ms;

	ht_put(root, "leased.txt", "leased\n", 7);
	signal(SIGIO, SIG_IGN);		/* the lease-break signal */
	fd = open(path, O_RDONLY);
	FATAL(fd >= 0, "open %s", path);
	if (fcntl(fd, F_SETLEASE, F_WRLCK) < 0) {
		fprintf(stderr, "    no write lease here (%s): not checked\n", strerror(errno));
		close(fd);
		return;
	}
	ht_start(&s, root, "--disk-io", mode, NULL);
	ht_timeout_ms = 10000;
	ht_get(s.port, "/leased.txt", "", &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 503,
		 "--disk-io %s: a file under a write lease: 503 at once expected", mode);
	ht_resp_free(&r);
	EXPECT(ht_get(s.port, "/f1.txt", "", &r) == HT_OK && r.status == 200,
	       "--disk-io %s: another file while the lease is held", mode);
	ht_resp_free(&r);
	ht_timeout_ms = saved;
	fcntl(fd, F_SETLEASE, F_UNLCK);
	close(fd);
	EXPECT(ht_get(s.port, "/leased.txt", "", &r) == HT_OK && r.status == 200 &&
	       r.body_len == 7, "--disk-io %s: the file once the lease is gone", mode);
	ht_resp_free(&r);
	ht_stop(&s);
}

static void t_lease_all(void)
{
	t_lease("laio");
	t_lease("blocking");
	t_lease("threads");
}

/* One descriptor left (connections hold the rest) and nothing in the
 * cache that closing would free: a new file needs two for a moment (its
 * name, then the file), so the server keeps two in reserve. Three new
 * files: the first with an empty cache; the second while the first is
 * still being sent (its entry is in use: shedding it frees nothing) and
 * the reserve is back (a sweep since; --header-timeout 1 makes them come
 * every 250 ms); the third likewise. The cache starts empty on purpose:
 * entries age out after a second, so one filled first may be gone by the
 * time the connections are made. Each idle connection has had a 404
 * answered first: a connection that never sent a request is closed after
 * the header timeout (1 s), which a slow (sanitized) run outlasts. */
static const char *last_fd_mode;

static int last_fd(void)
{
	struct ht_conn *idle[64];
	struct ht_server s;
	struct ht_resp r;
	int n = 0, bad = 0;
	static const char *const paths[] = { "/big.bin", "/f51.txt", "/f52.txt" };

	ht_start(&s, root, "--max-conns", "200", "--header-timeout", "1", "--disk-io",
		 last_fd_mode, NULL);
	/* idle connections until the server has one descriptor free */
	while (n < 64 && ht_count_fds(s.pid) < 63) {
		int before = ht_count_fds(s.pid);

		idle[n] = ht_connect_opt(s.port, 4096);
		/* One request answered, for no file: the connection is idle
		 * keep-alive, under the idle timeout, not the header timeout
		 * (1 s here, which a slow run outlasts), and holds no file. */
		ht_sendf(idle[n], "GET /no-such-file HTTP/1.1\r\nHost: x\r\n\r\n");
		bad += ht_read(idle[n], &r, 0) != HT_OK || r.status != 404;
		ht_resp_free(&r);
		n++;
		for (int k = 0; k < 200 && ht_count_fds(s.pid) == before; k++)
			usleep(10000);
	}
	if (ht_count_fds(s.pid) != 63 || n < 3) {
		ht_kill(&s);
		return 4;
	}
	/* Past the header timeout: the connections must still be there,
	 * as on a slow run (the sweeps meanwhile took the reserve back). */
	usleep(1500000);
	for (int i = 0; i < 3; i++) {
		if (i)
			usleep(400000);		/* a sweep takes the reserve back */
		ht_sendf(idle[i], "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", paths[i]);
		/* big.bin is left unread: its response goes on holding it */
		if (i == 0)
			bad += ht_read_head(idle[i], &r, 0) != HT_OK || r.status != 200;
		else
			bad += ht_read(idle[i], &r, 0) != HT_OK || r.status != 200;
		if (r.status != 200)
			fprintf(stderr, "    --disk-io %s, %s: status %d\n", last_fd_mode,
				paths[i], r.status);
		ht_resp_free(&r);
	}
	while (n > 0)
		ht_close(idle[--n]);
	ht_stop(&s);
	return bad || ht_finish() ? 1 : 0;
}

static void t_last_fd(void)
{
	static const char *const modes[] = { "laio", "blocking", "threads" };

	for (int i = 0; i < 3; i++) {
		int st;

		last_fd_mode = modes[i];
		st = nofile_64(last_fd);
		EXPECT(st == 0, "--disk-io %s: one descriptor left, nothing to shed: "
		       "three new files served (child status %d)", modes[i], st);
	}
}

struct sender {
	struct ht_conn *c;
	const char *buf;
	size_t len;
	int ret;
};

static void *send_all(void *arg)
{
	struct sender *sd = arg;

	sd->ret = ht_send(sd->c, sd->buf, sd->len);
	return NULL;
}

static size_t count_lines(const char *b, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += b[i] == '\n';
	return n;
}

/* One client's 3000 requests sent in one go: every one has its log line.
 * (The loop answered them all in a row, the log's two 64 KiB buffers
 * filled before their write came back, and 60 % were dropped.) */
static void t_log_pipelined(void)
{
	enum { N = 3000 };
	static const char req[] = "GET /f1.txt HTTP/1.1\r\nHost: x\r\n\r\n";
	char *logp = ht_join(ht_scratch(), "pipelined.log"), *all, *log, *err;
	struct sender sd;
	struct ht_server s;
	struct ht_resp r;
	pthread_t t;
	size_t len = 0;
	int ok = 0;

	all = malloc(N * (sizeof(req) - 1));
	FATAL(all != NULL, "malloc");
	for (int i = 0; i < N; i++)
		memcpy(all + (size_t)i * (sizeof(req) - 1), req, sizeof(req) - 1);
	ht_start(&s, root, "--log", logp, NULL);
	sd = (struct sender){ ht_connect(s.port), all, N * (sizeof(req) - 1), 0 };
	FATAL(pthread_create(&t, NULL, send_all, &sd) == 0, "pthread_create");
	for (int i = 0; i < N; i++) {
		if (ht_read(sd.c, &r, 0) != HT_OK)
			break;
		ok += r.status == 200;
		ht_resp_free(&r);
	}
	pthread_join(t, NULL);
	ht_close(sd.c);
	EXPECT(sd.ret == 0 && ok == N, "served %d of %d pipelined requests", ok, N);
	EXPECT(ht_stop(&s) == 0, "exit 0");
	log = ht_slurp(logp, &len);
	EXPECT(log && count_lines(log, len) == N, "%zu log lines for %d requests",
	       log ? count_lines(log, len) : 0, N);
	err = ht_slurp(s.err, NULL);
	EXPECT(err && !strstr(err, "dropped"), "stderr: '%.300s'", err ? err : "");
	free(err);
	free(log);
	free(all);
}

/* The log's disk fills in the middle of a line: once there is room again,
 * the lines after the cut one are whole, each on its own line. */
static void t_log_disk_full(void)
{
	char *mnt = ht_mkdir("logfs"), *logp = ht_join(mnt, "access.log");
	char *filler = ht_join(mnt, "filler"), *log, *line, target[1100];
	static char pad[12288];
	struct ht_server s;
	struct ht_resp r;
	size_t len = 0;
	int whole = 0;

	if (mount("tmpfs", mnt, "tmpfs", 0, "size=16k") < 0) {
		fprintf(stderr, "    skipped: mounting a 16 KiB tmpfs: %s\n", strerror(errno));
		return;
	}
	ht_write(filler, pad, sizeof(pad));	/* one page left for the log */
	memset(target, 'q', sizeof(target));
	memcpy(target, "/f1.txt?", 8);
	target[sizeof(target) - 1] = 0;
	ht_start(&s, root, "--log", logp, NULL);
	for (int i = 0; i < 20; i++) {		/* 22 KB of lines */
		char req[1200];

		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", target);
		EXPECT(ht_request(s.port, req, &r) == HT_OK && r.status == 200, "GET");
		ht_resp_free(&r);
	}
	usleep(1500000);			/* the sweep's flush: the disk fills */
	unlink(filler);
	for (int i = 0; i < 3; i++) {
		EXPECT(ht_get(s.port, "/f2.txt", "", &r) == HT_OK && r.status == 200, "GET");
		ht_resp_free(&r);
	}
	EXPECT(ht_stop(&s) == 0, "exit 0");
	log = ht_slurp(logp, &len);
	EXPECT(log && len > 0 && log[len - 1] == '\n', "the log ends with a whole line");
	/* the last three lines are the /f2.txt ones, whole: none glued to
	 * the cut /f1.txt?qqq... line */
	for (line = log ? log + len : NULL; line && line > log && whole < 4; ) {
		char *start = line - 1;

		while (start > log && start[-1] != '\n')
			start--;
		if (whole < 3)
			EXPECT(!strncmp(start, "127.0.0.1 - - [", 15) &&
			       strstr(start, "\"GET /f2.txt HTTP/1.1\" 200 ") &&
			       strstr(start, "\"GET /f2.txt HTTP/1.1\" 200 ") < line &&
			       !memchr(start, 'q', (size_t)(line - start)),
			       "line %d from the end: '%.80s'", whole + 1, start);
		whole++;
		line = start;
	}
	EXPECT(whole == 4, "a cut line before the three whole ones");
	free(log);
	umount2(mnt, MNT_DETACH);
}

int main(void)
{
	ht_init("httpd/test_resources", 300);
	setup();
	RUN(t_deleted_released);
	RUN(t_shrunk_entry);
	RUN(t_log_fifo_no_reader);
	RUN(t_log_fifo_stalled);
	RUN(t_log_pipelined);
	RUN(t_log_disk_full);
	RUN(t_lease_all);
	RUN(t_last_fd);
	RUN(t_small_nofile);
	RUN(t_tight_conns);
	RUN(t_nofile_threads);
	return ht_finish();
}
