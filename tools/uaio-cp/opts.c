/* SPDX-License-Identifier: MIT */
/* Command line: GNU cp 9.1's options, spellings and messages. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
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

#define VERSION UAIO_VERSION_STRING

static void say(struct cp_run *r, int err, const char *fmt, va_list ap)
{
	/* as error(3): what -v said so far comes first, into one stream */
	fflush(stdout);
	cp_bar_hide(r);
	fprintf(stderr, "%s: ", r->prog);
	vfprintf(stderr, fmt, ap);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
}

void cp_err(struct cp_run *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(r, err, fmt, ap);
	va_end(ap);
	r->status = 1;
}

_Noreturn void cp_oom(void)
{
	fprintf(stderr, "%s: %s\n", program_invocation_name, _("memory exhausted"));
	exit(1);
}

/* cp writes with write(2) or copy_file_range(2): one into a pipe nobody
 * reads raises SIGPIPE, one past RLIMIT_FSIZE SIGXFSZ, which end cp
 * silently unless the signal is ignored or blocked. Here the write ran on
 * io_uring or a worker thread, where neither signal reaches the program:
 * it is raised for it. */
static void raise_as_cp(struct cp_run *r, int err)
{
	int sig = err == EPIPE && r->sigpipe_kills ? SIGPIPE :
		  err == EFBIG && r->sigxfsz_kills ? SIGXFSZ : 0;
	sigset_t s;

	if (!sig)
		return;
	sigemptyset(&s);
	sigaddset(&s, sig);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
}

void cp_write_err(struct cp_run *r, int err, const char *name)
{
	raise_as_cp(r, err);
	cp_err(r, err, _("error writing %s"), name);
}

void cp_copy_err(struct cp_run *r, int err, const char *src, const char *dst)
{
	raise_as_cp(r, err);
	cp_err(r, err, _("error copying %s to %s"), q(r, src), q(r, dst));
}

void cp_warn(struct cp_run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(r, 0, fmt, ap);
	va_end(ap);
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
"  -Z, --context[=CTX]          accepted as cp's; no SELinux context is set\n"
"                                 (refused where SELinux is enabled)\n"
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
	fprintf(stderr, _("Try '%s --help' for more information.\n"), r->prog);
	exit(1);
}

/* gnulib's argmatch, as cp uses it: an exact name, or a prefix of one,
 * or of several with one meaning; -1 for none, -2 for ambiguous. */
static int argmatch(const char *arg, const char *const *list, const int *vals)
{
	size_t len = strlen(arg);
	int found = -1;
	bool ambiguous = false;

	for (int i = 0; list[i]; i++) {
		if (strncmp(list[i], arg, len) != 0)
			continue;
		if (strlen(list[i]) == len)
			return i;
		if (found < 0)
			found = i;
		else if (vals[found] != vals[i])
			ambiguous = true;
	}
	return ambiguous ? -2 : found;
}

/* XARGMATCH: the value, or cp's message and exit status 1. */
static int pick(struct cp_run *r, const char *arg, const char *opt,
		const char *const *valid, const int *vals)
{
	int i = argmatch(arg, valid, vals);

	if (i >= 0)
		return vals[i];
	fprintf(stderr, "%s: ", r->prog);
	fprintf(stderr, i == -2 ? _("ambiguous argument %s for %s") : _("invalid argument %s for %s"),
		ql(r, arg), ql(r, opt));
	fputc('\n', stderr);
	fputs(_("Valid arguments are:"), stderr);
	for (int k = 0; valid[k]; k++)
		fprintf(stderr, k && vals[k] == vals[k - 1] ? ", %s" : "\n  - %s",
			ql(r, valid[k]));
	fputc('\n', stderr);
	try_help(r);
	return -1;
}

enum { P_MODE, P_TIMES, P_OWNER, P_LINKS, P_CONTEXT, P_XATTR, P_ALL };

/* cp's decode_preserve_arg: comma-separated, each an argmatch (so an
 * empty one is ambiguous, as in cp). */
