/* SPDX-License-Identifier: MIT */
/*
 * uaio-flow: a zero-copy cousin of cp, nc and socat on flow.h.
 *
 *   uaio-flow copy SRC DST          file, device, pipe or - (stdin/stdout)
 *   uaio-flow send FILE HOST:PORT   a file to a TCP peer
 *   uaio-flow recv [ADDR:]PORT FILE one connection into a file
 *   uaio-flow forward [ADDR:]LISTENPORT HOST:PORT   relay one connection
 *
 * A file this tool creates is written under a temporary name beside it
 * and renamed only when every byte has arrived.
 */
#define _GNU_SOURCE
#include "tool.h"
#include "tool_common.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uaio/flow.h>
#include <uaio/loop.h>

/*
 * What exit() and a signal need to know, the only state outside the
 * tool object: the temporary file to remove on any early exit (exit(3)
 * runs remove_partial), the connections to reset then (a plain close
 * would tell the peer every byte was sent), and the signal that came
 * while the tool waited in a blocking call (accept, connect, a FIFO's
 * open) with the stopping signals (stop_sigs) unblocked; in the loop they are read
 * from a signalfd instead.
 */
static struct outfile *exit_partial;
static int exit_sockets[2] = { -1, -1 };
static volatile sig_atomic_t exit_signal;

void partial_set(struct outfile *o)
{
	exit_partial = o;
}

void reset_on_exit(int slot, int fd)
{
	exit_sockets[slot] = fd;
}

/* A connection closed with a reset: its peer sees an error, never an
 * end of stream after part of the data. */
void net_abort(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* The end of a connection registered in slot: reset unless ok. */
static void conn_close(int slot, int fd, bool ok)
{
	if (!ok)
		net_abort(fd);
	exit_sockets[slot] = -1;
	close(fd);
}

static void remove_partial(void)
{
	if (exit_partial && exit_partial->tmp)
		unlink(exit_partial->tmp);
	for (int i = 0; i < 2; i++)
		net_abort(exit_sockets[i]);
}

/* What is left is cleaned up, then the tool dies of sig, saying so when
 * loud. */
void die_by(int sig, bool loud)
{
	sigset_t set;

	if (loud) {
		fprintf(stderr, "%s: interrupted\n", ME);
		fflush(stderr);
	}
	remove_partial();
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	_exit(128 + sig);
}

/* A signal that ends the tool ended the transfer: the tool dies of that signal, as
 * dd does, so that a shell loop or script around it stops too. */
static void die_of(int sig)
{
	die_by(sig, true);
}

static void on_async_signal(int sig)
{
	exit_signal = sig;
}

/* Those that would end the tool (GNU sort cleans up for the same set,
 * with USR1 and USR2 here too): each cancels the flows and removes the
 * temporary first. SIGPIPE is ignored (legs.c). */
static const int stop_sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGALRM, SIGTERM, SIGUSR1,
				 SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO };
enum { NSTOP = sizeof(stop_sigs) / sizeof(stop_sigs[0]) };

static void stop_signals(int how)
{
	sigset_t set;

	sigemptyset(&set);
	for (int i = 0; i < NSTOP; i++)
		sigaddset(&set, stop_sigs[i]);
	sigprocmask(how, &set, NULL);
}

/* Around a call that may wait for a peer for ever: a signal makes it
 * fail with EINTR, and the tool exits as interrupted. */
void blocking_begin(void)
{
	stop_signals(SIG_UNBLOCK);	/* one that waited is handled here */
	if (exit_signal)
		die_of(exit_signal);
}

/* errno stays the blocking call's. */
void blocking_end(void)
{
	int err = errno;

	stop_signals(SIG_BLOCK);
	if (exit_signal)
		die_of(exit_signal);
	errno = err;
}

