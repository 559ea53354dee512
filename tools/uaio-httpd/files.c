/* SPDX-License-Identifier: MIT */
/*
 * The open-file cache and the three --disk-io modes (seed 001's
 * comparison): laio makes open and the first read with laio_syscall, so
 * they run inline when the data is cached and in the background
 * otherwise; blocking makes plain calls on the loop thread (NB-B);
 * threads hands every call to the loop's worker pool (AMTED).
 *
 * What they open goes into the open-file cache (cache.c).
 */
#define _GNU_SOURCE 1	/* O_PATH */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <uaio/flow.h>
#include <uaio/laio.h>
#include "httpd.h"

enum { K_OPEN, K_OPEN_LINK, K_READ, K_LIST };

/* An opened descriptor becomes a file (one reference, the caller's), and
 * joins the cache. st is the descriptor's fstat. */
static int make_file(struct conn *c, int fd, const struct stat *st,
		     struct file **out)
{
	struct server *s = c->srv;
	struct file_cache *fc = s->files;
	struct file *f;
	time_t now;
	int n;

	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
		close(fd);	/* fifos, devices, sockets: never served */
		return -EACCES;
	}
	f = calloc(1, sizeof(*f));
	if (!f || !(f->path = strdup(c->resp->path))) {
		free(f);
		close(fd);
		return -ENOMEM;
	}
	f->dir = S_ISDIR(st->st_mode);
	if (f->dir) {
		close(fd);
		fd = -1;
	}
	f->fd = fd;
	f->size = (uint64_t)st->st_size;
	/* A time ahead of the clock goes out as now: Last-Modified may not
	 * be later than Date (RFC 9110 8.8.2.1). The ETag keeps the real one. */
	f->mtime = st->st_mtim.tv_sec;
	if (f->mtime > (now = time(NULL)))
		f->mtime = now;
	f->ino = st->st_ino;
	f->mtim = st->st_mtim;
	f->ctim = st->st_ctim;
	f->checked_ms = server_now_ms(s);
	f->refs = 1;
	f->type = mime_type(s->cfg->mime, f->path);
	snprintf(f->etag, sizeof(f->etag), "\"%llx-%llx-%llx\"",
		 (unsigned long long)f->ino, (unsigned long long)f->size,
		 (unsigned long long)st->st_mtim.tv_sec * 1000000000ull +
			 (unsigned long long)st->st_mtim.tv_nsec);
	proto_date(f->mtime, f->lastmod);
	n = snprintf(f->hdr, sizeof(f->hdr),
		     "Content-Type: %s\r\nContent-Length: %llu\r\nLast-Modified: %s\r\n"
		     "ETag: %s\r\nAccept-Ranges: bytes\r\n", f->type,
		     (unsigned long long)f->size, f->lastmod, f->etag);
	f->hdr_len = n > 0 && (size_t)n < sizeof(f->hdr) ? (uint16_t)n : 0;
	files_add(fc, f);
	*out = f;
	return 0;
}

/*
 * What a name's open gave, made into what the cache holds. The name is
 * opened O_PATH, which opens nothing: a device behind it is never
 * opened, since opening one may act (a watchdog starts, a tape rewinds).
 * Only a regular file is then opened for reading, through its
 * /proc/self/fd link, which reaches that same inode whatever the name
 * leads to now (reopen_now). fstat of an open descriptor reads the
 * in-memory inode: it does not wait for the disk, and laio would send it
 * to a helper thread every time. Without /proc (cfg->fd_dir -1) the
 * name was opened O_RDONLY | O_NONBLOCK, and a regular file loses
 * O_NONBLOCK (io_uring would refuse to wait for its pages otherwise).
 * Returns the descriptor of a regular file or a directory, or -errno
 * (fd closed).
 */
static long path_check(const struct httpd_config *cfg, long fd, struct stat *st)
{
	long e;

	if (fstat((int)fd, st) < 0) {
		e = -errno;
		close((int)fd);
		return e;
	}
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode)) {
		close((int)fd);
		return -EACCES;		/* fifos, devices, sockets: never served */
	}
	if (cfg->fd_dir < 0 && S_ISREG(st->st_mode))
		fcntl((int)fd, F_SETFL, O_RDONLY);
	return fd;
}

/* Non-blocking: a write lease on the file would make a blocking open wait
 * for its holder (up to lease-break-time, 45 s), the loop with it; it
 * fails at once instead (EWOULDBLOCK: 503). */
#define REOPEN_FLAGS	(O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)

