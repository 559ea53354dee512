/* SPDX-License-Identifier: MIT */
/*
 * Header field values, read in place from the request's spans: byte
 * ranges, HTTP dates (and the one the server writes), and the validators
 * of conditional requests (RFC 9110 13). Driven by the fuzz target with
 * proto.c.
 */
#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include "httpd.h"

/* ------------------------------------------------------------ ranges */

static const char *skip_ows(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static const char *number(const char *p, const char *end, uint64_t *v, bool *ok)
{
	*ok = p < end && isdigit((unsigned char)*p);
	*v = 0;
	while (p < end && isdigit((unsigned char)*p)) {
		uint64_t d = (uint64_t)(*p - '0');

		/* A position past 64 bits is still a position: saturate, so
		 * a first-pos that large is unsatisfiable (416, as nginx) and a
		 * last-pos or suffix that large means "to the end". One that
		 * fits is kept exact (18446744073709551614 is no 2^64 - 1). */
		if (*v > (UINT64_MAX - d) / 10)
			*v = UINT64_MAX;
		else
			*v = *v * 10 + d;
		p++;
	}
	return p;
}

int proto_ranges(struct span h, uint64_t size, struct range *r, int max)
{
	const char *p = h.p, *end = h.p + h.n;
	int n = 0, specs = 0;
	uint64_t bytes = 0;
	bool empty_suffix = false;

	if (h.n < 6 || strncasecmp(p, "bytes=", 6))
		return 0;
	p += 6;
	for (;;) {
		uint64_t a = 0, b = UINT64_MAX;
		bool ok, suffix = false;

		p = skip_ows(p, end);
		if (p < end && *p == ',') {	/* empty list elements are allowed */
			p++;
			continue;
		}
		if (p == end)
			break;
		if (*p == '-') {
			suffix = true;
			p = number(p + 1, end, &b, &ok);
			if (!ok)
				return 0;
		} else {
			p = number(p, end, &a, &ok);
			if (!ok || p == end || *p != '-')
				return 0;
			p++;
			if (p < end && isdigit((unsigned char)*p)) {
				p = number(p, end, &b, &ok);
				if (!ok || b < a)
					return 0;
			}
		}
		p = skip_ows(p, end);
		if (p < end && *p != ',')
			return 0;
		if (++specs > max)
			return 0;	/* too many: serve the whole file */
		if (suffix) {
			if (b == 0)
				continue;
			if (size == 0) {	/* all of nothing (RFC 9110 14.1.1) */
				empty_suffix = true;
				continue;
			}
			r[n++] = (struct range){ size > b ? size - b : 0, size - 1 };
		} else if (a < size) {
			r[n++] = (struct range){ a, b < size ? b : size - 1 };
		} else {
			continue;
		}
		bytes += r[n - 1].last - r[n - 1].first + 1;
	}
	if (specs == 0 || empty_suffix || bytes > size)
		return 0;
	return n ? n : -1;
}

/* ------------------------------------------------------------- dates */

static const char wday[7][4] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
static const char mon[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
				 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };

void proto_date(time_t t, char *out)
{
	char tmp[64];
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(tmp, sizeof(tmp), "%s, %02d %s %04d %02d:%02d:%02d GMT",
		 wday[tm.tm_wday], tm.tm_mday, mon[tm.tm_mon],
		 (tm.tm_year + 1900) % 10000, tm.tm_hour, tm.tm_min, tm.tm_sec);
	memcpy(out, tmp, 29);	/* always 29 characters for years 0-9999 */
	out[29] = 0;
}

static int month(const char *m)
{
	for (int i = 0; i < 12; i++)
		if (!strncmp(m, mon[i], 3))
			return i;
	return -1;
}

static int month_days(int m, int year)
{
	static const unsigned char days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;

	return days[m] + (m == 1 && leap);
}

/*
 * RFC 850's two-digit year (in tm_year): the one in this century, unless
 * the timestamp is then more than 50 years ahead, then the one a century
 * before (RFC 9110 5.6.7): on 29 Nov 2026, 31-Dec-76 is 1976 and
 * 01-Nov-76 is 2076.
 */
static int rfc850_year(struct tm *tm)
{
	struct tm now, c;
	time_t t = time(NULL), limit;

	if (!gmtime_r(&t, &now))
		return -1;
	tm->tm_year += (now.tm_year + 1900) / 100 * 100 - 1900;
	now.tm_year += 50;
	limit = timegm(&now);
	c = *tm;
	if (timegm(&c) > limit)
		tm->tm_year -= 100;
	return 0;
}

/* n digits at p, and nothing else: their value, or -1. */
static int digits(const char *p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/* "HH:MM:SS" at p (RFC 9110 5.6.7 time-of-day), into tm. */
static bool time_of_day(const char *p, struct tm *tm)
{
	return p[2] == ':' && p[5] == ':' && (tm->tm_hour = digits(p, 2)) >= 0 &&
	       (tm->tm_min = digits(p + 3, 2)) >= 0 && (tm->tm_sec = digits(p + 6, 2)) >= 0;
}

/* day-name (Sun), or day-name-l (Sunday) when full */
static bool day_name(const char *p, size_t n, bool full)
{
	static const char *const longname[7] = { "Sunday", "Monday", "Tuesday", "Wednesday",
						 "Thursday", "Friday", "Saturday" };

	for (int i = 0; i < 7; i++)
		if (full ? n == strlen(longname[i]) && !memcmp(p, longname[i], n) :
			   n == 3 && !memcmp(p, wday[i], 3))
			return true;
	return false;
}

/*
 * The three forms of RFC 9110 5.6.7, exactly as written there (fixed
 * digits, single spaces, case-sensitive names, "GMT"): a field that must
 * be an HTTP-date is ignored when it is not one (13.1.3), so "1 Jan" or
 * a lowercase month is no date.
 */
int proto_parse_date(struct span s, time_t *t)
{
	const char *p = s.p, *comma = s.n ? memchr(s.p, ',', s.n) : NULL;
	struct tm tm = { 0 };
	char m[4] = { 0 };
	bool two_digit = false;

	if (s.n == 29 && comma == p + 3 && day_name(p, 3, false) && p[4] == ' ' && p[7] == ' ' &&
	    p[11] == ' ' && p[16] == ' ' && p[25] == ' ' && !memcmp(p + 26, "GMT", 3) &&
	    (tm.tm_mday = digits(p + 5, 2)) >= 0 && (tm.tm_year = digits(p + 12, 4)) >= 0 &&
	    time_of_day(p + 17, &tm)) {
		/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
		memcpy(m, p + 8, 3);
		tm.tm_year -= 1900;
	} else if (comma && day_name(p, (size_t)(comma - p), true) && s.n - (size_t)(comma - p) == 24 &&
		   (p = comma)[1] == ' ' && p[4] == '-' && p[8] == '-' && p[11] == ' ' &&
		   p[20] == ' ' && !memcmp(p + 21, "GMT", 3) &&
		   (tm.tm_mday = digits(p + 2, 2)) >= 0 &&
		   (tm.tm_year = digits(p + 9, 2)) >= 0 && time_of_day(p + 12, &tm)) {
		/* rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT */
		memcpy(m, p + 5, 3);
		two_digit = true;
	} else if (s.n == 24 && !comma && day_name(p, 3, false) && p[3] == ' ' && p[7] == ' ' &&
		   p[10] == ' ' && p[19] == ' ' &&
		   (tm.tm_mday = p[8] == ' ' ? digits(p + 9, 1) : digits(p + 8, 2)) >= 0 &&
		   time_of_day(p + 11, &tm) && (tm.tm_year = digits(p + 20, 4)) >= 0) {
		/* asctime-date: Sun Nov  6 08:49:37 1994 */
		memcpy(m, p + 4, 3);
		tm.tm_year -= 1900;
	} else {
		return -1;
	}
	/* (a leap second is 23:59:60, carried into the next day) */
	if ((tm.tm_mon = month(m)) < 0 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 ||
	    tm.tm_sec > (tm.tm_hour == 23 && tm.tm_min == 59 ? 60 : 59) ||
	    (two_digit && rfc850_year(&tm) < 0))
		return -1;
	/* timegm would carry 31 Feb into March: not a date, so the header
	 * is ignored (RFC 9110 13.1.3: not a valid HTTP-date). */
	if (tm.tm_mday > month_days(tm.tm_mon, tm.tm_year + 1900))
		return -1;
	errno = 0;	/* -1 is also 1969-12-31 23:59:59 */
	*t = timegm(&tm);
	return *t == (time_t)-1 && errno ? -1 : 0;
}

/* ------------------------------------------------------------ validators */

/* Each entity-tag of a comma-separated list, W/ prefix dropped: 1 when
 * one is etag, 0 when none is, -1 when the list turns malformed first
 * (what follows matches nothing). */
static int etag_list_has(struct span list, const char *etag, bool weak_ok)
{
	const char *p = list.p, *end = list.p + list.n;
	size_t elen = strlen(etag);

	for (;;) {
		bool weak = false;
		const char *q, *tag;

		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		if (p == end)
			return 0;
		if (end - p >= 2 && p[0] == 'W' && p[1] == '/')
			weak = true, p += 2;
		if (p == end || *p != '"')
			return -1;
		tag = p;
		q = memchr(p + 1, '"', (size_t)(end - p - 1));
		if (!q)
			return -1;
		q++;
		/* a member ends at a comma or the end (RFC 9110 5.6.1):
		 * "etag"junk or two tags without one are malformed */
		for (p = q; p < end && (*p == ' ' || *p == '\t'); p++)
			;
		if (p < end && *p != ',')
			return -1;
		if ((size_t)(q - tag) == elen && !memcmp(tag, etag, elen) &&
		    (weak_ok || !weak))
			return 1;
	}
}

/* "*", or a list naming etag: If-None-Match (h) compares weakly, If-Match
 * strongly (RFC 9110 8.8.3.2). A list on several lines is the lines'
 * values joined by commas (RFC 9110 5.3), read line after line; "*"
 * stands alone, so with another line it is malformed. */
static bool etag_matches(const struct request *r, int h, const char *etag)
{
	const struct span *line = r->tags[h == H_IF_MATCH];
	const char *p = line[0].p, *end = line[0].p + line[0].n;
	int n = r->dup[h] < HTTPD_LIST_LINES ? r->dup[h] : HTTPD_LIST_LINES, m = 0;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (n == 1 && p < end && *p == '*') {	/* "*" alone, or malformed */
		for (p++; p < end; p++)
			if (*p != ' ' && *p != '\t')
				return false;
		return true;
	}
	for (int i = 0; i < n && !m; i++)
		m = etag_list_has(line[i], etag, h == H_IF_NONE_MATCH);
	return m == 1;
}

/* A date validator's one date: false when absent, given more than once
 * (a list, which RFC 9110 13.1.3 and 13.1.4 say to ignore) or not a date. */
static bool one_date(const struct request *r, int h, time_t *t)
{
	return r->hdr[h].p && r->dup[h] == 1 && !proto_parse_date(r->hdr[h], t);
}

int proto_preconditions(const struct request *r, const char *etag, time_t mtime)
{
	time_t ims, ius;
	/* no validators (a listing): only "*" matches, dates are not asked */
	bool dated = etag != NULL;

	if (!etag)
		etag = "";
	if (r->hdr[H_IF_MATCH].p) {
		if (!etag_matches(r, H_IF_MATCH, etag))
			return 412;
	} else if (dated && one_date(r, H_IF_UNMODIFIED_SINCE, &ius) && mtime > ius) {
		return 412;
	}
	if (r->method != HTTP_GET && r->method != HTTP_HEAD)
		return 200;
	if (r->hdr[H_IF_NONE_MATCH].p)
		return etag_matches(r, H_IF_NONE_MATCH, etag) ? 304 : 200;
	/* A date ahead of the server's clock is not one it gave: ignored
	 * (RFC 2616 14.25; Apache), or a file restored with an older mtime
	 * would stay 304 for a client holding a later date. */
	if (dated && one_date(r, H_IF_MODIFIED_SINCE, &ims) && mtime <= ims && ims <= time(NULL))
		return 304;
	return 200;
}

bool proto_if_range(const struct request *r, const char *etag, time_t mtime)
{
	struct span v = r->hdr[H_IF_RANGE];
	time_t t;

	if (!v.p)
		return true;
	if (r->dup[H_IF_RANGE] > 1)	/* which one? the whole file, then */
		return false;
	/* An entity-tag has a '"' among its first three characters
	 * (RFC 9110 13.1.5); a date never does. */
	if ((v.n && v.p[0] == '"') || (v.n >= 3 && !memcmp(v.p, "W/\"", 3)))
		return etag_list_has(v, etag, false) == 1 && v.p[0] == '"' &&
		       v.n == strlen(etag);	/* one strong tag, exactly */
	/* A date is a strong validator only when the file cannot have
	 * changed twice within its second, unseen (RFC 9110 8.8.2.2): one a
	 * minute old, as Apache decides; a newer one means the whole file. */
	return !proto_parse_date(v, &t) && t == mtime && time(NULL) - mtime >= 60;
}
