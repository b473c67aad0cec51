"""Agents that remember, in the Docker sandbox: fresh containers and warm ones.

The data agent (``tests/run_duel/agents/data_agent``), built as uploads are built, counts its duels in its
data folder: what it writes in one duel it reads in the next; the kernel holds the cap; a warm container
starts every duel with only the folder it is given (never what the previous duel left); an opponent,
looking through every writable file system and process root it can see, finds only its own folder.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dockertest_support import REPO, containers_with_label

from run_duel.agent_data import MB, AgentData, archive_of, check_archive, files_of
from run_duel.api import LaunchSpec, Limits, play_duel

pytestmark = pytest.mark.docker

DATA_AGENT = REPO / "tests" / "run_duel" / "agents" / "data_agent"


@pytest.fixture(params=[False, True], ids=["fresh", "warm"])
def sandbox(request: pytest.FixtureRequest, docker_engine: None) -> Iterator[object]:
    from run_duel.sandbox.docker import DockerSandbox
    from run_duel.sandbox.docker_warm import ReusePolicy

    runtime = Path(tempfile.mkdtemp(prefix="rl-arena-test-data-"))
    made = DockerSandbox(runtime_dir=runtime, reuse=ReusePolicy(enabled=request.param))
    yield made
    made.close()
    if made.pool is not None:
        made.pool.close()
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(scope="module")
def data_image(build_dir) -> str:
    return build_dir(DATA_AGENT)


def duel(
    sandbox,
    image: str,
    data: AgentData,
    label: str,
    *,
    mode: str = "count",
    secret: str = "",
    opponent_env: dict[str, str] | None = None,
    opponent_data: AgentData | None = None,
):
    """Four Tic-tac-toe matches of the data agent (seat 1, saving) against the data agent (seat 2)."""
    limits = Limits(data_mb=1, init_timeout=30.0)
    return play_duel(
        "tic-tac-toe",
        sandbox,
        LaunchSpec(
            agent=image,
            env={"ARENA_DATA_MODE": mode, "ARENA_DATA_SECRET": secret},
            limits=limits,
            data=data,
            labels={"duel": label, "revision": "data-1"},
        ),
        LaunchSpec(
            agent=image,
            env=opponent_env or {"ARENA_DATA_MODE": "count"},
            limits=limits,
            data=opponent_data or AgentData(save=False),
            labels={"duel": label, "revision": "data-2"},
        ),
        matches=4,
        pin_cpus=False,
    )


def test_what_an_agent_writes_in_one_duel_it_reads_in_the_next(sandbox, data_image: str) -> None:
    label = f"data-{uuid.uuid4().hex[:8]}"
    data = AgentData()
    for number in range(3):
        result = duel(sandbox, data_image, data, label, secret="kept")
        assert result["player_1_errors"] == result["other_errors"] == 0, result["error_msg"]
        assert f"started with {number}" in result["player_1_log"]
        assert files_of(data.saved)["duels.txt"] == str(number + 1).encode()
        data = AgentData(archive=data.saved)
    # A duel given an empty folder starts empty, on a warm container that held the folder above too.
    result = duel(sandbox, data_image, AgentData(), label)
    assert "started with 0" in result["player_1_log"]
    if sandbox.pool is not None:
        assert sandbox.pool.created == 2  # one container per seat, reused by every duel
    assert containers_with_label("duel", label) == []


def test_the_cap_is_the_kernels(sandbox, data_image: str) -> None:
    data = AgentData()
    result = duel(sandbox, data_image, data, f"data-{uuid.uuid4().hex[:8]}", mode="fill")
    line = next(x for x in result["player_1_log"].splitlines() if x.startswith("filled"))
    assert 0 < int(line.split()[1]) <= MB and line.endswith("No space left on device"), line
    assert check_archive(data.saved, MB)[0] <= MB


def test_links_and_special_files_never_leave_the_container(sandbox, data_image: str) -> None:
    data = AgentData()
    duel(sandbox, data_image, data, f"data-{uuid.uuid4().hex[:8]}", mode="hostile")
    assert files_of(data.saved) == {"kept.txt": b"kept"}
    assert "passwd-link" in data.problem and "pipe" in data.problem


def test_an_opponent_never_reads_the_data_folder(sandbox, data_image: str) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    label = f"data-{uuid.uuid4().hex[:8]}"
    data = AgentData()
    duel(sandbox, data_image, data, label, secret=secret)
    result = duel(
        sandbox,
        data_image,
        AgentData(archive=data.saved),
        label,
        secret=secret,
        opponent_env={"ARENA_DATA_MODE": "snoop", "ARENA_DATA_SECRET": secret},
        opponent_data=AgentData(archive=archive_of({"mine.txt": secret.encode()}), save=False),
    )
    assert result["player_2_errors"] == 0, result["error_msg"]
    found = [line.split()[1] for line in result["player_2_log"].splitlines() if line.startswith("FOUND")]
    assert found, result["player_2_log"]  # its own copy: the search works
    assert all(path.endswith("arena-data/mine.txt") for path in found), found