/* The regular file behind O_PATH descriptor pfd (closed), opened for
 * reading through its entry in /proc/self/fd (cfg->fd_dir, opened once:
 * walking "/proc/self/fd/N" from the root each time cost more than the
 * file's own open), O_NONBLOCK cleared after (see path_check); on the loop
 * thread, or the worker in threads mode. With fc, out of descriptors, the
 * cache sheds half and it tries again (a name needs two for a moment). */
static long reopen_now(const struct httpd_config *cfg, struct file_cache *fc, long pfd)
{
	char name[12], *p = name + sizeof(name);
	unsigned long v = (unsigned long)pfd;
	long fd;

	*--p = '\0';
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10));
	fd = openat(cfg->fd_dir, p, REOPEN_FLAGS);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE) && fc && files_make_room(fc))
		fd = openat(cfg->fd_dir, p, REOPEN_FLAGS);
	fd = fd < 0 ? -errno : fd;
	close((int)pfd);
	if (fd >= 0)
		fcntl((int)fd, F_SETFL, O_RDONLY);
	return fd;
}

/* laio and blocking modes: fd checked, reopened when a regular file, into
 * the cache. The reopen is a plain call in laio mode too: laio would send
 * it to the background every time (a /proc/self/fd lookup is never a
 * cached one, RESOLVE_CACHED refuses it), which cost 5 us an open, while
 * a local file system's open does not wait for the disk (the name's
 * walk, which may, is the lazy call). An open that asks a server (NFS,
 * FUSE) waits on the loop thread. */
static int opened_inline(struct conn *c, long fd, struct file **out)
{
	struct resp *r = c->resp;
	const struct httpd_config *cfg = c->srv->cfg;

	fd = path_check(cfg, fd, &r->st);
	if (fd < 0)
		return (int)fd;
	if (cfg->fd_dir >= 0 && S_ISREG(r->st.st_mode)) {
		fd = reopen_now(cfg, c->srv->files, fd);
		if (fd < 0)
			return (int)fd;
	}
	return make_file(c, (int)fd, &r->st, out);
}

/* list: a directory to read for a listing (O_DIRECTORY: anything else
 * fails before its open could act). */
static void set_how(struct conn *c, bool list)
{
	const struct httpd_config *cfg = c->srv->cfg;

	c->resp->how = (struct open_how){
		.flags = list ? O_RDONLY | O_DIRECTORY | O_CLOEXEC :
			 cfg->fd_dir >= 0 ? O_PATH | O_CLOEXEC :
			 O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
		.resolve = RESOLVE_NO_MAGICLINKS |
			   (cfg->follow_symlinks ? 0 : RESOLVE_BENEATH),
	};
}

static const char *rel(const struct resp *r)
{
	return r->path[0] ? r->path : ".";
}

/*
 * RESOLVE_BENEATH refuses every absolute symlink (EXDEV), also one whose
 * target lies under the root. Such a name is resolved again following its
 * links, as an O_PATH descriptor (link_how): that opens nothing, so a fifo
 * or a device it leads to outside DIR is never opened. link_open keeps it
 * when what it reached is under DIR's real path, and then opens that path
 * from DIR's own descriptor with no links at all, which must be the same
 * file (a DIR renamed and replaced since start refuses, as the served tree
 * is the old one). The O_PATH walk is the call that may read the disk; in
 * laio mode it is a lazy call of its own (K_OPEN_LINK), and the second
 * walk finds every name it needs cached.
 */
static const struct open_how link_how = {
	.flags = O_PATH | O_CLOEXEC,
	.resolve = RESOLVE_NO_MAGICLINKS,
};

static long link_open(const struct httpd_config *cfg, long pfd,
		      const struct open_how *how)
{
	struct open_how h = *how;
	size_t rl = strlen(cfg->root_real);
	char self[40], got[HTTPD_PATH_MAX + 1];
	const char *sub;
	struct stat a, b;
	ssize_t n;
	long fd;

	if (pfd < 0)
		return pfd;
	snprintf(self, sizeof(self), "/proc/self/fd/%ld", pfd);
	n = readlink(self, got, sizeof(got) - 1);
	if (n < 0 || (size_t)n < rl || memcmp(got, cfg->root_real, rl) ||
	    ((size_t)n > rl && got[rl] != '/' && rl > 1)) {
		close((int)pfd);
		return -EXDEV;
	}
	got[n] = 0;
	sub = got + rl;
	while (*sub == '/')
		sub++;
	h.resolve |= RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
	fd = syscall(SYS_openat2, cfg->rootfd, *sub ? sub : ".", &h, sizeof(h));
	if (fd < 0) {
		fd = errno == ELOOP ? -EXDEV : -errno;
	} else if (fstat((int)fd, &a) < 0 || fstat((int)pfd, &b) < 0 ||
		   a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		close((int)fd);
		fd = -EXDEV;
	}
	close((int)pfd);
	return fd;
}

