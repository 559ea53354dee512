/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd path safety: dot-dot in every spelling (plain, %2e, %2f,
 * overlong UTF-8, backslash), NUL, bad escapes: 400 or 404 and never a
 * byte of a file outside DIR; dot-dot that stays inside DIR works;
 * symlinks out of DIR refused unless --follow-symlinks, symlinks inside
 * served; FIFOs, device nodes and sockets refused without hanging.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"

static struct ht_server srv;
static char *root, *outside;
static char secret[64];
static const char inside_c[] = "inside a/c\n";
static int have_fifo, have_dev, have_sock, have_out_fifo;

static void put(const char *dir, const char *rel, const char *content)
{
	ht_put(dir, rel, content, strlen(content));
}

static void link_to(const char *target, const char *rel)
{
	char *p = ht_join(root, rel);
	FATAL(symlink(target, p) == 0, "symlink %s", p);
	free(p);
}

static void setup(void)
{
	char *p;
	int sfd;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(secret, sizeof(secret), "TOP-SECRET-%ld-%d\n", (long)time(NULL), getpid());
	put(ht_scratch(), "secret.txt", secret);	/* next to DIR, outside it */
	put(ht_scratch(), "outside-marker-QZX", "");	/* shows in a listing of ".." */
	outside = ht_mkdir("outdir");
	put(outside, "file.txt", secret);
	root = ht_mkdir("root");
	put(root, "index.html", "<html>index</html>\n");
	ht_mkdir("root/a");
	ht_mkdir("root/a/b");
	ht_mkdir("root/sub");
	put(root, "a/c", inside_c);
	put(root, "sub/in.txt", "sub/in.txt\n");
	p = ht_join(ht_scratch(), "secret.txt");
	link_to(p, "abs_out");			/* absolute, outside */
	free(p);
	link_to("../secret.txt", "rel_out");	/* relative, outside */
	link_to("/etc/passwd", "passwd");
	link_to("../outdir", "outdir_link");	/* a directory outside */
	link_to("a/c", "in_link");		/* inside */
	link_to("a", "adir_link");		/* a directory inside */
	link_to("nowhere", "dangling");
	p = ht_join(root, "a/c");
	link_to(p, "abs_in");			/* absolute, inside */
	free(p);
	p = ht_join(root, "a");
	link_to(p, "abs_in_dir");		/* absolute, a directory inside */
	free(p);
	/* a name that starts as the root's does but is beside it */
	p = ht_mkdir("rootx");
	put(p, "file.txt", secret);
	free(p);
	p = ht_join(ht_scratch(), "rootx/file.txt");
	link_to(p, "abs_sibling");
	free(p);

	/* a fifo outside, by an absolute and a relative link */
	p = ht_join(outside, "fifo");
	have_out_fifo = mkfifo(p, 0644) == 0;
	link_to(p, "abs_fifo_out");
	free(p);
	link_to("../outdir/fifo", "rel_fifo_out");

	p = ht_join(root, "fifo");
	have_fifo = mkfifo(p, 0644) == 0;
	free(p);
	p = ht_join(root, "zero");
	have_dev = mknod(p, S_IFCHR | 0666, makedev(1, 5)) == 0;	/* /dev/zero */
	free(p);
	p = ht_join(root, "null");
	have_dev &= mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0;	/* /dev/null */
	free(p);
	p = ht_join(root, "sock");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
	sfd = socket(AF_UNIX, SOCK_STREAM, 0);
	have_sock = strlen(p) < sizeof(sa.sun_path) &&
		    bind(sfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(sfd, 1) == 0;
	free(p);	/* sfd stays open (and listening) until exit */
	if (!have_dev)
		fprintf(stderr, "    cannot make device nodes: not checked\n");
}

static int leaked(const struct ht_resp *r)
{
	return ht_body_has(r, "TOP-SECRET-") || ht_body_has(r, "root:x:0:0") ||
	       ht_body_has(r, "root:*:0:0") || ht_body_has(r, "outside-marker-QZX") ||
	       (r->head && strstr(r->head, "TOP-SECRET-"));
}

/* The raw request target; 400 or 404 (403 allowed), never the secret. */
static void refused(const char *target, int allow403)
{
	struct ht_resp r;
	char req[1024];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", target);
	ht_request(srv.port, req, &r);
	EXPECT_R(&r, !leaked(&r), "GET %s: CONTENT OF A FILE OUTSIDE DIR SERVED", target);
	EXPECT_R(&r, r.rc == HT_OK && (r.status == 400 || r.status == 404 ||
				       (allow403 && r.status == 403)),
		 "GET %s: 400 or 404%s expected", target, allow403 ? " (or 403)" : "");
	ht_resp_free(&r);
}

static void no_leak(const char *target, int may_200)
{
	struct ht_resp r;
	char req[1024];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", target);
	ht_request(srv.port, req, &r);
	EXPECT_R(&r, !leaked(&r), "GET %s: CONTENT OF A FILE OUTSIDE DIR SERVED", target);
	EXPECT_R(&r, r.rc == HT_OK || r.rc == HT_ECLOSED, "GET %s: no answer", target);
	if (!may_200)
		EXPECT_R(&r, r.status != 200, "GET %s: 200", target);
	ht_resp_free(&r);
}

static void served(const char *target, const char *content)
{
	struct ht_resp r;
	char req[1024];

	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: t\r\n\r\n", target);
	ht_request(srv.port, req, &r);
	EXPECT_R(&r, r.rc == HT_OK && r.status == 200 && r.body_len == strlen(content) &&
		 !memcmp(r.body, content, r.body_len), "GET %s: 200 with '%.*s' expected", target,
		 (int)strlen(content) - 1, content);
	ht_resp_free(&r);
}

static void t_traversal(void)
{
	static const char *t[] = {
		"/../secret.txt", "/../../../../../../etc/passwd", "/a/../../secret.txt",
		"/a/b/../../../secret.txt", "/./../secret.txt",
		"/%2e%2e/secret.txt", "/%2e%2e/%2e%2e/etc/passwd", "/%2E%2E/secret.txt",
		"/.%2e/secret.txt", "/%2e./secret.txt",
		"/a/%2e%2e/%2e%2e/secret.txt", "/a/%2e%2e/%2e%2e/etc/passwd",
		"/..%2fsecret.txt", "/..%2Fsecret.txt", "/%2e%2e%2fsecret.txt",
		"/a%2f..%2f..%2fsecret.txt", "/a/..%2f..%2fsecret.txt",
		"/..%5csecret.txt", "/..\\secret.txt", "/a\\..\\..\\secret.txt",
		"/%c0%ae%c0%ae/secret.txt", "/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
		"/%c0%af../secret.txt", "/..%c0%afsecret.txt", "/%e0%80%ae%e0%80%ae/secret.txt",
		"/%252e%252e/secret.txt", "/%%32%65%%32%65/secret.txt",
		"/index.html%00", "/index.html%00.txt", "/%00", "/a/c%00/../../secret.txt",
		"/%zz", "/%", "/%2", "/a%", "/%g0secret.txt",
		"/sub%2fin.txt", "/sub%2Fin.txt",
		"//etc/passwd", "///../secret.txt",
		"/abs_out/../../secret.txt",
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		refused(t[i], 1);
	/* absolute-form and odd targets: not served, never the secret */
	static const char *odd[] = {
		"http://t/../secret.txt", "http://t/%2e%2e/secret.txt", "../secret.txt",
		"*", "secret.txt",
	};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		no_leak(odd[i], 0);
	/* may be taken as "/" (dot-segments stop at the root): never the secret */
	static const char *root_ish[] = { "/..", "/../", "/%2e%2e", "/%2e%2e/", "/a/../..", };
	for (size_t i = 0; i < sizeof(root_ish) / sizeof(root_ish[0]); i++)
		no_leak(root_ish[i], 1);
	/* a raw NUL byte in the request line */
	struct ht_conn *c = ht_connect(srv.port);
	struct ht_resp r;
	ht_send(c, "GET /index.html\0/../../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n", 55);
	ht_read(c, &r, 0);
	EXPECT_R(&r, !leaked(&r), "raw NUL in the target: CONTENT OUTSIDE DIR SERVED");
	EXPECT_R(&r, r.rc == HT_ECLOSED || (r.rc == HT_OK && r.status == 400),
		 "raw NUL in the request line: 400 (or close) expected");
	ht_resp_free(&r);
	ht_close(c);
	EXPECT(ht_alive(&srv), "server died on traversal attempts");
}

static void t_inside(void)
{
	served("/a/b/../c", inside_c);
	served("/a/./c", inside_c);
	served("/a/b/./../c", inside_c);
	served("/a//c", inside_c);
	served("/sub/../a/c", inside_c);
	served("/%61/c", inside_c);	/* %61 = a */
}

/* A link out of DIR is refused without opening what it leads to: a
 * fifo (or a device) outside is never opened (its writer would wake, a
 * device could act on the open). inotify sees every real open; the
 * server resolves such a link with O_PATH, which opens nothing. */
static void outside_unopened(void)
{
	char *p = ht_join(outside, "fifo"), ev[4096];
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (!have_out_fifo || in < 0) {
		fprintf(stderr, "    no fifo or no inotify: the outside fifo is not checked\n");
		free(p);
		return;
	}
	FATAL(inotify_add_watch(in, p, IN_OPEN | IN_CLOSE) >= 0, "inotify_add_watch %s", p);
	refused("/abs_fifo_out", 1);
	refused("/rel_fifo_out", 1);
	served("/a/c", inside_c);	/* the server is past both */
	EXPECT(read(in, ev, sizeof(ev)) < 0 && errno == EAGAIN,
	       "a fifo outside DIR, reached by a link: opened by the server, then refused");
	close(in);
	free(p);
}

static void t_symlinks(int follow)
{
	served("/in_link", inside_c);
	served("/adir_link/c", inside_c);
	served("/abs_in", inside_c);
	served("/abs_in_dir/c", inside_c);
	if (!follow) {
		refused("/abs_sibling", 1);
		refused("/abs_out", 1);
		refused("/rel_out", 1);
		refused("/passwd", 1);
		refused("/outdir_link/file.txt", 1);
		refused("/outdir_link/", 1);
		refused("/outdir_link", 1);
		outside_unopened();
	} else {
		served("/abs_out", secret);
		served("/rel_out", secret);
		served("/outdir_link/file.txt", secret);
	}
	refused("/dangling", 1);
}

/* Refused, and never opened: opening a device may act (a watchdog
 * starts, a tape rewinds), a fifo's open is seen by its writer. */
static void t_special(void)
{
	static const char *names[] = { "/fifo", "/zero", "/null", "/sock" };
	int have[] = { have_fifo, have_dev, have_dev, have_sock };
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	char ev[4096];

	for (size_t i = 0; i < 3 && in >= 0; i++) {
		char *p = ht_join(root, names[i] + 1);

		if (have[i])
			FATAL(inotify_add_watch(in, p, IN_OPEN | IN_CLOSE) >= 0,
			      "inotify_add_watch %s", p);
		free(p);
	}
	if (have_out_fifo && in >= 0) {
		char *p = ht_join(outside, "fifo");

		FATAL(inotify_add_watch(in, p, IN_OPEN | IN_CLOSE) >= 0, "inotify_add_watch %s", p);
		free(p);
		/* under --follow-symlinks served if it were a file: refused */
		refused("/abs_fifo_out", 1);
	}
	for (size_t i = 0; i < 4; i++) {
		struct ht_resp r;
		if (!have[i])
			continue;
		ht_get(srv.port, names[i], NULL, &r);	/* a hang times out: fails */
		EXPECT_R(&r, r.rc == HT_OK && (r.status == 403 || r.status == 404),
			 "GET %s (not a regular file): 403 or 404 expected", names[i]);
		ht_resp_free(&r);
		ht_get(srv.port, names[i], "Range: bytes=0-9\r\n", &r);
		EXPECT_R(&r, r.rc == HT_OK && (r.status == 403 || r.status == 404),
			 "GET %s with Range: 403 or 404 expected", names[i]);
		ht_resp_free(&r);
	}
	/* the server was not blocked by any of them */
	served("/a/c", inside_c);
	EXPECT(ht_alive(&srv), "server died on special files");
	if (in < 0) {
		fprintf(stderr, "    no inotify: opens of special files not checked\n");
		return;
	}
	EXPECT(read(in, ev, sizeof(ev)) < 0 && errno == EAGAIN,
	       "a fifo or device node opened by the server, then refused");
	close(in);
}

/* DIR renamed and a new one made at its name (a deploy by rename): the
 * server goes on serving the tree it opened, and an absolute link whose
 * path now leads into the new tree is refused, never served from it. */
static void t_replaced_root(void)
{
	char *d = ht_mkdir("deploy"), *old = ht_join(ht_scratch(), "deploy.old");
	char *f = ht_join(d, "f.txt"), *l = ht_join(d, "abs");
	struct ht_resp r;

	put(d, "f.txt", "OLD\n");
	FATAL(symlink(f, l) == 0, "symlink %s", l);
	ht_start(&srv, d, "--cache", "0", NULL);
	served("/abs", "OLD\n");
	FATAL(rename(d, old) == 0, "rename %s", d);
	free(ht_mkdir("deploy"));
	put(d, "f.txt", "NEW\n");
	FATAL(symlink(f, l) == 0, "symlink %s", l);
	served("/f.txt", "OLD\n");
	ht_get(srv.port, "/abs", NULL, &r);
	EXPECT_R(&r, r.rc == HT_OK && (r.status == 403 || r.status == 404) &&
		 !ht_body_has(&r, "NEW"),
		 "GET /abs, its path now in a tree that replaced DIR: 403 or 404 expected");
	ht_resp_free(&r);
	ht_stop(&srv);
	free(d);
	free(old);
	free(f);
	free(l);
}

int main(void)
{
	ht_init("httpd/test_safety", 170);
	setup();
	ht_start(&srv, root, NULL);
	RUN(t_traversal);
	RUN(t_inside);
	fprintf(stderr, "  t_symlinks (default) ...\n");
	t_symlinks(0);
	RUN(t_special);
	ht_stop(&srv);

	/* each --disk-io mode opens by its own path */
	static const char *modes[] = { "blocking", "threads" };
	for (int i = 0; i < 2; i++) {
		ht_start(&srv, root, "--disk-io", modes[i], NULL);
		fprintf(stderr, "  t_symlinks, t_special (--disk-io %s) ...\n", modes[i]);
		t_symlinks(0);
		t_special();
		ht_stop(&srv);
	}

	ht_start(&srv, root, "--follow-symlinks", NULL);
	fprintf(stderr, "  t_symlinks (--follow-symlinks) ...\n");
	t_symlinks(1);
	refused("/../secret.txt", 1);
	refused("/%2e%2e/secret.txt", 1);
	refused("/a/%2e%2e/%2e%2e/secret.txt", 1);
	RUN(t_special);
	ht_stop(&srv);

	ht_start(&srv, root, "--list", NULL);
	refused("/outdir_link/", 1);	/* no listing of a directory outside */
	no_leak("/../", 1);
	no_leak("/%2e%2e/", 1);
	no_leak("/a/../../", 1);
	ht_stop(&srv);

	RUN(t_replaced_root);
	return ht_finish();
}
