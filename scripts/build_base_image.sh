#!/usr/bin/env bash
# Build the base image every agent image starts FROM: Python 3 + numpy, a non-root user 10001.
#
#   scripts/build_base_image.sh          # build if missing or if the recipe changed; else a no-op
#   FORCE=1 scripts/build_base_image.sh  # rebuild even if the image exists
#
# Settings (environment):
#   AGENT_BASE_IMAGE               image name (default rl-arena-agent-base:1; builder reads the same variable)
#   AGENT_BASE_IMAGE_SOURCE        auto (default) | registry | debootstrap
#       registry    FROM python:3.11-slim + pip install numpy (needs an image registry and PyPI)
#       debootstrap a minimal Debian rootfs with python3 + python3-numpy, `docker import`ed (needs only
#                   Debian's package mirror); the rootfs tarball is cached under data/cache/
#       auto        registry if python:3.11-slim is present or can be pulled, else debootstrap
#   AGENT_ALLOW_PACKAGE_INSTALLS   1/true: also ship pip (+ CA certificates) so submissions' requirements.txt
#                                  can be installed at build time; otherwise the image has no pip at all
#   AGENT_EXTRA_CA_DIR             with installs enabled, *.crt files in this folder (default
#                                  /usr/local/share/ca-certificates, the host's extra CAs) are trusted in the
#                                  image too, so pip works behind a TLS-intercepting proxy
#   RL_ARENA_DATA_DIR              where data/ lives (default: <repo>/data)
#   DEBIAN_MIRROR, DEBIAN_SUITE    default http://deb.debian.org/debian, bookworm
#
# Caching: the image carries the label rl-arena.recipe=<hash of this recipe>. When an image of that name
# with the same recipe hash exists, the script returns at once. The debootstrap tarball is kept as
# data/cache/agent-base-<hash>.tar so a rebuild after `docker rmi` (or on a fresh engine) takes seconds.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA_DIR="${RL_ARENA_DATA_DIR:-$ROOT/data}"
CACHE_DIR="$DATA_DIR/cache"
IMAGE="${AGENT_BASE_IMAGE:-rl-arena-agent-base:1}"
SOURCE="${AGENT_BASE_IMAGE_SOURCE:-auto}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE="${DEBIAN_SUITE:-bookworm}"
AGENT_UID=10001

case "${AGENT_ALLOW_PACKAGE_INSTALLS:-0}" in
    1 | true | TRUE | True | yes | on) INSTALLS=1 ;;
    *) INSTALLS=0 ;;
esac

