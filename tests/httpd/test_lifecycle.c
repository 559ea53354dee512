/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd as a program: bad usage (exit 2, "uaio-httpd: ..." on
 * stderr), --help and --version (exit 0), -q and -p, SIGTERM and SIGINT
 * (exit 0, idle connections closed, a response in flight completed,
 * no new connections served), restarts, unusable roots and ports. The
 * access log: test_log.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <grp.h>
#include <locale.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

#define BIG (64 * 1024 * 1024)
static char *root;
static unsigned char *big;
static const char small[] = "small file\n";

static void setup(void)
{
	root = ht_mkdir("root");
	big = ht_random(BIG, 3);
	ht_put(root, "big.bin", big, BIG);
	ht_put(root, "small.txt", small, strlen(small));
}

/* Runs the server with args; it must exit with `status` within 10 s. */
static void run_expect(const char *const *args, int status, const char *what)
{
	struct ht_server s;
	char *err;

	ht_spawn(&s, args);
	if (!ht_wait(&s, 10000)) {
		ht_kill(&s);
		EXPECT(0, "%s: still running after 10 s (exit %d expected)", what, status);
		return;
	}
	EXPECT(WIFEXITED(s.status) && WEXITSTATUS(s.status) == status, "%s: exit status %d expected, "
	       "got %s %d", what, status, WIFEXITED(s.status) ? "status" : "signal",
	       WIFEXITED(s.status) ? WEXITSTATUS(s.status) : WTERMSIG(s.status));
	err = ht_slurp(s.err, NULL);
	if (status == 2)
		EXPECT(err && !strncmp(err, "uaio-httpd: ", 12) && !strstr(err, "listening on"),
		       "%s: a 'uaio-httpd: ...' message on stderr expected, got '%.200s'", what,
		       err ? err : "");
	free(err);
}

