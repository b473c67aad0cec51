#!/usr/bin/env bash
# A private Docker engine ("node") on this machine, next to the main one: what one worker machine of a
# fleet has. Used by the multi-machine suite (tests/cluster/); run as root.
#
#   scripts/start_docker_node.sh NAME            # start it (idempotent) and print its DOCKER_HOST
#   scripts/start_docker_node.sh NAME --host     # print its DOCKER_HOST (unix:///run/rl-arena-nodes/NAME/docker.sock)
#   scripts/start_docker_node.sh NAME --status   # exit 0 if its engine answers
#   scripts/start_docker_node.sh NAME --kill     # crash it: SIGKILL dockerd, then its containerd, its agents'
#                                                # processes and their shims (what a machine losing its
#                                                # engine looks like); data is kept, start it again later
#   scripts/start_docker_node.sh NAME --stop     # remove its containers, stop dockerd and containerd
#   scripts/start_docker_node.sh NAME --purge    # stop (or kill, if it does not answer), unmount what it
#                                                # left mounted and delete its folders
#   scripts/start_docker_node.sh --list          # the nodes that have folders on this machine
#
# Each node is independent of the main engine (/var/run/docker.sock, never touched) and of other nodes:
#   - its own containerd (started here, not dockerd's supervised one nor the system's
#     /run/containerd/containerd.sock, which dockerd would otherwise share), root and state folders;
#   - dockerd with its own --data-root, --exec-root, -H unix:// socket, --pidfile and daemon config file
#     (the main engine's /etc/docker/daemon.json is not read), labelled rl-arena.node=NAME (`docker info`);
#   - --bridge=none --iptables=false --ip-masq=false: no bridge and no firewall rules (agent containers
#     have no network at all);
#   - the storage driver: overlay2 when a probe mount under the node's data folder works, else vfs
#     (override with DOCKER_STORAGE_DRIVER=overlay2|vfs).
# Every process this script signals is found through the node's own pidfiles or paths, checked against
# its command line: never by a broad name.
#
# Folders: $DOCKER_NODES_DIR/NAME (default /var/lib/rl-arena/nodes/NAME: images, containers, logs) and
# $DOCKER_NODES_RUN/NAME (default /run/rl-arena-nodes/NAME: sockets, pidfiles, exec root; kept short,
# Unix socket paths are limited to 107 bytes). NAME: 1-24 of [a-z0-9-], starting with a letter or digit.
# DOCKER_NODE_WAIT_S (default 60): how long to wait for the engine to answer.
set -euo pipefail

NODES_DIR="${DOCKER_NODES_DIR:-/var/lib/rl-arena/nodes}"
NODES_RUN="${DOCKER_NODES_RUN:-/run/rl-arena-nodes}"
WAIT_S="${DOCKER_NODE_WAIT_S:-60}"

log() { echo "start_docker_node${NAME:+ $NAME}: $*" >&2; }
die() { echo "start_docker_node${NAME:+ $NAME}: ERROR: $*" >&2; exit 1; }

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

NAME=""
if [ "${1:-}" = "--list" ]; then
    shopt -s nullglob
    for folder in "$NODES_DIR"/*/ "$NODES_RUN"/*/; do basename "$folder"; done | sort -u
    exit 0
