/* SPDX-License-Identifier: MIT */
/*
 * The ring's forms of the calls laio_syscall knows (calls.c's rows): how
 * a call's arguments are rewritten to the *at form io_uring has
 * (laio__n_*: normalisation), and the uaio op that makes it in the
 * background (laio__s_*).
 */
#define _GNU_SOURCE
#include "laio/engine.h"

#define A(i) (r->a[i])
#define L (laio__engine.loop)
#define OPARGS laio__op_cb, r

int laio__s_accept(struct laio_call *r)
{
	return uaio_op_accept(L, &r->op, (int)A(0), (struct sockaddr *)A(1),
			      (socklen_t *)A(2), r->nr == SYS_accept ? 0 : (int)A(3),
			      OPARGS);
}
int laio__s_connect(struct laio_call *r)
{
	return uaio_op_connect(L, &r->op, (int)A(0), (const struct sockaddr *)A(1),
			       (socklen_t)A(2), OPARGS);
}
/* a[] normalised to openat(dfd, path, flags, mode) */
int laio__s_openat(struct laio_call *r)
{
	return uaio_op_openat(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
			      (mode_t)A(3), OPARGS);
}
int laio__s_openat2(struct laio_call *r)
{
	return uaio_op_openat2(L, &r->op, (int)A(0), (const char *)A(1),
			       (struct open_how *)A(2), OPARGS);
}
int laio__s_statx(struct laio_call *r)
{
	return uaio_op_statx(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
			     (unsigned)A(3), (struct statx *)A(4), OPARGS);
}
int laio__s_fsync(struct laio_call *r)
{
	return uaio_op_fsync(L, &r->op, (int)A(0), r->nr == SYS_fdatasync, OPARGS);
}
int laio__s_fallocate(struct laio_call *r)
{
	return uaio_op_fallocate(L, &r->op, (int)A(0), (int)A(1), A(2), A(3), OPARGS);
}
/* normalised to unlinkat(dfd, path, flags) */
int laio__s_unlinkat(struct laio_call *r)
{
	return uaio_op_unlinkat(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
				OPARGS);
}
/* normalised to renameat2(od, op, nd, np, flags) */
int laio__s_renameat(struct laio_call *r)
{
	return uaio_op_renameat(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
				(const char *)A(3), (unsigned)A(4), OPARGS);
}
/* normalised to mkdirat(dfd, path, mode) */
int laio__s_mkdirat(struct laio_call *r)
{
	return uaio_op_mkdirat(L, &r->op, (int)A(0), (const char *)A(1),
			       (mode_t)A(2), OPARGS);
}
/* normalised to symlinkat(target, dfd, path) */
int laio__s_symlinkat(struct laio_call *r)
{
	return uaio_op_symlinkat(L, &r->op, (const char *)A(0), (int)A(1),
				 (const char *)A(2), OPARGS);
}
/* normalised to linkat(od, op, nd, np, flags) */
int laio__s_linkat(struct laio_call *r)
{
	return uaio_op_linkat(L, &r->op, (int)A(0), (const char *)A(1), (int)A(2),
			      (const char *)A(3), (int)A(4), OPARGS);
}
int laio__s_fadvise(struct laio_call *r)
{
	return uaio_op_fadvise(L, &r->op, (int)A(0), A(1), A(2), (int)A(3), OPARGS);
}
int laio__s_madvise(struct laio_call *r)
{
	return uaio_op_madvise(L, &r->op, (void *)A(0), (size_t)A(1), (int)A(2),
			       OPARGS);
}
int laio__s_splice(struct laio_call *r)
{
	return uaio_op_splice(L, &r->op, (int)A(0), -1, (int)A(2), -1, (size_t)A(4),
			      (unsigned)A(5), OPARGS);
}
int laio__s_tee(struct laio_call *r)
{
	return uaio_op_tee(L, &r->op, (int)A(0), (int)A(1), (size_t)A(2),
			   (unsigned)A(3), OPARGS);
}
int laio__s_shutdown(struct laio_call *r)
{
	return uaio_op_shutdown(L, &r->op, (int)A(0), (int)A(1), OPARGS);
}

#undef A
#undef L
#undef OPARGS

/* ---------------------------------------------------- normalisation */

void laio__n_open(long *a)		/* open(p, f, m) -> openat(AT_FDCWD, p, f, m) */
{
	memmove(a + 1, a, 3 * sizeof(long));
	a[0] = AT_FDCWD;
}

void laio__n_creat(long *a)		/* creat(p, m) -> openat(AT_FDCWD, p, O_CREAT|O_WRONLY|O_TRUNC, m) */
{
	a[3] = a[1];
	a[2] = O_CREAT | O_WRONLY | O_TRUNC;
	a[1] = a[0];
	a[0] = AT_FDCWD;
}

void laio__n_unlink(long *a)		/* unlink(p) -> unlinkat(AT_FDCWD, p, 0) */
{
	a[2] = 0;
	a[1] = a[0];
	a[0] = AT_FDCWD;
}

void laio__n_rmdir(long *a)		/* rmdir(p) -> unlinkat(AT_FDCWD, p, AT_REMOVEDIR) */
{
	a[2] = AT_REMOVEDIR;
	a[1] = a[0];
	a[0] = AT_FDCWD;
}

void laio__n_renameat(long *a)		/* renameat(...) -> renameat2(..., 0) */
{
	a[4] = 0;
}

void laio__n_rename(long *a)		/* rename(o, n) -> renameat2(AT_FDCWD, o, AT_FDCWD, n, 0) */
{
	a[3] = a[1];
	a[2] = AT_FDCWD;
	a[1] = a[0];
	a[0] = AT_FDCWD;
	a[4] = 0;
}

void laio__n_mkdir(long *a)		/* mkdir(p, m) -> mkdirat(AT_FDCWD, p, m) */
{
	a[2] = a[1];
	a[1] = a[0];
	a[0] = AT_FDCWD;
}

void laio__n_symlink(long *a)		/* symlink(t, p) -> symlinkat(t, AT_FDCWD, p) */
{
	a[2] = a[1];
	a[1] = AT_FDCWD;
}


void laio__n_link(long *a)		/* link(o, n) -> linkat(AT_FDCWD, o, AT_FDCWD, n, 0) */
{
	a[3] = a[1];
	a[2] = AT_FDCWD;
	a[1] = a[0];
	a[0] = AT_FDCWD;
	a[4] = 0;
}
