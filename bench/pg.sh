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
(cd "$root" && cargo build --release -q -p crest)
crest="${CREST_BIN:-${CARGO_TARGET_DIR:-$root/target}/release/crest}"
eval "$(CREST_PG_PORT=${CREST_PG_PORT:-54339} "$root/scripts/pg-test-cluster.sh" start)"
trap '"$root/scripts/pg-test-cluster.sh" stop "$CREST_TEST_PG_DIR"' EXIT
url="$CREST_TEST_PG_URL"
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
echo "fixed rate, $rate tx/s, at most $clients in flight, one thread each:"
"$crest" pg init --scale 1 "$url" 2>/dev/null
# Under -R, pgbench's latency counts from each transaction's scheduled start, as crest's does.
pg_out=$("$pgbench" -n -M prepared -c "$clients" -j 1 -T "$secs" -R "$rate" "$url" 2>/dev/null)
pg_tps=$(echo "$pg_out" | awk '/^tps/ {print $3; exit}')
pg_lat=$(echo "$pg_out" | awk '/^latency average/ {print $4; exit}')
pg_lag=$(echo "$pg_out" | awk '/schedule lag: avg/ {print $6; exit}')
cr=$(crest_run "  rate: $rate\n  duration: ${secs}s\n  max_in_flight: $clients" --threads 1)
read -r cr_tps cr_drop cr_lat cr_lag cr_service < <(echo "$cr" | python3 -c '
import json,sys; s=json.load(sys.stdin)
# The transaction, not its statements: the name of the sql step.
t=next(n for n in s["names"] if n["name"] == "tpcb")
print(round(s["achieved_rps"],1), s["dropped"], round(t["latency_ms"]["mean"],3),
      round(s["send_lag_ms"]["mean"],3), round(s.get("service_ms", {}).get("mean", float("nan")),3))')
python3 - "$rate" "$pg_tps" "$cr_tps" "$cr_drop" "$pg_lat" "$pg_lag" "$cr_lat" "$cr_lag" <<'PY'
import sys
rate, pg, cr, drop = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
pg_lat, pg_lag, cr_lat, cr_lag = (float(x) for x in sys.argv[5:9])
print(f"  pgbench  {pg:10.1f} tx/s  ({(pg - rate) / rate * 100:+.2f}% of the asked rate)  "
      f"mean latency {pg_lat:.3f} ms, schedule lag {pg_lag:.3f} ms")
print(f"  crest    {cr:10.1f} tx/s  ({(cr - rate) / rate * 100:+.2f}% of the asked rate, {drop} arrivals dropped)  "
      f"mean latency {cr_lat:.3f} ms, send lag {cr_lag:.3f} ms (per request)")
print(f"  crest / pgbench mean latency: {cr_lat / pg_lat:.2f}x")
PY
