/* SPDX-License-Identifier: MIT */
/*
 * parse_cost: picohttpparser, phr_parse_request() from libh2o 0.13 through
 * dlopen() (parse_cost.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "parse_cost.h"

/* picohttpparser's API: libh2o ships no header. */
struct phr_header {
	const char *name;
	size_t name_len;
	const char *value;
	size_t value_len;
};

typedef int (*phr_parse_request_fn)(const char *buf, size_t len,
	const char **method, size_t *method_len, const char **path,
	size_t *path_len, int *minor_version, struct phr_header *headers,
	size_t *num_headers, size_t last_len);

static phr_parse_request_fn phr_parse_request;

int pico_parse(const struct input *in, uint64_t *sum)
{
	struct req r;
	struct phr_header h[MAX_HEADERS];
	const char *at = in->buf, *end = in->buf + in->len;
	int n = 0;

	while (at < end) {
		const char *m, *path;
		size_t mlen, plen, nh = MAX_HEADERS;
		int minor, len;

		begin(&r, at);
		len = phr_parse_request(at, (size_t)(end - at), &m, &mlen, &path,
					&plen, &minor, h, &nh, 0);
		if (len <= 0)
			return -1;
		r.target = (struct span){ path, plen };
		r.minor = minor;
		r.get = mlen == 3 && !memcmp(m, "GET", 3);
		for (size_t i = 0; i < nh; i++) {
			r.hn[i] = (struct span){ h[i].name, h[i].name_len };
			r.hv[i] = (struct span){ h[i].value, h[i].value_len };
		}
		r.nh = (int)nh;
		at += len;
		*sum += fold(&r);
		n++;
	}
	return n;
}

bool pico_load(char *why, size_t whysz, const char **lib)
{
	static const char *names[] = {
		"libh2o.so.0.13", "libh2o-evloop.so.0.13", NULL,
	};

	for (int i = 0; names[i]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);

		if (!h) {
			snprintf(why, whysz, "%s", dlerror());
			continue;
		}
		phr_parse_request = (phr_parse_request_fn)dlsym(h, "phr_parse_request");
		if (phr_parse_request) {
			*lib = names[i];
			return true;
		}
		snprintf(why, whysz, "%s has no phr_parse_request", names[i]);
	}
	return false;
}
