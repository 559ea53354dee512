/* SPDX-License-Identifier: MIT */
/*
 * uaio-cp [OPTION]... SOURCE... DEST: GNU cp 9.1's operands and results,
 * with file data on a uaio loop (cp.h says how the parts fit).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <locale.h>
#include <sched.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cp.h"

static void die(struct cp_run *r, int err, bool help, const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", r->prog);
	fprintf(stderr, fmt, arg);
	if (err)
		fprintf(stderr, ": %s", strerror(err));
	fputc('\n', stderr);
	if (help)
		fprintf(stderr, _("Try '%s --help' for more information.\n"), r->prog);
	exit(1);
}

/* Whether sig, raised, would end the program: at its default, not blocked. */
static bool sig_kills(int sig)
{
	struct sigaction sa;
	sigset_t blocked;

	return sigaction(sig, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL &&
	       pthread_sigmask(SIG_BLOCK, NULL, &blocked) == 0 &&
	       !sigismember(&blocked, sig);
}

/* cp's rules for what the last operand means (do_copy in cp.c). */
static const char *target_of(struct cp_run *r, char **files, int *n)
{
	struct stat st;

	if (*n <= !r->o.target_dir) {
		if (*n <= 0)
			die(r, 0, true, _("missing file operand"), "");
		die(r, 0, true, _("missing destination file operand after %s"), q(r, files[0]));
	}
	if (r->o.no_target_dir) {
		if (r->o.target_dir)
			die(r, 0, false, _("cannot combine --target-directory (-t) "
			    "and --no-target-directory (-T)"), "");
		if (*n > 2)
			die(r, 0, true, _("extra operand %s"), q(r, files[2]));
		return NULL;
	}
	if (r->o.target_dir) {
		int err = stat(r->o.target_dir, &st) < 0 ? errno :
			  S_ISDIR(st.st_mode) ? 0 : ENOTDIR;

		if (err)
			die(r, err, false, _("target directory %s"), q(r, r->o.target_dir));
		return r->o.target_dir;
	}
	int err = stat(files[*n - 1], &st) < 0 ? errno :
		  S_ISDIR(st.st_mode) ? 0 : ENOTDIR;

	if (!err) {
		(*n)--;
		return files[*n];
	}
	if (*n > 2)
		die(r, err, false, _("target %s"), q(r, files[*n - 1]));
	return NULL;
}

/*
 * cp copies one operand after another; uaio-cp lets the last one's files
 * copy while it starts the next. That next one waits for them when what
 * it reads may be what they write: a directory (its walk reads what it
 * finds), a file with other names (one may be a destination being
 * written), a file a job writes (led there by a symlink at its
 * destination), or a file whose real path is in the target directory (or
 * cannot be found yet: a symlink to a file being made there); and when
 * what it would overwrite is what one of them reads. Any operand waits
 * for one copied into the target itself (DIR/., DIR/.., /): that one's
 * names may be its own (a name it found unmade, then made there, was
 * "File exists"), and the target's times and mode, set when that one
 * ends, must come before what the next one makes there, as in cp.
 */
static bool into_target_itself(const char *src)
{
	const char *end = src + strlen(src), *base;

	while (end > src && end[-1] == '/')
		end--;
	for (base = end; base > src && base[-1] != '/';)
		base--;
	return end == base || (end - base == 1 && *base == '.') ||
	       (end - base == 2 && base[0] == '.' && base[1] == '.');
}

static bool operand_waits(struct cp_run *r, const char *src, const char *target,
			  char **target_real)
{
	struct stat st;
	char *real, *dst;
	size_t n;
	bool in;

	if (!r->running)
		return false;
	dst = cp_top_name(src, target);
	in = stat(dst, &st) == 0 && !S_ISDIR(st.st_mode) &&
	     cp_reading(r, st.st_dev, st.st_ino);
	free(dst);
	if (in)
		return true;
	if ((r->o.deref == DEREF_NEVER ? lstat(src, &st) : stat(src, &st)) < 0 ||
	    S_ISDIR(st.st_mode) || st.st_nlink > 1 ||
	    cp_wait_writer(r, &st))	/* written through a symlink at a destination */
		return true;
	if (!*target_real && !(*target_real = realpath(target, NULL)))
		return true;
	if (!(real = realpath(src, NULL)))
		return true;
	n = strlen(*target_real);
	in = !strncmp(real, *target_real, n) && (real[n] == '/' || !real[n] || n == 1);
	free(real);
	return in;
}

int main(int argc, char **argv)
{
	struct cp_run r = { .prog = argv[0], .buf_index = -1 };
	const char *target;
	char **files;
	int first, n, ret;

	/* A closed 0-2 would be taken by a file opened or made here, and
	 * -v's output or a message written into a copy (`-v >&-`); held
	 * so that writing to it still fails as cp's does on the closed one. */
	(void)tool_stand_in_std_fds(3);
	setlocale(LC_ALL, "");
	n = cp_parse(&r, argc, argv, &first);
	files = argv + first;
	target = target_of(&r, files, &n);
	if (r.o.unsupported)
		cp_refuse_unsupported(&r);

	{
		struct rlimit rl;

		r.sigpipe_kills = sig_kills(SIGPIPE);
		r.sigxfsz_kills = sig_kills(SIGXFSZ) &&
				  getrlimit(RLIMIT_FSIZE, &rl) == 0 &&
				  rl.rlim_cur != RLIM_INFINITY;
	}
	r.umask = umask(0);
	umask(r.umask);
	r.root = geteuid() == 0;
	r.euid = geteuid();
	r.egid = getegid();
	{
		const char *sm = getenv("UAIO_CP_SMALL");

		r.small = !sm ? SMALL_AUTO : !strcmp(sm, "uring") ? SMALL_URING :
			  !strcmp(sm, "inline") ? SMALL_INLINE :
			  !strcmp(sm, "work") ? SMALL_WORK : SMALL_AUTO;
	}
	{
		/* Two workers per CPU it may run on: a worker copying an
		 * uncached file (a flow's splice step) sleeps on the disk,
		 * and the second keeps the disk's queue full; cached copies
		 * came out the same with one per CPU (docs/cp.md,
		 * Measurements). */
		cpu_set_t set;
		long cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ?
			    CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
		struct uaio_loop_params lp = {
			.workers = cpus < 1 ? 2 : cpus > 32 ? 64 : 2 * (unsigned)cpus,
		};

		r.l = uaio_loop_new(&lp);
	}
	if (!r.l) {
		fprintf(stderr, "%s: cannot start the I/O loop: %s\n", r.prog, strerror(errno));
		return 1;
	}
	if ((ret = cp_data_init(&r)) < 0)
		cp_oom();	/* its buffers: mmap's and calloc's ENOMEM */
	cp_bar_start(&r);
	r.args_twice = target && n >= 2;
	r.target = target;
	if (target) {
		r.tgt = cp_target_new(target);
		char *target_real = NULL;

		for (int i = 0; i < n; i++) {
			if (i && (into_target_itself(files[i - 1]) ||
				  operand_waits(&r, files[i], target, &target_real)))
				cp_drain(&r, 1);
			cp_top(&r, files[i], target, true);
		}
		free(target_real);
	} else {
		cp_top(&r, files[0], files[1], false);
	}
	cp_drain(&r, 1);
	cp_target_free(r.tgt);
	cp_bar_stop(&r);
	cp_data_fini(&r);
	seen_free(&r.links);
	seen_free(&r.srcs);
	seen_free(&r.made);
	uaio_loop_free(r.l);
	cp_quote_free(&r);
	return tool_close_stdout(r.prog) ? 1 : r.status;
}
