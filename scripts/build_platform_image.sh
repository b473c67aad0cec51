#!/usr/bin/env bash
# Build the platform image (web, workers, manager, publisher share it) from the local agent base image,
# without needing a registry or network access inside `docker build`.
#
#   scripts/build_platform_image.sh            # build rl-arena:dev unless an image of the same inputs exists
#   FORCE=1 scripts/build_platform_image.sh    # rebuild anyway
#
# Settings (environment):
#   PLATFORM_IMAGE     the tag to build (default rl-arena:dev)
#   BASE_IMAGE         FROM image (default: $AGENT_BASE_IMAGE, i.e. rl-arena-agent-base:1, built by
#                      scripts/build_base_image.sh when missing; python:3.11-slim works too)
#   WHEELHOUSE         where host-built wheels go (default build/wheels, inside the build context)
#   APT_PACKAGES       Debian packages added to the image (Dockerfile default: git openssh-client
#                      ca-certificates, for the publisher); set it empty when no Debian mirror is reachable
#
# How: `pip wheel` on the host (same CPython 3.11, same manylinux platform) fills build/wheels with every
# runtime dependency plus pip itself, and the Dockerfile installs them with --no-index. The image carries
# the label rl-arena.inputs=<hash of Dockerfile, pyproject.toml and the tracked source>, so a second run
# with nothing changed returns at once.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

IMAGE="${PLATFORM_IMAGE:-rl-arena:dev}"
BASE="${BASE_IMAGE:-${AGENT_BASE_IMAGE:-rl-arena-agent-base:1}}"
WHEELHOUSE="${WHEELHOUSE:-build/wheels}"
PY="${PYTHON:-python3}"
[ -x .venv/bin/python ] && PY=.venv/bin/python

log() { echo "build_platform_image: $*" >&2; }
die() { echo "build_platform_image: ERROR: $*" >&2; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker is not installed (run scripts/ensure_docker.sh)"
timeout 20 docker info >/dev/null 2>&1 || die "no Docker engine answers (run scripts/ensure_docker.sh)"

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    if [ "$BASE" = "${AGENT_BASE_IMAGE:-rl-arena-agent-base:1}" ] && [ -x scripts/build_base_image.sh ]; then
        log "base image $BASE missing: building it"
        scripts/build_base_image.sh
    else
        die "base image $BASE is not present (docker pull it or run scripts/build_base_image.sh)"
    fi
fi

# The inputs: every file of the build context that git tracks or sees (not ignored), or, outside a git
# checkout, every file but data/, .venv/, build/ and .git/; plus the base image's id.
list_inputs() {
    if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git ls-files --cached --others --exclude-standard -z
    else
        find . \( -path ./.git -o -path ./.venv -o -path ./data -o -path ./build \) -prune -o -type f -print0
    fi
}
base_id="$(docker image inspect "$BASE" --format '{{.Id}}')"
inputs_hash="$(
    set +o pipefail  # a tracked file deleted in the work tree must not abort the script
    {
        echo "base=$base_id"
        list_inputs | xargs -0 -r sha256sum 2>/dev/null | sort -k2
    } | sha256sum | cut -c1-16
)"
existing="$(docker image inspect "$IMAGE" --format '{{ index .Config.Labels "rl-arena.inputs" }}' 2>/dev/null || true)"
if [ "${FORCE:-0}" != 1 ] && [ "$existing" = "$inputs_hash" ]; then
    log "$IMAGE is up to date (inputs $inputs_hash); nothing to do"
    exit 0
fi

start=$SECONDS
mkdir -p "$WHEELHOUSE"
deps_hash="$(sha256sum pyproject.toml | cut -c1-16)"
if [ "$(cat "$WHEELHOUSE/.deps-hash" 2>/dev/null)" != "$deps_hash" ]; then
    log "building the wheelhouse in $WHEELHOUSE (pip wheel on the host)"
    # Wheels already in the wheelhouse are reused (--find-links): a dependency change only fetches what is new.
    "$PY" -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        >"$WHEELHOUSE/requirements.txt"
    "$PY" -m pip wheel -q --wheel-dir "$WHEELHOUSE" --find-links "$WHEELHOUSE" -r "$WHEELHOUSE/requirements.txt" pip 2>&1 \
        | grep -v -E "^WARNING: Location .* is ignored" >&2 || true
    ls "$WHEELHOUSE"/pip-*.whl >/dev/null 2>&1 || die "pip wheel failed (no pip wheel in $WHEELHOUSE)"
    # The base image's Python may differ from the host's in its patch version (Debian bookworm: 3.11.2), and
    # environment markers (e.g. redis needs async-timeout before 3.11.3) then pull in packages the host
    # never resolved. Ask the image's own Python, offline, what is still missing, and add it.
    pip_whl="$(basename "$(ls "$WHEELHOUSE"/pip-*.whl | head -n 1)")"
    for _ in 1 2 3 4 5; do
        missing="$(docker run --rm --network none -v "$ROOT/$WHEELHOUSE:/w:ro" "$BASE" sh -c \
            "python3 -m venv --without-pip /tmp/v && /tmp/v/bin/python /w/$pip_whl/pip install -q --dry-run \
             --no-index --find-links /w -r /w/requirements.txt" 2>&1 \
            | sed -n 's/^ERROR: No matching distribution found for \([^ ]*\).*/\1/p' || true)"
        [ -n "$missing" ] || break
        log "the image's Python also needs: $missing"
        # shellcheck disable=SC2086
        "$PY" -m pip wheel -q --wheel-dir "$WHEELHOUSE" $missing || die "pip wheel $missing failed"
    done
    echo "$deps_hash" >"$WHEELHOUSE/.deps-hash"
else
    log "wheelhouse $WHEELHOUSE is current"
fi

log "docker build -t $IMAGE (FROM $BASE)"
# The classic builder is what Debian's docker.io offers without buildx; the Dockerfile needs nothing more.
extra_args=()
# APT_PACKAGES overrides the Dockerfile's system packages (git for the publisher); empty skips apt.
[ "${APT_PACKAGES+set}" = set ] && extra_args+=(--build-arg "APT_PACKAGES=$APT_PACKAGES")
DOCKER_BUILDKIT="${DOCKER_BUILDKIT:-0}" docker build -q \
    --build-arg "BASE_IMAGE=$BASE" "${extra_args[@]}" \
    --label "rl-arena.inputs=$inputs_hash" \
    -t "$IMAGE" . >/dev/null || die "docker build failed (rerun without -q to see why: docker build --build-arg BASE_IMAGE=$BASE .)"
log "built $IMAGE (inputs $inputs_hash) in $((SECONDS - start))s"
