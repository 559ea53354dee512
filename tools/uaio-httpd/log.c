/* SPDX-License-Identifier: MIT */
/*
 * The access log, in Common Log Format, off the request path: lines are
 * formatted into one of two buffers, and a full buffer (or the sweep,
 * once a second) goes out as one write on the loop while the other
 * fills. A write that is slow to come back (io_uring's worker waiting for
 * a CPU took 4 ms here, while one client's pipelined requests made 22 KB
 * of lines a millisecond) lets the filling buffer grow, to LOG_BUF_MAX;
 * past that, lines are dropped and counted, never waited for. To a pipe
 * or socket (shared by --threads loops), a write is whole lines of at
 * most PIPE_BUF bytes, which the kernel keeps in one piece: the loops'
 * lines never tear one another. A file write that failed part way (a
 * full disk) left a line cut short: the next write starts with a newline,
 * so the lines after it are whole.
 */
#define _GNU_SOURCE 1	/* program_invocation_name */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "httpd.h"

#define LOG_BUF (64 * 1024)		/* each buffer's first size */
#define LOG_BUF_MAX (1024 * 1024)	/* and the most it grows to */
#define LOG_FLUSH (32 * 1024)

struct log {
	struct server *s;
	int fd;
	char *buf[2];
	size_t len[2], cap[2], done;
	bool torn;			/* the last write ended inside a line */
	size_t atom;			/* PIPE_BUF to a pipe or socket, else 0 */
	int cur;			/* the buffer being filled */
	bool busy;			/* the other one is being written */
	uint64_t since_ms;		/* when the write in flight began */
	uaio_op op, cancel;
	struct log_tally *tally;	/* the threads' drops and first error */
	time_t stamp_sec;
	char stamp[32];
};

/* What the threads' logs lost, said once for the process: --threads N
 * loops write one log, and one full disk is one message, not N. */
struct log_tally {
	uint64_t dropped;
	bool said;
};

struct log_tally *log_tally_new(void)
{
	return calloc(1, sizeof(struct log_tally));
}

void log_tally_free(struct log_tally *t)
{
	if (t && t->dropped)
		fprintf(stderr, "%s: %llu access log lines dropped\n", HTTPD_ME,
			(unsigned long long)t->dropped);
	free(t);
}

static void drop(struct log *lg, uint64_t n)
{
	__atomic_add_fetch(&lg->tally->dropped, n, __ATOMIC_RELAXED);
}

struct log *log_new(struct server *s, int fd)
{
	struct log *lg = calloc(1, sizeof(*lg));

	if (!lg || !(lg->buf[0] = malloc(LOG_BUF)) || !(lg->buf[1] = malloc(LOG_BUF))) {
		log_free(lg);
		return NULL;
	}
	lg->s = s;
	lg->fd = fd;
	lg->tally = s->cfg->log_tally;
	lg->cap[0] = lg->cap[1] = LOG_BUF;
	lg->stamp_sec = -1;
	return lg;
}

void log_free(struct log *lg)
{
	if (!lg)
		return;
	free(lg->buf[0]);
	free(lg->buf[1]);
	free(lg);
}

bool log_idle(const struct log *lg)
{
	return !lg->busy && lg->len[lg->cur] == 0;
}

/* The lines of buffer w from byte from on are lost (a write failed, or
 * was given up at the stop): counted, and the process's first error said. */
static void lost(struct log *lg, int w, size_t from, int err)
{
	uint64_t n = 0;

	for (size_t i = from; i < lg->len[w]; i++)
		n += lg->buf[w][i] == '\n';
	drop(lg, n);
	/* a line cut short, if what went out does not end with one */
	if (from > 0 && from < lg->len[w] && lg->buf[w][from - 1] != '\n')
		lg->torn = true;
	if (err && !__atomic_exchange_n(&lg->tally->said, true, __ATOMIC_RELAXED))
		fprintf(stderr, "%s: writing the access log: %s; its lines are dropped\n",
			HTTPD_ME, strerror(err));
}

