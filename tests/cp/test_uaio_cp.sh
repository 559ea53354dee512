#!/bin/sh
# uaio-cp against GNU cp (9.1), end to end: each case runs `cp ARGS` and
# `uaio-cp ARGS` in two fresh directories with the same relative names,
# then compares exit status, stdout and stderr (GNU's with cp: turned into
# uaio-cp:) and the two resulting trees (treecmp: types, modes, owners,
# times to the nanosecond, contents, holes, hard links, xattrs).
# Usage: test_uaio_cp.sh TOOL TREECMP. Exit 0 pass, 1 fail, 77 skip
# (UAIO_CP_TEST_KEEP_GOING=1: report every failure, not just the first).
# Parts that need root (owners, devices) say so and are skipped when not
# root. The copy's surroundings (other users, a full or another file
# system, descriptor limits, closed streams, signals): test_uaio_cp_env.sh;
# --sparse, --reflink=never, -j and --progress: test_uaio_cp_data.sh.
# To check this script without uaio-cp, pass tests/cp/gnu_cp_wrapper.sh
# as TOOL (GNU cp that drops -j/--progress and renames itself).

. "$(dirname "$0")/lib.sh"

# ---------------------------------------------------------------------
make_tree "$T/src" || fail "making the source tree"
[ $root = 1 ] || echo "note: not root: the tree has no other owners, no device node, no 0000 file"

# treecmp itself: GNU cp -a's copy is equal, each kind of damage is seen
# (directory times compared only for the damage that is one).
what="treecmp self-check"
cp -a "$T/src" "$T/ref" || fail "cp -a of the source tree"
tc "$T/src" "$T/ref" --dir-times
n=0
while read -r flag damage; do
  [ "$flag" = - ] && flag=
  rmtree "$T/bad" && cp -a "$T/ref" "$T/bad" && (cd "$T/bad" && eval "$damage") </dev/null 2>/dev/null || continue
  "$TC" "$T/src" "$T/bad" $flag >"$T/tc.out" 2>&1
  [ $? = 1 ] || fail "treecmp did not see: $damage"
  n=$((n + 1))
done <<'EOF'
- chmod 0601 m0600
- touch -h -d '2001-02-03 04:05:06.123456788' l_rel
--dir-times touch -d '2002-03-04 05:06:07.987654320' d/e
- printf y | dd of=z4096 bs=1 seek=4000 conv=notrunc status=none
- rm d/h2b && echo two >d/h2b && touch -d '2001-02-03 04:05:06.123456789' d/h2b
- ln -sfn z0 l_rel
- rm fifo && mkdir fifo
- rm -r empty
- mkdir extra
- dd if=/dev/urandom of=sparse bs=4096 count=1 seek=100 conv=notrunc status=none
- truncate -s 1000 z1m3
- chown -h 4321 l_rel
- "$TC" --setxattr links/h2a user.a 2
- "$TC" --setxattr z0 user.b 1
EOF
rmtree "$T/ref" "$T/bad"
[ $n -ge 10 ] || fail "treecmp self-check: only $n kinds of damage could be made"
ok "treecmp: an equal copy, and each of $n kinds of damage"

# The option matrix, under two umasks: treecmp options, then cp options.
for UM in 022 077; do
  while read -r flags opts; do
    # shellcheck disable=SC2086
    both -s $opts ../src dst
    tc "$T/g/dst" "$T/u/dst" $flags --strict-holes
    case $opts in -a|--archive)
      tc "$T/src" "$T/g/dst" --dir-times
      tc "$T/src" "$T/u/dst" --dir-times ;;
    esac
  done <<'EOF'
--dir-times -a
--no-times  -r
--no-times  -R
--dir-times -rp
--no-times  -dR
--dir-times --archive
--dir-times -a --no-preserve=mode
--dir-times -r --preserve=mode,timestamps
--no-times  -rL
EOF
  ok "-a -r -R -rp -dR --archive, -a --no-preserve=mode, -r --preserve=mode,timestamps, -rL (umask $UM)"
done
UM=022

# Where a copy goes: into an existing directory or to a new name; -T, -t,
# several sources, a source named -x.
SETUP='mkdir existing'
both -s -r ../src existing
both -s -r ../src newname
both -s -rT ../src existing
both -s -rT ../src newname
both -s -r -t existing ../src/z1 ../src/d ../src/l_dir
both -s -r ../src/z1 ../src/d ../src/l_dir ../src/fifo existing
both -s -a -t existing ../src/d ../src/links
tc "$T/g/existing/d" "$T/u/existing/d" --dir-times --strict-holes
tc "$T/src/links" "$T/u/existing/links" --dir-times
SETUP='echo minus >./-x; touch -d 2001-01-01 ./-x'
both -- -x y
both -p -- -x y
tc "$T/g" "$T/u" --strict-holes
both -x y
ok "into an existing directory, a new name, -T, -t, several sources, -- -x"

