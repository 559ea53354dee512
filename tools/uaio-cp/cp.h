/* SPDX-License-Identifier: MIT */
/*
 * uaio-cp: GNU cp 9.1's results for a recursive copy, with file data
 * moved by flows on one uaio loop while the tree walk goes on.
 *
 * One thread. walk.c decides, entry by entry, what cp would do and makes
 * directories, links and special files itself (cheap, and their results
 * are needed before the walk can go on); regular files become jobs
 * (data.c) that run on the loop, up to -j at a time. A directory's times
 * and mode are set when its walk and every job under it are done.
 */
#ifndef UAIO_CP_H
#define UAIO_CP_H

#include <fcntl.h>
#include <libintl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <uaio/flow.h>
#include <uaio/loop.h>
#include "tool_common.h"
#include "tool_quote.h"

/* cp's messages in the user's language: coreutils' own catalog (and
 * libattr's, for its attribute messages), whose msgids are these strings;
 * where none is installed, or in the C locale, the strings themselves. */
#define _(s)	dgettext("coreutils", s)
#define ATTR_(s) dgettext("attr", s)

/* Directories that may hold their two O_PATH descriptors at once, at
 * most (fewer under a tight RLIMIT_NOFILE): the walk's ancestors and
 * those with files in flight are the live ones. */
#define DIR_FDS		32u

enum { REFLINK_AUTO, REFLINK_ALWAYS, REFLINK_NEVER };
enum { SPARSE_AUTO, SPARSE_ALWAYS, SPARSE_NEVER };
enum { DEREF_UNSET, DEREF_NEVER, DEREF_ARGS, DEREF_ALWAYS };
/* Small files: io_uring ops through a registered buffer, whole on a
 * worker thread, or whole on the loop's thread; or, the default, whole
 * on a worker when cached, else by io_uring (data.c small_cached). The
 * environment's UAIO_CP_SMALL picks one for the benchmarks. */
enum { SMALL_AUTO, SMALL_URING, SMALL_WORK, SMALL_INLINE };

struct cp_opts {
	bool recursive, verbose, no_clobber, update, force, progress;
	bool no_target_dir, one_fs, remove_dest, strip_slashes;
	const char *target_dir;
	int unsupported;	/* the first option uaio-cp lacks, or 0 */
	int deref;		/* DEREF_* */
	int reflink, sparse;
	bool p_mode, p_owner, p_times, p_links, p_xattr;
	bool require_xattr;	/* --preserve=xattr named: failures are errors */
	bool reduce_diag;	/* -a: other xattr failures unsaid (cp's reduce_diagnostics) */
	bool open_dangling;	/* POSIXLY_CORRECT: write through a dangling symlink */
	bool require_preserve;	/* -a, -p, --preserve: a failed time or owner ends the file's metadata */
	bool explicit_no_mode;	/* --no-preserve=mode */
	bool want_context;	/* --preserve=context by name */
	unsigned jobs;		/* files in flight */
	bool tight;		/* RLIMIT_NOFILE too low for more than one */
	unsigned dir_fds;	/* directories that may hold descriptors (<= DIR_FDS) */
};

/* A destination file system's timestamp resolution in ns, as -u with
 * timestamps preserved finds it (utimecmp.c); exact once probed. */
struct cp_tsres {
	dev_t dev;
	int res;
	bool exact;
};
#define CP_TSRES_MAX 8

/* A destination directory waiting for its contents (walk.c). */
struct cp_dir {
	struct cp_dir *parent;
	char *src_name, *dst;
	struct stat src;
	unsigned refs;		/* the walk, plus each job inside it */
	bool fresh;		/* made by us: nothing in it yet, no lstat needed */
	bool made;		/* mkdir'd by us (cp sets its mode) */
	int restore;		/* its mode before we added u+rwx, or -1 */
	mode_t omitted;		/* permission bits left out at mkdir */
	/* O_PATH descriptors of the source and the destination, or -1: its
	 * entries are reached from them, not by walking the whole path
	 * again (cp_at). At most o.dir_fds directories hold them. */
	int sfd, dfd;
	/* -p's owner: a file made in it gets our uid and gid and the mode
	 * asked less the umask (not set-group-ID, no default ACL), as far as
	 * cp's result goes (dir_plain) */
	bool plain;
	/* Whether its first small file's data was cached (-1: not asked
	 * yet): its small files go whole to a worker, or by io_uring. */
	int small_cached;
	/* the destination directory's identity, once asked (walk.c) */
	bool dst_known;
	dev_t dst_dev;
	ino_t dst_ino;
};

