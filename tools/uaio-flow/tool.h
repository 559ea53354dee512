/* SPDX-License-Identifier: MIT */
/* uaio-flow's parts: the tool object, and what main.c, legs.c, net.c and
 * files.c call of one another. */
#ifndef UAIO_FLOW_TOOL_H
#define UAIO_FLOW_TOOL_H
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <netdb.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <uaio/flow.h>
#include "tool_quote.h"
#include <uaio/loop.h>

#define PROG	"uaio-flow"
/* Messages name the program as it was invoked, as GNU tools do. */
#define ME	program_invocation_name
#define VERSION	UAIO_VERSION_STRING

struct opts {
	int mode;
	size_t chunk;
	uint64_t rate;
	bool stats, progress;
};

/* One direction of data: its flow, its names for messages, its result. */
struct leg {
	char *src_name, *dst_name;	/* as messages print them; the leg's */
	uaio_flow *f;
	bool running;
	int64_t res;
	int side;
	int shut_fd;		/* shut for writing when this leg ends (-1) */
	bool dst_pipe;		/* writes to a pipe or FIFO */
	uint64_t bytes;		/* moved, once the flow has ended */
	char method[32];
	/* A sparse source into an empty file: one flow per data extent, at
	 * the same offset, and the size set at the end (holes kept) */
	bool by_extent;
	int src, dst;
	off_t pos, size;	/* where the next extent is looked for; SRC's size */
	uint64_t sum;		/* moved by the extents' flows that ended */
	uint64_t want;		/* the running extent's length */
};

/* A file being created: written as tmp, renamed to path at the end. */
struct outfile {
	char *path, *tmp;
	int fd;
	bool emptied;	/* written in place: not emptied until out_ready */
	mode_t setid;	/* the temporary's mode again after the last write
			 * (which clears set-user-ID and set-group-ID), or 0 */
};

struct tool {
	uaio_loop *l;
	struct opts o;
	struct leg legs[2];
	int nlegs, running;
	int interrupted;	/* the signal that ended the transfer, or 0 */
	bool tty;
	/* stdin, stdout closed when the tool started: held on /dev/null so
	 * that no descriptor of ours takes their number, and refused as - */
	bool closed[2];
	uaio_watch sigw;
	int sigfd;
	struct timespec t0;
	uint64_t shown_ns;
	/* SIGPIPE's action at start was the default: a pipe whose reader
	 * went away ends the tool by it, silently, as it ends cat and dd */
	bool sigpipe_kills;
};

/* main.c */
void fail(const char *what, int err) __attribute__((noreturn));
/* What is left is cleaned up, then the tool dies of sig, saying so when
 * loud. */
void die_by(int sig, bool loud) __attribute__((noreturn));
/* files.c: fail() for a file, its name as cat prints one (quotef) */
void fail_file(const char *path, int err) __attribute__((noreturn));
/* name quoted as GNU's quotef (bare when the shell would take it; a
 * leg's name, freed with the leg), and into slot n (0 or 1) as quotef or
 * quoteaf (always; cp's messages), for a message: whole however long (a
 * quoted name runs to 5.5 bytes a byte, and a name given may be longer
 * than PATH_MAX), and still reachable on the way out of the program */
#define QF(name)	tool_quote((name), TOOL_QUOTE_NEEDED)
const char *quote_slot(int n, const char *name, enum tool_quoting how);
#define QFS(n, name)	quote_slot((n), (name), TOOL_QUOTE_NEEDED)
#define QAS(n, name)	quote_slot((n), (name), TOOL_QUOTE_ALWAYS)
void die_usage(const char *fmt, const char *arg) __attribute__((noreturn));
void blocking_begin(void);
void blocking_end(void);
/* A signal that came after the loop last looked (as the flow ended, or
 * in the output's close) is pending still: unblocked, it ends the tool
 * before a rename claims the file whole. */
static inline void late_signals(void)
{
	blocking_begin();
	blocking_end();
}
/* The file to remove on an early exit (NULL: none). */
void partial_set(struct outfile *o);
/* A connection (slot 0 or 1; -1: none) reset on an early exit. */
void reset_on_exit(int slot, int fd);
/* The next close of fd resets the connection. */
void net_abort(int fd);

/* legs.c: a flow from src to dst (shut_fd: shut for writing at its
 * end, or -1), exiting on failure to start; running them all to their
 * end (true when every byte arrived); the signalfd's handler, which
 * cancels them */
void leg_start(struct tool *t, int src, int dst, char *sname, char *dname, int shut_fd);
void leg_start_sparse(struct tool *t, int src, int dst, char *sname, char *dname, off_t size);
bool legs_run(struct tool *t);
extern const struct uaio_handler legs_sig_handler;

/* net.c: "HOST:PORT", "[V6]:PORT", or for listeners "[ADDR:]PORT" */
void check_spec(const char *spec, bool passive);
int net_fd(const char *spec, bool passive);
/* The one connection to a listener (closed): its peer's HOST:PORT in name. */
int accept_one(int ls, const char *spec, char *name, size_t n);

/* files.c */
int open_in(const struct tool *t, const char *path);
void open_out(const struct tool *t, struct outfile *o, const char *dst,
	      const char *src, const struct stat *src_st, mode_t mode);
/* The output about to be written: a file written in place is emptied
 * now, not at open_out, so that a wait for a peer that ends (a signal,
 * a failed accept) leaves it whole. */
void out_ready(struct outfile *o);
int close_out(struct outfile *o, bool ok);

#endif
