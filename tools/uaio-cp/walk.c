/* SPDX-License-Identifier: MIT */
/*
 * The walk: for each source entry, what GNU cp 9.1 would do with it
 * (copy_internal in coreutils' copy.c), in cp's order: a directory's
 * entries sorted by inode number, as cp's savedir reads them. Directories,
 * symbolic links, hard links and special files are made here; regular
 * files are handed to data.c and the walk goes on while they copy.
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

struct link_ent {
	dev_t dev;
	ino_t ino;
	char *dst;
};

/* ------------------------------------------------------------ helpers */

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	bool slash = a && dir[a - 1] != '/';
	char *p = malloc(a + slash + b + 1);

	if (!p) {
		perror("uaio-cp");
		exit(1);
	}
	memcpy(p, dir, a);
	if (slash)
		p[a] = '/';
	memcpy(p + a + slash, name, b + 1);
	return p;
}

static void verbose(struct cp_run *r, const char *src, const char *dst)
{
	if (r->o.verbose)
		printf("%s -> %s\n", q(r, src), q(r, dst));
}

static size_t link_slot(const struct cp_run *r, dev_t dev, ino_t ino)
{
	size_t h = ((size_t)ino * 0x9e3779b97f4a7c15ull) ^ (size_t)dev;

	for (h &= r->links_cap - 1;; h = (h + 1) & (r->links_cap - 1))
		if (!r->links[h].dst ||
		    (r->links[h].dev == dev && r->links[h].ino == ino))
			return h;
}

static const char *link_find(struct cp_run *r, const struct stat *st)
{
	return r->links_cap ? r->links[link_slot(r, st->st_dev, st->st_ino)].dst : NULL;
}

static void link_add(struct cp_run *r, const struct stat *st, const char *dst)
{
	if (2 * (r->nlinks + 1) > r->links_cap) {
		struct link_ent *old = r->links;
		size_t oldcap = r->links_cap;

		r->links_cap = oldcap ? 2 * oldcap : 256;
		r->links = calloc(r->links_cap, sizeof(*r->links));
		if (!r->links) {
			perror("uaio-cp");
			exit(1);
		}
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].dst)
				r->links[link_slot(r, old[i].dev, old[i].ino)] = old[i];
		free(old);
	}
	size_t h = link_slot(r, st->st_dev, st->st_ino);

	r->links[h] = (struct link_ent){ st->st_dev, st->st_ino, strdup(dst) };
	r->nlinks++;
}

void cp_links_free(struct cp_run *r)
{
	for (size_t i = 0; i < r->nmade; i++)
		free(r->made[i]);
	free(r->made);
	for (size_t i = 0; i < r->links_cap; i++)
		free(r->links[i].dst);
	free(r->links);
}

static bool tracks_link(const struct cp_run *r, const struct stat *st)
{
	return r->o.p_links && st->st_nlink > 1 && !S_ISDIR(st->st_mode);
}

/* -------------------------------------------------------- directories */

