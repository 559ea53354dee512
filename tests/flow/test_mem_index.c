/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* A memory endpoint with a wrong buf_index (none registered there, or a
 * registered buffer that does not cover the memory) fails the flow with
 * -EFAULT at its first step (docs/flows.md, Endpoints), from the memory
 * end's side: a memory sink's is UAIO_FLOW_SIDE_DST, a memory source's
 * UAIO_FLOW_SIDE_SRC, whichever op found it. Nothing moves, so a file
 * position (off = -1) stays where it was. */
#include <signal.h>

#include "flow/flow_util.h"

#define N	(256u << 10)

static void one(uaio_loop *l, bool mem_src, int mode, int idx, char *mem)
{
	struct t_sync s = { 0 };
	int fd = t_tmpfile("/var/tmp");
	struct uaio_flow_ep m = { .type = UAIO_FLOW_MEM, .mem = mem, .mem_len = N,
				  .buf_index = idx };
	struct uaio_flow_ep file = { .type = UAIO_FLOW_FD, .fd = fd, .off = -1 };
	struct uaio_flow_params p = {
		.src = mem_src ? m : file, .dst = mem_src ? file : m,
		.len = UAIO_FLOW_EOF, .mode = mode, .done = t_sync_done, .data = &s,
	};
	uaio_flow *f;

	CHECK_EQ(pwrite(fd, mem, N, 0), N);
	CHECK_EQ(lseek(fd, 10, SEEK_SET), 10);
	CHECK_OK(uaio_flow_start(l, &p, &f));
	T_RUN_UNTIL(l, s.r.done, 100000);
	fprintf(stderr, "    %s %s, buf_index %d: res %lld side %d\n",
		mem_src ? "mem -> file" : "file -> mem", uaio_flow_mode_name(mode), idx,
		(long long)s.r.res, s.r.side);
	CHECK_EQ(s.r.res, -EFAULT);
	CHECK_EQ(s.r.side, mem_src ? UAIO_FLOW_SIDE_SRC : UAIO_FLOW_SIDE_DST);
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 10);
	close(fd);
}

int main(void)
{
	static const int modes[] = { UAIO_FLOW_AUTO, UAIO_FLOW_KBUF };
	char *mem = malloc(N), *other = malloc(4096);
	uaio_loop *l;
	int other_idx;

	signal(SIGPIPE, SIG_IGN);
	t_watchdog(60);
	t_banner("test_mem_index");
	l = t_loop_new(0);
	t_fill(mem, N, 4);
	/* A registered buffer elsewhere: its index does not cover mem. */
	other_idx = uaio_buf_register(l, other, 4096);
	for (unsigned i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		for (int mem_src = 0; mem_src < 2; mem_src++) {
			one(l, mem_src, modes[i], 1000, mem);
			if (other_idx >= 0)
				one(l, mem_src, modes[i], other_idx, mem);
		}
	}
	if (other_idx >= 0)
		uaio_buf_unregister(l, other_idx);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	uaio_loop_free(l);
	free(other);
	free(mem);
	return T_EXIT_PASS;
}
