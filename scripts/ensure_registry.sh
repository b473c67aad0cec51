#!/usr/bin/env bash
# Make sure the agent image registry answers on this machine (idempotent; installs need root).
#
#   scripts/ensure_registry.sh               # install docker-registry if needed, start it, wait for /v2/
#   scripts/ensure_registry.sh --install     # only install the Distribution binary (tests start their own)
#   scripts/ensure_registry.sh --stop        # stop the registry this script started
#
# The registry is Debian's Distribution registry (package docker-registry, binary /usr/bin/docker-registry)
# listening on loopback, where Docker engines accept it without TLS (127.0.0.0/8 is an insecure registry
# by default). Point the platform at it with AGENT_REGISTRY=127.0.0.1:5000 (example.env).
#
# - If GET http://$REGISTRY_ADDR/v2/ already answers like a registry (200 or 401 with the
#   Docker-Distribution-Api-Version header), does nothing.
# - Otherwise installs docker-registry (running `apt-get update` first when the package is unknown), writes
#   $REGISTRY_DIR/config.yml (filesystem storage in $REGISTRY_DIR/data, manifest deletes enabled), starts
#   the registry in the background (as the docker-registry user when run as root), its pid in
#   $REGISTRY_DIR/registry.pid and its log in $REGISTRY_DIR/registry.log, and waits at most
#   $REGISTRY_WAIT_S seconds (default 30) for /v2/ to answer.
# - The Debian package enables a system service listening on every interface (:5000) on systemd machines;
#   when this script installed the package, it disables that service (ours listens on loopback only).
#
# Settings (environment): REGISTRY_ADDR (default 127.0.0.1:5000), REGISTRY_DIR (default
# /var/lib/rl-arena/registry), REGISTRY_WAIT_S (default 30).
set -euo pipefail

REGISTRY_ADDR="${REGISTRY_ADDR:-127.0.0.1:5000}"
REGISTRY_DIR="${REGISTRY_DIR:-/var/lib/rl-arena/registry}"
REGISTRY_WAIT_S="${REGISTRY_WAIT_S:-30}"
PIDFILE="$REGISTRY_DIR/registry.pid"
LOGFILE="$REGISTRY_DIR/registry.log"

log() { echo "ensure_registry: $*" >&2; }
die() { echo "ensure_registry: ERROR: $*" >&2; exit 1; }

# True when a Distribution registry answers GET /v2/ at $REGISTRY_ADDR (401: it wants credentials).
registry_answers() {
    local headers
    headers="$(curl -s -o /dev/null -D - --max-time 3 --noproxy '*' "http://$REGISTRY_ADDR/v2/" 2>/dev/null)" || return 1
    printf '%s' "$headers" | grep -qi '^docker-distribution-api-version: registry/2' || return 1
    printf '%s' "$headers" | head -n 1 | grep -Eq ' (200|401) '
}

our_pid() {
    local pid
    [ -f "$PIDFILE" ] || return 1
    pid="$(cat "$PIDFILE" 2>/dev/null || true)"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q docker-registry || return 1
    echo "$pid"
}

# apt-get install the packages "$@" (refreshing the package lists when needed, retrying once).
apt_install() {
    [ "$(id -u)" = "0" ] || die "$* not installed and installing needs root (run: sudo $0)"
    log "installing $* from Debian"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-cache show "$@" >/dev/null 2>&1; then
        apt-get update -qq || die "apt-get update failed"
    fi
    if ! apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
        log "install failed; refreshing the package lists and retrying once"
        apt-get update -qq || die "apt-get update failed"
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null || die "apt-get install $* failed"
    fi
}

install_registry() {
    command -v curl >/dev/null 2>&1 || apt_install curl
    command -v docker-registry >/dev/null 2>&1 && return 0
    apt_install docker-registry
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        log "disabling the package's own service (it listens on every interface); ours listens on $REGISTRY_ADDR"
        systemctl disable --now docker-registry.service >/dev/null 2>&1 || true
    fi
    command -v docker-registry >/dev/null 2>&1 || die "docker-registry is not installed after apt-get install"
}

stop_registry() {
    local pid
    if pid="$(our_pid)"; then
        log "stopping the registry (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
}

case "${1:-}" in
    --install) install_registry; exit 0 ;;
    --stop) stop_registry; exit 0 ;;
    "") ;;
    *) die "unknown argument $1 (use --install or --stop, or nothing)" ;;
esac

command -v curl >/dev/null 2>&1 || apt_install curl
if registry_answers; then
    log "registry already answering at http://$REGISTRY_ADDR/v2/"
    exit 0
fi
install_registry

if pid="$(our_pid)"; then
    log "the registry (pid $pid) is running but not answering yet; waiting"
else
    mkdir -p "$REGISTRY_DIR/data"
    cat >"$REGISTRY_DIR/config.yml" <<EOF
# Written by scripts/ensure_registry.sh (rewritten at every start).
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $REGISTRY_DIR/data
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $REGISTRY_ADDR
  headers:
    X-Content-Type-Options: [nosniff]
EOF
    runner=()
    if [ "$(id -u)" = "0" ] && id docker-registry >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
        chown -R docker-registry: "$REGISTRY_DIR/data"
        runner=(setpriv --reuid=docker-registry --regid=docker-registry --init-groups)
    fi
    log "starting the registry on $REGISTRY_ADDR (storage $REGISTRY_DIR/data, log $LOGFILE)"
    # setsid + nohup: the registry outlives this shell and the CI step that called it.
    setsid nohup "${runner[@]}" docker-registry serve "$REGISTRY_DIR/config.yml" >>"$LOGFILE" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
fi

deadline=$((SECONDS + REGISTRY_WAIT_S))
until registry_answers; do
    if ! our_pid >/dev/null; then
        tail -n 20 "$LOGFILE" >&2 || true
        die "the registry exited at start (see $LOGFILE; is $REGISTRY_ADDR taken by another program?)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        tail -n 20 "$LOGFILE" >&2 || true
        die "the registry did not answer within ${REGISTRY_WAIT_S}s (see $LOGFILE)"
    fi
    sleep 0.2
done
log "registry ready at http://$REGISTRY_ADDR/v2/ (AGENT_REGISTRY=$REGISTRY_ADDR)"
