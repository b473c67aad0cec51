"""Fixtures for the Docker area: the engine, the base image, a sandbox, images built from folders.

A Docker test that cannot run fails in CI (``CI=true``); elsewhere it is skipped when no engine answers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from dockertest_support import HOSTILE, RANDOM_PLAYER, REPO, zip_folder


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Require a Docker engine: fail in CI, skip elsewhere when none answers."""
    try:
        from run_duel.sandbox.docker_client import docker_available
    except ImportError as exc:  # the docker SDK is missing
        if _in_ci():
            pytest.fail(f"the docker SDK is not importable in CI: {exc}")
        pytest.skip(f"docker SDK missing: {exc}")
    if not docker_available():
        message = "no Docker engine answers (run scripts/ensure_docker.sh)"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def base_image(docker_engine: None) -> str:
    """The agent base image, built by scripts/build_base_image.sh when missing (cached afterwards)."""
    from builder.settings import BuilderSettings

    name = BuilderSettings.from_env().base_image
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "build_base_image.sh")], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"building the base image failed:\n{result.stderr[-3000:]}")
    return name


@pytest.fixture(scope="session")
def build_dir(base_image: str, tmp_path_factory: pytest.TempPathFactory):
    """``build_dir(folder) -> image``: zip a folder holding player.py and build it (cached by content)."""
    from builder import build_submission

    work = tmp_path_factory.mktemp("builds")
    built: dict[Path, str] = {}

    def build_one(folder: Path) -> str:
        archive = zip_folder(folder, work / f"{uuid.uuid4().hex}.zip")
        result = build_submission(archive, backend="docker", work_dir=work)
        assert result.ok, f"building {folder} failed: {result.error}\n{result.log[-2000:]}"
        return result.agent_ref

    # Build the random player and every hostile agent up front, a few at a time: a build mostly waits on
    # the engine, so a cold run (no cached images) takes a fraction of building them one by one.
    folders = [RANDOM_PLAYER, *sorted(p for p in HOSTILE.iterdir() if (p / "player.py").is_file())]
    with ThreadPoolExecutor(max_workers=4) as pool:
        built.update(zip(folders, pool.map(build_one, folders), strict=True))

    def build(folder: Path) -> str:
        folder = Path(folder)
        if folder not in built:
            built[folder] = build_one(folder)
        return built[folder]

    return build


@pytest.fixture(scope="session")
def random_image(build_dir) -> str:
    """Image of the random example player (the well-behaved opponent)."""
    return build_dir(RANDOM_PLAYER)


@pytest.fixture(scope="session")
def docker_sandbox(docker_engine: None) -> Iterator[object]:
    """One DockerSandbox for the session (closing it kills anything left)."""
    from run_duel.sandbox.docker import DockerSandbox

    runtime = Path(tempfile.mkdtemp(prefix="rl-arena-test-runtime-"))
    sandbox = DockerSandbox(runtime_dir=runtime)
    yield sandbox
    sandbox.close()
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def duel_label() -> str:
    """A unique duel label, to find this test's containers."""
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def private_cpu_slots(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """CPU-slot locks of this test's own, with placement on (``$AGENT_RUNTIME_DIR``, read when a duel claims
    its slot; the session's ``docker_sandbox`` keeps the socket folders it was made with): duels of other
    tests and processes on the host hold the host's slots, never these, so this test's duel finds a free
    core however busy the machine is. Returns the slot folder."""
    from run_duel.cpu_slots import LOCK_FOLDER

    runtime = tmp_path_factory.mktemp("runtime")
    monkeypatch.setenv("AGENT_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("DUEL_CPU_PINNING", "on")
    return runtime / LOCK_FOLDER
