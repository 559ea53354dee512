/* SPDX-License-Identifier: MIT */
/*
 * treecmp A B [--no-owner] [--no-times] [--no-links] [--no-xattr]
 *             [--no-mode] [--dir-times] [--strict-holes]
 * treecmp --hole-map FILE: prints FILE's data ranges (SEEK_DATA).
 *
 * Walks two trees (lstat, symlinks not followed) and compares them entry
 * by entry: the same relative names in both; file type; mode (07777);
 * uid/gid; size; contents; symlink targets; rdev of devices; mtime in
 * nanoseconds (files, symlinks, fifos, devices; directories only with
 * --dir-times, as a directory's time is the last thing a copy sets);
 * hard-link structure; xattrs (security.selinux skipped); the data/hole
 * map of regular files (extents rounded to 4 KiB; skipped when A's file
 * system reports no hole in A's file, unless --strict-holes: then a hole
 * in B only is a difference too, for two trees on one file system).
 *
 * Prints "treecmp: REL: what (A-value vs B-value)" per difference on
 * stdout. Exit 0 equal, 1 different, 2 usage or I/O error.
 *
 * treecmp --setxattr PATH NAME VALUE sets one xattr (lsetxattr), for test
 * scripts on systems without setfattr.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

struct ent {
	char *rel;
	struct stat st;
	const char *canon; /* first name (sorted) of this inode in the tree */
	size_t names;      /* how many names this inode has in the tree */
};

struct tree {
	const char *root;
	struct ent *v;
	size_t n, cap;
};

static int status; /* 0 equal, 1 differences, 2 error */
static int no_owner, no_times, no_links, no_xattr, no_mode, dir_times, strict_holes;

static void *xrealloc(void *p, size_t n)
{
	if (!(p = realloc(p, n ? n : 1))) {
		perror("treecmp");
		exit(2);
	}
	return p;
}

static void ioerr(const char *what, const char *path)
{
	fprintf(stderr, "treecmp: %s '%s': %s\n", what, path, strerror(errno));
	status = 2;
}

static void diff(const char *rel, const char *fmt, ...)
{
	va_list ap;

	printf("treecmp: %s: ", rel);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!status)
		status = 1;
}

/* root/rel, or root for rel "." */
static char *join(const char *root, const char *rel)
{
	char *p;

	if (asprintf(&p, "%s%s%s", root, strcmp(rel, ".") ? "/" : "",
		     strcmp(rel, ".") ? rel : "") < 0)
		exit(2);
	return p;
}

static void walk(struct tree *t, const char *rel)
{
	char *path = join(t->root, rel);
	struct ent e = { .rel = strdup(rel) };
	DIR *d;
	struct dirent *de;

	if (lstat(path, &e.st) < 0) {
		ioerr("cannot lstat", path);
		free(e.rel);
		free(path);
		return;
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 256;
		t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
	}
	t->v[t->n++] = e;
	if (!S_ISDIR(e.st.st_mode))
		goto out;
	if (!(d = opendir(path))) {
		ioerr("cannot open directory", path);
		goto out;
	}
	while ((de = readdir(d))) {
		char *c;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		c = strcmp(rel, ".") ? join(rel, de->d_name) : strdup(de->d_name);
		walk(t, c);
		free(c);
	}
	closedir(d);
out:
	free(path);
}

static int by_rel(const void *a, const void *b)
{
	return strcmp(((const struct ent *)a)->rel, ((const struct ent *)b)->rel);
}

static int by_inode(const void *a, const void *b)
{
	const struct ent *x = *(struct ent *const *)a, *y = *(struct ent *const *)b;

	if (x->st.st_dev != y->st.st_dev)
		return x->st.st_dev < y->st.st_dev ? -1 : 1;
	if (x->st.st_ino != y->st.st_ino)
		return x->st.st_ino < y->st.st_ino ? -1 : 1;
	return strcmp(x->rel, y->rel);
}

