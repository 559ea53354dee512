/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd DIR: options, the listening sockets, one thread per loop,
 * and signals (the main thread only waits for them).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include "httpd.h"
#include "tool_common.h"
#include "tool_quote.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: %s [OPTION]... DIR\n", HTTPD_ME);	/* as invoked, as GNU's */
	fputs(
"Serve the files under DIR over HTTP/1.1 (GET and HEAD), never blocking on\n"
"the disk: opens and first reads are lazy asynchronous calls, bodies go out\n"
"by in-kernel flows.\n"
"\n"
"  -p, --port=N            listen on port N (default 8080; 0: any free port)\n"
"  -a, --addr=ADDR         listen on ADDR only (default: all addresses)\n"
"  -t, --threads=N         N independent loops sharing the port (default 1)\n"
"  -l, --log=FILE          access log in Common Log Format ('-': stdout)\n"
"  -d, --disk-io=MODE      laio (default), blocking or threads\n"
"      --list              list directories that have no index.html\n"
"      --follow-symlinks   serve symlinks that lead out of DIR\n"
"      --max-conns=N       connections per thread; more get 503\n"
"      --cache=N           open files kept per thread (default 4096; 0: none)\n"
"      --idle-timeout=SEC  close idle keep-alive connections (default 60)\n"
"      --header-timeout=SEC  time allowed for a request head (default 10)\n"
"      --send-timeout=SEC  time allowed without send progress (default 60)\n"
"  -q, --quiet             do not print the listening address\n"
"      --help              display this help and exit\n"
"      --version           output version information and exit\n"
"\n"
"SIGTERM or SIGINT: stop accepting, finish the responses in flight, exit 0.\n"
"SIGHUP or SIGUSR1: open the log file again (after a rotation).\n", f);
}

/* "prog: cannot WHAT NAME: why" (errno), NAME quoted as cp's; status. */
static int cannot(const char *what, const char *name, int status)
{
	int err = errno;
	/* printable as the user's locale prints it (é stays é in UTF-8, as
	 * cp's): its character type for the quoting only, the server's
	 * parsing and dates stay C's */
	locale_t loc = newlocale(LC_CTYPE_MASK, "", (locale_t)0);
	locale_t old = loc ? uselocale(loc) : (locale_t)0;
	char *qn = tool_quote(name, TOOL_QUOTE_ALWAYS);

	if (loc) {
		uselocale(old);
		freelocale(loc);
	}
	fprintf(stderr, "%s: cannot %s %s: %s\n", HTTPD_ME, what, qn ? qn : name,
		strerror(err));
	free(qn);
	return status;
}

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", HTTPD_ME);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", HTTPD_ME);
	exit(2);
}

static unsigned number(const char *s, const char *what, unsigned long max)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	/* strtoul skips blanks and negates a minus after them: " -1" wraps */
	if (errno || end == s || *end || s[strspn(s, " \t\n\v\f\r")] == '-' || v > max) {
		char m[96];

		snprintf(m, sizeof(m), "invalid %s: '%%s'", what);
		die_usage(m, s);
	}
	return (unsigned)v;
}

static unsigned seconds_ms(const char *s, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* Kept in milliseconds in an unsigned: about 49 days at most. */
	if (errno || end == s || *end || !(v > 0) || v > UINT_MAX / 1000) {
		char m[96];

		snprintf(m, sizeof(m), "invalid %s: '%%s'", what);
		die_usage(m, s);
	}
	return (unsigned)(v * 1000 + 0.5) ? (unsigned)(v * 1000 + 0.5) : 1;
}

/* Whether addr is free for a socket of our own alone: a socket with
 * SO_REUSEPORT would join another server's group on the port (of the
 * same user) and take part of its connections. */
/* A socket for a, bound to its address, or -1 (*err set). */
static int bound(const struct addrinfo *a, bool reuseport, int *err)
{
	int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0), one = 1, zero = 0;

	if (fd < 0) {
		*err = errno;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (reuseport)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (a->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, a->ai_addr, a->ai_addrlen) < 0) {
		*err = errno;
		close(fd);
		return -1;
	}
	return fd;
}

