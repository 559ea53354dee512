/* SPDX-License-Identifier: MIT */
/*
 * Where a checked request goes (calls.c checks it): the inline try (lazy
 * completion; the tries themselves are attempt.c), and the hand-over of
 * what would block to the kernel.
 */
#define _GNU_SOURCE
#include <linux/magic.h>
#include <sys/vfs.h>
#include "aio/engine.h"

/* ---------------------------------------------------- submission */

/* A request of list g (priv(cb)->lio, set as the aiocb went live) counts
 * in it until its release. */
static void lio_add_locked(struct aio_lio *g)
{
	if (g) {
		g->pending++;
		g->refs++;
	}
}

/*
 * Requests on fd still on a helper thread (made while the engine had no
 * descriptor, lone.c): this one goes behind them there, so none of the
 * engine's overtakes them, as one glibc helper runs a descriptor's
 * requests in order. True when it did (the lock released); false with
 * the lock still held, also when no thread could take it.
 */
static bool lone_ahead_locked(struct aiocb *cb, int kind, int fd, struct aio_lio *g)
{
	if (!E->lone || !aio__lone_running_locked(fd))
		return false;
	aio__unlock();
	if (aio__lone_follow(cb, kind, g) == 0)
		return true;
	aio__lock();
	return false;
}

/* Requests on fd run, or wait, on a helper thread (lone.c): no inline
 * try may overtake them. Other descriptors' tries go on meanwhile (a
 * zero-length read blocked there on a terminal stops none of them). */
static bool lone_on(int fd)
{
	bool on;

	if (!__atomic_load_n(&E->lone, __ATOMIC_RELAXED))
		return false;
	aio__lock();
	on = aio__lone_running_locked(fd);
	aio__unlock();
	return on;
}

/* A stream request's place in its descriptor's queue, as glibc computes
 * it: the submitting thread's scheduling priority less aio_reqprio, the
 * higher first (pthread_getschedparam caches it in the thread, as for
 * glibc). aio_reqprio is 0 to AIO_PRIO_DELTA_MAX here, the priority 0 to
 * 99: it fits. */
static int8_t serial_prio(const struct aiocb *cb)
{
	struct sched_param sp = { 0 };
	int policy;

	if (pthread_getschedparam(pthread_self(), &policy, &sp) != 0)
		sp.sched_priority = 0;
	return (int8_t)(sp.sched_priority - cb->aio_reqprio);
}

/* The request becomes a record on a non-seekable file's FIFO (or on an
 * O_APPEND file's, whose writes keep the order of the calls). at_pos: the
 * kernel refused this file an offset (ESPIPE), as procfs's comm refuses
 * pwrite but seeks: glibc then reads or writes at its position, as on a
 * stream. */
static int submit_serial(struct aiocb *cb, int kind, int fd, int fl,
			 const struct stat *st, struct lio_ctx *pc,
			 struct aio_lio *g, bool at_pos)
{
	bool reg = !at_pos && (S_ISBLK(st->st_mode) || aio__seekable_reg(fd, st));
	struct aio_serial *s;
	struct aio_req *r;
	long res;
	int ret;

	if (reg)	/* no meaning for a file: glibc's write waits */
		fl &= ~O_NONBLOCK;
	aio__lock();
	if (lone_ahead_locked(cb, kind, fd, g))
		return 0;
	s = aio__serial_get_locked(fd, st, true);
	if (s && !s->known) {	/* the record's file (by dev and inode): asked once */
		s->known = true;
		s->sock = S_ISSOCK(st->st_mode);
		s->tty = S_ISCHR(st->st_mode);
		s->regfile = S_ISREG(st->st_mode) || S_ISBLK(st->st_mode);
		s->sigfd = aio__signalfd(fd, st);
		if (s->tty) {
			bool seeks = lseek(fd, 0, SEEK_CUR) >= 0;

			s->pread_ok = seeks || errno != ESPIPE;
			s->wblock = !isatty(fd);
			s->rblock = s->wblock && seeks;
		}
	}
	if (s) {
		s->nopos |= at_pos;
		s->reg = reg = reg && !s->nopos;
	}
	if (!s) {
		aio__unlock();
		return -EAGAIN;
	}
	int vtime = s->tty && kind == K_READ && !(fl & O_NONBLOCK) ? aio__tty_vtime(fd) : -1;

