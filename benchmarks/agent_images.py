"""The agent image the Docker benchmarks play with, built exactly as the builder builds submissions."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from builder import build_submission

REPO = Path(__file__).resolve().parents[1]
RANDOM = REPO / "example_players" / "random"


def build_random_image() -> str:
    """Zip ``example_players/random`` and build it (cached by content); returns the image name.

    Raises ``SystemExit`` with the builder's message when the build fails."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "random.zip"
        subprocess.run(["zip", "-qj", str(archive), str(RANDOM / "player.py")], check=True)
        built = build_submission(archive, backend="docker", work_dir=Path(tmp))
    if not built.ok:
        raise SystemExit(f"building the random player image failed: {built.error}")
    return built.agent_ref
