#!/usr/bin/env bash
# What a collected run costs (issue 24): the same load against nginx on loopback run by
# `crest run`, and by `crest collect` with 2 and with 4 `crest worker`s, in interleaved rounds of
# one run, in the closed model and (RATE) the open model. nginx runs on core 0 as for
# bench/run.sh; every crest process (the plain run, each worker, the collector) on core 1 with
# --threads 1, so every variant has the same CPU to generate with and a ratio shows what
# splitting and collecting cost. Each count crest reports is held to nginx's own (stub_status).
# Prints the merged throughput of 4 workers / 2 workers and of each / the plain run, the
# collector's CPU-seconds and peak RSS per worker, and an estimate for 100 workers.
#
# Usage: bench/collect.sh [SECONDS] [USERS] [ROUNDS]   (default: 10 s, 64 users, 3 rounds)
# Environment:
#   WORKERS="FEW MORE" the two numbers of workers (default "2 4"; "1 2" compares one worker
#                   with two)
#   RATE=N          also the open model at N arrivals/s (default 10000; 0: closed model only)
#   LONG=SECONDS    one more closed-model run of MORE workers this long, for the collector's
#                   memory against run length (default 3 x SECONDS; 0: none)
#   CREST_BIN=PATH  the build measured (default: this tree's release build)
#   CREST_BENCH_PORT moves nginx off 18080, as for bench/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-10}"
users="${2:-64}"
rounds="${3:-3}"

if ! command -v nginx >/dev/null 2>&1 || ! [ -x /usr/bin/time ]; then
  echo "installing nginx and GNU time from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light time >/dev/null
fi
if [ "$(nproc)" -lt 2 ]; then
  echo "bench needs two cores: one for nginx, one for crest" >&2
  exit 2
fi
if [ -z "${CREST_BIN:-}" ]; then
  (cd "$root" && cargo build --release -q -p crest --locked)
fi
crest="${CREST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/crest}"

# In a session of its own: compare.py raises its session's scheduling group to the highest
# priority, which would otherwise stay with the caller's shell.
exec setsid -w python3 "$here/collect.py" --crest "$crest" --seconds "$secs" --users "$users" \
  --rounds "$rounds" --rate "${RATE:-10000}" --workers ${WORKERS:-2 4} --long "${LONG:-$((secs * 3))}"
