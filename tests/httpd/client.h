/* SPDX-License-Identifier: MIT */
/* Test client for uaio-httpd: starts the server as a child (client.c),
 * speaks HTTP/1.1 over raw sockets (http.c) and checks responses
 * (check.c). Written from the server's specification, not its code.
 *
 * The server binary is UAIO_HTTPD (environment) if set, else the path
 * compiled in as UAIO_HTTPD_BIN; a missing binary makes the test skip.
 * Failures are counted (EXPECT) so that one program reports every case
 * it checks; ht_finish() turns the count into the exit status. */
#ifndef HTTPD_CLIENT_H
#define HTTPD_CLIENT_H
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/resource.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "test.h"

/* Reads and writes that wait longer than this (ms) have hung: 30 s
 * unless a test changes it. */
extern int ht_timeout_ms;

extern int ht_failures;
struct ht_resp;

/* Non-fatal check: counts a failure and goes on. */
#define EXPECT(cond, ...) do { if (!(cond)) { ht_fail(__FILE__, __LINE__, #cond, NULL, NULL); \
	fprintf(stderr, "    " __VA_ARGS__); fputc('\n', stderr); } } while (0)
/* Same, and shows the request sent and the response head received. */
#define EXPECT_R(r, cond, ...) do { if (!(cond)) { ht_fail(__FILE__, __LINE__, #cond, NULL, (r)); \
	fprintf(stderr, "    " __VA_ARGS__); fputc('\n', stderr); } } while (0)
/* Fatal: setup that the rest of the program depends on. */
#define FATAL(cond, ...) do { if (!(cond)) { ht_fail(__FILE__, __LINE__, #cond, NULL, NULL); \
	fprintf(stderr, "    " __VA_ARGS__); fputc('\n', stderr); exit(T_EXIT_FAIL); } } while (0)

void ht_fail(const char *file, int line, const char *cond, const char *msg,
	     const struct ht_resp *r);

/* Runs one named sub-test; UAIO_HTTPD_TEST_ONLY=name,name... picks some. */
#undef RUN
#define RUN(fn) do { if (ht_selected(#fn)) { fprintf(stderr, "  %s ...\n", #fn); fn(); } } while (0)
int ht_selected(const char *name);

/* --- process and files ------------------------------------------------ */

/* Skips (77) when the binary is missing; makes the scratch directory
 * (removed at exit), arms a watchdog of secs seconds, ignores SIGPIPE. */
void ht_init(const char *prog, unsigned secs);
int ht_finish(void);			/* exit status: 0 or 1 */
const char *ht_bin(void);
const char *ht_scratch(void);		/* /tmp/uaio-httpd-test-XXXXXX */
char *ht_join(const char *dir, const char *name);	/* malloc'd (free or not) */
char *ht_mkdir(const char *rel);	/* scratch/rel, made; malloc'd */
void ht_write(const char *path, const void *data, size_t len);
/* ht_write of dir/name. */
void ht_put(const char *dir, const char *name, const void *data, size_t len);
/* name in dir: size bytes of hole (read from no disk) */
void ht_put_hole(const char *dir, const char *name, off_t size);
unsigned char *ht_random(size_t len, unsigned long long seed);
char *ht_slurp(const char *path, size_t *len);	/* NULL if missing */

struct ht_server {
	pid_t pid;
	int port;
	int status;		/* waitpid status once exited */
	int exited;
	char err[4096 + 64];	/* path of the file holding its stderr */
	char out[4096 + 64];	/* path of the file holding its stdout */
};

/* Starts DIR with --port 0 --addr 127.0.0.1, the extra options (NULL
 * terminated, placed before DIR) and waits for the listening line;
 * fails the test when the server exits or the line is wrong. */
void ht_start(struct ht_server *s, const char *dir, ...);
void ht_startv(struct ht_server *s, const char *dir, const char *const *opts);
/* Runs the binary with exactly argv[1..] (argv[0] is ignored). */
void ht_spawn(struct ht_server *s, const char *const *argv);
/* Non-zero: the RLIMIT_NOFILE (soft and hard) servers are spawned with. */
extern rlim_t ht_spawn_nofile;
/* Waits up to ms for the process; 1 exited (s->status set), 0 not yet. */
int ht_wait(struct ht_server *s, int ms);
/* SIGTERM (or sig), waits up to 30 s, expects exit status 0. Returns 0
 * when it exited 0. Shows the server's stderr past the first line. */
int ht_stop_sig(struct ht_server *s, int sig);
#define ht_stop(s) ht_stop_sig((s), SIGTERM)
void ht_kill(struct ht_server *s);	/* SIGKILL, no checks */
int ht_alive(struct ht_server *s);	/* still running? */
int ht_count_fds(pid_t pid);		/* entries of /proc/PID/fd, -1 */
long ht_raise_nofile(long want);	/* returns the soft limit now */
int ht_free_port(void);			/* a port that was free just now */

/* --- connections ------------------------------------------------------ */

