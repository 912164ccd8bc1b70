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

# The system libraries every build needs.
ensure_build_packages() {
  ensure_packages libevent-dev libsqlite3-dev pkg-config
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
