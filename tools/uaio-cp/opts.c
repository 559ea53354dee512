/* SPDX-License-Identifier: MIT */
/* Command line: GNU cp 9.1's options, spellings and messages. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "cp.h"

#define VERSION "0.1"

/* gnulib's shell-escape-always quoting, for the names in messages: 'a b',
 * "it's", and 'it'\''s "x"' when both kinds of quote are there. */
static const char *quote_into(char *buf, size_t cap, const char *s)
{
	bool squote = strchr(s, '\'') != NULL;
	bool special = strpbrk(s, "\"$`\\!") != NULL;
	size_t n = 0;

	if (squote && !special) {
		snprintf(buf, cap, "\"%s\"", s);
		return buf;
	}
	buf[n++] = '\'';
	for (; *s && n + 6 < cap; s++) {
		if (*s == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *s;
		}
	}
	buf[n++] = '\'';
	buf[n] = 0;
	return buf;
}

const char *q(struct cp_run *r, const char *s)
{
	char *buf = r->quoted[r->quoted_next++ % 4];

	return quote_into(buf, sizeof(r->quoted[0]), s);
}

void cp_err(struct cp_run *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->bar_drawn) {
		fputs("\r\033[K", stderr);
		r->bar_drawn = false;
	}
	fprintf(stderr, "%s: ", r->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	r->status = 1;
}

static void usage(const char *prog)
{
	printf("Usage: %s [OPTION]... [-T] SOURCE DEST\n"
	       "  or:  %s [OPTION]... SOURCE... DIRECTORY\n"
	       "  or:  %s [OPTION]... -t DIRECTORY SOURCE...\n", prog, prog, prog);
	fputs(
"Copy SOURCE to DEST, or multiple SOURCE(s) to DIRECTORY, as GNU cp does,\n"
"with file data moved in the kernel (reflinks, copy_file_range, io_uring\n"
"reads and writes) and many files in flight at once.\n"
"\n"
"Mandatory arguments to long options are mandatory for short options too.\n"
"  -a, --archive                same as -dR --preserve=all\n"
"  -d                           same as --no-dereference --preserve=links\n"
"  -f, --force                  if an existing destination file cannot be\n"
"                                 opened, remove it and try again\n"
"  -H                           follow command-line symbolic links in SOURCE\n"
"  -j, --jobs=N                 copy up to N files at once (default: from the\n"
"                                 machine's CPUs and the open-file limit)\n"
"  -L, --dereference            always follow symbolic links in SOURCE\n"
"  -n, --no-clobber             do not overwrite an existing file\n"
"  -P, --no-dereference         never follow symbolic links in SOURCE\n"
"  -p                           same as --preserve=mode,ownership,timestamps\n"
"      --preserve[=ATTR_LIST]   preserve the specified attributes (default:\n"
"                                 mode,ownership,timestamps), if possible\n"
"                                 additional attributes: links, xattr, all\n"
"      --no-preserve=ATTR_LIST  don't preserve the specified attributes\n"
"      --progress               show a progress bar on a terminal\n"
"  -R, -r, --recursive          copy directories recursively\n"
"      --reflink[=WHEN]         control clone/CoW copies. See below\n"
"      --remove-destination     remove each existing destination file before\n"
"                                 attempting to open it\n"
"      --sparse=WHEN            control creation of sparse files. See below\n"
"      --strip-trailing-slashes  remove any trailing slashes from each SOURCE\n"
"                                 argument\n"
"  -t, --target-directory=DIRECTORY  copy all SOURCE arguments into DIRECTORY\n"
"  -T, --no-target-directory    treat DEST as a normal file\n"
"  -u, --update                 copy only when the SOURCE file is newer\n"
"                                 than the destination file or when the\n"
"                                 destination file is missing\n"
"  -v, --verbose                explain what is being done\n"
"  -x, --one-file-system        stay on this file system\n"
"      --help        display this help and exit\n"
"      --version     output version information and exit\n"
"\n"
"By default, sparse SOURCE files are detected by a crude heuristic and the\n"
"corresponding DEST file is made sparse as well.  That is the behavior\n"
"selected by --sparse=auto.  Specify --sparse=always to create a sparse DEST\n"
"file whenever the SOURCE file contains a long enough sequence of zero bytes.\n"
"Use --sparse=never to inhibit creation of sparse files.\n"
"\n"
"When --reflink[=always] is specified, perform a lightweight copy, where the\n"
"data blocks are copied only when modified.  If this is not possible the copy\n"
"fails, or if --reflink=auto is specified, fall back to a standard copy.\n"
"Use --reflink=never to ensure a standard copy is performed.\n"
"\n"
"Exit status: 0 if every file was copied, 1 otherwise (as GNU cp).\n"
"See uaio-cp(1) for where the results differ from GNU cp 9.1.\n", stdout);
}

