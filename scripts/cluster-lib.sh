# Several deltafeed replicas behind nginx, for scripts/run-cluster and scripts/cluster-test:
# sourced after lib.sh, not run. Everything lives in one temporary directory (CLUSTER_DIR) and
# every process is started here and stopped by its PID (never by name).
#
#   STORE=postgres|sqlite   which store the replicas share. postgres (the default when the binary
#                           has `serve --store`): a PostgreSQL of its own (lib.sh start_postgres).
#                           sqlite: one SQLite file in CLUSTER_DIR that every replica opens (writes
#                           serialize through SQLite, each index catches up every 250 ms).
#   SEED_USERS, SEED_VIDEOS, SEED_ADS   the demo data seeded once (default 2000, 50000, 40).
#   REPLICA_THREADS         worker threads per replica (default 1).
#   DELTAFEED_ADMIN_TOKEN   the write routes' token (default demo-token).

CLUSTER_DIR=""
CLUSTER_STORE=""
CLUSTER_STORE_FLAGS=()
NGINX_PID=""
NGINX_PORT=""
REPLICA_PORTS=()
REPLICA_PIDS=()

# Whether this deltafeed binary has the PostgreSQL store (`serve --store`).
binary_has_store_flag() {
  # Not grep -q: it would stop reading early, the binary would die of SIGPIPE, and pipefail
  # would report the flag missing.
  "$1" serve --help 2>/dev/null | grep -- '--store' >/dev/null
}

# Sets CLUSTER_STORE from STORE (default: postgres when the binary supports it, else sqlite).
choose_store() {
  local binary="$1"
  if binary_has_store_flag "$binary"; then
    CLUSTER_STORE="${STORE:-postgres}"
  else
    CLUSTER_STORE="${STORE:-sqlite}"
    if [ "$CLUSTER_STORE" = postgres ]; then
      echo "STORE=postgres, but $binary has no --store flag (the PostgreSQL store is not built in)" >&2
      return 1
    fi
  fi
  case "$CLUSTER_STORE" in
    postgres | sqlite) ;;
    *) echo "STORE must be postgres or sqlite, not $CLUSTER_STORE" >&2; return 1 ;;
  esac
}

# Creates CLUSTER_DIR, starts PostgreSQL when the store is postgres, and seeds the store once.
prepare_store() {
  local binary="$1"
  CLUSTER_DIR="$(mktemp -d "${TMPDIR:-/tmp}/deltafeed-cluster.XXXXXX")"
  if [ "$CLUSTER_STORE" = postgres ]; then
    # A PostgreSQL of its own: scripts/test exports its server's PG_* for the Swift suites, and
    # inheriting them would start on that port (and stop that server on the way out).
    unset PG_DIR PG_PORT PG_PID PG_URL
    start_postgres
    CLUSTER_STORE_FLAGS=(--store "$PG_URL")
  else
    CLUSTER_STORE_FLAGS=(--db "$CLUSTER_DIR/store.sqlite")
  fi
  say "seeding the shared $CLUSTER_STORE store (${SEED_USERS:-2000} users, ${SEED_VIDEOS:-50000} videos)"
  "$binary" seed "${CLUSTER_STORE_FLAGS[@]}" --users "${SEED_USERS:-2000}" --videos "${SEED_VIDEOS:-50000}" \
    --ads "${SEED_ADS:-40}" --seed 42 >"$CLUSTER_DIR/seed.log" 2>&1 || { cat "$CLUSTER_DIR/seed.log" >&2; return 1; }
}

# Starts replica number $2 (0-based) of binary $1 in the background on a free port (or on the
# port it had before: a restart), and records its port and PID. Does not wait for it.
start_replica() {
  local binary="$1" index="$2"
  local port="${REPLICA_PORTS[$index]:-$(free_port)}"
  "$binary" serve "${CLUSTER_STORE_FLAGS[@]}" --host 127.0.0.1 --port "$port" --threads "${REPLICA_THREADS:-1}" \
    --admin-token "$DELTAFEED_ADMIN_TOKEN" --log-level notice >>"$CLUSTER_DIR/replica-$index.log" 2>&1 &
  REPLICA_PIDS[$index]=$!
  REPLICA_PORTS[$index]=$port
}

