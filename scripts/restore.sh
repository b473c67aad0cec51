#!/usr/bin/env bash
# Restore a backup made by scripts/backup.sh. Stop the web tier and the workers first
# (./prepare_dev.sh --stop, or `docker compose stop web worker beat`); the database server stays up.
#
#   scripts/restore.sh ARCHIVE
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 ARCHIVE" >&2; exit 2; }
exec .venv/bin/python manage.py restore "$1" --yes