static void t_usage(void)
{
	char *file = ht_join(root, "small.txt"), *missing = ht_join(root, "no-such-dir");
	const char *a1[] = { "", NULL };
	const char *a2[] = { "", missing, NULL };
	const char *a3[] = { "", "--disk-io", "bogus", root, NULL };
	const char *a4[] = { "", "--no-such-option", root, NULL };
	const char *a5[] = { "", "-p", "notaport", root, NULL };
	const char *a6[] = { "", "--port", "70000", root, NULL };
	const char *a7[] = { "", "--idle-timeout", "soon", root, NULL };
	const char *a8[] = { "", "-Z", root, NULL };
	const char *a9[] = { "", "--threads", "many", root, NULL };
	const char *a10[] = { "", file, NULL };
	const char *a11[] = { "", "-p", "0", "-a", "127.0.0.1", root, root, NULL };
	const char *a12[] = { "", "--disk-io=nope", root, NULL };
	const char *a13[] = { "", "--port", NULL };
	/* milliseconds past an unsigned: it wrapped to a 0.03 s timeout */
	const char *a14[] = { "", "--idle-timeout", "4294967.296", root, NULL };
	/* a minus after blanks: strtoul negated it, and " -0" was port 0,
	 * " -18446744073709551615" one thread */
	const char *a15[] = { "", "-p", " -0", "-a", "127.0.0.1", root, NULL };
	const char *a16[] = { "", "-p", "0", "-a", "127.0.0.1", "--threads",
			      " -18446744073709551615", root, NULL };

	run_expect(a1, 2, "no DIR");
	run_expect(a2, 2, "nonexistent DIR");
	run_expect(a3, 2, "--disk-io bogus");
	run_expect(a4, 2, "unknown long option");
	run_expect(a5, 2, "-p notaport");
	run_expect(a6, 2, "--port 70000");
	run_expect(a7, 2, "--idle-timeout soon");
	run_expect(a8, 2, "unknown short option -Z");
	run_expect(a9, 2, "--threads many");
	run_expect(a10, 2, "DIR is a regular file");
	run_expect(a11, 2, "two DIR operands");
	run_expect(a12, 2, "--disk-io=nope");
	run_expect(a13, 2, "--port without its value");
	run_expect(a14, 2, "--idle-timeout past 49 days");
	run_expect(a15, 2, "-p ' -0'");
	run_expect(a16, 2, "--threads ' -18446744073709551615'");
	/* DIR's name quoted as cp quotes it (it was put in bare quotes) */
	{
		const char *a17[] = { "", "no such dir's", NULL };
		struct ht_server s;
		char *err;

		ht_spawn(&s, a17);
		EXPECT(ht_wait(&s, 10000), "a missing DIR: the server ended");
		err = ht_slurp(s.err, NULL);
		EXPECT(err && !strcmp(err, "uaio-httpd: cannot serve \"no such dir's\": "
				      "No such file or directory\n"),
		       "a missing DIR with a quote in its name: got '%.200s'", err ? err : "");
		free(err);
	}
	/* printable as the user's locale prints it, as cp's: é stays é in
	 * UTF-8 (it was $'\303\251' whatever the locale) */
	{
		const char *a18[] = { "", "no such \303\251's", NULL };
		locale_t u8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
		struct ht_server s;
		char *err;

		if (u8) {
			char *was = getenv("LC_ALL") ? strdup(getenv("LC_ALL")) : NULL;

			freelocale(u8);
			setenv("LC_ALL", "C.UTF-8", 1);
			ht_spawn(&s, a18);
			if (was)
				setenv("LC_ALL", was, 1);
			else
				unsetenv("LC_ALL");
			free(was);
			EXPECT(ht_wait(&s, 10000), "a missing DIR: the server ended");
			err = ht_slurp(s.err, NULL);
			EXPECT(err && !strcmp(err, "uaio-httpd: cannot serve \"no such \303\251's\": "
					      "No such file or directory\n"),
			       "a missing UTF-8 DIR in C.UTF-8: got '%.200s'", err ? err : "");
			free(err);
		}
	}
	free(file);
	free(missing);
	/* A zero thread count is named as given (it was always '0'), and
	 * before a missing DIR, as any other invalid number. */
	{
		const char *a[] = { "", "--threads=00", NULL };
		struct ht_server s;
		char *err;

		ht_spawn(&s, a);
		if (!ht_wait(&s, 10000)) {
			ht_kill(&s);
			EXPECT(0, "--threads=00: still running after 10 s");
			return;
		}
		err = ht_slurp(s.err, NULL);
		EXPECT(WIFEXITED(s.status) && WEXITSTATUS(s.status) == 2 && err &&
		       strstr(err, "invalid number of threads: '00'\n"),
		       "--threads=00: 'invalid number of threads: '00'' expected, got '%.200s'",
		       err ? err : "");
		free(err);
	}
}

static void t_help_version(void)
{
	static const char *opt[] = { "--help", "--version" };
	for (int i = 0; i < 2; i++) {
		const char *a[] = { "", opt[i], NULL };
		struct ht_server s;
		char *out;
		ht_spawn(&s, a);
		if (!ht_wait(&s, 10000)) {
			ht_kill(&s);
			EXPECT(0, "%s: still running after 10 s", opt[i]);
			continue;
		}
		out = ht_slurp(s.out, NULL);
		EXPECT(WIFEXITED(s.status) && WEXITSTATUS(s.status) == 0, "%s: exit 0 expected", opt[i]);
		EXPECT(out && strstr(out, "uaio-httpd"), "%s: output on stdout naming uaio-httpd expected",
		       opt[i]);
		if (i == 0)
			EXPECT(out && strstr(out, "--follow-symlinks") && strstr(out, "--max-conns"),
			       "--help does not describe the options");
		free(out);
	}
}

