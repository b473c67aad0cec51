#!/usr/bin/env bash
# Build the base images agent images start FROM, one per agent language, each with a non-root user 10001:
#   python      Python 3 + numpy + pip (pip only installs wheels the builder fetched; builds have no network)
#   cpp         the Debian C++ toolchain (g++), which compiles main.cpp at build time
#   javascript  Node.js
#
#   scripts/build_base_image.sh                 # every language: build what is missing or changed, else no-op
#   scripts/build_base_image.sh python cpp      # only these
#   FORCE=1 scripts/build_base_image.sh         # rebuild even if the images exist
#
# Settings (environment):
#   AGENT_BASE_IMAGE           python image name (default rl-arena-agent-base:1; builder reads the same variable)
#   AGENT_CPP_BASE_IMAGE       C++ image name (default rl-arena-agent-base-cpp:1)
#   AGENT_JS_BASE_IMAGE        JavaScript image name (default rl-arena-agent-base-js:1)
#   AGENT_BASE_IMAGE_SOURCE    auto (default) | registry | debootstrap, for the python image (the others are
#                              always debootstrapped)
#       registry    FROM python:3.11-slim + pip install numpy (needs an image registry and PyPI)
#       debootstrap a minimal Debian rootfs with the language's Debian packages, `docker import`ed (needs only
#                   Debian's package mirror); the rootfs tarball is cached under data/cache/
#       auto        registry if python:3.11-slim is present or can be pulled, else debootstrap
#   RL_ARENA_DATA_DIR          where data/ lives (default: <repo>/data)
#   DEBIAN_MIRROR, DEBIAN_SUITE    default http://deb.debian.org/debian, bookworm
#
# Caching: each image carries the label rl-arena.recipe=<hash of its recipe>. When an image of that name with
# the same recipe hash exists, the script moves on at once. The debootstrap tarball is kept as
# data/cache/agent-base-<hash>.tar so a rebuild after `docker rmi` (or on a fresh engine) takes seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA_DIR="${RL_ARENA_DATA_DIR:-$ROOT/data}"
CACHE_DIR="$DATA_DIR/cache"
SOURCE_SETTING="${AGENT_BASE_IMAGE_SOURCE:-auto}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE="${DEBIAN_SUITE:-bookworm}"
AGENT_UID=10001
# Bump when the steps below change.
RECIPE_VERSION=4

log() { echo "build_base_image: $*" >&2; }
die() { echo "build_base_image: ERROR: $*" >&2; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker is not installed (run scripts/ensure_docker.sh)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (run scripts/ensure_docker.sh)"

image_of() {
    case "$1" in
        python) echo "${AGENT_BASE_IMAGE:-rl-arena-agent-base:1}" ;;
        cpp) echo "${AGENT_CPP_BASE_IMAGE:-rl-arena-agent-base-cpp:1}" ;;
        javascript) echo "${AGENT_JS_BASE_IMAGE:-rl-arena-agent-base-js:1}" ;;
        *) die "unknown language '$1' (python, cpp or javascript)" ;;
    esac
}

packages_of() {
    case "$1" in
        python) echo "python3,python3-numpy,python3-pip" ;;
        cpp) echo "g++,libc6-dev" ;;
        javascript) echo "nodejs" ;;
    esac
}

# The command that proves the new rootfs works, run in a chroot.
smoke_of() {
    case "$1" in
        python) echo "/usr/bin/python3 -c 'import numpy, pip; print(\"numpy\", numpy.__version__, \"pip\", pip.__version__)'" ;;
        cpp) echo "/usr/bin/g++ --version" ;;
        javascript) echo "/usr/bin/node --version" ;;
    esac
}

build_registry_python() {
    local image="$1" hash="$2" start=$SECONDS ctx
    ctx="$(mktemp -d)"
    cat >"$ctx/Dockerfile" <<EOF
FROM python:3.11-slim
RUN pip install --no-cache-dir numpy
RUN groupadd --gid $AGENT_UID agent && useradd --uid $AGENT_UID --gid $AGENT_UID --home-dir /tmp \
    --shell /usr/sbin/nologin --no-create-home agent
ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
LABEL rl-arena.recipe=$hash rl-arena.base=1 rl-arena.language=python
WORKDIR /tmp
EOF
    log "building $image from python:3.11-slim"
    docker build -q -t "$image" "$ctx" >/dev/null
    rm -rf "$ctx"
    log "built $image (recipe $hash) in $((SECONDS - start))s"
}

