/* SPDX-License-Identifier: MIT */
/*
 * What cp does to a destination once its contents are in: times, owner,
 * extended attributes, then the mode, in GNU cp 9.1's order (copy_reg and
 * the end of copy_internal), on the open descriptor when there is one.
 * Each is one short inode update: a small file's run on the worker that
 * copied its data, in the same hand-off (whole.c); directories, links and
 * special files on the loop's thread. Either way the calls only note
 * their failures, and the loop's thread prints them (cp_notes_report),
 * since messages and the exit status are the run's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>
#include "cp.h"

static bool is_acl(const char *name)
{
	return strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

static ssize_t x_list(int fd, const char *path, char *buf, size_t n)
{
	return fd >= 0 ? flistxattr(fd, buf, n) : llistxattr(path, buf, n);
}

/* follow: through a symlink by that name (a source reached by -L or -H) */
static ssize_t x_get(int fd, const char *path, bool follow, const char *name, void *v, size_t n)
{
	return fd >= 0 ? fgetxattr(fd, name, v, n) :
	       follow ? getxattr(path, name, v, n) : lgetxattr(path, name, v, n);
}

static int x_set(int fd, const char *path, const char *name, const void *v, size_t n)
{
	return fd >= 0 ? fsetxattr(fd, name, v, n, 0) : lsetxattr(path, name, v, n, 0);
}

/* Allocates only when something failed: the common run stays free of it.
 * A note that cannot be kept still fails the run. locale: the name is
 * quoted as gnulib's ACL calls quote it (ql), not as cp's own (q). */
static void note_x(struct cp_notes *n, int err, const char *domain, const char *fmt,
		   bool locale, bool warn, const char *name)
{
	if (n->n == n->cap) {
		unsigned cap = n->cap ? 2 * n->cap : 4;
		struct cp_note *v = realloc(n->v, cap * sizeof(*v));

		if (!v) {
			n->lost = true;
			return;
		}
		n->v = v;
		n->cap = cap;
	}
	n->v[n->n] = (struct cp_note){ err, fmt, domain, locale, warn, NULL };
	if (name && !(n->v[n->n].name = strdup(name))) {
		n->lost = true;
		return;
	}
	n->n++;
}

static void note_q(struct cp_notes *n, int err, const char *fmt, bool locale)
{
	note_x(n, err, "coreutils", fmt, locale, false, NULL);
}

static void note(struct cp_notes *n, int err, const char *fmt)
{
	note_q(n, err, fmt, false);
}

void cp_notes_report(struct cp_run *r, struct cp_notes *n, const char *dst)
{
	for (unsigned i = 0; i < n->n; i++) {
		const struct cp_note *t = &n->v[i];
		int status = r->status;

		const char *fmt = dgettext(t->domain, t->fmt);

		if (t->name) {
			const char *qn = t->locale ? ql(r, t->name) : q(r, t->name);

			cp_err(r, t->err, fmt, qn, qn);
			free(t->name);
		} else {
			cp_err(r, t->err, fmt, t->locale ? ql(r, dst) : q(r, dst));
		}
		if (t->warn)
			r->status = status;
	}
	if (n->lost || n->failed)
		r->status = 1;
	free(n->v);
	*n = (struct cp_notes){ 0 };
}

/* Copies the source's extended attributes: all of them under
 * --preserve=xattr (SELinux labels excepted: that is --preserve=context),
 * only the POSIX ACLs when just the mode is preserved, as cp's copy_acl. */
/* ACL_LOST: the source's access ACL (an extended one: the kernel keeps
 * none that only repeats the mode) could not be set, its errno above
 * ACL_ERR_SHIFT */
enum { ACL_ACCESS = 1, ACL_DEFAULT = 2, ACL_LOST = 4, ACL_ERR_SHIFT = 8 };

/*
 * An attribute's failure as cp 9.1 (libattr's attr_copy_fd) says it: every
 * one under --preserve=xattr, as an error; else, but not under -a, those
 * other than ENOTSUP and ENODATA, as warnings (the status kept).
 */
static void xattr_note(const struct cp_run *r, struct cp_notes *out, int err,
		       const char *fmt, const char *name)
{
	if (r->o.require_xattr)
		note_x(out, err, "attr", fmt, false, false, name);
	else if (!r->o.reduce_diag && err != ENOTSUP && err != ENODATA)
		note_x(out, err, "attr", fmt, false, true, name);
}

struct xattr_buf {
	char *val;
	size_t cap;
};

/* One attribute from the source to the destination: 1 set, 0 not,
 * -errno the source's read failed (gone since the list: libattr skips
 * it too). */
static int xattr_copy(const struct cp_run *r, int src_fd, const char *src, bool follow,
		      int fd, const char *dst, const char *name, struct xattr_buf *b,
		      struct cp_notes *out, unsigned *acl, unsigned *unsupported)
{
	ssize_t vn = x_get(src_fd, src, follow, name, NULL, 0);