static void t_quiet(void)
{
	struct ht_server s;
	struct ht_resp r;
	int port = ht_free_port(), up = 0;
	char ps[16], *err;
	const char *a[] = { "", "-q", "-p", ps, "-a", "127.0.0.1", root, NULL };

	snprintf(ps, sizeof(ps), "%d", port);
	ht_spawn(&s, a);
	for (int i = 0; i < 300 && !up; i++) {	/* nothing printed: poll the port */
		struct ht_conn *c = ht_connect_opt(port, 0);
		if (c) {
			up = 1;
			ht_close(c);
		} else {
			FATAL(ht_alive(&s), "-q -p %d: the server exited", port);
			usleep(100000);
		}
	}
	FATAL(up, "-q -p %d: nothing listening after 30 s", port);
	ht_get(port, "/small.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == strlen(small), "-q: GET /small.txt");
	ht_resp_free(&r);
	ht_stop(&s);
	err = ht_slurp(s.err, NULL);
	EXPECT(err && !*err, "-q: nothing on stderr expected, got '%.200s'", err ? err : "");
	free(err);
}

static void t_signals(void)
{
	struct ht_server s;
	struct ht_conn *c;
	struct ht_resp r;
	size_t extra = 0;

	ht_start(&s, root, NULL);
	ht_stop_sig(&s, SIGINT);

	/* an idle keep-alive connection does not keep the server alive
	 * (the default idle timeout is 60 s; ht_stop waits 30 s) */
	ht_start(&s, root, NULL);
	c = ht_connect(s.port);
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "GET before SIGTERM");
	ht_resp_free(&r);
	ht_stop(&s);
	EXPECT(ht_wait_close(c, 1000, &extra), "the idle connection is still open after the server exited");
	ht_close(c);

	/* a connection with half a request: also no reason to stay */
	ht_start(&s, root, NULL);
	c = ht_connect(s.port);
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHo");
	usleep(200000);
	ht_stop(&s);
	ht_close(c);
}

/* A server with a 64 MiB response in flight to a client that has read
 * the first bytes of it (a small receive buffer: the rest waits). */
static struct ht_conn *big_in_flight(struct ht_server *s, struct ht_resp *r, size_t first)
{
	struct ht_conn *c;

