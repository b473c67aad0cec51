#!/usr/bin/env bash
# Build the shared stack images agents needing a big ML library are built FROM (builder/stacks.py):
#   torch    rl-arena-agent-base-torch:1 = the Python base image + torch (CPU) and its dependencies in
#            /opt/stacks/torch, on the interpreter's default path
#
#   scripts/build_stack_image.sh            # every stack: build what is missing or changed, else no-op
#   scripts/build_stack_image.sh torch      # only this one
#   scripts/build_stack_image.sh --force    # rebuild even if up to date
#   scripts/build_stack_image.sh --push     # also push it to AGENT_REGISTRY: other build hosts set
#                                           # AGENT_STACK_TORCH_IMAGE=<registry>/rl-arena-agent-base-torch:1
#                                           # and pull it when an agent first needs torch
#
# Needs the Python base image (scripts/build_base_image.sh python) and the project's Python environment.
# Where torch comes from (never the general package index, whose torch is the multi-GB CUDA build):
#   AGENT_STACK_TORCH_WHEEL      a torch wheel file, or a folder holding one (the newest that fits is used)
#   PIP_FIND_LINKS               else the folders of pip's find-links setting, when one holds a torch wheel
#   AGENT_STACK_TORCH_INDEX_URL  else this index alone (default https://download.pytorch.org/whl/cpu)
#   AGENT_STACK_TORCH_VERSION    pick this version (default: the newest found)
# Its dependencies (sympy, networkx...) come from AGENT_PIP_INDEX_URL like any agent's wheels, through the
# shared wheel cache. AGENT_STACK_TORCH_IMAGE names the image (default rl-arena-agent-base-torch:1).
#
# Caching: the image carries the label rl-arena.stack-recipe (the base image id and the wheels' hashes);
# when it matches, the script returns at once.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
cd "$ROOT"
exec "$PYTHON" -m builder.stacks build "$@"
