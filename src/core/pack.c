/* SPDX-License-Identifier: MIT */
/*
 * uaio_op_*: each checks its arguments, packs them into the op's fields
 * (what each field holds per opcode: the op table, ops.h) and hands the
 * op to the backend under the loop's lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "core/internal.h"

static int submit(uaio_loop *l, uaio_op *op, unsigned opcode, int fd,
		  uaio_op_cb cb, void *data)
{
	bool lk;
	int ret;

	if (uaio__foreign(l))
		return -ECHILD;
	op->cb = cb;
	op->data = data;
	op->opcode = opcode;
	op->fd = fd;
	op->xflags &= OX_USER_MASK;
	op->next = NULL;
	lk = uaio__lock(l);
	l->inflight++;
	if (UAIO_UNLIKELY(opcode == OP_CANCEL) &&
	    (ret = uaio__cancel_here(l, (uaio_op *)(uintptr_t)op->addr)) <= 0) {
		uaio__complete(l, op, ret);	/* the backend is not needed */
		ret = 0;
	} else {
		ret = l->be->submit(l, op);
	}
	if (ret < 0) {
		l->inflight--;
		op->state = OS_IDLE;
	}
	/* Another thread's loop may be asleep with a result it must see. */
	if (l->threadsafe && l->done_head)
		uaio__wake(l);
	uaio__unlock(l, lk);
	return ret;
}

#define OP_CHECK(l, op, cb) do { \
	if (UAIO_UNLIKELY(!(l) || !(op) || !(cb))) return -EINVAL; \
	if (UAIO_UNLIKELY((op)->state != OS_IDLE)) return -EBUSY; \
} while (0)

static void op_args(uaio_op *op, uint64_t off, uint64_t addr, uint64_t addr2,
		    uint32_t len, uint32_t rw_flags)
{
	op->off = off;
	op->addr = addr;
	op->addr2 = addr2;
	op->len = len;
	op->rw_flags = rw_flags;
}

UAIO_API int uaio_op_nop(uaio_loop *l, uaio_op *op, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	op_args(op, 0, 0, 0, 0, 0);
	return submit(l, op, OP_NOP, -1, cb, data);
}

static int rw(uaio_loop *l, uaio_op *op, unsigned opcode, int fd,
	      const void *buf, size_t len, int64_t off, uaio_op_cb cb, void *data,
	      uint32_t rw_flags)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (!buf && len)
		return -EFAULT;
	if (len > INT_MAX || off < -1)
		return -EINVAL;
	/* Fixed ops: rw_flags names the registered buffer holding buf. */
	if ((opcode == OP_READ_FIXED || opcode == OP_WRITE_FIXED) &&
	    !uaio__buf_covers(l, (int)rw_flags, buf, len))
		return -EFAULT;
	op_args(op, (uint64_t)off, (uintptr_t)buf, 0, (uint32_t)len, rw_flags);
	return submit(l, op, opcode, fd, cb, data);
}

UAIO_API int uaio_op_read(uaio_loop *l, uaio_op *op, int fd, void *buf,
			  size_t len, int64_t off, uaio_op_cb cb, void *data)
{
	return rw(l, op, OP_READ, fd, buf, len, off, cb, data, 0);
}

UAIO_API int uaio_op_write(uaio_loop *l, uaio_op *op, int fd, const void *buf,
			   size_t len, int64_t off, uaio_op_cb cb, void *data)
{
	return rw(l, op, OP_WRITE, fd, buf, len, off, cb, data, 0);
}

UAIO_API int uaio_op_read_fixed(uaio_loop *l, uaio_op *op, int fd, void *buf,
				size_t len, int64_t off, int buf_index,
				uaio_op_cb cb, void *data)
{
	return rw(l, op, OP_READ_FIXED, fd, buf, len, off, cb, data, (uint32_t)buf_index);
}

UAIO_API int uaio_op_write_fixed(uaio_loop *l, uaio_op *op, int fd,
				 const void *buf, size_t len, int64_t off,
				 int buf_index, uaio_op_cb cb, void *data)
{
	return rw(l, op, OP_WRITE_FIXED, fd, buf, len, off, cb, data, (uint32_t)buf_index);
}

