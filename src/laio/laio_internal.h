/* SPDX-License-Identifier: MIT */
/* LAIO engine internals shared with tests and benchmarks. */
#ifndef UAIO_LAIO_INTERNAL_H
#define UAIO_LAIO_INTERNAL_H

/* Background mechanism for pipes and sockets that would block
 * (environment LAIO_BG=op|poll, read when the engine starts). */
#define LAIO_MECH_OP	1	/* submit the call itself to the loop */
#define LAIO_MECH_POLL	2	/* readiness poll, then retry without blocking */
#define LAIO_MECH_DEFAULT LAIO_MECH_OP

/* Starts the engine if needed; -1 if it cannot start. */
int laio__mechanism(void);
const char *laio__backend_name(void);

#include <stddef.h>
/* The class table of docs/laio.md, in markdown, made from the table of
 * calls (src/laio/calls.c): its length; at most len bytes are written. */
size_t laio__class_table(char *buf, size_t len);

#endif
