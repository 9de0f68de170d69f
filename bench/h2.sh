#!/usr/bin/env bash
# crest's HTTP/2 against h2load, both against one nginx with `http2` (TLS with a self-signed
# certificate in a temp dir, and cleartext prior knowledge), pinned as bench/run.sh pins.
# Usage: bench/h2.sh [SECONDS] [--rounds N] [--variant NAME=PATH ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-5}"
shift $(( $# < 1 ? $# : 1 ))
need() { command -v "$1" >/dev/null 2>&1; }
if ! need nginx || ! need h2load || ! need openssl || ! [ -x /usr/bin/time ]; then
  echo "installing nginx, nghttp2-client (h2load), openssl and GNU time from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light nghttp2-client openssl time >/dev/null
fi
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release -q -p crest)
exec python3 "$here/h2.py" --crest "$target/release/crest" --seconds "$secs" "$@"
