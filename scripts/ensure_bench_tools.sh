#!/usr/bin/env bash
# Install what benchmarks/bench_web.py runs besides the platform itself: wrk (the HTTP load generator,
# Debian package `wrk`) and nginx (the binary only; the benchmark runs its own instance with the
# repository's configuration). Idempotent; needs root (or sudo) only when something is missing.
set -euo pipefail

log() { echo "[bench-tools] $*" >&2; }

need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
[ ${#need[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
log "installing ${need[*]}"
if ! apt-cache show "${need[@]}" >/dev/null 2>&1; then
    $SUDO apt-get update -qq
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
for tool in "${need[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || { log "$tool is missing after apt-get install"; exit 1; }
done