static long open_within(const struct httpd_config *cfg, const char *path,
			const struct open_how *how)
{
	long pfd = syscall(SYS_openat2, cfg->rootfd, path, &link_how, sizeof(link_how));

	return link_open(cfg, pfd < 0 ? -errno : pfd, how);
}

/* Whether openat2's result res is a link RESOLVE_BENEATH refused that is
 * to be walked again within DIR (not under --follow-symlinks). */
static bool link_walk(const struct httpd_config *cfg, long res)
{
	return res == -EXDEV && !cfg->follow_symlinks;
}

/* openat2 by the resolution rules; res is its result so far. */
static long open_res(const struct httpd_config *cfg, const struct resp *r, long res)
{
	return link_walk(cfg, res) ? open_within(cfg, rel(r), &r->how) : res;
}

static long open_now(const struct httpd_config *cfg, const struct resp *r)
{
	long fd = syscall(SYS_openat2, cfg->rootfd, rel(r), &r->how, sizeof(r->how));

	return open_res(cfg, r, fd < 0 ? -errno : fd);
}

static long work_open(void *arg)
{
	struct conn *c = arg;
	struct resp *r = c->resp;
	const struct httpd_config *cfg = c->srv->cfg;
	long fd = open_now(cfg, r);

	if (fd >= 0)
		fd = path_check(cfg, fd, &r->st);
	/* the cache is the loop thread's: no shedding from here */
	if (fd >= 0 && cfg->fd_dir >= 0 && S_ISREG(r->st.st_mode))
		fd = reopen_now(cfg, NULL, fd);
	return fd;
}

static long work_read(void *arg)
{
	struct conn *c = arg;
	struct resp *r = c->resp;
	ssize_t n;

	do
		n = pread(r->rd_file->fd, r->rd_buf, r->rd_len, (off_t)r->rd_off);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static long work_list(void *arg)
{
	struct conn *c = arg;
	struct resp *r = c->resp;
	size_t len;
	long fd = open_now(c->srv->cfg, r);

	if (fd < 0)
		return fd;
	r->extra = listing_html((int)fd, r->path, &len);
	return r->extra ? (long)len : -errno;
}

static long open_res_lazy(struct conn *c, long res);
static int open_start(struct conn *c, struct file **out);

/* A background call is over (worker or laio): back on the loop thread. */
void files_complete(struct conn *c, long res)
{
	struct resp *r = c->resp;
	struct file *f = NULL;
	int err;

	c->waiting = false;
	if (c->state == C_CLOSING) {
		if ((r->kind == K_OPEN || r->kind == K_OPEN_LINK) && res >= 0)
			close((int)res);
		conn_released(c);
		return;
	}
	switch (r->kind) {
	case K_OPEN_LINK:
	case K_OPEN:
		if (r->kind == K_OPEN_LINK) {
			r->kind = K_OPEN;
			res = link_open(c->srv->cfg, res, &r->how);
		} else if (c->srv->cfg->disk_io == DISK_LAIO &&
			   (res = open_res_lazy(c, res)) == -EINPROGRESS) {
			return;
		}
		if ((res == -EMFILE || res == -ENFILE) && r->open_tries < 8 &&
		    files_make_room(c->srv->files)) {
			/* a worker cannot make room (the cache is the loop
			 * thread's), nor could a background laio call: again,
			 * while each try gives back a descriptor (a worker's
			 * open needs two) */
			r->open_tries++;
			if ((err = open_start(c, &f)) == -EINPROGRESS)
				return;
		} else if (res < 0)
			err = (int)res;
		else if (c->srv->cfg->disk_io == DISK_THREADS)
			err = make_file(c, (int)res, &r->st, &f);
		else
			err = opened_inline(c, res, &f);
		r->open_cb(c, f, err);
		break;
	default:
		r->read_cb(c, res);
		break;
	}
}

static void work_done(uaio_op *op, int res, void *data)
{
	files_complete(data, uaio_op_result_long(op));
}

static int to_pool(struct conn *c, long (*fn)(void *))
{
	int rc = uaio_op_work(c->srv->loop, &c->resp->op, fn, c, work_done, c);

	if (rc < 0)
		return rc;
	c->waiting = true;
	return -EINPROGRESS;
}

/* laio's answer: inline result, or registered with the hub. The hub's
 * lock spans the call and the registration, so no other thread's
 * laio_poll() can return the completion before it is registered. */
#define LAZY(c, ...) ({ \
	hub_lock((c)->srv); \
	long r_ = laio_syscall(__VA_ARGS__); \
	if (r_ < 0) { \
		r_ = -errno; \
		if (r_ == -EINPROGRESS) { \
			(c)->waiting = true; \
			hub_register((c)->srv, laio_gethandle(), (c)); \
		} \
	} \
	hub_unlock((c)->srv); \
	r_; })

