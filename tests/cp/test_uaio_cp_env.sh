#!/bin/sh
# uaio-cp against GNU cp (9.1) in the copy's surroundings: run as nobody,
# a full tmpfs, the source on another file system, a tree deeper than its
# directory descriptors under RLIMIT_NOFILE, FIFOs without -R, the page
# cache's state, stdout that fails or is closed, closed standard
# descriptors, a reader gone (SIGPIPE), a file past RLIMIT_FSIZE
# (SIGXFSZ), a tight descriptor limit, a destination with 1-second
# timestamps (-u) or without ACLs, a source whose ACL cannot be read. The
# cases and their comparison as in test_uaio_cp.sh (lib.sh).
# Usage: test_uaio_cp_env.sh TOOL TREECMP. Exit 0 pass, 1 fail, 77 skip.

. "$(dirname "$0")/lib.sh"

# Unprivileged: -f replaces a read-only file; unreadable entries.
if [ $have_nobody = 1 ]; then
  AS=$NOBODY
  SETUP='echo new >new; echo old >ro; chmod 0444 ro'
  both new ro
  both -f new ro
  [ "$(cat "$T/u/ro")" = new ] || fail "-f did not replace a read-only file"
  SETUP='mkdir -p s/sub s/closed; echo a >s/a; echo b >s/noread; echo c >s/closed/c; echo d >s/sub/d
    chmod 0000 s/noread s/closed; touch -d 2001-01-01 s/a s/sub/d s/sub s/closed s'
  both -s -r s dst
  [ $urc = 1 ] && grep -qx "uaio-cp: cannot open 's/noread' for reading: Permission denied" "$T/u.err" &&
    grep -qx "uaio-cp: cannot access 's/closed': Permission denied" "$T/u.err" &&
    [ -f "$T/u/dst/sub/d" ] && [ -f "$T/u/dst/a" ] ||
    { cat "$T/u.err"; fail "unreadable entries: exit 1, messages, the rest copied"; }
  both -s -a s dst
  tc "$T/g/dst" "$T/u/dst" --dir-times --strict-holes
  AS=
  who="as nobody"
  [ $root = 1 ] || who="not root"
  ok "-f over a 0444 file; unreadable file and directory ($who)"
else
  echo "skip: -f and unreadable entries (setpriv cannot switch to nobody)"
fi