static void load(struct tree *t)
{
	struct ent **p;
	size_t i, j, k;

	walk(t, ".");
	if (!t->n)
		return;
	qsort(t->v, t->n, sizeof(*t->v), by_rel);
	p = xrealloc(NULL, t->n * sizeof(*p));
	for (i = 0; i < t->n; i++)
		p[i] = &t->v[i];
	qsort(p, t->n, sizeof(*p), by_inode);
	for (i = 0; i < t->n; i = j) {
		for (j = i; j < t->n && p[j]->st.st_dev == p[i]->st.st_dev &&
		     p[j]->st.st_ino == p[i]->st.st_ino; j++)
			p[j]->canon = p[i]->rel;
		for (k = i; k < j; k++)
			p[k]->names = j - i;
	}
	free(p);
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFLNK: return "symlink";
	case S_IFIFO: return "fifo";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFSOCK: return "socket";
	}
	return "unknown";
}

static void append(char **s, size_t *len, size_t *cap, off_t lo, off_t hi)
{
	if (*len + 64 > *cap)
		*s = xrealloc(*s, *cap *= 2);
	*len += sprintf(*s + *len, "%s%lld-%lld", *len ? "," : "", (long long)lo, (long long)hi);
}

/* Data extents of fd as "start-end,...", 4 KiB rounded and merged; *holes
 * says whether there is a hole anywhere. NULL when unsupported. */
static char *extents(int fd, off_t size, int *holes)
{
	size_t cap = 256, len = 0, n = 0;
	char *s = xrealloc(NULL, cap);
	off_t pos = 0, lo = -1, hi = -1, d, h;

	*s = 0;
	while ((d = lseek(fd, pos, SEEK_DATA)) >= 0) {
		if ((h = lseek(fd, d, SEEK_HOLE)) < 0) {
			d = -1;
			break;
		}
		d &= ~(off_t)4095;
		h = (h + 4095) & ~(off_t)4095;
		if (lo >= 0 && d <= hi) {
			hi = h > hi ? h : hi;
		} else {
			if (lo >= 0)
				append(&s, &len, &cap, lo, hi);
			lo = d;
			hi = h;
			n++;
		}
		if (h >= size)
			break;
		pos = h;
	}
	if (d < 0 && errno != ENXIO) {
		free(s);
		return NULL;
	}
	if (lo >= 0)
		append(&s, &len, &cap, lo, hi);
	*holes = !(n == 1 && lo == 0 && hi >= size);
	return s;
}

