"""Tournament editions: the round-robin schedule and the standings."""

from __future__ import annotations

import itertools

import pytest

from tournament_manager.editions import DuelOutcome, round_robin_pairs, round_robin_rounds, standings


@pytest.mark.parametrize("n", [2, 3, 6, 7, 10])
def test_every_pair_meets_exactly_once(n):
    pairs = round_robin_pairs(list(range(n)))
    assert sorted(tuple(sorted(p)) for p in pairs) == list(itertools.combinations(range(n), 2))


@pytest.mark.parametrize("n", [4, 5, 8])
def test_nobody_plays_twice_in_a_round(n):
    for rnd in round_robin_rounds(list(range(n))):
        ids = [c for pair in rnd for c in pair]
        assert len(ids) == len(set(ids))


def test_listed_first_alternates_so_nobody_is_always_first():
    firsts = [a for a, _ in round_robin_pairs(list(range(6)))]
    assert max(firsts.count(c) for c in range(6)) <= 4


def test_fewer_than_two_participants_play_nothing():
    assert round_robin_pairs(["only"]) == []


def test_duplicate_participants_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        round_robin_rounds(["a", "a", "b"])


def test_a_win_is_two_points_a_draw_one():
    table = standings(["a", "b", "c"], [DuelOutcome("a", "b", 1.0), DuelOutcome("b", "c", 0.5)])
    points = {s.id: s.points for s in table}
    assert points == {"a": 2, "b": 1, "c": 1}


def test_equal_lines_share_a_rank_and_the_next_rank_skips():
    duels = [
        DuelOutcome("a", "b", 1.0, 6, 4),
        DuelOutcome("a", "c", 1.0, 6, 4),
        DuelOutcome("a", "d", 1.0, 6, 4),
        DuelOutcome("b", "c", 0.5, 5, 5),
        DuelOutcome("b", "d", 1.0, 6, 4),
        DuelOutcome("c", "d", 1.0, 6, 4),
    ]
    # b and c: 3 points, 1 win, score 4+5+6 = 15 each; d last.
    ranks = {s.id: s.rank for s in standings("abcd", duels)}
    assert ranks == {"a": 1, "b": 2, "c": 2, "d": 4}


def test_points_tie_is_broken_by_wins_then_score():
    duels = [
        DuelOutcome("a", "x", 1.0, 5, 0),  # a: 1 win, 1 loss = 2 points
        DuelOutcome("a", "y", 0.0, 0, 5),
        DuelOutcome("b", "x", 0.5, 3, 3),  # b: 2 draws = 2 points
        DuelOutcome("b", "y", 0.5, 3, 3),
        DuelOutcome("c", "x", 1.0, 9, 0),  # c: 1 win, 1 loss, more score than a
        DuelOutcome("c", "y", 0.0, 0, 5),
    ]
    order = [s.id for s in standings(["a", "b", "c", "x", "y"], duels) if s.id in "abc"]
    assert order == ["c", "a", "b"]


def test_an_errored_duel_counts_as_played_without_points():
    (a, b) = sorted(standings(["a", "b"], [DuelOutcome("a", "b", None)]), key=lambda s: s.id)
    assert (a.played, a.points, a.errors) == (1, 0, 1)
    assert a.rank == b.rank == 1


def test_a_duel_with_a_stranger_is_refused():
    with pytest.raises(ValueError, match="non-participant"):
        standings(["a"], [DuelOutcome("a", "z", 1.0)])