static bool port_free(const struct addrinfo *a, int *err)
{
	int fd = bound(a, false, err);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* A listening socket on addr:port; *port gets the port when it was 0.
 * first: the first of --threads sockets sharing the port, which must
 * find it free. */
static int listen_on(const char *addr, int *port, bool reuseport, bool first,
		     char *shown, size_t shown_sz)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai, *a;
	char ps[16];
	int fd = -1, err = 0;

	snprintf(ps, sizeof(ps), "%d", *port);
	if ((err = getaddrinfo(addr, ps, &hints, &ai))) {
		char *qa = tool_quote(addr ? addr : "*", TOOL_QUOTE_ALWAYS);

		fprintf(stderr, "%s: cannot resolve %s: %s\n", HTTPD_ME, qa ? qa : addr,
			gai_strerror(err));
		free(qa);
		exit(2);
	}
	/* Without --addr: the IPv6 wildcard takes IPv4 too, where it exists. */
	for (int pass = 0; pass < 2 && fd < 0; pass++)
		for (a = ai; a; a = a->ai_next) {
			if (!addr && (a->ai_family == AF_INET6) != (pass == 0))
				continue;
			if (reuseport && first && *port && !port_free(a, &err))
				continue;
			if ((fd = bound(a, reuseport, &err)) < 0)
				continue;
			if (listen(fd, 4096) == 0)
				break;
			err = errno;
			close(fd);
			fd = -1;
		}
	if (fd >= 0) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char host[INET6_ADDRSTRLEN];

		getsockname(fd, (struct sockaddr *)&ss, &sl);
		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
			*port = ntohs(s6->sin6_port);
			snprintf(shown, shown_sz, "[%s]:%d", host, *port);
		} else {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
			*port = ntohs(s4->sin_port);
			snprintf(shown, shown_sz, "%s:%d", host, *port);
		}
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		fprintf(stderr, "%s: cannot listen on %s:%s: %s\n", HTTPD_ME,
			addr ? addr : "*", ps, strerror(err));
		exit(1);
	}
	return fd;
}

/* A connection's socket, a flow's pipe and the file it sends. */
#define HTTPD_MIN_SPARE_FDS 4

/* How many more descriptors could be opened now, up to
 * HTTPD_MIN_SPARE_FDS: fd's copies are made, then closed. */
static int spare_fds(int fd)
{
	int got[HTTPD_MIN_SPARE_FDS], n = 0;

	while (n < HTTPD_MIN_SPARE_FDS && (got[n] = fcntl(fd, F_DUPFD_CLOEXEC, 0)) >= 0)
		n++;
	for (int i = 0; i < n; i++)
		close(got[i]);
	return n;
}

struct worker {
	pthread_t tid;
	struct server srv;
	const struct httpd_config *cfg;
	int lfd;
	int rc;
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	unsigned *ready;
	unsigned *ended;
	pid_t pid;
};

/* The access log's file. Non-blocking: a FIFO with no reader is ENXIO
 * at once (it would hold this thread in open, deaf to SIGTERM), and a
 * full one never holds a write. */
static int log_open(const char *path)
{
	return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
}

/* The access log's file, opened again by name (after a rotation) under
 * the descriptor the loops write to, in one dup2: no line goes missing
 * between the two files. */
/* The standard descriptor a log path names (/dev/stdout, /dev/fd/1,
 * /proc/self/fd/1; and 2's), or -1. */
static int std_alias(const char *p)
{
	static const char *const names[][3] = {
		{ "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1" },
		{ "/dev/stderr", "/dev/fd/2", "/proc/self/fd/2" },
	};

	for (int s = 0; s < 2; s++)
		for (int i = 0; i < 3; i++)
			if (!strcmp(p, names[s][i]))
				return s + 1;
	return -1;
}

/* Standard output as the log: the loops write it at once, each at the
 * file's position, and io_uring's writes take no lock on it, so on a
 * regular file opened without O_APPEND (a shell's >) two wrote at one
 * offset and lines were lost (374 of 14 400 with 4 threads). It appends,
 * as log_open's own file does. */
static void log_stdout_append(void)
{
	struct stat st;
	int fl;

	if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) &&
	    (fl = fcntl(STDOUT_FILENO, F_GETFL)) >= 0 && !(fl & O_APPEND))
		(void)fcntl(STDOUT_FILENO, F_SETFL, fl | O_APPEND);
}