/* The descriptor and name that reach path, an entry of d: d's directory
 * (dst: the destination side) and the entry's own name when d holds it
 * open, else AT_FDCWD and path. */
static inline int cp_at(const struct cp_dir *d, bool dst, const char *path,
			const char **name)
{
	int fd = !d ? -1 : dst ? d->dfd : d->sfd;

	*name = fd >= 0 ? strrchr(path, '/') + 1 : path;
	return fd >= 0 ? fd : AT_FDCWD;
}

#define CP_QUOTE_SLOTS	4

/* seen.c: (device, inode) -> name tables */
struct seen_ent;
struct cp_seen {
	struct seen_ent *v;
	size_t n, cap;
};
enum seen_match { SEEN_ANY, SEEN_STRING, SEEN_SAME_NAME };
void seen_add(struct cp_seen *s, dev_t dev, ino_t ino, const char *name);
/* A name filed under (dev, ino): any, the string name, or one naming the
 * same directory entry as name. */
const char *seen_find(const struct cp_seen *s, dev_t dev, ino_t ino,
		      enum seen_match how, const char *name);
void seen_forget(struct cp_seen *s, dev_t dev, ino_t ino, const char *name);
void seen_free(struct cp_seen *s);
ino_t seen_name_key(const char *name);	/* r->made's key for a name */
/* gnulib's same_name, as cp 9.1 calls it: a_target, b_target are the
 * target directory for a destination-side name, else NULL. */
bool cp_same_name(const char *a, const char *b, const char *a_target,
		  const char *b_target);

/* The engine object: everything a run owns. */
struct cp_run {
	const char *prog;
	struct cp_opts o;
	/* q() and ql()'s results, grown as names need: a message names at
	 * most CP_QUOTE_SLOTS */
	struct tool_str quoted[CP_QUOTE_SLOTS];
	unsigned quoted_next;
	uaio_loop *l;
	bool sigpipe_kills;	/* SIGPIPE at its default and not blocked */
	/* SIGXFSZ likewise, under a finite RLIMIT_FSIZE (EFBIG is then
	 * taken for that limit's, not the file system's own) */
	bool sigxfsz_kills;
	mode_t umask;
	bool root;
	uid_t euid;		/* who new files belong to */
	gid_t egid;
	int status;		/* the exit status so far */

	/* data.c */
	unsigned running;	/* jobs in flight */
	struct cp_job *jobs;	/* o.jobs slots */
	struct cp_job *free_jobs;
	uint8_t *bufs;		/* one small-file buffer per job slot */
	int buf_index;		/* their uaio_buf_register index, -1 (none), or: */
#define BUF_UNREGISTERED (-2)	/* no file read from disk yet (data.c) */
	int small;		/* how small files are copied: SMALL_* */
	/* SMALL_WORK (and SMALL_AUTO where cached): small files go to the
	 * loop's workers a batch at a time (whole.c, cp_batch) */
	struct cp_batch *batches, *free_batches, *pending;
	unsigned batches_out;	/* handed to the workers, not back yet */
	unsigned batch_max;	/* files per batch */
	dev_t clone_dev;	/* the source device FICLONE was last tried on */
	dev_t clone_ddev;	/* and the destination's */
	bool clone_ok;		/* and whether it worked */

	/* what cp remembers (seen.c): source inodes to their first copies
	 * (hard links, directories), and the command-line sources and
	 * destinations, checked when args_twice (two or more sources into
	 * a directory) */
	struct cp_seen links, srcs, made;
	bool args_twice;
	/* this command-line source has made its first directory */
	bool first_dir;
	/* This operand hit "into itself": as GNU cp, every directory being
	 * walked for it stops there. */
	bool into_self;
	const char *top_src, *top_dst;	/* the command-line names, for messages */
	const char *target;	/* SOURCE... DIRECTORY: that directory, else NULL */
	/* the target directory, opened (O_PATH) when a name below it is too
	 * long for the kernel (cp_dst_at), or NULL */
	struct cp_target *tgt;
	struct cp_tsres tsres[CP_TSRES_MAX];	/* utimecmp.c */
	unsigned ntsres;
	unsigned dir_fds;	/* directories holding sfd and dfd */

