"""Bradley-Terry: recovers known strengths, intervals cover them, ties share ranks."""

from __future__ import annotations

import numpy as np
import pytest

from tournament_manager.bradley_terry import aggregate_results, fit, fit_pair_counts, rank_with_ties


def synthetic(n: int, m: int, seed: int) -> tuple[np.ndarray, ...]:
    """``m`` results between ``n`` competitors with log-strengths ``true`` (mean 0)."""
    rng = np.random.default_rng(seed)
    true = np.linspace(-1.5, 1.5, n)
    i = rng.integers(0, n, m)
    j = (i + rng.integers(1, n, m)) % n
    p_i = 1.0 / (1.0 + np.exp(true[j] - true[i]))
    out = np.where(rng.random(m) < p_i, 1.0, 0.0)
    return true, i, j, out


def test_recovers_known_strengths():
    true, i, j, out = synthetic(12, 20_000, seed=1)
    result = fit(12, i, j, out, bootstrap=0)
    est = result.theta - result.theta.mean()
    # ~1,700 games each: a standard error of ~0.05 per strength.
    assert np.max(np.abs(est - true)) < 0.2
    assert np.corrcoef(est, true)[0, 1] > 0.99


def test_draws_count_as_half_wins():
    three_wins_one_loss = fit(2, [0, 0, 0, 0], [1, 1, 1, 1], [1.0, 1.0, 1.0, 0.0], bootstrap=0)
    two_wins_two_draws = fit(2, [0, 0, 0, 0], [1, 1, 1, 1], [1.0, 1.0, 0.5, 0.5], bootstrap=0)
    assert np.allclose(three_wins_one_loss.theta, two_wins_two_draws.theta)
    assert three_wins_one_loss.theta[0] > three_wins_one_loss.theta[1]


def test_results_count_the_same_whichever_side_is_listed_first():
    a = fit(3, [0, 1, 2], [1, 2, 0], [1.0, 0.5, 0.0], bootstrap=0)
    b = fit(3, [1, 2, 0], [0, 1, 2], [0.0, 0.5, 1.0], bootstrap=0)
    assert np.allclose(a.theta, b.theta)


def test_bootstrap_intervals_cover_the_true_strengths():
    true, i, j, out = synthetic(10, 5_000, seed=3)
    result = fit(10, i, j, out, bootstrap=200, seed=4)
    shift = result.theta.mean() - true.mean()
    covered = (result.lower - shift <= true) & (true <= result.upper - shift)
    assert covered.mean() >= 0.8
    assert np.all(result.lower <= result.theta) and np.all(result.theta <= result.upper)


def test_intervals_shrink_with_more_results():
    _, i, j, out = synthetic(6, 20_000, seed=5)
    small = fit(6, i[:1000], j[:1000], out[:1000], bootstrap=50)
    large = fit(6, i, j, out, bootstrap=50)
    assert np.mean(large.upper - large.lower) < np.mean(small.upper - small.lower) / 2


def test_an_undefeated_competitor_keeps_a_finite_strength():
    i, j, out = [0, 0, 0, 1, 2], [1, 2, 1, 2, 1], [1.0, 1.0, 1.0, 1.0, 0.5]
    result = fit(3, i, j, out, bootstrap=20)
    assert np.all(np.isfinite(result.theta)) and np.all(np.isfinite(result.upper))
    assert result.theta[0] > result.theta[1] > result.theta[2]


def test_a_competitor_without_results_sits_at_the_prior():
    result = fit(3, [0], [1], [1.0], bootstrap=0)
    assert result.theta[2] == pytest.approx(0.0)


def test_the_fit_is_deterministic_for_a_seed():
    _, i, j, out = synthetic(6, 2000, seed=6)
    a, b = fit(6, i, j, out, seed=9), fit(6, i, j, out, seed=9)
    assert np.array_equal(a.lower, b.lower) and np.array_equal(a.upper, b.upper)


def test_pair_counts_give_the_same_fit_as_the_results_they_aggregate():
    _, i, j, out = synthetic(8, 3000, seed=7)
    out[::7] = 0.5
    pairs, table = aggregate_results(8, i, j, out)
    assert table.sum() == 3000 and len(pairs) == 28
    from_results = fit(8, i, j, out, bootstrap=30, seed=2)
    from_counts = fit_pair_counts(8, pairs, table, bootstrap=30, seed=2)
    assert np.array_equal(from_results.theta, from_counts.theta)
    assert np.array_equal(from_results.lower, from_counts.lower)


def test_large_tables_get_the_bootstraps_closed_form_limit():
    true, i, j, out = synthetic(20, 20_000, seed=8)
    boot = fit(20, i, j, out, bootstrap=400, seed=1)
    limit = fit(20, i, j, out, bootstrap=400, max_bootstrap_cells=0)
    assert (boot.method, limit.method) == ("bootstrap", "linearised")
    assert np.array_equal(boot.theta, limit.theta)
    # Same spread up to the bootstrap's Monte Carlo noise (400 replicates: a few percent per interval).
    ratio = (limit.upper - limit.lower) / (boot.upper - boot.lower)
    assert 0.9 < ratio.mean() < 1.1 and ratio.min() > 0.75 and ratio.max() < 1.3
    shift = limit.theta.mean() - true.mean()
    assert np.mean((limit.lower - shift <= true) & (true <= limit.upper - shift)) >= 0.8


@pytest.mark.parametrize(
    ("pairs", "table", "message"),
    [
        ([[1, 0]], [[1, 0, 0]], "low < high"),
        ([[0, 3]], [[1, 0, 0]], "low < high"),
        ([[0, 1]], [[-1, 0, 0]], ">= 0"),
    ],
)
def test_invalid_pair_counts_are_refused(pairs, table, message):
    with pytest.raises(ValueError, match=message):
        fit_pair_counts(3, np.array(pairs), np.array(table))


@pytest.mark.parametrize(
    ("i", "j", "out", "message"),
    [([0], [0], [1.0], "two different"), ([0], [5], [1.0], "indices"), ([0], [1], [0.7], "outcomes")],
)
def test_invalid_results_are_refused(i, j, out, message):
    with pytest.raises(ValueError, match=message):
        fit(3, i, j, out)


def test_overlapping_intervals_share_the_leaders_rank():
    intervals = {"a": (5.0, 7.0), "b": (4.0, 6.0), "c": (3.0, 5.5), "d": (1.0, 2.0)}
    assert rank_with_ties(["a", "b", "c", "d"], intervals) == {"a": 1, "b": 1, "c": 1, "d": 4}


def test_a_chain_of_overlaps_does_not_tie_everyone():
    # b overlaps a, c overlaps b but not a: c leads a new group.
    intervals = {"a": (6.0, 8.0), "b": (5.0, 6.5), "c": (4.0, 5.5), "d": (3.5, 5.0)}
    assert rank_with_ties(["a", "b", "c", "d"], intervals) == {"a": 1, "b": 1, "c": 3, "d": 3}


def test_competitors_without_an_interval_get_their_own_rank():
    intervals = {"a": (5.0, 7.0), "c": (5.0, 7.0)}
    assert rank_with_ties(["a", "b", "c"], intervals) == {"a": 1, "b": 2, "c": 3}