# Messages and exit statuses, verbatim but for the program name.
SETUP='echo f >f; echo g >g; ln f hl; mkdir -p d/sub e/f; touch -d 2001-01-01 f g d/sub'
for args in "" "f" "--bogus f g" "-Y f g" "--reflink=bad f g" "--preserve=bogus f g" \
    "--no-preserve=bogus f g" "--sparse=bad f g" "-t" "-t d -T f" "-T f d e" \
    "nope x" "nope d" "f f" "f hl" "f ./f" "d x" "-r d d/sub" "-r e/f e/f" "-M -r . x" \
    "f e" "-r d f" "-rT d g" "-t nodir f" "-t f d" "f g nodir" "f g nodir/" "f d g" \
    "--reflink=always f n" "--reflink=always f g" "-T d e"; do
  # shellcheck disable=SC2086
  both $args
done
if locale -a 2>/dev/null | grep -qix 'c\.utf-\?8'; then
  # In a UTF-8 locale GNU quotes an invalid option argument with U+2018/9.
  LC_ALL=C.UTF-8
  both --reflink=bad f g
  both --preserve=bogus f g
  both nope x
  LC_ALL=C
fi
if [ ! -e /sys/fs/selinux ]; then
  # A context asked for by name is refused without SELinux, whatever
  # "all" says after it (GNU's require_preserve_context).
  for args in "--preserve=context,all f n" "--preserve=context -a f n" \
      "--preserve=context --no-preserve=all f n" "-a --preserve=context f n" \
      "--preserve=context --no-preserve=context f n"; do
    # shellcheck disable=SC2086
    both $args
  done
fi
ok "usage and error messages, exit statuses (incl. --reflink=always where cloning fails)"

# Where cp refuses or merges: symlinks at the destination, sources given
# twice, a source ending in .., hard links onto existing files, set-ID bits.
# A directory onto a symlink to a directory: refused, never copied through.
SETUP='mkdir -p d/s e x; echo f >d/s/f; ln -s ../e x/d; ln -s e le'
both -rv d x
both -rT d le
[ -e "$T/u/e/s" ] && fail "a directory was copied through a symlink"
# A source ending in ..: into the target itself.
SETUP='mkdir -p p/s t w/x; echo f >p/f; echo g >p/s/g; echo a >w/a'
both -s -r p/s/.. t
both -M -r w/x/.. w/x
# A symlink onto its own target, and the reverse.
SETUP='echo data >a; ln -s a la'
both -P la a
both -a la a
[ "$(cat "$T/u/a")" = data ] || fail "-P la a destroyed a"
both --remove-destination a la
both -a --remove-destination la a
# -u and -n judge what a destination symlink points to.
SETUP='echo new >new; echo old >old; touch -d 2001-01-01 old; ln -s old lold; ln -s nowhere dang'
both -u new lold
both -n new dang
both -u new dang
both -v new dang
# ... which POSIXLY_CORRECT has cp write through, making its target
CPENV=POSIXLY_CORRECT=1
both -v new dang
SETUP='echo new >new; mkdir d; ln -s nowhere/x dang; ln -s ../nowhere d/dang'
both -v new dang
both -rv new d
CPENV=
SETUP='echo new >new; echo old >old; touch -d 2001-01-01 old; ln -s old lold; ln -s nowhere dang'
both -nv new lold
# Hard links kept when the first name overwrites a destination file; a
# destination with other names is replaced, not written through.
SETUP='mkdir t; echo c >c; ln c c2; echo old >t/c2; echo x >x; ln x t/xo'
both -a c2 c t
both -a x t/xo
[ "$(cat "$T/u/x")" = x ] || fail "-a wrote through a destination's other name"
# Set-ID bits as cp's ACL call leaves them.
SETUP='echo a >src; chmod 644 src; echo b >dst; chmod 6755 dst; echo s >s2; chmod 4755 s2; echo d >d2'
both -p src dst
both -p s2 d2
# A source given twice, and two sources with one name.
SETUP='mkdir t s1 s2 dd; echo a >a; echo 1 >s1/f; echo 2 >s2/f'
both a a t
both a ./a t
both s1/f s2/f t
both -r dd dd t
# The second onto a symlink the first made, which leads to a file: cp
# tells it apart from a file made just now (its stat follows the link).
SETUP='mkdir a b c t; echo f >a/x; ln -s ../a/x b/x; echo g >c/x'
both -d b/x c/x t
both -a b/x c/x t
# A file onto a symlink to a directory.
SETUP='echo a >a; mkdir -p x/dd; ln -s dd x/a'
both -v a x
both -v a x/a
SETUP=:
ok "symlinked destinations, same files, sources twice, .., hard links onto existing files, set-ID bits"

