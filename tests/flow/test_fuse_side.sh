#!/bin/sh
# Which end a failure names when a FUSE file system's server dies under a
# flow (its files answer ENOTCONN, or ECONNABORTED for a request cut short): uaio-flow says the file's read or
# write, never the pipe at the other end (a direct splice, where a pipe
# fails only for a reader gone). Once the pipe's read, then the file's.
# Skips (77) without root, /dev/fuse or bindfs.
F=$1
[ "$(id -u)" -eq 0 ] && [ -c /dev/fuse ] && command -v bindfs >/dev/null ||
	{ echo "SKIP: needs root, /dev/fuse and bindfs"; exit 77; }
dir=$(mktemp -d /var/tmp/uaio-fuse-XXXXXX) || exit 1
cleanup() { umount -l "$dir/mnt" 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT
mkdir "$dir/src" "$dir/mnt"
head -c 16000000 /dev/zero >"$dir/src/big" || exit 1
fail() { echo "FAIL: $*"; cat "$dir/err"; exit 1; }

# Mounts bindfs over src; its server is killed once the flow has moved
# bytes (the pipe's reader's file, or the copy in src, not empty: never
# the last case's messages, which killed it before the flow's first
# read, under ASan), long before it ends (the rate limit keeps it going
# for 8 s).
gone_soon() {
	rm -f "$dir/got" "$dir/err" "$dir/src/out" "$dir/src/".out*
	: >"$dir/got"
	bindfs "$dir/src" "$dir/mnt" || { echo "SKIP: bindfs cannot mount here"; exit 77; }
	pid=$(pgrep -n -x bindfs)
	(i=0; while [ $i -lt 600 ] && [ ! -s "$dir/got" ] &&
			[ -z "$(find "$dir/src" -type f ! -name big -size +0)" ]; do
		sleep 0.1; i=$((i + 1)); done
	 kill -9 "$pid") &
}

for mode in auto pagecache; do
	gone_soon
	"$F" copy --mode=$mode --rate=2M "$dir/mnt/big" - 2>"$dir/err" | cat >"$dir/got"
	wait
	umount -l "$dir/mnt"
	grep -q "mnt/big: read: " "$dir/err" && ! grep -q -- " -: " "$dir/err" ||
		fail "copy --mode=$mode FUSEFILE - did not name the file's read"

	gone_soon
	head -c 16000000 /dev/zero |
		"$F" copy --mode=$mode --rate=2M - "$dir/mnt/out" 2>"$dir/err"
	rc=$?
	wait
	umount -l "$dir/mnt"
	[ $rc -eq 1 ] || fail "copy --mode=$mode - FUSEFILE exited $rc"
	# (ENOTCONN, or ECONNABORTED for a request the kill cut short)
	grep -q "mnt/out: " "$dir/err" && ! grep -q -- " -: " "$dir/err" ||
		fail "copy --mode=$mode - FUSEFILE did not name the file"
	echo "$mode: a FUSE source's and sink's failure named by the file"
done
exit 0