	/* An O_APPEND write made while reads of the file on this descriptor
	 * run (they went side by side, before any append queued): glibc
	 * would run them first, and one reading to the end of the file
	 * would see the bytes appended. It waits for them. */
	if (kind == K_WRITE && reg && !s->after_reads) {
		struct aio_fdw *w = aio__fdw_get_locked(fd, false);

		if (w && w->reads && (!w->appends || w->appends == s)) {
			w->appends = s;
			s->after_reads = true;
		}
	}
	if (!s->busy && !s->head && !s->after_reads && kind <= K_WRITE &&
	    !(kind == K_READ && (s->sigfd || s->rblock))) {
		/* Nothing ahead of it: try now, under the lock, so that no
		 * later request can overtake it. */
		int64_t off = reg ? cb->aio_offset : -1;
		bool now = (fl & O_NONBLOCK) || vtime == 0;

		res = aio__attempt_stream(fd, kind, cb, off, RWF_NOWAIT, s);
		if (res == -ESPIPE && reg) {	/* an O_APPEND file without pwrite */
			s->nopos = true;
			s->reg = reg = false;
			off = -1;
			res = aio__attempt_stream(fd, kind, cb, off, RWF_NOWAIT, s);
		}
		if (res == -EOPNOTSUPP && now)
			res = aio__attempt_stream(fd, kind, cb, off, 0, s);
		if (aio__attempt_final(cb, kind, res, true, now)) {
			aio__serial_maybe_free_locked(s);
			aio__unlock();
			aio__complete(cb, res + (res >= 0 ? (long)priv(cb)->done : 0));
			return 0;
		}
	}
	if ((ret = aio__engine_start_locked()) < 0 || !(r = aio__req_alloc_locked())) {
		aio__serial_maybe_free_locked(s);
		aio__unlock();
		return ret < 0 ? aio__lone_thread(cb, kind, g, ret) : -EAGAIN;
	}
	r->op.data = cb;		/* req_cb(r) */
	r->kind = (uint8_t)kind;
	r->prio = serial_prio(cb);
	r->flags = RF_SERIAL | (reg || (kind == K_READ && s->rblock) ? RF_AT_OFFSET : 0);
	r->owner = s;
	if (S_ISSOCK(st->st_mode) && kind <= K_WRITE && !(fl & O_NONBLOCK)) {
		struct timeval tv = { 0 };
		socklen_t len = sizeof(tv);

		if (getsockopt(fd, SOL_SOCKET, kind == K_READ ? SO_RCVTIMEO : SO_SNDTIMEO,
			       &tv, &len) == 0 && (tv.tv_sec > 0 || tv.tv_usec > 0))
			r->tmo_us = (uint64_t)tv.tv_sec * 1000000u + (uint64_t)tv.tv_usec;
	}
	if (vtime >= 0) {
		r->tmo_us = (uint64_t)vtime * 100000u;
		r->flags |= RF_TTY_TIME;
	}
	priv(cb)->req = r;
	aio__pin_stream_locked(r, fd, fl);
	lio_add_locked(g);
	if (s->busy || s->head || s->after_reads) {
		aio__serial_queue_locked(s, r);
	} else {
		s->busy = r;
		if ((ret = aio__req_issue_locked(r)) < 0) {
			s->busy = NULL;
			aio__req_release_locked(r, ret);
			aio__serial_maybe_free_locked(s);
		} else {
			aio__serial_started(r);
		}
	}
	aio__unlock();
	return 0;
}

/* The request becomes a record on a regular file or block device. direct:
 * a single request the calling thread may hand to the kernel itself. */
static int submit_parallel(struct aiocb *cb, int kind, int fd, bool direct,
			   struct lio_ctx *pc, struct aio_lio *g)
{
	struct aio_req *r;
	struct aio_fdw *w;
	bool sync = kind == K_FSYNC || kind == K_DSYNC;
	int ret;