	if (vn >= 0 && (size_t)vn > b->cap) {
		char *nv = realloc(b->val, (size_t)vn);

		if (!nv)
			return 0;
		b->val = nv;
		b->cap = (size_t)vn;
	}
	if (vn >= 0)
		vn = x_get(src_fd, src, follow, name, b->val, (size_t)vn);
	if (vn < 0) {
		int err = errno;

		if (!is_acl(name) && err != ENODATA)
			xattr_note(r, out, err, "getting attribute %s of %s", name);
		return -err;
	}
	if (x_set(fd, dst, name, b->val, (size_t)vn) == 0) {
		*acl |= !strcmp(name, "system.posix_acl_access") ? ACL_ACCESS :
			!strcmp(name, "system.posix_acl_default") ? ACL_DEFAULT : 0;
		return 1;
	}
	if (!strcmp(name, "system.posix_acl_access")) {
		*acl = (*acl & (ACL_ACCESS | ACL_DEFAULT)) | ACL_LOST |
		       (unsigned)errno << ACL_ERR_SHIFT;
	} else if (!is_acl(name)) {
		if (errno == ENOTSUP)	/* said once, for the file */
			(*unsupported)++;
		else
			xattr_note(r, out, errno, "setting attribute %s for %s", name);
	}
	return 0;
}

/* *acl: ACL_* of the ACLs copied; *list_err: why the source's could not
 * be listed (0: they were). follow_acl: the source's name may be a
 * symlink followed (-L, -H; never under -P, where the listing has them)
 * to what st describes: cp's copy_acl reads
 * the ACLs through it (acl_get_file), its attr_copy_file the other
 * attributes of the link itself. */
static unsigned xattrs(const struct cp_run *r, int src_fd, const char *src, bool follow_acl,
		       int fd, const char *dst, struct cp_notes *out, unsigned *acl, int *list_err)
{
	static const char *const acls[] = { "system.posix_acl_access", "system.posix_acl_default" };
	unsigned set = 0, unsupported = 0;
	char stackbuf[1024], *names = stackbuf;
	struct xattr_buf b = { 0 };
	ssize_t n = x_list(src_fd, src, names, sizeof(stackbuf));

	if (n < 0 && errno == ERANGE) {
		n = x_list(src_fd, src, NULL, 0);
		if (n > 0 && (names = malloc((size_t)n)))
			n = x_list(src_fd, src, names, (size_t)n);
	}
	if (n < 0)
		*list_err = errno;
	if (n < 0 && errno != ENOSYS && errno != ENOTSUP && r->o.p_xattr)
		xattr_note(r, out, errno, "listing attributes of %s", src);
	for (char *name = names; n > 0 && name < names + n; name += strlen(name) + 1) {
		if (strcmp(name, "security.selinux") == 0)
			continue;
		if (is_acl(name) ? !r->o.p_mode || follow_acl : !r->o.p_xattr)
			continue;
		set += xattr_copy(r, src_fd, src, false, fd, dst, name, &b, out, acl,
				  &unsupported) > 0;
	}
	for (unsigned i = 0; follow_acl && r->o.p_mode && i < 2; i++) {
		int ret = xattr_copy(r, src_fd, src, true, fd, dst, acls[i], &b, out, acl,
				     &unsupported);

		set += ret > 0;
		if (ret < 0 && ret != -ENODATA && !*list_err)
			*list_err = -ret;
	}
	if (unsupported && r->o.require_xattr)
		note_x(out, ENOTSUP, "attr", "setting attributes for %s", false, false, NULL);
	free(b.val);
	if (names != stackbuf)
		free(names);
	return set;
}

static int chmod_fd(int fd, const char *path, mode_t m)
{
	return fd >= 0 ? fchmod(fd, m) : chmod(path, m);
}

/* A mode set as cp 9.1 sets it, through the access ACL (gnulib's
 * qset_acl): the permission bits change and the special bits the file
 * has stay (a directory made in a set-group-ID one keeps its S_ISGID),
 * unless the mode has special bits of its own, which take a chmod first.
 * An extended ACL the file had is replaced. Without ACLs, a chmod. */