build_debootstrap() {
    local language="$1" image="$2" hash="$3" packages start=$SECONDS tarball rootfs
    packages="$(packages_of "$language")"
    [ "$(id -u)" = 0 ] || die "debootstrap needs root"
    mkdir -p "$CACHE_DIR/debootstrap-debs-$language"
    tarball="$CACHE_DIR/agent-base-$hash.tar"
    if [ ! -s "$tarball" ]; then
        rootfs="$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")"
        trap 'rm -rf "$rootfs"' EXIT
        log "debootstrap $SUITE ($packages) into $rootfs"
        debootstrap --variant=minbase --include="$packages" --cache-dir="$CACHE_DIR/debootstrap-debs-$language" \
            "$SUITE" "$rootfs" "$MIRROR" >"$CACHE_DIR/debootstrap-$language.log" 2>&1 \
            || { tail -n 20 "$CACHE_DIR/debootstrap-$language.log" >&2; die "debootstrap failed (log: $CACHE_DIR/debootstrap-$language.log)"; }

        # The unprivileged user every agent runs as. No home directory: /tmp is the only writable place.
        echo "agent:x:$AGENT_UID:$AGENT_UID:rl-arena agent:/tmp:/usr/sbin/nologin" >>"$rootfs/etc/passwd"
        echo "agent:x:$AGENT_UID:" >>"$rootfs/etc/group"
        echo "agent:!:19000::::::" >>"$rootfs/etc/shadow"
        # Debian's pip refuses to install into a system interpreter's tree without this; the builder installs
        # only with --target into the agent's own folder, from wheels it fetched, without network.
        rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED
        # Trim what an agent never needs: package caches, docs, man pages, locales.
        rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
            "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
            "$rootfs"/usr/share/locale/* "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old
        if [ "$language" = python ]; then
            # Precompile the standard library, numpy and pip so agent start-up never compiles .pyc files.
            chroot "$rootfs" /usr/bin/python3 -m compileall -q /usr/lib/python3 /usr/lib/python3.11 >/dev/null 2>&1 || true
        fi
        chroot "$rootfs" /bin/sh -c "$(smoke_of "$language")" >&2 \
            || die "the $language toolchain does not run in the new rootfs"
        # Devices are provided by the container runtime; do not ship nodes in the image.
        rm -rf "${rootfs:?}"/dev/*
        tar --numeric-owner -C "$rootfs" -cf "$tarball.part" .
        mv "$tarball.part" "$tarball"
        rm -rf "$rootfs"
        trap - EXIT
        log "rootfs tarball cached: $tarball ($(du -h "$tarball" | cut -f1)) after $((SECONDS - start))s"
    else
        log "using cached rootfs tarball $tarball"
    fi
    docker import \
        --change "LABEL rl-arena.recipe=$hash" \
        --change "LABEL rl-arena.base=1" \
        --change "LABEL rl-arena.language=$language" \
        --change "ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/usr/local/bin:/usr/bin:/bin" \
        --change "WORKDIR /tmp" \
        "$tarball" "$image" >/dev/null
    log "built $image (recipe $hash, source debootstrap) in $((SECONDS - start))s"
}

ensure_debootstrap() {
    command -v debootstrap >/dev/null 2>&1 && return 0
    [ "$(id -u)" = 0 ] || die "debootstrap needs root"
    log "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    apt-cache show debootstrap >/dev/null 2>&1 || apt-get update -qq
    apt-get install -y -qq debootstrap >/dev/null || die "apt-get install debootstrap failed"
}

# Print "<source> <recipe hash>" of a language's image, or nothing when that image is up to date.
plan_language() {
    local language="$1" image source recipe hash existing
    image="$(image_of "$language")"
    source=debootstrap
    if [ "$language" = python ]; then
        source="$SOURCE_SETTING"
        if [ "$source" = auto ]; then
            if docker image inspect python:3.11-slim >/dev/null 2>&1 \
                || timeout 30 docker pull -q python:3.11-slim >/dev/null 2>&1; then
                source=registry
            else
                source=debootstrap
            fi
            log "AGENT_BASE_IMAGE_SOURCE=auto -> $source"
        fi
        case "$source" in
            registry | debootstrap) ;;
            *) die "AGENT_BASE_IMAGE_SOURCE must be auto, registry or debootstrap (got '$source')" ;;
        esac
    fi
    # Everything that changes the image's content goes into the recipe hash.
    recipe="v=$RECIPE_VERSION language=$language source=$source suite=$SUITE packages=$(packages_of "$language") uid=$AGENT_UID"
    hash="$(printf '%s' "$recipe" | sha256sum | cut -c1-16)"
    existing="$(docker image inspect "$image" --format '{{ index .Config.Labels "rl-arena.recipe" }}' 2>/dev/null || true)"
    if [ "${FORCE:-0}" != 1 ] && [ "$existing" = "$hash" ]; then
        log "$image is up to date (recipe $hash); nothing to do"
        return 0
    fi
    echo "$source $hash"
}

languages=("$@")
[ ${#languages[@]} -gt 0 ] || languages=(python cpp javascript)
todo=()
for language in "${languages[@]}"; do
    plan="$(plan_language "$language")"
    [ -z "$plan" ] || todo+=("$language $plan")
done
[ ${#todo[@]} -gt 0 ] || exit 0
for item in "${todo[@]}"; do
    case "$item" in *" debootstrap "*) [ -s "$CACHE_DIR/agent-base-${item##* }.tar" ] || ensure_debootstrap ;; esac
done
# The images are independent: build them at once (debootstrap mostly waits on downloads and the disk).
pids=()
for item in "${todo[@]}"; do
    read -r language source hash <<<"$item"
    if [ "$source" = registry ]; then
        build_registry_python "$(image_of "$language")" "$hash" &
    else
        build_debootstrap "$language" "$(image_of "$language")" "$hash" &
    fi
    pids+=("$!")
done
failed=0
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
[ "$failed" = 0 ] || die "building a base image failed (see above)"