	aio__lock();
	if (lone_ahead_locked(cb, kind, fd, g))
		return 0;
	if ((ret = aio__engine_start_locked()) < 0 || !(r = aio__req_alloc_locked())) {
		aio__unlock();
		return ret < 0 ? aio__lone_thread(cb, kind, g, ret) : -EAGAIN;
	}
	if (!(w = aio__fdw_get_locked(fd, true))) {
		aio__req_free_locked(r);
		aio__unlock();
		return -EAGAIN;
	}
	r->op.data = cb;		/* req_cb(r) */
	r->kind = (uint8_t)kind;
	r->prio = (int8_t)(kind <= K_WRITE ? cb->aio_reqprio : 0);
	r->owner = w;
	r->u.seq = ++w->seq;
	r->epoch = sync ? ++w->epoch : w->epoch;
	priv(cb)->req = r;
	lio_add_locked(g);
	if (sync) {
		w->syncs++;
		atomic_fetch_add_explicit(&E->psyncs, 1, memory_order_relaxed);
	}
	if (kind == K_WRITE) {
		bool held = w->syncs || aio__fdw_meets_locked(w, cb, NULL);

		aio__fdw_live_add_locked(w, r);
		w->writes++;
		atomic_fetch_add_explicit(&E->pwrites, 1, memory_order_relaxed);
		if (held) {
			/* After an fsync not ended (a journal's commit record
			 * must not reach the disk before the data that fsync
			 * covers), or over bytes an earlier request reads or
			 * writes: glibc runs it once those are done. */
			aio__pin_get_locked(r, fd, pc);
			r->remaining = w->syncs;
			r->flags |= RF_HELD;
			r->next = NULL;
			*(w->held ? &w->held_tail->next : &w->held) = r;
			w->held_tail = r;
			r->state = RS_QUEUED;
			aio__unlock();
			return 0;
		}
	} else if (kind == K_READ) {
		aio__fdw_live_add_locked(w, r);
		w->reads++;
	}
	if (kind != K_WRITE && w->writes) {
		/* An fsync after writes still in flight, or a read (which
		 * would read what they have not written yet; glibc runs a
		 * descriptor's requests in order): a barrier, released in
		 * call order. */
		struct aio_req **pp = &w->barriers;

		aio__pin_get_locked(r, fd, pc);
		if (!sync)
			r->epoch = ++w->epoch;
		r->remaining = w->writes;
		r->next = NULL;
		while (*pp)
			pp = &(*pp)->next;
		*pp = r;
		r->state = RS_QUEUED;
		aio__unlock();
		return 0;
	}
	/* A list's entries gather while they are adjacent (batch.c);
	 * not one whose inline try already wrote a part. */
	if (pc && kind <= K_WRITE && !priv(cb)->done) {
		aio__pin_get_locked(r, fd, pc);
		aio__batch_add_locked(pc, r);
		aio__unlock();
		return 0;
	}
	/*
	 * A single small (or O_DIRECT) request on a regular file goes to the
	 * kernel from this thread, on its own ring (thread.c), by its
	 * descriptor: the kernel takes the file reference before we return,
	 * so nothing needs pinning, and no engine wake-up is needed. Disk I/O
	 * ends in bounded time, so the thread's exit can wait for it. When
	 * that ring cannot take it, it is pinned and handed to the loop.
	 */
	ret = direct ? aio__own_issue_locked(r, fd) : -EAGAIN;
	if (ret == -EAGAIN) {
		aio__pin_get_locked(r, fd, pc);
		ret = aio__req_issue_locked(r);
	}
	if (ret < 0)
		aio__req_end_locked(r, ret);
	aio__unlock();
	return 0;
}

static bool serial_has(int fd, const struct stat *st);

/* Whether a read (write) of cb must wait: writes (fsyncs, or reads and
 * writes it overlaps) are in flight, which it waits for in
 * submit_parallel, so no inline try may overtake them. No lock while
 * there are none anywhere. */
static bool must_wait(const struct aiocb *cb, int kind)
{
	struct aio_fdw *w;
	bool any;

	if (kind == K_READ ? !atomic_load_explicit(&E->pwrites, memory_order_relaxed) :
			     !atomic_load_explicit(&E->psyncs, memory_order_relaxed) &&
			     !atomic_load_explicit(&E->plive, memory_order_relaxed))
		return false;
	aio__lock();
	w = aio__fdw_get_locked(cb->aio_fildes, false);
	any = w && (kind == K_READ ? w->writes :
				     w->syncs || aio__fdw_meets_locked(w, cb, NULL));
	aio__unlock();
	return any;
}