static void cmp_file(const char *rel, const char *pa, const char *pb, off_t size)
{
	static char a[1 << 20], b[1 << 20];
	int fa = open(pa, O_RDONLY | O_NOFOLLOW), fb = open(pb, O_RDONLY | O_NOFOLLOW);
	off_t off = 0;
	ssize_t na, nb, i;
	int ha, hb;
	char *ea, *eb;

	if (fa < 0 || fb < 0) {
		ioerr("cannot open", fa < 0 ? pa : pb);
		goto out;
	}
	for (;;) {
		na = read(fa, a, sizeof(a));
		nb = na > 0 ? read(fb, b, na) : 0;
		if (na < 0 || nb < 0) {
			ioerr("cannot read", na < 0 ? pa : pb);
			goto out;
		}
		if (na == 0)
			break;
		if (nb != na || memcmp(a, b, na)) {
			for (i = 0; i < nb && a[i] == b[i]; i++)
				;
			diff(rel, "contents differ at byte %lld", (long long)(off + i));
			goto out;
		}
		off += na;
	}
	if (size > 0 && (ea = extents(fa, size, &ha))) {
		eb = extents(fb, size, &hb);
		if ((ha || (strict_holes && eb && hb)) && (!eb || strcmp(ea, eb)))
			diff(rel, "data extents (%.200s vs %.200s)", ea, eb ? eb : "unknown");
		free(ea);
		free(eb);
	}
out:
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted xattr names of path (security.selinux left out); returns count. */
static size_t xnames(const char *path, char **buf, char ***names)
{
	ssize_t n = llistxattr(path, NULL, 0);
	size_t k = 0;
	char *p;

	*buf = NULL;
	*names = NULL;
	if (n < 0 && errno != ENOTSUP && errno != ENODATA)
		ioerr("cannot list xattrs of", path);
	if (n <= 0)
		return 0;
	*buf = xrealloc(NULL, n + 1);
	n = llistxattr(path, *buf, n);
	if (n < 0) {
		ioerr("cannot list xattrs of", path);
		return 0;
	}
	*names = xrealloc(NULL, (n + 1) * sizeof(char *));
	for (p = *buf; p < *buf + n; p += strlen(p) + 1)
		if (strcmp(p, "security.selinux"))
			(*names)[k++] = p;
	qsort(*names, k, sizeof(char *), by_str);
	return k;
}

static char *xvalue(const char *path, const char *name, ssize_t *len)
{
	ssize_t n = lgetxattr(path, name, NULL, 0);
	char *v = xrealloc(NULL, n > 0 ? n + 1 : 1);

	if (n < 0 || (n = lgetxattr(path, name, v, n)) < 0) {
		ioerr("cannot read xattr of", path);
		free(v);
		return NULL;
	}
	v[n] = 0;
	*len = n;
	return v;
}

static void cmp_xattrs(const char *rel, const char *pa, const char *pb)
{
	char *ba, *bb, **na, **nb, *va, *vb;
	size_t ka = xnames(pa, &ba, &na), kb = xnames(pb, &bb, &nb), i = 0, j = 0;
	ssize_t la, lb;
	int c;

	while (i < ka || j < kb) {
		c = i == ka ? 1 : j == kb ? -1 : strcmp(na[i], nb[j]);
		if (c < 0) {
			diff(rel, "xattr %s missing in B", na[i++]);
		} else if (c > 0) {
			diff(rel, "xattr %s only in B", nb[j++]);
		} else {
			va = xvalue(pa, na[i], &la);
			vb = xvalue(pb, nb[j], &lb);
			if (va && vb && (la != lb || memcmp(va, vb, la)))
				diff(rel, "xattr %s value ('%.40s' vs '%.40s', %zd vs %zd bytes)",
				     na[i], va, vb, la, lb);
			free(va);
			free(vb);
			i++;
			j++;
		}
	}
	free(ba);
	free(bb);
	free(na);
	free(nb);
}

static void cmp_ent(const struct tree *ta, const struct tree *tb,
		    const struct ent *a, const struct ent *b)
{
	const struct stat *sa = &a->st, *sb = &b->st;
	char *pa = join(ta->root, a->rel), *pb = join(tb->root, b->rel);
	const char *rel = a->rel;

	if ((sa->st_mode & S_IFMT) != (sb->st_mode & S_IFMT)) {
		diff(rel, "type (%s vs %s)", type_name(sa->st_mode), type_name(sb->st_mode));
		goto out;
	}
	if (!no_mode && (sa->st_mode & 07777) != (sb->st_mode & 07777))
		diff(rel, "mode (%04o vs %04o)", sa->st_mode & 07777, sb->st_mode & 07777);
	if (!no_owner && (sa->st_uid != sb->st_uid || sa->st_gid != sb->st_gid))
		diff(rel, "owner (%u:%u vs %u:%u)", sa->st_uid, sa->st_gid, sb->st_uid, sb->st_gid);
	if (!no_times && (!S_ISDIR(sa->st_mode) || dir_times) &&
	    (sa->st_mtim.tv_sec != sb->st_mtim.tv_sec || sa->st_mtim.tv_nsec != sb->st_mtim.tv_nsec))
		diff(rel, "mtime (%lld.%09ld vs %lld.%09ld)", (long long)sa->st_mtim.tv_sec,
		     sa->st_mtim.tv_nsec, (long long)sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec);
	if (!no_links && !S_ISDIR(sa->st_mode) &&
	    (a->names != b->names || strcmp(a->canon, b->canon)))
		diff(rel, "hard links (%zu names, first '%s' vs %zu names, first '%s')",
		     a->names, a->canon, b->names, b->canon);
	if (S_ISCHR(sa->st_mode) || S_ISBLK(sa->st_mode)) {
		if (sa->st_rdev != sb->st_rdev)
			diff(rel, "device (%u:%u vs %u:%u)", major(sa->st_rdev), minor(sa->st_rdev),
			     major(sb->st_rdev), minor(sb->st_rdev));
	} else if (S_ISLNK(sa->st_mode)) {
		char la[4096], lb[4096];
		ssize_t na = readlink(pa, la, sizeof(la) - 1), nb = readlink(pb, lb, sizeof(lb) - 1);

		if (na < 0 || nb < 0) {
			ioerr("cannot readlink", na < 0 ? pa : pb);
		} else {
			la[na] = lb[nb] = 0;
			if (strcmp(la, lb))
				diff(rel, "symlink target ('%s' vs '%s')", la, lb);
		}
	} else if (S_ISREG(sa->st_mode)) {
		if (sa->st_size != sb->st_size)
			diff(rel, "size (%lld vs %lld)", (long long)sa->st_size, (long long)sb->st_size);
		else
			cmp_file(rel, pa, pb, sa->st_size);
	}
	if (!no_xattr)
		cmp_xattrs(rel, pa, pb);
out:
	free(pa);
	free(pb);
}

static void free_tree(struct tree *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->v[i].rel);
	free(t->v);
}