static int rwv(uaio_loop *l, uaio_op *op, unsigned opcode, int fd,
	       const struct iovec *iov, int iovcnt, int64_t off, uaio_op_cb cb,
	       void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (iovcnt < 0 || iovcnt > IOV_MAX || off < -1)
		return -EINVAL;
	if (!iov && iovcnt)
		return -EFAULT;
	op_args(op, (uint64_t)off, (uintptr_t)iov, 0, (uint32_t)iovcnt, 0);
	return submit(l, op, opcode, fd, cb, data);
}

UAIO_API int uaio_op_readv(uaio_loop *l, uaio_op *op, int fd,
			   const struct iovec *iov, int iovcnt, int64_t off,
			   uaio_op_cb cb, void *data)
{
	return rwv(l, op, OP_READV, fd, iov, iovcnt, off, cb, data);
}

UAIO_API int uaio_op_writev(uaio_loop *l, uaio_op *op, int fd,
			    const struct iovec *iov, int iovcnt, int64_t off,
			    uaio_op_cb cb, void *data)
{
	return rwv(l, op, OP_WRITEV, fd, iov, iovcnt, off, cb, data);
}

static int sr(uaio_loop *l, uaio_op *op, unsigned opcode, int fd,
	      const void *buf, size_t len, int flags, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (!buf && len)
		return -EFAULT;
	if (len > INT_MAX)
		return -EINVAL;
	op_args(op, 0, (uintptr_t)buf, 0, (uint32_t)len, (uint32_t)flags);
	return submit(l, op, opcode, fd, cb, data);
}

UAIO_API int uaio_op_recv(uaio_loop *l, uaio_op *op, int fd, void *buf,
			  size_t len, int flags, uaio_op_cb cb, void *data)
{
	return sr(l, op, OP_RECV, fd, buf, len, flags, cb, data);
}

UAIO_API int uaio_op_send(uaio_loop *l, uaio_op *op, int fd, const void *buf,
			  size_t len, int flags, uaio_op_cb cb, void *data)
{
	return sr(l, op, OP_SEND, fd, buf, len, flags, cb, data);
}

static int msg(uaio_loop *l, uaio_op *op, unsigned opcode, int fd,
	       const struct msghdr *m, int flags, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (!m)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)m, 0, 0, (uint32_t)flags);
	return submit(l, op, opcode, fd, cb, data);
}

UAIO_API int uaio_op_recvmsg(uaio_loop *l, uaio_op *op, int fd,
			     struct msghdr *m, int flags, uaio_op_cb cb,
			     void *data)
{
	return msg(l, op, OP_RECVMSG, fd, m, flags, cb, data);
}

UAIO_API int uaio_op_sendmsg(uaio_loop *l, uaio_op *op, int fd,
			     const struct msghdr *m, int flags, uaio_op_cb cb,
			     void *data)
{
	return msg(l, op, OP_SENDMSG, fd, m, flags, cb, data);
}

UAIO_API int uaio_op_accept(uaio_loop *l, uaio_op *op, int fd,
			    struct sockaddr *addr, socklen_t *addrlen,
			    int flags, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	if (addr && !addrlen)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)addr, (uintptr_t)addrlen, 0, (uint32_t)flags);
	return submit(l, op, OP_ACCEPT, fd, cb, data);
}

UAIO_API int uaio_op_accept_multishot(uaio_loop *l, uaio_op *op, int fd,
				      int flags, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	op_args(op, 0, 0, 0, 0, (uint32_t)flags);
	return submit(l, op, OP_ACCEPT_MULTI, fd, cb, data);
}

UAIO_API int uaio_op_connect(uaio_loop *l, uaio_op *op, int fd,
			     const struct sockaddr *addr, socklen_t addrlen,
			     uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (!addr)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)addr, 0, addrlen, 0);
	return submit(l, op, OP_CONNECT, fd, cb, data);
}

UAIO_API int uaio_op_openat(uaio_loop *l, uaio_op *op, int dfd,
			    const char *path, int flags, mode_t mode,
			    uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (!path)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)path, 0, mode, (uint32_t)flags);
	return submit(l, op, OP_OPENAT, dfd, cb, data);
}