static void usage(FILE *out)
{
	/* as GNU's usage lines, the name it was invoked by */
	fprintf(out,
"Usage: %s copy SRC DST [OPTION]...\n"
"  or:  %s send FILE HOST:PORT [OPTION]...\n"
"  or:  %s recv [ADDR:]PORT FILE [OPTION]...\n"
"  or:  %s forward [ADDR:]LISTENPORT HOST:PORT [OPTION]...\n", ME, ME, ME, ME);
	fputs(
"Move bytes inside the kernel where it can: file to file, file to socket,\n"
"socket to file or socket to socket. A path of - is stdin or stdout.\n"
"\n"
"  -m, --mode=MODE     auto (default), kbuf, pagecache or mmap\n"
"  -c, --chunk=SIZE    bytes per step (K, M, G suffixes)\n"
"  -r, --rate=RATE     at most RATE bytes per second (K, M, G suffixes)\n"
"  -s, --stats         print bytes, seconds, MB/s and CPU seconds at the end\n"
"  -p, --progress      show progress on a terminal\n"
"      --help          display this help and exit\n"
"      --version       output version information and exit\n"
"\n"
"A file " PROG " creates is written under a temporary name and renamed\n"
"once every byte has arrived. Exit status: 0 when every byte arrived,\n"
"1 when the transfer failed, 2 on bad usage; a signal such as INT, TERM\n"
"or HUP ends it by that signal, after cleaning up.\n", out);
}

void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", ME);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help' for more information.\n", ME);
	exit(2);
}

void fail(const char *what, int err)
{
	if (exit_signal)
		die_of(exit_signal);
	fprintf(stderr, "%s: %s: %s\n", ME, what, strerror(err));
	exit(1);
}

