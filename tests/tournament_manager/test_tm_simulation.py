"""The simulated league and the hidden-skill game it shares its outcome model with."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from environments.hidden_skill.rules import GAME, encode_action, match_outcome
from tournament_manager.simulation import SimulatedLeague


def test_the_same_seed_gives_the_same_league_and_results():
    a, b = SimulatedLeague(16, seed=4), SimulatedLeague(16, seed=4)
    assert a.levels == b.levels
    assert [a.play(0, 1) for _ in range(50)] == [b.play(0, 1) for _ in range(50)]


def test_levels_are_distinct():
    league = SimulatedLeague(64, seed=1)
    assert len(set(league.levels)) == 64


def test_about_one_match_in_ten_is_lost_to_errors():
    league = SimulatedLeague(8, seed=2)
    results = [league.play(0, 1) for _ in range(5000)]
    assert 0.08 <= results.count(None) / 5000 <= 0.12
    assert league.errors == results.count(None) and league.played == 5000


def test_the_better_agent_usually_wins():
    rng = random.Random(3)
    outcomes = [match_outcome(60, 50, rng) for _ in range(4000)]
    assert outcomes.count(1.0) / 4000 > 0.75
    assert outcomes.count(0.0) < outcomes.count(1.0)


def test_close_levels_draw_more_than_distant_ones():
    rng = random.Random(4)
    close = [match_outcome(50, 49, rng) for _ in range(4000)].count(0.5)
    far = [match_outcome(50, 35, rng) for _ in range(4000)].count(0.5)
    assert close > 2 * far


def test_a_gap_of_thirty_levels_is_always_won():
    rng = random.Random(5)
    assert {match_outcome(80, 50, rng) for _ in range(500)} == {1.0}


def test_pairs_correct_is_one_for_the_truth_and_zero_for_its_reverse():
    league = SimulatedLeague(10, seed=6)
    assert league.pairs_correct(league.levels) == 1.0
    assert league.pairs_correct([-v for v in league.levels]) == 0.0
    assert league.kendall_tau(league.levels) == pytest.approx(1.0)


def test_the_game_outcome_is_a_pure_function_of_the_state():
    state = GAME.apply(GAME.apply(GAME.initial_state(seed=7), encode_action(70, 3)), encode_action(40, 9))
    again = GAME.apply(GAME.apply(GAME.initial_state(seed=7), encode_action(70, 3)), encode_action(40, 9))
    assert state == again and GAME.is_over(state)
    GAME.validate_state(state)


def test_in_the_game_a_higher_declared_level_usually_wins():
    wins = 0
    for nonce in range(100):
        s = GAME.apply(GAME.initial_state(), encode_action(75, nonce))
        s = GAME.apply(s, encode_action(60, (nonce * 37) % 100))
        wins += GAME.winner(s) == 0
    assert wins >= 75


def test_the_opponent_declaration_is_hidden_from_seat_1():
    s = GAME.apply(GAME.initial_state(), encode_action(99, 0))
    assert GAME.observation(s, 1).tolist() == [1, 1]


def declaring_player(folder, level: int):
    folder.mkdir()
    (folder / "player.py").write_text(
        "import random\n\n\n"
        "class Player:\n"
        "    def __init__(self, train_mode):\n"
        "        self.rng = random.Random()\n\n"
        "    def start(self, state, valid_actions):\n"
        f"        return {level} * 100 + self.rng.randrange(100)\n\n"
        "    def step(self, state, valid_actions, prev_reward):\n"
        "        return self.start(state, valid_actions)\n\n"
        "    def end(self, state, prev_reward):\n"
        "        pass\n"
    )
    return folder


def test_the_referee_runs_a_hidden_skill_duel(tmp_path):
    """The game is real: two agents declaring levels 80 and 20 play it through run_duel's referee."""
    import json
    import subprocess
    import sys

    strong, weak = declaring_player(tmp_path / "strong", 80), declaring_player(tmp_path / "weak", 20)
    out = tmp_path / "duel.json"
    cmd = [sys.executable, "-m", "run_duel", "--env", "hidden-skill", "--player-1", str(weak)]
    cmd += ["--player-2", str(strong), "--matches", "4", "--no-bwrap", "--no-states", "--output", str(out)]
    repo = Path(__file__).resolve().parents[2]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120, cwd=repo)
    duel = json.loads(out.read_text())
    # A gap of 60 levels is beyond the 30 at which luck stops: the stronger always wins, in either seat.
    assert duel["result"] == "PLAYER_2_WIN" and duel["player_2_wins"] == 4
    assert {m["first_player"] for m in duel["matches"]} == {"PLAYER_1", "PLAYER_2"}