UAIO_API int uaio_op_openat2(uaio_loop *l, uaio_op *op, int dfd,
			     const char *path, struct open_how *how,
			     uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (!path || !how)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)path, (uintptr_t)how, 0, 0);
	return submit(l, op, OP_OPENAT2, dfd, cb, data);
}

UAIO_API int uaio_op_close(uaio_loop *l, uaio_op *op, int fd, uaio_op_cb cb,
			   void *data)
{
	OP_CHECK(l, op, cb);
	/* A descriptor of the library's own (a pin's duplicate, a ring) is
	 * not the caller's to close: its unpin would close what the number
	 * names next. A pin's slot is none either; the ring refuses it. */
	if (fd < 0 || uaio__fd_owned(fd))
		return -EBADF;
	op_args(op, 0, 0, 0, 0, 0);
	return submit(l, op, OP_CLOSE, fd, cb, data);
}

UAIO_API int uaio_op_statx(uaio_loop *l, uaio_op *op, int dfd,
			   const char *path, int flags, unsigned mask,
			   struct statx *stx, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (!path || !stx)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)path, (uintptr_t)stx, mask, (uint32_t)flags);
	return submit(l, op, OP_STATX, dfd, cb, data);
}

UAIO_API int uaio_op_fsync(uaio_loop *l, uaio_op *op, int fd, int datasync,
			   uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	op_args(op, 0, 0, 0, 0, datasync ? 1 : 0);
	return submit(l, op, OP_FSYNC, fd, cb, data);
}

UAIO_API int uaio_op_fallocate(uaio_loop *l, uaio_op *op, int fd, int mode,
			       int64_t off, int64_t len, uaio_op_cb cb,
			       void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (off < 0 || len <= 0)
		return -EINVAL;
	op_args(op, (uint64_t)off, (uint64_t)len, 0, (uint32_t)mode, 0);
	return submit(l, op, OP_FALLOCATE, fd, cb, data);
}

UAIO_API int uaio_op_splice(uaio_loop *l, uaio_op *op, int fd_in,
			    int64_t off_in, int fd_out, int64_t off_out,
			    size_t len, unsigned flags, uaio_op_cb cb,
			    void *data)
{
	OP_CHECK(l, op, cb);
	if (fd_in < 0 || fd_out < 0)
		return -EBADF;
	if (len > INT_MAX || off_in < -1 || off_out < -1)
		return -EINVAL;
	op_args(op, (uint64_t)off_in, (uint64_t)off_out, (uint64_t)fd_out,
		(uint32_t)len, flags);
	return submit(l, op, OP_SPLICE, fd_in, cb, data);
}

UAIO_API int uaio_op_copy_file_range(uaio_loop *l, uaio_op *op, int fd_in,
				     int64_t off_in, int fd_out, int64_t off_out,
				     size_t len, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd_in < 0 || fd_out < 0)
		return -EBADF;
	if (len > INT_MAX || off_in < -1 || off_out < -1)
		return -EINVAL;
	op_args(op, (uint64_t)off_in, (uint64_t)off_out, (uint64_t)fd_out,
		(uint32_t)len, 0);
	return submit(l, op, OP_COPY_RANGE, fd_in, cb, data);
}

UAIO_API int uaio_op_tee(uaio_loop *l, uaio_op *op, int fd_in, int fd_out,
			 size_t len, unsigned flags, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd_in < 0 || fd_out < 0)
		return -EBADF;
	if (len > INT_MAX)
		return -EINVAL;
	op_args(op, 0, 0, (uint64_t)fd_out, (uint32_t)len, flags);
	return submit(l, op, OP_TEE, fd_in, cb, data);
}

UAIO_API int uaio_op_timeout(uaio_loop *l, uaio_op *op, uint64_t timeout_ns,
			     uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	/* addr/addr2 double as the kernel's __kernel_timespec. */
	op_args(op, timeout_ns, timeout_ns / 1000000000ull,
		timeout_ns % 1000000000ull, 0, 0);
	return submit(l, op, OP_TIMEOUT, -1, cb, data);
}

UAIO_API int uaio_op_cancel(uaio_loop *l, uaio_op *op, uaio_op *target,
			    uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (!target || target == op)
		return -EINVAL;
	op_args(op, 0, (uintptr_t)target, 0, 0, 0);
	return submit(l, op, OP_CANCEL, -1, cb, data);
}