fi
[ $# -ge 1 ] || usage
NAME="$1"
ACTION="${2:---start}"
[[ "$NAME" =~ ^[a-z0-9][a-z0-9-]{0,23}$ ]] || die "bad node name '$NAME' (1-24 of a-z 0-9 -)"

DATA="$NODES_DIR/$NAME"
RUN="$NODES_RUN/$NAME"
EXEC="$RUN/exec"
SOCK="$RUN/docker.sock"
DOCKERD_PID="$RUN/dockerd.pid"
CONTAINERD_PID="$RUN/containerd.pid"
CONTAINERD_SOCK="$RUN/containerd/containerd.sock"
CONTAINERD_CONF="$RUN/containerd.toml"
DAEMON_JSON="$RUN/daemon.json"
LOG="$DATA/dockerd.log"
CONTAINERD_LOG="$DATA/containerd.log"
HOST="unix://$SOCK"

engine_answers() { timeout 10 docker -H "$HOST" version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# The pid in pidfile $1 if that process is alive and its command line holds $2 (it is ours).
pid_of() {
    local pid
    [ -f "$1" ] || return 1
    pid="$(cat "$1" 2>/dev/null || true)"
    [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2" || return 1
    echo "$pid"
}
dockerd_pid() { pid_of "$DOCKERD_PID" "$SOCK"; }
containerd_pid() { pid_of "$CONTAINERD_PID" "$CONTAINERD_CONF"; }

# Pids of the containerd shims serving this node's containerd (their command line names its socket).
shim_pids() {
    local cmdline pid
    for cmdline in /proc/[0-9]*/cmdline; do
        pid="${cmdline#/proc/}"
        pid="${pid%/cmdline}"
        if tr '\0' ' ' <"$cmdline" 2>/dev/null | grep -q "containerd-shim.* -address $CONTAINERD_SOCK"; then
            echo "$pid"
        fi
    done
}

# Wait (at most $2 tenths of a second) for process $1 to be gone.
wait_gone() {
    local i
    for i in $(seq 1 "$2"); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    return 1
}

pick_storage_driver() {
    if [ -n "${DOCKER_STORAGE_DRIVER:-}" ]; then
        echo "$DOCKER_STORAGE_DRIVER"
        return
    fi
    # overlay2 needs the overlay module and a backing filesystem that supports it (not overlay itself,
    # e.g. inside a container): probe with a real mount where the data root lives.
    local probe
    probe="$(mktemp -d "$DATA/overlay-probe.XXXXXX")"
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

# Put the host's docker0 back (same IPv4 addresses, up) if this node's dockerd deleted it.
restore_host_bridge() {
    local addrs="$1"
    [ -n "$addrs" ] || return 0
    ip link show docker0 >/dev/null 2>&1 && return 0
    log "the main engine's docker0 bridge was deleted by this engine's start: recreating it"
    ip link add docker0 type bridge || return 0
    local addr
    for addr in $addrs; do ip addr add "$addr" dev docker0 || true; done
    ip link set docker0 up || true
}

start_containerd() {
    local pid
    if pid="$(containerd_pid)"; then
        return 0
    fi
    rm -f "$CONTAINERD_SOCK"
    mkdir -p "$RUN/containerd" "$DATA/containerd"
    cat >"$CONTAINERD_CONF" <<EOF
# Written by scripts/start_docker_node.sh for node $NAME (rewritten at every start).
version = 2
root = "$DATA/containerd"
state = "$RUN/containerd/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = ""
[debug]
  address = ""
  level = "warn"
EOF
    log "starting containerd (root $DATA/containerd, socket $CONTAINERD_SOCK)"
    setsid nohup containerd --config "$CONTAINERD_CONF" >>"$CONTAINERD_LOG" 2>&1 </dev/null &
    local launched=$!
    echo "$launched" >"$CONTAINERD_PID"
    local deadline=$((SECONDS + WAIT_S))
    until [ -S "$CONTAINERD_SOCK" ]; do
        # kill -0, not containerd_pid: while setsid and nohup exec, /proc/PID/cmdline can read empty.
        kill -0 "$launched" 2>/dev/null || { tail -n 20 "$CONTAINERD_LOG" >&2; die "containerd exited at start"; }
        [ "$SECONDS" -lt "$deadline" ] || die "containerd did not open $CONTAINERD_SOCK within ${WAIT_S}s"
        sleep 0.1
    done
}

start_node() {
    command -v dockerd >/dev/null 2>&1 || die "dockerd is not installed (run scripts/ensure_docker.sh)"
    command -v containerd >/dev/null 2>&1 || die "containerd is not installed (run scripts/ensure_docker.sh)"
    [ "$(id -u)" = "0" ] || die "starting a Docker engine needs root"
    mkdir -p "$DATA" "$RUN" "$EXEC"
    chmod 700 "$RUN"
    if dockerd_pid >/dev/null && engine_answers; then
        log "already running ($HOST)"
        echo "$HOST"
        return 0
    fi
    start_containerd
    # A dockerd started with --bridge=none deletes the host's docker0 link at start-up (moby's
    # removeDefaultBridgeInterface), which the machine's main engine needs for builds and bridged
    # containers: note its addresses now and put it back once this engine is up.
    local host_bridge_addrs=""
    if ip link show docker0 >/dev/null 2>&1; then
        host_bridge_addrs="$(ip -o -4 addr show docker0 | awk '{print $4}')"
    fi
    if ! dockerd_pid >/dev/null; then
        local driver
        driver="$(pick_storage_driver)"
        [ -f "$DAEMON_JSON" ] || echo '{}' >"$DAEMON_JSON"
        rm -f "$SOCK" "$DOCKERD_PID"
        log "starting dockerd (storage driver $driver, data root $DATA/docker, log $LOG)"
        # setsid + nohup: the engine outlives this shell; dockerd writes its own pidfile.
        setsid nohup dockerd \
            --config-file "$DAEMON_JSON" \
            --data-root "$DATA/docker" \
            --exec-root "$EXEC" \
            --pidfile "$DOCKERD_PID" \
            -H "$HOST" \
            --containerd "$CONTAINERD_SOCK" \
            --storage-driver "$driver" \
            --bridge=none --iptables=false --ip-masq=false \
            --label "rl-arena.node=$NAME" \
            --log-level warn \
            >>"$LOG" 2>&1 </dev/null &
        local launched=$!
        local deadline=$((SECONDS + WAIT_S))
        until dockerd_pid >/dev/null; do
            kill -0 "$launched" 2>/dev/null || { tail -n 30 "$LOG" >&2; die "dockerd exited at start (see $LOG)"; }
            [ "$SECONDS" -lt "$deadline" ] || die "dockerd wrote no pidfile within ${WAIT_S}s"
            sleep 0.1
        done
    fi
    local deadline=$((SECONDS + WAIT_S))
    until engine_answers; do
        dockerd_pid >/dev/null || { tail -n 30 "$LOG" >&2; die "dockerd exited at start (see $LOG)"; }
        [ "$SECONDS" -lt "$deadline" ] || { tail -n 30 "$LOG" >&2; die "the engine did not answer within ${WAIT_S}s"; }
        sleep 0.2
    done
    restore_host_bridge "$host_bridge_addrs"
    log "ready: $HOST, storage $(docker -H "$HOST" info --format '{{.Driver}}' 2>/dev/null)"
    echo "$HOST"
}

kill_node() {
    local pid shims
    # dockerd first: an agent process dying while its engine still runs would be reported as the
    # agent's own exit; with the engine gone first it is what it is, an infrastructure failure.
    if pid="$(dockerd_pid)"; then
        log "SIGKILL dockerd (pid $pid)"
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone "$pid" 100 || die "dockerd (pid $pid) survived SIGKILL"
    fi
    if pid="$(containerd_pid)"; then
        log "SIGKILL containerd (pid $pid)"
        kill -KILL "$pid" 2>/dev/null || true
        wait_gone "$pid" 100 || die "containerd (pid $pid) survived SIGKILL"
    fi
    shims="$(shim_pids)"
    for pid in $shims; do
        # The shim's children are the containers' init processes: killing pid 1 of a container's pid
        # namespace kills everything in it.
        for child in $(cat "/proc/$pid/task/"*/children 2>/dev/null); do
            kill -KILL "$child" 2>/dev/null || true
        done
        kill -KILL "$pid" 2>/dev/null || true
    done
    [ -z "$shims" ] || log "SIGKILLed $(echo $shims | wc -w) containerd shim(s) and their containers"
    rm -f "$SOCK"
}

stop_node() {
    local pid ids
    if engine_answers; then
        ids="$(docker -H "$HOST" ps -aq)"
        if [ -n "$ids" ]; then
            log "removing $(echo $ids | wc -w) container(s)"
            # shellcheck disable=SC2086
            docker -H "$HOST" rm -f $ids >/dev/null 2>&1 || true
        fi
    fi
    if pid="$(dockerd_pid)"; then
        log "stopping dockerd (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        wait_gone "$pid" 300 || { log "dockerd did not stop within 30 s: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
    fi
    if pid="$(containerd_pid)"; then
        kill -TERM "$pid" 2>/dev/null || true
        wait_gone "$pid" 100 || kill -KILL "$pid" 2>/dev/null || true
    fi
    kill_node  # whatever is left: shims of containers the engine lost track of
    rm -f "$DOCKERD_PID" "$CONTAINERD_PID"
}

# Unmount everything mounted under the node's folders (deepest first), as a crashed engine leaves them.
unmount_all() {
    local target
    awk '{print $2}' /proc/mounts | sed 's/\\040/ /g' | { grep -E "^($DATA|$RUN)(/|$)" || true; } | sort -r |
        while read -r target; do
            umount -l "$target" 2>/dev/null || true
        done
}

case "$ACTION" in
    --start) start_node ;;
    --host) echo "$HOST" ;;
    --status) dockerd_pid >/dev/null && engine_answers ;;
    --kill) kill_node ;;
    --stop) stop_node ;;
    --purge)
        stop_node
        unmount_all
        rm -rf "$DATA" "$RUN"
        log "purged"
        ;;
    *) usage ;;
esac