static void preserve_list(struct cp_run *r, const char *list, bool on)
{
	static const char *const attrs[] = { "mode", "timestamps", "ownership",
		"links", "context", "xattr", "all", NULL };
	static const int vals[] = { P_MODE, P_TIMES, P_OWNER, P_LINKS,
		P_CONTEXT, P_XATTR, P_ALL };
	char *copy = strdup(list), *s = copy;
	struct cp_opts *o = &r->o;

	if (!copy) {
		cp_oom();
	}
	do {
		char *comma = strchr(s, ',');

		if (comma)
			*comma++ = 0;
		switch (pick(r, s, on ? "--preserve" : "--no-preserve", attrs, vals)) {
		case P_MODE: o->p_mode = on; o->explicit_no_mode = !on; break;
		case P_TIMES: o->p_times = on; break;
		case P_OWNER: o->p_owner = on; break;
		case P_LINKS: o->p_links = on; break;
		case P_CONTEXT: o->want_context = on; break;
		case P_XATTR: o->p_xattr = on; o->require_xattr = on; break;
		case P_ALL:	/* a context asked for by name stays asked for */
			o->p_mode = o->p_times = o->p_owner = o->p_links =
				o->p_xattr = on;
			o->explicit_no_mode = !on;
			break;
		}
		s = comma;
	} while (s);
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

/* Descriptors left open by the parent, past stdin, stdout and stderr and
 * below limit: they hold numbers RLIMIT_NOFILE leaves (GNU cp needs only
 * a few, and copies with most of the table taken). */
static long inherited_fds(long limit)
{
	long n = 0;
	DIR *d;
	int fd;

	if ((d = opendir("/proc/self/fd"))) {
		for (struct dirent *e; (e = readdir(d));)
			n += e->d_name[0] != '.' && (fd = atoi(e->d_name)) > 2 &&
			     fd != dirfd(d) && fd < limit;
		closedir(d);
	} else {	/* no /proc: asked one number at a time */
		for (fd = 3; fd < limit && fd < 65536; fd++)
			n += fcntl(fd, F_GETFD) >= 0;
	}
	return n;
}

/* RLIMIT_NOFILE less what the parent left open (LONG_MAX: no limit). */
static long nofile_room(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return LONG_MAX;
	return (long)rl.rlim_cur - inherited_fds((long)rl.rlim_cur);
}

/* What room (nofile_room) leaves the directories once the jobs have
 * theirs: none at a tight limit, where every entry goes by path. */
static unsigned dir_fds(long room, unsigned jobs)
{
	if (room == LONG_MAX)
		return DIR_FDS;
	room = (room - 32 - 4 * (long)jobs) / 2;
	return room < 0 ? 0 : room > DIR_FDS ? DIR_FDS : (unsigned)room;
}

static unsigned cap_jobs(long room, unsigned j)
{
	if (room != LONG_MAX) {
		room = (room - 32) / 4;

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
	OPT_ATTR_ONLY, OPT_COPY_CONTENTS, OPT_PARENTS,
};

/* cp 9.1's long options in cp's own order (abbreviations and the lists
 * of an ambiguous one's possibilities follow it), then uaio-cp's, which
 * an abbreviation reaches only when it names none of cp's. */
static const struct option longs[] = {
	{ "archive", no_argument, NULL, 'a' },
	{ "attributes-only", no_argument, NULL, OPT_ATTR_ONLY },
	{ "backup", optional_argument, NULL, 'b' },
	{ "copy-contents", no_argument, NULL, OPT_COPY_CONTENTS },
	{ "dereference", no_argument, NULL, 'L' },
	{ "force", no_argument, NULL, 'f' },
	{ "interactive", no_argument, NULL, 'i' },
	{ "link", no_argument, NULL, 'l' },
	{ "no-clobber", no_argument, NULL, 'n' },
	{ "no-dereference", no_argument, NULL, 'P' },
	{ "no-preserve", required_argument, NULL, OPT_NO_PRESERVE },
	{ "no-target-directory", no_argument, NULL, 'T' },
	{ "one-file-system", no_argument, NULL, 'x' },
	{ "parents", no_argument, NULL, OPT_PARENTS },
	{ "path", no_argument, NULL, OPT_PARENTS },
	{ "preserve", optional_argument, NULL, OPT_PRESERVE },
	{ "recursive", no_argument, NULL, 'R' },
	{ "remove-destination", no_argument, NULL, OPT_REMOVE_DEST },
	{ "sparse", required_argument, NULL, OPT_SPARSE },
	{ "reflink", optional_argument, NULL, OPT_REFLINK },
	{ "strip-trailing-slashes", no_argument, NULL, OPT_STRIP },
	{ "suffix", required_argument, NULL, 'S' },
	{ "symbolic-link", no_argument, NULL, 's' },
	{ "target-directory", required_argument, NULL, 't' },
	{ "update", no_argument, NULL, 'u' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "context", optional_argument, NULL, 'Z' },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	/* uaio-cp's own from here on (CP_LONGS) */
	{ "jobs", required_argument, NULL, 'j' },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ NULL, 0, NULL, 0 },
};
/* Where cp's own options end in longs[]. */
#define CP_LONGS 29
_Static_assert(sizeof(longs) / sizeof(longs[0]) == CP_LONGS + 3,
	       "CP_LONGS must count cp's options in longs[]");
/* cp's short options, uaio-cp's -j among them. */
#define SHORTS "abdfHij:lLnpPrRsS:t:TuvxZ"

/* glibc getopt's search for an abbreviation among longs[from, to): the
 * first match, or -2 when a later one means something else (after
 * printing glibc's message), or -1. */
static int abbrev(struct cp_run *r, const char *arg, size_t len, int from, int to)
{
	int found = -1;
	bool ambig = false;

	for (int i = from; i < to; i++) {
		const struct option *p = &longs[i], *f;

		if (strncmp(p->name, arg + 2, len) != 0)
			continue;
		if (found < 0) {
			found = i;
			continue;
		}
		f = &longs[found];
		if (f->has_arg != p->has_arg || f->val != p->val)
			ambig = true;
	}
	if (!ambig)
		return found;
	/* glibc's getopt_long says it, in glibc's catalog */
	fprintf(stderr, dgettext("libc", "%s: option '%s%s' is ambiguous; possibilities:"),
		r->prog, "--", arg + 2);
	for (int i = from; i < to; i++) {
		const struct option *p = &longs[i], *f = &longs[found];

		if (strncmp(p->name, arg + 2, len) == 0 &&
		    (i == found || f->has_arg != p->has_arg || f->val != p->val))
			fprintf(stderr, " '--%s'", p->name);
	}
	fputc('\n', stderr);
	return -2;
}

/* Spells out every abbreviated long option in argv before getopt sees
 * it, deciding against cp's options first, so "--pr" is --preserve (as
 * in cp) and not ambiguous with --progress. Option arguments are skipped,
 * not read as options. */
static void expand_longs(struct cp_run *r, int argc, char **argv)
{
	bool posix = getenv("POSIXLY_CORRECT") != NULL;

	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		size_t len;
		int k = -1;

		if (strcmp(a, "--") == 0)
			return;
		if (a[0] != '-' || !a[1]) {
			if (posix)
				return;
			continue;
		}
		if (a[1] != '-') {
			for (const char *c = a + 1; *c; c++) {
				const char *o = strchr(SHORTS, *c);

				if (o && o[1] == ':') {
					i += !c[1];
					break;
				}
			}
			continue;
		}
		len = strcspn(a + 2, "=");
		for (int j = 0; longs[j].name; j++)
			if (strlen(longs[j].name) == len && !strncmp(longs[j].name, a + 2, len))
				k = j;
		if (k < 0 && (k = abbrev(r, a, len, 0, CP_LONGS)) == -1)
			k = abbrev(r, a, len, CP_LONGS, (int)(sizeof(longs) / sizeof(longs[0])) - 1);
		if (k == -2)
			try_help(r);
		if (k < 0)
			continue;	/* getopt says it is unrecognized */
		if (strlen(longs[k].name) != len) {
			size_t n = strlen(longs[k].name) + strlen(a + 2 + len) + 3;
			char *full = malloc(n);

			if (!full) {
				cp_oom();
			}
			snprintf(full, n, "--%s%s", longs[k].name, a + 2 + len);
			argv[i] = full;	/* lives as long as argv */
		}
		if (longs[k].has_arg == required_argument && !a[2 + len])
			i++;
	}
}