# No space left: a 1 MiB tmpfs.
enospc() { # PROG ARGS...: copies into the full file system
  prog=$1
  shift
  umount "$mnt" 2>/dev/null
  mount -t tmpfs -o size=1m,mode=0755 tmpfs "$mnt" || fail "mounting a tmpfs"
  (cd "$T/nospc" && exec "$prog" "$@") >"$T/ns.out" 2>"$T/ns.err" </dev/null
  rc=$?
  what="$prog $* (1 MiB tmpfs)"
  [ $rc = 1 ] || { cat "$T/ns.err"; fail "$what: exit status $rc, not 1"; }
  grep -q 'No space left on device' "$T/ns.err" || { cat "$T/ns.err"; fail "$what: no ENOSPC message"; }
  for f in $(cd "$mnt" && find . -type f); do
    if [ "$(stat -c %s "$mnt/$f")" = "$(stat -c %s "$T/nospc/$f")" ] && ! cmp -s "$mnt/$f" "$T/nospc/$f"; then
      fail "$what: $f has the source's size but not its contents"
    fi
  done
}
if [ $root = 1 ] && mkdir "$T/full" && mount -t tmpfs -o size=1m tmpfs "$T/full" 2>/dev/null; then
  mnt=$T/full
  mkdir -p "$T/nospc/tree/a" "$T/nospc/tree/b" || fail "mkdir"
  head -c 3145728 /dev/urandom >"$T/nospc/big"
  ln "$T/nospc/big" "$T/nospc/biglink"	# its copy fails: the link waits, then tries
  for i in 1 2 3 4 5 6; do head -c 300000 /dev/urandom >"$T/nospc/tree/a/f$i"; done
  for prog in cp uaio-cp; do
    enospc $prog big "$mnt/"
    enospc $prog -r tree "$mnt/"
    enospc $prog -a big tree "$mnt/"
    enospc $prog -a big biglink "$mnt/"
  done
  # Source and copy on one file system: copy_file_range fails, and cp
  # 9.1 says "error copying" (uaio-cp said "error writing").
  umount "$mnt"
  mount -t tmpfs -o size=5m tmpfs "$mnt" || fail "mounting a tmpfs"
  mkdir "$mnt/s" && head -c 3000000 /dev/urandom >"$mnt/s/a" || fail "source on the tmpfs"
  for prog in cp uaio-cp; do
    rm -rf "$mnt/o"
    (cd "$mnt" && exec $prog -r s o) 2>"$T/ns.err" </dev/null
    rc=$?
    [ $rc = 1 ] || { cat "$T/ns.err"; fail "$prog -r on one full tmpfs: exit $rc, not 1"; }
    grep -qx "$prog: error copying 's/a' to 'o/a': No space left on device" "$T/ns.err" ||
      { cat "$T/ns.err"; fail "$prog -r on one full tmpfs: not cp's message"; }
  done
  # Several files above 128 KiB on that one file system, by flows side by
  # side: copy_file_range's ENOSPC is cp's "error copying" for each.
  rm -rf "$mnt/s" "$mnt/o" && mkdir "$mnt/s" || fail "mkdir on the tmpfs"
  for i in 1 2 3 4 5 6 7; do head -c 400000 /dev/urandom >"$mnt/s/f$i"; done
  (cd "$mnt" && exec uaio-cp -r s o) 2>"$T/ns.err" </dev/null
  rc=$?
  [ $rc = 1 ] || { cat "$T/ns.err"; fail "uaio-cp -r of 7 files onto their full tmpfs: exit $rc, not 1"; }
  grep -q . "$T/ns.err" && ! grep -vqx "uaio-cp: error copying 's/f[1-7]' to 'o/f[1-7]': No space left on device" "$T/ns.err" ||
    { cat "$T/ns.err"; fail "uaio-cp -r of 7 files onto their full tmpfs: not cp's message"; }
  for i in 1 2 3 4 5 6 7; do
    [ "$(stat -c %s "$mnt/o/f$i")" != 400000 ] || cmp -s "$mnt/s/f$i" "$mnt/o/f$i" ||
      fail "uaio-cp -r onto a full tmpfs: o/f$i has the size but not the contents"
  done
  # Small files too: cp 9.1 copies them by copy_file_range as well, so
  # "error copying" (uaio-cp, writing them whole or through its buffer,
  # said "error writing"), whichever small-file strategy runs.
  umount "$mnt"
  mount -t tmpfs -o size=1m tmpfs "$mnt" || fail "mounting a tmpfs"
  mkdir "$mnt/s" || fail "mkdir"
  for i in 1 2 3 4 5 6 7 8; do head -c 100000 /dev/urandom >"$mnt/s/f$i"; done
  for sm in '' work uring inline; do
    for prog in cp uaio-cp; do
      rm -rf "$mnt/o"
      (cd "$mnt" && UAIO_CP_SMALL=$sm exec $prog -r s o) 2>"$T/ns.err" </dev/null
      rc=$?
      what="$prog -r of small files on one full tmpfs${sm:+ (UAIO_CP_SMALL=$sm)}"
      [ $rc = 1 ] || { cat "$T/ns.err"; fail "$what: exit $rc, not 1"; }
      grep -q . "$T/ns.err" && ! grep -vx "$prog: error copying 's/f[1-8]' to 'o/f[1-8]': No space left on device" "$T/ns.err" ||
        { cat "$T/ns.err"; fail "$what: not cp's message"; }
    done
  done
  umount "$mnt"
  mnt=
  ok "ENOSPC: exit 1, 'No space left on device', no full-size file with other contents"
else
  echo "skip: ENOSPC (needs root to mount a 1 MiB tmpfs)"
fi

# Another file system: the source on tmpfs (/dev/shm), the copy on /var/tmp.
if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && S=$(mktemp -d /dev/shm/uaio-cp-test-XXXXXX); then
  chmod 755 "$S"
  make_tree "$S/src" || fail "making the tree on /dev/shm"
  SETUP=:
  both -s -a "$S/src" dst
  tc "$S/src" "$T/u/dst" --dir-times
  tc "$T/g/dst" "$T/u/dst" --dir-times --strict-holes
  rmtree "$S"
  S=
  ok "-a from tmpfs to $(stat -f -c %T "$T")"
else
  echo "skip: no tmpfs at /dev/shm"
fi