# Waits until replica $1's /healthz answers 200 (it answers 503 `starting` while loading).
wait_for_replica() {
  local index="$1"
  kill -0 "${REPLICA_PIDS[$index]}" 2>/dev/null || { tail -5 "$CLUSTER_DIR/replica-$index.log" >&2; return 1; }
  wait_for_health "${REPLICA_PORTS[$index]}" 120 || { tail -5 "$CLUSTER_DIR/replica-$index.log" >&2; return 1; }
}

# Kills replica $1 with SIGKILL and reaps it.
kill_replica() {
  local index="$1" pid="${REPLICA_PIDS[$1]:-}"
  [ -n "$pid" ] || return 0
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  REPLICA_PIDS[$index]=""
}

# Writes nginx.conf for the replicas in REPLICA_PORTS and starts nginx on 127.0.0.1:$1 in the
# foreground of a background job (daemon off), its PID in NGINX_PID.
#
# Reads (GET, HEAD) that fail to connect, time out, or get 502/503 (a replica down or still
# starting) are passed to the next replica; a 502/503/error also counts against the replica
# (max_fails=1: skipped for fail_timeout, then tried again with live traffic: passive health
# checks). Every other method goes to @writes, which passes a request on only when it could not
# be sent at all (nginx never resends POST or PATCH once sent): a 503 storage_unavailable goes
# back to the client, who retries after Retry-After, and does not mark the replica down — in a
# database outage every replica answers it, and marking them all down would turn reads into
# "no live upstreams" 502s.
#
# The live route (GET /v1/users/{id}/feed/live, Server-Sent Events) has a location of its own:
# no buffering (each event goes out as the replica writes it; the replicas also send
# X-Accel-Buffering: no), an hour's read timeout (a quiet stream carries a heartbeat every 15 s,
# but a stream is meant to stay open), and HTTP/1.1 to the replica without a Connection header
# (chunked answers, upstream keepalive). It is passed to the next replica only when the request
# could not be made at all (connection refused or timed out): once a replica has answered, its
# answer is the client's — a 503 `overloaded` carries the Retry-After to honour, and a stream
# that ends (a replica shutting down sends `event: shutdown` first) is the client's cue to
# reconnect with Last-Event-ID, which nginx balances like any new request. Delta requests may be
# long polls (`wait=` up to 60 s): their location reads for 75 s, so a held request is not taken
# for a hung replica and sent again elsewhere (a delta is a read: POST …/feed/delta may be
# retried). Graceful stops (SIGQUIT) would wait for open streams: worker_shutdown_timeout ends
# them after 10 s.
start_nginx() {
  local port="$1"
  local dir="$CLUSTER_DIR/nginx"
  mkdir -p "$dir/tmp"
  local user_line=""
  if [ "$(id -u)" -eq 0 ]; then
    # Workers drop to nobody: they need to reach the temporary directory and write in tmp/.
    chmod 755 "$CLUSTER_DIR" "$dir"
    chown nobody "$dir/tmp"
    user_line="user nobody nogroup;"
  fi
  {
    echo "$user_line"
    echo "worker_processes 1;"
    echo "worker_shutdown_timeout 10s;"
    echo "daemon off;"
    echo "pid $dir/nginx.pid;"
    echo "error_log $dir/error.log warn;"
    echo "events { worker_connections 8192; }"
    echo "http {"
    echo "  log_format upstream '\$request_method \$uri \$status upstream=\$upstream_addr upstream_status=\$upstream_status';"
    echo "  access_log $dir/access.log upstream;"
    echo "  client_body_temp_path $dir/tmp/body; proxy_temp_path $dir/tmp/proxy; fastcgi_temp_path $dir/tmp/fastcgi;"
    echo "  uwsgi_temp_path $dir/tmp/uwsgi; scgi_temp_path $dir/tmp/scgi;"
    echo "  upstream deltafeed {"
    for replica_port in "${REPLICA_PORTS[@]}"; do
      echo "    server 127.0.0.1:$replica_port max_fails=1 fail_timeout=2s;"
    done
    # Idle upstream connections nginx keeps (per worker, for all replicas together): at least
    # the clients' connections, or it closes and reopens hundreds a second under load (32 with
    # 64 wrk connections: ~250 new upstream connections/s per replica). NGINX_KEEPALIVE overrides.
    echo "    keepalive ${NGINX_KEEPALIVE:-128};"
    echo "  }"
    echo "  server {"
    echo "    listen 127.0.0.1:$port;"
    echo "    client_max_body_size 1m;"
    echo "    proxy_http_version 1.1;"
    echo "    proxy_set_header Connection \"\";"
    echo "    proxy_set_header Host \$host;"
    echo "    proxy_connect_timeout 1s;"
    echo "    proxy_read_timeout 30s;"
    echo "    proxy_next_upstream_tries ${#REPLICA_PORTS[@]};"
    echo "    proxy_next_upstream_timeout 10s;"
    echo "    location / {"
    echo "      error_page 418 = @writes;"
    echo "      if (\$request_method !~ ^(GET|HEAD)\$) { return 418; }"
    echo "      proxy_pass http://deltafeed;"
    echo "      proxy_next_upstream error timeout http_502 http_503;"
    echo "    }"
    echo "    location ~ ^/v1/users/[0-9]+/feed/delta\$ {"
    echo "      proxy_pass http://deltafeed;"
    echo "      proxy_read_timeout 75s;"
    echo "      proxy_next_upstream error timeout http_502 http_503;"
    echo "    }"
    echo "    location ~ ^/v1/users/[0-9]+/feed/live\$ {"
    echo "      proxy_pass http://deltafeed;"
    echo "      proxy_http_version 1.1;"
    echo "      proxy_set_header Connection \"\";"
    echo "      proxy_set_header Host \$host;"
    echo "      proxy_buffering off;"
    echo "      proxy_read_timeout 1h;"
    echo "      proxy_next_upstream error timeout;"
    echo "    }"
    echo "    location @writes {"
    echo "      proxy_pass http://deltafeed;"
    echo "      proxy_next_upstream error timeout;"
    echo "    }"
    echo "  }"
    echo "}"
  } >"$dir/nginx.conf"
  nginx -t -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$dir/check.log" 2>&1 || { cat "$dir/check.log" >&2; return 1; }
  nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" &
  NGINX_PID=$!
  NGINX_PORT=$port
  wait_for_health "$port" 10 || { tail -5 "$dir/error.log" >&2; return 1; }
}

