#!/bin/sh
# Each public header compiles on its own, first in its file, as C99 and
# GNU C17 with -pedantic -Werror, and as C++ (98 and 17) where a C++
# compiler is installed; and together, with the version macros checked.
# The minor version is the newest symbol version node of the map.
# usage: test_headers.sh CC INCLUDE_DIR SYMBOL_MAP
cc=$1 inc=$2 map=$3
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
try() {	# what, compiler, flags..., file
	what=$1; shift
	if ! "$@" -I"$inc" -Wall -Wextra -Werror -c -o "$t/o" 2>"$t/err"; then
		echo "FAIL: $what"; sed 's/^/  /' "$t/err"; fail=1
	fi
}
cxx=$(command -v c++ || command -v g++ || command -v clang++)
for h in "$inc"/uaio/*.h; do
	n=$(basename "$h")
	printf '#include <uaio/%s>\nint uaio_header_test;\n' "$n" >"$t/one.c"
	try "$n, C99" "$cc" -std=c99 -pedantic "$t/one.c"
	try "$n, GNU C17" "$cc" -std=gnu17 -pedantic "$t/one.c"
	if [ -n "$cxx" ]; then
		cp "$t/one.c" "$t/one.cc"
		try "$n, C++98" "$cxx" -std=c++98 -pedantic "$t/one.cc"
		try "$n, C++17" "$cxx" -std=c++17 -pedantic "$t/one.cc"
	fi
done
cat >"$t/all.c" <<'C'
#include <uaio/version.h>
#include <uaio/loop.h>
#include <uaio/aio.h>
#include <uaio/flow.h>
#include <uaio/laio.h>
#if !UAIO_VERSION_AT_LEAST(0, 6) || UAIO_VERSION_AT_LEAST(UAIO_VERSION_MAJOR, UAIO_VERSION_MINOR + 1)
#error "UAIO_VERSION_AT_LEAST is wrong"
#endif
/* laio_poll's timespec is the one <time.h> declares */
int uaio_header_poll(struct laio_completion *c, const struct timespec *ts)
{
	return laio_poll(c, 1, ts);
}
int uaio_bufs_max = UAIO_BUFS_MAX;
C
try "all headers, C99" "$cc" -std=c99 -pedantic "$t/all.c"
newest=$(sed -n 's/^UAIO_0\.\([0-9]*\) {.*/\1/p' "$map" | sort -n | tail -n 1)
minor=$(sed -n 's/^#define UAIO_VERSION_MINOR[[:space:]]*//p' "$inc/uaio/version.h")
if [ "$newest" != "$minor" ]; then
	echo "FAIL: UAIO_VERSION_MINOR is $minor, the map's newest node UAIO_0.$newest"; fail=1
fi
[ -z "$cxx" ] && echo "note: no C++ compiler, C++ not checked"
[ $fail = 0 ] && echo "PASS"
exit $fail