# Names that need escaping: control characters, a byte that is not UTF-8,
# non-ASCII, quotes; in -v lines and messages, in C and UTF-8 locales.
SETUP='mkdir t; for n in "a	b" "nl
x" "q'"'"'s" "q'"'"'s \"d\"" "$(printf "\303\251t\303\251")" "$(printf "bad\377")" "$(printf "\tlead")" "back\\\\slash" "x?y" "{" "#h" "h#"; do echo x >"$n"; done'
both -s -v "a	b" "nl
x" "q's" "q's \"d\"" "$(printf "\303\251t\303\251")" "$(printf "bad\377")" "$(printf "\tlead")" 'back\\slash' "x?y" "{" "#h" "h#" t
both -s -v "a	b" "$(printf "\303\251t\303\251")" "$(printf "bad\377")" nosuch/
# A quote before a name's end inside $'...': gnulib's second pass starts
# with an escape pending ('''x'\''y'$'\001', '\001''a'\''b'$'\001').
both "$(printf "x'y\001")" "$(printf "a b'\001")" "$(printf "\001a'b\001")" "$(printf "a'b\001c")" t
if locale -a 2>/dev/null | grep -qix 'c\.utf-\?8'; then
  LC_ALL=C.UTF-8
  both -s -v "a	b" "q's" "$(printf "\303\251t\303\251")" "$(printf "bad\377")" "$(printf "\tlead")" t
  both --preserve=mo,"$(printf "\303\251")" a b
  # a missing source whose name is not UTF-8: the stat's errno, not the
  # quoting's EILSEQ
  both "$(printf "gone\377")" "$(printf "\tgone")" t
  LC_ALL=C
fi
# Abbreviated option values and long options, as cp's argmatch and getopt.
SETUP='echo f >f'
for args in "--reflink=n f g" "--reflink=a f g" "--sparse=n f g" "--sparse=a f g" \
    "--sparse=al f g" "--preserve=t f g" "--preserve=own,mo f g" "--no-preserve=al f g" \
    "--preserve= f g" "--preserve=mode, f g" "--preserve=x,mode f g" \
    "--pr f g" "--p f g" "--a f g" "--no f g" "--s f g" "--re f g" "--ver f g" \
    "--rec f g" "--reflink=never --spar=never f g" "--arch=1 f g" "--target f g" \
    "--context=x f g" "-Z f g" "--cont f g"; do
  # shellcheck disable=SC2086
  both $args
done
# -p: a time that cannot be set ends the file's metadata, as cp
if [ $have_nobody = 1 ]; then
  AS=$NOBODY
  SETUP='echo new >new; chmod 0600 new; echo old >old; chmod 0666 old; chown 0:0 old; touch -d 2001-01-01 new'
  both -p new old
  AS=
fi
# -a into a set-group-ID directory of another group: cp's ACL call keeps
# the new directory's inherited S_ISGID.
if [ $root = 1 ]; then
  SETUP='mkdir sg s s/sub; chgrp 5678 sg; chmod 2775 sg; echo f >s/f; chmod 755 s s/sub'
  both -a s sg
  both -rp s sg
fi
# -u: a later name of a source file whose copy was kept becomes a link
SETUP='mkdir t; echo a >a; ln a a2; echo n >t/a; echo n >t/a2; touch -d 2030-01-01 t/a t/a2'
both -u a a2 t
# a hard-linked source that cannot be read: each name fails, none links
if [ $have_nobody = 1 ]; then
  AS=$NOBODY
  SETUP='mkdir t; chmod 777 t; echo s >sec; ln sec sec2; chmod 0600 sec'
  both -a sec sec2 t
  AS=
fi
SETUP='echo f >f; mkdir d'
uaio-cp --pa f d >"$T/out" 2>"$T/err" && fail "--pa (--parents) accepted"
grep -qx "uaio-cp: --parents is not supported" "$T/err" || { cat "$T/err"; fail "--pa: not named as --parents"; }
# An option uaio-cp lacks is refused only after the line was read and the
# operands checked, so what cp says first is said first.
SETUP='echo f >f'
# a backup type cp would refuse: its message, before "not supported"
both --backup=foo f g
both --backup=n f g
VERSION_CONTROL=zz both -b f g
# ... checked once the options are read, the last --backup's only
both --backup=foo --bogus f g
both -n --backup=foo f g
# -l with -s: cp's refusal, before the rest of its checks
both -ls f g
both -s -n -b -l f g
VERSION_CONTROL=zz both -b --backup=nil --bogus f g
both -i --bogus f g
both -i -k f g
both -i
both --suffix new old
both --parents f
uaio-cp -i --help >"$T/out" 2>"$T/err" || fail "-i --help: exit status $?"
grep -q '^Usage: ' "$T/out" || fail "-i --help: no help"
# every option cp's --help lists that uaio-cp accepts is in its --help too
for o in -a -d -f -H -j -L -n -P -p --preserve --no-preserve -R -t -T -u -v -x -Z --context; do
  grep -qE -- "(^| )$o[,= []" "$T/out" || grep -qE -- "(^| )$o\$" "$T/out" || fail "--help does not list $o"