/* Whether rel lies inside directory dir (a name reported missing). */
static int under(const char *rel, const char *dir)
{
	size_t n = dir ? strlen(dir) : 0;

	return dir && !strncmp(rel, dir, n) && rel[n] == '/';
}

static int set_xattr(char **argv)
{
	if (lsetxattr(argv[0], argv[1], argv[2], strlen(argv[2]), 0) < 0) {
		fprintf(stderr, "treecmp: cannot set %s on '%s': %s\n", argv[1], argv[0],
			strerror(errno));
		return 2;
	}
	return 0;
}

/* --hole-map FILE: the data ranges SEEK_DATA / SEEK_HOLE give, one
 * "start-end" a line (the holes are between). */
static int hole_map(const char *path)
{
	int fd = open(path, O_RDONLY);
	off_t pos = 0, d, h;

	if (fd < 0) {
		fprintf(stderr, "treecmp: cannot open '%s': %s\n", path, strerror(errno));
		return 2;
	}
	while ((d = lseek(fd, pos, SEEK_DATA)) >= 0) {
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			break;
		printf("%lld-%lld\n", (long long)d, (long long)h);
		pos = h;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct tree a = { 0 }, b = { 0 };
	size_t i = 0, j = 0;
	const char *gone = NULL; /* last name reported missing: not its contents */
	static const struct { const char *name; int *on; } flags[] = {
		{ "--no-owner", &no_owner }, { "--no-times", &no_times },
		{ "--no-links", &no_links }, { "--no-xattr", &no_xattr },
		{ "--no-mode", &no_mode }, { "--dir-times", &dir_times },
		{ "--strict-holes", &strict_holes },
	};
	const int nflags = sizeof(flags) / sizeof(flags[0]);
	int k, f, c;

	if (argc == 5 && !strcmp(argv[1], "--setxattr"))
		return set_xattr(argv + 2);
	if (argc == 3 && !strcmp(argv[1], "--hole-map"))
		return hole_map(argv[2]);
	for (k = 1; k < argc; k++) {
		for (f = 0; f < nflags && strcmp(argv[k], flags[f].name); f++)
			;
		if (f < nflags)
			*flags[f].on = 1;
		else if (!strncmp(argv[k], "--", 2) || b.root)
			goto usage;
		else
			*(a.root ? &b.root : &a.root) = argv[k];
	}
	if (!b.root)
		goto usage;
	load(&a);
	load(&b);
	if (!a.n || !b.n)
		i = a.n, j = b.n; /* a root is missing: compare nothing */
	while (i < a.n || j < b.n) {
		c = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.v[i].rel, b.v[j].rel);
		if (c < 0) {
			if (!under(a.v[i].rel, gone))
				diff(gone = a.v[i].rel, "missing in B");
			i++;
		} else if (c > 0) {
			if (!under(b.v[j].rel, gone))
				diff(gone = b.v[j].rel, "only in B");
			j++;
		} else {
			cmp_ent(&a, &b, &a.v[i++], &b.v[j++]);
		}
	}
	free_tree(&a);
	free_tree(&b);
	return status;
usage:
	fprintf(stderr, "usage: treecmp A B [--no-owner] [--no-times] [--no-links] [--no-xattr]"
		" [--no-mode] [--dir-times] [--strict-holes]\n       treecmp --setxattr PATH NAME VALUE\n"
		"       treecmp --hole-map FILE\n");
	return 2;
}
