"""The leaderboard's intervals cover the truth (issue 33): seeded synthetic leagues with known truth.

The truth is what the leaderboard estimates: the Bradley-Terry fit of a round robin with every pair
counted equally (here the exact outcome probabilities at 200 matches a pair). The estimate sees what a
ladder plays: neighbours often, pairs a few places apart less, far pairs not at all. Coverage is the share
of pairs at most five places apart whose true difference lies in the 95 % difference interval.
"""

from __future__ import annotations

import numpy as np

from tournament_manager.bradley_terry import fit_pair_counts
from tournament_manager.settled import fit_table, misfit_dispersion

NEAR = 5


def hidden_skill(levels: np.ndarray, a: int, b: int) -> tuple[float, float, float]:
    """(a loses, draw, a wins) in the hidden-skill game: the better agent wins unless luck intervenes,
    which happens less as the level gap grows (not a Bradley-Terry game: a tiny gap already decides
    70 % of the matches)."""
    gap = abs(levels[a] - levels[b])
    lucky = max(0.0, 0.3 - gap)
    draw = lucky * max(0.0, 0.2 - gap)
    better, upset = 1.0 - lucky, lucky - draw
    return (upset, draw, better) if levels[a] > levels[b] else (better, draw, upset)


def bradley_terry(theta: np.ndarray, a: int, b: int) -> tuple[float, float, float]:
    """(a loses, draw, a wins) when a's expected score is the logistic of the difference, with draws."""
    score = 1.0 / (1.0 + np.exp(theta[b] - theta[a]))
    draw = 0.2 * min(score, 1.0 - score)
    return (1.0 - score - draw / 2, draw, score - draw / 2)


def coverage(outcome, n: int, games, seed: int, reps: int) -> tuple[float, float, float]:
    """(coverage of the leaderboard's intervals, coverage without the misfit widening, mean dispersion)."""
    rng = np.random.default_rng(seed)
    everything = [(a, b) for a in range(n) for b in range(a + 1, n)]
    shown, unwidened, dispersions = [], [], []
    for rep in range(reps):
        model = outcome(rng)
        expected = np.array([model(a, b) for a, b in everything]) * 200
        truth = fit_pair_counts(n, np.array(everything), expected, bootstrap=0).theta
        played = [(a, b) for a, b in everything if games(b - a)]
        table = np.array([rng.multinomial(games(b - a), model(a, b)) for a, b in played], dtype=float)
        fit = fit_table(
            list(range(n)), np.array(played), table, seed=rep, bootstrap=100, keep_replicates=True
        )
        theta = np.array([fit.intervals[c][0] for c in range(n)])
        i, j = np.triu_indices(n, 1)
        close = (j - i) <= NEAR  # agents are numbered in their true order
        i, j = i[close], j[close]
        true, point = truth[i] - truth[j], theta[i] - theta[j]
        for scale, out in ((1.0, shown), (1.0 / np.sqrt(max(1.0, fit.dispersion)), unwidened)):
            boot = theta + scale * (fit.replicates - theta)
            low, high = np.percentile(boot[:, i] - boot[:, j], [2.5, 97.5], axis=0)
            out.append(np.mean((np.minimum(low, point) <= true) & (true <= np.maximum(high, point))))
        dispersions.append(fit.dispersion)
    return float(np.mean(shown)), float(np.mean(unwidened)), float(np.mean(dispersions))


def ladder_games(apart: int) -> int:
    """A ladder's schedule: neighbours often, a few places apart less, far pairs settled unplayed."""
    return 24 if apart <= 3 else 8 if apart <= 6 else 0


def test_intervals_cover_the_truth_in_a_game_that_is_not_bradley_terry():
    """40 agents of the hidden-skill game: the near pairs' results stray from the model by about twice
    its noise (dispersion ~2.1); the plain bootstrap covers ~0.86, the widened intervals ~0.96."""

    def league(rng):
        levels = np.sort(rng.choice(100, 40, replace=False))[::-1] / 100.0
        return lambda a, b: hidden_skill(levels, a, b)

    shown, unwidened, dispersion = coverage(league, 40, ladder_games, seed=1, reps=8)
    assert dispersion > 1.3
    assert unwidened < 0.9 <= shown


def test_a_bradley_terry_league_played_as_a_round_robin_is_not_widened():
    def league(rng):
        theta = np.sort(rng.normal(0.0, 0.8, 12))[::-1]
        return lambda a, b: bradley_terry(theta, a, b)

    shown, _, dispersion = coverage(league, 12, lambda apart: 20, seed=2, reps=20)
    assert dispersion < 1.3
    assert shown >= 0.9


def test_the_dispersion_is_one_without_enough_pairs_and_ignores_far_pairs():
    theta = np.array([1.0, 0.0, -1.0])
    pairs = np.array([(0, 1), (1, 2)])
    assert misfit_dispersion(theta, pairs, np.array([[0, 0, 10], [10, 0, 0]], dtype=float), 5, 20) == 1.0
    n = 10
    theta = np.linspace(2.0, -2.0, n)
    everything = np.array([(a, b) for a in range(n) for b in range(a + 1, n)])
    fitted = np.array(
        [[1 - s, 0.0, s] for s in 1.0 / (1.0 + np.exp(theta[everything[:, 1]] - theta[everything[:, 0]]))]
    )
    table = fitted * 20
    far = np.flatnonzero(everything[:, 1] - everything[:, 0] > 2)
    table[far] = [[20.0, 0.0, 0.0]]  # every far pair upset: not a near pair, not counted
    assert misfit_dispersion(theta, everything, table, 2, 20) < 0.05
