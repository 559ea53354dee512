/* SPDX-License-Identifier: MIT */
/*
 * -u's question, as GNU cp asks it (gnulib's utimecmp): is the
 * destination's mtime at least the source's?
 *
 * With timestamps preserved, cp first cuts the source's time to what the
 * destination's file system can store (UTIMECMP_TRUNCATE_SOURCE), or a
 * second `cp -pu` onto a file system of coarser timestamps (ext4 with
 * 128-byte inodes, FAT) would copy every file again. The resolution is
 * bounded from the destination's three timestamps and, when that leaves
 * more than a nanosecond, found by setting the destination's mtime and
 * reading it back (then put back); what is found is kept per file system
 * for the run, as gnulib keeps it per device.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>

#include "cp.h"

#define BILLION 1000000000

static struct cp_tsres *res_of(struct cp_run *r, dev_t dev, struct cp_tsres *tmp)
{
	for (unsigned i = 0; i < r->ntsres; i++)
		if (r->tsres[i].dev == dev)
			return &r->tsres[i];
	if (r->ntsres == CP_TSRES_MAX)
		return tmp;	/* not kept: found again next time */
	r->tsres[r->ntsres] = (struct cp_tsres){ dev, 2 * BILLION, false };
	return &r->tsres[r->ntsres++];
}

static int cmp(time_t a, time_t b)
{
	return (a > b) - (a < b);
}

/* An upper bound on the resolution, a power of ten (or 2 s, FAT's),
 * from the nanoseconds the destination's timestamps show. */
static int bound(const struct stat *d, int known)
{
	long a = d->st_atim.tv_nsec, c = d->st_ctim.tv_nsec, m = d->st_mtim.tv_nsec;
	bool odd = (d->st_atim.tv_sec | d->st_ctim.tv_sec | d->st_mtim.tv_sec) & 1;
	int res;

	if ((a % 10 | c % 10 | m % 10) != 0)
		return 1;
	for (res = 10, a /= 10, c /= 10, m /= 10;
	     res < known && (a % 10 | c % 10 | m % 10) == 0;
	     res *= 10, a /= 10, c /= 10, m /= 10)
		if (res == BILLION) {
			if (!odd)
				res *= 2;
			break;
		}
	return res;
}

/* Sets the destination's mtime to a value the resolution would cut and
 * reads back what was kept: the exact resolution, or -1. */
static int probe(int at, const char *name, const struct stat *d, int res)
{
	struct timespec ts[2] = {
		d->st_atim,
		{ d->st_mtim.tv_sec | (res == 2 * BILLION), d->st_mtim.tv_nsec + res / 9 },
	};
	struct stat back;
	int old = res, ns;

	if (utimensat(at, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	int ret = fstatat(at, name, &back, AT_SYMLINK_NOFOLLOW);

	if (ret < 0 || back.st_mtim.tv_sec != d->st_mtim.tv_sec ||
	    back.st_mtim.tv_nsec != d->st_mtim.tv_nsec) {
		ts[1] = d->st_mtim;
		(void)utimensat(at, name, ts, AT_SYMLINK_NOFOLLOW);
	}
	if (ret < 0)
		return -1;
	ns = (int)(BILLION * (back.st_mtim.tv_sec & 1) + back.st_mtim.tv_nsec);
	for (res = 1; ns % 10 == 0; ns /= 10) {
		if (res == BILLION) {
			res *= 2;
			break;
		}
		res *= 10;
		if (res == old)
			break;
	}
	return res;
}

int cp_utimecmp(struct cp_run *r, int at, const char *name, const struct stat *d,
		const struct stat *s, bool truncate)
{
	time_t ss = s->st_mtim.tv_sec, ds = d->st_mtim.tv_sec;
	long sns = s->st_mtim.tv_nsec, dns = d->st_mtim.tv_nsec;

	if (truncate) {
		struct cp_tsres tmp = { d->st_dev, 2 * BILLION, false };
		struct cp_tsres *fs = res_of(r, d->st_dev, &tmp);
		int res = fs->res;

		if (!fs->exact) {
			res = bound(d, fs->res);
			fs->res = res;
			if (res > 1) {
				time_t cut = ss & ~(time_t)(res == 2 * BILLION ? 1 : 0);

				/* far enough apart for the answer without the exact
				 * resolution */
				if (ss < ds || (ss == ds && sns <= dns))
					return 1;
				if (ds < cut || (ds == cut && dns < sns - sns % res))
					return -1;
				if ((res = probe(at, name, d, res)) < 0)
					return -2;
			}
			fs->res = res;
			fs->exact = true;
		}
		ss &= ~(time_t)(res == 2 * BILLION ? 1 : 0);
		sns -= sns % res;
	}
	return cmp(ds, ss) ? cmp(ds, ss) : cmp(dns, sns);
}
