/* SPDX-License-Identifier: MIT */
/*
 * uaio-httpd's memory for clients that stop reading. A response whose
 * head and first bytes went out and whose rest goes by flow gives its
 * 64 KiB body buffer back at once (it held it until the response ended:
 * about 84 KiB a stalled client, 21 after), and the response records kept
 * for reuse are bounded (HTTPD_POOL_KEEP). Anonymous memory only, with a
 * wide bound; not under AddressSanitizer, whose allocator keeps freed
 * memory back (quarantine).
 */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

#define N	300
#define BOUND	(56 * 1024)	/* bytes of growth per stalled response */

static char *root;

static long rss_anon_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* N clients ask for a 64 MiB file and read nothing past its first bytes:
 * the server's anonymous memory grows by less than BOUND a client. */
static void stalled(const char *mode)
{
	struct ht_server s;
	struct ht_conn *c[N];
	long before, after;
	char b[64];

	ht_start(&s, root, "--disk-io", mode, "--send-timeout", "300", NULL);
	before = rss_anon_kb(s.pid);
	for (int i = 0; i < N; i++) {
		int small = 2048;

		c[i] = ht_connect(s.port);
		setsockopt(c[i]->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		ht_sendf(c[i], "GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\n");
	}
	/* each has its head: the server sent it with the first 64 KiB */
	for (int i = 0; i < N; i++) {
		struct pollfd p = { .fd = c[i]->fd, .events = POLLIN };

		EXPECT(poll(&p, 1, 30000) == 1, "%s: no response on connection %d", mode, i);
		EXPECT(recv(c[i]->fd, b, sizeof(b), 0) > 0, "%s: connection %d", mode, i);
	}
	/* until the server's memory holds still (the last flows started) */
	after = rss_anon_kb(s.pid);
	for (int i = 0, same = 0; i < 100 && same < 3; i++) {
		long now;

		usleep(50000);
		now = rss_anon_kb(s.pid);
		same = now == after ? same + 1 : 0;
		after = now;
	}
	fprintf(stderr, "    %s: RssAnon %ld -> %ld kB with %d stalled responses (%ld B each)\n",
		mode, before, after, N, (after - before) * 1024 / N);
	EXPECT(before > 0 && after > 0, "RssAnon of the server");
	EXPECT((after - before) * 1024 / N < BOUND,
	       "%s: %ld bytes a stalled response (bound %d)", mode,
	       (after - before) * 1024 / N, BOUND);
	for (int i = 0; i < N; i++)
		ht_close(c[i]);
	ht_stop(&s);
}

static void t_stalled_blocking(void)
{
	stalled("blocking");
}

static void t_stalled_laio(void)
{
	stalled("laio");
}

int main(void)
{
	ht_init("httpd/test_memory", 300);
#if defined(__SANITIZE_ADDRESS__)
	fprintf(stderr, "skip: AddressSanitizer keeps freed memory (quarantine)\n");
	return 77;
#endif
	ht_raise_nofile(4 * N);
	root = ht_mkdir("root");
	/* 64 MiB of hole: more than socket buffers hold, read from no disk */
	ht_put_hole(root, "big.bin", 64 << 20);
	RUN(t_stalled_blocking);
	RUN(t_stalled_laio);
	return ht_finish();
}