/*
 * Nothing to move: preadv2 and pwritev2 answer 0 without asking the file,
 * where glibc's pread and pwrite ask it (an eventfd's or a timerfd's
 * EINVAL, a directory's EISDIR, /dev/full's ENOSPC, a procfs file's own
 * answer: /proc/self/comm takes the empty name). A regular file or block
 * device is asked here, at once (the call does not wait), unless requests
 * in flight on it come first; other files (not pipes or sockets, which
 * answer 0) as glibc asks them, on a thread (lone.c): a terminal or an
 * inotify descriptor may make the call wait. Behind the engine's requests
 * on a stream, the engine asks it when its turn comes (a blocking call,
 * aio__req_blocking). 0 when done or on a thread, 1 when the engine takes
 * it, -EAGAIN when no thread can be made.
 */
static int zero_asks_file(struct aiocb *cb, int kind, struct aio_lio *g)
{
	struct statfs sfs;
	struct stat st;

	if (fstat(cb->aio_fildes, &st) < 0 || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	    (atomic_load_explicit(&E->nserial, memory_order_relaxed) &&
	     serial_has(cb->aio_fildes, &st)))
		return 1;
	/* procfs answers by who asks (/proc/self/attr/current refuses any
	 * thread but its own): glibc's helper thread asks there */
	if ((S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) &&
	    (fstatfs(cb->aio_fildes, &sfs) < 0 || sfs.f_type != PROC_SUPER_MAGIC)) {
		if (must_wait(cb, kind))
			return 1;
		aio__complete(cb, aio__glibc_rw(cb->aio_fildes, cb, kind, (char *)cb->aio_buf, 0, cb->aio_offset));
		return 0;
	}
	return aio__lone_follow(cb, kind, g);
}

/*
 * Queues a read or write: 0 when queued or finished (the status is in the
 * aiocb then), -errno when refused (the caller publishes it). As in
 * glibc, a descriptor that is bad or not open for this direction, or a
 * negative offset, is not a refusal: the request fails as it runs,
 * through aio_error, aio_return and its notification, in the order the
 * kernel's pread checks them (a negative offset first, on any file).
 */
int aio__submit_rw_live(struct aiocb *cb, int kind, struct lio_ctx *pc,
			struct aio_lio *g)
{
	size_t one = INLINE_MAX, *budget = pc ? &pc->inline_left : &one;
	struct aio_hint *h;
	struct stat st;
	int fd, fl, ret;
	long res;
	bool positional = false, at_pos = false, try;
	int rwf;
	bool queues, split;

	queues = !pc && aio__caller_queues(cb);
	fd = cb->aio_fildes;
	h = aio__hint_get(fd);
	/* A write reads the flags afresh: an O_APPEND set since (fcntl, or
	 * the number reused for another file) must queue it in call order. */
	fl = aio__hint_flags(fd, h, kind == K_WRITE);
	/* A hint may speak of an earlier file with this number: what would
	 * fail the request is checked afresh. */
	if (fl < 0 || (fl & O_PATH) || !fd_mode_ok(fl, kind))
		fl = aio__hint_flags(fd, h, true);
	aio__cb_mark_live(cb, g);
	if (cb->aio_offset < 0) {
		aio__complete(cb, -EINVAL);
		return 0;
	}
	if (fl < 0 || (fl & O_PATH) || !fd_mode_ok(fl, kind)) {
		aio__complete(cb, -EBADF);
		return 0;
	}
	if (aio__span_faults(cb, kind)) {
		aio__complete(cb, -EFAULT);
		return 0;
	}
	if (!cb->aio_nbytes && (ret = zero_asks_file(cb, kind, g)) <= 0)
		return ret;

	/* O_APPEND: writes append in the order of the calls (POSIX), so
	 * they queue on the file as a stream's do, never side by side. */
	if (kind == K_WRITE && (fl & O_APPEND)) {
		if (fstat(fd, &st) < 0) {
			aio__complete(cb, -errno);
			return 0;
		}
		goto serial;
	}

