"""Helpers shared by the Docker-area tests (plain functions; fixtures live in conftest.py)."""

from __future__ import annotations

import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "example_players" / "hostile"
RANDOM_PLAYER = REPO / "example_players" / "random"


def zip_folder(folder: Path, dest: Path, *, top: str | None = None) -> Path:
    """Zip ``folder``'s files (optionally under one top-level folder ``top``)."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                name = path.relative_to(folder).as_posix()
                archive.write(path, f"{top}/{name}" if top else name)
    return dest


def containers_with_label(key: str, value: str) -> list[dict]:
    """All containers (running or not) labelled ``rl-arena.<key>=<value>``."""
    from run_duel.sandbox.docker_client import get_client

    return get_client().api.containers(all=True, filters={"label": f"rl-arena.{key}={value}"})


def rss_mb() -> float:
    """Resident memory of this test process, in MB."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0
