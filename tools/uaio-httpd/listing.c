/* SPDX-License-Identifier: MIT */
/* --list: a directory's entries as an HTML page, names sorted, escaped
 * for HTML and for URLs, dot names left out. Runs where the --disk-io mode puts blocking
 * calls (a worker thread, or the loop in blocking mode). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "httpd.h"

struct page { char *p; size_t n, cap; bool oom; };

static void put(struct page *pg, const char *s, size_t n)
{
	if (pg->n + n + 1 > pg->cap) {
		size_t cap = (pg->cap ? pg->cap : 4096);
		char *p;

		while (cap < pg->n + n + 1)
			cap *= 2;
		if (!(p = realloc(pg->p, cap))) {
			pg->oom = true;
			return;
		}
		pg->p = p;
		pg->cap = cap;
	}
	memcpy(pg->p + pg->n, s, n);
	pg->n += n;
	pg->p[pg->n] = 0;
}

static void puts_(struct page *pg, const char *s)
{
	put(pg, s, strlen(s));
}

static void html(struct page *pg, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': puts_(pg, "&amp;"); break;
		case '<': puts_(pg, "&lt;"); break;
		case '>': puts_(pg, "&gt;"); break;
		case '"': puts_(pg, "&quot;"); break;
		case '\'': puts_(pg, "&#39;"); break;
		default: put(pg, s, 1);
		}
	}
}

/* A directory, or a link to one (its href ends in '/', as the 301 would
 * make it); a file system without d_type is asked too. */
static bool is_dir(int dirfd, const struct dirent *e)
{
	struct stat st;

	if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
		return e->d_type == DT_DIR;
	return fstatat(dirfd, e->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
}

static void url(struct page *pg, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char e[3] = { '%', hex[c >> 4], hex[c & 15] };

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("-._~", c))
			put(pg, s, 1);
		else
			put(pg, e, 3);
	}
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char *listing_html(int dirfd, const char *urlpath, size_t *len)
{
	DIR *d = fdopendir(dirfd);
	struct page pg = { 0 };
	char **names = NULL, **dirs = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;

	if (!d) {
		int err = errno;

		close(dirfd);
		errno = err;
		return NULL;
	}
	while ((e = readdir(d))) {
		/* A name no request can name (a control byte, not UTF-8)
		 * would be a link to a 400: left out. So are dot names
		 * (.git/, .htpasswd), as nginx's autoindex leaves them out:
		 * served when asked for, not shown. */
		if (e->d_name[0] == '.' ||
		    !proto_name_ok(e->d_name, strlen(e->d_name)))
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*nn));
			char **dd = realloc(dirs, cap * sizeof(*dd));

			if (nn)
				names = nn;
			if (dd)
				dirs = dd;
			if (!nn || !dd)
				break;
		}
		names[n] = strdup(e->d_name);
		dirs[n] = (char *)(uintptr_t)is_dir(dirfd, e);
		if (!names[n])
			break;
		n++;
	}
	/* Directories get a trailing slash; sorting keeps it with the name. */
	for (size_t i = 0; i < n; i++)
		if (dirs[i]) {
			size_t l = strlen(names[i]);
			char *p = realloc(names[i], l + 2);

			if (p) {
				p[l] = '/';
				p[l + 1] = 0;
				names[i] = p;
			}
		}
	qsort(names, n, sizeof(*names), cmp);
	/* the directory's own URL, its slash included, as nginx titles it */
	puts_(&pg, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of /");
	html(&pg, urlpath);
	puts_(&pg, urlpath[0] ? "/</title></head><body><h1>Index of /" :
				"</title></head><body><h1>Index of /");
	html(&pg, urlpath);
	puts_(&pg, urlpath[0] ? "/</h1><ul>\n" : "</h1><ul>\n");
	if (urlpath[0])
		puts_(&pg, "<li><a href=\"../\">../</a></li>\n");
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(names[i]);
		bool dir = l && names[i][l - 1] == '/';

		if (dir)
			names[i][l - 1] = 0;
		puts_(&pg, "<li><a href=\"");
		url(&pg, names[i]);
		puts_(&pg, dir ? "/\">" : "\">");
		html(&pg, names[i]);
		puts_(&pg, dir ? "/</a></li>\n" : "</a></li>\n");
		free(names[i]);
	}
	puts_(&pg, "</ul></body></html>\n");
	free(names);
	free(dirs);
	closedir(d);
	if (pg.oom) {
		free(pg.p);
		errno = ENOMEM;
		return NULL;
	}
	*len = pg.n;
	return pg.p;
}