static int set_mode(int fd, const char *path, mode_t m)
{
	/* POSIX ACL xattr: version 2, then user::, group::, other:: */
	struct { uint32_t version; struct { uint16_t tag, perm; uint32_t id; } e[3]; }
		__attribute__((packed)) acl = { 2, {
			{ 0x01, (uint16_t)((m >> 6) & 7), UINT32_MAX },
			{ 0x04, (uint16_t)((m >> 3) & 7), UINT32_MAX },
			{ 0x20, (uint16_t)(m & 7), UINT32_MAX } } };

	if ((m & 07000) && chmod_fd(fd, path, m) < 0)
		return -1;
	if (x_set(fd, path, "system.posix_acl_access", &acl, sizeof(acl)) == 0)
		return 0;
	/* gnulib's ACL_NOT_WELL_SUPPORTED: a chmod instead */
	if (errno != EOPNOTSUPP && errno != ENOSYS && errno != EINVAL && errno != EBUSY)
		return -1;
	return (m & 07000) ? 0 : chmod_fd(fd, path, m);
}

/* An extended access ACL the destination would not take is cp's
 * copy_acl failing: said, and under -p/-a the copy counts as failed
 * (the mode bits were set without it). */
static bool acl_kept(const struct cp_opts *o, unsigned acl, struct cp_notes *out)
{
	if (!(acl & ACL_LOST))
		return true;
	note_q(out, (int)(acl >> ACL_ERR_SHIFT), "preserving permissions for %s", true);
	return !o->require_preserve;
}

/* cp's order: times, owner, xattrs, mode. Under -p/-a/--preserve a time
 * or owner that cannot be set ends the file's metadata there, as in cp,
 * and the copy counts as failed (false), as it does for a mode not kept:
 * a later name of the same source is not made a link to it, as cp
 * forgets it (forget_created). */
static bool meta_apply(const struct cp_run *r, int src_fd, const char *src, int fd,
		       const char *dst, const struct stat *st, bool is_new,
		       mode_t omitted, int restore_mode, unsigned has,
		       struct cp_notes *out, bool *xfail)
{
	const struct cp_opts *o = &r->o;
	bool link = S_ISLNK(st->st_mode), chown_failed = false;
	int list_err = 0;
	/* times, owner and the bits given back at the end by the name
	 * below the target directory, as cp 9.1 sets them (utimensat,
	 * lchownat, lchmodat from it); -p's mode, ACLs and xattrs by the
	 * whole name, as it sets those */
	const char *rel;
	int at = cp_dst_at(r, dst, &rel);
	unsigned acl = 0;
	unsigned xset = 0;

	if (o->p_times) {
		struct timespec ts[2] = { st->st_atim, st->st_mtim };
		int ret = fd >= 0 ? futimens(fd, ts) :
			  utimensat(at, rel, ts, AT_SYMLINK_NOFOLLOW);

		if (ret < 0 && !(link && errno == EOPNOTSUPP)) {
			note(out, errno, "preserving times for %s");
			if (o->require_preserve)
				return false;
		}
	}
	/* cp's fchown to the owner the file has already would change only
	 * its ctime, which no copy keeps; and cp makes none where the file
	 * it overwrote had the owner (a chown clears set-ID bits). */
	struct stat now;
	bool seen = false;

	if (o->p_owner && !(has & CP_HAS_OWNER) && !is_new &&
	    (fd >= 0 ? fstat(fd, &now) : fstatat(at, rel, &now, AT_SYMLINK_NOFOLLOW)) == 0) {
		seen = true;
		if (now.st_uid == st->st_uid && now.st_gid == st->st_gid)
			has |= CP_HAS_OWNER;
	}
	/* cp's set_owner: a file that existed is first narrowed to the
	 * owner bits both modes share, so that its new owner never gets its
	 * old rights; through the access ACL, so a set-group-ID bit stays
	 * and, without group execute now, survives the chown. Where that
	 * fails the chown is not made. */
	if (o->p_owner && !(has & CP_HAS_OWNER) && seen && o->p_mode && !link &&
	    set_mode(fd, dst, now.st_mode & st->st_mode & S_IRWXU) < 0) {
		if (r->root || (errno != EPERM && errno != EINVAL))
			note(out, errno, "clearing permissions for %s");
		if (o->require_preserve) {
			out->failed = true;
			return false;
		}
		chown_failed = true;
		has |= CP_HAS_OWNER;
	}
	if (o->p_owner && !(has & CP_HAS_OWNER)) {
		int ret = fd >= 0 ? fchown(fd, st->st_uid, st->st_gid) :
			  fchownat(at, rel, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW);

		if (ret < 0) {
			if (!r->root && (errno == EPERM || errno == EINVAL)) {
				/* cp: keep the group if only that is allowed. */
				if (fd >= 0)
					(void)!fchown(fd, (uid_t)-1, st->st_gid);
				else
					(void)!fchownat(at, rel, (uid_t)-1, st->st_gid,
							AT_SYMLINK_NOFOLLOW);
				chown_failed = true;
			} else {
				note(out, errno, "failed to preserve ownership for %s");
				if (o->require_preserve)
					return false;
			}
		}
	}
	if (link) {
		/* a link has no mode or ACL, but may have attributes
		 * (trusted.*, as overlayfs's): cp copies them */
		if (o->p_xattr)
			xattrs(r, src_fd, src, false, fd, dst, out, &acl, &list_err);
		return true;
	}
	if (o->p_xattr || o->p_mode) {
		unsigned before = out->n;

		xset = xattrs(r, src_fd, src, src_fd < 0 && o->deref != DEREF_NEVER, fd, dst,
			      out, &acl, &list_err);
		/* --preserve=xattr named and an attribute not copied: cp
		 * stops there for anything but a regular file (no mode, no
		 * u+rwx given back: copy_internal returns), and counts a
		 * regular file's copy as failed once its mode is set too */
		*xfail = o->require_xattr && (out->n > before || out->lost);
		if (*xfail && !S_ISREG(st->st_mode))
			return false;
	}
	/* cp's copy_acl reads the source's ACL before it sets the mode
	 * (gnulib's get_permissions): where that fails (the source gone
	 * since: ENOENT) it names the source, sets no mode, and under
	 * -p/-a the copy fails. Not where the file system has no ACLs. */
	if (o->p_mode && list_err && list_err != ENOSYS && list_err != ENOTSUP &&
	    list_err != EINVAL && list_err != EBUSY) {
		note_x(out, list_err, "coreutils", "%s", true, false, src);
		return !o->require_preserve;
	}

