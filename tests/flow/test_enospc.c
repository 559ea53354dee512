/* SPDX-License-Identifier: MIT */
/* A sink on a full file system (a 1 MiB tmpfs): every mode ends with
 * ENOSPC from the sink's side, at once and without a hang. Needs root for
 * the mount. Before that, /dev/full, a device without splice: every source
 * kind ends with its ENOSPC, as cat's write would, never with splice's
 * refusal (EINVAL); pagecache mode, which has no other way, refuses the
 * pair at the start. */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mount.h>

#include "flow/flow_util.h"

static void full_device(uaio_loop *l, const char *data, size_t n)
{
	static const int kinds[] = { E_FILE, E_PIPE, E_UNIX, E_TCP, E_DEV, E_MEM };
	static const int modes[] = { UAIO_FLOW_AUTO, UAIO_FLOW_PAGECACHE, UAIO_FLOW_KBUF };

	for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			struct t_sync s = { 0 };
			struct end src;
			struct uaio_flow_params p = {
				.dst = { .type = UAIO_FLOW_FD, .off = -1 },
				.len = n, .mode = modes[m], .done = t_sync_done, .data = &s,
			};
			uaio_flow *f;
			int r;

			t_src(&src, kinds[k], data, n, "/var/tmp");
			if (kinds[k] == E_MEM)
				p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_MEM, .mem = src.buf,
							       .mem_len = n, .buf_index = -1 };
			else
				p.src = (struct uaio_flow_ep){ .type = UAIO_FLOW_FD, .fd = src.fd,
							       .off = kinds[k] == E_FILE ? 0 : -1 };
			CHECK((p.dst.fd = open("/dev/full", O_WRONLY | O_CLOEXEC)) >= 0);
			r = uaio_flow_start(l, &p, &f);
			if (r == 0)
				T_RUN_UNTIL(l, s.r.done, 10000000);
			fprintf(stderr, "  %s -> /dev/full, %s (%s): %lld side %d\n", e_names[kinds[k]],
				uaio_flow_mode_name(modes[m]), r ? "not started" : s.method,
				(long long)(r ? r : s.r.res), s.r.side);
			if (modes[m] == UAIO_FLOW_PAGECACHE) {
				/* No in-kernel path writes to it: the mode
				 * cannot move this pair, said at the start. */
				CHECK_EQ(r, -EINVAL);
			} else {
				CHECK_EQ(r, 0);
				CHECK_EQ(s.r.res, -ENOSPC);
				CHECK_EQ(s.r.side, UAIO_FLOW_SIDE_DST);
			}
			close(p.dst.fd);
			t_src_finish(&src);
		}
	}
}

int main(void)
{
	char mnt[] = "/tmp/uaio-enospc-XXXXXX";
	size_t n = 4u << 20;
	char *data = malloc(n);
	uaio_loop *l;
	int a;

	t_watchdog(120);
	signal(SIGPIPE, SIG_IGN);
	t_fill(data, n, 13);
	l = t_loop_new(0);
	full_device(l, data, n);
	uaio_loop_free(l);
	if (geteuid())
		SKIP("mounting a small tmpfs needs root");
	CHECK(mkdtemp(mnt));
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m")) {
		rmdir(mnt);
		SKIP("cannot mount a tmpfs here");
	}
	t_banner("test_enospc");
	l = t_loop_new(0);
	t_fill(data, n, 13);
	a = t_tmpfile("/var/tmp");
	CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int b = t_tmpfile(mnt), side = -1;
		const char *m = "?";
		int64_t r = t_flow_sync(l, a, b, mode, 64u << 10, UAIO_FLOW_EOF, &side, &m);

		fprintf(stderr, "  %s (%s): %lld side %d\n", uaio_flow_mode_name(mode), m,
			(long long)r, side);
		CHECK_EQ(r, -ENOSPC);
		CHECK_EQ(side, UAIO_FLOW_SIDE_DST);
		close(b);
	}
	close(a);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	uaio_loop_free(l);
	CHECK(umount(mnt) == 0);
	rmdir(mnt);
	free(data);
	return T_EXIT_PASS;
}
