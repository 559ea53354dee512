/* SPDX-License-Identifier: MIT */
/* uaio-flow: files read, and files made under a temporary name. */
#include "tool.h"

#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ------------------------------------------------------------- files */

/* A FIFO's open waits for its other end. */
static int open_waiting(const char *path, int flags)
{
	int fd;

	blocking_begin();
	fd = open(path, flags | O_CLOEXEC);
	blocking_end();
	return fd;
}

const char *quote_slot(int n, const char *name, enum tool_quoting how)
{
	static struct tool_str slot[2];

	tool_quote_into(&slot[n], name, how);
	return slot[n].p;
}

void fail_file(const char *path, int err)
{
	fail(QFS(0, path), err);
}

int open_in(const struct tool *t, const char *path)
{
	int fd = strcmp(path, "-") ? open_waiting(path, O_RDONLY) : 0;

	if (fd == 0 && t->closed[0])
		fail_file("-", EBADF);
	if (fd < 0)
		fail_file(path, errno);
	return fd;
}

/* Writes the existing file at o->path in place, as cp does, instead of
 * a temporary (dropped): a failed transfer leaves it cut short. Emptied
 * by out_ready, once the transfer is about to begin. */
static void write_in_place(struct outfile *o)
{
	if (o->tmp) {
		close(o->fd);
		unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		partial_set(NULL);
	}
	if ((o->fd = open_waiting(o->path, O_WRONLY)) < 0)
		fail_file(o->path, errno);
	o->emptied = false;
}

void out_ready(struct outfile *o)
{
	if (!o->emptied && ftruncate(o->fd, 0) < 0)
		fail_file(o->path, errno);
	o->emptied = true;
}

/* Whether the file at path has extended attributes a new inode would
 * not get: an access ACL, user.*, trusted.*, file capabilities... (an
 * SELinux label comes with any new file). */
static bool has_own_xattrs(const char *path)
{
	char names[4096];
	ssize_t n = listxattr(path, names, sizeof(names));

	if (n < 0)	/* ENOTSUP: none; ERANGE (a long list): some */
		return errno == ERANGE;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1)
		if (strcmp(names + i, "security.selinux"))
			return true;
	return false;
}

/* An existing file is replaced by rename only when the new inode can be
 * to everyone what the old one was: its mode (set-user-ID, set-group-ID
 * and sticky included: fchown clears the first two, and fchmod drops
 * set-group-ID silently for a group the caller is not in), owner and
 * group, no extended attributes (an ACL, user.* ...), and no other name.
 * Else it is written in place, as cp writes it. */
static void replace(struct outfile *o, const struct stat *old)
{
	struct stat now;

	if (old->st_nlink == 1 && !has_own_xattrs(o->path) &&
	    fstat(o->fd, &now) == 0 &&
	    ((now.st_uid == old->st_uid && now.st_gid == old->st_gid) ||
	     fchown(o->fd, old->st_uid, old->st_gid) == 0) &&
	    fchmod(o->fd, old->st_mode & 07777) == 0 && fstat(o->fd, &now) == 0 &&
	    (now.st_mode & 07777) == (old->st_mode & 07777)) {
		if (old->st_mode & (S_ISUID | S_ISGID))
			o->setid = old->st_mode & 07777;
		return;
	}
	write_in_place(o);
}

/* DST may be -, an existing device or fifo (written in place), a
 * directory (SRC's name inside it), or a file to create or replace.
 * src_st: the source's, when it is a named file (the same file is
 * refused). */