struct ht_conn {
	int fd;
	int port;
	char *buf;		/* received, not yet consumed */
	size_t len, cap;
	int eof;		/* saw EOF (0) or a reset (ECONNRESET) */
	int err;		/* errno of the reset/failure, 0 for plain EOF */
	char sent[512];		/* start of the last thing sent (diagnostics) */
};

/* Connects to 127.0.0.1:port; NULL (errno set) on failure. rcvbuf > 0
 * sets SO_RCVBUF before connecting. */
struct ht_conn *ht_connect_opt(int port, int rcvbuf);
struct ht_conn *ht_connect(int port);	/* fatal on failure */
void ht_close(struct ht_conn *c);
void ht_abort(struct ht_conn *c);	/* close with RST (SO_LINGER 0) */
/* Sends all; 0 ok, -1 (errno) if the peer is gone. */
int ht_send(struct ht_conn *c, const void *data, size_t len);
int ht_sends(struct ht_conn *c, const char *s);
int ht_sendf(struct ht_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Result codes of reads. */
enum { HT_OK = 0, HT_ECLOSED = -1, HT_EBODY = -2, HT_ETIMEOUT = -3, HT_EPARSE = -4 };

struct ht_hdr { char *name, *value; };

struct ht_resp {
	int rc;			/* HT_* of the last read */
	int status, minor;	/* minor: HTTP/1.<minor> */
	char reason[128];
	struct ht_hdr h[64];
	int nh;
	char *head;		/* raw head as received, NUL terminated */
	char *hbuf;		/* copy cut into the header strings */
	long long clen;		/* Content-Length, -1 none (read until close) */
	int no_body;		/* HEAD or 1xx/204/304: no body read */
	char *body;
	size_t body_len;
	char req[512];		/* what was sent (diagnostics) */
	char why[256];		/* parse error */
};

/* Reads the status line and headers. no_body: the request was HEAD. */
int ht_read_head(struct ht_conn *c, struct ht_resp *r, int no_body);
/* Reads body bytes until body_len reaches upto (or the end). */
int ht_read_body(struct ht_conn *c, struct ht_resp *r, size_t upto);
/* Both. Returns r->rc. */
int ht_read(struct ht_conn *c, struct ht_resp *r, int no_body);
void ht_resp_free(struct ht_resp *r);
const char *ht_hdr(const struct ht_resp *r, const char *name);
int ht_hdr_count(const struct ht_resp *r, const char *name);
/* Whether a comma-separated header has the token (case-insensitive). */
int ht_hdr_has_token(const struct ht_resp *r, const char *name, const char *tok);
/* Media type of Content-Type without parameters, lower case ("" none). */
const char *ht_mime(const struct ht_resp *r, char *buf, size_t n);

/* Waits up to ms for the peer to close. Returns 1 closed (EOF or reset),
 * 0 still open. *extra (may be NULL) gets the bytes that came first. */
int ht_wait_close(struct ht_conn *c, int ms, size_t *extra);

/* One request on a new connection, then close. The response is read
 * as a HEAD response when the request starts with "HEAD ". */
int ht_request(int port, const char *req, struct ht_resp *r);
/* "GET path HTTP/1.1\r\nHost: t\r\n" extra "\r\n" on a new connection. */
int ht_get(int port, const char *path, const char *extra, struct ht_resp *r);
/* Whether a new connection gets GET /small.txt answered 200 within 2 s. */
int ht_still_serving(int port);
/* Waits (30 s at most) until port serves GET /small.txt (1), or s
 * exits (0). */
int ht_serving(struct ht_server *s, int port);
/* Checks that s is alive and answers GET path with 200 (after: what
 * came before, for the message); a dead server ends the test. */
void ht_expect_serving(struct ht_server *s, const char *path, const char *after);

/* --- content checks --------------------------------------------------- */

/* Strict IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"); -1 if not one. */
time_t ht_parse_date(const char *s);
void ht_fmt_date(time_t t, char out[30]);

struct ht_part {
	long long first, last, total;
	const unsigned char *data;
	size_t len;
	char ctype[128];
};

/* Parses "bytes F-L/T" (T may not be '*'); 0 ok, -1 not that form. */
int ht_parse_crange(const char *v, long long *f, long long *l, long long *t);
/* Checks a 206 against the whole file: a single part (Content-Range)
 * or multipart/byteranges; every part well-formed, in range and equal
 * to the file's bytes. Returns the number of parts, -1 (r->why says). */
int ht_check_206(struct ht_resp *r, const unsigned char *file, size_t size,
		 struct ht_part *parts, int max);

/* Checks a 200 of a whole file: Content-Length, exact body, headers
 * every 200 has (Last-Modified = mtime, strong ETag, Accept-Ranges,
 * Date, Content-Type = mime). Reports failures itself; returns 0 ok. */
int ht_check_200(const char *file, int line, struct ht_resp *r,
		 const unsigned char *data, size_t size, const char *mime,
		 time_t mtime);
#define CHECK_200(r, d, n, mime, mt) ht_check_200(__FILE__, __LINE__, (r), (d), (n), (mime), (mt))

/* Whether needle occurs in the body. */
int ht_body_has(const struct ht_resp *r, const char *needle);
time_t ht_mtime(const char *path);

#endif
