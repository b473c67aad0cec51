"""Honest "settled" and the schedule-free order: the weighted Bradley-Terry fit and its pair verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from tournament_manager.bradley_terry import fit_pair_counts, pair_weights
from tournament_manager.settled import (
    ORDER,
    TIE,
    field_scores,
    fit_table,
    full_pairs,
    is_settled,
    needs_play,
    open_pairs,
    pair_verdicts,
    rank_by_fit,
    verdict,
)


def table_of(rows: dict[tuple[int, int], tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    keys = sorted(rows)
    return np.array(keys, dtype=np.int64), np.array([rows[k] for k in keys], dtype=np.float64)


def test_verdicts_of_a_difference_interval():
    assert verdict(0.1, 0.9, 0.2) == ORDER
    assert verdict(-0.9, -0.1, 0.2) == ORDER
    assert verdict(-0.15, 0.19, 0.2) == TIE
    assert verdict(0.0, 0.0, 0.2) == TIE
    assert verdict(-0.3, 0.1, 0.2) is None
    assert verdict(-0.1, 0.1, 0.0) is None  # no margin: only a known order settles
    assert verdict(0.0, 0.0, 0.0) is None


def test_two_agents_that_always_draw_are_settled_as_a_tie():
    """The live arena's case: two identical starter agents drew all 134 matches of 14 duels."""
    pairs, table = table_of({(0, 1): (0, 134, 0)})
    fit = fit_table(["a", "b"], pairs, table, bootstrap=100)
    assert fit.settled == {("a", "b"): TIE}
    assert fit.is_settled("b", "a")


def test_a_clear_order_settles_and_a_close_uncertain_pair_does_not():
    # 0 beats 1 48-12; 1 and 2 split 9-11: their order is unknown, and 20 matches cannot show a tie.
    pairs, table = table_of({(0, 1): (12, 0, 48), (1, 2): (11, 0, 9)})
    fit = fit_table([0, 1, 2], pairs, table, bootstrap=200, seed=3)
    assert fit.settled.get((0, 1)) == ORDER
    assert not fit.is_settled(1, 2)
    # A competitor the fit has not seen is never settled.
    assert not fit.is_settled(0, 7)


def test_the_difference_interval_is_narrower_than_the_two_intervals():
    """The pair's own results pin its difference while both strengths move together (against a third
    agent met 60 times each): 500 mostly drawn matches are a tie the separate intervals cannot show."""
    pairs, table = table_of({(0, 1): (10, 480, 10), (0, 2): (30, 0, 30), (1, 2): (30, 0, 30)})
    bt = fit_pair_counts(3, pairs, table, bootstrap=200, keep_replicates=True)
    bound = (bt.lower[0] - bt.upper[1], bt.upper[0] - bt.lower[1])
    assert verdict(*bound, 0.2) is None  # the separate intervals overlap too widely
    assert pair_verdicts([0, 1, 2], bt.theta, bt.lower, bt.upper, bt.replicates, 0.2) == {(0, 1): TIE}


def test_without_replicates_the_bound_from_both_intervals_is_used():
    intervals = {1: (1.0, 0.8, 1.2), 2: (0.0, -0.2, 0.2), 3: (0.95, 0.7, 1.1)}
    assert is_settled(1, 2, {}, intervals, 0.2, checked_all=False)
    assert not is_settled(1, 3, {}, intervals, 0.2, checked_all=False)
    # When every pair was checked with the replicates, an unlisted pair is open.
    assert not is_settled(1, 2, {}, intervals, 0.2, checked_all=True)


def test_the_weighted_fit_does_not_depend_on_how_often_each_pair_was_played():
    """The same win rates, one pair replayed 50 times as often: the unweighted fit moves, the leaderboard's
    (every pair weighted the same) is the round robin's."""
    rates = {(0, 1): 0.7, (0, 2): 0.8, (1, 2): 0.45, (0, 3): 0.9, (1, 3): 0.4, (2, 3): 0.75}
    even = {k: (100 * (1 - p), 0, 100 * p) for k, p in rates.items()}
    skewed = dict(even)
    skewed[(1, 2)] = tuple(5000 * x / 100 for x in even[(1, 2)])
    pairs, t_even = table_of(even)
    _, t_skewed = table_of(skewed)
    round_robin = fit_pair_counts(4, pairs, t_even, bootstrap=0).theta
    weighted = fit_pair_counts(4, pairs, t_skewed, bootstrap=0, weights=pair_weights(t_skewed)).theta
    unweighted = fit_pair_counts(4, pairs, t_skewed, bootstrap=0).theta
    # The prior (2 virtual games each) weighs a little differently against 100 or 100 * 1.0 games: ~1e-3.
    assert np.allclose(weighted - weighted.mean(), round_robin - round_robin.mean(), atol=0.01)
    assert not np.allclose(unweighted - unweighted.mean(), round_robin - round_robin.mean(), atol=0.05)


def test_pair_weights():
    assert pair_weights(np.array([[1, 0, 1], [10, 0, 10]])) == pytest.approx([5.5, 0.55])
    with pytest.raises(ValueError):
        pair_weights(np.array([[0, 0, 0]]))
    with pytest.raises(ValueError):
        fit_pair_counts(2, np.array([[0, 1]]), np.array([[1, 0, 1]]), weights=np.array([0.0]))


