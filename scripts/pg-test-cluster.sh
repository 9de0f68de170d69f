#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1 for crest's tests and prints the export
# line for its URL: eval "$(scripts/pg-test-cluster.sh start)". `stop DIR` stops it.
# Installs Debian's postgresql package when it is missing. Needs root (for apt-get and to run
# the server as the postgres user). CREST_PG_OPTS adds server options (-c name=value ...).
set -euo pipefail
cmd="${1:-start}"
port="${CREST_PG_PORT:-54329}"
if [ "$cmd" = stop ]; then
  dir="${2:?usage: stop DIR}"
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$dir"
  exit 0
fi
if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
  echo "installing postgresql (Debian)" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
# A cluster left running (by hand, or by an earlier run) may hold the port: take the next free one.
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  port=$((port + 1))
done
dir=$(mktemp -d /tmp/crest-pg.XXXXXX)
chown postgres "$dir"
runuser -u postgres -- "$bin/initdb" -D "$dir/data" -A trust -U crest --no-sync >/dev/null
runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 ${CREST_PG_OPTS:-}" start >/dev/null
echo "export CREST_TEST_PG_URL=postgres://crest@127.0.0.1:$port/postgres CREST_TEST_PG_DIR=$dir"