	/* progress.c */
	uint64_t bytes_total, bytes_done, files_total, files_done;
	uint64_t t0_ns, shown_ns;
	bool bar_on, bar_drawn;
};

/* The target directory of a SOURCE... DIRECTORY copy: its descriptor
 * (-1 until needed) and the length of the "DIR/" its destination names
 * begin with (walk.c). */
struct cp_target {
	const char *path;
	int fd;
	size_t plen;
};
struct cp_target *cp_target_new(const char *dir);
void cp_target_free(struct cp_target *t);
int cp_target_fd(struct cp_target *t);

/* The descriptor and name the kernel is given for path, a destination
 * name: path itself, or, when it is PATH_MAX or longer and lies in the
 * target directory, its part below it from the target's descriptor, as
 * cp 9.1 names what it makes there (only that part must fit). */
static inline int cp_dst_at(const struct cp_run *r, const char *path, const char **name)
{
	size_t n = strlen(path);
	int fd;

	*name = path;
	if (!r->tgt || n < PATH_MAX || n <= r->tgt->plen || (fd = cp_target_fd(r->tgt)) < 0)
		return AT_FDCWD;
	*name = path + r->tgt->plen;
	return fd;
}

/* fstatat(2) of a destination name, by cp_dst_at. */
static inline int cp_dst_stat(const struct cp_run *r, const char *path, struct stat *st,
			      int flags)
{
	const char *name;
	int at = cp_dst_at(r, path, &name);

	return fstatat(at, name, st, flags);
}

/* Whether the kernel would refuse path's name as too long. */
static inline bool cp_dst_too_long(const struct cp_run *r, const char *path)
{
	const char *name;

	(void)cp_dst_at(r, path, &name);
	return strlen(name) >= PATH_MAX;
}

/* The entry path of directory d by d's descriptor when d holds one, else
 * as cp_dst_at gives it. */
static inline int cp_dst_at_dir(const struct cp_run *r, const struct cp_dir *d,
				const char *path, const char **name)
{
	int at = cp_at(d, true, path, name);

	return at != AT_FDCWD ? at : cp_dst_at(r, path, name);
}

/* main.c / opts.c */
int cp_parse(struct cp_run *r, int argc, char **argv, int *first);
void cp_refuse_unsupported(struct cp_run *r);

