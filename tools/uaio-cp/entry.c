/* SPDX-License-Identifier: MIT */
/*
 * One source entry: what GNU cp 9.1 does with it (copy_internal and
 * same_file_ok in coreutils' copy.c), step by step and in cp's order, so
 * the same checks refuse the same cases with the same words. Directories
 * go to walk.c, regular files to data.c as jobs; symbolic links, hard
 * links and special files are made here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cp.h"

#define SAME_INODE(a, b) ((a).st_dev == (b).st_dev && (a).st_ino == (b).st_ino)

/* -v's lines, with the bar out of their way (progress.c) */
void cp_verbose(struct cp_run *r, const char *src, const char *dst)
{
	if (r->o.verbose) {
		cp_bar_hide(r);
		printf("%s -> %s\n", q(r, src), q(r, dst));
	}
}

static void verbose_removed(struct cp_run *r, const char *dst)
{
	if (r->o.verbose) {
		cp_bar_hide(r);
		printf(_("removed %s\n"), q(r, dst));
	}
}

static int remove_existing(struct cp_run *r, const char *dst)
{
	const char *name;
	int at = cp_dst_at(r, dst, &name);

	if (unlinkat(at, name, 0) < 0 && errno != ENOENT) {
		cp_err(r, errno, _("cannot remove %s"), q(r, dst));
		return -1;
	}
	verbose_removed(r, dst);
	return 0;
}

/* cp's same_file_ok for the options uaio-cp has (no backups, no -l/-s):
 * whether copying src onto an existing dst that may be the same file, or
 * a link to it, loses nothing. *done: nothing to do, and no error. */
static bool same_file_ok(const struct cp_run *r, const char *src,
			 const struct stat *src_sb, const char *dst,
			 const struct stat *dst_sb, bool *done)
{
	const struct stat *sl = src_sb, *dl = dst_sb;
	struct stat ts, td;
	bool same = SAME_INODE(*src_sb, *dst_sb), same_link;
	const char *dname;
	int dat = cp_dst_at(r, dst, &dname);

	*done = false;
	if (r->o.deref == DEREF_NEVER) {
		same_link = same;
		/* Two symlinks: fine unless they are one entry. */
		if (S_ISLNK(src_sb->st_mode) && S_ISLNK(dst_sb->st_mode)) {
			bool sn = cp_same_name(src, dst, NULL, r->target);

			if (!sn && same_link) {
				*done = true;
				return true;
			}
			return !sn;
		}
	} else {
		if (!same)
			return true;
		if (fstatat(dat, dname, &td, AT_SYMLINK_NOFOLLOW) != 0 || lstat(src, &ts) != 0)
			return true;
		sl = &ts;
		dl = &td;
		same_link = SAME_INODE(ts, td);
		if (S_ISLNK(ts.st_mode) && S_ISLNK(td.st_mode) && r->o.remove_dest)
			return true;
	}
	if (r->o.remove_dest) {
		/* dst goes before it is opened: a link there costs nothing */
		if (S_ISLNK(dl->st_mode))
			return true;
		if (same_link && dl->st_nlink > 1 && !cp_same_name(src, dst, NULL, r->target))
			return true;
	}
	if (!S_ISLNK(sl->st_mode) && !S_ISLNK(dl->st_mode) && !SAME_INODE(*sl, *dl))
		return true;
	if (r->o.deref == DEREF_NEVER) {
		/* A symlink onto what it points to, or the reverse. */
		if (S_ISLNK(sl->st_mode) ? stat(src, &ts) != 0 : (ts = *sl, false))
			return true;
		if (S_ISLNK(dl->st_mode) ? fstatat(dat, dname, &td, 0) != 0 : (td = *dl, false))
			return true;
		if (!SAME_INODE(ts, td))
			return true;
	}
	return false;
}

/* cp's remember_copied: the destination first recorded for this source
 * inode, or NULL after recording dst as that one. */
static const char *remember(struct cp_run *r, const struct stat *st, const char *dst)
{
	const char *earlier = seen_find(&r->links, st->st_dev, st->st_ino, SEEN_ANY, NULL);

	if (!earlier)
		seen_add(&r->links, st->st_dev, st->st_ino, dst);
	return earlier;
}

/* link(2), replacing dst only once the link exists (gnulib's
 * force_linkat: a link under a temporary name in dst's directory, renamed
 * over dst), so a link that cannot be made leaves dst as it was. 0, 1 if
 * it replaced dst, or -errno. */
