#!/usr/bin/env bash
# Installs what the build, tests and benchmarks need, only when missing.
# usage: scripts/setup.sh [build|test|bench|fio|fuzz]
set -euo pipefail
want=(cmake ninja-build gcc make pkg-config liburing-dev libevent-dev libaio-dev node-llhttp)
case "${1:-build}" in
  # bench: e2fsprogs for the cp and flows suites' fresh ext4 (mkfs.ext4),
  # git for make bench-reshape (git archive of the older commit).
  bench) want+=(python3 python3-venv python3-pip fio strace rsync iproute2 e2fsprogs git nginx lighttpd h2o wrk libh2o0.13 libhttp-parser-dev) ;;
  test|fio) want+=(fio strace iproute2 e2fsprogs xfsprogs util-linux procps curl acl attr bindfs) ;;
  fuzz) want+=(clang libclang-rt-dev) ;;
esac
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  # The httpd bench's web servers are installed, not started as services
  # (they would all want port 80; the bench starts its own on other ports).
  if printf '%s\n' "${missing[@]}" | grep -qxE 'nginx|lighttpd|h2o' && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod 755 /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ "${1:-build}" = bench ]; then
  # Plots only: a private venv so the system Python stays untouched.
  if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
    python3 -m venv .venv
    .venv/bin/pip install -q --disable-pip-version-check matplotlib
  fi
fi
if [ "${1:-build}" = bench ]; then
  # uaio-cp's peers from crates.io (xcp, fcp), pinned; skipped with a
  # reason when cargo or the network is missing.
  bash "$(dirname "$0")/../bench/cp/install-peers.sh"
fi