done
SETUP=:
ok "quoting of names, abbreviated options and values, -p after a failed time, -a into set-group-ID, -u links, options uaio-cp lacks"

# Operands one after another, as cp: a later one that reads what an
# earlier one is writing waits for it (another name of a destination, a
# symlink into the target, a directory the target is in).
SETUP='mkdir t; yes abcdefghij | head -c 3000000 >big; echo old >t/big; ln t/big hl'
both big hl t
cmp -s "$T/u/t/hl" "$T/u/big" || fail "a later operand read a destination still being written"
SETUP='mkdir t; yes abcdefghij | head -c 3000000 >big; ln -s t/big l'
both big l t
SETUP='mkdir t; yes abcdefghij | head -c 3000000 >t/b; ln -s t/b lnk; echo small >b'
both lnk b t
# An operand copied into the target itself (DIR/.) is done before the
# next starts: a later file of a name it makes replaces that copy (it was
# "File exists", exit 1), and the target gets its times before the next
# operand's file changes them (it kept the source's old time).
SETUP='mkdir s1 s2 t; for i in $(seq 40); do echo one$i >s1/f$i; done; echo TWO >s2/f7'
both -r s1/. s2/f7 t
[ "$(cat "$T/u/t/f7")" = TWO ] || fail "cp -r s1/. s2/f7 t: t/f7 is not the later operand's"
both -r s1/. s2/f7/ t
SETUP='mkdir s9 s2 t; for i in $(seq 100); do echo $i >s9/f$i; done; yes abcdefghij | head -c 3000000 >s9/zbig; touch -d 2001-01-01 s9; echo G >s2/g'
both -a s9/. s2/g t
[ "$(stat -c %Y "$T/u/t")" -gt 1000000000 ] && [ "$(stat -c %Y "$T/u/t")" -ge "$(stat -c %Y "$T/u/t/g")" ] ||
  fail "cp -a s9/. s2/g t: t keeps s9's time though g was made in it after"
# A destination that is a symlink to a later source: that source is read
# once the copy written through the link is done (operands, and in a tree).
SETUP='mkdir t; yes abcdefghij | head -c 3000000 >a; echo old >b; ln -s ../b t/a'
both a b t
# Both copiers take a directory's files in inode order (gnulib's savedir,
# where that helps): s/a gets the lower inode in each tree, so that the
# two trees are copied in the same order (reused inodes could differ).
AB='mkdir s e; : >s/p; : >s/q; if [ $(stat -c %i s/p) -lt $(stat -c %i s/q) ]
  then mv s/p s/a; mv s/q s/b; else mv s/q s/a; mv s/p s/b; fi'
SETUP="$AB"'; yes abcdefghij | head -c 3000000 >s/a; echo old >s/b; ln -s ../s/b e/a'
both -r s/. e
# ... and a destination symlink to a file another copy makes (dangling
# until then) or writes: the later copy waits for it, then writes it.
SETUP="$AB"'; yes abcdefghij | head -c 3000000 >s/a; echo small >s/b; ln -s a e/b'
both -r s/. e
SETUP='mkdir s e; yes abcdefghij | head -c 3000000 >s/a; echo small >s/b; ln -s b e/a; echo old >e/b'
both -r s/a s/b e
# (-u: e/b, older than s/b, has s/a's older time once written; a larger s/a,
# to be caught while it is being written)
SETUP='mkdir s e; yes abcdefghij | head -c 30000000 >s/a; echo small >s/b; ln -s b e/a; echo old >e/b
  touch -d 2000-01-01 s/a; touch -d 2001-01-01 s/b; touch -d 1999-01-01 e/b'
