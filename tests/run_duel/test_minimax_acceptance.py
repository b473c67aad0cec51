"""Acceptance: the minimax example beats random through the real referee and the local sandbox."""

from __future__ import annotations

import pytest
from run_duel_helpers import MINIMAX, RANDOM

from run_duel.duel_result import validate_duel_json
from run_duel.referee import play_duel
from run_duel.sandbox.base import LaunchSpec
from run_duel.sandbox.local import LocalSandbox

pytestmark = pytest.mark.slow


def minimax_vs_random(game: str, matches: int = 20) -> dict:
    result = play_duel(
        game,
        LocalSandbox(),
        LaunchSpec(str(MINIMAX)),
        LaunchSpec(str(RANDOM)),
        matches=matches,
        record_states=False,
    )
    validate_duel_json(result)
    assert result["player_1_errors"] == result["player_2_errors"] == result["other_errors"] == 0, [
        m["error_msg"] for m in result["matches"] if m["error_kind"]
    ]
    return result


def test_minimax_wins_at_least_18_of_20_connect_four_matches():
    assert minimax_vs_random("connect-four")["player_1_wins"] >= 18


@pytest.mark.parametrize("game", ["tic-tac-toe", "quarto"])
def test_minimax_never_loses_to_random(game):
    result = minimax_vs_random(game)
    assert result["player_2_wins"] == 0
    assert result["result"] == "PLAYER_1_WIN"
