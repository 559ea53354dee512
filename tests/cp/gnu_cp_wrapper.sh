#!/bin/sh
# Stands in for uaio-cp when checking test_uaio_cp.sh itself:
#   sh tests/cp/test_uaio_cp.sh tests/cp/gnu_cp_wrapper.sh build/tests/cp/cp_treecmp
# Runs GNU cp with the uaio-cp-only options dropped (-j N, -jN, --jobs=N,
# --progress) and the program name rewritten (cp: -> uaio-cp: on stderr,
# 'cp --help' -> 'uaio-cp --help', and cp -> uaio-cp in the --help text).
# The exit status is cp's.
n=$#
i=0
opts=1
help=
while [ $i -lt $n ]; do
  a=$1
  shift
  i=$((i + 1))
  if [ $opts = 1 ]; then
    case $a in
      --) opts=0 ;;
      -j) shift; i=$((i + 1)); continue ;;
      -j*|--jobs=*|--progress) continue ;;
      --help) help=1 ;;
    esac
  fi
  set -- "$@" "$a"
done
if [ -n "$help" ]; then
  cp "$@" | sed -e 's/^Usage: cp /Usage: uaio-cp /' -e 's/^  or:  cp /  or:  uaio-cp /'
  exit 0
fi
exec 3>&1
rc=$({ { cp "$@" 2>&1 1>&3 3>&- 4>&-; echo $? >&4; } |
  sed -e 's/^cp: /uaio-cp: /' -e "s/'cp --help'/'uaio-cp --help'/" >&2; } 4>&1)
exit "$rc"
