"""Live games and duels drive a seat through the same code (``run_duel.seat.Seat``): the same fault is
charged with the same error kind in both."""

from __future__ import annotations

import os
import textwrap
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from core.actions.play import human_move, start_play_session
from core.models import PlaySession
from run_duel.api import LaunchSpec, get_sandbox, play_duel
from run_duel.sandbox.base import Limits
from run_duel.sandbox.local_cgroup import SeatCgroup

SPINNER = Path(__file__).resolve().parents[1] / "run_duel" / "agents" / "spinner"

MEMORY_ERROR_PLAYER = """
class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        raise MemoryError("a tree search that outgrew its memory")

    step = lambda self, state, valid_actions, reward: self.start(state, valid_actions)

    def end(self, state, reward):
        pass
"""


def test_a_memory_error_is_memory_limit_in_a_duel_and_in_a_live_game(
    tmp_path: Path, make_competitor, make_user, run_agent
):
    agent = tmp_path / "memory_error"
    agent.mkdir()
    (agent / "player.py").write_text(textwrap.dedent(MEMORY_ERROR_PLAYER))

    sandbox = get_sandbox("local")
    try:
        duel = play_duel(
            "tic-tac-toe",
            sandbox,
            LaunchSpec(str(agent)),
            LaunchSpec(str(Path(__file__).resolve().parents[2] / "example_players" / "random")),
            matches=1,
            limits=Limits(init_timeout=30.0, move_timeout=10.0),
        )
    finally:
        sandbox.close()
    assert duel["matches"][0]["error_kind"] == "MEMORY_LIMIT", duel["matches"][0]["error_msg"]

    comp = make_competitor(str(agent), env="tic-tac-toe", name="memory-error")  # a folder: runs as is
    session = start_play_session(make_user(), comp.pk, human_first=False)
    assert run_agent(session.pk).join(timeout=60) == "agent error"
    ended = PlaySession.objects.get(pk=session.pk)
    assert ended.result == PlaySession.Result.AGENT_ERROR
    assert ended.error_kind == "MEMORY_LIMIT", ended.error_msg
    assert "MemoryError" in ended.error_msg


def _cpu_ticks(group: Path) -> tuple[int, int]:
    """(processes, user + system clock ticks they used) of a cgroup."""
    pids = (group / "cgroup.procs").read_text().split()
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return len(pids), ticks


def _thawed(group: Path) -> bool:
    return (group / "freezer.state").read_text().strip() == "THAWED"


def test_a_live_agent_gets_no_cpu_while_the_person_thinks(make_competitor, make_user, run_agent, settings):
    """The spinner leaves detached spinning processes; while the person thinks they do not run."""
    parent = SeatCgroup.parents().get("freezer")
    if parent is None:
        pytest.skip("no writable cgroup v1 freezer here")
    settings.PLAY_INACTIVITY_SECONDS = 30
    person = make_user()
    comp = make_competitor(str(SPINNER), env="tic-tac-toe", name="spinner")
    session = start_play_session(person, comp.pk, human_first=True)
    task = run_agent(session.pk)
    deadline = time.monotonic() + 60
    group = None
    while group is None or _cpu_ticks(group)[0] < 3 or _thawed(group):
        assert time.monotonic() < deadline, "the agent never started, or was never frozen"
        time.sleep(0.05)
        group = next(iter(parent.glob(f"arena-{os.getpid()}-*")), None)  # this process runs the agent
    time.sleep(0.1)  # each task stops at its next return to user mode
    before = _cpu_ticks(group)[1]
    time.sleep(0.5)
    assert _cpu_ticks(group)[1] == before  # frozen while the person thinks: not one tick
    (group / "freezer.state").write_text("THAWED")  # the measure works: thawed, the spinners run
    thawed_by = time.monotonic() + 30
    while _cpu_ticks(group)[1] == before:
        assert time.monotonic() < thawed_by, "the thawed spinners never ran"
        time.sleep(0.05)
    human_move(session.pk, person, 4)  # the agent moves, and is frozen again after its move
    answer_by = time.monotonic() + 30
    while PlaySession.objects.get(pk=session.pk).moves < 2:
        assert time.monotonic() < answer_by, "the agent did not answer"
        time.sleep(0.05)
    assert not _thawed(group)
    PlaySession.objects.filter(pk=session.pk).update(last_activity_at=timezone.now() - timedelta(hours=1))
    assert task.join(timeout=60) == "abandoned"
