#!/bin/sh
# uaio-flow end to end. Exit 0 pass, 1 fail (network parts between
# namespaces when root and `ip netns` work, else over loopback: said below).
F=$1
dir=$(mktemp -d /var/tmp/uaio-flow-sh-XXXXXX) || exit 1
mnt=
pids=
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null; done
  [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
  [ -n "$mnt" ] && rmdir "$mnt"
  for ns in ufa ufb ufc; do ip netns del $ns 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_rc() { want=$1; shift; "$@" >"$dir/out" 2>"$dir/err"; rc=$?; [ $rc -eq "$want" ] || { cat "$dir/err"; fail "$* exited $rc, not $want"; }; }

head -c 20000000 /dev/urandom >"$dir/src" || exit 1
printf 'x' >"$dir/one"
: >"$dir/empty"

# Copies, every mode, odd sizes.
for m in auto kbuf pagecache mmap; do
  for f in src one empty; do
    expect_rc 0 "$F" copy --mode=$m "$dir/$f" "$dir/$f.$m"
    cmp -s "$dir/$f" "$dir/$f.$m" || fail "copy --mode=$m $f differs"
  done
done
echo "copy: every mode byte-exact"
chmod 640 "$dir/one"
expect_rc 0 "$F" copy "$dir/one" "$dir/one.mode"
[ "$(stat -c %a "$dir/one.mode")" = 640 ] || fail "copy did not keep mode 640 (umask 022)"
# Into a directory, and stdin to stdout.
mkdir "$dir/d"
expect_rc 0 "$F" copy "$dir/src" "$dir/d"
cmp -s "$dir/src" "$dir/d/src" || fail "copy into a directory"
"$F" copy - - <"$dir/src" | cmp -s - "$dir/src" || fail "copy - - (pipes)"
"$F" copy - "$dir/fromstdin" <"$dir/src" && cmp -s "$dir/src" "$dir/fromstdin" || fail "copy - FILE"
# --stats: one line with bytes, seconds, MB/s and CPU seconds.
expect_rc 0 "$F" copy --stats -c 1M "$dir/src" "$dir/s2"
grep -Eq "^$F: 20000000 bytes in [0-9.]+ s, [0-9.]+ MB/s, CPU [0-9.]+ s" "$dir/err" || { cat "$dir/err"; fail "--stats line"; }
# ... that stderr cannot take: status 1, as dd's (gnulib's close_stdout)
if [ -w /dev/full ]; then
  "$F" copy --stats "$dir/one" "$dir/s3" 2>/dev/full; rc=$?
  [ $rc = 1 ] || fail "--stats 2>/dev/full: exit $rc, not 1"
  "$F" copy --stats "$dir/one" "$dir/s3" 2>&-; rc=$?
  [ $rc = 1 ] || fail "--stats 2>&-: exit $rc, not 1"
  rm -f "$dir/s3"
fi
# A sparse file keeps its holes (as cp --sparse=auto), in every mode; one
# that is all hole, or ends in one, keeps its size.
truncate -s 24M "$dir/sparse"
head -c 1048576 "$dir/src" | dd of="$dir/sparse" bs=1M seek=5 conv=notrunc status=none
head -c 3000 "$dir/src" | dd of="$dir/sparse" bs=1M seek=15 conv=notrunc status=none
for m in auto kbuf pagecache mmap; do
  rm -f "$dir/sparse.$m"
  expect_rc 0 "$F" copy --mode=$m "$dir/sparse" "$dir/sparse.$m"
  cmp -s "$dir/sparse" "$dir/sparse.$m" || fail "sparse copy, mode $m: content differs"
  [ "$(stat -c %b "$dir/sparse.$m")" -le $(( $(stat -c %b "$dir/sparse") + 64 )) ] ||
    fail "sparse copy, mode $m: holes filled ($(stat -c %b "$dir/sparse.$m") blocks, source $(stat -c %b "$dir/sparse"))"
  rm -f "$dir/sparse.$m"
done
# to -, whose offset the shell shares (and O_APPEND): in order, whole
{ "$F" copy "$dir/sparse" -; printf TRAILER; } >"$dir/sparse.out"
head -c "$(stat -c %s "$dir/sparse")" "$dir/sparse.out" | cmp -s - "$dir/sparse" &&
  [ "$(tail -c 7 "$dir/sparse.out")" = TRAILER ] || fail "sparse copy to -: out of order"
: >"$dir/sparse.out"; "$F" copy "$dir/sparse" - >>"$dir/sparse.out"
cmp -s "$dir/sparse" "$dir/sparse.out" || fail "sparse copy to - (>>): content differs"
rm -f "$dir/sparse.out"
# from - (the shell's offset): from where it is, and left at the end
{ dd of=/dev/null bs=1M count=6 status=none; "$F" copy - "$dir/sparse.out"; cat | wc -c >"$dir/rest"; } <"$dir/sparse"
tail -c +$((6 * 1048576 + 1)) "$dir/sparse" | cmp -s - "$dir/sparse.out" && [ "$(cat "$dir/rest")" = 0 ] ||
  fail "sparse copy from -: not from its offset, or the offset not left at the end"
rm -f "$dir/sparse.out" "$dir/rest"
truncate -s 5M "$dir/hole"
expect_rc 0 "$F" copy "$dir/hole" "$dir/hole.c"
[ "$(stat -c %s.%b "$dir/hole.c")" = 5242880.0 ] || fail "all-hole copy: $(stat -c %s.%b "$dir/hole.c")"
rm -f "$dir/hole" "$dir/hole.c" "$dir/sparse"
echo "copy: modes, directories, pipes, --stats, holes ok"

# An existing file is replaced as cp leaves it: its permission bits (and
# owner, as root), and a name linked elsewhere gets the bytes there too.
printf 'old\n' >"$dir/priv"; chmod 600 "$dir/priv"; ln "$dir/priv" "$dir/priv.link"
printf 'old\n' >"$dir/single"; chmod 600 "$dir/single"
[ "$(id -u)" = 0 ] && chown 65534:65534 "$dir/single"
expect_rc 0 "$F" copy "$dir/one" "$dir/priv"
expect_rc 0 "$F" copy "$dir/one" "$dir/single"
[ "$(stat -c %a "$dir/single")" = 600 ] || fail "replacing widened mode 600 to $(stat -c %a "$dir/single")"
[ "$(id -u)" != 0 ] || [ "$(stat -c %u:%g "$dir/single")" = 65534:65534 ] || fail "replacing lost the owner"
cmp -s "$dir/one" "$dir/priv.link" || fail "a hard-linked destination was not written in place"
[ "$(stat -c %a%h "$dir/priv")" = 6002 ] || fail "a hard-linked destination lost its mode or link"
# set-user-ID and set-group-ID stay, as under cp
printf 'old\n' >"$dir/suid"; chmod 6755 "$dir/suid"
expect_rc 0 "$F" copy "$dir/one" "$dir/suid"
[ "$(stat -c %a "$dir/suid")" = 6755 ] || fail "replacing made mode 6755 $(stat -c %a "$dir/suid")"
cmp -s "$dir/one" "$dir/suid" || fail "the set-user-ID file differs"
# also where the writes clear them (no CAP_FSETID): an owner not root
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  chmod 711 "$dir"; mkdir "$dir/nob"; cp "$dir/one" "$dir/nob/one"; printf 'old file\n' >"$dir/nob/suid"
  chown -R 65534:65534 "$dir/nob"; chmod 6755 "$dir/nob/suid"	# (chown clears them)
  setpriv --reuid=65534 --regid=65534 --clear-groups "$F" copy "$dir/nob/one" "$dir/nob/suid" ||
    fail "copy over a set-user-ID file as its owner (not root) failed"
  [ "$(stat -c %a "$dir/nob/suid")" = 6755 ] || fail "replacing as its owner made mode 6755 $(stat -c %a "$dir/nob/suid")"
  cmp -s "$dir/one" "$dir/nob/suid" || fail "the set-user-ID file replaced by its owner differs"
  chmod 700 "$dir"
fi
# An access ACL stays too: such a file is written in place.
printf 'old\n' >"$dir/acl"
if command -v setfacl >/dev/null && setfacl -m u:65534:r "$dir/acl" 2>/dev/null; then
  expect_rc 0 "$F" copy "$dir/one" "$dir/acl"
  getfacl -p "$dir/acl" 2>/dev/null | grep -q '^user:nobody:r--' || fail "replacing lost the ACL"
  cmp -s "$dir/one" "$dir/acl" || fail "the file with an ACL differs"
else
  echo "ACL kept: skipped (no setfacl or no ACLs on $dir)"
fi
# So do other extended attributes (user.*).
printf 'old\n' >"$dir/xa"
if command -v setfattr >/dev/null && setfattr -n user.uaio -v kept "$dir/xa" 2>/dev/null; then
  expect_rc 0 "$F" copy "$dir/one" "$dir/xa"
  [ "$(getfattr --only-values -n user.uaio "$dir/xa" 2>/dev/null)" = kept ] || fail "replacing lost a user.* attribute"
  cmp -s "$dir/one" "$dir/xa" || fail "the file with an attribute differs"
else
  echo "xattrs kept: skipped (no setfattr or no user xattrs on $dir)"
fi
# The same file, under its name or another link: refused as cp refuses it.
expect_rc 1 "$F" copy "$dir/priv" "$dir/priv.link"
grep -qx "$F: '$dir/priv' and '$dir/priv.link' are the same file" "$dir/err" || { cat "$dir/err"; fail "same-file message"; }
# Into a directory, the name shown is the one made in it, as cp shows it.
expect_rc 1 "$F" copy "$dir/priv" "$dir/"
grep -qx "$F: '$dir/priv' and '$dir/priv' are the same file" "$dir/err" || { cat "$dir/err"; fail "same-file message into a directory"; }
cmp -s "$dir/one" "$dir/priv" || fail "a same-file copy changed the file"
# Standard input that is the file itself, written in place (a second
# link): refused, the file whole (it was emptied, exit 0).
printf 'hello world\n' >"$dir/g"; ln "$dir/g" "$dir/g2"
expect_rc 1 "$F" copy - "$dir/g" <"$dir/g"
grep -qx "$F: '-' and '$dir/g' are the same file" "$dir/err" || { cat "$dir/err"; fail "same-file message, stdin"; }
[ "$(cat "$dir/g")" = "hello world" ] || fail "copy - FILE < FILE changed the file"
# A device onto itself too, as cp's "'/dev/null' and '/dev/null' are the
# same file".
expect_rc 1 "$F" copy /dev/null /dev/null
grep -qx "$F: '/dev/null' and '/dev/null' are the same file" "$dir/err" || { cat "$dir/err"; fail "same-file message, a device"; }
# sysfs says 4096 bytes and refuses mmap (ENODEV): mmap mode reads it.
s=/sys/devices/system/cpu/online
if [ -r $s ]; then
  expect_rc 0 "$F" --mode=mmap copy $s -
  cat $s | cmp -s - "$dir/out" || fail "mmap mode: $s differs from cat's"
fi
# Standard output the source itself, appended to: refused as cat refuses
# it (the copy read what it wrote until the disk was full).
cp "$dir/one" "$dir/self"
n=$(wc -c <"$dir/self")
timeout 20 "$F" copy "$dir/self" - >>"$dir/self" 2>"$dir/err"; rc=$?
[ $rc -eq 1 ] || fail "copy F - >>F exited $rc, not 1"
grep -q "input file is output file" "$dir/err" || { cat "$dir/err"; fail "self-copy message"; }
[ "$(wc -c <"$dir/self")" -eq "$n" ] || fail "copy F - >>F changed F"
echo "copy: a replaced file keeps its mode, owner and links; the same file is refused"

# GNU conventions.
expect_rc 0 "$F" --help
grep -q "^Usage: $F copy SRC DST" "$dir/out" || fail "--help text"
expect_rc 0 "$F" --version
expect_rc 2 "$F"
expect_rc 2 "$F" copy "$dir/src"
expect_rc 2 "$F" frobnicate a b
expect_rc 2 "$F" copy a b 'c d' e
grep -qx "$F: copy: extra operand 'c d'" "$dir/err" || { cat "$dir/err"; fail "extra operand not named"; }
expect_rc 2 "$F" --mode=fast copy a b
grep -q "^$F: invalid mode 'fast'" "$dir/err" || fail "bad mode message"
# Messages name the program as it was invoked, as GNU tools do.
ln -s "$F" "$dir/myflow"
expect_rc 2 "$dir/myflow" --mode=fast copy a b
grep -q "^$dir/myflow: invalid mode 'fast' " "$dir/err" || { cat "$dir/err"; fail "message under another name"; }
grep -qx "Try '$dir/myflow --help' for more information." "$dir/err" || { cat "$dir/err"; fail "hint under another name"; }
expect_rc 0 "$dir/myflow" --help
grep -qx "  or:  $dir/myflow send FILE HOST:PORT \[OPTION\]\.\.\." "$dir/out" || { cat "$dir/out"; fail "usage under another name"; }
# A file's name in an error, as cat prints it (quotef): bare when the
# shell would take it as it is, else quoted.
expect_rc 1 "$F" copy "$dir/no such" "$dir/x"
grep -qx "$F: '$dir/no such': No such file or directory" "$dir/err" || { cat "$dir/err"; fail "a name with a space, unquoted"; }
expect_rc 1 "$F" copy "$dir/nosuch" "$dir/x"
grep -qx "$F: $dir/nosuch: No such file or directory" "$dir/err" || { cat "$dir/err"; fail "a plain name, quoted"; }
# printable as the locale prints it, as cat's: é stays é in UTF-8 (it was
# $'\303\251' whatever the locale, setlocale never called)
if [ "$(LC_ALL=C.UTF-8 locale charmap 2>/dev/null)" = UTF-8 ]; then
  e=$(printf '\303\251')
  expect_rc 1 env LC_ALL=C.UTF-8 "$F" copy "$dir/$e x" "$dir/x"
  grep -qx "$F: '$dir/$e x': No such file or directory" "$dir/err" || { cat "$dir/err"; fail "a UTF-8 name in C.UTF-8, escaped"; }
  expect_rc 1 env LC_ALL=C "$F" copy "$dir/$e x" "$dir/x"
  grep -qx "$F: '$dir/'\$'\\\\303\\\\251'' x': No such file or directory" "$dir/err" || { cat "$dir/err"; fail "a UTF-8 name in C, not escaped"; }
fi
# a long name whole (a stack buffer of 4 bytes a byte of PATH_MAX cut it
# short, without its closing quote: quoted, \001a takes 10 bytes for 2)
n=$(awk 'BEGIN { for (i = 0; i < 3000; i++) printf "\001a" }')
q=$(awk -v d="$dir" 'BEGIN { printf "\047%s/", d; for (i = 0; i < 3000; i++) printf "\047$\047\\001\047\047a"; printf "\047" }')
expect_rc 1 env LC_ALL=C "$F" copy "$dir/$n" "$dir/x"
printf '%s: %s: File name too long\n' "$F" "$q" | cmp -s - "$dir/err" || { head -c 300 "$dir/err"; fail "a long name, cut"; }
expect_rc 2 "$F" --chunk=abc copy a b
expect_rc 2 "$F" --chunk=4iB copy a b
expect_rc 2 "$F" --rate=1Bi copy a b
# Port 0 (a random port nobody could name) and "+80" are no ports.
expect_rc 2 "$F" recv 0 "$dir/x"
expect_rc 2 "$F" send "$dir/one" 127.0.0.1:0
expect_rc 2 "$F" send "$dir/one" 127.0.0.1:+80
# A peer without a host is no HOST:PORT (":P" connected to this machine,
# "[]:P" was a lookup's failure, exit 1).
expect_rc 2 "$F" send "$dir/one" :9611
expect_rc 2 "$F" send "$dir/one" '[]:9611'
# An IPv6 address outside brackets is no HOST:PORT (::1 was a lookup of
# host "::", port 1, that failed with exit 1).
expect_rc 2 "$F" send "$dir/one" ::1
expect_rc 2 "$F" send "$dir/one" ::1:9611
expect_rc 2 "$F" recv ::1:9611 "$dir/x"
# A bad address is bad usage before any file is opened (a missing file,
# a FIFO that would block the open), as recv checks its address first.
expect_rc 2 "$F" send "$dir/nope" 127.0.0.1
grep -q "bad address" "$dir/err" || { cat "$dir/err"; fail "send: bad address not said first"; }
mkfifo "$dir/fifo"
expect_rc 2 timeout 10 "$F" send "$dir/fifo" 127.0.0.1
expect_rc 2 timeout 10 "$F" send "$dir/fifo" 127.0.0.1:nosuchservice
expect_rc 1 "$F" copy "$dir/nope" "$dir/x"
grep -qx "$F: $dir/nope: No such file or directory" "$dir/err" || { cat "$dir/err"; fail "missing source message"; }
expect_rc 1 "$F" copy --mode=mmap - "$dir/x" </dev/null
echo "usage and errors: ok"

# Early exits leave no temporary file; sizes and ports that do not fit
# are refused (were wrapped); a bad peer is refused before any wait.
mkdir "$dir/e"
expect_rc 2 "$F" recv bogus:: "$dir/e/o"
expect_rc 2 "$F" recv 99999 "$dir/e/o"
echo x | "$F" copy --mode=mmap - "$dir/e/o" 2>/dev/null
[ -z "$(ls -A "$dir/e")" ] || { ls -la "$dir/e"; fail "files left by early exits"; }
# The same refusal into an existing file written in place (another name
# links it) leaves it as it was: it was emptied before the refusal.
printf 'kept\n' >"$dir/inplace"; ln "$dir/inplace" "$dir/inplace.link"
echo x | expect_rc 1 "$F" copy --mode=mmap - "$dir/inplace"
grep -qx "$F: mode mmap cannot move - to $dir/inplace" "$dir/err" || { cat "$dir/err"; fail "refused mmap copy message"; }
[ "$(cat "$dir/inplace.link")" = kept ] || fail "a refused mmap copy emptied the file written in place"
# A file source refused for want of memory (a 1 GiB chunk under a small
# address space) leaves it whole too (it was emptied first, for a clone).
printf 'kept\n' >"$dir/inplace"
(ulimit -v 1000000 && exec "$F" copy -m kbuf --chunk=1G "$dir/one" "$dir/inplace") 2>"$dir/err" && fail "a 1 GiB kbuf chunk under ulimit -v 1000000 was accepted"
[ "$(cat "$dir/inplace.link")" = kept ] || { cat "$dir/err"; fail "a copy refused for memory emptied the file written in place"; }
# Emptied, then written: shorter and longer sources, every mode.
for m in auto kbuf pagecache mmap; do
  head -c 3000000 "$dir/src" >"$dir/inplace"
  expect_rc 0 "$F" copy --mode=$m "$dir/one" "$dir/inplace"
  cmp -s "$dir/one" "$dir/inplace.link" || fail "mode $m: a shorter copy over a file written in place kept its old tail"
  expect_rc 0 "$F" copy --mode=$m "$dir/src" "$dir/inplace"
  cmp -s "$dir/src" "$dir/inplace.link" || fail "mode $m: a longer copy over a file written in place differs"
  expect_rc 0 "$F" copy --mode=$m "$dir/empty" "$dir/inplace"
  [ ! -s "$dir/inplace.link" ] || fail "mode $m: an empty copy over a file written in place left bytes"
done
rm -f "$dir/inplace" "$dir/inplace.link"
# An empty DST names nothing: refused before a byte moves (it went to a
# temporary in ., and only the rename failed). mmap cannot read a
# connection: refused before listening (recv accepted a peer first,
# whose send then ended well).
expect_rc 1 "$F" copy "$dir/one" ""
grep -qx "$F: '': No such file or directory" "$dir/err" || { cat "$dir/err"; fail "empty DST message"; }
[ -z "$(ls -A . | grep '^\..*uaio-')" ] || fail "empty DST left a temporary in ."
expect_rc 1 timeout 10 "$F" recv --mode=mmap 127.0.0.1:1 "$dir/e/o"
grep -qx "$F: mode mmap cannot move a connection" "$dir/err" || { cat "$dir/err"; fail "recv --mode=mmap message"; }
expect_rc 1 timeout 10 "$F" forward --mode=mmap 127.0.0.1:1 127.0.0.1:2
expect_rc 2 "$F" --chunk=17179869185G copy a b
expect_rc 2 "$F" --rate=' -1' copy a b
expect_rc 2 timeout 10 "$F" forward 0 nohostport
# mmap of a file that says size 0 but has bytes (/proc) copies them.
expect_rc 0 "$F" copy --mode=mmap /proc/self/status "$dir/e/st"
[ -s "$dir/e/st" ] || fail "copy --mode=mmap /proc/self/status copied nothing"
rm -f "$dir/e/st"
# A signal while waiting for a peer: "interrupted", then death by that
# signal (a shell loop around it stops, as around dd), nothing left.
# (A port another test holds makes recv exit at once: the next is tried.)
sport=$((30000 + $$ % 20000)); sp=
for try in 1 2 3 4 5 6 7 8 9 10; do
  sport=$((sport + 1))
  "$F" recv "127.0.0.1:$sport" "$dir/e/o" 2>"$dir/e.err" & sp=$!; pids="$pids $sp"
  i=0
  while [ $i -lt 200 ] && kill -0 $sp 2>/dev/null && ! ss -ltnp 2>/dev/null | grep -q "pid=$sp,"; do
    i=$((i + 1)); sleep 0.05
  done
  kill -0 $sp 2>/dev/null && break
  wait $sp; sp=
done
[ -n "$sp" ] || fail "recv could not listen on any of 10 ports"
kill -TERM $sp; wait $sp; rc=$?
[ $rc -eq 143 ] || fail "recv waiting for a peer, SIGTERM: exit $rc, not 143 (killed by it, as dd)"
grep -qx "$F: interrupted" "$dir/e.err" || { cat "$dir/e.err"; fail "no 'interrupted' after SIGTERM"; }
[ -z "$(ls -A "$dir/e")" ] || { ls -la "$dir/e"; fail "temporary left after SIGTERM"; }
# The same into an existing file written in place (another name links
# it): the wait ends with the file as it was, not emptied.
printf 'kept\n' >"$dir/e/kept"; ln "$dir/e/kept" "$dir/kept.link"
"$F" recv "127.0.0.1:$sport" "$dir/e/kept" 2>"$dir/e.err" & sp=$!; pids="$pids $sp"
i=0
while [ $i -lt 200 ] && kill -0 $sp 2>/dev/null && ! ss -ltnp 2>/dev/null | grep -q "pid=$sp,"; do
  i=$((i + 1)); sleep 0.05
done
kill -0 $sp 2>/dev/null || fail "recv into an existing file could not listen again on $sport"
kill -TERM $sp; wait $sp
[ "$(cat "$dir/kept.link")" = kept ] || fail "recv interrupted before any peer emptied the file written in place"
rm -f "$dir/e/kept" "$dir/kept.link"
# Every signal that would end it cleans up first: a copy cut by SIGALRM
# or SIGUSR1 leaves no temporary behind (sh starts it with QUIT ignored).
for sig in ALRM:14 USR1:10; do
  num=${sig#*:}; sig=${sig%:*}
  "$F" -r 4M copy "$dir/src" "$dir/e/sig" 2>"$dir/err" & qp=$!; pids="$pids $qp"
  i=0; while [ $i -lt 200 ] && [ -z "$(ls -A "$dir/e")" ]; do i=$((i + 1)); sleep 0.05; done
  kill -$sig $qp; wait $qp; rc=$?
  want=$((128 + num))
  [ $rc -eq $want ] && [ -z "$(ls -A "$dir/e")" ] ||
    { cat "$dir/err"; ls -la "$dir/e"; fail "SIG$sig part way: exit $rc (not $want) or a temporary left"; }
done
# Into a file written in place (another name links it): what arrived
# whole from the start and nothing of the old bytes after it (it is
# emptied as the transfer begins, as cp's O_TRUNC), or, when the signal
# came before, the file as it was.
head -c 30000000 /dev/zero >"$dir/e/cut"; ln "$dir/e/cut" "$dir/cut.link"
"$F" -r 4M copy "$dir/src" "$dir/e/cut" 2>"$dir/err" & qp=$!; pids="$pids $qp"
sleep 0.5; kill -USR1 $qp; wait $qp; rc=$?
n=$(stat -c %s "$dir/cut.link")
[ $rc -eq 138 ] || { cat "$dir/err"; fail "SIGUSR1 into a file written in place: exit $rc, not 138"; }
if [ "$n" -eq 30000000 ]; then
  cmp -s -n 30000000 /dev/zero "$dir/cut.link" || fail "a file written in place, interrupted before the transfer, changed"
else
  [ "$n" -lt 20000000 ] && cmp -s -n "$n" "$dir/src" "$dir/cut.link" ||
    fail "a file written in place, interrupted part way, is not a prefix of SRC ($n bytes)"
fi
rm -f "$dir/e/cut" "$dir/cut.link"
echo "early exits, limits, signals while waiting: ok"
# A signal ignored from the start stays ignored (nohup, trap '' TERM;
# sh itself starts a background job with SIGINT ignored).
(trap '' TERM; exec "$F" -r 40M copy "$dir/src" "$dir/e/ign") 2>"$dir/err" & ip=$!
# (the copy's temporary exists: the trap was set before the exec)
i=0; while [ $i -lt 200 ] && [ -z "$(ls -A "$dir/e")" ]; do i=$((i + 1)); sleep 0.05; done
kill -TERM $ip; wait $ip; rc=$?
[ $rc -eq 0 ] && cmp -s "$dir/src" "$dir/e/ign" || { cat "$dir/err"; fail "SIGTERM ignored at start: exit $rc or the copy differs"; }
rm -f "$dir/e/ign"
# As a new file gets its mode from cp: never set-user-ID, set-group-ID or sticky.
cp "$dir/one" "$dir/suid" && chmod 7755 "$dir/suid"
expect_rc 0 "$F" copy "$dir/suid" "$dir/e/suid"
[ "$(stat -c %a "$dir/e/suid")" = 755 ] || fail "copy kept special mode bits: $(stat -c %a "$dir/e/suid")"
# A symbolic link as DST is written through; a dangling one is refused.
: >"$dir/e/target"; ln -s target "$dir/e/link"
expect_rc 0 "$F" copy "$dir/one" "$dir/e/link"
[ -L "$dir/e/link" ] && cmp -s "$dir/one" "$dir/e/target" || fail "copy to a symlink replaced the link"
ln -s nowhere "$dir/e/dangling"
expect_rc 1 "$F" copy "$dir/one" "$dir/e/dangling"
grep -qx "$F: not writing through dangling symlink '$dir/e/dangling'" "$dir/err" || { cat "$dir/err"; fail "dangling symlink message"; }
# A name of 250 bytes (the temporary's name must fit NAME_MAX too).
long=$(printf 'n%.0s' $(seq 250))
expect_rc 0 "$F" copy "$dir/one" "$dir/e/$long"
cmp -s "$dir/one" "$dir/e/$long" || fail "copy to a 250-byte name"
# "x/" that is no directory: refused before any byte is read (stdin,
# a file, keeps its offset for the cat after it).
{ "$F" copy - "$dir/e/nodir/" 2>"$dir/err"; echo $? >"$dir/rc"; cat >"$dir/e/rest"; } <"$dir/one"
[ "$(cat "$dir/rc")" = 1 ] && grep -qx "$F: $dir/e/nodir/: Not a directory" "$dir/err" &&
  cmp -s "$dir/one" "$dir/e/rest" || { cat "$dir/err"; fail "DST/ not a directory: refused only after reading"; }
rm -rf "$dir/e"; mkdir "$dir/e"
echo "ignored signals, mode bits, symlinks, long names, DST/: ok"
# A signal just after the last byte (the loop had stopped looking: here
# while the flow's final lseek is held up by strace) still removes the
# temporary and ends the tool by it (was: renamed, status 0).
if command -v strace >/dev/null && command -v pgrep >/dev/null && strace -o /dev/null true 2>/dev/null; then
  printf 'old\n' >"$dir/e/late"
  strace -o /dev/null -e trace=lseek -e inject=lseek:delay_exit=2000000:when=3+ \
    "$F" copy "$dir/src" "$dir/e/late" 2>"$dir/err" & lp=$!
  sleep 1; kill -TERM $(pgrep -P $lp); wait $lp; rc=$?
  [ $rc -eq 143 ] && [ "$(cat "$dir/e/late")" = old ] && [ "$(ls -A "$dir/e")" = late ] ||
    { cat "$dir/err"; ls -la "$dir/e"; fail "SIGTERM after the last byte: exit $rc, the file replaced or a temporary left"; }
  rm -f "$dir/e/late"
  echo "a signal after the last byte: no file, death by it"
else
  echo "a signal after the last byte: skipped (no strace or pgrep)"
fi
# A file the user may not write (mode 444, the user's own, in a directory
# the user may write) is refused as cp refuses it, and left as it was
# (was: replaced by rename, status 0). As nobody when root.
as=
[ "$(id -u)" = 0 ] && as="setpriv --reuid=65534 --regid=65534 --clear-groups"
if [ -z "$as" ] || { command -v setpriv >/dev/null && chmod 711 "$dir"; }; then
  mkdir "$dir/w" && chmod 777 "$dir/w"
  $as sh -c 'printf old >"$1/ro" && chmod 444 "$1/ro" && printf new >"$1/new"' sh "$dir/w"
  expect_rc 1 $as "$F" copy "$dir/w/new" "$dir/w/ro"
  grep -qx "$F: $dir/w/ro: Permission denied" "$dir/err" && [ "$(cat "$dir/w/ro")" = old ] &&
    [ "$(ls -A "$dir/w" | wc -l)" = 2 ] || { cat "$dir/err"; ls -la "$dir/w"; fail "a write-protected DST was replaced"; }
  rm -rf "$dir/w"
  echo "a write-protected destination is refused, as cp refuses it: ok"
else
  echo "write-protected destination: skipped (root without setpriv)"
fi
# A sink without splice support (/dev/full): auto falls back to kbuf, so
# the error is the device's own (was EINVAL from the splice).
expect_rc 1 "$F" copy "$dir/src" /dev/full
grep -qx "$F: /dev/full: write: No space left on device" "$dir/err" || { cat "$dir/err"; fail "/dev/full: no fallback to kbuf"; }
echo "a sink that refuses splice falls back: ok"
# A closed stdin or stdout named as -: EBADF (the loop took its number
# and the message said EINVAL).
"$F" copy - "$dir/e/o" <&- 2>"$dir/err"; rc=$?
[ $rc = 1 ] && grep -qx "$F: -: Bad file descriptor" "$dir/err" || { cat "$dir/err"; fail "copy - with stdin closed: exit $rc"; }
"$F" copy "$dir/one" - >&- 2>"$dir/err"; rc=$?
[ $rc = 1 ] && grep -qx "$F: -: Bad file descriptor" "$dir/err" || { cat "$dir/err"; fail "copy to - with stdout closed: exit $rc"; }
# Named through /dev/stdin or /dev/stdout, a closed one fails too (cat:
# status 1), not a read of an empty file or a write into nothing.
"$F" copy /dev/stdin "$dir/e/o" <&- 2>"$dir/err"; rc=$?
[ $rc = 1 ] || { cat "$dir/err"; fail "copy /dev/stdin with stdin closed: exit $rc"; }
"$F" copy "$dir/one" /dev/stdout >&- 2>"$dir/err"; rc=$?
[ $rc = 1 ] || { cat "$dir/err"; fail "copy to /dev/stdout with stdout closed: exit $rc"; }
[ -z "$(ls -A "$dir/e")" ] || { ls -la "$dir/e"; fail "files left with stdin closed"; }
echo "closed stdin/stdout: ok"
# A pipe whose reader has gone (| head): the writer dies of SIGPIPE,
# silently, as cat does (status 141; it said "Broken pipe", status 1);
# with SIGPIPE ignored from the start, a write error and 1, as cat's.
# cat's status is the reference (a test run with SIGPIPE ignored cannot
# have it reset by sh). 20 MB: far more than a pipe holds.
for ign in '' "trap '' PIPE;"; do
  for p in cat flow; do
    cmd="cat $dir/src"
    [ $p = flow ] && cmd="$F copy $dir/src -"
    { (eval "$ign"; exec $cmd) 2>"$dir/$p.perr"; echo $? >"$dir/$p.prc"; } | head -c 5 >/dev/null
  done
  [ "$(cat "$dir/flow.prc")" = "$(cat "$dir/cat.prc")" ] || { cat "$dir/flow.perr"
    fail "copy FILE - | head -c 5 ($ign): exit $(cat "$dir/flow.prc"), cat's $(cat "$dir/cat.prc")"; }
  [ -s "$dir/cat.perr" ] || [ ! -s "$dir/flow.perr" ] || { cat "$dir/flow.perr"
    fail "copy FILE - | head -c 5 ($ign): a message where cat says nothing"; }
done
echo "a pipe closed by its reader: as cat: ok"

# A failed transfer leaves no file that looks complete (nor a temporary).
if [ "$(id -u)" = 0 ] && mnt=$(mktemp -d /tmp/uaio-flow-full-XXXXXX) && { mount -t tmpfs -o size=1m tmpfs "$mnt" 2>/dev/null || { rmdir "$mnt"; false; }; }; then
  for m in auto kbuf pagecache; do
    expect_rc 1 "$F" copy --stats --mode=$m "$dir/src" "$mnt/dst"
    grep -q "^$F: $mnt/dst: write: No space left on device" "$dir/err" || { cat "$dir/err"; fail "ENOSPC message ($m)"; }
    # --stats counts what moved before the failure (it said 0 bytes)
    grep -Eq "^$F: [1-9][0-9]* bytes in " "$dir/err" || { cat "$dir/err"; fail "--stats after ENOSPC ($m)"; }
    [ -z "$(ls -A "$mnt")" ] || { ls -la "$mnt"; fail "files left after ENOSPC ($m)"; }
  done
  echo "ENOSPC on a 1 MiB tmpfs: exit 1, message names the sink, nothing left"
else
  mnt=
  echo "ENOSPC: skipped (needs root to mount a tmpfs)"
fi
[ -n "$mnt" ] && umount "$mnt" && rmdir "$mnt"
mnt=

# On XFS (reflinks): a file copied onto an existing one written in place
# (another name links it) shares its extents, as a copy to a new name
# does (FICLONE, or copy_file_range, which XFS makes a clone as well).
if [ "$(id -u)" = 0 ] && command -v mkfs.xfs >/dev/null && mnt=$(mktemp -d /tmp/uaio-flow-xfs-XXXXXX) &&
   truncate -s 300M "$dir/xfs.img" && mkfs.xfs -q -f -m reflink=1 "$dir/xfs.img" 2>/dev/null &&
   { mount -o loop "$dir/xfs.img" "$mnt" 2>/dev/null || { rmdir "$mnt"; false; }; }; then
  head -c 1048576 "$dir/src" >"$mnt/a"
  printf 'old\n' >"$mnt/b"; ln "$mnt/b" "$mnt/b.link"
  expect_rc 0 "$F" copy "$mnt/a" "$mnt/b"
  cmp -s "$mnt/a" "$mnt/b.link" || fail "XFS: the linked destination differs from its source"
  filefrag -v "$mnt/b.link" | grep -q shared || { filefrag -v "$mnt/b.link"; fail "XFS: a copy onto a linked file shares no extent"; }
  echo "XFS: a linked destination is a clone: ok"
  umount "$mnt" && rmdir "$mnt"
else
  [ -n "$mnt" ] && rmdir "$mnt" 2>/dev/null
  echo "XFS clone onto a linked file: skipped (needs root, mkfs.xfs and a loop device)"
fi
mnt=

# Network: 2 hosts (send -> recv), 3 hosts (send -> forward -> recv).
wait_port() { # ns port
  i=0
  while [ $i -lt 100 ]; do
    if $1 ss -ltn 2>/dev/null | grep -q ":$2 "; then return 0; fi
    i=$((i + 1)); sleep 0.05
  done
  return 1
}
if [ "$(id -u)" = 0 ] && command -v ip >/dev/null && ip netns add ufa 2>/dev/null; then
  ip netns add ufb && ip netns add ufc &&
  ip link add ufa0 netns ufa type veth peer name ufb0 netns ufb &&
  ip link add ufb1 netns ufb type veth peer name ufc0 netns ufc &&
  ip -n ufa addr add 10.77.1.1/24 dev ufa0 && ip -n ufb addr add 10.77.1.2/24 dev ufb0 &&
  ip -n ufb addr add 10.77.2.1/24 dev ufb1 && ip -n ufc addr add 10.77.2.2/24 dev ufc0 &&
  for ns in ufa ufb ufc; do ip -n $ns link set lo up; done &&
  ip -n ufa link set ufa0 up && ip -n ufb link set ufb0 up && ip -n ufb link set ufb1 up &&
  ip -n ufc link set ufc0 up || fail "setting up namespaces"
  A="ip netns exec ufa"; B="ip netns exec ufb"; C="ip netns exec ufc"
  RECV=10.77.1.2; FWD_TO=10.77.2.2; FWD=10.77.1.2
  where="between network namespaces (veth)"
else
  A=; B=; C=; RECV=127.0.0.1; FWD_TO=127.0.0.1; FWD=127.0.0.1
  where="over loopback (no network namespaces: not root or no ip)"
fi
port=$((20000 + $$ % 20000))
for m in auto kbuf pagecache; do
  port=$((port + 1))
  $B "$F" recv --mode=$m "$port" "$dir/net.$m" 2>"$dir/recv.err" &
  rp=$!; pids="$pids $rp"
  wait_port "$B" $port || fail "recv did not listen"
  $A "$F" send --mode=$m "$dir/src" "$RECV:$port" || fail "send ($m) failed"
  wait $rp || { cat "$dir/recv.err"; fail "recv ($m) failed"; }
  cmp -s "$dir/src" "$dir/net.$m" || fail "send/recv ($m) differs"
done
echo "send -> recv, 2 hosts $where: byte-exact"
port=$((port + 1)); fport=$((port + 1))
$C "$F" recv "$port" "$dir/net3" 2>"$dir/recv.err" & rp=$!; pids="$pids $rp"
wait_port "$C" $port || fail "recv did not listen"
$B "$F" forward "$fport" "$FWD_TO:$port" 2>"$dir/fwd.err" & fp=$!; pids="$pids $fp"
wait_port "$B" $fport || fail "forward did not listen"
$A "$F" send "$dir/src" "$FWD:$fport" || fail "send through forward failed"
wait $fp || { cat "$dir/fwd.err"; fail "forward failed"; }
wait $rp || { cat "$dir/recv.err"; fail "recv behind forward failed"; }
cmp -s "$dir/src" "$dir/net3" || fail "3-host transfer differs"
echo "send -> forward -> recv, 3 hosts $where: byte-exact"
# A sender that stops part way (a signal) resets the connection: the
# receiver fails and keeps no file, never a cut one with exit 0.
port=$((port + 2))
$B "$F" recv "$port" "$dir/net.cut" 2>"$dir/recv.err" & rp=$!; pids="$pids $rp"
wait_port "$B" $port || fail "recv did not listen"
$A "$F" send -r 8M "$dir/src" "$RECV:$port" 2>"$dir/send.err" & spid=$!
# signalled once bytes have arrived (the receiver's temporary grew)
i=0
while [ $i -lt 200 ] && ! find "$dir" -maxdepth 1 -name '.net.cut.uaio-*' -size +0 | grep -q .; do
  i=$((i + 1)); sleep 0.05
done
kill -TERM $spid; wait $spid; rc=$?
[ $rc -eq 143 ] || { cat "$dir/send.err"; fail "send, SIGTERM part way: exit $rc, not 143"; }
wait $rp; rc=$?
[ $rc -eq 1 ] && [ ! -e "$dir/net.cut" ] || { cat "$dir/recv.err"; fail "recv after the sender's SIGTERM: exit $rc, file left: $(ls "$dir" | grep net.cut)"; }
# ... and says so naming the peer, as send names its: HOST:PORT.
grep -Eq "^$F: [0-9.]+:[0-9]+: read: " "$dir/recv.err" || { cat "$dir/recv.err"; fail "recv's message does not name the peer"; }
echo "a sender stopped part way: the receiver fails, no file"
# Nobody listening: exit 1, a message naming the peer.
expect_rc 1 $A "$F" send "$dir/src" "$RECV:1"
grep -q "^$F: $RECV:1: Connection refused" "$dir/err" || { cat "$dir/err"; fail "refused message"; }
exit 0