	if (o->p_mode) {
		mode_t m = st->st_mode & 07777;

		/* Likewise its fchmod to the mode the file was created with,
		 * unless an ACL just set moved the bits. */
		if ((has & CP_HAS_MODE) && !xset)
			return acl_kept(o, acl, out);
		if (chown_failed)
			m &= ~(mode_t)(S_ISUID | S_ISGID | S_ISVTX);
		/* The source's own ACL, copied, set the permission bits. */
		if ((acl & ACL_ACCESS) ? (m & 07000) && chmod_fd(fd, dst, m) < 0 :
					 set_mode(fd, dst, m) < 0) {
			note_q(out, errno, "preserving permissions for %s", true);
			if (o->require_preserve)
				return false;
		}
		/* A directory gets the source's default ACL or none, not one
		 * it inherited where it was made (cp: acl_delete_def_file). */
		if (S_ISDIR(st->st_mode) && !(acl & ACL_DEFAULT))
			(void)(fd >= 0 ? fremovexattr(fd, "system.posix_acl_default") :
					 removexattr(dst, "system.posix_acl_default"));
		return acl_kept(o, acl, out);
	}
	/* cp 9.1 sets a default ACL here: 0666 (0777) less the umask. */
	if (o->explicit_no_mode) {
		if (is_new) {
			mode_t m = (S_ISDIR(st->st_mode) || S_ISSOCK(st->st_mode) ?
				    0777 : 0666) & ~r->umask;

			if (set_mode(fd, dst, m) < 0)
				note_q(out, errno, "setting permissions for %s", true);
		}
		return true;
	}
	omitted &= ~r->umask;
	if (has & CP_ADDED_WUSR) {
		/* the u+w the xattrs needed goes, with what was omitted */
		if (chmod_fd(fd, dst, (st->st_mode & 0777) & ~r->umask) < 0)
			note(out, errno, "preserving permissions for %s");
		return true;
	}
	if (omitted && restore_mode < 0) {
		/* Bits left out at creation for safety come back now, as cp. */
		struct stat now;

		if ((fd >= 0 ? fstat(fd, &now) : fstatat(at, rel, &now, AT_SYMLINK_NOFOLLOW)) == 0 &&
		    (omitted & ~now.st_mode))
			restore_mode = (int)(now.st_mode & 07777);
	}
	/* (by the name below the target, as cp's lchmodat) */
	if (restore_mode >= 0 &&
	    (fd >= 0 ? fchmod(fd, (mode_t)restore_mode | omitted) :
		       fchmodat(at, rel, (mode_t)restore_mode | omitted, 0)) < 0)
		note(out, errno, "preserving permissions for %s");
	return true;
}

void cp_meta(struct cp_run *r, int src_fd, const char *src, int fd,
	     const char *dst, const struct stat *st, bool is_new,
	     mode_t omitted, int restore_mode)
{
	struct cp_notes n = { 0 };

	cp_meta_apply(r, src_fd, src, fd, dst, st, is_new, omitted, restore_mode, 0, &n);
	cp_notes_report(r, &n, dst);
}

bool cp_meta_apply(const struct cp_run *r, int src_fd, const char *src, int fd,
		   const char *dst, const struct stat *st, bool is_new,
		   mode_t omitted, int restore_mode, unsigned has,
		   struct cp_notes *out)
{
	bool xfail = false;

	return meta_apply(r, src_fd, src, fd, dst, st, is_new, omitted, restore_mode,
			  has, out, &xfail) && !xfail;
}