# -u with times preserved, onto a file system that keeps whole seconds
# (ext4 with 128-byte inodes): cp cuts the source's time to that
# resolution before comparing (gnulib utimecmp), so a second cp -au
# copies nothing; plain -u compares the times as they are. An older
# uaio-cp copied every file again.
sec=$T/sec
if mount_ext4 sec -I 128; then
  mnt=$sec
  echo new >"$T/half"
  touch -d @1700000001.5 "$T/half"	# odd second: 1 s, not FAT's 2 s
  for prog in cp uaio-cp; do
    for fl in -au -u -pu; do
      d="$sec/$prog$fl"
      echo old >"$d" && touch -d @1700000001 "$d" || fail "making $d"
      (cd "$T" && exec $prog $fl half "$d") 2>"$T/sec.err" </dev/null ||
        { cat "$T/sec.err"; fail "$prog $fl onto 1-second times"; }
      t=$(stat -c %y "$d")
      [ $fl = -u ] && t=	# now, whoever copied
      echo "$fl $(cat "$d") $t" >>"$T/sec.$prog"
    done
  done
  diff "$T/sec.cp" "$T/sec.uaio-cp" || fail "-u onto 1-second timestamps: not cp's result"
  grep -q -- '-au old' "$T/sec.cp" && grep -q -- '-u new' "$T/sec.cp" ||
    { cat "$T/sec.cp"; fail "-u onto 1-second timestamps: cp itself did otherwise than expected"; }
  # On a grpid (BSD groups) mount a new file takes its directory's group:
  # -a sets the source's group on files inside a copied directory too
  # (uaio-cp skipped that fchown for files of our own group).
  if mount -o remount,grpid "$sec" 2>/dev/null && mkdir "$sec/gd" && chgrp 5678 "$sec/gd" &&
     mkdir -p "$T/gsrc/sub" && echo z >"$T/gsrc/f" && echo y >"$T/gsrc/sub/g"; then
    for prog in cp uaio-cp; do
      (cd "$T" && exec $prog -a gsrc "$sec/gd/$prog") || fail "$prog -a onto a grpid mount"
    done
    for f in . f sub sub/g; do
      [ "$(stat -c %g "$sec/gd/cp/$f")" = "$(stat -c %g "$sec/gd/uaio-cp/$f")" ] ||
        fail "-a onto a grpid mount: $f has group $(stat -c %g "$sec/gd/uaio-cp/$f"), cp's $(stat -c %g "$sec/gd/cp/$f")"
    done
  fi
  umount "$sec"
  mnt=
  ok "-u, -au, -pu onto 1-second timestamps (ext4, 128-byte inodes); -a onto a grpid mount"
else
  echo "skip: -u onto 1-second timestamps (needs root, mkfs.ext4 and a loop device)"
fi

# An extended ACL the destination cannot hold (ramfs has no xattrs): cp
# says "preserving permissions" for each file, exits 1, and under -a does
# not link a later name to a copy that failed so. uaio-cp dropped the ACL
# without a word.
acl=$T/acl
if [ $root = 1 ] && command -v setfacl >/dev/null && mkdir "$acl" "$T/aclsrc" &&
   mount -t ramfs ramfs "$acl" 2>/dev/null; then
  mnt=$acl
  echo a >"$T/aclsrc/f" && setfacl -m u:nobody:r "$T/aclsrc/f" && ln "$T/aclsrc/f" "$T/aclsrc/hf" ||
    fail "making a file with an ACL"
  for prog in cp uaio-cp; do
    (cd "$T" && exec $prog -a aclsrc "$acl/$prog") >"$T/acl.$prog.out" 2>&1 </dev/null
    echo "rc $?" >>"$T/acl.$prog.out"
    (cd "$T" && exec $prog -p aclsrc/f "$acl/$prog.p") >>"$T/acl.$prog.out" 2>&1 </dev/null
    echo "rc $?" >>"$T/acl.$prog.out"
    sed -i "s|^$prog:|PROG:|; s|$acl/$prog|DST|" "$T/acl.$prog.out"
    stat -c '%h %a' "$acl/$prog/f" "$acl/$prog/hf" "$acl/$prog.p" >>"$T/acl.$prog.out"
  done
  sort "$T/acl.cp.out" >"$T/acl.cp.sorted"	# the two names in any order
  sort "$T/acl.uaio-cp.out" >"$T/acl.uaio-cp.sorted"
  diff "$T/acl.cp.sorted" "$T/acl.uaio-cp.sorted" || fail "an ACL ramfs cannot hold: not cp's messages, status, links"
  grep -q 'preserving permissions' "$T/acl.cp.out" || fail "an ACL ramfs cannot hold: cp itself said nothing"
  # --preserve=xattr named, and attributes ramfs cannot hold: cp stops a
  # directory's or FIFO's metadata there (left with the u+rwx it was made
  # with, no mode set) and counts a file's copy as failed (no link to it).
  if command -v setfattr >/dev/null && mkdir -p "$T/xs/d" "$T/xs/r" && mkfifo "$T/xs/p" &&
     echo x >"$T/xs/f" && ln "$T/xs/f" "$T/xs/hf" && chmod 1777 "$T/xs/d" && chmod 0555 "$T/xs/r" &&
     setfattr -n user.a -v 1 "$T/xs/d" && setfattr -n user.a -v 1 "$T/xs/r" &&
     setfattr -n trusted.a -v 1 "$T/xs/p" && setfattr -n user.b -v 2 "$T/xs/f"; then
    for prog in cp uaio-cp; do
      for fl in -a -r; do
        (cd "$T" && exec $prog $fl --preserve=xattr xs "$acl/x$prog$fl") >"$T/x.$prog" 2>&1 </dev/null
        echo "rc $?" >>"$T/x.$prog"
        sed -i "s|^$prog:|PROG:|; s|$acl/x$prog|DST|" "$T/x.$prog"
        sort "$T/x.$prog" >>"$T/x.$prog.all"
        (cd "$acl/x$prog$fl" && stat -c "$fl %a %h %n" d r p f hf) >>"$T/x.$prog.all"
      done
    done
    diff "$T/x.cp.all" "$T/x.uaio-cp.all" || fail "--preserve=xattr onto ramfs: not cp's result"
  fi
  umount "$acl"
  mnt=
  ok "an ACL or attributes the destination cannot hold: cp's messages, status, modes, no link to a failed copy"
