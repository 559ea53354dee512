#!/usr/bin/env bash
# Installs uaio into a scratch prefix and builds examples/hello_loop.c
# against the installed copy through pkg-config (what a user would do).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(mktemp -d /tmp/uaio-prefix.XXXXXX)
trap 'rm -rf "$prefix"' EXIT
make -s install PREFIX="$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
test -e "$prefix/include/uaio/loop.h"
find "$prefix" -name "libuaio.so.0*" | grep -q . || { echo "libuaio.so.0 not installed"; exit 1; }
find "$prefix" -name "libuaio-posix.so.0*" | grep -q . || { echo "libuaio-posix.so.0 not installed"; exit 1; }
test -e "$prefix/include/uaio/aio.h" && test -e "$prefix/include/uaio/laio.h"
test -e "$prefix/share/man/man3/uaio_read.3" && test -e "$prefix/share/man/man7/uaio_posix.7"
cc -std=gnu17 -O2 examples/hello_loop.c $(pkg-config --cflags --libs uaio) -o "$prefix/hello_loop"
LD_LIBRARY_PATH="$(pkg-config --variable=libdir uaio)" "$prefix/hello_loop"
cc -std=gnu17 -O2 -static-libgcc examples/hello_loop.c $(pkg-config --cflags uaio) \
   "$(pkg-config --variable=libdir uaio)/libuaio.a" $(pkg-config --libs --static uaio | sed 's/-luaio//') -luring -o "$prefix/hello_loop_static"
# The static archive shows the API alone: no internal name is global.
leaked=$(nm -g --defined-only "$(pkg-config --variable=libdir uaio)/libuaio.a" | awk 'NF == 3 {print $3}' | grep -Ev '^(uaio|laio|ulio)_[^_]' || true)
[ -z "$leaked" ] || { echo "libuaio.a exports internal names:"; echo "$leaked" | head; exit 1; }
"$prefix/hello_loop_static"
echo "install check: ok (prefix $prefix)"
