/* SPDX-License-Identifier: MIT */
/*
 * The libraries opened with dlopen, as a plugin or a language runtime
 * opens them, after the program started. Their thread-local state must be
 * static TLS (initial-exec): reached through __tls_get_addr, a thread's
 * first access allocates, and so does its next one after any other
 * dlopen, and aio_error, aio_return and aio_suspend are async-signal-safe:
 * a handler that interrupted malloc would deadlock. So neither library
 * may import __tls_get_addr, both must still open with dlopen (glibc
 * keeps a little static TLS for that), and the drop-in opened so must
 * serve requests, also to a thread whose first call is in a handler.
 */
#include "aio/aio_util.h"

#include <aio.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>

enum { LEN = 64 * 1024 };

static int (*p_read)(struct aiocb *);
static int (*p_error)(const struct aiocb *);
static ssize_t (*p_return)(struct aiocb *);
static int (*p_suspend)(const struct aiocb *const[], int, const struct timespec *);

/* The library's DT_FLAGS has DF_STATIC_TLS: it was linked with static
 * TLS (what dlopen must find room for). */
static bool static_tls(void *h)
{
	struct link_map *lm;

	CHECK_EQ(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
	for (const ElfW(Dyn) *d = lm->l_ld; d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_FLAGS)
			return d->d_un.d_val & DF_STATIC_TLS;
	return false;
}

/* The symbols lib takes from others, as nm lists them (binutils comes
 * with the compiler): none may be __tls_get_addr. */
static void no_tls_get_addr(const char *lib)
{
	char cmd[4096], line[512];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm -D --undefined-only '%s' 2>/dev/null", lib);
	CHECK((f = popen(cmd, "r")));
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, "__tls_get_addr"))
			fprintf(stderr, "%s imports %s", lib, line);
		CHECK(!strstr(line, "__tls_get_addr"));
	}
	CHECK_EQ(pclose(f), 0);
	CHECK(n > 0);		/* nm read it: every library imports something */
}

static void *open_lib(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		fprintf(stderr, "dlopen: %s\n", dlerror());
	CHECK(h);
	CHECK(static_tls(h));
	return h;
}

static void read_all(struct aiocb *cb, int fd, char *buf)
{
	const struct aiocb *list[1] = { cb };

	memset(cb, 0, sizeof(*cb));
	memset(buf, 0, LEN);
	cb->aio_fildes = fd;
	cb->aio_buf = buf;
	cb->aio_nbytes = LEN;
	cb->aio_sigevent.sigev_notify = SIGEV_NONE;
	CHECK_EQ(p_read(cb), 0);
	while (p_error(cb) == EINPROGRESS)
		CHECK(p_suspend(list, 1, NULL) == 0 || errno == EINTR);
	CHECK_EQ(p_error(cb), 0);
	CHECK_EQ(p_return(cb), LEN);
	for (int i = 0; i < LEN; i++)
		CHECK_EQ(buf[i], (char)(i * 7));
}

static struct aiocb done_cb;
static volatile sig_atomic_t in_handler = -1;

static void on_usr1(int sig)
{
	(void)sig;
	in_handler = p_error(&done_cb);
}

/* A thread that touches the library first inside a signal handler. */
static void *handler_first(void *arg)
{
	(void)arg;
	CHECK_EQ(pthread_kill(pthread_self(), SIGUSR1), 0);
	return NULL;
}

static void *reads_too(void *arg)
{
	static char buf[LEN];
	struct aiocb cb;

	read_all(&cb, *(int *)arg, buf);
	return NULL;
}

static void dlopened(void)
{
	static char data[LEN], buf[LEN];
	void *h, *core;
	Dl_info where;
	pthread_t t;
	int fd = t_tmpfile();

	no_tls_get_addr(DROPIN_LIB);
	no_tls_get_addr(UAIO_LIB);
	h = open_lib(DROPIN_LIB);
	core = open_lib(UAIO_LIB);	/* both in one process */
	CHECK((p_read = (int (*)(struct aiocb *))dlsym(h, "aio_read")));
	CHECK((p_error = (int (*)(const struct aiocb *))dlsym(h, "aio_error")));
	CHECK((p_return = (ssize_t (*)(struct aiocb *))dlsym(h, "aio_return")));
	CHECK((p_suspend = (int (*)(const struct aiocb *const[], int,
				    const struct timespec *))dlsym(h, "aio_suspend")));
	/* the drop-in's, not glibc's */
	CHECK(dladdr((void *)p_read, &where));
	CHECK(strstr(where.dli_fname, "libuaio-posix"));
	for (int i = 0; i < LEN; i++)
		data[i] = (char)(i * 7);
	CHECK(pwrite(fd, data, LEN, 0) == LEN);
	read_all(&done_cb, fd, buf);
	CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR);
	CHECK_EQ(pthread_create(&t, NULL, handler_first, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(in_handler, 0);
	CHECK_EQ(pthread_create(&t, NULL, reads_too, &fd), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	close(fd);
	(void)core;
}

int main(void)
{
	t_watchdog(60);
	RUN(dlopened);
	return T_EXIT_PASS;
}
