/* SPDX-License-Identifier: MIT */
/* Loaded by test_dlopen_start: its constructor runs with the loader's
 * lock held, tells the test's other thread to go on, and waits (10 s at
 * most) for that thread's uaio_op_work, which starts the loop's first
 * worker thread, to return. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void wait_for_submitter(void)
{
	const char *s = getenv("T_CTOR_FDS");
	int go, done;
	char c = 1;
	struct pollfd p;

	if (!s || sscanf(s, "%d %d", &go, &done) != 2)
		return;
	p = (struct pollfd){ .fd = done, .events = POLLIN };
	if (write(go, &c, 1) != 1 || poll(&p, 1, 10 * 1000) != 1) {
		fprintf(stderr, "  the submitting thread never came back while a dlopen ran\n");
		_exit(1);
	}
}
