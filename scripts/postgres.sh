#!/usr/bin/env bash
# Start a throwaway PostgreSQL server on loopback for the store's tests and benchmarks,
# and print its URL (postgresql://hygraph@127.0.0.1:PORT/hygraph).
#
#   eval "$(bash scripts/postgres.sh)"   # exports HYGRAPH_TEST_POSTGRES
#
# Installs Debian's postgresql package when no server binaries are found. The cluster
# lives in a temporary folder (PGDATA_DIR to choose one) and trusts loopback connections
# only; stop it with `bash scripts/postgres.sh --stop <folder>`. PG_FSYNC=on for benchmarks
# (off by default: the tests need no durability across a power cut).
set -euo pipefail
if [ "${1:-}" = "--stop" ]; then
  BIN="$(dirname "$(ls /usr/lib/postgresql/*/bin/pg_ctl | head -1)")"
  AS=(); [ "$(id -u)" -eq 0 ] && AS=(runuser -u postgres --)
  "${AS[@]}" "$BIN/pg_ctl" -D "$2" -m fast stop
  exit 0
fi
PORT="${PGPORT_TEST:-}"
if [ -z "$PORT" ]; then  # the first free port from 54329
  PORT=54329
  while (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do PORT=$((PORT + 1)); done
fi
find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
  done
  return 1
}
SUDO=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
if ! BIN="$(find_bin)"; then
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q postgresql >/dev/null
  BIN="$(find_bin)"
fi
DATA="${PGDATA_DIR:-$(mktemp -d /tmp/hygraph-pg.XXXXXX)}"
# PostgreSQL refuses to run as root: run it as the `postgres` user then.
AS=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  chown -R postgres "$DATA"
  AS=(runuser -u postgres --)
fi
# PG_LISTEN: more addresses to listen on, comma-separated (test hosts in network
# namespaces); PG_TRUST_NET: the network (CIDR) whose clients are trusted with them.
LISTEN="127.0.0.1${PG_LISTEN:+,$PG_LISTEN}"
if [ ! -f "$DATA/PG_VERSION" ]; then
  "${AS[@]}" "$BIN/initdb" -D "$DATA" -U hygraph --auth=trust -E UTF8 >/dev/null
  if [ -n "${PG_TRUST_NET:-}" ]; then
    echo "host all all $PG_TRUST_NET trust" >> "$DATA/pg_hba.conf"
  fi
fi
"${AS[@]}" "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
  -o "-c listen_addresses=$LISTEN -c port=$PORT -c unix_socket_directories=$DATA -c fsync=${PG_FSYNC:-off}" \
  start >/dev/null
"$BIN/createdb" -h 127.0.0.1 -p "$PORT" -U hygraph hygraph 2>/dev/null || true
echo "export HYGRAPH_TEST_POSTGRES=postgresql://hygraph@127.0.0.1:$PORT/hygraph"
echo "export HYGRAPH_TEST_POSTGRES_DATA=$DATA"
