/* SPDX-License-Identifier: MIT */
/*
 * Requests on threads of their own: the engine's way out when it cannot
 * have the descriptors it needs, as glibc's helper threads need none.
 */
#define _GNU_SOURCE
#include "aio/engine.h"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The engine needs descriptors (a ring, eventfds); glibc's helper threads
 * do not. With none to be had (EMFILE, ENFILE), a request (or a list
 * entry) runs as glibc runs it: on a thread, in blocking calls (pread,
 * read on ESPIPE). As with glibc's helpers, one thread serves a
 * descriptor's requests one after another in the order they came, so
 * the writes to a pipe keep their order; a request on a descriptor whose
 * thread is busy waits behind the last one there.
 */
struct aio_lone {
	struct aio_lone *next;		/* E->lone: all of them, running or not */
	struct aio_lone *behind;	/* the next request on fd, waiting */
	struct aiocb *cb;
	int kind, fd;
	struct aio_lio *g;
	/* The file fd named when the request was made, or the error fstat
	 * gave then. A request runs only on that file: if fd was closed and
	 * its number reused while the request waited, it fails with EBADF
	 * rather than read or write another file (no descriptor is to be had
	 * to hold the file open, as the engine does). */
	dev_t dev;
	ino_t ino;
	int err;
};

static void lone_unlink_locked(struct aio_lone *l)
{
	struct aio_lone **pp = &E->lone;

	while (*pp != l)
		pp = &(*pp)->next;
	*pp = l->next;
}

/* The request l waits behind on its descriptor's thread, or NULL when
 * that thread runs l (or is about to). */
static struct aio_lone *lone_ahead_of_locked(const struct aio_lone *l)
{
	for (struct aio_lone *a = E->lone; a; a = a->next)
		if (a->behind == l)
			return a;
	return NULL;
}

/* A fork's child: the threads are the parent's, their records go, and
 * the requests become orphans as the engine's do (engine.c
 * orphans_adopt): a waiting one can be cancelled, the one a thread ran
 * never ends. As many as there is memory for; the rest stay in progress,
 * uncancellable. */
void aio__lone_forget(void)
{
	size_t n = E->norphans;
	struct aio_orphan *o;

	for (struct aio_lone *l = E->lone; l; l = l->next)
		n++;
	o = n > E->norphans ? realloc(E->orphans, n * sizeof(*o)) : NULL;
	if (o)
		E->orphans = o;
	for (struct aio_lone *l = E->lone; l; l = l->next) {
		if (cb_state(l->cb) != ST_LIVE)
			continue;
		atomic_store(&priv(l->cb)->state, tag(l->cb, ST_ORPHAN));
		if (o && E->norphans < n)
			o[E->norphans++] = (struct aio_orphan){
				l->cb, l->fd, lone_ahead_of_locked(l) != NULL };
	}
	while (E->lone) {
		struct aio_lone *l = E->lone;

		E->lone = l->next;
		free(l);
	}
}

/* Whether requests on fd run, or wait, on a helper thread. */
bool aio__lone_running_locked(int fd)
{
	for (struct aio_lone *l = E->lone; l; l = l->next)
		if (l->fd == fd)
			return true;
	return false;
}