	ht_start(s, root, NULL);
	c = ht_connect_opt(s->port, 65536);
	ht_sends(c, "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read_head(c, r, 0);
	FATAL(r->rc == HT_OK && r->status == 200, "GET /big.bin: 200 needed");
	ht_read_body(c, r, first);
	return c;
}

static void t_sigterm_inflight(int sig)
{
	struct ht_server s;
	struct ht_conn *c;
	struct ht_resp r;
	size_t extra = 0;
	int stopped = 0;

	c = big_in_flight(&s, &r, 1024 * 1024);
	kill(s.pid, sig);
	/* the response is stalled (not read): new connections must not be
	 * served any more once the signal is handled */
	for (int i = 0; i < 50 && !stopped; i++) {
		stopped = !ht_still_serving(s.port);
		if (!stopped)
			usleep(200000);
	}
	EXPECT(stopped, "signal %d: new connections still served 10 s later", sig);
	EXPECT(ht_alive(&s), "signal %d: the server exited with a response in flight", sig);
	ht_read_body(c, &r, (size_t)-1);
	EXPECT_R(&r, r.rc == HT_OK && r.body_len == BIG && !memcmp(r.body, big, BIG),
		 "signal %d with a 64 MiB response in flight: the response must complete", sig);
	ht_resp_free(&r);
	EXPECT(ht_wait_close(c, 30000, &extra), "signal %d: connection still open 30 s after its "
	       "response completed", sig);
	ht_close(c);
	ht_stop_sig(&s, 0);	/* just wait: exit status 0 expected */
}

/* A client that half-closes after its request gets the response and
 * then the server's close; one that sends half a request and goes away
 * frees its connection. Not by a timeout: those are set far away here. */
static void t_peer_closed(void)
{
	struct ht_server s;
	struct ht_resp r;
	struct ht_conn *c;
	int base, n = -1;

	ht_start(&s, root, "--idle-timeout", "600", "--header-timeout", "600", NULL);
	c = ht_connect(s.port);
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n");
	EXPECT(shutdown(c->fd, SHUT_WR) == 0, "shutdown");
	EXPECT(ht_read(c, &r, 0) == HT_OK && r.status == 200, "half-closed client: 200 expected");
	EXPECT(ht_wait_close(c, 20000, NULL) == 1,
	       "half-closed client: the server did not close after the response");
	ht_resp_free(&r);
	ht_close(c);

	base = ht_count_fds(s.pid);
	for (int i = 0; i < 20; i++) {
		c = ht_connect(s.port);
		ht_sends(c, "GET /sm");
		ht_close(c);
	}
	for (int i = 0; i < 200 && (n = ht_count_fds(s.pid)) > base; i++)
		usleep(100000);
	EXPECT(n <= base, "20 clients gone mid-request: %d descriptors, %d before", n, base);
	EXPECT(ht_stop_sig(&s, SIGTERM) == 0, "exit 0 on SIGTERM");
}

/* A server stopped by SIGTERM has let its port go when its process is
 * reaped: one started at once on that port serves (io_uring freed the
 * listening socket with the ring, some ms after exit: the new one found
 * the port in use in 9 of 10 tries). */
static void t_restart(void)
{
	int port = ht_free_port();
	char ps[16];
	const char *a[] = { "", "-q", "-p", ps, "-a", "127.0.0.1", root, NULL };

	snprintf(ps, sizeof(ps), "%d", port);
	for (int i = 0; i < 3; i++) {
		struct ht_server s;

		ht_spawn(&s, a);
		FATAL(ht_serving(&s, port), "restart %d: port %d not served", i, port);
		ht_stop(&s);
	}
}

/* --threads N shares the port among its own loops, never with another
 * server already on it (SO_REUSEPORT would have joined its group). */
static void t_port_taken(void)
{
	int port = ht_free_port();
	char ps[16];
	const char *a[] = { "", "-q", "-t", "2", "-p", ps, "-a", "127.0.0.1", root, NULL };
	struct ht_server s;

	snprintf(ps, sizeof(ps), "%d", port);
	ht_spawn(&s, a);
	FATAL(ht_serving(&s, port), "-t 2 -p %d: not served", port);
	run_expect(a, 1, "a second -t 2 server on a port in use");
	ht_stop(&s);
}

/* --help and --version that cannot be written, to /dev/full or to a
 * closed stdout (>&-, not taken for /dev/null): 'write error', exit 1,
 * as GNU's. */
static void t_help_full(void)
{
	static const char *opt[] = { "--help", "--version" };

	for (int i = 0; i < 4; i++) {
		bool closed = i >= 2;
		int st;
		pid_t p = fork();

		FATAL(p >= 0, "fork");
		if (p == 0) {
			int fd = open("/dev/full", O_WRONLY);

			if (fd < 0 || dup2(fd, 1) < 0 || (closed && close(1) < 0))
				_exit(126);
			execl(ht_bin(), "uaio-httpd", opt[i % 2], (char *)NULL);
			_exit(127);
		}
		FATAL(waitpid(p, &st, 0) == p, "waitpid");
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 1,
		       "%s %s: exit 1 expected, got %d", opt[i % 2],
		       closed ? ">&-" : ">/dev/full", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	/* Into a pipe nobody reads (SIGPIPE at its default): death by
	 * SIGPIPE, no message, as GNU's (was 'write error: Broken pipe'). */
	for (int i = 0; i < 2; i++) {
		int st, pfd[2];
		pid_t p;

		FATAL(pipe(pfd) == 0, "pipe");
		close(pfd[0]);
		p = fork();
		FATAL(p >= 0, "fork");
		if (p == 0) {
			signal(SIGPIPE, SIG_DFL);
			if (dup2(pfd[1], 1) < 0)
				_exit(126);
			execl(ht_bin(), "uaio-httpd", opt[i], (char *)NULL);
			_exit(127);
		}
		close(pfd[1]);
		FATAL(waitpid(p, &st, 0) == p, "waitpid");
		EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE,
		       "%s | (no reader): death by SIGPIPE expected, got %s %d", opt[i],
		       WIFEXITED(st) ? "exit" : "signal",
		       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	}
	/* The usage line names the program as invoked, as GNU's do. */
	{
		char *out = ht_join(root, "help.out"), *text;
		int st, fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		pid_t p;

		FATAL(fd >= 0, "open %s", out);
		p = fork();
		FATAL(p >= 0, "fork");
		if (p == 0) {
			if (dup2(fd, 1) < 0)
				_exit(126);
			execl(ht_bin(), "my-httpd", "--help", (char *)NULL);
			_exit(127);
		}
		close(fd);
		FATAL(waitpid(p, &st, 0) == p, "waitpid");
		text = ht_slurp(out, NULL);
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0 && text &&
		       !strncmp(text, "Usage: my-httpd [OPTION]... DIR\n", 32),
		       "--help as my-httpd: 'Usage: my-httpd ...' expected, got '%.60s'",
		       text ? text : "");
		free(text);
		unlink(out);
		free(out);
	}
}

/* A second SIGTERM while a response holds the stop ends the server at
 * once, by the signal (it was ignored: only SIGKILL helped). */
static void t_second_sigterm(void)
{
	struct ht_server s;
	struct ht_conn *c;

	ht_start(&s, root, "--header-timeout", "300", NULL);
	c = ht_connect(s.port);
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHo");	/* holds the drain */
	usleep(200000);
	kill(s.pid, SIGTERM);
	usleep(300000);
	FATAL(ht_alive(&s), "the half request did not hold the stop");
	kill(s.pid, SIGTERM);
	if (!ht_wait(&s, 10000)) {
		ht_kill(&s);
		EXPECT(0, "still running 10 s after a second SIGTERM");
	} else {
		EXPECT(WIFSIGNALED(s.status) && WTERMSIG(s.status) == SIGTERM,
		       "a second SIGTERM: death by SIGTERM expected");
	}
	ht_close(c);
}

/* A DIR that files cannot be opened under is refused at start (O_PATH
 * needs no permission: it was served with 403 for everything). Run as
 * nobody; root may search any directory. */
static void t_dir_unsearchable(void)
{
	char top[] = "/tmp/uaio-httpd-perm-XXXXXX", dir[64];
	int st;
	pid_t p;

	FATAL(mkdtemp(top) && chmod(top, 0755) == 0, "mkdtemp");
	snprintf(dir, sizeof(dir), "%s/noexec", top);
	FATAL(mkdir(dir, 0644) == 0 && chmod(dir, 0644) == 0, "mkdir");
	p = fork();
	FATAL(p >= 0, "fork");
	if (p == 0) {
		int nul = open("/dev/null", O_WRONLY);

		dup2(nul, 1);
		dup2(nul, 2);
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(77);
		execl(ht_bin(), "uaio-httpd", "-q", "-p", "0", dir, (char *)NULL);
		_exit(127);
	}
	FATAL(waitpid(p, &st, 0) == p, "waitpid");
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 77))
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 2,
		       "a DIR without search permission: exit 2 expected, got %d",
		       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	rmdir(dir);
	rmdir(top);
}