log() { echo "build_base_image: $*" >&2; }
die() { echo "build_base_image: ERROR: $*" >&2; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker is not installed (run scripts/ensure_docker.sh)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (run scripts/ensure_docker.sh)"

if [ "$SOURCE" = "auto" ]; then
    if docker image inspect python:3.11-slim >/dev/null 2>&1 \
        || timeout 30 docker pull -q python:3.11-slim >/dev/null 2>&1; then
        SOURCE=registry
    else
        SOURCE=debootstrap
    fi
    log "AGENT_BASE_IMAGE_SOURCE=auto -> $SOURCE"
fi

PACKAGES="python3,python3-numpy"
EXTRA_CA_DIR="${AGENT_EXTRA_CA_DIR:-/usr/local/share/ca-certificates}"
EXTRA_CAS=()
CA_HASH=none
if [ "$INSTALLS" = 1 ]; then
    PACKAGES="$PACKAGES,python3-pip,ca-certificates"
    shopt -s nullglob
    EXTRA_CAS=("$EXTRA_CA_DIR"/*.crt)
    shopt -u nullglob
    if [ "${#EXTRA_CAS[@]}" -gt 0 ]; then
        CA_HASH="$(cat "${EXTRA_CAS[@]}" | sha256sum | cut -c1-16)"
    fi
fi

# Everything that changes the image's content goes into the recipe hash (bump RECIPE_VERSION when the
# steps below change).
RECIPE_VERSION=3
RECIPE="v=$RECIPE_VERSION source=$SOURCE suite=$SUITE packages=$PACKAGES uid=$AGENT_UID installs=$INSTALLS"
if [ "$INSTALLS" = 1 ]; then
    RECIPE="$RECIPE cas=$CA_HASH"
fi
HASH="$(printf '%s' "$RECIPE" | sha256sum | cut -c1-16)"

existing="$(docker image inspect "$IMAGE" --format '{{ index .Config.Labels "rl-arena.recipe" }}' 2>/dev/null || true)"
if [ "${FORCE:-0}" != 1 ] && [ "$existing" = "$HASH" ]; then
    log "$IMAGE is up to date (recipe $HASH); nothing to do"
    exit 0
fi

start=$SECONDS
COMMON_CHANGES=(
    --change "LABEL rl-arena.recipe=$HASH"
    --change "LABEL rl-arena.base=1"
    --change "ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/usr/local/bin:/usr/bin:/bin"
    --change "WORKDIR /tmp"
)

if [ "$SOURCE" = "registry" ]; then
    ctx="$(mktemp -d)"
    trap 'rm -rf "$ctx"' EXIT
    pip_line="RUN pip install --no-cache-dir numpy"
    cleanup_pip=""
    if [ "$INSTALLS" != 1 ]; then
        cleanup_pip="RUN python -m pip uninstall -y pip setuptools wheel >/dev/null 2>&1 || true"
    fi
    cat >"$ctx/Dockerfile" <<EOF
FROM python:3.11-slim
$pip_line
$cleanup_pip
RUN groupadd --gid $AGENT_UID agent && useradd --uid $AGENT_UID --gid $AGENT_UID --home-dir /tmp \
    --shell /usr/sbin/nologin --no-create-home agent
ENV LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
LABEL rl-arena.recipe=$HASH rl-arena.base=1
WORKDIR /tmp
EOF
    log "building $IMAGE from python:3.11-slim"
    docker build -q -t "$IMAGE" "$ctx" >/dev/null
    log "built $IMAGE (recipe $HASH) in $((SECONDS - start))s"
    exit 0
fi

[ "$SOURCE" = "debootstrap" ] || die "AGENT_BASE_IMAGE_SOURCE must be auto, registry or debootstrap (got '$SOURCE')"
[ "$(id -u)" = 0 ] || die "debootstrap needs root"

mkdir -p "$CACHE_DIR/debootstrap-debs"
TARBALL="$CACHE_DIR/agent-base-$HASH.tar"

if [ ! -s "$TARBALL" ]; then
    if ! command -v debootstrap >/dev/null 2>&1; then
        log "installing debootstrap"
        export DEBIAN_FRONTEND=noninteractive
        apt-cache show debootstrap >/dev/null 2>&1 || apt-get update -qq
        apt-get install -y -qq debootstrap >/dev/null || die "apt-get install debootstrap failed"
    fi
    ROOTFS="$(mktemp -d "$CACHE_DIR/rootfs.XXXXXX")"
    trap 'rm -rf "$ROOTFS"' EXIT
    log "debootstrap $SUITE ($PACKAGES) into $ROOTFS"
    debootstrap --variant=minbase --include="$PACKAGES" --cache-dir="$CACHE_DIR/debootstrap-debs" \
        "$SUITE" "$ROOTFS" "$MIRROR" >"$CACHE_DIR/debootstrap.log" 2>&1 \
        || { tail -n 20 "$CACHE_DIR/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE_DIR/debootstrap.log)"; }

    # The unprivileged user every agent runs as. No home directory: /tmp is the only writable place.
    echo "agent:x:$AGENT_UID:$AGENT_UID:rl-arena agent:/tmp:/usr/sbin/nologin" >>"$ROOTFS/etc/passwd"
    echo "agent:x:$AGENT_UID:" >>"$ROOTFS/etc/group"
    echo "agent:!:19000::::::" >>"$ROOTFS/etc/shadow"
    if [ "${#EXTRA_CAS[@]}" -gt 0 ]; then
        log "trusting ${#EXTRA_CAS[@]} extra CA certificate(s) from $EXTRA_CA_DIR"
        cp "${EXTRA_CAS[@]}" "$ROOTFS/usr/local/share/ca-certificates/"
        chroot "$ROOTFS" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the rootfs"
    fi
    # pip in Debian refuses to install into the system interpreter without this change; the image is
    # ours to manage, so allow it (only matters when installs are enabled).
    rm -f "$ROOTFS"/usr/lib/python3*/EXTERNALLY-MANAGED
    # Trim what an agent never needs: package caches, docs, man pages, locales.
    rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
        "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
        "$ROOTFS"/usr/share/locale/* "$ROOTFS"/var/log/*.log "$ROOTFS"/var/cache/debconf/*-old
    # Precompile the standard library and numpy so agent start-up never writes or compiles .pyc files.
    chroot "$ROOTFS" /usr/bin/python3 -m compileall -q /usr/lib/python3 /usr/lib/python3.11 >/dev/null 2>&1 || true
    chroot "$ROOTFS" /usr/bin/python3 -c "import numpy; print('numpy', numpy.__version__)" >&2 \
        || die "numpy does not import in the new rootfs"
    # Devices are provided by the container runtime; do not ship nodes in the image.
    rm -rf "${ROOTFS:?}"/dev/*
    tar --numeric-owner -C "$ROOTFS" -cf "$TARBALL.part" .
    mv "$TARBALL.part" "$TARBALL"
    rm -rf "$ROOTFS"
    trap - EXIT
    log "rootfs tarball cached: $TARBALL ($(du -h "$TARBALL" | cut -f1)) after $((SECONDS - start))s"
else
    log "using cached rootfs tarball $TARBALL"
fi

docker import "${COMMON_CHANGES[@]}" "$TARBALL" "$IMAGE" >/dev/null
log "built $IMAGE (recipe $HASH, source debootstrap) in $((SECONDS - start))s"
