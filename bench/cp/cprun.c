/* SPDX-License-Identifier: MIT */
/*
 * cprun: runs one copier for the cp suite and prints what it cost, from
 * wait4(2): wall seconds, user + system CPU seconds and peak RSS of the
 * command and the children it waited for.
 *
 *   cprun CMD [ARGS...]
 *
 * Prints "wall=S cpu=S rss_kib=N" on stdout (the command's own stdout goes
 * to /dev/null; its stderr is left alone) and exits with the command's
 * status (128 + the signal when killed). It exists because a child forked
 * by the Python runner starts with the runner's peak RSS as its own: exec
 * keeps the high-water mark of the memory map it replaces. Forked from
 * this small program, the command's peak is its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: cprun CMD [ARGS...]\n");
		return 2;
	}
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0) {
		perror("cprun: fork");
		return 2;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "cprun: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	int st;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("cprun: wait4");
			return 2;
		}
	}
	double wall = now() - t0;
	double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		     ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	printf("wall=%.6f cpu=%.6f rss_kib=%ld\n", wall, cpu, ru.ru_maxrss);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
