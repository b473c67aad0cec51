#!/usr/bin/env bash
# Create the project virtualenv (.venv) and install the project with its extras (PYTHON_EXTRAS, default
# "dev"; run_tests.sh asks for "dev,train"). Idempotent and quick when nothing changed (keyed on a hash of
# pyproject.toml and the extras).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "[python] creating .venv" >&2
  "$PY" -m venv .venv
fi
stamp=.venv/.rl-arena-installed
extras=${PYTHON_EXTRAS:-dev}
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $extras"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[python] installing the project with its extras: $extras" >&2
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  .venv/bin/python -m pip install -q -e ".[$extras]" 2>&1 | grep -v -E "^WARNING: Location" >&2 || true
  # fail loudly if the install did not work
  .venv/bin/python -c "import django, numpy, celery, trueskill"
  case ",$extras," in *,train,*) .venv/bin/python -c "import pettingzoo, gymnasium, onnx, onnxruntime" ;; esac
  case ",$extras," in *,rl,*) .venv/bin/python -c "import torch, stable_baselines3, sb3_contrib, ray" ;; esac
  echo "$want" > "$stamp"
fi