both -au s/a s/b e
SETUP='mkdir -p d1 t; for i in $(seq 50); do echo $i >d1/f$i; done; yes abcdefghij | head -c 3000000 >d1/big; ln -s t/d1 d2'
both -s -rH d1 d2 t
# All hole and under 512 bytes: never sparse by cp's block count
# (fewer blocks than size / 512), so written out whole.
SETUP='truncate -s 100 h'
both h g
both --sparse=auto -a h g
# Within one operand too: a source that is another name of a destination
# a job is still writing is read once it is written, and one that would
# be truncated is written once its reading ends; under -L, a link into
# the copy being made (to a file not made yet, or half written) finds it
# whole. The result is a one-by-one copy's in the walk's order, which is
# inode order, and each tree has its own inodes (freed ones are reused),
# so uaio-cp runs alone here and its result is checked against that
# order; never a torn file. Several runs, as the jobs race.
ino() { stat -c %i "$1"; }
# ov_case FLAGS NAME SIZE OLDSIZE LINK...: s/a of SIZE bytes, t/s/a of
# OLDSIZE bytes of OLD, and s/NAME made by `LINK... s/NAME` to lead to
# t/s/a; after `uaio-cp FLAGS s t`, t/s/NAME is the new a when a comes
# first in inode order, else the old t/s/a whole.
ov_case() (
  flags=$1 name=$2 size=$3 oldsize=$4; shift 4
  rmtree "$T/ov"; mkdir "$T/ov" && cd "$T/ov" || exit 1
  mkdir -p s t/s; yes abcdefghij | head -c "$size" >s/a
  yes OLD | head -c "$oldsize" >t/s/a; yes OLD | head -c "$oldsize" >old
  "$@" "s/$name" || exit 1
  a_first=$([ "$(ino s/a)" -lt "$(ino "s/$name")" ] && echo 1)
  uaio-cp $flags s t || exit 1
  if [ -n "$a_first" ]; then cmp -s "t/s/$name" s/a; else cmp -s "t/s/$name" old; fi
)
for i in 1 2 3; do
  ov_case -r b 3000000 2000000 ln t/s/a ||
    fail "-r: a hard link to a destination being written was read half written"
  ov_case -rL z 100000 50000 ln -s ../t/s/a ||
    fail "-rL: a link to a destination being written was read half written"
  rmtree "$T/ov"; mkdir "$T/ov" || fail "setup"
  (
    cd "$T/ov" || exit 1
    mkdir s t; yes abcdefghij | head -c 300000 >s/a; ln -s ../t/s/a s/z
    a_first=$([ "$(ino s/a)" -lt "$(ino s/z)" ] && echo 1)
    uaio-cp -rL s t 2>err; rc=$?
    if [ -n "$a_first" ]; then
      [ $rc = 0 ] && cmp -s t/s/z s/a
    else		# dangling when met, as for cp
      [ $rc = 1 ] && grep -qx "uaio-cp: cannot stat 's/z': No such file or directory" err
    fi
  ) || fail "-rL: a link to a file the copy makes was not followed to it whole"
done
rmtree "$T/ov"
# (d into itself: which entries come before the copy depends on inode
# numbers, so the trees are not compared; g, made before d/d, must be in it)
SETUP='mkdir d; echo a >d/f; echo b >g'
both -M -r g d d
[ "$(stat -c %i "$T/u/d/g")" -lt "$(stat -c %i "$T/u/d/d")" ] && [ ! -e "$T/u/d/d/g" ] &&
  fail "cp -r g d d: d/d lacks g, which the first operand made"
# A source directory that is also the destination (cp -r . sub, with sub
# inside the source): its files the copy is still making were missed when
# it was read (review), where cp, one file after the other, copies them
# (in the order of their inodes, which the jobs make side by side: sorted).
# What cp makes here follows the inode numbers ext4 hands out, which
# differ between two directories: so uaio-cp alone, checked against cp's
# walk (copy_dir): entries in inode order; at the new copy bak/bak ("into
# itself") the walk of bak stops, and so does the walk of . above it.
rmtree "$T/u"
mkdir "$T/u" && (cd "$T/u" && for i in 1 2 3 4 5 6; do echo $i >f$i; done && mkdir bak &&
  echo old >bak/keep && exec uaio-cp -r . bak) >"$T/u.out" 2>"$T/u.err"
rc=$?
[ $rc = 1 ] && grep -qx "uaio-cp: cannot copy a directory, '.', into itself, 'bak/.'" "$T/u.err" ||
  fail "cp -r . bak: exit $rc, $(cat "$T/u.err")"
for i in 1 2 3 4 5 6; do
  if [ -e "$T/u/bak/f$i" ]; then
    if [ "$(ino "$T/u/bak/f$i")" -lt "$(ino "$T/u/bak/bak")" ]; then
      [ -f "$T/u/bak/bak/f$i" ] || fail "cp -r . bak: bak/bak/f$i missing"
    else
      [ ! -e "$T/u/bak/bak/f$i" ] || fail "cp -r . bak: bak/bak/f$i copied after bak/bak, which ends the walk"
    fi
  else
    [ "$(ino "$T/u/f$i")" -gt "$(ino "$T/u/bak")" ] || fail "cp -r . bak: f$i, walked before bak, not copied"
  fi
done
# -p onto a device whose write fails (/dev/full's kind): no metadata on it
if [ "$(id -u)" = 0 ]; then
  SETUP='head -c 100000 /dev/urandom >med; touch -d 2001-01-01 med; mknod full c 1 7; chmod 666 full; touch -d 2002-02-02 full'
  both -M -p med full
  [ "$(stat -c %a.%Y "$T/u/full")" = "$(stat -c %a.%Y "$T/g/full")" ] ||
    fail "cp -p med full: the device's mode or time changed"
