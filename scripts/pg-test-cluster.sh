#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb and pg_ctl in a
# temporary directory, listening on a Unix socket in that directory and on
# 127.0.0.1, with a random password for the user nexa. No system service is
# used or changed.
#
#   scripts/pg-test-cluster.sh run CMD ARGS...   start, run CMD with
#        NEXA_TEST_POSTGRES set to the cluster's URL, stop; exit with CMD's code
#   scripts/pg-test-cluster.sh start             start; print DIR and the URL
#   scripts/pg-test-cluster.sh stop DIR          stop the cluster in DIR, remove DIR
#   scripts/pg-test-cluster.sh crash DIR         stop the server at once, as a crash
#        would (pg_ctl stop -m immediate: no checkpoint, clients cut off)
#   scripts/pg-test-cluster.sh restart DIR       start it again, same port and
#        settings (recovering from the WAL after a crash)
#
# The server binaries are found in PG_BIN, else on PATH (initdb, pg_ctl),
# else in Debian's versioned directories (the newest one). As root, the
# server runs as the user nobody (PostgreSQL refuses to run as root).
set -euo pipefail

find_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"; return
  fi
  local best
  # The glob sorts lexically; pick the highest major version numerically.
  best=$(for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && echo "$d"; done |
    sort -t/ -k5,5n | tail -n1)
  if [ -z "$best" ]; then
    echo "pg-test-cluster: no initdb found (install the postgresql package, or set PG_BIN)" >&2
    return 1
  fi
  echo "$best"
}

# as_server runs a command as the cluster's owner.
as_server() {
  if [ "$(id -u)" = 0 ]; then
    setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local bin dir port pw
  bin=$(find_bin)
  dir=$(mktemp -d -t nexa-pg.XXXXXX)
  chmod 0700 "$dir"
  if [ "$(id -u)" = 0 ]; then chown nobody "$dir"; fi
  pw=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
  printf '%s\n' "$pw" > "$dir/pw"
  if [ "$(id -u)" = 0 ]; then chown nobody "$dir/pw"; fi
  as_server "$bin/initdb" -D "$dir/data" -U nexa --pwfile="$dir/pw" \
    --auth-local=scram-sha-256 --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2; rm -rf "$dir"; return 1; }
  rm -f "$dir/pw"
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    if as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c synchronous_commit=on -c fsync=on -c max_connections=200" \
      start >/dev/null; then
      echo "$dir"
      echo "postgres://nexa:$pw@127.0.0.1:$port/postgres?sslmode=disable"
      return 0
    fi
  done
  cat "$dir/server.log" >&2
  stop "$dir"
  return 1
}

stop() {
  local dir=$1 bin
  bin=$(find_bin)
  [ -d "$dir/data" ] && as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null || true
  rm -rf "$dir"
}

# crash and restart are the soak's (internal/soak): the database dies under
# running workers and comes back where they expect it.
crash() {
  as_server "$(find_bin)/pg_ctl" -D "$1/data" -m immediate -w stop >/dev/null
}

restart() {
  # restart reads the options of the last start from postmaster.opts, so
  # the server listens on the same port; with no server running it starts one.
  as_server "$(find_bin)/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 60 restart >/dev/null 2>&1 || {
    tail -n 20 "$1/server.log" >&2; return 1; }
}

case "${1:-}" in
crash | restart)
  [ $# -eq 2 ] || { echo "usage: $0 $1 DIR" >&2; exit 2; }
  "$1" "$2"
  ;;
start)
  start
  ;;
stop)
  [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
  stop "$2"
  ;;
run)
  shift
  [ $# -ge 1 ] || { echo "usage: $0 run CMD ARGS..." >&2; exit 2; }
  out=$(start)
  dir=$(sed -n 1p <<<"$out")
  trap 'stop "$dir"' EXIT
  NEXA_TEST_POSTGRES=$(sed -n 2p <<<"$out") "$@"
  ;;
*)
  echo "usage: $0 run CMD ARGS... | start | stop DIR | crash DIR | restart DIR" >&2
  exit 2
  ;;
esac
