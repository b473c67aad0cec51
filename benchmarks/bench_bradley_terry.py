"""Time of the Bradley-Terry fit with bootstrap intervals, against a naive baseline measured in the same run.

Part 1 - 100,000 results between 64 competitors, 100 bootstrap refits. Ours: results aggregated
into a (pair, outcome) table, all replicates drawn at once (Poisson bootstrap over the cells) and fitted
together by vectorised chord-Newton steps (``tournament_manager.bradley_terry.fit``). Baseline: the
textbook approach - resample the raw results with replacement, then fit each replicate on its own with
scipy's L-BFGS on the raw-result log-likelihood (numpy-vectorised over results; same model and prior).

Part 2 - the production scale of the leaderboard's background tie fit: 1,000 competitors and 1,000,000
results, generated directly as pair counts (what the SQL ``GROUP BY`` hands to
``tournament_manager.bradley_terry.fit_pair_counts``), once with uniformly random pairs (the most
distinct pairs, the worst case) and once ladder-like (3/4 of the games within 10 ranks). At that size the
intervals are the bootstrap's closed-form limit (``method`` "linearised"); the time is the whole fit.
The previous design refitted 100 dense ``n x n`` Newton systems at once (about 800 MB per array at
n = 1,000) on the web request, after reading every match row into Python (~130 s in bench_web.py).

    .venv/bin/python benchmarks/bench_bradley_terry.py [--results 100000] [--bootstrap 100] [--skip-large]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tournament_manager.bradley_terry import fit, fit_pair_counts


def synthetic(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``m`` decisive results among ``n`` competitors with normal log-strengths (draws: see the tests)."""
    rng = np.random.default_rng(seed)
    true = rng.normal(0.0, 1.0, n)
    i = rng.integers(0, n, m)
    j = (i + rng.integers(1, n, m)) % n
    p = 1.0 / (1.0 + np.exp(true[j] - true[i]))
    out = np.where(rng.random(m) < p, 1.0, 0.0)
    return true, i, j, out


def naive_fit(n: int, i: np.ndarray, j: np.ndarray, out: np.ndarray, prior: float = 2.0) -> np.ndarray:
    """One fit on raw results by L-BFGS (scipy) on the same penalised log-likelihood as ours."""
    from scipy.optimize import minimize

    def nll(theta: np.ndarray) -> tuple[float, np.ndarray]:
        d = theta[i] - theta[j]
        p = 1.0 / (1.0 + np.exp(-d))
        ll = np.sum(out * np.log(p) + (1.0 - out) * np.log1p(-p))
        s = 1.0 / (1.0 + np.exp(-theta))
        ll += prior / 2 * np.sum(np.log(s) + np.log1p(-s))
        r = out - p
        grad = np.bincount(i, weights=r, minlength=n) - np.bincount(j, weights=r, minlength=n)
        grad += prior * (0.5 - s)
        return -ll, -grad

    return minimize(nll, np.zeros(n), jac=True, method="L-BFGS-B", options={"gtol": 1e-8}).x


def naive(n: int, i: np.ndarray, j: np.ndarray, out: np.ndarray, bootstrap: int, seed: int) -> np.ndarray:
    """Point fit plus ``bootstrap`` refits on resampled raw results; returns the (2, n) interval."""
    rng = np.random.default_rng(seed)
    naive_fit(n, i, j, out)
    boots = []
    for _ in range(bootstrap):
        k = rng.integers(0, i.size, i.size)
        boots.append(naive_fit(n, i[k], j[k], out[k]))
    return np.percentile(np.array(boots), [2.5, 97.5], axis=0)