/* SIGTERM with a response in flight, then a pipelined request from the
 * client (the response did not say close): the response still arrives
 * whole; a plain close with the request unread would reset its tail. */
static void t_sigterm_pipelined(void)
{
	struct ht_server s;
	struct ht_conn *c;
	struct ht_resp r;

	c = big_in_flight(&s, &r, 64 * 1024);
	kill(s.pid, SIGTERM);
	usleep(200000);
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read_body(c, &r, (size_t)-1);
	EXPECT_R(&r, r.rc == HT_OK && r.body_len == BIG && !memcmp(r.body, big, BIG),
		 "SIGTERM, then a pipelined request: %zu of %d bytes of the response in flight",
		 r.body_len, BIG);
	ht_resp_free(&r);
	ht_close(c);
	EXPECT(ht_stop_sig(&s, 0) == 0, "exit 0 after SIGTERM");
}

/* A stop that lasts longer than a lingering close (a request head that
 * times out 7 s after SIGTERM): its 408 is still logged (each sweep's
 * flush was cancelled once the stop had lasted 5 s). */
static void t_sigterm_log_slow(void)
{
	char *logf = ht_join(ht_scratch(), "stop.log"), *text;
	struct ht_server s;
	struct ht_conn *c;
	size_t extra = 0;

	unlink(logf);
	ht_start(&s, root, "--header-timeout", "7", "--log", logf, NULL);
	c = ht_connect(s.port);
	ht_sends(c, "GET / HTTP/1.1\r\nHo");
	usleep(100000);
	kill(s.pid, SIGTERM);
	EXPECT(ht_wait_close(c, 30000, &extra), "the slow head was not ended");
	ht_close(c);
	EXPECT(ht_stop_sig(&s, 0) == 0, "exit 0 after SIGTERM");
	text = ht_slurp(logf, NULL);
	EXPECT(text && strstr(text, "\"-\" 408 0\n"), "a 408 made 7 s into a stop is not in "
	       "the log: '%.300s'", text ? text : "(no log)");
	free(text);
}

