"""Matchmaking prices a ladder duel that stops when decided (``run_duel.stopping``) at the matches it is
expected to play (``duel_plan.expected_matches``), and the setting ``TM_DUEL_STOP_EARLY`` turns the rule
off for the planner as for the worker."""

from __future__ import annotations

import random

import pytest

from run_duel.stopping import PAIR, SequentialTest, StopRule
from tournament_manager.duel_plan import DuelCost, best_length, even_lengths, expected_matches
from tournament_manager.ladder_pool import ladder_policy
from tournament_manager.matchmaking import LADDER_STOP_RULE, MatchmakingPolicy
from tournament_manager.rating import Skill, TrueSkillRater

RULE = StopRule()
RATER = TrueSkillRater()
LENGTHS = even_lengths(2, 40)
WARM = DuelCost(fixed_s=0.3, per_match_s=0.05)


def _played_by_the_rule(q: float, cap: int, duels: int, seed: int) -> float:
    """Mean matches of ``duels`` duels capped at ``cap`` under the referee's own test (whole pairs, no check
    after the last one), player 1 winning each match with probability ``q``."""
    rng = random.Random(seed)
    total = 0
    for _ in range(duels):
        test = SequentialTest(RULE)
        played = 0
        while played < cap:
            pair = [(1.0, 0.0) if rng.random() < q else (0.0, 1.0) for _ in range(PAIR)]
            played += PAIR
            if played >= cap:
                break
            test.add_pair(pair)
            if test.decided():
                break
        total += played
    return total / duels


@pytest.mark.parametrize(("q", "cap"), [(0.6, 40), (0.8, 20), (0.8, 40), (0.95, 30), (0.3, 40)])
def test_the_expected_matches_are_those_the_rule_plays(q, cap):
    simulated = _played_by_the_rule(q, cap, duels=6000, seed=7)
    assert expected_matches(q, cap, RULE) == pytest.approx(simulated, abs=0.4)


def test_a_duel_too_short_to_stop_or_without_a_rule_is_priced_at_its_length():
    assert expected_matches(0.99, 40, None) == 40.0
    assert expected_matches(0.99, 14, RULE) == 14.0  # the earliest stop is after 7 pairs: 14 matches
    assert expected_matches(1.0, 40, RULE) == 14.0  # a player winning every match stops it there
    assert expected_matches(0.5, 40, RULE) > 39.0  # equal players stop early at most alpha of the time


def test_a_lopsided_pair_gets_a_long_cap_it_rarely_plays_and_a_close_pair_is_priced_as_before():
    lopsided = (Skill(33.0, 1.0), Skill(25.0, 1.0))  # about 0.91 to win a match
    at_cap, _ = best_length(RATER, *lopsided, WARM, LENGTHS)
    stopping, _ = best_length(RATER, *lopsided, WARM, LENGTHS, RULE)
    assert at_cap == 18 and stopping == 40
    assert expected_matches(RATER.win_probability(*lopsided), stopping, RULE) < 20
    close = (Skill(26.0, 1.0), Skill(25.0, 1.0))
    assert best_length(RATER, *close, WARM, LENGTHS, RULE)[0] == best_length(RATER, *close, WARM, LENGTHS)[0]


def test_the_setting_turns_the_stop_rule_off_for_matchmaking(settings):
    assert MatchmakingPolicy().stop_rule == LADDER_STOP_RULE == StopRule()
    assert ladder_policy(10).stop_rule == StopRule()
    settings.TM_DUEL_STOP_EARLY = False
    assert ladder_policy(10).stop_rule is None