bool aio__same_file(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

long aio__glibc_rw(int fd, struct aiocb *cb, int kind, char *buf, size_t len, off_t off)
{
	ssize_t r;

	if (off < 0)	/* a stream known as one: read or write, no pread try */
		r = kind == K_READ ? read(fd, buf, len) : write(fd, buf, len);
	else
		r = kind == K_READ ? pread(fd, buf, len, off) : pwrite(fd, buf, len, off);
	if (r < 0 && errno == ESPIPE && off >= 0) {
		cb->__return_value = -1;	/* as glibc's helper: see aio__serial_started */
		r = kind == K_READ ? read(fd, buf, len) : write(fd, buf, len);
	}
	return r < 0 ? -errno : r;
}

static void lone_run(struct aio_lone *l)
{
	struct aiocb *cb = l->cb;
	uint64_t done = priv(cb)->done;
	char *buf = (char *)cb->aio_buf + done;
	size_t len = cb_len(cb) - done;
	off_t off = cb->aio_offset + (off_t)done;
	long r;

	if (l->g) {
		/* The list's last entry: its notification's thread is made
		 * before the request runs (see aio__req_release_locked). */
		aio__lock();
		if (l->g->notify && l->g->pending == 1 && !l->g->begun) {
			uaio__notify_begin(&l->g->sev, &l->g->held);
			l->g->begun = true;
		}
		aio__unlock();
	}
	if (!l->err && !aio__same_file(cb->aio_fildes, l->dev, l->ino))
		l->err = -EBADF;
	if (l->err) {
		aio__complete(cb, l->err);
		return;
	}
	if (l->kind <= K_WRITE) {
		r = aio__glibc_rw(cb->aio_fildes, cb, l->kind, buf, len, off);
	} else {
		r = l->kind == K_DSYNC ? fdatasync(cb->aio_fildes) : fsync(cb->aio_fildes);
		r = r < 0 ? -errno : 0;
	}
	aio__complete(cb, r < 0 ? r : r + (long)done);
}

/* Runs l and the requests waiting behind it; with err, ends them with err
 * instead (their thread could not be made). */
static void lone_chain(struct aio_lone *l, int err)
{
	for (struct aio_lone *next; l; l = next) {
		if (err)
			aio__complete(l->cb, err);
		else
			lone_run(l);
		/* Counted as running until now: a cancel just after the
		 * status is out says AIO_NOTCANCELED, never AIO_ALLDONE
		 * before it is. */
		aio__lock();
		lone_unlink_locked(l);
		next = l->behind;
		if (l->g)
			aio__lio_put_locked(l->g, true);
		aio__unlock();
		free(l);
	}
}

/*
 * aio_cancel: requests on fd (cb, or all of them) waiting behind another
 * on a helper thread end with ECANCELED, as glibc cancels those still in
 * its queue; the one a thread runs is counted in *notcanceled. Returns
 * whether cb (if given) was found.
 */
bool aio__lone_cancel_locked(int fd, struct aiocb *cb, int *canceled, int *notcanceled)
{
	bool found = false;

	for (struct aio_lone *l = E->lone, *next, *ahead; l; l = next) {
		next = l->next;
		if (l->fd != fd || (cb && l->cb != cb))
			continue;
		found = true;
		if (!(ahead = lone_ahead_of_locked(l))) {	/* its thread runs it */
			(*notcanceled)++;
			continue;
		}
		ahead->behind = l->behind;
		lone_unlink_locked(l);
		aio__complete(l->cb, -ECANCELED);
		if (l->g)
			aio__lio_put_locked(l->g, true);
		free(l);
		(*canceled)++;
	}
	return found;
}

static void *lone_main(void *arg)
{
	lone_chain(arg, 0);
	return NULL;
}

/* The last request waiting on fd's thread, or the one it runs; NULL
 * when no thread serves fd. */
static struct aio_lone *lone_tail_locked(int fd)
{
	for (struct aio_lone *l = E->lone; l; l = l->next)
		if (l->fd == fd && !l->behind)
			return l;
	return NULL;
}

/* cb on the thread serving its descriptor, or on a new one: 0, or
 * -EAGAIN when no thread can be made. */
int aio__lone_follow(struct aiocb *cb, int kind, struct aio_lio *g)
{
	struct aio_lone *l, *tail;
	struct stat st;
	pthread_attr_t a;
	pthread_t t;
	int r;

	if (!(l = malloc(sizeof(*l))))
		return -EAGAIN;
	l->cb = cb;
	l->kind = kind;
	l->fd = cb->aio_fildes;
	l->g = g;
	l->behind = NULL;
	l->err = fstat(l->fd, &st) < 0 ? -errno : 0;
	l->dev = st.st_dev;
	l->ino = st.st_ino;
	aio__lock();
	tail = lone_tail_locked(l->fd);
	l->next = E->lone;
	E->lone = l;
	if (g) {
		g->pending++;
		g->refs++;
	}
	if (tail)
		tail->behind = l;
	aio__unlock();
	if (tail)
		return 0;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	r = uaio__thread_start(&t, &a, lone_main, l);
	pthread_attr_destroy(&a);
	if (r < 0) {
		aio__lock();
		lone_unlink_locked(l);
		tail = l->behind;
		if (g) {
			g->pending--;
			g->refs--;
		}
		aio__unlock();
		free(l);
		/* Requests queued behind l meanwhile were accepted: they end
		 * with the error glibc gives when it has no thread. */
		lone_chain(tail, -EAGAIN);
		return -EAGAIN;
	}
	return 0;
}

/* cb on a helper thread if err says the engine found no descriptor: 0,
 * or err when no thread can be made either. */
int aio__lone_thread(struct aiocb *cb, int kind, struct aio_lio *g, int err)
{
	if (err != -EMFILE && err != -ENFILE)
		return err;
	return aio__lone_follow(cb, kind, g) < 0 ? err : 0;
}