	/* A try on a stream fails at once (ESPIPE), which tells regular files
	 * from streams. Without a try (O_DIRECT, whose "non-blocking" try
	 * would wait for the device; too big; refused before), or when serial
	 * files with requests exist: classify the file first. */
	rwf = aio__hint_try(h, kind) ? RWF_NOWAIT : 0;
	/* Not while requests run on helper threads (lone.c): it could
	 * overtake one on this descriptor. */
	try = !must_wait(cb, kind) &&
	      !(fl & O_DIRECT) && cb_len(cb) <= *budget &&
	      (rwf || aio__page_write_ok(cb, kind, fl)) &&
	      !lone_on(fd);
	split = try && queues && kind == K_READ && cb_len(cb) >= SPLIT_MIN &&
		atomic_load_explicit(&E->plive, memory_order_relaxed) < SPLIT_DEPTH &&
		aio__engine_copies();
	if (split)
		try = false;
	if (!try || atomic_load_explicit(&E->nserial, memory_order_relaxed)) {
		if (fstat(fd, &st) < 0) {
			aio__complete(cb, -errno);
			return 0;
		}
		if (!aio__positional_file(fd, &st) || aio__nonblock_device(fd, &st, h))
			goto serial;
		/* A device's read: as glibc's, one whole pread (rblock) */
		if (kind == K_READ && S_ISCHR(st.st_mode))
			goto serial;
		/* O_APPEND writes to it queued: a read waits behind them */
		if (kind == K_READ && serial_has(fd, &st))
			goto serial;
		positional = true;
	}
	if (try) {
		res = aio__attempt(fd, kind, cb, cb->aio_offset, rwf);
		if (rwf)
			aio__hint_learn(h, kind, res);
		if (res == -ESPIPE) {	/* a stream, or a file without pread or pwrite */
			if (!positional && fstat(fd, &st) < 0) {
				aio__complete(cb, -errno);
				return 0;
			}
			at_pos = true;
			goto serial;
		}
		/* No RWF_NOWAIT: a device, which may never say POLLOUT (a
		 * write), or made O_NONBLOCK (its answer is the request's) */
		if (res == -EOPNOTSUPP && !positional) {
			if (fstat(fd, &st) < 0) {
				aio__complete(cb, -errno);
				return 0;
			}
			if (!aio__positional_file(fd, &st) || aio__nonblock_device(fd, &st, h))
				goto serial;
			positional = true;
		}
		if (res > 0) {
			*budget -= (size_t)res < *budget ? (size_t)res : *budget;
			atomic_fetch_add_explicit(&E->inline_bytes, (unsigned long long)res,
						  memory_order_relaxed);
		}
		if (aio__attempt_final(cb, kind, res, false, false)) {
			aio__complete(cb, res + (res >= 0 ? (long)priv(cb)->done : 0));
			return 0;
		}
		/* Not done inline: a device's read goes as glibc's, one whole
		 * pread (rblock). Tried with RWF_NOWAIT, /dev/zero's ends short,
		 * or refuses (EAGAIN), when the reader is due to reschedule,
		 * and io_uring's read would do the same. */
		if (kind == K_READ) {
			if (!positional && fstat(fd, &st) < 0) {
				aio__complete(cb, -errno);
				return 0;
			}
			if (S_ISCHR(st.st_mode))
				goto serial;
		}
	}
	return submit_parallel(cb, kind, fd,
			       !pc && !split && ((fl & O_DIRECT) || cb_len(cb) <= INLINE_MAX),
			       pc, g);
serial:
	/* O_NONBLOCK decides a stream request's result: not from a hint. */
	fl = aio__hint_flags(fd, h, true);
	return submit_serial(cb, kind, fd, fl < 0 ? 0 : fl, &st, pc, g, at_pos);
}


static bool serial_has(int fd, const struct stat *st)
{
	bool has;

	if (!atomic_load_explicit(&E->nserial, memory_order_relaxed))
		return false;
	aio__lock();
	has = aio__serial_get_locked(fd, st, false) != NULL;
	aio__unlock();
	return has;
}

/* An fsync or fdatasync (kind) of cb's file, for aio_fsync or a
 * lio_listio entry with glibc's LIO_DSYNC / LIO_SYNC opcode; a bad
 * descriptor fails as the request runs. 0, or -errno when refused. */
int aio__submit_sync_live(struct aiocb *cb, int kind, struct aio_lio *g)
{
	struct stat st;
	int fd = cb->aio_fildes, ret;

	aio__cb_mark_live(cb, g);
	if (fstat(fd, &st) < 0) {
		aio__complete(cb, -errno);
		return 0;
	}
	/* On a file whose O_APPEND writes are queued, the sync queues
	 * behind them: it covers every write made before it. */
	if ((S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) && !serial_has(fd, &st))
		ret = submit_parallel(cb, kind, fd, true, NULL, g);
	else
		ret = submit_serial(cb, kind, fd, 0, &st, NULL, g, false);
	return ret;
}
