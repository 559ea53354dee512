/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd's one internal header. A static HTTP/1.1 server after seed
 * 001 (Flash/thttpd on LAIO): one loop per thread, every call that may
 * wait for the disk made lazily (laio_syscall), bodies through flows.
 *
 *   proto.c    pure request handling: llhttp callbacks, target decoding,
 *              the verdict (no I/O; the fuzz target's code, with fields.c)
 *   fields.c   header values: ranges, dates, validators
 *   conn.c     a connection's life: read, parse, pipeline, time out, close
 *   respond.c  status and headers, then the body (first read + flow)
 *   files.c    the three --disk-io modes: opens, reads, listings
 *   cache.c    the open-file cache (and a descriptor in reserve)
 *   server.c   listener, accept, sweep timer, shutdown (the engine object)
 *   mime.c, listing.c, log.c, main.c
 */
#ifndef UAIO_HTTPD_H
#define UAIO_HTTPD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <time.h>
#include <linux/openat2.h>
#include <llhttp.h>
#include <uaio/loop.h>
#include <uaio/flow.h>

#define HTTPD_NAME	"uaio-httpd"
/* Messages name the program as it was invoked, as GNU tools do. */
#define HTTPD_ME	program_invocation_name
#define HTTPD_VERSION	UAIO_VERSION_STRING
#define HTTPD_HEAD_MAX	8192		/* request line + headers, else 431 */
#define HTTPD_RBUF	(HTTPD_HEAD_MAX + 512)
#define HTTPD_BODY_BUF	(64 * 1024)	/* first read of a file */
#define HTTPD_POOL_KEEP	64		/* free buffers and response records kept per kind; more go back to malloc */
#define HTTPD_PATH_MAX	4096
#define HTTPD_TYPE_MAX	128		/* longer types in mime.types are skipped */
#define HTTPD_RANGES_MAX 16
/* If-None-Match or If-Match on more lines than this: 400. */
#define HTTPD_LIST_LINES 8
#define HTTPD_FILE_HDR	256		/* struct file's prebuilt headers */
/* Lingering close (RFC 9112 9.6), as nginx's lingering_timeout and
 * lingering_time: quiet this long, or this long in all, and it closes. */
#define HTTPD_LINGER_MS		5000
/* A connection's pipelined requests answered in a row at most before the
 * loop's other work runs (other connections, the access log's write). */
#define HTTPD_TURN		32
#define HTTPD_LINGER_MAX_MS	30000
/* 16 KiB reads a lingering client's bytes get in a row, likewise. */
#define HTTPD_LINGER_TURN	16

enum disk_io { DISK_LAIO, DISK_BLOCKING, DISK_THREADS };

struct mime_table;
struct laio_hub;
struct log_tally;

struct httpd_config {
	const char *root;
	int rootfd;			/* O_PATH|O_DIRECTORY on root */
	char root_real[PATH_MAX];	/* its path with no symlink */
	const char *addr;
	int port;
	unsigned threads;
	const char *log_path;		/* NULL: no access log; "-": stdout */
	int log_fd;
	struct log_tally *log_tally;	/* with log_fd: shared by the threads */
	int disk_io;
	bool list, follow_symlinks, quiet;
	/* /proc/self/fd (O_PATH), or -1 without /proc: a name is opened
	 * O_PATH, and only a regular file is then opened for reading, through
	 * its entry here (files.c, reopen_now) */
	int fd_dir;
	unsigned max_conns;		/* per thread */
	unsigned cache_entries;		/* per thread */
	unsigned cache_valid_ms;	/* an entry is trusted this long */
	unsigned idle_timeout_ms, header_timeout_ms, send_timeout_ms;
	const struct mime_table *mime;
	struct laio_hub *hub;		/* laio mode: shared by the threads */
};

/* ------------------------------------------------------------ proto.c */

struct span { const char *p; size_t n; };

/* The validators come last, from H_IF_NONE_MATCH on (proto_verdict). */
enum hdr { H_OTHER, H_HOST, H_RANGE, H_TRANSFER_ENCODING, H_IF_NONE_MATCH,
	   H_IF_MODIFIED_SINCE, H_IF_RANGE, H_IF_MATCH, H_IF_UNMODIFIED_SINCE,
	   H_NHDRS };

/* One request as parsed: spans point into the connection's read buffer. */
struct request {
	struct span target;
	struct span hdr[H_NHDRS];
	uint8_t dup[H_NHDRS];		/* times seen */
	int cur;			/* enum hdr of the header being read */
	struct span field, val;		/* the header being read */
	uint8_t method;			/* llhttp_method_t, once method_known */
	bool method_known;		/* the target began, or the head ended */
	uint8_t major, minor;
	bool keep_alive;
	bool head_done, done;
	bool too_big;			/* head over HTTPD_HEAD_MAX */
	bool line_done;			/* a header name came: the line ended */
	bool version_seen;		/* the line has an HTTP-version */
	bool has_body;			/* not read: the connection closes */
	bool bad_head;			/* a header line RFC 9112 says to refuse (400) */
	const char *start;		/* the request's first byte */
	/* If-None-Match's [0] and If-Match's [1] lines: one list, their
	 * values joined by commas (RFC 9110 5.3). Last: proto_reset leaves
	 * them, as only the first dup[] of each are read. */
	struct span tags[2][HTTPD_LIST_LINES];
};

void proto_settings(llhttp_settings_t *s);
/* llhttp_init for a request parser, with any DIGIT.DIGIT version taken. */
void proto_parser_init(llhttp_t *p, const llhttp_settings_t *s);
void proto_reset(struct request *r, const char *start);
/* Whether the request line has ended (the bytes up to end hold its LF)
 * with no HTTP-version: HTTP/0.9, which llhttp takes only once another
 * byte comes, so the client would wait for the header timeout. */
bool proto_unversioned(const struct request *r, const char *end);

/* Whether a decoded name can be asked for: no control byte, strict
 * UTF-8 (what proto_path refuses with 400). */
bool proto_name_ok(const char *s, size_t n);
/* Decoded, normalised path of an origin-form (or absolute-form) target:
 * out gets "a/b/c" (no leading slash, "" for the root), *slash whether the
 * target names a directory: it ends in '/', or in a "." or ".." segment. Returns 0, or 400 (bad escape, NUL, %2F, invalid
 * or overlong UTF-8, ".." above the root, not a path) or 414 (too long). */
int proto_path(struct span target, char *out, size_t outsz, bool *slash);

/* What a parsed request gets before any file is looked up: 0 (go on),
 * 400 (HTTP/0.9, Transfer-Encoding in HTTP/1.0, bad or missing Host, a
 * header line RFC 9112 refuses, an entity-tag list on more than
 * HTTPD_LIST_LINES lines), 405 (not GET or HEAD), 501 (a transfer coding
 * other than chunked) or 505 (HTTP/2 and up). */
int proto_verdict(const struct request *q);
/* Whether a Host value is a uri-host with an optional port (RFC 9112 3.2;
 * empty is allowed). */
bool proto_host_ok(struct span h);
/* Whether p begins a pct-encoded byte: '%' and two hex digits (RFC 3986
 * 2.1). */
bool proto_pct_at(const char *p, const char *end);

/* ----------------------------------------------------------- fields.c */

struct range { uint64_t first, last; };	/* inclusive */
/* Parses a Range header for a file of size bytes: the number of
 * satisfiable ranges (1..max), 0 to ignore the header (not "bytes=",
 * malformed, too many, more bytes than the file: the whole file is
 * cheaper; a suffix range of an empty file), or -1 when none is
 * satisfiable (416). */
int proto_ranges(struct span h, uint64_t size, struct range *r, int max);

/* IMF-fixdate; out must hold 30 bytes. */
void proto_date(time_t t, char *out);
/* IMF-fixdate, RFC 850 or asctime date; 0 and *t, or -1. */
int proto_parse_date(struct span s, time_t *t);

/* What the validators of a request make of a file, in RFC 9110 13.2.2's
 * order: 412 when If-Match names none of its tags or If-Unmodified-Since
 * is older than it; 304 for a GET/HEAD whose If-None-Match or
 * If-Modified-Since says the client's copy is current; else 200. etag
 * NULL: a response without validators (a listing), which only the "*"
 * forms match and the dates do not concern. */
int proto_preconditions(const struct request *r, const char *etag, time_t mtime);
/* If-Range: whether the range request may be honoured. */
bool proto_if_range(const struct request *r, const char *etag, time_t mtime);

/* ------------------------------------------------------------- mime.c */

struct mime_table *mime_load(const char *path);	/* NULL path: built-in only */
const char *mime_type(const struct mime_table *m, const char *path);
void mime_free(struct mime_table *m);

/* --------------------------------------------------- files.c, cache.c */

struct server;
struct conn;

/* An open file of the cache, shared by the responses using it. */
struct file {
	/* cache.c's lookup reads these first: kept together at the front */
	struct file *hnext;		/* hash chain */
	char *path;			/* normalised, the cache key */
	unsigned hash;			/* of path */
	unsigned lru_tick;		/* cache.c: when last moved to the front */
	struct file *lprev, *lnext;	/* LRU */
	int fd;				/* -1 for a directory */
	bool dir;
	uint64_t size;
	time_t mtime;
	ino_t ino;
	struct timespec mtim, ctim;	/* as fstat gave them (mtime is clamped) */
	uint64_t checked_ms;		/* when its name was last looked up */
	unsigned refs;			/* the cache's own + each response's */
	const char *type;
	char etag[48];
	char lastmod[30];
	/* A 200's headers about the file, built once (files_open): Content-
	 * Type, -Length, Last-Modified, ETag, Accept-Ranges. 0: did not fit,
	 * built per response. */
	uint16_t hdr_len;
	char hdr[HTTPD_FILE_HDR];
};

/* Completions of files_open / files_read / files_list that went to the
 * background (-EINPROGRESS); an inline result is returned instead. */
typedef void (*files_open_cb)(struct conn *c, struct file *f, int err);
typedef void (*files_read_cb)(struct conn *c, ssize_t res);

/* cache.c */
struct file_cache;
struct file_cache *files_new(struct server *s);
void files_free(struct file_cache *fc);
/* Closes the entries past their trust (they would be opened afresh
 * anyway): a deleted file's space comes back, descriptors go free. */
void files_sweep(struct file_cache *fc);
/* A file found changed (shorter than its entry says): out of the cache. */
void files_forget(struct file_cache *fc, struct file *f);
/* Out of descriptors: gives some back (half the cache, else the
 * reserve); false when there was nothing to give. */
bool files_make_room(struct file_cache *fc);
/* The entry for path while it is trusted (a new reference), else NULL. */
struct file *files_find(struct file_cache *fc, const char *path);
/* A new file joins the cache (which takes a reference of its own). */
void files_add(struct file_cache *fc, struct file *f);
/* A reference given back; the last one closes the file. */
void file_put(struct server *s, struct file *f);

/* files.c */
/* Finds or opens c->resp->path (relative to the root) by the --disk-io
 * mode: 0 and *out (a reference), -errno, or -EINPROGRESS and cb later. */
int files_open(struct conn *c, struct file **out, files_open_cb cb);
/* Reads len bytes at off into buf: the bytes read, -errno, or
 * -EINPROGRESS and cb later. */
ssize_t files_read(struct conn *c, struct file *f, void *buf, size_t len,
		   uint64_t off, files_read_cb cb);
/* laio mode: whether the page cache holds all of [off, off + len), so
 * a flow may send it inline (cachestat(2)); false in the other modes,
 * which read a range's first bytes as their model says. */
bool files_cached(struct conn *c, struct file *f, uint64_t off, uint64_t len);
/* Builds the listing of directory c->resp->path (--list) into
 * c->resp->extra: its length, -errno, or -EINPROGRESS and cb later. */
ssize_t files_list(struct conn *c, files_read_cb cb);

/* A background call of c's (worker or laio) is over: its result, on the
 * loop thread. */
void files_complete(struct conn *c, long res);

/* --------------------------------------------------------------- hub.c */

/* laio mode: background calls of all threads come back through one
 * laio_poll(); the hub routes each to the thread that made it. */
struct laio_hub *hub_new(void);
void hub_free(struct laio_hub *h);
/* The server's laio_fd() watch fired. */
void hub_poll(struct server *s);
/* The lock spans a lazy call and, if it went to the background, the
 * registration of its handle: no laio_poll() sees it before. */
void hub_lock(struct server *s);
void hub_unlock(struct server *s);
void hub_register(struct server *s, void *h, struct conn *c);

/* ---------------------------------------------------------- respond.c */

struct seg { const char *mem; uint64_t off, len; uint32_t loaded; bool file; };
#define RESP_SEGS (2 * HTTPD_RANGES_MAX + 2)

/* A response under way; from the server's pool, so no allocation per
 * request in the steady state. */
struct resp {
	struct resp *next_free;
	int status;
	struct file *f;
	bool slash, index;
	size_t dirlen;			/* path before "/index.html" */
	char path[HTTPD_PATH_MAX];
	char head[HTTPD_HEAD_MAX + 1024];
	size_t head_len;
	/* a part's head: boundary, type, three 20-digit numbers, ~80 more */
	char parts[HTTPD_RANGES_MAX + 1][160 + HTTPD_TYPE_MAX];
	char *body;			/* HTTPD_BODY_BUF from the pool */
	size_t body_used;
	char *extra;			/* a listing page (malloc) */
	size_t extra_len;
	struct range ranges[HTTPD_RANGES_MAX];
	struct seg seg[RESP_SEGS];
	int nseg, cur;
	bool flow_next;			/* seg[cur]'s rest goes by flow */
	struct iovec iov[RESP_SEGS];
	int iovcnt;
	uint64_t bytes;			/* body bytes sent, or gathered to send */
	uint64_t batch_base;		/* bytes before the iovec being sent */
	bool logged;
	uaio_flow *flow;
	uint64_t flow_seen;		/* its bytes at the last progress report */
	/* files.c: a disk call in the background */
	uaio_op op;
	struct open_how how;
	struct stat st;
	long res;
	int kind;
	uint8_t open_tries;		/* out of descriptors: room made, tried again */
	files_open_cb open_cb;
	files_read_cb read_cb;
	void *rd_buf;
	size_t rd_len;
	uint64_t rd_off;
	struct file *rd_file;
};

/* ----------------------------------------------------------- conn.c */

enum conn_state { C_IDLE, C_HEAD, C_WORK, C_SEND, C_LINGER, C_CLOSING };

struct conn {
	struct server *srv;
	int fd;
	uint8_t state;
	bool close_after;		/* Connection: close, HTTP/1.0, errors */
	bool waiting;			/* a file/laio/work completion is owed */
	bool send_wait;			/* waiting for room to send */
	bool watching;			/* until the watch's handle_close */
	bool maybe_more;		/* readable edge not yet drained */
	bool in_parse;			/* conn_parse's loop is on the stack */
	bool deferred;			/* its turn is over: on s->deferred */
	uint16_t turn;			/* requests begun in this turn */
	struct conn *defer_next;
	uint64_t deadline_ms;		/* 0: none */
	uint64_t linger_end_ms;		/* C_LINGER: closes by then at most */
	struct conn *prev, *next;	/* the server's list, for the sweep */
	uaio_watch watch;
	llhttp_t parser;
	/* While a request is read: one allocation holds both. */
	struct request *req;
	char *rbuf;			/* HTTPD_RBUF bytes */
	uint32_t rlen, rparsed;		/* bytes held; bytes llhttp has taken */
	struct resp *resp;		/* the response under way */
	char peer[INET6_ADDRSTRLEN];
};

void conn_accepted(struct server *s, int fd, const struct sockaddr *sa);
/* The response is over: log, then the next pipelined request or idle. */
void conn_response_done(struct conn *c, bool ok);
void conn_close(struct conn *c);
/* A disk call or flow owed to a closing connection has come back. */
void conn_released(struct conn *c);
/* Sends what iov holds without blocking (more: a flow follows at once,
 * MSG_MORE); 1 when all went, 0 when the rest waits for room (the iov is
 * advanced), -errno on failure. */
int conn_send(struct conn *c, struct iovec *iov, int *iovcnt, bool more);
/* Waits for room, then calls resp_continue. */
void conn_want_write(struct conn *c);
void conn_send_clock(struct conn *c);
void conn_sweep(struct server *s, uint64_t now_ms);
/* The resume timer: deferred connections take their next turn. */
void conn_resume(uaio_timer *t);

void respond(struct conn *c);
void respond_error(struct conn *c, int status);
/* send.c: sends what is left of c's response */
void resp_continue(struct conn *c);
/* The response is over (ok: all sent): logged, the connection goes on. */
void resp_finish(struct conn *c, bool ok);
void resp_free(struct conn *c);
/* Closing: cancels a flow in flight; resp_idle says when nothing is owed. */
void resp_cancel(struct conn *c);
uint64_t resp_bytes_sent(const struct resp *r);
bool resp_idle(const struct conn *c);
extern const char *const resp_reason[600];

/* ------------------------------------------------------------ server.c */

/* One per thread: the engine object. Nothing mutable lives outside it. */
struct server {
	const struct httpd_config *cfg;
	uaio_loop *loop;
	int lfd;
	uaio_op accept_op, close_op;
	bool accepting, draining, stopped;
	/* The listening socket is free only once its accept has ended and
	 * its close is done: the loop waits for both before it stops (a
	 * ring torn down with them pending let the port go some ms after
	 * exit, and a restart found it in use). */
	bool accept_live, lfd_open;
	uaio_timer sweep, retry;
	uaio_watch laio_watch;
	bool laio_watching;
	struct conn *conns;		/* every connection, for the sweep */
	/* Connections whose turn ended with requests left (HTTPD_TURN),
	 * each resumed by the resume timer at the next iteration. */
	struct conn *deferred;
	uaio_timer resume;
	unsigned nconns;
	llhttp_settings_t settings;
	struct file_cache *files;
	struct resp *resp_pool;
	unsigned nresp_pool;		/* records in it (at most HTTPD_POOL_KEEP) */
	struct log *log;
	char *pool;			/* free HTTPD_RBUF buffers, linked */
	char *body_pool;		/* free HTTPD_BODY_BUF buffers, linked */
	unsigned npool, nbody_pool;
	char date[30];			/* cached Date: value */
	time_t date_sec;
	/* "HTTP/1.1 200 OK", Server and Date, rebuilt with the date */
	char head200[96];
	size_t head200_len;
	uint64_t now_ms;
	uint64_t requests;
};

int server_init(struct server *s, const struct httpd_config *cfg, int lfd);
int server_run(struct server *s);
void server_drain(void *s);		/* posted to the loop on SIGTERM */
void server_fini(struct server *s);
const char *server_date(struct server *s);
/* A 200's first lines, current Date included: *len bytes. */
const char *server_head200(struct server *s, size_t *len);
uint64_t server_now_ms(struct server *s);
char *server_buf(struct server *s, bool body);
void server_buf_put(struct server *s, char *b, bool body);
void server_maybe_stop(struct server *s);

/* -------------------------------------------------------------- log.c */

struct log_tally *log_tally_new(void);
void log_tally_free(struct log_tally *t);	/* says the lines dropped */
struct log *log_new(struct server *s, int fd);
void log_request(struct server *s, const struct conn *c, int status,
		 uint64_t bytes);
void log_flush(struct server *s);
bool log_idle(const struct log *lg);
void log_give_up(struct log *lg);
void log_free(struct log *lg);

/* ---------------------------------------------------------- listing.c */

/* A malloc'd HTML page listing dirfd (opened at url path), or NULL and errno. */
char *listing_html(int dirfd, const char *urlpath, size_t *len);

#endif
