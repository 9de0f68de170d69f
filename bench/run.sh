#!/usr/bin/env bash
# Compares crest with wrk (and hey, oha, ab when installed) against nginx on loopback.
# nginx runs on core 0, each generator on core 1, one after another, in one run, so the ratios
# are measured under the same conditions.
# Usage: bench/run.sh [SECONDS] [CONNECTIONS] [--variant NAME=PATH ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-10}"
conns="${2:-64}"
shift $(( $# < 2 ? $# : 2 ))

need() { command -v "$1" >/dev/null 2>&1; }
if ! need nginx || ! need wrk || ! [ -x /usr/bin/time ]; then
  echo "installing nginx, wrk and GNU time from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light wrk time >/dev/null
fi
if [ "$(nproc)" -lt 2 ]; then
  echo "bench needs two cores: one for nginx, one for the generators" >&2
  exit 2
fi

target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release -q -p crest)
exec python3 "$here/compare.py" --crest "$target/release/crest" --seconds "$secs" --connections "$conns" "$@"
