"""What an agent brings, at start-up, in the local sandbox (with and without bubblewrap): the counterpart
of ``tests/docker/test_hostile_agent_start.py`` (issue 27).

The harness starts isolated (``python3 -I``) whatever the agent folder holds (a ``sitecustomize.py``, a
``usercustomize.py``, a ``.pth`` file), the data folder is filled before any code of the agent runs, and
a stored folder that its own archive cannot fill (a file named twice) is the agent's loss, with the folder
reset, never an infrastructure error.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from run_duel_helpers import HAS_BWRAP, REPO, TrackingSandbox, assert_nothing_left

from run_duel.agent_data import AgentData, archive_of, files_of
from run_duel.api import LaunchSpec, Limits, play_duel

RANDOM = REPO / "example_players" / "random"
STORED = {"seed.txt": b"from the last duel"}

HOOK = """
import os

HOSTILE_PID = os.getpid()
try:
    with open(os.path.join(os.environ.get("ARENA_DATA_DIR", "/arena-data"), "seed.txt"), "x") as handle:
        handle.write("planted at start-up")
except OSError:
    pass
"""

PLAYER = """
import json
import os
import sys

_folder = os.environ["ARENA_DATA_DIR"]
REPORT = {
    "isolated": sys.flags.isolated,
    "hooks": [n for n in ("sitecustomize", "usercustomize") if hasattr(sys.modules.get(n), "HOSTILE_PID")],
    "data": {name: open(os.path.join(_folder, name)).read() for name in sorted(os.listdir(_folder))},
}
print("START_REPORT " + json.dumps(REPORT), file=sys.stderr)


class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
"""


@pytest.fixture(params=["bwrap", "plain"])
def sandbox(request: pytest.FixtureRequest):
    if request.param == "bwrap" and not HAS_BWRAP:
        pytest.skip("bubblewrap is not installed")
    made = TrackingSandbox(use_bwrap=request.param == "bwrap")
    yield made
    assert_nothing_left(made)


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "player.py").write_text(PLAYER)
    (folder / "sitecustomize.py").write_text(HOOK)
    (folder / "usercustomize.py").write_text(HOOK)
    (folder / "hostile.pth").write_text("import sitecustomize\n")
    return folder


def _duel(sandbox, agent: Path, data: AgentData) -> dict:
    limits = Limits(data_mb=1, init_timeout=20.0)
    return play_duel(
        "tic-tac-toe",
        sandbox,
        LaunchSpec(agent=str(agent), limits=limits, data=data),
        LaunchSpec(agent=str(RANDOM), limits=limits),
        matches=2,
        pin_cpus=False,
    )


def test_the_harness_starts_isolated_from_the_agents_files(sandbox, agent: Path) -> None:
    data = AgentData(archive=archive_of(STORED))
    duel = _duel(sandbox, agent, data)
    assert duel["other_errors"] == duel["player_1_errors"] == 0, duel["error_msg"]
    line = next(x for x in duel["player_1_log"].splitlines() if x.startswith("START_REPORT "))
    report = json.loads(line.split(" ", 1)[1])
    assert report == {"isolated": 1, "hooks": [], "data": {"seed.txt": "from the last duel"}}
    assert files_of(data.saved) == STORED


def test_a_folder_its_own_archive_cannot_fill_is_the_agents_loss_and_reset(sandbox, agent: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:", format=tarfile.PAX_FORMAT) as tar:
        for content in (b"one", b"two"):  # the second one: File exists
            info = tarfile.TarInfo("seed.txt")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    data = AgentData(archive=buffer.getvalue())
    duel = _duel(sandbox, agent, data)
    assert duel["other_errors"] == duel["player_2_errors"] == 0, duel["error_msg"]
    assert duel["player_1_errors"] == 2
    assert {m["error_kind"] for m in duel["matches"]} == {"CRASH"}
    message = duel["matches"][0]["error_msg"]
    assert "data folder could not be restored" in message and "File exists" in message, message
    assert data.refused and data.saved == b"" and "emptied" in data.problem
