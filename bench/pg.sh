#!/usr/bin/env bash
# crest's TPC-B against pgbench's, on one throwaway PostgreSQL server, in one run:
# closed model at equal clients (transactions/s and latency), and a fixed rate (how close to the
# asked rate each stays, and the mean latency of each). Usage: bench/pg.sh [SECONDS] [CLIENTS] [RATE]
# CREST_BIN=PATH runs another crest build (e.g. an older one) instead of building this one.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-10}"
clients="${2:-4}"
rate="${3:-1000}"
# On a shared machine the server and both clients run at the highest priority when root may set
# it, for their own autogroup too (nice alone ranks processes only within their session's group).
if [ "$(id -u)" = 0 ]; then
  echo -20 > /proc/self/autogroup 2>/dev/null || true
  renice -n -20 $$ >/dev/null 2>&1 || true
fi
(cd "$root" && cargo build --release -q -p crest)
crest="${CREST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/crest}"
# pg_stat_statements gives the server's own time per transaction, the yardstick for both tools.
eval "$(CREST_PG_PORT=${CREST_PG_PORT:-54339} \
  CREST_PG_OPTS="-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_utility=on" \
  "$root/scripts/pg-test-cluster.sh" start)"
trap '"$root/scripts/pg-test-cluster.sh" stop "$CREST_TEST_PG_DIR"' EXIT
url="$CREST_TEST_PG_URL"
psql=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/psql
"$psql" -qAt "$url" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
# The server's mean time per TPC-B transaction since the last reset: the time its statements
# (BEGIN and COMMIT/END included) spent executing, over the transactions committed.
server_ms() {
  "$psql" -qAt "$url" -c "SELECT round((sum(total_exec_time) / nullif(sum(calls) FILTER (WHERE query LIKE 'UPDATE pgbench_branches%'), 0))::numeric, 3)
    FROM pg_stat_statements WHERE query ~* '^(BEGIN|COMMIT|END|UPDATE pgbench_|SELECT abalance|INSERT INTO pgbench_history)'"
}
server_reset() { "$psql" -qAt "$url" -c "SELECT pg_stat_statements_reset()" >/dev/null; }
pgbench=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/pgbench
scenario=$(mktemp --suffix .yaml)
tmp=$(mktemp -d)

crest_run() { # LOAD-YAML [CREST-ARGS...]
  sed "/^load:/,/^thresholds:/{/^load:/!{/^thresholds:/!d}}" "$root/examples/tpcb.yaml" \
    | sed "s|^load:|load:\n$1|" | sed '/^thresholds:/,$d' > "$scenario"
  shift
  "$crest" pg init --scale 1 "$url" 2>/dev/null
  CREST_PG_URL="$url" "$crest" run "$scenario" --quiet --summary-json - --out "$tmp/crest-$RANDOM" "$@"
}

