/* SPDX-License-Identifier: MIT */
/*
 * A name quoted for a message as GNU's tools quote it (tool_quote.c has
 * the styles and what each GNU tool uses them for).
 */
#ifndef UAIO_TOOL_QUOTE_H
#define UAIO_TOOL_QUOTE_H

#include <stddef.h>

enum tool_quoting {
	TOOL_QUOTE_ALWAYS,	/* quoteaf: 'a b', "it's", 'a'$'\t''b' */
	TOOL_QUOTE_NEEDED,	/* quotef: a, 'a b' */
	TOOL_QUOTE_LOCALE,	/* quote: 'a b', or in UTF-8 with U+2018/U+2019 */
};

/* A growing string (p is NUL-terminated once anything was put). */
struct tool_str {
	char *p;
	size_t n, cap;
};

/* s quoted into o, replacing what o held; errno is kept. */
void tool_quote_into(struct tool_str *o, const char *s, enum tool_quoting how);
/* TOOL_QUOTE_LOCALE with the quotes a program's message catalog gives for
 * "`" and "'" (gnulib's gettext_quote); NULL for either: the default. */
void tool_quote_locale_into(struct tool_str *o, const char *s, const char *lq,
			    const char *rq);
/* s quoted, in a new string for the caller to free. */
char *tool_quote(const char *s, enum tool_quoting how);

#endif