/* What of b's n bytes goes out in one write: all of it, or to a pipe
 * the whole lines that fit in PIPE_BUF (a longer line alone). */
static size_t piece(const struct log *lg, const char *b, size_t n)
{
	const char *nl;

	if (!lg->atom || n <= lg->atom)
		return n;
	if ((nl = memrchr(b, '\n', lg->atom)))
		return (size_t)(nl - b) + 1;
	nl = memchr(b, '\n', n);
	return nl ? (size_t)(nl - b) + 1 : n;
}

static void written(uaio_op *op, int res, void *data);

/* PIPE_BUF to a pipe or socket, else 0 (no limit). Asked at each flush
 * (once a second at most, or per 32 KiB of lines): SIGHUP reopens the log
 * under the same descriptor, maybe as another kind of file. */
static size_t pipe_atom(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) ?
	       PIPE_BUF : 0;
}

static int write_piece(struct log *lg, int w)
{
	lg->since_ms = server_now_ms(lg->s);
	return uaio_op_write(lg->s->loop, &lg->op, lg->fd, lg->buf[w] + lg->done,
			     piece(lg, lg->buf[w] + lg->done, lg->len[w] - lg->done), -1,
			     written, lg);
}

static void written(uaio_op *op, int res, void *data)
{
	struct log *lg = data;
	int w = lg->cur ^ 1;

	if (res > 0 && lg->done + (size_t)res < lg->len[w]) {
		lg->done += (size_t)res;	/* the next piece, or a short write's rest */
		if (write_piece(lg, w) == 0)
			return;
		res = -EIO;
	}
	if (res <= 0)	/* a write that took nothing: full, as GNU tools say */
		lost(lg, w, lg->done, res == -ECANCELED ? 0 : res == 0 ? ENOSPC : -res);
	lg->len[w] = 0;
	lg->busy = false;
	/* Given up at the stop (log_give_up): the lines behind it would wait
	 * as long again (a stop took 9 s, not the 5 the page says). */
	if (res == -ECANCELED && lg->s->draining) {
		lost(lg, lg->cur, 0, 0);
		lg->len[lg->cur] = 0;
	}
	if (lg->len[lg->cur] >= LOG_FLUSH || lg->s->draining)
		log_flush(lg->s);
	server_maybe_stop(lg->s);
}

/* The filling buffer doubles (the other is being written), up to
 * LOG_BUF_MAX: whether it has need bytes of room now. */
static bool grow(struct log *lg, size_t need)
{
	int w = lg->cur;
	size_t cap = lg->cap[w];
	char *b;

	while (cap - lg->len[w] < need && cap < LOG_BUF_MAX)
		cap *= 2;
	if (cap - lg->len[w] < need || !(b = realloc(lg->buf[w], cap)))
		return false;
	lg->buf[w] = b;
	lg->cap[w] = cap;
	return true;
}

void log_flush(struct server *s)
{
	struct log *lg = s->log;
	int w, r;

	if (!lg || lg->busy || lg->len[w = lg->cur] == 0)
		return;
	if (lg->torn && (lg->len[w] < lg->cap[w] || grow(lg, 1))) {
		memmove(lg->buf[w] + 1, lg->buf[w], lg->len[w]++);
		lg->buf[w][0] = '\n';
		lg->torn = false;
	}
	lg->cur ^= 1;
	lg->busy = true;
	lg->done = 0;
	lg->atom = pipe_atom(lg->fd);
	if ((r = write_piece(lg, w)) < 0) {
		lost(lg, w, 0, -r);
		lg->busy = false;
		lg->len[w] = 0;
	}
}

static void cancelled(uaio_op *op, int res, void *data)
{
}

/* Stopping, and the log's write has not come back for as long as a
 * lingering close may last (a FIFO nobody reads): it is cancelled, its
 * lines counted as dropped; asked again at each sweep, since a short
 * write's rest is a new op. A write the kernel is running (a slow disk)
 * cannot be cancelled, and is waited for. */
void log_give_up(struct log *lg)
{
	if (lg->busy && server_now_ms(lg->s) - lg->since_ms >= HTTPD_LINGER_MS &&
	    !uaio_op_pending(&lg->cancel))
		uaio_op_cancel(lg->s->loop, &lg->cancel, &lg->op, cancelled, lg);
}

