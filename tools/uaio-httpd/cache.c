/* SPDX-License-Identifier: MIT */
/*
 * The open-file cache: a normalised path to an open descriptor and its
 * ready-made validators (files.c opens, this file keeps). A name is
 * trusted to lead to the same file for cache_valid_ms, then opened
 * afresh, so a file replaced by a rename is seen within that time; one
 * changed in place is seen at once (same_file).
 *
 * It also holds two descriptors in reserve. Opening a name takes two for
 * a moment (the name O_PATH, then the file: files.c, reopen_now), so a
 * server whose connections hold all the others, with nothing cached that
 * closing would free (entries still being sent stay open), could serve no
 * new file; the reserve is let go for that open and taken again at the
 * next sweep.
 */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>
#include "httpd.h"

struct file_cache {
	struct server *s;
	struct file **bucket;
	unsigned mask;
	unsigned n;
	unsigned tick;			/* moves to the front so far */
	struct file *head, *tail;	/* most recently used first */
	int spare[2];			/* the reserve, -1 while lent */
};

static unsigned hash(const char *p)
{
	unsigned h = 2166136261u;

	while (*p)
		h = (h ^ (unsigned char)*p++) * 16777619u;
	return h;
}

static void spare_take(struct file_cache *fc)
{
	for (int i = 0; i < 2; i++)
		if (fc->spare[i] < 0)
			fc->spare[i] = fcntl(fc->s->cfg->rootfd, F_DUPFD_CLOEXEC, 0);
}

/* The reserve let go; true when it held any. */
static bool spare_give(struct file_cache *fc)
{
	bool had = false;

	for (int i = 0; i < 2; i++)
		if (fc->spare[i] >= 0) {
			close(fc->spare[i]);
			fc->spare[i] = -1;
			had = true;
		}
	return had;
}

struct file_cache *files_new(struct server *s)
{
	struct file_cache *fc = calloc(1, sizeof(*fc));
	unsigned nb = 16;

	if (!fc)
		return NULL;
	while (nb < 2 * s->cfg->cache_entries)
		nb <<= 1;
	fc->s = s;
	fc->mask = nb - 1;
	fc->spare[0] = fc->spare[1] = -1;
	if (!(fc->bucket = calloc(nb, sizeof(*fc->bucket)))) {
		free(fc);
		return NULL;
	}
	spare_take(fc);
	return fc;
}

static void lru_unlink(struct file_cache *fc, struct file *f)
{
	if (f->lprev)
		f->lprev->lnext = f->lnext;
	else
		fc->head = f->lnext;
	if (f->lnext)
		f->lnext->lprev = f->lprev;
	else
		fc->tail = f->lprev;
	f->lprev = f->lnext = NULL;
}

static void lru_front(struct file_cache *fc, struct file *f)
{
	f->lru_tick = ++fc->tick;
	f->lnext = fc->head;
	f->lprev = NULL;
	if (fc->head)
		fc->head->lprev = f;
	fc->head = f;
	if (!fc->tail)
		fc->tail = f;
}

void file_put(struct server *s, struct file *f)
{
	(void)s;
	if (--f->refs)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f->path);
	free(f);
}

/* Out of the cache; true when that closed its descriptor (no response
 * was still sending it). */
static bool uncache(struct file_cache *fc, struct file *f)
{
	struct file **pp = &fc->bucket[f->hash & fc->mask];
	bool closes = f->refs == 1 && f->fd >= 0;

	while (*pp != f)
		pp = &(*pp)->hnext;
	*pp = f->hnext;
	lru_unlink(fc, f);
	fc->n--;
	file_put(fc->s, f);
	return closes;
}

void files_sweep(struct file_cache *fc)
{
	uint64_t now;

	if (!fc)
		return;
	now = server_now_ms(fc->s);
	for (struct file *f = fc->tail, *p; f; f = p) {
		p = f->lprev;
		if (now - f->checked_ms >= fc->s->cfg->cache_valid_ms)
			uncache(fc, f);
	}
	spare_take(fc);
}

void files_forget(struct file_cache *fc, struct file *f)
{
	struct file *e;

	if (!fc || !f || !f->path)
		return;
	for (e = fc->bucket[f->hash & fc->mask]; e && e != f; e = e->hnext)
		;
	if (e)
		uncache(fc, f);
}

/* Out of descriptors: the least recently used half of the cache goes (a
 * response still sending one keeps it open until it is done); when that
 * closed none, the reserve. True when a descriptor was closed. */
bool files_make_room(struct file_cache *fc)
{
	unsigned n = (fc->n + 1) / 2;
	bool closed = false;

	for (unsigned i = 0; i < n && fc->tail; i++)
		closed |= uncache(fc, fc->tail);
	return closed || spare_give(fc);
}

void files_free(struct file_cache *fc)
{
	if (!fc)
		return;
	while (fc->head)
		uncache(fc, fc->head);
	spare_give(fc);
	free(fc->bucket);
	free(fc);
}

/* Whether the open file is still what the entry says: written, cut,
 * chmod'ed or unlinked since, its bytes would no longer match the ETag
 * and Last-Modified built for it (a resumed download with If-Range would
 * join two versions). fstat of an open descriptor reads the in-memory
 * inode; a directory entry has no descriptor and nothing to compare. */
static bool same_file(const struct file *f)
{
	struct stat st;

	if (f->dir)
		return true;
	return fstat(f->fd, &st) == 0 && st.st_nlink > 0 &&
	       (uint64_t)st.st_size == f->size &&
	       st.st_mtim.tv_sec == f->mtim.tv_sec && st.st_mtim.tv_nsec == f->mtim.tv_nsec &&
	       st.st_ctim.tv_sec == f->ctim.tv_sec && st.st_ctim.tv_nsec == f->ctim.tv_nsec;
}

struct file *files_find(struct file_cache *fc, const char *path)
{
	unsigned h = hash(path);
	struct file *f;

	/* The hash first: a chain's other entries cost no visit to their
	 * names (each a cache miss on a large set). */
	for (f = fc->bucket[h & fc->mask]; f; f = f->hnext)
		if (f->hash == h && !strcmp(f->path, path))
			break;
	if (!f)
		return NULL;
	/* stale (the name may lead elsewhere now) or changed: opened afresh */
	if (server_now_ms(fc->s) - f->checked_ms >= fc->s->cfg->cache_valid_ms ||
	    !same_file(f)) {
		uncache(fc, f);
		return NULL;
	}
	/* Moved to the front only when it is out of the front quarter
	 * already (at most tick - lru_tick entries are ahead of it): a hit on
	 * a recent entry writes nothing, and its neighbours, which would be
	 * two more cache misses, stay untouched. The order stays LRU where
	 * eviction looks, at the tail. */
	if (fc->tick - f->lru_tick >= fc->n / 4) {
		lru_unlink(fc, f);
		lru_front(fc, f);
	}
	f->refs++;
	return f;
}

void files_add(struct file_cache *fc, struct file *f)
{
	struct file **b;

	if (!fc->s->cfg->cache_entries)
		return;
	f->hash = hash(f->path);
	b = &fc->bucket[f->hash & fc->mask];
	f->hnext = *b;
	*b = f;
	lru_front(fc, f);
	f->refs++;
	if (++fc->n > fc->s->cfg->cache_entries)
		uncache(fc, fc->tail);
}