static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	unsigned shift = 0;

	if (!isdigit((unsigned char)*s))	/* no sign, no blanks */
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	}
	if (v > (ULLONG_MAX >> shift))
		return -1;
	v <<= shift;
	if (shift && *end == 'i' && end[1] == 'B')	/* KiB, not 1iB */
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static void tool_init(struct tool *t)
{
	struct uaio_loop_params p = { 0 };
	struct sigaction sa = { .sa_handler = on_async_signal };	/* no SA_RESTART */
	sigset_t set;
	int held = tool_stand_in_std_fds(2), r;

	if (held < 0)
		fail("/dev/null", errno);
	t->closed[0] = held & 1;
	t->closed[1] = held & 2;
	{
		struct sigaction old;
		sigset_t cur;

		t->sigpipe_kills = sigaction(SIGPIPE, NULL, &old) == 0 &&
				old.sa_handler == SIG_DFL &&
				sigprocmask(SIG_BLOCK, NULL, &cur) == 0 &&
				!sigismember(&cur, SIGPIPE);
	}
	signal(SIGPIPE, SIG_IGN);
	atexit(remove_partial);
	sigemptyset(&sa.sa_mask);
	sigemptyset(&set);
	/* A signal ignored when the tool started (nohup, trap '' INT)
	 * stays ignored, as in dd */
	for (int i = 0; i < NSTOP; i++) {
		struct sigaction old;

		if (sigaction(stop_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		sigaction(stop_sigs[i], &sa, NULL);
		sigaddset(&set, stop_sigs[i]);
	}
	t->tty = isatty(2);
	if (!(t->l = uaio_loop_new(&p)))
		fail("event loop", errno);
	sigprocmask(SIG_BLOCK, &set, NULL);
	t->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (t->sigfd < 0)
		fail("signalfd", errno);
	if ((r = uaio_watch_start(t->l, &t->sigw, t->sigfd, UAIO_READABLE, &legs_sig_handler, t)) < 0)
		fail("signalfd", -r);
	clock_gettime(CLOCK_MONOTONIC, &t->t0);
}

/* ------------------------------------------------------------ commands */

/* The exit status, once the files are settled; a signal that ended the
 * transfer ends the tool. */
static int finish(const struct tool *t, bool ok)
{
	if (t->interrupted)
		die_of(t->interrupted);
	return ok && !tool_stderr_failed() ? 0 : 1;
}

/* SRC opened for reading, and never a directory. */
static int open_src(const struct tool *t, const char *src, struct stat *st)
{
	int in = open_in(t, src);

	if (fstat(in, st) < 0)
		fail_file(src, errno);
	if (S_ISDIR(st->st_mode))
		fail_file(src, EISDIR);
	return in;
}

static int cmd_copy(struct tool *t, const char *src, const char *dst)
{
	struct outfile o;
	struct stat st, ost;
	int in = open_src(t, src, &st);
	bool ok;

	open_out(t, &o, dst, src, &st, S_ISREG(st.st_mode) ? st.st_mode : 0666);
	/* cp's test for --sparse=auto: fewer blocks than the size needs;
	 * into a file the tool made or empties, whose holes read as zeros
	 * (not -: the shell's descriptor has an offset others share, or
	 * O_APPEND, and the extents are written at offsets) */
	/* (nor from -, read from its offset on; nor at a --rate, which
	 * one flow counts from the start) */
	if (S_ISREG(st.st_mode) && (uint64_t)st.st_blocks < (uint64_t)st.st_size / 512 &&
	    strcmp(src, "-") && !t->o.rate &&
	    strcmp(dst, "-") && fstat(o.fd, &ost) == 0 && S_ISREG(ost.st_mode) &&
	    (ost.st_size == 0 || !o.emptied) && !(fcntl(o.fd, F_GETFL) & O_APPEND)) {
		/* file to file, which every mode moves; the last hole sets
		 * the size at once */
		out_ready(&o);
		leg_start_sparse(t, in, o.fd, QF(src), QF(o.path), st.st_size);
	} else {
		/* emptied once the flow is accepted (a mode that cannot move
		 * these ends, no memory for it: the file stays whole); its
		 * first step goes out at the loop's next iteration. (So no
		 * clone, which wants an empty sink when the method is
		 * chosen: copy_file_range shares extents on XFS and btrfs
		 * all the same.) */
		leg_start(t, in, o.fd, QF(src), QF(o.path), -1);
		out_ready(&o);
	}
	ok = legs_run(t) && !t->interrupted;	/* a signal, even late: no file */
	return finish(t, close_out(&o, ok) == 0 && ok);
}

static int cmd_send(struct tool *t, const char *file, const char *peer)
{
	struct stat st;
	int in, s;
	ssize_t n = 0;
	char c;
	bool ok;

	check_spec(peer, false);	/* a bad address before any file */
	in = open_src(t, file, &st);
	s = net_fd(peer, false);
	reset_on_exit(0, s);
	leg_start(t, in, s, QF(file), strdup(peer), -1);
	/* a signal read with the last completion: no wait for the receiver
	 * (the signalfd took it, so the wait would not see it) */
	ok = legs_run(t) && !t->interrupted;
	/* Every byte arrived when the receiver, having read them all,
	 * closes its end; a reset says they did not. */
	if (ok && shutdown(s, SHUT_WR) < 0) {
		n = -1;
	} else if (ok) {
		blocking_begin();
		while ((n = read(s, &c, 1)) > 0)
			;
		blocking_end();
	}
	if (n < 0) {
		fprintf(stderr, "%s: %s: %s\n", ME, peer,
			strerror(errno == ENOTCONN ? ECONNRESET : errno));
		ok = false;
	}
	conn_close(0, s, ok);
	return finish(t, ok);
}

/* A connection cannot be mapped: refused before listening, where the
 * flow's own refusal would come only after a peer had connected. */
static void refuse_mapping_a_connection(const struct tool *t)
{
	if (t->o.mode == UAIO_FLOW_MMAP) {
		fprintf(stderr, "%s: mode %s cannot move a connection\n", ME,
			uaio_flow_mode_name(t->o.mode));
		exit(1);
	}
}

static int cmd_recv(struct tool *t, const char *local, const char *file)
{
	char peer[NI_MAXHOST + NI_MAXSERV + 4];
	struct outfile o;
	int s;
	bool ok;

	refuse_mapping_a_connection(t);
	int ls = net_fd(local, true);	/* a bad address before any file */

	open_out(t, &o, file, NULL, NULL, 0666);
	s = accept_one(ls, local, peer, sizeof(peer));
	reset_on_exit(0, s);
	clock_gettime(CLOCK_MONOTONIC, &t->t0);	/* --stats: the transfer, not the wait */
	leg_start(t, s, o.fd, strdup(peer), QF(o.path), -1);
	out_ready(&o);	/* after the flow is accepted, as for copy */
	ok = legs_run(t) && !t->interrupted;	/* a signal, even late: no file */
	/* the file in place before the peer hears the end: a rename that
	 * fails resets the connection, as any other failure */
	ok = close_out(&o, ok) == 0 && ok;
	conn_close(0, s, ok);
	return finish(t, ok);
}

static int cmd_forward(struct tool *t, const char *local, const char *peer)
{
	char from[NI_MAXHOST + NI_MAXSERV + 4];
	int a, b;
	bool ok;

	check_spec(peer, false);
	refuse_mapping_a_connection(t);
	a = accept_one(net_fd(local, true), local, from, sizeof(from));
	reset_on_exit(0, a);
	b = net_fd(peer, false);
	reset_on_exit(1, b);
	clock_gettime(CLOCK_MONOTONIC, &t->t0);	/* --stats: the transfer, not the wait */
	leg_start(t, a, b, strdup(from), strdup(peer), b);
	leg_start(t, b, a, strdup(peer), strdup(from), a);
	ok = legs_run(t);
	conn_close(0, a, ok);	/* neither peer may take a cut stream for whole */
	conn_close(1, b, ok);
	return finish(t, ok);
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "rate", required_argument, NULL, 'r' },
		{ "stats", no_argument, NULL, 's' },
		{ "progress", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'H' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	struct tool t = { 0 };
	uint64_t v;
	int c;
	const char *cmd;

	/* A name's characters are printable as the locale's are (quotef), as
	 * cat's: é stays é in UTF-8. Only the character type: numbers keep
	 * their C form. */
	setlocale(LC_CTYPE, "");
	while ((c = getopt_long(argc, argv, "m:c:r:sp", longs, NULL)) != -1) {
		switch (c) {
		case 'm':
			if ((t.o.mode = uaio_flow_mode_parse(optarg)) < 0)
				die_usage("invalid mode '%s' (auto, kbuf, pagecache, mmap)", optarg);
			break;
		case 'c':
			if (parse_size(optarg, &v) < 0 || !v || v > (1u << 30))
				die_usage("invalid chunk size '%s'", optarg);
			t.o.chunk = (size_t)v;
			break;
		case 'r':
			if (parse_size(optarg, &v) < 0 || !v)
				die_usage("invalid rate '%s'", optarg);
			t.o.rate = v;
			break;
		case 's': t.o.stats = true; break;
		case 'p': t.o.progress = true; break;
		case 'H': usage(stdout); return tool_close_stdout(ME);
		case 'V':
			printf(PROG " (uaio) " VERSION "\n");
			return tool_close_stdout(ME);
		default:
			fprintf(stderr, "Try '%s --help' for more information.\n", ME);
			return 2;
		}
	}
	if (optind >= argc)
		die_usage("missing command%s", "");
	cmd = argv[optind++];
	if (argc - optind != 2) {
		if (!strcmp(cmd, "copy") || !strcmp(cmd, "send") || !strcmp(cmd, "recv") ||
		    !strcmp(cmd, "forward"))
		{
			char msg[512];
			char *qx = argc - optind > 2 ?
				   tool_quote(argv[optind + 2], TOOL_QUOTE_ALWAYS) : NULL;

			/* the first one too many named, as GNU's */
			if (qx)
				snprintf(msg, sizeof(msg), "%s: extra operand %s", cmd, qx);
			else
				snprintf(msg, sizeof(msg), "%s: missing operand", cmd);
			die_usage("%s", msg);
		}
		die_usage("unknown command '%s'", cmd);
	}
	if (strcmp(cmd, "copy") && strcmp(cmd, "send") && strcmp(cmd, "recv") &&
	    strcmp(cmd, "forward"))
		die_usage("unknown command '%s'", cmd);
	tool_init(&t);
	if (!strcmp(cmd, "copy"))
		c = cmd_copy(&t, argv[optind], argv[optind + 1]);
	else if (!strcmp(cmd, "send"))
		c = cmd_send(&t, argv[optind], argv[optind + 1]);
	else if (!strcmp(cmd, "recv"))
		c = cmd_recv(&t, argv[optind], argv[optind + 1]);
	else
		c = cmd_forward(&t, argv[optind], argv[optind + 1]);
	uaio_watch_stop(t.l, &t.sigw);
	uaio_loop_run_once(t.l, 0);	/* the watch's end */
	uaio_loop_free(t.l);
	close(t.sigfd);
	for (int i = 0; i < t.nlegs; i++)
		free(t.legs[i].src_name), free(t.legs[i].dst_name);
	return c;
}
