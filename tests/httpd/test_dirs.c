/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd directories: /dir without a slash gives 301 to /dir/, /dir/
 * gives its index.html, no listing without --list (404 or 403), and with
 * --list an HTML listing of every entry, names HTML-escaped.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <errno.h>
#include <stdlib.h>
#include "client.h"

static struct ht_server srv;
static char *root;
static const char idx_root[] = "<html>root index</html>\n";
static const char idx_sub[] = "<html>withidx index</html>\n";
static const char idx_space[] = "<html>space dir index</html>\n";
#define NBIG 2000

static void put(const char *rel, const char *content)
{
	ht_put(root, rel, content, strlen(content));
}

static void dir(const char *rel)
{
	char *p = ht_join(root, rel);
	FATAL(mkdir(p, 0755) == 0, "mkdir %s", p);
	free(p);
}

static void setup(void)
{
	root = ht_mkdir("root");
	put("index.html", idx_root);
	dir("withidx");
	put("withidx/index.html", idx_sub);
	dir("my dir");
	put("my dir/index.html", idx_space);
	dir("a");
	dir("a/b");
	put("a/b/file.txt", "deep\n");
	dir("sub");
	put("sub/plain.txt", "plain\n");
	put("sub/.hiddenQY", "dotfile\n");	/* served, not listed */
	put("sub/a&b.txt", "ampersand\n");
	put("sub/<x>.txt", "angle\n");
	put("sub/caf\xc3\xa9.txt", "utf-8\n");	/* listed, and its link works */
	put("sub/ctl\x01QZ.txt", "control\n");	/* no request can name these: */
	put("sub/bad\xffQZ.txt", "not utf-8\n");	/* not listed */
	put("sub/\"><img src=x onerror=alert(1)>.txt", "xss\n");
	dir("sub/nested");
	{	/* a link to a directory inside: listed as a directory */
		char *l = ht_join(root, "sub/linked");

		FATAL(symlink("nested", l) == 0, "symlink");
		free(l);
	}
	dir("big");
	for (int i = 0; i < NBIG; i++) {
		char n[64];
		snprintf(n, sizeof(n), "big/entry-%05d-with-a-longish-name.txt", i);
		put(n, "x");
	}
}

/* Location must be the path with a slash, relative or absolute. */
static int location_ok(const char *loc, const char *want)
{
	const char *path;
	if (!loc)
		return 0;
	if (!strcmp(loc, want))
		return 1;
	path = !strncmp(loc, "http://", 7) ? strchr(loc + 7, '/') : NULL;
	return path && !strcmp(path, want);
}

