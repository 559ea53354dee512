/* SPDX-License-Identifier: MIT */
/* Test client for uaio-httpd (see client.h), the process half: the
 * scratch directory, files, the server as a child, failure reports. */
#define _GNU_SOURCE
#include "client.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef UAIO_HTTPD_BIN
#define UAIO_HTTPD_BIN ""
#endif

int ht_failures;
int ht_timeout_ms = 30000;
static char scratch[64];
static pid_t servers[64];
static int nservers;
static const char *prog_name = "httpd";

/* ---------------------------------------------------------------------- */

static void put_escaped(const char *s, size_t n)
{
	for (size_t i = 0; i < n && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '\r') fputs("\\r", stderr);
		else if (ch == '\n') fputs("\\n", stderr);
		else if (ch < 32 || ch > 126) fprintf(stderr, "\\x%02x", ch);
		else fputc(ch, stderr);
	}
}

void ht_fail(const char *file, int line, const char *cond, const char *msg,
	     const struct ht_resp *r)
{
	ht_failures++;
	fprintf(stderr, "%s:%d: FAIL: %s\n", file, line, cond);
	if (msg)
		fprintf(stderr, "    %s\n", msg);
	if (r) {
		fputs("    sent: ", stderr);
		put_escaped(r->req, 300);
		fputs("\n    got:  ", stderr);
		if (r->head)
			put_escaped(r->head, 600);
		else
			fputs("(no response head)", stderr);
		fprintf(stderr, "\n    read result %d%s%s, body %zu bytes\n", r->rc,
			r->why[0] ? ": " : "", r->why, r->body_len);
	}
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	if (flag == FTW_DP)
		chmod(p, 0700);
	remove(p);
	return 0;
}

static void kill_servers(void)
{
	for (int i = 0; i < nservers; i++)
		if (servers[i] > 0) {
			kill(servers[i], SIGKILL);
			waitpid(servers[i], NULL, 0);
			servers[i] = 0;
		}
}

