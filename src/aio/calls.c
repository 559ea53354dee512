/* SPDX-License-Identifier: MIT */
/*
 * The submitting calls: aio_read, aio_write, aio_fsync; what glibc refuses
 * there, before anything runs; and a signal handler's submissions made in
 * the middle of its thread's AIO call, which wait for it (nested.c). What
 * a request then does is submit.c's.
 */
#define _GNU_SOURCE
#include "aio/engine.h"

/*
 * What glibc refuses at submission: no aiocb, a bad aio_reqprio (reads
 * and writes only); and, ours, the same aiocb twice at once, which is
 * undefined. glibc leaves the reason in the aiocb too, so aio_error()
 * tells it afterwards; the live aiocb is left alone. (A bad sigevent is
 * not refused: see aio__complete().)
 */
int aio__cb_check(struct aiocb *cb, bool prio)
{
	/* one ending now is over once glibc's lock is had: waited for */
	if (!cb || aio__settled(cb, NULL) == ST_LIVE)
		return -EINVAL;
	if (prio && (cb->aio_reqprio < 0 ||
		     cb->aio_reqprio > UAIO_AIO_PRIO_DELTA_MAX)) {
		aio__publish(cb, -EINVAL);
		return -EINVAL;
	}
	return 0;
}

void aio__cb_mark_live(struct aiocb *cb, struct aio_lio *g)
{
	struct cbpriv *pv = priv(cb);

	cb->__return_value = 0;
	pv->req = NULL;
	pv->done = 0;
	pv->lio = g;
	__atomic_store_n(&cb->__error_code, EINPROGRESS, __ATOMIC_RELAXED);
	atomic_store_explicit(&pv->state, tag(cb, ST_LIVE), memory_order_release);
}

/* A checked request made by a handler in the middle of its thread's AIO
 * call: in progress now, submitted as that call ends (nested.c). */
static bool nested_waits(struct aiocb *cb, int kind, struct aio_lio *g)
{
	if (!aio__nested_must_wait())
		return false;
	aio__cb_mark_live(cb, g);
	aio__nested_add(cb, kind);
	return true;
}

int aio__submit_rw(struct aiocb *cb, int kind, struct lio_ctx *pc,
		   struct aio_lio *g)
{
	int ret;

	if ((ret = aio__cb_check(cb, true)) < 0)
		return ret;
	if (nested_waits(cb, kind, g))
		return 0;
	if ((ret = aio__submit_rw_live(cb, kind, pc, g)) < 0)
		aio__publish(cb, ret);
	return ret;
}

/* glibc records the operation in aio_lio_opcode once the request passed
 * its checks (a refused one keeps what the caller put there); so do we. */
static bool opcode_taken(const struct aiocb *cb)
{
	return cb && aio__settled(cb, NULL) != ST_LIVE && cb->aio_reqprio >= 0 &&
	       cb->aio_reqprio <= UAIO_AIO_PRIO_DELTA_MAX;
}

UAIO_API int uaio_read(struct aiocb *cb)
{
	int ct = uaio__nocancel_begin(), r;

	if (opcode_taken(cb))
		cb->aio_lio_opcode = LIO_READ;
	r = aio__submit_rw(cb, K_READ, NULL, NULL);
	uaio__nocancel_end(ct);
	return posix_ret(r);
}

UAIO_API int uaio_write(struct aiocb *cb)
{
	int ct = uaio__nocancel_begin(), r;
	struct aio_xfsz x;

	if (opcode_taken(cb))
		cb->aio_lio_opcode = LIO_WRITE;
	aio__xfsz_hold(&x);
	r = aio__submit_rw(cb, K_WRITE, NULL, NULL);
	aio__xfsz_release(&x);
	uaio__nocancel_end(ct);
	return posix_ret(r);
}

int aio__submit_sync(struct aiocb *cb, int kind, struct aio_lio *g)
{
	int ret;

	if ((ret = aio__cb_check(cb, false)) < 0)
		return ret;
	if (nested_waits(cb, kind, g))
		return 0;
	if ((ret = aio__submit_sync_live(cb, kind, g)) < 0)
		aio__publish(cb, ret);
	return ret;
}

/* A request a handler made in the middle of this thread's call, accepted
 * then (nested.c): a refusal now is its end. Its list counted it as
 * pending meanwhile. */
void aio__submit_nested(struct aiocb *cb, int kind)
{
	struct aio_lio *g = priv(cb)->lio;
	int ret = kind <= K_WRITE ? aio__submit_rw_live(cb, kind, NULL, g)
				  : aio__submit_sync_live(cb, kind, g);

	if (ret < 0)
		aio__complete(cb, ret);
	if (g) {
		aio__lock();
		aio__lio_put_locked(g, true);
		aio__unlock();
	}
}

/* POSIX: only aio_fildes and aio_sigevent are used. As glibc, a bad
 * descriptor is refused here, and aio_reqprio is set to 0. */
static int fsync_call(int op, struct aiocb *cb)
{
	struct stat st;

	if (op != O_SYNC && op != O_DSYNC)
		return -EINVAL;
	bool live = cb && aio__settled(cb, NULL) == ST_LIVE;

	if (cb && !live && fstat(cb->aio_fildes, &st) < 0)
		return -EBADF;
	if (cb && !live) {
		cb->aio_reqprio = 0;
		cb->aio_lio_opcode = op == O_DSYNC ? LIO_DSYNC_GLIBC : LIO_SYNC_GLIBC;
	}
	return aio__submit_sync(cb, op == O_DSYNC ? K_DSYNC : K_FSYNC, NULL);
}

UAIO_API int uaio_fsync(int op, struct aiocb *cb)
{
	int ct = uaio__nocancel_begin(), r = fsync_call(op, cb);

	uaio__nocancel_end(ct);
	return posix_ret(r);
}
