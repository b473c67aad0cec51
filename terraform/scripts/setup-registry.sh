#!/usr/bin/env bash
# The agent image registry of the cloud deployment: Debian/Ubuntu's Distribution registry (package
# docker-registry) on the main droplet, listening on its private (VPC) address only, with a password.
# Run by bootstrap-main.sh when terraform's agent_registry is empty; idempotent (the password is made once).
#
#   setup-registry.sh ADDR [STATE_DIR]     e.g. setup-registry.sh 10.42.0.5:5000
#
# Writes: $CONFIG (default /etc/docker/registry/config.yml, the package's), STATE_DIR (default
# /opt/rl-arena/registry) /password (0600) and /htpasswd (bcrypt, readable by the registry's user), then
# restarts the package's service (REGISTRY_SERVICE=none: leave starting it to the caller, as the tests do).
# Prints the settings to append to the platform's .env: AGENT_REGISTRY=http://ADDR/rl-arena,
# AGENT_REGISTRY_USERNAME, AGENT_REGISTRY_PASSWORD.
#
# Plain HTTP inside the VPC, like PostgreSQL and Redis there: Docker engines are told to accept it
# (insecure-registries for ADDR only) and the firewall admits port 5000 from the VPC alone.
set -euo pipefail

ADDR="${1:?usage: setup-registry.sh HOST:PORT [STATE_DIR]}"
STATE="${2:-/opt/rl-arena/registry}"
CONFIG="${CONFIG:-/etc/docker/registry/config.yml}"
STORAGE="${STORAGE:-/var/lib/docker-registry}"
SERVICE="${REGISTRY_SERVICE:-docker-registry}"
USERNAME=arena

mkdir -p "$STATE" "$(dirname "$CONFIG")" "$STORAGE"
chmod 700 "$STATE"
umask 077
[ -s "$STATE/password" ] || head -c 48 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 40 >"$STATE/password"
PASSWORD="$(cat "$STATE/password")"

# bcrypt, the only scheme Distribution's htpasswd accepts: htpasswd (apache2-utils), else Python's crypt.
if command -v htpasswd >/dev/null 2>&1; then
    htpasswd -Bbn "$USERNAME" "$PASSWORD" >"$STATE/htpasswd.new"
else
    PASSWORD="$PASSWORD" python3 -W ignore -c '
import crypt, os
print("arena:" + crypt.crypt(os.environ["PASSWORD"], crypt.mksalt(crypt.METHOD_BLOWFISH)))' >"$STATE/htpasswd.new"
fi
case "$(cat "$STATE/htpasswd.new")" in
    "$USERNAME:\$2"[aby]"\$"*) ;;
    *) echo "setup-registry: no bcrypt hash was made" >&2; exit 1 ;;
esac
mv "$STATE/htpasswd.new" "$STATE/htpasswd"

cat >"$CONFIG" <<CONF
# Written by terraform/scripts/setup-registry.sh (rewritten at every bootstrap).
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $STORAGE
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $ADDR
  headers:
    X-Content-Type-Options: [nosniff]
auth:
  htpasswd:
    realm: rl-arena-agents
    path: $STATE/htpasswd
CONF
chmod 644 "$CONFIG"
if id docker-registry >/dev/null 2>&1; then
    chgrp docker-registry "$STATE" "$STATE/htpasswd" && chmod 750 "$STATE" && chmod 640 "$STATE/htpasswd"
    chown -R docker-registry: "$STORAGE"
fi
if [ "$SERVICE" != none ]; then
    systemctl enable "$SERVICE" >/dev/null 2>&1 || true
    systemctl restart "$SERVICE"
fi
echo "AGENT_REGISTRY=http://$ADDR/rl-arena"
echo "AGENT_REGISTRY_USERNAME=$USERNAME"
echo "AGENT_REGISTRY_PASSWORD=$PASSWORD"
