/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd's access log: Common Log Format lines (--log FILE and
 * --log -) with each response's body size, reopened on SIGUSR1 or SIGHUP
 * after a rotation, escaped targets, IPv4 clients on a dual-stack socket,
 * and whole lines from four threads into one pipe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client.h"

static char *root;
static const char small[] = "small file\n";

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
	FATAL(ht_serving(&s, port), "-t 4 --log=-: port %d not served", port);
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

/* --log - onto a regular file a shell opened without O_APPEND (>): the
 * loops' writes at the file's position met at one offset and lines were
 * lost (374 of 14 400 with 4 threads); the server appends there. */
static void t_log_stdout_file(void)
{
	char *outf = ht_join(ht_scratch(), "stdout.log"), ps[16], fdinfo[64], *info, *fl;
	int port = ht_free_port();
	struct ht_server s;
	struct ht_resp r;

	snprintf(ps, sizeof(ps), "%d", port);
	memset(&s, 0, sizeof(s));
	fflush(NULL);
	s.pid = fork();
	FATAL(s.pid >= 0, "fork");
	if (s.pid == 0) {
		int o = open(outf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_WRONLY);

		dup2(o, 1);
		dup2(nul, 2);
		execl(ht_bin(), "uaio-httpd", "-q", "-t", "2", "-p", ps, "-a", "127.0.0.1",
		      "--log=-", root, (char *)NULL);
		_exit(127);
	}
	FATAL(ht_serving(&s, port), "-t 2 --log=- > FILE: port %d not served", port);
	snprintf(fdinfo, sizeof(fdinfo), "/proc/%d/fdinfo/1", (int)s.pid);
	info = ht_slurp(fdinfo, NULL);
	fl = info ? strstr(info, "flags:") : NULL;
	EXPECT(fl && (strtoul(fl + 6, NULL, 8) & O_APPEND),
	       "--log - onto a file opened without O_APPEND: it is not appended to (%s)",
	       info ? info : "no fdinfo");
	ht_get(port, "/small.txt", NULL, &r);
	ht_resp_free(&r);
	kill(s.pid, SIGTERM);
	FATAL(ht_wait(&s, 30000), "the server did not exit");
	free(info);
	info = ht_slurp(outf, NULL);
	EXPECT(info && strstr(info, "\"GET /small.txt HTTP/1.1\" 200 11"), "the request not logged: %s",
	       info ? info : "no file");
	free(info);
	free(outf);
}

/* A method llhttp does not know (501): its request line is logged, as
 * nginx logs it, quotes escaped; it was "-". Junk stays "-". */
static void t_log_unknown_method(void)
{
	static const struct { const char *req; int want; } reqs[] = {
		{ "BR\"EW /small.txt HTTP/1.1\r\nHost: t\r\n\r\n", 400 },
		{ "BREW /small.txt HTTP/1.1\r\nHost: t\r\n\r\n", 501 },
	};
	char *logf = ht_join(ht_scratch(), "method.log"), *text;
	struct ht_server s;
	struct ht_resp r;

	ht_start(&s, root, "--log", logf, NULL);
	for (int i = 0; i < 2; i++) {
		ht_request(s.port, reqs[i].req, &r);
		EXPECT_R(&r, r.rc == HT_OK && r.status == reqs[i].want, "%.6s...: %d expected",
			 reqs[i].req, reqs[i].want);
		ht_resp_free(&r);
	}
	ht_stop(&s);
	text = ht_slurp(logf, NULL);
	EXPECT(text && strstr(text, "\"BREW /small.txt HTTP/1.1\" 501 "),
	       "501: its request line not logged: %s", text ? text : "no log");
	EXPECT(text && strstr(text, "\"-\" 400 "), "400 for junk: not \"-\": %s", text ? text : "no log");
	free(text);
	free(logf);
}

int main(void)
{
	ht_init("httpd/test_log", 300);
	root = ht_mkdir("root");
	ht_put(root, "small.txt", small, strlen(small));
	RUN(t_log_v4_mapped);
	RUN(t_log_reopen);
	RUN(t_log_escape);
	RUN(t_log);
	RUN(t_log_pipe_threads);
	RUN(t_log_stdout_file);
	RUN(t_log_unknown_method);
	return ht_finish();
}
