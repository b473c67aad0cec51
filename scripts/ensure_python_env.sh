#!/usr/bin/env bash
# Create the project virtualenv (.venv) and install the project with its dev extras. Idempotent and
# quick when nothing changed (keyed on a hash of pyproject.toml).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[python] creating .venv" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.rl-arena-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[python] installing the project and its dev dependencies" >&2
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e ".[dev]" 2>&1 | grep -v -E "^WARNING: Location" >&2 || true
  .venv/bin/python -c "import django, numpy, celery, trueskill" # fail loudly if the install did not work
  echo "$want" > "$stamp"
fi
