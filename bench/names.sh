#!/usr/bin/env bash
# Peak memory of crest against the number of request names (issue 35): a scenario of N flows,
# each one request with a name of its own, run for a few seconds against `crest target` on
# loopback, for N = 1 (the baseline), 100, 1,000 and 10,000. Prints the peak RSS of each run
# and its memory per name above the baseline.
# Usage: bench/names.sh [SECONDS] [--variant NAME=PATH ...]
# Environment: CREST_BIN=PATH measures that build instead of this tree's release build.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-4}"
shift $(( $# < 1 ? $# : 1 ))
if ! [ -x /usr/bin/time ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
fi
target="${CARGO_TARGET_DIR:-$root/target}"
exe="${CREST_BIN:-}"
if [ -z "$exe" ]; then
  (cd "$root" && cargo build --release -q -p crest)
  exe="$target/release/crest"
fi
exec python3 "$here/names.py" --crest "$exe" --seconds "$secs" "$@"
