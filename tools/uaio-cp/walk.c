/* SPDX-License-Identifier: MIT */
/*
 * The walk: the command-line sources, and each directory's entries in
 * cp's order, sorted by inode number as cp's savedir reads them; what is
 * done with each entry is entry.c's.
 *
 * A directory is read whole and closed before its entries are copied
 * (as cp does). The first o.dir_fds live directories keep an O_PATH
 * descriptor on each side, so an entry costs a lookup of its own name
 * only; deeper ones go by path, so the descriptors stay bounded however
 * deep the tree. A regular file (d_type) is opened straight away, without
 * the lstat, as its fstat says all the lstat would.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "cp.h"

/* ------------------------------------------------------------ helpers */

/* gnulib's file_name_concat, as cp names things: dir's trailing slashes
 * become one ("x//" and "f" make "x/f"); a dir of slashes only is kept
 * ("//" and "f" make "//f"). */
static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	bool slash;

	if (strspn(dir, "/") < a)
		while (dir[a - 1] == '/')
			a--;
	slash = a && dir[a - 1] != '/';
	char *p = malloc(a + slash + b + 1);

	if (!p) {
		cp_oom();
	}
	memcpy(p, dir, a);
	if (slash)
		p[a] = '/';
	memcpy(p + a + slash, name, b + 1);
	return p;
}

/* -------------------------------------------------------- directories */

/* See cp_dir.plain. Asked only when it is used (-p's owner). A directory
 * of another group may give a new file its group without S_ISGID (a
 * grpid / bsdgroups mount): not plain then. */
static bool dir_plain(const struct cp_run *r, const struct cp_dir *d)
{
	struct stat st;

	if ((d->dfd >= 0 ? fstat(d->dfd, &st) : lstat(d->dst, &st)) < 0 ||
	    !S_ISDIR(st.st_mode) || (st.st_mode & S_ISGID) || st.st_gid != r->egid)
		return false;
	return getxattr(d->dst, "system.posix_acl_default", NULL, 0) < 0 &&
	       (errno == ENODATA || errno == EOPNOTSUPP);
}

