/* SPDX-License-Identifier: MIT */
/* Content types by file name extension: /etc/mime.types, read once at
 * start, over a small built-in table for machines without it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "httpd.h"

struct mime_ent { char *ext; char *type; struct mime_ent *next; };

struct mime_table {
	struct mime_ent *bucket[1024];
};

static const char *const builtin[][2] = {
	{ "html", "text/html" }, { "htm", "text/html" }, { "css", "text/css" },
	{ "js", "text/javascript" }, { "mjs", "text/javascript" },
	{ "json", "application/json" }, { "txt", "text/plain" },
	{ "xml", "application/xml" }, { "svg", "image/svg+xml" },
	{ "png", "image/png" }, { "jpg", "image/jpeg" }, { "jpeg", "image/jpeg" },
	{ "gif", "image/gif" }, { "webp", "image/webp" }, { "ico", "image/vnd.microsoft.icon" },
	{ "pdf", "application/pdf" }, { "wasm", "application/wasm" },
	{ "woff", "font/woff" }, { "woff2", "font/woff2" }, { "mp4", "video/mp4" },
	{ "webm", "video/webm" }, { "mp3", "audio/mpeg" }, { "zip", "application/zip" },
	{ "gz", "application/gzip" }, { "tar", "application/x-tar" },
};

static unsigned hash(const char *s, size_t n)
{
	unsigned h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)tolower((unsigned char)s[i])) * 16777619u;
	return h % 1024;
}

static void add(struct mime_table *m, const char *ext, const char *type)
{
	unsigned h = hash(ext, strlen(ext));
	struct mime_ent *e;

	for (e = m->bucket[h]; e; e = e->next)
		if (!strcasecmp(e->ext, ext))
			return;		/* first mention wins, as in mime.types */
	e = malloc(sizeof(*e));
	if (!e)
		return;
	e->ext = strdup(ext);
	e->type = strdup(type);
	if (!e->ext || !e->type) {
		free(e->ext);
		free(e->type);
		free(e);
		return;
	}
	e->next = m->bucket[h];
	m->bucket[h] = e;
}

struct mime_table *mime_load(const char *path)
{
	struct mime_table *m = calloc(1, sizeof(*m));
	FILE *f = path ? fopen(path, "re") : NULL;
	char line[1024];

	if (!m)
		return NULL;
	while (f && fgets(line, sizeof(line), f)) {
		char *save, *type = strtok_r(line, " \t\r\n", &save), *ext;

		if (!type || type[0] == '#')
			continue;
		while (strlen(type) < HTTPD_TYPE_MAX &&
		       (ext = strtok_r(NULL, " \t\r\n", &save)))
			add(m, ext, type);
	}
	if (f)
		fclose(f);
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		add(m, builtin[i][0], builtin[i][1]);
	return m;
}

const char *mime_type(const struct mime_table *m, const char *path)
{
	const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');

	if (dot && (!slash || dot > slash) && dot[1]) {
		for (struct mime_ent *e = m->bucket[hash(dot + 1, strlen(dot + 1))];
		     e; e = e->next)
			if (!strcasecmp(e->ext, dot + 1))
				return e->type;
	}
	return "application/octet-stream";
}

void mime_free(struct mime_table *m)
{
	if (!m)
		return;
	for (int i = 0; i < 1024; i++)
		for (struct mime_ent *e = m->bucket[i], *n; e; e = n) {
			n = e->next;
			free(e->ext);
			free(e->type);
			free(e);
		}
	free(m);
}
