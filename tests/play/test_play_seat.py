"""Live games and duels drive a seat through the same code (``run_duel.seat.Seat``): the same fault is
charged with the same error kind in both."""

from __future__ import annotations

import textwrap
from pathlib import Path

from core.actions.play import start_play_session
from core.models import PlaySession
from run_duel.api import LaunchSpec, get_sandbox, play_duel
from run_duel.sandbox.base import Limits

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
