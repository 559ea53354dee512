/* SPDX-License-Identifier: MIT */
/*
 * Names in messages quoted as GNU's tools quote them (gnulib's quotearg),
 * so that scripts which read their diagnostics read ours:
 *
 *  TOOL_QUOTE_ALWAYS  "shell-escape-always" (quoteaf): 'a b', "it's", and
 *       a byte the locale cannot print as $'\t' or $'\303' spliced into
 *       the quotes: 'a'$'\t''b'. cp's messages and -v lines.
 *  TOOL_QUOTE_NEEDED  "shell-escape" (quotef): the same, but a name the
 *       shell would take as it is stays bare (cat's "cat: NAME: why").
 *  TOOL_QUOTE_LOCALE  "locale" (quote): 'x' in a single-byte locale and
 *       U+2018/U+2019 in UTF-8, with C escapes inside (\t, \303, and
 *       the closing quote as \'). cp's ACL and argument messages.
 *
 * Printable means printable in the current locale: in the C locale every
 * byte above 0x7f is escaped, in UTF-8 a valid printable character is
 * kept whole and each byte of an invalid sequence is escaped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ctype.h>
#include <langinfo.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>
#include "tool_quote.h"

static void put(struct tool_str *o, char c)
{
	if (o->n + 1 >= o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 256;
		char *p = realloc(o->p, cap);

		if (!p)
			abort();	/* a message cannot be printed without it */
		o->p = p;
		o->cap = cap;
	}
	o->p[o->n++] = c;
	o->p[o->n] = 0;
}

static void puts_(struct tool_str *o, const char *s)
{
	while (*s)
		put(o, *s++);
}

/* The escape letter C uses for c, or 0. */
static char c_escape(unsigned char c)
{
	switch (c) {
	case '\a': return 'a';
	case '\b': return 'b';
	case '\f': return 'f';
	case '\n': return 'n';
	case '\r': return 'r';
	case '\t': return 't';
	case '\v': return 'v';
	default: return 0;
	}
}

/* Length of the character at s (1 for a byte the locale cannot take),
 * and whether it prints. */
static size_t char_at(const char *s, bool *printable)
{
	unsigned char c = (unsigned char)*s;
	mbstate_t st;
	wchar_t w;
	size_t n;

	if (MB_CUR_MAX == 1) {
		*printable = isprint(c) != 0;
		return 1;
	}
	memset(&st, 0, sizeof(st));
	n = mbrtowc(&w, s, strlen(s), &st);
	if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
		*printable = false;
		return 1;
	}
	*printable = iswprint((wint_t)w) != 0;
	return n;
}

/* Characters that keep a name with a single quote fit for "...". */
static bool dq_safe(const char *s, size_t i, size_t len, bool printable)
{
	unsigned char c = (unsigned char)s[i];

	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || strchr("%+,-./:]_' @", c))
		return c != '@' || printable;
	if (c == '#' || c == '~')
		return i == 0;
	if (c == '{' || c == '}')
		return len == 1;
	if (c < 0x80)
		return false;
	return printable;
}

static void octal(struct tool_str *o, unsigned char c)
{
	put(o, '\\');
	put(o, (char)('0' + (c >> 6)));
	put(o, (char)('0' + ((c >> 3) & 7)));
	put(o, (char)('0' + (c & 7)));
}

/* The inside of shell-escape-always quotes for s[0, len), starting with
 * an escape (in_esc) pending or not; whether one is pending at the end. */
static bool quote_shell_body(struct tool_str *o, const char *s, size_t len, bool in_esc)
{
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		char esc = c_escape(c);
		bool pr = true;
		size_t n = esc || c == '\\' || c == '\'' ? 1 : char_at(s + i, &pr);

		if (esc || (c != '\\' && c != '\'' && !pr)) {
			/* $'...' for what the shell's quotes cannot hold */
			if (!in_esc)
				puts_(o, "'$'");
			in_esc = true;
			if (esc) {
				put(o, '\\');
				put(o, esc);
			} else {
				for (size_t k = 0; k < n; k++)
					octal(o, (unsigned char)s[i + k]);
			}
			i += n;
			continue;
		}
		if (c == '\'') {
			/* closes whatever quotes are open, $'...' too */
			puts_(o, "'\\''");
		} else {
			if (in_esc)
				puts_(o, "''");
			for (size_t k = 0; k < n; k++)
				put(o, s[i + k]);
		}
		in_esc = false;
		i += n;
	}
	return in_esc;
}

