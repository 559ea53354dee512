/* SPDX-License-Identifier: MIT */
/* Out of descriptors: a socket-to-file flow, whose splice needs a pipe of
 * its own, starts all the same (the buffer pipeline, which needs none)
 * and moves every byte, in both backends. */
#define _GNU_SOURCE
#include <sys/resource.h>

#include "flow/flow_util.h"

int main(void)
{
	size_t n = 3u << 20;
	char *data = malloc(n);
	struct rlimit old, rl;
	struct end src, dst;
	const char *method = "?";
	int side = -1, probe;
	uaio_loop *l;
	int64_t r;

	t_watchdog(60);
	t_banner("test_nofile");
	l = t_loop_new(0);
	t_fill(data, n, 21);
	t_src(&src, E_UNIX, data, n, NULL);
	t_dst(&dst, E_FILE, n, "/var/tmp");
	/* no descriptor left: the next one the process asks for is refused */
	CHECK((probe = dup(0)) >= 0);
	close(probe);
	CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
	rl = (struct rlimit){ (rlim_t)probe, old.rlim_max };
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	CHECK(pipe((int[2]){ 0, 0 }) < 0 && errno == EMFILE);
	r = t_flow_sync(l, src.fd, dst.fd, UAIO_FLOW_AUTO, 0, UAIO_FLOW_EOF, &side, &method);
	CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
	fprintf(stderr, "  unix socket -> file with no descriptor left: %lld by %s\n",
		(long long)r, method);
	CHECK_EQ(r, (int64_t)n);
	t_src_finish(&src);
	t_dst_finish(&dst);
	CHECK_EQ(dst.got, n);
	CHECK(memcmp(dst.buf, data, n) == 0);
	free(dst.buf);
	uaio_loop_free(l);
	free(data);
	return T_EXIT_PASS;
}
