"""Helpers of the publisher tests (imported by name: pytest puts this folder on ``sys.path``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def git(*args: str, cwd: Path) -> str:
    """Run git (test side) and return its output."""
    env = {"PATH": os.environ["PATH"], "HOME": str(cwd), "GIT_CONFIG_NOSYSTEM": "1", "LANG": "C.UTF-8"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True).stdout