/* The access log where its lines cannot go: --log - (or /dev/stdout)
 * with standard output closed is refused at start (exit 1; its lines went to the
 * /dev/null that holds fd 1, without a word); a usage error leaves no
 * log file behind (it was made before the address was resolved). */
static void t_log_nowhere(void)
{
	char cmd[8192], *errf = ht_join(ht_scratch(), "nowhere.err");
	char *logf = ht_join(ht_scratch(), "never.log"), *err;
	const char *bad_addr[] = { "", "-p", "0", "-a", "", "--log", logf, root, NULL };
	int st;

	/* by its name too */
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "/dev/stdout" : "-";

		snprintf(cmd, sizeof(cmd),
			 "exec timeout 20 '%s' -p 0 -a 127.0.0.1 --log %s '%s' >&- 2>'%s'",
			 ht_bin(), name, root, errf);
		st = system(cmd);
		err = ht_slurp(errf, NULL);
		EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 1 && err &&
		       strstr(err, ": the access log: standard output: Bad file descriptor\n"),
		       "--log %s with stdout closed: exit 1 and a message expected, got %#x '%.200s'",
		       name, st, err ? err : "");
		free(err);
	}

	unlink(logf);
	run_expect(bad_addr, 2, "-a '' --log FILE");
	EXPECT(access(logf, F_OK) < 0 && errno == ENOENT, "a usage error left the log file");

	free(errf);
	free(logf);
}

int main(void)
{
	ht_init("httpd/test_lifecycle", 550);
	setup();
	RUN(t_usage);
	RUN(t_help_version);
	RUN(t_quiet);
	RUN(t_signals);
	fprintf(stderr, "  t_sigterm_inflight (SIGTERM) ...\n");
	t_sigterm_inflight(SIGTERM);
	fprintf(stderr, "  t_sigterm_inflight (SIGINT) ...\n");
	t_sigterm_inflight(SIGINT);
	RUN(t_sigterm_pipelined);
	RUN(t_sigterm_log_slow);
	RUN(t_log_nowhere);
	RUN(t_peer_closed);
	RUN(t_restart);
	RUN(t_port_taken);
	RUN(t_help_full);
	RUN(t_second_sigterm);
	RUN(t_dir_unsearchable);
	return ht_finish();
}