/* quote.c: a name as cp prints it (valid until CP_QUOTE_SLOTS more) */
const char *q(struct cp_run *r, const char *s);	/* quoteaf: most messages */
const char *ql(struct cp_run *r, const char *s);	/* quote: ACL and argument messages */
void cp_quote_free(struct cp_run *r);
void cp_err(struct cp_run *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Out of memory: "PROG: memory exhausted" and exit 1, as cp's xalloc_die. */
_Noreturn void cp_oom(void);
/* "error writing NAME", or death by SIGPIPE as cp's own write would
 * give (status 141, no message) for a pipe nobody reads, or by SIGXFSZ
 * (status 153) for a write past RLIMIT_FSIZE. */
void cp_write_err(struct cp_run *r, int err, const char *name);
/* "error copying SRC to DST": cp 9.1's sparse_copy on any failure of its
 * copy_file_range; or death by SIGXFSZ as cp_write_err. */
void cp_copy_err(struct cp_run *r, int err, const char *src, const char *dst);

void cp_warn(struct cp_run *r, const char *fmt, ...)	/* exit status kept */
	__attribute__((format(printf, 2, 3)));

/* walk.c */
int cp_top(struct cp_run *r, const char *src, const char *dst, bool into);
/* The name cp_top gives src's copy in directory dir (malloc'd). */
char *cp_top_name(const char *src, const char *dir);
void cp_copy_dir(struct cp_run *r, struct cp_dir *pd, const char *src,
		 const char *dst, const struct stat *st, bool exists);
void cp_dir_put(struct cp_run *r, struct cp_dir *d);

/* entry.c: one source entry, as cp's copy_internal. sfd: the source
 * already open (regular files found by the walk), else -1; taken. */
void cp_entry(struct cp_run *r, struct cp_dir *pd, const char *src,
	      const char *dst, const struct stat *st, bool top, int sfd);
/* Says why a job could not create dst (err: its open's errno). */
void cp_create_failed(struct cp_run *r, int err, const char *dst);

/* utimecmp.c: the destination's mtime against the source's, <0, 0, >0
 * (-2: the probe failed); truncate: cut the source's to what the
 * destination's file system keeps, as cp -u does when preserving times */
int cp_utimecmp(struct cp_run *r, int at, const char *name, const struct stat *d,
		const struct stat *s, bool truncate);

/* data.c */
int cp_data_init(struct cp_run *r);
void cp_data_fini(struct cp_run *r);
/* Copies a regular file (src_fd is open for reading; dst_fd >= 0 if the
 * destination is already open, else it is created with create_mode).
 * Takes src_fd and dst_fd; the job holds a reference on dir. The
 * verdicts on the destination are the walk's: this only moves data. */
int cp_file(struct cp_run *r, struct cp_dir *dir, const char *src,
	    const char *dst, int src_fd, const struct stat *st, int dst_fd,
	    bool is_new, mode_t create_mode, mode_t omitted, unsigned has,
	    bool tracked);
/* Runs the loop until fewer than want jobs are running. */
void cp_drain(struct cp_run *r, unsigned want);
/* An open that failed with err: when it was for want of descriptors
 * (EMFILE, ENFILE) and a job is running, waits for one to end and give
 * its back, and says to try again; else false, errno untouched. */
bool cp_fd_wait(struct cp_run *r, int err);
/* Runs the loop until no job writes st's inode (as an existing
 * destination); true if it ran. */
bool cp_wait_writer(struct cp_run *r, const struct stat *st);
/* Runs the loop until no job reads the file dst names. */
void cp_wait_reader(struct cp_run *r, const char *dst);
/* Runs the loop until no job writes dst. */
void cp_wait_file(struct cp_run *r, const char *dst);
/* Whether a running job makes files in the directory st names. */
bool cp_jobs_write_into(struct cp_run *r, const struct stat *st);
/* Whether a job is reading the file (dev, ino). */
bool cp_reading(const struct cp_run *r, dev_t dev, ino_t ino);

/* meta.c: what cp does to a finished destination. fd < 0: by name. */
struct cp_note {
	int err;
	/* message: fmt (a msgid of domain's catalog) with 'dst' for its %s,
	 * then ": strerror(err)" */
	const char *fmt, *domain;
	bool locale;		/* 'dst' quoted by ql(), not q() */
	bool warn;		/* said, the exit status kept */
	/* else fmt has one or two %s, each this name (an attribute's, or
	 * the source's) quoted: as in cp 9.1, whose libattr messages quote
	 * both names into one buffer */
	char *name;
};
struct cp_notes {
	unsigned n, cap;
	bool lost;		/* a note that could not be kept */
	bool failed;		/* the copy failed, said or not (cp's set_owner says nothing) */
	struct cp_note *v;
};
/* What a new file already has, so cp_meta_apply need not set it; and
 * CP_ADDED_WUSR: u+w given at creation only so the xattrs could be set,
 * to be taken back. */
enum { CP_HAS_OWNER = 1, CP_HAS_MODE = 2, CP_ADDED_WUSR = 4 };
/* Any thread: reads only r's options; failures go to out. has: CP_HAS_*.
 * False when -p/-a's metadata stopped (a time, owner or mode not kept
 * under require_preserve): cp counts the copy as failed. */
bool cp_meta_apply(const struct cp_run *r, int src_fd, const char *src, int fd,
		   const char *dst, const struct stat *st, bool is_new,
		   mode_t omitted, int restore_mode, unsigned has,
		   struct cp_notes *out);
/* The loop's thread: prints out's messages for dst, and empties it. */
void cp_notes_report(struct cp_run *r, struct cp_notes *n, const char *dst);
/* Both, on the loop's thread. */
void cp_meta(struct cp_run *r, int src_fd, const char *src, int fd,
	     const char *dst, const struct stat *st, bool is_new,
	     mode_t omitted, int restore_mode);

/* progress.c */
void cp_bar_start(struct cp_run *r);
void cp_bar_tick(struct cp_run *r);
void cp_bar_stop(struct cp_run *r);
void cp_bar_hide(struct cp_run *r);
/* entry.c: -v's "SRC -> DST" */
void cp_verbose(struct cp_run *r, const char *src, const char *dst);

uint64_t cp_now_ns(void);

#endif
