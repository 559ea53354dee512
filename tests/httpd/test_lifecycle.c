/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd as a program: bad usage (exit 2, "uaio-httpd: ..." on
 * stderr), --help and --version (exit 0), -q and -p, SIGTERM and SIGINT
 * (exit 0, idle connections closed, a response in flight completed,
 * no new connections served), the access log in Common Log Format
 * (--log FILE and --log -).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <grp.h>
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
	free(file);
	free(missing);
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

/* Whether a new connection is still served (1), or refused/closed/
 * unanswered within 2 s (0). */
static int still_serving(int port)
{
	struct ht_conn *c = ht_connect_opt(port, 0);
	struct ht_resp r;
	int save = ht_timeout_ms, served;

	if (!c)
		return 0;
	ht_timeout_ms = 2000;
	ht_sends(c, "GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &r, 0);
	ht_timeout_ms = save;
	served = r.rc == HT_OK && r.status == 200;
	ht_resp_free(&r);
	ht_close(c);
	return served;
}

static void t_sigterm_inflight(int sig)
{
	struct ht_server s;
	struct ht_conn *c;
	struct ht_resp r;
	size_t extra = 0;
	int stopped = 0;

	ht_start(&s, root, NULL);
	c = ht_connect_opt(s.port, 65536);
	ht_sends(c, "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read_head(c, &r, 0);
	FATAL(r.rc == HT_OK && r.status == 200, "GET /big.bin: 200 needed");
	ht_read_body(c, &r, 1024 * 1024);
	kill(s.pid, sig);
	/* the response is stalled (not read): new connections must not be
	 * served any more once the signal is handled */
	for (int i = 0; i < 50 && !stopped; i++) {
		stopped = !still_serving(s.port);
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

/* --- the access log ----------------------------------------------------- */

struct logline { const char *req; int status; const char *sizes; };

static void check_log(const char *text, const struct logline *want, int n, const char *what)
{
	static const char *re =
		"^127\\.0\\.0\\.1 - - \\[([0-3][0-9])/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/"
		"([0-9]{4}):([0-2][0-9]):([0-5][0-9]):([0-6][0-9]) [+-][0-9]{4}\\] "
		"\"([^\"]*)\" ([0-9]{3}) ([0-9]+|-)$";
	regex_t rx;
	regmatch_t m[10];
	char *copy = strdup(text ? text : ""), *save = NULL, *line;
	int i = 0;

	FATAL(regcomp(&rx, re, REG_EXTENDED) == 0, "regcomp");
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
		char req[256], size[32];
		if (i >= n) {
			EXPECT(0, "%s: more lines than requests: '%s'", what, line);
			continue;
		}
		if (regexec(&rx, line, 10, m, 0)) {
			EXPECT(0, "%s: line %d is not CLF: '%s'", what, i + 1, line);
			continue;
		}
		snprintf(req, sizeof(req), "%.*s", (int)(m[7].rm_eo - m[7].rm_so), line + m[7].rm_so);
		snprintf(size, sizeof(size), "%.*s", (int)(m[9].rm_eo - m[9].rm_so), line + m[9].rm_so);
		EXPECT(!strcmp(req, want[i].req), "%s: line %d: request \"%s\" expected: '%s'", what, i + 1,
		       want[i].req, line);
		EXPECT(atoi(line + m[8].rm_so) == want[i].status, "%s: line %d: status %d expected: '%s'",
		       what, i + 1, want[i].status, line);
		if (want[i].sizes) {
			char alt[64], *tok, *sv = NULL;
			int found = 0;
			snprintf(alt, sizeof(alt), "%s", want[i].sizes);
			for (tok = strtok_r(alt, "|", &sv); tok; tok = strtok_r(NULL, "|", &sv))
				found |= !strcmp(tok, size);
			EXPECT(found, "%s: line %d: size %s expected: '%s'", what, i + 1, want[i].sizes, line);
		}
	}
	EXPECT(i == n, "%s: %d lines for %d requests", what, i, n);
	regfree(&rx);
	free(copy);
}

#define LOG_REQS 7

/* Each response's body size as the log must give it: what came. */
static void log_requests(int port, char sizes[LOG_REQS][24])
{
	static const char *reqs[LOG_REQS] = {
		"GET /small.txt HTTP/1.1\r\nHost: t\r\n\r\n",
		"GET /missing.txt HTTP/1.1\r\nHost: t\r\n\r\n",
		"HEAD /small.txt HTTP/1.1\r\nHost: t\r\n\r\n",
		"GET /small.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-2\r\n\r\n",
		"GET /small.txt HTTP/1.0\r\n\r\n",
		"POST /small.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
		"GET /small.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1,4-5\r\n\r\n",
	};
	for (size_t i = 0; i < LOG_REQS; i++) {
		struct ht_resp r;
		ht_request(port, reqs[i], &r);
		EXPECT_R(&r, r.rc == HT_OK, "request for the log");
		snprintf(sizes[i], 24, "%zu", r.body_len);
		ht_resp_free(&r);
	}
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

/* A rotated log: renamed away, then SIGUSR1 (logrotate's, or SIGHUP)
 * opens the file again; later lines go to the new file. The signal
 * stops nothing. */
static void t_log_reopen(void)
{
	struct ht_server s;
	struct ht_resp r;
	char *logf = ht_join(ht_scratch(), "rot.log"), *old = ht_join(ht_scratch(), "rot.log.1");
	char *text = NULL;
	int sigs[] = { SIGUSR1, SIGHUP };

	for (int k = 0; k < 2; k++) {
		unlink(logf);
		unlink(old);
		ht_start(&s, root, "--log", logf, NULL);
		EXPECT(ht_get(s.port, "/small.txt", "", &r) == HT_OK && r.status == 200, "GET");
		ht_resp_free(&r);
		/* the line is written (the log is flushed once a second) */
		for (int i = 0; i < 100; i++) {
			char *t = ht_slurp(logf, NULL);
			bool in = t && strstr(t, "/small.txt");

			free(t);
			if (in)
				break;
			usleep(50000);
		}
		EXPECT(rename(logf, old) == 0, "rename");
		EXPECT(kill(s.pid, sigs[k]) == 0, "kill");
		for (int i = 0; i < 100 && access(logf, F_OK); i++)
			usleep(50000);
		EXPECT(access(logf, F_OK) == 0, "signal %d: the log is not opened again", sigs[k]);
		EXPECT(ht_alive(&s), "signal %d stopped the server", sigs[k]);
		EXPECT(ht_get(s.port, "/missing.txt", "", &r) == HT_OK && r.status == 404, "GET");
		ht_resp_free(&r);
		EXPECT(ht_stop_sig(&s, SIGTERM) == 0, "exit 0 on SIGTERM");
		free(text);
		text = ht_slurp(logf, NULL);
		EXPECT(text && strstr(text, "/missing.txt") && !strstr(text, "/small.txt"),
		       "signal %d: the new log holds the later line only: '%.200s'", sigs[k],
		       text ? text : "");
	}
	free(text);
}

/* A request target with a quote and bytes above 0x7e is logged with
 * them as \xHH (nginx's way): one line, its fields apart. */
static void t_log_escape(void)
{
	struct ht_server s;
	struct ht_conn *c;
	struct ht_resp r;
	char *logf = ht_join(ht_scratch(), "esc.log"), *text;

	unlink(logf);
	ht_start(&s, root, "--log", logf, NULL);
	c = ht_connect(s.port);
	ht_sends(c, "GET /a\"b\xff HTTP/1.1\r\nHost: x\r\n\r\n");
	EXPECT(ht_read(c, &r, 0) == HT_OK, "a response");
	ht_resp_free(&r);
	ht_close(c);
	EXPECT(ht_stop_sig(&s, SIGTERM) == 0, "exit 0 on SIGTERM");
	text = ht_slurp(logf, NULL);
	EXPECT(text && strstr(text, "\"GET /a\\x22b\\xFF HTTP/1.1\" "),
	       "the target escaped in the log: '%.200s'", text ? text : "");
	free(text);
}

/* On the dual-stack socket (--addr ::) an IPv4 client is logged as
 * IPv4, as on an IPv4 socket, not as ::ffff:127.0.0.1. */
static void t_log_v4_mapped(void)
{
	struct ht_server s;
	struct ht_resp r;
	char *logf = ht_join(ht_scratch(), "mapped.log"), *text;
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd < 0) {
		fprintf(stderr, "    skipped: no IPv6 here\n");
		return;
	}
	close(fd);
	unlink(logf);
	ht_start(&s, root, "--addr", "::", "--log", logf, NULL);
	EXPECT(ht_get(s.port, "/small.txt", "", &r) == HT_OK && r.status == 200, "GET over IPv4");
	ht_resp_free(&r);
	EXPECT(ht_stop_sig(&s, SIGTERM) == 0, "exit 0 on SIGTERM");
	text = ht_slurp(logf, NULL);
	EXPECT(text && !strncmp(text, "127.0.0.1 - - [", 15),
	       "the IPv4 client's name: '%.80s'", text ? text : "");
	free(text);
}

static void t_log(void)
{
	/* the body's bytes, whatever made them: a file, an error page, a
	 * multipart body's part heads and data */
	char sizes[LOG_REQS][24];
	struct logline want[LOG_REQS] = {
		{ "GET /small.txt HTTP/1.1", 200, "11" },
		{ "GET /missing.txt HTTP/1.1", 404, sizes[1] },
		{ "HEAD /small.txt HTTP/1.1", 200, "-|0" },
		{ "GET /small.txt HTTP/1.1", 206, "3" },
		{ "GET /small.txt HTTP/1.0", 200, "11" },
		{ "POST /small.txt HTTP/1.1", 405, sizes[5] },
		{ "GET /small.txt HTTP/1.1", 206, sizes[6] },
	};
	struct ht_server s;
	char *logf = ht_join(ht_scratch(), "access.log"), *text;

	ht_start(&s, root, "--log", logf, NULL);
	log_requests(s.port, sizes);
	ht_stop(&s);
	EXPECT(atoi(sizes[1]) > 0 && atoi(sizes[6]) > 4, "error page and multipart bodies: %s, %s",
	       sizes[1], sizes[6]);
	text = ht_slurp(logf, NULL);
	EXPECT(text, "--log %s: no log file", logf);
	check_log(text, want, LOG_REQS, "--log FILE");
	free(text);

	ht_start(&s, root, "-l", "-", NULL);
	log_requests(s.port, sizes);
	ht_stop(&s);
	text = ht_slurp(s.out, NULL);
	check_log(text, want, LOG_REQS, "--log - (stdout)");
	free(text);

	/* --log with a file that cannot be opened: bad usage, or at least
	 * not a crash; a directory is never a log file */
	const char *a[] = { "", "--port", "0", "--addr", "127.0.0.1", "--log", root, root, NULL };
	struct ht_server b;
	ht_spawn(&b, a);
	if (ht_wait(&b, 10000))
		EXPECT(WIFEXITED(b.status) && WEXITSTATUS(b.status) != 0,
		       "--log DIRECTORY: a failure exit expected");
	else
		EXPECT(0, "--log DIRECTORY: still running after 10 s (a failure exit expected)");
	ht_kill(&b);
	free(logf);
}

/* Waits until port answers GET /small.txt (1), or s exits (0). */
static int serving(struct ht_server *s, int port)
{
	for (int i = 0; i < 300; i++) {
		if (still_serving(port))
			return 1;
		if (!ht_alive(s))
			return 0;
		usleep(100000);
	}
	return 0;
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
		FATAL(serving(&s, port), "restart %d: port %d not served", i, port);
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
	FATAL(serving(&s, port), "-t 2 -p %d: not served", port);
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

/* --threads 4 logging to a pipe a slow reader drains: every line whole.
 * A write of up to 64 KiB to a pipe is not atomic, and the loops' pieces
 * interleaved (4-10 torn lines in 250 here); lines dropped while both
 * buffers are busy are counted, and allowed. */
static void t_log_pipe_threads(void)
{
	int port = ht_free_port(), pfd[2], bad = 0, lines = 0;
	char ps[16], *buf = NULL, *line, *save;
	size_t len = 0, cap = 0;
	struct ht_server s;
	regex_t rx;
	pid_t kids[8];

	snprintf(ps, sizeof(ps), "%d", port);
	FATAL(pipe(pfd) == 0, "pipe");
	memset(&s, 0, sizeof(s));
	fflush(NULL);
	s.pid = fork();
	FATAL(s.pid >= 0, "fork");
	if (s.pid == 0) {
		int nul = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		dup2(nul, 2);
		close(pfd[0]);
		execl(ht_bin(), "uaio-httpd", "-q", "-t", "4", "-p", ps, "-a", "127.0.0.1",
		      "--log=-", root, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	FATAL(serving(&s, port), "-t 4 --log=-: port %d not served", port);
	for (int k = 0; k < 8; k++) {
		kids[k] = fork();
		FATAL(kids[k] >= 0, "fork");
		if (kids[k] == 0) {
			char path[1700];
			int n = snprintf(path, sizeof(path), "/small.txt?c%03dr", k);

			for (int i = 0; i < 200; i++) {
				struct ht_resp r;

				snprintf(path + n, sizeof(path) - (size_t)n, "%04d", i);
				memset(path + n + 4, 'x', 1500);
				path[n + 4 + 1500] = 0;
				ht_get(port, path, NULL, &r);
				ht_resp_free(&r);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < 8; k++)
		waitpid(kids[k], NULL, 0);
	kill(s.pid, SIGTERM);
	for (;;) {
		ssize_t r;

		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			FATAL((buf = realloc(buf, cap + 1)) != NULL, "realloc");
		}
		r = read(pfd[0], buf + len, cap - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(pfd[0]);
	FATAL(ht_wait(&s, 30000), "the server did not exit");
	buf = buf ? buf : calloc(1, 1);
	buf[len] = 0;
	FATAL(regcomp(&rx, "^[^ ]+ - - \\[[^]]+\\] \"GET /small\\.txt(\\?c[0-9]{3}r[0-9]{4}x{1500})? "
		      "HTTP/1\\.1\" 200 [0-9]+$", REG_EXTENDED | REG_NOSUB) == 0, "regcomp");
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lines++;
		if (regexec(&rx, line, 0, NULL, 0) != 0 && bad++ < 3)
			fprintf(stderr, "    torn: '%.120s'\n", line);
	}
	regfree(&rx);
	EXPECT(lines > 0 && bad == 0, "%d of %d log lines torn", bad, lines);
	free(buf);
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
	RUN(t_peer_closed);
	RUN(t_log_v4_mapped);
	RUN(t_log_reopen);
	RUN(t_log_escape);
	RUN(t_log);
	RUN(t_restart);
	RUN(t_port_taken);
	RUN(t_help_full);
	RUN(t_second_sigterm);
	RUN(t_dir_unsearchable);
	RUN(t_log_pipe_threads);
	return ht_finish();
}
