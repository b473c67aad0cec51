#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on 127.0.0.1; install and start them when they don't.
# Idempotent. Used by run_tests.sh (tests talk to the real services) and by prepare_dev.sh --services.
set -euo pipefail

log() { echo "[services] $*" >&2; }

apt_install() {
  if [ ! -f /var/lib/apt/lists/.rl-arena-updated ] && [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mmin -1440 2>/dev/null | head -1)" ]; then
    apt-get update -qq && touch /var/lib/apt/lists/.rl-arena-updated
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

pg_ready() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_ready() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

if ! command -v pg_isready >/dev/null || ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  log "installing PostgreSQL"
  apt_install postgresql
fi
if ! pg_ready; then
  log "starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
  for _ in $(seq 1 60); do pg_ready && break; sleep 0.5; done
  pg_ready || { log "PostgreSQL did not start"; exit 1; }
fi
# Trust auth for the local test user is how this machine is set up; make sure it works for TCP.
if ! psql -h 127.0.0.1 -U postgres -c 'select 1' >/dev/null 2>&1; then
  log "PostgreSQL refuses user postgres on 127.0.0.1 without a password; configure trust auth or DATABASE_URL"
  exit 1
fi

if ! command -v redis-server >/dev/null; then
  log "installing Redis"
  apt_install redis-server
fi
if ! redis_ready; then
  log "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 40); do redis_ready && break; sleep 0.25; done
  redis_ready || { log "Redis did not start"; exit 1; }
fi
log "PostgreSQL and Redis are up"
