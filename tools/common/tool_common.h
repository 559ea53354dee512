/* SPDX-License-Identifier: MIT */
/*
 * What the command-line tools (uaio-cp, uaio-flow, uaio-httpd) share: the
 * GNU way of ending output, and standard descriptors held open.
 */
#ifndef UAIO_TOOL_COMMON_H
#define UAIO_TOOL_COMMON_H

/* gnulib's close_stdout, as GNU tools end: 1 after "prog: write error"
 * when stdout did not take everything (a closed stdout is fine if
 * nothing was written to it), else 0. */
int tool_close_stdout(const char *prog);
/* 1 if a write to stderr failed (the exit status must say so), else 0 */
int tool_stderr_failed(void);

/* Descriptors 0 to n - 1 found closed are opened on /dev/null (0 for
 * reading, the others for writing), so that no file or socket the tool
 * opens takes their number and receives what was meant for them. The
 * mask of those it opened (bit fd), or -1 with errno set. */
int tool_hold_std_fds(int n);

/* Descriptors 0 to n - 1 found closed are held by a stand-in that cannot
 * be read or written: an O_PATH descriptor of an unbound socket (so
 * /dev/stdin and the like cannot be opened through it either), or, when
 * that cannot be made, /dev/null opened the wrong way round (0 for
 * writing, 1 and 2 for reading). No file the tool opens takes their
 * number, and reading stdin or writing stdout or stderr still fails
 * with EBADF, as on the closed descriptor (for a tool that must say
 * what GNU's says then). The mask as above. */
int tool_stand_in_std_fds(int n);

#endif
