#!/usr/bin/env bash
# crest's TPC-B against pgbench's, on one throwaway PostgreSQL server, in one run:
# closed model at equal clients (transactions/s and latency), and a fixed rate (how close to the
# asked rate each stays). Usage: bench/pg.sh [SECONDS] [CLIENTS] [RATE]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
secs="${1:-10}"
clients="${2:-4}"
rate="${3:-1000}"
(cd "$root" && cargo build --release -q -p crest)
crest="$root/target/release/crest"
eval "$(CREST_PG_PORT=${CREST_PG_PORT:-54339} "$root/scripts/pg-test-cluster.sh" start)"
trap '"$root/scripts/pg-test-cluster.sh" stop "$CREST_TEST_PG_DIR"' EXIT
url="$CREST_TEST_PG_URL"
pgbench=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/pgbench
scenario=$(mktemp --suffix .yaml)
tmp=$(mktemp -d)

crest_run() { # LOAD-YAML
  sed "/^load:/,/^thresholds:/{/^load:/!{/^thresholds:/!d}}" "$root/examples/tpcb.yaml" \
    | sed "s|^load:|load:\n$1|" | sed '/^thresholds:/,$d' > "$scenario"
  "$crest" pg init --scale 1 "$url" 2>/dev/null
  CREST_PG_URL="$url" "$crest" run "$scenario" --quiet --summary-json - --out "$tmp/crest-$RANDOM"
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
echo "fixed rate, $rate tx/s, at most $clients in flight:"
"$crest" pg init --scale 1 "$url" 2>/dev/null
pg_out=$("$pgbench" -n -M prepared -c "$clients" -j 1 -T "$secs" -R "$rate" "$url" 2>/dev/null)
pg_tps=$(echo "$pg_out" | awk '/^tps/ {print $3; exit}')
cr=$(crest_run "  rate: $rate\n  duration: ${secs}s\n  max_in_flight: $clients")
read -r cr_tps cr_drop < <(echo "$cr" | python3 -c '
import json,sys; s=json.load(sys.stdin); print(round(s["achieved_rps"],1), s["dropped"])')
python3 - "$rate" "$pg_tps" "$cr_tps" "$cr_drop" <<'PY'
import sys
rate, pg, cr, drop = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
print(f"  pgbench  {pg:10.1f} tx/s  ({(pg - rate) / rate * 100:+.2f}% of the asked rate)")
print(f"  crest    {cr:10.1f} tx/s  ({(cr - rate) / rate * 100:+.2f}% of the asked rate, {drop} arrivals dropped)")
PY