/* Said only once the whole line is read and the operands checked, so
 * that --help, --version, an unknown option or a missing operand answer
 * as cp's would; the option's argument, if any, was taken as cp takes it. */
void cp_refuse_unsupported(struct cp_run *r)
{
	int c = r->o.unsupported;

	static const struct { int c; const char *name; } names[] = {
		{ 'b', "-b/--backup" }, { 'i', "-i/--interactive" },
		{ 'l', "-l/--link" }, { 's', "-s/--symbolic-link" },
		{ 'S', "-S/--suffix" }, { OPT_ATTR_ONLY, "--attributes-only" },
		{ OPT_COPY_CONTENTS, "--copy-contents" }, { OPT_PARENTS, "--parents" },
		{ 'Z', "-Z/--context (SELinux)" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].c == c)
			fprintf(stderr, "%s: %s is not supported\n", r->prog, names[i].name);
	try_help(r);
}

/* Parses argv into r->o and returns the operand count (sources plus the
 * destination unless -t); *first is the first operand's index. */
int cp_parse(struct cp_run *r, int argc, char **argv, int *first)
{
	static const char *const when[] = { "auto", "always", "never", NULL };
	static const int when_v[] = { REFLINK_AUTO, REFLINK_ALWAYS, REFLINK_NEVER };
	static const char *const sparse[] = { "never", "auto", "always", NULL };
	static const int sparse_v[] = { SPARSE_NEVER, SPARSE_AUTO, SPARSE_ALWAYS };
	struct cp_opts *o = &r->o;
	bool strip = false, backups = false;
	int links = 0;			/* 1: -l, 2: -s */
	long room;
	const char *backup_type = NULL;
	int c;

	o->jobs = 0;
	o->open_dangling = getenv("POSIXLY_CORRECT") != NULL;	/* as cp_option_init */
	expand_longs(r, argc, argv);
	while ((c = getopt_long(argc, argv, SHORTS, longs, NULL)) != -1) {
		switch (c) {
		case 'a':
			o->reduce_diag = true;
			o->deref = DEREF_NEVER;
			o->recursive = true;
			preserve_list(r, "all", true);
			o->require_preserve = true;
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
		case 'p':
			preserve_list(r, "mode,timestamps,ownership", true);
			o->require_preserve = true;
			break;
		case 'R': case 'r': o->recursive = true; break;
		case 't':
			if (o->target_dir) {
				cp_err(r, 0, _("multiple target directories specified"));
				exit(1);
			}
			o->target_dir = optarg;
			break;
		case 'T': o->no_target_dir = true; break;
		case 'u': o->update = true; break;
		case 'v': o->verbose = true; break;
		case 'x': o->one_fs = true; break;
		case 'Z':
			/* Without SELinux there is no context to set, as cp
			 * finds; with it, uaio-cp cannot set one. */
			if (access("/sys/fs/selinux", F_OK) == 0 && !o->unsupported)
				o->unsupported = c;
			if (optarg)
				cp_warn(r, _("warning: ignoring --context; it "
					     "requires an SELinux-enabled kernel"));
			break;
		case 'j': {
			char *end;
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			/* (a minus after blanks: strtoul negates it) */
			if (errno || end == optarg || *end || v == 0 || v > 65536 ||
			    optarg[strspn(optarg, " \t\n\v\f\r")] == '-') {
				fprintf(stderr, "%s: invalid number of jobs: %s\n",
					r->prog, q(r, optarg));
				try_help(r);
			}
			o->jobs = (unsigned)v;
			break;
		}
		case OPT_PRESERVE:
			preserve_list(r, optarg ? optarg : "mode,timestamps,ownership", true);
			o->require_preserve = true;
			break;
		case OPT_NO_PRESERVE: preserve_list(r, optarg, false); break;
		case OPT_REFLINK:
			o->reflink = optarg ? pick(r, optarg, "--reflink", when, when_v) :
				     REFLINK_ALWAYS;
			break;
		case OPT_SPARSE:
			o->sparse = pick(r, optarg, "--sparse", sparse, sparse_v);
			break;
		case OPT_PROGRESS: o->progress = true; break;
		case OPT_REMOVE_DEST: o->remove_dest = true; break;
		case OPT_STRIP: strip = true; break;
		case OPT_HELP:
			usage(r->prog);
			exit(tool_close_stdout(r->prog));
		case OPT_VERSION:
			printf("uaio-cp (uaio) " VERSION "\n"
			       "GNU cp 9.1's options and results, on io_uring flows.\n");
			exit(tool_close_stdout(r->prog));
		case 'b':
			backups = true;
			if (optarg)
				backup_type = optarg;	/* the last one counts */
			/* fall through */
		case 'i': case 'l': case 's': case 'S':
		case OPT_ATTR_ONLY: case OPT_COPY_CONTENTS: case OPT_PARENTS:
			links |= c == 'l' ? 1 : c == 's' ? 2 : 0;
			if (!o->unsupported)
				o->unsupported = c;
			break;
		default:
			try_help(r);
		}
	}
	/* cp's checks after its options, in cp's order: the backup type
	 * (gnulib's xget_version) before backups are refused as unsupported */
	if (links == 3) {
		cp_err(r, 0, _("cannot make both hard and symbolic links"));
		try_help(r);
	}
	if (backups && o->no_clobber) {
		cp_err(r, 0, _("options --backup and --no-clobber are mutually exclusive"));
		try_help(r);
	}
	if (o->reflink == REFLINK_ALWAYS && o->sparse != SPARSE_AUTO) {
		cp_err(r, 0, _("--reflink can be used only with --sparse=auto"));
		try_help(r);
	}
	if (backups) {
		static const char *const types[] = { "none", "off", "simple", "never",
			"existing", "nil", "numbered", "t", NULL };
		static const int tvals[] = { 0, 0, 1, 1, 2, 2, 3, 3 };
		const char *vc = getenv("VERSION_CONTROL");

		if (backup_type && *backup_type)
			pick(r, backup_type, "backup type", types, tvals);
		else if (vc && *vc)
			pick(r, vc, "$VERSION_CONTROL", types, tvals);
	}
	if (o->want_context) {
		/* Asked for by name (not through "all"): cp 9.1 stops here
		 * without SELinux; uaio-cp does not copy contexts at all. */
		if (access("/sys/fs/selinux", F_OK) != 0)
			cp_err(r, 0, _("cannot preserve security context without "
				       "an SELinux-enabled kernel"));
		else
			cp_err(r, 0, _("preserving security contexts is not supported"));
		exit(1);
	}
	if (o->deref == DEREF_UNSET)
		o->deref = o->recursive ? DEREF_NEVER : DEREF_ALWAYS;
	if (o->no_clobber)
		o->update = false;	/* -n wins, as in cp */
	room = nofile_room();	/* counted once: the program opens none yet */
	o->jobs = cap_jobs(room, o->jobs ? o->jobs : default_jobs());
	o->tight = o->jobs == 1 && cap_jobs(room, 2) == 1;
	o->dir_fds = dir_fds(room, o->jobs);

	o->strip_slashes = strip;	/* cp_top: sources copied into a directory */
	*first = optind;
	return argc - optind;
}
