"""Fixtures for the training area: paths, zips, and the Docker engine + agent base image when present."""

from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "example_players"
TRAINED = EXAMPLES / "trained_connect_four"
KAGGLE = EXAMPLES / "kaggle_connectx"
NEGAMAX = EXAMPLES / "kaggle_negamax"  # kaggle-environments' own negamax, Apache-2.0 test data
RANDOM = EXAMPLES / "random"


def zip_files(dest: Path, files: dict[str, bytes]) -> Path:
    """Write a zip holding ``files`` (name -> content)."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return dest


@pytest.fixture(scope="session")
def agent_base_image() -> str:
    """The agent base image (built by scripts/build_base_image.sh if needed); fails in CI without Docker."""
    in_ci = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
    try:
        from run_duel.sandbox.docker_client import docker_available
    except ImportError as exc:
        if in_ci:
            pytest.fail(f"the docker SDK is not importable in CI: {exc}")
        pytest.skip(f"docker SDK missing: {exc}")
    if not docker_available():
        if in_ci:
            pytest.fail("no Docker engine answers")
        pytest.skip("no Docker engine answers (run scripts/ensure_docker.sh)")
    from builder.settings import BuilderSettings

    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "build_base_image.sh")], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.fail(f"building the base image failed:\n{done.stderr[-3000:]}")
    return BuilderSettings.from_env().base_image
