#!/bin/sh
# uaio-cp against GNU cp (9.1): the file data's own options. --sparse and
# --reflink=never give GNU cp's holes and contents; -j N and --progress
# change nothing in the tree. The cases and their comparison as in
# test_uaio_cp.sh (lib.sh).
# Usage: test_uaio_cp_data.sh TOOL TREECMP. Exit 0 pass, 1 fail, 77 skip.

. "$(dirname "$0")/lib.sh"

make_tree "$T/src" || fail "making the source tree"

# --sparse and --reflink=never: same contents and holes as GNU; never
# writes every block.
SETUP=:
# A file with holes whose data has written zeros: cp 9.1 punches those too
# under --sparse=auto. Beside the tree, whose copies keep its hole maps.
mkdir "$T/zs" && { head -c 5000 /dev/urandom; head -c 200000 /dev/zero; head -c 9000 /dev/urandom; } >"$T/zs/zsparse" &&
  truncate -s 2M "$T/zs/zsparse" || fail "making zs/zsparse"
for o in --sparse=always --sparse=never --sparse=auto --reflink=never; do
  both $o ../src/sparse ../src/zeros ../src/tailhole ../src/z1m3 ../zs/zsparse .
  for f in sparse zeros tailhole z1m3 zsparse; do
    src=$T/src/$f; [ $f = zsparse ] && src=$T/zs/$f
    cmp -s "$src" "$T/u/$f" || fail "$o: $f differs from the source"
    [ "$(stat -c %b "$T/g/$f")" = "$(stat -c %b "$T/u/$f")" ] ||
      fail "$o: $f has $(stat -c %b "$T/u/$f") blocks, GNU cp's copy $(stat -c %b "$T/g/$f")"
  done
  if [ $o = --sparse=never ]; then
    for s in g u; do
      for f in sparse zeros tailhole; do
        set -- $(stat -c '%b %B %s' "$T/$s/$f")
        [ $(($1 * $2)) -ge $(($3 / 4096 * 4096)) ] || fail "--sparse=never: $s/$f has holes ($1 blocks, size $3)"
      done
    done
  fi
done
[ "$(stat -c %b "$T/u/sparse")" -lt 4096 ] || echo "note: the --reflink=never copy of a 64 MiB sparse file is not sparse"
ok "--sparse=always/never/auto, --reflink=never"

# Holes as big as the destination's blocks (cp's hole_size is its
# st_blksize): on an ext4 of 1 KiB blocks a 1 KiB run of zeros becomes a
# hole (uaio-cp looked for 4 KiB runs only).
kb=$T/kb
if mount_ext4 kb -b 1024; then
  mnt=$kb
  { head -c 1024 /dev/zero; echo a; head -c 6000 /dev/zero; } >"$T/kz"
  for o in always auto; do
    for prog in cp uaio-cp; do
      (cd "$T" && exec $prog --sparse=$o kz "$kb/$prog-$o") || fail "$prog --sparse=$o onto 1 KiB blocks"
    done
    cmp -s "$T/kz" "$kb/uaio-cp-$o" || fail "--sparse=$o onto 1 KiB blocks: contents differ"
    [ "$(stat -c %b "$kb/cp-$o")" = "$(stat -c %b "$kb/uaio-cp-$o")" ] ||
      fail "--sparse=$o onto 1 KiB blocks: $(stat -c %b "$kb/uaio-cp-$o") blocks, cp's $(stat -c %b "$kb/cp-$o")"
  done
  umount "$kb"
  mnt=
  ok "--sparse=always/auto onto 1 KiB blocks: cp's holes"
else
  echo "skip: holes on 1 KiB blocks (needs root, mkfs.ext4 and a loop device)"
fi

# On XFS (reflinks; blocks allocated ahead of the writes): a clone under
# every --sparse, as cp 9.1 tries one whatever --sparse says (uaio-cp
# tried none); the zero runs it skips punched, as cp punches them (XFS
# kept them allocated: data to SEEK_DATA); a refused clone remembered
# per pair of file systems, not per source (a later part of the tree,
# bound from XFS inside the ext4 destination, got no clone).
xm=$T/xm
if [ $root = 1 ] && command -v mkfs.xfs >/dev/null && mkdir "$xm" &&
   truncate -s 400M "$T/xm.img" && mkfs.xfs -q -f -m reflink=1 "$T/xm.img" 2>/dev/null &&
   mount -o loop "$T/xm.img" "$xm" 2>/dev/null; then
  mnt=$xm
  { head -c 65536 /dev/zero; echo data; } >"$xm/z"
  truncate -s 5M "$xm/sp" && echo x >>"$xm/sp"
  { head -c 1000000 /dev/urandom; head -c 1000000 /dev/zero; head -c 1000000 /dev/urandom; head -c 3000000 /dev/zero; } >"$T/b"
  { head -c 1000000 /dev/urandom; head -c 1000000 /dev/zero; head -c 1000000 /dev/urandom; } >"$T/c" && truncate -s 20M "$T/c"
  # small data between holes, under auto: the holes are seeked over, not
  # punched (cp punches them only under always), so what XFS allocated
  # ahead of the last write stays, as under cp (uaio-cp punched it)
  { head -c 4096 /dev/urandom; } >"$T/d" && truncate -s 3M "$T/d" &&
    printf '%100s' x | dd of="$T/d" bs=1 seek=1048576 conv=notrunc status=none &&
    head -c 4096 /dev/urandom | dd of="$T/d" bs=1 seek=2097152 conv=notrunc status=none
  for prog in cp uaio-cp; do
    (cd "$xm" && $prog --sparse=always z z.$prog && exec $prog --sparse=never sp sp.$prog) ||
      fail "$prog --sparse onto XFS"
    (cd "$T" && $prog --sparse=always b "$xm/b.$prog" && $prog c "$xm/c.$prog" &&
       exec $prog -a d "$xm/d.$prog") ||
      fail "$prog: holes onto XFS"
  done
  umount "$xm" && mount -o loop "$T/xm.img" "$xm" || fail "remounting the XFS image"
  for f in z sp d; do
    [ "$(stat -c %b "$xm/$f.cp")" = "$(stat -c %b "$xm/$f.uaio-cp")" ] ||
      fail "$f onto XFS: $(stat -c %b "$xm/$f.uaio-cp") blocks, cp's $(stat -c %b "$xm/$f.cp")"
  done
  # the maps first: a read caches the pages of an unwritten extent, which
  # SEEK_DATA then counts as data
  for f in b c d; do
    "$TC" --hole-map "$xm/$f.cp" >"$T/map.g" && "$TC" --hole-map "$xm/$f.uaio-cp" >"$T/map.u" &&
      cmp -s "$T/map.g" "$T/map.u" || fail "$f onto XFS: hole map $(cat "$T/map.u"), cp's $(cat "$T/map.g")"
    cmp -s "$T/$f" "$xm/$f.uaio-cp" || fail "$f onto XFS: contents differ"
  done
  umount "$xm"
  mnt=
  ok "onto XFS: clones under --sparse=always/never, punched holes"