echo "TPC-B, scale 1, ${secs} s each, PostgreSQL on this machine (2 cores shared by server and client)"
echo
echo "closed model, $clients clients:"
"$crest" pg init --scale 1 "$url" 2>/dev/null
# -M prepared: crest prepares each statement once per connection, so pgbench should too.
pg_out=$("$pgbench" -n -M prepared -c "$clients" -j 1 -T "$secs" "$url" 2>/dev/null)
pg_tps=$(echo "$pg_out" | awk '/^tps/ {print $3; exit}')
pg_lat=$(echo "$pg_out" | awk '/^latency average/ {print $4; exit}')
cr=$(crest_run "  users: $clients\n  duration: ${secs}s")
read -r cr_tps cr_lat cr_p99 < <(echo "$cr" | python3 -c '
import json,sys; s=json.load(sys.stdin); t=s["names"][0]
print(round(t["throughput_rps"],1), round(t["latency_ms"]["mean"],3), round(t["latency_ms"]["p99"],3))')
printf "  %-8s %10.1f tx/s  mean %8s ms  (-M prepared)\n" pgbench "$pg_tps" "$pg_lat"
printf "  %-8s %10s tx/s  mean %8s ms  p99 %s ms\n" crest "$cr_tps" "$cr_lat" "$cr_p99"
python3 -c "print(f'  crest / pgbench: {float(\"$cr_tps\") / float(\"$pg_tps\"):.2f}x transactions per second')"
echo
echo "fixed rate, $rate tx/s, one thread each, crest with at most $clients in flight:"
# Under -R, pgbench's latency counts from each transaction's scheduled start, as crest's does.
# Its clients each keep their own schedule, so with -c N transactions rotate over N server
# backends, each idle for N intervals between two of its transactions, and a backend woken from
# sleep is slower to answer. crest's open model hands each arrival the connection that went
# idle last, so one backend stays busy: pgbench -c 1 is the comparable run, -c N is shown beside.
pg_fixed() { # CLIENTS -> "tps latency lag server"
  "$crest" pg init --scale 1 "$url" 2>/dev/null
  server_reset
  local out
  out=$("$pgbench" -n -M prepared -c "$1" -j 1 -T "$secs" -R "$rate" "$url" 2>/dev/null)
  echo "$(echo "$out" | awk '/^tps/ {print $3; exit}') $(echo "$out" | awk '/^latency average/ {print $4; exit}')" \
    "$(echo "$out" | awk '/schedule lag: avg/ {print $6; exit}') $(server_ms)"
}
read -r pg1_tps pg1_lat pg1_lag pg1_server < <(pg_fixed 1)
read -r pgn_tps pgn_lat pgn_lag pgn_server < <(pg_fixed "$clients")
"$crest" pg init --scale 1 "$url" 2>/dev/null
cr=$(server_reset; crest_run "  rate: $rate\n  duration: ${secs}s\n  max_in_flight: $clients" --threads 1)
cr_server=$(server_ms)
read -r cr_tps cr_drop cr_lat cr_lag cr_service < <(echo "$cr" | python3 -c '
import json,sys; s=json.load(sys.stdin)
# The transaction, not its statements: the name of the sql step.
t=next(n for n in s["names"] if n["name"] == "tpcb")
print(round(s["achieved_rps"],1), s["dropped"], round(t["latency_ms"]["mean"],3),
      round(s["send_lag_ms"]["mean"],3), round(s.get("service_ms", {}).get("mean", float("nan")),3))')
python3 - "$rate" "$clients" "$pg1_tps $pg1_lat $pg1_lag $pg1_server" "$pgn_tps $pgn_lat $pgn_lag $pgn_server" \
  "$cr_tps $cr_lat $cr_lag $cr_server" "$cr_drop" "$cr_service" <<'PY'
import sys
rate, n = float(sys.argv[1]), sys.argv[2]
rows = [(f"pgbench -c 1", *map(float, sys.argv[3].split())),
        (f"pgbench -c {n}", *map(float, sys.argv[4].split())),
        ("crest", *map(float, sys.argv[5].split()))]
drop, cr_service = sys.argv[6], float(sys.argv[7])
# Each tool's latency counts from the scheduled start, so it carries that tool's own lag in
# sending; the server's own time (pg_stat_statements) is the same work under every client, and
# what is beyond it is the wire and the client's round trips.
print(f"  {'':14} {'tx/s':>8} {'vs rate':>8} {'latency':>8} {'own lag':>8} {'server':>8} {'beyond':>8}  (mean ms)")
for name, tps, lat, lag, server in rows:
    print(f"  {name:14} {tps:8.1f} {(tps - rate) / rate * 100:+7.2f}% {lat:8.3f} {lag:8.3f} {server:8.3f} {lat - server:8.3f}")
print(f"  crest: {drop} arrivals dropped; service time (from the actual send) {cr_service:.3f} ms")
print(f"  crest / pgbench -c 1 mean latency: {rows[2][2] / rows[0][2]:.2f}x;"
      f" crest / pgbench -c {n}: {rows[2][2] / rows[1][2]:.2f}x")
# From the actual start (each tool's latency less its own lag): the transaction as the wire and
# the server took it, which is what two honest clients must agree on.
pg_sent = rows[0][2] - rows[0][3]
print(f"  from the actual start: crest {cr_service:.3f} ms (service time), pgbench -c 1 {pg_sent:.3f} ms"
      f" (latency less schedule lag): {cr_service / pg_sent:.2f}x")
PY
