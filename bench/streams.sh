#!/usr/bin/env bash
# crest's gRPC and WebSocket steps against ghz and k6 (gRPC unary calls) and k6 (WebSocket
# echoes), each against the same server (the tests' own, built from crates/testkit/examples),
# pinned as bench/run.sh pins: messages per generator CPU-second.
# Usage: bench/streams.sh [SECONDS] [USERS] [--rounds N] [--variant NAME=PATH ...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-5}"
users="${2:-16}"
shift $(( $# < 2 ? $# : 2 ))
need() { command -v "$1" >/dev/null 2>&1; }
if ! [ -x /usr/bin/time ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null
fi
export PATH="$PATH:$(go env GOPATH 2>/dev/null)/bin"
if need go && ! need ghz; then go install github.com/bojand/ghz/cmd/ghz@latest; fi
if need go && ! need k6; then go install go.k6.io/k6@latest; fi
target="${CARGO_TARGET_DIR:-$root/target}"
(cd "$root" && cargo build --release -q -p crest && cargo build --release -q -p crest-testkit --example grpc-echo --example ws-echo)
exec python3 "$here/streams.py" --crest "$target/release/crest" --examples "$target/release/examples" \
  --seconds "$secs" --users "$users" "$@"