UAIO_API int uaio_op_cancel_fd(uaio_loop *l, uaio_op *op, int fd,
			       uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	op_args(op, 0, 0, 0, 0, 0);
	return submit(l, op, OP_CANCEL_FD, fd, cb, data);
}

UAIO_API int uaio_op_poll(uaio_loop *l, uaio_op *op, int fd, short events,
			  uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	op_args(op, 0, 0, 0, (uint16_t)events, 0);
	return submit(l, op, OP_POLL, fd, cb, data);
}

UAIO_API int uaio_op_unlinkat(uaio_loop *l, uaio_op *op, int dfd,
			      const char *path, int flags, uaio_op_cb cb,
			      void *data)
{
	OP_CHECK(l, op, cb);
	if (!path)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)path, 0, 0, (uint32_t)flags);
	return submit(l, op, OP_UNLINKAT, dfd, cb, data);
}

UAIO_API int uaio_op_renameat(uaio_loop *l, uaio_op *op, int olddfd,
			      const char *oldpath, int newdfd,
			      const char *newpath, unsigned flags,
			      uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (!oldpath || !newpath)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)oldpath, (uintptr_t)newpath,
		(uint32_t)newdfd, flags);
	return submit(l, op, OP_RENAMEAT, olddfd, cb, data);
}

UAIO_API int uaio_op_mkdirat(uaio_loop *l, uaio_op *op, int dfd,
			     const char *path, mode_t mode, uaio_op_cb cb,
			     void *data)
{
	OP_CHECK(l, op, cb);
	if (!path)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)path, 0, mode, 0);
	return submit(l, op, OP_MKDIRAT, dfd, cb, data);
}

UAIO_API int uaio_op_symlinkat(uaio_loop *l, uaio_op *op, const char *target,
			       int newdfd, const char *linkpath, uaio_op_cb cb,
			       void *data)
{
	OP_CHECK(l, op, cb);
	if (!target || !linkpath)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)target, (uintptr_t)linkpath, 0, 0);
	return submit(l, op, OP_SYMLINKAT, newdfd, cb, data);
}

UAIO_API int uaio_op_linkat(uaio_loop *l, uaio_op *op, int olddfd,
			    const char *oldpath, int newdfd,
			    const char *newpath, int flags, uaio_op_cb cb,
			    void *data)
{
	OP_CHECK(l, op, cb);
	if (!oldpath || !newpath)
		return -EFAULT;
	op_args(op, 0, (uintptr_t)oldpath, (uintptr_t)newpath,
		(uint32_t)newdfd, (uint32_t)flags);
	return submit(l, op, OP_LINKAT, olddfd, cb, data);
}

UAIO_API int uaio_op_fadvise(uaio_loop *l, uaio_op *op, int fd, int64_t off,
			     int64_t len, int advice, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	if (off < 0 || len < 0)
		return -EINVAL;
	op_args(op, (uint64_t)off, (uint64_t)len, 0, 0, (uint32_t)advice);
	return submit(l, op, (uint64_t)len > UINT32_MAX ? OP_FADVISE_BIG : OP_FADVISE, fd,
		      cb, data);
}

UAIO_API int uaio_op_madvise(uaio_loop *l, uaio_op *op, void *addr, size_t len,
			     int advice, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	op_args(op, 0, (uintptr_t)addr, len, 0, (uint32_t)advice);
	return submit(l, op, (uint64_t)len > UINT32_MAX ? OP_MADVISE_BIG : OP_MADVISE, -1,
		      cb, data);
}

UAIO_API int uaio_op_shutdown(uaio_loop *l, uaio_op *op, int fd, int how,
			      uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (fd < 0)
		return -EBADF;
	op_args(op, 0, 0, 0, (uint32_t)how, 0);
	return submit(l, op, OP_SHUTDOWN, fd, cb, data);
}

UAIO_API int uaio_op_work(uaio_loop *l, uaio_op *op, long (*fn)(void *),
			  void *arg, uaio_op_cb cb, void *data)
{
	OP_CHECK(l, op, cb);
	if (!fn)
		return -EINVAL;
	op_args(op, 0, (uintptr_t)fn, (uintptr_t)arg, 0, 0);
	return submit(l, op, OP_WORK, -1, cb, data);
}
