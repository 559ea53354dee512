/* SPDX-License-Identifier: MIT */
/*
 * What cp remembers while it copies, keyed by (device, inode):
 *  - r->links: the first destination of each source inode that later
 *    names may link to (hard links under -d/-a), of each command-line
 *    directory, and of the first directory each command-line source made
 *    (cp's remember_copied: how "into itself" and a directory named
 *    twice are told apart);
 *  - r->srcs: the command-line sources, for "specified more than once"
 *    (gnulib's same_name: one directory entry, by its last component and
 *    the directory holding it, "a" being "./a");
 *  - r->made: the command-line destinations, for "will not overwrite
 *    just-created" (by name: a job may not have created its file yet).
 * Open addressing; several names may share an inode.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cp.h"

struct seen_ent {
	dev_t dev;
	ino_t ino;
	char *name;		/* NULL: a free slot; gone: a forgotten one */
};

/* Keeps the probe chains whole where an entry was forgotten. */
static char gone[] = "";

static size_t slot0(const struct cp_seen *s, dev_t dev, ino_t ino)
{
	return (((size_t)ino * 0x9e3779b97f4a7c15ull) ^ (size_t)dev) & (s->cap - 1);
}

static void grow(struct cp_seen *s)
{
	struct seen_ent *old = s->v;
	size_t oldcap = s->cap;

	s->cap = oldcap ? 2 * oldcap : 64;
	s->v = calloc(s->cap, sizeof(*s->v));
	if (!s->v) {
		cp_oom();
	}
	for (size_t i = 0; i < oldcap; i++) {
		size_t h;

		if (!old[i].name || old[i].name == gone)
			continue;
		for (h = slot0(s, old[i].dev, old[i].ino); s->v[h].name; h = (h + 1) & (s->cap - 1))
			;
		s->v[h] = old[i];
	}
	free(old);
}

void seen_add(struct cp_seen *s, dev_t dev, ino_t ino, const char *name)
{
	size_t h;

	if (2 * (s->n + 1) > s->cap)
		grow(s);
	for (h = slot0(s, dev, ino); s->v[h].name; h = (h + 1) & (s->cap - 1))
		;
	s->v[h] = (struct seen_ent){ dev, ino, strdup(name) };
	if (!s->v[h].name) {
		cp_oom();
	}
	s->n++;
}

const char *seen_find(const struct cp_seen *s, dev_t dev, ino_t ino,
		      enum seen_match how, const char *name)
{
	if (!s->cap)
		return NULL;
	for (size_t h = slot0(s, dev, ino); s->v[h].name; h = (h + 1) & (s->cap - 1)) {
		const struct seen_ent *e = &s->v[h];

		if (e->dev != dev || e->ino != ino || e->name == gone)
			continue;
		if (how == SEEN_ANY ||
		    (how == SEEN_STRING && strcmp(e->name, name) == 0) ||
		    (how == SEEN_SAME_NAME && cp_same_name(e->name, name, NULL, NULL)))
			return e->name;
	}
	return NULL;
}

void seen_forget(struct cp_seen *s, dev_t dev, ino_t ino, const char *name)
{
	if (!s->cap)
		return;
	for (size_t h = slot0(s, dev, ino); s->v[h].name; h = (h + 1) & (s->cap - 1)) {
		struct seen_ent *e = &s->v[h];

		if (e->dev == dev && e->ino == ino && e->name != gone &&
		    strcmp(e->name, name) == 0) {
			free(e->name);
			e->name = gone;
			return;
		}
	}
}

void seen_free(struct cp_seen *s)
{
	for (size_t i = 0; i < s->cap; i++)
		if (s->v[i].name != gone)
			free(s->v[i].name);
	free(s->v);
	*s = (struct cp_seen){ 0 };
}

/* The key r->made files a name under. */
ino_t seen_name_key(const char *name)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 1099511628211ull;
	return (ino_t)h;
}

/* The last component of name (trailing slashes left out) and its length;
 * *dlen: what comes before it, less its slashes. */
static const char *last_part(const char *name, size_t *len, size_t *dlen)
{
	const char *b = name + strlen(name);

	while (b > name && b[-1] == '/')
		b--;
	*len = (size_t)(b - name);
	while (b > name && b[-1] != '/')
		b--;
	*len -= (size_t)(b - name);
	*dlen = (size_t)(b - name);
	while (*dlen > 1 && name[*dlen - 1] == '/')
		(*dlen)--;
	return b;
}

/* The directory holding name, as cp 9.1 finds it: lstat of its path, but
 * a destination name is relative to the target directory cp opened, so
 * when it lies right in that directory (target: its name, or NULL) the
 * target's own symlinks are followed. */
static int dir_of(const char *name, size_t dlen, const char *target, struct stat *st)
{
	char dir[dlen + 2];

	if (!dlen) {	/* "name", or all slashes */
		dlen = 1;
		name = *name == '/' ? "/" : ".";
	}
	memcpy(dir, name, dlen);
	dir[dlen] = 0;
	if (target) {
		size_t t = strlen(target);

		while (t > 1 && target[t - 1] == '/')
			t--;
		if (t == dlen && !memcmp(target, dir, t))
			return stat(dir, st);
	}
	return lstat(dir, st);
}

bool cp_same_name(const char *a, const char *b, const char *a_target,
		  const char *b_target)
{
	size_t la, lb, da, db;
	const char *ba = last_part(a, &la, &da), *bb = last_part(b, &lb, &db);
	struct stat sa, sb;

	if (la != lb || memcmp(ba, bb, la) != 0)
		return false;
	return dir_of(a, da, a_target, &sa) == 0 && dir_of(b, db, b_target, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