static int link_replacing(const struct cp_run *r, const char *earlier, const char *dst)
{
	size_t dir = strlen(dst);
	const char *en, *dn, *tn;
	int eat = cp_dst_at(r, earlier, &en), dat = cp_dst_at(r, dst, &dn), tat;

	if (linkat(eat, en, dat, dn, 0) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	while (dir && dst[dir - 1] != '/')
		dir--;
	char tmp[dir + 24];

	memcpy(tmp, dst, dir);
	for (unsigned k = 0; k < 100; k++) {
		snprintf(tmp + dir, 24, ".uaio-cp.%u.%u", (unsigned)getpid(), k);
		tat = cp_dst_at(r, tmp, &tn);
		if (linkat(eat, en, tat, tn, 0) == 0) {
			/* rename does nothing when dst is already this file's
			 * link: the temporary name goes either way */
			int e = renameat(tat, tn, dat, dn) == 0 ? 0 : errno;

			unlinkat(tat, tn, 0);
			return e ? -e : 1;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* A hard link at dst to the copy made before. */
static void hard_link(struct cp_run *r, const char *earlier, const char *dst)
{
	int ret = link_replacing(r, earlier, dst);

	if (ret < 0)
		cp_err(r, -ret, _("cannot create hard link %s to %s"), q(r, dst), q(r, earlier));
	else if (ret)
		verbose_removed(r, dst);
}

/* sfd: the source, when the walk opened it already (and fstat'd it into
 * lst), else -1. Takes it. tracked: later names will link to this one, so
 * it is created here, before they come. false: nothing was made. */
static bool copy_reg(struct cp_run *r, struct cp_dir *pd, const char *src,
		     const char *dst, const struct stat *lst, bool exists, int sfd,
		     bool tracked, bool dangling)
{
	int follow = r->o.deref == DEREF_NEVER ? O_NOFOLLOW : 0, dfd = -1;
	const char *name, *dname;
	int at = cp_at(pd, false, src, &name), dat = cp_dst_at(r, dst, &dname);
	/* Already ours: no owner to change, so nothing to hide meanwhile. */
	bool ours = r->o.p_owner && !exists && pd && pd->plain &&
		    lst->st_uid == r->euid && lst->st_gid == r->egid;
	/* Bits left out of a new file until its owner is set; an existing
	 * file keeps its mode (cp opens it O_TRUNC and leaves that alone). */
	mode_t omitted = r->o.p_owner && !ours && !exists ? lst->st_mode & 077 : 0;
	mode_t create = (lst->st_mode & 0777) & ~omitted;
	unsigned has = 0;
	struct stat st = *lst;
	bool opened = sfd < 0;

	if (opened) {
		/* a slot first: the walk holds no source a job could not
		 * start on, and its descriptor is not taken from the jobs */
		cp_drain(r, r->o.jobs);
		while ((sfd = openat(at, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | follow)) < 0 &&
		       cp_fd_wait(r, errno))
			;
	}
	if (sfd < 0) {
		cp_err(r, errno, _("cannot open %s for reading"), q(r, src));
		return false;
	}
	if (!exists && ((dangling && !r->o.open_dangling) || dst[strlen(dst) - 1] == '/' ||
			strlen(dname) >= PATH_MAX)) {
		int err = ENAMETOOLONG;

		if (dangling) {
			cp_err(r, 0, _("not writing through dangling symlink %s"), q(r, dst));
			close(sfd);
			return false;
		}
		/* "new/" is never made: the kernel's reason, as cp gives
		 * it (EISDIR named as the missing directory's ENOTDIR) */
		if (strlen(dname) < PATH_MAX) {
			int fd = openat(dat, dname, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

			err = fd >= 0 ? EISDIR : errno;
			if (fd >= 0)
				close(fd);
		}
		cp_err(r, err == EISDIR ? ENOTDIR : err, _("cannot create regular file %s"),
		       q(r, dst));
		close(sfd);
		return false;
	}
	if (opened && fstat(sfd, &st) < 0) {
		cp_err(r, errno, _("cannot fstat %s"), q(r, src));
		close(sfd);
		return false;
	}
	if (st.st_ino != lst->st_ino || st.st_dev != lst->st_dev) {
		cp_err(r, 0, _("skipping file %s, as it was replaced while being copied"), q(r, src));
		close(sfd);
		return false;
	}
	if (r->o.p_xattr && !r->root && !(create & S_IWUSR)) {
		create |= S_IWUSR;	/* so the attributes can be set */
		has |= CP_ADDED_WUSR;
	}
	if (ours)
		has |= CP_HAS_OWNER |
		       ((create & ~r->umask) == (lst->st_mode & 07777) ? CP_HAS_MODE : 0);
	if (exists) {
		cp_wait_reader(r, dst);
		while ((dfd = openat(dat, dname, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY)) < 0 &&
		       cp_fd_wait(r, errno))
			;
		if (dfd < 0) {
			int err = errno;

			if (!r->o.force || remove_existing(r, dst) < 0) {
				if (!r->o.force)
					cp_err(r, err, _("cannot create regular file %s"), q(r, dst));
				close(sfd);
				return false;
			}
			exists = false;
		}
	}
	/* Under a tight RLIMIT_NOFILE the destination is made here too,
	 * where running out of descriptors can wait for the job, not on
	 * the ring, where the walk's next directory could take the last. */
	/* POSIXLY_CORRECT: a dangling symlink is written through, its
	 * target made, as cp 9.1 does (an open without O_EXCL) */
	if (!exists && (tracked || r->o.tight || dangling)) {
		while ((dfd = openat(dat, dname, O_WRONLY | O_CREAT | (dangling ? 0 : O_EXCL) | O_CLOEXEC,
				     create)) < 0 &&
		       cp_fd_wait(r, errno))
			;
		if (dfd < 0) {
			if (dangling)
				cp_err(r, errno, _("cannot create regular file %s"), q(r, dst));
			else
				cp_create_failed(r, errno, dst);
			close(sfd);
			return false;
		}
	}
	r->files_total++;
	r->bytes_total += (uint64_t)st.st_size;
	cp_file(r, pd, src, dst, sfd, &st, dfd, !exists, create, omitted,
		exists ? 0 : has, tracked);
	return true;
}

/* A symlink or special node at a name the caller has cleared. */
static void copy_other(struct cp_run *r, const char *src, const char *dst,
		       const struct stat *st)
{
	mode_t omitted = r->o.p_owner ? st->st_mode & 077 : 0;
	const char *name;
	int ret, at = cp_dst_at(r, dst, &name);

	if (S_ISLNK(st->st_mode)) {
		char *target = malloc((size_t)st->st_size + 2);
		ssize_t n = target ? readlink(src, target, (size_t)st->st_size + 1) : -1;

		if (n < 0 || n > st->st_size) {
			cp_err(r, n < 0 ? errno : 0, _("cannot read symbolic link %s"), q(r, src));
			free(target);
			return;
		}
		target[n] = 0;
		ret = symlinkat(target, at, name);
		free(target);
		if (ret < 0) {
			cp_err(r, errno, _("cannot create symbolic link %s"), q(r, dst));
			return;
		}
	} else if (S_ISFIFO(st->st_mode)) {
		if (mkfifoat(at, name, (st->st_mode & 07777) & ~omitted) < 0) {
			cp_err(r, errno, _("cannot create fifo %s"), q(r, dst));
			return;
		}
	} else if (mknodat(at, name, (st->st_mode & (S_IFMT | 07777)) & ~omitted, st->st_rdev) < 0) {
		cp_err(r, errno, _("cannot create special file %s"), q(r, dst));
		return;
	}
	cp_meta(r, -1, src, -1, dst, st, true, omitted, -1);
}

/* The checks cp makes on an existing destination, in its order; false:
 * stop here (refused, or nothing to do). *exists is cleared when dst was
 * removed to make room. */
static bool existing(struct cp_run *r, const struct cp_dir *pd, const char *src,
		     const char *dst, const struct stat *st, const struct stat *dst_st,
		     bool top, bool *exists)
{
	bool isdir = S_ISDIR(st->st_mode), done = false;
	const char *name;
	int at = cp_dst_at_dir(r, pd, dst, &name);

	/* -n looks no further, not even at whether it is the same file. */
	if (!r->o.no_clobber && !same_file_ok(r, src, st, dst, dst_st, &done)) {
		cp_err(r, 0, _("%s and %s are the same file"), q(r, src), q(r, dst));
		return false;
	}
	if (r->o.update && !isdir &&
	    cp_utimecmp(r, at, name, dst_st, st, r->o.p_times) >= 0) {
		/* Not newer: kept, but a later name of the same source file
		 * still becomes a link to it, as in cp. */
		const char *earlier = remember(r, st, dst);

		if (earlier)
			hard_link(r, earlier, dst);
		return false;
	}
	if (done || (r->o.no_clobber && !isdir))
		return false;
	if (!S_ISDIR(dst_st->st_mode)) {
		if (isdir) {
			cp_err(r, 0, _("cannot overwrite non-directory %s with directory %s"),
			       q(r, dst), q(r, src));
			return false;
		}
		if (top && r->args_twice &&
		    seen_find(&r->made, 0, seen_name_key(dst), SEEN_STRING, dst)) {
			struct stat l;

			/* cp looks for the name with the inode its stat found:
			 * followed, a link made just now is not that one */
			if (!S_ISLNK(dst_st->st_mode) &&
			    cp_dst_stat(r, dst, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(l.st_mode))
				cp_err(r, 0, _("will not copy %s through just-created symlink %s"),
				       q(r, src), q(r, dst));
			else
				cp_err(r, 0, _("will not overwrite just-created %s with %s"),
				       q(r, dst), q(r, src));
			return false;
		}
	}
	if (!isdir && S_ISDIR(dst_st->st_mode)) {
		cp_err(r, 0, _("cannot overwrite directory %s with non-directory"), q(r, dst));
		return false;
	}
	/* Removed, not written through: another name of it, or a type that
	 * is made anew (cp's unlink before copying). */
	if (!S_ISDIR(dst_st->st_mode) &&
	    (r->o.remove_dest || (r->o.p_links && dst_st->st_nlink > 1) ||
	     (r->o.deref == DEREF_NEVER && !S_ISREG(st->st_mode)))) {
		if (remove_existing(r, dst) < 0)
			return false;
		*exists = false;
	}
	return true;
}

/* *sfd: as copy_reg's, set to -1 if copy_reg took it. */
static void decide(struct cp_run *r, struct cp_dir *pd, const char *src,
		   const char *dst, const struct stat *st, bool top, int *sfd)
{
	bool isdir = S_ISDIR(st->st_mode), exists = false, stat_ok = false, tracked;
	/* Regular files are written through a symlink at dst; anything
	 * else replaces it, so it is looked at, not through. */
	bool use_lstat = (!S_ISREG(st->st_mode) &&
			  (r->o.recursive || isdir || S_ISLNK(st->st_mode))) ||
			 r->o.remove_dest;
	struct stat dst_st;
	const char *earlier = NULL;
	bool dangling = false;

	if (isdir && !r->o.recursive) {
		cp_err(r, 0, _("-r not specified; omitting directory %s"), q(r, src));
		return;
	}
	if (top && r->args_twice) {
		if (!isdir && seen_find(&r->srcs, st->st_dev, st->st_ino, SEEN_SAME_NAME, src)) {
			cp_warn(r, _("warning: source file %s specified more than once"), q(r, src));
			return;
		}
		seen_add(&r->srcs, st->st_dev, st->st_ino, src);
	}
	if (top && r->args_twice &&
	    seen_find(&r->made, 0, seen_name_key(dst), SEEN_STRING, dst))
		cp_drain(r, 1);	/* a name made just now: let its file appear */
	if (cp_dst_too_long(r, dst) && (!pd || !pd->fresh)) {
		/* cp names files by their path (below the target
		 * directory, when there is one): it stops here */
		cp_err(r, ENAMETOOLONG, _("cannot stat %s"), q(r, dst));
		return;
	}
	if (!pd || !pd->fresh) {
		const char *name;
		int at = cp_dst_at_dir(r, pd, dst, &name);
		int ret = fstatat(at, name, &dst_st, AT_SYMLINK_NOFOLLOW);

		/* Looked at first, followed only when it is a symlink a
		 * regular file would be written through: one stat for the
		 * rest, and a dangling one is known here, in the walk's
		 * order, not when a job fails to create the file. */
		if (ret == 0 && !use_lstat && S_ISLNK(dst_st.st_mode)) {
			/* it may lead to a file a job is still making or
			 * writing: cp, one file after another, finds it done */
			cp_drain(r, 1);
			if ((ret = fstatat(at, name, &dst_st, 0)) < 0 && errno == ENOENT)
				dangling = true;
		}
		/* a file a job is writing (through a symlink at its own
		 * destination): cp, -u included, finds it written */
		if (ret == 0 && S_ISREG(dst_st.st_mode) && cp_wait_writer(r, &dst_st))
			ret = fstatat(at, name, &dst_st, AT_SYMLINK_NOFOLLOW);
		if (ret == 0) {
			exists = stat_ok = true;
		} else if (errno == ELOOP && r->o.force) {
			exists = true;	/* -f removes it when it cannot be opened */
		} else if (errno != ENOENT) {
			cp_err(r, errno, _("cannot stat %s"), q(r, dst));
			return;
		}
	}
	if (stat_ok && !existing(r, pd, src, dst, st, &dst_st, top, &exists))
		return;
	if (!exists && top && r->args_twice &&
	    seen_find(&r->made, 0, seen_name_key(dst), SEEN_STRING, dst)) {
		/* what stat could not follow: a dangling symlink made just now */
		struct stat l;

		if (cp_dst_stat(r, dst, &l, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(l.st_mode)) {
			cp_err(r, 0, _("will not copy %s through just-created symlink %s"),
			       q(r, src), q(r, dst));
			return;
		}
	}
	if (!isdir)
		cp_verbose(r, src, dst);
	if (top && r->args_twice)
		seen_add(&r->made, 0, seen_name_key(dst), dst);

	tracked = r->o.p_links && !isdir &&
		  (st->st_nlink > 1 || r->o.deref == DEREF_ALWAYS ||
		   (top && r->o.deref == DEREF_ARGS));
	if (tracked) {
		/* The first name's copy must be done, as in cp, before a
		 * link to it is made: if it failed, it is forgotten and this
		 * name is copied anew. */
		earlier = seen_find(&r->links, st->st_dev, st->st_ino, SEEN_ANY, NULL);
		if (earlier && r->running) {
			/* a copy: a failed job forgets, and frees, the name */
			char *name = strdup(earlier);

			if (!name)
				cp_oom();
			cp_wait_file(r, name);
			free(name);
		}
		earlier = remember(r, st, dst);
	} else if (isdir) {
		earlier = top ? remember(r, st, dst) :
			  seen_find(&r->links, st->st_dev, st->st_ino, SEEN_ANY, NULL);
	}
	if (earlier && !isdir) {
		hard_link(r, earlier, dst);
		return;
	}
	if (earlier) {
		if (cp_same_name(src, earlier, NULL, r->target)) {
			/* the copy being made, met by the walk */
			cp_err(r, 0, _("cannot copy a directory, %s, into itself, %s"),
			       q(r, r->top_src), q(r, r->top_dst));
			r->into_self = true;
			return;
		}
		if (cp_same_name(dst, earlier, r->target, r->target)) {
			cp_warn(r, _("warning: source directory %s specified more than once"),
				q(r, r->top_src));
			return;
		}
		if (r->o.deref != DEREF_ALWAYS && !(top && r->o.deref == DEREF_ARGS)) {
			cp_err(r, 0, _("will not create hard link %s to directory %s"),
			       q(r, dst), q(r, earlier));
			return;
		}
	}
	if (isdir) {
		cp_copy_dir(r, pd, src, dst, st, exists);
		return;
	}
	/* Without -R a fifo or device is read like a file, as cp does. */
	if (S_ISREG(st->st_mode) || (!r->o.recursive && !S_ISLNK(st->st_mode))) {
		/* cp forgets a file it could not make, so its other names
		 * try again rather than link to nothing */
		if (!copy_reg(r, pd, src, dst, st, exists, *sfd, tracked, dangling) &&
		    tracked)
			seen_forget(&r->links, st->st_dev, st->st_ino, dst);
		*sfd = -1;
		return;
	}
	/* Still there (cp removes it first only under -P): a symlink is
	 * replaced under -f, anything else fails to be made, as in cp. */
	if (exists && S_ISLNK(st->st_mode) && r->o.force) {
		const char *name;
		int at = cp_dst_at(r, dst, &name);

		(void)unlinkat(at, name, 0);
	}
	copy_other(r, src, dst, st);
}

void cp_entry(struct cp_run *r, struct cp_dir *pd, const char *src,
	      const char *dst, const struct stat *st, bool top, int sfd)
{
	int deref = r->o.deref;

	/* -H follows the operands only: below them cp's copy_dir runs with
	 * DEREF_NEVER, which also removes an existing destination of any
	 * type but a regular file's (its unlink before copying). */
	if (!top && deref == DEREF_ARGS)
		r->o.deref = DEREF_NEVER;
	decide(r, pd, src, dst, st, top, &sfd);
	r->o.deref = deref;
	if (sfd >= 0)
		close(sfd);
}

/* A job's O_CREAT|O_EXCL open failed (the loop's thread). */
void cp_create_failed(struct cp_run *r, int err, const char *dst)
{
	char c;
	const char *name;
	int at = cp_dst_at(r, dst, &name);

	/* EEXIST on a name stat found nothing at: a symlink made dangling
	 * since, which cp will not write through (under POSIXLY_CORRECT it
	 * would: a race this leaves refused). */
	if (err == EEXIST && readlinkat(at, name, &c, 1) >= 0)
		cp_err(r, 0, _("not writing through dangling symlink %s"), q(r, dst));
	else
		cp_err(r, err, _("cannot create regular file %s"), q(r, dst));
}