/* As nginx: a quote, a backslash, a control byte or one above 0x7e as
 * \xHH, so a line is one line and the fields stay apart. At most 4 * n
 * bytes into b; how many. */
static size_t put_escaped(char *b, size_t room, const char *p, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)p[i];

		if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\')
			k += (size_t)snprintf(b + k, room - k, "\\x%02X", ch);
		else
			b[k++] = (char)ch;
	}
	return k;
}

/* The request line of a request llhttp refused for its method alone (a
 * 501: the line is whole, the method one it does not know), else none. */
static struct span refused_line(const struct conn *c, int status)
{
	const char *p = c->req ? c->req->start : NULL, *end, *e;

	if (status != 501 || !p)	/* (a refused connection has no buffer) */
		return (struct span){ NULL, 0 };
	end = c->rbuf + c->rlen;
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	e = memchr(p, '\n', (size_t)(end - p));
	if (!e)
		return (struct span){ NULL, 0 };
	if (e > p && e[-1] == '\r')
		e--;
	return (struct span){ p, (size_t)(e - p) };
}

void log_request(struct server *s, const struct conn *c, int status,
		 uint64_t bytes)
{
	struct span line = refused_line(c, status);
	struct log *lg = s->log;
	const struct request *q = c->req;
	size_t need;
	time_t now;
	int n;

	if (!lg)
		return;
	now = time(NULL);
	if (now != lg->stamp_sec) {
		struct tm tm;

		localtime_r(&now, &tm);
		strftime(lg->stamp, sizeof(lg->stamp), "%d/%b/%Y:%H:%M:%S %z", &tm);
		lg->stamp_sec = now;
	}
	/* room for the target escaped: four bytes for each at worst */
	need = 512 + (q ? 4 * q->target.n : 0) + 4 * line.n;
	if (lg->cap[lg->cur] - lg->len[lg->cur] < need) {
		log_flush(s);
		if (lg->cap[lg->cur] - lg->len[lg->cur] < need && !grow(lg, need)) {
			drop(lg, 1);
			return;
		}
	}
	if (q && q->head_done) {
		char *b = lg->buf[lg->cur] + lg->len[lg->cur];
		size_t room = lg->cap[lg->cur] - lg->len[lg->cur], k;

		n = snprintf(b, room, "%s - - [%s] \"%s ", c->peer[0] ? c->peer : "-",
			     lg->stamp, llhttp_method_name((llhttp_method_t)q->method));
		k = (size_t)n;
		k += put_escaped(b + k, room - k, q->target.p, q->target.n);
		n = snprintf(b + k, room - k, " HTTP/%d.%d\" %d %llu\n", q->major, q->minor,
			     status, (unsigned long long)bytes);
		n = n < 0 ? n : n + (int)k;
	} else if (line.n) {	/* a method not known: its line, as nginx */
		char *b = lg->buf[lg->cur] + lg->len[lg->cur];
		size_t room = lg->cap[lg->cur] - lg->len[lg->cur], k;

		n = snprintf(b, room, "%s - - [%s] \"", c->peer[0] ? c->peer : "-", lg->stamp);
		k = (size_t)n;
		k += put_escaped(b + k, room - k, line.p, line.n);
		n = snprintf(b + k, room - k, "\" %d %llu\n", status, (unsigned long long)bytes);
		n = n < 0 ? n : n + (int)k;
	} else {	/* unparsable: CLF's "-" request */
		n = snprintf(lg->buf[lg->cur] + lg->len[lg->cur],
			     lg->cap[lg->cur] - lg->len[lg->cur], "%s - - [%s] \"-\" %d %llu\n",
			     c->peer[0] ? c->peer : "-", lg->stamp, status,
			     (unsigned long long)bytes);
	}
	if (n > 0)
		lg->len[lg->cur] += (size_t)n;
	if (lg->len[lg->cur] >= LOG_FLUSH)
		log_flush(s);
}