/* See cp_dir.plain. Asked only when it is used (-p's owner). */
static bool dir_plain(const struct cp_dir *d)
{
	struct stat st;

	if ((d->dfd >= 0 ? fstat(d->dfd, &st) : lstat(d->dst, &st)) < 0 ||
	    !S_ISDIR(st.st_mode) || (st.st_mode & S_ISGID))
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
	at = cp_at(d->parent, true, d->dst, &name);
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

static void copy_entry(struct cp_run *r, struct cp_dir *pd, const char *src,
		       const char *dst, const struct stat *st, bool top, int sfd);

static void copy_dir(struct cp_run *r, struct cp_dir *pd, const char *src,
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
			cp_err(r, 0, "cannot copy cyclic symbolic link %s", q(r, src));
			free(d);
			return;
		}
	d->restore = -1;
	if (!exists) {
		mode_t mode = st->st_mode & 07777;

		d->omitted = mode & (r->o.p_owner ? 077 : 022);
		if (mkdir(dst, mode & ~d->omitted) < 0) {
			cp_err(r, errno, "cannot create directory %s", q(r, dst));
			free(d);
			return;
		}
		verbose(r, src, dst);
		d->made = d->fresh = true;
		/* We need to write into it: u+rwx for now, as cp. */
		if ((mode & ~d->omitted & ~r->umask & S_IRWXU) != S_IRWXU) {
			struct stat now;

			if (lstat(dst, &now) == 0 &&
			    chmod(dst, (now.st_mode & 07777) | S_IRWXU) == 0)
				d->restore = now.st_mode & 07777;
		}
		if (!r->top_made) {
			struct stat now;

			if (lstat(dst, &now) == 0) {
				r->top_dev = now.st_dev;
				r->top_ino = now.st_ino;
				r->top_made = true;
			}
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
	d->plain = r->o.p_owner && dir_plain(d);

	if (r->o.one_fs && pd && st->st_dev != pd->src.st_dev)
		goto done;	/* -x: the mount point is made, not filled */
	dir = opendir(src);
	if (!dir) {
		cp_err(r, errno, "cannot access %s", q(r, src));
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
			perror("uaio-cp");
			exit(1);
		}
		memcpy(names + nlen, de->d_name, len);
		ents[n++] = (struct ent){ de->d_ino, nlen, de->d_type };
		nlen += len;
	}
	if (errno)
		cp_err(r, errno, "cannot access %s", q(r, src));
	closedir(dir);
	if (n)
		qsort(ents, n, sizeof(*ents), by_ino);

	for (size_t i = 0; i < n && !r->into_self; i++) {
		char *s = join(src, names + ents[i].name);
		char *t = join(dst, names + ents[i].name);
		struct stat cst;
		const char *name;
		int at = cp_at(d, false, s, &name), sfd = -1, ret;

		/* Any surprise (no longer a file, unreadable) takes the lstat
		 * path, which says what cp says, where cp says it. */
		if (ents[i].type == DT_REG &&
		    (sfd = openat(at, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW)) >= 0 &&
		    (fstat(sfd, &cst) < 0 || !S_ISREG(cst.st_mode))) {
			close(sfd);
			sfd = -1;
		}
		ret = sfd >= 0 ? 0 : fstatat(at, name, &cst, r->o.deref == DEREF_ALWAYS ?
					     0 : AT_SYMLINK_NOFOLLOW);
		if (ret < 0)
			cp_err(r, errno, "cannot stat %s", q(r, s));
		else
			copy_entry(r, d, s, t, &cst, false, sfd);
		free(s);
		free(t);
	}
	free(ents);
	free(names);
done:
	cp_dir_put(r, d);
}

/* ----------------------------------------------------------- one entry */

static int remove_existing(struct cp_run *r, const char *dst)
{
	if (unlink(dst) < 0 && errno != ENOENT) {
		cp_err(r, errno, "cannot remove %s", q(r, dst));
		return -1;
	}
	if (r->o.verbose)
		printf("removed %s\n", q(r, dst));
	return 0;
}

/* sfd: the source, when the walk opened it already (and fstat'd it into
 * lst), else -1. Takes it. */
static void copy_reg(struct cp_run *r, struct cp_dir *pd, const char *src,
		     const char *dst, const struct stat *lst, bool exists, int sfd)
{
	int follow = r->o.deref == DEREF_NEVER ? O_NOFOLLOW : 0, dfd = -1;
	const char *name;
	int at = cp_at(pd, false, src, &name);
	/* Already ours: no owner to change, so nothing to hide meanwhile. */
	bool ours = r->o.p_owner && !exists && pd && pd->plain &&
		    lst->st_uid == r->euid && lst->st_gid == r->egid;
	mode_t omitted = r->o.p_owner && !ours ? lst->st_mode & 077 : 0;
	mode_t create = (lst->st_mode & 0777) & ~omitted;
	unsigned has = 0;
	struct stat st = *lst;
	bool opened = sfd < 0;

	if (opened)
		sfd = openat(at, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | follow);
	if (sfd < 0) {
		cp_err(r, errno, "cannot open %s for reading", q(r, src));
		return;
	}
	if (!exists && dst[strlen(dst) - 1] == '/') {
		/* "new/": cp names the missing directory, not EISDIR. */
		cp_err(r, ENOTDIR, "cannot create regular file %s", q(r, dst));
		close(sfd);
		return;
	}
	if (opened && fstat(sfd, &st) < 0) {
		cp_err(r, errno, "cannot fstat %s", q(r, src));
		close(sfd);
		return;
	}
	if (st.st_ino != lst->st_ino || st.st_dev != lst->st_dev) {
		cp_err(r, 0, "skipping file %s, as it was replaced while being copied", q(r, src));
		close(sfd);
		return;
	}
	if (r->o.p_xattr && !r->root)
		create |= S_IWUSR;	/* so the attributes can be set */
	if (ours)
		has = CP_HAS_OWNER |
		      ((create & ~r->umask) == (lst->st_mode & 07777) ? CP_HAS_MODE : 0);
	if (exists) {
		dfd = open(dst, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
		if (dfd < 0 && errno == ENOENT) {
			/* open gave ENOENT though lstat found a name: a dangling link */
			if (!r->o.force) {
				cp_err(r, 0, "not writing through dangling symlink %s", q(r, dst));
				close(sfd);
				return;
			}
		}
		if (dfd < 0) {
			int err = errno;

			if (!r->o.force || remove_existing(r, dst) < 0) {
				if (!r->o.force)
					cp_err(r, err, "cannot create regular file %s", q(r, dst));
				close(sfd);
				return;
			}
			exists = false;
		}
	}
	if (!exists && tracks_link(r, &st)) {
		/* Later names link to this one: it must exist before they come. */
		dfd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, create);
		if (dfd < 0) {
			cp_err(r, errno, "cannot create regular file %s", q(r, dst));
			close(sfd);
			return;
		}
		link_add(r, &st, dst);
	}
	r->files_total++;
	r->bytes_total += (uint64_t)st.st_size;
	cp_file(r, pd, src, dst, sfd, &st, dfd, !exists, create, omitted,
		exists ? 0 : has);
}

/* A symlink or special node at a name the caller has cleared. */
static void copy_other(struct cp_run *r, const char *src, const char *dst,
		       const struct stat *st)
{
	mode_t omitted = r->o.p_owner ? st->st_mode & 077 : 0;
	int ret;

	if (S_ISLNK(st->st_mode)) {
		char *target = malloc((size_t)st->st_size + 2);
		ssize_t n = target ? readlink(src, target, (size_t)st->st_size + 1) : -1;

		if (n < 0 || n > st->st_size) {
			cp_err(r, n < 0 ? errno : 0, "cannot read symbolic link %s", q(r, src));
			free(target);
			return;
		}
		target[n] = 0;
		ret = symlink(target, dst);
		free(target);
		if (ret < 0) {
			cp_err(r, errno, "cannot create symbolic link %s", q(r, dst));
			return;
		}
	} else if (S_ISFIFO(st->st_mode)) {
		if (mkfifo(dst, (st->st_mode & 07777) & ~omitted) < 0) {
			cp_err(r, errno, "cannot create fifo %s", q(r, dst));
			return;
		}
	} else if (mknod(dst, (st->st_mode & (S_IFMT | 07777)) & ~omitted, st->st_rdev) < 0) {
		cp_err(r, errno, "cannot create special file %s", q(r, dst));
		return;
	}
	cp_meta(r, -1, src, -1, dst, st, true, omitted, -1);
}

/* *sfd: as copy_reg's, set to -1 if copy_reg took it. */
static void decide(struct cp_run *r, struct cp_dir *pd, const char *src,
		   const char *dst, const struct stat *st, bool top, int *sfd)
{
	bool isdir = S_ISDIR(st->st_mode), exists = false;
	struct stat dst_st;
	const char *first;

	if (isdir && !r->o.recursive) {
		cp_err(r, 0, "-r not specified; omitting directory %s", q(r, src));
		return;
	}
	if (isdir && r->top_made && st->st_dev == r->top_dev &&
	    st->st_ino == r->top_ino) {
		cp_err(r, 0, "cannot copy a directory, %s, into itself, %s",
		       q(r, r->top_src), q(r, r->top_dst));
		r->into_self = true;
		return;
	}
	if (!pd || !pd->fresh) {
		const char *name;
		int at = cp_at(pd, true, dst, &name);

		if (fstatat(at, name, &dst_st, AT_SYMLINK_NOFOLLOW) == 0) {
			exists = true;
		} else if (errno != ENOENT) {
			cp_err(r, errno, "cannot stat %s", q(r, dst));
			return;
		}
	}
	if (exists) {
		struct stat follow;
		bool same = dst_st.st_dev == st->st_dev && dst_st.st_ino == st->st_ino;

		/* A regular source is written through a symlinked destination. */
		if (!same && S_ISLNK(dst_st.st_mode) && S_ISREG(st->st_mode) &&
		    stat(dst, &follow) == 0)
			same = follow.st_dev == st->st_dev && follow.st_ino == st->st_ino;
		/* -n looks no further, not even at whether it is the same file. */
		if (r->o.no_clobber && !isdir)
			return;
		if (same) {
			cp_err(r, 0, "%s and %s are the same file", q(r, src), q(r, dst));
			return;
		}
		if (isdir) {
			struct stat follow_dir;

			if (!S_ISDIR(dst_st.st_mode) &&
			    !(S_ISLNK(dst_st.st_mode) && stat(dst, &follow_dir) == 0 &&
			      S_ISDIR(follow_dir.st_mode))) {
				cp_err(r, 0, "cannot overwrite non-directory %s with directory %s",
				       q(r, dst), q(r, src));
				return;
			}
		} else {
			if (S_ISDIR(dst_st.st_mode)) {
				cp_err(r, 0, "cannot overwrite directory %s with non-directory",
				       q(r, dst));
				return;
			}
			if (r->o.update &&
			    (st->st_mtim.tv_sec < dst_st.st_mtim.tv_sec ||
			     (st->st_mtim.tv_sec == dst_st.st_mtim.tv_sec &&
			      st->st_mtim.tv_nsec <= dst_st.st_mtim.tv_nsec)))
				return;
			if (r->o.remove_dest) {
				if (remove_existing(r, dst) < 0)
					return;
				exists = false;
			}
		}
	}
	if (isdir) {
		if (top)
			r->top_src = src, r->top_dst = dst;
		copy_dir(r, pd, src, dst, st, exists);
		return;
	}
	if (tracks_link(r, st) && (first = link_find(r, st))) {
		verbose(r, src, dst);
		if (exists && remove_existing(r, dst) < 0)
			return;
		if (link(first, dst) < 0)
			cp_err(r, errno, "cannot create hard link %s to %s", q(r, dst), q(r, first));
		return;
	}
	/* Without -R a fifo or device is read like a file, as cp does. */
	if (S_ISREG(st->st_mode) || (!r->o.recursive && !S_ISLNK(st->st_mode))) {
		verbose(r, src, dst);
		copy_reg(r, pd, src, dst, st, exists, *sfd);
		*sfd = -1;
		return;
	}
	/* The old name goes first: cp says "removed" before it names the copy. */
	if (exists && remove_existing(r, dst) < 0)
		return;
	verbose(r, src, dst);
	copy_other(r, src, dst, st);
	if (tracks_link(r, st))
		link_add(r, st, dst);
}

static void copy_entry(struct cp_run *r, struct cp_dir *pd, const char *src,
		       const char *dst, const struct stat *st, bool top, int sfd)
{
	decide(r, pd, src, dst, st, top, &sfd);
	if (sfd >= 0)
		close(sfd);
}

static bool made_before(struct cp_run *r, const char *dst)
{
	for (size_t i = 0; i < r->nmade; i++)
		if (strcmp(r->made[i], dst) == 0)
			return true;
	return false;
}

static void made_add(struct cp_run *r, const char *dst)
{
	if (r->nmade == r->made_cap) {
		r->made_cap = r->made_cap ? 2 * r->made_cap : 16;
		r->made = realloc(r->made, r->made_cap * sizeof(*r->made));
		if (!r->made) {
			perror("uaio-cp");
			exit(1);
		}
	}
	r->made[r->nmade++] = strdup(dst);
}

/* One command-line source. into: dst is the directory to put it in. */
int cp_top(struct cp_run *r, const char *src, const char *dst, bool into)
{
	struct stat st;
	char *target = NULL;
	int ret = r->o.deref == DEREF_NEVER ? lstat(src, &st) : stat(src, &st);

	if (ret < 0) {
		cp_err(r, errno, "cannot stat %s", q(r, src));
		return -1;
	}
	if (into) {
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
		target = join(dst, len ? name : "/");
		dst = target;
	}
	r->top_made = r->into_self = false;
	if (into && made_before(r, dst)) {
		/* Two sources with one name: the first copy is not clobbered. */
		cp_err(r, 0, "will not overwrite just-created %s with %s", q(r, dst), q(r, src));
	} else {
		copy_entry(r, NULL, src, dst, &st, true, -1);
		if (into)
			made_add(r, dst);
	}
	free(target);
	return 0;
}