# Builds (unless DELTAFEED_BIN names a binary), seeds, and starts N replicas and nginx on $2.
# Prints the binary's path.
start_cluster() {
  local count="$1" port="$2" binary="$3"
  choose_store "$binary"
  prepare_store "$binary"
  say "starting $count replicas on the shared $CLUSTER_STORE store"
  for index in $(seq 0 $((count - 1))); do start_replica "$binary" "$index"; done
  for index in $(seq 0 $((count - 1))); do wait_for_replica "$index"; done
  say "starting nginx on 127.0.0.1:$port"
  start_nginx "$port"
}

# Replica base URLs, comma-separated.
replica_urls() {
  local urls=() port
  for port in "${REPLICA_PORTS[@]}"; do urls+=("http://127.0.0.1:$port"); done
  (IFS=,; echo "${urls[*]}")
}

# Stops nginx (SIGQUIT: graceful), every replica (SIGTERM: they drain and persist their
# snapshots), PostgreSQL, and removes CLUSTER_DIR (KEEP_CLUSTER_DIR=1 keeps it, for its logs).
stop_cluster() {
  if [ -n "$NGINX_PID" ]; then
    kill -QUIT "$NGINX_PID" 2>/dev/null || true
    wait "$NGINX_PID" 2>/dev/null || true
    NGINX_PID=""
  fi
  local pid
  for pid in "${REPLICA_PIDS[@]}"; do [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${REPLICA_PIDS[@]}"; do [ -n "$pid" ] && wait "$pid" 2>/dev/null || true; done
  REPLICA_PIDS=()
  if [ "$CLUSTER_STORE" = postgres ]; then remove_postgres; fi
  if [ -n "$CLUSTER_DIR" ]; then
    if [ "${KEEP_CLUSTER_DIR:-0}" = 1 ]; then echo "kept $CLUSTER_DIR" >&2; else rm -rf "$CLUSTER_DIR"; fi
  fi
  CLUSTER_DIR=""
}