/* laio mode's open_res: a link refused by RESOLVE_BENEATH is walked
 * again by a lazy call of its own. */
static long open_res_lazy(struct conn *c, long res)
{
	struct resp *r = c->resp;
	const struct httpd_config *cfg = c->srv->cfg;

	if (!link_walk(cfg, res))
		return res;
	r->kind = K_OPEN_LINK;
	res = LAZY(c, SYS_openat2, cfg->rootfd, rel(r), &link_how, sizeof(link_how));
	if (res == -EINPROGRESS)
		return res;
	r->kind = K_OPEN;
	return link_open(cfg, res, &r->how);
}

/* The cache had no entry: the open by the --disk-io mode. */
static int open_start(struct conn *c, struct file **out)
{
	struct server *s = c->srv;
	struct file_cache *fc = s->files;
	struct resp *r = c->resp;
	long fd;

	switch (s->cfg->disk_io) {
	case DISK_THREADS:
		return to_pool(c, work_open);
	case DISK_BLOCKING:
		fd = open_now(s->cfg, r);
		if ((fd == -EMFILE || fd == -ENFILE) && files_make_room(fc))
			fd = open_now(s->cfg, r);
		if (fd < 0)
			return (int)fd;
		break;
	default:
		fd = LAZY(c, SYS_openat2, s->cfg->rootfd, rel(r), &r->how,
			  sizeof(r->how));
		if ((fd == -EMFILE || fd == -ENFILE) && files_make_room(fc))
			fd = LAZY(c, SYS_openat2, s->cfg->rootfd, rel(r), &r->how,
				  sizeof(r->how));
		if (fd != -EINPROGRESS)
			fd = open_res_lazy(c, fd);
		if (fd < 0)
			return (int)fd;
		break;
	}
	return opened_inline(c, fd, out);
}

int files_open(struct conn *c, struct file **out, files_open_cb cb)
{
	struct resp *r = c->resp;

	if ((*out = files_find(c->srv->files, r->path)))
		return 0;
	set_how(c, false);
	r->kind = K_OPEN;
	r->open_cb = cb;
	r->open_tries = 0;
	return open_start(c, out);
}

ssize_t files_read(struct conn *c, struct file *f, void *buf, size_t len,
		   uint64_t off, files_read_cb cb)
{
	struct resp *r = c->resp;
	ssize_t n;

	r->kind = K_READ;
	r->read_cb = cb;
	r->rd_file = f;
	r->rd_buf = buf;
	r->rd_len = len;
	r->rd_off = off;
	switch (c->srv->cfg->disk_io) {
	case DISK_THREADS:
		return to_pool(c, work_read);
	case DISK_BLOCKING:
		do
			n = pread(f->fd, buf, len, (off_t)off);
		while (n < 0 && errno == EINTR);
		return n < 0 ? -errno : n;
	default:
		return LAZY(c, SYS_pread64, f->fd, buf, len, off);
	}
}

bool files_cached(struct conn *c, struct file *f, uint64_t off, uint64_t len)
{
	uint64_t end = off + len > f->size ? f->size : off + len;

	if (c->srv->cfg->disk_io != DISK_LAIO || off >= end)
		return false;
	return uaio_file_cached(f->fd, off, end - off) == 1;
}

ssize_t files_list(struct conn *c, files_read_cb cb)
{
	struct resp *r = c->resp;

	set_how(c, true);
	r->kind = K_LIST;
	r->read_cb = cb;
	/* laio has no lazy form of getdents (it would go to a helper thread
	 * anyway): both non-blocking modes use the worker pool. */
	if (c->srv->cfg->disk_io != DISK_BLOCKING)
		return to_pool(c, work_list);
	return work_list(c);
}
