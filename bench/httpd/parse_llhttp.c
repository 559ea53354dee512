/* SPDX-License-Identifier: MIT */
/*
 * parse_cost: llhttp 8.1 from node-llhttp's sources, driven as uaio-httpd
 * drives it (parse_cost.h).
 */
#define _GNU_SOURCE
#include <stdio.h>

#include <llhttp.h>

#include "parse_cost.h"

static int ll_url(llhttp_t *p, const char *at, size_t n)
{
	extend(&((struct req *)p->data)->target, at, n);
	return 0;
}

static int ll_field(llhttp_t *p, const char *at, size_t n)
{
	extend(&((struct req *)p->data)->field, at, n);
	return 0;
}

static int ll_value(llhttp_t *p, const char *at, size_t n)
{
	extend(&((struct req *)p->data)->val, at, n);
	return 0;
}

static int ll_value_done(llhttp_t *p)
{
	push_header(p->data);
	return 0;
}

static int ll_headers_done(llhttp_t *p)
{
	struct req *r = p->data;

	r->get = llhttp_get_method(p) == HTTP_GET;
	r->minor = llhttp_get_http_minor(p);
	return 0;
}

static int ll_message_done(llhttp_t *p)
{
	((struct req *)p->data)->done = true;
	return HPE_PAUSED;
}

static llhttp_settings_t ll_settings;
static llhttp_t ll_parser;

void ll_setup(char *name, size_t namesz)
{
	llhttp_settings_init(&ll_settings);
	ll_settings.on_url = ll_url;
	ll_settings.on_header_field = ll_field;
	ll_settings.on_header_value = ll_value;
	ll_settings.on_header_value_complete = ll_value_done;
	ll_settings.on_headers_complete = ll_headers_done;
	ll_settings.on_message_complete = ll_message_done;
	llhttp_init(&ll_parser, HTTP_REQUEST, &ll_settings);
	snprintf(name, namesz, "llhttp %d.%d.%d", LLHTTP_VERSION_MAJOR,
		 LLHTTP_VERSION_MINOR, LLHTTP_VERSION_PATCH);
}

/* One read's worth: every request in it, one execute() per request as
 * uaio-httpd does. Returns the requests parsed, -1 on error. */
int ll_parse(const struct input *in, uint64_t *sum)
{
	struct req r;
	const char *at = in->buf, *end = in->buf + in->len;
	int n = 0;

	ll_parser.data = &r;
	while (at < end) {
		llhttp_errno_t e;

		begin(&r, at);
		e = llhttp_execute(&ll_parser, at, (size_t)(end - at));
		if (e != HPE_PAUSED || !r.done)
			return -1;
		at = llhttp_get_error_pos(&ll_parser);
		llhttp_resume(&ll_parser);
		*sum += fold(&r);
		n++;
	}
	return n;
}