static void try_help(struct cp_run *r)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", r->prog);
	exit(1);
}

/* argmatch's message: in a UTF-8 locale gnulib quotes with U+2018/9. */
static void bad_arg(struct cp_run *r, const char *arg, const char *opt,
		    const char *const *valid)
{
	bool utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	const char *lq = utf8 ? "\xe2\x80\x98" : "'", *rq = utf8 ? "\xe2\x80\x99" : "'";

	fprintf(stderr, "%s: invalid argument %s%s%s for %s%s%s\n", r->prog,
		lq, arg, rq, lq, opt, rq);
	fputs("Valid arguments are:\n", stderr);
	for (; *valid; valid++)
		fprintf(stderr, "  - %s%s%s\n", lq, *valid, rq);
	try_help(r);
}

static int pick(struct cp_run *r, const char *arg, const char *opt,
		const char *const *valid)
{
	for (int i = 0; valid[i]; i++)
		if (strcmp(arg, valid[i]) == 0)
			return i;
	bad_arg(r, arg, opt, valid);
	return -1;
}

static void preserve_list(struct cp_run *r, const char *list, bool on)
{
	static const char *const attrs[] = { "mode", "timestamps", "ownership",
		"links", "context", "xattr", "all", NULL };
	char *copy = strdup(list), *save = NULL;
	struct cp_opts *o = &r->o;

	for (char *a = strtok_r(copy, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
		switch (pick(r, a, on ? "--preserve" : "--no-preserve", attrs)) {
		case 0: o->p_mode = on; o->explicit_no_mode = !on; break;
		case 1: o->p_times = on; break;
		case 2: o->p_owner = on; break;
		case 3: o->p_links = on; break;
		case 4: o->want_context = on; break;
		case 5: o->p_xattr = on; o->require_xattr = on; break;
		case 6:
			o->want_context = false;
			o->p_mode = o->p_times = o->p_owner = o->p_links =
				o->p_xattr = on;
			o->explicit_no_mode = !on;
			break;
		}
	}
	free(copy);
}

/* Enough jobs to keep both the disk queue and the CPUs busy, and at most
 * four descriptors each under RLIMIT_NOFILE (source, destination, and a
 * splice flow's pipe), with room for the walk (the loop's own, and up to
 * DIR_FDS directories' two: dir_fds()). */
static unsigned default_jobs(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned j = cpus > 0 ? (unsigned)cpus * 16 : 16;

	return j > 64 ? 64 : j;
}

/* What RLIMIT_NOFILE leaves the directories once the jobs have theirs:
 * none at a tight limit, where every entry goes by path. */
static unsigned dir_fds(unsigned jobs)
{
	struct rlimit rl;
	long room;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return DIR_FDS;
	room = ((long)rl.rlim_cur - 32 - 4 * (long)jobs) / 2;
	return room < 0 ? 0 : room > DIR_FDS ? DIR_FDS : (unsigned)room;
}

static unsigned cap_jobs(unsigned j)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		long room = ((long)rl.rlim_cur - 32) / 4;

		if (room < 1)
			room = 1;
		if ((long)j > room)
			j = (unsigned)room;
	}
	return j;
}

enum {
	OPT_PRESERVE = 256, OPT_NO_PRESERVE, OPT_REFLINK, OPT_SPARSE,
	OPT_PROGRESS, OPT_HELP, OPT_VERSION, OPT_REMOVE_DEST, OPT_STRIP,
};

/* Parses argv into r->o and returns the operand count (sources plus the
 * destination unless -t); *first is the first operand's index. */
