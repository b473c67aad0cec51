"""The per-match time bank (Kaggle's overage): a slow reply draws its excess over ``move_timeout`` from it,
a reply that needs more than it holds is TIMEOUT, for native and Kaggle agents alike; the Kaggle adapter
reports what is truly left."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from environments import get_info
from run_duel.api import LaunchSpec, Limits, play_duel, validate_duel_json
from run_duel.referee import limits_for

RANDOM = Path(__file__).resolve().parents[2] / "example_players" / "random"

#: A native Player that sleeps 3 s on its first move of each match (more than the 1 s limit).
SLOW_NATIVE = """
import time

class Player:
    def __init__(self, train_mode=False):
        pass

    def start(self, state, valid_actions):
        time.sleep(3.0)
        return int(valid_actions[0])

    def step(self, state, valid_actions, prev_reward):
        return int(valid_actions[0])

    def end(self, state, prev_reward):
        pass
"""

#: A Kaggle agent (not named ``agent``) that sleeps 3 s on its first move and prints the clock it is told.
SLOW_KAGGLE = """
import json
import sys
import time


def helper(board):
    return [c for c in range(7) if board[c] == 0]


def my_submission(observation, configuration):
    print("CLOCK " + json.dumps([observation.step, observation.remainingOverageTime,
          configuration.actTimeout, configuration.timeout, configuration.agentTimeout]), file=sys.stderr)
    if observation.step < 2:
        time.sleep(3.0)
    return helper(observation.board)[0]
"""


def _agent(tmp_path: Path, name: str, file: str, source: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / file).write_text(textwrap.dedent(source))
    return folder


def _errors(result: dict) -> list[str]:
    return [m["error_msg"] for m in result["matches"] if m["error_kind"]]


def test_every_game_has_a_time_bank_that_reaches_the_limits():
    info = get_info("connect-four")
    assert info.time_bank_s > 0
    limits = limits_for(info)
    assert (limits.move_timeout, limits.time_bank_s) == (info.move_time_limit, info.time_bank_s)


def test_a_native_agent_spending_3_s_on_its_first_move_plays_without_errors(sandbox, tmp_path):
    slow = _agent(tmp_path, "slow", "player.py", SLOW_NATIVE)
    result = play_duel("connect-four", sandbox, LaunchSpec(str(slow)), LaunchSpec(str(RANDOM)), matches=2)
    validate_duel_json(result)
    assert not _errors(result), _errors(result)
    first_moves = [m["move_times"][0 if i % 2 == 0 else 1] for i, m in enumerate(result["matches"])]
    assert all(t > 1.0 for t in first_moves), first_moves  # it did take more than its move limit


def test_a_kaggle_agent_spending_3_s_sees_its_bank_decrease_truthfully(sandbox, tmp_path):
    slow = _agent(tmp_path, "kaggle", "main.py", SLOW_KAGGLE)
    result = play_duel("connect-four", sandbox, LaunchSpec(str(slow)), LaunchSpec(str(RANDOM)), matches=2)
    validate_duel_json(result)
    assert not _errors(result), _errors(result)
    bank = get_info("connect-four").time_bank_s
    clocks = [json.loads(line) for line in re.findall(r"CLOCK (\[.*\])", result["player_1_log"])]
    for _step, remaining, act_timeout, timeout, agent_timeout in clocks:
        assert act_timeout == timeout == 1.0 and agent_timeout == bank
        assert 0 <= remaining <= bank
    # per match: the first move sees the full bank, then each move draws its excess over 1 s, at most what
    # the referee measured for it (its own time is at most its wall time); the 3 s move draws something
    seen = [c[1] for c in clocks]
    offset = 0
    for index, match in enumerate(result["matches"]):
        times = match["move_times"][index % 2 :: 2]  # player 1 moves first in match 0, second in match 1
        banks, offset = seen[offset : offset + len(times)], offset + len(times)
        assert banks[0] == bank, banks
        assert bank - banks[1] > 0, banks
        for before, after, took in zip(banks, banks[1:], times, strict=False):
            assert 0 <= before - after <= max(0.0, took - 1.0) + 0.01, (before, after, took)


def test_a_reply_that_exhausts_the_bank_is_a_timeout_for_native_and_kaggle_agents(sandbox, tmp_path):
    limits = Limits(move_timeout=0.5, time_bank_s=1.0, init_timeout=30.0)
    for slow in (
        _agent(tmp_path, "native", "player.py", SLOW_NATIVE),
        _agent(tmp_path, "kaggle", "main.py", SLOW_KAGGLE),
    ):
        result = play_duel(
            "connect-four", sandbox, LaunchSpec(str(slow)), LaunchSpec(str(RANDOM)), matches=2, limits=limits
        )
        validate_duel_json(result)
        first = result["matches"][0]
        assert first["error_kind"] == "TIMEOUT", _errors(result)
        assert first["result"] == "PLAYER_1_ERROR"
        assert "time bank" in first["error_msg"], first["error_msg"]


@pytest.mark.docker
def test_in_docker_a_3_s_first_move_draws_from_the_bank_and_one_past_it_is_a_timeout(
    docker_sandbox, image, tmp_path
):
    """The bank on the agent's own clock (the container's cgroup CPU and its harness's run-queue wait)."""
    slow = image(str(_agent(tmp_path, "slow", "player.py", SLOW_NATIVE)))
    kaggle = image(str(_agent(tmp_path, "kaggle", "main.py", SLOW_KAGGLE)))
    opponent = image(str(RANDOM))
    result = play_duel("connect-four", docker_sandbox, LaunchSpec(slow), LaunchSpec(opponent), matches=2)
    validate_duel_json(result)
    assert not _errors(result), _errors(result)
    result = play_duel("connect-four", docker_sandbox, LaunchSpec(kaggle), LaunchSpec(opponent), matches=2)
    assert not _errors(result), _errors(result)
    banks = [json.loads(line)[1] for line in re.findall(r"CLOCK (\[.*\])", result["player_1_log"])]
    assert banks[0] == get_info("connect-four").time_bank_s and banks[1] < banks[0]
    limits = Limits(move_timeout=0.5, time_bank_s=1.0, init_timeout=60.0)
    result = play_duel(
        "connect-four", docker_sandbox, LaunchSpec(slow), LaunchSpec(opponent), matches=2, limits=limits
    )
    assert result["matches"][0]["error_kind"] == "TIMEOUT", _errors(result)
    assert "time bank" in result["matches"][0]["error_msg"]
