/* SPDX-License-Identifier: MIT */
/*
 * The op table: one row per opcode says what the op's fields hold and how
 * each backend runs it, as liburing's prep helpers share one packer.
 * Adding an op is one row here, its small functions in ops.c (the epoll
 * tries in ops_try.c), and its packer in pack.c.
 *
 * Columns:
 *   name   the OP_ constant
 *   side   which readiness the fallback waits for: R(ead), W(rite),
 *          EV (the poll events in len), or NONE
 *   flags  FD: fd is the file the op works on, so a pinned handle may
 *          stand for it; RW: file I/O at an offset, which may block on a
 *          disk; ST: takes or gives a stream's next bytes (RW ops: at
 *          off -1), so ops of one side of fd keep their order; LATE:
 *          fd (and a copy's output) is looked up on a worker, io_uring's
 *          or the pool's, not as the op goes in, so a close must wait
 *          for the op; 0
 *   ep     how the epoll backend runs it: TRY (a non-blocking try, then
 *          readiness), WORK (the worker pool), SELF (the backend itself)
 *   prep   io_uring SQE preparation (NULL: the backend itself / workers)
 *   exec   blocking execution on a worker (NULL: never on a worker)
 *   try    one non-blocking try for the epoll backend: result, or -EAGAIN
 *
 * Field use (uaio_op: off, addr, addr2, len, rw_flags) is given per row.
 */
#ifndef UAIO_CORE_OPS_H
#define UAIO_CORE_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <uaio/loop.h>

struct io_uring_sqe;

#define UAIO_OPS(X) \
	/* (nothing) */ \
	X(NOP,        NONE, 0,     SELF, prep_nop,       NULL,           NULL) \
	/* off: offset or -1; addr: buffer; len: bytes */ \
	X(READ,       R,    FD|RW|ST, TRY, prep_read,      exec_read,      uaio__try_rw) \
	X(WRITE,      W,    FD|RW|ST, TRY, prep_write,     exec_write,     uaio__try_rw) \
	/* as READ/WRITE; rw_flags: registered buffer (uaio_buf_register) */ \
	X(READ_FIXED, R,    FD|RW|ST, TRY, prep_read_fixed, exec_read,     uaio__try_rw) \
	X(WRITE_FIXED, W,   FD|RW|ST, TRY, prep_write_fixed, exec_write,   uaio__try_rw) \
	/* off: offset or -1; addr: iovec array; len: count */ \
	X(READV,      R,    FD|RW|ST, TRY, prep_readv,     exec_readv,     uaio__try_rw) \
	X(WRITEV,     W,    FD|RW|ST, TRY, prep_writev,    exec_writev,    uaio__try_rw) \
	/* addr: buffer; len: bytes; rw_flags: MSG_* */ \
	X(RECV,       R,    FD|ST, TRY,  prep_recv,      exec_recv,      uaio__try_recv) \
	X(SEND,       W,    FD|ST, TRY,  prep_send,      exec_send,      uaio__try_send) \
	/* addr: msghdr; rw_flags: MSG_* */ \
	X(RECVMSG,    R,    FD|ST, TRY,  prep_recvmsg,   exec_recvmsg,   uaio__try_recvmsg) \
	X(SENDMSG,    W,    FD|ST, TRY,  prep_sendmsg,   exec_sendmsg,   uaio__try_sendmsg) \
	/* addr: sockaddr; addr2: socklen_t *; rw_flags: SOCK_* */ \
	X(ACCEPT,     R,    FD,    TRY,  prep_accept,    NULL,           uaio__try_accept) \
	/* rw_flags: SOCK_* */ \
	X(ACCEPT_MULTI, R,  FD,    TRY,  prep_accept_multi, NULL,        uaio__try_accept) \
	/* addr: sockaddr; len: its length */ \
	X(CONNECT,    W,    FD,    SELF, prep_connect,   exec_connect,   uaio__try_connect) \
	/* fd: directory; addr: path; len: mode; rw_flags: O_* */ \
	X(OPENAT,     NONE, 0,     WORK, prep_openat,    exec_openat,    NULL) \
	/* fd: directory; addr: path; addr2: open_how */ \
	X(OPENAT2,    NONE, 0,     WORK, prep_openat2,   exec_openat2,   NULL) \
	X(CLOSE,      NONE, 0,     SELF, prep_close,     exec_close,     NULL) \
	/* fd: directory; addr: path; addr2: statx; len: mask; rw_flags: AT_* */ \
	X(STATX,      NONE, 0,     WORK, prep_statx,     exec_statx,     NULL) \
	/* rw_flags: 1 for fdatasync */ \
	X(FSYNC,      NONE, FD|LATE, WORK, prep_fsync,   exec_fsync,     NULL) \
	/* off: offset; addr: length; len: mode */ \
	X(FALLOCATE,  NONE, FD|LATE, WORK, prep_fallocate, exec_fallocate, NULL) \
	/* fd: in; off: its offset or -1; addr2: out; addr: its offset or -1; \
	 * len: bytes; rw_flags: SPLICE_F_* */ \
	X(SPLICE,     NONE, 0,     WORK, prep_splice,    exec_splice,    NULL) \
	/* fd: in; off: its offset or -1; addr2: out; addr: its offset or -1; \
	 * len: bytes (no io_uring op: workers on both backends) */ \
	X(COPY_RANGE, NONE, LATE,  WORK, NULL,           exec_copy_range, NULL) \
	/* fd: in; addr2: out; len: bytes; rw_flags: SPLICE_F_* */ \
	X(TEE,        NONE, 0,     WORK, prep_tee,       exec_tee,       NULL) \
	/* off: ns; addr, addr2: the same as a __kernel_timespec */ \
	X(TIMEOUT,    NONE, 0,     SELF, prep_timeout,   NULL,           NULL) \
	/* addr: the target op */ \
	X(CANCEL,     NONE, 0,     SELF, NULL,           NULL,           NULL) \
	X(CANCEL_FD,  NONE, 0,     SELF, NULL,           NULL,           NULL) \
	/* len: poll events */ \
	X(POLL,       EV,   FD,    TRY,  prep_poll,      NULL,           uaio__try_poll) \
	/* fd: directory; addr: path; rw_flags: AT_REMOVEDIR */ \
	X(UNLINKAT,   NONE, 0,     WORK, prep_unlinkat,  exec_unlinkat,  NULL) \
	/* fd, addr: old; len, addr2: new; rw_flags: RENAME_* */ \
	X(RENAMEAT,   NONE, 0,     WORK, prep_renameat,  exec_renameat,  NULL) \
	/* fd: directory; addr: path; len: mode */ \
	X(MKDIRAT,    NONE, 0,     WORK, prep_mkdirat,   exec_mkdirat,   NULL) \
	/* addr: target; fd, addr2: the new link */ \
	X(SYMLINKAT,  NONE, 0,     WORK, prep_symlinkat, exec_symlinkat, NULL) \
	/* fd, addr: old; len, addr2: new; rw_flags: AT_* */ \
	X(LINKAT,     NONE, 0,     WORK, prep_linkat,    exec_linkat,    NULL) \
	/* off: offset; addr: length; rw_flags: advice */ \
	X(FADVISE,    NONE, FD|LATE, WORK, prep_fadvise, exec_fadvise,   NULL) \
	/* addr: address; addr2: length; rw_flags: advice */ \
	X(MADVISE,    NONE, 0,     WORK, prep_madvise,   exec_madvise,   NULL) \
	/* lengths of 4 GiB or more, which io_uring's 32-bit field (before \
	 * Linux 6.12) would cut: the workers, on both backends */ \
	X(FADVISE_BIG, NONE, FD|LATE, WORK, NULL,        exec_fadvise,   NULL) \
	X(MADVISE_BIG, NONE, 0,    WORK, NULL,           exec_madvise,   NULL) \
	/* len: SHUT_* */ \
	X(SHUTDOWN,   NONE, FD,    WORK, prep_shutdown,  exec_shutdown,  NULL) \
	/* addr: long (*fn)(void *); addr2: its argument (workers only) */ \
	X(WORK,       NONE, 0,     WORK, NULL,           exec_work,      NULL)

