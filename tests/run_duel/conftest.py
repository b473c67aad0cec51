"""Fixtures for the run_duel tests: real local sandboxes, throw-away agents, unique markers."""

from __future__ import annotations

import os
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from run_duel_helpers import HAS_BWRAP, TrackingSandbox

from run_duel.cpu_slots import LOCK_FOLDER

SANDBOX_MODES = [pytest.param(False, id="plain")]
if HAS_BWRAP:
    SANDBOX_MODES.append(pytest.param(True, id="bwrap"))


@pytest.fixture(params=SANDBOX_MODES)
def any_sandbox(request: pytest.FixtureRequest) -> Iterator[TrackingSandbox]:
    """The local sandbox, with and without bubblewrap (when installed)."""
    sandbox = TrackingSandbox(use_bwrap=request.param)
    yield sandbox
    sandbox.close()


@pytest.fixture
def sandbox() -> Iterator[TrackingSandbox]:
    """The default local sandbox (bubblewrap when installed)."""
    sandbox = TrackingSandbox()
    yield sandbox
    sandbox.close()


@pytest.fixture
def marker() -> str:
    """A unique value put in the agents' environment to find their processes."""
    return f"arena-test-{uuid.uuid4().hex}"


@pytest.fixture
def make_agent(tmp_path: Path) -> Callable[[str], Path]:
    """Write a throw-away agent folder whose ``player.py`` is ``source`` (dedented)."""
    counter = iter(range(1000))

    def make(source: str) -> Path:
        folder = tmp_path / f"agent{next(counter)}"
        folder.mkdir()
        (folder / "player.py").write_text(textwrap.dedent(source))
        return folder

    return make


@pytest.fixture
def private_cpu_slots(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Give this test's referees a runtime folder (``$AGENT_RUNTIME_DIR``) of their own, hence CPU-slot
    locks of their own, with placement on: duels of other tests and processes on the host hold the host's
    slots, never these, so a duel of this test finds a free core however busy the machine is. Returns the
    slot folder (``claim_cpu_slot()`` without ``lock_dir`` claims there too)."""
    runtime = tmp_path_factory.mktemp("runtime")
    monkeypatch.setenv("AGENT_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("DUEL_CPU_PINNING", "on")
    return runtime / LOCK_FOLDER


# -- Docker (the fairness and memory-limit tests) ------------------------------------------------------


@pytest.fixture(scope="session")
def docker_sandbox() -> Iterator[Any]:
    """A Docker sandbox (skipped without an engine, failing in CI)."""
    from run_duel.sandbox.docker_client import docker_available

    if not docker_available():
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail("no Docker engine answers in CI")
        pytest.skip("no Docker engine answers (run scripts/ensure_docker.sh)")
    from run_duel.sandbox.docker import DockerSandbox

    sandbox = DockerSandbox()
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="session")
def image(docker_sandbox: Any) -> Any:
    """``image(folder)``: the agent image built from a folder (cached by content)."""
    from builder.cli_images import resolve_docker_agent

    return resolve_docker_agent