def pair_counts(n: int, m: int, seed: int, ladder_like: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``m`` decisive results among ``n`` competitors as (true strengths, pairs, (P, 3) count table)."""
    rng = np.random.default_rng(seed)
    true = rng.normal(0.0, 1.0, n)
    if ladder_like:
        by_rank = np.argsort(-true)
        a = rng.integers(0, n, m)
        step = np.where(rng.random(m) < 0.75, rng.integers(1, 11, m), rng.integers(1, n, m))
        i, j = by_rank[a], by_rank[(a + step) % n]
    else:
        i = rng.integers(0, n, m)
        j = (i + rng.integers(1, n, m)) % n
    keys, games = np.unique(np.minimum(i, j) * n + np.maximum(i, j), return_counts=True)
    pairs = np.stack([keys // n, keys % n], axis=1)
    p_low = 1.0 / (1.0 + np.exp(true[pairs[:, 1]] - true[pairs[:, 0]]))
    wins = rng.binomial(games, p_low)
    table = np.stack([games - wins, np.zeros_like(wins), wins], axis=1).astype(np.float64)
    return true, pairs, table


def large(n: int, m: int, bootstrap: int, repeat: int) -> None:
    """Part 2: time the production-scale fit on pair counts."""
    print(f"\nBradley-Terry on pair counts, {n:,} competitors, {m:,} results, bootstrap={bootstrap}")
    for ladder_like in (False, True):
        true, pairs, table = pair_counts(n, m, seed=2, ladder_like=ladder_like)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = fit_pair_counts(n, pairs, table, bootstrap=bootstrap, seed=1)
            times.append(time.perf_counter() - t0)
        shift = result.theta.mean() - true.mean()
        covered = np.mean((result.lower - shift <= true) & (true <= result.upper - shift))
        label = "ladder-like pairs" if ladder_like else "uniform pairs"
        print(
            f"  {label:17}: {len(pairs):,} distinct pairs, fit {min(times):.2f} s (best of {repeat}), "
            f"intervals {result.method}, Newton iterations {result.iterations}, "
            f"95% intervals cover {covered:.1%} of the true strengths"
        )


def main() -> None:
    """Measure both and print times and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--competitors", type=int, default=64)
    ap.add_argument("--results", type=int, default=100_000)
    ap.add_argument("--bootstrap", type=int, default=100)
    ap.add_argument("--baseline-bootstrap", type=int, default=10, help="refits timed for the baseline")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--large-competitors", type=int, default=1000)
    ap.add_argument("--large-results", type=int, default=1_000_000)
    ap.add_argument("--skip-large", action="store_true", help="only part 1")
    args = ap.parse_args()

    true, i, j, out = synthetic(args.competitors, args.results, seed=0)
    ours = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        result = fit(args.competitors, i, j, out, bootstrap=args.bootstrap, seed=1)
        ours.append(time.perf_counter() - t0)
    t_ours = min(ours)

    t0 = time.perf_counter()
    naive(args.competitors, i, j, out, args.baseline_bootstrap, seed=1)
    t_naive_part = time.perf_counter() - t0
    # The baseline's cost is linear in the number of refits: scale its measured time to the same count.
    t_naive = t_naive_part * (args.bootstrap + 1) / (args.baseline_bootstrap + 1)

    shift = result.theta.mean() - true.mean()
    covered = np.mean((result.lower - shift <= true) & (true <= result.upper - shift))
    print(
        f"Bradley-Terry, {args.competitors} competitors, {args.results:,} results, "
        f"{args.bootstrap} bootstrap fits"
    )
    print(
        f"  ours (aggregated, Poisson bootstrap over cells, chord Newton): {t_ours:.3f} s "
        f"(best of {args.repeat})"
    )
    print(
        f"  naive (resample raw results, L-BFGS per replicate): {t_naive:.2f} s "
        f"(measured {t_naive_part:.2f} s for {args.baseline_bootstrap} refits + the point fit, scaled)"
    )
    print(f"  speed-up: {t_naive / t_ours:.0f}x; Newton iterations {result.iterations}")
    print(
        f"  correlation with true strengths {np.corrcoef(result.theta, true)[0, 1]:.4f}; "
        f"95% intervals cover {covered:.0%} of them"
    )
    if not args.skip_large:
        large(args.large_competitors, args.large_results, args.bootstrap, args.repeat)


if __name__ == "__main__":
    main()
