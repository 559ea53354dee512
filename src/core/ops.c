/* SPDX-License-Identifier: MIT */
/*
 * The functions behind the op table (ops.h): per opcode, how io_uring
 * prepares it, how a worker runs it blocking, and how the epoll backend
 * tries it without blocking.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/internal.h"

#define A(op)	((void *)(uintptr_t)(op)->addr)
#define A2(op)	((void *)(uintptr_t)(op)->addr2)

/* ---------------------------------------------------------- io_uring */

static void prep_nop(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_nop(s);
}

static void prep_read(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_read(s, op->fd, A(op), op->len, op->off);
}

static void prep_write(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_write(s, op->fd, A(op), op->len, op->off);
}

static void prep_read_fixed(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_read_fixed(s, op->fd, A(op), op->len, op->off, (int)op->rw_flags);
}

static void prep_write_fixed(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_write_fixed(s, op->fd, A(op), op->len, op->off, (int)op->rw_flags);
}

static void prep_readv(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_readv(s, op->fd, A(op), op->len, op->off);
}

static void prep_writev(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_writev(s, op->fd, A(op), op->len, op->off);
}

static void prep_recv(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_recv(s, op->fd, A(op), op->len, (int)op->rw_flags);
}

static void prep_send(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_send(s, op->fd, A(op), op->len, (int)op->rw_flags | MSG_NOSIGNAL);
}

static void prep_recvmsg(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_recvmsg(s, op->fd, A(op), op->rw_flags);
}

static void prep_sendmsg(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_sendmsg(s, op->fd, A(op), op->rw_flags | MSG_NOSIGNAL);
}

static void prep_accept(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_accept(s, op->fd, A(op), A2(op), (int)op->rw_flags);
}

static void prep_accept_multi(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_multishot_accept(s, op->fd, NULL, NULL, (int)op->rw_flags);
}

static void prep_connect(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_connect(s, op->fd, A(op), op->len);
}

static void prep_openat(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_openat(s, op->fd, A(op), (int)op->rw_flags, op->len);
}

static void prep_openat2(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_openat2(s, op->fd, A(op), A2(op));
}

static void prep_close(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_close(s, op->fd);
}

static void prep_statx(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_statx(s, op->fd, A(op), (int)op->rw_flags, op->len, A2(op));
}

static void prep_fsync(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_fsync(s, op->fd, op->rw_flags ? IORING_FSYNC_DATASYNC : 0);
}

static void prep_fallocate(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_fallocate(s, op->fd, (int)op->len, op->off, op->addr);
}

static void prep_splice(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_splice(s, op->fd, (int64_t)op->off, (int)op->addr2,
			     (int64_t)op->addr, op->len, op->rw_flags);
}

static void prep_tee(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_tee(s, op->fd, (int)op->addr2, op->len, op->rw_flags);
}

static void prep_timeout(struct io_uring_sqe *s, const uaio_op *op)
{
	/* addr and addr2 lie in the op as a __kernel_timespec would. */
	io_uring_prep_timeout(s, (struct __kernel_timespec *)&((uaio_op *)op)->addr, 0, 0);
}

static void prep_poll(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_poll_add(s, op->fd, op->len);
}

static void prep_unlinkat(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_unlinkat(s, op->fd, A(op), (int)op->rw_flags);
}

static void prep_renameat(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_renameat(s, op->fd, A(op), (int)op->len, A2(op), op->rw_flags);
}

static void prep_mkdirat(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_mkdirat(s, op->fd, A(op), op->len);
}

static void prep_symlinkat(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_symlinkat(s, A(op), op->fd, A2(op));
}

static void prep_linkat(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_linkat(s, op->fd, A(op), (int)op->len, A2(op), (int)op->rw_flags);
}

static void prep_fadvise(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_fadvise(s, op->fd, op->off, (off_t)op->addr, (int)op->rw_flags);
}

static void prep_madvise(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_madvise(s, A(op), (off_t)op->addr2, (int)op->rw_flags);
}

static void prep_shutdown(struct io_uring_sqe *s, const uaio_op *op)
{
	io_uring_prep_shutdown(s, op->fd, (int)op->len);
}

/* ------------------------------------------------- workers, blocking */

/* The part an epoll try moved already (OX_HEAD: op->addr2 bytes). */
static size_t head(const uaio_op *op)
{
	return op->xflags & OX_HEAD ? (size_t)op->addr2 : 0;
}