else
  echo "skip: an ACL the destination cannot hold (needs root, setfacl, ramfs)"
fi

# A source whose ACL cannot be read any more (gone since it was copied:
# ENOENT, here injected by strace into every xattr read of both tools):
# cp's copy_acl names the source, sets no mode (what mkdir and open made
# stays) and -a fails. uaio-cp set the mode and said nothing, status 0.
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
  mkdir -p "$T/gone/d/e" && echo hi >"$T/gone/d/f" && chmod 0750 "$T/gone/d" &&
    chmod 0640 "$T/gone/d/f" || fail "making the ACL-less source"
  # (LeakSanitizer cannot stop threads under a tracer: no leak check there)
  for prog in cp uaio-cp; do
    (cd "$T/gone" && ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" &&
     export ASAN_OPTIONS && exec strace -f -o /dev/null \
       -e inject=getxattr,lgetxattr,fgetxattr,listxattr,llistxattr,flistxattr:error=ENOENT \
       $prog -a d "$prog") >"$T/gone.$prog" 2>&1 </dev/null
    echo "rc $?" >>"$T/gone.$prog"
    sed -i "s|^$prog:|PROG:|" "$T/gone.$prog"
    sort "$T/gone.$prog" >"$T/gone.$prog.s"
    (cd "$T/gone/$prog" && stat -c '%a %n' . e f) >>"$T/gone.$prog.s"
  done
  diff "$T/gone.cp.s" "$T/gone.uaio-cp.s" || fail "a source's ACL unreadable: not cp's messages, status, modes"
  grep -q "^PROG: 'd': No such file" "$T/gone.cp.s" || fail "a source's ACL unreadable: cp said $(cat "$T/gone.cp.s")"
  ok "a source whose ACL cannot be read: named, no mode set, status 1, as cp"
else
  echo "skip: a source whose ACL cannot be read (needs strace)"
fi

