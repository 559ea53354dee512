/* SPDX-License-Identifier: MIT */
/*
 * pipetest (pipetest.h): token passing around a ring of pipes, after the experiment in
 * LaHaise's "An AIO implementation and its behaviour" (OLS 2002).
 *
 * P pipes form a ring; T tokens of S bytes are injected, and each hop reads
 * a token from pipe i and writes it to pipe i+1. With T much smaller than
 * P most descriptors sit idle, which is what separates O(n) readiness
 * interfaces from O(ready) ones. One run measures one mode for a fixed
 * time after a warm-up and prints one key=value line.
 *
 *   pipetest --mode epoll -P 1000 -S 12 -T 1 [--time 0.3] [--warmup 0.05]
 *   pipetest --nop uring|uaio|uaio-epoll [--batch 32] [--time 0.3]
 *   pipetest --memory [--count 100000]
 *   pipetest --list
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipetest.h"

static const char *const modes[] = {
	"poll", "epoll", "epoll-et", "uring-poll", "uring-mpoll", "uring-read",
	"uaio-reactor", "uaio-reactor-et", "uaio-proactor", "uaio-reactor-epoll",
	"uaio-proactor-epoll",
};

static void usage(int code)
{
	fprintf(code ? stderr : stdout,
		"usage: pipetest --mode MODE [-P pipes] [-S bytes] [-T tokens]\n"
		"                [--time secs] [--warmup secs]\n"
		"       pipetest --nop uring|uaio|uaio-epoll [--batch N] [--time secs]\n"
		"       pipetest --memory [--count N]\n"
		"       pipetest --list\n"
		"Prints one key=value line per measurement (passes_per_sec,\n"
		"roundtrips_per_sec, or mem ... lines).\n");
	exit(code);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "pipes", required_argument, NULL, 'P' },
		{ "size", required_argument, NULL, 'S' },
		{ "tokens", required_argument, NULL, 'T' },
		{ "time", required_argument, NULL, 't' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "nop", required_argument, NULL, 'n' },
		{ "batch", required_argument, NULL, 'b' },
		{ "memory", no_argument, NULL, 'M' },
		{ "count", required_argument, NULL, 'c' },
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *mode = NULL, *nop = NULL;
	int batch = 1, memory = 0, count = 100000, c;

	pt.P = 1;
	pt.S = 12;
	pt.T = 1;
	pt.time_s = 0.3;
	pt.warmup_s = 0.05;
	while ((c = getopt_long(argc, argv, "m:P:S:T:t:w:n:b:Mc:lh", opts, NULL)) != -1) {
		switch (c) {
		case 'm': mode = optarg; break;
		case 'P': pt.P = atoi(optarg); break;
		case 'S': pt.S = atoi(optarg); break;
		case 'T': pt.T = atoi(optarg); break;
		case 't': pt.time_s = atof(optarg); break;
		case 'w': pt.warmup_s = atof(optarg); break;
		case 'n': nop = optarg; break;
		case 'b': batch = atoi(optarg); break;
		case 'M': memory = 1; break;
		case 'c': count = atoi(optarg); break;
		case 'l':
			for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++)
				printf("%s\n", modes[k]);
			return 0;
		case 'h': usage(0); break;
		default: usage(2);
		}
	}
	if (optind != argc || (!mode && !nop && !memory))
		usage(2);
	if (pt.P < 1 || pt.T < 1 || pt.S < 1 || pt.S > 4096 || batch < 1 ||
	    pt.time_s <= 0 || count < 1)
		die("bad arguments: need P,T >= 1, 1 <= S <= 4096, batch >= 1, time > 0");

	int limit = raise_nofile();

	if (memory) {
		memory_report(count, limit);
		return 0;
	}

	if (nop) {
		const char *desc = "";

		if (!strcmp(nop, "uring")) {
			nop_uring(batch);
		} else if (!strcmp(nop, "uaio") || !strcmp(nop, "uaio-epoll")) {
			nop_uaio(batch, !strcmp(nop, "uaio-epoll"));
			desc = uaio_desc();
		} else {
			die("unknown --nop %s", nop);
		}
		printf("nop=%s batch=%d roundtrips=%llu secs=%.4f roundtrips_per_sec=%.0f "
		       "ring_flags=%s %s\n", nop, batch,
		       (unsigned long long)(pt.p1 - pt.p0), (pt.t1 - pt.t0) / 1e9,
		       rate(), pt.ring_flags ? pt.ring_flags : "-", desc);
		return 0;
	}

	int requested = pt.P;

	if (pt.P > max_pipes(limit))
		pt.P = max_pipes(limit);
	/* More tokens than a pipe can hold would block a writer. */
	if ((long)((pt.T + pt.P - 1) / pt.P) * pt.S > 32768)
		die("T=%d tokens of S=%d bytes do not fit in P=%d pipes", pt.T, pt.S, pt.P);

	int readiness = !strstr(mode, "read") && !strstr(mode, "proactor");
	const char *desc = "";

	ring_open(readiness);
	if (!strcmp(mode, "poll") || !strcmp(mode, "epoll") || !strcmp(mode, "epoll-et")) {
		inject_tokens();
		timing_start();
		if (mode[0] == 'p')
			run_poll();
		else
			run_epoll(strstr(mode, "-et") != NULL);
	} else if (!strcmp(mode, "uring-poll")) {
		run_uring(U_POLL);
	} else if (!strcmp(mode, "uring-mpoll")) {
		run_uring(U_MPOLL);
	} else if (!strcmp(mode, "uring-read")) {
		run_uring(U_READ);
	} else if (!strcmp(mode, "uaio-reactor") || !strcmp(mode, "uaio-reactor-epoll") ||
		 !strcmp(mode, "uaio-reactor-et") || !strcmp(mode, "uaio-reactor-et-epoll")) {
		run_uaio_reactor(strstr(mode, "epoll") != NULL, strstr(mode, "-et") != NULL);
		desc = uaio_desc();
	} else if (!strcmp(mode, "uaio-proactor") || !strcmp(mode, "uaio-proactor-epoll")) {
		run_uaio_proactor(strstr(mode, "epoll") != NULL);
		desc = uaio_desc();
	} else {
		die("unknown mode %s (see --list)", mode);
	}
	printf("mode=%s P=%d S=%d T=%d passes=%llu laps=%.1f secs=%.4f "
	       "passes_per_sec=%.0f P_requested=%d nofile_limit=%d ring_flags=%s %s\n",
	       mode, pt.P, pt.S, pt.T, (unsigned long long)(pt.p1 - pt.p0),
	       (double)(pt.p1 - pt.p0) / pt.P, (pt.t1 - pt.t0) / 1e9, rate(),
	       requested, limit, pt.ring_flags ? pt.ring_flags : "-", desc);
	return 0;
}