enum uaio_opcode {
	OP_NONE = 0,
#define UAIO_OP_ENUM(name, side, flags, ep, prep, exec, try) OP_##name,
	UAIO_OPS(UAIO_OP_ENUM)
#undef UAIO_OP_ENUM
	OP_COUNT
};

enum { SIDE_NONE, SIDE_R, SIDE_W, SIDE_EV };
enum { EP_SELF, EP_TRY, EP_WORK };
#define OPF_FD	0x1
#define OPF_RW	0x2
#define OPF_ST	0x4
#define OPF_LATE	0x8

struct uaio_opdef {
	const char *name;
	uint8_t side, flags, ep;
	void (*prep)(struct io_uring_sqe *sqe, const uaio_op *op);
	long (*exec)(uaio_op *op);
	long (*try_)(uaio_op *op);
};

extern const struct uaio_opdef uaio__opdefs[OP_COUNT];

/* A read or write op's bytes as iovecs (ops.c): a readv's or writev's
 * own, or *one made of its buffer; *n of them. Their sum. */
const struct iovec *uaio__rw_iovs(const uaio_op *op, struct iovec *one, int *n);
uint64_t uaio__rw_total(const uaio_op *op);

/* The epoll tries (ops_try.c). */
long uaio__try_rw(uaio_op *op);
/* preadv2/pwritev2 (-errno), at the file's position where it has no offset */
long uaio__rw_iov(int fd, const struct iovec *iov, int n, off_t off, int flags, bool wr);
long uaio__try_recv(uaio_op *op);
long uaio__try_send(uaio_op *op);
long uaio__try_recvmsg(uaio_op *op);
long uaio__try_sendmsg(uaio_op *op);
long uaio__try_accept(uaio_op *op);
long uaio__try_connect(uaio_op *op);
long uaio__try_poll(uaio_op *op);
/* connect(2) of the op as on a non-blocking socket; -1 and errno */
int uaio__connect_nonblock(uaio_op *op);

/* accept(2)'s answer to a socket that does not listen, or 0 */
long uaio__accept_refused(int fd);

static inline const struct uaio_opdef *uaio__opdef(const uaio_op *op)
{
	return &uaio__opdefs[op->opcode < OP_COUNT ? op->opcode : OP_NONE];
}

/* The epoll backend's read side (else write side) of an op. */
int uaio__op_read_side(const uaio_op *op);

#endif
