#!/usr/bin/env bash
# The one test command (README quickstart, .ci/run). On a fresh machine it installs and starts what the
# tests need (Python deps, PostgreSQL, Redis, bubblewrap, the Docker engine, the agent base image and the
# agent image registry), then runs ruff, mypy, lint-imports and pytest against the real services.
#
#   ./run_tests.sh            everything
#   ./run_tests.sh tests/run_duel -k timeout    extra arguments go to pytest
set -euo pipefail
cd "$(dirname "$0")"
export PYTHONDONTWRITEBYTECODE=1

step() { printf '\n==> %s\n' "$*" >&2; }

step "Python environment"
PYTHON_EXTRAS=dev,train,rl scripts/ensure_python_env.sh  # train: PettingZoo envs, the numpy example; rl: torch, SB3, RLlib (~5 min once)

step "System packages"
need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v git >/dev/null || need+=(git)
command -v zip >/dev/null || need+=(zip)
command -v nginx >/dev/null || need+=(nginx)          # nginx config and end-to-end proxy tests
command -v chromium >/dev/null || need+=(chromium)    # browser tests (Playwright drives Debian's Chromium)
command -v node >/dev/null || need+=(nodejs)          # game renderer tests
command -v npm >/dev/null || need+=(npm)              # axe-core for the accessibility checks
command -v openssl >/dev/null || need+=(openssl)      # self-signed certificate for the TLS nginx block
command -v faketime >/dev/null || need+=(faketime)    # fault suite: a reaper whose clock runs fast
command -v promtool >/dev/null || need+=(prometheus)  # alert rule tests and a real Prometheus scraping /metrics
command -v amtool >/dev/null || need+=(prometheus-alertmanager)  # its configuration check
command -v pg_dump >/dev/null || need+=(postgresql-client)  # backup and restore round trip
if [ ${#need[@]} -gt 0 ]; then
  # Another apt run (unattended upgrades, a parallel setup) holds the dpkg lock: wait for it, never fail on it.
  apt-get -o DPkg::Lock::Timeout=900 update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq "${need[@]}" >/dev/null
fi

step "Node packages for the tests (axe-core)"
# The browser tests inject axe-core (tests/web/a11y.py); npm ci installs exactly the locked version.
[ -f tests/web/a11y/node_modules/axe-core/axe.min.js ] \
  || npm ci --prefix tests/web/a11y --no-audit --no-fund --loglevel=error

# The unprivileged user a root referee runs local-sandbox agents as (run_duel/sandbox/local.py).
scripts/ensure_agent_user.sh

step "PostgreSQL and Redis"
scripts/ensure_services.sh

if [ -x scripts/ensure_docker.sh ]; then
  step "Docker engine"
  # docker.io also brings containerd: tests/cluster starts private engines (scripts/start_docker_node.sh).
  scripts/ensure_docker.sh
fi
if [ -x scripts/build_base_image.sh ]; then
  step "Agent base image (cached)"
  scripts/build_base_image.sh
fi
if [ -x scripts/build_stack_image.sh ]; then
  # torch (CPU) over the Python base image, from the operator's wheel (AGENT_STACK_TORCH_WHEEL, else pip's
  # find-links, else PyTorch's CPU index): about 3 minutes the first time on 2 loaded cores, then 0.5 s.
  step "Agent stack images (cached)"
  scripts/build_stack_image.sh || echo "the torch stack image did not build: tests/docker/test_torch_stack.py says why" >&2
fi
if [ -x scripts/ensure_registry.sh ]; then
  # The registry tests start private registries from the same binary; the cluster suite uses this one.
  step "Agent image registry (127.0.0.1:5000)"
  scripts/ensure_registry.sh
fi

step "ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .

step "mypy (types, with the Django and DRF plugins) and lint-imports (the floors of ARCHITECTURE.md)"
# client/rl_arena_client only: client/run_duel, environments, tournament_manager and envsettings are symlinks.
.venv/bin/mypy environments envsettings run_duel agent_uploads builder duel_runner tournament_manager \
  publisher core web ops autoscaler client/rl_arena_client
.venv/bin/lint-imports

step "pytest on PostgreSQL, Redis, Docker and Chromium"
export DATABASE_URL=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/rl_arena}
.venv/bin/pytest "$@"

if [ $# -eq 0 ]; then
  step "pytest: the platform core and its fault tests again on the embedded defaults (SQLite, filesystem broker)"
  sqlite_data=$(mktemp -d)
  trap 'rm -rf "$sqlite_data"' EXIT
  env -u DATABASE_URL DATA_DIR="$sqlite_data" .venv/bin/pytest tests/core \
    tests/faults/test_killed_worker.py tests/faults/test_duplicate_delivery.py tests/faults/test_lost_messages.py
fi