# -p over a file that exists with another owner: cp's set_owner first
# narrows it, through its ACL, to the owner bits both modes share, then
# chowns. A set-group-ID bit stays through the ACL and, with no group
# execute left, through the chown (cp ends with 2644); uaio-cp chowned
# first and the kernel cleared it (644). Not the file's owner, the ACL
# write fails: cp makes no chown and fails, saying nothing (uaio-cp said
# "preserving permissions"). A followed symlink to a directory (-L, -H):
# cp reads its ACLs through the link; uaio-cp read the link's, none.
if [ $root = 1 ]; then
  SETUP='echo hello >s; chmod 644 s; echo old >d; chown 1234:5678 d; chmod 2755 d'
  both -p s d
  both --preserve=ownership,mode s d
  SETUP='mkdir e; chown 1234:5678 e; chmod 2775 e; echo x >e/f; mkdir s; chmod 750 s; cp -p e/f s/'
  both -a s/. e
  if [ $have_nobody = 1 ]; then
    SETUP='echo hello >s; chmod 644 s; chown 65534 s; echo old >d; chmod 666 d'
    AS=$NOBODY
    both --preserve=mode,ownership s d
    both -p s d
    AS=
  fi
  ok "-p over a file of another owner: narrowed through its ACL before the chown, as cp"
  if command -v setfacl >/dev/null && setfacl -m u:1234:rwx "$T" 2>/dev/null; then
    setfacl -b "$T"
    SETUP='mkdir s; chmod 750 s; setfacl -m u:1234:rwx s; setfacl -d -m o::--- s
           echo f >s/f; setfacl -m u:1234:r s/f; ln -s s ls; mkdir w; ln -s ../s w/l'
    both -rLp ls o
    both -a -H ls o
    both -rL --preserve=mode w o
    both -a w o
    ok "a followed symlink to a directory: its ACLs copied, as cp"
  fi
fi

# 10 000 files in 100 directories.
mkdir "$T/many" || fail mkdir
i=0
while [ $i -lt 100 ]; do
  mkdir "$T/many/d$i" || fail mkdir
  j=0
  while [ $j -lt 100 ]; do
    echo "$i $j" >"$T/many/d$i/f$j"
    j=$((j + 1))
  done
  i=$((i + 1))
done
chmod 0600 "$T/many/d7/f7"
touch -d '2001-02-03 04:05:06.5' "$T/many/d9"
SETUP=:
both -s -a ../many dst
tc "$T/many" "$T/u/dst" --dir-times
tc "$T/g/dst" "$T/u/dst" --dir-times --strict-holes
ok "-a of 10000 files"

# -a skips the fchown and fchmod that would change nothing (a file of ours,
# in a directory that gives it our group and the mode asked): not in a
# set-group-ID directory of another group, where the group must still be
# set back; nor for a mode the umask would cut.
if [ $root = 1 ]; then
  SETUP='mkdir dst && chgrp 5678 dst && chmod 2775 dst && mkdir src src/d &&
    echo a >src/a && echo b >src/d/b && echo c >src/c && chmod 0664 src/c && chmod 2755 src/d'
  for UM in 022 002; do
    both -a src/a src/c src/d dst
    for f in a c d d/b; do
      [ "$(stat -c %g "$T/u/dst/$f")" = 0 ] || fail "-a into a set-group-ID directory: dst/$f has group $(stat -c %g "$T/u/dst/$f")"
    done
  done
  UM=022
  SETUP=:
  ok "-a: the owner and mode of new files in a set-group-ID directory, umask 022 and 002"
fi

# A tree deeper than the directories that may hold descriptors (32), with
# an unreadable file and a private directory on the way: under a limit
# that leaves descriptors to some directories and under one that leaves
# them to none (every entry by path), the same copy as GNU cp's.
mkdir "$T/deep" || fail mkdir
p="$T/deep"
i=0
while [ $i -lt 45 ]; do
  p="$p/l$i"
  mkdir "$p" && echo "$i" >"$p/f" && ln -s f "$p/s" || fail mkdir
  i=$((i + 1))
done
chmod 0700 "$T/deep/l0/l1/l2"
chmod 0000 "$T/deep/l0/l1/l2/l3/l4/l5/l6/l7/l8/l9/l10/l11/l12/l13/l14/l15/l16/l17/l18/l19/l20/l21/l22/l23/l24/l25/l26/l27/l28/l29/l30/l31/l32/l33/l34/l35/f"
SETUP='cp -a "$T/deep" deep'
# (treecmp, which holds a descriptor per level, compares outside the limit)
for lim in 200 40; do
  NOFILE=$lim
  both -M -a deep dst
  what="deep tree, -a, ulimit -n $lim"
  tc "$T/g/dst" "$T/u/dst" --strict-holes --dir-times
  if [ $have_nobody = 1 ]; then
    AS=$NOBODY
    both -M -r deep dst
    AS=
    what="deep tree, -r as nobody, ulimit -n $lim"
    tc "$T/g" "$T/u" --no-times --strict-holes
  fi
done
NOFILE=$(ulimit -n)
SETUP=:
ok "a tree 45 deep, with and without directory descriptors"