static void log_reopen(const struct httpd_config *cfg)
{
	int fd;

	if (!cfg->log_path || !strcmp(cfg->log_path, "-") || cfg->log_fd < 0)
		return;
	fd = log_open(cfg->log_path);
	if (fd < 0 || dup3(fd, cfg->log_fd, O_CLOEXEC) < 0)
		fprintf(stderr, "%s: cannot reopen %s: %s\n", HTTPD_ME, cfg->log_path,
			strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	/* The loop is made in the thread that runs it (io_uring's single
	 * issuer). */
	w->rc = server_init(&w->srv, w->cfg, w->lfd);
	pthread_mutex_lock(w->mu);
	++*w->ready;
	pthread_cond_broadcast(w->cv);
	pthread_mutex_unlock(w->mu);
	if (w->rc == 0)
		w->rc = server_run(&w->srv);
	__atomic_add_fetch(w->ended, 1, __ATOMIC_SEQ_CST);
	kill(w->pid, SIGUSR1);	/* wakes the main thread's sigwait */
	return NULL;
}

enum { O_LIST = 256, O_FOLLOW, O_MAXCONNS, O_CACHE, O_IDLE, O_HEADER, O_SEND,
       O_HELP, O_VERSION };

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "addr", required_argument, NULL, 'a' },
		{ "threads", required_argument, NULL, 't' },
		{ "log", required_argument, NULL, 'l' },
		{ "disk-io", required_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "list", no_argument, NULL, O_LIST },
		{ "follow-symlinks", no_argument, NULL, O_FOLLOW },
		{ "max-conns", required_argument, NULL, O_MAXCONNS },
		{ "cache", required_argument, NULL, O_CACHE },
		{ "idle-timeout", required_argument, NULL, O_IDLE },
		{ "header-timeout", required_argument, NULL, O_HEADER },
		{ "send-timeout", required_argument, NULL, O_SEND },
		{ "help", no_argument, NULL, O_HELP },
		{ "version", no_argument, NULL, O_VERSION },
		{ 0 }
	};
	struct httpd_config cfg = {
		.port = 8080, .threads = 1, .log_fd = -1, .disk_io = DISK_LAIO,
		.cache_entries = 4096, .cache_valid_ms = 1000,
		.idle_timeout_ms = 60000, .header_timeout_ms = 10000,
		.send_timeout_ms = 60000,
	};
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
	unsigned ready = 0, ended = 0, max_conns = 0;
	struct worker *ws;
	struct rlimit rl;
	sigset_t set;
	char shown[INET6_ADDRSTRLEN + 16];
	bool draining = false, failed = false, start_failed = false;
	int held;
	unsigned nstarted;
	int opt;

	/* Signals are taken by the main thread only, from the start: one
	 * that comes while the server starts waits for it (a SIGTERM then
	 * stops it as any other; a SIGHUP killed it). */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	while ((opt = getopt_long(argc, argv, "p:a:t:l:d:q", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': cfg.port = (int)number(optarg, "port", 65535); break;
		case 'a': cfg.addr = optarg; break;
		case 't':
			if (!(cfg.threads = number(optarg, "number of threads", 1024)))
				die_usage("invalid number of threads: '%s'", optarg);
			break;
		case 'l': cfg.log_path = optarg; break;
		case 'd':
			if (!strcmp(optarg, "laio"))
				cfg.disk_io = DISK_LAIO;
			else if (!strcmp(optarg, "blocking"))
				cfg.disk_io = DISK_BLOCKING;
			else if (!strcmp(optarg, "threads"))
				cfg.disk_io = DISK_THREADS;
			else
				die_usage("invalid argument '%s' for '--disk-io'\n"
					  "Valid arguments are: 'laio', 'blocking', 'threads'",
					  optarg);
			break;
		case 'q': cfg.quiet = true; break;
		case O_LIST: cfg.list = true; break;
		case O_FOLLOW: cfg.follow_symlinks = true; break;
		case O_MAXCONNS: max_conns = number(optarg, "connection limit", UINT_MAX); break;
		case O_CACHE: cfg.cache_entries = number(optarg, "cache size", 1u << 24); break;
		case O_IDLE: cfg.idle_timeout_ms = seconds_ms(optarg, "idle timeout"); break;
		case O_HEADER: cfg.header_timeout_ms = seconds_ms(optarg, "header timeout"); break;
		case O_SEND: cfg.send_timeout_ms = seconds_ms(optarg, "send timeout"); break;
		case O_HELP:
			usage(stdout);
			return tool_close_stdout(HTTPD_ME);
		case O_VERSION:
			printf(HTTPD_NAME " (uaio) " HTTPD_VERSION "\n"
			       "HTTP parsing: llhttp %d.%d.%d\n", LLHTTP_VERSION_MAJOR,
			       LLHTTP_VERSION_MINOR, LLHTTP_VERSION_PATCH);
			return tool_close_stdout(HTTPD_ME);
		default:
			fprintf(stderr, "Try '%s --help' for more information.\n", HTTPD_ME);
			return 2;
		}
	}
	/* Not before the options either: --help into a pipe nobody reads
	 * dies of SIGPIPE, silently, as GNU's. */
	signal(SIGPIPE, SIG_IGN);
	/* Descriptors 0-2 closed at start are held on /dev/null: stderr's
	 * messages and a --log=- would land in a client's socket. Not
	 * before the options: --help >&- is a write error, as GNU's. */
	held = tool_hold_std_fds(3);
	if (optind == argc)
		die_usage("missing directory operand%s", "");
	if (argc - optind > 1)
		die_usage("extra operand '%s'", argv[optind + 1]);
	cfg.root = argv[optind];
	cfg.rootfd = open(cfg.root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* searchable, or the reopen through it would fail for every file */
	cfg.fd_dir = access("/proc/self/fd", X_OK) == 0 ?
		     open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (cfg.rootfd < 0) {
		return cannot("serve", cfg.root, 2);
	}
	/* O_PATH needs no permission: that files can be opened under DIR
	 * (and, with --list, that it can be read) is asked of it now. */
	if (faccessat(AT_FDCWD, cfg.root, X_OK | (cfg.list ? R_OK : 0), AT_EACCESS) < 0) {
		return cannot("serve", cfg.root, 2);
	}
	if (!realpath(cfg.root, cfg.root_real)) {
		return cannot("serve", cfg.root, 2);
	}
	/* As many descriptors as allowed; the default connection limit
	 * leaves room for the cache and a flow's pipe per connection. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	{
		unsigned long per = (getrlimit(RLIMIT_NOFILE, &rl) == 0 ?
				     (unsigned long)rl.rlim_cur : 1024) / cfg.threads;

		/* The open-file cache holds a descriptor an entry: a quarter of
		 * a thread's share at most, so it cannot starve connections
		 * and opens (a 1024 limit, a 4096-entry cache). */
		if (cfg.cache_entries > per / 4)
			cfg.cache_entries = (unsigned)(per / 4);
		/* At least 16, but never more than the descriptors hold (the
		 * 503s past the limit need one each for a moment): more left
		 * the rest in the backlog, accept failing with EMFILE. */
		unsigned long fit = per > 16 + cfg.cache_entries + 3 ?
				    (per - 16 - cfg.cache_entries) / 3 : 1;

		per = per > 64 + cfg.cache_entries ? (per - 64 - cfg.cache_entries) / 3 : 0;
		if (per < 16)
			per = 16;
		if (per > fit)
			per = fit;
		if (!max_conns)
			max_conns = per > 1000000 ? 1000000 : (unsigned)per;
	}
	cfg.max_conns = max_conns;
	cfg.mime = mime_load("/etc/mime.types");
	if ((cfg.disk_io == DISK_LAIO && !(cfg.hub = hub_new())) ||
	    !(cfg.log_tally = log_tally_new())) {
		perror(HTTPD_ME);
		return 1;
	}

	ws = calloc(cfg.threads, sizeof(*ws));
	if (!ws) {
		perror(HTTPD_ME);
		return 1;
	}
	for (unsigned i = 0; i < cfg.threads; i++) {
		ws[i].lfd = listen_on(cfg.addr, &cfg.port, cfg.threads > 1, i == 0, shown,
				      sizeof(shown));
		ws[i].cfg = &cfg;
		ws[i].mu = &mu;
		ws[i].cv = &cv;
		ws[i].ready = &ready;
		ws[i].ended = &ended;
		ws[i].pid = getpid();
	}
	/* After the address is known good: a usage error (exit 2) leaves
	 * no log file behind. */
	if (cfg.log_path) {
		bool bad = false;

		int std = std_alias(cfg.log_path);

		cfg.log_fd = strcmp(cfg.log_path, "-") ? log_open(cfg.log_path) : STDOUT_FILENO;
		/* closed at start: held on /dev/null above, where every line
		 * would be lost without a word (also by a name of it) */
		if ((cfg.log_fd == STDOUT_FILENO || std >= 0) && held > 0 &&
		    (held & (1 << (std >= 0 ? std : STDOUT_FILENO)))) {
			if (cfg.log_fd >= 0 && cfg.log_fd != STDOUT_FILENO)
				close(cfg.log_fd);
			cfg.log_fd = -1;
			fprintf(stderr, "%s: the access log: %s: %s\n", HTTPD_ME,
				std == STDERR_FILENO ? "standard error" : "standard output",
				strerror(EBADF));
			bad = true;
		} else if (cfg.log_fd < 0) {
			cannot("open", cfg.log_path, 1);
			bad = true;
		} else if (cfg.log_fd == STDOUT_FILENO) {
			log_stdout_append();
		}
		if (bad) {	/* what was made for the threads goes too */
			for (unsigned i = 0; i < cfg.threads; i++)
				close(ws[i].lfd);
			failed = true;
			goto out;
		}
	}
	nstarted = cfg.threads;
	for (unsigned i = 0; i < cfg.threads; i++) {
		int e = pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]);

		if (e) {	/* its error is the result, errno is untouched */
			fprintf(stderr, "%s: cannot start a thread: %s\n", HTTPD_ME, strerror(e));
			nstarted = i;
			start_failed = true;
			break;
		}
	}
	pthread_mutex_lock(&mu);
	while (ready < nstarted)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (unsigned i = 0; i < nstarted && !start_failed; i++)
		if (ws[i].rc < 0) {
			fprintf(stderr, "%s: cannot start: %s\n", HTTPD_ME,
				strerror(-ws[i].rc));
			start_failed = true;
		}
	/* The threads' own loops and reserves may use up a small limit
	 * (64 and --threads 8): then every connection would wait in the
	 * backlog for ever, accept failing with EMFILE. */
	if (!start_failed && spare_fds(cfg.rootfd) < HTTPD_MIN_SPARE_FDS) {
		fprintf(stderr, "%s: too few file descriptors left for a connection "
			"(RLIMIT_NOFILE %llu, %u threads)\n", HTTPD_ME,
			getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (unsigned long long)rl.rlim_cur : 0ull,
			cfg.threads);
		start_failed = true;
	}
	/* A failed start stops the threads that did start, as a SIGTERM
	 * would, and frees what all of them hold (the exit status is 1). */
	if (start_failed) {
		failed = draining = true;
		for (unsigned i = 0; i < nstarted; i++)
			if (ws[i].rc == 0)
				uaio_loop_post(ws[i].srv.loop, server_drain, &ws[i].srv);
	} else if (!cfg.quiet) {
		fprintf(stderr, "%s: listening on http://%s/\n", HTTPD_ME, shown);
		fflush(stderr);
	}
	while (__atomic_load_n(&ended, __ATOMIC_SEQ_CST) < nstarted) {
		siginfo_t si;
		int sig = sigwaitinfo(&set, &si);

		if (sig < 0)
			continue;
		/* SIGHUP, or SIGUSR1 from another process (logrotate's): the
		 * log file is opened anew under the same descriptor */
		if (sig == SIGHUP || (sig == SIGUSR1 && si.si_pid != getpid())) {
			log_reopen(&cfg);
			continue;
		}
		/* A second SIGTERM or SIGINT while responses finish: the
		 * signal's own default action, at once. */
		if (draining && (sig == SIGTERM || sig == SIGINT)) {
			sigset_t one;	/* that signal alone: a pending SIGUSR1 must not win */

			sigemptyset(&one);
			sigaddset(&one, sig);
			signal(sig, SIG_DFL);
			raise(sig);
			pthread_sigmask(SIG_UNBLOCK, &one, NULL);
			_exit(1);
		}
		/* A loop that ends before SIGTERM has failed: stop the rest. */
		if (sig == SIGUSR1 && !draining)
			failed = true;
		if (!draining) {
			draining = true;
			for (unsigned i = 0; i < nstarted; i++)
				if (ws[i].rc == 0)
					uaio_loop_post(ws[i].srv.loop, server_drain,
						       &ws[i].srv);
		}
	}
	for (unsigned i = 0; i < nstarted; i++) {
		pthread_join(ws[i].tid, NULL);
		if (ws[i].rc < 0 && !start_failed)	/* a start's was said above */
			fprintf(stderr, "%s: %s\n", HTTPD_ME, strerror(-ws[i].rc));
		failed |= ws[i].rc < 0;
		server_fini(&ws[i].srv);
	}
out:
	free(ws);
	log_tally_free(cfg.log_tally);
	hub_free(cfg.hub);
	mime_free((struct mime_table *)cfg.mime);
	close(cfg.rootfd);
	if (cfg.fd_dir >= 0)
		close(cfg.fd_dir);
	return failed ? 1 : 0;
}
