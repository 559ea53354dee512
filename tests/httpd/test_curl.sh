#!/bin/sh
# uaio-httpd seen by curl: whole files, HEAD, ranges, resume (-C -),
# If-Modified-Since (-z), HTTP/1.0, 405, a redirect followed (-L), two
# URLs on one connection, a traversal attempt (--path-as-is); then
# SIGTERM and exit status 0.
# Usage: test_curl.sh UAIO_HTTPD. Exit 0 pass, 1 fail, 77 skip.
BIN=$1
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "skip: no uaio-httpd at '$BIN'"; exit 77; }
command -v curl >/dev/null 2>&1 || { echo "skip: no curl"; exit 77; }
export LC_ALL=C

T=$(mktemp -d /tmp/uaio-httpd-curl-XXXXXX) || exit 1
pid=
cleanup() {
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

mkdir -p "$T/root/dir" || exit 1
head -c 3000000 /dev/urandom > "$T/root/data.bin"
printf '<p>dir index</p>\n' > "$T/root/dir/index.html"
printf 'TOP-SECRET-CURL\n' > "$T/secret.txt"
touch -d '2020-01-02 03:04:05 UTC' "$T/root/data.bin"

"$BIN" --port 0 --addr 127.0.0.1 "$T/root" 2>"$T/err" &
pid=$!
port=
i=0
while [ $i -lt 300 ]; do
  port=$(sed -n '1s|^.*: listening on http://127\.0\.0\.1:\([0-9][0-9]*\)/$|\1|p' "$T/err")
  [ -n "$port" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$T/err"; echo "FAIL: server exited at start"; exit 1; }
  sleep 0.1
  i=$((i + 1))
done
[ -n "$port" ] || { cat "$T/err"; echo "FAIL: no listening line"; exit 1; }
# Messages name the program as it was invoked (here by its path), as GNU tools do.
head -1 "$T/err" | grep -q "^$BIN: listening on " || { cat "$T/err"; echo "FAIL: the listening line does not start with '$BIN: '"; exit 1; }
U=http://127.0.0.1:$port
C="curl -sS --max-time 60"

# whole file
$C -o "$T/out" "$U/data.bin" && cmp -s "$T/out" "$T/root/data.bin" || fail "GET /data.bin differs"
# HEAD
$C -I "$U/data.bin" | tr -d '\r' > "$T/head"
grep -q '^HTTP/1.1 200' "$T/head" || fail "HEAD: no 200: $(head -1 "$T/head")"
grep -qi '^content-length: 3000000$' "$T/head" || fail "HEAD: Content-Length 3000000 missing"
grep -qi '^last-modified: Thu, 02 Jan 2020 03:04:05 GMT$' "$T/head" || fail "HEAD: Last-Modified wrong"
grep -qi '^etag: "' "$T/head" || fail "HEAD: no strong ETag"
grep -qi '^accept-ranges: bytes$' "$T/head" || fail "HEAD: no Accept-Ranges: bytes"
# a range
code=$($C -r 1000-1099 -o "$T/part" -w '%{http_code}' "$U/data.bin")
[ "$code" = 206 ] || fail "Range 1000-1099: status $code"
tail -c +1001 "$T/root/data.bin" | head -c 100 | cmp -s - "$T/part" || fail "Range 1000-1099: bytes differ"
# resume a partial download
head -c 1234567 "$T/root/data.bin" > "$T/resume"
$C -C - -o "$T/resume" "$U/data.bin" && cmp -s "$T/resume" "$T/root/data.bin" || fail "curl -C - resume differs"
# If-Modified-Since from a file's time
touch -d '2021-01-01 00:00:00 UTC' "$T/newer"
code=$($C -z "$T/newer" -o "$T/z" -w '%{http_code}' "$U/data.bin")
[ "$code" = 304 ] || fail "curl -z (newer date): status $code, 304 expected"
touch -d '2019-01-01 00:00:00 UTC' "$T/older"
code=$($C -z "$T/older" -o "$T/z" -w '%{http_code}' "$U/data.bin")
[ "$code" = 200 ] || fail "curl -z (older date): status $code, 200 expected"
# HTTP/1.0
$C --http1.0 -o "$T/out10" "$U/data.bin" && cmp -s "$T/out10" "$T/root/data.bin" || fail "HTTP/1.0 GET differs"
# other methods
code=$($C -X POST -d x -o /dev/null -w '%{http_code}' "$U/data.bin")
[ "$code" = 405 ] || fail "POST: status $code, 405 expected"
# a directory without its slash, followed
$C -L -o "$T/dir" "$U/dir" && grep -q 'dir index' "$T/dir" || fail "curl -L /dir did not reach /dir/index.html"
code=$($C -o /dev/null -w '%{http_code} %{redirect_url}' "$U/dir")
case $code in "301 $U/dir/") ;; *) fail "/dir: '$code', 301 to $U/dir/ expected" ;; esac
# two URLs, one connection
$C -o "$T/a" -o "$T/b" "$U/data.bin" "$U/dir/index.html" 2>"$T/two.err" &&
  cmp -s "$T/a" "$T/root/data.bin" && cmp -s "$T/b" "$T/root/dir/index.html" || fail "two URLs in one curl"
# traversal
for p in '/../secret.txt' '/%2e%2e/secret.txt' '/dir/../../secret.txt'; do
  code=$($C --path-as-is -o "$T/trav" -w '%{http_code}' "$U$p")
  grep -q TOP-SECRET "$T/trav" 2>/dev/null && fail "$p: served a file outside DIR"
  case $code in 400|403|404) ;; *) fail "$p: status $code, 400 or 404 expected" ;; esac
done

kill -TERM "$pid"
i=0
while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$pid" 2>/dev/null; then
  fail "server still running 30 s after SIGTERM"
else
  wait "$pid"
  rc=$?
  [ $rc = 0 ] || fail "exit status $rc after SIGTERM, 0 expected"
fi
pid=
[ $fails = 0 ] && { echo "test_curl: all checks passed"; exit 0; }
echo "test_curl: $fails check(s) failed"
sed -n '2,$p' "$T/err"
exit 1