# Without -R a fifo is read into a regular file, as cp does, whichever
# small-file strategy runs (pread(2) cannot read a fifo).
mkdir -p "$T/fifo"
for sm in work uring inline; do
  rm -f "$T/fifo/p" "$T/fifo/out"
  mkfifo "$T/fifo/p" || fail "mkfifo"
  (printf 'through a fifo\n' >"$T/fifo/p" &)
  UAIO_CP_SMALL=$sm uaio-cp --reflink=never "$T/fifo/p" "$T/fifo/out" 2>"$T/err" ||
    { cat "$T/err"; fail "fifo without -R (UAIO_CP_SMALL=$sm) exited $?"; }
  [ -f "$T/fifo/out" ] && [ "$(cat "$T/fifo/out")" = "through a fifo" ] ||
    fail "fifo without -R (UAIO_CP_SMALL=$sm): not a regular file with the fifo's data"
done
ok "a fifo without -R is read into a file (every small-file strategy)"

# The default small-file strategy follows the page cache: a directory whose
# first small file is not cached goes by io_uring, one whose first is, whole
# on a worker thread; either way the tree cp -a makes.
mkdir -p "$T/cold/src/a" "$T/cold/src/b"
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
  head -c $((i * 997)) /dev/urandom >"$T/cold/src/a/f$i"
  head -c $((i * 991)) /dev/urandom >"$T/cold/src/b/f$i"
