"""Bradley-Terry at many competitors: the sparse fit agrees with the dense one and never builds n x n."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tournament_manager import bradley_terry
from tournament_manager.bradley_terry import fit_pair_counts

ROOT = Path(__file__).resolve().parents[2]


def league(seed: int = 5) -> tuple[int, np.ndarray, np.ndarray]:
    """Pair counts of 31 competitors: two groups that never met each other, and one who never played."""
    rng = np.random.default_rng(seed)
    n = 31
    true = rng.normal(0.0, 1.0, n)
    pairs = [(a, b) for group in (range(0, 18), range(18, 30)) for a in group for b in group if a < b]
    pairs = [p for p in pairs if rng.random() < 0.6]
    low, high = np.array(pairs).T
    games = rng.poisson(12, low.size)
    draws = rng.binomial(games, 0.1)
    wins = rng.binomial(games - draws, 1.0 / (1.0 + np.exp(true[high] - true[low])))
    table = np.stack([games - draws - wins, draws, wins], axis=1).astype(np.float64)
    return n, np.stack([low, high], axis=1), table


@pytest.fixture(params=["banded", "conjugate-gradients"])
def sparse_solver(request, monkeypatch):
    """Both sparse solvers: the band of the small league is narrow, so CG is forced by a zero band limit."""
    if request.param == "conjugate-gradients":
        monkeypatch.setattr(bradley_terry, "BANDED_MAX_ELEMENTS", 0)
    return request.param


def test_sparse_and_dense_bootstrap_fits_agree(sparse_solver):
    n, pairs, table = league()
    dense = fit_pair_counts(n, pairs, table, bootstrap=100, seed=3)
    sparse = fit_pair_counts(n, pairs, table, bootstrap=100, seed=3, dense_max_competitors=0)
    assert dense.method == sparse.method == "bootstrap"
    # The same Poisson draws refitted to the same maxima: equal up to the solvers' tolerance.
    for a, b in ((dense.theta, sparse.theta), (dense.lower, sparse.lower), (dense.upper, sparse.upper)):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert sparse.theta[30] == 0.0  # never played: at the prior
    assert dense.iterations == sparse.iterations


def test_sparse_linearised_intervals_match_the_closed_form(sparse_solver):
    n, pairs, table = league()
    kwargs = {"bootstrap": 3000, "seed": 3, "max_bootstrap_cells": 0}
    dense = fit_pair_counts(n, pairs, table, **kwargs)
    sparse = fit_pair_counts(n, pairs, table, dense_max_competitors=0, **kwargs)
    assert dense.method == sparse.method == "linearised"
    np.testing.assert_allclose(dense.theta, sparse.theta, atol=1e-6)
    # 3000 sampled draws: the half-width's relative noise is ~1/sqrt(6000) = 1.3 %.
    np.testing.assert_allclose(sparse.upper - sparse.theta, dense.upper - dense.theta, rtol=0.07)
    np.testing.assert_allclose(sparse.theta - sparse.lower, dense.theta - dense.lower, rtol=0.07)


CHILD = r"""
import json, resource, sys, tracemalloc
import numpy as np
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # a dense n x n fit fails fast, never swaps
from tournament_manager.bradley_terry import fit_pair_counts

n = 10_000
rng = np.random.default_rng(0)
true = np.sort(rng.normal(0.0, 1.0, n))
peaks = {}
# A sparse ladder (each meets its 2 nearest neighbours: a narrow band, bootstrap refits) and pairs drawn
# at random across the board (a wide band: conjugate gradients, the linearised limit).
for kind, opponents, results in (("ladder", 2, 400_000), ("random", 10, 4_000_000)):
    if kind == "ladder":
        low = np.repeat(np.arange(n), opponents)
        high = low + np.tile(np.arange(1, opponents + 1), n)
        low, high = low[high < n], high[high < n]
    else:
        a, b = rng.integers(0, n, (2, n * opponents))
        keys = np.unique(np.minimum(a, b)[a != b] * n + np.maximum(a, b)[a != b])
        low, high = keys // n, keys % n
    games = rng.poisson(results / low.size, low.size)
    wins = rng.binomial(games, 1.0 / (1.0 + np.exp(true[high] - true[low])))
    table = np.stack([games - wins, np.zeros_like(games), wins], axis=1).astype(np.float64)
    tracemalloc.start()
    fit = fit_pair_counts(n, np.stack([low, high], axis=1), table, bootstrap=100, seed=1)
    peaks[f"{kind} {fit.method}"] = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if kind == "random":  # a 10,000-long chain of neighbours pins each one locally, not the whole order
        assert np.corrcoef(fit.theta, true)[0, 1] > 0.95, "strengths not recovered"
    assert np.all(fit.lower < fit.theta) and np.all(fit.theta < fit.upper)
print(json.dumps(peaks))
"""


def test_ten_thousand_competitors_fit_in_memory_proportional_to_pairs():
    """One dense n x n float64 matrix at n = 10,000 is 800 MB (the dense fit held three or more at once).

    The bound leaves room for the bootstrap's chunked replicate arrays (sized by pairs, ~32 MB each).
    """
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True, text=True, check=False, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    peaks = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(peaks) == {"ladder bootstrap", "random linearised"}
    for method, peak in peaks.items():
        assert peak < 300 * 2**20, f"{method}: traced peak {peak / 2**20:.0f} MB"
