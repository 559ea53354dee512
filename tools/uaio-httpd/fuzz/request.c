/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the request path: bytes as they come off a socket,
 * split in two reads, parsed by llhttp with uaio-httpd's callbacks, then
 * every completed request's target, Range and validators through the same
 * helpers the server uses. Asserts what the server relies on: a decoded
 * path never leaves the root, ranges stay inside the file.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "httpd.h"

static void check_request(const struct request *r, uint64_t size)
{
	char path[HTTPD_PATH_MAX];
	struct range rg[HTTPD_RANGES_MAX];
	bool slash;
	time_t t;
	int n;

	if (r->target.p && proto_path(r->target, path, sizeof(path), &slash) == 0) {
		size_t len = strlen(path);

		assert(path[0] != '/');
		assert(!len || path[len - 1] != '/');
		assert(!strstr(path, "//"));
		/* No segment is "." or "..". */
		for (const char *p = path; *p;) {
			const char *e = strchr(p, '/');
			size_t sl = e ? (size_t)(e - p) : strlen(p);

			assert(!(sl == 1 && p[0] == '.'));
			assert(!(sl == 2 && p[0] == '.' && p[1] == '.'));
			p += sl + (e != NULL);
		}
	}
	if (r->hdr[H_RANGE].p) {
		n = proto_ranges(r->hdr[H_RANGE], size, rg, HTTPD_RANGES_MAX);
		assert(n >= -1 && n <= HTTPD_RANGES_MAX);
		for (int i = 0; i < n; i++)
			assert(rg[i].first <= rg[i].last && rg[i].last < size);
	}
	if (r->hdr[H_IF_MODIFIED_SINCE].p)
		(void)proto_parse_date(r->hdr[H_IF_MODIFIED_SINCE], &t);
	n = proto_verdict(r);
	assert(n == 0 || n == 400 || n == 405 || n == 501 || n == 505);
	(void)proto_preconditions(r, "\"1-2-3\"", 784111777);
	(void)proto_if_range(r, "\"1-2-3\"", 784111777);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static llhttp_settings_t settings;
	static bool init;
	struct request req;
	llhttp_t p;
	char *buf;
	size_t split, fed = 0;
	uint64_t fsize;

	if (size < 3)
		return 0;
	if (!init) {
		proto_settings(&settings);
		init = true;
	}
	/* The first two bytes choose the file size and where the read splits. */
	fsize = (uint64_t)data[0] * 1000;
	split = size > 3 ? data[1] % (size - 2) : 0;
	data += 2;
	size -= 2;
	buf = malloc(size);	/* exact size: ASan sees any overread */
	if (!buf)
		return 0;
	proto_parser_init(&p, &settings);
	p.data = &req;
	proto_reset(&req, buf);
	/* As on a connection: bytes arrive in two reads into one buffer. */
	for (int round = 0; round < 2; round++) {
		size_t avail = round ? size : split;

		memcpy(buf + fed, data + fed, avail - fed);
		while (fed < avail) {
			llhttp_errno_t e = llhttp_execute(&p, buf + fed, avail - fed);

			if (e == HPE_OK) {
				fed = avail;
				break;
			}
			if (e != HPE_PAUSED && e != HPE_PAUSED_UPGRADE)
				goto out;
			fed = (size_t)(llhttp_get_error_pos(&p) - buf);
			check_request(&req, fsize);
			if (e == HPE_PAUSED_UPGRADE || req.has_body)
				goto out;
			llhttp_resume(&p);
			proto_reset(&req, buf + fed);
		}
	}
out:
	free(buf);
	return 0;
}