fi
# A hard link that cannot replace a destination leaves it in place.
if [ $root = 1 ] && [ $have_nobody = 1 ]; then
  AS=$NOBODY
  SETUP='mkdir -p s e/s; echo data >s/a; ln s/a s/b; echo r >e/s/b; echo precious >e/s/a
    touch -d 2030-01-01 e/s/a e/s/b; chown -R 65534 .; chown 0 e/s/b; chmod 600 e/s/b'
  both -s -auv s e
  [ "$(cat "$T/u/e/s/a")" = precious ] || fail "a failed hard link removed the destination"
  # a name whose times could not be kept (-a: a failed copy, for cp) is
  # no link target for the next name of the same file
  SETUP='mkdir -p s t/s; echo 1 >s/a; ln s/a s/b; echo old >t/s/b; chmod -R a+rX s
    chown 65534 t/s t; chmod 666 t/s/b'
  both -s -M -av s t
  [ "$(stat -c %i "$T/u/t/s/a")" != "$(stat -c %i "$T/u/t/s/b")" ] ||
    fail "cp -a: a hard link made to a copy whose metadata failed"
  AS=
fi
# -au again over a copy with hard links: nothing left behind by the
# links that replace a destination that is already the right one.
# (-v's order follows inode numbers, made apart in each tree: sorted)
SETUP='mkdir s; echo x >s/a; ln s/a s/b; echo y >s/c; cp -a s d'
both -s -auv s d
# A directory copied under -p gets the source's default ACL or none.
if command -v setfacl >/dev/null && command -v getfacl >/dev/null; then
  SETUP='mkdir s dst e e/s; echo a >s/f; setfacl -d -m u:nobody:rwx dst e/s'
  if (cd "$T" && rm -rf acl && mkdir acl && setfacl -d -m u:nobody:rwx acl) 2>/dev/null; then
    both -a s dst/
    both -a s/. e/s
    for d in dst/s e/s; do
      [ -z "$(getfacl -p -d "$T/u/$d" 2>/dev/null | grep -v '^#' | grep .)" ] ||
        fail "-a: $d kept a default ACL the source does not have"
    done
  else
    echo "note: no ACLs on $(stat -f -c %T "$T")"
  fi
  rm -rf "$T/acl"
fi
# --preserve=xattr as a user: the u+w the attributes needed is taken back.
if [ $have_nobody = 1 ]; then
  AS=$NOBODY
  SETUP='mkdir d; chmod 777 d; echo a >f; chmod 444 f; echo b >g; chmod 4555 g'
  both --preserve=xattr f d/f
  both -r --preserve=xattr g d/g
  AS=
fi
# An attribute the destination refuses (security.* as a user): cp 9.1's
# libattr message (the attribute's name in both places), an error under
# --preserve=xattr, a warning under --preserve=all, nothing under -a.
if [ $have_nobody = 1 ] && (cd "$T" && : >xa && "$TC" --setxattr xa security.uaio 1) 2>/dev/null; then
  AS=$NOBODY
  SETUP='echo a >f; "$TC" --setxattr f security.uaio 1; "$TC" --setxattr f user.u 1'
  for o in --preserve=all --preserve=xattr -a "-a --preserve=xattr"; do both $o f x; done
  AS=
else
  echo "note: no security xattrs here (or no unprivileged user): refused attributes not tried"
fi
rm -f "$T/xa"
# Messages in the user's language, from coreutils' own catalog (libattr's
# for attributes), as cp says them, quotes and all: German where that
# catalog is installed.
if [ -f /usr/share/locale/de/LC_MESSAGES/coreutils.mo ]; then
  LC_ALL=C.UTF-8
  CPENV=LANGUAGE=de
  SETUP='echo a >a; echo b >b; mkdir d; ln -s nowhere dang'
  for c in "nope x" "a" "d x" "-v --remove-destination a b" "a a" "--sparse=x a b" \
	   "--re a b" "a dang" "-t a a" "-T d a" "--preserve=bogus a c"; do
    both $c
  done
  CPENV=
  LC_ALL=C
else
  echo "note: no German coreutils catalog here: translated messages not tried"
fi
# --strip-trailing-slashes in the SOURCE DEST form: left alone, as cp 9.1.
SETUP='mkdir d; ln -s d ld; echo a >f'
both -r --strip-trailing-slashes ld/ q
both --strip-trailing-slashes f/ g
both -v -T -r --strip-trailing-slashes d// e
SETUP='mkdir t; mkdir d; echo a >d/x'
both -v -r --strip-trailing-slashes d// t
# A clone that fails: each name of a hard-linked file fails on its own.
# (two failures each: their order follows inode numbers, made apart in
# each tree, so sorted)
SETUP='mkdir s; echo a >s/f; ln s/f s/hl'
both -s -M -a --reflink=always s e
[ -e "$T/u/e/hl" ] && [ "$(stat -c %h "$T/u/e/hl")" != 1 ] && [ "$(stat -c %h "$T/g/e/hl")" = 1 ] &&
  fail "--reflink=always: a name was linked to a copy that failed"