static void at_exit(void)
{
	kill_servers();
	if (scratch[0] && !getenv("UAIO_HTTPD_TEST_KEEP"))
		nftw(scratch, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

static void on_alarm(int sig)
{
	static const char m[] = "watchdog: test hung, giving up\n";
	(void)sig;
	for (int i = 0; i < nservers; i++)
		if (servers[i] > 0)
			kill(servers[i], SIGKILL);
	if (write(2, m, sizeof(m) - 1) < 0) {}
	exit(T_EXIT_FAIL);
}

const char *ht_bin(void)
{
	const char *e = getenv("UAIO_HTTPD");
	return e && *e ? e : UAIO_HTTPD_BIN;
}

void ht_init(const char *prog, unsigned secs)
{
	const char *b = ht_bin(), *be = getenv("UAIO_BACKEND");
	char msg[4200];

	prog_name = prog;
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (!*b || access(b, X_OK) < 0) {
		snprintf(msg, sizeof(msg), "no uaio-httpd at '%s'", b);
		SKIP(msg);
	}
	fprintf(stderr, "%s: server %s, UAIO_BACKEND=%s\n", prog, b, be ? be : "");
	signal(SIGPIPE, SIG_IGN);
	signal(SIGALRM, on_alarm);
	alarm(secs);
	strcpy(scratch, "/tmp/uaio-httpd-test-XXXXXX");
	FATAL(mkdtemp(scratch), "mkdtemp");
	chmod(scratch, 0755);
	atexit(at_exit);
}

int ht_finish(void)
{
	if (ht_failures)
		fprintf(stderr, "%s: %d check(s) failed\n", prog_name, ht_failures);
	else
		fprintf(stderr, "%s: all checks passed\n", prog_name);
	return ht_failures ? T_EXIT_FAIL : T_EXIT_PASS;
}

int ht_selected(const char *name)
{
	const char *only = getenv("UAIO_HTTPD_TEST_ONLY"), *p;
	size_t n = strlen(name);

	if (!only || !*only)
		return 1;
	for (p = only; (p = strstr(p, name)); p += n)
		if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
			return 1;
	return 0;
}

const char *ht_scratch(void) { return scratch; }

char *ht_join(const char *dir, const char *name)
{
	static char **kept;	/* paths stay reachable: not leaks if not freed */
	static size_t n, cap;
	char *p;

	FATAL(asprintf(&p, "%s/%s", dir, name) > 0, "asprintf");
	if (n == cap)
		FATAL(kept = realloc(kept, (cap = cap ? cap * 2 : 64) * sizeof(*kept)), "realloc");
	kept[n++] = p;
	return p;
}

char *ht_mkdir(const char *rel)
{
	char *p = ht_join(scratch, rel);
	FATAL(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s", p);
	return p;
}

void ht_write(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	const char *p = data;

	FATAL(fd >= 0, "open %s", path);
	while (len) {
		ssize_t w = write(fd, p, len);
		FATAL(w > 0, "write %s", path);
		p += w;
		len -= (size_t)w;
	}
	FATAL(close(fd) == 0, "close %s", path);
}

void ht_put(const char *dir, const char *name, const void *data, size_t len)
{
	char *p = ht_join(dir, name);

	ht_write(p, data, len);
	free(p);
}

void ht_put_hole(const char *dir, const char *name, off_t size)
{
	char *p = ht_join(dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	FATAL(fd >= 0 && ftruncate(fd, size) == 0, "%s", p);
	close(fd);
	free(p);
}

unsigned char *ht_random(size_t len, unsigned long long seed)
{
	unsigned char *b = malloc(len + 8);
	unsigned long long x = seed * 0x9E3779B97F4A7C15ull + 1;

	FATAL(b, "malloc %zu", len);
	for (size_t i = 0; i < len; i += 8) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		memcpy(b + i, &x, 8);
	}
	return b;
}

char *ht_slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	size_t n = 0, cap = 4096;
	char *b;

	if (fd < 0)
		return NULL;
	b = malloc(cap + 1);
	for (;;) {
		ssize_t r;
		if (n == cap)
			b = realloc(b, (cap *= 2) + 1);
		r = read(fd, b + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = 0;
	if (len)
		*len = n;
	return b;
}

time_t ht_mtime(const char *path)
{
	struct stat st;
	FATAL(stat(path, &st) == 0, "stat %s", path);
	return st.st_mtime;
}

/* --- the server process ------------------------------------------------ */

rlim_t ht_spawn_nofile;

void ht_spawn(struct ht_server *s, const char *const *argv)
{
	static int n;
	int argc = 0;
	const char *args[64];

	memset(s, 0, sizeof(*s));
	n++;
	/* by pid too: a forked test's servers count from its parent's n */
	snprintf(s->err, sizeof(s->err), "%s/server%d-%d.err", scratch, (int)getpid(), n);
	snprintf(s->out, sizeof(s->out), "%s/server%d-%d.out", scratch, (int)getpid(), n);
	args[argc++] = "uaio-httpd";	/* as if run from PATH, like GNU tools in tests */
	for (int i = 1; argv[i] && argc < 63; i++)
		args[argc++] = argv[i];
	args[argc] = NULL;
	fflush(NULL);
	s->pid = fork();
	FATAL(s->pid >= 0, "fork");
	if (s->pid == 0) {
		int e = open(s->err, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		int o = open(s->out, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
		int nul = open("/dev/null", O_RDONLY);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGALRM, SIG_DFL);
		if (e < 0 || o < 0 || nul < 0)
			_exit(126);
		dup2(nul, 0);
		dup2(o, 1);
		dup2(e, 2);
		/* only 0-2: a descriptor the test inherited (above its
		 * RLIMIT_NOFILE, say) would skew the server's count */
		close_range(3, ~0u, 0);
		if (ht_spawn_nofile) {
			struct rlimit rl = { ht_spawn_nofile, ht_spawn_nofile };

			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				_exit(126);
		}
		/* memory malloc hands out is never zero, as in a server that
		 * has run a while: a field left unset shows at once */
		setenv("MALLOC_PERTURB_", "85", 0);
		execv(ht_bin(), (char *const *)args);
		_exit(127);
	}
	if (nservers < 64)
		servers[nservers++] = s->pid;
}

static void forget(pid_t pid)
{
	for (int i = 0; i < nservers; i++)
		if (servers[i] == pid)
			servers[i] = 0;
}

int ht_wait(struct ht_server *s, int ms)
{
	for (int i = 0; !s->exited; i++) {
		pid_t p = waitpid(s->pid, &s->status, WNOHANG);
		if (p == s->pid) {
			s->exited = 1;
			forget(s->pid);
			break;
		}
		if (i * 10 >= ms)
			return 0;
		usleep(10000);
	}
	return 1;
}

int ht_alive(struct ht_server *s)
{
	return !ht_wait(s, 0);
}

void ht_kill(struct ht_server *s)
{
	if (!s->exited) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &s->status, 0);
		s->exited = 1;
		forget(s->pid);
	}
}

static void show_stderr(struct ht_server *s, int from_line2)
{
	char *e = ht_slurp(s->err, NULL), *p;
	if (!e)
		return;
	p = e;
	if (from_line2) {
		p = strchr(e, '\n');
		p = p ? p + 1 : e + strlen(e);
	}
	if (*p)
		fprintf(stderr, "    server stderr:\n%s%s", p,
			p[strlen(p) - 1] == '\n' ? "" : "\n");
	free(e);
}

void ht_startv(struct ht_server *s, const char *dir, const char *const *opts)
{
	const char *argv[64] = { "uaio-httpd", "--port", "0", "--addr", "127.0.0.1" };
	int argc = 5, i;
	char expect[128];

	for (i = 0; opts && opts[i] && argc < 62; i++)
		argv[argc++] = opts[i];
	argv[argc++] = dir;
	argv[argc] = NULL;
	ht_spawn(s, argv);
	for (i = 0; i < 3000; i++) {	/* 30 s: a sanitizer build starts slowly */
		char *e = ht_slurp(s->err, NULL), *nl;
		int port = 0;
		if (e && (nl = strchr(e, '\n'))) {
			*nl = 0;
			if (sscanf(e, "uaio-httpd: listening on http://127.0.0.1:%d/", &port) == 1)
				snprintf(expect, sizeof(expect),
					 "uaio-httpd: listening on http://127.0.0.1:%d/", port);
			else if (sscanf(e, "uaio-httpd: listening on http://[::]:%d/", &port) == 1)
				snprintf(expect, sizeof(expect),	/* --addr :: */
					 "uaio-httpd: listening on http://[::]:%d/", port);
			if (port <= 0 || port > 65535 || strcmp(e, expect)) {
				fprintf(stderr, "    first stderr line: '%s'\n", e);
				ht_kill(s);
				FATAL(0, "server did not print 'uaio-httpd: listening on http://127.0.0.1:PORT/'");
			}
			s->port = port;
			free(e);
			return;
		}
		free(e);
		if (ht_wait(s, 0)) {
			show_stderr(s, 0);
			FATAL(0, "server exited at start (status %#x)", s->status);
		}
		usleep(10000);
	}
	ht_kill(s);
	FATAL(0, "no listening line within 30 s");
}

void ht_start(struct ht_server *s, const char *dir, ...)
{
	const char *opts[48];
	int n = 0;
	va_list ap;

	va_start(ap, dir);
	while (n < 47 && (opts[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	opts[n] = NULL;
	ht_startv(s, dir, opts);
}

/* What a hung server is doing: its descriptors by kind, each thread's
 * name, state and kernel wait channel. */
static void diag(pid_t pid)
{
	char p[128], link[256], *t;
	int sock = 0, other = 0;
	DIR *d;
	struct dirent *e;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	if ((d = opendir(p))) {
		while ((e = readdir(d))) {
			char fp[400];
			ssize_t n;
			if (e->d_name[0] == '.')
				continue;
			snprintf(fp, sizeof(fp), "%s/%s", p, e->d_name);
			n = readlink(fp, link, sizeof(link) - 1);
			link[n > 0 ? n : 0] = 0;
			if (!strncmp(link, "socket:", 7))
				sock++;
			else
				other++;
		}
		closedir(d);
	}
	fprintf(stderr, "    server %d: %d sockets, %d other descriptors open\n", (int)pid, sock, other);
	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	if (!(d = opendir(p)))
		return;
	while ((e = readdir(d))) {
		char fp[400], *comm, *wchan, *stat;
		if (e->d_name[0] == '.')
			continue;
		snprintf(fp, sizeof(fp), "%s/%s/comm", p, e->d_name);
		comm = ht_slurp(fp, NULL);
		snprintf(fp, sizeof(fp), "%s/%s/wchan", p, e->d_name);
		wchan = ht_slurp(fp, NULL);
		snprintf(fp, sizeof(fp), "%s/%s/stat", p, e->d_name);
		stat = ht_slurp(fp, NULL);
		t = stat ? strrchr(stat, ')') : NULL;
		if (comm && (t = strchr(comm, '\n')))
			*t = 0;
		t = stat ? strrchr(stat, ')') : NULL;
		fprintf(stderr, "    thread %s (%s): state %c, wchan %s\n", e->d_name, comm ? comm : "?",
			t && t[1] ? t[2] : '?', wchan && *wchan ? wchan : "-");
		free(comm);
		free(wchan);
		free(stat);
	}
	closedir(d);
}

int ht_stop_sig(struct ht_server *s, int sig)
{
	if (!s->exited)
		kill(s->pid, sig);
	if (!ht_wait(s, 30000)) {
		diag(s->pid);
		ht_kill(s);
		show_stderr(s, 1);
		EXPECT(0, "server still running 30 s after signal %d", sig);
		return -1;
	}
	show_stderr(s, 1);
	EXPECT(WIFEXITED(s->status) && WEXITSTATUS(s->status) == 0,
	       "server exit after signal %d: %s %d", sig,
	       WIFEXITED(s->status) ? "exit status" : "killed by signal",
	       WIFEXITED(s->status) ? WEXITSTATUS(s->status) : WTERMSIG(s->status));
	return WIFEXITED(s->status) && WEXITSTATUS(s->status) == 0 ? 0 : -1;
}


int ht_count_fds(pid_t pid)
{
	char p[64];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	if (!(d = opendir(p)))
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

long ht_raise_nofile(long want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	if (rl.rlim_cur < (rlim_t)want) {
		rl.rlim_cur = (rlim_t)want;
		if (rl.rlim_max < (rlim_t)want)
			rl.rlim_max = (rlim_t)want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			getrlimit(RLIMIT_NOFILE, &rl);
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return (long)rl.rlim_cur;
}

int ht_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	FATAL(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	      getsockname(fd, (struct sockaddr *)&a, &l) == 0, "bind port 0");
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}
