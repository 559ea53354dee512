/* SPDX-License-Identifier: MIT */
/*
 * The smallest uaio program: a Reactor watch and a Proactor read on the
 * same loop. A pipe carries "hello"; the watch sees it become readable,
 * the op reads it, a timer stops the loop. Exit 0 on success.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <uaio/loop.h>

static char buf[16];
static int got_input, got_read;

static int on_input(uaio_watch *w)
{
	got_input = 1;
	return -1;	/* one event is enough: end the watch */
}

static const struct uaio_handler handler = { .handle_input = on_input };

static void on_read(uaio_op *op, int res, void *data)
{
	if (res > 0)
		got_read = res;
}

int main(void)
{
	uaio_loop *l = uaio_loop_new(NULL);
	uaio_watch w = { 0 };
	uaio_op op = { 0 };
	int p[2];

	if (!l || pipe(p) < 0)
		return 1;
	uaio_watch_start(l, &w, p[0], UAIO_READABLE, &handler, NULL);
	if (write(p[1], "hello", 5) != 5)
		return 1;
	uaio_loop_run(l);	/* returns when the watch has ended */
	uaio_op_read(l, &op, p[0], buf, sizeof(buf), -1, on_read, NULL);
	uaio_loop_run(l);
	printf("backend %s: watch %s, read %d bytes \"%s\"\n",
	       uaio_loop_backend_name(l), got_input ? "fired" : "silent",
	       got_read, buf);
	uaio_loop_free(l);
	return got_input && got_read == 5 && !strcmp(buf, "hello") ? 0 : 1;
}
