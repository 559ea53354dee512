/* SPDX-License-Identifier: MIT */
/* A sink on a full file system (a 1 MiB tmpfs): every mode ends with
 * ENOSPC from the sink's side, at once and without a hang. Needs root for
 * the mount. */
#define _GNU_SOURCE
#include <sys/mount.h>

#include "flow/flow_util.h"

int main(void)
{
	char mnt[] = "/tmp/uaio-enospc-XXXXXX";
	size_t n = 4u << 20;
	char *data = malloc(n);
	uaio_loop *l;
	int a;

	t_watchdog(120);
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