int cp_parse(struct cp_run *r, int argc, char **argv, int *first)
{
	static const struct option longs[] = {
		{ "archive", no_argument, NULL, 'a' },
		{ "dereference", no_argument, NULL, 'L' },
		{ "force", no_argument, NULL, 'f' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "no-clobber", no_argument, NULL, 'n' },
		{ "no-dereference", no_argument, NULL, 'P' },
		{ "no-preserve", required_argument, NULL, OPT_NO_PRESERVE },
		{ "no-target-directory", no_argument, NULL, 'T' },
		{ "one-file-system", no_argument, NULL, 'x' },
		{ "preserve", optional_argument, NULL, OPT_PRESERVE },
		{ "progress", no_argument, NULL, OPT_PROGRESS },
		{ "recursive", no_argument, NULL, 'R' },
		{ "reflink", optional_argument, NULL, OPT_REFLINK },
		{ "remove-destination", no_argument, NULL, OPT_REMOVE_DEST },
		{ "sparse", required_argument, NULL, OPT_SPARSE },
		{ "strip-trailing-slashes", no_argument, NULL, OPT_STRIP },
		{ "target-directory", required_argument, NULL, 't' },
		{ "update", no_argument, NULL, 'u' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const when[] = { "auto", "always", "never", NULL };
	struct cp_opts *o = &r->o;
	bool strip = false;
	int c;

	o->jobs = 0;
	while ((c = getopt_long(argc, argv, "adfHj:LnPpRrt:TuvxZ", longs, NULL)) != -1) {
		switch (c) {
		case 'a':
			o->deref = DEREF_NEVER;
			o->recursive = true;
			preserve_list(r, "all", true);
			o->require_xattr = false;
			break;
		case 'd':
			o->deref = DEREF_NEVER;
			o->p_links = true;
			break;
		case 'f': o->force = true; break;
		case 'H': o->deref = DEREF_ARGS; break;
		case 'L': o->deref = DEREF_ALWAYS; break;
		case 'P': o->deref = DEREF_NEVER; break;
		case 'n': o->no_clobber = true; break;
		case 'p': preserve_list(r, "mode,timestamps,ownership", true); break;
		case 'R': case 'r': o->recursive = true; break;
		case 't':
			if (o->target_dir) {
				fprintf(stderr, "%s: multiple target directories specified\n", r->prog);
				exit(1);
			}
			o->target_dir = optarg;
			break;
		case 'T': o->no_target_dir = true; break;
		case 'u': o->update = true; break;
		case 'v': o->verbose = true; break;
		case 'x': o->one_fs = true; break;
		case 'Z': break;	/* default SELinux context: nothing to do without SELinux */
		case 'j': {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || v == 0 || v > 65536 ||
			    *optarg == '-') {
				fprintf(stderr, "%s: invalid number of jobs: %s\n",
					r->prog, q(r, optarg));
				try_help(r);
			}
			o->jobs = (unsigned)v;
			break;
		}
		case OPT_PRESERVE:
			preserve_list(r, optarg ? optarg : "mode,timestamps,ownership", true);
			break;
		case OPT_NO_PRESERVE: preserve_list(r, optarg, false); break;
		case OPT_REFLINK:
			o->reflink = optarg ? pick(r, optarg, "--reflink", when) : REFLINK_ALWAYS;
			break;
		case OPT_SPARSE: {
			/* cp lists them in this order; SPARSE_* follow when[]. */
			static const char *const sp[] = { "never", "auto", "always", NULL };
			static const int as[] = { SPARSE_NEVER, SPARSE_AUTO, SPARSE_ALWAYS };

			o->sparse = as[pick(r, optarg, "--sparse", sp)];
			break;
		}
		case OPT_PROGRESS: o->progress = true; break;
		case OPT_REMOVE_DEST: o->remove_dest = true; break;
		case OPT_STRIP: strip = true; break;
		case OPT_HELP: usage(r->prog); exit(0);
		case OPT_VERSION:
			printf("uaio-cp (uaio) " VERSION "\n"
			       "GNU cp 9.1's options and results, on io_uring flows.\n");
			exit(0);
		default:
			try_help(r);
		}
	}
	if (o->want_context) {
		/* Asked for by name (not through "all"): cp 9.1 stops here
		 * without SELinux; uaio-cp does not copy contexts at all. */
		if (access("/sys/fs/selinux", F_OK) != 0)
			fprintf(stderr, "%s: cannot preserve security context without "
				"an SELinux-enabled kernel\n", r->prog);
		else
			fprintf(stderr, "%s: preserving security contexts is not "
				"supported\n", r->prog);
		exit(1);
	}
	if (o->deref == DEREF_UNSET)
		o->deref = o->recursive ? DEREF_NEVER : DEREF_ALWAYS;
	if (o->reflink == REFLINK_ALWAYS && o->sparse != SPARSE_AUTO) {
		fprintf(stderr, "%s: --reflink can be used only with --sparse=auto\n", r->prog);
		try_help(r);
	}
	if (o->no_clobber)
		o->update = false;	/* -n wins, as in cp */
	o->jobs = cap_jobs(o->jobs ? o->jobs : default_jobs());
	o->dir_fds = dir_fds(o->jobs);

	if (strip) {
		/* Sources only: the last operand is DEST unless -t named it. */
		int last = o->target_dir ? argc : argc - 1;

		for (int i = optind; i < last; i++) {
			size_t n = strlen(argv[i]);

			while (n > 1 && argv[i][n - 1] == '/')
				argv[i][--n] = 0;
		}
	}
	*first = optind;
	return argc - optind;
}
