# Shared by the scripts in this folder: sourced, not run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# Installs the Debian packages named in "$@" that are missing (needs root or sudo).
ensure_packages() {
  local missing=()
  for package in "$@"; do
    dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# The system libraries every build needs (libpq-dev: the PostgreSQL store's client library).
ensure_build_packages() {
  ensure_packages libevent-dev libsqlite3-dev libpq-dev zlib1g-dev libdeflate-dev libjemalloc-dev pkg-config
}

# Builds the deltafeed command in release mode and prints its path.
build_release() {
  say "building deltafeed (release)"
  swift build -c release --product deltafeed >&2
  echo "$ROOT/.build/release/deltafeed"
}

# Waits until http://127.0.0.1:$1/healthz answers, for at most $2 seconds.
wait_for_health() {
  local port="$1" limit="${2:-30}"
  for _ in $(seq 1 $((limit * 10))); do
    curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $port did not become healthy in ${limit}s" >&2
  return 1
}

# PostgreSQL from Debian's packages, for the scripts and test suites that run against a server:
# the server itself and libpq's headers (the PostgreSQL store links libpq through pkg-config).
ensure_postgres_packages() {
  ensure_packages postgresql libpq-dev pkg-config
}

# The newest PostgreSQL installed under Debian's versioned layout (initdb is not on PATH there).
postgres_bin() {
  local dirs=(/usr/lib/postgresql/*/bin)
  printf '%s\n' "${dirs[@]}" | sort -V | tail -1
}

# Runs "$@" as the unprivileged user PostgreSQL runs as: it refuses to run as root.
as_postgres_user() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Prints a TCP port nobody listens on at 127.0.0.1 (the kernel picks it).
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Starts a throwaway PostgreSQL in a new temporary directory, on 127.0.0.1 only, and sets
#   PG_DIR (its directory), PG_PORT, PG_PID (the postmaster) and PG_URL (database "deltafeed",
#   role "deltafeed", trust authentication on loopback: it holds test data only).
# PG_PORT may be set beforehand (default: a free port). PG_SETTINGS adds server settings, e.g.
# "-c fsync=off" for test suites that do not prove durability. Stop it with stop_postgres, which
# signals PG_PID alone; restart_postgres keeps the data and the port.
start_postgres() {
  ensure_postgres_packages
  ensure_packages python3
  local bin; bin="$(postgres_bin)"
  PG_DIR="$(mktemp -d "${TMPDIR:-/tmp}/deltafeed-pg.XXXXXX")"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$PG_DIR"
  PG_PORT="${PG_PORT:-$(free_port)}"
  say "starting PostgreSQL ($(basename "$(dirname "$bin")")) in $PG_DIR on 127.0.0.1:$PG_PORT"
  as_postgres_user "$bin/initdb" -D "$PG_DIR/data" -U deltafeed --auth=trust -E UTF8 --no-locale \
    >"$PG_DIR/initdb.log" 2>&1 || { cat "$PG_DIR/initdb.log" >&2; return 1; }
  _pg_ctl_start
  as_postgres_user "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U deltafeed deltafeed
  PG_URL="postgres://deltafeed@127.0.0.1:$PG_PORT/deltafeed"
  export PG_DIR PG_PORT PG_PID PG_URL
}

_pg_ctl_start() {
  local bin; bin="$(postgres_bin)"
  # -k: the Unix socket lives in the temporary directory, not in /var/run (which may not exist).
  as_postgres_user "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 30 start \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR ${PG_SETTINGS:-}" >/dev/null \
    || { tail -20 "$PG_DIR/server.log" >&2; return 1; }
  PG_PID="$(head -1 "$PG_DIR/data/postmaster.pid")"
}

# Stops the PostgreSQL that start_postgres started: SIGINT to its postmaster (a fast shutdown:
# sessions are ended, then a checkpoint), then waits for it to exit. Keeps PG_DIR.
stop_postgres() {
  [ -n "${PG_PID:-}" ] || return 0
  kill -INT "$PG_PID" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$PG_PID" 2>/dev/null || break
    sleep 0.1
  done
  PG_PID=""
}

# Stops PostgreSQL and starts it again on the same data and port (the failure scripts use it).
restart_postgres() {
  stop_postgres
  _pg_ctl_start
}

# Stops PostgreSQL and removes its temporary directory.
remove_postgres() {
  stop_postgres
  [ -n "${PG_DIR:-}" ] && rm -rf "$PG_DIR"
  PG_DIR=""
}