else
  echo "skip: XFS cases (need root, mkfs.xfs and a loop device)"
fi

# uaio-cp's own options: -j N (any N: the same tree), --progress (nothing
# written when stdout and stderr are not terminals).
SETUP=:
for TX in "-j 1" "-j 64" "--progress" "--progress -j 3"; do
  both -s -a ../src dst
  tc "$T/g/dst" "$T/u/dst" --dir-times --strict-holes
  tc "$T/src" "$T/u/dst" --dir-times
done
TX=
# A bad -j is a usage error, as cp's own bad arguments; a minus after
# blanks too (strtoul negated it: ' -18446744073709551615' was 1).
for j in 0 abc '' 65537 -1 ' -1' ' -18446744073709551615'; do
  (cd "$T" && uaio-cp -j "$j" src/z1 jx) >"$T/j.out" 2>"$T/j.err"
  rc=$?
  [ $rc = 1 ] && [ ! -e "$T/jx" ] && grep -qx "uaio-cp: invalid number of jobs: '$j'" "$T/j.err" ||
    { cat "$T/j.err"; rm -f "$T/jx"; fail "-j '$j': exit $rc, not refused"; }
done
ok "-j 1, -j 64 and --progress: the tree cp -a makes, nothing printed; a bad -j refused"

# --progress on a terminal (script(1) gives it one): a -v line never
# lands on the bar's row (it was glued after it, the bar left on screen),
# and the bar fits the terminal's width (20 columns here; a longer line
# wrapped, and each redraw left rows behind). A copy that found nothing
# draws no bar.
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
  mkdir -p "$T/pg/src" "$T/pg/d" && head -c 300000 /dev/urandom >"$T/pg/src/a" &&
    head -c 300000 /dev/urandom >"$T/pg/src/b" && mkfifo "$T/pg/ff" || fail "making the --progress tree"
  # (a FIFO fed in two parts: the bar is up when the next file's -v line
  # comes, one job at a time)
  { head -c 100000 /dev/zero; sleep 0.3; head -c 100000 /dev/zero; } >"$T/pg/ff" &
  (cd "$T/pg" && script -qec "uaio-cp -j1 -v --progress ff src/a src/b d/" /dev/null) >"$T/pg.out" 2>&1
  wait
  grep -q "src/b' -> 'd/b'" "$T/pg.out" || fail "--progress -v on a terminal: $(cat -A "$T/pg.out")"
  esc=$(printf '\033')
  grep -q "ETA[^$(printf '\r')]*$esc\[K'" "$T/pg.out" &&
    fail "--progress: a -v line written onto the bar's row: $(cat -A "$T/pg.out")"
  (cd "$T/pg" && script -qec "stty cols 20; uaio-cp -r --progress src d2" /dev/null) >"$T/pg.out" 2>&1
  tr '\r' '\n' <"$T/pg.out" | sed "s/$esc\[K//g" | awk 'length($0) > 19 { bad = 1 } END { exit bad }' ||
    fail "--progress: wider than the terminal's 20 columns: $(cat -A "$T/pg.out")"
  (cd "$T/pg" && script -qec "uaio-cp --progress nosuch d3" /dev/null) >"$T/pg.out" 2>&1
  grep -q 'files' "$T/pg.out" && fail "--progress: a bar for a copy that found nothing: $(cat -A "$T/pg.out")"
  ok "--progress on a terminal: -v lines apart from the bar, the bar within the width, none for nothing"
else
  echo "skip: --progress on a terminal (needs script(1))"
fi

# A file with write but no splice (procfs's comm: no write_iter): a large
# copy onto it succeeds as cp's (the flow's splice was refused only once
# bytes sat in its pipe, and no other method could take over: EINVAL).
head -c 200000 /dev/urandom >"$T/big" || fail "making big"
for o in "" --reflink=never; do
  uaio-cp $o "$T/big" /proc/self/comm 2>"$T/comm.err" && [ ! -s "$T/comm.err" ] ||
    { cat "$T/comm.err"; fail "uaio-cp $o big /proc/self/comm: failed (cp copies it)"; }
done
ok "a large file onto a file without splice (/proc/self/comm)"

exit $failed
