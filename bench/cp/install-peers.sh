#!/usr/bin/env bash
# Installs the peers of the cp suite (bench/cp/bench.py) when missing:
# rsync from Debian, and the Rust copiers xcp and fcp, pinned, from
# crates.io with cargo (Debian's cargo-web when there is none) into
# .venv/cp-peers/bin (where bench.py looks first).
# Without cargo or the network the Rust peers are skipped: each one that
# could not be installed is named on stderr (a WARNING line, and again in a
# summary at the end), its rows say "not installed" and the cp suite's
# verdicts name it as not measured; this script never fails the setup.
# Called by scripts/setup.sh bench, from anywhere.
set -uo pipefail
cd "$(dirname "$0")/../.."
XCP_VERSION=0.24.9
FCP_VERSION=0.2.2
PEERS=.venv/cp-peers
log() { echo "cp-peers: $*" >&2; }
failed=()
# A peer that could not be installed: said loudly, and kept for the summary.
fail() {
  echo "cp-peers: WARNING: $1 could not be installed: $2; the cp suite will run without it" >&2
  failed+=("$1")
}

if ! command -v rsync >/dev/null; then
  log "installing rsync (Debian)"
  SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  if ! { $SUDO apt-get update -qq &&
         $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync >/dev/null; }; then
    fail rsync "apt-get install rsync failed"
  fi
fi

CARGO=$(command -v cargo || true)
[ -n "$CARGO" ] || [ ! -x "$HOME/.cargo/bin/cargo" ] || CARGO=$HOME/.cargo/bin/cargo
for spec in "xcp@$XCP_VERSION" "fcp@$FCP_VERSION"; do
  name=${spec%@*} ver=${spec#*@}
  if [ -x "$PEERS/bin/$name" ] && grep -q "^\"$name $ver " "$PEERS/.crates.toml" 2>/dev/null; then
    continue
  fi
  if [ -z "$CARGO" ] && [ -z "${tried_cargo:-}" ]; then
    # Debian's cargo-web: bookworm's cargo (Rust 1.63) is older than xcp's
    # rust-version (1.88); cargo-web from bookworm-security is newer.
    tried_cargo=1
    log "installing cargo-web (Debian)"
    SUDO=; [ "$(id -u)" -eq 0 ] || SUDO=sudo
    if $SUDO apt-get update -qq &&
       $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cargo-web >/dev/null; then
      CARGO=$(command -v cargo || true)
    fi
  fi
  if [ -z "$CARGO" ]; then
    fail "$spec" "no cargo (apt-get install cargo-web failed; or Rust from https://rustup.rs)"
    continue
  fi
  log "$spec: cargo install (a few minutes)"
  mkdir -p "$PEERS"
  if ! nice "$CARGO" install --quiet --locked "$spec" --root "$PEERS" >/dev/null 2>"$PEERS/$name.log"; then
    fail "$spec" "cargo install failed (no network?): $(tail -n 3 "$PEERS/$name.log" | tr '\n' ' ')"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "cp-peers: WARNING: NOT INSTALLED: ${failed[*]} (the cp suite's rows say not installed)" >&2
fi
exit 0