def test_ranks_share_the_leaders_rank_until_the_order_is_known():
    known = {("a", "c"), ("a", "d"), ("b", "d"), ("c", "d")}
    ranks = rank_by_fit(["a", "b", "c", "d"], lambda x, y: (x, y) in known)
    # b is not known apart from a: tied; c is known apart from the group's leader a: a new group.
    assert ranks == {"a": 1, "b": 1, "c": 3, "d": 4}


def test_the_expected_score_against_the_field():
    theta = np.array([1.0, 0.0, -1.0])
    score, low, high = field_scores(theta, theta - 0.1, theta + 0.1, None)
    sig = lambda x: 1.0 / (1.0 + np.exp(-x))  # noqa: E731
    assert score[0] == pytest.approx((sig(1.0) + sig(2.0)) / 2)
    assert score.sum() == pytest.approx(1.5)  # every match's point is shared: n / 2
    assert np.all(low < score) and np.all(score < high)
    replicates = np.stack([theta + d for d in np.linspace(-0.2, 0.2, 41)[:, None] * np.array([1, 0, -1])])
    score_r, low_r, high_r = field_scores(theta, theta, theta, replicates)
    assert np.allclose(score_r, score) and low_r[0] < score[0] < high_r[0]


def test_near_pairs_with_too_few_results_must_be_played_and_full_pairs_need_no_more():
    ids = ["a", "b", "c", "d"]
    theta = np.array([3.0, 2.0, 1.0, 0.0])
    pairs, table = table_of({(0, 1): (5, 0, 20), (1, 2): (1, 0, 4), (0, 3): (0, 0, 30)})
    assert needs_play(ids, theta, pairs, table, near=1, matches=20) == {("b", "c"), ("c", "d")}
    assert needs_play(ids, theta, pairs, table, near=1, matches=0) == frozenset()
    assert full_pairs(ids, pairs, table, 20) == {("a", "b"), ("a", "d")}
    assert full_pairs(ids, pairs, table, 20, frozenset({("b", "a")})) == {("a", "d")}
    fit = fit_table(ids, pairs, table, bootstrap=50, pair_matches=20, near=1, open_matches=0)
    assert not fit.is_settled("b", "c") and not fit.worth_playing("a", "b")
    assert fit.needs_no_duel("a", "d") and not fit.needs_no_duel("c", "d")


def test_a_full_near_pair_whose_order_is_open_is_replayed_up_to_the_open_limit():
    """Connect Four's d3 and d4: 20 results (or more) head to head do not tell their order, and the
    ladder used to rest with it wrong. A full near pair that is neither ordered nor tied stays worth
    playing until ``open_matches`` results; an ordered one, a far one and one at the limit do not."""
    ids = ["a", "b", "c", "d"]
    theta = np.array([0.1, 0.0, -2.0, -4.0])
    rows = {(0, 1): (15, 0, 15), (1, 2): (5, 0, 25), (2, 3): (5, 0, 25), (0, 3): (10, 0, 10)}
    pairs, table = table_of(rows)
    verdicts = {("b", "c"): ORDER, ("c", "d"): ORDER}
    # a-d is open but far (three places apart); b-c and c-d are ordered.
    assert open_pairs(ids, theta, pairs, table, 1, verdicts, 120) == {("a", "b")}
    assert open_pairs(ids, theta, pairs, table, 1, verdicts, 30) == frozenset()  # a-b has 30 results
    assert open_pairs(ids, theta, pairs, table, 1, verdicts, 0) == frozenset()
    # A consistent league, every pair played 30 times: a and b split theirs, the rest is lopsided.
    lopsided = (3, 0, 27)  # the lower index (the stronger agent) wins 27 of 30
    rows = {(0, 1): (15, 0, 15), **{(x, y): lopsided for x in range(4) for y in range(x + 1, 4) if x + y > 1}}
    pairs, table = table_of(rows)

    def fit(open_matches: int):
        return fit_table(ids, pairs, table, bootstrap=100, pair_matches=20, near=1, open_matches=open_matches)

    found = fit(120)
    assert ("a", "b") not in found.settled and found.settled[("b", "c")] == ORDER
    assert found.worth_playing("a", "b") and found.worth_playing("b", "a")
    assert not found.worth_playing("b", "c") and not found.worth_playing("c", "d")
    assert not fit(30).worth_playing("a", "b")  # it has 30 results: resting, open or not
    assert not fit(0).worth_playing("a", "b")


def test_the_pairs_the_fit_needs_are_played_first():
    from datetime import UTC, datetime

    from tournament_manager.matchmaking import Candidate, MatchmakingPolicy, plan_duels
    from tournament_manager.rating import Skill, TrueSkillRater

    now = datetime(2026, 3, 1, tzinfo=UTC)
    cands = [Candidate(i, Skill(10.0 * i, 1.0 + (i == 1)), 100, now) for i in range(4)]
    policy = MatchmakingPolicy(placement_matches=0, neighbours=1)
    rng = __import__("random").Random(1)
    # By mu and TrueSkill's doubt, (0, 1) and (2, 3) would be the neighbours; the fit needs (0, 3).
    planned = plan_duels(cands, 1, TrueSkillRater(), rng, now, policy, lambda a, b: False, [(0, 3)])
    assert [{d.a, d.b} for d in planned] == [{0, 3}]
