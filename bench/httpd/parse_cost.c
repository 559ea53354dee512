/* SPDX-License-Identifier: MIT */
/*
 * parse_cost: the CPU cost per request of parsing HTTP/1.1 GET requests
 * with the three parsers Debian bookworm offers:
 *
 *   llhttp 8.1      node-llhttp's C sources (the parser uaio-httpd uses),
 *                   driven as uaio-httpd drives it: callbacks record the
 *                   target and header spans, on_message_complete pauses,
 *                   llhttp_resume() goes on with the next request.
 *   picohttpparser  phr_parse_request() as exported by libh2o 0.13
 *                   (libh2o0.13), loaded with dlopen(): no header is
 *                   shipped, so the prototype is declared here.
 *   http-parser     the old node parser (libhttp-parser-dev), when found
 *                   at build time; paused in on_message_complete too.
 *
 * Each parser yields the same thing for each request: the target span,
 * the version, whether the method is GET and the (name, value) spans of
 * every header; a checksum of those is folded into a sink, and checked
 * equal across parsers before anything is timed.
 *
 * Method: each cell (request kind x parser) parses its input N times,
 * N chosen for about 0.3 s of thread CPU time
 * (CLOCK_THREAD_CPUTIME_ID); 5 repetitions, parsers interleaved; the
 * table gives the median and the best ns per request, and instructions
 * per request (user space, median) when perf_event_open() works.
 *
 * Files: parse_cost.h (inputs and results), parse_llhttp.c,
 * parse_pico.c, parse_hp.c (one per parser), this one (timing, main).
 *
 * usage: parse_cost [SECONDS_PER_CELL [REPS]]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "parse_cost.h"

/* ----------------------------------------------------------- requests */

static const char curl_req[] =
	"GET /index.html HTTP/1.1\r\n"
	"Host: localhost:8080\r\n"
	"User-Agent: curl/7.88.1\r\n"
	"Accept: */*\r\n"
	"\r\n";

static const char browser_req[] =
	"GET /docs/guide/getting-started.html?lang=en HTTP/1.1\r\n"
	"Host: www.example.org\r\n"
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0\r\n"
	"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8\r\n"
	"Accept-Language: en-US,en;q=0.5\r\n"
	"Accept-Encoding: gzip, deflate, br\r\n"
	"Referer: https://www.example.org/docs/\r\n"
	"Connection: keep-alive\r\n"
	"Upgrade-Insecure-Requests: 1\r\n"
	"Sec-Fetch-Dest: document\r\n"
	"Sec-Fetch-Mode: navigate\r\n"
	"Sec-Fetch-Site: same-origin\r\n"
	"If-None-Match: \"1a2b3c-4d5e-17f0a1b2c3d4e5f6\"\r\n"
	"\r\n";

static struct input inputs[3];
static volatile uint64_t sink;

static void make_inputs(void)
{
	static char pipe_buf[PIPELINE * 128];
	size_t off = 0;

	inputs[0] = (struct input){ "curl-like, 3 headers", (char *)curl_req,
				    sizeof(curl_req) - 1, 1 };
	inputs[1] = (struct input){ "browser-like, 12 headers",
				    (char *)browser_req, sizeof(browser_req) - 1, 1 };
	/* The curl-like request 16 times in one read, paths differing. */
	for (int i = 0; i < PIPELINE; i++)
		off += (size_t)snprintf(pipe_buf + off, sizeof(pipe_buf) - off,
			"GET /file%02d.html HTTP/1.1\r\n"
			"Host: localhost:8080\r\n"
			"User-Agent: curl/7.88.1\r\n"
			"Accept: */*\r\n"
			"\r\n", i);
	inputs[2] = (struct input){ "pipelined 16 x curl-like", pipe_buf, off,
				    PIPELINE };
}

/* ------------------------------------------------------------ parsers */

struct parser {
	const char *name;
	int (*parse)(const struct input *, uint64_t *);
	const char *skip;	/* why it is missing, or NULL */
};

static struct parser parsers[3];
static int nparsers;
static const char *pico_lib;

/* ------------------------------------------------------------- timing */

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int perf_fd = -1;
static char perf_why[128];

static void perf_open(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	perf_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (perf_fd < 0)
		snprintf(perf_why, sizeof(perf_why), "perf_event_open: %s",
			 strerror(errno));
}

struct sample {
	double ns;		/* per request */
	double insns;		/* per request, or < 0 */
};

