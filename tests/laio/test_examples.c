/* SPDX-License-Identifier: MIT */
/* Runs the two LAIO example servers on 127.0.0.1 and talks to them. */
#include "laio/laio_util.h"
#include <arpa/inet.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

static pid_t start(const char *bin, const char *const argv[], int *out)
{
	int p[2];
	pid_t pid;

	CHECK(pipe(p) == 0);
	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	*out = p[0];
	return pid;
}

static int finish(pid_t pid)
{
	int st;

	CHECK(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void talk(int port, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0);
	char *out = malloc(len), *in = malloc(len);

	CHECK(s >= 0);
	CHECK(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	for (int m = 0; m < 20; m++) {
		size_t got = 0, sent = 0;
		for (size_t i = 0; i < len; i++)
			out[i] = (char)(i * 3 + m);
		/* interleave so a large message cannot deadlock both sides */
		while (got < len) {
			if (sent < len) {
				ssize_t k = send(s, out + sent, len - sent, MSG_DONTWAIT);
				if (k > 0)
					sent += (size_t)k;
			}
			ssize_t k = recv(s, in + got, len - got, sent < len ? MSG_DONTWAIT : 0);
			if (k == 0)
				break;
			if (k > 0)
				got += (size_t)k;
		}
		CHECK_EQ(got, len);
		CHECK(!memcmp(in, out, len));
	}
	close(s);
	free(out);
	free(in);
}

static void run_example(const char *bin)
{
	int fd, port = 0;
	char line[64] = {0};
	pid_t pid;

	if (access(bin, X_OK) != 0) {
		fprintf(stderr, "    %s: not built, skipped\n", bin);
		return;
	}
	fprintf(stderr, "    %s\n", bin);
	/* its own self-test */
	const char *a1[] = { bin, "--selftest", NULL };
	pid = start(bin, a1, &fd);
	close(fd);
	CHECK_EQ(finish(pid), 0);
	/* served by us: three connections, small and large messages */
	const char *a2[] = { bin, "--port", "0", "--conns", "3", NULL };
	pid = start(bin, a2, &fd);
	for (size_t n = 0; n < sizeof(line) - 1; n++) {
		if (read(fd, line + n, 1) != 1 || line[n] == '\n')
			break;
	}
	CHECK(sscanf(line, "port %d", &port) == 1 && port > 0);
	talk(port, 13);
	talk(port, 1000);
	talk(port, 300000);
	close(fd);
	CHECK_EQ(finish(pid), 0);
}

int main(void)
{
	char self[PATH_MAX], dir[PATH_MAX], bin[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int found = 0;

	CHECK(n > 0);
	self[n] = 0;
	snprintf(dir, sizeof(dir), "%s", dirname(dirname(self)));
	alarm(120);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < 2; i++) {
		snprintf(bin, sizeof(bin), "%s/examples/example_laio_server_%s", dir,
			 i ? "uaio" : "libevent");
		found += access(bin, X_OK) == 0;
		run_example(bin);
	}
	if (!found)
		SKIP("examples not built");
	return T_EXIT_PASS;
}
