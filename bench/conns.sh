#!/usr/bin/env bash
# Peak RSS of crest and wrk each holding 10,000 keep-alive connections on loopback (issue 15).
# Usage: bench/conns.sh [SECONDS] [CONNECTIONS] [--variant NAME=PATH ...] [--rounds N]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-5}"
conns="${2:-10000}"
shift $(( $# < 2 ? $# : 2 ))
# Both ends of every connection live on this machine: two descriptors per connection.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
need() { command -v "$1" >/dev/null 2>&1; }
if ! need nginx || ! need wrk || ! [ -x /usr/bin/time ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light wrk time >/dev/null
fi
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release -q -p crest)
exec python3 "$here/conns.py" --crest "$target/release/crest" --seconds "$secs" --connections "$conns" "$@"
