# Sourced by the uaio-cp tests (test_uaio_cp.sh, _data.sh, _env.sh),
# with their arguments TOOL TREECMP: the scratch directory $T, the tool
# as `uaio-cp` on PATH, treecmp as $TC, and the helpers: fail, ok, tc,
# both (GNU cp and uaio-cp on one case, compared), make_tree, rmtree,
# mount_ext4.
TOOL=$1
TREECMP=$2
[ "$(uname -s)" = Linux ] || { echo "skip: not Linux"; exit 77; }
[ -n "$TOOL" ] && [ -f "$TOOL" ] && [ -x "$TOOL" ] || { echo "skip: no uaio-cp at '$TOOL'"; exit 77; }
[ -n "$TREECMP" ] && [ -x "$TREECMP" ] || { echo "usage: $0 TOOL TREECMP"; exit 1; }
export LC_ALL=C
unset POSIXLY_CORRECT
v=$(cp --version 2>/dev/null | head -n 1)
[ "$v" = "cp (GNU coreutils) 9.1" ] || echo "note: GNU cp 9.1 expected, found '$v' (messages may differ)"

T=$(mktemp -d /var/tmp/uaio-cp-test-XXXXXX) || exit 1
S=
mnt=
cleanup() {
  [ -n "$mnt" ] && umount "$mnt" 2>/dev/null
  for d in "$T" "$S"; do
    [ -n "$d" ] && rmtree "$d"
  done
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
chmod 755 "$T"
# The tool is run as `uaio-cp` from PATH (so argv[0] is its plain name,
# like GNU's `cp`), from a copy that any user can run.
mkdir "$T/bin" && cp "$TOOL" "$T/bin/uaio-cp" && chmod 755 "$T/bin" "$T/bin/uaio-cp" || exit 1
PATH=$T/bin:$PATH
export PATH
TC=$T/bin/treecmp
cp "$TREECMP" "$TC" && chmod 755 "$TC" || exit 1

root=0
[ "$(id -u)" = 0 ] && root=1
# Runs a command as an unprivileged user: nobody when root, else as is.
NOBODY=
have_nobody=1
if [ $root = 1 ]; then
  NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
  $NOBODY true 2>/dev/null || have_nobody=0
fi

# A failure ends the test, unless UAIO_CP_TEST_KEEP_GOING is set (to see
# every difference at once; the exit status is still 1).
failed=0
group_failed=0
fail() {
  echo "FAIL: $*"
  failed=1
  group_failed=1
  [ -n "$UAIO_CP_TEST_KEEP_GOING" ] || exit 1
  return 1
}
ok() {
  if [ $group_failed = 0 ]; then echo "ok: $*"; else echo "not ok: $*"; fi
  group_failed=0
}

# Opens unreadable files and directories (mode 0000) for treecmp when it
# does not run as root; the same on both sides, so modes still compare.
opendirs() {
  [ $root = 1 ] && return
  find "$@" -type d ! -perm -u=rx -exec chmod u+rx {} + 2>/dev/null
  find "$@" -type f ! -perm -u=r -exec chmod u+r {} + 2>/dev/null
}

# Removes trees that may hold read-only directories.
rmtree() {
  chmod -R u+rwx "$@" 2>/dev/null
  rm -rf "$@"
}

# tc A B [treecmp options]: the two trees must compare equal.
tc() {
  opendirs "$1" "$2"
  "$TC" "$@" >"$T/tc.out" 2>&1 || { cat "$T/tc.out"; fail "$what: trees differ: $*"; }
}

# both [-s] [-M] ARGS...: in fresh $T/g and $T/u, each prepared by $SETUP (shell
# code run there), runs `cp ARGS` and `uaio-cp $TX ARGS` under umask $UM
# and user $AS (and RLIMIT_NOFILE $NOFILE); their exit statuses, stdout and stderr must be the same
# (-s: as sorted lines, for tree copies whose order may differ), and the
# two directories must compare equal but for times (holes included: the
# two copies are on one file system; -M: not compared, when what GNU
# makes depends on the order of entries in a directory).
SETUP=:
UM=022
AS=
TX=
NOFILE=$(ulimit -n)
both() {
  srt=cat
  trees=1
  if [ "$1" = -s ]; then srt=sort; shift; fi
  if [ "$1" = -M ]; then trees=0; shift; fi
  loc=
  [ "$LC_ALL" = C ] || loc=", LC_ALL=$LC_ALL"
  what="${CPENV:+$CPENV }cp $*${AS:+ (as nobody)} (umask $UM${TX:+, uaio-cp $TX}$loc)"
  for s in g u; do
    rmtree "$T/$s"
    mkdir "$T/$s" && chmod 777 "$T/$s" && (cd "$T/$s" && eval "$SETUP") ||
      fail "$what: setup"
  done
  # (descriptors the test inherited, from ctest say, are not passed on)
  (cd "$T/g" && umask $UM && exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &&
   ulimit -n $NOFILE && exec ${CPENV:+env $CPENV} $AS cp "$@") >"$T/g.out" 2>"$T/g.err" </dev/null
  grc=$?
  (cd "$T/u" && umask $UM && exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &&
   ulimit -n $NOFILE && exec ${CPENV:+env $CPENV} $AS uaio-cp $TX "$@") >"$T/u.out" 2>"$T/u.err" </dev/null
  urc=$?
  sed -e 's/^cp: /uaio-cp: /' -e "s/\([^a-z-]\)cp --help/\1uaio-cp --help/" "$T/g.err" |
    $srt >"$T/g.err.n"
  $srt "$T/u.err" >"$T/u.err.n"
  $srt "$T/g.out" >"$T/g.out.n"
  $srt "$T/u.out" >"$T/u.out.n"
  for f in err out; do
    cmp -s "$T/g.$f.n" "$T/u.$f.n" && continue
    echo "--- GNU cp std$f (renamed) / +++ uaio-cp std$f:"
    if command -v diff >/dev/null; then
      diff -u "$T/g.$f.n" "$T/u.$f.n"
    else
      cat "$T/g.$f.n"; echo "--- and from uaio-cp:"; cat "$T/u.$f.n"
    fi
    fail "$what: std$f differs"
  done
  [ $grc = $urc ] || { cat "$T/u.err"; fail "$what: exit status $urc, GNU cp $grc"; }
  [ $trees = 0 ] || tc "$T/g" "$T/u" --no-times --strict-holes
}

# make_tree DIR: every kind of entry, old times with nanoseconds.
make_tree() {
  mkdir -p "$1" && r=$(cd "$1" && pwd) || return 1
  (
    cd "$r" || exit 1
    mkdir -p d/e/f/g empty links sticky sg/sub ro || exit 1
    : >z0
    printf x >z1
    head -c 4095 /dev/urandom >z4095
    head -c 4096 /dev/urandom >z4096
    head -c $((1048576 + 3)) /dev/urandom >z1m3
    echo deep >d/e/f/g/deep
    truncate -s 64M sparse || exit 1
    for k in 0 10240 64512; do
      dd if=/dev/urandom of=sparse bs=1024 count=8 seek=$k conv=notrunc status=none || exit 1
    done
    dd if=/dev/urandom of=tailhole bs=1024 count=8 status=none && truncate -s 1M tailhole || exit 1
    # Zeros written out (not holes), then data: for --sparse=always.
    { head -c 262144 /dev/zero; printf data; head -c 262144 /dev/zero; } >zeros
    ln -s z1 l_rel && ln -s ../../z4095 d/e/l_up && ln -s "$r/z4096" l_abs &&
      ln -s no/such/file l_dangling && ln -s d l_dir || exit 1
    mkfifo fifo || exit 1
    echo two >links/h2a && ln links/h2a d/h2b || exit 1
    echo three >links/h3a && ln links/h3a d/e/h3b && ln links/h3a h3c || exit 1
    echo suid >m4755 && echo sgid >m2755 && echo private >m0600 &&
      echo s >sticky/f && echo g >sg/f && echo r >ro/f || exit 1
    if [ $root = 1 ]; then
      # A 0000 file is only readable by root; a device needs root too.
      echo none >m0000 && chmod 0000 m0000 && mknod null c 1 3 || exit 1
      chown 1234:5678 z1 d/e sg sg/f links/h2a m2755 && chown -h 1234:5678 l_rel || exit 1
    fi
    chmod 4755 m4755 && chmod 2755 m2755 && chmod 0600 m0600 &&
      chmod 1777 sticky && chmod 3775 sg && chmod 0555 ro || exit 1
    if "$TC" --setxattr z1 user.a 1 2>/dev/null; then
      for p in d links/h2a empty sg m0600; do "$TC" --setxattr $p user.a 1 || exit 1; done
      "$TC" --setxattr z1m3 user.long "$(head -c 300 /dev/zero | tr '\0' v)" || exit 1
    else
      echo "note: no user xattrs on $(stat -f -c %T .), the tree has none"
    fi
    # A symlink's attribute: trusted.* (root only; user.* cannot be on a link).
    if [ $root = 1 ] && ! "$TC" --setxattr l_rel trusted.t 1 2>/dev/null; then
      echo "note: no trusted xattrs on $(stat -f -c %T .), no symlink has one"
    fi
    find . ! -type d -exec touch -h -d '2001-02-03 04:05:06.123456789' {} + &&
      find . -depth -type d -exec touch -d '2002-03-04 05:06:07.987654321' {} +
  )
}

# mount_ext4 NAME MKFS_OPTION...: a fresh 32 MiB ext4 made with those
# options, loop-mounted on $T/NAME (the cleanup unmounts $mnt: set it);
# false, with nothing mounted, when not root or mkfs.ext4 or a loop
# device is missing.
mount_ext4() {
  name=$1
  shift
  [ $root = 1 ] && command -v mkfs.ext4 >/dev/null && mkdir "$T/$name" &&
    truncate -s 32M "$T/$name.img" && mkfs.ext4 -q -F "$@" "$T/$name.img" 2>/dev/null &&
    mount -o loop "$T/$name.img" "$T/$name" 2>/dev/null
}
