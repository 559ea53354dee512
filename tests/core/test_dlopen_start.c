/* SPDX-License-Identifier: MIT */
/*
 * A library's constructor that waits for another thread of the program
 * (as one that submits to a loop, whose lock that thread holds, does),
 * while that thread starts the loop's first worker: starting a thread
 * must not need the loader's lock, which the dlopen holds while its
 * constructors run. It did (dlsym for glibc's TLS count, on every start
 * of a thread): the two waited for each other.
 */
#include <uaio/loop.h>

#include "test.h"
#include <dlfcn.h>
#include <pthread.h>

static uaio_loop *L;
static int go[2], done[2];
static uaio_op op;

static long work(void *arg)
{
	(void)arg;
	return 5;
}

static int got = -1;

static void on_done(uaio_op *o, int res, void *data)
{
	(void)o;
	(void)data;
	got = res;
}

static void *submitter(void *arg)
{
	char c;

	(void)arg;
	CHECK_EQ(read(go[0], &c, 1), 1);	/* the constructor runs */
	CHECK_OK(uaio_op_work(L, &op, work, NULL, on_done, NULL));
	CHECK_EQ(write(done[1], &c, 1), 1);
	return NULL;
}

int main(void)
{
	struct uaio_loop_params p = { .flags = UAIO_LOOP_THREADSAFE };
	char fds[32];
	pthread_t t;
	void *h;

	t_banner("test_dlopen_start");
	CHECK((L = uaio_loop_new(&p)) != NULL);
	CHECK(pipe(go) == 0 && pipe(done) == 0);
	snprintf(fds, sizeof(fds), "%d %d", go[1], done[0]);
	setenv("T_CTOR_FDS", fds, 1);
	CHECK(pthread_create(&t, NULL, submitter, NULL) == 0);
	h = dlopen(WAIT_LIB, RTLD_NOW);
	if (!h)
		fprintf(stderr, "dlopen: %s\n", dlerror());
	CHECK(h != NULL);
	CHECK(pthread_join(t, NULL) == 0);
	T_RUN_UNTIL(L, got != -1, 10000);
	CHECK_EQ(got, 5);
	uaio_loop_free(L);
	dlclose(h);
	return T_EXIT_PASS;
}