done
sync
for f in "$T/cold/src/a"/*; do dd if="$f" iflag=nocache count=0 status=none; done
cp -a "$T/cold/src" "$T/cold/g" || fail "cp -a of the cold tree"
uaio-cp -a "$T/cold/src" "$T/cold/u" 2>"$T/err" || { cat "$T/err"; fail "uaio-cp -a of the cold tree"; }
what="half-cold tree" tc "$T/cold/g" "$T/cold/u" --dir-times
what="half-cold tree" tc "$T/cold/src" "$T/cold/u" --dir-times
ok "a tree half out of the page cache: the tree cp -a makes (auto small-file strategy)"

uaio-cp --help >"$T/out" 2>"$T/err" || fail "--help exit status $?"
[ "$(head -n 1 "$T/out")" = "Usage: uaio-cp [OPTION]... [-T] SOURCE DEST" ] ||
  { head -n 3 "$T/out"; fail "--help's first line"; }
[ -s "$T/err" ] && { cat "$T/err"; fail "--help wrote to stderr"; }
uaio-cp --version >"$T/out" 2>"$T/err" || fail "--version exit status $?"
[ -s "$T/out" ] || fail "--version printed nothing"
# Output that stdout could not take: cp's close_stdout, status 1.
if [ -w /dev/full ]; then
  for a in --help --version; do
    uaio-cp $a >/dev/full 2>"$T/err" && fail "$a >/dev/full: exit 0"
    grep -qx "uaio-cp: write error: No space left on device" "$T/err" ||
      { cat "$T/err"; fail "$a >/dev/full: no write error"; }
  done
  # a message stderr could not take (cp's close_stdout closes it too)
  echo x >"$T/ctx"
  for c in cp uaio-cp; do
    rm -f "$T/ctx.$c"
    $c --context=x "$T/ctx" "$T/ctx.$c" 2>/dev/full
    echo $? >"$T/rc.$c"
  done
  [ "$(cat "$T/rc.uaio-cp")" = "$(cat "$T/rc.cp")" ] ||
    fail "--context=x 2>/dev/full: exit $(cat "$T/rc.uaio-cp"), cp's $(cat "$T/rc.cp")"
fi
ok "--help, --version"

# Standard descriptors closed (>&- and the like): a file opened or made
# takes the lowest free number, so -v's lines must not land in a copy.
# cp's status and messages are the reference (write error, status 1).
# 1500 long names: -v's output is far more than stdio's buffer, written
# out while copies are open.
mkdir -p "$T/closed/s"
i=0
while [ $i -lt 1500 ]; do
  echo "file $i" >"$T/closed/s/a_file_with_a_rather_long_name_$i"
  i=$((i + 1))
done
for c in '>&-' '2>&-' '<&-' '<&- >&- 2>&-'; do
  for prog in cp uaio-cp; do
    rmtree "$T/closed/$prog"
    mkdir "$T/closed/$prog"
    (cd "$T/closed" && eval "exec $prog -p -v s/* $prog $c") 2>"$T/closed/$prog.err"
    echo $? >"$T/closed/$prog.rc"
  done
  sed 's/^cp: /uaio-cp: /' "$T/closed/cp.err" >"$T/closed/cp.err.n"
  [ "$(cat "$T/closed/cp.rc")" = "$(cat "$T/closed/uaio-cp.rc")" ] &&
    cmp -s "$T/closed/cp.err.n" "$T/closed/uaio-cp.err" ||
    { cat "$T/closed/cp.err" "$T/closed/uaio-cp.err"
      fail "-p -v s/* DIR $c: status $(cat "$T/closed/uaio-cp.rc"), cp's $(cat "$T/closed/cp.rc")"; }
  what="-p -v s/* DIR $c" tc "$T/closed/cp" "$T/closed/uaio-cp"
done
ok "closed stdin, stdout, stderr: nothing written into a copy, cp's status"

# A name of the closed descriptor itself (/dev/stdin <&-, /dev/stdout
# >&-) leads nowhere for cp (status 1, nothing made); the stand-in
# holding the number must not be reopened through it (/dev/null: an
# empty copy, or the file written into nothing, and status 0). The
# messages differ (cp's stat finds nothing, the stand-in cannot be
# opened), the status and the files must not.
if [ -e /proc/self/fd ]; then
  echo data >"$T/closed/one"
  for c in '/dev/stdin n <&-' 'one /dev/stdout >&-' '/dev/fd/2 n 2>&-' 'one /dev/fd/0 <&-'; do
    for prog in cp uaio-cp; do
      rmtree "$T/closed/$prog"
      mkdir "$T/closed/$prog"
      cp -p "$T/closed/one" "$T/closed/$prog/one"
      (cd "$T/closed/$prog" && eval "exec $prog $c") 2>"$T/closed/$prog.err"
      echo $? >"$T/closed/$prog.rc"
    done
    [ "$(cat "$T/closed/cp.rc")" = "$(cat "$T/closed/uaio-cp.rc")" ] ||
      { cat "$T/closed/cp.err" "$T/closed/uaio-cp.err"
        fail "$c: status $(cat "$T/closed/uaio-cp.rc"), cp's $(cat "$T/closed/cp.rc")"; }
    what="$c" tc "$T/closed/cp" "$T/closed/uaio-cp"
  done
  ok "closed stdin, stdout, stderr named as a file: nothing read or written through /dev/null"
fi

# same_end X WHAT: uaio-cp ended as GNU cp did, status ($T/PROG.Xrc) and
# messages ($T/PROG.Xerr) alike.
same_end() {
  sed 's/^cp: /uaio-cp: /' "$T/cp.$1err" >"$T/cp.$1err.n"
  [ "$(cat "$T/cp.$1rc")" = "$(cat "$T/uaio-cp.$1rc")" ] &&
    cmp -s "$T/cp.$1err.n" "$T/uaio-cp.$1err" ||
    { cat "$T/cp.$1err" "$T/uaio-cp.$1err"
      fail "$2: status $(cat "$T/uaio-cp.$1rc"), cp's $(cat "$T/cp.$1rc")"; }
}

# A pipe whose reader has gone: cp's write raises SIGPIPE and cp dies of
# it, silently (status 141); with SIGPIPE ignored, an error and status 1.
# GNU cp's own status is the reference: a test run with SIGPIPE ignored
# from the start (systemd's default) cannot have it reset by sh.
# 4 MB: far more than a pipe holds, so the write meets the closed end.
seq 1 600000 >"$T/pipe.src"
for ign in '' "trap '' PIPE;"; do
  for prog in cp uaio-cp; do
    { (eval "$ign"; exec $prog "$T/pipe.src" /dev/stdout) 2>"$T/$prog.perr"
      echo $? >"$T/$prog.prc"; } | head -c 5 >/dev/null
  done
  same_end p "FILE /dev/stdout | head -c 5 ($ign)"
done
ok "a pipe closed by its reader"

# A file past RLIMIT_FSIZE: cp's write raises SIGXFSZ and cp dies of it,
# silently (status 153); with SIGXFSZ ignored, an error and status 1. (The
# kernel raises it for a write(2) of the program's, not for io_uring's or
# a blocked worker's: uaio-cp exited 1.) A small file and one for a flow;
# GNU cp's status and messages are the reference, as for SIGPIPE.
head -c 100000 /dev/urandom >"$T/fsize.small"
head -c 3000000 /dev/urandom >"$T/fsize.big"
for ign in '' "trap '' XFSZ;"; do
  for f in small big; do
    for prog in cp uaio-cp; do
      rm -f "$T/fsize.out"
      # (the outer subshell keeps sh's "File size limit exceeded" out)
      ( (eval "$ign"; ulimit -c 0 && ulimit -f 50 && exec $prog "$T/fsize.$f" "$T/fsize.out") \
          2>"$T/$prog.ferr" </dev/null
        echo $? >"$T/$prog.frc" ) 2>/dev/null
    done
    same_end f "$f file past ulimit -f 50 ($ign)"
  done
done
rm -f "$T/fsize.small" "$T/fsize.big" "$T/fsize.out"
ok "a file past RLIMIT_FSIZE"

# A tight RLIMIT_NOFILE (GNU cp needs 2 past its 0-2: a source and a
# destination; uaio-cp 2 more, its ring and eventfd): the walk waits for
# the job before it opens the next source, directory or destination,
# instead of failing with EMFILE.
SETUP='mkdir -p s/d/e s/x; echo a >s/a; echo b >s/d/b; echo c >s/d/e/c; seq 1 300000 >s/d/big; ln -s a s/l'
for NOFILE in 7 8; do
  both -a s t
done
NOFILE=$(ulimit -n)
ok "a tight RLIMIT_NOFILE"

# Most of the table taken by descriptors the parent left open (3..55 of
# 60): uaio-cp sized its jobs from the limit alone, and their opens met
# EMFILE (120-131 of 200 files missing) where GNU cp copies them all.
rm -rf "$T/inh"
mkdir -p "$T/inh/s/d"
for i in $(seq 200); do echo "file $i" >"$T/inh/s/d/f$i"; done
for be in uring epoll; do
  rm -rf "$T/inh/t"
  # (bash: sh opens only descriptors 0-9 by number)
  UAIO_BACKEND=$be bash -c 'ulimit -n 60 && for i in $(seq 3 55); do eval "exec $i</dev/null"; done &&
    exec uaio-cp -r "$1" "$2"' - "$T/inh/s" "$T/inh/t" 2>"$T/inh/err" ||
    { cat "$T/inh/err"; fail "-r with 53 descriptors inherited under ulimit -n 60 ($be): exit status"; }
  diff -r "$T/inh/s" "$T/inh/t" >/dev/null ||
    fail "-r with 53 descriptors inherited under ulimit -n 60 ($be): the copy differs"
done
# the same without /proc, where they are counted one number at a time
# (as root, in a mount namespace of its own; not under AddressSanitizer,
# which reads its options and threads from /proc)
if unshare -m --propagation private true 2>/dev/null &&
   ! ldd "$(command -v uaio-cp)" 2>/dev/null | grep -q libasan; then
  rm -rf "$T/inh/t"
  unshare -m --propagation private bash -c 'umount -l /proc && ulimit -n 60 &&
    for i in $(seq 3 55); do eval "exec $i</dev/null"; done && exec uaio-cp -r "$1" "$2"' \
    - "$T/inh/s" "$T/inh/t" 2>"$T/inh/err" ||
    { cat "$T/inh/err"; fail "-r with 53 descriptors inherited, no /proc: exit status"; }
  diff -r "$T/inh/s" "$T/inh/t" >/dev/null ||
    fail "-r with 53 descriptors inherited, no /proc: the copy differs"
fi
rm -rf "$T/inh"
ok "descriptors inherited from the parent"

# Out of memory (4096 jobs' buffers under ulimit -v 50000): GNU's
# xalloc_die message, "PROG: memory exhausted" (it said "Cannot allocate
# memory" alone). Not under AddressSanitizer, which cannot start there.
if [ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 8192 ] &&
   ! ldd "$(command -v uaio-cp)" 2>/dev/null | grep -q libasan; then
  rm -rf "$T/oom"
  mkdir -p "$T/oom/s" && echo x >"$T/oom/s/f"
  (ulimit -n 8192 && ulimit -v 50000 && exec uaio-cp -j 4096 -r "$T/oom/s" "$T/oom/t") \
    2>"$T/oom/err"
  rc=$?
  [ $rc = 1 ] && [ "$(cat "$T/oom/err")" = "uaio-cp: memory exhausted" ] ||
    { cat "$T/oom/err"; fail "out of memory: exit $rc, message above"; }
  rm -rf "$T/oom"
  ok "out of memory: cp's message"
fi

exit $failed
