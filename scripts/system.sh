#!/usr/bin/env bash
# What Studiolo needs from the machine, installed or started by the project's own files.
#
#   scripts/system.sh run    bubblewrap (the verifier isolates every check with it)
#   scripts/system.sh test   bubblewrap, Debian's chromium (browser tests), a running
#                            PostgreSQL with a database for the tests; prints the
#                            environment the tests need as KEY=VALUE lines on stdout
#
# Packages come from the machine's package manager (apt-get) when this user may install
# (root, or passwordless sudo). Otherwise it stops at once and prints the one command that
# would fix it. Everything it says goes to stderr; stdout carries only KEY=VALUE lines.
set -euo pipefail

say() { printf 'studiolo set-up: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

# --- system packages -----------------------------------------------------------------------
missing_packages() {  # which of the packages this goal needs are absent
  local goal=$1 need=()
  have bwrap || need+=(bubblewrap)
  if [ "$goal" = test ]; then
    have chromium || need+=(chromium)
    [ -n "${STUDIOLO_TEST_DATABASE_URL:-}" ] || have pg_isready || need+=(postgresql)
  fi
  [ ${#need[@]} -eq 0 ] || printf '%s\n' "${need[@]}"
}

have() {  # an executable in the usual system directories (where the code looks) or on PATH
  command -v "$1" >/dev/null 2>&1
}

as_root() {  # the prefix that runs a command as root, or fail
  if [ "$(id -u)" -eq 0 ]; then echo ""; return 0; fi
  if have sudo && sudo -n true >/dev/null 2>&1; then echo "sudo -n"; return 0; fi
  return 1
}

install_packages() {
  local pkgs=() sudo pkg
  for pkg in "$@"; do [ -z "$pkg" ] || pkgs+=("$pkg"); done
  [ ${#pkgs[@]} -gt 0 ] || return 0
  have apt-get || die "missing: ${pkgs[*]}; this machine has no apt-get: install them with its package manager, then run make again"
  if ! sudo=$(as_root); then
    die "missing: ${pkgs[*]}; run this once, then make again:
    sudo apt-get update && sudo apt-get install -y ${pkgs[*]}"
  fi
  local log
  log=$(mktemp "${TMPDIR:-/tmp}/studiolo-apt.XXXXXX")
  say "installing ${pkgs[*]} with apt-get (once; log: $log)"
  # A fresh machine may have no package lists yet: try as is, then update and try again.
  if ! apt_install "$sudo" "${pkgs[@]}" >"$log" 2>&1; then
    if ! { $sudo apt-get update -q && apt_install "$sudo" "${pkgs[@]}"; } >>"$log" 2>&1; then
      tail -n 20 "$log" >&2
      die "apt-get could not install ${pkgs[*]} (the log: $log)"
    fi
  fi
}

apt_install() {
  local sudo=$1
  shift
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# --- PostgreSQL ----------------------------------------------------------------------------
PG_HOST=${PGHOST_FOR_TESTS:-127.0.0.1}
PG_PORT=${PGPORT_FOR_TESTS:-5432}

pg_reachable() { have pg_isready && pg_isready -h "$PG_HOST" -p "$PG_PORT" -q 2>/dev/null; }

start_postgres() {  # a locally installed cluster that is down is started, as root can
  pg_reachable && return 0
  have pg_ctlcluster && [ -d /etc/postgresql ] || return 0
  local sudo version
  sudo=$(as_root) || die "PostgreSQL is installed but not running; start it once, then make again:
    sudo pg_ctlcluster $(ls /etc/postgresql | sort -V | tail -1) main start"
  version=$(ls /etc/postgresql | sort -V | tail -1)
  say "starting PostgreSQL $version"
  $sudo pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
  for _ in $(seq 1 30); do pg_reachable && return 0; sleep 1; done
  die "PostgreSQL $version did not start; see: pg_lsclusters"
}

psql_as() {  # run SQL as a role that may create databases: postgres over TCP, else the local superuser
  local sql=$1 sudo
  if psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -Atqc "$sql" 2>/dev/null; then return 0; fi
  sudo=$(as_root) || return 1
  have runuser || return 1
  $sudo runuser -u postgres -- psql -p "$PG_PORT" -d postgres -Atqc "$sql" 2>/dev/null
}

test_database_url() {  # the URL the tests use; creates the database (and, on a stock install, a role)
  if [ -n "${STUDIOLO_TEST_DATABASE_URL:-}" ]; then echo "$STUDIOLO_TEST_DATABASE_URL"; return 0; fi
  start_postgres
  pg_reachable || die "no PostgreSQL answers at $PG_HOST:$PG_PORT; install and start it, or set STUDIOLO_TEST_DATABASE_URL"
  local db=studiolo_test user=postgres
  if ! psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
    # Debian's own install trusts no TCP login: make a password-less role for this user
    # reachable through the local socket only (peer authentication).
    user=$(id -un)
    psql_as "do \$\$ begin if not exists (select from pg_roles where rolname = '$user')
             then create role \"$user\" login superuser; end if; end \$\$" >/dev/null \
      || die "cannot reach PostgreSQL as postgres; set STUDIOLO_TEST_DATABASE_URL to a server you may use"
    psql_as "select 1 from pg_database where datname = '$db'" | grep -q 1 \
      || psql_as "create database $db" >/dev/null
    echo "postgresql+psycopg://$user@/$db?host=/var/run/postgresql&port=$PG_PORT"
    return 0
  fi
  psql_as "select 1 from pg_database where datname = '$db'" | grep -q 1 \
    || psql_as "create database $db" >/dev/null || die "cannot create the database $db"
  echo "postgresql+psycopg://postgres@$PG_HOST:$PG_PORT/$db"
}

# --- npm packages the tests drive (the TypeScript MCP SDK client) ---------------------------
npm_for_tests() {
  local dir
  for dir in tests/faces/mcp/ts tests/faces/web/axe; do
    [ -f "$dir/package-lock.json" ] || continue
    have npm || die "the TypeScript MCP client tests need Node.js and npm: sudo apt-get install -y nodejs npm"
    if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules" ]; then
      say "installing the npm packages in $dir (npm ci)"
      (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || die "npm ci failed in $dir"
      touch "$dir/node_modules"
    fi
  done
}

main() {
  local goal=${1:-}
  case "$goal" in run | test) ;; *) die "usage: scripts/system.sh run|test" ;; esac
  mapfile -t need < <(missing_packages "$goal")
  install_packages "${need[@]:+${need[@]}}"
  for tool in bwrap; do have "$tool" || die "$tool is still missing after the install"; done
  if [ "$goal" = test ]; then
    have chromium || die "chromium is still missing after the install"
    echo "STUDIOLO_TEST_DATABASE_URL=$(test_database_url)"
    npm_for_tests
  fi
}

main "$@"
