/* SPDX-License-Identifier: MIT */
/*
 * The room uaio_op_work(3) promises a work function (64 KiB of stack)
 * when glibc keeps a larger TLS surplus than its default (the
 * glibc.rtld.optional_static_tls tunable): the surplus lives in every
 * thread's stack, and a stack sized from the modules' TLS alone left the
 * work 60 KiB short (SIGSEGV). Run again under the tunable, and in a
 * program whose own TLS is small.
 */
#include <uaio/loop.h>

#include "test.h"

static long deep_work(void *arg)
{
	volatile char deep[56 * 1024];

	(void)arg;
	memset((char *)deep, 1, sizeof(deep));
	return deep[0] + deep[sizeof(deep) - 1] == 2 ? 42 : -1;
}

int main(void)
{
	uaio_loop *l;

	t_banner("test_work_stack");
#ifndef __SANITIZE_ADDRESS__
	/* (AddressSanitizer's frames are bigger than the promise) */
	t_rerun_tuned("glibc.rtld.optional_static_tls=90000");
#endif
	l = t_loop_new(0);
	CHECK_EQ(t_work(l, deep_work), 42);
	uaio_loop_free(l);
	return T_EXIT_PASS;
}
