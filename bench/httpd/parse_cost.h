/* SPDX-License-Identifier: MIT */
/*
 * parse_cost's shared part: the inputs, what a parser yields for one
 * request (struct req, folded into a checksum that must agree across
 * parsers), and the parsers' entry points: parse_llhttp.c, parse_pico.c,
 * parse_hp.c (each in a file of its own: llhttp.h and http_parser.h
 * cannot share a translation unit, having the same HPE_* and HTTP_*
 * names).
 */
#ifndef PARSE_COST_H
#define PARSE_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- inputs */

#define MAX_HEADERS 64
#define PIPELINE 16

struct input {
	const char *name;
	char *buf;
	size_t len;
	int nreq;		/* requests in buf */
};

/* ------------------------------------------------------------ results */

struct span {
	const char *p;
	size_t n;
};

/* What a server keeps of one request head. */
struct req {
	const char *base;
	struct span target;
	struct span field, val;		/* header being parsed */
	struct span hn[MAX_HEADERS], hv[MAX_HEADERS];
	int nh;
	int minor;
	bool get;
	bool in_value;			/* http-parser: a value was last */
	bool done;
};

/* Consumes a finished request: a checksum of its spans, the same for
 * every parser. */
static inline uint64_t fold(const struct req *r)
{
	uint64_t h = (uint64_t)(r->target.p - r->base) * 31 + r->target.n;

	h = h * 131 + (uint64_t)r->minor * 2 + r->get;
	for (int i = 0; i < r->nh; i++) {
		h = h * 131 + (uint64_t)(r->hn[i].p - r->base) + r->hn[i].n;
		h = h * 131 + (uint64_t)(r->hv[i].p - r->base) + r->hv[i].n;
	}
	return h;
}

static inline void begin(struct req *r, const char *base)
{
	r->base = base;
	r->target = (struct span){ 0 };
	r->field = r->val = (struct span){ 0 };
	r->nh = 0;
	r->in_value = false;
	r->done = false;
}

/* Spans may come in pieces (across reads); they are adjacent. */
static inline void extend(struct span *s, const char *at, size_t n)
{
	if (!s->p)
		*s = (struct span){ at, n };
	else
		s->n = (size_t)(at + n - s->p);
}

static inline void push_header(struct req *r)
{
	if (r->nh < MAX_HEADERS) {
		r->hn[r->nh] = r->field;
		r->hv[r->nh] = r->val.p ? r->val : (struct span){ r->field.p, 0 };
		r->nh++;
	}
	r->field = r->val = (struct span){ 0 };
}

/* Each sets up its parser and names it (with its version) in name. */
void ll_setup(char *name, size_t namesz);
void hp_setup(char *name, size_t namesz);
/* picohttpparser, loaded from libh2o: false (why says why) when absent;
 * lib: the library it came from. */
bool pico_load(char *why, size_t whysz, const char **lib);
/* One read's worth: every request in it. The requests parsed, -1 on error. */
int ll_parse(const struct input *in, uint64_t *sum);
int pico_parse(const struct input *in, uint64_t *sum);
int hp_parse(const struct input *in, uint64_t *sum);

#endif
