#!/usr/bin/env bash
# Back up the arena (database + DATA_DIR) into one archive, keeping the newest KEEP of them.
#
#   scripts/backup.sh [OUT_DIR] [KEEP]        defaults: backups/ and 14
#
# Reads the same settings as the arena (.env or the environment: DATABASE_URL, DATA_DIR). Run it from cron
# (docs/DEPLOYMENT.md "Backups"); it exits non-zero, with the reason on stderr, when anything failed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-backups}
keep=${2:-14}
exec .venv/bin/python manage.py backup --out "$out" --keep "$keep"