/* shell-escape-always */
static void quote_shell(struct tool_str *o, const char *s)
{
	size_t len = strlen(s);
	bool squote = false, dq_ok = true, pending = false;

	for (size_t i = 0; i < len;) {
		bool pr;
		size_t n = char_at(s + i, &pr);

		if (s[i] == '\'')
			squote = true;
		if (!dq_safe(s, i, len, pr))
			dq_ok = false;
		i += n;
	}
	if (squote && dq_ok) {
		put(o, '"');
		puts_(o, s);
		put(o, '"');
		return;
	}
	if (squote) {
		/* gnulib measures a name with a quote in a dry pass first, and
		 * writes it in a second that starts in the first's last state:
		 * a name that ends inside $'...' leaves an escape pending, so
		 * the first character is written as if one were open (x, ',
		 * y, \001 comes out of cp 9.1 with an extra '' after the first
		 * quote; \001, a, ', b, \001 without its $'). */
		struct tool_str dry = { 0 };

		pending = quote_shell_body(&dry, s, len, false);
		free(dry.p);
	}
	put(o, '\'');
	quote_shell_body(o, s, len, pending);
	put(o, '\'');
}

/* locale */
static void quote_locale(struct tool_str *o, const char *s, const char *lq, const char *rq)
{
	bool utf8 = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
	size_t rlen, len = strlen(s);

	if (!lq)
		lq = utf8 ? "\xe2\x80\x98" : "'";
	if (!rq)
		rq = utf8 ? "\xe2\x80\x99" : "'";
	rlen = strlen(rq);

	puts_(o, lq);
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		char esc = c_escape(c);
		bool pr;
		size_t n;

		if (esc || c == '\\') {
			put(o, '\\');
			put(o, esc ? esc : '\\');
			i++;
			continue;
		}
		n = char_at(s + i, &pr);
		if (!pr) {
			for (size_t k = 0; k < n; k++)
				octal(o, (unsigned char)s[i + k]);
		} else {
			if (strncmp(s + i, rq, rlen) == 0)
				put(o, '\\');
			for (size_t k = 0; k < n; k++)
				put(o, s[i + k]);
		}
		i += n;
	}
	puts_(o, rq);
}

/* Whether quotef leaves s bare: nothing a shell would read otherwise
 * (coreutils quotes ':' too, which would read as the message's own). */
static bool bare_ok(const char *s)
{
	size_t len = strlen(s);

	if (!len)
		return false;
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		bool pr;
		size_t n = char_at(s + i, &pr);

		if (!pr || strchr(" !\"$&'()*:;<=>?[\\^`|", c) ||
		    ((c == '#' || c == '~') && i == 0) ||
		    ((c == '{' || c == '}') && len == 1))
			return false;
		i += n;
	}
	return true;
}

void tool_quote_locale_into(struct tool_str *o, const char *s, const char *lq,
			    const char *rq)
{
	int saved = errno;

	if (o->p)
		o->p[0] = 0;
	o->n = 0;
	quote_locale(o, s, lq, rq);
	errno = saved;
}

void tool_quote_into(struct tool_str *o, const char *s, enum tool_quoting how)
{
	int saved = errno;	/* callers pass errno beside a name: mbrtowc sets it */

	if (o->p)
		o->p[0] = 0;
	o->n = 0;
	if (how == TOOL_QUOTE_LOCALE)
		quote_locale(o, s, NULL, NULL);
	else if (how == TOOL_QUOTE_NEEDED && bare_ok(s))
		puts_(o, s);
	else
		quote_shell(o, s);
	errno = saved;
}

char *tool_quote(const char *s, enum tool_quoting how)
{
	struct tool_str o = { 0 };

	tool_quote_into(&o, s, how);
	return o.p;
}
