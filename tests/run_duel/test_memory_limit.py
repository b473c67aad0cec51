"""A memory bomb at the games' shipped limits (512 MB, 1 s per move) is charged MEMORY_LIMIT, in the local
sandbox (plain and bubblewrap) and in Docker, also when it reaches its limit just after the deadline (as
a bomb filling its memory more slowly does on a busy host): the kernel's accounting of the agent's memory
cgroup (``memory.failcnt`` / ``memory.events``, OOM kills) decides, not which event the referee saw first.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from environments import get_info
from run_duel.referee import limits_for, play_duel
from run_duel.sandbox.base import LaunchSpec

AGENTS = Path(__file__).resolve().parent / "agents"
BOMB = AGENTS / "memory_bomb_at_limit"
RANDOM = Path(__file__).resolve().parents[2] / "example_players" / "random"
INFO = get_info("tic-tac-toe")
#: The shipped limits, but for the start-up deadline: filling 480 MB while starting may take a while here.
LIMITS = dataclasses.replace(limits_for(INFO), init_timeout=60.0)
#: Past the move deadline: the limit is reached just after it.
LATE = {"ARENA_BOMB_DELAY_S": str(LIMITS.move_timeout + 0.05)}


def test_the_shipped_limits_are_the_ones_tested():
    assert (INFO.memory_limit_mb, INFO.move_time_limit) == (512, 1.0)
    assert (LIMITS.memory_mb, LIMITS.move_timeout) == (512, 1.0)


def _bomb_duel(sandbox, bomb: str, opponent: str) -> dict:
    return play_duel(
        "tic-tac-toe", sandbox, LaunchSpec(bomb, env=LATE), LaunchSpec(opponent), matches=1, limits=LIMITS
    )


def test_a_local_memory_bomb_past_the_deadline_is_memory_limit(any_sandbox):
    match = _bomb_duel(any_sandbox, str(BOMB), str(RANDOM))["matches"][0]
    assert match["result"] == "PLAYER_1_ERROR", match["error_msg"]
    assert match["error_kind"] == "MEMORY_LIMIT", match["error_msg"]
    assert "512 MB" in match["error_msg"]


@pytest.mark.docker
def test_a_docker_memory_bomb_past_the_deadline_is_memory_limit(docker_sandbox, image):
    match = _bomb_duel(docker_sandbox, image(str(BOMB)), image(str(RANDOM)))["matches"][0]
    assert match["result"] == "PLAYER_1_ERROR", match["error_msg"]
    assert match["error_kind"] == "MEMORY_LIMIT", match["error_msg"]
    assert "512 MB" in match["error_msg"]