static struct sample run(const struct parser *p, const struct input *in,
			 uint64_t iters)
{
	uint64_t sum = 0, t0, t1, count = 0;
	struct sample s;

	if (perf_fd >= 0) {
		ioctl(perf_fd, PERF_EVENT_IOC_RESET, 0);
		ioctl(perf_fd, PERF_EVENT_IOC_ENABLE, 0);
	}
	t0 = cpu_ns();
	for (uint64_t i = 0; i < iters; i++)
		p->parse(in, &sum);
	t1 = cpu_ns();
	if (perf_fd >= 0) {
		ioctl(perf_fd, PERF_EVENT_IOC_DISABLE, 0);
		if (read(perf_fd, &count, sizeof(count)) != sizeof(count))
			count = 0;
	}
	sink += sum;
	s.ns = (double)(t1 - t0) / ((double)iters * in->nreq);
	s.insns = perf_fd >= 0 && count ? (double)count / ((double)iters * in->nreq) : -1;
	return s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_REPS 32

int main(int argc, char **argv)
{
	double cell_s = argc > 1 ? atof(argv[1]) : 0.3;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	uint64_t iters[3][3];
	double ns[3][3][MAX_REPS], ins[3][3][MAX_REPS];
	char why[256] = "";
	bool bad = false;

	if (cell_s <= 0 || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "usage: parse_cost [SECONDS_PER_CELL [REPS<=%d]]\n",
			MAX_REPS);
		return 2;
	}
	make_inputs();
	{
		static char name[64];

		ll_setup(name, sizeof(name));
		parsers[nparsers++] = (struct parser){ name, ll_parse, NULL };
	}
	if (pico_load(why, sizeof(why), &pico_lib))
		parsers[nparsers++] = (struct parser){ "picohttpparser (libh2o 0.13)",
						       pico_parse, NULL };
	else
		parsers[nparsers++] = (struct parser){ "picohttpparser (libh2o 0.13)",
						       NULL, strdup(why) };
#ifdef HAVE_HTTP_PARSER
	{
		static char name[64];

		hp_setup(name, sizeof(name));
		parsers[nparsers++] = (struct parser){ name, hp_parse, NULL };
	}
#else
	parsers[nparsers++] = (struct parser){ "http-parser", NULL,
		"not built: libhttp-parser-dev was missing at configure time" };
#endif
	perf_open();

	/* Same results from every parser, before any timing. */
	for (int i = 0; i < 3; i++) {
		uint64_t ref = 0;
		bool have_ref = false;

		for (int j = 0; j < nparsers; j++) {
			uint64_t sum = 0;
			int n;

			if (!parsers[j].parse)
				continue;
			n = parsers[j].parse(&inputs[i], &sum);
			if (n != inputs[i].nreq) {
				fprintf(stderr, "parse_cost: %s fails on %s (%d of %d requests)\n",
					parsers[j].name, inputs[i].name, n, inputs[i].nreq);
				bad = true;
			} else if (have_ref && sum != ref) {
				fprintf(stderr, "parse_cost: %s disagrees on %s\n",
					parsers[j].name, inputs[i].name);
				bad = true;
			}
			if (!have_ref && n == inputs[i].nreq)
				ref = sum, have_ref = true;
		}
	}
	if (bad)
		return 1;

	/* Calibrate: iterations for about cell_s seconds per cell. */
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < nparsers; j++) {
			uint64_t n = 1000;

			if (!parsers[j].parse)
				continue;
			for (;;) {
				struct sample s = run(&parsers[j], &inputs[i], n);
				double t = s.ns * (double)n * inputs[i].nreq * 1e-9;

				if (t >= 0.03) {
					n = (uint64_t)((double)n * cell_s / t);
					break;
				}
				n *= 4;
			}
			iters[i][j] = n ? n : 1;
		}

	for (int rep = 0; rep < reps; rep++)
		for (int i = 0; i < 3; i++)
			for (int k = 0; k < nparsers; k++) {
				/* Rotate the order so no parser always goes first. */
				int j = (k + rep) % nparsers;
				struct sample s;

				if (!parsers[j].parse)
					continue;
				s = run(&parsers[j], &inputs[i], iters[i][j]);
				ns[i][j][rep] = s.ns;
				ins[i][j][rep] = s.insns;
			}

	printf("Parse cost per request, %d runs of ~%.2g s CPU each per cell, "
	       "parsers interleaved (CLOCK_THREAD_CPUTIME_ID).\n", reps, cell_s);
	printf("Instructions: %s.\n\n", perf_fd >= 0 ? "user-space, per request, median run"
						     : perf_why);
	printf("| request | bytes/req | parser | ns/req (median) | ns/req (best) | instructions/req |\n");
	printf("|---|---:|---|---:|---:|---:|\n");
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < nparsers; j++) {
			const struct parser *p = &parsers[j];
			double best, med, imed;

			if (!p->parse) {
				printf("| %s | %zu | %s | skipped: %s | | |\n",
				       inputs[i].name, inputs[i].len / (size_t)inputs[i].nreq,
				       p->name, p->skip);
				continue;
			}
			med = median(ns[i][j], reps);	/* sorts: [0] is the best */
			best = ns[i][j][0];
			imed = median(ins[i][j], reps);
			printf("| %s | %zu | %s | %.1f | %.1f | ", inputs[i].name,
			       inputs[i].len / (size_t)inputs[i].nreq, p->name, med, best);
			if (imed >= 0)
				printf("%.0f |\n", imed);
			else
				printf("n/a |\n");
		}
	if (parsers[1].parse)
		printf("\npicohttpparser: phr_parse_request from %s\n", pico_lib);
	return sink == 42 ? 3 : 0;	/* sink read: the work is used */
}