# A file whose clone failed keeps the mode it was made with (under -a
# no group or other bits, even where it was ours from the start); cp 9.1
# tries the clone whatever the source or destination (a device fails).
SETUP='mkdir s; echo a >s/a; chmod 664 s/a; echo b >s/b'
both -s -a --reflink=always s x
if [ $root = 1 ]; then
  SETUP='echo a >a; mknod nul c 1 3'
  both --reflink=always nul x
  both --reflink=always a nul
fi
# Names as cp's file_name_concat makes them: trailing slashes become one.
SETUP='mkdir -p x d/sub; echo a >f'
both -v f x//
both -rv d/// x//
both f x//f
# A new file whose name ends in a slash: the kernel's reason, as cp gives it.
SETUP='echo a >f'
both f nx/sub/
both f g/
# A copy into itself through a symlink to the directory.
SETUP='mkdir d; echo a >d/f; ln -s d ld'
both -M -r d ld/
# Names longer than PATH_MAX.
# (perl: a shell's cd goes by the whole path, which is too long here)
deep_names() {
  mkdir s && perl -e 'chdir "s" or die; $n = "a" x 255; for (1..20) { mkdir $n or die; chdir $n or die } open(F, ">f") or die'
}
SETUP=deep_names
both -M -r s d
# A tree that fits in PATH_MAX, into a target directory whose own name
# takes the rest: cp 9.1 names what it makes there relative to it (only
# the part below must fit), times and owners too, modes by the whole
# name (-a: "preserving permissions" for the deepest). A file, a
# symlink, a hard link and a fifo at the bottom. uaio-cp gave up at the
# first name past PATH_MAX.
T200=$(printf 'T%.0s' $(seq 200))
deep_into_long() {
  mkdir s "$T200" && perl -MPOSIX -e 'chdir "s" or die; $n = "n" x 50; for (1..78) { mkdir $n or die; chdir $n or die } open(F, ">f") or die; symlink("f", "l") or die; link("f", "h") or die; mkfifo("p", 0640) or die'
}
SETUP=deep_into_long
both -M -r s "$T200"
both -M -a s "$T200"
both -M -r -t "$T200" s
# ... and the modes given back at the end there: a read-only directory
# (u+rwx while it is filled), and, at umask 000, a 0777 one (its bits
# left out at creation); both went by the whole name (an error for the
# first, the second silently narrower).
deep_modes() {
  deep_into_long && perl -e 'chdir "s" or die; $n = "n" x 50; for (1..78) { chdir $n or die } mkdir "ro" or die; open(F, ">ro/f") or die; close F; chmod 0500, "ro"; mkdir "wide" or die; chmod 0777, "wide"'
}
bottom_modes() {
  perl -e 'chdir $ARGV[0] or die; chdir $ARGV[1] or die; chdir "s" or die; $n = "n" x 50; for (1..78) { chdir $n or die } printf "%o %o\n", (stat "ro")[2] & 07777, (stat "wide")[2] & 07777' "$1" "$T200"
}
SETUP=deep_modes
UM=000
both -M -r s "$T200"
[ "$(bottom_modes "$T/g")" = "$(bottom_modes "$T/u")" ] ||
  fail "modes below a long target: cp $(bottom_modes "$T/g"), uaio-cp $(bottom_modes "$T/u")"
UM=022
# Messages in the walk's order: a dangling destination symlink is known
# when the walk meets it, not when a job fails. (Sorted: the walk goes in
# inode order, and the two trees' s/f and s/dl need not have their
# inodes in the same order: ext4 places a new directory's elsewhere.)
SETUP='mkdir -p s e/s; echo a >s/f; ln -s nowhere e/s/f; mkdir s/dl; echo >e/s/dl'
both -s -r s e
SETUP=:
ok "operands in order, hard links that cannot replace, default ACLs, u+w for xattrs, --strip-trailing-slashes, failed clones, name joins, long names, message order"

# A directory into itself, as cp 9.1's same_name sees it: a destination
# name right in the target directory is relative to that directory
# (its symlinks followed), any other path is looked at with lstat.
SETUP='mkdir d; echo a >d/f; ln -s d ld'
both -M -r d ld/
SETUP='mkdir -p s/sub; echo a >s/f; echo b >s/sub/g; ln -s s/sub ls'
both -s -M -rv s ls/y
# The same file through a symlinked parent is another name to cp.
SETUP='mkdir a t; echo x >a/f; ln -s a l'
both a/f l/f t
both -a a/f l/f t
# An existing device or FIFO is written as a stream: holes as zeros.
if [ $root = 1 ]; then
  SETUP='yes data | head -c 1000 >img; truncate -s 600000 img; yes tail | head -c 1000 >>img
    head -c 602112 /dev/zero | tr "\0" A >back; mknod nul c 1 3'
  both img nul
  both --sparse=always img nul
  if command -v losetup >/dev/null; then
    for s in g u; do
      rmtree "$T/$s"; mkdir "$T/$s" && (cd "$T/$s" && eval "$SETUP") || fail "setup"
      dev=$(losetup -f --show "$T/$s/back") || { echo "note: no loop device"; break; }
      (cd "$T/$s" && if [ $s = g ]; then cp img "$dev"; else uaio-cp img "$dev"; fi) ||
        fail "img onto a block device ($s)"
      losetup -d "$dev"
      cmp -s -n 601000 "$T/$s/img" "$T/$s/back" || fail "img onto a block device ($s): the device differs"
    done
  fi
