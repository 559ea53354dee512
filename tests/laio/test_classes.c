/* SPDX-License-Identifier: MIT */
/*
 * docs/laio.md's class table is the one the table of calls makes
 * (src/laio/calls.c): what the documentation says each call does is what
 * laio_syscall does. Regenerate it with this program's --print.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "laio/laio_internal.h"

#define BEGIN "<!-- classes: generated from src/laio/calls.c (tests/laio/test_classes.c --print) -->\n"
#define END "<!-- /classes -->"

int main(int argc, char **argv)
{
	size_t n = laio__class_table(NULL, 0);
	char *want = malloc(n + 1), *doc, *b, *e;
	FILE *f;
	long len;

	CHECK(want);
	CHECK_EQ(laio__class_table(want, n + 1), n);
	if (argc > 1 && !strcmp(argv[1], "--print")) {
		fputs(want, stdout);
		return T_EXIT_PASS;
	}
	/* Every class has calls, and the calls named are real rows. */
	CHECK(strstr(want, "`read`") && strstr(want, "`openat`") &&
	      strstr(want, "`exit_group`") && strstr(want, "`splice`"));
	f = fopen(LAIO_DOC, "r");
	CHECK(f);
	CHECK(fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) > 0);
	rewind(f);
	doc = malloc((size_t)len + 1);
	CHECK(doc && fread(doc, 1, (size_t)len, f) == (size_t)len);
	doc[len] = 0;
	fclose(f);
	b = strstr(doc, BEGIN);
	e = b ? strstr(b, END) : NULL;
	if (!b || !e) {
		fprintf(stderr, "%s: no generated class table between the markers\n", LAIO_DOC);
		return T_EXIT_FAIL;
	}
	b += strlen(BEGIN);
	if ((size_t)(e - b) != n || memcmp(b, want, n)) {
		fprintf(stderr, "%s: the class table differs from src/laio/calls.c; "
			"regenerate it with %s --print\n", LAIO_DOC, argv[0]);
		return T_EXIT_FAIL;
	}
	free(doc);
	free(want);
	return T_EXIT_PASS;
}