void open_out(const struct tool *t, struct outfile *o, const char *dst,
	      const char *src, const struct stat *src_st, mode_t mode)
{
	struct stat st, old;
	bool replacing;
	char *copy, *base, *dir;

	o->tmp = NULL;
	o->emptied = true;
	o->setid = 0;
	o->path = strdup(dst);
	if (!strcmp(dst, "-")) {
		if (t->closed[1])
			fail_file("-", EBADF);
		/* As cat: standard output the source file itself, with bytes
		 * of it still to read (">>", or "<>"): the copy would read what
		 * it wrote, for ever. */
		if (src_st && S_ISREG(src_st->st_mode) && fstat(1, &st) == 0 &&
		    S_ISREG(st.st_mode) && st.st_dev == src_st->st_dev &&
		    st.st_ino == src_st->st_ino && st.st_size > 0) {
			fprintf(stderr, "%s: %s: input file is output file\n", ME, QAS(0, src));
			exit(1);
		}
		o->fd = 1;
		return;
	}
	/* "" names nothing (open(2) says ENOENT), and "name/" is a
	 * directory or nothing: refused before any byte moves */
	if (!*dst)
		fail_file(dst, ENOENT);
	if (dst[strlen(dst) - 1] == '/' && (stat(dst, &st) < 0 || !S_ISDIR(st.st_mode)))
		fail_file(dst, ENOTDIR);
	if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
		char *s = strdup(src ? src : "-");

		free(o->path);
		if (!src || !strcmp(src, "-"))
			die_usage(src ? "cannot name a file in directory %s after stdin" :
				  "cannot name a file in directory %s after a connection",
				  QAS(0, dst));
		/* "dir/" names dir/NAME, not dir//NAME (cp's name too) */
		if (asprintf(&o->path, "%s%s%s", dst, dst[strlen(dst) - 1] == '/' ? "" : "/",
			     basename(s)) < 0)
			fail_file(dst, ENOMEM);
		free(s);
		/* What is there under that name decides, as for DST itself. */
		if (stat(o->path, &st) == 0 && S_ISDIR(st.st_mode))
			fail_file(o->path, EISDIR);
	}
	replacing = stat(o->path, &old) == 0;
	/* (stat followed any symbolic link: old is the file it leads to;
	 * the name shown is the one given, in DST when DST is a directory,
	 * as cp shows it; a device or FIFO too, as cp refuses them; standard
	 * input when it is the file itself, which writing in place would
	 * have emptied before the read) */
	if (replacing && src_st && src && (strcmp(src, "-") || S_ISREG(src_st->st_mode)) &&
	    old.st_dev == src_st->st_dev && old.st_ino == src_st->st_ino) {
		fprintf(stderr, "%s: %s and %s are the same file\n", ME, QAS(0, src),
			QAS(1, o->path));
		exit(1);
	}
	if (replacing && !S_ISREG(old.st_mode)) {
		if ((o->fd = open_waiting(o->path, O_WRONLY)) < 0)
			fail_file(o->path, errno);
		return;
	}
	/* A symbolic link is written through, as cp writes: the file it
	 * leads to is the one replaced, never the link. */
	if (lstat(o->path, &st) == 0 && S_ISLNK(st.st_mode)) {
		char *real = realpath(o->path, NULL);

		if (!real && errno == ENOENT) {
			fprintf(stderr, "%s: not writing through dangling symlink %s\n",
				ME, QAS(0, o->path));
			exit(1);
		}
		if (!real)
			fail_file(o->path, errno);
		free(o->path);
		o->path = real;
	}
	/* One the user may not write is refused, as cp (without -f) refuses
	 * it: the rename would replace it all the same. */
	if (replacing && faccessat(AT_FDCWD, o->path, W_OK, AT_EACCESS) < 0)
		fail_file(o->path, errno);
	copy = strdup(o->path);
	base = strdup(o->path);
	dir = dirname(copy);
	/* the name's first 200 bytes: a name of up to NAME_MAX still fits */
	if (asprintf(&o->tmp, "%s/.%.200s.uaio-XXXXXX", dir, basename(base)) < 0)
		fail_file(o->path, ENOMEM);
	free(copy);
	free(base);
	if ((o->fd = mkostemp(o->tmp, O_CLOEXEC)) < 0) {
		int e = errno;

		free(o->tmp);
		o->tmp = NULL;
		if (replacing) {	/* no temporary here (a read-only directory) */
			write_in_place(o);
			return;
		}
		fail_file(o->path, e);
	}
	partial_set(o);
	if (replacing) {
		replace(o, &old);
		return;
	}
	/* As a new file gets it from cp: the mode asked for, less the
	 * umask, and never set-user-ID, set-group-ID or sticky. */
	{
		mode_t um = umask(0);

		umask(um);
		fchmod(o->fd, mode & ~um & 0777);
	}
}

int close_out(struct outfile *o, bool ok)
{
	int r = 0;

	/* a write by a process without CAP_FSETID cleared them: again, as
	 * replace() found they could be set */
	if (ok && o->tmp && o->setid && fchmod(o->fd, o->setid) < 0) {
		fprintf(stderr, "%s: %s: %s\n", ME, QFS(0, o->path), strerror(errno));
		ok = false;
		r = -1;
	}
	if (o->fd > 2 && close(o->fd) < 0 && ok) {
		fprintf(stderr, "%s: %s: %s\n", ME, QFS(0, o->path), strerror(errno));
		ok = false;
		r = -1;
	}
	if (o->tmp) {
		if (ok)
			late_signals();
		if (ok && rename(o->tmp, o->path) < 0) {
			fprintf(stderr, "%s: %s: %s\n", ME, QFS(0, o->path), strerror(errno));
			r = -1;
			ok = false;
		}
		if (!ok)
			unlink(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
	}
	partial_set(NULL);
	free(o->path);
	return r;
}
