#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine (idempotent; run as root).
#
#   scripts/ensure_docker.sh            # install docker.io if needed, start dockerd, wait for it
#
# - If `docker info` already works, does nothing.
# - Otherwise installs Debian's docker.io (running `apt-get update` first when the package is unknown),
#   starts `dockerd` in the background with its log in $DOCKERD_LOG (default /var/log/rl-arena-dockerd.log),
#   and waits at most $DOCKER_WAIT_S seconds (default 60) for `docker info` to answer.
# - Storage driver: overlay2 when the kernel and the backing filesystem support it, else vfs
#   (slow and disk-hungry, but works everywhere). Override with DOCKER_STORAGE_DRIVER=overlay2|vfs.
set -euo pipefail

DOCKERD_LOG="${DOCKERD_LOG:-/var/log/rl-arena-dockerd.log}"
DOCKER_WAIT_S="${DOCKER_WAIT_S:-60}"

log() { echo "ensure_docker: $*" >&2; }
die() { echo "ensure_docker: ERROR: $*" >&2; exit 1; }

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }
# The engine of /var/run/docker.sock (other engines, e.g. the cluster suite's nodes, may run beside it).
main_dockerd_alive() { [ -f /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; }

# An engine whose default bridge network lost its docker0 interface (something deleted the link) answers
# but cannot build images or run networked containers until it is restarted, which recreates it.
bridge_lost() {
    docker network inspect bridge >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 \
        && ! ip link show docker0 >/dev/null 2>&1
}

if command -v docker >/dev/null 2>&1 && engine_answers; then
    if ! bridge_lost; then
        log "Docker engine already answering ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
        exit 0
    fi
    [ "$(id -u)" = "0" ] || die "the engine's docker0 bridge is gone; restarting it needs root"
    log "the engine answers but its docker0 bridge is gone: restarting it"
    pid="$(cat /var/run/docker.pid 2>/dev/null || true)"
    if [ -n "$pid" ]; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    fi
fi

[ "$(id -u)" = "0" ] || die "no Docker engine answers and starting one needs root (run: sudo $0)"

if ! command -v dockerd >/dev/null 2>&1; then
    log "installing docker.io from Debian"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-cache show docker.io >/dev/null 2>&1; then
        apt-get update -qq || die "apt-get update failed"
    fi
    if ! apt-get install -y -qq --no-install-recommends docker.io iptables ca-certificates >/dev/null; then
        log "install failed; refreshing the package lists and retrying once"
        apt-get update -qq || die "apt-get update failed"
        apt-get install -y -qq --no-install-recommends docker.io iptables ca-certificates >/dev/null \
            || die "apt-get install docker.io failed"
    fi
fi
command -v dockerd >/dev/null 2>&1 || die "dockerd is not installed after apt-get install docker.io"
command -v docker >/dev/null 2>&1 || die "the docker client is not installed"

# Pick a storage driver. overlay2 needs the overlay module and a backing filesystem that supports it
# (ext4/xfs yes; overlay-on-overlay, e.g. inside another container, no). We probe with a real mount.
pick_storage_driver() {
    if [ -n "${DOCKER_STORAGE_DRIVER:-}" ]; then
        echo "$DOCKER_STORAGE_DRIVER"
        return
    fi
    local probe
    probe="$(mktemp -d /var/lib/rl-arena-overlay-probe.XXXXXX)"
    mkdir -p "$probe/lower" "$probe/upper" "$probe/work" "$probe/merged"
    if mount -t overlay overlay -o "lowerdir=$probe/lower,upperdir=$probe/upper,workdir=$probe/work" \
        "$probe/merged" 2>/dev/null; then
        umount "$probe/merged"
        rm -rf "$probe"
        echo overlay2
    else
        rm -rf "$probe"
        echo vfs
    fi
}

if [ -S /var/run/docker.sock ] && main_dockerd_alive; then
    log "dockerd is running but not answering yet; waiting"
else
    DRIVER="$(pick_storage_driver)"
    mkdir -p "$(dirname "$DOCKERD_LOG")"
    rm -f /var/run/docker.pid
    # A stale socket from a dead daemon would make `docker info` fail in a confusing way.
    if [ -S /var/run/docker.sock ] && ! main_dockerd_alive; then
        rm -f /var/run/docker.sock
    fi
    start_dockerd() {
        log "starting dockerd (storage driver $DRIVER${*:+, $*}, log $DOCKERD_LOG)"
        # setsid + nohup: the daemon outlives this shell and the CI step that called it.
        # From /: the daemon outlives this checkout, whose folder may be deleted while it runs.
        (cd / && exec setsid nohup dockerd --storage-driver "$DRIVER" "$@" >>"$DOCKERD_LOG" 2>&1 </dev/null) &
        DOCKERD_PID=$!
    }
    start_dockerd
    # Some machines refuse the iptables rules of the default bridge. Agents need no network at all, so
    # fall back to a daemon without bridge networking rather than no daemon.
    for _ in $(seq 1 20); do
        engine_answers && break
        if ! kill -0 "$DOCKERD_PID" 2>/dev/null; then
            log "dockerd exited at start; retrying without bridge networking (--bridge=none --iptables=false)"
            start_dockerd --bridge=none --iptables=false --ip-masq=false
            break
        fi
        sleep 0.5
    done
fi

deadline=$((SECONDS + DOCKER_WAIT_S))
until engine_answers; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "---- last lines of $DOCKERD_LOG ----" >&2
        tail -n 30 "$DOCKERD_LOG" >&2 || true
        die "the Docker engine did not answer within ${DOCKER_WAIT_S}s (see $DOCKERD_LOG)"
    fi
    sleep 0.5
done
log "Docker engine ready: $(docker version --format 'server {{.Server.Version}}, API {{.Server.APIVersion}}' 2>/dev/null), storage $(docker info --format '{{.Driver}}' 2>/dev/null)"
