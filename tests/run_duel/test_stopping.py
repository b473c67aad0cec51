"""Duels that stop when decided (``run_duel.stopping``): the sequential test on its own, then real duels
through the local sandbox (a decided duel stops after a whole pair, a duplicate pair is never split, an
undecided one plays every match, a duel without a rule plays every match)."""

from __future__ import annotations

import random

import pytest
from run_duel_helpers import BROKEN, FAST_LIMITS, MINIMAX, RANDOM, TrackingSandbox, assert_nothing_left

from run_duel.duel_result import validate_duel_json
from run_duel.referee import match_seed, play_duel
from run_duel.sandbox.base import LaunchSpec
from run_duel.stopping import SequentialTest, StopRule

WIN, LOSS, DRAW = (1.0, 0.0), (0.0, 1.0), (0.5, 0.5)


def _pairs_to_decide(pair: list[tuple[float, float]], rule: StopRule, limit: int = 100) -> int | None:
    test = SequentialTest(rule)
    for n in range(1, limit + 1):
        test.add_pair(pair)
        if test.decided():
            return n
    return None


def test_a_player_winning_every_match_is_found_stronger_after_seven_pairs_with_the_defaults():
    assert _pairs_to_decide([WIN, WIN], StopRule()) == 7
    test = SequentialTest(StopRule())
    for _ in range(7):
        test.add_pair([LOSS, LOSS])
    assert test.decided() == "PLAYER_2" and "player 2" in test.reason()


def test_drawn_pairs_and_pairs_split_by_the_first_move_are_never_decided():
    assert _pairs_to_decide([DRAW, DRAW], StopRule()) is None
    assert _pairs_to_decide([WIN, LOSS], StopRule()) is None  # each won from the same seat


def test_a_pair_in_which_both_players_failed_is_no_evidence():
    test = SequentialTest(StopRule())
    for _ in range(20):
        test.add_pair([(0.0, 0.0), (0.0, 0.0)])
    assert test.pairs == 0 and test.decided() is None


def test_equal_players_stop_early_at_most_alpha_of_the_time_however_long_they_play():
    """Ville's bound, seeded: 2,000 duels of 100 pairs between equal players whose matches are noisy
    (wins, losses and draws), and who win more often with the first move."""
    rng = random.Random(7)
    rule = StopRule(alpha=0.05)
    stopped = 0
    for _ in range(2000):
        test = SequentialTest(rule)
        for _ in range(100):
            first = rng.choices([WIN, DRAW, LOSS], weights=[5, 2, 3])[0]  # player 1 moves first
            second = rng.choices([LOSS, DRAW, WIN], weights=[5, 2, 3])[0]  # player 2 moves first
            test.add_pair([first, second])
            if test.decided():
                stopped += 1
                break
    assert stopped / 2000 <= rule.alpha


def test_a_clearly_stronger_player_is_usually_found_within_twenty_pairs():
    rng = random.Random(3)
    found = 0
    for _ in range(500):
        test = SequentialTest(StopRule())
        for _ in range(20):
            test.add_pair([rng.choices([WIN, DRAW, LOSS], weights=[85, 5, 10])[0] for _ in range(2)])
            if test.decided():
                found += test.decided() == "PLAYER_1"
                break
    assert found / 500 > 0.9


def test_the_rule_round_trips_through_its_json_spec_and_rejects_what_it_does_not_know():
    rule = StopRule(alpha=0.01, effects=(0.4,))
    assert StopRule.from_spec(rule.to_spec()) == rule
    assert StopRule.from_spec(None) is None
    with pytest.raises(ValueError):
        StopRule.from_spec({"rule": "coin-flip"})
    with pytest.raises(ValueError):
        StopRule(effects=(0.5,))
    with pytest.raises(ValueError):
        StopRule(alpha=1.0)


def _duel(slug, first, second, matches, **options):
    sandbox = TrackingSandbox()
    try:
        duel = play_duel(
            slug,
            sandbox,
            LaunchSpec(str(first)),
            LaunchSpec(str(second)),
            matches=matches,
            limits=FAST_LIMITS,
            pin_cpus=False,
            **options,
        )
    finally:
        sandbox.close()
    assert_nothing_left(sandbox)
    validate_duel_json(duel)
    return duel


def test_a_decided_duel_stops_after_a_whole_pair_and_says_why():
    duel = _duel("tic-tac-toe", MINIMAX, RANDOM, 40, stop_rule=StopRule().to_spec())
    stopped = duel["stopped_early"]
    assert stopped is not None, duel["player_1_score"]
    assert stopped["leader"] == "PLAYER_1" and "player 1 was clearly stronger" in stopped["reason"]
    assert duel["num_matches"] == len(duel["matches"]) == stopped["after_matches"] < 40
    assert stopped["after_matches"] % 2 == 0
    assert duel["planned_matches"] == 40 and duel["stop_rule"] == StopRule().to_spec()
    assert duel["result"] == "PLAYER_1_WIN"


def test_a_duel_of_a_game_with_chance_stops_only_between_duplicate_pairs():
    """An agent that only plays illegal moves loses every match: evidence after every pair, never in one."""
    duel = _duel("leduc-holdem", RANDOM, BROKEN / "illegal_action", 20, stop_rule=StopRule(), seed=99)
    assert duel["stopped_early"]["after_matches"] == 14  # 7 pairs won outright
    seeds = [m["seed"] for m in duel["matches"]]
    assert seeds == [match_seed(99, i) for i in range(14)]
    assert all(seeds[i] == seeds[i + 1] for i in range(0, 14, 2))
    assert [m["first_player"] for m in duel["matches"]] == ["PLAYER_1", "PLAYER_2"] * 7


def test_an_undecided_duel_plays_every_planned_match():
    duel = _duel("tic-tac-toe", MINIMAX, MINIMAX, 16, stop_rule=StopRule())  # perfect play: all draws
    assert duel["stopped_early"] is None and duel["num_matches"] == duel["planned_matches"] == 16


def test_a_duel_without_a_rule_plays_every_match_and_its_json_has_no_stop_fields():
    duel = _duel("tic-tac-toe", MINIMAX, BROKEN / "illegal_action", 16)
    assert duel["num_matches"] == 16
    assert "stopped_early" not in duel and "stop_rule" not in duel
