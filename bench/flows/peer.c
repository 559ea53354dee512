/* SPDX-License-Identifier: MIT */
/*
 * The peers flows are measured against, as plain programs a user would
 * write: a read/write loop through one user buffer, mmap + memcpy, and
 * plain copy_file_range; for the network, a read/write sender, receiver
 * and relay.
 *
 *   peer copy rw|mmap|cfr SRC DST [--buf N]
 *   peer send FILE HOST PORT [--buf N]
 *   peer recv PORT FILE [--buf N]
 *   peer forward LPORT HOST PORT [--buf N]
 *
 * Prints "bytes=N secs=S" on stdout.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static size_t bufsz = 1 << 20;

static void die(const char *what)
{
	fprintf(stderr, "peer: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long long rw_loop(int in, int out)
{
	char *buf = malloc(bufsz);
	long long total = 0;

	for (;;) {
		ssize_t r = read(in, buf, bufsz), w = 0;

		if (r < 0)
			die("read");
		if (!r)
			break;
		while (w < r) {
			ssize_t k = write(out, buf + w, (size_t)(r - w));

			if (k < 0)
				die("write");
			w += k;
		}
		total += r;
	}
	free(buf);
	return total;
}

static long long mmap_copy(int in, int out)
{
	struct stat st;
	char *src, *dst;

	if (fstat(in, &st) < 0 || ftruncate(out, st.st_size) < 0)
		die("size");
	if (!st.st_size)
		return 0;
	src = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, in, 0);
	dst = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, out, 0);
	if (src == MAP_FAILED || dst == MAP_FAILED)
		die("mmap");
	memcpy(dst, src, (size_t)st.st_size);
	munmap(src, (size_t)st.st_size);
	munmap(dst, (size_t)st.st_size);
	return st.st_size;
}

static long long cfr_copy(int in, int out)
{
	long long total = 0;
	ssize_t r;

	while ((r = copy_file_range(in, NULL, out, NULL, 1 << 30, 0)) > 0)
		total += r;
	if (r < 0)
		die("copy_file_range");
	return total;
}

static int tcp_connect(const char *host, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		die("address");
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("connect");
	return fd;
}

static int tcp_accept(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), fd;

	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 1) < 0)
		die("listen");
	if ((fd = accept(ls, NULL, NULL)) < 0)
		die("accept");
	close(ls);
	return fd;
}

struct leg {
	int in, out;
	long long n;
};

static void *relay(void *arg)
{
	struct leg *g = arg;

	g->n = rw_loop(g->in, g->out);
	shutdown(g->out, SHUT_WR);
	return NULL;
}

int main(int argc, char **argv)
{
	long long n = 0;
	double t0;
	int argn = argc;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--buf") && i + 1 < argc) {
			bufsz = strtoull(argv[i + 1], NULL, 0);
			argn = i;
			break;
		}
	if (argn < 3) {
		fprintf(stderr, "usage: see the top of peer.c\n");
		return 2;
	}
	t0 = now();
	if (!strcmp(argv[1], "copy") && argn == 5) {
		int in = open(argv[3], O_RDONLY), out = open(argv[4], O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (in < 0 || out < 0)
			die("open");
		n = !strcmp(argv[2], "rw") ? rw_loop(in, out) :
		    !strcmp(argv[2], "mmap") ? mmap_copy(in, out) : cfr_copy(in, out);
		close(out);
	} else if (!strcmp(argv[1], "send") && argn == 5) {
		int in = open(argv[2], O_RDONLY), s = tcp_connect(argv[3], atoi(argv[4]));
		char c;

		if (in < 0)
			die("open");
		n = rw_loop(in, s);
		shutdown(s, SHUT_WR);
		while (read(s, &c, 1) > 0)
			;
	} else if (!strcmp(argv[1], "recv") && argn == 4) {
		int s = tcp_accept(atoi(argv[2]));
		int out = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (out < 0)
			die("open");
		n = rw_loop(s, out);
		close(out);
		close(s);
	} else if (!strcmp(argv[1], "forward") && argn == 5) {
		int a = tcp_accept(atoi(argv[2])), b = tcp_connect(argv[3], atoi(argv[4]));
		struct leg up = { a, b, 0 }, down = { b, a, 0 };
		pthread_t th;

		pthread_create(&th, NULL, relay, &down);
		relay(&up);
		pthread_join(th, NULL);
		n = up.n;
	} else {
		fprintf(stderr, "usage: see the top of peer.c\n");
		return 2;
	}
	printf("bytes=%lld secs=%.6f\n", n, now() - t0);
	return 0;
}