static void dir_fds_open(struct cp_run *r, struct cp_dir *d)
{
	const char *name;
	int at;

	d->sfd = d->dfd = -1;
	if (r->dir_fds >= r->o.dir_fds)
		return;
	at = cp_at(d->parent, false, d->src_name, &name);
	d->sfd = openat(at, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	at = cp_dst_at_dir(r, d->parent, d->dst, &name);
	d->dfd = openat(at, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (d->sfd < 0 || d->dfd < 0) {
		if (d->sfd >= 0)
			close(d->sfd);
		if (d->dfd >= 0)
			close(d->dfd);
		d->sfd = d->dfd = -1;
		return;
	}
	r->dir_fds++;
}

void cp_dir_put(struct cp_run *r, struct cp_dir *d)
{
	if (!d || --d->refs)
		return;
	if (d->sfd >= 0) {
		close(d->sfd);
		close(d->dfd);
		r->dir_fds--;
	}
	cp_meta(r, -1, d->src_name, -1, d->dst, &d->src, d->made, d->omitted,
		d->restore);
	cp_dir_put(r, d->parent);
	free(d->dst);
	free(d->src_name);
	free(d);
}

struct ent {
	ino_t ino;
	size_t name;		/* offset in the names arena */
	unsigned char type;	/* DT_* */
};

static int by_ino(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

void cp_copy_dir(struct cp_run *r, struct cp_dir *pd, const char *src,
		 const char *dst, const struct stat *st, bool exists)
{
	struct cp_dir *d = calloc(1, sizeof(*d));
	struct ent *ents = NULL;
	char *names = NULL;
	size_t n = 0, cap = 0, nlen = 0, ncap = 0;
	struct dirent *de;
	DIR *dir;

	if (!d) {
		cp_err(r, ENOMEM, "%s", q(r, src));
		return;
	}
	for (struct cp_dir *a = pd; a; a = a->parent)
		if (a->src.st_dev == st->st_dev && a->src.st_ino == st->st_ino) {
			cp_err(r, 0, _("cannot copy cyclic symbolic link %s"), q(r, src));
			free(d);
			return;
		}
	d->restore = -1;
	d->small_cached = -1;
	/* Files the jobs still make in this very directory (it is the
	 * destination too: cp -r . sub, with sub inside the source; -L and a
	 * link back to it): cp, one file after the other, finds them all in
	 * it, before the directory made here; so do we. */
	if (cp_jobs_write_into(r, st))
		cp_drain(r, 1);
	if (!exists) {
		mode_t mode = st->st_mode & 07777;
		const char *name;
		int at = cp_dst_at(r, dst, &name);

		d->omitted = mode & (r->o.p_owner ? 077 : 022);
		if (mkdirat(at, name, mode & ~d->omitted) < 0) {
			cp_err(r, errno, _("cannot create directory %s"), q(r, dst));
			free(d);
			return;
		}
		cp_verbose(r, src, dst);
		d->made = d->fresh = true;
		/* We need to write into it: u+rwx for now, as cp. */
		if ((mode & ~d->omitted & ~r->umask & S_IRWXU) != S_IRWXU) {
			struct stat now;

			if (fstatat(at, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
			    fchmodat(at, name, (now.st_mode & 07777) | S_IRWXU, 0) == 0)
				d->restore = now.st_mode & 07777;
		}
		if (!r->first_dir) {
			/* cp remembers the first directory each source makes:
			 * the walk meeting it is a copy into itself (entry.c) */
			struct stat now;

			if (fstatat(at, name, &now, AT_SYMLINK_NOFOLLOW) == 0)
				seen_add(&r->links, now.st_dev, now.st_ino, dst);
			r->first_dir = true;
		}
	}
	d->parent = pd;
	if (pd)
		pd->refs++;
	d->refs = 1;
	d->src = *st;
	d->dst = strdup(dst);
	d->src_name = strdup(src);
	dir_fds_open(r, d);
	d->plain = r->o.p_owner && dir_plain(r, d);

	if (r->o.one_fs && pd && st->st_dev != pd->src.st_dev)
		goto done;	/* -x: the mount point is made, not filled */
	while (!(dir = opendir(src)) && cp_fd_wait(r, errno))
		;
	if (!dir) {
		cp_err(r, errno, _("cannot access %s"), q(r, src));
		goto done;
	}
	errno = 0;
	while ((de = readdir(dir))) {
		size_t len = strlen(de->d_name) + 1;

		if (de->d_name[0] == '.' && (!de->d_name[1] ||
		    (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			ents = realloc(ents, cap * sizeof(*ents));
		}
		if (nlen + len > ncap) {
			ncap = ncap ? 2 * ncap : 4096;
			while (nlen + len > ncap)
				ncap *= 2;
			names = realloc(names, ncap);
		}
		if (!ents || !names) {
			cp_oom();
		}
		memcpy(names + nlen, de->d_name, len);
		ents[n++] = (struct ent){ de->d_ino, nlen, de->d_type };
		nlen += len;
	}
	if (errno)
		cp_err(r, errno, _("cannot access %s"), q(r, src));
	closedir(dir);
	if (n)
		qsort(ents, n, sizeof(*ents), by_ino);

	for (size_t i = 0; i < n && !r->into_self; i++) {
		char *s = join(src, names + ents[i].name);
		char *t = join(dst, names + ents[i].name);
		struct stat cst;
		int at_follow = r->o.deref == DEREF_ALWAYS ? 0 : AT_SYMLINK_NOFOLLOW;
		const char *name;
		int at = cp_at(d, false, s, &name), sfd = -1, ret;

		if (strlen(s) >= PATH_MAX) {
			/* cp names files by their whole path: it stops here */
			cp_err(r, ENAMETOOLONG, _("cannot stat %s"), q(r, s));
			free(s);
			free(t);
			continue;
		}

		/* Any surprise (no longer a file, unreadable) takes the lstat
		 * path, which says what cp says, where cp says it. A job slot
		 * first, as copy_reg waits for one: no source is held open
		 * that no job could start on. */
		if (ents[i].type == DT_REG)
			cp_drain(r, r->o.jobs);
		if (ents[i].type == DT_REG &&
		    (sfd = openat(at, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW)) >= 0 &&
		    (fstat(sfd, &cst) < 0 || !S_ISREG(cst.st_mode))) {
			close(sfd);
			sfd = -1;
		}
		ret = sfd >= 0 ? 0 : fstatat(at, name, &cst, at_follow);
		/* A link followed under -L may lead into the copy being made:
		 * to a file a job is still creating or writing. cp, copying
		 * one file after the other, would find it whole. */
		if (r->o.deref == DEREF_ALWAYS && r->running && ents[i].type != DT_REG &&
		    ents[i].type != DT_DIR && (ret == 0 ? S_ISREG(cst.st_mode) : errno == ENOENT)) {
			cp_drain(r, 1);
			ret = fstatat(at, name, &cst, 0);
		}
		/* a destination being written: another name of it, or the
		 * file an existing symlink there led the job to */
		if (ret == 0 && S_ISREG(cst.st_mode) && cp_wait_writer(r, &cst))
			ret = sfd >= 0 ? fstat(sfd, &cst) : fstatat(at, name, &cst, at_follow);
		if (ret < 0)
			cp_err(r, errno, _("cannot stat %s"), q(r, s));
		else
			cp_entry(r, d, s, t, &cst, false, sfd);
		free(s);
		free(t);
	}
	free(ents);
	free(names);
done:
	cp_dir_put(r, d);
}

static char *strip_slashes(const char *s)
{
	size_t n = strlen(s);
	char *p;

	while (n > 1 && s[n - 1] == '/')
		n--;
	if (!(p = strndup(s, n))) {
		cp_oom();
	}
	return p;
}

/* (trailing slashes are no part of the name, stripped or not) */
struct cp_target *cp_target_new(const char *dir)
{
	struct cp_target *t = malloc(sizeof(*t));
	char *p = join(dir, "");

	if (!t)
		cp_oom();
	*t = (struct cp_target){ .path = dir, .fd = -1, .plen = strlen(p) };
	free(p);
	return t;
}

int cp_target_fd(struct cp_target *t)
{
	if (t->fd < 0)
		t->fd = open(t->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return t->fd;
}

void cp_target_free(struct cp_target *t)
{
	if (t && t->fd >= 0)
		close(t->fd);
	free(t);
}

char *cp_top_name(const char *src, const char *dir)
{
	const char *base = src + strlen(src);
	size_t len;

	while (base > src && base[-1] == '/')
		base--;
	len = (size_t)(base - src);
	while (base > src && base[-1] != '/')
		base--;
	len -= (size_t)(base - src);
	char name[len + 1];

	memcpy(name, base, len);
	name[len] = 0;
	/* cp -R src/.. dir copies into dir itself, not its parent */
	return join(dir, !len ? "" : strcmp(name, "..") ? name : ".");
}

/* One command-line source. into: dst is the directory to put it in. */
int cp_top(struct cp_run *r, const char *src, const char *dst, bool into)
{
	struct stat st;
	char *target = NULL, *stripped = NULL;
	int ret;

	if (into && r->o.strip_slashes) {
		/* cp 9.1 strips them in the SOURCE... DIRECTORY form only */
		stripped = strip_slashes(src);
		src = stripped;
	}
	if (into)
		dst = target = cp_top_name(src, dst);
	ret = r->o.deref == DEREF_NEVER ? lstat(src, &st) : stat(src, &st);
	if (ret < 0) {
		cp_err(r, errno, _("cannot stat %s"), q(r, src));
	} else {
		r->first_dir = r->into_self = false;
		r->top_src = src;
		r->top_dst = dst;
		cp_entry(r, NULL, src, dst, &st, true, -1);
	}
	free(target);
	free(stripped);
	return ret;
}
