/* SPDX-License-Identifier: MIT */
/* A second, loop-mounted ext4 file system and block devices as
 * endpoints: files copied across (EXDEV, then a fallback), a block device
 * read as a source and written as a sink. Needs root, losetup and
 * mkfs.ext4. */
#define _GNU_SOURCE
#include <sys/mount.h>

#include "flow/flow_util.h"

static char dir[] = "/var/tmp/uaio-loopdev-XXXXXX";
static char img[300], mnt[300], img2[300], dev[64], dev2[64];

static int sh(const char *fmt, const char *a, const char *b, char *out, size_t outn)
{
	char cmd[1024];
	FILE *p;
	int r;

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	if (!(p = popen(cmd, "r")))
		return -1;
	if (out) {
		if (!fgets(out, (int)outn, p))
			out[0] = 0;
		out[strcspn(out, "\n")] = 0;
	}
	r = pclose(p);
	return r;
}

static void cleanup(void)
{
	if (mnt[0])
		umount(mnt);
	if (dev[0])
		sh("losetup -d %s%s", dev, "", NULL, 0);
	if (dev2[0])
		sh("losetup -d %s%s", dev2, "", NULL, 0);
	sh("rm -rf %s%s", dir, "", NULL, 0);
}

int main(void)
{
	size_t n = (6u << 20) + 5;
	char *data = malloc(n), path[400];
	uaio_loop *l;
	int a, b, d;
	const char *m;

	t_watchdog(120);
	if (geteuid())
		SKIP("loop devices and mounts need root");
	if (sh("command -v losetup >/dev/null && command -v mkfs.ext4 >/dev/null%s%s", "", "",
	       NULL, 0))
		SKIP("losetup or mkfs.ext4 missing");
	CHECK(mkdtemp(dir));
	atexit(cleanup);
	snprintf(img, sizeof(img), "%s/fs.img", dir);
	snprintf(img2, sizeof(img2), "%s/raw.img", dir);
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	CHECK(mkdir(mnt, 0700) == 0);
	if (sh("truncate -s 64M %s && mkfs.ext4 -q -F %s >/dev/null 2>&1", img, img, NULL, 0) ||
	    sh("losetup -f --show %s%s 2>/dev/null", img, "", dev, sizeof(dev)) || !dev[0]) {
		dev[0] = 0;
		mnt[0] = 0;
		SKIP("no loop device available");
	}
	if (mount(dev, mnt, "ext4", 0, NULL)) {
		mnt[0] = 0;
		SKIP("cannot mount the ext4 image");
	}
	t_banner("test_loopdev");
	l = t_loop_new(0);
	t_fill(data, n, 14);
	a = t_tmpfile("/var/tmp");
	CHECK_EQ(pwrite(a, data, n, 0), (ssize_t)n);

	/* A file across file systems, both ways, every mode. */
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		b = t_tmpfile(mnt);
		CHECK_EQ(t_flow_sync(l, a, b, mode, 0, UAIO_FLOW_EOF, NULL, &m), (int64_t)n);
		fprintf(stderr, "  to the image, %s: %s\n", uaio_flow_mode_name(mode), m);
		CHECK(!t_cmp_fds(a, b, n));
		d = t_tmpfile("/var/tmp");
		CHECK_EQ(t_flow_sync(l, b, d, mode, 0, UAIO_FLOW_EOF, NULL, &m), (int64_t)n);
		CHECK(!t_cmp_fds(a, d, n));
		close(b);
		close(d);
	}

	/* A block device as the sink, then as the source. */
	CHECK(sh("truncate -s 16M %s%s", img2, "", NULL, 0) == 0);
	CHECK(sh("losetup -f --show %s%s", img2, "", dev2, sizeof(dev2)) == 0 && dev2[0]);
	for (int mode = UAIO_FLOW_AUTO; mode <= UAIO_FLOW_MMAP; mode++) {
		int bd = open(dev2, O_RDWR), raw;

		CHECK(bd >= 0);
		CHECK_EQ(t_flow_sync(l, a, bd, mode, 0, UAIO_FLOW_EOF, NULL, &m), (int64_t)n);
		fprintf(stderr, "  to %s, %s: %s\n", dev2, uaio_flow_mode_name(mode), m);
		CHECK(fsync(bd) == 0);
		raw = open(img2, O_RDONLY);
		CHECK(!t_cmp_fds(a, raw, n));
		close(raw);
		/* Back out of the device, a given length (it is 16 MiB). */
		d = t_tmpfile("/var/tmp");
		CHECK_EQ(t_flow_sync(l, bd, d, mode, 0, n, NULL, &m), (int64_t)n);
		CHECK(!t_cmp_fds(a, d, n));
		/* Until its end: all 16 MiB. */
		snprintf(path, sizeof(path), "%s", "/dev/null");
		close(d);
		d = open(path, O_WRONLY);
		CHECK_EQ(t_flow_sync(l, bd, d, mode, 0, UAIO_FLOW_EOF, NULL, &m), 16 << 20);
		close(d);
		close(bd);
	}
	close(a);
	CHECK_EQ(uaio_loop_inflight(l), 0);
	uaio_loop_free(l);
	free(data);
	return T_EXIT_PASS;
}
