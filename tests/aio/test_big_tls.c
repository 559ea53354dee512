/* SPDX-License-Identifier: MIT */
/*
 * A program with much thread-local storage: glibc carves a thread's
 * static TLS out of the stack it is given and refuses a stack it does not
 * fit in, so the engine's thread, made with a fixed 256 KiB stack, was
 * never made: a pipe read (which needs the engine) failed with EAGAIN,
 * as did the writes after it, where glibc's helpers (whose stacks it
 * sizes for the TLS) serve them. Each request is checked for its data.
 */
#include "aio/aio_util.h"

/* More than any fixed stack the library used; touched, so it is real */
static __thread char big[1024 * 1024];

int main(void)
{
	int q[2], err, fd = t_tmpfile();
	char r[8] = { 0 }, w[4][4096];
	struct aiocb rd, wr[4];

	t_watchdog(60);
	big[0] = 1;
	big[sizeof(big) - 1] = 2;
	CHECK(pipe(q) == 0);
	rd = t_cb(q[0], r, sizeof(r), 0);
	CHECK_EQ(uaio_read(&rd) == 0 ? 0 : errno, 0);
	CHECK_EQ(write(q[1], "hi", 2), 2);
	CHECK_EQ(t_wait(&rd, &err), 2);
	CHECK_EQ(err, 0);
	CHECK(!memcmp(r, "hi", 2));
	for (int i = 0; i < 4; i++) {
		t_fill(w[i], sizeof(w[i]), (unsigned)i + 1);
		wr[i] = t_cb(fd, w[i], sizeof(w[i]), (off_t)i * 4096);
		CHECK_EQ(uaio_write(&wr[i]) == 0 ? 0 : errno, 0);
	}
	for (int i = 0; i < 4; i++) {
		char back[4096];

		CHECK_EQ(t_wait(&wr[i], &err), 4096);
		CHECK_EQ(err, 0);
		CHECK_EQ(pread(fd, back, sizeof(back), (off_t)i * 4096), 4096);
		CHECK(!memcmp(back, w[i], sizeof(back)));
	}
	CHECK(big[0] == 1 && big[sizeof(big) - 1] == 2);
	close(q[0]);
	close(q[1]);
	close(fd);
	return T_EXIT_PASS;
}
