#!/bin/sh
# Data integrity through the drop-in: fio's posixaio engine (an unmodified
# glibc program) writes random blocks with crc32c checksums under
# LD_PRELOAD=libuaio-posix.so, then reads every block back and verifies
# it, at depth 1 and 16. Exit 0 pass, 77 skip (no fio), 1 fail.
lib=$1
command -v fio >/dev/null 2>&1 || { echo "skip: fio is not installed (scripts/setup.sh test installs it)"; exit 77; }
dir=$(mktemp -d /var/tmp/uaio-fio-XXXXXX) || exit 1
trap 'rm -rf "$dir"' EXIT
for depth in 1 16; do
  for bs in 4k 64k; do
    # From $dir, without a saved verify state: fio would leave
    # local-verify-*.state in the caller's directory.
    out=$(cd "$dir" && LD_PRELOAD="$lib" fio --name=verify --filename="$dir/f" --size=32M \
      --rw=randwrite --bs=$bs --iodepth=$depth --ioengine=posixaio \
      --verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0 --verify_state_save=0 \
      --output-format=terse 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
      echo "FAIL: depth $depth bs $bs: fio exit $rc"; echo "$out" | tail -5; exit 1
    fi
    # terse v3 field 5 is the job's error code; field 6/7 read kB and bw:
    # the verify phase read the whole file back.
    err=$(echo "$out" | tail -1 | cut -d';' -f5)
    readkb=$(echo "$out" | tail -1 | cut -d';' -f6)
    if [ "$err" != 0 ] || [ "${readkb:-0}" -lt 32768 ]; then
      echo "FAIL: depth $depth bs $bs: error=$err verified=${readkb}kB"; exit 1
    fi
    echo "depth $depth bs $bs: 32 MiB written and verified (crc32c)"
  done
done
exit 0
