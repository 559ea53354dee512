/* SPDX-License-Identifier: MIT */
/*
 * The library's version, for compile-time checks. Its minor number is the
 * newest symbol version node (UAIO_0.<minor> in src/libuaio.map): each
 * release that adds a function adds a node and raises the minor number.
 * CMakeLists.txt reads the project version from here.
 */
#ifndef UAIO_VERSION_H
#define UAIO_VERSION_H

#define UAIO_VERSION_MAJOR	0
#define UAIO_VERSION_MINOR	6
#define UAIO_VERSION_PATCH	0
#define UAIO_VERSION_STRING	"0.6.0"

/* True when the headers are at least major.minor (as liburing's
 * IO_URING_CHECK_VERSION, but true when new enough). */
#define UAIO_VERSION_AT_LEAST(major, minor)				\
	(UAIO_VERSION_MAJOR > (major) ||				\
	 (UAIO_VERSION_MAJOR == (major) && UAIO_VERSION_MINOR >= (minor)))

#endif