fi
SETUP='truncate -s 1M h; mkfifo p'
for prog in cp uaio-cp; do
  rmtree "$T/fifo2"; mkdir "$T/fifo2" && (cd "$T/fifo2" && eval "$SETUP")
  (cd "$T/fifo2" && { wc -c <p >n & timeout 20 $prog h p; echo $? >rc; wait; }) 2>/dev/null
  [ "$(cat "$T/fifo2/rc")" = 0 ] && [ "$(cat "$T/fifo2/n")" = 1048576 ] ||
    fail "$prog: a sparse file onto a FIFO: rc $(cat "$T/fifo2/rc"), $(cat "$T/fifo2/n") bytes"
done
rmtree "$T/fifo2"
# --preserve=ownership without mode leaves an existing file's mode alone.
SETUP='echo src >f; chmod 755 f; echo old >e; chmod 600 e'
both --preserve=ownership f e
both -r --preserve=ownership,timestamps f e
# -H follows the operands only: inside the tree it is -P, so an existing
# symlink, FIFO or file where a symlink or FIFO goes is removed first
# (an operand's is not: "cannot create fifo ...: File exists"). Sorted:
# the two source trees need not number their entries alike.
SETUP='mkdir -p s e; ln -s f s/l; mkfifo s/p; ln -s x e/l; echo y >e/p'
both -s -rHv s/. e
both -rHv s/p e/p
SETUP=:
ok "same_name against the target directory, symlinked parents, devices and FIFOs as streams, --preserve=ownership on existing files"

# A directory copied into itself: GNU cp walks entries in inode order and
# stops at the copy it is making (coreutils copy_dir: "no point in
# continuing"), so d/d gets exactly the entries whose inode comes first.
# Where the new d/d's inode falls differs from tree to tree, so this is
# checked on uaio-cp's own tree rather than against GNU cp's.
rmtree "$T/u"
mkdir -p "$T/u/d/sub" && for i in $(seq 40); do echo "$i" >"$T/u/d/f$i"; done
rm "$T/u/d/f7" "$T/u/d/f23"	# free inodes: d/d may take one
(cd "$T/u" && uaio-cp -r d d) 2>/dev/null && fail "cp -r d d: exit 0"
cut=$(stat -c %i "$T/u/d/d")
for e in "$T/u/d"/*; do
  n=${e##*/}
  [ "$n" = d ] && continue
  if [ "$(stat -c %i "$e")" -lt "$cut" ]; then
    [ -e "$T/u/d/d/$n" ] || fail "cp -r d d: d/d/$n missing (its inode comes before d/d's)"
  else
    [ -e "$T/u/d/d/$n" ] && fail "cp -r d d: d/d/$n copied (its inode comes after d/d's)"
  fi
done
ok "a directory into itself: the entries before the new copy, in inode order, as GNU cp"

# -v lines (any order), -n keeps, -u copies only what is newer.
SETUP=:
both -s -rv ../src dst
both -s -av ../src dst
SETUP='mkdir dst'
both -s -rv ../src/d ../src/z1 dst
SETUP='echo old >keep; echo new >new; touch -d 2001-01-01 keep; touch -d 2002-01-01 new'
both -n new keep
tc "$T/g" "$T/u" --strict-holes
[ "$(cat "$T/u/keep")" = old ] || fail "-n replaced an existing file"
both -nv new keep
tc "$T/g" "$T/u" --strict-holes
both -u keep new
tc "$T/g" "$T/u" --strict-holes
[ "$(cat "$T/u/new")" = new ] || fail "-u replaced a newer file"
both -uv new keep
[ "$(cat "$T/u/keep")" = new ] || fail "-u kept an older file"
both -u -p new keep
tc "$T/g" "$T/u" --strict-holes
SETUP='mkdir -p a/s b/s; echo 1 >a/s/x; echo 2 >b/s/x; echo 3 >a/y; touch -d 2001-01-01 a/s/x; touch -d 2002-01-01 b/s/x a/y'
both -s -ru a/. b
both -s -rn a/. b
ok "-v output, -n, -u"

exit $failed