static void redirect(const char *path, const char *want)
{
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp r, h, n;

	ht_sendf(c, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
	ht_read(c, &r, 0);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 301, "GET %s: 301 expected", path);
	EXPECT_R(&r, location_ok(ht_hdr(&r, "Location"), want), "GET %s: Location %s expected", path, want);
	ht_sendf(c, "HEAD %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
	ht_read(c, &h, 1);
	if (h.rc != HT_ECLOSED || h.head) {	/* the connection may have been closed */
		EXPECT_R(&h, h.rc == HT_OK && h.status == 301, "HEAD %s: 301 expected", path);
		ht_sendf(c, "GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n");
		ht_read(c, &n, 0);
		EXPECT_R(&n, n.rc == HT_OK && n.status == 200 && n.body_len == strlen(idx_root),
			 "GET after a 301 on the same connection");
		ht_resp_free(&n);
	}
	ht_resp_free(&r);
	ht_resp_free(&h);
	ht_close(c);
}

static void index_file(const char *path, const char *content)
{
	struct ht_resp r;
	char m[64];
	ht_get(srv.port, path, NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == strlen(content) &&
		 !memcmp(r.body, content, r.body_len), "GET %s: its index.html expected", path);
	EXPECT_R(&r, r.status != 200 || !strcmp(ht_mime(&r, m, sizeof(m)), "text/html"),
		 "GET %s: index.html as text/html", path);
	ht_resp_free(&r);
}

static void common(void)
{
	redirect("/withidx", "/withidx/");
	redirect("/sub", "/sub/");
	redirect("/a/b", "/a/b/");
	redirect("/my%20dir", "/my%20dir/");
	/* the query kept; a fragment (never sent by browsers) is not part
	 * of the path or the query (RFC 9110 7.1) */
	redirect("/sub?a=1", "/sub/?a=1");
	/* bytes a URI cannot hold are escaped in the query; escapes stay */
	redirect("/sub?\xff\"<x>%41", "/sub/?%FF%22%3Cx%3E%41");
	/* a '%' that begins no escape is one itself (RFC 3986 2.1) */
	redirect("/sub?a=%&b=%4&c=%4g%", "/sub/?a=%25&b=%254&c=%254g%25");
	redirect("/sub?a#b", "/sub/?a");
	redirect("/sub#a?b", "/sub/");
	index_file("/", idx_root);
	index_file("/withidx/", idx_sub);
	index_file("/my%20dir/", idx_space);
	struct ht_resp r;
	ht_get(srv.port, "/a/b/file.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == 5, "file in a nested directory");
	ht_resp_free(&r);
}

static void t_no_list(void)
{
	static const char *dirs[] = { "/sub/", "/a/", "/a/b/", "/big/" };
	common();
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct ht_resp r;
		ht_get(srv.port, dirs[i], NULL, &r);
		EXPECT_R(&r, r.rc == HT_OK && (r.status == 404 || r.status == 403),
			 "GET %s without --list: 404 or 403 expected", dirs[i]);
		EXPECT_R(&r, !ht_body_has(&r, "plain.txt") && !ht_body_has(&r, "entry-00001"),
			 "GET %s without --list: the body lists the directory", dirs[i]);
		ht_resp_free(&r);
	}
}

static void t_list(void)
{
	struct ht_resp r;
	char m[64];

	common();
	ht_get(srv.port, "/sub/", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "GET /sub/ with --list: 200");
	EXPECT_R(&r, !strcmp(ht_mime(&r, m, sizeof(m)), "text/html"), "listing is text/html");
	EXPECT_R(&r, ht_body_has(&r, "plain.txt"), "listing names plain.txt");
	EXPECT_R(&r, ht_body_has(&r, "<title>Index of /sub/</title>"),
		 "the listing's title is the directory's URL, its slash included");
	EXPECT_R(&r, ht_body_has(&r, "href=\"nested/\""), "listing links the subdirectory 'nested/'");
	EXPECT_R(&r, ht_body_has(&r, "href=\"linked/\""),
		 "a link to a directory is listed with its '/' (a 301 per click without)");
	EXPECT_R(&r, ht_body_has(&r, "a&amp;b.txt"), "listing shows a&b.txt as a&amp;b.txt");
	EXPECT_R(&r, !ht_body_has(&r, "a&b.txt"), "raw 'a&b.txt' in the listing (not escaped)");
	EXPECT_R(&r, ht_body_has(&r, "&lt;x&gt;.txt"), "listing shows <x>.txt as &lt;x&gt;.txt");
	EXPECT_R(&r, ht_body_has(&r, "href=\"caf%C3%A9.txt\""), "listing links caf\u00e9.txt");
	EXPECT_R(&r, !ht_body_has(&r, "QZ"), "listing shows names no request can name");
	EXPECT_R(&r, !ht_body_has(&r, "QY"), "listing shows a dot name (nginx's autoindex does not)");
	EXPECT_R(&r, !ht_body_has(&r, "<x>"), "raw '<x>' in the listing (not escaped)");
	EXPECT_R(&r, !ht_body_has(&r, "<img src=x"), "raw '<img src=x' in the listing: HTML injection");
	EXPECT_R(&r, !ht_body_has(&r, "\"><img"), "raw '\"><img' in the listing: attribute injection");
	if (r.body)
		fprintf(stderr, "    /sub/ listing: %zu bytes\n", r.body_len);
	ht_resp_free(&r);

	ht_get(srv.port, "/sub/.hiddenQY", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && ht_body_has(&r, "dotfile"),
		 "GET /sub/.hiddenQY: a dot name is served");
	ht_resp_free(&r);

	/* names in links percent-decode back to the files */
	ht_get(srv.port, "/sub/a%26b.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && ht_body_has(&r, "ampersand"), "GET /sub/a%%26b.txt");
	ht_resp_free(&r);
	ht_get(srv.port, "/sub/%3Cx%3E.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && ht_body_has(&r, "angle"), "GET /sub/%%3Cx%%3E.txt");
	ht_resp_free(&r);

	ht_get(srv.port, "/sub/caf%C3%A9.txt", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == 6, "GET of a listed UTF-8 name");
	ht_resp_free(&r);
	/* HEAD of a listing: no body (checked by the next request) */
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp h, g;
	ht_sends(c, "HEAD /sub/ HTTP/1.1\r\nHost: t\r\n\r\nGET /sub/plain.txt HTTP/1.1\r\nHost: t\r\n\r\n");
	ht_read(c, &h, 1);
	ht_read(c, &g, 0);
	EXPECT_R(&h, h.rc == HT_OK && h.status == 200, "HEAD /sub/ with --list");
	EXPECT_R(&g, g.rc == HT_OK && g.status == 200 && g.body_len == 6, "GET after HEAD of a listing");
	ht_resp_free(&h);
	ht_resp_free(&g);
	ht_close(c);

	/* preconditions on a listing, which has no validators: only the
	 * "*" forms match (RFC 9110 13.1.1, 13.1.2); the listing was 200 */
	static const struct { const char *h; int st; } pre[] = {
		{ "If-Match: \"zz\"\r\n", 412 }, { "If-Match: *\r\n", 200 },
		{ "If-None-Match: *\r\n", 304 }, { "If-None-Match: \"zz\"\r\n", 200 },
		{ "If-Modified-Since: Sun, 06 Nov 2044 08:49:37 GMT\r\n", 200 },
		{ "If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", 200 },
	};
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
		ht_get(srv.port, "/sub/", pre[i].h, &r);
		EXPECT_R(&r, r.rc == HT_OK && r.status == pre[i].st, "listing with %.*s: %d expected",
			 (int)strlen(pre[i].h) - 2, pre[i].h, pre[i].st);
		EXPECT_R(&r, pre[i].st != 304 || r.body_len == 0, "304 of a listing: no body");
		ht_resp_free(&r);
	}

	/* a directory of 2000 entries: every name listed */
	ht_get(srv.port, "/big/", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200, "GET /big/ (2000 entries) with --list");
	int missing = 0;
	for (int i = 0; i < NBIG && r.status == 200; i++) {
		char n[64];
		snprintf(n, sizeof(n), "entry-%05d-with-a-longish-name.txt", i);
		if (!ht_body_has(&r, n) && missing++ < 3)
			fprintf(stderr, "    /big/ listing lacks %s\n", n);
	}
	EXPECT_R(&r, missing == 0, "/big/ listing lacks %d of %d names", missing, NBIG);
	ht_resp_free(&r);

	/* the listing of the root itself is not shown: it has an index.html */
	index_file("/", idx_root);
}

/* The redirect that adds a directory's slash, for a name whose escaped
 * form is three times as long (a '+' is "%2B") as the request: a whole
 * answer (301, or 414 when it cannot fit), never a head cut short. */
static void t_long_redirect(void)
{
	char name[251], *path, *dir = ht_join(root, "");
	size_t n = 0;
	struct ht_resp r;

	memset(name, '+', 250);
	name[250] = 0;
	path = malloc(8192);	/* 13 names of 251, or a query of 6000 */
	for (int i = 0; i < 13; i++) {
		char *next = ht_join(dir, name);

		EXPECT(mkdir(next, 0755) == 0 || errno == EEXIST, "mkdir");
		dir = next;
		path[n++] = '/';
		memcpy(path + n, name, 250);
		n += 250;
	}
	path[n] = 0;
	{
		struct ht_conn *c = ht_connect(srv.port);

		ht_sendf(c, "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", path);
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && (r.status == 301 || r.status == 414) &&
			 ht_hdr(&r, "Content-Length"),
			 "a long name without its slash: a whole 301 or 414");
		ht_resp_free(&r);
		ht_close(c);
	}
	/* a long query that needs no escape fits as it is (as nginx
	 * redirects it); it was charged three bytes a byte: 414 past ~2.9 KB */
	memset(path, 'q', 6000);
	path[6000] = 0;
	memcpy(path, "k=", 2);
	{
		struct ht_conn *c = ht_connect(srv.port);
		const char *loc;

		ht_sendf(c, "GET /sub?%s HTTP/1.1\r\nHost: t\r\n\r\n", path);
		ht_read(c, &r, 0);
		loc = ht_hdr(&r, "Location");
		EXPECT_R(&r, r.rc == HT_OK && r.status == 301 && loc && !strncmp(loc, "/sub/?", 6) &&
			 strlen(loc) == 6 + 6000,
			 "a 6000-byte query on a directory without its slash: 301 with it whole");
		ht_resp_free(&r);
		ht_close(c);
	}
	/* one whose escaped form cannot fit: a whole 414 */
	memset(path + 2, '|', 5998);
	{
		struct ht_conn *c = ht_connect(srv.port);

		ht_sendf(c, "GET /sub?%s HTTP/1.1\r\nHost: t\r\n\r\n", path);
		ht_read(c, &r, 0);
		EXPECT_R(&r, r.rc == HT_OK && r.status == 414 && ht_hdr(&r, "Content-Length"),
			 "a query of 6000 bytes to escape: a whole 414");
		ht_resp_free(&r);
		ht_close(c);
	}
	free(path);
}

int main(void)
{
	ht_init("httpd/test_dirs", 170);
	setup();
	ht_start(&srv, root, NULL);
	RUN(t_no_list);
	RUN(t_long_redirect);
	ht_stop(&srv);
	ht_start(&srv, root, "--list", NULL);
	RUN(t_list);
	ht_stop(&srv);
	return ht_finish();
}
