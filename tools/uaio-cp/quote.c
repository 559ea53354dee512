/* SPDX-License-Identifier: MIT */
/*
 * Names in cp's messages (tools/common/tool_quote.c has the styles):
 * q() quoteaf, most messages and every -v line; ql() quote, the ACL
 * calls' "preserving permissions for", "setting permissions for", and
 * argument errors. Each returns one of CP_QUOTE_SLOTS buffers, reused in
 * turn, so that a message can quote several names.
 */
#include <stdlib.h>
#include "cp.h"

static const char *slot(struct cp_run *r, const char *s, enum tool_quoting how)
{
	struct tool_str *o = &r->quoted[r->quoted_next++ % CP_QUOTE_SLOTS];

	tool_quote_into(o, s, how);
	return o->p;
}

const char *q(struct cp_run *r, const char *s)
{
	return slot(r, s, TOOL_QUOTE_ALWAYS);
}

/* gnulib's quote: the quotes coreutils' catalog gives for ` and ' ("„"
 * and "“" in German), else the locale's default */
const char *ql(struct cp_run *r, const char *s)
{
	static const char lmsg[] = "`", rmsg[] = "'";
	const char *lq = _(lmsg), *rq = _(rmsg);
	struct tool_str *o = &r->quoted[r->quoted_next++ % CP_QUOTE_SLOTS];

	tool_quote_locale_into(o, s, lq == lmsg ? NULL : lq, rq == rmsg ? NULL : rq);
	return o->p;
}

void cp_quote_free(struct cp_run *r)
{
	for (unsigned k = 0; k < CP_QUOTE_SLOTS; k++)
		free(r->quoted[k].p);
}
