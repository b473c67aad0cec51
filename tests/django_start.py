"""Django's start-up in a fresh interpreter, for the tests of what the settings refuse."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def load_settings_in_a_new_process(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``core.settings`` (``settings.SANDBOX``) in a new interpreter with ``env`` over this process's
    environment; its exit code and output, not checked."""
    return subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.SANDBOX"],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "core.settings", **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
