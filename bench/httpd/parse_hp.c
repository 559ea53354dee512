/* SPDX-License-Identifier: MIT */
/*
 * parse_cost: the old node http-parser (libhttp-parser-dev), paused in
 * on_message_complete (parse_cost.h).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include <http_parser.h>

#include "parse_cost.h"

static int hp_url(http_parser *p, const char *at, size_t n)
{
	extend(&((struct req *)p->data)->target, at, n);
	return 0;
}

static int hp_field(http_parser *p, const char *at, size_t n)
{
	struct req *r = p->data;

	if (r->in_value) {	/* no value_complete: a new field ends it */
		push_header(r);
		r->in_value = false;
	}
	extend(&r->field, at, n);
	return 0;
}

static int hp_value(http_parser *p, const char *at, size_t n)
{
	struct req *r = p->data;

	r->in_value = true;
	extend(&r->val, at, n);
	return 0;
}

static int hp_headers_done(http_parser *p)
{
	struct req *r = p->data;

	if (r->in_value || r->field.p)
		push_header(r);
	r->in_value = false;
	r->get = p->method == HTTP_GET;
	r->minor = p->http_minor;
	return 0;
}

static int hp_message_done(http_parser *p)
{
	((struct req *)p->data)->done = true;
	http_parser_pause(p, 1);
	return 0;
}

static http_parser_settings hp_settings;
static http_parser hp_parser;

void hp_setup(char *name, size_t namesz)
{
	http_parser_settings_init(&hp_settings);
	hp_settings.on_url = hp_url;
	hp_settings.on_header_field = hp_field;
	hp_settings.on_header_value = hp_value;
	hp_settings.on_headers_complete = hp_headers_done;
	hp_settings.on_message_complete = hp_message_done;
	http_parser_init(&hp_parser, HTTP_REQUEST);
	snprintf(name, namesz, "http-parser %d.%d.%d", HTTP_PARSER_VERSION_MAJOR,
		 HTTP_PARSER_VERSION_MINOR, HTTP_PARSER_VERSION_PATCH);
}

int hp_parse(const struct input *in, uint64_t *sum)
{
	struct req r;
	const char *at = in->buf, *end = in->buf + in->len;
	int n = 0;

	hp_parser.data = &r;
	while (at < end) {
		size_t got;

		begin(&r, at);
		got = http_parser_execute(&hp_parser, &hp_settings, at,
					  (size_t)(end - at));
		if (HTTP_PARSER_ERRNO(&hp_parser) != HPE_PAUSED || !r.done || !got)
			return -1;
		http_parser_pause(&hp_parser, 0);
		at += got;
		*sum += fold(&r);
		n++;
	}
	return n;
}
