/* SPDX-License-Identifier: MIT */
/*
 * Cached regular file: random 4 KiB reads with pread(2) vs
 * laio_syscall(SYS_pread64) (which should stay inline: RWF_NOWAIT hits).
 *   laio_file --file PATH --mode pread|laio [--n N] [--size BYTES]
 * Creates/extends PATH to --size (default 64 MiB) and warms it first.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <uaio/laio.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *path = NULL, *mode = "pread";
	long n = 200000, size = 64l << 20, bg = 0;
	static char buf[4096];
	struct stat st;
	int fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--file") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else if (!strcmp(argv[i], "--n") && i + 1 < argc)
			n = atol(argv[++i]);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			size = atol(argv[++i]);
		else
			path = NULL, i = argc;
	}
	if (!path) {
		fprintf(stderr, "usage: %s --file PATH --mode pread|laio [--n N] [--size B]\n", argv[0]);
		return 2;
	}
	fd = open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		return 1;
	}
	if (st.st_size < size) {
		memset(buf, 'f', sizeof(buf));
		for (long off = 0; off < size; off += sizeof(buf))
			if (pwrite(fd, buf, sizeof(buf), off) != sizeof(buf)) {
				perror("pwrite");
				return 1;
			}
	}
	for (long off = 0; off < size; off += sizeof(buf))	/* warm */
		if (pread(fd, buf, sizeof(buf), off) < 0)
			return 1;
	long pages = size / 4096;
	uint64_t x = 88172645463325252ull;
	long *offs = malloc(sizeof(long) * (size_t)n);
	for (long i = 0; i < n; i++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;	/* xorshift */
		offs[i] = (long)(x % (uint64_t)pages) * 4096;
	}
	int laio = !strcmp(mode, "laio");
	if (laio)
		laio_poll(&(struct laio_completion){0}, 1, &(struct timespec){ 0, 0 });
	double t0 = now_s();
	if (laio) {
		for (long i = 0; i < n; i++) {
			long r = laio_syscall(SYS_pread64, fd, buf, 4096L, offs[i]);
			if (r == -1 && errno == EINPROGRESS) {
				struct laio_completion c;
				bg++;
				if (laio_poll(&c, 1, NULL) != 1 || c.laio_return_value != 4096)
					return 1;
			} else if (r != 4096) {
				return 1;
			}
		}
	} else {
		for (long i = 0; i < n; i++)
			if (pread(fd, buf, 4096, offs[i]) != 4096)
				return 1;
	}
	double t1 = now_s();
	printf("mode=%s n=%ld ns_per_read=%.1f background=%ld\n", mode, n,
	       (t1 - t0) * 1e9 / n, bg);
	return 0;
}