const struct iovec *uaio__rw_iovs(const uaio_op *op, struct iovec *one, int *n)
{
	if (op->opcode == OP_READV || op->opcode == OP_WRITEV) {
		*n = (int)op->len;
		return A(op);
	}
	*one = (struct iovec){ A(op), op->len };
	*n = 1;
	return one;
}

uint64_t uaio__rw_total(const uaio_op *op)
{
	struct iovec one;
	int n;
	const struct iovec *iov = uaio__rw_iovs(op, &one, &n);
	uint64_t total = 0;

	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	return total;
}

/* A worker's read or write from byte skip of the op's bytes on: the whole
 * call, or the rest of a buffer or of the iovecs (a few at a time on this
 * small stack), at the offset that far on (a stream's position stays -1). */
static long rw_from(uaio_op *op, size_t skip, bool wr)
{
	struct iovec one;
	int n, i = 0;
	const struct iovec *iov = uaio__rw_iovs(op, &one, &n);
	off_t off = (off_t)op->off == -1 ? -1 : (off_t)(op->off + skip);
	long total = 0;

	if (!skip)
		return uaio__rw_iov(op->fd, iov, n, off, 0, wr);
	while (i < n && skip >= iov[i].iov_len)
		skip -= iov[i++].iov_len;
	while (i < n) {
		struct iovec part[64];
		size_t want = 0;
		int k = 0;
		long r;

		for (; i < n && k < 64; i++, k++) {
			part[k] = iov[i];
			part[k].iov_base = (char *)part[k].iov_base + skip;
			part[k].iov_len -= skip;
			want += part[k].iov_len;
			skip = 0;
		}
		if ((r = uaio__rw_iov(op->fd, part, k, off, 0, wr)) < 0)
			return total ? total : r;
		total += r;
		if (off != -1)
			off += r;
		if ((size_t)r < want)
			break;
	}
	return total;
}

static long exec_read(uaio_op *op)
{
	return rw_from(op, head(op), false);
}

static long exec_write(uaio_op *op)
{
	return rw_from(op, head(op), true);
}

static long exec_readv(uaio_op *op)
{
	return rw_from(op, head(op), false);
}

static long exec_writev(uaio_op *op)
{
	return rw_from(op, head(op), true);
}

/* A call that may wait for ever (workers.c), tried once first without
 * waiting where the file allows (RWF_NOWAIT: pipes, sockets; not ttys,
 * named FIFOs): its answer, or -EAGAIN when it is to wait after all,
 * *moved bytes of it moved (uaio__exec_rest moves the rest, as one
 * blocking write would have). A read answers with what it found; not on
 * a socket with a low-water mark, whose blocking read waits for that
 * much. A write answers once it moved every byte. An error is the
 * answer: a socket reports one once (a reset, then EOF). */
long uaio__exec_nowait(uaio_op *op, size_t *moved)
{
	struct iovec one;
	int n, lowat = 1;
	const struct iovec *iov = uaio__rw_iovs(op, &one, &n);
	bool wr = uaio__opdef(op)->side == SIDE_W;
	socklen_t sl = sizeof(lowat);
	uint64_t total = uaio__rw_total(op);
	long r;

	*moved = 0;
	if (op->xflags & OX_HEAD)
		return -EAGAIN;
	if (!wr && (op->xflags & OX_SOCK) &&
	    getsockopt(op->fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, &sl) == 0 && lowat > 1)
		return -EAGAIN;
	/* more than one call moves (MAX_RW_COUNT): a part and the rest
	 * could add up past what write(2) answers */
	if (wr && total > 0x7ffff000)
		return -EAGAIN;
	r = uaio__rw_iov(op->fd, iov, n, (off_t)op->off, RWF_NOWAIT, wr);
	if (r == -EAGAIN || r == -EOPNOTSUPP)	/* (the file refuses the flag) */
		return -EAGAIN;
	if (r < 0 || !wr || (uint64_t)r == total)
		return r;
	*moved = (size_t)r;
	return -EAGAIN;
}

/* The blocking call after uaio__exec_nowait moved a part: the part
 * counts, as in one write(2), whatever the rest gives. */
long uaio__exec_rest(uaio_op *op, size_t moved)
{
	long r = rw_from(op, moved, uaio__opdef(op)->side == SIDE_W);

	return r >= 0 ? r + (long)moved : (long)moved;
}

static long exec_recv(uaio_op *op)
{
	return uaio__sysret(recv(op->fd, A(op), op->len, (int)op->rw_flags));
}

static long exec_send(uaio_op *op)
{
	return uaio__sysret(send(op->fd, A(op), op->len, (int)op->rw_flags | MSG_NOSIGNAL));
}

static long exec_recvmsg(uaio_op *op)
{
	return uaio__sysret(recvmsg(op->fd, A(op), (int)op->rw_flags));
}

static long exec_sendmsg(uaio_op *op)
{
	return uaio__sysret(sendmsg(op->fd, A(op), (int)op->rw_flags | MSG_NOSIGNAL));
}

static long exec_connect(uaio_op *op)
{
	return uaio__sysret(connect(op->fd, A(op), op->len));
}

static long exec_openat(uaio_op *op)
{
	return uaio__sysret(openat(op->fd, A(op), (int)op->rw_flags, (mode_t)op->len));
}

static long exec_openat2(uaio_op *op)
{
	return uaio__sysret(syscall(SYS_openat2, op->fd, A(op), A2(op), 24));
}

static long exec_close(uaio_op *op)
{
	return uaio__sysret(close(op->fd));
}

static long exec_statx(uaio_op *op)
{
	return uaio__sysret(statx(op->fd, A(op), (int)op->rw_flags, op->len, A2(op)));
}

static long exec_fsync(uaio_op *op)
{
	return uaio__sysret(op->rw_flags ? fdatasync(op->fd) : fsync(op->fd));
}

static long exec_fallocate(uaio_op *op)
{
	return uaio__sysret(fallocate(op->fd, (int)op->len, (off_t)op->off, (off_t)op->addr));
}

static long exec_splice(uaio_op *op)
{
	loff_t oin = (loff_t)op->off, oout = (loff_t)op->addr;

	return uaio__sysret(splice(op->fd, (int64_t)op->off == -1 ? NULL : &oin,
			     (int)op->addr2, (int64_t)op->addr == -1 ? NULL : &oout,
			     op->len, op->rw_flags));
}

static long exec_copy_range(uaio_op *op)
{
	loff_t oin = (loff_t)op->off, oout = (loff_t)op->addr;

	return uaio__sysret(copy_file_range(op->fd, (int64_t)op->off == -1 ? NULL : &oin,
				      (int)op->addr2, (int64_t)op->addr == -1 ? NULL : &oout,
				      op->len, 0));
}

static long exec_tee(uaio_op *op)
{
	return uaio__sysret(tee(op->fd, (int)op->addr2, op->len, op->rw_flags));
}

static long exec_unlinkat(uaio_op *op)
{
	return uaio__sysret(unlinkat(op->fd, A(op), (int)op->rw_flags));
}

static long exec_renameat(uaio_op *op)
{
	return uaio__sysret(syscall(SYS_renameat2, op->fd, A(op), (int)op->len, A2(op),
			      op->rw_flags));
}

static long exec_mkdirat(uaio_op *op)
{
	return uaio__sysret(mkdirat(op->fd, A(op), (mode_t)op->len));
}

static long exec_symlinkat(uaio_op *op)
{
	return uaio__sysret(symlinkat(A(op), op->fd, A2(op)));
}

static long exec_linkat(uaio_op *op)
{
	return uaio__sysret(linkat(op->fd, A(op), (int)op->len, A2(op), (int)op->rw_flags));
}

static long exec_fadvise(uaio_op *op)
{
	return -posix_fadvise(op->fd, (off_t)op->off, (off_t)op->addr, (int)op->rw_flags);
}

static long exec_madvise(uaio_op *op)
{
	return uaio__sysret(madvise(A(op), (size_t)op->addr2, (int)op->rw_flags));
}

static long exec_shutdown(uaio_op *op)
{
	return uaio__sysret(shutdown(op->fd, (int)op->len));
}

static long exec_work(uaio_op *op)
{
	return ((long (*)(void *))A(op))(A2(op));
}

/* ------------------------------------------------------------- table */

const struct uaio_opdef uaio__opdefs[OP_COUNT] = {
	[OP_NONE] = { "none", SIDE_NONE, 0, EP_WORK, NULL, NULL, NULL },
#define FD OPF_FD
#define RW OPF_RW
#define ST OPF_ST
#define LATE OPF_LATE
#define UAIO_OP_ROW(name, side, flags, ep, prep, exec, try) \
	[OP_##name] = { #name, SIDE_##side, flags, EP_##ep, prep, exec, try },
	UAIO_OPS(UAIO_OP_ROW)
#undef UAIO_OP_ROW
#undef FD
#undef RW
#undef ST
#undef LATE
};

int uaio__op_read_side(const uaio_op *op)
{
	switch (uaio__opdef(op)->side) {
	case SIDE_W:
		return 0;
	case SIDE_EV:
		return (op->len & POLLIN) || !(op->len & POLLOUT);
	}
	return 1;
}
